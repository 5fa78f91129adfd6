"""From records and ``solve()`` arguments to parameter values (mlsysim's lowering).

This is input preparation, not physics: the precision's byte width and peak
FLOP/s, mlsysim's fallbacks for missing fields (contract §1.3-§1.5, §2.2), and
the :class:`~mlsysim_sym.model.Variant` that the workload and accelerator
select. Every formula of the step lives in the model's expressions.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Dict, Tuple

import sympy as sp

from .model import Variant
from .symbols import CONSTANTS, sym
from .types import Fleet, Workload

#: Storage bytes per element (``mlsysim.core.units.PRECISION_MAP``).
PRECISION_BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5}

#: mlsysim 0.3.0's fallbacks for absent fields (SI).
FALLBACK_PCIE_BANDWIDTH = 64e9       # cal.FALLBACK_PCIE_BANDWIDTH_GB_S
FALLBACK_NVLINK_LATENCY = 500e-9     # Tech.Interconnect.NVLink.latency
FALLBACK_FABRIC_LATENCY = 5e-6       # Systems.Fabrics.InfiniBand_NDR.latency
FALLBACK_HIDDEN_DIM = 4096


def resolve_precision(precision) -> Tuple[str, float]:
    """``(key, bytes)`` exactly as mlsysim's ``resolve_precision`` (same errors)."""
    if not isinstance(precision, str):
        raise TypeError(f"precision must be a string, got {type(precision).__name__}")
    key = precision.lower()
    if key not in PRECISION_BYTES:
        supported = ", ".join(sorted(PRECISION_BYTES))
        raise ValueError(f"precision '{precision}' is not supported. Supported precision values: {supported}")
    return key, PRECISION_BYTES[key]


def size_in_bytes(w: Workload, bpp) -> float:
    """``Workload.size_in_bytes``: ``model_size`` at 2-byte precisions when set, else ``P * bpp``."""
    if w.model_size is not None and bpp == 2:
        return w.model_size
    if w.parameters is not None:
        return w.parameters * bpp
    if w.model_size is not None:
        return w.model_size
    raise NotImplementedError("Workload must define either parameters or model_size to calculate size in bytes.")


def lowered(w: Workload, bpp) -> Tuple[float, float]:
    """``(forward flop per token or sample, weight bytes)`` of ``Workload.lower`` (contract §2.2)."""
    P = w.parameters
    if w.is_transformer and P is None:
        size_in_bytes(w, bpp)       # mlsysim's error for a workload without parameters or size
    if w.kind == "workload" and P is None and w.model_size is not None:
        return (w.inference_flops or 0), w.model_size
    if P is None:
        raise NotImplementedError(f"{_class_name(w)} has no 'parameters'; override lower() or set parameters.")
    if w.kind == "sparse_transformer":
        ops = w.inference_flops or 2 * w.active_parameters
    elif w.kind == "cnn":
        ops = w.inference_flops
        if ops is None:
            raise NotImplementedError(f"workload {w.name!r}: a CNN workload needs inference_flops (it is None)")
    elif w.kind == "diffusion":
        ops = (w.inference_flops or 2 * P) * w.denoising_steps
    else:
        ops = w.inference_flops or 2 * P
    weights = P * bpp if w.kind == "workload" else size_in_bytes(w, bpp)
    return ops, weights


def _class_name(w: Workload) -> str:
    return {"transformer": "TransformerWorkload", "sparse_transformer": "SparseTransformerWorkload",
            "cnn": "CNNWorkload", "ssm": "SSMWorkload", "embodied": "EmbodiedWorkload",
            "diffusion": "DiffusionWorkload", "workload": "Workload"}[w.kind]


#: ``solve()`` keyword -> parameter symbol, for the arguments that enter the expressions as numbers.
#: (``precision`` enters through ``bpp`` and ``R``; ``topology_override`` is never read.)
RUN_SYMBOLS = {
    "batch_size": sym.B, "efficiency": sym.eta, "tp_size": sym.tp, "pp_size": sym.pp, "ep_size": sym.ep,
    "v_stages": sym.v, "microbatch_count": sym.m, "zero_stage": sym.z, "is_lora": sym.lora,
    "activation_recomputation": sym.rc, "overlap_comm": sym.ov, "overlap_efficiency": sym.eta_ov,
    "congestion_factor": sym.c, "straggler_factor": sym.f_s,
    "moe_routing_imbalance_factor": sym.iota, "gradient_accumulation_steps": sym.GA, "seq_len": sym.s,
}
#: The flags mlsysim tests for truthiness; they enter the model as 0/1.
FLAGS = ("is_lora", "activation_recomputation", "overlap_comm")

#: Workload and hardware field names accepted wherever a parameter may be overridden (sweeps,
#: sensitivities), with the symbol each one sets. Symbol names (``"BW_fab"``) are accepted too.
FIELD_SYMBOLS = {
    "parameters": sym.P, "inference_flops": sym.F, "layers": sym.L, "hidden_dim": sym.H,
    "active_experts_per_token": sym.k_e,
    "count": sym.n_nodes, "accelerators_per_node": sym.apn, "intra_node_bw": sym.BW_intra,
    "nvlink_latency": sym.alpha_nv, "fabric_bandwidth": sym.BW_fab, "oversubscription_ratio": sym.osr,
    "fabric_latency": sym.alpha_fab, "memory_capacity": sym.CAP, "memory_bandwidth": sym.BW_hbm,
    "pcie_bandwidth": sym.BW_pcie, "dispatch_tax": sym.tau_d, "tdp": sym.TDP, "peak_flops": sym.R,
    "sram_capacity": sym.CAP_sram, "sram_bandwidth": sym.BW_sram, "flash_bandwidth": sym.BW_flash,
}


def run_values(**kwargs) -> Dict[sp.Symbol, object]:
    """``solve()`` keyword values -> ``{Symbol: value}`` (flags as 0/1)."""
    out = {}
    for name, value in kwargs.items():
        if name in FLAGS:
            value = 1 if value else 0
        out[RUN_SYMBOLS[name]] = value
    return out


@lru_cache(maxsize=512)
def static_values(w: Workload, f: Fleet, key: str) -> Tuple[Variant, Dict[sp.Symbol, object]]:
    """The variant, and the values of every parameter fixed by workload, fleet and precision."""
    bpp = PRECISION_BYTES[key]
    acc = f.node.accelerator
    ops, W = lowered(w, bpp)
    W_grad = size_in_bytes(w, bpp)
    P = w.parameters
    explicit = P is None or W != P * bpp or W_grad != P * bpp
    generic = not w.is_transformer
    variant = Variant(
        family="generic" if generic else "transformer",
        explicit_weights=explicit,
        sram=generic and acc.sram_capacity is not None and acc.sram_bandwidth is not None,
        flash=generic and acc.flash_bandwidth is not None,
    )
    peak = acc.flops_for(key)
    S = sym
    values: Dict[sp.Symbol, object] = dict(CONSTANTS)
    values.update({
        S.bpp: bpp, S.R: acc.peak_flops if peak is None else peak,
        S.P: P, S.F: ops, S.W_lw: W, S.W_g: W_grad,
        S.L: w.layers or 0, S.H: w.hidden_dim or FALLBACK_HIDDEN_DIM, S.k_e: w.active_experts_per_token or 1,
        S.n_nodes: f.count, S.apn: f.node.accelerators_per_node,
        S.BW_intra: f.node.intra_node_bw,
        S.alpha_nv: FALLBACK_NVLINK_LATENCY if acc.nvlink_latency is None else acc.nvlink_latency,
        S.BW_fab: f.fabric.bandwidth, S.osr: f.fabric.oversubscription_ratio,
        S.alpha_fab: FALLBACK_FABRIC_LATENCY if f.fabric.latency is None else f.fabric.latency,
        S.CAP: acc.memory_capacity, S.BW_hbm: acc.memory_bandwidth,
        S.BW_pcie: FALLBACK_PCIE_BANDWIDTH if acc.pcie_bandwidth is None else acc.pcie_bandwidth,
        S.tau_d: acc.dispatch_tax, S.TDP: 0.0 if acc.tdp is None else acc.tdp,
        S.CAP_sram: acc.sram_capacity, S.BW_sram: acc.sram_bandwidth, S.BW_flash: acc.flash_bandwidth,
    })
    return variant, values


def parameter_values(w: Workload, f: Fleet, key: str, **kwargs) -> Tuple[Variant, Dict[sp.Symbol, object]]:
    """The variant and the value of every parameter symbol for one ``solve()`` call.

    ``kwargs`` are ``solve()`` keywords (any subset of :data:`RUN_SYMBOLS`).
    """
    variant, values = static_values(w, f, key)
    values = dict(values)
    values.update(run_values(**kwargs))
    return variant, values
