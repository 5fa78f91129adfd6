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
cached, so a warm call costs about a millisecond. **Kinks**: where two sides of a
decision are within a relative 1e-9 (``T_compute = T_memory``, ``f_s = 1``,
memory exactly at capacity), the derivative is one-sided: the row reports the
derivative from below (``left``) and from above (``right``), each from the regime
the model enters on that side, and ``jump`` when the output itself is
discontinuous there (memory spilling switches the bandwidth).

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

import html
import math
import warnings
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import sympy as sp

from .compile import cse_real, lambdify_numeric, numeric_form
from .inputs import RUN_SYMBOLS, parameter_values, resolve_precision
from .model import Variant
from .regime import ModelDecisions, label, model_decisions, near, resolution
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
# Regimes: the smooth expression, its derivatives, compiled (cached)
# --------------------------------------------------------------------------------------

class Regime:
    """The output in one regime and its derivatives, compiled (``math``; ``numpy`` on demand).

    ``signature`` lists ``(decision index, side)`` for every resolved decision;
    ``relax`` is True for the relaxed form (floors and ceilings as quotients, plus
    their fractional part at the point, ``shift``). :meth:`expr` is the smooth
    sympy expression of one output; the compiled program holds the outputs and their
    gradients (:func:`_gradient_program`).
    """

    def __init__(self, variant: Variant, outputs: Tuple[str, ...], signature: Tuple[Tuple[int, int], ...],
                 relax: bool, wrt: Tuple[sp.Symbol, ...]):
        self.variant, self.outputs, self.signature, self.relax = variant, outputs, signature, relax
        self.md: ModelDecisions = model_decisions(variant)
        self.choices = dict(signature)
        self.shift: Optional[Dict[sp.Basic, sp.Symbol]] = {} if relax else None
        self.exprs, self.subs = self.md.smooth(outputs, self.choices, self._resolves, relax, self.shift)
        self.wrt_all = wrt
        self._program = _gradient_program(self.exprs, wrt)
        self.wrt = self._program[2]
        self.args, self.fn = _compile(self._program, "math")
        self._ties: Dict[tuple, Tuple] = {}
        self._numpy = None

    def _resolves(self, i: int) -> bool:
        return i in self.choices

    def expr(self, output: str) -> sp.Basic:
        """The smooth expression of ``output``."""
        return self.exprs[self.outputs.index(output)]

    def _with_shifts(self, values):
        """The values, plus the fractional corrections of the floors in the relaxed form."""
        return {**values, **self.md.shift_values(self.shift, values)} if self.shift else values

    def evaluate(self, values: Mapping[sp.Symbol, object], output: str) -> Tuple[float, Dict[sp.Symbol, float]]:
        """``(output, {x: d output / d x})`` at one point."""
        values = self._with_shifts(values)
        out = self.fn(*(values[a] for a in self.args))
        k, n = self.outputs.index(output), len(self.wrt)
        first = len(self.outputs) + k * n
        return out[k], dict(zip(self.wrt, out[first:first + n]))

    @property
    def numpy(self):
        """``(args, fn)``: the same, compiled for arrays."""
        if self._numpy is None:
            self._numpy = _compile(self._program, "numpy")
        return self._numpy

    def tie_gradient(self, index: int, parts: Tuple[sp.Basic, ...], values) -> List[Dict[sp.Symbol, float]]:
        """Gradients of the expressions ``parts`` of decision ``index`` in this regime (``{x: d part/dx}``)."""
        key = (index, parts)
        if key not in self._ties:
            d = self.md.decisions[index]
            exprs = [self.md.in_regime(p, d.quantity, self.choices, self._resolves, self.subs, self.relax,
                                       self.shift) for p in parts]
            program = _gradient_program(exprs, self.wrt_all)
            self._ties[key] = (program[2], *_compile(program, "math"))
        xs, args, fn = self._ties[key]
        values = self._with_shifts(values)
        flat = list(fn(*(values[a] for a in args)))[len(parts):]
        n = len(xs)
        return [dict(zip(xs, flat[k * n:(k + 1) * n])) for k in range(len(parts))]


def _gradient_program(exprs: Sequence[sp.Basic], wrt: Sequence[sp.Symbol]):
    """``(assignments, outputs, xs)``: ``exprs`` and their gradients as a straight-line program.

    The chain rule in reverse over the common subexpressions of ``exprs``: each
    assignment ``x_i = e_i`` is differentiated symbolically with respect to what it
    uses, and the adjoints ``a_j`` accumulate backwards. ``outputs`` are the
    expressions, then ``d e_k / d x`` for every ``x`` of ``xs`` (the symbols of
    ``wrt`` that occur), expression by expression.
    """
    reps, reduced = cse_real(list(exprs))
    defined = {x for x, _ in reps}
    used = set().union(*(e.free_symbols for _, e in reps), *(r.free_symbols for r in reduced))
    xs = tuple(x for x in wrt if x in used)
    keep = defined | set(xs)
    adjoints = sp.numbered_symbols("a", real=True)
    program, outputs = list(reps), list(reduced)
    for r in reduced:
        terms: Dict[sp.Symbol, List[sp.Basic]] = {}
        for x in r.free_symbols & keep:
            terms.setdefault(x, []).append(sp.diff(r, x))
        for x, e in reversed(reps):
            a = sp.Add(*terms.pop(x, ()))
            if a == 0:
                continue
            if not a.is_Atom:
                program.append((next(adjoints), a))
                a = program[-1][0]
            for y in e.free_symbols & keep:
                terms.setdefault(y, []).append(a * sp.diff(e, y))
        outputs.extend(sp.Add(*terms.get(x, ())) for x in xs)
    for x, e in program:
        if e.has(sp.Heaviside, sp.Derivative, sp.Subs, sp.DiracDelta):
            raise RuntimeError(f"a derivative is not smooth in this regime: {x} = {e}")
    return program, outputs, xs


def _compile(program, backend):
    """Lambdify a straight-line program ``(assignments, outputs, xs)`` into ``(args, fn)``."""
    assignments = [(x, numeric_form(e)) for x, e in program[0]]
    outputs = [numeric_form(e) for e in program[1]]
    defined = {x for x, _ in assignments}
    free = set().union(*(e.free_symbols for _, e in assignments), *(e.free_symbols for e in outputs)) - defined
    args = tuple(p.symbol for p in PARAMS.values() if p.symbol in free)
    args += tuple(sorted(free - set(args), key=str))      # the floors' corrections of a relaxed form
    fn = lambdify_numeric(args, outputs, backend, cse=lambda _: (assignments, outputs))
    return args, fn


@lru_cache(maxsize=4096)
def regime(variant: Variant, outputs: Tuple[str, ...], signature: Tuple[Tuple[int, int], ...], relax: bool = False,
           wrt: Tuple[sp.Symbol, ...] = _WRT) -> Regime:
    """The :class:`Regime` of ``outputs`` for a signature (built once, then cached)."""
    return Regime(variant, outputs, signature, relax, wrt)


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


def _side_regimes(md, group, signature, values, data, ties, x, grads, wrt, relax):
    """``(name, left regime, right regime)`` around the kinks for parameter ``x`` (None when smooth in ``x``)."""
    base = dict(signature)
    left, right, names = {}, {}, []
    for (i, tie, parts), g in zip(ties, grads):
        d = md.decisions[i]
        if tie.atom is None:
            slopes = [gi.get(x, 0.0) for gi in g]
            if max(slopes) == min(slopes):
                continue
            hi = [tie.indices[k] for k, s in enumerate(slopes) if s == max(slopes)]
            lo = [tie.indices[k] for k, s in enumerate(slopes) if s == min(slopes)]
            up, down = (hi, lo) if isinstance(d.node, sp.Max) else (lo, hi)
            right[i] = base[i] if base[i] in up else up[0]
            left[i] = base[i] if base[i] in down else down[0]
            names.append(" = ".join(str(d.node.args[k]) for k in tie.indices))
        else:
            s = g[0].get(x, 0.0)
            if s == 0:
                continue
            grows = isinstance(tie.atom, (sp.StrictGreaterThan, sp.GreaterThan))
            above = (s > 0) == grows     # the relation holds just above x
            right[i] = d.choose_with(data[i], tie.atom, above)
            left[i] = d.choose_with(data[i], tie.atom, not above)
            names.append(f"{tie.atom.lhs} = {tie.atom.rhs}")
    if all(left[i] == base[i] == right[i] for i in left):
        return None
    sides = []
    for forced in (left, right):
        changed = {i: k for i, k in forced.items() if k != base[i]}
        full = md.side_choices(values, forced, tuple(base)) if changed else base
        sides.append(regime(md.variant, group, tuple((i, full[i]) for i in base), relax, wrt))
    return (", ".join(dict.fromkeys(names)), *sides)


def _point(md: ModelDecisions, output: str, values, data, resolved: Sequence[int], relax: bool, wrt):
    """(f, {x: derivative}, {x: (kink, left, right, jump)}, signature) of ``output`` at one point."""
    group = _group(output)
    signature = tuple((i, int(md.decisions[i].choose(data[i]))) for i in resolved)
    reg = regime(md.variant, group, signature, relax, wrt)
    f, grad = reg.evaluate(values, output)
    own = set(md.decisions_of(output))
    ties = []
    for i, k in signature:
        if i not in own:
            continue
        for tie in md.decisions[i].ties(data[i], k):
            d = md.decisions[i]
            parts = tuple(d.node.args[j] for j in tie.indices) if tie.atom is None \
                else (tie.atom.lhs - tie.atom.rhs,)
            ties.append((i, tie, parts))
    kinks = {}
    if ties:
        grads = [reg.tie_gradient(i, parts, values) for i, _, parts in ties]
        moving = {x for g in grads for gi in g for x, v in gi.items() if v != 0}
        for x in (x for x in wrt if x in moving):
            sides = _side_regimes(md, group, signature, values, data, ties, x, grads, wrt, relax)
            if sides is not None:
                name, lo, hi = sides
                (fl, gl), (fr, gr) = lo.evaluate(values, output), hi.evaluate(values, output)
                dl, dr = gl.get(x, 0.0), gr.get(x, 0.0)
                jump = not (near(fl, f) and near(fr, f))
                if jump or not near(dl, dr, 1e-12):         # else both sides agree: no kink in x
                    kinks[x] = (name, (fl, dl), (fr, dr), bool(jump))
    return f, grad, kinks, signature


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
    f, grad, kinks, signature = _point(md, q, values, data, continuous, False, _WRT)
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
        divs = _divisors(n // rest) if n % rest == 0 else []
        up = sorted({k + 1} | {d for d in divs if d > k})[:2]
        down = sorted({k - 1} | {d for d in divs if d < k}, reverse=True)[:2]
        return up, down
    if knob == "count":
        g = kw["tp_size"] * kw["pp_size"] * kw["ep_size"]
        step = g // math.gcd(g, f.node.accelerators_per_node)
        return sorted({k + 1, k + step}), sorted({k - 1, k - step}, reverse=True)
    return [k + 1], [k - 1]


def _divisors(n: int) -> List[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small) | {n // d for d in small})


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
    f, grad, kinks, _ = _point(md, table.quantity, table.values, data, full, True, _KNOB_SYMBOLS)
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

    def elasticities(self) -> Dict[str, Optional[float]]:
        """``parameter -> elasticity`` (None at a kink)."""
        return {r.parameter: r.elasticity for r in self.rows}

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
        return _text(self)

    def _repr_html_(self) -> str:
        return _html(self)

    def _repr_latex_(self) -> str:
        return _latex(self)


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
        values[resolve_name(k)] = np.broadcast_to(a, shape)
    for k, v in kwargs.items():
        if k not in RUN_SYMBOLS and k != "precision" and np.ndim(v) == 0:
            values[resolve_name(k)] = v
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


# --------------------------------------------------------------------------------------
# Display
# --------------------------------------------------------------------------------------

def _num(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    return f"{x:.6g}"


def _cells(r: Row) -> Tuple[str, str]:
    if r.kink is None:
        return _num(r.derivative), _num(r.elasticity)
    return (f"L {_num(r.left.derivative)} | R {_num(r.right.derivative)}",
            f"L {_num(r.left.elasticity)} | R {_num(r.right.elasticity)}")


def _where(r: Row) -> str:
    k = f"kink {r.kink}" + (" (jump)" if r.jump else "") if r.kink else ""
    return "; ".join(x for x in (k, r.regime) if x)


def _knob_cells(k: DiscreteRow, relaxed: Dict[str, Row]) -> Tuple[str, str, str]:
    step = lambda s: "-" if s is None else f"{s.value}: {s.delta:+.6g}"  # noqa: E731
    r = relaxed.get(k.knob)
    rel = "-" if r is None else _cells(r)[1] + (f" (kink {r.kink})" if r.kink else "")
    return step(k.down), step(k.up), rel


def _text(t: Sensitivities) -> str:
    head = [f"sensitivities of {t.output} ({t.quantity}) = {t.value:.6g}", "regime: " + ", ".join(t.regime)]
    rows = [("#", "parameter", "value", f"d {t.quantity}/dx", "elasticity", "regime")]
    rows += [(str(i + 1), r.parameter, _num(float(r.value)), *_cells(r), _where(r)) for i, r in enumerate(t.rows)]
    out = head + [""] + _columns(rows)
    if t.context is not None:
        krows = [("knob", "value", "previous: change", "next: change", "relaxed elasticity", "skipped")]
        relaxed = {r.parameter: r for r in t.relaxed}
        for k in t.discrete:
            skipped = "; ".join(f"{v}: {why}" for v, why in k.skipped[:2]) + (" ..." if len(k.skipped) > 2 else "")
            krows.append((k.knob, str(k.value), *_knob_cells(k, relaxed), skipped))
        out += ["", "integer knobs: exact change of the output at the neighbouring valid value (through solve()); "
                "relaxed: floors and ceilings replaced by their quotient, fleet held fixed"] + _columns(krows)
    return "\n".join(out)


def _columns(rows) -> List[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def _html(t: Sensitivities) -> str:
    e = html.escape
    head = "".join(f"<th>{e(h)}</th>" for h in ("#", "parameter", "value", f"d {t.quantity}/dx", "elasticity",
                                                 "regime"))
    body = "".join(
        "<tr>" + "".join(f"<td>{e(c)}</td>" for c in (str(i + 1), r.parameter, _num(float(r.value)), *_cells(r),
                                                       _where(r))) + "</tr>" for i, r in enumerate(t.rows))
    return (f"<p><b>{e(t.output)}</b> = {e(_num(t.value))}; regime: {e(', '.join(t.regime))}</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def _tex_num(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return r"\text{--}"
    m, _, ex = f"{x:.4g}".partition("e")
    return f"{m} \\times 10^{{{int(ex)}}}" if ex else m


def _latex(t: Sensitivities) -> str:
    names = latex_names()
    lines = []
    for i, r in enumerate(t.rows):
        if r.kink is None:
            d, el = _tex_num(r.derivative), _tex_num(r.elasticity)
        else:
            d = f"{_tex_num(r.left.derivative)} \\mid {_tex_num(r.right.derivative)}"
            el = f"{_tex_num(r.left.elasticity)} \\mid {_tex_num(r.right.elasticity)}"
        lines.append(f"{i + 1} & {names.get(r.symbol, str(r.symbol))} & \\text{{{r.parameter.replace('_', ' ')}}} & "
                     f"{_tex_num(float(r.value))} & {d} & {el} \\\\")
    return ("$\\begin{array}{rllrrr}\\# & & \\text{parameter} & x & \\partial y/\\partial x & "
            "\\partial \\ln y/\\partial \\ln x \\\\ \\hline " + " ".join(lines) + "\\end{array}$")
