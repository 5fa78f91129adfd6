"""Sensitivities at one point: continuous rows (exact derivatives, one-sided at kinks), integer knobs, the table.

See the package docstring (:mod:`mlsysim_sym.sensitivity`) for what each row means.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Dict, List, Mapping, Optional, Tuple

import numpy as np
import sympy as sp

from ..arguments import Arguments, checked, describe
from ..checks import check
from ..compile import compile_quantities
from ..decisions import ModelDecisions, model_decisions
from ..decisions import labels as side_labels
from ..model import Variant, build_model
from ..operating_point import operating_point
from ..outputs import ALIASES, OUTPUTS, better, output
from ..printing import latex
from ..simplify import shorten
from ..branches import resolution
from ..solver import price
from ..terms.base import Iverson
from .. import notation
from ..inputs import seq_len_unread
from ..symbols import BY_SYMBOL, Kind, by_argument, of_kind, sensitivity_rows, sym
from .gradients import Gradient, at_point, gradient, smooth
from .table import as_html, as_latex, as_text

#: Continuous rows: name -> symbol (see the module docstring for where each comes from).
CONTINUOUS: Dict[str, sp.Symbol] = sensitivity_rows("continuous")
#: mlsysim's constants, rows with ``include_constants=True`` (named by symbol).
CONSTANT_ROWS: Dict[str, sp.Symbol] = {p.name: p.symbol for p in of_kind(Kind.CONSTANT)}
_WRT = tuple(CONTINUOUS.values()) + tuple(CONSTANT_ROWS.values())

#: Integer knobs: name -> the symbol of the relaxed derivative (None: no relaxed derivative: a switch).
INTEGER_KNOBS: Dict[str, Optional[sp.Symbol]] = {
    name: (None if by_argument()[name].kind is Kind.FLAG else s) for name, s in sensitivity_rows("knob").items()}
_KNOB_SYMBOLS = tuple(s for s in INTEGER_KNOBS.values() if s is not None)

#: Friendly output names -> model quantity (any quantity name or ``solve()`` result field works too): the
#: aliases of :data:`mlsysim_sym.outputs.OUTPUT_TABLE`.
OUTPUT_ALIASES = ALIASES
_FIELD_OF = {q: f for f, q in OUTPUTS.items()}


def refuse_yes_no(name: str, q: str, variant: Variant) -> None:
    """A ``ValueError`` naming ``output`` where the quantity ``q`` is a yes/no value (``feasible``, an indicator
    such as ``memory_bound``): 0 or 1, with no derivative and no value to solve for."""
    e = build_model(variant)[q]
    if getattr(e, "is_Boolean", False) or isinstance(e, (Iverson, sp.core.relational.Relational)):
        raise ValueError(f"output: {name} is a yes/no value (0 or 1), with no derivative; ask for the quantity it "
                         f"tests or a smooth output: mfu, step_time, scaling_efficiency, memory, ...")


def quantity_name(name: str, variant: Variant = Variant()) -> str:
    """The model quantity of an output name (alias, quantity name, ``solve()`` result field, the symbol a table
    prints or the book's macro: ``b_pipe``, ``PipelineBubbleFraction``)."""
    o = output(name)
    q = o.quantity if o is not None else name
    known = model_decisions(variant).symbol_of
    if q not in known:      # the symbol a table prints for it (M_total, T_DP,exposed)
        q = notation.printed_as(name, known) or notation.named_by_macro(name, known) or q
    if q not in known:
        raise KeyError(f"unknown output {name!r}; use one of {', '.join(OUTPUT_ALIASES)}, "
                       f"a model quantity name or a solve() result field")
    return q


# --------------------------------------------------------------------------------------
# Regimes: the smooth expression, its derivatives, compiled (cached; see .gradients)
# --------------------------------------------------------------------------------------

def regime(variant: Variant, outputs: Tuple[str, ...], signature: Tuple[Tuple[int, int], ...], relax: bool = False,
           wrt: Tuple[sp.Symbol, ...] = _WRT) -> Gradient:
    """The :class:`~mlsysim_sym.sensitivity.gradients.Gradient` of ``outputs`` in the regime ``signature``,
    by default with respect to the symbol of every continuous row and constant (built once, then cached)."""
    return gradient(variant, outputs, signature, relax, wrt)


#: The headline outputs share one compiled program per regime.
HEADLINE = ("mfu", "T_step", "scaling_efficiency", "effective_throughput", "M_acc")


def _group(quantity: str) -> Tuple[str, ...]:
    return HEADLINE if quantity in HEADLINE else (quantity,)


@lru_cache(maxsize=None)
def _continuous_decisions(md: ModelDecisions, group: Tuple[str, ...]) -> Tuple[int, ...]:
    """Decisions of ``group`` whose side moves with a continuous parameter (resolved for derivatives)."""
    wrt = set(_WRT)
    return tuple(i for i in md.decisions_of(group) if md.decisions[i].moves_with & wrt)


# --------------------------------------------------------------------------------------
# Result rows
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OneSided:
    """The derivative on one side of a kink, and the regime the model enters there."""

    derivative: float
    elasticity: float
    value: float          # the output on that side, continued to the point (differs at a jump)


@dataclass(frozen=True)
class Row:
    """One continuous parameter: value, derivative, elasticity, regime (``left``/``right`` at a kink)."""

    parameter: str
    symbol: sp.Symbol
    value: float
    derivative: Optional[float]
    elasticity: Optional[float]
    regime: str
    kink: Optional[str] = None
    left: Optional[OneSided] = None
    right: Optional[OneSided] = None
    jump: bool = False

    @property
    def magnitude(self) -> float:
        """The largest ``|elasticity|`` of the row (either side at a kink; -1 when undefined)."""
        es = [self.elasticity] if self.kink is None else [self.left.elasticity, self.right.elasticity]
        es = [abs(e) for e in es if e is not None and not math.isnan(e)]
        return max(es) if es else -1.0

    @property
    def one_sided(self) -> bool:
        """A kink with one flat side: the output moves only when the parameter moves the other way
        (the straggler factor at 1: below it nothing changes)."""
        return self.kink is not None and 0.0 in (self.left.elasticity, self.right.elasticity)

    def score(self, better: int = 0) -> float:
        """How much a 1 % move of the parameter can change the output, the row's rank.

        Off a kink: ``|elasticity|``. At a kink, with ``better`` = +1 (more of the output is
        better: MFU, throughput) or -1 (less is better: step time, memory), the larger
        *improvement* of a move down (the output changes by ``-left`` %) or up (``+right`` %):
        the straggler factor at its floor, whose only move lowers MFU, scores 0. Off a kink
        this equals ``|elasticity|`` (one of the two moves improves the output). With
        ``better=0`` a kink scores its larger side. -1 when undefined.
        """
        if self.kink is None or not better:
            return self.magnitude
        left, right = self.left.elasticity, self.right.elasticity
        if any(e is None or math.isnan(e) for e in (left, right)):
            return self.magnitude
        return max(0.0, -better * left, better * right)


@dataclass(frozen=True)
class Step:
    """The output after moving an integer knob to ``value`` (exact, through the solver)."""

    value: int
    output: float
    delta: float
    relative: float
    warnings: Tuple[str, ...] = ()
    runnable: bool = True       # whether a framework runs the schedule there (Arguments.runnable; solve() prices it)
    fits: bool = True           # whether its state fits in accelerator memory there (solve()'s feasible)


@dataclass(frozen=True)
class DiscreteRow:
    """An integer knob: the exact change of the output at its previous and next valid value.

    ``skipped`` lists the values tried on the way that the solver rejects, with its message.
    """

    knob: str
    value: int
    down: Optional[Step]
    up: Optional[Step]
    skipped: Tuple[Tuple[int, str], ...]


@dataclass(frozen=True)
class SwitchRow:
    """An on/off switch the model reads: the exact output with it flipped (``flipped``, None where ``solve()``
    refuses that configuration, with its message in ``refused``)."""

    switch: str
    value: bool
    flipped: Optional[Step]
    refused: str = ""


#: The switches a sensitivity table flips: the yes/no keywords that choose how a job runs (LoRA changes the job
#: itself, and ZeRO is an integer knob).
SWITCHES = tuple(k for k, p in by_argument().items() if p.kind is Kind.FLAG and k not in ("zero_stage", "is_lora"))


def _row(name, x, v, f, grad, kinks, regime_text) -> Row:
    if x in kinks:
        kink, (fl, dl), (fr, dr), jump = kinks[x]
        return Row(name, x, v, None, None, regime_text, kink, OneSided(dl, _elasticity(v, dl, fl), fl),
                   OneSided(dr, _elasticity(v, dr, fr), fr), jump)
    d = grad.get(x, 0.0) + 0.0          # + 0.0: no -0.0 where the output does not move
    return Row(name, x, v, d, _elasticity(v, d, f), regime_text)


# --------------------------------------------------------------------------------------
# One point
# --------------------------------------------------------------------------------------

def _elasticity(x, d, f) -> float:
    return float("nan") if f == 0 else float(x) * d / f + 0.0


def regime_signature(variant: Variant, values: Mapping[sp.Symbol, object], output: str = "mfu"):
    """The continuous regime of ``output`` at a point, as ``(decision index, side)`` pairs (cheap: no build)."""
    md = model_decisions(variant)
    data = md.data(values)
    return tuple((i, int(md.decisions[i].choose(data[i])))
                 for i in _continuous_decisions(md, _group(quantity_name(output, variant))))


def sensitivities_at(variant: Variant, values: Mapping[sp.Symbol, object], output: str = "mfu",
                     include_constants: bool = False) -> "Sensitivities":
    """The continuous sensitivities at a point given as ``Symbol -> value`` (no solver checks, no knobs)."""
    md = model_decisions(variant)
    q = quantity_name(output, variant)
    refuse_yes_no(output, q, variant)
    data = md.data(values)
    continuous = _continuous_decisions(md, _group(q))
    f, grad, kinks, signature = at_point(md, _group(q), q, values, data, continuous, False, _WRT)
    choices = md.choices(data, md.decisions_of(q))
    labels = side_labels(md, choices, values)
    names = dict(CONTINUOUS, **(CONSTANT_ROWS if include_constants else {}))
    params = md.parameters
    continuous = set(continuous)
    rows = []
    unread = _unread(variant, values)
    for name, x in names.items():
        if x not in params or values.get(x) is None or x in unread:
            continue
        d, v = md.decisions, values[x]
        where = [labels[i] for i in choices if labels[i] and (x in d[i].moves_with if i in continuous else
                                                              x in d[i].branch_params[int(choices[i])])]
        regime_text = ", ".join(dict.fromkeys(where))
        rows.append(_row(name, x, v, f, grad, kinks, regime_text))
    rows.sort(key=lambda r: -r.score(better(q)))
    summary = [labels[i] for i in choices if labels[i]]
    return Sensitivities(output, q, f, tuple(dict.fromkeys(summary)), signature, tuple(rows), variant,
                         dict(values))


def sensitivities(model, fleet, output: str = "mfu", *, include_constants: bool = False,
                  **solve_kwargs) -> "Sensitivities":
    """Ranked sensitivities of ``output`` at one ``solve()`` configuration.

    Parameters
    ----------
    model, fleet
        As in :meth:`mlsysim_sym.DistributedModel.solve`: catalog names, records, or mlsysim objects.
    output
        ``"mfu"`` (fleet), ``"step_time"``, ``"scaling_efficiency"``, ``"effective_throughput"``,
        ``"memory"`` (per accelerator), or any model quantity / ``solve()`` result field.
    include_constants
        Also rank mlsysim's constants (framework tax, hierarchical latency, Adam bytes, ...).
    **solve_kwargs
        ``solve()``'s keyword arguments (validated, and warned about, exactly as ``solve()`` does).
    """
    a = checked(model, fleet, solve_kwargs, caller="sensitivities")   # solve()'s checks and warnings
    table = sensitivities_at(a.variant, a.values, output, include_constants)
    return replace(table, context=a, configuration=describe(a, effects=True))


# --------------------------------------------------------------------------------------
# Integer knobs
# --------------------------------------------------------------------------------------

def _solve_output(a: Arguments, quantity: str):
    """``(output, warnings)`` through the solver's checks, or raises the solver's error."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if quantity in _FIELD_OF:
            out = float(price(a).quantities[_FIELD_OF[quantity]])
        else:
            check(a)
            out = float(compile_quantities(a.variant, (quantity,), "math").evaluate(a.values)[quantity])
    return out, tuple(str(c.message) for c in caught)


def _current(a: Arguments, knob: str) -> int:
    """The knob's value: as the call gives it, else the record's (a layer count of 0 or None reads as 1)."""
    v = a.get(knob)
    if v is not None:
        return v
    p = by_argument()[knob]
    if knob == "layers":
        return a.workload.layers or 1
    return getattr(a.workload if p.origin.value == "workload" else a.fleet, p.field)


def _candidates(a: Arguments, knob: str, k) -> Tuple[List[int], List[int]]:
    """Values to try above and below ``k``, nearest first (the solver decides validity)."""
    n = a.accelerators
    sizes = {s: a[s] for s in a.model.splits}
    # under the MoE layout the experts' EP x ETP x PP is a split of its own (carved out of a stage's ranks)
    experts = {s: a[s] for s in ("ep_size", "etp_size", "pp_size")} \
        if a.model.on("moe_layout") and "ep_size" not in sizes else {}
    group = sizes if knob in sizes else experts if knob in experts else None
    if group is not None:
        rest = math.prod(v for s, v in group.items() if s != knob)
        divs = sp.divisors(n // rest) if n % rest == 0 else []
        routed = a.workload.experts or 0
        if knob == "ep_size" and routed:         # each rank holds whole experts
            divs = [d for d in divs if routed % d == 0]
        up = sorted({k + 1} | {d for d in divs if d > k})[:2]
        down = sorted({k - 1} | {d for d in divs if d < k}, reverse=True)[:2]
        return up, down
    if knob == "count":
        g = math.lcm(math.prod(sizes.values()), math.prod(experts.values()) if experts else 1)
        step = g // math.gcd(g, a.fleet.node.accelerators_per_node)
        walk = range(1, SCHEDULE_WALK + 1)        # on to a count whose replicas split the batch
        up = [k + i * step for i in walk]
        down = [k - i * step for i in walk if k - i * step >= 1]
        if a.runnable:
            up, down = ([v for v in vs if a.replace(count=v).runnable][:_TRIES] for vs in (up, down))
        # where no count nearby runs a schedule: the next count the split takes (priced, marked as running none)
        return _then(up, k + step), (_then(down, k - step) if k > step else down)
    if knob in SCHEDULE_KNOBS:
        # a schedule knob: on to the nearest values a framework runs (m 16 -> 32, not 17; a batch of 1024 over 512
        # replicas -> 512 and 1536), found among all values up to twice the knob's in one call of can_run()
        if not a.runnable:        # the configuration runs no schedule: its neighbours need not either
            return [k + 1], [k - 1]
        reach = min(max(SCHEDULE_WALK, 2 * k), 1 << 22)
        up, down = np.arange(k + 1, k + 1 + reach), np.arange(k - 1, max(k - 1 - reach, 0), -1)
        return tuple(_then(vs[a.runs_with(knob, vs)][:_TRIES].tolist(), k + d) if k + d >= 1 else []
                     for vs, d in ((up, 1), (down, -1)))
    if knob == "seq_len":       # on to a length solve() takes (one that cp_size's ranks split evenly)
        walk = max(_TRIES * 2, 2 * int(a.get("cp_size", 1) or 1))
        return list(range(k + 1, k + 1 + walk)), list(range(k - 1, max(k - 1 - walk, 0), -1))
    return [k + 1], [k - 1]


#: How many of the nearest runnable values a neighbour tries before k +- 1 (solve() may refuse one).
_TRIES = 4


def _then(runnable: List[int], next_value: int) -> List[int]:
    """The runnable values to try, nearest first, then the next value itself (priced where none of them runs)."""
    return runnable + ([next_value] if next_value not in runnable else [])


#: The integer knobs whose neighbours must keep a schedule a framework runs (can_run's rules read them).
SCHEDULE_KNOBS = ("batch_size", "microbatch_count", "v_stages", "gradient_accumulation_steps", "layers")


#: How many node-count steps (or, at least, schedule values) past a knob's own its neighbour search walks for one a
#: framework runs.
SCHEDULE_WALK = 256


def switch_sensitivities(table: "Sensitivities") -> Tuple[SwitchRow, ...]:
    """The exact change of the output when each switch the model reads (:data:`SWITCHES`) is flipped, through
    ``solve()`` (needs a ``solve()`` context)."""
    if table.context is None:
        raise ValueError("switches need the solve() context: use sensitivities(model, fleet, ...)")
    a = table.context
    base, _ = _solve_output(a, table.quantity)
    params = set(build_model(table.variant).parameters)
    rows = []
    for name in SWITCHES:
        p = by_argument()[name]
        if p.symbol not in params:
            continue
        on = bool(a.get(name, p.default))
        moved = a.replace(**{name: not on})
        try:
            out, msgs = _solve_output(moved, table.quantity)
        except (ValueError, TypeError) as exc:
            rows.append(SwitchRow(name, on, None, str(exc)))
            continue
        rows.append(SwitchRow(name, on, _step(int(not on), out, base, msgs, moved)))
    return tuple(rows)


def _neighbour(a: Arguments, knob, candidates, base, quantity, skipped) -> Optional[Step]:
    """The first of ``candidates`` that ``solve()`` takes and a framework runs; where none runs, the first that
    ``solve()`` takes (its :class:`Step` says it does not run)."""
    first = None
    for step in _accepted(a, knob, candidates, base, quantity, skipped):
        if step.runnable:
            return step
        first = first or step
        if not a.runnable:        # the configuration itself runs no schedule: its neighbour need not either
            break
    return first


def _accepted(a: Arguments, knob, candidates, base, quantity, skipped):
    """The :class:`Step` of each of ``candidates`` that ``solve()`` takes, in order (the others in ``skipped``)."""
    rng = by_argument()[knob].range
    for v in candidates:
        if knob in ("layers", "count") and v < 1:
            skipped.append((v, f"{knob} must be >= 1"))
            continue
        if v not in rng:        # a value no configuration means (ZeRO stage 4 or -1): not tried, not shown
            continue
        moved = a.replace(**{knob: v})
        try:
            out, msgs = _solve_output(moved, quantity)
        except (ValueError, TypeError) as exc:
            skipped.append((v, str(exc)))
            continue
        yield _step(v, out, base, msgs, moved)


def _step(v, out: float, base: float, msgs, moved: Arguments) -> Step:
    """The :class:`Step` to ``out`` from ``base`` at the knob's or switch's value ``v`` (the configuration
    ``moved``: whether a framework runs its schedule, whether it fits in accelerator memory)."""
    fits = compile_quantities(moved.variant, (OUTPUTS["node_profile.feasible"],), "math").evaluate(moved.values)
    return Step(v, out, out - base, (out - base) / base if base else float("nan"), msgs, moved.runnable,
                bool(fits[OUTPUTS["node_profile.feasible"]]))


def discrete_sensitivities(table: "Sensitivities") -> Tuple[DiscreteRow, ...]:
    """Exact changes of the output at the neighbouring values of the integer knobs (needs a ``solve()`` context)."""
    if table.context is None:
        raise ValueError("integer knobs need the solve() context: use sensitivities(model, fleet, ...)")
    a = table.context
    base, _ = _solve_output(a, table.quantity)
    rows = []
    for knob in knobs_of(table.variant):
        k = _current(a, knob)
        up, down = _candidates(a, knob, k)
        skipped: List[Tuple[int, str]] = []
        hi = _neighbour(a, knob, up, base, table.quantity, skipped)
        lo = _neighbour(a, knob, down, base, table.quantity, skipped)
        rows.append(DiscreteRow(knob, k, lo, hi, tuple(sorted(skipped))))
    return tuple(rows)


def relaxed_sensitivities(table: "Sensitivities") -> Tuple[Row, ...]:
    """Relaxed derivatives of the output with respect to the integer knobs (``zero_stage`` has none).

    Every floor and ceiling moves like its real quotient (its fractional part at the
    point held fixed, so the relaxed form equals the model at the point), in the
    regime of the point, the fleet held fixed (``tp_size`` changes ``dp``). A
    smooth interpolation of an integer model: a guide, not a prediction; the
    exact changes are in :func:`discrete_sensitivities`.
    """
    md = model_decisions(table.variant)
    data = md.data(table.values)
    full = md.decisions_of(_group(table.quantity))
    f, grad, kinks, _ = at_point(md, _group(table.quantity), table.quantity, table.values, data, full, True,
                               _KNOB_SYMBOLS)
    unread = _unread(table.variant, table.values)
    # (a knob whose symbol the variant's values do not hold, GA of the extended model's engine path, has no row)
    return tuple(_row(k, x, table.values[x], f, grad, kinks, "relaxed")
                 for k, x in knobs_of(table.variant).items() if x is not None and x not in unread and x in table.values)


def _unread(variant: Variant, values: Mapping[sp.Symbol, object]) -> Tuple[sp.Symbol, ...]:
    """The parameters the configuration never reads, left out of the rows: a non-transformer's sequence length
    without TP or EP (mlsysim lowers it to 0; a row "S 0" would say the caller's value was 0), and under the
    extended model's MoE layout the expert degrees of an architecture card without routed experts (it refuses
    them beyond 1: a slope there would be of a layout no check lets through)."""
    out = [sym.s] if seq_len_unread(variant.family == "transformer", values.get(sym.tp, 1),
                                    values.get(sym.ep, 1)) else []
    if variant.on("moe_layout") and values.get(sym.P_exp, 0) == 0 and values.get(sym.F_head, 0) > 0:
        out += [sym.ep, sym.etp]
    return tuple(out)


def knobs_of(variant: Variant) -> Dict[str, Optional[sp.Symbol]]:
    """The integer knobs of a model: :data:`INTEGER_KNOBS`; the extended model's (``cp_size``) where the model
    reads it."""
    params = set(build_model(variant).parameters)
    table = by_argument()
    return {k: x for k, x in INTEGER_KNOBS.items() if table[k].fidelity == "mlsysim" or table[k].symbol in params}


# --------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Sensitivities:
    """Ranked sensitivities of one output at one point (rows by decreasing ``|elasticity|``).

    ``table["efficiency"]`` is a :class:`Row`; ``table.discrete["tp_size"]`` a
    :class:`DiscreteRow` (computed on first access); ``table.expression(name)`` the
    sympy derivative in this regime; ``print(table)`` and notebooks show the table.
    """

    output: str
    quantity: str
    value: float
    regime: Tuple[str, ...]
    signature: Tuple[Tuple[int, int], ...]
    rows: Tuple[Row, ...]
    variant: Variant
    values: Dict[sp.Symbol, object] = field(repr=False)
    context: Optional[Arguments] = field(default=None, repr=False, compare=False)
    configuration: str = field(default="", compare=False)
    _cache: Dict[str, object] = field(default_factory=dict, repr=False, compare=False)

    def __getitem__(self, name: str) -> Row:
        for r in self.rows:
            if r.parameter == name or str(r.symbol) == name:
                return r
        raise KeyError(f"no row {name!r}; rows: {', '.join(r.parameter for r in self.rows)}")

    def __iter__(self):
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def discrete(self) -> "_Named":
        """Exact neighbour changes of the integer knobs (:func:`discrete_sensitivities`), computed on first use."""
        if "discrete" not in self._cache:
            self._cache["discrete"] = _Named(discrete_sensitivities(self))
        return self._cache["discrete"]

    @property
    def switches(self) -> Tuple[SwitchRow, ...]:
        """The exact change of the output with each switch flipped (:func:`switch_sensitivities`), computed on first
        use."""
        if "switches" not in self._cache:
            self._cache["switches"] = switch_sensitivities(self)
        return self._cache["switches"]

    @property
    def relaxed(self) -> "_Named":
        """Relaxed derivatives of the integer knobs (:func:`relaxed_sensitivities`), computed on first use."""
        if "relaxed" not in self._cache:
            self._cache["relaxed"] = _Named(relaxed_sensitivities(self))
        return self._cache["relaxed"]

    def expression(self, parameter: Optional[str] = None, frozen: bool = True) -> sp.Basic:
        """The output (``parameter=None``) or its derivative, as sympy, in this regime.

        ``frozen=True`` resolves every decision and puts the value of every floor and
        ceiling in place (the readable form); False gives the expression that is
        compiled (integer structure kept as ``Piecewise``/``FloorDiv``).
        """
        md = model_decisions(self.variant)
        if frozen:
            expr = _frozen(md, self.quantity, self.values)
        else:
            expr = regime(self.variant, _group(self.quantity), self.signature).expr(self.quantity)
        return expr if parameter is None else sp.diff(expr, self[parameter].symbol)

    def short(self, parameter: str, form: str = "elasticity") -> sp.Basic:
        """The elasticity (or ``form="derivative"``) of the output with respect to ``parameter`` in this
        regime, short: written in the model's named quantities (``T_step``, ``T_node``, ...) by the
        chain rule over their definitions at this operating point, each step shortened
        (:func:`mlsysim_sym.simplify.shorten`). Its value at the point is the row's."""
        if form not in ("elasticity", "derivative"):
            raise ValueError(f"form must be 'elasticity' or 'derivative', got {form!r}")
        key = ("short", parameter, form)
        if key not in self._cache:
            if "point" not in self._cache:
                self._cache["point"] = operating_point(self.values, self.variant)
            point = self._cache["point"]
            x = self[parameter].symbol
            e = chained_elasticity(point, self.quantity, x)
            self._cache[key] = e if form == "elasticity" else shorten(e * point[self.quantity].symbol / x)
        return self._cache[key]

    def latex(self, parameter: Optional[str] = None, book: bool = False, form: str = "elasticity") -> str:
        """LaTeX in the book's notation (``book=True``: the book's macros) of :meth:`short`: the
        elasticity (``form="derivative"``: the derivative) with respect to ``parameter``, or, without
        one, the output itself in this regime (:meth:`expression`)."""
        if parameter is None:
            return latex(self.expression(), book=book)
        y, x = self[parameter], self.quantity
        lhs = (rf"\frac{{\partial \ln {latex(_symbol_of(self, x), book=book)}}}{{\partial \ln "
               rf"{latex(y.symbol, book=book)}}}" if form == "elasticity" else
               rf"\frac{{\partial {latex(_symbol_of(self, x), book=book)}}}{{\partial {latex(y.symbol, book=book)}}}")
        out = lhs + " = " + latex(self.short(parameter, form), book=book)
        if y.kink is not None:          # the expression is this side's: the two one-sided values beside it
            sides = [getattr(o, form) for o in (y.left, y.right)]
            out += rf" \quad \left(\text{{below: }} {sides[0]:.4g},\ \text{{above: }} {sides[1]:.4g}\right)"
        return out

    def to_dict(self, discrete: bool = True) -> Dict[str, object]:
        """The table as plain Python values (``json.dumps`` takes it): the output, its value and regime, the
        configuration in words (``configuration_line``, where the table was worked out at one),
        every continuous row (``derivative``/``elasticity`` null at a kink, whose sides are under
        ``below``/``above``), and with ``discrete`` the integer knobs' exact neighbour changes and their relaxed
        derivatives (``relaxed``: as a continuous row, null for a knob that has none), as the text prints them."""
        def side(o):
            return {"derivative": o.derivative, "elasticity": o.elasticity, "value": o.value}
        rows = []
        for r in self.rows:
            p = BY_SYMBOL[r.symbol]
            row = {"parameter": r.parameter, "symbol": p.text, "words": p.words, "value": float(r.value),
                   "unit": p.unit, "derivative": r.derivative, "elasticity": r.elasticity, "regime": r.regime,
                   "score": r.score(better(self.quantity))}
            if r.kink is not None:
                row.update(kink=r.kink, jump=r.jump, below=side(r.left), above=side(r.right))
            rows.append(row)
        out = {"output": self.output, "quantity": self.quantity, "value": self.value,
               "unit": notation.entry(self.quantity).unit, "regime": list(self.regime), "rows": rows}
        if self.configuration:          # in words, as the other results' JSON gives it
            out["configuration_line"] = self.configuration
        if discrete and self.context is not None:
            step = (lambda s: None if s is None else {"value": s.value, "output": s.output, "change": s.delta,
                                                      "relative": s.relative, "runnable": s.runnable,
                                                      "fits": s.fits})
            relaxed = {r.parameter: r for r in self.relaxed}

            def smooth(r):          # the relaxed derivative, as a continuous row gives it (its sides at a kink)
                if r is None:
                    return None
                out = {"derivative": r.derivative, "elasticity": r.elasticity, "regime": r.regime}
                if r.kink is not None:
                    out.update(kink=r.kink, jump=r.jump, below=side(r.left), above=side(r.right))
                return out
            out["discrete"] = [{"knob": k.knob, "value": k.value, "previous": step(k.down), "next": step(k.up),
                                "skipped": [[v, why] for v, why in k.skipped],
                                "relaxed": smooth(relaxed.get(k.knob))} for k in self.discrete]
            out["switches"] = [{"switch": w.switch, "value": w.value, "flipped": step(w.flipped),
                                "refused": w.refused} for w in self.switches]
        return out

    def plot(self, path=None, ax=None, top: int = 12):
        """A tornado chart of the elasticities (:func:`mlsysim_sym.plot.tornado`; needs matplotlib).
        Saves a PNG at ``path`` when given."""
        # display hook: the pictures sit above the results (and need matplotlib)
        from ..plot import tornado
        return tornado(self, path=path, ax=ax, top=top)

    def __str__(self) -> str:
        return as_text(self)

    def _repr_html_(self) -> str:
        return as_html(self)

    def _repr_latex_(self) -> str:
        return as_latex(self)


class _Named(tuple):
    """Rows, also indexable by knob or parameter name."""

    def __getitem__(self, key):
        if isinstance(key, str):
            for r in self:
                if getattr(r, "knob", None) == key or getattr(r, "parameter", None) == key:
                    return r
            raise KeyError(f"no knob {key!r}; knobs: {', '.join(INTEGER_KNOBS)}")
        return tuple.__getitem__(self, key)


def _symbol_of(table: "Sensitivities", quantity: str) -> sp.Symbol:
    return model_decisions(table.variant).symbol_of[quantity]


def chained_elasticity(point, name: str, x: sp.Symbol) -> sp.Basic:
    """``x/y dy/dx`` of the quantity ``name`` at an operating point, in named quantities.

    For ``y = f(x, q_1, ..., q_n)`` (its definition at the point, decisions resolved),
    ``E(y) = (x df/dx + sum_i q_i df/dq_i E(q_i)) / y``: a product's elasticity is the sum
    of its factors', a sum's their weighted mean. Each ``E(q)`` is shortened; quantities
    that do not depend on ``x`` drop out.
    """
    by_symbol = {point.model.quantity(n).symbol: n for n in point.model}
    memo: Dict[str, sp.Basic] = {}

    def e(n):
        if n not in memo:
            form = point[n].resolved
            # a product of powers divides term by term: q df/dq / f is q's power, so its elasticity is the sum of its
            # factors' (MFU_fleet = MFU T_node / T_step: E(MFU) + E(T_node) - E(T_step)); any other form is divided by
            # the quantity's symbol (a sum: its terms' elasticities weighted by their shares of it)
            y = form if (form.is_Mul or form.is_Pow) and not form.atoms(sp.Add) else point[n].symbol
            out = x * sp.diff(form, x) / y
            for q in form.free_symbols & by_symbol.keys():
                inner = e(by_symbol[q])
                if inner != 0:
                    out += q * sp.diff(form, q) / y * inner
            memo[n] = sp.S.Zero if out == 0 else shorten(out)
        return memo[n]

    return e(name)


def _frozen(md: ModelDecisions, quantity: str, values) -> sp.Basic:
    data = md.data(values)
    idx = md.decisions_of(quantity)
    choices = md.choices(data, idx)
    expr, _ = smooth(md, quantity, {i: int(c) for i, c in choices.items()}, lambda i: True)
    return resolution(expr, values).expr
