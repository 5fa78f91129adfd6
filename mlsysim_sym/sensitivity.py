"""Sensitivities: exact derivatives of MFU, step time, ... with respect to every parameter.

``sensitivities(model, fleet, output="mfu", **solve_kwargs)`` answers "which knob
moves my MFU most?" at one configuration: a ranked table with, per parameter, its
value, the derivative of the output, the **elasticity** ``d ln(output) / d ln(x)``
(the % change of the output per % change of the parameter) and the regime the
derivative holds in.

How: at the operating point the model is resolved to its regime
(:mod:`mlsysim_sym.regime`): every ``Max``/``Min``/``Piecewise`` whose side moves
with a continuous parameter (compute- or memory-bound, fits or spills, straggler or
not, ...) is replaced by its active side; the integer structure (``dp = N // G``,
placement of the DP all-reduce, TP on NVLink or the fabric, ZeRO stage, ...) stays
in the expression, where it is locally constant. sympy differentiates that smooth
expression; the derivatives are compiled once per (variant, output, regime) and
cached (:mod:`mlsysim_sym.derivatives`), so a warm call costs about a millisecond.
**Kinks**: where two sides of a decision are within a relative 1e-9
(``T_compute = T_memory``, ``f_s = 1``, memory exactly at capacity), the
derivative is one-sided: the row reports the derivative from below (``left``) and
from above (``right``), each from the regime the model enters on that side, and
``jump`` when the output itself is discontinuous there (memory spilling switches
the bandwidth).

Each row is a partial derivative with respect to one model symbol, the others held
fixed; the row is named after the ``solve()`` keyword or the record field that
sets the symbol (:data:`CONTINUOUS`):

================================  =============  ======================================================================
row                               symbol         set by
================================  =============  ======================================================================
``efficiency``                    ``eta``        ``solve(efficiency=)``
``overlap_efficiency``            ``eta_ov``     ``solve(overlap_efficiency=)``
``congestion_factor``             ``c``          ``solve(congestion_factor=)``
``straggler_factor``              ``f_s``        ``solve(straggler_factor=)``
``moe_routing_imbalance_factor``  ``iota``       ``solve(moe_routing_imbalance_factor=)``
``seq_len``                       ``s``          ``solve(seq_len=)`` (smooth in the model: no floor acts on it)
``peak_flops``                    ``R``          peak at the precision: ``precision_flops[key]``, else ``peak_flops``
``memory_bandwidth``              ``BW_hbm``     ``accelerator.memory.bandwidth``
``memory_capacity``               ``CAP``        ``accelerator.memory.capacity``
``pcie_bandwidth``                ``BW_pcie``    ``accelerator.interconnect``, per direction (64 GB/s when absent)
``dispatch_tax``                  ``tau_d``      ``accelerator.dispatch_tax``
``tdp``                           ``TDP``        ``accelerator.tdp`` (moves the energy only)
``intra_node_bw``                 ``BW_intra``   ``fleet.node.intra_node_bw``
``nvlink_latency``                ``alpha_nv``   ``accelerator.nvlink.latency`` (500 ns when absent)
``fabric_bandwidth``              ``BW_fab``     ``fleet.fabric.bandwidth``
``fabric_latency``                ``alpha_fab``  ``fleet.fabric.latency`` (5 us when absent)
``oversubscription_ratio``        ``osr``        ``fleet.fabric.oversubscription_ratio``
``parameters``                    ``P``          ``workload.parameters`` (F held fixed, even where mlsysim sets F = 2P)
``inference_flops``               ``F``          lowered ``inference_flops``: per token (per sample off transformers)
``hidden_dim``                    ``H``          ``workload.hidden_dim`` (4096 when absent)
``weight_bytes``                  ``W_lw``       weight bytes where they are not P x element size (``model_size``)
``gradient_bytes``                ``W_g``        DP gradient bytes, idem
``sram_capacity``                 ``CAP_sram``   ``memory.sram_capacity`` (Engine path); also ``sram_bandwidth``
                                                 and ``flash_bandwidth`` (``BW_sram``, ``BW_flash``)
================================  =============  ======================================================================

``include_constants=True`` adds rows for mlsysim's constants (``TAX``, ``alpha_h``,
``ADAM``, ``f_act`` ...), named by symbol.

**Integer knobs** (:data:`INTEGER_KNOBS`: ``tp_size``, ``pp_size``, ``ep_size``,
``count`` (fleet nodes, i.e. data parallelism), ``microbatch_count``, ``v_stages``,
``batch_size``, ``gradient_accumulation_steps``, ``layers``, ``zero_stage``,
``seq_len``) get the exact change of the output when the knob moves to its next
and previous valid value, re-evaluated through :meth:`DistributedModel.solve`
(an invalid neighbour is skipped with the solver's reason), and a **relaxed**
derivative: every floor and ceiling replaced by its real quotient, in the regime
of the point, holding the fleet fixed (a smooth interpolation, not the model).

**Sweeps**: :func:`sensitivity_sweep` evaluates every derivative and elasticity
over arrays of configurations (numpy), grouping the points by regime.

Examples
--------
>>> from mlsysim_sym.sensitivity import sensitivities
>>> t = sensitivities("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
>>> print(", ".join(t.regime))
fits in HBM, compute-bound, DP ring on the fabric, TP on NVLink, DP not overlapped, no straggler (f_s <= 1)
>>> round(t["efficiency"].elasticity, 6), t["peak_flops"].elasticity + t["inference_flops"].elasticity
(0.716093, 0.0)
>>> t["straggler_factor"].kink, t["straggler_factor"].left.elasticity, round(t["straggler_factor"].right.elasticity, 12)
('f_s = 1', 0.0, -1.0)
>>> t.discrete["tp_size"].up.value, t.discrete["tp_size"].skipped[-1]
(16, (9, 'Infeasible 4D Parallelism: TP(9) * PP(4) * EP(1) must divide total accelerators (256) exactly.'))
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Dict, List, Mapping, Optional, Tuple

import numpy as np
import sympy as sp

from . import derivatives
from .branches import near, resolution
from .derivatives import Regime, at_point
from .inputs import RUN_SYMBOLS, parameter_values, resolve_precision
from .model import Variant
from .optimize import divisors
from .regime import ModelDecisions, label, model_decisions
from .sensitivity_display import as_html, as_latex, as_text
from .solver import OUTPUTS, DistributedModel, as_fleet, as_workload
from .sweeps import DEFAULTS, resolve_name, sweep
from .symbols import PARAMS, latex_names, sym

#: Continuous rows: name -> symbol (see the module docstring for where each comes from).
CONTINUOUS: Dict[str, sp.Symbol] = {
    "efficiency": sym.eta, "overlap_efficiency": sym.eta_ov, "congestion_factor": sym.c,
    "straggler_factor": sym.f_s, "moe_routing_imbalance_factor": sym.iota, "seq_len": sym.s,
    "peak_flops": sym.R, "memory_bandwidth": sym.BW_hbm, "memory_capacity": sym.CAP,
    "pcie_bandwidth": sym.BW_pcie, "dispatch_tax": sym.tau_d, "tdp": sym.TDP, "intra_node_bw": sym.BW_intra,
    "nvlink_latency": sym.alpha_nv, "fabric_bandwidth": sym.BW_fab, "fabric_latency": sym.alpha_fab,
    "oversubscription_ratio": sym.osr, "parameters": sym.P, "inference_flops": sym.F, "hidden_dim": sym.H,
    "weight_bytes": sym.W_lw, "gradient_bytes": sym.W_g, "sram_capacity": sym.CAP_sram,
    "sram_bandwidth": sym.BW_sram, "flash_bandwidth": sym.BW_flash,
}
#: mlsysim's constants, rows with ``include_constants=True`` (named by symbol).
CONSTANTS: Dict[str, sp.Symbol] = {p.name: p.symbol for p in PARAMS.values() if p.kind == "constant"}
_WRT = tuple(CONTINUOUS.values()) + tuple(CONSTANTS.values())

#: Integer knobs: name -> the symbol of the relaxed derivative (None: no relaxed derivative).
INTEGER_KNOBS: Dict[str, Optional[sp.Symbol]] = {
    "tp_size": sym.tp, "pp_size": sym.pp, "ep_size": sym.ep, "count": sym.n_nodes,
    "microbatch_count": sym.m, "v_stages": sym.v, "batch_size": sym.B,
    "gradient_accumulation_steps": sym.GA, "layers": sym.L, "zero_stage": None, "seq_len": sym.s,
}
_KNOB_SYMBOLS = tuple(s for s in INTEGER_KNOBS.values() if s is not None)

#: Friendly output names -> model quantity (any quantity name or ``solve()`` result field works too).
OUTPUT_ALIASES = {
    "mfu": "mfu", "step_time": "T_step", "scaling_efficiency": "scaling_efficiency",
    "effective_throughput": "effective_throughput", "memory": "M_acc", "node_mfu": "mfu_node",
    "node_latency": "T_node", "energy": "energy", "communication": "T_comm", "bubble": "T_bubble",
}
_FIELD_OF = {q: f for f, q in OUTPUTS.items()}


def quantity_name(output: str, variant: Variant = Variant()) -> str:
    """The model quantity of an output name (alias, quantity name or ``solve()`` result field)."""
    q = OUTPUT_ALIASES.get(output, OUTPUTS.get(output, output))
    if q not in model_decisions(variant).symbol_of:
        raise KeyError(f"unknown output {output!r}; use one of {', '.join(OUTPUT_ALIASES)}, "
                       f"a model quantity name or a solve() result field")
    return q


# --------------------------------------------------------------------------------------
# Regimes: the smooth expression, its derivatives, compiled (cached; see mlsysim_sym.derivatives)
# --------------------------------------------------------------------------------------

def regime(variant: Variant, outputs: Tuple[str, ...], signature: Tuple[Tuple[int, int], ...], relax: bool = False,
           wrt: Tuple[sp.Symbol, ...] = _WRT) -> Regime:
    """The :class:`~mlsysim_sym.derivatives.Regime` of ``outputs`` for a signature (built once, then cached).

    :func:`mlsysim_sym.derivatives.regime`, by default with respect to the symbol of
    every continuous row and constant.
    """
    return derivatives.regime(variant, outputs, signature, relax, wrt)


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


@dataclass(frozen=True)
class Step:
    """The output after moving an integer knob to ``value`` (exact, through the solver)."""

    value: int
    output: float
    delta: float
    relative: float
    warnings: Tuple[str, ...] = ()


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


def _row(name, x, v, f, grad, kinks, regime_text) -> Row:
    if x in kinks:
        kink, (fl, dl), (fr, dr), jump = kinks[x]
        return Row(name, x, v, None, None, regime_text, kink, OneSided(dl, _elasticity(v, dl, fl), fl),
                   OneSided(dr, _elasticity(v, dr, fr), fr), jump)
    d = grad.get(x, 0.0)
    return Row(name, x, v, d, _elasticity(v, d, f), regime_text)


# --------------------------------------------------------------------------------------
# One point
# --------------------------------------------------------------------------------------

def _elasticity(x, d, f) -> float:
    return float("nan") if f == 0 else float(x) * d / f


def regime_signature(variant: Variant, values: Mapping[sp.Symbol, object], output: str = "mfu"):
    """The continuous regime of ``output`` at a point, as ``(decision index, side)`` pairs (cheap: no build)."""
    md = model_decisions(variant)
    data = md.data(values)
    return tuple((i, int(md.decisions[i].choose(data[i])))
                 for i in _continuous_decisions(md, _group(quantity_name(output, variant))))


def _facts(md: ModelDecisions, values, data) -> Dict[str, object]:
    n = values[sym.n_nodes] * values[sym.apn]
    dp = n // (values[sym.tp] * values[sym.pp] * values[sym.ep])
    bw = next((i for i, d in enumerate(md.decisions) if d.quantity == "BW_eff"), None)
    feasible = bw is None or md.decisions[bw].choose(data[bw]) != 0
    return {"dp": dp, "tp": values[sym.tp], "feasible": bool(feasible), "lora": values[sym.lora],
            "B_lt_dp": values[sym.B] < dp}


def sensitivities_at(variant: Variant, values: Mapping[sp.Symbol, object], output: str = "mfu",
                     include_constants: bool = False) -> "Sensitivities":
    """The continuous sensitivities at a point given as ``Symbol -> value`` (no solver checks, no knobs)."""
    md = model_decisions(variant)
    q = quantity_name(output, variant)
    data = md.data(values)
    continuous = _continuous_decisions(md, _group(q))
    f, grad, kinks, signature = at_point(md, _group(q), q, values, data, continuous, False, _WRT)
    choices = md.choices(data, md.decisions_of(q))
    facts = _facts(md, values, data)
    labels = {i: label(md, i, choices[i], facts) for i in choices}
    names = dict(CONTINUOUS, **(CONSTANTS if include_constants else {}))
    params = md.parameters
    continuous = set(continuous)
    rows = []
    for name, x in names.items():
        if x not in params or values.get(x) is None:
            continue
        d, v = md.decisions, values[x]
        where = [labels[i] for i in choices if labels[i] and (x in d[i].moves_with if i in continuous else
                                                              x in d[i].branch_params[int(choices[i])])]
        regime_text = ", ".join(dict.fromkeys(where))
        rows.append(_row(name, x, v, f, grad, kinks, regime_text))
    rows.sort(key=lambda r: -r.magnitude)
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
    w, f = as_workload(model), as_fleet(fleet)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DistributedModel().solve(w, f, **solve_kwargs)      # mlsysim's checks, in its order
    for c in caught:                                        # its warnings, pointing at the caller
        warnings.warn(c.message, c.category, stacklevel=2)
    kw = dict(DEFAULTS, **solve_kwargs)
    kw.pop("topology_override", None)
    key, _ = resolve_precision(kw["precision"])
    run = {k: v for k, v in kw.items() if k != "precision"}
    variant, values = parameter_values(w, f, key, **run)
    table = sensitivities_at(variant, values, output, include_constants)
    return replace(table, context=(w, f, kw))


# --------------------------------------------------------------------------------------
# Integer knobs
# --------------------------------------------------------------------------------------

def _solve_output(w, f, kw, quantity):
    """``(output, warnings)`` through the solver, or raises the solver's error."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = DistributedModel().solve(w, f, **kw)
    msgs = tuple(str(c.message) for c in caught)
    if quantity in _FIELD_OF:
        return float(r.quantities[_FIELD_OF[quantity]]), msgs
    from .compile import compile_quantities

    key, _ = resolve_precision(kw["precision"])
    variant, values = parameter_values(w, f, key, **{k: v for k, v in kw.items() if k != "precision"})
    return float(compile_quantities(variant, (quantity,), "math").evaluate(values)[quantity]), msgs


def _set(w, f, kw, knob, value):
    if knob == "count":
        return w, replace(f, count=value), kw
    if knob == "layers":
        return replace(w, layers=value), f, kw
    return w, f, dict(kw, **{knob: value})


def _current(w, f, kw, knob) -> int:
    if knob == "count":
        return f.count
    if knob == "layers":
        return w.layers or 1
    return kw[knob]


def _candidates(w, f, kw, knob, k) -> Tuple[List[int], List[int]]:
    """Values to try above and below ``k``, nearest first (the solver decides validity)."""
    n = f.total_accelerators
    sizes = {"tp_size": kw["tp_size"], "pp_size": kw["pp_size"], "ep_size": kw["ep_size"]}
    if knob in sizes:
        rest = math.prod(v for s, v in sizes.items() if s != knob)
        divs = divisors(n // rest) if n % rest == 0 else []
        up = sorted({k + 1} | {d for d in divs if d > k})[:2]
        down = sorted({k - 1} | {d for d in divs if d < k}, reverse=True)[:2]
        return up, down
    if knob == "count":
        g = kw["tp_size"] * kw["pp_size"] * kw["ep_size"]
        step = g // math.gcd(g, f.node.accelerators_per_node)
        return sorted({k + 1, k + step}), sorted({k - 1, k - step}, reverse=True)
    return [k + 1], [k - 1]


def _neighbour(w, f, kw, knob, candidates, base, quantity, skipped) -> Optional[Step]:
    for v in candidates:
        if knob in ("layers", "count") and v < 1:
            skipped.append((v, f"{knob} must be >= 1"))
            continue
        try:
            out, msgs = _solve_output(*_set(w, f, kw, knob, v), quantity)
        except (ValueError, TypeError) as exc:
            skipped.append((v, str(exc)))
            continue
        return Step(v, out, out - base, (out - base) / base if base else float("nan"), msgs)
    return None


def discrete_sensitivities(table: "Sensitivities") -> Tuple[DiscreteRow, ...]:
    """Exact changes of the output at the neighbouring values of the integer knobs (needs a ``solve()`` context)."""
    if table.context is None:
        raise ValueError("integer knobs need the solve() context: use sensitivities(model, fleet, ...)")
    w, f, kw = table.context
    base, _ = _solve_output(w, f, kw, table.quantity)
    rows = []
    for knob in INTEGER_KNOBS:
        k = _current(w, f, kw, knob)
        up, down = _candidates(w, f, kw, knob, k)
        skipped: List[Tuple[int, str]] = []
        hi = _neighbour(w, f, kw, knob, up, base, table.quantity, skipped)
        lo = _neighbour(w, f, kw, knob, down, base, table.quantity, skipped)
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
    return tuple(_row(k, x, table.values[x], f, grad, kinks, "relaxed")
                 for k, x in INTEGER_KNOBS.items() if x is not None)


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
    context: Optional[tuple] = field(default=None, repr=False, compare=False)
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

    def latex(self, parameter: Optional[str] = None) -> str:
        """LaTeX of :meth:`expression` in the book's notation."""
        return sp.latex(self.expression(parameter), symbol_names=latex_names())

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


def _frozen(md: ModelDecisions, quantity: str, values) -> sp.Basic:
    data = md.data(values)
    idx = md.decisions_of(quantity)
    choices = md.choices(data, idx)
    expr, _ = md.smooth(quantity, {i: int(c) for i, c in choices.items()}, lambda i: True)
    return resolution(expr, values).expr


# --------------------------------------------------------------------------------------
# Sweeps
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SweepSensitivities:
    """Derivatives and elasticities of one output over arrays of configurations.

    ``elasticity[name]`` / ``derivative[name]`` are arrays of the sweep's shape (NaN
    where the configuration is invalid, see ``valid`` / ``reason``); ``kink`` marks
    points at a tie of two regimes, where the value given is the derivative of the
    regime the point was assigned to (the first of the tied sides). ``ties`` holds one
    mask per tie (``"T_compute = T_memory"``, ``"f_s = 1"``, ...); ``regimes`` is the
    number of regimes the sweep visits.
    """

    output: str
    value: np.ndarray
    derivative: Dict[str, np.ndarray]
    elasticity: Dict[str, np.ndarray]
    valid: np.ndarray
    reason: np.ndarray
    ties: Dict[str, np.ndarray]
    regimes: int

    @property
    def shape(self) -> Tuple[int, ...]:
        return self.valid.shape

    @property
    def kink(self) -> np.ndarray:
        """True where any tie holds."""
        out = np.zeros(self.shape, dtype=bool)
        for m in self.ties.values():
            out |= m
        return out


def sensitivity_sweep(model, fleet, output: str = "mfu", *, grid: bool = True, **kwargs) -> SweepSensitivities:
    """Every continuous derivative and elasticity of ``output`` over arrays of configurations.

    Arguments as in :func:`mlsysim_sym.sweeps.sweep` (``solve()`` keywords and field
    names, scalars or arrays; ``grid`` makes each array an axis), except that
    ``precision`` must be a single string. Invalid configurations are masked with
    the reason the solver would give.
    """
    w, f = as_workload(model), as_fleet(fleet)
    if not isinstance(kwargs.get("precision", "fp16"), str):
        raise TypeError("sensitivity_sweep() takes one precision (a string)")
    checked = sweep(w, f, grid=grid, outputs=("mfu",), **kwargs)
    args = dict(DEFAULTS, **kwargs)
    key, _ = resolve_precision(args.pop("precision"))
    scalar = {k: v for k, v in args.items() if k in RUN_SYMBOLS and np.ndim(v) == 0}
    variant, values = parameter_values(w, f, key, **scalar)
    swept = [k for k, v in kwargs.items() if np.ndim(v) > 0]
    shape = checked.shape
    for i, k in enumerate(swept):
        a = np.asarray(kwargs[k], dtype=float)
        a = a.reshape([-1 if j == i else 1 for j in range(len(swept))]) if grid else a
        values[resolve_name(k, "sensitivity_sweep")] = np.broadcast_to(a, shape)
    for k, v in kwargs.items():
        if k not in RUN_SYMBOLS and k != "precision" and np.ndim(v) == 0:
            values[resolve_name(k, "sensitivity_sweep")] = v
    valid = np.broadcast_to(checked.valid, shape)
    flat = {}
    for s, v in values.items():
        if np.ndim(v) > 0:
            safe = v[valid].flat[0] if valid.any() else 1.0
            flat[s] = np.where(valid, v, safe).astype(float).ravel()
        else:
            flat[s] = v
    out = _sweep_flat(variant, quantity_name(output, variant), flat, int(np.prod(shape)))
    value, der, ela, ties, n = out
    nan = lambda a: np.where(valid, a.reshape(shape), np.nan)  # noqa: E731
    return SweepSensitivities(output, nan(value), {k: nan(v) for k, v in der.items()},
                              {k: nan(v) for k, v in ela.items()}, valid, np.broadcast_to(checked.reason, shape),
                              {k: valid & m.reshape(shape) for k, m in ties.items()}, n)


def _sweep_flat(variant, q, values, size):
    md = model_decisions(variant)
    data = [[np.broadcast_to(np.asarray(x, dtype=float), (size,)) for x in d] for d in md.data(values, "numpy")]
    group = _group(q)
    resolved = _continuous_decisions(md, group)
    sides = np.stack([np.broadcast_to(md.decisions[i].choose(data[i]), (size,)) for i in resolved]) \
        if resolved else np.zeros((0, size), dtype=int)
    ties = {}
    for i in resolved:
        d, x = md.decisions[i], data[i]
        if isinstance(d.node, (sp.Max, sp.Min)):
            for a in range(len(x)):
                for b in range(a + 1, len(x)):
                    ties[f"{d.node.args[a]} = {d.node.args[b]}"] = near(x[a], x[b])
        else:
            for j, a in enumerate(d.atoms):
                if not isinstance(a, (sp.Eq, sp.Ne)):
                    ties[f"{a.lhs} = {a.rhs}"] = near(x[2 * j], x[2 * j + 1])
    names = {n: x for n, x in CONTINUOUS.items() if x in md.parameters and values.get(x) is not None}
    value = np.full(size, np.nan)
    der = {n: np.zeros(size) for n in names}
    uniq, which = np.unique(sides.T if resolved else np.zeros((size, 1), int), axis=0, return_inverse=True)
    for u, cols in enumerate(uniq):
        sel = np.flatnonzero(which.ravel() == u)
        reg = regime(variant, group, tuple(zip(resolved, map(int, cols[:len(resolved)]))))
        args, fn = reg.numpy
        res = fn(*(values[a][sel] if np.ndim(values[a]) else values[a] for a in args))
        k, nw = group.index(q), len(reg.wrt)
        value[sel] = res[k]
        first = len(group) + k * nw
        for x, r in zip(reg.wrt, res[first:first + nw]):
            for n, y in names.items():
                if y == x:
                    der[n][sel] = r
    ela = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for n, x in names.items():
            ela[n] = np.where(value != 0, np.asarray(values[x], dtype=float) * der[n] / value, np.nan)
    return value, der, ela, ties, len(uniq)
