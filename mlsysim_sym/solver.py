"""The plain-API mirror: ``DistributedModel().solve(model, fleet, ...)``.

Same keyword arguments, defaults, checks (order, exception types, messages) and
warnings as ``mlsysim.solvers.DistributedModel.solve`` 0.3.0 (``docs/contract.md``
§5); the checks are the rules of :mod:`mlsysim_sym.checks` and the numbers come
from evaluating the symbolic model (:mod:`mlsysim_sym.compile`). Results are plain
floats in SI units: seconds, bytes, joules, flop/s, B/s, samples per second.

``DistributedModel(fidelity="extended")`` prices the same call with the extended model's mechanisms
(:mod:`mlsysim_sym.mechanisms`); the model choice is made once, in the constructor, and every call carries it in
its :class:`~mlsysim_sym.arguments.Arguments` down to the compiled numbers (:func:`price`).
"""
from __future__ import annotations

import html
import math
import os
import operator
import warnings
from dataclasses import dataclass, field, fields
from functools import lru_cache
from typing import Dict, List, Optional, Sequence, Tuple

from . import files, notation, wide
from .arguments import (Arguments, check_switches, describe, from_record, given_name, refuse_extended, refuse_text,
                        settable)
from .checks import FACT_NAMES, FACTS, PLAIN_NUMBERS, RAW, check, check_given, compiled_rules, facts, verdict
from .compile import compile_quantities, solve_quantities
from .display import capacity_words, fit_words, html_table, key_values, quantity, wrap
from .inputs import (FLAG_KEYWORDS, KEYWORDS, PRECISION_BYTES, FleetLike, WorkloadLike, as_fleet,
                     as_workload, static_values)
from .mechanisms import ModelChoice
from .model_notes import model_notes
from .model import Variant, build_model
from .outputs import EXTENDED_OUTPUTS, OUTPUT_NAMES, OUTPUTS, unit_of, words
from .symbols import by_argument, keywords
from .types import Fleet, Workload

__all__ = ["DistributedModel", "DistributedResult", "EXTENDED_OUTPUTS", "NodeProfile", "OUTPUTS", "OUTPUT_NAMES",
           "output_unit", "price", "solve_quantities"]


def output_unit(name: str) -> str:
    """The SI unit of a result field (``"s"``, ``"B"``, ``"1"``, ...)."""
    return unit_of(name)


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
        return "\n".join(["NodeProfile (one replica):"] + key_values(self._rows(), indent="  "))

    def _repr_html_(self) -> str:
        return html_table(self._rows(), ("", "value"), caption="NodeProfile (one replica)")


class ExtendedOutputs(dict):
    """The extended model's own outputs of one result (a ``dict``); a field it does not hold raises a ``KeyError``
    that says why: a mechanism switched off by ``without=`` (mlsysim's model has no such quantity), or no such
    field."""

    def __init__(self, values: Dict[str, float], variant: Optional[Variant] = None):
        super().__init__(values)
        self.variant = variant

    def __missing__(self, key):
        # the switched-off mechanism whose model has the quantity (read off the models, not a table)
        v = self.variant
        gives = [m for m in (v.off if v is not None else ()) if key in EXTENDED_OUTPUTS
                 and EXTENDED_OUTPUTS[key] in build_model(v.of(ModelChoice(v.fidelity,
                                                                           tuple(x for x in v.off if x != m))))]
        if gives:
            raise KeyError(f"{key}: not priced here: the mechanism that gives it, {gives[0]}, is switched off "
                           f"(without={v.off!r})")
        raise KeyError(f"no extended output {key!r} in this model; outputs here: {', '.join(self) or 'none'}")


class MemoryTerms(dict):
    """The memory per accelerator term by term, in B (a ``dict`` by quantity name: ``M_grads``). A term is also
    found by the symbol the text prints beside it (``M_gradients``); a name that is neither raises a ``KeyError``
    that lists both."""

    def _printed(self) -> Dict[str, str]:
        return {notation.plain(notation.entry(n).latex): n for n in self}

    def rows(self) -> List[Tuple[str, str]]:
        """``(words and printed symbol, size with its unit)`` of each term, as the result's text prints them."""
        return [(f"{words(n).replace(' per accelerator', '')} {notation.plain(notation.entry(n).latex)}",
                 quantity(b, "B")) for n, b in self.items()]

    def __str__(self) -> str:
        """One term a line (``print(r.memory)``; ``repr`` stays the ``dict`` of bytes)."""
        rows = self.rows()
        if not rows:            # a workload other than a transformer: one total, no terms
            return "{}"
        width = max(len(a) for a, _ in rows)
        return "\n".join(f"{a:<{width}}  {b:>10}" for a, b in rows)

    def __contains__(self, key) -> bool:
        return dict.__contains__(self, key) or key in self._printed()

    def get(self, key, default=None):
        return self[key] if key in self else default

    def __missing__(self, key):
        printed = self._printed()
        if key in printed:
            return self[printed[key]]
        raise KeyError(f"no memory term {key!r}; the terms: {', '.join(self)} (printed "
                       f"{', '.join(printed)})")


@dataclass(slots=True, repr=False)
class DistributedResult:
    """One training step, under mlsysim ``DistributedResult`` field names (SI units), plus fleet ``mfu``.

    Times in s, memory in B, energy in J, rates in flop/s and B/s, throughputs in
    samples/s; ``quantities`` maps every result name of :data:`OUTPUTS` (node fields
    as ``node_profile.*``) to its value, with ``None`` where the field is ``None``.
    ``terms`` are the step's terms in reading order (the addends of ``T_sync``, the step before the straggler:
    :attr:`~mlsysim_sym.model.StepTimeModel.step_terms`), in s; ``extended`` the extended model's own outputs;
    ``arguments`` the configuration priced (:class:`~mlsysim_sym.arguments.Arguments`).
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
    values: Sequence[float] = field(default=(), compare=False)       # every quantity of solve_quantities()
    arguments: Optional[Arguments] = field(default=None, compare=False)
    layout: tuple = field(default=((), None, False, ()), compare=False, repr=False)  # where the parts sit in values

    @property
    def terms(self) -> Dict[str, float]:
        """The step's terms in reading order, in s (the addends of ``T_sync``)."""
        return {n: float(self.values[i]) for n, i in self.layout[0]}

    @property
    def memory(self) -> "MemoryTerms":
        """The memory per accelerator term by term, in B: weights, gradients, optimizer state, activations and
        buffers (the addends of ``M_acc``; empty for a workload that is not a transformer, whose state mlsysim
        prices as one sum)."""
        return MemoryTerms({n: float(self.values[i]) for n, i in self.layout[3]})

    @property
    def extended(self) -> Optional[Dict[str, float]]:
        """The extended model's own outputs (:data:`EXTENDED_OUTPUTS`; None in mlsysim's model). One a switched-off
        mechanism gives is absent, and reading it says why (:class:`ExtendedOutputs`)."""
        own = self.layout[1]
        variant = self.arguments.variant if self.arguments is not None else None
        return None if own is None else ExtendedOutputs({k: float(self.values[i]) for k, i in own}, variant)

    @property
    def configuration(self) -> str:
        """Which configuration this prices: model, fleet, and every keyword not at its default."""
        return describe(self.arguments, effects=True) if self.arguments is not None else ""

    @property
    def quantities(self) -> Dict[str, object]:
        out = dict(zip(OUTPUT_NAMES, self.values))
        if self.node_profile.feasible:      # mlsysim reports no spill when the state fits
            out["node_profile.offload_spill_bytes"] = None
        return out

    @property
    def memory_capacity(self) -> Optional[float]:
        """The HBM capacity of one accelerator the memory is held against, in B (the fleet's or the
        ``memory_capacity`` given; a catalog's 80 GiB is 85.9 GB)."""
        return None if self.arguments is None else float(self.arguments.values[by_argument()["memory_capacity"].symbol])

    @property
    def straggler_latency(self) -> float:
        """The straggler's stretch of the step, ``T_step - T_sync`` (0 when ``f_strag ≤ 1``), in s."""
        rest = self.step_latency_total - sum(self.terms.values())
        return rest if abs(rest) > 1e-12 * abs(self.step_latency_total) else 0.0

    def _rows(self):
        n, p = self.node_profile, self.parallelism
        s = lambda t: quantity(t, "s")  # noqa: E731
        rows = [("step time T_step", s(self.step_latency_total))]
        for name, t in self.terms.items():
            e = notation.entry(name)
            if name == "T_node":
                rows.append((f"  {words(name)} {notation.plain(e.latex)}", f"{s(t)} ({n.bottleneck.lower()}-bound)"))
                rows.append(("    compute / memory / overhead", f"{s(n.latency_compute)} / {s(n.latency_memory)} / "
                                                               f"{s(n.latency_overhead)}"))
                if (self.extended or {}).get("permutation_latency"):    # the rest of T_node (an MoE card's)
                    rows.append((f"    {words('T_perm')} {notation.plain(notation.entry('T_perm').latex)}",
                                 s(self.extended["permutation_latency"])))
            else:
                rows.append((f"  {words(name)} {notation.plain(e.latex)}", s(t)))
        if self.straggler_latency:
            rows.append(("  straggler's stretch (f_strag > 1)", s(self.straggler_latency)))
        rows += [
            ("communication before overlap DP / TP / EP", f"{s(self.dp_communication_latency)} / "
                                                          f"{s(self.tp_communication_latency)} / "
                                                          f"{s(self.ep_communication_latency)}"),
            ("pipeline bubble fraction", f"{self.bubble_fraction:.4f}"),
        ]
        gathered = (self.extended or {}).get("gathered_layer_memory")
        if self.extended and "gemm_shape_factor" in self.extended:
            rows.append(("GEMM-shape factor f_GEMM", f"{self.extended['gemm_shape_factor']:.4f}"))
        rows += [
            # MFU counts against the precision's own peak: an FP8 step is faster at a lower MFU than a BF16 one
            ("MFU fleet / node" + (f" (of {self.mfu_peak})" if self.arguments is not None
                                   and self.arguments.key not in ("fp16", "bf16") else ""),
             f"{self.mfu:.4f} / {n.mfu:.4f}"),
            ("scaling efficiency", f"{self.scaling_efficiency:.4f}"),
            ("throughput", quantity(self.effective_throughput, "1/s") + self._samples_note()),
            ("memory per accelerator", f"{quantity(n.memory_footprint, 'B')}"
                                       + ("" if self.memory_capacity is None else
                                          f" of {capacity_words(self.memory_capacity)} HBM")
                                       + f" ({fit_words(n.memory_footprint, self.memory_capacity, n.feasible)})"),
            *((f"  {label}", size) for label, size in self.memory.rows()),
            # the part of the buffers ZeRO-3 holds gathered (fsdp_buffers), where it holds any
            *([(f"    of which {words('M_gather')} {notation.plain(notation.entry('M_gather').latex)}",
                quantity(gathered, "B"))] if gathered else []),
            ("energy per replica step", quantity(n.energy, "J")),
            ("parallelism", ", ".join(f"{k} {v}" for k, v in p.items())),
        ]
        return rows

    def _samples_note(self) -> str:
        """Where a step does not train the batch given, what the throughput counts: mlsysim prices
        ``max(1, batch_size // dp)`` samples a replica, so a batch below the replicas gives each one sample (its
        warning: "Using local_batch=1") and a batch that does not split evenly drops the remainder."""
        a, dp = self.arguments, self.parallelism["dp"]
        if a is None:
            return ""
        batch = int(a["batch_size"])
        samples = dp * max(1, batch // dp)
        if samples == batch:
            return ""
        return f" ({samples:,} a step, not the batch {batch:,})"

    @property
    def mfu_peak(self) -> str:
        """The peak MFU counts against, in words: the precision's rate (``"the fp8 peak"``), a peak given
        (``peak_flops``), or the record's ``peak_flops`` where it has no rate for the precision (as mlsysim prices
        it: ``int4`` on an H100)."""
        a = self.arguments
        if a is None:
            return "the peak"
        if "peak_flops" in a.named_fields:
            return "the peak_flops given"
        if a.fleet.node.accelerator.flops_for(a.key) is None and a.key not in ("fp16", "bf16"):
            return f"peak_flops, no {a.key} rate"
        return f"the {a.key} peak"

    def to_dict(self) -> Dict[str, object]:
        """The result under mlsysim's field names, ``node_profile`` nested, SI units, plus fleet ``mfu``, the
        step's ``terms`` and, in the extended model, its own outputs (plain Python numbers: ``json.dumps`` takes
        it)."""
        skip = ("node_profile", "values", "arguments", "layout")
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}
        out["terms"] = self.terms
        out["memory"] = self.memory
        if self.extended is not None:
            out["extended"] = self.extended
        # what the text says beside its numbers: the peak MFU counts against and the HBM the memory is held against
        out["mfu_peak"] = self.mfu_peak
        out["memory_capacity"] = self.memory_capacity
        out["runnable"] = self.runnable
        out["notes"] = self._notes()
        n = self.node_profile
        out["node_profile"] = {f.name: getattr(n, f.name) for f in fields(n)}
        if n.feasible:
            out["node_profile"]["offload_spill_bytes"] = None
        if self.arguments is not None:      # which configuration it prices: its keywords, and the line the text prints
            out["configuration"] = self.arguments.to_dict()
            out["configuration_line"] = self.configuration
        first = [k for k in ("configuration", "configuration_line", "node_profile") if k in out]
        return {k: out[k] for k in (*first, *(k for k in out if k not in first))}

    def plan(self, tokens=None, steps=None, price_per_gpu_hour=None):
        """How long and how much a run of ``tokens`` (or ``steps``) takes on this configuration: steps, wall-clock
        time, accelerator-hours, energy and, at a price per accelerator-hour, cost
        (:func:`mlsysim_sym.planning.plan_of`)."""
        from .run_costs import plan_of
        return plan_of(self, tokens, steps, price_per_gpu_hour)

    def plot(self, path=None, ax=None):
        """A stacked bar of the step time's terms (:func:`mlsysim_sym.plot.breakdown_chart`; needs
        matplotlib: ``pip install 'mlsysim-sym[plot]'``). Saves a PNG at ``path`` when given."""
        # display hook: the pictures sit above the results (and need matplotlib)
        from .plot import breakdown_chart
        return breakdown_chart(self, path=path, ax=ax)

    @property
    def runnable(self) -> Optional[bool]:
        """Whether a framework runs this schedule as given (:func:`mlsysim_sym.schedules.can_run`); ``None``
        without the call's arguments, or where a count is beyond int64 (batch 1e20): not said either way."""
        a = self.arguments
        try:
            return None if a is None else bool(a.runnable)
        except (OverflowError, ValueError, TypeError):
            return None

    def _notes(self) -> List[str]:
        """What the numbers do not say, one sentence each (the text, the JSON and the notebook's table give them)."""
        out = []
        if self.runnable is False:
            out.append(f"no framework runs this schedule as given: {self.arguments.why_not_runnable()}; it is "
                       "priced as mlsysim prices it")
        return out + self._model_notes()

    def _model_notes(self) -> List[str]:
        """What the model the call chose leaves out or chose for the user (:mod:`mlsysim_sym.model_notes`; a plan
        of the run repeats them)."""
        return model_notes(self.arguments)

    def notes(self) -> List[str]:
        """The text's lines below the breakdown: what its numbers do not say. A schedule no framework runs (see
        :func:`mlsysim_sym.schedules.can_run`) is priced all the same, as mlsysim prices it, and said so here (a
        plan and a search say it too; ``to_dict()`` gives ``runnable`` and ``notes``)."""
        return [line for n in self._notes() for line in wrap("note: " + n, "")]

    def __repr__(self) -> str:
        head = wrap("DistributedResult" + (f" of {self.configuration}:" if self.configuration else ":"), "")
        return "\n".join(head + key_values(self._rows(), indent="  ") + self.notes())

    def _repr_html_(self) -> str:
        return (html_table(self._rows(), ("", "value"), caption=self.configuration or "DistributedResult")
                + "".join(f"<p>note: {html.escape(n)}</p>" for n in self._notes()))


class DistributedModel:
    """mlsysim's ``DistributedModel``, evaluated from the symbolic model.

    ``DistributedModel()`` (``fidelity="mlsysim"``) is mlsysim 0.3.0's model, exactly.
    ``DistributedModel(fidelity="extended")`` adds the mechanisms of :mod:`mlsysim_sym.mechanisms`
    (context and sequence parallelism, TP overlap, pipeline sends, ZeRO-3 gathers, the optimizer update, ...;
    ``docs/extended.md``), and ``solve()`` then takes the extended model's keywords as well (``cp_size``,
    ``sequence_parallel``, ...: the parameter table's keywords of that model, :func:`mlsysim_sym.symbols.keywords`);
    ``without=("pipeline_p2p", ...)`` prices the named mechanisms as mlsysim does.
    The choice is checked once, here (:class:`~mlsysim_sym.mechanisms.ModelChoice`).
    """

    def __init__(self, fidelity: str = "mlsysim", without: Sequence[str] = ()):
        self.choice = ModelChoice(fidelity, without)

    @property
    def fidelity(self) -> str:
        return self.choice.fidelity

    @property
    def without(self) -> Tuple[str, ...]:
        return self.choice.off

    def __repr__(self) -> str:
        if not self.choice.extended:
            return "DistributedModel()"
        off = f", without={self.without!r}" if self.without else ""
        return f"DistributedModel(fidelity={self.fidelity!r}{off})"

    def solve(self, model: WorkloadLike, fleet: FleetLike, batch_size: int = 1, precision: str = "fp16",
              efficiency: float = 0.5, tp_size: int = 1, pp_size: int = 1, ep_size: int = 1,
              v_stages: int = 1, microbatch_count: int = 1, topology_override: Optional[str] = None,
              zero_stage: int = 0, is_lora: bool = False, activation_recomputation: bool = False,
              overlap_comm: bool = False, overlap_efficiency: float = 0.85, congestion_factor: float = 1.0,
              straggler_factor: float = 1.0, moe_routing_imbalance_factor: float = 1.0,
              gradient_accumulation_steps: int = 1, seq_len: int = 2048, *, cp_size: int = 1,
              sequence_parallel: bool = False, tp_comm_overlap: bool = False,
              kv_fraction: Optional[float] = None, etp_size: int = 1, fsdp_overlap: bool = False,
              cp_overlap: bool = False, layer_overlap: bool = False,
              attention_efficiency: float = 0.4, ep_overlap: bool = False,
              fused_dispatch: bool = False, **fields) -> DistributedResult:
        """Price one training step of a data / tensor / pipeline / expert-parallel job.

        Same arguments, defaults, checks and warnings as mlsysim 0.3.0's
        ``DistributedModel.solve`` (``docs/contract.md``); the keyword-only arguments belong to the extended
        model (``DistributedModel(fidelity="extended")``, ``docs/extended.md``) and must stay at their
        defaults otherwise.

        Parameters
        ----------
        model
            The workload: a catalog name (``"Llama3_70B"``, ``"Mixtral_8x7B"``, ``"ResNet50"``; see
            ``mlsysim-sym list``), a :class:`~mlsysim_sym.types.Workload`, or an mlsysim workload.
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
            fleet's accelerators. ``dp`` = accelerators / (tp x pp x ep) (the extended model carves EP out of
            data parallelism: see ``etp_size``).
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
            Multiplier on DP, TP and EP communication time: any finite number, as mlsysim takes it (no range is
            checked, so a value below 1 shortens the communication and a negative one makes it negative; a NaN
            or an infinity is refused by name, where mlsysim would price a NaN). The sweep-like functions
            (sensitivities, required, uncertainty) read the meaningful range, >= 0.
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
            Extended model: width of the keys and values over the hidden size (``H_KV d_head / d``, > 0; 1 for
            multi-head attention, 1/16 for Llama 3 405B): sizes the context-parallel exchange. None (the
            default): an architecture card's own width, or that of the heads a record lists (mlsysim's
            ``Llama3_70B``: 8 of 64 heads, 0.125), else 1.
        etp_size
            Extended model: expert tensor-parallel degree, >= 1 (Megatron-Core's
            ``expert_tensor_parallel_size``): the ranks that split each expert's matrices. With ``ep_size``, expert
            parallelism is carved out of a stage's tensor-, data- and context-parallel ranks (``ep x etp x pp``
            must divide the accelerators; ``dp`` = accelerators / (tp x pp x cp)).
        fsdp_overlap, cp_overlap
            Extended model: ZeRO-3 / FSDP gathers prefetched and the gradient reduction overlapped with compute
            (FSDP2's and Megatron-FSDP's default); the context-parallel exchange a ring overlapped with attention
            (Megatron-Core's ``cp_comm_type="p2p"``).
        layer_overlap
            Extended model, with ``overlap_comm``: the gradient AllReduce overlapped layer by layer with the
            backward pass (the Collective Communication chapter's per-layer schedule: the last layer's AllReduce
            and what each other one takes beyond one layer's backward are exposed) in place of the fixed share
            ``overlap_efficiency``.
        attention_efficiency
            Extended model, for a workload with an architecture card: the share of the GEMMs' achieved efficiency
            that the training stack's attention kernels reach, in [1e-9, 1]. Fitted per framework on measured runs
            (``docs/modern_runs.md``: Megatron-Core 0.4, the default; PyTorch FSDP (torchtitan) 0.38; Composer 0.26).
        ep_overlap
            Extended model, with ``ep_size > 1``: each microbatch's MoE all-to-alls run beside another
            microbatch's compute (Megatron-Core's ``overlap_moe_expert_parallel_comm``); what the replica's compute
            cannot cover is exposed, and at least one microbatch's share.
        fused_dispatch
            Extended model, for a workload with routed experts: the token dispatcher permutes the tokens inside its
            all-to-all kernels (Megatron-Core's ``moe_token_dispatcher_type="flex"`` on DeepEP or HybridEP), so no
            permutation kernels of its own are priced; by default they are (the ``alltoall`` and ``allgather``
            dispatchers, torchtitan's), ``docs/modern_runs.md``.
        **fields
            A record field or lowered input set for this call, as ``sweep()`` and ``sensitivities()`` take them
            (``count=16`` nodes, ``fabric_bandwidth=50e9``, ``memory_capacity=...``; the names of
            :func:`mlsysim_sym.arguments.settable`): the workload and fleet with that value, the careful path.
            Any other name is the ``TypeError`` mlsysim's ``solve()`` raises.

        Returns
        -------
        DistributedResult
            Plain floats in SI units: ``step_latency_total``, ``dp_communication_latency``,
            ``tp_communication_latency``, ``ep_communication_latency``, ``communication_latency``
            (before overlap) and ``pipeline_bubble_latency`` in s; ``bubble_fraction``,
            ``scaling_efficiency`` and fleet ``mfu`` as fractions; ``effective_throughput`` in
            samples/s; ``parallelism`` ``{"dp", "tp", "pp", "ep"}`` (and ``"cp"``, ``"etp"`` in the extended model). ``node_profile`` (one replica):
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
        # the signature is the keyword table's order (a test holds them equal); an unknown name first, as Python
        # refuses it when it binds the arguments
        given = _fields(fields)
        w = as_workload(model)
        a = Arguments(w, as_fleet(fleet), self.choice, precision, from_record((
            batch_size, efficiency, tp_size, pp_size, ep_size, v_stages, microbatch_count, zero_stage, is_lora,
            activation_recomputation, overlap_comm, overlap_efficiency, congestion_factor, straggler_factor,
            moe_routing_imbalance_factor, gradient_accumulation_steps, seq_len, cp_size, sequence_parallel,
            tp_comm_overlap, kv_fraction, etp_size, fsdp_overlap, cp_overlap, layer_overlap, attention_efficiency,
            ep_overlap, fused_dispatch),
            w, self.choice), given,
            # the catalog names as given, which to_dict()'s configuration passes back (a record: its own name)
            names=(given_name(model), given_name(fleet)))
        if isinstance(model, (str, os.PathLike)) and files.is_file_name(model):
            # a plan file: its workload is priced, its settings only where they are passed (say which were not)
            said = files.unapplied(model, a.get, self.choice, fleet)
            if said:
                warnings.warn(said, UserWarning, stacklevel=2)
        return price(a, stacklevel=4)


def _fields(given: Dict[str, object]) -> Tuple[Tuple[str, object], ...]:
    """``solve()``'s record fields (:func:`~mlsysim_sym.arguments.settable`); any other name is the ``TypeError``
    Python gives mlsysim's ``solve()`` for it."""
    if not given:
        return ()
    table = settable()
    for k in given:
        if k not in table:
            raise TypeError(f"DistributedModel.solve() got an unexpected keyword argument {k!r}")
    return tuple(given.items())


def price(a: Arguments, stacklevel: int = 3) -> DistributedResult:
    """One step of the configuration ``a`` (scalars): ``solve()``'s checks, in order, then the numbers.

    The fast path, for plain Python numbers: every rule in one compiled call, then the compiled outputs, both
    shipped pre-generated for the catalog's variants of both models. Anything else (a bool where a number
    goes, a numpy number, a list, a record field set by the call) takes the careful path: every rule in order
    (:func:`mlsysim_sym.checks.check`), then the numbers from :attr:`Arguments.values`. ``stacklevel``: where a
    warning points (the caller of the function that called this).
    """
    refuse_text(a, one=True)
    if a.model.extended:
        check_switches(a)
    if not a.fields and type(a.precision) is str and PLAIN_NUMBERS.issuperset(map(type, _numbers(a.keywords))) \
            and (a.model.extended or a.extended_at_neutral):
        # plain numbers (no bool where a number goes), the extended model's keywords neutral unless it prices them
        key = a.precision.lower()
        try:
            bound = _bound(a.workload, a.fleet, key, a.model) if key in PRECISION_BYTES else None
        except (ArithmeticError, NotImplementedError, TypeError, ValueError):
            bound = None        # the workload cannot be lowered: the careful path says so in its place
        if bound is not None:
            template, (prefix, rest, switches), fn, first, rules, seq_unread, fallback, variant, n_out, layout = bound
            kw = a.keywords
            vector = [*kw[:prefix], *template[prefix:]]   # the keywords lead the arguments, in the table's order
            for i, j in rest:
                vector[i] = kw[j]
            for i in switches:                  # the switches as mlsysim reads them: their truth, as 0 or 1
                vector[i] = 1 if vector[i] else 0
            if seq_unread is not None and kw[_TP] == 1 and kw[_EP] == 1:
                vector[seq_unread] = 0          # mlsysim never reads seq_len there
            try:
                broken, *warned = first(*vector, False, False, fallback)
            except (ArithmeticError, ValueError, TypeError):
                broken, warned = -2, ()
            if broken != -2 and (broken != -1 or any(warned)):
                # a rule is broken (this raises) or warns: the checks say it, with its message, in order
                check(a, stacklevel=stacklevel, verdict=verdict(rules, broken, warned))
            if broken == -1:
                return _finite_or_said(_result(wide.evaluate(fn, vector[:n_out]), a, layout, kw), stacklevel)
    refuse_extended(a)
    if a.fields:                # a record field set by the call is refused where a sweep masks it (count=-1)
        check_given(a, fields_only=True)
    check(a, stacklevel=stacklevel)
    variant, values = a.variant, a.values
    c = compile_quantities(variant, solve_quantities(variant), "math")
    return _finite_or_said(_result(wide.evaluate(c.fn, [values[x] for x in c.args]), a, _layout(variant),
                                   [a.lowered[k] for k in KEYWORDS]), stacklevel)


#: The warning of a step time beyond a float's range (the calculator's module gives it too: derivations/web.py).
INFINITE_STEP = ("the step time is infinite at these inputs (beyond a float's range): an extreme value among them "
                 "(a factor, a count or a record field near 1e308)")


def _finite_or_said(r: DistributedResult, stacklevel: int) -> DistributedResult:
    """The result, with a warning where its step time is beyond a float's range (an extreme input, a straggler
    factor of 1e308): mlsysim returns the infinity too, and the command line refuses it; said, not silent."""
    if not math.isfinite(r.step_latency_total):
        warnings.warn(INFINITE_STEP, RuntimeWarning, stacklevel=stacklevel)
    return r


#: Per keyword of :data:`KEYWORDS`: whether it is a switch (read for its truth), and the positions of the
#: numbers among them, of the splits and of ``seq_len``.
_FLAGS = tuple(k in FLAG_KEYWORDS for k in KEYWORDS)
_numbers = operator.itemgetter(*(i for i, f in enumerate(_FLAGS) if not f))
_INDEX = {k: i for i, k in enumerate(KEYWORDS)}
_TP, _PP, _EP, _CP, _ETP = (_INDEX[k] for k in ("tp_size", "pp_size", "ep_size", "cp_size", "etp_size"))
_N_OUTPUTS = len(OUTPUTS)

_BOUND: Dict[tuple, tuple] = {}


def _bound(w: Workload, f: Fleet, key: str, choice: ModelChoice):
    """:func:`_bind`, memoized on the identity of the records (hashing nested frozen records costs
    microseconds a call); the records are kept alive in the entry so that an id is never reused."""
    entry = _BOUND.get((id(w), id(f), key, choice))
    if entry is None or entry[0] is not w or entry[1] is not f:
        if len(_BOUND) > 4096:
            _BOUND.clear()
        entry = _BOUND[(id(w), id(f), key, choice)] = (w, f, _bind(w, f, key, choice))
    return entry[2]


@lru_cache(maxsize=512)
def _bind(w: Workload, f: Fleet, key: str, choice: ModelChoice):
    """Compiled outputs and checks for (workload, fleet, precision, model), with the static part of the argument
    vector filled: ``(template, positions, outputs, first, its rules, seq_len's position where mlsysim may not
    read it, peak fallback, variant, how many arguments the outputs take)``. The vector holds the outputs'
    arguments, then those only the checks read (the extended model's keywords where it prices them as mlsysim
    does); the facts of the precision follow it in the call of the checks."""
    variant, static = static_values(w, f, key)
    variant = variant.of(choice)
    c = compile_quantities(variant, solve_quantities(variant), "math")
    rules = compiled_rules(variant, "solve", c.args)
    names, first = rules.first_named
    raw = names[:-len(FACTS)]
    if raw[:len(c.args)] != tuple(RAW[a].name for a in c.args) or names[-len(FACTS):] != FACT_NAMES:
        raise RuntimeError(f"the checks take their arguments in another order: {names}")
    index = {n: i for i, n in enumerate(raw)}
    template = [static.get(_PARAM_OF[n]) for n in raw]
    kw = keywords()
    positions = tuple(index.get(RAW[kw[k].symbol].name) for k in KEYWORDS)
    seq = None if w.is_transformer else index.get(RAW[kw["seq_len"].symbol].name)
    fallback = facts(w, f, key)["flags"][2]
    return (template, _filling(positions), c.fn, first, rules, seq, fallback, variant, len(c.args),
            _layout(variant))


def _filling(positions) -> tuple:
    """How the keywords fill the argument vector: ``(prefix, rest, switches)``: the first ``prefix`` keywords are
    its first arguments, in order (the parameter table declares the keywords first), ``rest`` the ``(position,
    keyword index)`` of the others the variant reads, ``switches`` the positions read for their truth."""
    prefix = 0
    while prefix < len(positions) and positions[prefix] == prefix:
        prefix += 1
    rest = tuple((i, j) for j, i in enumerate(positions) if i is not None and j >= prefix)
    switches = tuple(i for i, flag in zip(positions, _FLAGS) if i is not None and flag)
    return prefix, rest, switches


#: Raw argument name -> the parameter symbol it sets.
_PARAM_OF = {r.name: s for s, r in RAW.items()}


@lru_cache(maxsize=None)
def _layout(variant: Variant):
    """Where the result's parts sit among :func:`solve_quantities`: ``((step term, index), ...)``, the extended
    model's own outputs ``((field, index), ...)`` (None in mlsysim's model), and whether its CP degree splits
    the replicas."""
    index = {n: i for i, n in enumerate(solve_quantities(variant))}
    m = build_model(variant)
    terms = tuple((n, index[n]) for n in m.step_terms)
    memory = tuple((n, index[n]) for n in m.memory_terms)
    if not variant.choice.extended:
        return terms, None, False, memory
    own = tuple((k, index[n]) for k, n in EXTENDED_OUTPUTS.items() if n in index)
    return terms, own, "cp_size" in variant.choice.splits, memory


def _result(values, a: Arguments, layout, given) -> DistributedResult:
    """The result object of the compiled outputs ``values`` (:func:`solve_quantities` order, ``layout`` of
    :func:`_layout`); ``given``: the keywords as numbers (for the parallel degrees)."""
    (t_dp, t_tp, t_ep, t_comm, t_bub, bf, step, se, thr, mfu, dp, lat, lat_c, lat_m, lat_o, node_thr,
     intensity, energy, mem, peak_f, peak_bw, node_mfu, node_hfu, feasible, mem_bound, ovh_dom, spill) = \
        values[:_N_OUTPUTS]
    feasible = bool(feasible)
    node = NodeProfile(
        float(lat), float(lat_c), float(lat_m), float(lat_o), float(node_thr),
        "Memory" if mem_bound else "Compute", float(intensity), float(energy), float(mem), float(peak_f),
        float(peak_bw), float(node_mfu), float(node_hfu), feasible,
        None if feasible else float(spill), None if feasible else float(peak_bw), bool(ovh_dom))
    parallelism = {"dp": int(dp), "tp": given[_TP], "pp": given[_PP], "ep": given[_EP]}
    if layout[1] is not None:
        # where context parallelism is priced as mlsysim prices it, it is folded into data parallelism
        parallelism["cp"] = given[_CP] if layout[2] else 1
        parallelism["etp"] = given[_ETP]       # the ranks that split each expert's matrices
    return DistributedResult(
        node, float(t_dp), float(t_tp), float(t_ep), float(t_comm), float(t_bub), float(bf), float(step),
        float(se), float(thr), parallelism, float(mfu), values, a, layout)
