"""How today's training frameworks run a step, as the extended model prices it (``docs/extended.md``,
``docs/modern_runs.md``): FP8 GEMMs with the rest in 16-bit, mixtures of experts laid out as Megatron-Core and
torchtitan lay them out, ZeRO-3 / FSDP and ring attention overlapped with compute.

* FP8 (:func:`gemm_rate`, :func:`effective_rate`): Transformer Engine runs the inputs of the weights' matrix
  multiplications in FP8; attention, normalization, activations and casts stay in 16-bit, and weights, gradients
  and the messages keep 2-byte elements (Micikevicius et al. 2022, *FP8 Formats for Deep Learning*, sec. 4).
* MoE layout (:func:`expert_share`): expert parallelism is carved out of a stage's tensor-, data- and
  context-parallel ranks, not multiplied beside them (NVIDIA Megatron-LM ``megatron/core/parallel_state.py``;
  Rajbhandari et al. 2022, *DeepSpeed-MoE*, sec. 5).
* MoE token permutation (:func:`permutation_time`): the all-to-all dispatcher groups each rank's routed tokens by
  expert before the all-to-all and restores their order after it, in memory-bound kernels of their own (NVIDIA
  Megatron-LM ``megatron/core/transformer/moe/token_dispatcher.py``, ``MoEAlltoAllTokenDispatcher``: ``permute``,
  ``sort_chunks_by_idxs``, ``unpermute``); the flex dispatcher (DeepEP, HybridEP) does it inside its transfers.
* Overlap (:func:`overlapped`): prefetched FSDP gathers (Zhao et al. 2023, *PyTorch FSDP*, sec. 3.3) and the
  ring of ring attention (Liu et al. 2023, *Ring Attention*, sec. 3) hide behind the compute they run beside.
"""
from __future__ import annotations

import sympy as sp

from .base import Iverson, labelled


def gemm_rate(R_peak, R_16, eta_8, wide):
    """The peak the weights' GEMMs reach, before the hardware efficiency. Where ``wide`` holds (elements of 2 bytes
    or more: BF16, FP16, FP32) the precision's own peak ``R_peak`` (a 16-bit run's peak is its 16-bit peak, a
    ``peak_flops`` given for it included); at narrower ones (FP8, INT8) ``eta_8`` of the precision's peak, never
    below the 16-bit peak: ``max(min(R_peak, R_16), eta_8 R_peak)``.

    >>> b = sp.Symbol("b")
    >>> gemm_rate(989e12, 989e12, 0.8, b >= 2).subs(b, 2), gemm_rate(1979e12, 989e12, 0.8, b >= 2).subs(b, 1)
    (989000000000000., 1.58320000000000e+15)
    """
    return labelled(sp.Piecewise((R_peak, wide), (sp.Max(sp.Min(R_peak, R_16), eta_8 * R_peak), True)),
                    (None, None))


def rest_rate(R_peak, R_16, wide):
    """The peak of the work outside the weights' GEMMs (attention, the elementwise work): the precision's own where
    ``wide`` holds (2-byte or wider elements), else the 16-bit peak, or the precision's own where it is lower."""
    return labelled(sp.Piecewise((R_peak, wide), (sp.Min(R_peak, R_16), True)), (None, None))


def effective_rate(F_tok, F_gemm, shape_loss, R_gemm, R_rest, eta, eta_att=1):
    """The FLOP/s one accelerator achieves on a step's work: its forward FLOPs per token ``F_tok`` over the time
    they take at their rates, the weights' GEMMs ``F_gemm / R_GEMM``, attention (the rest of ``F_tok``) over
    ``eta_att R_rest`` (its kernels reach ``eta_att`` of the GEMMs' efficiency) and the GEMM-shape factor's loss
    ``shape_loss F_tok / R_rest`` (``x_1/2 / d``: elementwise work, which FP8 does not speed up), times the
    efficiency ``eta``. At a 16-bit precision with ``eta_att = 1`` it is ``R_peak eta f_GEMM``, the extended
    model's rate without them, since ``1 / f_GEMM = 1 + x_1/2 / d``.

    >>> effective_rate(1.0, 1.0, 0.0, 2.0, 1.0, 0.5), effective_rate(2.0, 1.0, 0.0, 2.0, 1.0, 0.5)
    (1.0, 0.6666666666666666)
    >>> effective_rate(2.0, 1.0, 0.0, 1.0, 1.0, 0.5, eta_att=0.5)
    0.3333333333333333
    """
    return eta * F_tok / (F_gemm / R_gemm + (F_tok - F_gemm) / (eta_att * R_rest) + shape_loss * F_tok / R_rest)


def slowest_stage(F_tok, F_head, pp):
    """The slowest pipeline stage's work over the mean stage's: the last stage computes its ``1 / N_PP`` of the
    layers and the output layer ``F_head`` (of the ``F_tok`` forward FLOPs per token), so
    ``(F_tok - F_head + N_PP F_head) / F_tok``; 1 without a pipeline (or without a card's output layer).

    >>> slowest_stage(100, 10, 1), slowest_stage(100, 10, 4)
    (1.0, 1.3)
    """
    return 1 + (pp - 1) * F_head / F_tok


def expert_share(P, P_exp):
    """The share of the weights that are routed experts' (0 for a dense model, or a record that gives none)."""
    return P_exp / P


def only_with_experts(P_exp, expr):
    """``expr`` where the model has routed-expert weights, else 0 (a dense model reduces no expert gradients, and
    an empty collective would still pay its latency)."""
    return Iverson(P_exp > 0) * expr


def permutation_time(routed, b_perm, n_a2a, layers, again, BW_hbm, fused):
    """The memory-bound permutation of one step's routed tokens on one accelerator: ``b_perm`` HBM bytes per byte
    of the ``routed`` bytes it dispatches in each of the ``n_a2a`` all-to-alls of each of its ``layers`` (``again``
    times with a recomputed forward), at the HBM's bandwidth; 0 where the dispatcher fuses it (``fused = 1``).

    >>> permutation_time(1e9, 4, 4, 10, 1, 4e12, 0), permutation_time(1e9, 4, 4, 10, 1, 4e12, 1)
    (0.0400000000000000, 0)
    """
    return sp.Piecewise((0, sp.Eq(fused, 1)), (b_perm * n_a2a * again * layers * routed / BW_hbm, True))


def overlapped(t_comm, t_cover, floor):
    """Communication ``t_comm`` run beside compute ``t_cover``: what the compute cannot cover, and at least
    ``floor`` (the part that must come before the first compute or after the last)."""
    return sp.Max(t_comm - t_cover, floor)
