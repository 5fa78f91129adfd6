"""Collective communication: ring all-reduce, hierarchical all-reduce, all-to-all.

The alpha-beta model: a message of ``M`` bytes over ``n`` ranks on links of
``beta`` B/s per direction with a per-message latency ``alpha``. With ``n = 1``
each formula is exactly zero, so no branch is needed for a group of one.

References
----------
Patarasuk & Yuan (2009), "Bandwidth optimal all-reduce algorithms for clusters
of workstations", JPDC 69(2). Thakur, Rabenseifner & Gropp (2005),
"Optimization of collective communication operations in MPICH". mlsysim 0.3.0
``physics/communication.py``: ``calc_ring_allreduce_time``,
``calc_hierarchical_allreduce_time``, ``calc_all_to_all_time``.
"""
from __future__ import annotations

import sympy as sp

from .base import Log2, NamedTerm


def ring_phase(M, n, beta, alpha):
    """One ring phase: ``n-1`` steps of ``M/n`` bytes, ``(n-1)/n * M/beta + (n-1)*alpha``. The time of an
    AllGather, a ReduceScatter and (each rank keeping ``1/n`` of its data) an AllToAll."""
    return (n - 1) / n * M / beta + (n - 1) * alpha


class RingAllReduce(NamedTerm):
    r"""Ring all-reduce time ``2(n-1)/n * M/beta + 2(n-1)*alpha``.

    A reduce-scatter then an all-gather, each ``n-1`` steps of ``M/n`` bytes.

    Examples
    --------
    >>> from sympy import symbols
    >>> M, n, b, a = symbols("M n beta alpha", positive=True)
    >>> RingAllReduce(M, n, b, a).doit()
    M*(2*n - 2)/(beta*n) + alpha*(2*n - 2)
    """

    nargs = 4

    @staticmethod
    def formula(M, n, beta, alpha):
        return 2 * (n - 1) / n * M / beta + 2 * (n - 1) * alpha


class AllToAll(NamedTerm):
    r"""All-to-all time ``(n-1)/n * M/beta + (n-1)*alpha``: each rank keeps ``1/n`` of its data."""

    nargs = 4
    formula = staticmethod(ring_phase)


class HierarchicalAllReduce(NamedTerm):
    r"""Two-level all-reduce over ``nn`` nodes of ``g`` ranks.

    Reduce-scatter and all-gather inside each node (``2 * [(g-1)/g * M/beta_in
    + (g-1)*alpha_in]``), and between them ``g`` concurrent inter-node rings on
    ``M/g`` bytes each (one NIC per rank). Arguments:
    ``(M, nn, g, beta_in, alpha_in, beta_out, alpha_out)``.
    """

    nargs = 7

    @staticmethod
    def formula(M, nn, g, beta_in, alpha_in, beta_out, alpha_out):
        intra = 2 * ((g - 1) / g * M / beta_in + (g - 1) * alpha_in)
        return intra + RingAllReduce.formula(*HierarchicalAllReduce.inter_ring(M, nn, g, beta_out, alpha_out))

    @staticmethod
    def inter_ring(M, nn, g, beta_out, alpha_out):
        """The arguments ``(M, n, beta, alpha)`` of each inter-node ring: ``M/g`` bytes over ``nn`` nodes."""
        return M / g, nn, beta_out, alpha_out


# --------------------------------------------------------------------------------------------
# Terms the textbook uses beside the model's (issue 11): not wired into the DistributedModel mirror
# --------------------------------------------------------------------------------------------
class PointToPoint(NamedTerm):
    r"""Point-to-point transfer time ``alpha + n/beta`` (the alpha-beta, or Hockney, model).

    Hockney (1994), "The communication challenge for MPP"; *Machine Learning Systems*
    vol. 2, Communication Foundations appendix, ``@eq-alpha-beta``
    (``\PointToPointTransferTime``). mlsysim 0.3.0 ``calc_point_to_point_time``.

    Examples
    --------
    >>> PointToPoint(400e3, 50e9, 2e-6).doit()       # 400 KB on IB NDR: 2 us + 8 us
    1.00000000000000e-5
    """

    nargs = 3

    @staticmethod
    def formula(n, beta, alpha):
        return alpha + n / beta


class AllGather(NamedTerm):
    r"""Ring AllGather time ``(N-1)/N * M/beta + (N-1)*alpha``; ``M`` is the full gathered tensor.

    Each rank starts with an ``M/N`` shard and forwards one shard per step for
    ``N-1`` steps. Patarasuk & Yuan (2009); Thakur, Rabenseifner & Gropp (2005),
    sec. 4.1 (ring allgather). Book: Communication Foundations appendix,
    ``@eq-allgather`` (``\AllGatherCompletionTime``).
    """

    nargs = 4
    formula = staticmethod(ring_phase)


class ReduceScatter(NamedTerm):
    r"""Ring ReduceScatter time ``(N-1)/N * M/beta + (N-1)*alpha``; each rank ends with ``M/N`` reduced bytes.

    The first half of the ring all-reduce: ``ReduceScatter + AllGather`` on the same
    ``M`` is exactly :class:`RingAllReduce` (tested). Patarasuk & Yuan (2009);
    Thakur et al. (2005). Book: Communication Foundations appendix,
    ``@eq-reducescatter`` (``\ReduceScatterCompletionTime``).
    """

    nargs = 4
    formula = staticmethod(ring_phase)


class TreeAllReduce(NamedTerm):
    r"""Tree AllReduce time ``2 log2(N) * (M/beta + alpha)``: reduce up and broadcast down a binary tree,
    the full message at each of the ``log2 N`` levels.

    Book: Communication Foundations appendix, ``@eq-tree-allreduce``
    (``\TreeAllReduceCompletionTime``); the Collective Communication chapter
    writes the same formula as ``T_tree-like`` and ``T_tree`` (sec. "The algorithm
    crossover point"). Thakur et al. (2005) for the reduce-then-broadcast tree.
    mlsysim 0.3.0 ``calc_tree_allreduce_time`` rounds ``log2 N`` up to an integer;
    this term keeps the book's ``log2 N`` (equal for powers of two).
    """

    nargs = 4

    @staticmethod
    def formula(M, n, beta, alpha):
        levels = Log2(n)
        return 2 * levels * M / beta + 2 * levels * alpha


class DoubleTreeAllReduce(NamedTerm):
    r"""Double binary tree AllReduce time ``2 log2(N) * alpha + 2 M/beta`` (two complementary trees, ``M/2`` each).

    Sanders, Speck & Träff (2009), "Two-tree algorithms for full bandwidth
    broadcast, reduction and scan"; NCCL 2.4 (Jeaugey 2019). Book: Collective
    Communication chapter, sec. "Double binary tree" (``\DoubleTreeAllReduceTime``;
    an unlabelled approximate equation).
    """

    nargs = 4

    @staticmethod
    def formula(M, n, beta, alpha):
        return 2 * Log2(n) * alpha + 2 * M / beta


def bytes_sent(term, M, n):
    """Bytes one rank sends in a ring collective ``term`` on ``M`` bytes: its bandwidth term times ``beta``.

    ``(N-1)/N * M`` for :class:`AllGather` and :class:`ReduceScatter`, twice that for :class:`RingAllReduce`.
    """
    b = sp.Dummy("beta", positive=True)
    return sp.factor(term.formula(M, n, b, 0) * b)


class DataParallelCommVolume(NamedTerm):
    r"""Bytes one rank sends per step for the plain data-parallel gradient all-reduce: ``2 (N-1)/N * M_param``.

    A ReduceScatter and an AllGather of the gradient (``M_param`` bytes).
    Rajbhandari et al. (2020), "ZeRO", sec. 7.1 ("data parallel communication
    volume ... 2Ψ"). Book: Collective Communication chapter, tbl. "Collective
    Operation Cost Summary" and the FSDP patterns section.
    """

    nargs = 2

    @staticmethod
    def formula(M, n):
        return bytes_sent(ReduceScatter, M, n) + bytes_sent(AllGather, M, n)


class Zero3CommVolume(NamedTerm):
    r"""Bytes one rank sends per step under ZeRO-3 / FSDP: ``3 (N-1)/N * M_param``.

    An AllGather of the parameters in the forward pass, another in the backward
    pass (they were freed), and a ReduceScatter of the gradients: 1.5x plain data
    parallelism. Rajbhandari et al. (2020), "ZeRO", sec. 7.2.2 (P_os+g+p: "3Ψ,
    1.5x"). mlsysim 0.3.0 ``ZeroShardingModel`` (``gather = 3 * w``). The
    Collective Communication chapter (sec. "FSDP communication patterns") counts
    two collectives per layer (AllGather + ReduceScatter), omitting the backward
    re-gather.
    """

    nargs = 2

    @staticmethod
    def formula(M, n):
        return 2 * bytes_sent(AllGather, M, n) + bytes_sent(ReduceScatter, M, n)


class Zero3CommTime(NamedTerm):
    r"""ZeRO-3 / FSDP communication time per step: two AllGathers and one ReduceScatter of ``M_param`` bytes.

    ``2 T_allgather + T_reducescatter = 3 (N-1)/N * M/beta + 3 (N-1) alpha``, counted
    as whole-model collectives (per-layer collectives add ``alpha`` per layer).
    Rajbhandari et al. (2020), sec. 7.2.2.
    """

    nargs = 4

    @staticmethod
    def formula(M, n, beta, alpha):
        return 2 * AllGather.formula(M, n, beta, alpha) + ReduceScatter.formula(M, n, beta, alpha)
