"""The Fault Tolerance chapter's terms (issue 24): each against the book's formula and its worked numbers, and
through notation, units, derivative and lambdify as tests/test_book_terms.py does for its terms.

The book is *Machine Learning Systems* vol. 2, book/quarto/contents/vol2/fault_tolerance/fault_tolerance.qmd
(read at Mu-L/cs249r_book f713da9, a fork of harvard-edge/cs249r_book).
"""
import math

import numpy as np
import pytest
import sympy as sp

from mlsysim_sym import notation
from mlsysim_sym.printing import TERM_CLASSES, term_call
from mlsysim_sym.terms.reliability import (AllUpAvailability, CheckpointOverhead, CheckpointWaste,
                                           CheckpointWriteTime, EccEffectiveBandwidth, HeartbeatTimeout, MtbfFromFit,
                                           ObservedMTBF, RecoveryTime, ReplicatedAvailability, StepEventProbability,
                                           StragglerStepTime, SystemMTBF, YoungDalyInterval)
from mlsysim_sym.units import dimension, parse_unit
from term_checks import check_term  # noqa: E402  (tests/term_checks.py)

NEW = {"SystemMTBF": "s", "YoungDalyInterval": "s", "CheckpointWaste": "1",
       "CheckpointOverhead": "1", "CheckpointWriteTime": "s", "RecoveryTime": "s", "AllUpAvailability": "1",
       "ReplicatedAvailability": "1", "StepEventProbability": "1", "HeartbeatTimeout": "s",
       "StragglerStepTime": "s", "MtbfFromFit": "s", "EccEffectiveBandwidth": "B/s", "ObservedMTBF": "s"}
tw, tau, m, lam, n, t = sp.symbols("T_w tau M lambda N t", positive=True)


def test_system_mtbf_is_the_books_equation_and_its_numbers():
    # @eq-system-mtbf: 1/(N lambda) = MTBF_component / N
    assert sp.simplify(SystemMTBF(m, n).doit() - 1 / (n * (1 / m))) == 0
    # perspective 'scale transforms failure': 50,000 h over 10,000 GPUs is 5 h; @tbl-cluster-mtbf-scaling: 8 -> 6,250 h
    assert float(SystemMTBF(50000, 10000).doit()) == 5
    assert float(SystemMTBF(50000, 8).doit()) == 6250
    # the cascade: GPU 50,000 h, PCIe 200,000 h, 1/8 of a 100,000 h PSU and of a 150,000 h NIC; 10,000 GPUs -> 3.69 h
    lam_gpu = 1 / 50000 + 1 / 200000 + 1 / (8 * 100000) + 1 / (8 * 150000)
    assert float(SystemMTBF(1 / sp.Float(lam_gpu), 10000).doit()) == pytest.approx(3.69, abs=0.005)


def test_reliability_of_n_components_is_the_product():
    # @eq-system-reliability-product with N equal factors is @eq-system-reliability-n-components (an entry)
    from derivations import book_ft
    e = {x.key: x for x in book_ft.entries()}["ft-reliability"]
    assert sp.simplify(e.symbolic[0] - e.symbolic[1]) == 0


def test_young_daly_minimizes_the_waste_and_gives_the_books_intervals():
    # the interval where d W / d tau = 0 is sqrt(2 T_write MTBF) (Young 1974)
    assert sp.solve(sp.diff(CheckpointWaste(tw, tau, m).doit(), tau), tau) == [YoungDalyInterval(tw, m).doit()]
    # notebook: 2 min write, 180 min MTBF -> 26.8 min; pitfall: 5 min x 240 -> 49 min, 15 min -> 85 min
    assert float(YoungDalyInterval(2, 180).doit()) == pytest.approx(26.8, abs=0.05)
    assert float(YoungDalyInterval(5, 240).doit()) == pytest.approx(49, abs=0.5)
    assert float(YoungDalyInterval(15, 240).doit()) == pytest.approx(85, abs=0.5)
    # @fig-young-daly: 15 min write, 5 h -> about 1.6 h
    assert float(YoungDalyInterval(0.25, 5).doit()) == pytest.approx(1.6, abs=0.05)


def test_checkpoint_waste_numbers_of_the_16000_gpu_notebook():
    # 2 min write, 180 min MTBF: every 10 min 22.8 % total, every 60 min 20 %, at the optimum about 15 %
    assert float(CheckpointWaste(2, 10, 180).doit()) == pytest.approx(0.228, abs=5e-4)
    assert float(CheckpointWaste(2, 60, 180).doit()) == pytest.approx(0.20, abs=5e-4)
    at_opt = CheckpointWaste(2, YoungDalyInterval(2, 180), 180).doit()
    assert float(at_opt) == pytest.approx(0.15, abs=0.002)
    assert sp.simplify(CheckpointWaste(tw, YoungDalyInterval(tw, m), m).doit() - sp.sqrt(2 * tw / m)) == 0


def test_overhead_write_time_and_the_table_row():
    # @eq-checkpoint-overhead as written
    assert sp.simplify(CheckpointOverhead(tw, t, tau).doit() - (tw / tau + t / tau)) == 0
    # @tbl-checkpoint-overhead-by-model, Archetype A: 2.1 TB at 100 GB/s = 21 s; tau at 5 h = 14.5 min; 2.4 %
    w = CheckpointWriteTime(2100e9, 100e9)
    assert float(w.doit()) == pytest.approx(21)
    assert float(YoungDalyInterval(w, 5 * 3600).doit()) / 60 == pytest.approx(14.5, abs=0.05)
    assert float(CheckpointOverhead(w, 0, YoungDalyInterval(w, 5 * 3600)).doit()) == pytest.approx(0.024, abs=5e-4)
    # checkpoint debugging: 700 GB over 10 Gbps NFS = 560 s (9.3 min)
    assert float(CheckpointWriteTime(700e9, 1.25e9).doit()) == pytest.approx(560)


def test_recovery_budget():
    # recovery-time-budget notebook: 60 s + 3 min + 3.7 TB at 100 GB/s (37 s) + 2 min = 6.6 min
    r = float(RecoveryTime(60, 180, 3699.2825e9 / 100e9, 120).doit()) / 60
    assert r == pytest.approx(6.6, abs=0.05)
    assert 4.8 * r == pytest.approx(32, abs=0.5)     # minutes lost a day at 10,000 GPUs


def test_availability_numbers():
    # '9s of reliability': 0.9999^10,000 = 0.37; @eq-availability-redundancy: 99 % twice 99.99 %, thrice 99.9999 %
    assert float(AllUpAvailability(0.9999, 10000).doit()) == pytest.approx(0.37, abs=0.005)
    assert float(ReplicatedAvailability(0.99, 2).doit()) == pytest.approx(0.9999, abs=1e-12)
    assert float(ReplicatedAvailability(0.99, 3).doit()) == pytest.approx(0.999999, abs=1e-12)
    # three replicas: 31.5 s of downtime a year
    assert (1 - float(ReplicatedAvailability(0.99, 3).doit())) * 365 * 86400 == pytest.approx(31.5, abs=0.1)


@pytest.mark.parametrize("name", sorted(NEW))
def test_terms_have_notation_units_derivative_and_code(name):
    # shares and probabilities below 1
    check_term(name, NEW[name], lambda name, args: [7 if getattr(x, "is_integer", False) else 0.5 + 0.1 * i
                                                    for i, x in enumerate(args)])


def test_book_macros_are_the_registrys():
    mlsysim = pytest.importorskip("mlsysim")
    for name in NEW:
        t = notation.term(name)
        if t.book:
            assert mlsysim.Symbols.get_by_macro(t.book).latex == t.latex, name


def test_inventory_count_and_split():
    from derivations import book, book_ft
    assert "ft" in book.CHAPTER_MODULES
    inv = book_ft.inventory()
    assert len(inv) == 59
    assert sum(bool(c.entry) for c in inv) == 54 and sum(bool(c.why) for c in inv) == 5
    keys = {e.key for es in book_ft.groups().values() for e in es} | {"effective-throughput"}
    book.inventory_check(inv, keys)
    for es in book_ft.groups().values():
        for e in es:
            e.verify()


# ---- issue 24 (fix2): the rows that were explained although the package prices them -----------------------------
H = 3600


def test_sqrt_learning_rate_is_the_dt_rule_at_the_worker_ratio():
    # FT @eq-lr-scaling: eta_new = eta_base sqrt(N_new / N_base); DT's SqrtScaledLearningRate with k = N_new/N_base
    from mlsysim_sym.terms.training import SqrtScaledLearningRate
    eta, nn, nb = sp.symbols("eta N_new N_base", positive=True)
    assert sp.simplify(SqrtScaledLearningRate(eta, nn / nb).doit() - eta * sp.sqrt(nn / nb)) == 0


def test_sdc_per_step_probability():
    # notebook 'The SDC certainty' (cell SDCCollective): 1 - (1 - 1e-6)^(100,000 x 2/3600) = 0.0056 % (printed to
    # 4 decimals), 'a silent error every 18,000 steps (roughly every 10 hours)'
    p = float(StepEventProbability(1e-6, 100000, 2, H).doit())
    assert round(p * 100, 4) == 0.0056
    assert 1 / p == pytest.approx(18000, rel=1e-3)
    assert 2 / p / H == pytest.approx(10, rel=1e-3)
    # the same as mlsysim's calc_step_event_probability
    from mlsysim.physics.reliability import calc_step_event_probability
    assert p == pytest.approx(calc_step_event_probability(1e-6, 100000, 2), rel=1e-12)


def test_timeout_is_the_books_equation():
    # @eq-timeout-calculation: T_timeout = H + k sigma_d (no worked number)
    h, k, s = sp.symbols("H k sigma_d", positive=True)
    assert sp.simplify(HeartbeatTimeout(h, k, s).doit() - (h + k * s)) == 0


def test_straggler_step_and_the_straggler_tax():
    # display: max(T_rank_0, ..., T_rank_{N-1}) + T_comm; with N - 1 ranks at T and one at T_slow
    tr, ts, tc = sp.symbols("T_r T_s T_c", positive=True)
    assert StragglerStepTime(tr, ts, tc).doit() == sp.Max(tr, tr, ts) + tc
    # without communication it is the model's f_strag on the step (f > 1)
    from mlsysim_sym.terms.communication import straggled
    e = sp.Symbol("e", positive=True)
    assert sp.simplify(StragglerStepTime(tr, (1 + e) * tr, 0).doit() - straggled(tr, 1 + e)) == 0
    # StragglerTax: 1 s step, one GPU at 50 % speed -> 2 s, 0.5 steps/s, 50 % loss; 1,024 GPUs at $3 -> $1,536/h
    step = float(straggled(1.0, 2.0))
    assert step == 2 and float(StragglerStepTime(1, 2, 0).doit()) == 2 and 1 / step == 0.5
    from derivations import book_ft
    assert book_ft._plan("C_train", H / step, step, 1024, 3) * (1 - 1 / step) == pytest.approx(1536)


def test_fit_arithmetic():
    # sec. MTBF and FIT: 50,000 h -> 20,000 FIT; worked example: 4,000 FIT x 1,024 -> about 244 h
    tf = 1e9 * H
    assert float(MtbfFromFit(20000, tf).doit()) == 50000 * H
    assert float(SystemMTBF(MtbfFromFit(4000, tf), 1024).doit()) / H == pytest.approx(244, abs=0.5)
    # HBM: 250 FIT per Mb over 1,024 x 80 x 8 x 1,024 Mb -> 'about 167B FIT', MTBF about 21 s
    mb = 1024 * 80 * 8 * 1024
    hbm = float(SystemMTBF(MtbfFromFit(250, tf), mb).doit())
    assert round(hbm) == 21 and 250 * mb / 1e9 == pytest.approx(167.8, abs=0.05)
    # ECC's 100x: the book prints 35 min; the arithmetic gives 35.8 min (36 rounded), with the GPUs 35.7 min
    ecc = float(SystemMTBF(MtbfFromFit(2.5, tf), mb).doit())
    assert ecc / 60 == pytest.approx(35.77, abs=0.01)
    assert 1 / (1 / ecc + 1 / (tf / 4000 / 1024)) / 60 == pytest.approx(35.68, abs=0.01)


def test_state_shards_dollars_and_kv_cache_entries():
    from derivations import book_ft
    e = {x.key: x for x in book_ft.more_entries()}
    got = {n.what: (n.book, n.package, n.agrees) for k in e for n in e[k].numbers}
    # software faults: 70B x (2 + 2 + 8) B = 840 GB
    assert e["ft-training-state"].numbers[0].package == 840e9
    # checkpoint storm: 2.1 TB / 1,000 = 2.1 GB; 10,000 x 10 GB = 100 TB; shard recap: 3.7 TB / 1,024 = 3.6 GB
    assert [round(n.package / 1e9, 1) for n in e["ft-ckpt-shards"].numbers] == [2.1, 100000.0, 3.6]
    # $1.2M a day (25,000 x $2 x 24 h); 333 GPU-hours, $1,000 a checkpoint, $24,000 a day
    assert [round(n.package) for n in e["ft-dollars"].numbers] == [1200000, 333, 1000, 24000]
    # KV cache: 2 x 80 x 8 x 131,072 x 128 x 2 B = 43 GB; 64 heads 344 GB
    assert [round(n.package / 1e9) for n in e["ft-kv-cache"].numbers] == [43, 344]
    # FIT: the two ECC numbers are the book's off ones (expect=False), every other number agrees
    assert [n.agrees for n in e["ft-fit"].numbers] == [True] * 7 + [False] * 2
    assert all(v[2] for k, v in got.items() if "35 min" not in k)
    for x in e.values():
        x.verify()


# ---- issue 24: priced rows ----------------------------------------------------------------------------------------
def test_ecc_effective_bandwidth_is_the_tables_formula_and_numbers():
    # FT @tbl-memory-bandwidth-protection, cell MemBandwidthProtection (Mu-L/cs249r_book f713da9):
    # effective = base x (1 - ecc_overhead), ecc_overhead = 0.125; GDDR6X "typically none"
    bw, f_ecc = sp.symbols("BW f", positive=True)
    assert sp.simplify(EccEffectiveBandwidth(bw, f_ecc).doit() - bw * (1 - f_ecc)) == 0
    eighth = sp.Rational(1, 8)
    # the table: DDR4-3200 51.2 -> 44.8 GB/s, HBM2 900 -> 787.5, HBM3 1,600 -> 1,400, GDDR6X 760 -> 760
    assert EccEffectiveBandwidth(sp.Rational(512, 10), eighth).doit() == sp.Rational(448, 10)
    assert EccEffectiveBandwidth(900, eighth).doit() == sp.Rational(7875, 10)
    assert EccEffectiveBandwidth(1600, eighth).doit() == 1400
    assert EccEffectiveBandwidth(760, 0).doit() == 760
    # the entry reproduces the four cells, exactly
    from derivations import book_ft
    e = {x.key: x for x in book_ft.priced_entries()}["ft-ecc-bandwidth"].verify()
    assert [x.book for x in e.numbers] == [44.8e9, 787.5e9, 1400e9, 760e9]
    assert all(x.exact for x in e.numbers)


def test_observed_mtbf_of_llama3_and_the_per_gpu_mtbf_it_implies():
    # FT, cluster MTBF worked example (prose before @fig-published-failure-rates): Llama 3, 419 failures across
    # 54 days on 16,384 H100 GPUs, "an observed MTTF of about 3.1 hours" (the figure's cell: llama_mttf = [3.1])
    t, k = sp.symbols("T k", positive=True)
    assert ObservedMTBF(t, k).doit() == t / k
    hours = float(ObservedMTBF(54 * 24, 419).doit())
    assert round(hours, 2) == 3.09 and round(hours, 1) == 3.1
    # the per-GPU MTBF it implies (no number of the book's): SystemMTBF(x, 16,384) = 3.09 h -> 50,677 h, beside the
    # chapter's 50,000 h GPU, whose 1/N curve gives 3.05 h at 16,384 GPUs
    x = sp.Symbol("x", positive=True)
    per_gpu = sp.solve(sp.Eq(SystemMTBF(x, 16384).doit(), ObservedMTBF(54 * 24, 419).doit()), x)[0]
    assert round(float(per_gpu)) == 50677
    assert round(float(SystemMTBF(50000, 16384).doit()), 2) == 3.05
    from derivations import book_ft
    e = {x.key: x for x in book_ft.priced_entries()}["ft-observed-mtbf"].verify()
    assert e.numbers[0].book == 3.1 * H and e.numbers[0].agrees
    inv = {c.where: c for c in book_ft.inventory()}
    assert inv["sec published failure rates (prose)"].entry == "ft-observed-mtbf"
    assert inv["tbl-memory-bandwidth-protection (cell MemBandwidthProtection)"].entry == "ft-ecc-bandwidth"
