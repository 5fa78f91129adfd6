"""The book companion's entries and count for the two foundation appendices of *Machine Learning Systems* vol. 2:
AC, Communication Foundations (``book/quarto/contents/vol2/backmatter/appendix_communication.qmd``), and FA,
Fleet Foundations (``book/quarto/contents/vol2/backmatter/appendix_fleet.qmd``), both read at commit
02fb0d6469cb1551f4d018166dafce398821ed53 of github.com/harvard-edge/cs249r_book.

The book computes its worked numbers in Python cells from mlsysim's catalog (InfiniBand NDR 50 GB/s and 5 us,
H100 989 TFLOP/s, 3.35 TB/s HBM, 900 GB/s NVLink, 700 W; GPU MTTF 50,000 h; overheads 5 % bubbles, 3 %
checkpoints, 10 % recovery, 5 % maintenance; MFU 0.50 and scaling efficiency 0.83 at 1,024 GPUs); those inputs
are written out below, and each number is the one the book prints from them.
"""
from __future__ import annotations

from typing import Dict, List

import sympy as sp

from mlsysim_sym.operating_point import operating_point_of
from mlsysim_sym.symbols import sym
from mlsysim_sym.terms.collectives import DataParallelCommVolume, RingAllReduce
from mlsysim_sym.terms.networks import LogGPLongMessageTime
from mlsysim_sym.terms.communication import CommComputeRatio
from mlsysim_sym.terms.reliability import SystemMTBF
from mlsysim_sym.terms.training import AmdahlSpeedup
from mlsysim_sym.terms.fleet import (AttainableRate, CheckpointSize,
                                     CompressionBreakEven, FabricBandwidthRatio, FacilityPower, FailureProbability,
                                     GoodputRatio, IronLawTime, ITPower, RequestConcurrency, RidgePoint, TreeBroadcast)
from mlsysim_sym import catalog
from mlsysim_sym.terms.pipeline import BubbleFraction

from .book import ALPHA, BETA, LOG2N, M, N, Counted, Entry, F, Number, _eq, _model, equal, value
from .common import EXAMPLES

T = r"\text"
HOUR = 3600.0
NDR_BETA, NDR_ALPHA = 50e9, 5e-6            # InfiniBand NDR in mlsysim's catalog (400 Gbps, 5 us)
H100_PEAK, H100_HBM, H100_NVLINK, H100_TDP = 989e12, 3.35e12, 900e9, 700.0
GPU_MTTF = 50_000 * HOUR
OVERHEADS = (0.05, 0.03, 0.10, 0.05)       # Ops.TrainingRunOverheads: bubble, checkpoint, recovery, maintenance
MFU_HIGH, ETA_1024 = 0.50, 0.83            # Literature.Training.MfuHigh, TrainingScaleProfiles.Eff1024Gpu
PUE = {"liquid": 1.06, "air": 1.12, "typical": 1.55, "legacy": 1.58}


# --------------------------------------------------------------------------------------------------
# AC: the communication appendix
# --------------------------------------------------------------------------------------------------
def communication() -> List[Entry]:
    bcast = TreeBroadcast(M, N, BETA, ALPHA)
    p, m, v = sym.pp, sym.m, sym.v
    frac = BubbleFraction(p, 1, m)
    book_plain = (p - 1) / (p - 1 + m)
    m_rule = sp.solve(sp.Eq(frac.doit(), sp.Rational(1, 5)), m)[0]
    table = [(4, 8, 0.273), (4, 16, 0.158), (4, 32, 0.086), (4, 64, 0.045),
             (8, 8, 0.467), (8, 16, 0.304), (8, 32, 0.179), (8, 64, 0.099)]
    C, Tx = F["r_comp"], F["T_xfer"]
    ring_bw = RingAllReduce(M, N, BETA, 0)
    saved = RingAllReduce(M, N, BETA, ALPHA) - RingAllReduce(M / C, N, BETA, ALPHA)
    breakeven = [(4, 10, 7.5), (4, 40, 30), (4, 100, 75), (16, 10, 9.4), (16, 40, 37.5), (16, 100, 93.8),
                 (64, 10, 9.8), (64, 40, 39.4), (64, 100, 98.4), (256, 10, 9.96), (256, 40, 39.8),
                 (256, 100, 99.6)]
    uncompressed = RingAllReduce(1e9, 256, NDR_BETA, NDR_ALPHA)
    compressed = RingAllReduce(1e9 / 64, 256, NDR_BETA, NDR_ALPHA)
    exact64 = value(RingAllReduce(1e9, 256, NDR_BETA, 0) * (1 - sp.Rational(1, 64)))
    table64 = value(CompressionBreakEven(uncompressed, 64))
    os_, lat, kb, gb, or_ = (F[n] for n in ("o_send", "L_logp", "k_bytes", "G_byte", "o_recv"))
    loggp = LogGPLongMessageTime(os_, lat, kb, gb, or_)
    return [
        Entry("ac-loggp", "LogGP time of one long message", "AC, the LogGP display (unlabelled)",
              rf"T_{{{T}{{long}}}} = o_s + L + (k - 1) G + o_r", (loggp, loggp.doit()),
              (os_ + lat + (kb - 1) * gb + or_, loggp), (),
              "Alexandrov et al. (1995). The appendix's G, the gap per byte, is the registry's "
              "\\LongMessageGapPerByte, whose glyph G the package gives the accelerators of one replica: it is "
              "written G_byte here (its own proposed macro), and k, the message's bytes, k_bytes, a count, so that "
              "(k - 1) G_byte is a time. o_s and o_r are the registry's \\SenderOverhead and \\ReceiverOverhead, L "
              "the LogP latency of the CC chapter's LogPOverlapTime. The appendix prints no number for it."),
        Entry("ac-broadcast", "Tree broadcast", "AC @eq-broadcast and @tbl-collective-summary",
              _eq(rf"T_{{{T}{{broadcast}}}}", LOG2N * (ALPHA + M / BETA)), (bcast, bcast.doit()),
              (LOG2N * (ALPHA + M / BETA), bcast), (),
              "Unsegmented: the whole payload is forwarded at each of the log2 N levels, as the summary table's "
              "terms (log2 N M/beta, log2 N alpha) say. An earlier version of the appendix printed "
              "M/beta + log2 N alpha (a pipelined broadcast); mlsysim's DistributedModel prices no broadcast."),
        Entry("ac-bubble-rule", "Microbatches that keep the bubble at 20 percent", "AC, Bubble fraction (rule of "
              "thumb) and the caption of @tbl-pipeline-bubble",
              r"b \le 0.2 \iff m \ge 4 (p - 1)", (m, m_rule), (4 * (p - 1), m_rule),
              (Number("p 8, m 28 = 4(p - 1): exactly 20 %", 0.2, value(BubbleFraction(8, 1, 28)), "1", 1e-12),),
              "sympy solves b_pipe(p, V = 1, m) = 1/5 for m: 4(p - 1), the text's exact rule. The table's "
              "caption says 'values below 20 percent require m >= 4p', a sufficient rule, not a required one: "
              "at p = 8, m = 28 < 4p already reaches 20 %."),
        Entry("ac-bubble-table", "Pipeline bubble fraction table", "AC @tbl-pipeline-bubble",
              _eq(r"b", book_plain), (frac, frac.doit()), (book_plain, frac),
              tuple(Number(f"p {pp}, m {mm}", bk, value(BubbleFraction(pp, 1, mm)), "1", 0.005)
                    for pp, mm, bk in table),
              "The table's eight cells, computed with mlsysim's calc_pipeline_bubble, are AC @eq-pipeline-bubble "
              "(the bubble entry) at V = 1."),
        Entry("ac-compression-breakeven", "Compression break-even codec time", "AC @eq-compression-breakeven and "
              "@tbl-compression-breakeven",
              rf"T_{{{T}{{encode}}}} + T_{{{T}{{decode}}}} < T_{{{T}{{transfer}}}}(M) - "
              rf"T_{{{T}{{transfer}}}}(M / C) \approx T_{{{T}{{transfer}}}}(M) (1 - 1/C)",
              (CompressionBreakEven(Tx, C), CompressionBreakEven(Tx, C).doit()),
              (saved, CompressionBreakEven(ring_bw, C)),
              tuple(Number(f"C {c}, AllReduce {t} ms", bk * 1e-3, value(CompressionBreakEven(t * 1e-3, c)), "s",
                           0.005) for c, t, bk in breakeven),
              "With a ring AllReduce as the transfer, sympy checks the time saved, T_ring(M) - T_ring(M/C), is "
              "exactly the bandwidth term times (1 - 1/C): the latency terms cancel. The table applies "
              "(1 - 1/C) to the whole AllReduce time, latency included, which overstates the budget by "
              f"2(N - 1) alpha (1 - 1/C): for the notebook's 1 GB over 256 GPUs at C = 64 the exact budget is "
              f"{exact64 * 1e3:.1f} ms, the table's formula gives {table64 * 1e3:.1f} ms."),
        Entry("ac-compression-example", "Is top-k compression worth it? (worked example)", "AC @eq-compression-total "
              "and the top-k notebook",
              rf"T_{{{T}{{compressed}}}} = T_{{{T}{{encode}}}} + T_{{{T}{{transfer}}}}(M / C) + T_{{{T}{{decode}}}}",
              (RingAllReduce(M / C, N, BETA, ALPHA), RingAllReduce(M / C, N, BETA, ALPHA).doit()), None,
              (Number("uncompressed: 1 GB over 256 GPUs, NDR", 42.4e-3, value(uncompressed), "s", 0.002),
               Number("compressed 64x: the ring AllReduce of M/64", 3.2e-3, value(compressed), "s", 0.01),
               Number("total with 2 ms of encode + decode", 5.2e-3, value(compressed + 2e-3), "s", 0.01),
               Number("speedup", 8.2, value(uncompressed / (compressed + 2e-3)), "1", 0.005)),
              "The transfer is a ring AllReduce of the compressed M/C bytes (the package's RingAllReduce at M/C); "
              "the codec time, 2 ms, is the notebook's assumption. The latency term (2.55 ms) does not shrink "
              "with C, so it is most of the compressed AllReduce."),
        _bandwidth_gap(),
    ]


# ---- issue 24: priced rows ---- begin
def catalog_link_bandwidths():
    """H100 NVLink and InfiniBand NDR, per direction (B/s), from the package's catalog (mlsysim's): the H100's
    NVLink (``catalog.hardware``) and the fabric of the book's 10,000-GPU cluster, ``Training_10K``."""
    nvlink = catalog.hardware("H100")[2]
    cluster = catalog.fleet("Training_10K")
    assert cluster.fabric.name == "IB NDR" and cluster.node.intra_node_bw == nvlink
    return nvlink, cluster.fabric.bandwidth


def _bandwidth_gap() -> Entry:
    b_in, b_out = F["beta_in"], F["beta_out"]
    gap = FabricBandwidthRatio(b_in, b_out)
    nvlink, ndr = catalog_link_bandwidths()
    both = value(FabricBandwidthRatio(2 * nvlink, ndr))          # the book's 900 GB/s: both directions added
    per_direction = value(FabricBandwidthRatio(nvlink, ndr))
    # the ring at t = 8 (DT's 18x) scales with 1/beta: its NDR time over its NVLink time is the same ratio
    ring = RingAllReduce(M, 8, BETA, 0)
    return Entry("ac-nvlink-ndr-ratio", "NVLink over InfiniBand NDR: the bandwidth gap", "AC, Hierarchical "
                 "AllReduce (cell CommAlgorithmSelection); FA, 'Three fleet numbers that matter most' and "
                 "@tbl-fleet-numbers-quick-ref",
                 rf"\frac{{{T}{{BW}}_{{{T}{{NVLink}}}}}}{{{T}{{BW}}_{{{T}{{IB}}}}}}", (gap, gap.doit()),
                 (ring.subs(BETA, b_out) / ring.subs(BETA, b_in), gap),
                 (Number("AC: NVLink 900 GB/s over NDR 50 GB/s, 'NVLink is 18x faster than InfiniBand NDR'", 18,
                         both, "1", 1e-12),
                  Number("FA: 'NVLink bandwidth within a node is ~18x faster than InfiniBand' (and the quick "
                         "reference table)", 18, both, "1", 1e-12)),
                 f"The numbers are the package's catalog (mlsysim's): the H100's NVLink, "
                 f"{nvlink / 1e9:g} GB/s per direction, and InfiniBand NDR, {ndr / 1e9:g} GB/s per direction (the "
                 f"fabric of Training_10K). The appendices' cells divide mlsysim's NVLink bandwidth, "
                 f"{2 * nvlink / 1e9:g} GB/s with both directions added, by NDR's {ndr / 1e9:g} GB/s: {both:g}. "
                 f"Per direction, as a transfer sees it and as the package's collectives price NVLink, the gap is "
                 f"{per_direction:g}. The symbolic check: a ring AllReduce's time on the fabric over its time on "
                 "NVLink is the same ratio (sympy), the form of DT's '18x gap' (dt-tp-fabric).")
# ---- issue 24: priced rows ---- end


# --------------------------------------------------------------------------------------------------
# FA: the fleet appendix
# --------------------------------------------------------------------------------------------------
def _iron_law() -> Entry:
    model, q = _model()
    tc, tm, to = q["T_compute"], q["T_memory"], q["T_overhead"]
    book = IronLawTime(q["traffic"], q["BW_eff"], q["O_hw"] / q["G"], sym.R_peak, sym.eta, to)
    # the book's sum on the model's terms: D_vol / BW is T_memory, O / (R_peak eta_hw) per accelerator T_compute
    # (T_compute = O_hw / (G R_eff) with R_eff = R_peak eta_hw, T_memory = traffic / BW_eff)
    assert model.definition("R_eff") == sym.R_peak * sym.eta
    on_model = book.doit().subs({q["traffic"]: tm * q["BW_eff"], q["O_hw"]: tc * q["G"] * sym.R_peak * sym.eta})
    hidden = sp.Min(tc, tm)
    ours = (model.definition("T_node") + hidden).rewrite(sp.Piecewise)
    assert equal(on_model, ours)
    # at fleet scale, the data movement term adds the inter-node communication: with overlap off that sum is
    # the step's T_sync less the pipeline bubble, plus the hidden one of compute and memory
    t_sync = model.definition("T_sync").subs(q["T_dp_exposed"], model.definition("T_dp_exposed")).subs(sym.ov, 0)
    fleet = on_model + q["T_dp"] + q["T_tp"] + q["T_ep"]
    assert equal(fleet, (t_sync.subs(q["T_node"], model.definition("T_node")) - q["T_bubble"] + hidden)
                 .rewrite(sp.Piecewise))
    llama = EXAMPLES[0]
    point = operating_point_of(llama.model, llama.fleet, **llama.solve_kwargs)
    val = {n: point[n].value for n in ("T_compute", "T_memory", "T_overhead", "T_node")}
    total = val["T_compute"] + val["T_memory"] + val["T_overhead"]
    return Entry(
        "fa-iron-law", "The iron law written as a sum", "FA, Foundations recap",
        rf"T \approx \frac{{D_{{{T}{{vol}}}}}}{{{T}{{BW}}}} + \frac{{O}}{{R_{{{T}{{peak}}}} \eta_{{{T}{{hw}}}}}} "
        rf"+ L_{{{T}{{lat}}}}",
        (book, book.doit()), (on_model, ours), (),
        "The package's step prices one replica with the roofline, T_node = max(T_compute, T_memory) + L_lat "
        "(mlsysim's DistributedModel): compute and data movement overlap. The recap adds them. On the model's "
        "terms (D_vol the bytes one accelerator streams, BW its effective bandwidth, O its share O_hw / G of the "
        "step's operations, L_lat the dispatch and framework overhead) sympy checks the book's sum is T_node + "
        "min(T_compute, T_memory): an upper bound, equal only when one of the two is zero. The recap's fleet "
        "reading (the data movement term 'expands to include inter-node communication') is checked the same "
        "way: adding T_comm gives the step's T_sync with overlap off, less the pipeline bubble, plus the same "
        f"min. At {llama.title} ({llama.call()}): T_compute {val['T_compute']:.4f} s, T_memory "
        f"{val['T_memory']:.4f} s, L_lat {val['T_overhead'] * 1e3:.2f} ms; the sum is {total:.4f} s against "
        f"T_node {val['T_node']:.4f} s.")


def fleet() -> List[Entry]:
    model, q = _model()
    mtbf, n_gpu = F["MTBF_comp"], q["N"]
    clusters = ((256, 195.3, 11_718.8, 0.116), (2048, 24.4, 1_464.8, 0.626), (8192, 6.1, 366.2, 0.98),
                (100_000, 0.50, 30, 1.0))
    rs = F["r_serial"]
    fb, fc, fr, fm = (F[n] for n in ("f_oh_bubble", "f_oh_ckpt", "f_oh_recovery", "f_oh_maint"))
    goodput = value(GoodputRatio(*OVERHEADS))
    peak_1024 = 1024 * H100_PEAK
    effective = value(peak_1024 * MFU_HIGH * ETA_1024 * GoodputRatio(*OVERHEADS))
    P, b = sym.P, F["b_ckpt"]
    ckpt = ((7e9, 98e9, 0.98, "s"), (70e9, 980e9, 9.8, "s"), (175e9, 2450e9, 24.5, "s"), (1e12, 14e12, 140, "s"))
    I, R, BW = q["intensity"], sym.R_peak, sym.BW_hbm
    weights_8b = 8.03e9 * 2
    ar_7b = RingAllReduce(7e9 * 2, 256, NDR_BETA, NDR_ALPHA)
    ar_350m = RingAllReduce(340e6 * 2, 256, NDR_BETA, NDR_ALPHA)
    tp_act = 16e6 / H100_NVLINK
    facility = FacilityPower(n_gpu, sym.TDP, F["PUE"])
    it = ITPower(n_gpu, sym.TDP)
    lam, tl = F["lambda_arr"], F["T_lat"]
    return [
        _iron_law(),
        Entry("fa-mtbf", "System MTBF of N components", "FA @eq-fleet-mtbf-system, @tbl-fleet-mtbf, three fleet "
              "numbers",
              _eq(rf"{T}{{MTBF}}_{{{T}{{system}}}}", mtbf / n_gpu),
              (SystemMTBF(mtbf, n_gpu), SystemMTBF(mtbf, n_gpu).doit()), (mtbf / n_gpu, SystemMTBF(mtbf, n_gpu)),
              tuple(Number(f"{n:,} GPUs at MTTF 50,000 h, {unit}", bk * scale,
                           value(SystemMTBF(GPU_MTTF, n)), "s", rel)
                    for n, h, mins, _ in clusters
                    for unit, bk, scale, rel in (("hours", h, HOUR, 0.005), ("minutes", mins, 60, 0.0005))),
              "mlsysim's calc_mtbf_cluster (correlation factor 1). The book writes MTBF_component over N; the "
              "package takes N as the fleet's accelerators, as the table does (GPU failures only)."),
        Entry("fa-failure-probability", "Probability of a failure within a window", "FA, caption and last column of "
              "@tbl-fleet-mtbf; summary",
              rf"\Pr(\ge 1\ {T}{{failure}}) = 1 - e^{{-T / {T}{{MTBF}}}}",
              (FailureProbability(F["T_job"], mtbf), FailureProbability(F["T_job"], mtbf).doit()),
              (1 - sp.exp(-F["T_job"] / mtbf), FailureProbability(F["T_job"], mtbf).doit().rewrite(sp.exp)),
              tuple(Number(f"{n:,} GPUs, 24 hours", bk, value(FailureProbability(24 * HOUR,
                                                                                SystemMTBF(GPU_MTTF, n))),
                           "1", 0.005) for n, _, _, bk in clusters),
              "mlsysim's calc_failure_probability. The book prints 98 % at 8,192 GPUs (0.9804) and 100 % at "
              "100,000 (1 - e^-48)."),
        Entry("fa-amdahl", "Amdahl's law at fleet scale", "FA, Amdahl's law at fleet scale (worked example) and "
              "foundations recap",
              rf"S(N) = \frac{{1}}{{s + (1 - s)/N}} \le \frac{{1}}{{s}}",
              (AmdahlSpeedup(n_gpu, rs), AmdahlSpeedup(n_gpu, rs).doit()),
              (1 / (rs + (1 - rs) / n_gpu), AmdahlSpeedup(n_gpu, rs)),
              tuple(Number(f"10 % serial, {n:,} GPUs", bk, value(AmdahlSpeedup(n, sp.Rational(1, 10))), "1", rel)
                    for n, bk, rel in ((32, 7.8, 0.005), (256, 9.7, 0.005), (1024, 9.9, 0.005), (8192, 10, 0.005)))
              + (Number("the cap 1/s, N -> infinity", 10, value(sp.limit(AmdahlSpeedup(n_gpu, sp.Rational(1, 10))
                                                                          .doit(), n_gpu, sp.oo)), "1", 0),),
              "The package's term is the Distributed Training chapter's form N / (1 + (N - 1) s) (dt-amdahl), "
              "with the serial share s; sympy checks it equals the recap's 1 / (s + (1 - s)/N), and the cap 1/s "
              "is its limit as N grows. mlsysim's calc_amdahls_speedup(p, s) takes the parallel share p = 1 - s. "
              "The 8,192-GPU value is 9.989, printed rounded to 10."),
        Entry("fa-goodput", "Goodput ratio after the four overheads", "FA, caption of @tbl-fleet-overhead-budgets",
              rf"\eta_{{{T}{{goodput}}}} = 1 - (f_{{{T}{{bubble}}}} + f_{{{T}{{ckpt}}}} + f_{{{T}{{recovery}}}} "
              rf"+ f_{{{T}{{maint}}}})",
              (GoodputRatio(fb, fc, fr, fm), GoodputRatio(fb, fc, fr, fm).doit()),
              (1 - (fb + fc + fr + fm), GoodputRatio(fb, fc, fr, fm)),
              (Number("5 % + 3 % + 10 % + 5 %", 0.77, goodput, "1", 1e-9),),
              "The book adds the four shares ('the compound effect is additive'). mlsysim's DistributedModel "
              "models none of them: its fleet MFU is eta_goodput = 1 (the effective-throughput entry)."),
        Entry("fa-effective", "Compound loss of fleet utilization (1,024 H100s)", "FA, 'The compound loss of fleet "
              "utilization' callout, its two display equations; three fleet numbers; summary",
              rf"{T}{{Effective}} = {T}{{Peak}} \times {T}{{MFU}} \times \eta_{{{T}{{scaling}}}} \times "
              rf"{T}{{Goodput Ratio}}",
              (q["mfu"], model.definition("mfu")), None,
              (Number("peak of 1,024 H100s (the book's 1,012,736 TFLOP/s, shown in Pflop/s)", 1_012_736e12, peak_1024, "flop/s", 1e-12),
               Number("effective: x 0.50 MFU x 0.83 scaling x 0.77 goodput", 323_619.8e12, effective, "flop/s",
                      5e-7),
               Number("share of peak", 0.320, effective / peak_1024, "1", 0.002),
               Number("share lost", 0.680, 1 - effective / peak_1024, "1", 0.002)),
              "The book's product is the effective-throughput entry's R_eff = N R_peak MFU eta_scaling "
              "eta_goodput, here with eta_goodput from fa-goodput. The package's fleet MFU is the device MFU "
              "times f_compute (its eta_scaling); its goodput is 1. The scaling-efficiency table beside it says "
              "'65 percent of compute is overhead' at 8,192 GPUs while its value there is 56 % (44 % lost): a "
              "note for the authors."),
        Entry("fa-implied-efficiency", "Scaling efficiency implied by an observed speedup", "FA, the roofline "
              "section's closing example (4,096 against 1,024 GPUs)",
              rf"\eta_{{{T}{{scaling}}}}(4096) = \frac{{2.5 \times 1024 \times \eta_{{{T}{{scaling}}}}(1024)}}{{4096}}",
              (q["scaling_efficiency"], model.definition("scaling_efficiency")), None,
              (Number("2.5x the throughput on 4x the GPUs, 83 % at 1,024", 0.519, 2.5 * 1024 * ETA_1024 / 4096, "1",
                      0.002),),
              "The definition eta_scaling = T_1 / (N T_N) (the scaling-efficiency entry) at two sizes: the "
              "throughput ratio times N_1 eta(N_1) over N_2."),
        Entry("fa-checkpoint", "Checkpoint size (14 bytes per parameter) and write time", "FA, foundations recap "
              "(training state rule) and @tbl-fleet-checkpoint-sizes",
              rf"S_{{{T}{{ckpt}}}} = 14 P", (CheckpointSize(P, b), CheckpointSize(P, b).doit()),
              (14 * P, CheckpointSize(P, 14)),
              tuple(Number(f"{n / 1e9:,.0f}B parameters", bk, value(CheckpointSize(n, 14)), "B", 0.005)
                    for n, bk, _, _ in ckpt)
              + tuple(Number(f"{n / 1e9:,.0f}B parameters written at 100 GB/s", t, value(CheckpointSize(n, 14) / 100e9),
                             "s", 0.03) for n, _, t, _ in ckpt),
              "mlsysim's calc_checkpoint_size: 2 bytes of BF16 weights and 12 of FP32 master weights and Adam "
              "moments; gradients are not saved. DT's 16 bytes per parameter (the zero entry) count the "
              "gradients' 2 as well: the two chapters agree once the gradients are set apart. The book prints "
              "the 7B write time as 1.0 s (0.98) and the 1T one as 2.3 min (140 s)."),
        Entry("fa-power", "IT load and facility load", "FA, power and sustainability numbers (rule of thumb), "
              "@tbl-fleet-pue-fleet and the thermal section",
              rf"P_{{{T}{{IT}}}} = N \times {T}{{TDP}}, \qquad P_{{{T}{{facility}}}} = P_{{{T}{{IT}}}} \times {T}{{PUE}}",
              (facility, facility.doit()), (it * F["PUE"], facility),
              (Number("10,000 H100s at 700 W: IT load", 7e6, value(ITPower(10_000, H100_TDP)), "W", 1e-12),
               Number("facility at PUE 1.55 (printed 10.8 MW: 10.85 rounded down in binary)", 10.8e6,
                      value(FacilityPower(10_000, H100_TDP, PUE["typical"])), "W", 0.005),
               Number("overhead per MW of IT, liquid-cooled (PUE 1.06)", 60e3,
                      value(FacilityPower(1, 1e6, PUE["liquid"]) - ITPower(1, 1e6)), "W", 1e-9),
               Number("overhead per MW of IT, best air-cooled (PUE 1.12)", 120e3,
                      value(FacilityPower(1, 1e6, PUE["air"]) - ITPower(1, 1e6)), "W", 1e-9),
               Number("overhead per MW of IT, industry average (PUE 1.55)", 550e3,
                      value(FacilityPower(1, 1e6, PUE["typical"]) - ITPower(1, 1e6)), "W", 1e-9),
               Number("overhead per MW of IT, legacy (PUE 1.58)", 580e3,
                      value(FacilityPower(1, 1e6, PUE["legacy"]) - ITPower(1, 1e6)), "W", 1e-9),
               Number("facility power saved, legacy to liquid, at fixed IT load", 0.329,
                      1 - PUE["liquid"] / PUE["legacy"], "1", 0.002),
               Number("10 MW of IT, legacy", 15.8e6, value(FacilityPower(1, 10e6, PUE["legacy"])), "W", 1e-9),
               Number("10 MW of IT, liquid-cooled", 10.6e6, value(FacilityPower(1, 10e6, PUE["liquid"])), "W", 1e-9),
               Number("the saving", 5.2e6, value(FacilityPower(1, 10e6, PUE["legacy"])
                                                 - FacilityPower(1, 10e6, PUE["liquid"])), "W", 1e-9)),
              "The book's rule divides by 10^6 to print megawatts. mlsysim's DistributedModel prices the energy "
              "of a step (TDP times an idle and a dynamic share), not the facility: no PUE."),
        Entry("fa-roofline", "Roofline: attainable operation rate", "FA @eq-fleet-roofline",
              rf"T_{{{T}{{attain}}}} = \min(R_{{{T}{{peak}}}}, I \times {T}{{BW}})",
              (AttainableRate(I, R, BW), AttainableRate(I, R, BW).doit()), (sp.Min(R, I * BW), AttainableRate(I, R, BW)),
              (Number("single-stream decode, I = 1 FLOP/byte on an H100: the bandwidth slope (FLOP/s)", 3.35e12,
                      value(AttainableRate(1, H100_PEAK, H100_HBM)), "flop/s", 1e-12),),
              "The registry's \\AttainableComputeRate is R_attain; the book calls the attainable rate T_attain. "
              "The package's step uses the same roofline in time form, max(T_compute, T_memory)."),
        Entry("fa-ridge", "Ridge point, and memory-bound decode", "FA @eq-fleet-ridge-point and the H100 / "
              "Llama-3.1-8B example",
              rf"I^{{*}} = \frac{{R_{{{T}{{peak}}}}}}{{{T}{{BW}}}}",
              (RidgePoint(R, BW), RidgePoint(R, BW).doit()), (sp.solve(sp.Eq(R, I * BW), I)[0], RidgePoint(R, BW)),
              (Number("H100: 989 TFLOP/s over 3.35 TB/s (FLOP/byte)", 295, value(RidgePoint(H100_PEAK, H100_HBM)),
                      "flop/B", 0.002),
               Number("Llama-3.1-8B weights in BF16 (8.03B parameters)", 16.1e9, weights_8b, "B", 0.005),
               Number("decode intensity, 2P FLOPs over 2P bytes", 1, 2 * 8.03e9 / weights_8b, "flop/B", 0),
               Number("tokens per second: the weight-read rate BW / weights", 208.6,
                      value(AttainableRate(1, H100_PEAK, H100_HBM)) / (2 * 8.03e9), "1/s", 0.0005)),
              "sympy solves R_peak = I BW for I: where the roofline's two branches meet. At I = 1 decode sits on "
              "the slope, so its rate is BW, and tokens per second are BW over the 2P FLOPs (= bytes) of a token."),
        Entry("fa-rho-table", "Communication-computation ratio, three scenarios", "FA @eq-comm-compute-ratio and "
              "@tbl-fleet-comm-comp",
              rf"\rho = \frac{{T_{{{T}{{comm}}}}(N)}}{{T_{{{T}{{compute}}}} / N}}",
              (CommComputeRatio(q["T_comm"], q["T_node"]), CommComputeRatio(q["T_comm"], q["T_node"]).doit()), None,
              (Number("7B, 256 GPUs: BF16 gradient ring AllReduce on NDR", 560.4e-3, value(ar_7b), "s", 0.0005),
               Number("its rho against 5 s of compute", 0.11, value(CommComputeRatio(ar_7b, 5)), "1", 0.02),
               Number("350M (BERT-Large, 340M), 256 GPUs: AllReduce", 29.6e-3, value(ar_350m), "s", 0.002),
               Number("its rho against 10 ms", 3, value(CommComputeRatio(ar_350m, 0.010)), "1", 0.02),
               Number("tensor parallel: 16 MB over NVLink 900 GB/s", 0.02e-3, tp_act, "s", 0.12),
               Number("its rho against 1 ms", 0.018, value(CommComputeRatio(tp_act, 1e-3)), "1", 0.02)),
              "The ratio is the rho entry's; the book's T_comm here is one ring AllReduce (the package's "
              "RingAllReduce) and its T_compute/N an assumed time. The book prints the TP transfer as 0.02 ms "
              "(0.0178) and its rho as 0.018."),
        Entry("fa-ring-volume", "Bytes per participant of a ring AllReduce", "FA, AllReduce overhead scaling",
              rf"V = \frac{{2 (N - 1) M}}{{N}} \to 2M",
              (DataParallelCommVolume(M, N), DataParallelCommVolume(M, N).doit()),
              (2 * (N - 1) * M / N, DataParallelCommVolume(M, N)), (),
              "The bytes one rank sends in a ring AllReduce (ReduceScatter then AllGather); its latency term "
              "2(N - 1) alpha is the ring entry's."),
        Entry("fa-little", "Little's law", "FA, foundations recap",
              rf"Q_{{{T}{{req}}}} = \lambda_{{{T}{{arr}}}} T_{{{T}{{lat}}}}",
              (RequestConcurrency(lam, tl), RequestConcurrency(lam, tl).doit()), (lam * tl, RequestConcurrency(lam, tl)),
              (), "Little (1961); the recap prints no number. Serving is outside mlsysim's DistributedModel."),
    ]


def groups() -> Dict[str, List[Entry]]:
    return {"Communication appendix (AC)": communication(), "Fleet appendix (FA)": fleet()}


def inventory() -> List[Counted]:
    ac = [
        Counted("AC", "@eq-alpha-beta", "point-to-point time alpha + n/beta", entry="alpha-beta"),
        Counted("AC", "@eq-crossover", "crossover size n* = alpha beta", entry="crossover"),
        Counted("AC", "crossover notebook", "250 KB on InfiniBand NDR", entry="crossover"),
        Counted("AC", "LogGP display (unlabelled)", "T_long = o_s + L + (k - 1) G + o_r", entry="ac-loggp"),
        Counted("AC", "@eq-ring-allreduce", "ring AllReduce", entry="ring"),
        Counted("AC", "@eq-tree-allreduce", "tree AllReduce", entry="tree"),
        Counted("AC", "ring vs. tree notebook", "ring 42.4 ms for 1 GB over 256 GPUs", entry="ring"),
        Counted("AC", "ring vs. tree notebook", "tree 320.1 ms for the same", entry="tree"),
        Counted("AC", "@eq-allgather", "ring AllGather", entry="rs-ag"),
        Counted("AC", "@eq-reducescatter", "ring ReduceScatter", entry="rs-ag"),
        Counted("AC", "@eq-alltoall", "ring AllToAll", entry="alltoall"),
        Counted("AC", "@eq-broadcast", "tree broadcast", entry="ac-broadcast"),
        Counted("AC", "hierarchical AllReduce", "NVLink over NDR, 18x", entry="ac-nvlink-ndr-ratio"),
        Counted("AC", "@eq-pipeline-bubble", "bubble fraction", entry="bubble"),
        Counted("AC", "bubble fraction, rule of thumb", "m >= 4(p - 1) for 20 %", entry="ac-bubble-rule"),
        Counted("AC", "@tbl-pipeline-bubble", "eight bubble fractions", entry="ac-bubble-table"),
        Counted("AC", "@eq-interleaved-bubble", "interleaved bubble fraction", entry="interleaved"),
        Counted("AC", "interleaved scheduling", "p 8, m 16, V 4: 30.4 % to 9.9 %, 3.1x", entry="interleaved"),
        Counted("AC", "@eq-compression-total", "compressed time", entry="ac-compression-example"),
        Counted("AC", "@eq-compression-breakeven", "break-even condition", entry="ac-compression-breakeven"),
        Counted("AC", "top-k compression notebook", "42.4 ms, 3.2 ms, 5.2 ms, 8.2x", entry="ac-compression-example"),
        Counted("AC", "@tbl-compression-breakeven", "twelve break-even budgets", entry="ac-compression-breakeven"),
    ]
    fa = [
        Counted("FA", "foundations recap", "the iron law as a sum", entry="fa-iron-law"),
        Counted("FA", "foundations recap", "Amdahl's cap 1/s", entry="fa-amdahl"),
        Counted("FA", "foundations recap", "training state rule, 14 bytes per parameter", entry="fa-checkpoint"),
        Counted("FA", "foundations recap", "Little's law", entry="fa-little"),
        Counted("FA", "three fleet numbers; @tbl-fleet-numbers-quick-ref", "bandwidth gap 18x",
                entry="ac-nvlink-ndr-ratio"),
        Counted("FA", "three fleet numbers", "a failure every 30 minutes at 100,000 GPUs", entry="fa-mtbf"),
        Counted("FA", "three fleet numbers", "32.0 % of peak as useful work", entry="fa-effective"),
        Counted("FA", "@eq-fleet-mtbf-system", "system MTBF", entry="fa-mtbf"),
        Counted("FA", "AllReduce overhead scaling", "2(N - 1)M/N bytes per participant", entry="fa-ring-volume"),
        Counted("FA", "@tbl-fleet-mtbf", "MTBF in hours and minutes at four sizes", entry="fa-mtbf"),
        Counted("FA", "@tbl-fleet-mtbf caption and column", "1 - exp(-T/MTBF) at four sizes",
                entry="fa-failure-probability"),
        Counted("FA", "@tbl-fleet-checkpoint-sizes", "checkpoint sizes", entry="fa-checkpoint"),
        Counted("FA", "@tbl-fleet-checkpoint-sizes", "write times at 100 GB/s", entry="fa-checkpoint"),
        Counted("FA", "@tbl-fleet-overhead-budgets caption", "goodput 1 - (0.05 + 0.03 + 0.10 + 0.05) = 0.77",
                entry="fa-goodput"),
        Counted("FA", "power numbers, rule of thumb", "IT load N x TDP: 7 MW", entry="fa-power"),
        Counted("FA", "power numbers, rule of thumb", "facility load IT x PUE: 10.8 MW", entry="fa-power"),
        Counted("FA", "@tbl-fleet-power-density-fleet caption", "AI rack over traditional rack, 5.8x",
                why="a ratio of two catalog rack powers (70 kW over 12 kW), no cost formula to price"),
        Counted("FA", "@tbl-fleet-pue-fleet and its caption", "overhead per MW, 32.9 % reduction", entry="fa-power"),
        Counted("FA", "energy hierarchy", "10 MW of IT: 15.8 MW, 10.6 MW, 5.2 MW saved", entry="fa-power"),
        Counted("FA", "@eq-fleet-arithmetic-intensity", "I = FLOPs / bytes moved",
                why="a definition: the package's quantity intensity (\\ArithmeticIntensity) is it, and fa-ridge "
                    "evaluates it for decode"),
        Counted("FA", "@eq-fleet-roofline", "attainable rate min(R_peak, I BW)", entry="fa-roofline"),
        Counted("FA", "@eq-fleet-ridge-point", "ridge point R_peak / BW", entry="fa-ridge"),
        Counted("FA", "roofline example", "H100 ridge 295 FLOP/byte", entry="fa-ridge"),
        Counted("FA", "roofline example", "8B decode: 16.1 GB, 1 FLOP/byte, 208.6 tokens/s", entry="fa-ridge"),
        Counted("FA", "scaling callout", "implied efficiency 51.9 % at 4,096 GPUs", entry="fa-implied-efficiency"),
        Counted("FA", "Amdahl's law at fleet scale", "speedups at 32 ... 8,192 GPUs and the 10x cap", entry="fa-amdahl"),
        Counted("FA", "@eq-comm-compute-ratio", "rho", entry="rho"),
        Counted("FA", "@tbl-fleet-comm-comp", "three scenarios' AllReduce times and rho", entry="fa-rho-table"),
        Counted("FA", "compound loss callout, first display", "Effective = Peak x MFU x eta x goodput",
                entry="effective-throughput"),
        Counted("FA", "compound loss callout, second display (generated)", "1,012,736 x 0.50 x 0.83 x 0.77",
                entry="fa-effective"),
    ]
    return ac + fa
