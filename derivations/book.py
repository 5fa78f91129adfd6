"""The book companion: each distributed-training equation of *Machine Learning Systems* (volume 2), the
package's expression for it, and how the two were checked.

Every check runs when the document is rendered: an equation is "symbolically equal" only if sympy
reduces the difference to 0, and a worked number is "reproduced" only if the package's value rounds to
the book's. A check that fails stops the render, so the document cannot claim what is not true.
Where mlsysim's code and the book's prose differ, both numbers are computed at one configuration.

The book's formulas are written here with this package's symbols (the book writes raw LaTeX with
``p``, ``m``, ``t`` where the registry has ``\\PipelineParallelDegree`` ...). Places are cited by
chapter, section and, where the book has one, equation label, in the book's sources
(github.com/harvard-edge/cs249r_book, ``books/vol2/``): DT is the Distributed Training chapter,
CC Collective Communication, AC the Communication Foundations appendix, NOT the volume's
notation chapter.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import sympy as sp

from mlsysim_sym import notation
from mlsysim_sym.model import build_model
from mlsysim_sym.operating_point import operating_point_of
from mlsysim_sym.printing import broken_chain, equation, latex, value_latex
from mlsysim_sym.symbols import sym
from mlsysim_sym.terms.base import Log2
from mlsysim_sym.terms.collectives import (AllGather, AllToAll, DataParallelCommVolume, DoubleTreeAllReduce,
                                           HierarchicalAllReduce, PointToPoint, ReduceScatter, RingAllReduce,
                                           TreeAllReduce, Zero3CommVolume)
from mlsysim_sym.terms.communication import CommComputeRatio, exposed_dp
from mlsysim_sym.terms.memory import ActivationsNoRecompute, gradient_bytes, optimizer_bytes, weight_bytes
from mlsysim_sym.terms.moe import ExpertCapacity
from mlsysim_sym.terms.pipeline import BubbleFraction, BubbleTime, PipelineSendTime

from .common import EXAMPLES

F = notation.FORMAL
M, N, BETA, ALPHA, NMSG = F["M_coll"], F["N_coll"], F["beta"], F["alpha"], F["n_msg"]
LOG2N = Log2(N)
T = r"\text"


def equal(a, b) -> bool:
    """Whether sympy reduces ``a - b`` to 0 (logs expanded: ``log(N, 2)`` is ``log(N)/log(2)``)."""
    d = sp.sympify(a).doit() - sp.sympify(b).doit()
    d = sp.expand_log(sp.expand(d.rewrite(sp.log)), force=True)
    return sp.simplify(d) == 0


def value(expr) -> float:
    return float(sp.sympify(expr).doit().evalf(30))


@dataclass(frozen=True)
class Number:
    """One worked number of the book and the package's value at the same inputs."""

    what: str
    book: float          # as the book prints it
    package: float
    unit: str
    rel: float           # the book's rounding: agreement within this relative distance
    expect: bool = True  # False: a number the book gets wrong or rounds away (explained in the entry's note)

    @property
    def agrees(self) -> bool:
        return abs(self.package - self.book) <= self.rel * abs(self.book)

    def row(self) -> List[str]:
        verdict = "reproduced" if self.agrees else "differs"
        return [self.what, value_latex(self.book, self.unit, 3), value_latex(self.package, self.unit, 4), verdict]


@dataclass(frozen=True)
class Entry:
    """One equation of the book: where it is, its form, the package's, and the checks."""

    key: str
    title: str
    where: str
    book_tex: str                       # the book's formula in this package's symbols (plain LaTeX)
    ours: Tuple[sp.Basic, sp.Basic]     # (lhs, rhs) of the package's expression
    symbolic: Optional[Tuple[sp.Basic, sp.Basic]] = None   # (book, ours) that must be equal
    numbers: Tuple[Number, ...] = ()
    note: str = ""

    @property
    def ours_tex(self) -> str:
        return broken_chain(self.ours)

    @property
    def ours_book(self) -> str:
        return equation(*self.ours, book=True)

    @property
    def check(self) -> str:
        parts = []
        if self.symbolic is not None:
            parts.append("symbolically equal (sympy reduces the difference to 0)")
        if self.numbers:
            n = sum(x.agrees for x in self.numbers)
            parts.append(f"{n} of the book's {len(self.numbers)} worked numbers reproduced")
        return "; ".join(parts) or "compared in the note"

    def verify(self) -> "Entry":
        if self.symbolic is not None and not equal(*self.symbolic):
            raise AssertionError(f"{self.key}: the book's form and the package's are not equal")
        for x in self.numbers:
            if x.agrees != x.expect:
                raise AssertionError(f"{self.key}: {x.what}: book {x.book}, package {x.package}")
        return self


def _eq(lhs_tex: str, rhs) -> str:
    return f"{lhs_tex} = {latex(rhs)}"


# --------------------------------------------------------------------------------------------------
# Collectives (CC, AC)
# --------------------------------------------------------------------------------------------------
def collectives() -> List[Entry]:
    p2p = PointToPoint(NMSG, BETA, ALPHA)
    ring = RingAllReduce(M, N, BETA, ALPHA)
    tree = TreeAllReduce(M, N, BETA, ALPHA)
    book_ring = 2 * (N - 1) / N * M / BETA + 2 * (N - 1) * ALPHA
    book_tree = 2 * LOG2N * M / BETA + 2 * LOG2N * ALPHA
    book_half = (N - 1) / N * M / BETA + (N - 1) * ALPHA
    nstar = sp.solve(sp.Eq(ALPHA, NMSG / BETA), NMSG)[0]     # where latency and transfer time are equal
    m_x = sp.solve(sp.Eq(ring.doit(), tree.doit()), M)[0]    # ring-tree crossover payload, exactly
    x = {N: 64, ALPHA: 10e-6, BETA: 10e9}
    at100 = {N: 100, ALPHA: 5e-6, BETA: 50e9}
    exact, approx, boxed = (value(e.subs(at100)) for e in (m_x, N * ALPHA * BETA / LOG2N, N * ALPHA * BETA))
    return [
        Entry("alpha-beta", "Point-to-point transfer (alpha-beta model)",
              "AC @eq-alpha-beta; CC, The alpha-beta model; NOT",
              _eq(rf"T", ALPHA + NMSG / BETA), (p2p, p2p.doit()), (ALPHA + NMSG / BETA, p2p),
              (Number("one 400 KB message, alpha 2 us, beta 50 GB/s (CC, message fusion)", 10e-6,
                      value(PointToPoint(400e3, 50e9, 2e-6)), "s", 0.005),
               Number("100 messages of 4 KB: latency alone (CC)", 200e-6, 100 * 2e-6, "s", 0.005))),
        Entry("crossover", "Latency-bandwidth crossover size",
              "AC @eq-crossover; CC, The alpha-beta model; NOT",
              _eq("n^*", ALPHA * BETA),
              (ALPHA, NMSG / BETA), (ALPHA * BETA, nstar),
              (Number("InfiniBand NDR, alpha 2 us, beta 50 GB/s (CC)", 100e3, value(nstar.subs({ALPHA: 2e-6, BETA: 50e9})),
                      "B", 0.005),
               Number("InfiniBand NDR, alpha 5 us, beta 50 GB/s (AC)", 250e3, value(nstar.subs({ALPHA: 5e-6, BETA: 50e9})),
                      "B", 0.005)),
              "The package's form is the condition: the size n at which the point-to-point term's latency "
              "equals its transfer time, solved for n by sympy. The "
              "book gives two sizes for the same fabric because CC takes alpha = 2 us and AC takes mlsysim's "
              "registry latency, 5 us (a note for the authors below)."),
        Entry("ring", "Ring AllReduce", "AC @eq-ring-allreduce; CC, Ring AllReduce",
              _eq(rf"T_{{{T}{{ring}}}}", book_ring), (ring, ring.doit()), (book_ring, ring),
              (Number("1 GB over 256 GPUs, 50 GB/s, 5 us (AC)", 42.4e-3,
                      value(RingAllReduce(1e9, 256, 50e9, 5e-6)), "s", 0.002),
               Number("1 MB over 64 GPUs, 10 us, 10 GB/s (CC, ring vs tree)", 1456.875e-6,
                      value(RingAllReduce(1e6, 64, 10e9, 10e-6)), "s", 1e-9))),
        Entry("rs-ag", "ReduceScatter, AllGather, and AllReduce as their sequence",
              "CC, collective primitives table; DT, sequence parallelism",
              _eq(rf"T_{{{T}{{reducescatter}}}} = T_{{{T}{{allgather}}}}", book_half),
              (ReduceScatter(M, N, BETA, ALPHA) + AllGather(M, N, BETA, ALPHA), ring.doit()),
              (2 * book_half, ReduceScatter(M, N, BETA, ALPHA) + AllGather(M, N, BETA, ALPHA)), (),
              "Each phase is one of the ring all-reduce's two halves: the package checks "
              "ReduceScatter + AllGather = RingAllReduce exactly, as the book's "
              "AllReduce = AllGather(ReduceScatter(X))."),
        Entry("tree", "Tree AllReduce", "AC @eq-tree-allreduce; CC, Tree AllReduce",
              _eq(rf"T_{{{T}{{tree}}}}", book_tree), (tree, tree.doit()), (book_tree, tree),
              (Number("1 GB over 256 GPUs, 50 GB/s, 5 us (AC)", 320.1e-3,
                      value(TreeAllReduce(1e9, 256, 50e9, 5e-6)), "s", 0.0005),
               Number("1 MB over 64 GPUs, 10 us, 10 GB/s (CC)", 1320e-6,
                      value(TreeAllReduce(1e6, 64, 10e9, 10e-6)), "s", 1e-9)),
              "CC writes the same expression once as T_tree-like and once as T_tree; the registry has both "
              "macros. mlsysim's calc_tree_allreduce_time rounds log2 N up, which agrees for powers of two."),
        Entry("double-tree", "Double binary tree AllReduce", "CC, Double binary trees",
              _eq(rf"T_{{{T}{{double-tree}}}}", 2 * LOG2N * ALPHA + 2 * M / BETA),
              (DoubleTreeAllReduce(M, N, BETA, ALPHA), DoubleTreeAllReduce(M, N, BETA, ALPHA).doit()),
              (2 * LOG2N * ALPHA + 2 * M / BETA, DoubleTreeAllReduce(M, N, BETA, ALPHA)), (),
              "The figure beside it is drawn with mlsysim's calc_double_binary_tree_allreduce_time, which "
              "multiplies the latency by 1.2 and uses 2(N-1)/N M/beta times 1.05: not the formula printed."),
        Entry("ring-tree", "Ring-tree crossover payload", "CC, The algorithm crossover point",
              _eq(rf"M_{{{T}{{crossover}}}}", N * ALPHA * BETA / LOG2N),
              (ring, tree), None,
              (Number("N = 64, alpha 10 us, beta 10 GB/s (CC notebook)", 1.1e6, value(m_x.subs(x)), "B", 0.05),
               Number("N = 100, alpha 5 us, beta 50 GB/s (CC prose, from N alpha beta / log2 N)", 3.8e6,
                      value(m_x.subs({N: 100, ALPHA: 5e-6, BETA: 50e9})), "B", 0.05, expect=False)),
              "The package solves T_ring = T_tree (above) for M exactly. The book's N alpha beta / log2 N is "
              f"its large-N approximation ({approx / 1e6:.2f} MB against the exact {exact / 1e6:.2f} MB at "
              "N = 100); the boxed M_crossover = N alpha beta that follows drops the log2 N, which would give "
              f"{boxed / 1e6:.0f} MB."),
        Entry("alltoall", "AllToAll", "CC, collective primitives table and AllToAll",
              _eq(rf"T_{{{T}{{alltoall}}}}", book_half),
              (AllToAll(M, N, BETA, ALPHA), AllToAll(M, N, BETA, ALPHA).doit()),
              (book_half, AllToAll(M, N, BETA, ALPHA)),
              (Number("262.144 KB to one peer, 3 us, 50 GB/s (CC MoE notebook; the book rounds 5.24 us to 5)",
                      8e-6, value(PointToPoint(262144, 50e9, 3e-6)), "s", 0.05),)),
        Entry("hierarchical", "Hierarchical AllReduce (ReduceScatter in the node, ring across, AllGather)",
              "CC, Hierarchical AllReduce and the Llama 70B communication budget",
              _eq(rf"T_{{{T}{{hier}}}}", 2 * ((sym.apn - 1) / sym.apn * M / F["beta_in"])
                  + RingAllReduce.formula(M / sym.apn, sym.n_nodes, F["beta_out"], F["alpha_out"])),
              (HierarchicalAllReduce(M, sym.n_nodes, sym.apn, F["beta_in"], F["alpha_in"], F["beta_out"],
                                     F["alpha_out"]),
               HierarchicalAllReduce(M, sym.n_nodes, sym.apn, F["beta_in"], F["alpha_in"], F["beta_out"],
                                     F["alpha_out"]).doit()),
              (2 * ReduceScatter(M, sym.apn, F["beta_in"], 0)
               + RingAllReduce(M / sym.apn, sym.n_nodes, F["beta_out"], F["alpha_out"]),
               HierarchicalAllReduce(M, sym.n_nodes, sym.apn, F["beta_in"], 0, F["beta_out"], F["alpha_out"])),
              (Number("Llama 70B, 140 GB over 16 nodes of 8, NVLink 900 GB/s, NDR 50 GB/s, 3 us",
                      929e-3, value(HierarchicalAllReduce(140e9, 16, 8, 900e9, 0, 50e9, 3e-6)), "s", 0.001),
               Number("the same as one flat ring over 128 GPUs", 5557e-3,
                      value(RingAllReduce(140e9, 128, 50e9, 3e-6)), "s", 0.001)),
              "The book's phases leave out the intra-node latency; with alpha_in = 0 the package's term is "
              "the book's. mlsysim's solver uses it only when a DP group has several ranks on each of "
              "several nodes."),
    ]


# --------------------------------------------------------------------------------------------------
# The step (DT, NOT)
# --------------------------------------------------------------------------------------------------
def step() -> List[Entry]:
    model = build_model()
    q = {n: model.quantity(n).symbol for n in model}
    # the book's fleet law, its terms identified with the model's quantities (no straggler: T_sync = 0)
    t_overlap = sym.ov * sym.eta_ov * q["T_dp"]
    book_law = (q["T_node"] + q["T_bubble"]) + q["T_comm"] - t_overlap
    ours = model.definition("T_sync").subs(q["T_dp_exposed"], model.definition("T_dp_exposed")).subs(
        q["T_comm"], model.definition("T_comm"))
    law_equal = [(book_law.subs({q["T_comm"]: model.definition("T_comm"), sym.ov: o}),
                  ours.subs(sym.ov, o)) for o in (0, 1)]
    assert all(equal(a, b) for a, b in law_equal)
    llama = EXAMPLES[0]
    point = operating_point_of(llama.model, llama.fleet, **llama.solve_kwargs)
    vals = {n: point[n].value for n in ("T_comm", "T_node", "T_step", "scaling_efficiency")}
    f_compute = q["T_node"] / q["T_step"]
    e4 = 1 / (1 + (q["T_step"] - q["T_node"]) / q["T_node"])
    # DT, 175B worked example: 2.1 s of compute per device, 14 s of raw AllReduce, 75 % hidden
    exposed = exposed_dp(14, 1).subs(sym.eta_ov, sp.Rational(3, 4))
    return [
        Entry("fleet-law", "The distributed step-time law", "NOT, Distributed Systems Notation; DT, The physics of "
              "the cluster",
              rf"T_{{{T}{{step}}}}(N) = \frac{{T_{{{T}{{compute}}}}}}{{N}} + T_{{{T}{{comm}}}}(N) "
              rf"+ T_{{{T}{{sync}}}}(N) - T_{{{T}{{overlap}}}}",
              (q["T_sync"], model.definition("T_sync")), law_equal[1], (),
              "Equal term by term when T_compute/N is read as the replica's roofline time plus its pipeline "
              "bubble, T_comm as the DP, TP and EP communication, T_overlap as the hidden share eta_ov T_DP "
              "(DP only, and only with overlap on) and T_sync as 0: the render checks this identity with "
              "overlap on (shown) and off. mlsysim has no barrier term; its straggler multiplies the whole step "
              "instead (T_step = f_strag T_step-before-straggler for f_strag > 1). The older notation "
              "chapter prints the law without T_sync."),
        Entry("rho", "Communication-to-computation ratio", "DT, The physics of the cluster; NOT",
              rf"\rho = \frac{{T_{{{T}{{comm}}}}(N)}}{{T_{{{T}{{compute}}}} / N}}",
              (CommComputeRatio(q["T_comm"], q["T_node"]), CommComputeRatio(q["T_comm"], q["T_node"]).doit()),
              (q["T_comm"] / q["T_node"], CommComputeRatio(q["T_comm"], q["T_node"])), (),
              f"At {llama.title} the package gives rho = {vals['T_comm'] / vals['T_node']:.3f} "
              "(communication before overlap over the replica's roofline time)."),
        Entry("scaling-efficiency", "Scaling efficiency, and mlsysim's scaling_efficiency",
              "DT @eq-distributed-training-scaling-efficiency; NOT, fleet capacity factors",
              rf"f_{{{T}{{compute}}}} = \frac{{T_{{{T}{{compute}}}} / N}}{{T_{{{T}{{step}}}}(N)}}"
              rf" = \frac{{1}}{{1 + \frac{{N (T_{{{T}{{comm}}}} + T_{{{T}{{sync}}}} - T_{{{T}{{overlap}}}})}}"
              rf"{{T_{{{T}{{compute}}}}}}}}",
              (q["scaling_efficiency"], model.definition("scaling_efficiency")), (e4, f_compute),
              (Number("GPT-3 175B on 1,024 GPUs: 2.1 s compute, 14 s AllReduce, 75 % overlap (DT)", 0.375,
                      value(sp.Rational(21, 10) / (sp.Rational(21, 10) + exposed)), "1", 0.002),),
              "mlsysim's field scaling_efficiency is T_node / T_step: the notation chapter's useful-compute "
              "fraction f_compute, which the package prints as \\UsefulComputeFraction. The book's "
              "\\ScalingEfficiency is T_1 / (N T_N), a measured speedup, which mlsysim does not compute. "
              "DT's Amdahl form (second expression above) is f_compute rewritten through the step-time law; "
              f"at {llama.title} f_compute = {vals['scaling_efficiency']:.4f}."),
        Entry("effective-throughput", "Effective fleet throughput", "NOT, fleet capacity factors",
              rf"R_{{{T}{{eff}}}} = N R_{{{T}{{peak}}}} \, {T}{{MFU}} \, \eta_{{{T}{{scaling}}}} \, "
              rf"\eta_{{{T}{{goodput}}}}",
              (q["mfu"], model.definition("mfu")), (q["mfu_node"] * f_compute, model.definition("mfu").subs(
                  q["scaling_efficiency"], model.definition("scaling_efficiency"))), (),
              "The package's fleet MFU is the device MFU times f_compute, so N R_peak MFU_fleet is the book's "
              "R_eff with its in-step scaling factor read as f_compute and eta_goodput = 1 (mlsysim models no "
              "out-of-step loss). The book's factor is written eta_scaling but described as 'all in-step "
              "scaling loss', which is f_compute, not T_1 / (N T_N)."),
    ]


# --------------------------------------------------------------------------------------------------
# Memory (DT)
# --------------------------------------------------------------------------------------------------
def memory() -> List[Entry]:
    model = build_model()
    q = {n: model.quantity(n).symbol for n in model}
    P, n = 7e9, 64
    state = {z: value(weight_bytes(P, 2, n, z) + gradient_bytes(P, 1, 2, n, z) + optimizer_bytes(P, 1, n, z)
                      .subs(sym.ADAM, 12)) for z in (0, 1, 2, 3)}
    s, b, h, a, L = 2048, 4, 12288, 96, 96
    layer = ActivationsNoRecompute(sym.s, q["mb"], sym.H, F["n_heads"], 1, sym.bpp)
    return [
        Entry("memory-total", "Training memory per accelerator", "DT, Compute phase",
              rf"M_{{{T}{{total}}}} = M_{{{T}{{weights}}}} + M_{{{T}{{gradients}}}} + M_{{{T}{{optimizer}}}}"
              rf" + M_{{{T}{{activations}}}}",
              (q["M_acc"], model.definition("M_acc")),
              (q["M_weights"] + q["M_grads"] + q["M_optimizer"] + q["M_activations"] + q["M_buffers"],
               model.definition("M_acc")), (),
              "mlsysim adds a fifth part, communication buffers (5 % of the gradients for the bucket, and two "
              "activation buffers with a pipeline): the book's four parts plus M_buffers."),
        Entry("zero", "ZeRO stages: 16 bytes per parameter and their shards", "DT, ZeRO memory savings notebook "
              "and figure",
              rf"M_{{{T}{{state}}}} = \frac{{2P}}{{N^{{[z \geq 3]}}}} + \frac{{2P}}{{N^{{[z \geq 2]}}}}"
              rf" + \frac{{12P}}{{N^{{[z \geq 1]}}}}",
              (q["M_weights"] + q["M_grads"] + q["M_optimizer"],
               model.definition("M_weights") + model.definition("M_grads") + model.definition("M_optimizer")),
              None,
              tuple(Number(f"7B parameters, 64 GPUs, ZeRO-{z}" if z else "7B parameters, no ZeRO", bk, state[z],
                           "B", 0.005)
                    for z, bk in ((0, 112e9), (1, 29.3e9), (2, 15.5e9), (3, 1.75e9))),
              "The chapter's table rounds the reductions to 4x and 8x (the limits for large N); its figure "
              "prints 3.8x and 7.2x for N = 64, which the numbers above give."),
        Entry("zero3-comm", "ZeRO-3 / FSDP communication volume", "DT, after the ZeRO partitioning figure; CC, "
              "FSDP communication patterns",
              rf"V_{{{T}{{ZeRO-3}}}} = \tfrac{{3}}{{2}} V_{{{T}{{DP}}}}",
              (Zero3CommVolume(F["M_param"], N), Zero3CommVolume(F["M_param"], N).doit()),
              (sp.Rational(3, 2) * DataParallelCommVolume(F["M_param"], N), Zero3CommVolume(F["M_param"], N)),
              (Number("70B in BF16 over 1,024 ranks: plain DP per rank", 279.7e9,
                      value(DataParallelCommVolume(140e9, 1024)), "B", 0.0005),),
              "DT's 1.5x (Rajbhandari et al. 2020) is the package's; CC says FSDP's volume is 'comparable to' "
              "one AllReduce (a note for the authors). mlsysim's DistributedModel prices the DP all-reduce "
              "the same at every ZeRO stage (see the differences below)."),
        Entry("activations", "Activation memory without recomputation (Korthikanti et al. 2022)",
              "DT, GPT-3 activation budget (computed with mlsysim's calc_activation_memory)",
              rf"M_{{{T}{{act,layer}}}} = S b d \left(34 + \frac{{5 a S}}{{d}}\right)",
              (layer, layer.doit()), None,
              (Number("GPT-3: 96 layers, S 2048, b 4, d 12288, 96 heads, BF16, no recomputation", 1.1e12,
                      L * value(ActivationsNoRecompute(s, b, h, a, 1, 2)), "B", 0.05),
               Number("the same with full recomputation (2 S b d per layer)", 19e9, L * 2 * s * b * h, "B",
                      0.05)),
              "The chapter prints only the numbers (over 1,000 GB and under 25 GB). The package's model "
              "(mlsysim's TrainingMemoryModel) uses 34 S b d per layer, the selective-recomputation size, when "
              "recomputation is off; this term is the size without any recomputation."),
        Entry("tp-payload", "Tensor-parallel activation payload", "DT, Tensor parallelism",
              rf"M_{{{T}{{act}}}} = B S d_{{{T}{{model}}}} \times {T}{{sizeof(dtype)}}",
              (q["M_act_msg"], model.definition("M_act_msg")), None,
              (Number("B 4, S 2048, d 4096, FP16", 67e6, value(model.definition("M_act_msg").subs(
                  {sym.H: 4096, sym.bpp: 2, q["lb"]: 4, sym.s: 2048})), "B", 0.005),),
              "The package's batch is the replica's local batch; both count 4 all-reduces per layer per "
              "training step (n_AR = 4: two forward, two backward)."),
    ]


# --------------------------------------------------------------------------------------------------
# Pipeline and experts (DT, CC)
# --------------------------------------------------------------------------------------------------
def pipeline() -> List[Entry]:
    p, v, m = sym.pp, sym.v, sym.m
    mb = build_model().quantity("mb").symbol
    frac = BubbleFraction(p, v, m)
    rows = [("p 4, m 4", 4, 4, 0.429), ("p 8, m 32", 8, 32, 0.179), ("p 16, m 32 (GPT-175B)", 16, 32, 0.319),
            ("p 4, m 32", 4, 32, 0.086), ("p 4, m 8", 4, 8, 0.27), ("p 16, m 16", 16, 16, 0.48)]
    return [
        Entry("bubble", "Pipeline bubble fraction", "DT, pipeline parallelism (figures, definition, notebook); "
              "CC, fallacies",
              _eq(r"b_{\text{pipe}}", (p - 1) / (p - 1 + m)), (frac, frac.doit()),
              ((p - 1) / (p - 1 + m), frac.subs(v, 1)),
              tuple(Number(w, bk, value(BubbleFraction(pp, 1, mm)), "1", 0.02) for w, pp, mm, bk in rows),
              "The book never writes the interleaved form; mlsysim (and the registry's note on "
              "\\InterleavedPipelineBubbleFraction) divide the idle time by V: (p-1)/(V m + p - 1), which is "
              "the package's term. The book names the fraction F_bubble, 'Bubble Fraction' and b_pipe."),
        Entry("bubble-time", "Pipeline bubble as time", "mlsysim's DistributedModel (the book gives no time form)",
              r"T_{\text{bubble}} = T \frac{b}{1 - b}",
              (BubbleTime(F["T_busy"], p, v, m), BubbleTime(F["T_busy"], p, v, m).doit()),
              (F["T_busy"] * frac / (1 - frac), BubbleTime(F["T_busy"], p, v, m)), ()),
        Entry("pipeline-send", "Pipeline stage-to-stage send", "DT, pipeline parallelism and the 3D traffic "
              "notebook",
              rf"M_{{{T}{{send}}}} = B_{{\mu}} S d_{{{T}{{model}}}} \times 2",
              (PipelineSendTime(mb, sym.s, sym.H, sym.bpp, BETA, ALPHA),
               PipelineSendTime(mb, sym.s, sym.H, sym.bpp, BETA, ALPHA).doit()), None,
              (Number("GPT-3 boundary: micro-batch 4, S 2048, d 12288, BF16", 201e6, 4 * 2048 * 12288 * 2, "B",
                      0.005),),
              "The book gives the bytes per boundary; the package prices them as one point-to-point "
              "transfer. mlsysim's DistributedModel does not price the send (it is hidden in its bubble)."),
        Entry("capacity", "Expert capacity", "DT, expert parallelism; CC, MoE routing",
              rf"C = C_{{{T}{{cap}}}} \frac{{B S}}{{E}}",
              (ExpertCapacity(F["C_cap"], F["n_tok"], F["N_experts"]),
               ExpertCapacity(F["C_cap"], F["n_tok"], F["N_experts"]).doit()),
              (F["C_cap"] * F["n_tok"] / F["N_experts"], ExpertCapacity(F["C_cap"], F["n_tok"], F["N_experts"])),
              (Number("4,096 tokens over 64 experts, capacity factor 1 (CC)", 64,
                      value(ExpertCapacity(1, 4096, 64)), "1", 0),),
              "DT's C (B S)/E is the package's (Fedus et al. 2022, eq. 3). CC writes "
              "ceil(P T k / E x C), with the top-k factor k and a ceiling: twice as many slots for top-2 "
              "routing (a note for the authors). mlsysim has no capacity factor; its routing-imbalance "
              "factor multiplies the all-to-all volume."),
    ]


# --------------------------------------------------------------------------------------------------
# Where mlsysim's code and the book's prose differ: both numbers at one configuration
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Difference:
    topic: str
    book: str
    code: str
    rows: Tuple[Tuple[str, str, str], ...]   # (what, book's way, mlsysim's way), values as LaTeX


def differences() -> List[Difference]:
    mixtral = EXAMPLES[1]
    pm = operating_point_of(mixtral.model, mixtral.fleet, **mixtral.solve_kwargs)
    layers = int(pm.values[sym.L])
    t_ep = pm["T_ep"].value
    # the book: dispatch and combine, forward and backward, in every MoE layer
    book_ep = 2 * 2 * layers * t_ep
    llama = EXAMPLES[0]
    kw = dict(llama.solve_kwargs)
    p0 = operating_point_of(llama.model, llama.fleet, **kw)
    p3 = operating_point_of(llama.model, llama.fleet, **{**kw, "zero_stage": 3})
    dp0, dp3 = p0["T_dp"].value, p3["T_dp"].value
    # CC's 7B overlap example: 32 layers, 15 ms of backward and 26.4 ms of AllReduce per layer
    n_l, back, ar = 32, 15e-3, 26.4e-3
    sequential = n_l * back + n_l * ar
    per_layer = n_l * back + ar + (n_l - 1) * max(0.0, ar - back)
    fixed = n_l * back + n_l * ar * (1 - 0.85)
    ga = pm.values[sym.GA]
    return [
        Difference("MoE all-to-all per step",
                   "two all-to-alls (dispatch, combine) per MoE layer per pass, so 4 per layer per step",
                   "one all-to-all per step of the replica's tokens times top-k on the fabric",
                   (("EP communication per step, " + mixtral.title, value_latex(book_ep, "s"),
                     value_latex(t_ep, "s")),
                    ("all-to-alls per step", f"{4 * layers}", "1"))),
        Difference("ZeRO-3 communication",
                   "about 3 N_L collectives and 1.5 times the DDP volume (DT)",
                   "the stage changes memory only; the DP all-reduce is the same at every stage",
                   (("DP communication per step, " + llama.title + ", ZeRO-3", value_latex(1.5 * dp0, "s"),
                     value_latex(dp3, "s")),)),
        Difference("Gradient accumulation and the DP all-reduce",
                   "one all-reduce every k micro-steps: overhead comm / (k x compute)",
                   "T_DP = c T_AR,DP / k per micro-step, before overlap",
                   (("DP share of a micro-step, " + mixtral.title,
                     f"{pm['T_dp_allreduce'].value * pm.values[sym.c] / (ga * pm['T_node'].value):.4f}",
                     f"{pm['T_dp'].value / pm['T_node'].value:.4f}"),)),
        Difference("Overlap",
                   "CC: a per-layer schedule, T_backward + T_first layer + (N_L - 1) T_exposed; DT's worked "
                   "example: a fixed 75 % hidden",
                   "a fixed fraction eta_ov (0.85) of the DP all-reduce hidden; TP and EP never overlapped",
                   ((f"CC's 7B example: backward plus all-reduce (sequential {sequential:.3f} s)",
                     value_latex(per_layer, "s"), value_latex(fixed, "s")),)),
        Difference("Stragglers and congestion",
                   "the slowest worker sets the step; about N p stragglers per step (no formula)",
                   "the step times f_strag when f_strag > 1; DP, TP and EP communication times c_cong",
                   ()),
    ]


#: Inconsistencies within the book, for its authors (each checked above or quoted from the sources).
AUTHOR_NOTES: Tuple[str, ...] = (
    "FSDP / ZeRO-3 communication: DT counts about 3 N_L collectives and 1.5 times the DDP volume; CC counts "
    "2 N_L collectives with a volume 'comparable to' one AllReduce.",
    "Hierarchical AllReduce: CC's bandwidth-multiplier notebook prices the flat baseline with 2 M / beta "
    "(40 ms for 1 GB at 50 GB/s) but the hierarchical phases with (N-1)/N factors, and its prose extends the "
    "hierarchy to a rack level (4 racks of 4 nodes of 8 GPUs, 2:1 oversubscribed) that neither the notebook "
    "nor mlsysim's calc_hierarchical_allreduce_time models.",
    "The bubble fraction has three names (F_bubble, 'Bubble Fraction', b_pipe) and is written "
    "(p-1)/(p-1+m), (p-1)/(p+m-1) and (p-1)/(m+p-1); the interleaved form is never written although the "
    "notation chapter defines V.",
    "MoE capacity: C (B S)/E in DT against ceil(P T k / E x C) in CC (a factor k apart for top-k routing).",
    "Latency-bandwidth crossover on InfiniBand NDR: 100 KB in CC (alpha 2 us) and 250 KB in AC (alpha 5 us).",
    "Ring-tree crossover: CC derives N alpha beta / log2 N (3.8 MB in its example) and then boxes "
    "N alpha beta (25 MB for the same inputs).",
    "Ring AllReduce in worked numbers: some cells use 2 M / beta (5.6 s for 70B at 50 GB/s), the next uses "
    "2 (N-1)/N M / beta (about 5.5 s at N = 64).",
    "NVLink bandwidth: 450 GB/s per direction in the bandwidth table (9x InfiniBand) and 900 GB/s in the "
    "hierarchical figure (18x).",
    "The torus figure equates a volume in bytes with 2 M / beta, a time.",
    "ZeRO reductions: 4x and 8x in the table, 3.8x and 7.2x in the figure for N = 64.",
    "Optimizer state: 12 bytes per parameter (16 in all) in the ZeRO notebook, 8 in the hybrid budget, "
    "14 in the fleet appendix.",
    "The step-time law has T_sync in the current notation chapter and not in the older one; the book's "
    "\\ScalingEfficiency is T_1 / (N T_N), but the fleet-capacity formula uses eta_scaling for the in-step "
    "loss that the same chapter calls f_compute.",
    "The book writes d, p, t for the parallel degrees where the registry's macros print N_DP, N_PP, N_TP, "
    "C for \\ExpertCapacityFactor (C_cap) and E for \\ExpertCount (N_experts).",
)


def context() -> Dict[str, object]:
    entries = {
        "Collectives": collectives(),
        "The step": step(),
        "Memory": memory(),
        "Pipeline and experts": pipeline(),
    }
    for group in entries.values():
        for e in group:
            e.verify()
    registry = [f"{m}: {why}." for m, why in notation.REGISTRY_CLASHES.items()]
    return {"groups": entries, "differences": differences(), "author_notes": AUTHOR_NOTES,
            "registry_notes": registry, "count": sum(len(g) for g in entries.values())}
