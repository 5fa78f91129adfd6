"""What the Collective Communication chapter prices beside the model's collectives (issue 24): the butterfly and
torus all-reduces, the parameter server, LogP's exposed overhead, the energy of an all-reduce, gradient
compression (block quantization, top-k, the payback of compression) and FSDP's per-layer startup cost.

None of these is wired into the DistributedModel mirror (mlsysim 0.3.0 prices none of them); the ring,
tree, hierarchical and all-to-all terms they are compared with live in :mod:`.collectives` and are reused here.

References
----------
*Machine Learning Systems* vol. 2 (github.com/harvard-edge/cs249r_book),
``book/quarto/contents/vol2/collective_communication/collective_communication.qmd`` ("CC" below).
Thakur, Rabenseifner & Gropp (2005), "Optimization of collective communication operations in MPICH"
(recursive halving and doubling). Culler et al. (1993), "LogP: towards a realistic model of parallel
computation". Li et al. (2014), "Scaling distributed machine learning with the parameter server".
Seide et al. (2014), "1-bit stochastic gradient descent"; Stich, Cordonnier & Jaggi (2018), "Sparsified SGD
with memory"; Karimireddy et al. (2019), "Error feedback fixes SignSGD" (error feedback). Ying et al. (2018),
"Image classification at supercomputer scale" (dimension-ordered all-reduce on a TPU torus). Alexandrov et al.
(1995), "LogGP: incorporating long messages into the LogP model" (the appendix's long-message time).
"""
from __future__ import annotations

from typing import Callable, List, Sequence, Tuple

import sympy as sp

from .base import Log2, NamedTerm
from .collectives import DataParallelCommVolume, ring_phase


class ButterflyAllReduce(NamedTerm):
    r"""Recursive halving-doubling (butterfly) AllReduce: ``2 log2(N) alpha + 2 (N-1)/N M/beta``.

    ``log2 N`` rounds of a ReduceScatter whose message halves each round (partner ``i XOR 2^k``), then ``log2 N``
    rounds of an AllGather whose message doubles: the ring's bandwidth term with the tree's latency term. Needs
    ``N`` a power of two. Thakur, Rabenseifner & Gropp (2005), sec. 4.4; CC, sec. "Recursive halving-doubling
    (butterfly)" (``\ButterflyAllReduceTime``).

    Examples
    --------
    >>> ButterflyAllReduce(1e6, 64, 10e9, 10e-6).doit()     # 1 MB over 64 GPUs: 120 us + 196.9 us
    0.000316875000000000
    """

    nargs = 4

    @staticmethod
    def formula(M, n, beta, alpha):
        return 2 * Log2(n) * alpha + 2 * (n - 1) / n * M / beta


class TorusAllReduce(NamedTerm):
    r"""Dimension-ordered AllReduce on an ``X x Y x Z`` torus: a ReduceScatter along X on ``M`` bytes, along Y on
    the ``M/X`` left, along Z on ``M/(XY)``, then the AllGathers back (each a ring along one axis).

    The bandwidth terms add to ``2 (XYZ - 1)/(XYZ) M/beta``, the flat ring's over ``N = XYZ`` ranks (CC: "total
    bandwidth cost 2M/beta, same as a single ring"), and the latency to ``2 (X + Y + Z - 3) alpha`` (CC:
    "proportional to 2(X + Y + Z) rather than 2(X Y Z)"). CC, sec. "Torus topology (TPU pods)"; Ying et al. (2018).
    """

    nargs = 6

    @staticmethod
    def formula(M, X, Y, Z, beta, alpha):
        reduce_scatter = (ring_phase(M, X, beta, alpha) + ring_phase(M / X, Y, beta, alpha)
                          + ring_phase(M / (X * Y), Z, beta, alpha))
        return 2 * reduce_scatter     # the AllGathers retrace the same three rings


class ParameterServerTime(NamedTerm):
    r"""Parameter-server aggregation time ``N M / (K_srv beta)``: each of ``K_srv`` servers receives its ``1/K_srv``
    shard of all ``N`` workers' ``M``-byte gradients (and sends as much back, on the other direction of its link).

    CC, sec. "Naive approaches vs. the bandwidth bottleneck": "rank 0 ... must receive N x M bytes and send
    N x M bytes, so the time grows as T ~ N x M / beta", sharded "from N x M to N x M / K_srv". Li et al. (2014).
    """

    nargs = 4

    @staticmethod
    def formula(M, n, k_srv, beta):
        return n * M / (k_srv * beta)


class LogPOverlapTime(NamedTerm):
    r"""Time of a transfer overlapped with compute under LogP: ``2 o + max(T_layer, L)``.

    The processor overhead ``o`` to send and ``o`` to receive cannot overlap; the network latency ``L`` hides
    behind the layer's compute when the compute is longer. Culler et al. (1993); CC, sec. "The LogP model"
    (notebook "Hiding communication behind computation").

    Examples
    --------
    >>> LogPOverlapTime(50e-6, 100e-6, 500e-6).doit()
    0.000600000000000000
    """

    nargs = 3

    @staticmethod
    def formula(o, latency, t_layer):
        return 2 * o + sp.Max(t_layer, latency)


class AllReduceEnergy(NamedTerm):
    r"""Network energy of one ring AllReduce over ``N`` ranks: every rank sends ``2 (N-1)/N M`` bytes
    (:class:`~.collectives.DataParallelCommVolume`) at ``E_net`` joules per byte.

    CC, sec. "The physics of data movement": 10,000 GPUs, 1 GB, 30 pJ/bit, "approximately 4.8 kJ per AllReduce
    (accounting for the factor of 2 in data movement)".
    """

    nargs = 3

    @staticmethod
    def formula(M, n, e_byte):
        return n * DataParallelCommVolume.formula(M, n) * e_byte


class BlockQuantRatio(NamedTerm):
    r"""Compression ratio of block quantization: ``s_grad b / (s_code b + s_meta)``.

    Each block of ``b`` elements of ``s_grad`` bytes is sent as ``b`` codes of ``s_code`` bytes and one scale of
    ``s_meta`` bytes. CC, sec. "Block quantization for gradient communication": FP32 to INT8 with FP32 scales,
    ``4 b / (b + 4)``, 3.88x at ``b = 128``. As ``b`` grows it tends to ``s_grad / s_code`` (FP16: 2x, INT8: 4x,
    1 bit: 32x over FP32).
    """

    nargs = 4

    @staticmethod
    def formula(s_grad, s_code, b, s_meta):
        return s_grad * b / (s_code * b + s_meta)


class TopKRatio(NamedTerm):
    r"""Compression ratio of top-k sparsification: ``s_grad d / ((s_code + s_meta) K)``.

    ``K`` of the ``d`` elements are sent, each as a value of ``s_code`` bytes and an index of ``s_meta`` bytes.
    CC, sec. "Top-k sparsification": FP32 values, INT32 indices, ``4 d / (8 K) = d / (2 K)``, 500x at
    ``K = 0.001 d``. Stich, Cordonnier & Jaggi (2018).
    """

    nargs = 5

    @staticmethod
    def formula(d, k, s_grad, s_code, s_meta):
        return s_grad * d / ((s_code + s_meta) * k)


class CompressedCommTime(NamedTerm):
    r"""Communication time with compression: ``T_comm / r_comp + T_overhead`` (the transfer shrinks by the ratio,
    the codec's encode and decode time is added).

    CC, notebook "The payback of compression" (40 ms / 8 + 2 ms = 7 ms, 5.7x), and its rule "it pays off only
    when T_overhead < T_comm (1 - 1/Ratio)" (``\CompressedCommunicationTime``).
    """

    nargs = 3

    @staticmethod
    def formula(t_comm, r, t_codec):
        return t_comm / r + t_codec


class CompressedTrainingTime(NamedTerm):
    r"""Training time with compression: ``K (1 + p) (T_compute + T_comm / r_comp)``.

    Compression divides the step's communication by the ratio and multiplies the steps to converge by
    ``1 + p``. CC, sec. "When to use compression": ``110,000 x 0.35 = 38,500`` s against 50,000 s, and
    ``110,000 x 0.3075 = 33,825`` s against 33,000 s.
    """

    nargs = 5

    @staticmethod
    def formula(k, p, t_compute, t_comm, r):
        return k * (1 + p) * (t_compute + t_comm / r)


class FsdpStartupTime(NamedTerm):
    r"""Startup latency FSDP adds per step: ``2 N_L alpha``, one AllGather and one ReduceScatter per layer, each
    paying the startup latency once.

    CC, sec. "FSDP communication patterns": 25-50 us per operation over 100 layers, "5--10 ms". The bandwidth
    terms are those of :class:`~.collectives.Zero3CommTime`.
    """

    nargs = 2

    @staticmethod
    def formula(layers, alpha):
        return 2 * layers * alpha


# --------------------------------------------------------------------------------------------
# Error feedback (not a cost: the recursion whose sums the chapter checks)
# --------------------------------------------------------------------------------------------
def error_feedback(gradients: Sequence, compress: Callable) -> List[Tuple]:
    r"""Error-feedback compression, step by step: ``v_t = C(g_t + e_t)``, ``e_{t+1} = (g_t + e_t) - v_t``, ``e_1 = 0``.

    Returns ``(g_t, e_t, g_t + e_t, v_t, e_{t+1})`` per step. ``sum v_t = sum g_t + e_1 - e_{K+1}`` whatever ``C``
    is (the sum telescopes). Seide et al. (2014); Karimireddy et al. (2019); CC, sec. "Error feedback: the memory of
    the journey" and its five-step notebook (``C`` rounds to the nearest integer).
    """
    rows, e = [], sp.S.Zero
    for g in gradients:
        g = sp.nsimplify(g)
        x = g + e
        v = compress(x)
        rows.append((g, e, x, v, x - v))
        e = x - v
    return rows


class LogGPLongMessageTime(NamedTerm):
    r"""Time to send one long message of k bytes under LogGP: ``o_send + L + (k - 1) G_byte + o_recv``: the
    sender's overhead, the latency, one gap per byte after the first, the receiver's overhead (Alexandrov et al.
    1995; the Communication Foundations appendix, its LogGP display). ``k`` is the byte count as a number and
    ``G_byte`` the time per byte. Arguments: ``(o_send, L_logp, k_bytes, G_byte, o_recv)``.

    Examples
    --------
    >>> LogGPLongMessageTime(1, 2, 11, 3, 4).doit()
    37
    """

    nargs = 5

    @staticmethod
    def formula(o_send, latency, k, gap, o_recv):
        return o_send + latency + (k - 1) * gap + o_recv
