"""The Collective Communication chapter (CC) of *Machine Learning Systems* vol. 2, counted and checked.

Read whole at harvard-edge/cs249r_book commit 00219d318157abc13f86bdb3b0d8b536c058fe80,
``book/quarto/contents/vol2/collective_communication/collective_communication.qmd``. :func:`inventory` lists
every display equation and every worked formula (``derivations.book.COUNTING``) in the chapter's order;
:func:`groups` holds the entries that reproduce the ones no earlier entry covers. Fabric numbers the
chapter takes from mlsysim (0.3.0): InfiniBand NDR 400 Gbps = 50 GB/s, ``AlphaNdr`` 1.5 us, H100 NVLink
900 GB/s, Llama-2 70B 70e9 parameters.
"""
from __future__ import annotations

from typing import Dict, List

import sympy as sp

from mlsysim_sym import notation
from mlsysim_sym.symbols import sym
from mlsysim_sym.terms.base import Log2
from mlsysim_sym.terms.collectives import (AllToAll, DataParallelCommVolume, HierarchicalAllReduce, PointToPoint,
                                           ReduceScatter, RingAllReduce, TreeAllReduce, bytes_sent)
from mlsysim_sym.terms.networks import (AllReduceEnergy, BlockQuantRatio, ButterflyAllReduce, CompressedCommTime,
                                        CompressedTrainingTime, FsdpStartupTime, LogPOverlapTime, ParameterServerTime,
                                        TopKRatio, TorusAllReduce, error_feedback)

from .book import Counted, Entry, Number, _eq, equal, value

F = notation.FORMAL
M, N, BETA, ALPHA, NMSG = F["M_coll"], F["N_coll"], F["beta"], F["alpha"], F["n_msg"]
LOG2N = Log2(N)
T = r"\text"
NDR, ALPHA_NDR, NVLINK = 50e9, 1.5e-6, 900e9
GRAD_70B = 70e9 * 2          # Llama-2 70B gradient in BF16 (CC: "70 x 10^9 x 2 bytes")


def _ring_70b() -> Entry:
    bw = 2 * (N - 1) / N * NMSG / BETA
    lat = 2 * (N - 1) * ALPHA
    ring = RingAllReduce(NMSG, N, BETA, ALPHA)
    at = dict(M=GRAD_70B, n=64, beta=NDR, alpha=ALPHA_NDR)
    return Entry(
        "cc-ring-70b", "AllReduce cost for a 70B model (its bandwidth and latency terms)",
        "CC, notebook @nbk-collective-communication-allreduce-cost-70b-model and the gradient-synchronization "
        "definition",
        _eq(rf"T_{{{T}{{bandwidth}}}}", bw) + r", \qquad " + _eq(rf"T_{{{T}{{latency}}}}", lat),
        (ring, ring.doit()), (bw + lat, ring),
        (Number("Llama-2 70B gradient in BF16, 2 bytes x 70e9", 140e9, value(DataParallelCommVolume(GRAD_70B, 2)),
                "B", 1e-12),
         Number("its bandwidth term over 64 GPUs at 50 GB/s", 5512.5e-3,
                value(RingAllReduce(at["M"], 64, NDR, 0)), "s", 1e-4),
         Number("its latency term 2(N - 1) alpha, alpha = 1.5 us (printed to 0.1 ms)", 0.2e-3,
                value(RingAllReduce(0, 64, NDR, ALPHA_NDR)), "s", 0.06),
         Number("the total", 5512.7e-3, value(RingAllReduce(at["M"], 64, NDR, ALPHA_NDR)), "s", 1e-4),
         Number("at 60 % of the bandwidth: 'over nine seconds'", 9.0,
                value(RingAllReduce(at["M"], 64, 0.6 * NDR, ALPHA_NDR)), "s", 0.03),
         Number("1,000 GPUs at 50 GB/s: '2 x 140/50 = 5.6 s' (gradient-synchronization definition)", 5.6,
                value(RingAllReduce(at["M"], 1000, NDR, 0)), "s", 0.005)),
        "The notebook's two display equations are the ring's two terms, n the gradient bytes (the chapter's M). "
        "'Over nine seconds' at 60 % of the bandwidth is 9.19 s.")


def _bounds() -> List[Entry]:
    t_min = 2 * (N - 1) / N * M / BETA
    ring_steps = RingAllReduce(0, N, BETA, 1)
    return [
        Entry("cc-bandwidth-bound", "The bandwidth lower bound of an AllReduce",
              "CC, sec. The bandwidth-optimal lower bound; notebook "
              "@nbk-collective-communication-ring-allreduce-step-by-step-trace-4-gpus",
              _eq(rf"T_{{{T}{{bandwidth}}}}^{{{T}{{min}}}}", t_min),
              (DataParallelCommVolume(M, N) / BETA, (DataParallelCommVolume(M, N) / BETA).doit()),
              (t_min, RingAllReduce(M, N, BETA, 0)),
              (Number("4 GPUs, 4 elements: the steps 2(N - 1)", 6, value(RingAllReduce(0, 4, 1, 1)), "1", 0),
               Number("elements each GPU sends, 2(N - 1) M/N", 6, value(DataParallelCommVolume(4, 4)), "1", 0)),
              "Each rank sends (and receives) at least 2(N - 1)/N M bytes, the package's data-parallel volume; over "
              "beta it is the ring's bandwidth term, which sympy checks: the ring meets the bound."),
        Entry("cc-step-counts", "Sequential startup steps of the ring and the tree",
              "CC, sec. Tree AllReduce (1024 nodes; an 8-GPU group)",
              r"2(N - 1) \;\text{against}\; 2 \log_2 N",
              (ring_steps, ring_steps.doit()), (2 * (N - 1), ring_steps),
              (Number("ring over 1024 nodes", 2046, value(RingAllReduce(0, 1024, 1, 1)), "1", 0),
               Number("tree over 1024 nodes", 20, value(TreeAllReduce(0, 1024, 1, 1)), "1", 0),
               Number("their ratio ('100x')", 100, value(RingAllReduce(0, 1024, 1, 1) / TreeAllReduce(0, 1024, 1, 1)),
                      "1", 0.025),
               Number("ring over 8 GPUs (14 alpha)", 14, value(RingAllReduce(0, 8, 1, 1)), "1", 0),
               Number("tree over 8 GPUs (6 alpha)", 6, value(TreeAllReduce(0, 8, 1, 1)), "1", 0)),
              "The step counts are the latency terms over alpha."),
    ]


def _butterfly_and_torus() -> List[Entry]:
    bf = ButterflyAllReduce(M, N, BETA, ALPHA)
    book = 2 * LOG2N * ALPHA + 2 * (N - 1) / N * M / BETA
    X, Y, Z = F["X_torus"], F["Y_torus"], F["Z_torus"]
    torus = TorusAllReduce(M, X, Y, Z, BETA, ALPHA)
    assert equal(bf, RingAllReduce(M, N, BETA, 0) + TreeAllReduce(0, N, BETA, ALPHA))
    assert equal(torus.subs(ALPHA, 0), RingAllReduce(M, X * Y * Z, BETA, 0))
    return [
        Entry("cc-butterfly", "Recursive halving-doubling (butterfly) AllReduce",
              "CC, sec. Recursive halving-doubling (butterfly) and @tbl-allreduce-comparison",
              _eq(rf"T_{{{T}{{butterfly}}}}", book), (bf, bf.doit()), (book, bf), (),
              "The ring's bandwidth term with the tree's latency term (sympy checks T_butterfly = "
              "T_ring(alpha = 0) + T_tree(M = 0)); Thakur, Rabenseifner & Gropp (2005). The chapter prints no "
              "worked number for it; at the ring-vs-tree notebook's 1 MB over 64 GPUs (10 us, 10 GB/s) it gives "
              f"{value(ButterflyAllReduce(1e6, 64, 10e9, 10e-6)) * 1e6:.1f} us, below both."),
        Entry("cc-torus", "Dimension-ordered AllReduce on a torus",
              "CC, sec. Torus topology (TPU pods) (stated in the prose, no display)",
              "", (torus, torus.doit()), (RingAllReduce(M, X * Y * Z, BETA, 0), torus.subs(ALPHA, 0)), (),
              "ReduceScatters along X, Y, Z on M, M/X, M/(XY) bytes, then the AllGathers back: sympy checks that the "
              "bandwidth terms add to the flat ring's over N = XYZ ranks (the chapter's 'total bandwidth cost 2M/beta, "
              "same as a single Ring'); the latency is 2(X + Y + Z - 3) alpha, the chapter's 'proportional to "
              "2(X + Y + Z)'. Not counted: the chapter evaluates it to no number.", width=60),
    ]


def _crossover() -> List[Entry]:
    ring_big = 2 * N * ALPHA + 2 * M / BETA
    tree = 2 * LOG2N * ALPHA + 2 * LOG2N * M / BETA
    solved = sp.solve(sp.Eq(ring_big, tree), M)[0]
    book_rearranged = ALPHA * BETA * (LOG2N - N) / (1 - LOG2N)      # from 2M/beta (1 - log N) = 2 alpha (log N - N)
    approx = N * ALPHA * BETA / LOG2N
    at100 = {N: 100, ALPHA: 5e-6, BETA: 50e9}
    m_c = F["M_cross"]
    return [
        Entry("cc-crossover-approx", "The ring-tree crossover, as the chapter derives it for large N",
              "CC, sec. The algorithm crossover point (nine display equations) and notebook "
              "@nbk-collective-communication-ring-vs-tree-crossover",
              _eq(rf"M_{{{T}{{crossover}}}}", approx),
              (m_c, solved), (book_rearranged, solved),
              (Number("N = 100, alpha 5 us, beta 50 GB/s: N alpha beta / log2 N", 3.8e6, value(approx.subs(at100)),
                      "B", 0.02),
               Number("N = 64, alpha 10 us, beta 10 GB/s (notebook)", 1.1e6,
                      value(approx.subs({N: 64, ALPHA: 10e-6, BETA: 10e9})), "B", 0.05),
               Number("the boxed N alpha beta at N = 100 (no number printed)", 25e6,
                      value((N * ALPHA * BETA).subs(at100)), "B", 1e-12)),
              "sympy solves the chapter's large-N equality (2 N alpha + 2M/beta = 2 log2 N alpha + 2 log2 N M/beta) "
              "for M and gets the chapter's rearranged form alpha beta (log2 N - N)/(1 - log2 N); dropping log2 N "
              "against N and 1 against log2 N gives N alpha beta / log2 N. The exact crossover of the full forms is "
              "the ring-tree entry's (3.72 MB at N = 100)."),
    ]


def _ring_vs_tree() -> Entry:
    at = (1e6, 64, 10e9, 10e-6)
    ring, tree = RingAllReduce(*at), TreeAllReduce(*at)
    margin = (ring - tree) / ring
    excess = RingAllReduce(M, N, BETA, ALPHA) - TreeAllReduce(M, N, BETA, ALPHA)
    return Entry(
        "cc-ring-vs-tree", "Ring against tree for 1 MB over 64 GPUs",
        "CC, notebook @nbk-collective-communication-ring-vs-tree-crossover, "
        "@tbl-collective-communication-ring-vs-tree-1mb-64gpu, and the fallacy 'Using Ring AllReduce by default'",
        "", (excess, excess.doit()), None,
        (Number("tree latency 2 log2 N alpha", 120e-6, value(TreeAllReduce(0, 64, 10e9, 10e-6)), "s", 1e-12),
         Number("ring bandwidth 2 (N - 1)/N M/beta", 196.9e-6, value(RingAllReduce(1e6, 64, 10e9, 0)), "s", 1e-3),
         Number("ring total", 1456.9e-6, value(ring), "s", 1e-4),
         Number("tree total", 1320e-6, value(tree), "s", 1e-12),
         Number("tree wins by (rounded to a whole percent)", 0.09, value(margin), "1", 0.06),
         Number("the fallacy's tree bandwidth penalty over the ring's ('1,000 us')", 1000e-6,
                value(TreeAllReduce(1e6, 64, 10e9, 0) - RingAllReduce(1e6, 64, 10e9, 0)), "s", 0.005)),
        "Ring and tree are the package's RingAllReduce and TreeAllReduce; the margin is 9.4 %, printed 9 %.",
        width=60)


def _fabric() -> List[Entry]:
    nstar = ALPHA * BETA
    rows = (("NVLink 4.0, alpha 1 us (of 1-2), 900 GB/s: '~1 MB'", 1e6, 1e-6, 900e9, 0.1),
            ("InfiniBand NDR, 2 us (of 1-3), 50 GB/s: '~100 KB'", 100e3, 2e-6, 50e9, 1e-9),
            ("InfiniBand HDR, 3 us (of 2-5), 25 GB/s: '~75 KB'", 75e3, 3e-6, 25e9, 1e-9),
            ("PCIe Gen5, 3 us (of 2-5), 64 GB/s: '~200 KB'", 200e3, 3e-6, 64e9, 0.05),
            ("Ethernet RoCE, 8 us (of 5-10), 12 GB/s: '~100 KB'", 100e3, 8e-6, 12e9, 0.05))
    sizes = (("1 KB", 1e3, 3.1e-6, 0.01, False), ("64 KB", 64e3, 4.3e-6, 0.01, True), ("1 MB", 1e6, 23e-6, 0.01, True),
             ("64 MB", 64e6, 1.3e-3, 0.02, True), ("1 GB", 1e9, 20e-3, 0.01, True), ("10 GB", 10e9, 200e-3, 0.01, True))
    p2p = PointToPoint(NMSG, BETA, ALPHA)
    return [
        Entry("cc-critical-sizes", "Critical message sizes of the interconnects",
              "CC, @tbl-interconnect-parameters", _eq("n^*", nstar), (ALPHA, NMSG / BETA), None,
              tuple(Number(w, bk, value(nstar.subs({ALPHA: a, BETA: b})), "B", r) for w, bk, a, b, r in rows),
              "The table gives a latency range per interconnect; each critical size is alpha beta at the latency "
              "named in the row (the crossover entry's n* = alpha beta)."),
        Entry("cc-nccl-table", "The alpha-beta predictions of the NCCL table",
              "CC, @tbl-nccl-vs-theory", _eq("T", ALPHA + NMSG / BETA), (p2p, p2p.doit()), None,
              tuple(Number(f"{w} at alpha 3 us, beta 50 GB/s", bk, value(PointToPoint(n, NDR, 3e-6)), "s", r, ok)
                    for w, n, bk, r, ok in sizes),
              "Every row is one point-to-point message at alpha = 3 us and beta = 50 GB/s, except the 1 KB row: "
              "3 us + 1 KB / 50 GB/s = 3.02 us, which the table prints ~3.1 us (and its ratio ~8.0x is 25/3.1; "
              "25/3.02 = 8.3x). A note for the authors."),
    ]


def _hierarchical() -> List[Entry]:
    hier8 = HierarchicalAllReduce(1e9, 8, 8, NVLINK, 0, NDR, 3e-6)
    llama = HierarchicalAllReduce(GRAD_70B, 16, 8, NVLINK, 0, NDR, 3e-6)
    flat8 = RingAllReduce(1e9, 64, NDR, 3e-6)
    h = HierarchicalAllReduce(M, sym.n_nodes, sym.apn, F["beta_in"], 0, F["beta_out"], F["alpha_out"])
    return [
        Entry("cc-hier-8node", "The hierarchical bandwidth multiplier (8 nodes of 8 GPUs, 1 GB)",
              "CC, notebook @nbk-collective-communication-hierarchical-bandwidth-multiplier and the fallacy 'Flat "
              "AllReduce is good enough'", "", (h, h.doit()), None,
              (Number("flat ring, '2 x 1 GB / 50 GB/s'", 40e-3, value(flat8), "s", 0.01),
               Number("intra-node ReduceScatter, 875 MB at 900 GB/s ('~1 ms')", 1e-3,
                      value(ReduceScatter(1e9, 8, NVLINK, 0)), "s", 0.03),
               Number("inter-node ring on 125 MB over 8 nodes, 3 us", 4.4e-3, value(RingAllReduce(125e6, 8, NDR, 3e-6)),
                      "s", 0.01),
               Number("hierarchical total", 6.4e-3, value(hier8), "s", 0.01),
               Number("speedup ('6.3x'; the fallacy's 'roughly 6x')", 6.3, value(flat8 / hier8), "1", 0.01)),
              "The package's HierarchicalAllReduce with no intra-node latency, as the notebook. The notebook's flat "
              "time is 2M/beta = 40 ms; the ring's 2(N - 1)/N and 63 startups give 39.75 ms, and the speedup 6.25."),
        Entry("cc-llama-budget", "Llama 70B communication budget (16 nodes of 8, 140 GB)",
              "CC, sec. Putting the model to work: Llama 70B communication budget", "", (h, h.doit()), None,
              (Number("intra-node ReduceScatter of 140 GB at 900 GB/s", 136.1e-3,
                      value(ReduceScatter(GRAD_70B, 8, NVLINK, 0)), "s", 1e-3),
               Number("inter-node payload, 140 GB / 8", 17.5e9, GRAD_70B / 8, "B", 1e-12),
               Number("its ring bandwidth term over 16 nodes", 656.2e-3, value(RingAllReduce(GRAD_70B / 8, 16, NDR, 0)),
                      "s", 1e-3),
               Number("its latency term, 30 x 3 us", 0.09e-3, value(RingAllReduce(0, 16, NDR, 3e-6)), "s", 1e-9),
               Number("hierarchical total (the cell's header: 929 ms)", 928.6e-3, value(llama), "s", 1e-3),
               Number("flat ring over 128 GPUs", 5557e-3, value(RingAllReduce(GRAD_70B, 128, NDR, 3e-6)), "s", 1e-3)),
              "The cell takes NVLink from mlsysim's H100 (900 GB/s in mlsysim 0.3.0), which gives its header's "
              "929 ms. The companion's 'hierarchical' entry prices the same cell at 450 GB/s per direction "
              "(1.2 s): the two readings of NVLink's bandwidth differ by the factor of two of its two directions."),
        Entry("cc-nvlink-70b", "70B gradients over 8 NVLink GPUs", "CC, sec. Overlap limits (closing paragraph)",
              "", (RingAllReduce(M, N, BETA, 0), RingAllReduce(M, N, BETA, 0).doit()), None,
              (Number("ring over 8 GPUs on NVLink, 140 GB ('roughly 0.3 s')", 0.3,
                      value(RingAllReduce(GRAD_70B, 8, NVLINK, 0)), "s", 0.1),
               Number("its share of a 2.1 s compute step ('about 15 percent')", 0.15,
                      value(RingAllReduce(GRAD_70B, 8, NVLINK, 0) / sp.Rational(21, 10)), "1", 0.15)),
              "0.272 s, 13 % of 2.1 s; the chapter's 15 % is its rounded 0.3 s over 2.1 s (14 %)."),
    ]


def _others() -> List[Entry]:
    ps = ParameterServerTime(M, N, F["K_srv"], BETA)
    logp = LogPOverlapTime(F["o_logp"], F["L_logp"], F["T_layer_bwd"])
    energy = AllReduceEnergy(M, N, F["E_byte"])
    fsdp = FsdpStartupTime(sym.L, ALPHA)
    per_peer = 64 * 4096                      # 64 tokens of 2048 BF16 values to each peer
    return [
        Entry("cc-parameter-server", "Parameter server (star) aggregation",
              "CC, sec. Naive approaches vs. the bandwidth bottleneck, and the collective-operation definition",
              _eq(rf"T_{{{T}{{PS}}}}", N * M / (F["K_srv"] * BETA)), (ps, ps.doit()),
              (N * M / BETA, ps.subs(F["K_srv"], 1)),
              (Number("N = 1024: the star over the ring's bandwidth term ('500x worse')", 500,
                      value(ParameterServerTime(1, 1024, 1, 1) / RingAllReduce(1, 1024, 1, 0)), "1", 0.03),),
              "Rank 0 receives N M bytes (and sends as many on the other direction); K_srv servers each carry "
              "N M / K_srv. Against the ring's 2(N - 1)/N M/beta the ratio is N^2 / (2(N - 1)), 512 at N = 1024."),
        Entry("cc-logp-overlap", "Hiding communication behind computation (LogP)",
              "CC, sec. The LogP model, notebook @nbk-collective-communication-hiding-communication-behind-computation",
              _eq(rf"T_{{{T}{{LogP}}}}", 2 * F["o_logp"] + sp.Max(F["T_layer_bwd"], F["L_logp"])),
              (logp, logp.doit()), (2 * F["o_logp"] + sp.Max(F["T_layer_bwd"], F["L_logp"]), logp),
              (Number("exposed overhead 2o, o = 50 us", 100e-6, value(LogPOverlapTime(50e-6, 0, 0)), "s", 1e-12),
               Number("effective time, L 100 us, compute 500 us", 600e-6,
                      value(LogPOverlapTime(50e-6, 100e-6, 500e-6)), "s", 1e-12)), ""),
        Entry("cc-energy", "Network energy of one AllReduce", "CC, sec. The physics of data movement",
              _eq(rf"E_{{{T}{{AR}}}}", N * DataParallelCommVolume(M, N).doit() * F["E_byte"]),
              (energy, energy.doit()), None,
              (Number("10,000 GPUs, 1 GB, 30 pJ/bit (240 pJ/B)", 4.8e3, value(AllReduceEnergy(1e9, 10000, 240e-12)),
                      "J", 0.001),),
              "Every rank sends 2(N - 1)/N M bytes (the chapter's 'factor of 2'); the package's E_net is per byte."),
        Entry("cc-fsdp-startup", "FSDP's per-layer startup cost", "CC, sec. FSDP communication patterns",
              _eq(rf"T_{{{T}{{FSDP}},\alpha}}", 2 * sym.L * ALPHA), (fsdp, fsdp.doit()), None,
              (Number("100 layers at 25 us per operation", 5e-3, value(FsdpStartupTime(100, 25e-6)), "s", 1e-12),
               Number("100 layers at 50 us per operation", 10e-3, value(FsdpStartupTime(100, 50e-6)), "s", 1e-12)),
              "Two collectives per layer (AllGather in forward, ReduceScatter in backward), as the chapter counts "
              "them; ZeRO-3's backward re-gather (Zero3CommTime) would add a third."),
        Entry("cc-moe-alltoall", "AllToAll for MoE token routing: the transfers",
              "CC, notebook @nbk-collective-communication-alltoall-moe-token-routing", "",
              (AllToAll(M, N, BETA, ALPHA), AllToAll(M, N, BETA, ALPHA).doit()), None,
              (Number("one GPU-to-GPU transfer: 64 tokens of 4.096 KB", 262.144e3, per_peer, "B", 1e-12),
               Number("sent per GPU, (N - 1)/N of its 8 shares", 1.84e6, value(bytes_sent(AllToAll, 8 * per_peer, 8)),
                      "B", 0.005),
               Number("one transfer, alpha 3 us + 5.24 us (printed 3 + 5 = 8 us); also the all-parallel time", 8e-6,
                      value(PointToPoint(per_peer, NDR, 3e-6)), "s", 0.05)), ""),
    ]


def _compression() -> List[Entry]:
    sg, sc, bb, sm = F["s_grad"], F["s_code"], F["b_block"], F["s_meta"]
    d, k = F["d_grad"], F["K_top"]
    bq = BlockQuantRatio(sg, sc, bb, sm)
    tk = TopKRatio(d, k, sg, sc, sm)
    t_comm, t_cmp = notation.symbol("T_comm", positive=True), notation.symbol("T_compute", positive=True)
    r, t_ov = F["r_comp"], F["T_codec"]
    cc = CompressedCommTime(t_comm, r, t_ov)
    breakeven = sp.solve(sp.Eq(cc.doit(), t_comm), t_ov)[0]
    tt = CompressedTrainingTime(notation.symbol("K_steps", positive=True), F["p_steps"], t_cmp, t_comm, r)
    base, c1 = CompressedTrainingTime(1e5, 0, 0.3, 0.2, 1), CompressedTrainingTime(1e5, 0.1, 0.3, 0.2, 4)
    base2, c2 = CompressedTrainingTime(1e5, 0, 0.3, 0.03, 1), CompressedTrainingTime(1e5, 0.1, 0.3, 0.03, 4)
    big = sp.Symbol("b", positive=True)
    return [
        Entry("cc-block-quant", "Block quantization's compression ratio",
              "CC, sec. Quantization: reducing precision, and Block quantization for gradient communication",
              _eq(rf"r_{{{T}{{block}}}}", 4 * bb / (bb + 4)), (bq, bq.doit()),
              (4 * bb / (bb + 4), bq.subs({sg: 4, sc: 1, sm: 4})),
              (Number("INT8 codes, FP32 scales, b = 128", 3.88, value(BlockQuantRatio(4, 1, 128, 4)), "1", 0.001),
               Number("INT8 over FP32, one scale per tensor (b -> infinity)", 4,
                      value(sp.limit(BlockQuantRatio(4, 1, big, 4).doit(), big, sp.oo)), "1", 0),
               Number("FP16 over FP32", 2, value(sp.limit(BlockQuantRatio(4, 2, big, 4).doit(), big, sp.oo)), "1", 0),
               Number("1 bit over FP32", 32,
                      value(sp.limit(BlockQuantRatio(4, sp.Rational(1, 8), big, 4).doit(), big, sp.oo)), "1", 0)),
              "The chapter's message size d + 4d/b bytes per d FP32 elements; the ratio's limit in b gives the "
              "quantization ladder's 2x, 4x and 32x."),
        Entry("cc-topk", "Top-k sparsification's compression ratio", "CC, sec. Top-k sparsification; the "
              "error-feedback definition",
              _eq(rf"r_{{{T}{{top-}}k}}", d / (2 * k)), (tk, tk.doit()), (d / (2 * k), tk.subs({sg: 4, sc: 4, sm: 4})),
              (Number("K = 0.001 d, values only ('1000x')", 1000, value(TopKRatio(1000, 1, 4, 4, 0)), "1", 0),
               Number("K = 0.001 d, FP32 values and INT32 indices", 500, value(TopKRatio(1000, 1, 4, 4, 4)), "1", 0),
               Number("top 1 %, values only: 140 GB to 1.4 GB ('100x')", 100, value(TopKRatio(100, 1, 4, 4, 0)), "1",
                      0)),
              "The chapter's 1000x and 100x count the kept values only; with the indices the ratio halves."),
        Entry("cc-compression-payback", "The payback of compression",
              "CC, notebook @nbk-collective-communication-payback-compression",
              _eq(rf"T_{{{T}{{compressed}}}}", t_comm / r + t_ov) + r", \qquad T_{\text{overhead}} < "
              r"T_{\text{comm}} \left(1 - \frac{1}{r_{\text{comp}}}\right)",
              (cc, cc.doit()), (t_comm * (1 - 1 / r), breakeven),
              (Number("40 ms at ratio 8", 5e-3, value(CompressedCommTime(40e-3, 8, 0)), "s", 1e-12),
               Number("with 2 ms of codec overhead", 7e-3, value(CompressedCommTime(40e-3, 8, 2e-3)), "s", 1e-12),
               Number("speedup", 5.7, value(40e-3 / CompressedCommTime(40e-3, 8, 2e-3)), "1", 0.005),
               Number("network time saved, the break-even overhead", 35e-3, value(breakeven.subs({t_comm: 40e-3, r: 8})),
                      "s", 1e-12)),
              "sympy solves T_compressed = T_comm for the overhead and gets the chapter's break-even T_comm "
              "(1 - 1/Ratio). The notebook's problem says 1-bit Adam 'reduces communication volume by 32x' and "
              "computes with 8x, the 'effective network throughput'."),
        Entry("cc-compressed-training", "When compression pays: time to train",
              "CC, sec. When to use compression (two worked examples)",
              _eq(rf"T_{{{T}{{train,comp}}}}", tt.doit()), (tt, tt.doit()), None,
              (Number("100,000 steps of 300 ms + 200 ms", 50000, value(base), "s", 1e-12),
               Number("INT8 (4x), 10 % more steps: 110,000 x 0.35", 38500, value(c1), "s", 1e-12),
               Number("its improvement", 0.23, value(1 - c1 / base), "1", 1e-12),
               Number("30 ms of communication: 110,000 x 0.3075", 33825, value(c2), "s", 1e-12),
               Number("against 100,000 x 0.33", 33000, value(base2), "s", 1e-12),
               Number("the increase", 0.025, value(c2 / base2 - 1), "1", 1e-9)), ""),
        _error_feedback(),
    ]


def _error_feedback() -> Entry:
    Kn = 5
    g = sp.symbols(f"g1:{Kn + 1}")
    C = sp.Function("C")
    rows = error_feedback(g, C)
    e1, e_last = rows[0][1], rows[-1][4]
    sum_v = sum(r[3] for r in rows)
    assert equal(sum_v, sum(g) + e1 - e_last)
    trace = error_feedback([0.4, 0.3, 0.2, 0.4, 0.3], lambda x: sp.floor(x + sp.Rational(1, 2)))
    v_sum = sum(r[3] for r in trace)
    # the package's form as printed: the run's sum in its short form, sum g_t + e_1 - e_(K+1) (the expanded sum of
    # the C(...) terms, each step's compressor applied to the residual before it, is wider than a page); the
    # symbols e_1 and e_(K+1) stand for the run's first and last residuals, which the check substitutes
    e_first, e_after = sp.Symbol("e_{1}"), sp.Symbol(f"e_{{{Kn + 1}}}")
    short = sum(g) + e_first - e_after
    assert equal(short.subs({e_first: e1, e_after: e_last}), sum_v)
    return Entry(
        "cc-error-feedback", "Error feedback telescopes",
        "CC, sec. Error feedback: the memory of the journey (two display equations), notebook "
        "@nbk-collective-communication-error-feedback-mechanism, @tbl-error-feedback",
        r"\sum_{t=1}^{K} v_t = \sum_{t=1}^{K} \left[(g_t + e_t) - e_{t+1}\right] = \sum_{t=1}^{K} g_t + e_1 - e_{K+1}",
        (sp.Symbol(rf"\sum_{{t=1}}^{{{Kn}}} v_{{t}}"), short), (sum_v, sum(g) + e1 - e_last),
        (Number("five steps of 0.4, 0.3, 0.2, 0.4, 0.3: transmitted", 2, value(v_sum), "1", 0),
         Number("the residual left", -0.4, value(trace[-1][4]), "1", 1e-12),
         Number("transmitted + residual = the true sum", 1.6, value(v_sum + trace[-1][4]), "1", 1e-12)),
        f"mlsysim_sym.terms.networks.error_feedback runs v_t = C(g_t + e_t), e_(t+1) = g_t + e_t - v_t; sympy sums "
        f"its first {Kn} steps with C an undefined function and finds the chapter's telescoped sum, whatever the "
        f"compressor (printed above with e_1 and e_{Kn + 1} the run's first residual, 0, and its last, which are "
        "expressions in the C(...) of the steps). Divided by K, e_1 - e_(K+1) vanishes for a bounded residual: "
        "the second display. The trace uses round-half-up, the notebook's rounding.", paste=False)


def _overlap_sequential() -> Entry:
    layers, bwd, per_bucket, buckets = 32, sp.Rational(15, 1000), sp.Rational(3, 1000), sp.Rational(880, 100)
    t_layer = buckets * per_bucket
    seq = layers * bwd + layers * t_layer
    L, tb, tc = sym.L, F["T_layer_bwd"], notation.symbol("T_comm", positive=True)
    return Entry(
        "cc-overlap-sequential", "The 7B overlap budget without overlap",
        "CC, notebook @nbk-collective-communication-overlap-budget-7b-transformer (its sequential line)",
        rf"T_{{{T}{{sequential}}}} = T_{{{T}{{backward}}}} + N_L T_{{{T}{{comm}}}}",
        (F["T_seq"], L * tb + L * tc), None,
        (Number("AllReduce of one layer: 880 MB in 100 MB buckets of 3 ms", 26.4e-3, value(t_layer), "s", 1e-12),
         Number("backward, 32 x 15 ms", 480e-3, value(layers * bwd), "s", 1e-12),
         Number("sequential step", 1324.8e-3, value(seq), "s", 1e-12)),
        "The notebook writes T_backward + T_comm(N) and computes 480 + 32 x 26.4 ms: T_comm is one layer's "
        "AllReduce, paid N_L times. The overlapped schedule of the same notebook is the per-layer-overlap entry.")


def groups() -> Dict[str, List[Entry]]:
    return {"Collective communication (CC): further equations":
            [_ring_70b()] + _bounds() + _butterfly_and_torus() + _crossover() + [_ring_vs_tree()] + _fabric()
            + _hierarchical() + _others() + _compression() + [_overlap_sequential()]}


def _c(where, what, entry="", why=""):
    return Counted("CC", where, what, entry, why)


_LENGTH = ("a distance over the speed of light in fiber; the package's units have no length and no collective term "
           "carries a propagation delay (alpha holds it)")


def inventory() -> List[Counted]:
    """Every display equation and worked formula of CC, in the chapter's order."""
    return [
        _c("@dfn-collective-communication-gradient-synchronization", "ring over 1,000 GPUs: 2 x 140/50 = 5.6 s",
           "cc-ring-70b"),
        _c("sec. The physics of data movement", "500 m of fiber: 2.5 us one way (5 us per km)", why=_LENGTH),
        _c("sec. The physics of data movement", "AllReduce energy: 10,000 GPUs, 1 GB, 30 pJ/bit, 4.8 kJ", "cc-energy"),
        _c("@nbk-collective-communication-allreduce-cost-70b-model", "gradient payload 70e9 x 2 B = 140 GB",
           "cc-ring-70b"),
        _c("@nbk-collective-communication-allreduce-cost-70b-model", "display: T_bandwidth = 2 (N-1)/N n/beta",
           "cc-ring-70b"),
        _c("@nbk-collective-communication-allreduce-cost-70b-model", "display: T_latency = 2(N-1) alpha",
           "cc-ring-70b"),
        _c("@nbk-collective-communication-allreduce-cost-70b-model", "total, about 5,513 ms", "cc-ring-70b"),
        _c("sec. From Parallelism to Communication Patterns", "60 % of the bandwidth: over nine seconds",
           "cc-ring-70b"),
        _c("@fig-compute-comm-timeline", "communication share 25 % at 8 GPUs to 80 % at 4,096",
           why="the figure's cell prices compute with mlsysim's Engine.solve and adds a synthetic sync share "
               "0.05 log2(N/8 + 1) of the step (its own comment); the prose reads its bars, no formula of the book"),
        _c("@dfn-collective-communication-model-hockney-model", "n* = alpha beta = 100 KB", "crossover"),
        _c("@dfn-collective-communication-model-hockney-model", "100 x 4 KB: 200 us; fused 400 KB: 10 us",
           "alpha-beta"),
        _c("@tbl-interconnect-parameters", "critical size per interconnect", "cc-critical-sizes"),
        _c("@nbk-collective-communication-critical-message-size", "n* = 2 us x 50 GB/s = 100 KB", "crossover"),
        _c("@nbk-collective-communication-hiding-communication-behind-computation", "2o + max(compute, L) = 600 us",
           "cc-logp-overlap"),
        _c("sec. Putting the model to work: Llama 70B communication budget",
           "hierarchical: 136.1 + 656.2 + 0.09 + 136.1 ms", "cc-llama-budget"),
        _c("sec. Putting the model to work: Llama 70B communication budget", "flat ring over 128 GPUs: 5,557 ms",
           "cc-llama-budget"),
        _c("@tbl-nccl-vs-theory", "alpha-beta predictions, 1 KB to 10 GB", "cc-nccl-table"),
        _c("@dfn-collective-communication-collective-operation", "reduce-then-broadcast 500x worse at N = 1024",
           "cc-parameter-server"),
        _c("@nbk-collective-communication-alltoall-moe-token-routing", "262.144 KB per transfer, 1.84 MB sent, 8 us",
           "cc-moe-alltoall"),
        _c("@nbk-collective-communication-alltoall-moe-token-routing", "serialized: 7 x 8 us = 56 us", "alltoall"),
        _c("@nbk-collective-communication-alltoall-moe-token-routing", "tokens per expert 4096/64 = 64", "capacity"),
        _c("sec. FSDP communication patterns", "2 N_layers startups: 5-10 ms for 100 layers", "cc-fsdp-startup"),
        _c("sec. The bandwidth-optimal lower bound", "display: T_bandwidth^min = 2(N-1)/N M/beta",
           "cc-bandwidth-bound"),
        _c("@nbk-collective-communication-ring-allreduce-step-by-step-trace-4-gpus", "6 steps of 1 element, 6 sent",
           "cc-bandwidth-bound"),
        _c("sec. Ring AllReduce", "display: T_ring", "ring"),
        _c("sec. Tree AllReduce", "display: T_tree-like", "tree"),
        _c("sec. Tree AllReduce", "1024 nodes: 2046 against 20 steps, 100x", "cc-step-counts"),
        _c("sec. Tree AllReduce", "8 GPUs: 14 alpha against 6 alpha", "cc-step-counts"),
        _c("sec. Recursive halving-doubling (butterfly)", "display: T_butterfly", "cc-butterfly"),
        _c("sec. Double binary tree", "display: T_double-tree", "double-tree"),
        _c("sec. The algorithm crossover point", "display: T_ring", "ring"),
        _c("sec. The algorithm crossover point", "display: T_tree", "tree"),
        _c("sec. The algorithm crossover point", "display: large-N forms of T_ring and T_tree", "cc-crossover-approx"),
        _c("sec. The algorithm crossover point", "display: the two set equal", "cc-crossover-approx"),
        _c("sec. The algorithm crossover point", "display: terms collected", "cc-crossover-approx"),
        _c("sec. The algorithm crossover point", "display: 2M/beta (1 - log2 N) = 2 alpha (log2 N - N)",
           "cc-crossover-approx"),
        _c("sec. The algorithm crossover point", "display: the approximation for N >> log2 N", "cc-crossover-approx"),
        _c("sec. The algorithm crossover point", "display: M_crossover = N alpha beta / log2 N", "cc-crossover-approx"),
        _c("sec. The algorithm crossover point", "display (boxed): M_crossover = N alpha beta", "cc-crossover-approx"),
        _c("sec. The algorithm crossover point", "display: 3.8 MB at N = 100", "cc-crossover-approx"),
        _c("@nbk-collective-communication-ring-vs-tree-crossover", "ring latency 2 x 63 x 10 us = 1,260 us", "ring"),
        _c("@nbk-collective-communication-ring-vs-tree-crossover", "tree latency 2 x 6 x 10 us = 120 us",
           "cc-ring-vs-tree"),
        _c("@nbk-collective-communication-ring-vs-tree-crossover", "ring bandwidth 196.9 us", "cc-ring-vs-tree"),
        _c("@nbk-collective-communication-ring-vs-tree-crossover", "tree bandwidth 12 x 1 MB / 10 GB/s = 1,200 us",
           "tree"),
        _c("@tbl-collective-communication-ring-vs-tree-1mb-64gpu", "totals and the 9 % margin", "cc-ring-vs-tree"),
        _c("@nbk-collective-communication-ring-vs-tree-crossover", "crossover 64 x 10 us x 10 GB/s / 6 = 1.1 MB",
           "cc-crossover-approx"),
        _c("@nbk-collective-communication-hierarchical-bandwidth-multiplier", "40 ms flat, 6.4 ms hierarchical, 6.3x",
           "cc-hier-8node"),
        _c("sec. Hierarchical AllReduce", "three tiers, 128 GPUs: 32x smaller, 15 ms against 160 ms",
           why="the text gives no gradient size or tier bandwidths for this case; the 32x is 8 GPUs x 4 nodes, and "
               "15 and 160 ms cannot be recomputed from what it states"),
        _c("sec. Block quantization for gradient communication", "4b/(b + 4) = 3.88x at b = 128", "cc-block-quant"),
        _c("sec. Quantization: reducing precision", "FP16 2x, INT8 4x, 1-bit 32x over FP32", "cc-block-quant"),
        _c("sec. Top-k sparsification", "display: TopK(g) = g masked by |g| >= |g|_(K)",
           why="the operator that picks the kept elements; what it costs is the compression ratio, counted next"),
        _c("sec. Top-k sparsification", "1000x kept, d/(2K) = 500x encoded", "cc-topk"),
        _c("@dfn-collective-communication-error-feedback-mechanism", "top 1 %: 140 GB to 1.4 GB, 100x", "cc-topk"),
        _c("sec. Error feedback", "display: the telescoping sum", "cc-error-feedback"),
        _c("sec. Error feedback", "display: the long-run averages agree", "cc-error-feedback"),
        _c("@nbk-collective-communication-error-feedback-mechanism", "trace: 2 sent, -0.4 left, 1.6 true",
           "cc-error-feedback"),
        _c("@nbk-collective-communication-payback-compression", "40/8 = 5 ms, + 2 ms = 7 ms, 5.7x",
           "cc-compression-payback"),
        _c("@nbk-collective-communication-payback-compression", "pays when T_overhead < T_comm (1 - 1/Ratio): 35 ms",
           "cc-compression-payback"),
        _c("sec. When to use compression", "110,000 x 0.35 = 38,500 s, 23 % better", "cc-compressed-training"),
        _c("sec. When to use compression", "110,000 x 0.3075 = 33,825 s against 33,000 s, 2.5 % worse",
           "cc-compressed-training"),
        _c("@nbk-collective-communication-overlap-budget-7b-transformer", "26.4 ms per layer; sequential 1,324.8 ms",
           "cc-overlap-sequential"),
        _c("@nbk-collective-communication-overlap-budget-7b-transformer",
           "T_pipelined = T_backward + T_first comm + (N_L - 1) T_exposed = 859.8 ms, 35.1 % saved",
           "per-layer-overlap"),
        _c("sec. Overlap limits", "70B on 8 NVLink GPUs: 0.3 s against 2.1 s, 15 %", "cc-nvlink-70b"),
        _c("sec. Fallacies and Pitfalls", "bubble (p-1)/(p-1+m): p >= 8 needs m >= 32 for < 20 %", "bubble"),
        _c("sec. Fallacies and Pitfalls", "ring's 1,260 us against tree's 1,000 us", "cc-ring-vs-tree"),
        _c("sec. Fallacies and Pitfalls", "hierarchical: roughly 6x over flat", "cc-hier-8node"),
        _c("footnote fn-zerocopy-rdma", "350 GB exchanged: 700 GB of kernel copies avoided",
           why="a count of copies (one into the kernel's buffers, one out), which no collective the package prices "
               "makes"),
        _c("footnote fn-speed-of-light-latency", "100 m of fiber: 500 ns", why=_LENGTH),
    ]
