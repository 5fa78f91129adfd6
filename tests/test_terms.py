"""Cost terms: one definitional check per named term, with hand-computed numbers."""
import math

import numpy as np
import pytest
import sympy as sp

from mlsysim_sym.compile import compile_quantities
from mlsysim_sym.model import Variant
from mlsysim_sym.symbols import sym
from mlsysim_sym.terms.base import CeilDiv, FloorDiv, Iverson, select
from mlsysim_sym.terms.collectives import AllToAll, HierarchicalAllReduce, RingAllReduce
from mlsysim_sym.terms.pipeline import BubbleFraction, BubbleTime, in_flight_divisor

M, n, b, a = sp.symbols("M n beta alpha", positive=True)


def test_ring_allreduce_definition():
    assert RingAllReduce(M, n, b, a).doit() == 2 * (n - 1) / n * M / b + 2 * (n - 1) * a
    # 1 GB over 8 ranks at 100 GB/s, 5 us: 2*7/8*0.01 s + 14*5e-6 s = 0.0175 + 0.00007
    assert float(RingAllReduce(1e9, 8, 1e11, 5e-6).doit()) == pytest.approx(0.01757, rel=1e-14)
    assert RingAllReduce(M, 1, b, a).doit() == 0          # a group of one costs nothing


def test_all_to_all_definition():
    # (4-1)/4 * 4e9 B / 5e10 B/s + 3 * 5e-6 s = 0.06 + 1.5e-5
    assert float(AllToAll(4e9, 4, 5e10, 5e-6).doit()) == pytest.approx(0.060015, rel=1e-14)
    assert AllToAll(M, 1, b, a).doit() == 0


def test_hierarchical_allreduce_definition():
    # 2 nodes x 4 ranks, 8e9 B: intra 2*(3/4*8e9/4.5e11 + 3*5e-7) = 0.0266666..+3e-6,
    # inter ring on 2e9 B over 2 nodes at 5e10: 2*(1/2)*2e9/5e10 + 2*5e-6 = 0.04 + 1e-5
    t = HierarchicalAllReduce(8e9, 2, 4, 4.5e11, 5e-7, 5e10, 5e-6).doit()
    assert float(t) == pytest.approx(2 * (0.75 * 8e9 / 4.5e11 + 1.5e-6) + 0.04 + 1e-5, rel=1e-14)


def test_bubble_definitions():
    p, v, m, T = sp.symbols("p v m T", positive=True)
    assert BubbleFraction(4, 1, 8).doit() == sp.Rational(3, 11)     # (4-1)/(8+4-1)
    assert BubbleTime(T, 4, 2, 3).doit() == T / 2                   # T*(4-1)/(2*3)
    assert BubbleFraction(1, v, m).doit() == 0
    # b/(1-b) equals (p-1)/(v m): the added-time form is the fraction's odds
    bf = BubbleFraction(p, v, m).doit()
    assert sp.simplify(bf / (1 - bf) - BubbleTime(1, p, v, m).doit()) == 0


def test_named_terms_differentiate_like_their_formula():
    expr = RingAllReduce(M, n, b, a)
    assert sp.simplify(expr.diff(b) - expr.doit().diff(b)) == 0
    assert sp.simplify(expr.diff(n) - expr.doit().diff(n)) == 0


def test_in_flight_divisor():
    assert in_flight_divisor(8, 4) == 2          # max(1, 8 // 4)
    assert in_flight_divisor(3, 4) == 1          # max(1, 0)
    assert in_flight_divisor(32, 1) == 1         # no pipeline: 1, not m


def test_integer_division_is_exact_where_a_reciprocal_rounds():
    # common-subexpression elimination: floor(1502 * 580 / 435580) computed as 1502*580*(1/435580) gives
    # 1.9999999999999998 -> 1. Here N = 43558 * 10 = 435580 accelerators, G = 580, dp = 751,
    # B = 1502 -> local batch exactly 2.
    assert FloorDiv(1502, 751) == 2
    values = {"n_nodes": 43558, "apn": 10, "tp": 58, "pp": 5, "ep": 2, "B": 1502}
    for backend in ("math", "numpy"):
        c = compile_quantities(Variant(), ("dp", "lb"), backend)
        out = c.evaluate({getattr(sym, k): (float(v) if backend == "numpy" else v) for k, v in values.items()})
        assert out["dp"] == 751 and out["lb"] == 2


def test_floor_and_ceil_div_print_exact_integer_code():
    x, y = sp.symbols("x y", positive=True, integer=True)
    f = sp.lambdify((x, y), [FloorDiv(x, y), CeilDiv(x, y)], "numpy", cse=True)
    fl, ce = f(np.array([7.0, 8.0, 1e15 + 1]), np.array([2.0, 2.0, 2.0]))
    assert fl.tolist() == [3.0, 4.0, 5e14] and ce.tolist() == [4.0, 4.0, 5e14 + 1]
    g = sp.lambdify((x, y), [FloorDiv(x, y), CeilDiv(x, y)], "math", cse=True)
    # FloorDiv is Python's exact //; CeilDiv is mlsysim's math.ceil(a / b): one correctly rounded division,
    # exact below 2**53 (beyond, the float quotient: 10**17 + 1 over 2 rounds to 5e16, as mlsysim computes)
    assert g(10**17 + 1, 2) == [5 * 10**16, 5 * 10**16]
    assert g(2**52 + 1, 2) == [2**51, 2**51 + 1]
    # a fractional divisor (mlsysim accepts gradient_accumulation_steps=1.4): the float quotient 14 / 1.4 is
    # 10.0, so mlsysim's math.ceil(batch / (dp * GA)) gives 10, where an exact floor division of the float
    # 1.4 (slightly below 1.4) gives -((-14) // 1.4) = 11
    assert g(14, 1.4)[1] == 10 == math.ceil(14 / 1.4) and -((-14) // 1.4) == 11


def test_iverson_and_select():
    p = sp.Symbol("p", positive=True, integer=True)
    assert Iverson(sp.Integer(2) > 1) == 1 and Iverson(sp.Integer(1) > 1) == 0
    f = sp.lambdify(p, select(p > 1, 10, 20), "numpy")
    assert f(np.array([1.0, 2.0])).tolist() == [20.0, 10.0]
    # the book's indicator, from the notation table, in plain sympy.latex too
    assert sp.latex(Iverson(p > 1)) == r"\mathbf{1}\left\{p > 1\right\}"


def test_numpy_floor_of_one_division_is_exact_below_2_53():
    # the numpy printing floor(a / b) relies on a single correctly rounded division being exact for
    # integers below 2**53; check it against Python's integer // on hard cases (a = k*b - 1, a = k*b)
    rng = np.random.default_rng(7)
    b = rng.integers(1, 2**26, 20000)
    k = rng.integers(1, 2**26, 20000)
    a = np.minimum(k * b, 2**53 - 1) - rng.integers(0, 2, 20000)
    x, y = sp.symbols("x y", positive=True, integer=True)
    f = sp.lambdify((x, y), [FloorDiv(x, y), CeilDiv(x, y)], "numpy")
    fl, ce = f(a.astype(float), b.astype(float))
    assert fl.tolist() == [int(p) // int(q) for p, q in zip(a, b)]
    assert ce.tolist() == [-(-int(p) // int(q)) for p, q in zip(a, b)]
