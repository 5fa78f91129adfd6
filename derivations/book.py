"""The book companion: each distributed-training equation of *Machine Learning Systems* (volume 2), the
package's expression for it, and how the two were checked.

Every check runs when the document is rendered: an equation is "symbolically equal" only if sympy
reduces the difference to 0, and a worked number is "reproduced" only if the package's value rounds to
the book's. A check that fails stops the render, so the document cannot claim what is not true.
Where mlsysim's code and the book's prose differ, both numbers are computed at one configuration.

The book's formulas are written here with this package's symbols (the book writes raw LaTeX with
``p``, ``m``, ``t`` where the registry has ``\\PipelineParallelDegree`` ...). Places are cited by
chapter, section and, where the book has one, equation label, in the book's sources
(github.com/harvard-edge/cs249r_book, ``book/quarto/contents/vol2/``; the documents link each label to
its chapter's source file, :mod:`derivations.book_labels`): DT is the Distributed Training chapter,
CC Collective Communication, AC the Communication Foundations appendix, NOT the volume's
notation chapter.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import sympy as sp

from mlsysim_sym import notation
from mlsysim_sym.model import build_model
from mlsysim_sym.operating_point import operating_point_of
from mlsysim_sym.printing import LINE, broken_chain, equation, latex, value_latex
from mlsysim_sym.symbols import sym
from mlsysim_sym.terms.base import Log2
from mlsysim_sym.terms.collectives import (AllGather, AllToAll, DataParallelCommVolume, DoubleTreeAllReduce,
                                           HierarchicalAllReduce, PointToPoint, ReduceScatter, RingAllReduce,
                                           TreeAllReduce, Zero3CommVolume)
from mlsysim_sym.terms.communication import CommComputeRatio, exposed_dp
from mlsysim_sym.terms.memory import ActivationsNoRecompute, gradient_bytes, optimizer_bytes, weight_bytes
from mlsysim_sym.terms.moe import ExpertCapacity
from mlsysim_sym.terms.pipeline import BubbleFraction, BubbleTime, PipelineSendTime

from .book_differences import AUTHOR_NOTES, differences
from .common import EXAMPLES
from . import registry

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
    """One worked number of the book and the package's value at the same inputs.

    ``book`` is the value as the book prints it, ``rel`` the relative distance within which the
    package's value counts as the same number (the book's own rounding), shown beside the verdict.
    """

    what: str
    book: float
    package: float
    unit: str
    rel: float
    expect: bool = True  # False: a number the book rounds away or gets wrong (the entry's note says which)

    @property
    def agrees(self) -> bool:
        return abs(self.package - self.book) <= self.rel * abs(self.book)

    @property
    def exact(self) -> bool:
        """Reproduced "exactly": the package's value, printed with the book's digits, is the book's number."""
        return self.rel < 1e-9 and self.agrees

    def row(self) -> List[str]:
        within = "exactly" if self.rel < 1e-9 else f"within {self.rel * 100:g} %"
        verdict = f"reproduced ({within})" if self.agrees else f"differs (more than {self.rel * 100:g} %)"
        book = value_latex(self.book, self.unit, 6)
        # an exact number shows the package's value at the book's digits (at 4, 1012.74 would print 1013)
        package = value_latex(self.package, self.unit, 6 if self.exact else 4)
        if self.exact and package != book:
            raise AssertionError(f"{self.what}: 'exactly', but the package prints {package}, the book {book}")
        return [self.what, book, package, verdict]


@dataclass(frozen=True)
class Entry:
    """One equation of the book: where it is, its form, the package's, and the checks.

    ``book_tex`` is the book's formula in this package's symbols where the package has the quantity (the
    book's own glyph where not); ``""`` when the book prints no formula for it (only numbers, or nothing:
    ``note`` says which).
    """

    key: str
    title: str
    where: str
    book_tex: str
    ours: Tuple[sp.Basic, sp.Basic]     # (lhs, rhs) of the package's expression
    symbolic: Optional[Tuple[sp.Basic, sp.Basic]] = None   # (book, ours) that must be equal
    numbers: Tuple[Number, ...] = ()
    note: str = ""
    # False where the package's form is written in the algorithm's own symbols, none of them a quantity of the
    # registry (no book-macro form to paste is offered)
    paste: bool = True
    # the width the package's form is broken to (mlsysim_sym.printing.broken_chain): narrower where its terms
    # render wider than their characters suggest (fractions over parentheses, function calls on the left)
    width: int = LINE
    # what the symbolic check compares where it is not the two forms as displayed (the book's parts plus one it
    # leaves out, the size the package's condition is solved for)
    compared: str = ""

    @property
    def ours_tex(self) -> str:
        return broken_chain(self.ours, width=self.width)

    @property
    def ours_book(self) -> str:
        return equation(*self.ours, book=True)

    @property
    def check(self) -> str:
        parts = []
        if self.symbolic is not None:
            parts.append("symbolically equal (sympy reduces the difference to 0)"
                         + (f", comparing {self.compared}" if self.compared else ""))
        if self.numbers:
            n = sum(x.agrees for x in self.numbers)
            parts.append(f"{n} of {len(self.numbers)} worked numbers reproduced")
        return "; ".join(parts) or "compared in the note"

    def verify(self) -> "Entry":
        if self.symbolic is not None and not equal(*self.symbolic):
            raise AssertionError(f"{self.key}: the book's form and the package's are not equal")
        for x in self.numbers:
            if x.agrees != x.expect:
                raise AssertionError(f"{self.key}: {x.what}: book {x.book}, package {x.package}")
        return self


@dataclass(frozen=True)
class Counted:
    """One display equation or worked formula of a chapter, as counted (the rule: :data:`COUNTING`).

    ``entry`` is the key of the :class:`Entry` that reproduces it; without one, ``why`` says why it is
    explained rather than reproduced (a definition with no cost, a figure's caption, ...).
    """

    chapter: str     # a key of CHAPTERS
    where: str       # the book's label (@eq-...) or its section and cell
    what: str        # what it says, in a few words
    entry: str = ""
    why: str = ""


#: The chapters the companion covers: key -> (title, path in the book's repository).
CHAPTERS: Dict[str, Tuple[str, str]] = {
    "DT": ("Distributed Training", "book/quarto/contents/vol2/distributed_training/distributed_training.qmd"),
    "CC": ("Collective Communication", "book/quarto/contents/vol2/collective_communication/collective_communication.qmd"),
    "AC": ("Communication Foundations (appendix)", "book/quarto/contents/vol2/backmatter/appendix_communication.qmd"),
    "FA": ("Fleet Foundations (appendix)", "book/quarto/contents/vol2/backmatter/appendix_fleet.qmd"),
    "FT": ("Fault Tolerance (its checkpoint equations)", "book/quarto/contents/vol2/fault_tolerance/fault_tolerance.qmd"),
}

#: How the equations of a chapter were counted.
COUNTING = ("every display equation of the chapter (a display math block, labelled or not, counted once even when it "
            "holds an aligned chain) and every worked formula (a formula the text or a notebook cell evaluates "
            "to a number the book prints); an equation printed again in another chapter is counted where it is "
            "defined, and listed in the other chapter pointing to the same entry")


def _eq(lhs_tex: str, rhs) -> str:
    return f"{lhs_tex} = {latex(rhs)}"


# --------------------------------------------------------------------------------------------------
# Collectives (CC, AC)
# --------------------------------------------------------------------------------------------------
def collectives() -> List[Entry]:
    """The book's collective-communication equations: point to point, the all-reduces, the others."""
    return _point_to_point() + _all_reduces() + _other_collectives()


def _point_to_point() -> List[Entry]:
    p2p = PointToPoint(NMSG, BETA, ALPHA)
    nstar = sp.solve(sp.Eq(ALPHA, NMSG / BETA), NMSG)[0]     # where latency and transfer time are equal
    return [
        Entry("alpha-beta", "Point-to-point transfer (alpha-beta model)",
              "AC @eq-alpha-beta; CC, The alpha-beta model; NOT",
              _eq("T", ALPHA + NMSG / BETA), (p2p, p2p.doit()), (ALPHA + NMSG / BETA, p2p),
              (Number("one 400 KB message, alpha 2 us, beta 50 GB/s (CC, message fusion)", 10e-6,
                      value(PointToPoint(400e3, 50e9, 2e-6)), "s", 0.005),
               Number("100 messages of 4 KB: their latency alone (CC)", 200e-6,
                      value(100 * PointToPoint(0, 50e9, 2e-6)), "s", 1e-12))),
        Entry("crossover", "Latency-bandwidth crossover size",
              "AC @eq-crossover; CC, The alpha-beta model and the critical message size notebook; NOT",
              _eq("n^*", ALPHA * BETA),
              (ALPHA, NMSG / BETA), (ALPHA * BETA, nstar),
              (Number("InfiniBand NDR, alpha 2 us, beta 50 GB/s (CC notebook)", 100e3,
                      value(nstar.subs({ALPHA: 2e-6, BETA: 50e9})), "B", 1e-9),
               Number("InfiniBand NDR, alpha 5 us, beta 50 GB/s (AC notebook)", 250e3,
                      value(nstar.subs({ALPHA: 5e-6, BETA: 50e9})), "B", 1e-9)),
              "The package's form is the condition: the message size n at which the point-to-point term's "
              "latency equals its transfer time, solved for n by sympy. The book gives two sizes for the "
              "same fabric because CC takes alpha = 2 us and AC takes mlsysim's registry latency, 5 us.",
              compared="the book's n* with the n that sympy solves the package's condition for"),
    ]


def _all_reduces() -> List[Entry]:
    ring = RingAllReduce(M, N, BETA, ALPHA)
    tree = TreeAllReduce(M, N, BETA, ALPHA)
    book_ring = 2 * (N - 1) / N * M / BETA + 2 * (N - 1) * ALPHA
    book_tree = 2 * LOG2N * M / BETA + 2 * LOG2N * ALPHA
    book_half = (N - 1) / N * M / BETA + (N - 1) * ALPHA
    m_x = sp.solve(sp.Eq(ring.doit(), tree.doit()), M)[0]    # ring-tree crossover payload, exactly
    book_m_x = ALPHA * BETA * ((N - 1) - LOG2N) / (LOG2N - (N - 1) / N)
    at100 = {N: 100, ALPHA: 5e-6, BETA: 50e9}
    exact, approx, boxed = (value(e.subs(at100)) for e in (m_x, N * ALPHA * BETA / LOG2N, N * ALPHA * BETA))
    return [
        Entry("ring", "Ring AllReduce", "AC @eq-ring-allreduce; CC, Ring AllReduce",
              _eq(rf"T_{{{T}{{ring}}}}", book_ring), (ring, ring.doit()), (book_ring, ring),
              (Number("1 GB over 256 GPUs, 50 GB/s, 5 us (AC)", 42.4e-3,
                      value(RingAllReduce(1e9, 256, 50e9, 5e-6)), "s", 0.002),
               Number("its latency term 2(N - 1) alpha: 1 MB over 64 GPUs, 10 us (CC, ring vs tree notebook)",
                      1260e-6, value(RingAllReduce(0, 64, 10e9, 10e-6)), "s", 1e-12))),
        Entry("rs-ag", "ReduceScatter, AllGather, and AllReduce as their sequence",
              "AC @eq-reducescatter, @eq-allgather; CC, collective primitives table; DT, sequence parallelism",
              _eq(rf"T_{{{T}{{reducescatter}}}} = T_{{{T}{{allgather}}}}", book_half),
              (ReduceScatter(M, N, BETA, ALPHA) + AllGather(M, N, BETA, ALPHA), ring.doit()),
              (2 * book_half, ReduceScatter(M, N, BETA, ALPHA) + AllGather(M, N, BETA, ALPHA)), (),
              "Each is one of the ring all-reduce's two phases. AC says the two add up exactly to "
              "@eq-ring-allreduce, and DT writes AllReduce = AllGather(ReduceScatter(X)); the package checks "
              "ReduceScatter + AllGather = RingAllReduce symbolically."),
        Entry("tree", "Tree AllReduce", "AC @eq-tree-allreduce; CC, Tree AllReduce and the crossover point",
              _eq(rf"T_{{{T}{{tree}}}}", book_tree), (tree, tree.doit()), (book_tree, tree),
              (Number("1 GB over 256 GPUs, 50 GB/s, 5 us (AC)", 320.1e-3,
                      value(TreeAllReduce(1e9, 256, 50e9, 5e-6)), "s", 0.0005),
               Number("its bandwidth term 2 log2(N) M / beta: 1 MB over 64 GPUs at 10 GB/s (CC notebook)",
                      1200e-6, value(TreeAllReduce(1e6, 64, 10e9, 0)), "s", 1e-12)),
              "CC writes the same expression once as T_tree-like and once as T_tree; the registry has both "
              "macros. mlsysim's calc_tree_allreduce_time rounds log2 N up, which agrees for powers of two."),
        Entry("double-tree", "Double binary tree AllReduce", "CC, Double binary tree",
              _eq(rf"T_{{{T}{{double-tree}}}}", 2 * LOG2N * ALPHA + 2 * M / BETA),
              (DoubleTreeAllReduce(M, N, BETA, ALPHA), DoubleTreeAllReduce(M, N, BETA, ALPHA).doit()),
              (2 * LOG2N * ALPHA + 2 * M / BETA, DoubleTreeAllReduce(M, N, BETA, ALPHA)), (),
              "The figure beside it is drawn with mlsysim's calc_double_binary_tree_allreduce_time, which "
              "multiplies the latency by 1.2 and uses 2(N-1)/N M/beta times 1.05: not the formula printed."),
        Entry("ring-tree", "Ring-tree crossover payload", "AC, Ring vs. tree vs. recursive halving-doubling "
              "(sec-appdx-comm-foundations-ring-vs-tree: the boundary in words, M against n*); CC, The algorithm "
              "crossover point",
              _eq(rf"M_{{{T}{{crossover}}}}", book_m_x), (ring, tree), (book_m_x, m_x),
              (Number("N = 64, alpha 10 us, beta 10 GB/s (CC notebook)", 1.1e6,
                      value(m_x.subs({N: 64, ALPHA: 10e-6, BETA: 10e9})), "B", 0.05),),
              "The package's form is the condition T_ring = T_tree; sympy solves it for M: the exact form above, "
              "the crossover of AC's @eq-ring-allreduce and @eq-tree-allreduce (AC's section gives the boundary "
              "only in words: ring well above n*, tree well below). CC gives two approximations: N alpha beta / log2 N "
              f"({approx / 1e6:.2f} MB at N = 100, alpha 5 us, beta 50 GB/s, where the exact form gives "
              f"{exact / 1e6:.2f} MB), and, boxed, the coarser N alpha beta ({boxed / 1e6:.0f} MB), which "
              "it calls an upper-scale heuristic."),
    ]


def _other_collectives() -> List[Entry]:
    a2a = AllToAll(M, N, BETA, ALPHA)
    hier = HierarchicalAllReduce(M, sym.n_nodes, sym.apn, F["beta_in"], F["alpha_in"], F["beta_out"], F["alpha_out"])
    book_half = (N - 1) / N * M / BETA + (N - 1) * ALPHA
    # CC's MoE notebook: 8 GPUs, 64 tokens of 4.096 KB to each peer, 3 us, 50 GB/s
    per_peer = 64 * 4096
    return [
        Entry("alltoall", "AllToAll", "AC @eq-alltoall; CC, collective primitives table and the MoE notebook",
              _eq(rf"T_{{{T}{{alltoall}}}}", book_half), (a2a, a2a.doit()), (book_half, a2a),
              (Number("8 GPUs, 64 tokens of 4.096 KB to each of 7 peers, one after another, 3 us, 50 GB/s "
                      "(CC notebook: 7 x 8 us, its bandwidth term 5.24 us rounded to 5)", 56e-6,
                      value(AllToAll(8 * per_peer, 8, 50e9, 3e-6)), "s", 0.05),),
              "Each rank keeps 1/N of its M bytes and sends one share to each of the N - 1 others: the "
              "package's term is N - 1 point-to-point transfers of M/N bytes."),
        Entry("hierarchical", "Hierarchical AllReduce (ReduceScatter in the node, ring across, AllGather)",
              "CC, Hierarchical AllReduce and the Llama 70B communication budget notebook",
              _eq(rf"T_{{{T}{{hier}}}}", 2 * ((sym.apn - 1) / sym.apn * M / F["beta_in"])
                  + RingAllReduce.formula(M / sym.apn, sym.n_nodes, F["beta_out"], F["alpha_out"])),
              (hier, hier.doit()),
              (2 * ReduceScatter(M, sym.apn, F["beta_in"], 0)
               + RingAllReduce(M / sym.apn, sym.n_nodes, F["beta_out"], F["alpha_out"]),
               hier.subs(F["alpha_in"], 0)),
              (Number("Llama 70B: 140 GB over 16 nodes of 8, NVLink 450 GB/s per direction, NDR 50 GB/s, "
                      "3 us (the cell's computed total)", 1.2008,
                      value(HierarchicalAllReduce(140e9, 16, 8, 450e9, 0, 50e9, 3e-6)), "s", 0.0005),
               Number("the same as one flat ring over 128 GPUs", 5557e-3,
                      value(RingAllReduce(140e9, 128, 50e9, 3e-6)), "s", 0.001)),
              "The book's phases leave out the intra-node latency; with it at 0 the package's term is the "
              "book's. The notebook's header comment says about 929 ms, which is the total at 900 GB/s "
              "(NVLink's two directions together); the cell computes 1.2 s at 450 GB/s per direction. "
              "mlsysim's solver uses this term only when a DP group has several ranks on each of several "
              "nodes."),
    ]


# --------------------------------------------------------------------------------------------------
# The step (DT, NOT)
# --------------------------------------------------------------------------------------------------
def _model():
    """The transformer model and its quantities' symbols by name."""
    model = build_model()
    return model, {n: model.quantity(n).symbol for n in model}


def step() -> List[Entry]:
    """One reading of the book's terms throughout: T_compute/N is the replica's roofline time T_node,
    T_comm the DP, TP and EP communication, T_overlap the hidden share eta_ov T_DP, and T_sync the
    in-step waiting: the pipeline bubble (the straggler multiplies the step instead)."""
    model, q = _model()
    t_overlap = sym.ov * sym.eta_ov * q["T_dp"]
    book_law = q["T_node"] + q["T_comm"] + q["T_bubble"] - t_overlap
    ours = model.definition("T_sync").subs(q["T_dp_exposed"], model.definition("T_dp_exposed")).subs(
        q["T_comm"], model.definition("T_comm"))
    law_equal = [(book_law.subs({q["T_comm"]: model.definition("T_comm"), sym.ov: o}),
                  ours.subs(sym.ov, o)) for o in (0, 1)]
    assert all(equal(a, b) for a, b in law_equal)
    llama = EXAMPLES[0]
    point = operating_point_of(llama.model, llama.fleet, **llama.solve_kwargs)
    vals = {n: point[n].value for n in ("T_comm", "T_node", "T_step", "scaling_efficiency")}
    f_compute = q["T_node"] / q["T_step"]
    amdahl = 1 / (1 + (q["T_step"] - q["T_node"]) / q["T_node"])
    # DT, 175B worked example: 2.1 s of compute per device, 14 s of raw AllReduce, 75 % hidden
    exposed = exposed_dp(14, 1).subs(sym.eta_ov, sp.Rational(3, 4))
    return [
        Entry("fleet-law", "The distributed step-time law", "NOT, Distributed Systems Notation; DT, The physics of "
              "the cluster",
              rf"T_{{{T}{{step}}}}(N) = \frac{{T_{{{T}{{compute}}}}}}{{N}} + T_{{{T}{{comm}}}}(N) "
              rf"+ T_{{{T}{{sync}}}}(N) - T_{{{T}{{overlap}}}}",
              (q["T_sync"], model.definition("T_sync")), law_equal[1], (),
              "Equal term by term, with overlap on (checked) and off, when T_compute/N is the replica's "
              "roofline time T_node, T_comm the DP, TP and EP communication, T_overlap the share eta_ov T_DP "
              "that overlap hides (DP only), and T_sync the pipeline bubble, the in-step waiting. mlsysim has "
              "no barrier term; its straggler multiplies the whole step (T_step is f_strag times this when "
              "f_strag > 1). The same reading is used in every entry below."),
        Entry("rho", "Communication-to-computation ratio", "DT, The physics of the cluster; NOT",
              rf"\rho = \frac{{T_{{{T}{{comm}}}}(N)}}{{T_{{{T}{{compute}}}} / N}}",
              (CommComputeRatio(q["T_comm"], q["T_node"]), CommComputeRatio(q["T_comm"], q["T_node"]).doit()),
              (q["T_comm"] / q["T_node"], CommComputeRatio(q["T_comm"], q["T_node"])), (),
              f"At {llama.title} ({llama.call()}) the package gives rho = "
              f"{vals['T_comm'] / vals['T_node']:.3f}: communication before overlap over the replica's "
              "roofline time."),
        Entry("scaling-efficiency", "Scaling efficiency, and mlsysim's scaling_efficiency",
              "DT, The physics of scaling: Amdahl's law with communication, and the 175B scaling-efficiency "
              "notebook (the definition is @eq-distributed-training-scaling-efficiency); NOT, fleet "
              "capacity factors",
              rf"\eta_{{{T}{{scaling}}}} = \frac{{T_{{{T}{{compute}}}}}}{{N \, T_{{{T}{{step}}}}(N)}}"
              rf" = \frac{{1}}{{1 + \frac{{N (T_{{{T}{{comm}}}} + T_{{{T}{{sync}}}} - T_{{{T}{{overlap}}}})}}"
              rf"{{T_{{{T}{{compute}}}}}}}}",
              (q["scaling_efficiency"], model.definition("scaling_efficiency")), (amdahl, f_compute),
              (Number("GPT-3 175B on 1,024 GPUs: 2.1 s of compute, 14 s of AllReduce, 75 % overlapped (DT)",
                      0.375, value(sp.Rational(21, 10) / (sp.Rational(21, 10) + exposed)), "1", 0.002),),
              "DT's eta_scaling = T_compute / (N T_step(N)) is its definition T_1 / (N T_N) with T_1 = "
              "T_compute; through the step-time law it is the second form. mlsysim's field "
              "scaling_efficiency is the same ratio, T_node / T_step. The notation chapter gives this ratio "
              "two symbols: eta_scaling = T_1 / (N T_N) (\\ScalingEfficiency, a measured speedup) and "
              "f_compute = (T_compute / N) / T_step(N) (\\UsefulComputeFraction). The package prints the "
              "latter, the one defined from the step-time law's terms; at "
              f"{llama.title} it is {vals['scaling_efficiency']:.4f}."),
        Entry("effective-throughput", "Effective fleet throughput", "NOT, fleet capacity factors",
              rf"R_{{{T}{{eff}}}} = N R_{{{T}{{peak}}}} \, {T}{{MFU}} \, \eta_{{{T}{{scaling}}}} \, "
              rf"\eta_{{{T}{{goodput}}}}",
              (q["mfu"], model.definition("mfu")), (q["mfu_node"] * f_compute, model.definition("mfu").subs(
                  q["scaling_efficiency"], model.definition("scaling_efficiency"))), (),
              "The package's fleet MFU is the device MFU times f_compute (the in-step scaling loss), so "
              "N R_peak MFU_fleet is the book's R_eff with eta_goodput = 1: mlsysim models no out-of-step "
              "loss (checkpoints, failures, maintenance).",
              compared="the book's R_eff / (N R_peak) at eta_goodput = 1, MFU eta_scaling, with the package's "
                       "fleet MFU"),
    ]


# --------------------------------------------------------------------------------------------------
# Memory (DT)
# --------------------------------------------------------------------------------------------------
def memory() -> List[Entry]:
    model, q = _model()
    P, n = 7e9, 64
    state = {z: value(weight_bytes(P, 2, n, z) + gradient_bytes(P, 1, 2, n, z) + optimizer_bytes(P, 1, n, z)
                      .subs(sym.ADAM, 12)) for z in (0, 1, 2, 3)}
    s, b, h, a, L = 2048, 4, 12288, 96, 96
    layer = ActivationsNoRecompute(sym.s, F["b_micro"], sym.H, F["n_heads"], 1, sym.bpp)
    return [
        Entry("memory-total", "Training memory per accelerator", "DT, Compute phase",
              rf"M_{{{T}{{total}}}} = M_{{{T}{{weights}}}} + M_{{{T}{{gradients}}}} + M_{{{T}{{optimizer}}}}"
              rf" + M_{{{T}{{activations}}}}",
              (q["M_acc"], model.definition("M_acc")),
              (q["M_weights"] + q["M_grads"] + q["M_optimizer"] + q["M_activations"] + q["M_buffers"],
               model.definition("M_acc")), (),
              "mlsysim adds a fifth part, communication buffers (5 % of the gradients for the bucket, and two "
              "activation buffers with a pipeline): the book's four parts plus M_buffers.",
              compared="the book's four parts plus M_buffers with the package's sum"),
        Entry("zero", "ZeRO stages: 16 bytes per parameter and their shards", "DT, ZeRO memory savings notebook "
              "and figure",
              rf"C_{{{T}{{state,total}}}} = P \times 16\ {T}{{bytes}}, \qquad "
              rf"C_{{{T}{{state,ZeRO3}}}} = \frac{{C_{{{T}{{state,total}}}}}}{{N}}",
              (q["M_weights"] + q["M_grads"] + q["M_optimizer"],
               model.definition("M_weights") + model.definition("M_grads") + model.definition("M_optimizer")),
              None,
              tuple(Number(f"7B parameters, 64 GPUs, ZeRO-{z}" if z else "7B parameters, no ZeRO", bk, state[z],
                           "B", 0.005)
                    for z, bk in ((0, 112e9), (1, 29.3e9), (2, 15.5e9), (3, 1.75e9))),
              "16 bytes per parameter are 2 for the weights, 2 for the gradients and 12 of Adam state; "
              "ZeRO-1 shards the 12, ZeRO-2 also the gradients' 2, ZeRO-3 also the weights' 2 (2/N, 2/N and "
              "12/N bytes per parameter at stage 3, as DT writes them). The package's sum, per accelerator, "
              "gives the figure's four numbers."),
        Entry("zero3-comm", "ZeRO-3 / FSDP communication volume", "DT, after the ZeRO partitioning figure; CC, "
              "FSDP communication patterns",
              rf"V_{{{T}{{ZeRO-3}}}} = \tfrac{{3}}{{2}} V_{{{T}{{DP}}}}",
              (Zero3CommVolume(F["M_param"], N), Zero3CommVolume(F["M_param"], N).doit()),
              (sp.Rational(3, 2) * DataParallelCommVolume(F["M_param"], N), Zero3CommVolume(F["M_param"], N)),
              (),
              "DT's 1.5x (Rajbhandari et al. 2020: two AllGathers of the parameters and one ReduceScatter of "
              "the gradients, against a ReduceScatter and an AllGather for plain data parallelism) is the "
              "package's; mlsysim's ZeroShardingModel gives the same 1.5. CC says FSDP's volume is "
              "'comparable to' one AllReduce (a note for the authors). mlsysim's DistributedModel prices the "
              "DP all-reduce the same at every ZeRO stage (see the differences below)."),
        Entry("activations", "Activation memory without recomputation (Korthikanti et al. 2022)",
              "DT, GPT-3 activation budget (computed with mlsysim's calc_activation_memory)",
              "",
              (layer, layer.doit()), None,
              (Number("GPT-3: 96 layers, S 2048, b 4, d 12288, 96 heads, BF16, no recomputation (the cell "
                      "checks it is over 1,000 GB)", 1.1e12,
                      L * value(ActivationsNoRecompute(s, b, h, a, 1, 2)), "B", 0.05),
               Number("the same with full recomputation, 2 S b d per layer (the cell checks it is under 25 GB)",
                      19e9, L * 2 * s * b * h, "B", 0.05)),
              "The chapter prints no formula, only the numbers its cell computes with mlsysim's "
              "calc_activation_memory (Korthikanti et al. 2022: S b d (34 + 5 a S / d) bytes per layer at two "
              "bytes per value, a the attention heads). The package's term is that size for one layer, "
              "divided among the tensor-parallel degree as in Korthikanti's section 4.2.1 (here 1). Its model "
              "(mlsysim's TrainingMemoryModel) uses 34 S b d per layer, the selective-recomputation size, when "
              "recomputation is off."),
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
    mb = F["b_micro"]       # one microbatch (the model's B_held, the samples a stage holds, are more with a pipeline)
    frac = BubbleFraction(p, v, m)
    rows = [("p 4, m 4 (DT figures)", 4, 4, 0.429), ("p 8, m 32 (DT notebook)", 8, 32, 0.179),
            ("p 16, m 32 (DT, GPT-175B)", 16, 32, 0.319), ("p 4, m 32 (DT, configuration C)", 4, 32, 0.086),
            ("p 4, m 8 (DT, zero-bubble schedules)", 4, 8, 0.27), ("p 16, m 16 (DT margin figure)", 16, 16, 0.48)]
    book_plain = (p - 1) / (p - 1 + m)
    book_inter = (p - 1) / (p - 1 + m * v)
    return [
        Entry("bubble", "Pipeline bubble fraction", "AC @eq-pipeline-bubble; DT, pipeline parallelism (figures, "
              "definition, notebook); CC, fallacies",
              _eq(r"b_{\text{pipe}}", book_plain), (frac, frac.doit()), (book_plain, frac.subs(v, 1)),
              tuple(Number(w, bk, value(BubbleFraction(pp, 1, mm)), "1", 0.02) for w, pp, mm, bk in rows),
              "The package's term has the interleaved form (next entry); with V = 1 it is the book's. The "
              "book names the fraction F_bubble, 'Bubble Fraction' and b_pipe.",
              compared="the book's form with the package's at V = 1"),
        Entry("interleaved", "Interleaved pipeline bubble fraction", "AC @eq-interleaved-bubble",
              _eq(r"b_{\text{interleaved}}", book_inter), (frac, frac.doit()), (book_inter, frac),
              (Number("p 8, m 16: the bubble's reduction from V = 1 to V = 4 (AC)", 3.1,
                      value(BubbleFraction(8, 1, 16) / BubbleFraction(8, 4, 16)), "1", 0.02),),
              "mlsysim's calc_pipeline_bubble is this form; the package prints it under the registry's "
              "\\InterleavedPipelineBubbleFraction, whose form this is, for every V (with V = 1 it is the "
              "book's \\PipelineBubbleFraction)."),
        Entry("bubble-time", "Pipeline bubble as time", "mlsysim's DistributedModel", "",
              (BubbleTime(F["T_busy"], p, v, m), BubbleTime(F["T_busy"], p, v, m).doit()),
              (F["T_busy"] * frac / (1 - frac), BubbleTime(F["T_busy"], p, v, m)), (),
              "The book turns the fraction into no time. mlsysim adds T_busy b / (1 - b) to a step whose busy "
              "time is T_busy (the replica's roofline time), so that the bubble is the fraction b of the "
              "whole; sympy checks that this is the package's T_busy (p - 1) / (V m)."),
        Entry("pipeline-send", "Pipeline stage-to-stage send", "DT, pipeline parallelism and the 3D traffic "
              "notebook",
              rf"M_{{{T}{{send}}}} = B_{{\mu}} S d_{{{T}{{model}}}} \times 2",
              (PipelineSendTime(mb, sym.s, sym.H, sym.bpp, BETA, ALPHA),
               PipelineSendTime(mb, sym.s, sym.H, sym.bpp, BETA, ALPHA).doit()), None,
              (Number("GPT-3 boundary: micro-batch 4, S 2048, d 12288, BF16 (about 200 MB)", 201e6,
                      4 * 2048 * 12288 * 2, "B", 0.005),),
              "The book gives the bytes that cross one stage boundary per micro-batch (B_mu S d_model at two "
              "bytes); the package prices them as one point-to-point transfer of B_micro S d s_elem bytes. "
              "mlsysim's DistributedModel does not price this send."),
        Entry("capacity", "Expert capacity", "DT, expert parallelism; CC, MoE routing and the AllToAll notebook",
              rf"C = C_{{{T}{{cap}}}} \frac{{B S}}{{E}}",
              (ExpertCapacity(F["C_cap"], F["n_tok"], F["N_experts"]),
               ExpertCapacity(F["C_cap"], F["n_tok"], F["N_experts"]).doit()),
              (F["C_cap"] * F["n_tok"] / F["N_experts"], ExpertCapacity(F["C_cap"], F["n_tok"], F["N_experts"])),
              (Number("4,096 tokens over 64 experts, routed uniformly (CC notebook): each expert's share, the "
                      "capacity at factor 1", 64, value(ExpertCapacity(1, 4096, 64)), "1", 0),),
              "DT's C (B S)/E is the package's (Fedus et al. 2022, eq. 3), with the book's C written C_cap "
              "as the registry does. CC writes ceil(P T k / E x C), with the top-k factor k and a ceiling: "
              "twice as many slots for top-2 routing (a note for the authors). mlsysim has no capacity "
              "factor; its routing-imbalance factor multiplies the all-to-all volume."),
    ]


#: The modules that hold each chapter's further entries and its count, ``derivations.book_<name>``: each has
#: ``groups() -> Dict[str, List[Entry]]`` and ``inventory() -> List[Counted]``.
CHAPTER_MODULES: Tuple[str, ...] = ("dt", "cc", "acfa", "ft", "overlap")


def _chapter_modules():
    import importlib
    return [importlib.import_module(f"derivations.book_{name}") for name in CHAPTER_MODULES]


def inventory_check(counted: List[Counted], keys) -> None:
    """Every counted equation names a chapter, and either an entry that exists or why it is explained."""
    for c in counted:
        if c.chapter not in CHAPTERS:
            raise AssertionError(f"{c.where}: unknown chapter {c.chapter!r}")
        if bool(c.entry) == bool(c.why):
            raise AssertionError(f"{c.chapter} {c.where}: give an entry or why it is explained, not both or none")
        if c.entry and c.entry not in keys:
            raise AssertionError(f"{c.chapter} {c.where}: no entry {c.entry!r}")


def context() -> Dict[str, object]:
    entries = {
        "Collectives": collectives(),
        "The step": step(),
        "Memory": memory(),
        "Pipeline and experts": pipeline(),
    }
    counted: List[Counted] = []
    for module in _chapter_modules():
        for title, group in module.groups().items():
            entries.setdefault(title, []).extend(group)
        counted.extend(module.inventory())
    for group in entries.values():
        for e in group:
            e.verify()
    keys = [e.key for group in entries.values() for e in group]
    if len(set(keys)) != len(keys):
        raise AssertionError("two entries of the companion share a key")
    inventory_check(counted, set(keys))
    notes = [f"{m}: {why}." for m, why in registry.REGISTRY_CLASHES.items()]
    return {"groups": entries, "differences": differences(), "author_notes": AUTHOR_NOTES, "examples": EXAMPLES[:2],
            "registry_notes": notes, "count": sum(len(g) for g in entries.values()),
            "inventory": counted, "chapters": CHAPTERS, "counting": COUNTING}
