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
from mlsysim_sym.terms.training import (AccumulationSyncOverhead, AmdahlSpeedup, CriticalBatchSize,
                                        LarsLearningRate, LinearScaledLearningRate, SqrtScaledLearningRate,
                                        StalenessAdjustedLearningRate, WarmupLearningRate)
from mlsysim_sym.units import dimension, parse_unit

NEW = ("AmdahlSpeedup", "LinearScaledLearningRate", "SqrtScaledLearningRate", "WarmupLearningRate",
       "StalenessAdjustedLearningRate", "CriticalBatchSize", "LarsLearningRate", "AccumulationSyncOverhead")
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
    term = notation.term(name)
    call = term_call(term)
    assert type(call) is TERM_CLASSES[name]
    assert sp.latex(call).startswith(term.latex)
    units = {x: notation.entry(x.name).unit for x in call.free_symbols}
    assert dimension(call, units) == parse_unit("1")
    args = list(call.args)
    for x in args:
        assert sp.simplify(sp.diff(call, x) - sp.diff(call.doit(), x)) == 0, (name, x)
    values = [7 if getattr(x, "is_integer", False) else 3.5 + i for i, x in enumerate(args)]
    exact = float(call.doit().xreplace(dict(zip(args, [sp.nsimplify(v) for v in values]))))
    for backend in ("numpy", "math"):
        f = sp.lambdify(args, 3 * call, backend)
        assert f(*values) == pytest.approx(3 * exact, rel=1e-13), (name, backend)
    g = sp.lambdify(args, call, "numpy")
    assert np.allclose(g(*[np.array([v, v]) for v in values]), exact, rtol=1e-13)


def test_book_macros_of_the_new_terms_and_arguments_are_the_registrys():
    mlsysim = pytest.importorskip("mlsysim")
    for name in NEW:
        tm = notation.term(name)
        if tm.book:
            assert mlsysim.Symbols[tm.book].latex == tm.latex, name
    # r, k and W are glyphs the package already gives other meanings (LoRA rank, accumulation steps, weight
    # bytes): in plain LaTeX these print subscripted; in book mode as the registry's macros
    for name in ("eta_base", "t_opt", "eta_bsp", "s_stale", "eta_global", "T_sync_acc"):
        e = notation.entry(name)
        assert mlsysim.Symbols[e.book].latex == e.latex, name


def test_new_term_glyphs_are_unique():
    glyphs = [tm.latex for tm in notation.TERMS if tm.name in NEW]
    assert len(glyphs) == len(set(glyphs))


def test_the_chapters_count():
    # 65 rows: 21 display equations and 44 worked formulas; 38 reproduced by an entry, 27 explained
    # (9 with nothing to price: 4 gradient definitions, 3 convergence bounds, 2 matrix identities; 18 not
    # reproduced yet)
    from derivations import book, book_dt
    rows = book_dt.inventory()
    assert len(rows) == 65
    assert sum(c.where.endswith("(D)") for c in rows) == 21
    assert sum(bool(c.entry) for c in rows) == 38
    assert sum(bool(c.why) for c in rows) == 27
    assert sum(c.why.startswith("not reproduced yet") for c in rows) == 18
    assert "dt" in book.CHAPTER_MODULES
    keys = {e.key for g in book_dt.groups().values() for e in g}
    assert all(k.startswith("dt-") for k in keys) and len(keys) == 12
    for g in book_dt.groups().values():
        for e in g:
            e.verify()
