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
                                           CheckpointWriteTime, RecoveryTime, ReplicatedAvailability, SystemMTBF,
                                           YoungDalyInterval)
from mlsysim_sym.units import dimension, parse_unit

NEW = {"SystemMTBF": "s", "YoungDalyInterval": "s", "CheckpointWaste": "1",
       "CheckpointOverhead": "1", "CheckpointWriteTime": "s", "RecoveryTime": "s", "AllUpAvailability": "1",
       "ReplicatedAvailability": "1"}
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
    term = notation.term(name)
    call = term_call(term)
    assert type(call) is TERM_CLASSES[name]
    assert sp.latex(call).startswith(term.latex)
    assert dimension(call, {s: notation.entry(s.name).unit for s in call.free_symbols}) == parse_unit(NEW[name])
    args = list(call.args)
    for x in args:
        assert sp.simplify(sp.diff(call, x) - sp.diff(call.doit(), x)) == 0, (name, x)
    values = [7 if getattr(x, "is_integer", False) else 0.5 + 0.1 * i for i, x in enumerate(args)]
    exact = float(call.doit().xreplace(dict(zip(args, [sp.nsimplify(v) for v in values]))))
    for backend in ("numpy", "math"):
        f = sp.lambdify(args, 3 * call, backend)
        assert f(*values) == pytest.approx(3 * exact, rel=1e-13), (name, backend)
    g = sp.lambdify(args, call, "numpy")
    assert np.allclose(g(*[np.array([v, v]) for v in values]), exact, rtol=1e-13)


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
    assert sum(bool(c.entry) for c in inv) == 38 and sum(bool(c.why) for c in inv) == 21
    keys = {e.key for e in book_ft.entries()} | {"effective-throughput"}
    book.inventory_check(inv, keys)
    for e in book_ft.entries():
        e.verify()
