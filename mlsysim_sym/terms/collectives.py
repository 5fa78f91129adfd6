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

from .base import NamedTerm


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

    @staticmethod
    def formula(M, n, beta, alpha):
        return (n - 1) / n * M / beta + (n - 1) * alpha


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
