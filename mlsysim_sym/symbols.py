r"""Every parameter of the model, declared once, with its metadata beside it.

A :class:`Param` records what a sympy ``Symbol`` means: its unit, a one-line
meaning, its LaTeX (the textbook's notation where the book has a symbol, from
mlsysim's notation registry ``mlsysim.Symbols``) and book macro, and where its
value comes from, as structured fields: the ``solve()`` keyword that sets it
(``argument``, with mlsysim's ``default``), or the record field (``record``,
``field``, with mlsysim's ``fallback`` when the field is absent), or a constant
of mlsysim 0.3.0 (``value``). The Symbol itself carries only sympy assumptions.

Every table that maps names to symbols elsewhere in the package is derived from
:data:`PARAMS` (:func:`by_argument`, :func:`of_kind`, :data:`CONSTANT_VALUES`,
:func:`sensitivity_rows`, ...).

Units are written over four base units: ``s``, ``B`` (byte), ``flop`` and
``W``; counts and ratios are ``1``. Counts are declared ``integer=True``.
Where the values come from, and what mlsysim does with each, is
``docs/contract.md`` §1.

Examples
--------
>>> from mlsysim_sym.symbols import PARAMS, sym, by_argument
>>> sym.tp, PARAMS["tp"].book
(tp, '\\TensorParallelDegree')
>>> by_argument()["fabric_bandwidth"].symbol, PARAMS["BW_fab"].unit
(BW_fab, 'B/s')
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from types import MappingProxyType, SimpleNamespace
from typing import Dict, Mapping, Optional, Tuple, Union

import sympy as sp

from . import notation

Number = Union[int, float]


class Kind(str, Enum):
    """What a parameter is: a count, a 0/1 switch (or the ZeRO stage), a real magnitude, or a constant."""

    COUNT = "count"
    FLAG = "flag"
    REAL = "real"
    CONSTANT = "constant"


@dataclass(frozen=True)
class Range:
    """The values an argument may take: from ``lo`` to ``hi``, each end open or closed.

    ``checked``: ``solve()`` refuses a value outside (mlsysim's check, in its words, or ours); otherwise the
    range only says which values mean something (a congestion factor below 0), for the inverse questions
    (:func:`mlsysim_sym.required`) and the draws of :func:`mlsysim_sym.uncertainty`. The ends are the numbers
    the messages print (``1e-09``, ``1.0``): mlsysim's own.
    """

    lo: Number = -math.inf
    hi: Number = math.inf
    lo_open: bool = False
    hi_open: bool = False
    checked: bool = True

    def __contains__(self, x) -> bool:
        above = x > self.lo if self.lo_open else x >= self.lo
        below = x < self.hi if self.hi_open else x <= self.hi
        return bool(above and below)

    @property
    def bounds(self) -> Tuple[float, float]:
        return float(self.lo), float(self.hi)

    @property
    def text(self) -> str:
        """``">= 1"``, ``"in [1e-09, 1.0]"``, ``"in (0, 1]"``, ``"> 0"``: as the messages say it."""
        if self.hi == math.inf:
            if self.lo == -math.inf:
                return "any real number"
            return f"{'>' if self.lo_open else '>='} {self.lo}"
        return f"in {'(' if self.lo_open else '['}{self.lo}, {self.hi}{')' if self.hi_open else ']'}"


class Origin(str, Enum):
    """Where a parameter's value comes from."""

    SOLVE = "solve"              # a keyword argument of solve()
    PRECISION = "precision"      # solve(precision=) through mlsysim's lowering
    WORKLOAD = "workload"        # a field of the workload record
    ACCELERATOR = "accelerator"  # a field of fleet.node.accelerator
    NODE = "node"                # a field of fleet.node
    FABRIC = "fabric"            # a field of fleet.fabric
    FLEET = "fleet"              # a field of the fleet
    CONSTANT = "constant"        # a constant of mlsysim 0.3.0


@dataclass(frozen=True)
class Param:
    """Metadata of one model symbol (kept beside the Symbol, not inside it).

    * ``argument``: the name a user passes for it (the ``solve()`` keyword, or the
      record field as sweeps and sensitivities call it: ``fabric_bandwidth``), or the
      constant's own name; ``None`` when only ``precision`` sets it.
    * ``origin`` and ``field``: where the value is read (``fleet.fabric.bandwidth``
      is origin ``FABRIC``, field ``bandwidth``); ``fallback`` is mlsysim's value when
      the field is absent (``falsy=True``: also when it is 0, mlsysim's ``x or d``).
    * ``default``: ``solve()``'s default, for keywords.
    * ``value``: for constants, mlsysim 0.3.0's value in SI units.
    * ``rows``: the rows of a sensitivity table it gets: ``"continuous"`` (a
      derivative), ``"knob"`` (exact change at its neighbouring valid values).
    * ``label``: a short name in words, for tables and the command line.
    * ``fidelity``: ``"mlsysim"`` for the parameters of mlsysim 0.3.0's model, ``"extended"`` for the
      keywords and constants only the extended model reads (``docs/extended.md``).
    * ``range``: the values it may take (:class:`Range`; the checks, :func:`mlsysim_sym.required` and
      :func:`mlsysim_sym.uncertainty` read it); by default from the kind and the sign of the symbol.
    * ``short``: its name in a configuration line (``tp``, ``m``, ``ZeRO``); ``option``: its command-line
      option (``--tp``).
    * ``record_default``: for a keyword of the extended model, the workload field whose value (an architecture
      card's) is its default where the call does not set it.
    """

    name: str
    symbol: sp.Symbol
    unit: str
    meaning: str
    latex: str
    kind: Kind
    origin: Origin
    argument: Optional[str] = None
    field: Optional[str] = None
    fallback: Optional[Number] = None
    falsy: bool = False
    default: object = None
    value: Optional[Number] = None
    book: Optional[str] = None
    rows: Tuple[str, ...] = ()
    label: Optional[str] = None
    fidelity: str = "mlsysim"
    range: Optional[Range] = None
    short: Optional[str] = None
    option: Optional[str] = None
    record_default: Optional[str] = None

    def __post_init__(self):
        if self.range is None:
            object.__setattr__(self, "range", _sign_range(self.symbol, self.kind))
        if self.short is None:
            object.__setattr__(self, "short", self.label or self.argument or self.name)
        if self.option is None and self.argument is not None and self.kind is not Kind.CONSTANT:
            object.__setattr__(self, "option", "--" + self.argument.replace("_", "-"))

    @property
    def words(self) -> str:
        """A short name in words for tables (``"fabric bandwidth"``), else the meaning."""
        return self.label or self.meaning

    @property
    def text(self) -> str:
        """Its symbol as plain text for a terminal (``"β_fab"``), from its LaTeX."""
        return notation.plain(self.latex)

    @property
    def source(self) -> str:
        """Where the value comes from, in words."""
        if self.origin is Origin.SOLVE:
            return f"solve({self.argument}=)"
        if self.origin is Origin.CONSTANT:
            if self.fidelity == "extended":
                return f"extended-model constant ({self.value:g})"
            return f"mlsysim 0.3.0 constant ({self.value})"
        if self.origin is Origin.PRECISION:
            return "precision (mlsysim's lowering)"
        path = {"workload": "workload", "accelerator": "fleet.node.accelerator", "node": "fleet.node",
                "fabric": "fleet.fabric", "fleet": "fleet"}[self.origin.value]
        if self.field is None:
            return f"{path}, through mlsysim's lowering"
        fb = "" if self.fallback is None else f" (else {self.fallback})"
        return f"{path}.{self.field}{fb}"


def _sign_range(s: sp.Symbol, kind: Kind) -> Range:
    """The range the symbol's assumptions give (whole numbers from 1 for a positive count)."""
    if kind is Kind.CONSTANT:
        return Range(checked=False)
    if kind is Kind.FLAG:              # a switch: any value, read for its truth (0 or 1 in the model)
        return Range(0, 1, checked=False)
    if s.is_positive:
        return Range(1, math.inf) if s.is_integer else Range(0, math.inf, lo_open=True)
    if s.is_nonnegative:
        return Range(0, math.inf)
    return Range(checked=False)


PARAMS: Dict[str, Param] = {}
sym = SimpleNamespace()

_ASSUMPTIONS = {
    "count": dict(integer=True, positive=True),
    "count0": dict(integer=True, nonnegative=True),
    "flag": dict(integer=True, nonnegative=True),
    "positive": dict(positive=True),
    "nonnegative": dict(nonnegative=True),
    "real": dict(real=True),
}


def _declare(name, latex, unit, meaning, kind, origin, assume, book=None, **fields) -> sp.Symbol:
    if name in PARAMS:
        raise RuntimeError(f"symbol {name!r} declared twice")
    s = notation.symbol(name, **_ASSUMPTIONS[assume])
    notation.declare(name, latex, meaning, unit, "parameter", book)
    PARAMS[name] = Param(name, s, unit, meaning, latex, Kind(kind), Origin(origin), book=book, **fields)
    setattr(sym, name, s)
    return s


def _keyword(name, argument, default, latex, unit, meaning, kind="real", assume="positive", book=None, rows=(),
             label=None, fidelity="mlsysim", **table):
    return _declare(name, latex, unit, meaning, kind, "solve", assume, book, argument=argument, default=default,
                    rows=rows, label=label, fidelity=fidelity, **table)


def _field(name, origin, field, latex, unit, meaning, kind="real", assume="positive", book=None, argument=None,
           fallback=None, falsy=False, rows=(), label=None, **table):
    return _declare(name, latex, unit, meaning, kind, origin, assume, book, argument=argument or field, field=field,
                    fallback=fallback, falsy=falsy, rows=rows, label=label, **table)


def _const(name, latex, unit, meaning, value, book=None, fidelity="mlsysim", label=None):
    return _declare(name, latex, unit, meaning, "constant", "constant", "positive", book, argument=name, value=value,
                    fidelity=fidelity, label=label, short=name)


T = r"\text"
C, K, CK = ("continuous",), ("knob",), ("continuous", "knob")

# ----------------------------------------------------------------------------------
# solve() keyword arguments (docs/contract.md §1.1), in solve()'s order; ``range``: the values mlsysim's
# checks accept (its messages print these ends); ``short``: the name in a configuration line
# ----------------------------------------------------------------------------------
_keyword("B", "batch_size", 1, rf"B_{{{T}{{global}}}}", "1", "global batch size, in samples (sequences)",
         "count", "count", r"\GlobalBatchSize", K, label="global batch size", short="batch", option="--batch-size")
_keyword("eta", "efficiency", 0.5, rf"\eta_{{{T}{{hw}}}}", "1", "achieved fraction of peak FLOP/s",
         book=r"\EfficiencyHw", rows=C, label="achieved efficiency", range=Range(1e-9, 1.0), short="efficiency")
_keyword("tp", "tp_size", 1, rf"N_{{{T}{{TP}}}}", "1", "tensor-parallel degree", "count", "count",
         r"\TensorParallelDegree", K, label="tensor-parallel degree", short="tp", option="--tp")
_keyword("pp", "pp_size", 1, rf"N_{{{T}{{PP}}}}", "1", "pipeline-parallel degree", "count", "count",
         r"\PipelineParallelDegree", K, label="pipeline-parallel degree", short="pp", option="--pp")
_keyword("ep", "ep_size", 1, rf"N_{{{T}{{EP}}}}", "1", "expert-parallel degree", "count", "count", rows=K,
         label="expert-parallel degree", short="ep", option="--ep")
_keyword("v", "v_stages", 1, "V", "1", "virtual pipeline stages per device (interleaving)", "count", "count",
         r"\VirtualPipelineStagesPerDevice", K, label="virtual stages per device", short="v")
_keyword("m", "microbatch_count", 1, "m", "1", "microbatches per pipelined step", "count", "count",
         r"\MicrobatchCount", K, label="microbatches", short="m", option="--microbatches")
_keyword("z", "zero_stage", 0, rf"z_{{{T}{{ZeRO}}}}", "1", "ZeRO stage (0, 1, 2 or 3)", "flag", "flag", rows=K,
         label="ZeRO stage", range=Range(0, 3), short="ZeRO")
_keyword("lora", "is_lora", False, rf"\chi_{{{T}{{LoRA}}}}", "1", "1 when fine-tuning with LoRA adapters, else 0",
         "flag", "flag", label="LoRA", short="LoRA", option="--lora")
_keyword("rc", "activation_recomputation", False, rf"\chi_{{{T}{{rc}}}}", "1",
         "1 with full activation recomputation, else 0", "flag", "flag", label="recomputation", short="recompute",
         option="--recompute")
_keyword("ov", "overlap_comm", False, rf"\chi_{{{T}{{ov}}}}", "1",
         "1 when DP communication overlaps the backward pass, else 0", "flag", "flag", label="DP overlap",
         short="overlap", option="--overlap")
_keyword("eta_ov", "overlap_efficiency", 0.85, rf"\eta_{{{T}{{ov}}}}", "1",
         "fraction of the DP communication hidden by overlap (in the extended model, of the TP communication too, "
         "with tp_comm_overlap)", assume="nonnegative", rows=C, label="overlap efficiency",
         range=Range(0.0, 1.0), short="overlap efficiency")
# mlsysim does not validate these two: any real number goes (the range says what means something)
_keyword("c", "congestion_factor", 1.0, rf"c_{{{T}{{cong}}}}", "1",
         "congestion multiplier on DP, TP and EP communication", assume="real", rows=C, label="congestion factor",
         range=Range(0, math.inf, checked=False), short="congestion", option="--congestion")
_keyword("f_s", "straggler_factor", 1.0, rf"f_{{{T}{{strag}}}}", "1",
         "straggler multiplier on the step (applies only above 1)", assume="real", rows=C, label="straggler factor",
         range=Range(0, math.inf, checked=False), short="straggler", option="--straggler")
_keyword("iota", "moe_routing_imbalance_factor", 1.0, r"\iota", "1",
         "MoE routing imbalance multiplier on the all-to-all volume", rows=C, label="MoE routing imbalance",
         range=Range(1.0, math.inf), short="MoE imbalance", option="--moe-imbalance")
_keyword("GA", "gradient_accumulation_steps", 1, "k", "1", "gradient-accumulation steps per optimizer update",
         "count", "count", r"\AccumulationStepCount", K, label="gradient accumulation", short="GA",
         option="--gradient-accumulation")
# smooth in the model (no floor acts on it): a derivative and exact neighbours
_keyword("s", "seq_len", 2048, "S", "1", "sequence length, tokens per sample", "count", "count0",
         r"\SequenceLength", CK, label="sequence length", range=Range(1, math.inf), short="seq")

# Set by the precision, through mlsysim's lowering (docs/contract.md §1.5)
# ----------------------------------------------------------------------------------
_declare("bpp", rf"s_{{{T}{{elem}}}}", "B", "bytes per element of the training precision", "real", "precision",
         "positive", r"\ElementStorageSize", label="bytes per element", short="bpp")
_field("R_peak", "accelerator", "peak_flops", rf"R_{{{T}{{peak}}}}", "flop/s",
       "peak FLOP/s of one accelerator at the precision (precision_flops[precision], else peak_flops)",
       book=r"\PeakRate", rows=C, label="peak FLOP/s")

# ----------------------------------------------------------------------------------
# Workload fields (docs/contract.md §1.2), after mlsysim's lowering (§2.2)
# ----------------------------------------------------------------------------------
_field("P", "workload", "parameters", "P", "1", "parameter count of the model (all experts)", book=r"\Parameters",
       rows=C, label="parameters")
_field("F", "workload", None, rf"F_{{{T}{{fwd}}}}", "flop",
       "forward FLOPs per token (transformers) or per sample (other workloads), lowered "
       "(inference_flops, else 2 x active or total parameters)", assume="nonnegative", argument="inference_flops",
       rows=C, label="weight FLOPs per token")
_field("L", "workload", "layers", "N_L", "1",
       "layers of the model (0 when the workload has none; the overhead and TP terms use max(1, N_L))",
       "count", "count0", r"\LayerCount", fallback=0, falsy=True, rows=K, label="layers")
_field("H", "workload", "hidden_dim", "d", "1", "hidden dimension", "count", "count", r"\HiddenDimension",
       fallback=4096, falsy=True, rows=C, label="hidden size")
_field("k_e", "workload", "active_experts_per_token", rf"k_{{{T}{{experts}}}}", "1", "experts each token is routed to",
       "count", "count", r"\RoutedExpertCount", fallback=1, falsy=True, label="experts per token")
_field("W_lw", "workload", None, rf"W_{{{T}{{lowered}}}}", "B",
       "weight bytes of the lowered graph (set when they are not parameters x element size)",
       argument="weight_bytes", rows=C, label="weight bytes")
_field("W_g", "workload", None, rf"W_{{{T}{{grad}}}}", "B",
       "weight bytes that size the DP gradient (Workload.size_in_bytes; set like W_lw)", argument="gradient_bytes",
       rows=C, label="gradient bytes")

# ----------------------------------------------------------------------------------
# Fleet, node, fabric, accelerator fields (docs/contract.md §1.3, §1.4)
# ----------------------------------------------------------------------------------
_field("n_nodes", "fleet", "count", rf"N_{{{T}{{nodes}}}}", "1", "nodes in the fleet", "count", "count",
       r"\ClusterNodeCount", rows=K, label="nodes")
_field("apn", "node", "accelerators_per_node", rf"G_{{{T}{{node}}}}", "1", "accelerators per node", "count",
       "count", r"\AcceleratorsPerNode", label="accelerators per node")
_field("BW_intra", "node", "intra_node_bw", rf"\beta_{{{T}{{intra}}}}", "B/s",
       "intra-node (NVLink) bandwidth per direction", rows=C, label="NVLink bandwidth")
_field("alpha_nv", "accelerator", "nvlink_latency", rf"\alpha_{{{T}{{intra}}}}", "s",
       "intra-node (NVLink) message latency", assume="nonnegative", fallback=500e-9, rows=C, label="NVLink latency")
_field("BW_fab", "fabric", "bandwidth", rf"\text{{BW}}_{{{T}{{inject}}}}", "B/s", "fabric (NIC) bandwidth per accelerator",
       book=r"\InjectionBandwidth", argument="fabric_bandwidth", rows=C, label="fabric bandwidth")
_field("osr", "fabric", "oversubscription_ratio", "R", "1", "fabric oversubscription ratio",
       book=r"\OversubscriptionRatio", rows=C, label="oversubscription")
_field("alpha_fab", "fabric", "latency", rf"\alpha_{{{T}{{fab}}}}", "s", "fabric message latency",
       argument="fabric_latency", assume="nonnegative", fallback=5e-6, rows=C, label="fabric latency")
_field("CAP", "accelerator", "memory_capacity", rf"M_{{{T}{{device}}}}", "B", "HBM capacity of one accelerator",
       book=r"\DeviceMemoryCapacity", rows=C, label="HBM capacity")
_field("BW_hbm", "accelerator", "memory_bandwidth", rf"\text{{BW}}_{{{T}{{accelerator}}}}", "B/s",
       "HBM bandwidth of one accelerator", book=r"\AcceleratorMemoryBandwidth", rows=C, label="HBM bandwidth")
_field("BW_pcie", "accelerator", "pcie_bandwidth", rf"\text{{BW}}_{{{T}{{PCIe}}}}", "B/s",
       "host link bandwidth per direction (offload)", fallback=64e9, rows=C, label="PCIe bandwidth")
_field("tau_d", "accelerator", "dispatch_tax", rf"t_{{{T}{{dispatch}}}}", "s", "dispatch overhead per step",
       assume="nonnegative", book=r"\OperationDispatchOverhead", rows=C, label="dispatch overhead")
_field("TDP", "accelerator", "tdp", rf"P_{{{T}{{thermal}}}}", "W", "thermal design power of one accelerator (0 when unknown)",
       book=r"\ThermalPowerLimit", assume="nonnegative", fallback=0.0, rows=C, label="TDP")
_field("CAP_sram", "accelerator", "sram_capacity", rf"M_{{{T}{{on-chip}}}}", "B",
       "on-chip SRAM capacity (Engine path only)", rows=C, label="SRAM capacity")
_field("BW_sram", "accelerator", "sram_bandwidth", rf"\text{{BW}}_{{{T}{{SRAM}}}}", "B/s",
       "on-chip SRAM bandwidth (Engine path only)", rows=C, label="SRAM bandwidth")
_field("BW_flash", "accelerator", "flash_bandwidth", rf"\text{{BW}}_{{{T}{{flash}}}}", "B/s",
       "flash bandwidth (Engine path only)", rows=C, label="flash bandwidth")

# ----------------------------------------------------------------------------------
# Constants of mlsysim 0.3.0 (docs/contract.md §2.0), SI values
# ----------------------------------------------------------------------------------
_const("ADAM", rf"b_{{{T}{{opt}}}}", "B", "optimizer-state bytes per trainable parameter (Adam)", 12.0,
       label="optimizer bytes per parameter")
_const("TAX", rf"t_{{{T}{{layer}}}}", "s", "framework tax per layer per kernel launch", 1e-5,
       label="framework tax per layer")
_const("E_idle", rf"e_{{{T}{{idle}}}}", "1", "idle share of TDP drawn during a step", 0.3, label="idle power share")
_const("E_dyn", rf"e_{{{T}{{dyn}}}}", "1", "dynamic share of TDP, scaled by HFU", 0.7, label="dynamic power share")
_const("alpha_h", rf"\alpha_{{{T}{{hier}}}}", "s",
       "intra-node latency of the hierarchical all-reduce (its default, never overridden)", 5e-7,
       label="hierarchical all-reduce latency")
_const("r_lora", "r", "1", "LoRA rank used for the trainable fraction", 16, r"\AdapterRank", label="LoRA rank")
_const("n_ar", rf"n_{{{T}{{AR}}}}", "1", "TP all-reduces per layer per training step (2 fwd + 2 bwd)", 4,
       label="TP all-reduces per layer")
_const("K_sel", rf"K_{{{T}{{sel}}}}", "1",
       "Korthikanti coefficient, selective recompute: activation bytes per token, hidden unit and layer "
       "at a 2-byte precision (the model scales it by s_elem / 2 B)", 34, label="activation coefficient (selective)")
_const("K_full", rf"K_{{{T}{{full}}}}", "1",
       "Korthikanti coefficient, full recompute: activation bytes per token, hidden unit and layer "
       "at a 2-byte precision (the model scales it by s_elem / 2 B)", 2, label="activation coefficient (full)")
_const("f_buf", rf"f_{{{T}{{buf}}}}", "1", "gradient-bucket buffer as a fraction of gradient memory", 0.05,
       label="gradient-buffer fraction")
_const("f_lora", rf"f_{{{T}{{LoRA}}}}", "1", "DP gradient volume factor under LoRA", 0.01, label="LoRA gradient factor")
_const("f_act", rf"f_{{{T}{{act}}}}", "1", "activation traffic per sample as a fraction of the weights", 0.1,
       label="activation traffic fraction")
_const("f_lora_mem", rf"f_{{{T}{{LoRA,mem}}}}", "1",
       "Engine-path memory of a LoRA run as a multiple of the weights", 1.1, label="LoRA memory multiple")
_const("eps_t", r"\epsilon_{t}", "s", "time below which calc_bottleneck treats a roofline term as zero", 1e-18,
       label="zero-time threshold")
_const("eps_O", r"\epsilon_{O}", "flop", "work below which calc_bottleneck's arithmetic intensity treats it as zero",
       1e-15, label="zero-work threshold")
_const("eps_Q", r"\epsilon_{Q}", "B", "traffic below which calc_bottleneck's arithmetic intensity treats it as zero",
       1e-15, label="zero-traffic threshold")

# ----------------------------------------------------------------------------------
# The extended model only (DistributedModel(fidelity="extended"); docs/extended.md)
# ----------------------------------------------------------------------------------
_EXT = "extended"
_keyword("cp", "cp_size", 1, "c", "1", "context-parallel degree (ranks that split each sequence)",
         "count", "count", r"\ContextParallelDegree", K, label="context-parallel degree", fidelity=_EXT, short="cp",
         option="--cp")
_keyword("sp", "sequence_parallel", False, rf"\chi_{{{T}{{SP}}}}", "1",
         "1 with sequence parallelism (TP all-reduces as reduce-scatter + all-gather), else 0", "flag", "flag",
         label="sequence parallelism", fidelity=_EXT, short="SP")
_keyword("tov", "tp_comm_overlap", False, rf"\chi_{{{T}{{TP-ov}}}}", "1",
         "1 when TP communication overlaps the GEMMs, else 0", "flag", "flag", label="TP overlap", fidelity=_EXT,
         short="TP overlap", option="--tp-overlap")
_keyword("kvf", "kv_fraction", 1.0, rf"r_{{{T}{{KV}}}}", "1",
         "width of the keys and values as a fraction of d (H_KV d_head / d: 1 for multi-head attention; with latent "
         "attention the up-projected heads', N_heads (d_head + d_rope + d_v) / (2 d), above 1 for DeepSeek-V3; an "
         "architecture card's own, or that of the heads a record lists, where the call does not set it)",
         rows=C, label="K/V width over d", fidelity=_EXT, range=Range(0, math.inf, lo_open=True),
         short="KV fraction", record_default="kv_fraction")
_keyword("etp", "etp_size", 1, rf"N_{{{T}{{ETP}}}}", "1",
         "expert tensor-parallel degree (ranks that split each expert's matrices; Megatron-Core's "
         "expert_tensor_parallel_size)", "count", "count", rows=K, label="expert tensor-parallel degree",
         fidelity=_EXT, short="etp", option="--etp")
_keyword("fov", "fsdp_overlap", False, rf"\chi_{{{T}{{FSDP-ov}}}}", "1",
         "1 when ZeRO-3 / FSDP prefetches the next layer's weights during the current layer's compute and "
         "overlaps the gradient ReduceScatter with the backward pass, else 0", "flag", "flag",
         label="FSDP overlap", fidelity=_EXT, short="FSDP overlap", option="--fsdp-overlap")
_keyword("cov", "cp_overlap", False, rf"\chi_{{{T}{{CP-ov}}}}", "1",
         "1 when context parallelism passes the keys and values around a ring overlapped with the attention "
         "compute (ring attention), else 0 (the all-gather form)", "flag", "flag", label="CP overlap",
         fidelity=_EXT, short="CP overlap", option="--cp-overlap")
# ---- issue 24: the per-layer overlap schedule ---- begin
_keyword("lov", "layer_overlap", False, rf"\chi_{{{T}{{layer-ov}}}}", "1",
         "1 when the gradient AllReduce is overlapped layer by layer with the backward pass (the Collective "
         "Communication chapter's per-layer schedule) in place of the fixed share overlap_efficiency, under "
         "overlap_comm, else 0", "flag", "flag", label="per-layer overlap", fidelity=_EXT, short="layer overlap",
         option="--layer-overlap")
# ---- issue 24: the per-layer overlap schedule ---- end
_keyword("eta_att", "attention_efficiency", 0.4, rf"\eta_{{{T}{{att}}}}", "1",
         "share of the GEMMs' achieved efficiency that the attention kernels of the training stack reach (fitted "
         "per framework in docs/modern_runs.md: the default is Megatron-Core's)", rows=C,
         label="attention kernel efficiency", fidelity=_EXT, range=Range(1e-9, 1.0), short="attention efficiency",
         option="--attention-efficiency")
_keyword("epov", "ep_overlap", False, rf"\chi_{{{T}{{EP-ov}}}}", "1",
         "1 when each microbatch's MoE all-to-alls run beside another microbatch's compute (Megatron-Core's "
         "EP all-to-all overlap), else 0", "flag", "flag", label="EP overlap", fidelity=_EXT,
         short="EP overlap", option="--ep-overlap")
_keyword("fdis", "fused_dispatch", False, rf"\chi_{{{T}{{fused}}}}", "1",
         "1 when the MoE token dispatcher permutes the tokens inside its all-to-all kernels (Megatron-Core's flex "
         "dispatcher on DeepEP or HybridEP), else 0 (the all-to-all and all-gather dispatchers permute them in "
         "kernels of their own)", "flag", "flag", label="fused dispatch", fidelity=_EXT, short="fused dispatch",
         option="--fused-dispatch")
_declare("R_16", rf"R_{{{T}{{peak,16}}}}", "flop/s",
         "peak FLOP/s of one accelerator at a 16-bit precision (precision_flops['bf16'], else peak_flops)", "real",
         "accelerator", "positive", label="16-bit peak FLOP/s", fidelity=_EXT)
# what an architecture card gives the extended model (mlsysim_sym.architecture; 0 for a record without a card)
_field("A_full", "workload", "attention_flops", rf"C_{{{T}{{att}}}}", "flop",
       "forward attention FLOPs per token per key attended, summed over the layers without a window "
       "(2 N_heads (d_qk + d_v) per layer)", assume="nonnegative", fallback=0.0, label="attention FLOPs per key",
       fidelity=_EXT)
_field("A_win", "workload", "window_attention_flops", rf"C_{{{T}{{att,win}}}}", "flop",
       "forward attention FLOPs per token per key attended, summed over the layers with a sliding window",
       assume="nonnegative", fallback=0.0, label="windowed attention FLOPs per key", fidelity=_EXT)
_field("w_att", "workload", "attention_window", rf"w_{{{T}{{att}}}}", "1", "sliding attention window, in tokens",
       "count", "count0", fallback=0, label="attention window", fidelity=_EXT)
_field("chi_causal", "workload", "causal", rf"\chi_{{{T}{{causal}}}}", "1",
       "1 when a token attends only to the tokens before it, else 0", "count", "count0", fallback=1,
       label="causal attention", fidelity=_EXT, range=Range(0, 1))
_field("K_card", "workload", "activation_values", rf"K_{{{T}{{sel,card}}}}", "1",
       "activation bytes (two a value) a layer keeps per token and hidden unit with selective recomputation, from "
       "an architecture card (34, Korthikanti's, for a record without one)", fallback=34.0,
       label="activation bytes per token and hidden unit", fidelity=_EXT)
_field("P_exp", "workload", "expert_parameters", rf"P_{{{T}{{exp}}}}", "1",
       "parameters of the routed experts of every MoE layer (an architecture card's; 0 for a record without one)",
       assume="nonnegative", fallback=0.0, label="routed-expert parameters", fidelity=_EXT, rows=C)
_field("E_exp", "workload", "experts", rf"E_{{{T}{{routed}}}}", "1",
       "routed experts of each MoE layer (an architecture card's; 0 for a record without one)", "count", "count0",
       fallback=0, label="routed experts", fidelity=_EXT)
_field("H_q", "workload", "attention_heads", rf"N_{{{T}{{heads}}}}", "1",
       "attention (query) heads of each layer (an architecture card's, or those a record lists; 0 for a record "
       "without them): tensor parallelism splits them", "count", "count0", r"\AttentionHeadCount", fallback=0, label="attention heads",
       fidelity=_EXT)
_field("H_kv", "workload", "kv_heads", rf"H_{{{T}{{KV}}}}", "1",
       "key/value heads (query groups) of each layer, the attention heads under latent attention (an architecture "
       "card's, or those a record lists; 0 for a record without heads)", "count", "count0", r"\KvHeadCount", fallback=0, label="key/value heads",
       fidelity=_EXT)
_field("d_exp", "workload", "expert_ffn", rf"d_{{{T}{{ff,e}}}}", "1",
       "width of one routed expert's MLP (an architecture card's; 0 for a record without one): expert tensor "
       "parallelism splits it", "count", "count0", fallback=0, label="expert MLP width", fidelity=_EXT)
_field("F_head", "workload", "output_flops", rf"F_{{{T}{{head}}}}", "flop",
       "forward FLOPs per token of the output layer, 2 V d (an architecture card's; 0 for a record without one)",
       assume="nonnegative", fallback=0.0, label="output-layer FLOPs per token", fidelity=_EXT)
_const("d_half", r"x_{1/2}", "1", "hidden size at which the GEMM-shape efficiency is one half (fitted)",
       1152.0, fidelity=_EXT, label="GEMM half-efficiency width")
_const("s_16", rf"s_{{{T}{{16}}}}", "B", "bytes of a 16-bit element (what FP8 training keeps its tensors in)", 2.0,
       fidelity=_EXT, label="16-bit element bytes")
_const("eta_8", rf"\eta_{{{T}{{FP8}}}}", "1",
       "share of the FP8 peak that FP8 GEMMs reach, relative to the share of the 16-bit peak 16-bit GEMMs reach "
       "(fitted: docs/modern_runs.md)", 0.98, fidelity=_EXT, label="FP8 GEMM efficiency ratio")
_const("k_pass", rf"k_{{{T}{{pass}}}}", "1",
       "fixed cost of a layer's pass per forward-pass equivalent of a microbatch (a training pass counts 3, 4 "
       "recomputed), in framework taxes t_layer (fitted: docs/modern_runs.md)", 70.0, fidelity=_EXT,
       label="fixed cost of a layer pass")
_const("eta_epov", rf"\eta_{{{T}{{EP-ov}}}}", "1",
       "share of a replica's compute beside which its microbatches' MoE all-to-alls can run under ep_overlap (each "
       "all-to-all of one microbatch runs beside one compute chunk of another: Megatron-Core's combined 1F1B "
       "schedule) (fitted: docs/modern_runs.md)", 0.6, fidelity=_EXT, label="EP overlap share")
_const("n_a2a", rf"n_{{{T}{{A2A}}}}", "1",
       "MoE all-to-alls per MoE layer per training step (dispatch and combine, forward and backward)", 4,
       fidelity=_EXT, label="MoE all-to-alls per layer")
_const("b_perm", rf"b_{{{T}{{perm}}}}", "1",
       "HBM bytes the permutation kernels around the MoE all-to-alls move per byte of a rank's routed tokens: "
       "permute, sort by local expert, unsort and unpermute each read and write every routed token once, 8 "
       "accesses over a pass's 2 all-to-alls (Megatron-Core's all-to-all dispatcher)", 4.0, fidelity=_EXT,
       label="permutation bytes per byte")
_const("b_upd", rf"b_{{{T}{{update}}}}", "B",
       "HBM bytes the Adam update moves per trainable parameter (read fp32 weight, gradient, two moments; "
       "write weight, two moments, 2-byte copy)", 30.0, fidelity=_EXT, label="update bytes per parameter")

# ----------------------------------------------------------------------------------
# Tables derived from PARAMS (never typed again elsewhere)
# ----------------------------------------------------------------------------------
#: Symbol -> Param, for lookups from expressions.
BY_SYMBOL: Dict[sp.Symbol, Param] = {p.symbol: p for p in PARAMS.values()}

#: The 0/1 switches and the ZeRO stage (kind FLAG), as symbols.
FLAGS: Tuple[sp.Symbol, ...] = tuple(p.symbol for p in PARAMS.values() if p.kind is Kind.FLAG)

#: Symbol -> mlsysim 0.3.0's value, for the constants.
CONSTANT_VALUES: Dict[sp.Symbol, Number] = {p.symbol: p.value for p in PARAMS.values() if p.kind is Kind.CONSTANT}


@lru_cache(maxsize=None)
def of_kind(*kinds: Kind) -> Tuple[Param, ...]:
    """The parameters of the given kinds, in declaration order."""
    return tuple(p for p in PARAMS.values() if p.kind in kinds)


@lru_cache(maxsize=None)
def of_origin(*origins: Origin) -> Tuple[Param, ...]:
    """The parameters whose value comes from the given origins, in declaration order."""
    return tuple(p for p in PARAMS.values() if p.origin in origins)


@lru_cache(maxsize=1)
def _by_argument() -> Mapping[str, Param]:
    return MappingProxyType({p.argument: p for p in PARAMS.values() if p.argument is not None})


def by_argument() -> Mapping[str, Param]:
    """Argument name (``solve()`` keyword, record field, constant name) -> its parameter (a read-only mapping)."""
    return _by_argument()


@lru_cache(maxsize=1)
def _keywords() -> Mapping[str, Param]:
    return MappingProxyType({p.argument: p for p in of_origin(Origin.SOLVE)})


def keywords() -> Mapping[str, Param]:
    """``solve()`` keyword -> the parameter it sets, in ``solve()``'s order (``precision`` aside): mlsysim's,
    then the extended model's (``Param.fidelity``), which mlsysim's model takes at their neutral defaults only (a
    read-only mapping)."""
    return _keywords()


def sensitivity_rows(role: str) -> Dict[str, sp.Symbol]:
    """Argument name -> symbol of the parameters with sensitivity rows of ``role``
    (``"continuous"`` or ``"knob"``)."""
    return {p.argument: p.symbol for p in PARAMS.values() if role in p.rows}
