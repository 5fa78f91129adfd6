"""Pipeline parallelism: the bubble of a 1F1B schedule, interleaved or not.

References
----------
Huang et al. (2019), "GPipe"; Narayanan et al. (2021), "Efficient large-scale
language model training on GPU clusters using Megatron-LM" (interleaved 1F1B:
bubble divided by the virtual stages). mlsysim 0.3.0
``physics/performance.py:calc_pipeline_bubble`` and ``DistributedModel.solve``.
"""
from __future__ import annotations

import sympy as sp

from .base import FloorDiv, Iverson, NamedTerm


class BubbleFraction(NamedTerm):
    r"""Idle share of a pipelined step: ``(p-1) / (v*m + p - 1)``; 0 for ``p = 1``."""

    nargs = 3

    @staticmethod
    def formula(p, v, m):
        return (p - 1) / (v * m + p - 1)


class BubbleTime(NamedTerm):
    r"""Idle time added to a busy time ``T``: ``T*b/(1-b) = T*(p-1)/(v*m)``."""

    nargs = 4

    @staticmethod
    def formula(T, p, v, m):
        return T * (p - 1) / (v * m)


def in_flight_divisor(m, p):
    """Microbatch groups a 1F1B stage cycles through: ``max(1, m // p)`` when ``p > 1``, else 1.

    mlsysim divides the gradient-accumulation steps seen by the memory model by
    this, so a stage holds activations of ``lb / (GA * ifd)`` samples.
    """
    return sp.Max(1, FloorDiv(m, p)) ** Iverson(p > 1)


class PipelineSendTime(NamedTerm):
    r"""Stage-to-stage send of one microbatch's activation: ``alpha + B_micro * S * d * s_elem / beta``.

    A :class:`~mlsysim_sym.terms.collectives.PointToPoint` transfer of the boundary
    activation (``B_micro x S x d`` elements of ``s_elem`` bytes), paid once per
    microbatch per stage boundary in the forward pass and once more (its gradient)
    in the backward pass. Narayanan et al. (2021), sec. 3.2 ("b s h" per microbatch
    between consecutive stages); Huang et al. (2019). Book: Collective
    Communication chapter, tbl. "The Travel Manifest" (pipeline parallelism:
    point-to-point Send/Recv), with the alpha-beta model of the Communication
    Foundations appendix, ``@eq-alpha-beta``; Distributed Training chapter,
    tbl. "Parallelism Communication Costs" (PP volume proportional to B x H).
    Arguments: ``(B_micro, S, d, s_elem, beta, alpha)``.
    """

    nargs = 6

    @staticmethod
    def formula(mb, s, H, bpp, beta, alpha):
        from .collectives import PointToPoint
        return PointToPoint.formula(mb * s * H * bpp, beta, alpha)
