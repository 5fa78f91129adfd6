"""The Distributed Training chapter (DT) of *Machine Learning Systems* vol. 2: its count of equations and the
entries this package adds for it.

The chapter read is book/quarto/contents/vol2/distributed_training/distributed_training.qmd of
harvard-edge/cs249r_book at commit febcad7cdc953ced6fe0c3b152d6b80efe238731 (the version with the step-time law
written with T_sync and the labelled @eq-distributed-training-scaling-efficiency). Its cells compute with
mlsysim's catalog (GPT-3 175B parameters, InfiniBand HDR 25 GB/s and NDR 50 GB/s, H100 NVLink 900 GB/s,
10 GbE 1.25 GB/s, the 1K-A100 cluster of 128 nodes of 8); those values are written out below.

Counted as :data:`derivations.book.COUNTING` says: the chapter has 21 display equations (one labelled) and the
worked formulas listed in :func:`inventory`, in the order they appear.
"""
from __future__ import annotations

import math
from typing import Dict, List

import sympy as sp

from mlsysim_sym import notation
from mlsysim_sym.symbols import sym
from mlsysim_sym.terms.collectives import DataParallelCommVolume, HierarchicalAllReduce, RingAllReduce
from mlsysim_sym.terms.pipeline import BubbleFraction
from mlsysim_sym.terms.training import (AccumulationSyncOverhead, AmdahlSpeedup, CriticalBatchSize,
                                        LarsLearningRate, LinearScaledLearningRate, SqrtScaledLearningRate,
                                        StalenessAdjustedLearningRate, WarmupLearningRate)

from .book import Counted, Entry, Number, T, value

F = notation.FORMAL
N, M, BETA, ALPHA = F["N_coll"], F["M_coll"], F["beta"], F["alpha"]
R, ETA, K, STEP, W = F["r_serial"], F["eta_base"], F["k_batch"], F["t_opt"], F["W_warm"]
GB, MS = 1e9, 1e-3


def _ours(call):
    return (call, call.doit())


# --------------------------------------------------------------------------------------------------
# Scaling and convergence
# --------------------------------------------------------------------------------------------------
def scaling() -> List[Entry]:
    amdahl = AmdahlSpeedup(N, R)
    ceiling = sp.limit(amdahl.doit(), N, sp.oo)
    return [
        Entry("dt-amdahl", "Amdahl's speedup with a serial share", "DT, The physics of scaling (fig-scaling-tax's "
              "curves); the definition of distributed training (its pitfall); Scaling efficiency and convergence",
              rf"S(N) = \frac{{N}}{{1 + (N - 1) r}}", _ours(amdahl), (N / (1 + (N - 1) * R), amdahl),
              (Number("the ceiling 1/r as N grows, with 30 % of the step serial (the book: 1/0.30 = 3x)", 3,
                      value(ceiling.subs(R, sp.Rational(3, 10))), "1", 0.12),
               Number("two GPUs at r = 1/3: a 1.5x speedup, 'the missing 25 percent'", 1.5,
                      value(AmdahlSpeedup(2, sp.Rational(1, 3))), "1", 1e-12)),
              "The chapter prints this form only in the code that draws fig-scaling-tax (r = 0, 0.05, 0.2, 0.5); "
              "sympy's limit of the term as N grows is 1/r, the ceiling the pitfall quotes. 1/0.30 is 3.33, "
              "which the book writes as about 3x."),
    ]


def learning_rate() -> List[Entry]:
    lin, sq = LinearScaledLearningRate(ETA, K), SqrtScaledLearningRate(ETA, K)
    warm = WarmupLearningRate(ETA, K, STEP, W)
    stale = StalenessAdjustedLearningRate(F["eta_bsp"], F["s_stale"])
    lars = LarsLearningRate(F["eta_global"], F["w_norm"], F["g_norm_l"], F["lambda_wd"])
    crit = CriticalBatchSize(F["tr_cov"], F["g_norm2"])
    return [
        Entry("dt-lr-linear", "Linear learning-rate scaling rule", "DT, Learning rate scaling rules (display); "
              "Fallacies and pitfalls", rf"\eta_{{{T}{{large}}}} = k \cdot \eta_{{{T}{{base}}}}", _ours(lin),
              (K * ETA, lin),
              (Number("ResNet-50: batch 256 at rate 0.1 scaled to 32K (the pitfall's 12.8)", 12.8,
                      value(LinearScaledLearningRate(sp.Rational(1, 10), sp.Rational(32768, 256))), "1", 1e-12),),
              "k is the batch's multiplier, B_large / B_base in the pitfall's form."),
        Entry("dt-lr-sqrt", "Square-root learning-rate scaling rule", "DT, Learning rate scaling rules",
              rf"\eta_{{{T}{{large}}}} = \sqrt{{k}} \cdot \eta_{{{T}{{base}}}}", _ours(sq), (sp.sqrt(K) * ETA, sq)),
        Entry("dt-lr-warmup", "Linear learning-rate warmup", "DT, Learning rate scaling rules",
              rf"\eta_t = \eta_{{{T}{{base}}}} + \frac{{t}}{{W}}(k \cdot \eta_{{{T}{{base}}}} - "
              rf"\eta_{{{T}{{base}}}})", _ours(warm), (ETA + STEP / W * (K * ETA - ETA), warm), (),
              "Valid for t < W; at t = W it reaches the linear rule's k eta_base (sympy: the difference is 0)."
              if sp.simplify(warm.doit().subs(STEP, W) - lin.doit()) == 0 else "MISMATCH"),
        Entry("dt-lars", "LARS layer-wise learning rate", "DT, Learning rate scaling rules",
              rf"\eta_l = \eta_{{{T}{{global}}}} \cdot \frac{{\|w_l\|}}{{\|g_l\| + \lambda_{{{T}{{wd}}}}\|w_l\|}}",
              _ours(lars), (F["eta_global"] * F["w_norm"] / (F["g_norm_l"] + F["lambda_wd"] * F["w_norm"]), lars)),
        Entry("dt-critical-batch", "Critical batch size (gradient noise scale)", "DT, Critical batch size and "
              "diminishing returns (display and the checkpoint's B_crit)",
              rf"B^{{*}} \approx \frac{{{T}{{tr}}(\Sigma)}}{{\|\nabla \mathcal{{L}}(\theta)\|^2}}", _ours(crit),
              (F["tr_cov"] / F["g_norm2"], crit), (),
              "McCandlish et al. (2018)'s B_simple. The chapter quotes measured critical batches (ResNet-50 8K-16K, "
              "BERT-Large 32K-65K, GPT-3 1M-4M tokens), not values of this estimate."),
        Entry("dt-staleness", "Staleness-adjusted learning rate", "DT, Staleness impact (SSP) and the 8-to-64 "
              "workers notebook", rf"\eta' = \frac{{\eta}}{{\sqrt{{1 + s}}}}", _ours(stale),
              (F["eta_bsp"] / sp.sqrt(1 + F["s_stale"]), stale),
              (Number("SSP with s = 4: the rate's factor (the notebook's 0.45)", 0.45,
                      value(StalenessAdjustedLearningRate(1, 4)), "1", 0.01),),
              "The synchronization-models section writes eta / sqrt(tau_stale) for asynchronous SGD and the "
              "staleness section eta / sqrt(1 + tau): two forms of one compensation (a note for the authors)."),
    ]


def accumulation() -> List[Entry]:
    acc = AccumulationSyncOverhead(F["T_sync_acc"], sym.GA, F["T_mu"])
    ovh = AccumulationSyncOverhead(0.35 * MS, 4, 1800 * MS)
    hours = 25 / (8 * (1 - ovh))
    return [
        Entry("dt-grad-accum", "Synchronization overhead under gradient accumulation", "DT, notebook 'Gradient "
              "accumulation speedup'; Trade-offs: the communication wall",
              rf"{T}{{Overhead}} = \frac{{T_{{{T}{{comm}}}}}}{{k \times T_{{{T}{{compute}}}}}}", _ours(acc),
              (F["T_sync_acc"] / (sym.GA * F["T_mu"]), acc),
              (Number("0.35 ms all-reduce over 4 x 1,800 ms (the notebook's 0.005 %)", 0.00005, value(ovh), "1", 0.03),
               Number("training time: 25 h over 8 (1 - overhead)", 3.1, value(hours), "h", 0.02),
               Number("cost at $128/h", 400, value(128 * hours), "USD", 0.001),
               Number("savings against the 32-GPU run's $3,021", 2621, value(3021 - 128 * hours), "USD", 0.001),
               Number("synchronization events removed by 4 accumulation steps, 1 - 1/k (the book's 75 %)", 0.75,
                      1 - 1 / 4, "1", 1e-12)),
              "The notebook takes the 8-GPU all-reduce as 0.35 ms, while the GPT-2 scaling notebook before it "
              "computes the same all-reduce (3 GB, 8 GPUs, 900 GB/s) as 5.8 ms (dt-gpt2-scaling); with 5.8 ms "
              f"the overhead is {value(AccumulationSyncOverhead(5.8 * MS, 4, 1800 * MS)) * 100:.2f} % "
              "(a note for the authors)."),
    ]


# --------------------------------------------------------------------------------------------------
# Worked communication examples (the collectives' terms at the chapter's numbers)
# --------------------------------------------------------------------------------------------------
def communication() -> List[Entry]:
    ring = RingAllReduce(M, N, BETA, ALPHA)
    hdr, nvl_a100, nvl_h100, tengig, ndr = 25 * GB, 300 * GB, 900 * GB, 1.25 * GB, 50 * GB
    gpt2 = 1.5e9 * 2
    t8 = value(RingAllReduce(gpt2, 8, nvl_h100, 0))
    sync32 = value(DataParallelCommVolume(gpt2, 32))
    t32 = sync32 / tengig + 0.35 * MS
    hier = HierarchicalAllReduce(3 * GB, 128, 8, nvl_a100, 500e-9, hdr, 5e-6)
    big_n = sp.limit(ring.doit().subs(ALPHA, 0), N, sp.oo)
    return [
        Entry("dt-hier-debug", "Flat and hierarchical AllReduce of a 3 GB gradient on 1,024 A100s",
              "DT, perspective 'Debugging slow gradient synchronization'", "", _ours(ring), None,
              (Number("one InfiniBand HDR link: 3 GB / 25 GB/s", 120 * MS, 3 * GB / hdr, "s", 1e-12),
               Number("flat ring over 1,024 GPUs at 25 GB/s (the cell's 239.8 ms, 'approximately 240')", 239.8 * MS,
                      value(RingAllReduce(3 * GB, 1024, hdr, 0)), "s", 0.0005),
               Number("inter-node phase: a ring over 128 nodes on 3 GB / 8 (the cell's 29.8 ms)", 29.8 * MS,
                      value(RingAllReduce(3 * GB / 8, 128, hdr, 0)), "s", 0.002),
               Number("hierarchical total with NVLink 300 GB/s phases, 0.5 us and 5 us latencies (the cell's "
                      "48.5 ms)", 48.5 * MS, value(hier), "s", 0.001)),
              "The cell calls mlsysim's calc_ring_allreduce_time and calc_hierarchical_allreduce_time; the "
              f"package's HierarchicalAllReduce gives {value(hier) * 1e3:.1f} ms, mlsysim 0.3.0's function the same "
              "(tests/test_book_dt.py); the cell's header comment says 'about 50 ms'."),
        Entry("dt-gpt2-scaling", "GPT-2 data-parallel scaling, 8 and 32 GPUs", "DT, notebook 'GPT-2 data "
              "parallel scaling'", "", _ours(DataParallelCommVolume(M, N)), None,
              (Number("8 GPUs: ring all-reduce of 3 GB of FP16 gradients on NVLink 900 GB/s", 5.8 * MS, t8, "s", 0.01),
               Number("8 GPUs: speedup 8 x 1.8 s / (1.8 s + all-reduce)", 8, 8 * 1.8 / (1.8 + t8), "1", 0.01),
               Number("32 GPUs: bytes each rank sends, 2 (31/32) x 3 GB", 5.8 * GB, sync32, "B", 0.005),
               Number("32 GPUs: step 1.8 s + 5.81 GB / 1.25 GB/s + 0.35 ms", 6.45, 1.8 + t32, "s", 0.005),
               Number("32 GPUs: speedup 32 x 1.8 / step", 8.9, 32 * 1.8 / (1.8 + t32), "1", 0.01),
               Number("32 GPUs: parallel efficiency", 0.279, 1.8 / (1.8 + t32), "1", 0.005)),
              "The cells price the sync as the ring's bytes 2(N - 1)/N M (the package's DataParallelCommVolume) over "
              "one link, with no latency."),
        Entry("dt-175b-comm", "GPT-3 175B data-parallel all-reduce and the hierarchy-aware configurations",
              "DT, notebook 'Scaling efficiency for a 175B model' and Parallelism-infrastructure interaction",
              rf"T_{{{T}{{comm}}}} \approx \frac{{2 M}}{{\beta}}", (ring.subs(ALPHA, 0), big_n),
              (big_n, sp.limit(RingAllReduce(M, N, BETA, 0).doit(), N, sp.oo)),
              (Number("350 GB of FP16 gradients over NDR 50 GB/s, large N: the raw 14 s", 14, value(big_n.subs(
                  {M: 350 * GB, BETA: ndr})), "s", 1e-12),
               Number("with 75 % overlapped: 3.5 s exposed", 3.5, 0.25 * 14, "s", 1e-12),
               Number("compute per step 6 x 175e9 x 2e6 tokens", 2.1e18, 6 * 175e9 * 2e6, "FLOP", 1e-12),
               Number("configuration B (TP 8): one eighth, 43.75 GB", 43.75 * GB, 350 * GB / 8, "B", 1e-12),
               Number("configuration B: its all-reduce, 1.75 s", 1.75, value(big_n.subs({M: 43.75 * GB, BETA: ndr})),
                      "s", 1e-12),
               Number("configuration B: efficiency 2.1 / (2.1 + 1.75)", 0.545, 2.1 / (2.1 + 1.75), "1", 0.001),
               Number("configuration C: the bubble, p 4, m 32 (the book's (p-1)/m, 'roughly 9 percent')", 0.09,
                      value(BubbleFraction(4, 1, 32)), "1", 0.05)),
              "The ring's bandwidth term 2(N-1)/N M/beta tends to 2M/beta as N grows (sympy's limit); the chapter "
              "uses that limit. Configuration C's '(p - 1)/m' is 3/32 = 9.4 %; the bubble term the chapter defines "
              "elsewhere, (p - 1)/(m + p - 1), gives 8.6 %."),
        Entry("dt-tp-traffic", "Tensor-parallel all-reduce traffic per step", "DT, Tensor parallelism (after "
              "M_act) and the 3D training loop cell",
              "", _ours(DataParallelCommVolume(M, N)), None,
              (Number("B 4, S 2048, d 4096, FP16: 134 MB per all-reduce, the ring factor taken as 2", 134e6,
                      value(sp.limit(DataParallelCommVolume(4 * 2048 * 4096 * 2, N).doit(), N, sp.oo)), "B", 0.005),
               Number("96 layers x 2 all-reduces: 25.7 GB per forward pass", 25.7 * GB,
                      96 * 2 * 2 * 4 * 2048 * 4096 * 2, "B", 0.005),
               Number("forward and backward: about 51 GB", 51 * GB, 2 * 96 * 2 * 2 * 4 * 2048 * 4096 * 2, "B", 0.02),
               Number("3D loop: 4 x 2048 x 12288 x 2 B payload", 201e6, 4 * 2048 * 12288 * 2, "B", 0.005),
               Number("3D loop: ring at t = 8, 2 per layer, 96 layers: full forward about 67.6 GB", 67.6 * GB,
                      192 * value(DataParallelCommVolume(4 * 2048 * 12288 * 2, 8)), "B", 0.005),
               Number("3D loop: per pipeline stage (16 stages), forward", 4.2 * GB,
                      12 * value(DataParallelCommVolume(4 * 2048 * 12288 * 2, 8)), "B", 0.01),
               Number("3D loop: per stage, forward and backward", 8.5 * GB,
                      24 * value(DataParallelCommVolume(4 * 2048 * 12288 * 2, 8)), "B", 0.01)),
              "The section's 134 MB takes the ring factor 2(t-1)/t as its limit 2 (the package's term's limit as t "
              "grows); at t = 8, the degree it names, the factor is 1.75 and the all-reduce 117 MB. The 3D cell uses "
              "the factor at t = 8."),
    ]


def groups() -> Dict[str, List[Entry]]:
    return {"Distributed Training: scaling, learning rate and convergence": scaling() + learning_rate()
            + accumulation(),
            "Distributed Training: worked communication": communication()}


# --------------------------------------------------------------------------------------------------
# The count
# --------------------------------------------------------------------------------------------------
_NOT_YET = "not reproduced yet: "


def inventory() -> List[Counted]:
    """Every display equation (D) and worked formula (W) of the chapter, in order."""
    c = lambda where, what, entry="", why="": Counted("DT", where, what, entry, why)  # noqa: E731
    return [
        c("sec. The physics of the cluster (D)", "distributed step-time law", "fleet-law"),
        c("sec. The physics of the cluster", "communication-computation ratio rho", "rho"),
        c("cell DistTrainReliabilityFacts", "100 nodes at 99.9 % hourly survival: 9.5 %/h failure, MTBF 10 h",
          why=_NOT_YET + "cluster survival and MTBF are the reliability appendix's and the fault-tolerance "
          "chapter's equations (their entries)"),
        c("sec. Multi-machine training requirements", "16 bytes per parameter in 80 GB: about 5B parameters",
          why=_NOT_YET + "a quotient of the zero entry's 16 bytes per parameter"),
        c("dfn Distributed training", "175B in BF16, 350 GB over 80 GB: at least 5 H100s",
          why=_NOT_YET + "a ceiling of weight bytes over device memory"),
        c("dfn Distributed training (pitfall)", "Amdahl ceiling 1/0.30 = 3x", "dt-amdahl"),
        c("sec. Data parallelism (D)", "minibatch gradient g", why="a definition of the averaged gradient, no "
          "cost; the equivalence of the three averages is checked symbolically in tests/test_book_dt.py"),
        c("sec. Data parallelism (D)", "local gradient g_k", why="a definition (as above)"),
        c("sec. Data parallelism (D)", "global gradient, the mean of the g_k", why="a definition (as above)"),
        c("sec. Data parallelism (D)", "global gradient over the combined batch", why="a definition (as above)"),
        c("sec. Dataset splitting", "examples per GPU: 100,000 / 4 and 1.2M / 32",
          why=_NOT_YET + "a division with no model quantity"),
        c("perspective Debugging slow gradient synchronization", "single link 120 ms, flat ring 240 ms, inter-node "
          "30 ms, hierarchical about 50 ms", "dt-hier-debug"),
        c("sec. Trade-offs: the communication wall", "bandwidth wall 2(N-1)/N M / BW", "ring"),
        c("notebook GPT-2 data parallel scaling", "8 and 32 GPU speedup and efficiency", "dt-gpt2-scaling"),
        c("notebook Gradient accumulation speedup", "overhead, hours, cost, savings", "dt-grad-accum"),
        c("notebook ZeRO memory savings (D)", "C_state,total = 7e9 x 16 B = 112 GB", "zero"),
        c("notebook ZeRO memory savings (D)", "C_state,ZeRO3 = 112 GB / 64 = 1.75 GB", "zero"),
        c("notebook FSDP communication analysis", "3M against 2M bytes", "zero3-comm"),
        c("sec. Scaling efficiency and convergence", "1.5x on doubled GPUs: 25 % lost", "dt-amdahl"),
        c("@eq-distributed-training-scaling-efficiency (D)", "eta_scaling = T_1 / (N T_N)", "scaling-efficiency"),
        c("notebook Scaling efficiency for a 175B model", "14 s raw, 3.5 s exposed, 2.1e18 FLOP, 2.1/5.6 = 0.375",
          "dt-175b-comm"),
        c("sec. Parallelism-infrastructure interaction", "configurations B (43.75 GB, 1.75 s, 54.5 %) and C (9 %)",
          "dt-175b-comm"),
        c("sec. Parallelism-infrastructure interaction", "BERT gradients in FP32: 440 MB and 1.4 GB",
          why=_NOT_YET + "parameters times 4 bytes"),
        c("sec. Parallelism-infrastructure interaction", "4 accumulation steps remove 75 % of synchronizations",
          "dt-grad-accum"),
        c("sec. Amdahl's Law with communication (D)", "step-time law with its terms named", "fleet-law"),
        c("sec. Amdahl's Law with communication (D)", "eta_scaling through the step-time law", "scaling-efficiency"),
        c("fig-scaling-tax (cell)", "speedup N / (1 + (N-1) r)", "dt-amdahl"),
        c("thrm Convergence rate for distributed SGD (D)", "optimization error plus variance floor",
          why="a convergence bound (an inequality on the expected loss), no cost of the step"),
        c("sec. Staleness impact (D)", "SSP convergence bound", why="an asymptotic bound in O(), no cost"),
        c("sec. Staleness impact (D)", "ASP convergence bound", why="an asymptotic bound in O(), no cost"),
        c("sec. Staleness impact", "eta' = eta / sqrt(1 + s)", "dt-staleness"),
        c("sec. Learning rate scaling rules (D)", "linear scaling rule", "dt-lr-linear"),
        c("sec. Learning rate scaling rules (D)", "linear warmup", "dt-lr-warmup"),
        c("sec. Learning rate scaling rules (D)", "square-root scaling rule", "dt-lr-sqrt"),
        c("sec. Learning rate scaling rules (D)", "LARS layer-wise rate", "dt-lars"),
        c("sec. Critical batch size (D)", "B* = tr(Sigma) / |grad L|^2", "dt-critical-batch"),
        c("notebook Scaling from 8 to 64 workers", "batches 256 and 2,048; speedups 6.8, 40.1, 38.1; sample "
          "efficiency; costs", why=_NOT_YET + "a speedup from iteration counts the notebook assumes"),
        c("notebook Scaling from 8 to 64 workers", "SSP rate factor 1/sqrt(5) = 0.45", "dt-staleness"),
        c("cell ModelParallelMemoryFacts", "175B: 350 GB weights, 2,800 GB state, 43.8 GB per GPU over 64",
          why=_NOT_YET + "the zero entry's bytes per parameter at 175B"),
        c("notebook The memory wall of scale", "43.75 GB static + 50 GB activations = 93.75 GB",
          why=_NOT_YET + "as above, plus an assumed activation budget"),
        c("dfn Pipeline parallelism", "boundary activation 8192 x 2048 x 2 = 32 MB", "pipeline-send"),
        c("dfn Pipeline parallelism", "bubble p 8, m 32: 18 %; p 16, m 16: 48 %", "bubble"),
        c("notebook The cost of the pipeline bubble", "7 / 39 = 17.9 %", "bubble"),
        c("footnote GPipe", "p 4, m 4: 43 %", "bubble"),
        c("sec. Zero-bubble pipeline parallelism", "p 4, m 8: 3/11 = 27 %", "bubble"),
        c("dfn Tensor parallelism", "96 blocks x 2-10 ms: 200-960 ms", why=_NOT_YET + "a range of times"),
        c("sec. Tensor parallelism (D)", "column-parallel Y = X[W1|W2]", why="a matrix identity, no cost"),
        c("sec. Tensor parallelism (D)", "row-parallel Y = X1 W1 + X2 W2", why="a matrix identity, no cost"),
        c("sec. Tensor parallelism (D)", "M_act = B S d sizeof(dtype)", "tp-payload"),
        c("sec. Tensor parallelism", "134 MB per all-reduce, 25.7 GB forward, 51 GB per step", "dt-tp-traffic"),
        c("sec. Expert parallelism", "all-to-all: 67 MB each way, 134 MB per block",
          why=_NOT_YET + "the tp-payload bytes sent twice"),
        c("sec. Expert parallelism", "capacity C (B S) / E", "capacity"),
        c("cell TensorParallel3DTraffic", "16,384 GPUs, 201 MB, 67.6 GB, 4.2 GB, 8.5 GB", "dt-tp-traffic"),
        c("cell HybridMemoryAccounting", "8- and 12-byte Adam: 1.4 / 2.1 TB, 218.75, 13.7 and 19.1 GB per GPU",
          why=_NOT_YET + "the zero entry's bytes per parameter over t p"),
        c("sec. Pipeline bubble (hybrid)", "p 16, m 32: 15/47 = 31.9 %", "bubble"),
        c("sec. RLHF coordination", "PPO memory 1,120 + 140 + 26 + 208 = 1,494 GB, 18 GPUs; DPO 1,260 GB",
          why=_NOT_YET + "bytes per parameter of four models"),
        c("cell RLHFKVCache", "KV cache 2 N_L H_kv d_head 2 B: 85.9 GB, dense 687 GB",
          why=_NOT_YET + "the KV cache is an inference quantity the package does not model"),
        c("notebook RLHF infrastructure budget", "35 + 4.4 = 39.4 GB per GPU, KV 2.7 GB per GPU",
          why=_NOT_YET + "as the RLHF memory row"),
        c("sec. Sequence length variance", "padding waste 88 %", why=_NOT_YET + "a padding fraction"),
        c("pitfall MFU and scaling efficiency", "0.50 x 0.50 = 0.25: 256 GPU-equivalents",
          "effective-throughput"),
        c("pitfall Hyperparameters", "0.1 x 32K / 256 = 12.8", "dt-lr-linear"),
        c("fallacy Parallelism overhead", "25/(50+25) = 33 %, 180/(2400+180) = 7 %",
          why=_NOT_YET + "a communication share of measured times"),
        c("pitfall Gradient accumulation is free", "(K-1)/K of synchronizations; 7B FP16 buffer 14 GB",
          "dt-grad-accum"),
        c("pitfall Fixed checkpoint intervals", "Young-Daly: MTBF 48.8 h, interval 171 min, tax 5.8 % vs 33.6 %",
          why=_NOT_YET + "Young-Daly is the fault-tolerance chapter's equation (its entry)"),
        c("sec. Barrier semantics", "1,000 GPUs x 1 % = 10 stragglers per step",
          why=_NOT_YET + "an expected count N p"),
    ]
