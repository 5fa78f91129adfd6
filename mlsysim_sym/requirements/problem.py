"""One question to :func:`mlsysim_sym.required` (:class:`Problem`): the configuration as
:class:`~mlsysim_sym.arguments.Arguments`, the input solved for and the parameters the lowering ties to it, the
output at any value of the input (from the model's compiled code, or exactly through ``solve()``'s checks), the
regime it is in (:class:`~mlsysim_sym.requirements.regime.Regime`) and the output solved in that regime
(:class:`~mlsysim_sym.requirements.regime.Solution`, kept per regime)."""
from __future__ import annotations

import math
import numbers
import warnings
from functools import cached_property
from typing import Dict, List, Optional, Tuple

import sympy as sp

from ..arguments import Arguments, checked, describe
from ..checks import check
from ..compile import compile_quantities
from ..model import build_model
from ..schedules import largest_runnable
from ..sensitivity.point import _solve_output, quantity_name, refuse_yes_no
from ..solver import price
from ..symbols import FLAGS, Kind, Param, by_argument
from ..display import quantity as show_quantity
from ..outputs import largest
from .answer import Requirement, output_unit
from .regime import Regime, Solution, fraction, regime_at, solution


class _Reads(Arguments):
    """A copy of :class:`~mlsysim_sym.arguments.Arguments` that records the names it is asked for (``read``)."""

    @classmethod
    def of(cls, a: Arguments) -> "_Reads":
        out = object.__new__(cls)
        object.__setattr__(out, "__dict__", {**a.__dict__, "read": set()})
        return out

    def __getitem__(self, name: str):
        self.read.add(name)
        return super().__getitem__(name)

#: The model's quantities that can be negative (the bytes over the HBM: negative while the state fits); every other
#: one is an amount (a time, a size, a share, a rate, a count, a 0/1 flag), so a negative target for it is refused.
SIGNED = ("offload_spill",)


def _argument_named(name, params) -> object:
    """The argument a parameter's name or printed symbol names (``m`` -> ``microbatch_count``, ``N_TP`` ->
    ``tp_size``, as the answer prints them); any other value as it is."""
    if not isinstance(name, str) or name in params:
        return name
    from .. import notation
    # the printed symbol first (c is the CP degree as the answers print it, congestion's internal name)
    return next((a for a, p in params.items() if name == notation.plain(notation.entry(p.name).latex)), None) or \
        next((a for a, p in params.items() if name == p.name), name)


class Problem:
    """One ``required`` question: the configuration, the input and how parameters follow it, the output now
    (``current``) and which side of the target meets it (``direction``: +1 at least, -1 at most)."""

    def __init__(self, output, target, solve_for, model, fleet, kwargs, side):
        if isinstance(target, bool) or not isinstance(target, (numbers.Real, sp.Number)) \
                or not math.isfinite(float(target)):
            raise ValueError(f"target must be a finite number, got {target!r}")
        params = by_argument()
        solve_for = _argument_named(solve_for, params)
        if solve_for not in params or params[solve_for].kind not in (Kind.COUNT, Kind.REAL):
            allowed = sorted(k for k, p in params.items() if p.kind in (Kind.COUNT, Kind.REAL))
            raise ValueError(f"solve_for must be a solve() argument or record field with a value: one of "
                             f"{', '.join(allowed)}; got {solve_for!r}")
        self.p: Param = params[solve_for]
        self.a = checked(model, fleet, kwargs, caller="required", stacklevel=5)
        self.variant, self.values = self.a.variant, self.a.values
        quantities = {self.model_symbol(n): n for n in build_model(self.variant)}
        if isinstance(output, sp.Basic):
            unknown = output.free_symbols - set(quantities) - set(self.values)
            if unknown:
                raise ValueError(f"output: {', '.join(map(str, unknown))} are not model quantities or parameters")
            self.out, self.q = output, str(output)
            self.names = tuple(n for s, n in quantities.items() if s in output.free_symbols)
        else:
            try:
                self.q = quantity_name(output, self.variant)
            except KeyError as exc:
                raise ValueError(str(exc.args[0])) from None
            refuse_yes_no(output, self.q, self.variant)
            self.out, self.names = self.model_symbol(self.q), (self.q,)
            if float(target) < 0 and self.q not in SIGNED:
                raise ValueError(f"target must be >= 0: {output} is never negative; got {float(target):g}")
            top = largest(self.q)
            if top is not None and float(target) > top:
                raise ValueError(f"target must be <= {top:g}: {output} is a share, never above {top:g}; got "
                                 f"{float(target):g}")
        if side not in ("auto", "at least", "at most"):
            raise ValueError(f"side must be 'auto', 'at least' or 'at most', got {side!r}")
        self.output, self.target, self.solve_for = output, float(target), solve_for
        self.x = self.p.symbol
        if self.x not in self.values:
            hint = ("; it is an argument of the extended model: pass fidelity='extended'"
                    if self.p.fidelity == "extended" and self.variant.fidelity != "extended" else "")
            raise ValueError(f"solve_for: {solve_for} does not enter the {self.variant.family} model{hint}")
        self.x0 = float(self.values[self.x])
        self.configuration = describe(self.a)
        try:
            self._config_values(self.values[self.x])
        except TypeError as exc:
            raise ValueError(f"solve_for: {solve_for} cannot be set through solve()'s arguments or records "
                             f"({exc})") from None
        self.lo, self.hi = self.p.range.bounds      # the values solve() accepts (the parameter table's)
        self.links = self._links()
        self._link_factors = tuple((s, float(e / self.x)) for s, e in self.links.items())
        self.flags = tuple((f, int(self.values[f])) for f in FLAGS if self.values.get(f) is not None)
        self.current = self.value(self.x0)
        self.direction = {"at least": 1, "at most": -1}.get(side, 1 if self.target >= self.current else -1)
        self.label = output if isinstance(output, str) else str(output)

    def answer(self, regimes: int, at=None, **fields) -> Requirement:
        """The answer, the question's own fields filled in (what a :class:`Requirement` lacks is None). ``at``: the
        input's value of a best-found answer (else the answer's own): where the configuration does not fit in
        accelerator memory there, a note says so."""
        fields = {"expression": None, "value": None, "integer": None, "achieved": None, "conditions": (),
                  **fields}
        if at is not None:
            fields["best"] = at
        v = next((x for x in (at, fields["integer"], fields["value"]) if x is not None), None)
        note = self.does_not_fit(v) if v is not None else None
        if note:
            fields["notes"] = tuple(fields.get("notes", ())) + (note,)
        return Requirement(self.label, self.q, self.target, self.solve_for, self.x, self.x0, self.current,
                           regimes=regimes, configuration=self.configuration, direction=self.direction,
                           unit=self.p.unit, output_expr=self.out, **fields)

    def does_not_fit(self, v) -> Optional[str]:
        """A note where the configuration at ``x = v`` holds more than an accelerator's memory (``solve()``'s
        ``feasible``), unless the output is the memory itself; None where it fits or ``solve()`` refuses it."""
        if self.q == "M_acc":
            return None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = price(self.at(int(v) if self.p.kind is Kind.COUNT else v))
        except (ValueError, TypeError, ZeroDivisionError, ArithmeticError):
            return None
        if r.node_profile.feasible or r.memory_capacity is None:
            return None
        return (f"at {self.solve_for} = {self.shown_input(v)} the configuration does not fit: it holds "
                f"{show_quantity(r.node_profile.memory_footprint, 'B', 4)} per accelerator, more than its "
                f"{show_quantity(r.memory_capacity, 'B', 4)} of memory (solve()'s feasible is False)")

    def shown(self, value: float) -> str:
        """A value of the output for a person, with its unit."""
        return show_quantity(value, output_unit(self.output), 6)

    def shown_input(self, value: float) -> str:
        """A value of the input for a person, with its unit."""
        return show_quantity(value, self.p.unit, 6)

    def meets(self, value: float) -> bool:
        """Whether ``value`` of the output meets the target (a rounding error short of it counts)."""
        return (value - self.target) * self.direction >= -1e-12 * max(1.0, abs(self.target))

    def inside(self, v: float) -> bool:
        """Whether ``v`` is in the input's range (a rounding error over an end counts as the end)."""
        tol = 1e-9 * max(1.0, abs(v))
        return self.lo - tol <= v <= self.hi + tol

    def clamp(self, v: float) -> float:
        return min(max(v, self.lo), self.hi)

    def safe_key(self, v) -> Optional[Tuple]:
        """The regime at ``x = v`` (its :attr:`~Regime.key`), or None where the model is undefined there (no
        replica fits)."""
        try:
            return self.regime(v).key
        except (ZeroDivisionError, ValueError, TypeError, OverflowError):
            return None

    def at(self, v):
        """The configuration with the input at ``v`` (:meth:`~mlsysim_sym.arguments.Arguments.moved`)."""
        return self.a.moved(self.solve_for, v)

    @cached_property
    def top(self) -> float:
        """For a whole number, the largest value at which a schedule can still run (beyond, none does)."""
        a = self.a
        return largest_runnable(self.solve_for, int(a["batch_size"]), a.accelerators,
                                int(a.get("accelerators_per_node", a.fleet.node.accelerators_per_node)), a.replica,
                                int(a["gradient_accumulation_steps"]))

    @cached_property
    def never_runs(self) -> bool:
        """Whether no value of the input gives a schedule a framework runs: the configuration runs none
        (:attr:`~mlsysim_sym.arguments.Arguments.runnable`) and the input is not among the arguments that
        decide it (those ``runnable`` reads, recorded as it reads them), or it is the layer count and the rules
        that do not read the layer count already fail (the batch does not split over the replicas)."""
        reads = _Reads.of(self.a)
        if reads.runnable:
            return False
        return self.solve_for not in reads.read or (self.solve_for == "layers" and not self.a.runs(layer_rules=False))

    def _config_values(self, v) -> Dict[sp.Symbol, object]:
        a = self.at(v)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check(a)
        return a.values

    def _links(self) -> Dict[sp.Symbol, sp.Basic]:
        """Parameters that the lowering ties to ``x`` (``F = 2 P`` for the parameter count): each a
        multiple of ``x``, found by moving ``x`` and watching the lowered values."""
        probe = self.x0 * 2 if self.x0 else 1.0
        if self.p.kind is Kind.COUNT:
            probe = int(probe)
        try:
            moved = self._config_values(probe)
        except (ValueError, TypeError):
            return {}
        links = {}
        for s, v in moved.items():
            if s == self.x or v == self.values.get(s):
                continue
            v0 = self.values.get(s)
            if v0 and math.isclose(float(v) / float(v0), probe / self.x0, rel_tol=1e-12):
                links[s] = sp.nsimplify(float(v0) / self.x0, rational=False) * self.x
            else:
                raise ValueError(f"solve_for: {self.solve_for} also changes {s} in a way the closed form "
                                 f"cannot follow; solve for another input")
        return links

    def model_symbol(self, name: str) -> sp.Symbol:
        return build_model(self.variant).quantity(name).symbol

    def values_at(self, v) -> Dict[sp.Symbol, object]:
        """Every parameter's value with ``x = v`` (linked parameters follow)."""
        out = dict(self.values)
        if v != self.x0:
            out[self.x] = v
            for s, k in self._link_factors:
                out[s] = k * v
        return out

    @cached_property
    def _all(self):
        """Every model quantity, compiled (once per variant), and their symbols."""
        m = build_model(self.variant)
        return compile_quantities(self.variant, tuple(m)), {n: m.quantity(n).symbol for n in m}

    def quantities(self, v, values: Optional[Dict[sp.Symbol, object]] = None) -> Dict[sp.Symbol, object]:
        """Every parameter's and every model quantity's value at ``x = v`` (or at the parameter values
        ``values``), from the model's compiled code; raises where the model is undefined."""
        values = dict(self.values_at(v) if values is None else values)
        compiled, symbols = self._all
        values.update((symbols[n], q) for n, q in compiled.evaluate(values).items())
        return values

    def value(self, v) -> float:
        """The output at ``x = v``, from the model (no ``solve()`` checks: any value in the input's range)."""
        return self.value_from(self.quantities(v))

    def value_from(self, values: Dict[sp.Symbol, object]) -> float:
        if self.out.is_Symbol:
            return float(values[self.out])
        return float(self.out.xreplace({s: values[s] for s in self.out.free_symbols}))

    def regime(self, v) -> Regime:
        """The regime of the output at ``x = v`` (raises where the model is undefined there)."""
        return regime_at(self.variant, self.names, self.flags, self.values_at(v))

    def solution(self, regime: Regime) -> Solution:
        """The output solved in ``regime`` (built once per variant, regime, output and input, then kept)."""
        return solution(regime, self.out, self.names, self.x, tuple(self.links.items()))

    def env(self, sol: Solution, v) -> Tuple[List[float], List]:
        """The values ``sol`` reads besides the input at ``x = v``: as floats, and as exact fractions."""
        values = self.quantities(v)
        floats = [values[s] for s in sol.symbols]
        return floats, [fraction(f) for f in floats]

    def exact(self, v) -> float:
        """The output at ``x = v`` through ``solve()``'s checks (raises when ``v`` is not valid); a whole number
        that gives a schedule no framework runs (:attr:`~mlsysim_sym.arguments.Arguments.runnable`: a batch that
        does not split over the replicas, more microbatches than samples) is not valid either, as in a search."""
        if self.p.kind is Kind.COUNT and not self.at(v).runnable:
            raise ValueError(f"{self.solve_for} = {v}: a schedule no framework runs (see can_run())")
        if len(self.names) == 1 and self.out == self.model_symbol(self.names[0]):
            return _solve_output(self.at(v), self.q)[0]
        return self.value_from(self.quantities(v, self._config_values(v)))
