"""The plain-API mirror: ``DistributedModel().solve(model, fleet, ...)``.

Same keyword arguments, defaults, checks (order, exception types, messages) and
warnings as ``mlsysim.solvers.DistributedModel.solve`` 0.3.0 (contract §5); the
numbers come from evaluating the symbolic model (:mod:`mlsysim_sym.compile`).
Results are plain floats in SI units: seconds, bytes, joules, flop/s, B/s,
samples per second.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Dict, Optional, Union

from . import catalog
from .compile import compile_quantities
from .inputs import RUN_SYMBOLS, parameter_values, resolve_precision, static_values
from .symbols import sym
from .types import Fleet, Workload

WorkloadLike = Union[str, Workload, object]
FleetLike = Union[str, Fleet, object]


@dataclass(slots=True)
class NodeProfile:
    """One replica's roofline step, under mlsysim ``PerformanceProfile`` field names (SI units)."""

    latency: float                  # s
    latency_compute: float          # s
    latency_memory: float           # s
    latency_overhead: float         # s
    throughput: float               # samples/s of one replica
    bottleneck: str                 # "Compute" or "Memory"
    arithmetic_intensity: float     # flop/B
    energy: float                   # J
    memory_footprint: float         # B per accelerator
    peak_flops_actual: float        # flop/s per accelerator (peak x efficiency)
    peak_bw_actual: float           # B/s
    mfu: float
    hfu: float
    feasible: bool
    offload_spill_bytes: Optional[float] = None    # B, only when infeasible
    offload_effective_bw: Optional[float] = None   # B/s, only when infeasible
    overhead_dominated: bool = False


@dataclass(slots=True)
class DistributedResult:
    """One training step, under mlsysim ``DistributedResult`` field names (SI units), plus fleet ``mfu``.

    ``quantities`` maps every result name of :data:`OUTPUTS` (node fields as ``node_profile.*``)
    to its value at this configuration.
    """

    node_profile: NodeProfile
    dp_communication_latency: float     # s, after congestion and /GA, before overlap
    tp_communication_latency: float     # s
    ep_communication_latency: float     # s
    communication_latency: float        # s, before overlap
    pipeline_bubble_latency: float      # s
    bubble_fraction: float
    step_latency_total: float           # s
    scaling_efficiency: float
    effective_throughput: float         # samples/s of the fleet
    parallelism: Dict[str, int]
    mfu: float                          # fleet MFU = node MFU x scaling efficiency
    values: tuple = field(default=(), repr=False, compare=False)

    @property
    def quantities(self) -> Dict[str, object]:
        return dict(zip(OUTPUT_NAMES, self.values))


def _comparable(val, name):
    """mlsysim compares whatever it is given; a non-number fails there with Python's bare
    "'<' not supported ..." TypeError. Ours names the argument (by its ``solve()`` keyword)."""
    if not isinstance(val, (int, float)):
        raise TypeError(f"{_KEYWORD.get(name, name)} must be a real number, got {type(val).__name__}")
    return val


_KEYWORD = {"n_microbatches": "microbatch_count"}


def _validate_at_least(val, minimum, name):
    if _comparable(val, name) < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {val}")


def _validate_range(val, lo, hi, name):
    if _comparable(val, name) < lo or val > hi:
        raise ValueError(f"{name} must be in [{lo}, {hi}], got {val}")


def _record(value, record_type, lookup, what):
    """A record of ``record_type``: itself, a catalog name looked up, or a converted mlsysim object."""
    if isinstance(value, record_type):
        return value
    if isinstance(value, str):
        return lookup(value)
    converted = catalog.from_mlsysim(value)
    if not isinstance(converted, record_type):
        raise TypeError(f"{what} must be a {what} (a catalog name, a record or an mlsysim object), "
                        f"got {type(value).__name__}")
    return converted


def as_workload(model: WorkloadLike) -> Workload:
    """A catalog name, a :class:`Workload`, or an mlsysim workload object."""
    return _record(model, Workload, catalog.workload, "model")


def as_fleet(fleet: FleetLike) -> Fleet:
    """A catalog name, a :class:`Fleet`, or an mlsysim ``Fleet``."""
    return _record(fleet, Fleet, catalog.fleet, "fleet")


class DistributedModel:
    """mlsysim's ``DistributedModel``, evaluated from the symbolic model."""

    def solve(self, model: WorkloadLike, fleet: FleetLike, batch_size: int = 1, precision: str = "fp16",
              efficiency: float = 0.5, tp_size: int = 1, pp_size: int = 1, ep_size: int = 1,
              v_stages: int = 1, microbatch_count: int = 1, topology_override: Optional[str] = None,
              zero_stage: int = 0, is_lora: bool = False, activation_recomputation: bool = False,
              overlap_comm: bool = False, overlap_efficiency: float = 0.85, congestion_factor: float = 1.0,
              straggler_factor: float = 1.0, moe_routing_imbalance_factor: float = 1.0,
              gradient_accumulation_steps: int = 1, seq_len: int = 2048) -> DistributedResult:
        """Price one training step; see mlsysim's ``DistributedModel.solve`` for the arguments.

        ``topology_override`` is accepted and, as in mlsysim 0.3.0, never read.
        """
        w, f = as_workload(model), as_fleet(fleet)
        # V1-V8 (contract §5.1), in mlsysim's order
        _validate_at_least(tp_size, 1, "tp_size")
        _validate_at_least(pp_size, 1, "pp_size")
        _validate_at_least(ep_size, 1, "ep_size")
        _validate_at_least(batch_size, 1, "batch_size")
        _validate_at_least(gradient_accumulation_steps, 1, "gradient_accumulation_steps")
        _validate_range(efficiency, 1e-9, 1.0, "efficiency")
        _validate_range(overlap_efficiency, 0.0, 1.0, "overlap_efficiency")
        _validate_at_least(moe_routing_imbalance_factor, 1.0, "moe_routing_imbalance_factor")
        # V9-V10: the split must be exact
        n = f.total_accelerators
        g = tp_size * pp_size * ep_size
        if g > n:
            raise ValueError(f"Infeasible 4D Parallelism: TP({tp_size}) * PP({pp_size}) * EP({ep_size}) > Total({n})")
        if n % g != 0:
            raise ValueError(f"Infeasible 4D Parallelism: TP({tp_size}) * PP({pp_size}) * EP({ep_size}) "
                             f"must divide total accelerators ({n}) exactly.")
        dp = n // g
        if batch_size < dp:
            warnings.warn(f"batch_size ({batch_size}) < dp_size ({dp}): some ranks will be idle. "
                          f"Using local_batch=1.", stacklevel=2)
        # V11: precision (the Engine path warns when it falls back to peak_flops)
        key, bpp = resolve_precision(precision)
        acc = f.node.accelerator
        if not w.is_transformer and g == 1 and acc.flops_for(key) is None \
                and key not in ("fp16", "bf16") and acc.precision_flops:
            warnings.warn(f"Precision '{key}' not in {acc.name} precision_flops "
                          f"(available: {[k for k, _ in acc.precision_flops]}); "
                          f"using default peak_flops (FP16). Results may be inaccurate.", stacklevel=2)
        # V12: the transformer memory model's own checks
        if w.is_transformer:
            _validate_at_least(seq_len, 1, "seq_len")
            try:
                stage_ok = zero_stage in {0, 1, 2, 3}
            except TypeError:   # unhashable: mlsysim's own test fails with "unhashable type"
                raise TypeError(f"zero_stage must be 0, 1, 2, or 3, got {type(zero_stage).__name__}") from None
            if not stage_ok:
                raise ValueError("zero_stage must be 0, 1, 2, or 3")
        elif tp_size == 1 and ep_size == 1:
            seq_len = 0     # mlsysim never reads it here (it only sizes TP and EP messages): any value goes
        # the collective helpers' own checks, reachable only with non-physical hardware or seq_len < 0
        template, positions, fn, physical = _bound(w, f, key)
        if not physical or _comparable(seq_len, "seq_len") < 0:
            _check_collectives(w, f, key, locals())
        # V13: calc_pipeline_bubble's checks (mlsysim calls it even with pp = 1)
        _validate_at_least(microbatch_count, 1, "n_microbatches")
        _validate_at_least(v_stages, 1, "v_stages")
        # beyond mlsysim: where it would compute with a non-number, NaN or inf (and return NaN or fail
        # deep inside pint), say which argument is wrong
        numbers = (batch_size, efficiency, tp_size, pp_size, ep_size, v_stages, microbatch_count, zero_stage,
                   overlap_efficiency, congestion_factor, straggler_factor, moe_routing_imbalance_factor,
                   gradient_accumulation_steps, seq_len)
        if not _all_finite_reals(numbers) or type(tp_size) is not int or type(pp_size) is not int \
                or type(ep_size) is not int:
            _name_the_bad_number(dict(zip(_NUMERIC, numbers)), w.is_transformer)
        vector = template.copy()
        for i, value in zip(positions, (
                batch_size, efficiency, tp_size, pp_size, ep_size, v_stages, microbatch_count, zero_stage,
                1 if is_lora else 0, 1 if activation_recomputation else 0, 1 if overlap_comm else 0,
                overlap_efficiency, congestion_factor, straggler_factor, moe_routing_imbalance_factor,
                gradient_accumulation_steps, seq_len)):
            if i is not None:
                vector[i] = value
        return _result(fn(*vector), tp_size, pp_size, ep_size)


def _q(value, unit):
    """A magnitude as pint prints it with mlsysim's ``~P`` default: ``'-1e-06 s'``."""
    return f"{value} {unit}"


def _ring_checks(msg, bw, lat, name_bw="bandwidth_bytes_s"):
    """``calc_ring_allreduce_time`` / ``calc_all_to_all_time`` argument checks, in their order."""
    if msg < 0:
        raise ValueError(f"message_bytes must be non-negative, got {_q(msg, 'B')}")
    if bw <= 0:
        raise ValueError(f"{name_bw} must be positive, got {_q(bw, 'B/s')}")
    if lat < 0:
        raise ValueError(f"latency_s must be non-negative, got {_q(lat, 's')}")


def _check_collectives(w: Workload, f: Fleet, key: str, args: dict) -> None:
    """mlsysim's collective helpers reject a negative message, a bandwidth <= 0 and a negative latency.

    Only non-physical inputs reach these checks (a registry fleet never does), so the fast
    path tests the inputs first; the placement (dp, ranks per node, nodes spanned) and the
    message sizes then come from the model's own quantities.
    """
    variant, static = static_values(w, f, key)
    S = sym
    bw_intra, bw_fab, osr = static[S.BW_intra], static[S.BW_fab], static[S.osr]
    a_nv, a_fab = static[S.alpha_nv], static[S.alpha_fab]
    names = ("dp", "rpn", "nodes_dp", "M_grad_msg", "M_act_msg")
    run = {k: args[k] for k in RUN_SYMBOLS}
    _, values = parameter_values(w, f, key, **run)
    dp, rpn, nodes, grad, act = (compile_quantities(variant, names, "math").evaluate(values)[n] for n in names)
    tp, ep, apn = args["tp_size"], args["ep_size"], f.node.accelerators_per_node

    def inter():   # fleet.fabric.bandwidth / oversubscription_ratio, as mlsysim divides it
        return bw_fab / osr

    if dp > 1:
        bw_inter = inter()
        if nodes == 1:
            _ring_checks(grad, bw_intra, a_nv)
        elif rpn == 1:
            _ring_checks(grad, bw_inter, a_fab)
        else:
            if bw_intra <= 0:
                raise ValueError(f"intra_node_bw must be positive, got {_q(bw_intra, 'B/s')}")
            _ring_checks(grad / rpn, bw_inter, a_fab)   # the inter-node ring carries M / g
    if tp > 1:
        if tp <= apn:
            _ring_checks(act, bw_intra, a_nv)
        else:
            _ring_checks(act, inter(), a_fab)
    if ep > 1:
        k = static[S.k_e]
        _ring_checks(act * k * args["moe_routing_imbalance_factor"], inter(), a_fab)


def _all_finite_reals(values) -> bool:
    try:
        return {type(v) for v in values} <= _REAL_TYPES and math.isfinite(sum(values))
    except (OverflowError, TypeError):
        return False


def _name_the_bad_number(args: dict, transformer: bool) -> None:
    """Where mlsysim would compute with a non-number, NaN or inf, or fail inside pint or pydantic.

    * a non-number (str, None, list, ...) -> TypeError naming the argument;
    * a bool where mlsysim multiplies a pint Quantity by it (efficiency, congestion_factor, and
      seq_len of a transformer: mlsysim raises TypeError) -> TypeError; elsewhere a bool counts as
      0 or 1, as in mlsysim;
    * NaN or inf (mlsysim returns NaN or computes with inf) -> ValueError;
    * a fractional tp/pp/ep (mlsysim's result model rejects it: pydantic ValidationError) -> ValueError.
    ``zero_stage`` is not read for a non-transformer, so it is not checked there (as in mlsysim).
    """
    for name, value in args.items():
        if name == "zero_stage" and not transformer:
            continue
        if not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
        if isinstance(value, bool) and name in _NO_BOOL and (transformer or name != "seq_len"):
            raise TypeError(f"{name} must be a number, got bool")
        try:
            finite = math.isfinite(value)
        except OverflowError:
            raise ValueError(f"{name} is beyond the float range, got an integer of {len(str(abs(value)))} digits")
        if not finite:
            raise ValueError(f"{name} must be finite, got {value}")
        if name in ("tp_size", "pp_size", "ep_size") and value != int(value):
            raise ValueError(f"{name} must be a whole number, got {value}")


_REAL_TYPES = {int, float}
_NO_BOOL = ("efficiency", "congestion_factor", "seq_len")
#: The numeric keyword arguments of ``solve()``.
_NUMERIC = ("batch_size", "efficiency", "tp_size", "pp_size", "ep_size", "v_stages", "microbatch_count",
            "zero_stage", "overlap_efficiency", "congestion_factor", "straggler_factor",
            "moe_routing_imbalance_factor", "gradient_accumulation_steps", "seq_len")

#: Result field -> model quantity. Node-profile fields are prefixed ``node_profile.``.
OUTPUTS = {
    "dp_communication_latency": "T_dp", "tp_communication_latency": "T_tp",
    "ep_communication_latency": "T_ep", "communication_latency": "T_comm",
    "pipeline_bubble_latency": "T_bubble", "bubble_fraction": "bubble_fraction",
    "step_latency_total": "T_step", "scaling_efficiency": "scaling_efficiency",
    "effective_throughput": "effective_throughput", "mfu": "mfu", "dp": "dp",
    "node_profile.latency": "T_node", "node_profile.latency_compute": "T_compute",
    "node_profile.latency_memory": "T_memory", "node_profile.latency_overhead": "T_overhead",
    "node_profile.throughput": "throughput_node", "node_profile.arithmetic_intensity": "intensity",
    "node_profile.energy": "energy", "node_profile.memory_footprint": "M_acc",
    "node_profile.peak_flops_actual": "R_eff", "node_profile.peak_bw_actual": "BW_eff",
    "node_profile.mfu": "mfu_node", "node_profile.hfu": "hfu_node", "node_profile.feasible": "feasible",
    "node_profile.memory_bound": "memory_bound", "node_profile.overhead_dominated": "overhead_dominated",
    "node_profile.offload_spill_bytes": "offload_spill",
}
OUTPUT_NAMES = tuple(OUTPUTS)
_ORDER = tuple(RUN_SYMBOLS)  # the order of the values filled in by solve()


_BOUND: Dict[tuple, tuple] = {}


def _bound(w: Workload, f: Fleet, key: str):
    """:func:`_bind`, memoized on the identity of the records (hashing nested frozen records costs
    microseconds a call); the records are kept alive in the entry so that an id is never reused."""
    entry = _BOUND.get((id(w), id(f), key))
    if entry is None or entry[0] is not w or entry[1] is not f:
        if len(_BOUND) > 4096:
            _BOUND.clear()
        entry = _BOUND[(id(w), id(f), key)] = (w, f, _bind(w, f, key))
    return entry[2]


@lru_cache(maxsize=512)
def _bind(w: Workload, f: Fleet, key: str):
    """Compiled outputs for (workload, fleet, precision), with the static part of the argument vector filled."""
    variant, static = static_values(w, f, key)
    c = compile_quantities(variant, tuple(OUTPUTS.values()), "math")
    index = {a: i for i, a in enumerate(c.args)}
    template = [static.get(a) for a in c.args]
    positions = tuple(index.get(RUN_SYMBOLS[k]) for k in _ORDER)
    S = sym
    physical = (static[S.BW_intra] > 0 and static[S.BW_fab] > 0 and static[S.osr] > 0 and static[S.alpha_nv] >= 0
                and static[S.alpha_fab] >= 0 and static[S.W_g] >= 0)
    return template, positions, c.fn, physical


def _result(values, tp, pp, ep) -> DistributedResult:
    (t_dp, t_tp, t_ep, t_comm, t_bub, bf, step, se, thr, mfu, dp, lat, lat_c, lat_m, lat_o, node_thr,
     intensity, energy, mem, peak_f, peak_bw, node_mfu, node_hfu, feasible, mem_bound, ovh_dom, spill) = values
    feasible = bool(feasible)
    node = NodeProfile(
        float(lat), float(lat_c), float(lat_m), float(lat_o), float(node_thr),
        "Memory" if mem_bound else "Compute", float(intensity), float(energy), float(mem), float(peak_f),
        float(peak_bw), float(node_mfu), float(node_hfu), feasible,
        None if feasible else float(spill), None if feasible else float(peak_bw), bool(ovh_dom))
    return DistributedResult(
        node, float(t_dp), float(t_tp), float(t_ep), float(t_comm), float(t_bub), float(bf), float(step),
        float(se), float(thr), {"dp": int(dp), "tp": tp, "pp": pp, "ep": ep}, float(mfu),
        values)
