"""The Distributed Training chapter (DT) of *Machine Learning Systems* vol. 2 (harvard-edge/cs249r_book,
book/quarto/contents/vol2/distributed_training/distributed_training.qmd, commit febcad7c): its new terms
(mlsysim_sym/terms/training.py) against the book's formulas and worked numbers, through notation, units,
derivative and lambdify; and the chapter's count (derivations/book_dt.py)."""
import math

import numpy as np
import pytest
import sympy as sp

from mlsysim_sym import notation
from mlsysim_sym.printing import TERM_CLASSES, term_call
from mlsysim_sym.terms.collectives import HierarchicalAllReduce, RingAllReduce
from mlsysim_sym.symbols import sym
from mlsysim_sym.terms.communication import CommComputeRatio
from mlsysim_sym.terms.extended import kv_bytes
from mlsysim_sym.terms.memory import gradient_bytes, optimizer_bytes, weight_bytes
from mlsysim_sym.terms.reliability import AllUpAvailability, CheckpointWaste, SystemMTBF, YoungDalyInterval
from mlsysim_sym.terms.training import (AccumulationSyncOverhead, AmdahlSpeedup, CriticalBatchSize,
                                        ExpectedStragglers, LarsLearningRate, LinearScaledLearningRate,
                                        PaddingWaste, SqrtScaledLearningRate, StalenessAdjustedLearningRate,
                                        WarmupLearningRate)
from mlsysim_sym.units import dimension, parse_unit
from term_checks import check_term  # noqa: E402  (tests/term_checks.py)

NEW = ("AmdahlSpeedup", "LinearScaledLearningRate", "SqrtScaledLearningRate", "WarmupLearningRate",
       "StalenessAdjustedLearningRate", "CriticalBatchSize", "LarsLearningRate", "AccumulationSyncOverhead",
       "ExpectedStragglers", "PaddingWaste")
n, r, eta, k, t, W, s = sp.symbols("N r eta k t W s", positive=True)


def test_amdahl_is_the_figures_formula_and_its_ceiling():
    # DT, fig-scaling-tax's cell: speedup = N / (1 + (N - 1) r); the definition's pitfall: 30 % serial caps
    # the speedup at 1/0.30 (~3x)
    assert sp.simplify(AmdahlSpeedup(n, r).doit() - n / (1 + (n - 1) * r)) == 0
    assert sp.limit(AmdahlSpeedup(n, r).doit(), n, sp.oo) == 1 / r
    assert round(float(sp.limit(AmdahlSpeedup(n, sp.Rational(3, 10)).doit(), n, sp.oo))) == 3
    assert AmdahlSpeedup(n, 0).doit() == n and AmdahlSpeedup(1, r).doit() == 1
    # DT, scaling-efficiency section: doubling GPUs for 1.5x loses 25 % (r = 1/3)
    assert AmdahlSpeedup(2, sp.Rational(1, 3)).doit() == sp.Rational(3, 2)


def test_learning_rate_rules_are_the_books_displays():
    # DT, Learning rate scaling rules: eta_large = k eta_base; sqrt(k) eta_base; warmup
    # eta_t = eta_base + t/W (k eta_base - eta_base), which reaches k eta_base at t = W
    assert LinearScaledLearningRate(eta, k).doit() == k * eta
    assert SqrtScaledLearningRate(eta, k).doit() == sp.sqrt(k) * eta
    warm = WarmupLearningRate(eta, k, t, W).doit()
    assert sp.simplify(warm - (eta + t / W * (k * eta - eta))) == 0
    assert warm.subs(t, 0) == eta and sp.simplify(warm.subs(t, W) - k * eta) == 0
    # DT, pitfall: ResNet-50 at batch 256 and rate 0.1 scaled to 32K by the linear rule: 12.8
    assert LinearScaledLearningRate(sp.Rational(1, 10), sp.Rational(32768, 256)).doit() == sp.Rational(64, 5)


def test_staleness_lars_and_critical_batch():
    # DT, Staleness impact: eta' = eta / sqrt(1 + s); the 8-to-64 notebook: s = 4 gives 0.45 eta_BSP
    assert StalenessAdjustedLearningRate(eta, s).doit() == eta / sp.sqrt(1 + s)
    assert round(float(StalenessAdjustedLearningRate(1, 4).doit()), 2) == 0.45
    # DT, LARS display: eta_l = eta_global |w| / (|g| + lambda |w|)
    g, w, lam = sp.symbols("g w lambda", positive=True)
    assert sp.simplify(LarsLearningRate(eta, w, g, lam).doit() - eta * w / (g + lam * w)) == 0
    # DT, Critical batch size display: B* ~ tr(Sigma) / |grad L|^2
    tr, g2 = sp.symbols("tr g2", positive=True)
    assert CriticalBatchSize(tr, g2).doit() == tr / g2


def test_gradient_accumulation_notebook():
    # DT, notebook "Gradient accumulation speedup": 8 GPUs x batch 16 x 4 steps = 512; overhead
    # 0.35 ms / (4 x 1800 ms) ~ 0.005 %; 25 h / (8 (1 - overhead)) ~ 3.1 h; x $128/h ~ $400; vs $3,021
    assert 8 * 16 * 4 == 512
    ovh = float(AccumulationSyncOverhead(0.35e-3, 4, 1.8).doit())
    assert ovh == pytest.approx(0.35 / 7200, rel=1e-12) and round(ovh * 100, 3) == 0.005
    hours = 25 / (8 * (1 - ovh))
    assert round(hours, 1) == 3.1 and round(128 * hours) == 400 and round(3021 - 128 * hours) == 2621


def test_sgd_averages_are_the_combined_batch_gradient():
    # DT, Data parallelism, the four displays: with equal local batches b, the mean over N devices of the
    # local means equals the mean over the combined batch of N b examples
    N_, b_ = 3, 4
    x = sp.IndexedBase("x")
    kk, ii = sp.symbols("k i", integer=True)
    local = [sp.Sum(x[kk, ii], (ii, 1, b_)).doit().subs(kk, j) / b_ for j in range(1, N_ + 1)]
    combined = sp.Sum(sp.Sum(x[kk, ii], (ii, 1, b_)), (kk, 1, N_)).doit() / (N_ * b_)
    assert sp.expand(sum(local) / N_ - combined) == 0
    # unequal batches: the equal-weight mean differs, the |B_k|-weighted one is the combined gradient
    g1, g2 = sp.symbols("g1 g2")
    assert sp.simplify((1 * g1 + 3 * g2) / 4 - (g1 + g2) / 2) != 0


def test_hierarchical_debug_numbers_equal_mlsysim():
    # DT, perspective "Debugging slow gradient synchronization": 3 GB over 128 nodes x 8 A100s, HDR 25 GB/s,
    # NVLink 300 GB/s: flat ring 239.8 ms, inter-node 29.8 ms, hierarchical 48.5 ms (mlsysim's function)
    import mlsysim
    from mlsysim.physics import calc_hierarchical_allreduce_time
    assert round(float(RingAllReduce(3e9, 1024, 25e9, 0).doit()) * 1e3, 1) == 239.8
    assert round(float(RingAllReduce(3e9 / 8, 128, 25e9, 0).doit()) * 1e3, 1) == 29.8
    ours = float(HierarchicalAllReduce(3e9, 128, 8, 300e9, 500e-9, 25e9, 5e-6).doit())
    want = calc_hierarchical_allreduce_time(3e9 * mlsysim.byte, 128, 8, 300e9 * mlsysim.byte / mlsysim.second,
                                            25e9 * mlsysim.byte / mlsysim.second).to("second").magnitude
    assert ours == pytest.approx(want, rel=1e-12) and round(ours * 1e3, 1) == 48.5


@pytest.mark.parametrize("name", NEW)
def test_new_terms_have_notation_units_derivative_and_code(name):
    check_term(name, "1")


def test_book_macros_of_the_new_terms_and_arguments_are_the_registrys():
    mlsysim = pytest.importorskip("mlsysim")
    for name in NEW:
        tm = notation.term(name)
        if tm.book:
            assert mlsysim.Symbols[tm.book].latex == tm.latex, name
    # r, k and W are glyphs the package already gives other meanings (LoRA rank, accumulation steps, weight
    # bytes): in plain LaTeX these print subscripted; in book mode as the registry's macros
    for name in ("eta_base", "t_opt", "eta_bsp", "s_stale", "eta_global", "T_sync_acc", "p_strag"):
        e = notation.entry(name)
        assert mlsysim.Symbols[e.book].latex == e.latex, name


def test_new_term_glyphs_are_unique():
    glyphs = [tm.latex for tm in notation.TERMS if tm.name in NEW]
    assert len(glyphs) == len(set(glyphs))


def test_the_chapters_count():
    # 66 rows: 21 display equations and 45 worked formulas; 57 reproduced by an entry, 9 explained (4 gradient
    # definitions, 3 convergence bounds, 2 matrix identities: nothing to price); none left "not reproduced yet"
    from derivations import book, book_dt
    rows = book_dt.inventory()
    assert len(rows) == 66
    assert sum(c.where.endswith("(D)") for c in rows) == 21
    assert sum(bool(c.entry) for c in rows) == 57
    assert sum(bool(c.why) for c in rows) == 9
    assert all(bool(c.entry) != bool(c.why) for c in rows)
    assert not any("not reproduced" in c.why or "not yet" in c.why for c in rows)
    assert "dt" in book.CHAPTER_MODULES
    keys = {e.key for g in book_dt.groups().values() for e in g}
    assert all(k.startswith("dt-") for k in keys) and len(keys) == 23
    assert {c.entry for c in rows if c.entry.startswith("dt-")} == keys
    for g in book_dt.groups().values():
        for e in g:
            e.verify()
    # sec. Model parallelism implementation: 'With 8-way partitioning on A100s, BF16 weights alone occupy
    # approximately 44 GB per GPU' (175B x 2 B / 8 = 43.75 GB), counted after the memory-wall notebook
    i = next(j for j, c in enumerate(rows) if c.where == "sec. Model parallelism implementation")
    assert rows[i - 1].where == "notebook The memory wall of scale" and rows[i].entry == "dt-memory-quotients"
    quot = {e.key: e for g in book_dt.groups().values() for e in g}["dt-memory-quotients"]
    n = next(x for x in quot.numbers if "8-way partitioning" in x.what)
    assert n.package == 43.75e9 and round(n.package / 1e9) == 44 and n.agrees


# --------------------------------------------------------------------------------------------------
# The worked numbers that were "not reproduced yet", each on the package's expressions
# --------------------------------------------------------------------------------------------------
GB = 1e9


def _state(P, bpp=2, adam=12, grads=True, dp=1, z=0):
    x = weight_bytes(P, bpp, dp, z) + optimizer_bytes(P, 1, dp, z)
    if grads:
        x += gradient_bytes(P, 1, bpp, dp, z)
    return float(x.subs(sym.ADAM, adam).doit())


def test_memory_quotients():
    # DT, Multi-machine training requirements: 16 B per parameter (2 + 2 + 12) exceed 80 GB at ~5B parameters
    P = sym.P
    sixteen = (weight_bytes(P, 2, 1, 0) + gradient_bytes(P, 1, 2, 1, 0) + optimizer_bytes(P, 1, 1, 0)).subs(sym.ADAM, 12)
    assert sp.simplify(sixteen - 16 * P) == 0
    assert sp.solve(sp.Eq(sixteen, 80 * GB), P)[0] == pytest.approx(5e9)
    # DT, definition of distributed training: 175B in BF16 ~350 GB, > 4x an 80 GB H100, at least 5 H100s
    w = float(weight_bytes(175e9, 2, 1, 0).doit())
    assert w == 350 * GB and w / (80 * GB) > 4 and math.ceil(w / (80 * GB)) == 5
    # DT, Parallelism-infrastructure interaction: BERT-Base 110M ~440 MB, BERT-Large 340M ~1.4 GB of FP32 gradients
    assert float(gradient_bytes(110e6, 1, 4, 1, 0).doit()) == 440e6
    assert round(float(gradient_bytes(340e6, 1, 4, 1, 0).doit()) / GB, 1) == 1.4
    # DT, cell ModelParallelMemoryFacts and notebook "The memory wall of scale": 350 GB weights (5.5 GB over 64),
    # 2,100 GB Adam, 2,800 GB state, 43.8 GB per GPU over 64 (ZeRO-3), + 50 GB activations = 93.75 GB
    assert round(float(weight_bytes(175e9, 2, 64, 3).doit()) / GB, 1) == 5.5
    assert _state(175e9) == 2800 * GB and float(optimizer_bytes(175e9, 1, 1, 0).subs(sym.ADAM, 12)) == 2100 * GB
    assert _state(175e9, dp=64, z=3) == pytest.approx(43.75 * GB) and _state(175e9, dp=64, z=3) + 50 * GB > 80 * GB
    # DT, cell HybridMemoryAccounting: 8 B moments 1.4 TB, 12 B 2.1 TB; (W + O8) / 8 = 218.75 GB,
    # / (8 x 16) = 13.7 GB, with 12 B 19.1 GB (weights and optimizer state only, no gradients)
    assert float(optimizer_bytes(175e9, 1, 1, 0).subs(sym.ADAM, 8)) == 1.4e12
    assert _state(175e9 / 8, adam=8, grads=False) == pytest.approx(218.75 * GB)
    assert round(_state(175e9 / 128, adam=8, grads=False) / GB, 1) == 13.7
    assert round(_state(175e9 / 128, adam=12, grads=False) / GB, 1) == 19.1


def test_rlhf_memory_and_kv_cache():
    # DT, The multi-model coordination problem: 1,120 + 140 + 26 + 208 = 1,494 GB; ceil(1,494 / 80) = 19 H100s;
    # DPO 1,260 GB (15.7 %, '16 percent'); a policy-sized value model: 2,406 GB, 'roughly 48 percent'
    policy, ref = _state(70e9), float(weight_bytes(70e9, 2, 1, 0).doit())
    reward, critic = float(weight_bytes(13e9, 2, 1, 0).doit()), _state(13e9)
    assert (policy, ref, reward, critic) == (1120 * GB, 140 * GB, 26 * GB, 208 * GB)
    ppo, dpo = policy + ref + reward + critic, policy + ref
    assert ppo == 1494 * GB and math.ceil(ppo / (80 * GB)) == 19 and dpo == 1260 * GB
    assert round((1 - dpo / ppo) * 100, 1) == 15.7 and round((1 - dpo / (2 * policy + ref + reward)) * 100) == 48
    # DT, cell RLHFKVCache: 2 x 80 x 8 x 128 x 1024 x 256 x 2 B = 85.9 GB; dense (64 heads) 687.2 GB
    msg = 256 * 1024 * 8192 * 2
    kv = 80 * float(kv_bytes(msg, sp.Rational(8, 64), 1, 1))
    assert kv == 2 * 80 * 8 * 128 * 1024 * 256 * 2 and round(kv / GB, 1) == 85.9
    assert round(80 * float(kv_bytes(msg, 1, 1, 1)) / GB, 1) == 687.2
    # DT, notebook "RLHF infrastructure budget": 35 + 4.4 = 39.4 GB per GPU on TP 8 x PP 4; 40.6 GB left;
    # KV 85.9 / 32 = 2.7 GB; 37.9 GB left; 1.07x
    pol, rf = _state(70e9 / 32), float(weight_bytes(70e9 / 32, 2, 1, 0).doit())
    left = 80 * GB - pol - rf
    assert (round(pol / GB), round(rf / GB, 1), round((pol + rf) / GB, 1), round(left / GB, 1)) == (35, 4.4, 39.4, 40.6)
    assert round(kv / 32 / GB, 1) == 2.7 and round((left - kv / 32) / GB, 1) == 37.9
    assert round(left / (left - kv / 32), 2) == 1.07


def test_dataset_split_is_the_local_batch():
    # DT, Dataset splitting: 100,000 examples / 4 GPUs = 25,000; 1.2M / 32 = ~37,500
    from mlsysim_sym.model import build_model
    m = build_model()
    lb, dp = m.definition("lb"), m.quantity("dp").symbol
    assert lb.subs({sym.B: 100000, dp: 4}) == 25000 and lb.subs({sym.B: 1200000, dp: 32}) == 37500


def test_cluster_reliability_and_young_daly_pitfall():
    # DT, cell DistTrainReliabilityFacts: 100 nodes at 99.9 % hourly survival fail within the hour with 9.5 %,
    # MTBF 1 / (100 (-ln 0.999)) h, 'about 10 hours'
    assert round((1 - float(AllUpAvailability(0.999, 100).doit())) * 100, 1) == 9.5
    assert round(float(SystemMTBF(1 / -math.log(0.999), 100).doit())) == 10
    lam, t, N_ = sp.symbols("lambda t N", positive=True)
    assert sp.simplify(t / (N_ * -sp.log(sp.exp(-lam * t))) - SystemMTBF(1 / lam, N_).doit()) == 0
    # DT, pitfall "Using fixed checkpoint intervals": 50,000 h / 1,024 = 48.8 h; sqrt(2 x 5 min x MTBF) = 171.2 min
    # (~2.9 h); tax 5.8 % at the optimum, 33.6 % every 15 minutes
    mtbf = SystemMTBF(50000 * 60, 1024)                                     # minutes
    tau = YoungDalyInterval(5, mtbf)
    assert round(float(mtbf.doit()) / 60, 1) == 48.8 and round(float(tau.doit()), 1) == 171.2
    assert round(float(tau.doit()) / 60, 1) == 2.9
    assert round(float(CheckpointWaste(5, tau, mtbf).doit()) * 100, 1) == 5.8
    assert round(float(CheckpointWaste(5, 15, mtbf).doit()) * 100, 1) == 33.6


def test_stragglers_padding_and_communication_share():
    # DT, Barrier semantics: 1,000 GPUs x 1 % = ~10 stragglers per step
    assert ExpectedStragglers(1000, sp.Rational(1, 100)).doit() == 10
    # DT, Sequence length variance: one 2,048-token and fifteen 128-token sequences waste 88 % on padding
    batch = [2048] + [128] * 15
    assert round(float(PaddingWaste(sp.Rational(sum(batch), 16), 2048).doit()) * 100) == 88
    # DT, fallacy "Parallelism overhead is roughly constant": 25 / (50 + 25) = 33 %, 180 / (2400 + 180) = 7 %
    share = lambda c, p: float((CommComputeRatio(c, p) / (1 + CommComputeRatio(c, p))).doit())  # noqa: E731
    assert round(share(25, 50) * 100) == 33 and round(share(180, 2400) * 100) == 7
    # DT, definition of tensor parallelism: NVLink 900 GB/s against NDR 50 GB/s, 'an 18x gap'; 96 x 2-10 ms
    # = 192-960 ms (the book: 200-960 ms)
    assert float((RingAllReduce(1, 8, 50, 0) / RingAllReduce(1, 8, 900, 0)).doit()) == pytest.approx(18)
    assert (96 * 2, 96 * 10) == (192, 960)


def test_scaling_from_8_to_64_workers():
    # DT, notebook "Scaling from 8 to 64 workers": 100K / (12.8K x 1.15) = 6.8x, 100K / (1.72K x 1.45) = 40.1x,
    # 100K / (2.1K x 1.25) = 38.1x (the overhead is rho); sample efficiency 98 %, 91 %, 74 %; $34, $53, $56 at $3/h
    sp_ = lambda k, o: 100000 / (k * (1 + float(CommComputeRatio(o, 1).doit())))  # noqa: E731
    assert [round(sp_(k, o), 1) for k, o in ((12800, .15), (1720, .45), (2100, .25))] == [6.8, 40.1, 38.1]
    assert [round(100000 / n_ / k * 100) for n_, k in ((8, 12800), (64, 1720), (64, 2100))] == [98, 91, 74]
    assert [round(k * s_ * g / 3600 * 3) for k, s_, g in ((12800, .4, 8), (1720, .58, 64), (2100, .5, 64))] == [
        34, 53, 56]


def test_moe_alltoall_bytes():
    # DT, Expert parallelism: B 4 x S 2048 x d 4096 x 2 B ~ 67 MB one way; dispatch and combine ~ 134 MB per block
    from mlsysim_sym.model import build_model
    from mlsysim_sym.symbols import PARAMS
    m = build_model()
    msg = m.definition("M_act_msg").subs({sym.H: 4096, sym.bpp: 2, m.quantity("lb").symbol: 4, sym.s: 2048})
    assert round(float(msg) / 1e6) == 67
    assert round(PARAMS["n_a2a"].value / 2 * float(msg) / 1e6) == 134
