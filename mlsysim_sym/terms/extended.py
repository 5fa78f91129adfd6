"""Cost terms only the extended model uses (``DistributedModel(fidelity="extended")``, ``docs/extended.md``).

* :class:`GemmShapeEfficiency`: the share of the large-GEMM efficiency a layer's matrix multiplications reach
  at hidden width ``x``, ``x / (x + x_1/2)``. A saturating (Michaelis-Menten) form with one constant, the width
  at which half is lost: the work outside the GEMMs (normalization, dropout, residual adds, softmax), which
  streams ``O(b s d)`` bytes per layer against the GEMMs' ``O(b s d^2)`` FLOPs, costs a share proportional to
  ``1 / d`` (Korthikanti et al. 2022, sec. 4.1, count these elementwise activations per layer; Narayanan et al.
  2021, Table 1, measure the throughput rising with the hidden size at fixed parallelism).
* :class:`OptimizerUpdateTime`: the Adam update is elementwise and reads and writes every state it touches
  once, so it is bounded by memory bandwidth: ``n b_update / BW_HBM`` (Rajbhandari et al. 2020, sec. 3, for the
  mixed-precision Adam states: fp32 weights, two fp32 moments, the 2-byte working copy).
"""
from __future__ import annotations

from .base import NamedTerm


class GemmShapeEfficiency(NamedTerm):
    r"""GEMM-shape efficiency ``f = x / (x + x_1/2)``: 1 for wide matrices, one half at ``x = x_1/2``.

    Arguments: ``(x, x_1/2)``, the width of the layers' shared GEMM dimension (the hidden size) and the
    fitted half-efficiency width (``docs/extended.md`` gives the fit).
    """

    nargs = 2

    @staticmethod
    def formula(x, d_half):
        return x / (x + d_half)


class OptimizerUpdateTime(NamedTerm):
    r"""Memory-bound optimizer update ``T = n b_update / BW_HBM`` of ``n`` parameters.

    Arguments: ``(n, b_update, BW_HBM)``. With ``b_update = 30`` B (read fp32 weight 4, fp32 gradient 4,
    two fp32 moments 8; write the weight 4, the moments 8 and the 2-byte working copy 2): Rajbhandari et al.
    (2020), sec. 3 ("mixed-precision Adam ... fp32 copy of the parameters, momentum and variance").
    """

    nargs = 3

    @staticmethod
    def formula(n, b_update, bw):
        return n * b_update / bw


# --------------------------------------------------------------------------------------------
# The extended model's assembly pieces (mlsysim_sym.mechanisms names each; docs/extended.md derives them)
# --------------------------------------------------------------------------------------------
import sympy as sp  # noqa: E402

from ..symbols import sym  # noqa: E402
from .base import Iverson, select  # noqa: E402
from .collectives import AllGather, ReduceScatter, RingAllReduce  # noqa: E402
from .pipeline import PipelineSendTime  # noqa: E402


def recomputed(rc):
    """Collectives of a step with the forward pass recomputed: ``1 + chi_rc / 2`` times those without (the
    forward's half of the forward-and-backward count again; Korthikanti et al. 2022, sec. 5)."""
    return 1 + Iverson(sp.Eq(rc, 1)) / sp.Integer(2)


def zero3_phases(z):
    """ZeRO-3 / FSDP against plain DP: ``(2 + [z >= 3]) / 2``, three ring phases (two parameter AllGathers and
    a gradient ReduceScatter) against the AllReduce's two (Rajbhandari et al. 2020, sec. 7.2.2)."""
    return (2 + Iverson(z >= 3)) / sp.Integer(2)


def tp_collectives(msg, tp, layers, apn, BW_inter, seq_parallel):
    """``n_AR * layers`` TP collectives of ``msg`` bytes: ring AllReduces, or with sequence parallelism a
    ReduceScatter and an AllGather each (the same bytes and steps: Korthikanti et al. 2022, sec. 4.2.2);
    on NVLink when the TP group fits in a node, else the fabric (as mlsysim)."""
    def one(beta, alpha):
        return sp.Piecewise((ReduceScatter(msg, tp, beta, alpha) + AllGather(msg, tp, beta, alpha),
                             sp.Eq(seq_parallel, 1)),
                            (RingAllReduce(msg, tp, beta, alpha), True))
    placed = sp.Piecewise((one(sym.BW_intra, sym.alpha_nv), tp <= apn), (one(BW_inter, sym.alpha_fab), True))
    return sym.n_ar * layers * placed


def activation_bytes(Ls, s, mb, H, bpp, tp, rc, seq_parallel):
    """Korthikanti et al. (2022), Table 2, per stage: selective recomputation keeps ``10 + 24 / t`` two-byte
    values per token and hidden unit (``34 / t`` with sequence parallelism), full recomputation ``2``
    (``2 / t``). The 10 (LayerNorm inputs, dropout masks, residual) and the full-recompute 2 are held whole on
    every TP rank unless the sequence is split too."""
    # written with indicators, not Piecewise: the memory enters the fits-in-HBM condition, and sympy would fold
    # a Piecewise out of it into every branch of the roofline
    whole = select(sp.Eq(seq_parallel, 1), 1 / tp, 1)
    split = sym.K_sel - 10                     # 24: the inputs of the TP-split GEMMs
    K = select(sp.Eq(rc, 1), sym.K_full * whole, 10 * whole + split / tp)
    return Ls * K * s * mb * H * (bpp / 2)


def cp_exchange(msg, kvf, tp, cp, layers, apn, BW_inter, rc, recompute_counted):
    """Context parallelism's key/value exchange per step: per layer of the stage, an AllGather of the
    sequence's keys and values (``M_KV = 2 r_KV M_act N_CP / N_TP``: this rank's TP share, the whole sequence)
    in the forward pass (again in a recomputed one) and a ReduceScatter of their gradients in the backward pass;
    on NVLink when ``N_TP N_CP`` fits in a node, else the fabric. Not overlapped with attention (the
    all-gather form of Dubey et al. 2024, sec. 3.3.2)."""
    M_kv = 2 * kvf * msg * cp / tp
    gathers = 1 + Iverson(sp.Eq(rc, 1)) if recompute_counted else 1

    def one(beta, alpha):
        return gathers * AllGather(M_kv, cp, beta, alpha) + ReduceScatter(M_kv, cp, beta, alpha)
    return layers * sp.Piecewise((one(sym.BW_intra, sym.alpha_nv), tp * cp <= apn),
                                 (one(BW_inter, sym.alpha_fab), True))


def stage_link(N, pp, apn, intra, inter):
    """The link between consecutive pipeline stages: stages are ``N / N_PP`` ranks apart (pipeline outermost,
    as Megatron orders its groups), so they share a node when ``N < N_PP G_node``."""
    return sp.Piecewise((intra, N < pp * apn), (inter, True))


def pipeline_sends(lb, s, H, bpp, tp, pp, v, m, beta, alpha):
    """Stage-to-stage sends on a step's critical path: an activation forward and its gradient backward per
    microbatch per virtual stage and per fill step, ``2 (V m + N_PP - 1)`` sends of one microbatch's boundary
    activation split by ``N_TP`` (Narayanan et al. 2021, sec. 4.1, scatter/gather), when ``N_PP > 1``."""
    return 2 * (v * m + pp - 1) * PipelineSendTime(lb / m, s, H / tp, bpp, beta, alpha) * Iverson(pp > 1)


def exposed_tp(t_tp, tov):
    """TP communication left on the critical path: ``(1 - eta_ov)`` of it when it overlaps the GEMMs."""
    return sp.Piecewise((t_tp * (1 - sym.eta_ov), sp.Eq(tov, 1)), (t_tp, True))
