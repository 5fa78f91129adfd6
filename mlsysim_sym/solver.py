"""The plain-API mirror: ``DistributedModel().solve(model, fleet, ...)``.

Same keyword arguments, defaults, checks (order, exception types, messages) and
warnings as ``mlsysim.solvers.DistributedModel.solve`` 0.3.0 (``docs/contract.md``
§5); the checks are the rules of :mod:`mlsysim_sym.inputs` and the numbers come
from evaluating the symbolic model (:mod:`mlsysim_sym.compile`). Results are plain
floats in SI units: seconds, bytes, joules, flop/s, B/s, samples per second.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import lru_cache
from typing import Dict, Optional, Sequence

from . import notation
from .compile import compile_quantities
from .display import html_table, quantity, text_table, wrap
from .inputs import (EXTENDED_DEFAULTS, FACT_NAMES, FACTS, FLAG_KEYWORDS, KEYWORDS, PLAIN_NUMBERS, PRECISION_BYTES,
                     RAW, SOLVE_DEFAULTS, FleetLike, WorkloadLike, as_fleet, as_workload, check_fidelity,
                     compiled_rules, configure, facts, seq_len_unread, static_values, values_of, verdict)
from .mechanisms import normalize
from .model import build_model
from .symbols import extended_keywords, keywords
from .types import Fleet, Workload

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


def output_unit(name: str) -> str:
    """The SI unit of a result field (``"s"``, ``"B"``, ``"1"``, ...)."""
    return notation.entry(OUTPUTS[name]).unit


@dataclass(slots=True, repr=False)
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

    def _rows(self):
        s = lambda t: quantity(t, "s")  # noqa: E731
        fits = "fits" if self.feasible else f"does not fit: {quantity(self.offload_spill_bytes, 'B')} over HBM"
        return [
            ("replica step T_node", f"{s(self.latency)} ({self.bottleneck.lower()}-bound)"),
            ("compute / memory / overhead", f"{s(self.latency_compute)} / {s(self.latency_memory)} / "
                                            f"{s(self.latency_overhead)}"),
            ("memory per accelerator", f"{quantity(self.memory_footprint, 'B')} ({fits})"),
            ("MFU / HFU", f"{self.mfu:.4f} / {self.hfu:.4f}"),
            ("achieved FLOP/s, bandwidth", f"{quantity(self.peak_flops_actual, 'flop/s')}, "
                                           f"{quantity(self.peak_bw_actual, 'B/s')}"),
            ("throughput, energy", f"{quantity(self.throughput, '1/s')}, "
                                   f"{quantity(self.energy, 'J')}"),
        ]

    def __repr__(self) -> str:
        return "\n".join(["NodeProfile (one replica):"] + text_table(self._rows(), indent="  "))

    def _repr_html_(self) -> str:
        return html_table(self._rows(), ("", "value"), caption="NodeProfile (one replica)")


@dataclass(slots=True, repr=False)
class DistributedResult:
    """One training step, under mlsysim ``DistributedResult`` field names (SI units), plus fleet ``mfu``.

    Times in s, memory in B, energy in J, rates in flop/s and B/s, throughputs in
    samples/s; ``quantities`` maps every result name of :data:`OUTPUTS` (node fields
    as ``node_profile.*``) to its value, with ``None`` where the field is ``None``.
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
    values: tuple = field(default=(), compare=False)
    inputs: tuple = field(default=(), compare=False)    # (workload, fleet, precision, keywords in KEYWORDS[, extended])
    extended: Optional[Dict[str, float]] = None         # the extended model's own terms (EXTENDED_OUTPUTS)

    @property
    def configuration(self) -> str:
        """Which configuration this prices: model, fleet, and every keyword not at its default."""
        if not self.inputs:
            return ""
        return describe(*self.inputs)

    @property
    def quantities(self) -> Dict[str, object]:
        out = dict(zip(OUTPUT_NAMES, self.values))
        if self.node_profile.feasible:      # mlsysim reports no spill when the state fits
            out["node_profile.offload_spill_bytes"] = None
        return out

    def _rows(self):
        n, p = self.node_profile, self.parallelism
        ms = lambda t: quantity(t, "s")  # noqa: E731
        return [
            ("step time T_step", ms(self.step_latency_total)),
            ("  replica step T_node", f"{ms(n.latency)} ({n.bottleneck.lower()}-bound)"),
            ("    compute / memory / overhead", f"{ms(n.latency_compute)} / {ms(n.latency_memory)} / "
                                                 f"{ms(n.latency_overhead)}"),
            ("  communication DP / TP / EP", f"{ms(self.dp_communication_latency)} / "
                                             f"{ms(self.tp_communication_latency)} / "
                                             f"{ms(self.ep_communication_latency)}"),
            ("  pipeline bubble", f"{ms(self.pipeline_bubble_latency)} (fraction {self.bubble_fraction:.4f})"),
            *self._extended_rows(),
            ("MFU fleet / node", f"{self.mfu:.4f} / {n.mfu:.4f}"),
            ("scaling efficiency", f"{self.scaling_efficiency:.4f}"),
            ("throughput", quantity(self.effective_throughput, "1/s")),
            ("memory per accelerator", f"{quantity(n.memory_footprint, 'B')} "
                                       f"({'fits' if n.feasible else 'does not fit'})"),
            ("energy per replica step", quantity(n.energy, "J")),
            ("parallelism", f"dp {p['dp']}, tp {p['tp']}, pp {p['pp']}, ep {p['ep']}"
                            + (f", cp {p['cp']}" if "cp" in p else "")),
        ]

    def _extended_rows(self):
        x = self.extended
        if not x:
            return []
        ms = lambda t: quantity(t, "s")  # noqa: E731
        rows = []
        if "cp_communication_latency" in x:
            rows.append(("  CP key/value exchange", ms(x["cp_communication_latency"])))
        if "pipeline_p2p_latency" in x:
            rows.append(("  pipeline sends", ms(x["pipeline_p2p_latency"])))
        if "optimizer_step_latency" in x:
            rows.append(("  optimizer update", ms(x["optimizer_step_latency"])))
        if "tp_exposed_latency" in x:
            rows.append(("  TP exposed after overlap", ms(x["tp_exposed_latency"])))
        if "gemm_shape_factor" in x:
            rows.append(("  GEMM-shape factor f_GEMM", f"{x['gemm_shape_factor']:.4f}"))
        return rows

    def to_dict(self) -> Dict[str, object]:
        """The result under mlsysim's field names, ``node_profile`` nested, SI units, plus fleet ``mfu``
        (plain Python numbers: ``json.dumps`` takes it)."""
        skip = ("node_profile", "values", "inputs") + (() if self.extended else ("extended",))
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}
        n = self.node_profile
        out["node_profile"] = {f.name: getattr(n, f.name) for f in fields(n)}
        if n.feasible:
            out["node_profile"]["offload_spill_bytes"] = None
        return {k: out[k] for k in ("node_profile", *(k for k in out if k != "node_profile"))}

    def plot(self, path=None, ax=None):
        """A stacked bar of the step time's terms (:func:`mlsysim_sym.plot.breakdown_chart`; needs
        matplotlib: ``pip install 'mlsysim-sym[plot]'``). Saves a PNG at ``path`` when given."""
        # display hook: the pictures sit above the results (and need matplotlib)
        from .plot import breakdown_chart
        return breakdown_chart(self, path=path, ax=ax)

    def __repr__(self) -> str:
        head = wrap("DistributedResult" + (f" of {self.configuration}:" if self.configuration else ":"), "")
        return "\n".join(head + text_table(self._rows(), indent="  "))

    def _repr_html_(self) -> str:
        return html_table(self._rows(), ("", "value"), caption=self.configuration or "DistributedResult")


#: ``cp_size``'s and ``kv_fraction``'s defaults: an identity test in ``solve()`` skips the extended model's
#: checks when they are untouched (anything else, an array or True included, is checked).
_NEUTRAL_CP, _NEUTRAL_KV = 1, 1.0


class DistributedModel:
    """mlsysim's ``DistributedModel``, evaluated from the symbolic model.

    ``DistributedModel()`` (``fidelity="mlsysim"``) is mlsysim 0.3.0's model, exactly.
    ``DistributedModel(fidelity="extended")`` adds the mechanisms of :mod:`mlsysim_sym.mechanisms`
    (context and sequence parallelism, TP overlap, pipeline sends, ZeRO-3 gathers, the optimizer update, ...;
    ``docs/extended.md``), and ``solve()`` then takes ``cp_size``, ``sequence_parallel``, ``tp_comm_overlap``
    and ``kv_fraction``; ``without=("pipeline_p2p", ...)`` prices the named mechanisms as mlsysim does.
    """

    def __init__(self, fidelity: str = "mlsysim", without: Sequence[str] = ()):
        check_fidelity({"fidelity": fidelity, "without": without})
        self.fidelity = fidelity
        self.without = normalize(without)

    def __repr__(self) -> str:
        if self.fidelity == "mlsysim":
            return "DistributedModel()"
        off = f", without={self.without!r}" if self.without else ""
        return f"DistributedModel(fidelity={self.fidelity!r}{off})"

    def solve(self, model: WorkloadLike, fleet: FleetLike, batch_size: int = 1, precision: str = "fp16",
              efficiency: float = 0.5, tp_size: int = 1, pp_size: int = 1, ep_size: int = 1,
              v_stages: int = 1, microbatch_count: int = 1, topology_override: Optional[str] = None,
              zero_stage: int = 0, is_lora: bool = False, activation_recomputation: bool = False,
              overlap_comm: bool = False, overlap_efficiency: float = 0.85, congestion_factor: float = 1.0,
              straggler_factor: float = 1.0, moe_routing_imbalance_factor: float = 1.0,
              gradient_accumulation_steps: int = 1, seq_len: int = 2048, *, cp_size: int = _NEUTRAL_CP,
              sequence_parallel: bool = False, tp_comm_overlap: bool = False,
              kv_fraction: float = _NEUTRAL_KV) -> DistributedResult:
        """Price one training step of a data / tensor / pipeline / expert-parallel job.

        Same arguments, defaults, checks and warnings as mlsysim 0.3.0's
        ``DistributedModel.solve`` (``docs/contract.md``); the keyword-only arguments belong to the extended
        model (``DistributedModel(fidelity="extended")``, ``docs/extended.md``) and must stay at their
        defaults otherwise.

        Parameters
        ----------
        model
            The workload: a catalog name (``"Llama3_70B"``, ``"Mixtral_8x7B"``, ``"ResNet50"``; see
            ``mlsysim-sym --list``), a :class:`~mlsysim_sym.types.Workload`, or an mlsysim workload.
        fleet
            The cluster: a catalog name (``"Research_256"``, ``"Mega_100K"``), a
            :class:`~mlsysim_sym.types.Fleet`, or an mlsysim ``Fleet``.
        batch_size
            Global batch, in samples (sequences), >= 1. Split over ``dp`` replicas, remainder dropped
            (fewer samples than replicas: one each, with a warning).
        precision
            ``"fp32"``, ``"tf32"``, ``"bf16"``, ``"fp16"``, ``"fp8"``, ``"int8"`` or ``"int4"`` (any case):
            sets the bytes per element and the peak FLOP/s.
        efficiency
            Achieved fraction of peak FLOP/s, in [1e-9, 1].
        tp_size, pp_size, ep_size
            Tensor-, pipeline- and expert-parallel degrees, >= 1; their product must divide the
            fleet's accelerators. ``dp`` = accelerators / (tp x pp x ep).
        v_stages
            Virtual pipeline stages per device (interleaved 1F1B), >= 1.
        microbatch_count
            Microbatches per pipelined step, >= 1.
        topology_override
            Accepted and, as in mlsysim 0.3.0, never read.
        zero_stage
            ZeRO stage 0, 1, 2 or 3 (transformers; sharding of optimizer state, gradients, weights).
        is_lora, activation_recomputation, overlap_comm
            LoRA fine-tuning (adapters of rank 16); full activation recomputation (4 x forward FLOPs);
            DP communication overlapped with the backward pass. Any truthy value counts as True.
        overlap_efficiency
            Share of the DP communication hidden under overlap, in [0, 1].
        congestion_factor
            Multiplier on DP, TP and EP communication time (not validated, as in mlsysim).
        straggler_factor
            Multiplier on the step when above 1 (the slowest worker gates it).
        moe_routing_imbalance_factor
            Multiplier on the all-to-all volume, >= 1.
        gradient_accumulation_steps
            Microsteps per optimizer update, >= 1: the DP all-reduce is amortized over them.
        seq_len
            Tokens per sample, >= 1 for transformers.
        cp_size
            Extended model: context-parallel degree, >= 1; ``tp x pp x ep x cp`` must divide the accelerators.
        sequence_parallel, tp_comm_overlap
            Extended model: sequence parallelism (TP collectives as reduce-scatter + all-gather, every
            activation split by ``tp``); TP communication overlapped with the GEMMs (``overlap_efficiency`` of
            it hidden).
        kv_fraction
            Extended model: width of the keys and values over the hidden size (KV heads / heads, in (0, 1]; 1 for
            multi-head attention, 1/16 for Llama 3 405B): sizes the context-parallel exchange.

        Returns
        -------
        DistributedResult
            Plain floats in SI units: ``step_latency_total``, ``dp_communication_latency``,
            ``tp_communication_latency``, ``ep_communication_latency``, ``communication_latency``
            (before overlap) and ``pipeline_bubble_latency`` in s; ``bubble_fraction``,
            ``scaling_efficiency`` and fleet ``mfu`` as fractions; ``effective_throughput`` in
            samples/s; ``parallelism`` ``{"dp", "tp", "pp", "ep"}``. ``node_profile`` (one replica):
            ``latency``, ``latency_compute``, ``latency_memory``, ``latency_overhead`` in s;
            ``throughput`` in samples/s; ``arithmetic_intensity`` in flop/B; ``energy`` in J;
            ``memory_footprint`` in B per accelerator; ``peak_flops_actual`` in flop/s;
            ``peak_bw_actual`` in B/s; ``mfu``, ``hfu``; ``feasible``; ``bottleneck``
            (``"Compute"``/``"Memory"``); ``offload_spill_bytes`` (B) and ``offload_effective_bw``
            (B/s) only when the state does not fit; ``overhead_dominated``.

        Raises
        ------
        ValueError, TypeError
            mlsysim's messages, in its order, for its checks (``tp_size must be >= 1, got 0``,
            ``Infeasible 4D Parallelism: ...``, ``precision 'fp64' is not supported ...``); a message
            naming the argument for a NaN, an infinity, a non-number or a fractional split.
        """
        w, f = as_workload(model), as_fleet(fleet)
        if self.fidelity != "mlsysim":
            return self._solve_extended({k: v for k, v in locals().items() if k in _KEYWORDS or k in _EXTENDED})
        if not (cp_size is _NEUTRAL_CP and sequence_parallel is False and tp_comm_overlap is False
                and kv_fraction is _NEUTRAL_KV):
            check_fidelity({"cp_size": cp_size, "sequence_parallel": sequence_parallel,
                            "tp_comm_overlap": tp_comm_overlap, "kv_fraction": kv_fraction})
        # the fast path, for plain Python numbers: every rule in one compiled call (anything else, a bool, a
        # numpy number or a list that Python would repeat rather than multiply, takes the careful path)
        if type(precision) is str and PLAIN_NUMBERS.issuperset(map(type, (
                batch_size, efficiency, tp_size, pp_size, ep_size, v_stages, microbatch_count, zero_stage,
                overlap_efficiency, congestion_factor, straggler_factor, moe_routing_imbalance_factor,
                gradient_accumulation_steps, seq_len))):
            key = precision.lower()
            try:
                bound = _bound(w, f, key) if key in PRECISION_BYTES else None
            except (ArithmeticError, NotImplementedError, TypeError, ValueError):
                bound = None        # the workload cannot be lowered: the careful path says so in its place
            if bound is not None:
                template, positions, fn, first, rules, transformer, fallback = bound
                seq = 0 if seq_len_unread(transformer, tp_size, ep_size) else seq_len
                vector = template.copy()
                for i, value in zip(positions, (
                        batch_size, efficiency, tp_size, pp_size, ep_size, v_stages, microbatch_count, zero_stage,
                        1 if is_lora else 0, 1 if activation_recomputation else 0, 1 if overlap_comm else 0,
                        overlap_efficiency, congestion_factor, straggler_factor, moe_routing_imbalance_factor,
                        gradient_accumulation_steps, seq)):
                    if i is not None:
                        vector[i] = value
                try:
                    broken, *warned = first(*vector, False, False, fallback)
                except (ArithmeticError, ValueError, TypeError):
                    broken, warned = -2, ()
                if broken != -2 and (broken != -1 or any(warned)):
                    # a rule is broken (this raises) or warns: the checks say it, with its message, in order
                    configure(w, f, {k: v for k, v in locals().items() if k in _KEYWORDS}, stacklevel=4,
                              verdict=verdict(rules, broken, warned))
                if broken == -1:
                    return _result(fn(*vector), tp_size, pp_size, ep_size, (w, f, precision, (
                        batch_size, efficiency, tp_size, pp_size, ep_size, v_stages, microbatch_count, zero_stage,
                        is_lora, activation_recomputation, overlap_comm, overlap_efficiency, congestion_factor,
                        straggler_factor, moe_routing_imbalance_factor, gradient_accumulation_steps, seq_len)))
        # the careful path: every rule in order (raises the first broken one), then the numbers
        kw = {k: v for k, v in locals().items() if k in _KEYWORDS}
        w, f, key, args = configure(w, f, kw, stacklevel=4)
        variant, values = values_of(w, f, key, args)
        c = compile_quantities(variant, tuple(OUTPUTS.values()), "math")
        return _result(c.fn(*(values[a] for a in c.args)), args["tp_size"], args["pp_size"], args["ep_size"],
                       (w, f, precision, tuple(kw[k] for k in KEYWORDS)))


    def _solve_extended(self, kw: Dict[str, object]) -> DistributedResult:
        """The extended model's step: the careful path (every rule in order), its own compiled outputs."""
        w, f = kw.pop("w"), kw.pop("f")
        kw.update(fidelity=self.fidelity, without=self.without)
        w, f, key, args = configure(w, f, kw, stacklevel=5)
        variant, values = values_of(w, f, key, args)
        m = build_model(variant)
        extra = tuple(n for n in EXTENDED_OUTPUTS.values() if n in m)
        c = compile_quantities(variant, tuple(OUTPUTS.values()) + extra, "math")
        out = c.fn(*(values[a] for a in c.args))
        inputs = (w, f, kw["precision"], tuple(kw[k] for k in KEYWORDS),
                  {k: kw[k] for k in (*EXTENDED_DEFAULTS,) if k in kw})
        result = _result(out[:len(OUTPUTS)], args["tp_size"], args["pp_size"], args["ep_size"], inputs)
        got = dict(zip(extra, out[len(OUTPUTS):]))
        result.extended = {k: float(got[n]) for k, n in EXTENDED_OUTPUTS.items() if n in got}
        # where context parallelism is priced as mlsysim prices it, it is folded into data parallelism
        result.parallelism["cp"] = args["cp_size"] if variant.on("context_parallel") else 1
        return result


#: The extended model's own results (``DistributedResult.extended``; a name is absent where its mechanism
#: is off or does not apply): SI units.
EXTENDED_OUTPUTS = {
    "cp_communication_latency": "T_cp",           # s, with congestion
    "pipeline_p2p_latency": "T_p2p",              # s, with congestion
    "optimizer_step_latency": "T_opt",            # s
    "tp_exposed_latency": "T_tp_exposed",         # s, after TP overlap
    "gemm_shape_factor": "f_gemm",                # 1
}

_KEYWORDS = frozenset(["precision", "topology_override", *keywords()])
_EXTENDED = frozenset([*extended_keywords(), "w", "f"])


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
    """Compiled outputs and checks for (workload, fleet, precision), with the static part of the
    argument vector filled: ``(template, positions, outputs, first, its rules, transformer, peak fallback)``."""
    variant, static = static_values(w, f, key)
    c = compile_quantities(variant, tuple(OUTPUTS.values()), "math")
    rules = compiled_rules(variant, "solve", c.args)
    names, first = rules.first_named
    if names != tuple(RAW[a].name for a in c.args) + FACT_NAMES:     # the outputs' arguments, then the facts
        raise RuntimeError(f"the checks read parameters the outputs do not: {names[len(c.args):-len(FACTS)]}")
    index = {a: i for i, a in enumerate(c.args)}
    template = [static.get(a) for a in c.args]
    kw = keywords()
    positions = tuple(index.get(kw[k].symbol) for k in KEYWORDS)
    fallback = facts(w, f, key)["flags"][2]
    return template, positions, c.fn, first, rules, w.is_transformer, fallback


def describe(w: Workload, f: Fleet, precision, arguments=(), extended: Optional[Dict[str, object]] = None) -> str:
    """``"Llama3_70B on Research_256: batch 256, tp 8, pp 4, 8 microbatches, fp16"``: the workload, the
    fleet, and every ``solve()`` keyword not at its default (``arguments`` in :data:`KEYWORDS`); with the
    extended model's arguments (``extended``: ``fidelity``, ``without``, ``cp_size``, ...), the model and
    those not at their defaults."""
    parts, swept = [], []
    for k, v in zip(KEYWORDS, arguments):
        if v is SWEPT:
            swept.append("batch" if k == "batch_size" else SHORT_NAMES[k])
        elif k == "batch_size":
            parts.append(f"batch {v}")
        elif k in FLAG_KEYWORDS:
            parts += [SHORT_NAMES[k]] if v else []
        elif v != SOLVE_DEFAULTS[k]:
            parts.append(f"{SHORT_NAMES[k]} {v}")
    if precision is SWEPT:
        swept.append("precision")
    else:
        parts.append(str(precision))
    model = ""
    if extended and extended.get("fidelity", "mlsysim") != "mlsysim":
        ext = []
        for k, p in extended_keywords().items():
            v = extended.get(k, p.default)
            if v is SWEPT:
                swept.append(SHORT_NAMES[k])
            elif k in EXTENDED_FLAG_NAMES:
                ext += [SHORT_NAMES[k]] if v else []
            elif v != p.default:
                ext.append(f"{SHORT_NAMES[k]} {v:g}" if isinstance(v, float) else f"{SHORT_NAMES[k]} {v}")
        off = extended.get("without") or ()
        model = "; extended model" + (f" ({', '.join(ext)})" if ext else "") + \
            (f", without {', '.join(off)}" if off else "")
    return f"{w.name} on {f.name}: " + ", ".join(parts) + model + (f"; varied: {', '.join(swept)}" if swept else "")


def describe_arguments(w: Workload, f: Fleet, args: Dict[str, object]) -> str:
    """:func:`describe` of completed ``solve()`` arguments (the extended model's included, when given)."""
    return describe(w, f, args["precision"], [args[k] for k in KEYWORDS],
                    {k: args[k] for k in EXTENDED_DEFAULTS if k in args})


def solver_of(kwargs: Dict[str, object]):
    """``(DistributedModel of kwargs' fidelity and without, the other kwargs)``."""
    rest = dict(kwargs)
    model = DistributedModel(rest.pop("fidelity", "mlsysim"), rest.pop("without", ()))
    return model, rest


#: Keyword -> its short name in a configuration line (:func:`describe`, the command line).
SHORT_NAMES = {"efficiency": "efficiency", "tp_size": "tp", "pp_size": "pp", "ep_size": "ep", "v_stages": "v",
          "microbatch_count": "m",
          "zero_stage": "ZeRO", "is_lora": "LoRA", "activation_recomputation": "recompute",
          "overlap_comm": "overlap", "overlap_efficiency": "overlap efficiency",
          "congestion_factor": "congestion", "straggler_factor": "straggler",
          "moe_routing_imbalance_factor": "MoE imbalance", "gradient_accumulation_steps": "GA", "seq_len": "seq",
          "cp_size": "cp", "sequence_parallel": "SP", "tp_comm_overlap": "TP overlap", "kv_fraction": "KV fraction"}
EXTENDED_FLAG_NAMES = ("sequence_parallel", "tp_comm_overlap")
#: Marks a swept argument in :func:`describe`.
SWEPT = type("Swept", (), {"__repr__": lambda self: "swept", "__str__": lambda self: "swept"})()


def _result(values, tp, pp, ep, inputs=()) -> DistributedResult:
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
        values, inputs)
