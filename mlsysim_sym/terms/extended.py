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

import sympy as sp

from ..symbols import sym
from .base import FloorDiv, Iverson, NamedTerm, labelled, select
from .collectives import AllGather, ReduceScatter, RingAllReduce
from .pipeline import PipelineSendTime


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


def pass_overhead(k, L_stage, m, GA, passes):
    """Framework taxes of one step's layer passes on one accelerator: ``k`` per layer per forward-pass equivalent,
    over its ``L_stage`` layers, the ``passes`` of each microbatch in units of its forward pass (3: the forward and
    the backward, twice as long; 4 with full recomputation) and the step's ``m GA`` microbatches (``m`` per
    pipelined step, 1 by default, times the ``GA`` accumulation steps)."""
    return k * L_stage * passes * m * GA


def held_microbatches(m, p):
    """Microbatch groups a stage cycles through when microbatches run without a pipeline too: ``max(1, m // p)``
    at every ``p``, ``m`` at ``p = 1`` (each microbatch's forward and backward before the next one's, so one
    microbatch's activations are held: NVIDIA Megatron-LM, ``forward_backward_no_pipelining`` in
    ``megatron/core/pipeline_parallel/schedules.py``); with a pipeline it is mlsysim's
    :func:`~mlsysim_sym.terms.pipeline.in_flight_divisor`."""
    return sp.Max(1, FloorDiv(m, p))


def gathered_parameters(shards, L_stage):
    """One layer's parameters an accelerator gathers under ZeRO-3 / FSDP: ``sum [n > 1] p / N_L,stage`` over the
    ``shards`` ``(p, n)``, the parameters ``p`` it holds before the data-parallel shard and the ``n`` ranks they are
    sharded over (one: held whole, nothing gathered)."""
    return sp.Add(*(Iverson(n > 1) * p for p, n in shards)) / L_stage


def gathered_layers(P_gather, s_elem, z, prefetch, f_train):
    """Bytes an accelerator holds beyond its shards under ZeRO-3 / FSDP (``z >= 3``): the gathered weights of the
    layer it computes and, with prefetching (``prefetch`` 1), of the next, whose AllGather runs meanwhile, and the
    unsharded gradients (their trainable share ``f_train``) of the layer whose backward pass it runs, before their
    ReduceScatter: ``(1 + prefetch + f_train) P_gather s_elem`` (``P_gather``: :func:`gathered_parameters`).
    PyTorch, ``torch.distributed.fsdp.FullyShardedDataParallel``, ``limit_all_gathers``: memory "from only two
    consecutive FSDP instances (the current instance running computation and the next instance whose all-gather is
    prefetched)"; Zhao et al. 2023, PyTorch FSDP, sec. 3: each unit's gradients reduce-scattered after its
    backward. 0 below stage 3, where the weights are held whole."""
    return (1 + prefetch + f_train) * P_gather * s_elem * Iverson(z >= 3)


def recomputed(rc):
    """Collectives of a step with the forward pass recomputed: ``1 + chi_rc / 2`` times those without (the
    forward's half of the forward-and-backward count again; Korthikanti et al. 2022, sec. 5)."""
    return 1 + Iverson(sp.Eq(rc, 1)) / sp.Integer(2)


def zero3_sync(t_allreduce, t_gather, z, GA, m):
    """Data-parallel communication of one optimizer step under ZeRO-3 / FSDP (``z >= 3``): the gradients'
    ReduceScatter, half of their AllReduce ``t_allreduce``, and in each micro-step the two AllGathers of the
    weights (forward, backward), together the time ``t_gather`` of one AllReduce of them. The micro-steps are the
    ``m`` microbatches of each of the ``GA`` accumulation steps: FSDP reshards a layer's weights after its forward
    and gathers them again for each microbatch (Zhao et al. 2023, PyTorch FSDP); under a pipeline a stage that
    keeps them gathered through the step (the mechanism ``fsdp_pipeline``) is no longer at stage 3 here. Without
    LoRA and accumulation, 3/2 of plain DP's AllReduce: three ring phases against two (Rajbhandari et al. 2020,
    sec. 7.2.2). Below stage 3: the AllReduce."""
    z3 = Iverson(z >= 3)
    return t_allreduce * (1 - z3 / 2) + z3 * GA * m * t_gather


def group_link(group, apn, intra, inter, subject, alone):
    """The link of a group of ``group`` consecutive ranks: NVLink (``intra``) when every such group lies in one
    node (NVLink domain), that is when ``group`` divides its ``G_node`` accelerators; else the fabric (``inter``):
    groups of 16, 32 or 64 on a 72-GPU NVL72 rack straddle racks (ranks 64-127 span two), and the slowest group
    gates the step. ``subject`` names the group's traffic for the regime's words (``"TP"``); ``alone`` is the
    condition under which the group is one rank (it sends nothing)."""
    return labelled(sp.Piecewise((intra, sp.Eq(sp.Mod(apn, group), 0)), (inter, True)),
                    (f"{subject} on NVLink", f"{subject} on the fabric"), idle=(alone, f"no {subject}"))


def sp_pair(msg, tp, beta, alpha):
    """Sequence parallelism's replacement of one TP AllReduce: a ReduceScatter and an AllGather of ``msg``
    bytes (the same bytes and steps as the ring AllReduce: Korthikanti et al. 2022, sec. 4.2.2)."""
    return ReduceScatter(msg, tp, beta, alpha) + AllGather(msg, tp, beta, alpha)


def tp_collective(msg, tp, beta, alpha, seq_parallel, pair):
    """One TP collective of ``msg`` bytes: a ring AllReduce, or with sequence parallelism ``pair``
    (:func:`sp_pair`). A step pays ``n_AR`` of them per layer of the stage."""
    return sp.Piecewise((pair, sp.Eq(seq_parallel, 1)), (RingAllReduce(msg, tp, beta, alpha), True))


def unsplit_share(tp, seq_parallel):
    """The share of the activations TP leaves whole (LayerNorm inputs, dropout masks, residual) that one TP
    rank keeps: ``1 / N_TP`` with sequence parallelism, else all of them (Korthikanti et al. 2022, sec. 4.2.2).
    An indicator, not a Piecewise: it enters the fits-in-HBM condition (see :func:`activation_values`)."""
    return select(sp.Eq(seq_parallel, 1), 1 / tp, 1)


def activation_values(tp, rc, whole, k_sel=sym.K_sel):
    """Korthikanti et al. (2022), Table 2: activation bytes (two a value) one layer keeps per token and hidden
    unit on one TP rank. Selective recomputation ``10 + 24 / t`` (``34 / t`` with sequence parallelism), full
    recomputation ``2`` (``2 / t``): the 10 (LayerNorm inputs, dropout masks, residual) and the full-recompute
    2 are held whole on every TP rank unless the sequence is split too. ``k_sel``: the 34 of selective
    recomputation, or an architecture card's own (:mod:`mlsysim_sym.shape`, ``K_layer``)."""
    # written with indicators, not Piecewise: the memory enters the fits-in-HBM condition, and sympy would fold
    # a Piecewise out of it into every branch of the roofline. ``whole``: :func:`unsplit_share`.
    split = k_sel - 10                         # 24: the inputs of the TP-split GEMMs (an architecture card's own)
    return select(sp.Eq(rc, 1), sym.K_full * whole, 10 * whole + split / tp)


def kv_bytes(msg, kvf, tp, cp):
    """The keys and values of the whole sequence on one TP rank: ``M_KV = 2 r_KV M_act N_CP / N_TP`` (``M_act``
    is this rank's ``1 / N_CP`` of the sequence)."""
    return 2 * kvf * msg * cp / tp


def cp_layer_exchange(M_kv, cp, beta, alpha, rc, recompute_counted):
    """Context parallelism's key/value exchange for one layer: an AllGather of ``M_KV`` in the forward pass
    (again in a recomputed one) and a ReduceScatter of their gradients in the backward pass, on the link of
    the ``N_TP N_CP`` ranks (:func:`group_link`). Not overlapped with attention (the all-gather form of
    Dubey et al. 2024, sec. 3.3.2)."""
    gathers = 1 + Iverson(sp.Eq(rc, 1)) if recompute_counted else 1
    return gathers * AllGather(M_kv, cp, beta, alpha) + ReduceScatter(M_kv, cp, beta, alpha)


def stage_link(N, apn, intra, inter, pp):
    """The link that gates the pipeline's sends: with the pipeline outermost (as Megatron orders its groups), a
    stage is ``N / N_PP`` consecutive ranks, and as soon as the job spans nodes (``N > G_node``) some stage
    boundary crosses a node's edge; the slowest boundary gates the pipeline, so NVLink only within one node."""
    return labelled(sp.Piecewise((intra, N <= apn), (inter, True)),
                    ("pipeline sends on NVLink (one node)", "pipeline sends on the fabric"), idle=(sp.Eq(pp, 1), None))


def critical_sends(pp, v, m):
    """Stage-to-stage sends on a step's critical path: an activation forward and its gradient backward per
    microbatch per virtual stage and per fill step, ``2 (V m + N_PP - 1)``, when ``N_PP > 1`` (Narayanan et al.
    2021, sec. 3.2)."""
    return 2 * (v * m + pp - 1) * Iverson(pp > 1)


def pipeline_send(lb, s, H, bpp, tp, m, beta, alpha):
    """One send of a microbatch's boundary activation, split by ``N_TP`` (Narayanan et al. 2021, sec. 4.1,
    the scatter/gather optimization)."""
    return PipelineSendTime(lb / m, s, H / tp, bpp, beta, alpha)


def exposed_tp(t_tp, tov):
    """TP communication left on the critical path: ``(1 - eta_ov)`` of it when it overlaps the GEMMs."""
    return sp.Piecewise((t_tp * (1 - sym.eta_ov), sp.Eq(tov, 1)), (t_tp, True))


def attention_keys(S, causal):
    """Keys one query attends, on average, in a layer without a window: ``S`` , or ``S / 2`` when attention is
    causal (a query attends the tokens before it; the ``+ 1/2`` dropped, as Megatron-LM drops it)."""
    return S * (1 - causal / sp.Integer(2))


def window_keys(S, w, causal):
    """Keys one query attends, on average, in a layer with a sliding window of ``w`` tokens: the whole layer's
    when the window covers the sequence; else ``w`` less, when causal, the ``w^2 / (2S)`` the first ``w`` queries
    cannot reach."""
    return sp.Piecewise((attention_keys(S, causal), w >= S), (w - causal * w ** 2 / (2 * S), True))


def attention_flops(full, windowed, S, w, causal):
    """Forward attention FLOPs per token (the scores and the weighted sum over the keys attended): the FLOPs per
    key of the layers without a window times their keys, and the windowed layers' likewise."""
    return full * attention_keys(S, causal) + windowed * window_keys(S, w, causal)

