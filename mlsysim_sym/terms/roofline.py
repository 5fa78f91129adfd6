"""Roofline of one replica step: compute time, memory time, overhead, utilization.

References
----------
Williams, Waterman & Patterson (2009), "Roofline: an insightful visual
performance model". Chowdhery et al. (2022), "PaLM", appendix B (MFU: model
FLOPs over peak; HFU counts recomputation). mlsysim 0.3.0
``engine/solvers/distributed.py:_replica_profile`` and ``engine/engine.py:Engine.solve``.
"""
from __future__ import annotations

import sympy as sp

from ..symbols import sym
from .base import Iverson, labelled, select


def training_flop_multiplier(rc):
    """FLOPs of a training step in units of the forward pass: 3, or 4 with full recomputation."""
    return select(sp.Eq(rc, 1), 4, 3)


def compute_time(hw_flops, R_eff, G):
    """Executed FLOPs over the replica's achieved rate: ``O_hw / (R_peak * eta * G)``."""
    return hw_flops / (R_eff * G)


def memory_traffic(W, G, lb):
    """Bytes one accelerator streams per step: its weight shard plus 10 % of it per sample."""
    ws = W / G
    return ws + ws * sym.f_act * lb


def effective_bandwidth(fits, extra_tiers=()):
    """HBM bandwidth, or ``min(HBM, PCIe)`` when the state spills to host memory.

    ``extra_tiers`` are ``(bandwidth, condition)`` pairs tried, in order, after
    the spill check (SRAM and flash on mlsysim's Engine path).
    """
    offload = labelled(sp.Min(sym.BW_hbm, sym.BW_pcie),
                       {sym.BW_pcie: "offload at PCIe bandwidth", sym.BW_hbm: "offload at HBM bandwidth"},
                       idle=(fits, None))
    return labelled(sp.Piecewise((offload, sp.Not(fits)), *extra_tiers, (sym.BW_hbm, True)),
                    ("spills to host memory (offload)", *(_TIERS[bw] for bw, _ in extra_tiers), "fits in HBM"))


#: The memory tier a bandwidth stands for (mlsysim's Engine path: SRAM and flash).
_TIERS = {sym.BW_sram: "SRAM tier", sym.BW_flash: "flash tier"}


def overhead(L):
    """Fixed cost per step: dispatch tax plus 3 kernel launches' framework tax per layer."""
    return sym.tau_d + L * sym.TAX * 3


def node_latency(t_comp, t_mem, t_over):
    """Roofline step time of one replica: ``max(T_compute, T_memory) + T_overhead``."""
    return labelled(sp.Max(t_comp, t_mem), {t_comp: "compute-bound", t_mem: "memory-bound"}) + t_over


def utilization(flops, T, R, G):
    """FLOPs over the replica's peak time: ``O / (T * R_peak * G)`` (MFU with model FLOPs, HFU with executed)."""
    return flops / T / (R * G)


def energy(hfu, G, T):
    """``TDP * (0.3 + 0.7 HFU) * G * T``: idle floor plus dynamic share."""
    return sym.TDP * (sym.E_idle + sym.E_dyn * hfu) * G * T


def arithmetic_intensity(ops, traffic):
    """``calc_bottleneck``'s arithmetic intensity of ``ops`` FLOPs over ``traffic`` bytes, its 1e-15 guards
    included: with no traffic, infinite (or 0 with no work either); with no work, 0; else ``ops / traffic``.
    (Weight bytes of exactly 0 never get here: mlsysim's ``Workload.lower`` divides by them first, and
    :func:`mlsysim_sym.inputs.lowered` raises its ``ZeroDivisionError`` in that place.)"""
    eps_o, eps_q = sym.eps_O, sym.eps_Q
    return sp.Piecewise((sp.Piecewise((sp.oo, ops >= eps_o), (0, True)), traffic < eps_q),
                        (0, ops < eps_o), (ops / traffic, True))


def memory_bound(t_comp, t_mem):
    """1 when ``calc_bottleneck`` says "Memory", else 0 (its 1e-15 ms guards included)."""
    eps = sym.eps_t
    memory = sp.Or(sp.And(t_comp < eps, t_mem >= eps),
                   sp.And(t_comp >= eps, t_mem >= eps, t_mem > t_comp))
    return Iverson(memory)
