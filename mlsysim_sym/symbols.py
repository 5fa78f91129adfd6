r"""Every symbol of the model, declared once, with its metadata beside it.

A :class:`Param` records what a sympy ``Symbol`` means: its unit, a one-line
meaning, its LaTeX (the textbook's notation where the book has a symbol, from
mlsysim's notation registry ``mlsysim.Symbols``), the book macro, and where its
value comes from (a ``solve()`` keyword, a workload or hardware field, or a
constant of mlsysim 0.3.0). The Symbol itself carries only sympy assumptions.

Units are written over four base units: ``s``, ``B`` (byte), ``flop`` and
``W``; counts and ratios are ``1``. Integer symbols are counts (or 0/1 flags),
declared ``integer=True``.

Examples
--------
>>> from mlsysim_sym.symbols import PARAMS, sym
>>> sym.tp, PARAMS["tp"].book
(tp, '\\TensorParallelDegree')
>>> PARAMS["BW_fab"].unit
'B/s'
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Dict, Optional, Union

import sympy as sp

Number = Union[int, float]


@dataclass(frozen=True)
class Param:
    """Metadata of one model symbol (kept beside the Symbol, not inside it)."""

    name: str
    symbol: sp.Symbol
    unit: str
    meaning: str
    latex: str
    source: str
    kind: str                       # "count", "flag", "real" or "constant"
    book: Optional[str] = None      # the textbook macro, e.g. r"\TensorParallelDegree"
    value: Optional[Number] = None  # constants only: mlsysim 0.3.0's value, in SI


PARAMS: Dict[str, Param] = {}
sym = SimpleNamespace()


def _declare(name, latex, unit, meaning, source, kind="real", book=None, value=None,
             nonnegative=False, real=False):
    if name in PARAMS:
        raise RuntimeError(f"symbol {name!r} declared twice")
    if kind in ("count",):
        assumptions = dict(integer=True, positive=True)
    elif kind == "flag":
        assumptions = dict(integer=True, nonnegative=True)
    elif real:
        assumptions = dict(real=True)
    elif nonnegative:
        assumptions = dict(nonnegative=True)
    else:
        assumptions = dict(positive=True)
    s = sp.Symbol(name, **assumptions)
    PARAMS[name] = Param(name, s, unit, meaning, latex, source, kind, book, value)
    setattr(sym, name, s)
    return s


def _count(name, latex, meaning, source, book=None, nonnegative=False):
    if nonnegative:
        s = sp.Symbol(name, integer=True, nonnegative=True)
        PARAMS[name] = Param(name, s, "1", meaning, latex, source, "count", book)
        setattr(sym, name, s)
        return s
    return _declare(name, latex, "1", meaning, source, "count", book)


def _const(name, latex, unit, meaning, source, value):
    return _declare(name, latex, unit, meaning, source, "constant", value=value)


T = r"\text"

# ----------------------------------------------------------------------------------
# solve() keyword arguments (contract §1.1)
# ----------------------------------------------------------------------------------
_count("B", "B", "global batch size, in samples (sequences)", "solve:batch_size", r"\BatchSize")
_count("tp", rf"N_{{{T}{{TP}}}}", "tensor-parallel degree", "solve:tp_size", r"\TensorParallelDegree")
_count("pp", rf"N_{{{T}{{PP}}}}", "pipeline-parallel degree", "solve:pp_size", r"\PipelineParallelDegree")
_count("ep", rf"N_{{{T}{{EP}}}}", "expert-parallel degree", "solve:ep_size")
_count("v", "V", "virtual pipeline stages per device (interleaving)", "solve:v_stages",
       r"\VirtualPipelineStagesPerDevice")
_count("m", "m", "microbatches per pipelined step", "solve:microbatch_count", r"\MicrobatchCount")
_count("GA", "k", "gradient-accumulation steps per optimizer update",
       "solve:gradient_accumulation_steps", r"\AccumulationStepCount")
_count("s", "S", "sequence length, tokens per sample", "solve:seq_len", r"\SequenceLength",
       nonnegative=True)
_declare("z", rf"z_{{{T}{{ZeRO}}}}", "1", "ZeRO stage (0, 1, 2 or 3)", "solve:zero_stage", "flag")
_declare("lora", rf"\ell_{{{T}{{LoRA}}}}", "1", "1 when fine-tuning with LoRA adapters, else 0",
         "solve:is_lora", "flag")
_declare("rc", rf"r_{{{T}{{rc}}}}", "1", "1 with full activation recomputation, else 0",
         "solve:activation_recomputation", "flag")
_declare("ov", rf"o_{{{T}{{DP}}}}", "1", "1 when DP communication overlaps the backward pass, else 0",
         "solve:overlap_comm", "flag")
_declare("eta", rf"\eta_{{{T}{{hw}}}}", "1", "achieved fraction of peak FLOP/s", "solve:efficiency",
         book=r"\EfficiencyHw")
_declare("eta_ov", rf"\eta_{{{T}{{ov}}}}", "1", "fraction of the DP communication hidden by overlap",
         "solve:overlap_efficiency", nonnegative=True)
_declare("c", rf"c_{{{T}{{cong}}}}", "1", "congestion multiplier on DP, TP and EP communication",
         "solve:congestion_factor", real=True)
_declare("f_s", rf"f_{{{T}{{strag}}}}", "1", "straggler multiplier on the step (applies only above 1)",
         "solve:straggler_factor", real=True)
_declare("iota", r"\iota", "1", "MoE routing imbalance multiplier on the all-to-all volume",
         "solve:moe_routing_imbalance_factor")
_declare("bpp", rf"s_{{{T}{{elem}}}}", "B", "bytes per element of the training precision",
         "solve:precision", book=r"\ElementStorageSize")
_declare("R", rf"R_{{{T}{{peak}}}}", "flop/s", "peak FLOP/s of one accelerator at the precision",
         "accelerator.precision_flops[precision] (else accelerator.peak_flops)", book=r"\PeakRate")

# ----------------------------------------------------------------------------------
# Workload fields (contract §1.2), after mlsysim's lowering (§2.2)
# ----------------------------------------------------------------------------------
_declare("P", "P", "1", "parameter count of the model (all experts)", "workload.parameters",
         book=r"\Parameters")
_declare("F", rf"F_{{{T}{{fwd}}}}", "flop",
         "forward FLOPs per token (transformers) or per sample (other workloads)",
         "workload.inference_flops (else 2 x active or total parameters)", nonnegative=True)
_count("L", "N_L", "layers of the model (0 when the workload has none; the overhead and TP terms use max(1, N_L))",
       "workload.layers (else 0)", r"\LayerCount", nonnegative=True)
_count("H", "d", "hidden dimension", "workload.hidden_dim (else 4096)", r"\HiddenDimension")
_count("k_e", rf"k_{{{T}{{experts}}}}", "experts each token is routed to",
       "workload.active_experts_per_token (else 1)", r"\RoutedExpertCount")
_declare("W_lw", rf"W_{{{T}{{lowered}}}}", "B",
         "weight bytes of the lowered graph (set when they are not parameters x element size)",
         "workload.model_size or parameters x element size")
_declare("W_g", rf"W_{{{T}{{grad}}}}", "B",
         "weight bytes that size the DP gradient (Workload.size_in_bytes; set like W_lw)",
         "workload.model_size or parameters x element size")

# ----------------------------------------------------------------------------------
# Fleet, node, fabric, accelerator fields (contract §1.3, §1.4)
# ----------------------------------------------------------------------------------
_count("n_nodes", rf"N_{{{T}{{nodes}}}}", "nodes in the fleet", "fleet.count", r"\ClusterNodeCount")
_count("apn", rf"G_{{{T}{{node}}}}", "accelerators per node", "fleet.node.accelerators_per_node",
       r"\AcceleratorsPerNode")
_declare("BW_intra", rf"\beta_{{{T}{{intra}}}}", "B/s", "intra-node (NVLink) bandwidth per direction",
         "fleet.node.intra_node_bw")
_declare("alpha_nv", rf"\alpha_{{{T}{{intra}}}}", "s", "intra-node (NVLink) message latency",
         "accelerator.nvlink.latency (else 500 ns)")
_declare("BW_fab", rf"\beta_{{{T}{{fab}}}}", "B/s", "fabric (NIC) bandwidth per accelerator",
         "fleet.fabric.bandwidth")
_declare("osr", "R", "1", "fabric oversubscription ratio",
         "fleet.fabric.oversubscription_ratio", book=r"\OversubscriptionRatio")
_declare("alpha_fab", rf"\alpha_{{{T}{{fab}}}}", "s", "fabric message latency",
         "fleet.fabric.latency (else 5 us)")
_declare("CAP", rf"M_{{{T}{{device}}}}", "B", "HBM capacity of one accelerator",
         "accelerator.memory.capacity", book=r"\DeviceMemoryCapacity")
_declare("BW_hbm", rf"\text{{BW}}_{{{T}{{accelerator}}}}", "B/s", "HBM bandwidth of one accelerator",
         "accelerator.memory.bandwidth", book=r"\AcceleratorMemoryBandwidth")
_declare("BW_pcie", rf"\text{{BW}}_{{{T}{{PCIe}}}}", "B/s", "host link bandwidth per direction (offload)",
         "accelerator.interconnect.bandwidth_per_direction (else 64 GB/s)")
_declare("tau_d", rf"t_{{{T}{{dispatch}}}}", "s", "dispatch overhead per step",
         "accelerator.dispatch_tax", book=r"\OperationDispatchOverhead")
_declare("TDP", rf"P_{{{T}{{TDP}}}}", "W", "thermal design power of one accelerator (0 when unknown)",
         "accelerator.tdp (else 0)", nonnegative=True)
_declare("CAP_sram", rf"M_{{{T}{{SRAM}}}}", "B", "on-chip SRAM capacity (Engine path only)",
         "accelerator.memory.sram_capacity")
_declare("BW_sram", rf"\text{{BW}}_{{{T}{{SRAM}}}}", "B/s", "on-chip SRAM bandwidth (Engine path only)",
         "accelerator.memory.sram_bandwidth")
_declare("BW_flash", rf"\text{{BW}}_{{{T}{{flash}}}}", "B/s", "flash bandwidth (Engine path only)",
         "accelerator.memory.flash_bandwidth")

# ----------------------------------------------------------------------------------
# Constants of mlsysim 0.3.0 (contract §2.0), SI values
# ----------------------------------------------------------------------------------
_const("ADAM", rf"b_{{{T}{{opt}}}}", "B", "optimizer-state bytes per trainable parameter (Adam)",
       "cal.TRAINING_OPTIMIZER_BYTES_ADAM", 12.0)
_const("TAX", rf"t_{{{T}{{layer}}}}", "s", "framework tax per layer per kernel launch",
       "cal.FRAMEWORK_LAYER_TAX_MS", 1e-5)
_const("E_idle", rf"e_{{{T}{{idle}}}}", "1", "idle share of TDP drawn during a step",
       "cal.ENERGY_IDLE_FRACTION", 0.3)
_const("E_dyn", rf"e_{{{T}{{dyn}}}}", "1", "dynamic share of TDP, scaled by HFU",
       "cal.ENERGY_DYNAMIC_FRACTION", 0.7)
_const("alpha_h", rf"\alpha_{{{T}{{hier}}}}", "s",
       "intra-node latency of the hierarchical all-reduce (its default, never overridden)",
       "calc_hierarchical_allreduce_time(intra_node_lat=500 ns)", 5e-7)
_const("r_lora", rf"r_{{{T}{{LoRA}}}}", "1", "LoRA rank used for the trainable fraction",
       "distributed._LORA_RANK", 16)
_const("n_ar", rf"n_{{{T}{{AR}}}}", "1", "TP all-reduces per layer per training step (2 fwd + 2 bwd)",
       "TP_ALLREDUCES_PER_LAYER_TRAINING", 4)
_const("K_sel", rf"K_{{{T}{{sel}}}}", "1",
       "Korthikanti coefficient, selective recompute: activation bytes per token, hidden unit and layer "
       "at a 2-byte precision (the model scales it by s_elem / 2 B)",
       "physics.memory (Korthikanti et al. 2023)", 34)
_const("K_full", rf"K_{{{T}{{full}}}}", "1",
       "Korthikanti coefficient, full recompute: activation bytes per token, hidden unit and layer "
       "at a 2-byte precision (the model scales it by s_elem / 2 B)",
       "physics.memory (Korthikanti et al. 2023)", 2)
_const("f_buf", rf"f_{{{T}{{buf}}}}", "1", "gradient-bucket buffer as a fraction of gradient memory",
       "TrainingMemoryModel communication_buffer_fraction", 0.05)
_const("f_lora", rf"f_{{{T}{{LoRA}}}}", "1", "DP gradient volume factor under LoRA",
       "DistributedModel.solve", 0.01)
_const("f_act", rf"f_{{{T}{{act}}}}", "1", "activation traffic per sample as a fraction of the weights",
       "Engine.solve / _replica_profile heuristic", 0.1)
_const("f_lora_mem", rf"f_{{{T}{{LoRA,mem}}}}", "1",
       "Engine-path memory of a LoRA run as a multiple of the weights", "Engine.solve", 1.1)
_const("eps_t", rf"\epsilon_{{t}}", "s", "time below which calc_bottleneck treats a roofline term as zero",
       "calc_bottleneck (1e-15 ms)", 1e-18)

#: Symbol -> Param, for lookups from expressions.
BY_SYMBOL: Dict[sp.Symbol, Param] = {p.symbol: p for p in PARAMS.values()}

#: Default values of the constants, as a Symbol -> value mapping.
CONSTANTS: Dict[sp.Symbol, Number] = {p.symbol: p.value for p in PARAMS.values() if p.kind == "constant"}


def latex_names() -> Dict[sp.Symbol, str]:
    """Symbol -> LaTeX, for ``sympy.latex(..., symbol_names=...)``."""
    return {p.symbol: p.latex for p in PARAMS.values()}
