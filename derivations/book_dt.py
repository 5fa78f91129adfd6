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
from mlsysim_sym.model import build_model
from mlsysim_sym.symbols import PARAMS
from mlsysim_sym.terms.collectives import DataParallelCommVolume, HierarchicalAllReduce, RingAllReduce
from mlsysim_sym.terms.communication import CommComputeRatio
from mlsysim_sym.terms.extended import kv_bytes
from mlsysim_sym.terms.memory import gradient_bytes, optimizer_bytes, weight_bytes
from mlsysim_sym.terms.pipeline import BubbleFraction
from mlsysim_sym.terms.reliability import AllUpAvailability, CheckpointWaste, SystemMTBF, YoungDalyInterval
from mlsysim_sym.terms.training import (AccumulationSyncOverhead, AmdahlSpeedup, CriticalBatchSize,
                                        ExpectedStragglers, LarsLearningRate, LinearScaledLearningRate,
                                        PaddingWaste, SqrtScaledLearningRate, StalenessAdjustedLearningRate,
                                        WarmupLearningRate)

from .book import Counted, Entry, Number, T, value

F = notation.FORMAL
N, M, BETA, ALPHA = F["N_coll"], F["M_coll"], F["beta"], F["alpha"]
R, ETA, K, STEP, W = F["r_serial"], F["eta_base"], F["k_batch"], F["t_opt"], F["W_warm"]
GB, MS = 1e9, 1e-3
HOUR, MINUTE = 3600, 60


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


# --------------------------------------------------------------------------------------------------
# Worked memory (the package's weight, gradient and optimizer bytes at the chapter's numbers)
# --------------------------------------------------------------------------------------------------
def _state(P, bpp=2, adam=12, grads=True, dp=1, z=0):
    """Training-state bytes on the package's memory terms (weights, gradients, Adam state at ``adam`` bytes per
    parameter; ZeRO stage ``z`` over ``dp`` ranks); ``grads=False`` leaves the gradients out."""
    state = weight_bytes(P, bpp, dp, z) + optimizer_bytes(P, 1, dp, z)
    if grads:
        state += gradient_bytes(P, 1, bpp, dp, z)
    return state.subs(sym.ADAM, adam)


def worked_memory() -> List[Entry]:
    P, bpp = sym.P, sym.bpp
    state = weight_bytes(P, bpp, 1, 0) + gradient_bytes(P, 1, bpp, 1, 0) + optimizer_bytes(P, 1, 1, 0)
    sixteen = state.subs({bpp: 2, sym.ADAM: 12})
    per_param = sp.simplify(sixteen / P)
    cap = 80 * GB                                   # the chapter's 80 GB H100 / A100
    p_max = sp.solve(sp.Eq(sixteen, cap), P)[0]
    gpt3 = 175e9
    w3, s3 = value(weight_bytes(gpt3, 2, 1, 0)), value(_state(gpt3))
    wall = value(_state(gpt3, dp=64, z=3))
    o8, o12 = value(optimizer_bytes(gpt3, 1, 1, 0).subs(sym.ADAM, 8)), value(optimizer_bytes(gpt3, 1, 1, 0).subs(
        sym.ADAM, 12))
    hybrid = {(g, a): value(_state(gpt3 / g, adam=a, grads=False)) for g in (8, 128) for a in (8, 12)}
    return [
        Entry("dt-memory-quotients", "Training-state bytes per parameter and the memory quotients",
              "DT, Multi-machine training requirements; the definition of distributed training; Parallelism-"
              "infrastructure interaction (BERT); cell ModelParallelMemoryFacts; notebook 'The memory wall of "
              "scale'; Model parallelism implementation (8-way partitioning); cell HybridMemoryAccounting (Memory "
              "analysis)",
              rf"C_{{{T}{{state}}}} = P \times (2 + 2 + 12)\ {T}{{bytes}}",
              (state, sixteen), (16 * P, sixteen),
              (Number("Multi-machine training requirements: 80 GB over 16 B per parameter, 'roughly 5 billion "
                      "parameters'", 5e9, value(p_max), "1", 1e-12),
               Number("definition of distributed training: GPT-3 175B in BF16, 'approximately 350 GB'", 350 * GB, w3,
                      "B", 1e-12),
               Number("the same: 350 GB over one 80 GB H100, 'more than 4x'", 4.375, w3 / cap, "1", 1e-12),
               Number("the same: 'at least 5 H100s' (the ceiling of 350 / 80)", 5, math.ceil(w3 / cap), "1", 0),
               Number("Parallelism-infrastructure interaction: BERT-Base 110M FP32 gradients, 'approximately "
                      "440 MB'", 440e6, value(gradient_bytes(110e6, 1, 4, 1, 0)), "B", 1e-12),
               Number("the same: BERT-Large 340M, 'approximately 1.4 GB'", 1.4 * GB,
                      value(gradient_bytes(340e6, 1, 4, 1, 0)), "B", 0.03),
               Number("ModelParallelMemoryFacts: 175B weights over 64 GPUs (the cell's 5.5 GB)", 5.5 * GB,
                      value(weight_bytes(gpt3, 2, 64, 3)), "B", 0.01),
               Number("ModelParallelMemoryFacts and the memory-wall notebook: full mixed-precision Adam state, "
                      "2,800 GB", 2800 * GB, s3, "B", 1e-12),
               Number("memory-wall notebook: Adam's 12 B per parameter, 2,100 GB", 2100 * GB, o12, "B", 1e-12),
               Number("the same state, ZeRO-3 over 64 GPUs (the cells' 43.8 GB)", 43.75 * GB, wall, "B", 1e-12),
               Number("memory-wall notebook: plus the assumed 50 GB of activations (93.75 GB, over the A100's 80)",
                      93.75 * GB, wall + 50 * GB, "B", 1e-12),
               Number("Model parallelism implementation: 8-way partitioning on A100s, BF16 weights 'approximately "
                      "44 GB per GPU' (350 / 8)", 44 * GB, value(weight_bytes(gpt3 / 8, 2, 1, 0)), "B", 0.006),
               Number("HybridMemoryAccounting: one TP-8 slice of the 350 GB of weights (43.75 GB)", 43.75 * GB,
                      value(weight_bytes(gpt3 / 8, 2, 1, 0)), "B", 1e-12),
               Number("HybridMemoryAccounting: Adam moments at 8 B per parameter, 1.4 TB", 1.4e12, o8, "B", 1e-12),
               Number("HybridMemoryAccounting: the 12 B convention, 2.1 TB", 2.1e12, o12, "B", 1e-12),
               Number("HybridMemoryAccounting: weights and 8 B state over TP 8 (the cell's 218.8 GB)", 218.75 * GB,
                      hybrid[8, 8], "B", 1e-12),
               Number("HybridMemoryAccounting: the same over TP 8 x PP 16 (the cell's 13.7 GB)", 13.7 * GB,
                      hybrid[128, 8], "B", 0.003),
               Number("HybridMemoryAccounting: with the 12 B convention (the cell's 19.1 GB)", 19.1 * GB,
                      hybrid[128, 12], "B", 0.003)),
              f"The package's weight, gradient and optimizer bytes at two-byte weights and gradients and Adam's 12 "
              f"bytes give {per_param} bytes per parameter (the zero entry's 16). The quotients divide them by the "
              "80 GB device (P_max = C_mem / 16) or by the shards: ZeRO-3 over 64 ranks, or the package's P_shard = "
              "P / (N_TP N_PP) for the hybrid cell. The hybrid cell counts weights and optimizer state only, no "
              "gradients (8 B of FP32 moments, or 12 B with the FP32 master copy); with the package's gradients "
              f"the 12-byte TP-8 x PP-16 budget is {value(_state(gpt3 / 128)) / GB:.2f} GB. The definition's "
              "'5 H100s' is the ceiling of 350 / 80; its 'more than 4x' is 4.375."),
    ]


def rlhf_memory() -> List[Entry]:
    model = build_model()
    lb, L, H, bpp, kvf, heads = model.quantity("lb").symbol, sym.L, sym.H, sym.bpp, sym.kvf, F["n_heads"]
    msg = model.definition("M_act_msg")
    kv = L * kv_bytes(msg, kvf, 1, 1)
    kv_lhs = L * kv_bytes(model.quantity("M_act_msg").symbol, kvf, 1, 1)
    h_kv, d_head = kvf * heads, H / heads
    llama = {lb: 256, sym.s: 1024, H: 8192, bpp: 2, L: 80}
    kv_total, kv_dense = value(kv.subs(llama).subs(kvf, sp.Rational(8, 64))), value(kv.subs(llama).subs(kvf, 1))
    cap = 80 * GB
    policy, ref = value(_state(70e9)), value(weight_bytes(70e9, 2, 1, 0))
    reward, critic = value(weight_bytes(13e9, 2, 1, 0)), value(_state(13e9))
    ppo, dpo, big = policy + ref + reward + critic, policy + ref, 2 * policy + ref + reward
    g = 8 * 4                                         # the notebook's TP 8 x PP 4 policy replica
    pol_gpu, ref_gpu = value(_state(70e9 / g)), value(weight_bytes(70e9 / g, 2, 1, 0))
    left = cap - pol_gpu - ref_gpu
    return [
        Entry("dt-rlhf-memory", "RLHF memory: four models' training state and the generation KV cache",
              "DT, The multi-model coordination problem (cell DistTrainH100Capacity); cell RLHFKVCache "
              "(Infrastructure asymmetry); DPO: Simplifying the fleet; notebook 'RLHF infrastructure budget: PPO "
              "vs. DPO' (cell RLHFBudget)",
              rf"M_{{{T}{{KV}}}} = 2 N_L H_{{{T}{{KV}}}} d_{{{T}{{head}}}} S B \times 2",
              (kv_lhs, kv), (2 * L * h_kv * d_head * sym.s * lb * bpp, kv),
              (Number("policy 70B in training, 70B x (2 + 2 + 12) = 1,120 GB", 1120 * GB, policy, "B", 1e-12),
               Number("reference 70B in inference, 70B x 2 = 140 GB", 140 * GB, ref, "B", 1e-12),
               Number("the policy's training state over its inference weights, 'roughly 8x'", 8, policy / ref, "1",
                      1e-12),
               Number("reward 13B in inference, 26 GB", 26 * GB, reward, "B", 1e-12),
               Number("value 13B in training, 208 GB", 208 * GB, critic, "B", 1e-12),
               Number("PPO's four models, about 1,494 GB", 1494 * GB, ppo, "B", 1e-12),
               Number("minimum H100s of 80 GB for it (the ceiling of 1,494 / 80)", 19, math.ceil(ppo / cap), "1", 0),
               Number("DPO's two models, 1,260 GB", 1260 * GB, dpo, "B", 1e-12),
               Number("DPO's reduction (the notebook's 15.7 %, 'a 16 percent reduction')", 0.157, 1 - dpo / ppo,
                      "1", 0.003),
               Number("with a policy-sized value model, about 2,406 GB", 2406 * GB, big, "B", 1e-12),
               Number("then DPO's reduction, 'roughly 48 percent'", 0.48, 1 - dpo / big, "1", 0.01),
               Number("RLHFKVCache: Llama-2-70B GQA (80 layers, 8 KV heads of 128), 1,024 tokens x 256 prompts, "
                      "FP16 (85.9 GB)", 85.9 * GB, kv_total, "B", 0.001),
               Number("the same with dense attention, all 64 heads (687.2 GB)", 687.2 * GB, kv_dense, "B", 0.001),
               Number("RLHFBudget: the policy's state on its P_shard = P / (8 x 4) (35 GB per GPU)", 35 * GB,
                      pol_gpu, "B", 1e-12),
               Number("the reference co-located over the same 32 GPUs (4.4 GB)", 4.4 * GB, ref_gpu, "B", 0.01),
               Number("the reference on its own pool of 8 (17.5 GB)", 17.5 * GB, value(weight_bytes(70e9 / 8, 2, 1, 0)),
                      "B", 1e-12),
               Number("static memory per policy GPU, 35 + 4.4 (39.4 GB)", 39.4 * GB, pol_gpu + ref_gpu, "B", 0.001),
               Number("left of 80 GB for activations and KV cache (40.6 GB)", 40.6 * GB, left, "B", 0.001),
               Number("the KV cache's share per policy GPU, 85.9 GB / 32 (2.7 GB)", 2.7 * GB, kv_total / g, "B",
                      0.01),
               Number("left after it (37.9 GB)", 37.9 * GB, left - kv_total / g, "B", 0.002),
               Number("DPO's larger activation budget, 40.6 / 37.9 (1.07x)", 1.07, left / (left - kv_total / g), "1",
                      0.001)),
              "Training memory is the package's weight, gradient and optimizer bytes (16 B per parameter, the "
              "dt-memory-quotients entry); inference memory its weight bytes alone. The KV cache is the keys and "
              "values of the whole sequence (the package's kv_bytes, 2 r_KV M_act, with r_KV = H_KV / N_heads the "
              "share of heads that carry keys and values and M_act = B S d s_elem) over N_L layers; sympy reduces "
              "it to the book's 2 N_L H_KV d_head S B x 2 with d = N_heads d_head. The package prices these bytes "
              "for context parallelism's exchange, not as a generation cache. The coordination section's minimum "
              "GPU count is the ceiling of 1,494 / 80 = 18.7, 19 H100s. The notebook's 80 GB is the catalog's "
              "80 GiB written as 80 GB."),
    ]


def data_split() -> List[Entry]:
    model = build_model()
    lb, B, dp = model.quantity("lb").symbol, sym.B, model.quantity("dp").symbol
    local = model.definition("lb")
    return [
        Entry("dt-dataset-split", "Examples per data-parallel rank", "DT, Dataset splitting", "",
              (lb, local), None,
              (Number("100,000 examples over 4 GPUs, 25,000 each per epoch", 25000,
                      value(local.subs({B: 100000, dp: 4})), "1", 0),
               Number("1.2 million examples over 32 GPUs, 'approximately 37,500'", 37500,
                      value(local.subs({B: 1200000, dp: 32})), "1", 0)),
              "The sampler's share of the dataset is the package's local batch, the global batch divided among the "
              "N_DP replicas (floor(B / N_DP), at least one), applied to the epoch's examples. Both divide evenly; "
              "the book's sampler pads the last batch where they do not."),
    ]


# --------------------------------------------------------------------------------------------------
# Worked reliability (the fault-tolerance chapter's terms at this chapter's numbers)
# --------------------------------------------------------------------------------------------------
def reliability() -> List[Entry]:
    lam, t, n = F["lambda_f"], F["t_run"], F["N_coll"]
    node = sp.exp(-lam * t)
    cluster = AllUpAvailability(node, n)
    mtbf_book = t / (n * -sp.log(node))
    lam_node = -math.log(0.999) / HOUR                # a node that survives an hour with probability 0.999
    mtbf = SystemMTBF(50000 * HOUR, 1024)
    tau = YoungDalyInterval(5 * MINUTE, mtbf)
    w_opt, w_15 = CheckpointWaste(5 * MINUTE, tau, mtbf), CheckpointWaste(5 * MINUTE, 15 * MINUTE, mtbf)
    return [
        Entry("dt-cluster-reliability", "Cluster survival and MTBF from a node's hourly survival",
              "DT, Distributed training complexity trade-offs (cell DistTrainReliabilityFacts)",
              rf"{T}{{MTBF}}_{{{T}{{cluster}}}} = \frac{{1\ {T}{{h}}}}{{N (-\ln R_{{{T}{{node}}}})}}",
              (SystemMTBF(1 / lam, n), SystemMTBF(1 / lam, n).doit()), (mtbf_book, SystemMTBF(1 / lam, n)),
              (Number("100 nodes at 99.9 % hourly survival: the cluster fails within the hour with 9.5 %",
                      0.095, 1 - value(AllUpAvailability(0.999, 100)), "1", 0.003),
               Number("its MTBF, 'about 10 hours' (the cell's 9.995 h, rounded)", 10 * HOUR,
                      value(SystemMTBF(1 / lam_node, 100)), "s", 0.001)),
              "A node that survives an hour with probability R has failure rate lambda = -ln R per hour (the "
              "ft-reliability relation R = e^{-lambda t}); the cluster's survival is R^N (the package's "
              "AllUpAvailability, e^{-N lambda t} by ft-reliability) and its MTBF the package's SystemMTBF, "
              "1 / (N lambda): sympy checks that the cell's 1 / (N (-ln R)) is that term."),
        Entry("dt-young-daly-pitfall", "Young-Daly interval and checkpoint tax on 1,024 GPUs",
              "DT, pitfall 'Using fixed checkpoint intervals' (cell YoungDaly) and its margin figure",
              rf"\tau_{{{T}{{opt}}}} = \sqrt{{2 T_{{{T}{{write}}}} {T}{{MTBF}}_{{{T}{{system}}}}}}",
              (YoungDalyInterval(F["T_write"], F["MTBF_sys"]), YoungDalyInterval(F["T_write"], F["MTBF_sys"]).doit()),
              (sp.sqrt(2 * F["T_write"] * F["MTBF_sys"]), YoungDalyInterval(F["T_write"], F["MTBF_sys"])),
              (Number("cluster MTBF, 50,000 h per GPU over 1,024 GPUs (48.8 h)", 48.8 * HOUR, value(mtbf), "s", 0.001),
               Number("optimal interval at a 5-minute write (171.2 min)", 171.2 * MINUTE, value(tau), "s", 0.001),
               Number("the same in hours (the cell's 2.9 h; the margin figure's 'about 2.9 hours')", 2.9 * HOUR,
                      value(tau), "s", 0.02),
               Number("checkpoint-plus-rework tax at the optimum (5.8 %)", 0.058, value(w_opt), "1", 0.01),
               Number("the tax checkpointing every 15 minutes (33.6 %)", 0.336, value(w_15), "1", 0.001),
               Number("the daily cost of the 15-minute interval at the catalog's $2 per GPU-hour (the cell's "
                      "round(diff_daily))", 13638, value((w_15 - w_opt) * 1024 * 2 * 24), "USD", 1e-4)),
              "The fault-tolerance chapter's terms (ft-system-mtbf, ft-young-daly, ft-checkpoint-waste) at this "
              "chapter's numbers: SystemMTBF(50,000 h, 1,024), YoungDalyInterval(5 min, MTBF) and the first-order "
              "waste T_write / tau + tau / (2 MTBF). The dollar figure multiplies the difference of the two wastes "
              "by 1,024 GPUs, 24 h and mlsysim's reference price ($2 per GPU-hour); the package models no prices."),
        Entry("dt-stragglers", "Expected stragglers per synchronous step", "DT, Barrier semantics and failure "
              "modes; the BSP footnote", rf"E[n_{{{T}{{straggle}}}}] = N \, p_{{{T}{{straggle}}}}",
              (ExpectedStragglers(n, F["p_strag"]), ExpectedStragglers(n, F["p_strag"]).doit()),
              (n * F["p_strag"], ExpectedStragglers(n, F["p_strag"])),
              (Number("1,000 GPUs at 1 % each, 'approximately 10 GPUs straggle every iteration'", 10,
                      value(ExpectedStragglers(1000, sp.Rational(1, 100))), "1", 1e-12),),
              "The mean of a binomial count of N independent devices. The same devices all finish on time with "
              f"probability (1 - p)^N (the package's AllUpAvailability), {value(AllUpAvailability(0.99, 1000)):.1e} "
              "at these numbers: a barrier waits for a straggler almost every step."),
    ]


# --------------------------------------------------------------------------------------------------
# Worked shares of the step (communication, padding) and the 8-to-64 workers notebook
# --------------------------------------------------------------------------------------------------
def shares() -> List[Entry]:
    model = build_model()
    t_comm, t_comp = model.quantity("T_comm").symbol, model.quantity("T_node").symbol
    rho = CommComputeRatio(t_comm, t_comp)
    share = rho / (1 + rho)
    k1, kn = sp.symbols("K_1 K_N", positive=True)
    ring = RingAllReduce(M, 8, BETA, 0)
    nvl, ndr = 900 * GB, 50 * GB
    s_mean, s_max = F["S_mean"], F["S_longest"]
    n_seq = sp.Symbol("n", positive=True)
    pad = PaddingWaste(s_mean, s_max)
    batch = [2048] + [128] * 15

    def speedup(iters, overhead):
        return value(100000 / (iters * (1 + CommComputeRatio(overhead, 1))))

    return [
        Entry("dt-comm-share", "Communication's share of the step", "DT, fallacy 'Parallelism overhead is "
              "roughly constant regardless of model size'",
              rf"\frac{{T_{{{T}{{comm}}}}}}{{T_{{{T}{{compute}}}} + T_{{{T}{{comm}}}}}}", (share, share.doit()),
              (t_comm / (t_comp + t_comm), share),
              (Number("1B model: 25 ms of AllReduce beside 50 ms of compute (33 %)", 0.33,
                      value(CommComputeRatio(25, 50) / (1 + CommComputeRatio(25, 50))), "1", 0.02),
               Number("70B model: 180 ms beside 2,400 ms (7 %)", 0.07,
                      value(CommComputeRatio(180, 2400) / (1 + CommComputeRatio(180, 2400))), "1", 0.01)),
              "With no overlap the share is rho / (1 + rho), rho the package's communication-to-computation ratio "
              "(the rho entry); sympy checks it equals the fallacy's T_comm / (T_compute + T_comm)."),
        Entry("dt-tp-fabric", "Tensor-parallel all-reduces on NVLink and on InfiniBand", "DT, definition of tensor "
              "parallelism (its significance)", "", (ring, ring.doit()), None,
              (Number("the same ring at t = 8 on NDR 50 GB/s over NVLink 900 GB/s: 'an 18x gap'", 18,
                      value(ring.subs(BETA, ndr) / ring.subs(BETA, nvl)), "1", 1e-12),
               Number("96 blocks at 2 ms per layer over InfiniBand: the book's low end, 200 ms (96 x 2 = 192 ms)",
                      0.2, 96 * 2 * MS, "s", 0.05),
               Number("96 blocks at 10 ms per layer: 960 ms", 0.96, 96 * 10 * MS, "s", 1e-12)),
              "The ring's time at t = 8 scales with 1/beta, so the 0.1-0.5 ms NVLink all-reduce is 1.8-9 ms on "
              "NDR (the book's 2-10 ms per layer). The range's low end is 96 x 2 ms = 192 ms, which the book "
              "rounds to 200 ms. The 18x is the bandwidth ratio of ac-nvlink-ndr-ratio (FabricBandwidthRatio): "
              "NVLink's 900 GB/s counts both directions; per direction it is 450 GB/s and the gap 9x."),
        Entry("dt-padding", "Padding waste of a batch padded to its longest sequence", "DT, Sequence length "
              "variance and batching challenges (RLHF)",
              rf"f_{{{T}{{pad}}}} = 1 - \frac{{\bar{{S}}_{{{T}{{batch}}}}}}{{S_{{{T}{{longest}}}}}}", (pad, pad.doit()),
              ((n_seq * s_max - n_seq * s_mean) / (n_seq * s_max), pad),
              (Number("one 2,048-token sequence and fifteen of 128: 'wastes 88 percent of the compute on padding'",
                      0.88, value(PaddingWaste(sp.Rational(sum(batch), len(batch)), max(batch))), "1", 0.002),),
              "The padded slots of n sequences padded to S_longest, (n S_longest - sum S_i) / (n S_longest), are "
              "the package's term with the batch's mean length (checked by sympy); here 1 - 248 / 2,048."),
        Entry("dt-workers-8-64", "Scaling from 8 to 64 workers: batches, speedups, sample efficiency, costs",
              "DT, worked example 'Convergence comparison for 8 vs. 64 workers' (cell ScalingWorkers, notebook "
              "and @tbl-scaling-bsp-ssp)",
              rf"S = \frac{{K_1}}{{K_N (1 + \rho)}}", (rho, rho.doit()),
              (k1 / (kn * (1 + rho)), k1 * t_comp / (kn * (t_comp + t_comm))),
              (Number("8 workers of batch 32: effective batch 256", 256, 8 * 32, "1", 0),
               Number("64 workers: 2,048", 2048, 64 * 32, "1", 0),
               Number("8 BSP: 100K / (12.8K x 1.15), 6.8x", 6.8, speedup(12800, 0.15), "1", 0.01),
               Number("64 BSP: 100K / (1.72K x 1.45), 40.1x", 40.1, speedup(1720, 0.45), "1", 0.001),
               Number("64 SSP (s = 4): 100K / (2.1K x 1.25), 38.1x", 38.1, speedup(2100, 0.25), "1", 0.001),
               Number("8 BSP sample efficiency, (100K / 8) / 12.8K (98 %)", 0.98, 100000 / 8 / 12800, "1", 0.005),
               Number("64 BSP, (100K / 64) / 1.72K (91 %)", 0.91, 100000 / 64 / 1720, "1", 0.005),
               Number("64 SSP, (100K / 64) / 2.1K (74 %)", 0.74, 100000 / 64 / 2100, "1", 0.006),
               Number("cost of 8 GPUs: 12.8K x 0.4 s x 8 / 3600 at $3 per GPU-hour ($34)", 34,
                      12800 * 0.4 * 8 / HOUR * 3, "USD", 0.005),
               Number("64 BSP: 1.72K x 0.58 s x 64 / 3600 x $3 ($53)", 53, 1720 * 0.58 * 64 / HOUR * 3, "USD", 0.005),
               Number("64 SSP: 2.1K x 0.50 s x 64 / 3600 x $3 ($56)", 56, 2100 * 0.5 * 64 / HOUR * 3, "USD", 1e-9),
               Number("the 8-GPU run's wall clock over the 64-GPU run's, '6x longer'", 6,
                      speedup(1720, 0.45) / speedup(12800, 0.15), "1", 0.02)),
              "The notebook's iteration counts (12.8K, 1.72K, 2.1K), overheads and iteration times are its "
              "assumptions. Its speedup K_1 / (K_N (1 + overhead)) is the ratio of run times when each iteration "
              "costs its compute plus communication: the overhead is the package's rho (sympy checks the two "
              "forms equal). The price is mlsysim's $3 per GPU-hour scenario; the package models no prices."),
    ]


def moe() -> List[Entry]:
    model = build_model()
    msg = model.definition("M_act_msg")
    fwd = PARAMS["n_a2a"].symbol / 2 * msg * sym.k_e
    fwd_lhs = PARAMS["n_a2a"].symbol / 2 * model.quantity("M_act_msg").symbol * sym.k_e
    at = {sym.H: 4096, sym.bpp: 2, model.quantity("lb").symbol: 4, sym.s: 2048}
    return [
        Entry("dt-moe-alltoall", "Expert-parallel all-to-all bytes per MoE block", "DT, Expert parallelism "
              "(mixture of experts)", rf"2 \times B S d_{{{T}{{model}}}} \times 2",
              (fwd_lhs, fwd.subs({PARAMS["n_a2a"].symbol: PARAMS["n_a2a"].value, sym.k_e: 1})), None,
              (Number("dispatch of B 4 x S 2048 tokens of d 4096 in FP16, 'approximately 67 MB'", 67e6,
                      value(msg.subs(at)), "B", 0.005),
               Number("dispatch and combine, 'roughly 134 MB per transformer block'", 134e6,
                      value(fwd.subs(at).subs({PARAMS["n_a2a"].symbol: PARAMS["n_a2a"].value, sym.k_e: 1})), "B",
                      0.005)),
              "The payload is the tp-payload entry's M_act = B S d s_elem. The package counts n_A2A = 4 "
              "all-to-alls per MoE layer per step (dispatch and combine, forward and backward), so the forward "
              "pass's two, with top-1 routing (k_experts = 1), move the book's 2 M_act. The book counts the "
              "batch's tokens; the package's AllToAll sends (N - 1)/N of each rank's share over the fabric."),
    ]


def groups() -> Dict[str, List[Entry]]:
    return {"Distributed Training: scaling, learning rate and convergence": scaling() + learning_rate()
            + accumulation(),
            "Distributed Training: worked communication": communication() + moe() + shares(),
            "Distributed Training: worked memory and data": worked_memory() + rlhf_memory() + data_split(),
            "Distributed Training: worked reliability": reliability()}


# --------------------------------------------------------------------------------------------------
# The count
# --------------------------------------------------------------------------------------------------
def inventory() -> List[Counted]:
    """Every display equation (D) and worked formula (W) of the chapter, in order."""
    c = lambda where, what, entry="", why="": Counted("DT", where, what, entry, why)  # noqa: E731
    return [
        c("sec. The physics of the cluster (D)", "distributed step-time law", "fleet-law"),
        c("sec. The physics of the cluster", "communication-computation ratio rho", "rho"),
        c("cell DistTrainReliabilityFacts", "100 nodes at 99.9 % hourly survival: 9.5 %/h failure, MTBF 10 h",
          "dt-cluster-reliability"),
        c("sec. Multi-machine training requirements", "16 bytes per parameter in 80 GB: about 5B parameters",
          "dt-memory-quotients"),
        c("dfn Distributed training", "175B in BF16, 350 GB over 80 GB: at least 5 H100s", "dt-memory-quotients"),
        c("dfn Distributed training (pitfall)", "Amdahl ceiling 1/0.30 = 3x", "dt-amdahl"),
        c("sec. Data parallelism (D)", "minibatch gradient g", why="a definition of the averaged gradient, no "
          "cost; the equivalence of the three averages is checked symbolically in tests/test_book_dt.py"),
        c("sec. Data parallelism (D)", "local gradient g_k", why="a definition (as above)"),
        c("sec. Data parallelism (D)", "global gradient, the mean of the g_k", why="a definition (as above)"),
        c("sec. Data parallelism (D)", "global gradient over the combined batch", why="a definition (as above)"),
        c("sec. Dataset splitting", "examples per GPU: 100,000 / 4 and 1.2M / 32", "dt-dataset-split"),
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
          "dt-memory-quotients"),
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
          "efficiency; costs", "dt-workers-8-64"),
        c("notebook Scaling from 8 to 64 workers", "SSP rate factor 1/sqrt(5) = 0.45", "dt-staleness"),
        c("cell ModelParallelMemoryFacts", "175B: 350 GB weights, 2,800 GB state, 43.8 GB per GPU over 64",
          "dt-memory-quotients"),
        c("notebook The memory wall of scale", "43.75 GB static + 50 GB activations = 93.75 GB",
          "dt-memory-quotients"),
        c("sec. Model parallelism implementation", "8-way partitioning: about 44 GB of BF16 weights per A100 "
          "(350 / 8)", "dt-memory-quotients"),
        c("dfn Pipeline parallelism", "boundary activation 8192 x 2048 x 2 = 32 MB", "pipeline-send"),
        c("dfn Pipeline parallelism", "bubble p 8, m 32: 18 %; p 16, m 16: 48 %", "bubble"),
        c("notebook The cost of the pipeline bubble", "7 / 39 = 17.9 %", "bubble"),
        c("footnote GPipe", "p 4, m 4: 43 %", "bubble"),
        c("sec. Zero-bubble pipeline parallelism", "p 4, m 8: 3/11 = 27 %", "bubble"),
        c("dfn Tensor parallelism", "96 blocks x 2-10 ms: 200-960 ms; NVLink 18x NDR", "dt-tp-fabric"),
        c("sec. Tensor parallelism (D)", "column-parallel Y = X[W1|W2]", why="a matrix identity, no cost"),
        c("sec. Tensor parallelism (D)", "row-parallel Y = X1 W1 + X2 W2", why="a matrix identity, no cost"),
        c("sec. Tensor parallelism (D)", "M_act = B S d sizeof(dtype)", "tp-payload"),
        c("sec. Tensor parallelism", "134 MB per all-reduce, 25.7 GB forward, 51 GB per step", "dt-tp-traffic"),
        c("sec. Expert parallelism", "all-to-all: 67 MB each way, 134 MB per block", "dt-moe-alltoall"),
        c("sec. Expert parallelism", "capacity C (B S) / E", "capacity"),
        c("cell TensorParallel3DTraffic", "16,384 GPUs, 201 MB, 67.6 GB, 4.2 GB, 8.5 GB", "dt-tp-traffic"),
        c("cell HybridMemoryAccounting", "8- and 12-byte Adam: 1.4 / 2.1 TB, 218.75, 13.7 and 19.1 GB per GPU",
          "dt-memory-quotients"),
        c("sec. Pipeline bubble (hybrid)", "p 16, m 32: 15/47 = 31.9 %", "bubble"),
        c("sec. RLHF coordination", "PPO memory 1,120 + 140 + 26 + 208 = 1,494 GB, 19 GPUs; DPO 1,260 GB",
          "dt-rlhf-memory"),
        c("cell RLHFKVCache", "KV cache 2 N_L H_kv d_head 2 B: 85.9 GB, dense 687 GB", "dt-rlhf-memory"),
        c("notebook RLHF infrastructure budget", "35 + 4.4 = 39.4 GB per GPU, KV 2.7 GB per GPU", "dt-rlhf-memory"),
        c("sec. Sequence length variance", "padding waste 88 %", "dt-padding"),
        c("pitfall MFU and scaling efficiency", "0.50 x 0.50 = 0.25: 256 GPU-equivalents",
          "effective-throughput"),
        c("pitfall Hyperparameters", "0.1 x 32K / 256 = 12.8", "dt-lr-linear"),
        c("fallacy Parallelism overhead", "25/(50+25) = 33 %, 180/(2400+180) = 7 %", "dt-comm-share"),
        c("pitfall Gradient accumulation is free", "(K-1)/K of synchronizations; 7B FP16 buffer 14 GB",
          "dt-grad-accum"),
        c("pitfall Fixed checkpoint intervals", "Young-Daly: MTBF 48.8 h, interval 171 min, tax 5.8 % vs 33.6 %",
          "dt-young-daly-pitfall"),
        c("sec. Barrier semantics", "1,000 GPUs x 1 % = 10 stragglers per step", "dt-stragglers"),
    ]
