"""Training memory per accelerator: ZeRO shards, activations, buffers, LoRA.

References
----------
Rajbhandari et al. (2020), "ZeRO: Memory optimizations toward training
trillion parameter models" (stage 1 shards optimizer state, 2 also gradients,
3 also weights). Korthikanti et al. (2022), "Reducing activation recomputation
in large transformer models" (34·s·b·h bytes per layer with selective
recomputation, 2·s·b·h with full, at 2-byte precision; sequence parallelism
divides by the TP degree). Hu et al. (2022), "LoRA". mlsysim 0.3.0
``engine/solvers/training.py:TrainingMemoryModel.solve`` and
``engine/solvers/distributed.py:_replica_profile``.
"""
from __future__ import annotations

import sympy as sp
from sympy.printing.precedence import PRECEDENCE

from ..symbols import sym
from .base import CeilDiv, Iverson, NamedTerm, labelled, select


class ShardDivisor(NamedTerm):
    r"""``n^{[c]}``: the ranks a ZeRO stage shards a state over, ``n`` when the stage applies, else 1.

    Kept as a term so that a sharded state prints as the fraction the book writes,
    ``x / N_DP^{1{z >= 3}}``; its formula is the power of an Iverson bracket.

    Examples
    --------
    >>> from sympy import Symbol
    >>> n = Symbol("n", positive=True)
    >>> ShardDivisor(n, 1), ShardDivisor(n, 0)
    (n, 1)
    """

    nargs = 2
    is_positive = True

    @classmethod
    def eval(cls, n, on):
        if on == 0:
            return sp.S.One
        if on == 1:
            return n
        return None

    @staticmethod
    def formula(n, on):
        return n ** on

    def _latex(self, printer, exp=None):
        n, on = self.args
        body = r"%s^{%s}" % (printer.parenthesize(n, PRECEDENCE["Pow"], strict=True), printer._print(on))
        return body if exp is None else r"\left(%s\right)^{%s}" % (body, exp)


def zero_sharded(x, dp, z, stage):
    """``x / N_DP^{[z >= stage]}``: sharded over the DP group from ZeRO stage ``stage`` on."""
    return x / ShardDivisor(dp, Iverson(z >= stage))


def lora_trainable_fraction(H, L, P, lora):
    """Trainable share of the parameters: ``min(2 r d 4 N_L / P, 1)`` under LoRA, else 1.

    ``r`` is the LoRA rank (16), ``4`` the adapted matrices per layer, ``2`` the
    A and B factors of each adapter.
    """
    share = 2 * sym.r_lora * H * 4 * L / P
    return labelled(sp.Min(share, 1), {1: "LoRA fraction capped at 1", share: "LoRA trainable fraction"},
                    idle=(sp.Eq(lora, 0), None)) ** lora


def weight_bytes(P_shard, bpp, dp, z):
    """Weights of one accelerator: ``P_shard * s_elem``, sharded by ZeRO-3."""
    return zero_sharded(P_shard * bpp, dp, z, 3)


def gradient_bytes(P_shard, tf, bpp, dp, z):
    """Gradients of the trainable parameters, sharded by ZeRO-2."""
    return zero_sharded(P_shard * tf * bpp, dp, z, 2)


def optimizer_bytes(P_shard, tf, dp, z):
    """Adam state (fp32 master + two moments, 12 B per trainable parameter), sharded by ZeRO-1."""
    return zero_sharded(P_shard * tf * sym.ADAM, dp, z, 1)


def microbatch(lb, GA, ifd):
    """Samples whose activations one stage holds: ``max(1, ceil(lb / (GA * ifd)))``."""
    return sp.Max(1, CeilDiv(lb, GA * ifd))


def layers_per_stage(L, p):
    """``max(1, ceil(N_L / p))``."""
    return sp.Max(1, CeilDiv(L, p))


def activation_bytes(Ls, s, mb, H, bpp, tp, rc, k_sel=sym.K_sel):
    """Korthikanti activations: ``Ls * K * s * mb * d * s_elem/2 / N_TP``.

    ``K`` is 2 with full recomputation, 34 with selective; dividing by the TP
    degree is sequence parallelism (a no-op for ``N_TP = 1``).
    """
    K = select(sp.Eq(rc, 1), sym.K_full, k_sel)
    return Ls * K * s * mb * H * (bpp / 2) / tp


def buffer_bytes(grads, mb, s, H, bpp, p):
    """Gradient bucket (5 % of gradients) plus, with a pipeline, two activation send/receive buffers."""
    return grads * sym.f_buf + 2 * mb * s * H * bpp * Iverson(p > 1)


def generic_replica_bytes(W, bpp, G, lora):
    """Non-transformer state per accelerator: ``(2W + 12 W/s_elem) / G``.

    Weights, gradients and Adam state sharded over the replica. On a single
    accelerator (mlsysim's Engine path) a LoRA run holds ``1.1 W`` instead.
    """
    full = (2 * W + (W / bpp) * sym.ADAM) / G
    return select(sp.And(sp.Eq(lora, 1), sp.Eq(G, 1)), sym.f_lora_mem * W, full)


class ActivationsNoRecompute(NamedTerm):
    r"""Activation bytes of one transformer layer without recomputation, tensor parallel (no sequence parallelism).

    ``S b d (10 + 24/t + 5 a S/(d t)) * s_elem/2``: Korthikanti et al. (2022),
    "Reducing activation recomputation in large transformer models", sec. 4.2.1 (and
    sec. 4.1, eq. (1), ``S b d (34 + 5 a S/d)``, at ``t = 1``). The ``10`` are the layer-norm
    inputs and dropout masks that tensor parallelism replicates; ``5 a S/d`` is
    the attention scores, softmax and its dropout (quadratic in ``S``). The paper's
    constants are bytes at 2-byte activations, hence ``s_elem/2`` (mlsysim 0.3.0
    ``calc_activation_memory(strategy='none')`` scales the same way). Arguments:
    ``(S, B_micro, d, N_heads, N_TP, s_elem)``.
    """

    nargs = 6

    @staticmethod
    def formula(s, b, h, a, t, bpp):
        return s * b * h * (10 + 24 / t + 5 * a * s / (h * t)) * bpp / 2


class ActivationsSeqParallel(NamedTerm):
    r"""Activation bytes of one transformer layer without recomputation, tensor and sequence parallel.

    ``S b d / t * (34 + 5 a S/d) * s_elem/2``: Korthikanti et al. (2022), sec. 4.2.2:
    sequence parallelism shards the ``10`` replicated bytes too, so every term is
    divided by ``t``. Equal to :class:`ActivationsNoRecompute` at ``t = 1``.
    Arguments: ``(S, B_micro, d, N_heads, N_TP, s_elem)``.
    """

    nargs = 6

    @staticmethod
    def formula(s, b, h, a, t, bpp):
        return s * b * h / t * (34 + 5 * a * s / h) * bpp / 2
