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
