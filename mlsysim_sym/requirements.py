r"""The inverse question: what value of one input makes an output reach a target.

:func:`required` answers "how many microbatches keep the bubble under 5 %?", "what fabric bandwidth
gives 90 % scaling efficiency?", "how many parameters fit per accelerator at ZeRO-3?" with a closed
form, not a search. At the configuration, the model is resolved into its regime
(:func:`mlsysim_sym.operating_point.operating_point`: every maximum, case and indicator at its active
side), the output is written in the input ``x`` and in the quantities that do not depend on it, and
sympy solves ``output(x) = target`` for ``x``.

* The answer holds while the regime holds; its conditions are returned with it. When the root lies in
  another regime (the all-reduce changes tier, the state stops fitting in memory), the solution moves
  into that regime's expression and solves again, up to :data:`MAX_REGIMES` regimes.
* When no value reaches the target (a scaling efficiency above what infinite bandwidth gives), the
  answer says so and gives the limit of the output, as a closed form, on the side the target lies.
* For a whole-number input (microbatches, batch size, nodes), the answer also gives the valid integer
  nearest the root on the side that meets the target, checked through ``solve()``'s own checks; valid also
  means a schedule a training framework runs, as :func:`mlsysim_sym.search` keeps
  (:func:`mlsysim_sym.schedules.can_run`: the batch splits evenly over the replicas and a replica's samples
  over the microbatches). When none meets the target, the answer is the best valid value.

The target is "met" on the far side of the root from the configuration: an output below the target
must rise to at least the target, one above it must fall to at most the target.

Examples
--------
>>> from mlsysim_sym import required
>>> r = required("bubble_fraction", 0.05, "microbatch_count", "Llama3_70B", "Research_256",
...              batch_size=512, tp_size=8, pp_size=4, microbatch_count=8)
>>> r.value, r.integer, r.expression          # 57 by the formula; 64 split a replica's 64 samples evenly
(57.0, 64, -(pp*y - pp - y + 1)/(v*y))
>>> print(r.latex())
m = - \frac{N_{\text{PP}} y - N_{\text{PP}} - y + 1}{V y}
"""
from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Dict, List, Optional, Tuple

import sympy as sp

from . import notation
from .display import quantity as show_quantity, wrap
from .arguments import checked, describe
from .checks import check
from .model import build_model
from .operating_point import OperatingPoint, operating_point, tidy
from .printing import latex
from .schedules import largest_runnable
from .sensitivity.point import _solve_output, quantity_name
from .simplify import shorten_deep
from .symbols import Kind, Param, by_argument
from .terms.base import CeilDiv, FloorDiv

#: How many regimes a solution may pass through before the search gives up.
MAX_REGIMES = 6

#: How many whole numbers the integer answer may walk from the smooth root.
MAX_WALK = 100_000

#: The target, as a symbol in the closed form.
TARGET = sp.Symbol("y", real=True)


@dataclass(frozen=True)
class Requirement:
    """The value of ``solve_for`` at which ``output`` reaches ``target``.

    ``expression`` is the closed form of the root in the target ``TARGET`` (printed ``y``), the other
    parameters and the quantities that do not depend on ``solve_for``; ``value`` its value at the
    configuration (None when no value reaches the target). ``integer`` is, for a whole-number input,
    the valid integer nearest the root that meets the target. ``conditions`` are the relations that keep
    the regime of the answer; ``regimes`` counts the regimes the search passed through. ``limit`` is,
    when no value reaches the target, the output's limit on the side of the target (a closed form and
    its value), and ``reason`` says why in words.
    """

    output: str
    quantity: str
    target: float
    solve_for: str
    symbol: sp.Symbol
    current: float
    current_output: float
    expression: Optional[sp.Basic]
    value: Optional[float]
    integer: Optional[int]
    achieved: Optional[float]
    conditions: Tuple[sp.Basic, ...]
    regimes: int
    limit: Optional[Tuple[sp.Basic, float]] = None
    reason: str = ""
    configuration: str = ""
    direction: int = 1                      # +1: the output must reach at least the target; -1: at most
    unit: str = "1"
    notes: Tuple[str, ...] = field(default_factory=tuple)
    meets_toward: int = 0                   # whole numbers: +1 if larger values meet the target, -1 smaller
    output_expr: Optional[sp.Basic] = None  # the output as a symbol or expression of model quantities
    toward: str = ""                        # with a limit: where the input goes, "oo" or "0"

    @property
    def reachable(self) -> bool:
        return self.value is not None

    def latex(self, book: bool = False) -> str:
        """``x = expression`` in the target ``y`` (LaTeX); without a closed form, ``x = value``; when nothing
        reaches the target, the output's limit. ``book=True`` prints the book's macros, with the target's
        value in place of ``y`` (the book has no symbol for "the target")."""
        x = latex(self.symbol, book=book)
        if self.expression is not None:
            expr = self.expression
            if book:
                expr = sp.factor_terms(sp.together(expr.subs(TARGET, sp.nsimplify(self.target))))
            return f"{x} = {latex(expr, book=book)}"
        if self.value is not None:
            return f"{x} = {latex(sp.Float(self.value, 6), book=book)}"
        out = latex(self.output_expr, book=book) if self.output_expr is not None else self.output
        if not self.toward:     # the best value the valid inputs give (no limit): the least or the most
            return rf"\{'max' if self.direction > 0 else 'min'}_{{{x}}} {out} = {latex(self.limit[0], book=book)}"
        end = {"oo": r"\infty"}.get(self.toward, self.toward)
        return rf"\lim_{{{x} \to {end}}} {out} = {latex(self.limit[0], book=book)}"

    def to_dict(self) -> Dict[str, object]:
        return {"output": self.output, "quantity": self.quantity, "target": self.target,
                "solve_for": self.solve_for, "current": self.current, "current_output": self.current_output,
                "value": self.value, "integer": self.integer, "achieved": self.achieved,
                "expression": None if self.expression is None else str(self.expression),
                "latex": self.latex(), "conditions": [str(c) for c in self.conditions], "regimes": self.regimes,
                "limit": None if self.limit is None else {"expression": str(self.limit[0]), "value": self.limit[1]},
                "reason": self.reason, "configuration_line": self.configuration,
                "direction": "at least" if self.direction > 0 else "at most"}

    def __str__(self) -> str:
        return self.text()

    def text(self, configuration: bool = True) -> str:
        """The answer for a terminal (``configuration``: with the configuration's line)."""
        p = by_argument()[self.solve_for]
        side = "at least" if self.direction > 0 else "at most"
        head = [f"{self.solve_for} ({p.text}) for {self.output} {side} {self.target:g}"]
        head += [f"  {self.configuration}"] if configuration else []
        head += [f"  now: {self.solve_for} = {show_quantity(self.current, p.unit)}, "
                 f"{self.output} = {self.current_output:.6g}"]
        if not self.reachable:
            lim, val = self.limit
            # a limit as the input goes to an end of its range, else the best value found (the reason says where)
            limit = [f"  limit: {val:.6g}" + ("" if lim.is_Number else f" = {plain(lim)}")] \
                if self.toward or not lim.is_Number else []
            return "\n".join(head + wrap(f"no value reaches it: {self.reason}", "  ") + limit
                             + [line for n in self.notes for line in wrap(f"note: {n}", "  ")])
        lines = head + [f"  answer: {self.solve_for} = {show_quantity(self.value, p.unit)}"
                        + (f"; whole number {self.integer}" if self.integer is not None else "")
                        + (f" gives {self.output} = {self.achieved:.6g}" if self.achieved is not None else ""),
                        f"  closed form (y = target): {p.text} = {plain(self.expression)}" if self.expression is not None
                        else "  (no closed form)"]
        if self.regimes > 1:
            lines.append(f"  (the root lies {self.regimes - 1} regime change(s) away from the configuration)")
        if self.conditions:
            lines += wrap("holds while " + ", ".join(plain(c) for c in self.conditions), "  ")
        lines += [line for n in self.notes for line in wrap(f"note: {n}", "  ")]
        return "\n".join(lines)


def plain(expr: sp.Basic) -> str:
    """An expression for a terminal, in the symbols a student reads (``N_PP``, ``β_intra``), not the
    package's names (``pp``, ``BW_intra``)."""
    names = {}
    for s in expr.free_symbols:
        try:
            names[s] = sp.Symbol(notation.plain(notation.entry(s.name).latex))
        except KeyError:
            pass
    return str(expr.xreplace(names))


def _depends(point: OperatingPoint, x: sp.Symbol) -> Dict[str, bool]:
    """Which quantities depend on ``x`` in this regime (directly or through earlier quantities)."""
    by_symbol = {point.model.quantity(n).symbol: n for n in point.model}
    dep: Dict[str, bool] = {}
    for n in point.model:
        free = point.forms[n].resolved.free_symbols
        dep[n] = x in free or any(dep.get(by_symbol[s], False) for s in free if s in by_symbol)
    return dep


def _relaxed(expr: sp.Basic) -> sp.Basic:
    """Integer divisions as plain divisions: the smooth expression whose root starts the integer search
    (the exact check is ``solve()``'s)."""
    return expr.replace(FloorDiv, lambda a, b: a / b).replace(CeilDiv, lambda a, b: a / b)


class _Problem:
    """One ``required`` question: the configuration, the input and how parameters follow it."""

    def __init__(self, output, target, solve_for, model, fleet, kwargs, side):
        if isinstance(target, bool) or not isinstance(target, (numbers.Real, sp.Number)) \
                or not math.isfinite(float(target)):
            raise ValueError(f"target must be a finite number, got {target!r}")
        params = by_argument()
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
            self.out, self.names = self.model_symbol(self.q), (self.q,)
        if side not in ("auto", "at least", "at most"):
            raise ValueError(f"side must be 'auto', 'at least' or 'at most', got {side!r}")
        self.output, self.target, self.solve_for = output, float(target), solve_for
        self.x = self.p.symbol
        if self.x not in self.values:
            raise ValueError(f"solve_for: {solve_for} does not enter the {self.variant.family} model")
        self.x0 = float(self.values[self.x])
        self.configuration = describe(self.a)
        try:
            self._config_values(self.values[self.x])
        except TypeError as exc:
            raise ValueError(f"solve_for: {solve_for} cannot be set through solve()'s arguments or records "
                             f"({exc})") from None
        self.lo, self.hi = self.p.range.bounds      # the values solve() accepts (the parameter table's)
        self.links = self._links()

    def inside(self, v: float) -> bool:
        """Whether ``v`` is in the input's range (a rounding error over an end counts as the end)."""
        tol = 1e-9 * max(1.0, abs(v))
        return self.lo - tol <= v <= self.hi + tol

    def clamp(self, v: float) -> float:
        return min(max(v, self.lo), self.hi)

    def safe_key(self, v) -> Optional[Tuple]:
        """The regime at ``x = v``, or None where the model is undefined there (no replica fits)."""
        try:
            return self.key(self.point(v))
        except (ZeroDivisionError, ValueError, TypeError):
            return None

    def at(self, v):
        """The configuration with the input at ``v`` (:meth:`~mlsysim_sym.arguments.Arguments.moved`)."""
        return self.a.moved(self.solve_for, v)

    @cached_property
    def top(self) -> float:
        """For a whole number, the largest value at which a schedule can still run (beyond, none does)."""
        a = self.a
        replica = 1
        for k in ("tp_size", "pp_size", "ep_size") + (("cp_size",) if a.model.on("context_parallel") else ()):
            replica *= int(a[k])
        return largest_runnable(self.solve_for, int(a["batch_size"]), a.accelerators,
                                int(a.get("accelerators_per_node", a.fleet.node.accelerators_per_node)), replica,
                                int(a["gradient_accumulation_steps"]))

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

    def value_of(self, point: OperatingPoint) -> float:
        """The output at an operating point."""
        return float(self.out.xreplace(point.values))

    def values_at(self, v) -> Dict[sp.Symbol, object]:
        """Every parameter's value with ``x = v`` (linked parameters follow)."""
        out = dict(self.values)
        out[self.x] = v
        for s, e in self.links.items():
            out[s] = float(e.subs(self.x, v))
        return out

    def point(self, v) -> OperatingPoint:
        return operating_point(self.values_at(v), self.variant)

    def exact(self, v) -> float:
        """The output at ``x = v`` through ``solve()``'s checks (raises when ``v`` is not valid); a whole number
        that gives a schedule no framework runs (:attr:`~mlsysim_sym.arguments.Arguments.runnable`: a batch that
        does not split over the replicas, more microbatches than samples) is not valid either, as in a search."""
        if self.p.kind is Kind.COUNT and not self.at(v).runnable:
            raise ValueError(f"{self.solve_for} = {v}: a schedule no framework runs (see can_run())")
        if len(self.names) == 1 and self.out == self.model_symbol(self.names[0]):
            return _solve_output(self.at(v), self.q)[0]
        values = self._config_values(v)
        return self.value_of(operating_point(values, self.variant))

    def key(self, point: OperatingPoint) -> Tuple:
        """The regime of the output: every decision it depends on, and the switches."""
        names = dict.fromkeys(n for q in self.names for n in point.closure(q))
        flags = tuple(sorted((f.name, int(v)) for f, v in point.params.items() if f.name in ("z", "lora", "rc", "ov")))
        return tuple((n, point.forms[n].choices) for n in names) + flags

    def expression(self, point: OperatingPoint, keep) -> sp.Basic:
        return self.out.xreplace({self.model_symbol(n): point.closed(n, keep) for n in self.names})

    def conditions(self, point: OperatingPoint) -> Tuple[sp.Basic, ...]:
        out = []
        for n in self.names:
            out.extend(tidy(c) for c in point.conditions(n) if tidy(c) not in out)
        return tuple(out)


def required(output, target: float, solve_for: str, model, fleet, *, side: str = "auto",
             **solve_kwargs) -> Requirement:
    """The value of one input (``solve_for``: a ``solve()`` argument or record field, e.g.
    ``"fabric_bandwidth"``, ``"microbatch_count"``, ``"efficiency"``, ``"parameters"``) at which ``output``
    reaches ``target``, every other input held at the configuration ``(model, fleet, **solve_kwargs)``.

    ``output``: a result field of ``solve()`` (``"step_latency_total"``), a model quantity
    (``"bubble_fraction"``), an alias (``"memory"``, ``"step_time"``, ``"mfu"``), or a sympy expression in
    model quantities and parameters (``T_dp / T_compute``). ``side``: ``"at least"`` or ``"at most"`` the
    target; ``"auto"`` (default) reads it from the configuration (an output below the target must rise to
    it). See the module docstring.
    """
    pr = _Problem(output, target, solve_for, model, fleet, solve_kwargs, side)
    answer = _required(pr, output, solve_for, side)
    return replace(answer, output_expr=pr.out)


def _required(pr: "_Problem", output, solve_for: str, side: str) -> Requirement:
    x, y = pr.x, pr.target
    start = pr.point(pr.x0)
    current = pr.value_of(start)
    direction = {"at least": 1, "at most": -1}.get(side, 1 if y >= current else -1)
    label = output if isinstance(output, str) else str(output)
    xs = sp.Dummy("x", positive=True)
    v, point, seen, notes = pr.x0, start, [], []
    for _ in range(MAX_REGIMES):
        key = pr.key(point)
        if key in seen:
            break
        seen.append(key)
        dep = _depends(point, x)
        keep = [n for n in point.model if not dep[n] and n not in pr.names]
        expr = pr.expression(point, keep).xreplace(pr.links)
        smooth = _relaxed(expr).xreplace({x: xs})
        env = {point.forms[n].symbol: point.value(n) for n in keep}
        env.update({s: val for s, val in point.params.items() if s != x and s not in pr.links})
        if xs not in smooth.subs(env).free_symbols:
            if _meets(pr.value_of(point), y, direction):
                integer, achieved = (None, pr.value_of(point))
                if pr.p.kind is Kind.COUNT:
                    integer, achieved = _integer(pr, v, direction, 1 if v > pr.x0 else -1, notes)
                return Requirement(label, pr.q, y, solve_for, x, pr.x0, current, None,
                                   float(integer if integer is not None else v), integer,
                                   achieved, pr.conditions(point), len(seen),
                                   configuration=pr.configuration, direction=direction, unit=pr.p.unit,
                                   notes=(f"{label} does not depend on {solve_for} in this regime and already "
                                          "meets the target there",),
                                   meets_toward=1 if v > pr.x0 else -1)
            nxt = _next_regime(pr, v, seen, direction, pr.value_of(point))
            if nxt is not None:
                v, point = nxt, pr.point(nxt)
                continue
            return Requirement(label, pr.q, y, solve_for, x, pr.x0, current, None, None, None, None, (), len(seen),
                               (expr, pr.value_of(point)),
                               f"{label} does not depend on {solve_for} in this regime, and no other value moves it "
                               f"toward {y:g}", pr.configuration, direction, pr.p.unit)
        candidates = [(pr.clamp(val), r) for val, r in _roots(smooth, xs, env, y) if pr.inside(val)]
        # the root of this regime's expression that lies in this regime; else the nearest, whose regime is next
        inside = [(val, r) for val, r in candidates if pr.safe_key(val) == key]
        if inside:
            val, r = min(inside, key=lambda t: abs(t[0] - v))
            integer, achieved = None, None
            if r is None:
                notes.append("the root solves a polynomial of degree 3 or more: its value is exact to rounding, "
                             "but no closed form is printed")
            meet = 0
            if pr.p.kind is Kind.COUNT:
                slope = float(sp.diff(smooth, xs).subs(env).subs({xs: val, TARGET: y}))
                meet = 1 if (slope > 0) == (direction > 0) else -1
                integer, achieved = _integer(pr, val, direction, meet, notes)
                if integer is None:
                    root = f"{solve_for} = {val:.6g}" + ("" if r is None else f", {plain(shorten_deep(r))}")
                    return _unreachable(pr, label, current, direction, len(seen),
                                        f"no valid whole number of {solve_for} meets it",
                                        (f"the root of this regime is {root}; no schedule a framework runs has a "
                                         f"whole number there (see can_run(): the batch splits over the replicas, "
                                         f"the microbatches over a replica's samples)",))
            else:
                val, achieved = _inside_domain(pr, val, notes)
            closed = None if r is None else shorten_deep(r.xreplace({xs: x}))
            return Requirement(label, pr.q, y, solve_for, x, pr.x0, current, closed, val,
                               integer, achieved, pr.conditions(pr.point(val)), len(seen),
                               configuration=pr.configuration, direction=direction, unit=pr.p.unit,
                               notes=tuple(notes), meets_toward=meet)
        candidates = [(val, r) for val, r in candidates if pr.safe_key(val) is not None]
        if candidates:
            v = min(candidates, key=lambda t: abs(t[0] - v))[0]
            point = pr.point(v)
            continue
        # no root in this regime: where does the output go as x grows or shrinks?
        limit = _limit(pr, smooth, xs, env, direction, y)
        if limit is None:
            break
        lim_expr, lim_val, far, end = limit
        if far is None or pr.safe_key(far) == key:
            if pr.solve_for in _LAYOUT:
                return _layout_answer(pr, label, current, direction, len(seen))
            nxt = _next_regime(pr, v, seen, direction, pr.value_of(point))
            if nxt is not None:
                v, point = nxt, pr.point(nxt)
                continue
            words = {"oo": "goes to infinity", "0": "goes to 0"}.get(end, f"reaches {end}, the end of its range")
            return Requirement(label, pr.q, y, solve_for, x, pr.x0, current, None, None, None, None, (), len(seen),
                               (shorten_deep(lim_expr), lim_val),
                               f"{label} tends to {lim_val:.6g} as {solve_for} {words} in this regime, "
                               f"short of {y:g}", pr.configuration, direction, pr.p.unit, toward=end)
        v, point = far, pr.point(far)
    if pr.p.kind is Kind.COUNT:
        found = _search_integer(pr, direction)
        if found is not None:
            v, o, meet = found
            return Requirement(label, pr.q, y, solve_for, x, pr.x0, current, None, float(v), v, o, (), len(seen),
                               configuration=pr.configuration, direction=direction, unit=pr.p.unit,
                               notes=(f"the output changes regime more than {MAX_REGIMES} times on the way; "
                                      "the whole number was found through solve() (no closed form)",),
                               meets_toward=meet)
    return _unreachable(pr, label, current, direction, len(seen),
                        f"no value of {solve_for} brings {label} to {y:g} within {MAX_REGIMES} regimes")


def _next_regime(pr: "_Problem", v: float, seen, direction: int, here: float) -> Optional[float]:
    """The nearest value of the input, doubling or halving from ``v``, that lies in a regime not yet
    visited and moves the output toward the target (an output a regime holds still may move in the
    next: the in-flight divisor of a pipeline, ``max(1, m // p)``, is 1 until ``m`` reaches ``p``)."""
    tried = set()
    for k in range(1, 48):
        for sign in (1, -1):
            xv = v * 2.0 ** (sign * k)
            if pr.p.kind is Kind.COUNT:
                xv = max(1, int(round(xv)))
            if xv in tried or xv <= 0 or not pr.inside(xv):
                continue
            tried.add(xv)
            key = pr.safe_key(xv)
            if key is None or key in seen:
                continue
            if (pr.value_of(pr.point(xv)) - here) * direction > 0:
                return xv
    return None


def _search_integer(pr: _Problem, direction: int):
    """The whole-number boundary through ``solve()`` alone: double away from the configuration until the
    target is met, then bisect (invalid values are stepped over); where the runnable values are few (they end at
    :attr:`_Problem.top`), walk them in order from the configuration instead. ``(value, output, meets_toward)``."""
    if pr.p.kind is Kind.COUNT and pr.top <= LISTED:
        return _walk_runnable(pr, direction)

    def out(v):
        for d in range(64):
            for w in (v + d, v - d):
                if w >= 1:
                    try:
                        return w, pr.exact(w)
                    except (ValueError, TypeError, ZeroDivisionError):
                        pass
        return None
    base = int(pr.x0)
    for meet in (1, -1):
        lo, v = base, base
        for _ in range(40):
            v = v * 2 if meet > 0 else v // 2
            if v < 1:
                break
            got = out(v)
            if got is None:
                continue
            if _meets(got[1], pr.target, direction):
                a, b = (lo, got[0]) if meet > 0 else (got[0], lo)
                while b - a > 1:
                    mid = out((a + b) // 2)
                    if mid is None or not (a < mid[0] < b):
                        break
                    if _meets(mid[1], pr.target, direction) == (meet > 0):
                        b = mid[0]
                    else:
                        a = mid[0]
                v = b if meet > 0 else a
                got = out(v)
                return got[0], got[1], meet
            lo = got[0]
    return None


#: Whole numbers whose runnable values end below this are listed and walked one by one.
LISTED = 100_000


def _walk_runnable(pr: _Problem, direction: int):
    """The first runnable value, walking away from the configuration, that meets the target: the boundary on that
    side (the value before it misses). ``(value, output, meets_toward)`` or None."""
    base = int(pr.x0)
    values = [v for v in range(max(1, int(pr.lo)), int(pr.top) + 1) if pr.at(v).runnable]
    for meet in (1, -1):
        for v in (w for w in (values if meet > 0 else reversed(values)) if (w - base) * meet > 0):
            try:
                o = pr.exact(v)
            except (ValueError, TypeError, ZeroDivisionError):
                continue
            if _meets(o, pr.target, direction):
                return v, o, meet
    return None


def _roots(smooth: sp.Basic, xs: sp.Dummy, env, y: float) -> List[Tuple[float, Optional[sp.Basic]]]:
    """The positive real roots of ``smooth(x) = y``, each with its closed form (None beyond degree 2).

    The equation is brought to a polynomial in ``x`` (its numerator over one denominator). Degree 1 and 2
    are solved by formula, never through sympy's ``solve``, whose simplification of a quadratic with
    dozens of symbols does not finish; the numeric roots come from the polynomial with every other
    value substituted."""
    num = sp.numer(sp.together(smooth - TARGET))
    try:
        poly = sp.Poly(num, xs)
    except sp.PolynomialError:
        return []
    coeffs = poly.all_coeffs()
    numeric = [complex(sp.N(c.subs(env).subs(TARGET, y))) for c in coeffs]
    while numeric and numeric[0] == 0:
        numeric, coeffs = numeric[1:], coeffs[1:]
    if len(numeric) < 2:
        return []
    import numpy as np
    found = [r.real for r in np.roots(numeric) if abs(r.imag) <= 1e-9 * max(1.0, abs(r.real)) and r.real > 0]
    closed: List[sp.Basic] = []
    if len(coeffs) == 2:
        closed = [-coeffs[1] / coeffs[0]]
    elif len(coeffs) == 3:
        a, b, c = coeffs
        disc = sp.sqrt(b ** 2 - 4 * a * c)
        closed = [(-b + disc) / (2 * a), (-b - disc) / (2 * a)]
    out = []
    for val in found:
        match = None
        for r in closed:
            rv = complex(sp.N(r.subs(env).subs(TARGET, y)))
            if abs(rv - val) <= 1e-9 * max(1.0, abs(val)):
                match = r
                break
        # polish the floating root on the numeric polynomial (np.roots is not exact to 1e-12)
        f = sp.lambdify(xs, num.subs(env).subs(TARGET, y), "mpmath")
        try:
            import mpmath
            val = float(mpmath.findroot(f, val))
        except (ValueError, ZeroDivisionError):
            pass
        out.append((val, match))
    return out


#: The parallel degrees: their valid values divide the fleet, and the output changes regime between them
#: (an all-reduce leaves NVLink), so beyond the configuration's regime they are searched, not solved.
_LAYOUT = ("tp_size", "pp_size", "ep_size")


def _layout_answer(pr: _Problem, label: str, current: float, direction: int, regimes: int) -> Requirement:
    """The valid parallel degree nearest the configuration's that meets the target, through ``solve()``;
    else the best the valid degrees reach."""
    n = pr.a.accelerators
    tried = []
    for d in sorted((d for d in range(1, n + 1) if n % d == 0), key=lambda d: (abs(d - pr.x0), d)):
        try:
            tried.append((d, pr.exact(d)))
        except (ValueError, TypeError):
            continue
        if _meets(tried[-1][1], pr.target, direction):
            d, o = tried[-1]
            return Requirement(label, pr.q, pr.target, pr.solve_for, pr.x, pr.x0, current, None, float(d), d, o, (),
                               regimes, configuration=pr.configuration, direction=direction, unit=pr.p.unit,
                               notes=(f"no root in the configuration's regime: {pr.solve_for} = {d} is the valid "
                                      "value nearest the configuration's that meets the target (searched through "
                                      "solve(); the output changes regime between the degrees, so there is no one "
                                      "closed form)",))
    best = max(tried, key=lambda t: t[1] * direction) if tried else None
    reason = (f"no valid {pr.solve_for} meets it; the best, {best[1]:.6g}, is at {pr.solve_for} = {best[0]}"
              if best else f"no valid {pr.solve_for} for this fleet")
    return Requirement(label, pr.q, pr.target, pr.solve_for, pr.x, pr.x0, current, None, None, None, None, (), regimes,
                       (sp.Float(best[1]) if best else sp.nan, best[1] if best else float("nan")), reason,
                       pr.configuration, direction, pr.p.unit)


def _limit(pr: _Problem, smooth, xs, env, direction, y):
    """The output at the end of the input's range toward which it moves toward the target (a limit when
    that end is 0 or infinity), as ``(closed form, value, a far point in that direction or None, end)``
    with ``end`` ``"oo"``, ``"0"`` or the end's value."""
    num = sp.lambdify(xs, smooth.subs(env), "math")
    x0 = pr.x0 if pr.x0 else 1.0
    try:
        step = x0 * 1e-3
        up = num(min(x0 + step, pr.hi)) - num(max(x0 - step, pr.lo if pr.lo > 0 else x0 / 2))
    except (ZeroDivisionError, ValueError, OverflowError):
        return None
    grows_with_x = (up > 0) == (direction > 0)
    bound = pr.hi if grows_with_x else pr.lo
    if math.isfinite(bound) and bound > 0:
        lim, end = smooth.subs(xs, sp.nsimplify(bound)), f"{bound:g}"
    else:
        point = sp.oo if grows_with_x else 0
        side_ = "+" if point == 0 else "-"
        # the numeric limit first (the symbols may hide a 0 coefficient: oo * sign(N_PP - 1) at N_PP = 1);
        # the closed form only when that limit is finite
        lim = sp.limit(smooth.subs(env), xs, point, side_)
        if lim.is_finite:
            lim = sp.limit(smooth, xs, point, side_)
        end = "oo" if grows_with_x else "0"
    lim_val = float(sp.N(lim.subs(env).subs(TARGET, y)))
    if not math.isfinite(lim_val):
        return None
    far = min(x0 * 1e6, pr.hi) if grows_with_x else max(x0 * 1e-6, pr.lo)
    if pr.p.kind is Kind.COUNT:
        far = max(1, int(far))
    try:
        far_val = num(far)
    except (ZeroDivisionError, ValueError, OverflowError):
        return lim, lim_val, None, end
    if far != pr.x0 and (far_val - y) * direction >= 0:      # met somewhere out there: another regime
        return lim, lim_val, far, end
    return lim, lim_val, None, end


#: A whole number whose runnable values end below this is scanned whole for the best one.
SCAN = 4096


def _candidates(pr: _Problem):
    """The values tried for the best one when nothing reaches the target: every whole number a schedule runs at
    (up to :data:`SCAN`, when the input's runnable values end there), else a few around the configuration."""
    if pr.p.kind is Kind.COUNT and pr.top <= SCAN:
        return [v for v in range(max(1, int(pr.lo)), int(pr.top) + 1) if pr.at(v).runnable]
    return (pr.x0, pr.lo, pr.hi, pr.lo + 1, 2 * pr.x0, pr.x0 / 2)


def _unreachable(pr: _Problem, label: str, current: float, direction: int, regimes: int, why: str,
                 notes: Tuple[str, ...] = ()) -> Requirement:
    """No value reaches the target: the best value the input's valid range gives (through ``solve()``)."""
    best = None
    for v in _candidates(pr):
        if not (math.isfinite(v) and pr.inside(v)) or (pr.p.kind is Kind.COUNT and v != int(v)) or v <= 0:
            continue
        try:
            o = pr.exact(int(v) if pr.p.kind is Kind.COUNT else v)
        except (ValueError, TypeError, ZeroDivisionError):
            continue
        if best is None or (o - best[1]) * direction > 0:
            best = (v, o)
    lim = (sp.Float(best[1]), best[1]) if best else (sp.nan, float("nan"))
    reason = why + (f"; the best found is {best[1]:.6g}, at {pr.solve_for} = {best[0]:g}" if best else "")
    return Requirement(label, pr.q, pr.target, pr.solve_for, pr.x, pr.x0, current, None, None, None, None, (),
                       regimes, lim, reason, pr.configuration, direction, pr.p.unit, notes)


def _meets(value: float, target: float, direction: int) -> bool:
    return (value - target) * direction >= -1e-12 * max(1.0, abs(target))


def _inside_domain(pr: _Problem, root: float, notes: List[str]) -> Tuple[float, Optional[float]]:
    """The root and the output there through ``solve()``; a root a rounding error outside the input's
    range (an efficiency of 1 + 2e-16) is moved to the nearest float ``solve()`` accepts."""
    val = root
    for _ in range(8):
        try:
            return val, pr.exact(val)
        except (ValueError, TypeError) as exc:
            error = exc
            val = math.nextafter(val, pr.x0)
    notes.append(f"solve() rejects {pr.solve_for} = {root:.6g}: {error}")
    return root, None


def _integer(pr: _Problem, root: float, direction: int, meet: int,
             notes: List[str]) -> Tuple[Optional[int], Optional[float]]:
    """The valid whole number that meets the target next to the boundary: every valid value beyond it,
    toward the root, misses. The exact output of a whole number (floors and all, through ``solve()``'s
    checks) is a step function whose boundary may sit a plateau away from the smooth root, so the search
    starts at the root and walks: toward the side that meets the target (``meet``: +1 when larger values
    meet it) until it meets, then back while the next valid value still meets."""

    def out(v):
        try:
            return pr.exact(v)
        except (ValueError, TypeError):
            return None

    def valid_from(v, step):
        for _ in range(MAX_WALK):
            if v < 1 or v > pr.top:              # beyond the top no schedule runs
                return None, None
            o = out(v)
            if o is not None:
                return v, o
            v += step
        return None, None

    v, o = valid_from(max(1, round(root)), meet)
    walked = 0
    while v is not None and not _meets(o, pr.target, direction) and walked < MAX_WALK:
        v, o = valid_from(v + meet, meet)
        walked += 1
    if v is None or walked >= MAX_WALK:
        notes.append(f"no valid whole number within {MAX_WALK} of the root meets the target")
        return None, None
    while walked < MAX_WALK:
        w, p = valid_from(v - meet, -meet)
        if w is None or not _meets(p, pr.target, direction):
            return v, o
        v, o = w, p
        walked += 1
    return v, o
