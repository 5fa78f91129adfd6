"""Where each parallelism dimension communicates, and what the step exposes.

* DP: the gradient all-reduce. One node: an NVLink ring. One DP rank per node:
  a fabric ring. Otherwise hierarchical (NVLink inside, fabric across).
* TP: ``n_AR = 4`` activation all-reduces per layer of one stage (Shoeybi et
  al. 2019, p. 4), on NVLink when the TP group fits in a node, else the fabric.
* EP: the token all-to-all, always on the fabric (Fedus et al. 2022).
* Step: congestion multiplies all three, gradient accumulation amortizes DP,
  overlap hides a share of DP only, a straggler above 1 stretches the step
  (Dean & Barroso 2013).

mlsysim 0.3.0 ``engine/solvers/distributed.py:DistributedModel.solve``.
"""
from __future__ import annotations

import sympy as sp

from ..symbols import sym
from .base import CeilDiv, FloorDiv, NamedTerm, labelled
from .collectives import AllToAll, HierarchicalAllReduce, RingAllReduce


def dp_ranks_per_node(apn, G):
    """DP ranks of one group on a node: ``max(1, G_node // G)``."""
    return sp.Max(1, FloorDiv(apn, G))


def dp_nodes_spanned(dp, rpn):
    """Nodes one DP group spans: ``ceil(N_DP / rpn)``."""
    return CeilDiv(dp, rpn)


def dp_allreduce(grad, dp, rpn, nodes, BW_inter, who: str = "DP", idle=None):
    """Gradient all-reduce of one DP group, by placement (0 when ``N_DP = 1``); ``who`` names the group in the
    regime's words (``"expert DP"``: the ranks that hold the same experts); ``idle``: a condition besides one group
    where the all-reduce has nothing to do (a model without routed experts), and the regime says nothing of it."""
    quiet = (sp.Eq(dp, 1), f"no {who} (one group)" if who != "DP" else "no DP (dp = 1)")
    if idle is not None:
        quiet = (sp.Or(idle, quiet[0]), None)
    return labelled(sp.Piecewise(
        (RingAllReduce(grad, dp, sym.BW_intra, sym.alpha_nv), sp.Eq(nodes, 1)),
        (RingAllReduce(grad, dp, BW_inter, sym.alpha_fab), sp.Eq(rpn, 1)),
        (HierarchicalAllReduce(grad, nodes, rpn, sym.BW_intra, sym.alpha_h, BW_inter, sym.alpha_fab), True),
    ), (f"{who} ring on NVLink (one node)", f"{who} ring on the fabric", f"{who} hierarchical (NVLink + fabric)"),
        idle=quiet)


def tp_allreduces(msg, tp, layers, apn, BW_inter):
    """``n_AR * layers`` ring all-reduces of ``msg`` bytes over the TP group (0 when ``N_TP = 1``)."""
    ring = labelled(sp.Piecewise(
        (RingAllReduce(msg, tp, sym.BW_intra, sym.alpha_nv), tp <= apn),
        (RingAllReduce(msg, tp, BW_inter, sym.alpha_fab), True),
    ), ("TP on NVLink", "TP on the fabric"), idle=(sp.Eq(tp, 1), "no TP (tp = 1)"))
    return sym.n_ar * layers * ring


def ep_alltoall(msg, ep, BW_inter):
    """Token all-to-all over the EP group on the fabric (0 when ``N_EP = 1``)."""
    return AllToAll(msg, ep, BW_inter, sym.alpha_fab)


def exposed_dp(t_dp, ov, dp=None):
    """DP time left on the critical path: ``(1 - eta_ov)`` of it under overlap (``dp``, the replicas: with one,
    the regime's words leave the overlap out)."""
    return labelled(sp.Piecewise((t_dp * (1 - sym.eta_ov), sp.Eq(ov, 1)), (t_dp, True)),
                    ("DP overlapped with backward", "DP not overlapped"),
                    idle=None if dp is None else (sp.Eq(dp, 1), None))


def straggled(t, f_s):
    """The slowest worker gates a synchronous step: ``t * f_s`` when ``f_s > 1``."""
    return labelled(sp.Piecewise((t * f_s, f_s > 1), (t, True)),
                    ("straggler (× f_strag)", "no straggler (f_strag ≤ 1)"))


class CommComputeRatio(NamedTerm):
    r"""Communication-to-computation ratio ``rho = T_comm / T_compute``: above 1, the step cannot hide its communication.

    Book: Collective Communication chapter, sec. "Putting the model to work:
    Llama 70B communication budget" (the ratio of the all-reduce time to the
    compute time of the step, hierarchical against flat); notation registry
    ``\CommunicationComputeRatio`` ("ratio of per-step communication time to
    per-device compute time"). Distributed Training chapter, learning objective
    "communication-computation ratios".
    """

    nargs = 2

    @staticmethod
    def formula(t_comm, t_compute):
        return t_comm / t_compute


# ---- issue 24: the per-layer overlap schedule ---- begin
def backward_time(t_node, mult):
    """The backward pass of a replica's step: the share ``(m - 1) / m`` of its time ``t_node``, where ``m`` is
    the training FLOPs in forward passes (3; 4 with full recomputation, whose recomputed forward runs inside the
    backward pass, layer by layer)."""
    return t_node * (mult - 1) / mult


class LayerOverlapTime(NamedTerm):
    r"""The backward pass and the gradient AllReduce, each layer's AllReduce overlapped with the backward pass of
    the layer after it: ``T_pipelined = T_backward + T_layer + (N_L - 1) max(0, T_layer - T_backward / N_L)``.

    ``T_backward`` is the whole backward pass, ``T_layer`` one layer's AllReduce and ``N_L`` the layers, each
    with the same share of both. The last AllReduce has no backward left to hide behind (the book calls it the
    first layer's communication); every other one exposes what it takes beyond one layer's backward. It is the
    makespan of ``N_L`` equal jobs through two machines in series (the backward, then the network):
    ``T_backward / N_L + T_layer + (N_L - 1) max(T_backward / N_L, T_layer)``.

    Book: Collective Communication chapter, sec. "Overlap Limits: When Hiding Fails"
    (``@sec-communication-overlap-limits``), notebook "Overlap Budget for a 7B Transformer" (cell
    ``overlap-budget-calc``: 32 layers of 15 ms backward, 26.4 ms AllReduce each, give 859.8 ms); notation
    registry ``\OverlappedBackwardCommunicationTime``. Literature: Li et al. (2020), PyTorch Distributed:
    Experiences on Accelerating Data Parallel Training (VLDB), sec. 3.2 (gradient buckets all-reduced while the
    backward pass goes on); Johnson (1954), Optimal two- and three-stage production schedules (the two-machine
    flow shop).

    >>> LayerOverlapTime(0.480, 0.0264, 32).doit()
    0.859800000000000
    """

    nargs = 3

    @staticmethod
    def formula(t_backward, t_layer, n_layers):
        return t_backward + t_layer + (n_layers - 1) * sp.Max(0, t_layer - t_backward / n_layers)


def layer_overlap_exposed(t_backward, t_layer, n_layers, idle=None):
    """What the per-layer schedule adds to the backward pass, :class:`LayerOverlapTime`'s formula less
    ``t_backward``: ``T_layer + (N_L - 1) max(0, T_layer - T_backward / N_L)``, its max labelled for the regime's
    words (hidden behind a layer's backward, or not); ``idle``: the condition under which the schedule is off, where
    the regime says nothing of it."""
    exposed = LayerOverlapTime.formula(t_backward, t_layer, n_layers) - t_backward
    for node in exposed.atoms(sp.Max):
        labelled(node, {a: ("each layer's AllReduce hidden behind a layer's backward" if a == 0 else
                            "each layer's AllReduce outlasts a layer's backward") for a in node.args},
                 idle=None if idle is None else (idle, None))
    return exposed
# ---- issue 24: the per-layer overlap schedule ---- end
