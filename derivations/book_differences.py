"""Where mlsysim's code and the book's prose differ (:func:`differences`: both numbers at one configuration), and
the inconsistencies within the book, for its authors (:data:`AUTHOR_NOTES`); parts of the book companion
(``derivations/book.py``), cited as it cites (DT: Distributed Training, CC: Collective Communication, AC: the
Communication Foundations appendix)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Tuple

from mlsysim_sym.operating_point import operating_point_of
from mlsysim_sym.printing import value_latex
from mlsysim_sym.symbols import sym

from .common import EXAMPLES


@dataclass(frozen=True)
class Difference:
    topic: str
    book: str
    code: str
    rows: Tuple[Tuple[str, str, str], ...]   # (what, book's way, mlsysim's way), values as LaTeX


def differences() -> List[Difference]:
    mixtral = EXAMPLES[1]
    pm = operating_point_of(mixtral.model, mixtral.fleet, **mixtral.solve_kwargs)
    layers = int(pm.values[sym.L])        # every Mixtral layer is a mixture-of-experts layer
    t_ep = pm["T_ep"].value
    group = int(pm.values[sym.tp] * pm.values[sym.ep])
    # the book: dispatch and combine, in the forward and the backward pass, in every MoE layer
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
    floor = max(n_l * back, n_l * ar)
    # gradient accumulation: mlsysim's T_node already covers the k micro-batches of the local batch
    k, ar_c, t_node = pm.values[sym.GA], pm["T_dp_allreduce"].value * pm.values[sym.c], pm["T_node"].value
    return [
        Difference("MoE all-to-all per step",
                   "two all-to-alls (dispatch and combine) per MoE layer per pass (DT, CC), read here as 4 per "
                   "layer per training step, forward and backward",
                   "one all-to-all per step of the replica's tokens times top-k, priced on the fabric even when "
                   f"the expert-parallel group fits in one node (here TP x EP = {group} GPUs in a node of "
                   f"{int(pm.values[sym.apn])})",
                   (("EP communication per step, " + mixtral.title + f", {layers} MoE layers, at mlsysim's "
                     "volume and fabric price", value_latex(book_ep, "s"), value_latex(t_ep, "s")),
                    ("all-to-alls per step", f"{4 * layers}", "1"))),
        Difference("ZeRO-3 communication",
                   "about 3 N_L collectives and 1.5 times the DDP volume (DT)",
                   "the stage changes memory only: the DP all-reduce is calc_ring_allreduce_time on the same "
                   "gradient bytes at every stage, although solve()'s docstring says zero_stage is 'for sharding "
                   "memory and altering DP comms'",
                   (("DP communication per step, " + llama.title + ", ZeRO-3 (the book's way: 1.5 times "
                     "mlsysim's bandwidth-bound all-reduce)", value_latex(1.5 * dp0, "s"), value_latex(dp3, "s")),)),
        Difference("Gradient accumulation and the DP all-reduce",
                   "one all-reduce every k micro-steps, an overhead of comm / (k x compute of one micro-step) "
                   "(DT notebook)",
                   "the replica's step time T_node already computes all k micro-batches of the local batch, and "
                   "the one all-reduce per step is still divided by k: T_DP = c T_AR,DP / k",
                   ((f"DP all-reduce time over the replica's compute time per step, {mixtral.title}, k = {k}",
                     f"{ar_c / t_node:.2f}", f"{ar_c / (k * t_node):.2f}"),)),
        Difference("Overlap",
                   "CC: a per-layer schedule, T_backward + T_first layer + (N_L - 1) T_exposed; DT's worked "
                   "example: a fixed 75 % hidden",
                   "a fixed fraction eta_ov (0.85) of the DP all-reduce hidden, however long the backward "
                   f"pass; TP and EP never overlapped. In CC's example no schedule can finish before "
                   f"max(T_backward, T_comm) = {floor * 1e3:.1f} ms, and mlsysim's fraction hides more "
                   "communication than the backward pass lasts",
                   ((f"CC's 7B example, backward and all-reduce (without overlap {sequential:.3f} s)",
                     value_latex(per_layer, "s"), value_latex(fixed, "s")),)),
        Difference("Stragglers and congestion",
                   "the slowest worker sets the step; about N p stragglers per step (no formula)",
                   "the step times f_strag when f_strag > 1; DP, TP and EP communication times c_cong",
                   ()),
    ]


#: Inconsistencies within the book, for its authors: where, and what disagrees.
AUTHOR_NOTES: Tuple[str, ...] = (
    "Two hierarchical AllReduce algorithms: CC (Hierarchical AllReduce) reduce-scatters inside each node, "
    "all-reduces M/G bytes on every GPU across nodes, and all-gathers (mlsysim's "
    "calc_hierarchical_allreduce_time); AC (Hierarchical AllReduce) reduces to one result per node, "
    "all-reduces among one representative per node, and broadcasts.",
    "FSDP / ZeRO-3 communication: DT (after @fig-zero-partitioning) counts about 3 N_L collectives and 1.5 "
    "times the DDP volume; CC (FSDP communication patterns) counts 2 N_L collectives with a volume "
    "'comparable to' one AllReduce.",
    "CC's Llama 70B communication budget notebook: its header comment gives about 929 ms for the "
    "hierarchical AllReduce, which is the total at 900 GB/s; the cell computes about 1,201 ms with NVLink at "
    "450 GB/s per direction.",
    "The bubble fraction has three names in DT and CC (F_bubble, 'Bubble Fraction', b_pipe) and is written "
    "(p-1)/(p-1+m), (p-1)/(p+m-1) and (p-1)/(m+p-1); AC names it b_pipe (@eq-pipeline-bubble) and gives the "
    "interleaved form (@eq-interleaved-bubble), which DT and CC never use although the notation chapter "
    "defines V.",
    "MoE capacity: C (B S)/E in DT (expert parallelism) against ceil(P T k / E x C) in CC (MoE routing), a "
    "factor k apart for top-k routing.",
    "Latency-bandwidth crossover on InfiniBand NDR: 100 KB in CC's critical message size notebook (alpha "
    "2 us) and 250 KB in AC's crossover notebook (alpha 5 us).",
    "Ring AllReduce in worked numbers: CC's gradient-synchronization cell uses 2 M / beta (5.6 s for 70B at "
    "50 GB/s), the AllReduce cost notebook beside it 2 (N-1)/N M / beta (about 5.5 s at N = 64); CC's "
    "hierarchical bandwidth-multiplier notebook also prices its flat baseline at 2 M / beta (40 ms for 1 GB "
    "at 50 GB/s).",
    "NVLink: CC's bandwidth table compares per direction (9x InfiniBand, its caption says so), but "
    "@fig-hierarchical-allreduce badges an '18x' gap by setting 900 GB/s (both directions) against "
    "InfiniBand's 50 GB/s per port.",
    "CC's torus figure equates a volume in bytes with 2 M / beta, a time.",
    "ZeRO reductions: 4x and 8x in DT's @tbl-zero-stages (the limits for large N), 3.8x and 7.2x in "
    "@fig-zero-memory for N = 64.",
    "Optimizer state: 12 bytes per parameter (16 in all) in DT's ZeRO notebook; DT's hybrid budget shows "
    "a 'simplified' 8-byte convention beside the 12-byte one; the fleet appendix writes about 14 bytes per "
    "parameter of checkpoint state.",
    "The notation chapter gives one ratio two symbols: eta_scaling = T_1 / (N T_N) and f_compute = "
    "(T_compute / N) / T_step(N), equal when T_1 = T_compute; DT's Amdahl section writes the second as "
    "eta_scaling, and the fleet-capacity formula multiplies by eta_scaling for the in-step loss.",
    "The book writes d, p, t for the parallel degrees where the registry's macros print N_DP, N_PP, N_TP, "
    "C for \\ExpertCapacityFactor (C_cap) and E for \\ExpertCount (N_experts).",
)
