"""The terms of the communication (AC) and fleet (FA) appendices of *Machine Learning Systems* vol. 2
(harvard-edge/cs249r_book at 02fb0d6469cb1551f4d018166dafce398821ed53: backmatter/appendix_communication.qmd and
backmatter/appendix_fleet.qmd): each against the book's formula and its worked numbers, through notation, units,
the derivative and lambdify; and the count of the two appendices' equations (derivations/book_acfa.py).

The book's cells take their inputs from mlsysim's catalog: InfiniBand NDR 50 GB/s and 5 us, H100 989 TFLOP/s,
3.35 TB/s, 700 W, GPU MTTF 50,000 h; they are written out here.
"""
import math

import numpy as np
import pytest
import sympy as sp

from mlsysim_sym import notation
from mlsysim_sym.printing import TERM_CLASSES, term_call
from mlsysim_sym.terms.collectives import RingAllReduce
from mlsysim_sym.terms.networks import LogGPLongMessageTime
from mlsysim_sym.terms.reliability import SystemMTBF
from mlsysim_sym.terms.training import AmdahlSpeedup
from mlsysim_sym.terms.fleet import (AttainableRate, CheckpointSize,
                                     CompressionBreakEven, FabricBandwidthRatio, FacilityPower, FailureProbability,
                                     GoodputRatio, IronLawTime, ITPower, RequestConcurrency, RidgePoint, TreeBroadcast)
from mlsysim_sym.units import dimension, parse_unit
from term_checks import check_term  # noqa: E402  (tests/term_checks.py)

UNIT = {"IronLawTime": "s", "FailureProbability": "1",
        "GoodputRatio": "1", "CheckpointSize": "B", "ITPower": "W", "FacilityPower": "W", "RidgePoint": "flop/B",
        "AttainableRate": "flop/s", "RequestConcurrency": "1", "TreeBroadcast": "s", "CompressionBreakEven": "s",
        "LogGPLongMessageTime": "s", "FabricBandwidthRatio": "1"}
NEW = tuple(UNIT)
HOUR = 3600.0
M, N, b, a = sp.symbols("M N beta alpha", positive=True)


def f(expr):
    return float(sp.sympify(expr).doit())


# --------------------------------------------------------------------------------------------
# AC
# --------------------------------------------------------------------------------------------
def test_tree_broadcast_is_eq_broadcast():
    # AC @eq-broadcast: log2 N (alpha + M/beta); the summary table's terms log2 N M/beta and log2 N alpha
    book = sp.log(N, 2) * (a + M / b)
    assert sp.simplify((TreeBroadcast(M, N, b, a).doit() - book).rewrite(sp.log)) == 0
    assert TreeBroadcast(M, 1, b, a).doit() == 0
    # 1 GB over 256 GPUs on NDR: 8 levels of (5 us + 20 ms)
    assert f(TreeBroadcast(1e9, 256, 50e9, 5e-6)) == pytest.approx(8 * (5e-6 + 0.02), rel=1e-14)


def test_compression_breakeven_table_and_exact_form():
    # AC @tbl-compression-breakeven: T (1 - 1/C), printed 7.5 / 30 / 75, 9.4 / 37.5 / 93.8, 9.8 / 39.4 / 98.4,
    # 9.96 / 39.8 / 99.6 ms for C = 4, 16, 64, 256 and AllReduce 10, 40, 100 ms
    printed = {(4, 10): "7.5", (4, 40): "30", (4, 100): "75", (16, 10): "9.4", (16, 40): "37.5", (16, 100): "93.8",
               (64, 10): "9.8", (64, 40): "39.4", (64, 100): "98.4", (256, 10): "9.96", (256, 40): "39.8",
               (256, 100): "99.6"}
    for (c, t), text in printed.items():
        digits = len(text.split(".")[1]) if "." in text else 0
        assert f"{f(CompressionBreakEven(t, c)):.{digits}f}" == text
    # @eq-compression-breakeven with a ring AllReduce: the latency terms cancel, the time saved is exactly the
    # bandwidth term times (1 - 1/C)
    C = sp.Symbol("C", positive=True)
    saved = RingAllReduce(M, N, b, a) - RingAllReduce(M / C, N, b, a)
    assert sp.simplify((saved - CompressionBreakEven(RingAllReduce(M, N, b, 0), C)).doit()) == 0


def test_top_k_compression_notebook():
    # AC notebook "Is top-k compression worth it?": 1 GB over 256 H100s on NDR, 64x, 2 ms codec:
    # 42.4 ms uncompressed, 3.2 ms compressed, 5.2 ms total, 8.2x
    full = f(RingAllReduce(1e9, 256, 50e9, 5e-6))
    comp = f(RingAllReduce(1e9 / 64, 256, 50e9, 5e-6))
    assert (round(full * 1e3, 1), round(comp * 1e3, 1), round((comp + 2e-3) * 1e3, 1)) == (42.4, 3.2, 5.2)
    assert round(full / (comp + 2e-3), 1) == 8.2


# --------------------------------------------------------------------------------------------
# FA
# --------------------------------------------------------------------------------------------
def test_iron_law_is_the_recaps_sum():
    # FA foundations recap: T ~ D_vol/BW + O/(R_peak eta_hw) + L_lat
    D, BW, O, R, eta, L = sp.symbols("D BW O R eta L", positive=True)
    assert sp.simplify(IronLawTime(D, BW, O, R, eta, L).doit() - (D / BW + O / (R * eta) + L)) == 0


def test_mtbf_and_failure_probability_table():
    # FA @eq-fleet-mtbf-system and @tbl-fleet-mtbf (MTTF 50,000 h): 195.3 h / 11,718.8 min / 11.6 %,
    # 24.4 h / 1,464.8 min / 62.6 %, 6.1 h / 366.2 min / 98 %, 0.50 h / 30 min / 100 %
    mtbf, n, t = sp.symbols("MTBF n T", positive=True)
    assert SystemMTBF(mtbf, n).doit() == mtbf / n
    assert FailureProbability(t, mtbf).doit().rewrite(sp.exp) == 1 - sp.exp(-t / mtbf)
    # printed with the operator \exp (no bare letter e), in both notations
    assert sp.latex(FailureProbability(t, mtbf).doit()) == r"1 - \exp\left(- \frac{T}{MTBF}\right)"
    rows = {256: (195.3, 11718.8, 11.6), 2048: (24.4, 1464.8, 62.6), 8192: (6.1, 366.2, 98.0),
            100_000: (0.5, 30.0, 100.0)}
    for n_gpu, (h, mins, pct) in rows.items():
        sys_mtbf = f(SystemMTBF(50_000 * HOUR, n_gpu))
        assert round(sys_mtbf / HOUR, 1) == h and round(sys_mtbf / 60, 1) == mins
        p = f(FailureProbability(24 * HOUR, sys_mtbf))
        assert round(p * 100, 0 if n_gpu >= 8192 else 1) == pct
    # equal to mlsysim's functions
    from mlsysim.physics import calc_failure_probability, calc_mtbf_cluster
    import mlsysim
    m = calc_mtbf_cluster(50_000, 8192)
    assert f(SystemMTBF(50_000, 8192)) == pytest.approx(m.to("hour").magnitude, rel=1e-15)
    assert f(FailureProbability(24, 50_000 / 8192)) == pytest.approx(
        calc_failure_probability(m, 24 * mlsysim.hour), rel=1e-14)


def test_amdahl_worked_example_and_cap():
    # FA, Amdahl's law at fleet scale: 10 % serial -> 7.8x, 9.7x, 9.9x, 10x (9.989 rounded), capped at 10x; the
    # recap writes 1 / (s + (1 - s)/N), the package's term (the DT chapter's) N / (1 + (N - 1) s)
    s_, n = sp.symbols("s n", positive=True)
    assert sp.simplify(AmdahlSpeedup(n, s_).doit() - 1 / (s_ + (1 - s_) / n)) == 0
    assert sp.limit(AmdahlSpeedup(n, s_).doit(), n, sp.oo) == 1 / s_
    got = [f(AmdahlSpeedup(k, sp.Rational(1, 10))) for k in (32, 256, 1024, 8192)]
    assert [round(x, 1) for x in got[:3]] == [7.8, 9.7, 9.9] and round(got[3]) == 10
    from mlsysim.physics import calc_amdahls_speedup
    assert got[1] == pytest.approx(calc_amdahls_speedup(0.9, 256), rel=1e-15)


def test_goodput_and_compound_loss():
    # FA @tbl-fleet-overhead-budgets caption: 1.0 - (0.05 + 0.03 + 0.10 + 0.05) = 0.77; the compound-loss callout:
    # 1,012,736 TFLOP/s x 0.50 x 0.83 x 0.77 = 323,619.8 TFLOP/s, 32.0 % of peak
    x = sp.symbols("x1:5", positive=True)
    assert GoodputRatio(*x).doit() == 1 - sum(x)
    g = f(GoodputRatio(0.05, 0.03, 0.10, 0.05))
    assert g == pytest.approx(0.77, rel=1e-12)
    eff = 1024 * 989 * 0.50 * 0.83 * g
    assert round(eff, 1) == 323619.8 and round(eff / (1024 * 989) * 100, 1) == 32.0


def test_checkpoint_sizes():
    # FA @tbl-fleet-checkpoint-sizes (14 B/param, written at 100 GB/s): 98 GB / 1.0 s, 980 GB / 9.8 s,
    # 2,450 GB / 24.5 s, 14 TB / 2.3 min
    P, bc = sp.symbols("P b", positive=True)
    assert CheckpointSize(P, bc).doit() == P * bc
    sizes = [f(CheckpointSize(n, 14)) for n in (7e9, 70e9, 175e9, 1e12)]
    assert [round(s / 1e9) for s in sizes] == [98, 980, 2450, 14000]
    assert [round(s / 100e9, 1) for s in sizes[:3]] == [1.0, 9.8, 24.5] and round(sizes[3] / 100e9 / 60, 1) == 2.3
    from mlsysim.physics import calc_checkpoint_size
    assert sizes[2] == pytest.approx(calc_checkpoint_size(175e9).to("byte").magnitude, rel=1e-15)


def test_power():
    # FA power numbers: 10,000 x 700 W = 7 MW IT; x PUE 1.55 = 10.8 MW (printed; 10.85 rounds down in binary);
    # @tbl-fleet-pue-fleet: 60 / 120 / 550 / 580 kW of overhead per MW; 10 MW legacy 15.8, liquid 10.6, saving 5.2
    n, tdp, pue = sp.symbols("n TDP PUE", positive=True)
    assert FacilityPower(n, tdp, pue).doit() == ITPower(n, tdp).doit() * pue == n * tdp * pue
    assert f(ITPower(10_000, 700)) == 7e6
    assert f"{f(FacilityPower(10_000, 700, 1.55)) / 1e6:.1f}" == "10.8"
    assert [round(f(FacilityPower(1, 1e3, p) - ITPower(1, 1e3))) for p in (1.06, 1.12, 1.55, 1.58)] == [60, 120, 550, 580]
    assert [round(f(FacilityPower(1, 10, p)), 1) for p in (1.58, 1.06)] == [15.8, 10.6]


def test_roofline_and_ridge():
    # FA @eq-fleet-roofline, @eq-fleet-ridge-point: H100 989 TFLOP/s over 3.35 TB/s = 295 FLOP/byte;
    # Llama-3.1-8B decode at 1 FLOP/byte: 3.35 TB/s over 16.06 GB of weights = 208.6 tokens/s
    I, R, BW = sp.symbols("I R BW", positive=True)
    assert AttainableRate(I, R, BW).doit() == sp.Min(R, I * BW)
    assert RidgePoint(R, BW).doit() == R / BW
    assert sp.solve(sp.Eq(R, I * BW), I) == [RidgePoint(R, BW).doit()]
    assert round(f(RidgePoint(989e12, 3.35e12))) == 295
    assert f(AttainableRate(1, 989e12, 3.35e12)) == 3.35e12
    assert f(AttainableRate(1000, 989e12, 3.35e12)) == 989e12
    assert round(f(AttainableRate(1, 989e12, 3.35e12)) / (2 * 8.03e9), 1) == 208.6


def test_littles_law():
    # FA recap: Q_req = lambda_arr T_lat
    lam, t = sp.symbols("lambda T", positive=True)
    assert RequestConcurrency(lam, t).doit() == lam * t
    assert f(RequestConcurrency(100, 0.25)) == 25


# --------------------------------------------------------------------------------------------
# Every new term: notation, units, derivative, code printing
# --------------------------------------------------------------------------------------------
def test_loggp_long_message_is_the_appendixs_display():
    # AC, LogGP display: T_long = o_s + L + (k - 1) G + o_r (no worked number); G is G_byte, not the package's G
    o_s, L, k, G, o_r = sp.symbols("o_s L k G o_r", positive=True)
    assert sp.expand(LogGPLongMessageTime(o_s, L, k, G, o_r).doit() - (o_s + L + (k - 1) * G + o_r)) == 0
    assert notation.entry("G_byte").latex == r"G_{\text{byte}}" and notation.entry("G_byte").book is None
    # a one-byte message pays no gap: the LogP cost o_s + L + o_r
    assert LogGPLongMessageTime(o_s, L, 1, G, o_r).doit() == o_s + L + o_r


def _units_of_args(call):
    return {s: notation.entry(s.name).unit for s in call.free_symbols}


@pytest.mark.parametrize("name", NEW)
def test_new_terms_have_notation_units_derivative_and_code(name):
    # fractions below 1 where a share is meant (goodput), positive values elsewhere
    def values(name, args):
        return [0.05 * (i + 1) if notation.entry(x.name).unit == "1" and name == "GoodputRatio" and x.name != "N"
                else 7 if getattr(x, "is_integer", False) else 3.5 + i for i, x in enumerate(args)]
    check_term(name, UNIT[name], values)


def test_book_macros_of_the_new_terms_are_the_registrys():
    mlsysim = pytest.importorskip("mlsysim")
    for name in NEW:
        t = notation.term(name)
        if t.book:
            assert mlsysim.Symbols[t.book].latex == t.latex, name
    for name in ("O_ops", "MTBF_comp", "T_job", "f_oh_ckpt", "lambda_arr", "T_lat", "r_comp",
                 "T_xfer"):
        e = notation.entry(name)
        assert mlsysim.Symbols[e.book].latex == e.latex, name


# --------------------------------------------------------------------------------------------
# The count
# --------------------------------------------------------------------------------------------
def test_inventory_counts():
    from derivations import book, book_acfa
    inv = book_acfa.inventory()
    split = {c: (sum(1 for r in inv if r.chapter == c and r.entry), sum(1 for r in inv if r.chapter == c and r.why))
             for c in ("AC", "FA")}
    # AC: 22 counted (22 reproduced, 0 explained); FA: 30 counted (28 reproduced, 2 explained)
    assert split == {"AC": (22, 0), "FA": (28, 2)}
    assert "acfa" in book.CHAPTER_MODULES
    keys = {e.key for group in book_acfa.groups().values() for e in group}
    assert len(keys) == 21 and all(k.startswith(("ac-", "fa-")) for k in keys)
    for group in book_acfa.groups().values():
        for e in group:
            e.verify()
    existing = {"alpha-beta", "crossover", "ring", "tree", "rs-ag", "alltoall", "bubble", "interleaved", "rho",
                "effective-throughput"}
    assert {r.entry for r in inv if r.entry} <= keys | existing


# ---- issue 24: priced rows ----------------------------------------------------------------------------------------
def test_nvlink_over_ndr_is_18_with_both_directions_and_9_per_direction():
    # AC, Hierarchical AllReduce (cell CommAlgorithmSelection): H100 NVLink 900 GB/s over IB NDR 50 GB/s,
    # "NVLink is 18x faster than InfiniBand NDR"; FA 'Three fleet numbers' and @tbl-fleet-numbers-quick-ref: ~18x
    bi, bo = sp.symbols("beta_i beta_o", positive=True)
    assert FabricBandwidthRatio(bi, bo).doit() == bi / bo
    # a ring AllReduce's time on the fabric over its time on NVLink is the same ratio (DT's "18x gap")
    assert sp.simplify(RingAllReduce(M, 8, bo, 0).doit() / RingAllReduce(M, 8, bi, 0).doit() - bi / bo) == 0
    # the package's catalog: H100 NVLink 450 GB/s per direction, Training_10K's IB NDR 50 GB/s
    from derivations import book_acfa
    nvlink, ndr = book_acfa.catalog_link_bandwidths()
    assert (nvlink, ndr) == (450e9, 50e9)
    assert f(FabricBandwidthRatio(2 * nvlink, ndr)) == 18       # the book's 900 GB/s: both directions added
    assert f(FabricBandwidthRatio(nvlink, ndr)) == 9            # per direction
    e = book_acfa._bandwidth_gap().verify()
    assert [x.book for x in e.numbers] == [18, 18] and all(x.exact for x in e.numbers)
    inv = book_acfa.inventory()
    assert [r.entry for r in inv if "18x" in r.what] == ["ac-nvlink-ndr-ratio", "ac-nvlink-ndr-ratio"]
