"""Every kind of argument a sweep may be given: a bad value is masked with solve()'s message (alone or in an
array), a kind a sweep cannot read is one TypeError (a shape it cannot use one ValueError) naming the argument,
never an error from deep inside numpy or the generated code; a SweepResult pickles.

The probe below is the one of issue 23 ("16 of 75 kinds end deep inside numpy or generated code"), written out:
each kind states what must come back. Where a sweep reads the value, each configuration is checked against
solve() at that configuration (its message where it refuses, its MFU where it prices: solve() equals mlsysim,
tests/test_parity.py), or against the message worked out by hand in the comment.
"""
from __future__ import annotations

import datetime
import math
import pickle
import warnings
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from mlsysim_sym import DistributedModel, sweep

M, F = "Llama3_70B", "Research_256"          # 256 accelerators, 8 per node
BASE = dict(batch_size=256)


class Same:
    """Each configuration as solve() at the scalar keywords of that configuration (``per``, in C order)."""

    def __init__(self, *per, shape=None):
        self.per, self.shape = per, shape


class Reasons:
    """The masks worked by hand: the reason of each configuration ('' where valid), in C order."""

    def __init__(self, *reasons, shape=None):
        self.reasons, self.shape = reasons, shape


class Raises:
    def __init__(self, error, match):
        self.error, self.match = error, match


def _gen():
    return (x for x in (1, 8))


with warnings.catch_warnings():
    warnings.simplefilter("ignore", PendingDeprecationWarning)      # numpy discourages the matrix class
    MATRIX = np.matrix([[1, 8]])


INF_BW = "bandwidth_bytes_s must be positive, got -inf B/s"      # mlsysim's ring helper, as solve() says it
OVER = "the result overflows or divides by zero (an extreme input)"
KINDS = [
    # ---- one number: masked (never raised) where solve() refuses it -----------------------------------------
    ("int", dict(tp_size=8), Same(dict(tp_size=8))),
    ("whole float", dict(tp_size=8.0), Same(dict(tp_size=8.0))),
    ("fraction of a split", dict(tp_size=2.5), Same(dict(tp_size=2.5))),
    ("zero", dict(tp_size=0), Same(dict(tp_size=0))),
    ("negative", dict(tp_size=-4), Same(dict(tp_size=-4))),
    ("huge int", dict(tp_size=10 ** 30), Same(dict(tp_size=10 ** 30))),
    ("int beyond the float range", dict(tp_size=10 ** 400), Same(dict(tp_size=10 ** 400))),
    ("True as a count", dict(tp_size=True), Same(dict(tp_size=True))),
    ("False as a count", dict(tp_size=False), Same(dict(tp_size=False))),
    ("nan", dict(efficiency=math.nan), Same(dict(efficiency=math.nan))),
    ("inf", dict(efficiency=math.inf), Same(dict(efficiency=math.inf))),
    ("-inf field", dict(fabric_bandwidth=-math.inf), Reasons(INF_BW)),
    ("tiny field", dict(fabric_bandwidth=1e-300), Reasons(OVER)),
    ("numpy int", dict(tp_size=np.int64(8)), Same(dict(tp_size=8))),
    ("numpy float32", dict(efficiency=np.float32(0.5)), Same(dict(efficiency=np.float32(0.5)))),
    ("numpy bool", dict(tp_size=np.bool_(True)), Same(dict(tp_size=1))),
    ("0-d array", dict(tp_size=np.array(8)), Same(dict(tp_size=8))),
    # a switch as text: "no" is true, so mlsysim would switch the overlap on; solve() refuses it, naming it
    ("switch as text", dict(overlap_comm="no"),
     Raises(TypeError, r"^overlap_comm must be a bool \(True or False, or 1 or 0\), got str 'no'$")),
    ("switch None", dict(is_lora=None), Same(dict(is_lora=None))),
    # ---- one value that is no number: solve()'s TypeError, naming it ----------------------------------------
    ("complex", dict(efficiency=0.3 + 0.1j), Raises(TypeError, r"^efficiency must be a real number, got complex$")),
    ("str", dict(tp_size="8"), Raises(TypeError, r"^tp_size must be a real number, got str$")),
    ("str field", dict(fabric_bandwidth="5e10"), Raises(TypeError, r"^fabric_bandwidth must be a real number, got str$")),
    ("bytes", dict(tp_size=b"8"), Raises(TypeError, r"^tp_size must be a real number, got bytes$")),
    ("None", dict(tp_size=None), Raises(TypeError, r"^tp_size must be a real number, got NoneType$")),
    ("Fraction", dict(efficiency=Fraction(1, 2)), Raises(TypeError, r"^efficiency must be a real number, got Fraction$")),
    ("Decimal", dict(efficiency=Decimal("0.5")), Raises(TypeError, r"^efficiency must be a real number, got Decimal$")),
    ("object", dict(tp_size=object()), Raises(TypeError, r"^tp_size must be a real number, got object$")),
    ("bool where solve() takes none", dict(efficiency=True), Raises(TypeError, r"^efficiency must be a number, got bool$")),
    ("0-d array of text", dict(tp_size=np.array("8")), Raises(TypeError, r"^tp_size must be a real number, got str$")),
    # ---- arrays of numbers: an axis each, bad values masked -------------------------------------------------
    ("list", dict(tp_size=[1, 3, 8]), Same(dict(tp_size=1), dict(tp_size=3), dict(tp_size=8))),
    ("tuple", dict(tp_size=(2, 8)), Same(dict(tp_size=2), dict(tp_size=8))),
    ("range", dict(pp_size=range(1, 4)), Same(dict(pp_size=1), dict(pp_size=2), dict(pp_size=3))),
    ("int array", dict(tp_size=np.array([1, 8])), Same(dict(tp_size=1), dict(tp_size=8))),
    ("float array", dict(efficiency=np.array([0.25, 0.5])), Same(dict(efficiency=0.25), dict(efficiency=0.5))),
    ("list of bools as counts", dict(tp_size=[True, False]), Same(dict(tp_size=True), dict(tp_size=False))),
    ("bool array as counts", dict(tp_size=np.array([True, False])), Same(dict(tp_size=True), dict(tp_size=False))),
    ("bools among counts", dict(tp_size=[False, 8]), Same(dict(tp_size=False), dict(tp_size=8))),
    ("list with nan", dict(efficiency=[math.nan, 0.5]), Same(dict(efficiency=math.nan), dict(efficiency=0.5))),
    ("list with inf", dict(efficiency=[math.inf]), Same(dict(efficiency=math.inf))),
    ("list with zero", dict(tp_size=[0, 8]), Same(dict(tp_size=0), dict(tp_size=8))),
    ("list with a huge int", dict(tp_size=[10 ** 30, 8]), Same(dict(tp_size=10 ** 30), dict(tp_size=8))),
    ("list beyond the float range", dict(tp_size=[10 ** 400]), Same(dict(tp_size=10 ** 400))),
    ("ints and floats", dict(tp_size=[1, 8.0]), Same(dict(tp_size=1), dict(tp_size=8.0))),
    ("empty list", dict(tp_size=[]), Same(shape=(0,))),
    ("empty tuple", dict(efficiency=()), Same(shape=(0,))),
    ("object array of ints", dict(tp_size=np.array([1, 8], dtype=object)), Same(dict(tp_size=1), dict(tp_size=8))),
    ("list of numpy scalars", dict(tp_size=[np.int64(1), np.int32(8)]), Same(dict(tp_size=1), dict(tp_size=8))),
    ("float16 array", dict(efficiency=np.array([0.5], dtype=np.float16)), Same(dict(efficiency=0.5))),
    ("uint8 array", dict(tp_size=np.array([8, 3], dtype=np.uint8)), Same(dict(tp_size=8), dict(tp_size=3))),
    ("switches as text", dict(overlap_comm=[1, "no"]),
     Raises(TypeError, r"^overlap_comm must be a bool \(True or False, or 1 or 0\), got str 'no'$")),
    ("switches as 0/1", dict(is_lora=np.array([0, 1])), Same(dict(is_lora=0), dict(is_lora=1))),
    ("field array", dict(fabric_bandwidth=[-math.inf, 1e-300]), Reasons(INF_BW, OVER)),
    # ---- arrays a sweep cannot read: one error naming the argument ------------------------------------------
    ("list of text", dict(tp_size=["1", "8"]), Raises(TypeError, r"^tp_size must be a real number, got str \(element 0")),
    ("text among numbers", dict(tp_size=[1, "8"]), Raises(TypeError, r"^tp_size must be a real number, got str \(element 1")),
    ("None among numbers", dict(tp_size=[1, None]), Raises(TypeError, r"^tp_size must be a real number, got NoneType")),
    ("complex list", dict(efficiency=[0.3 + 0.1j]), Raises(TypeError, r"^efficiency must be a real number, got complex")),
    ("complex array", dict(efficiency=np.array([0.5 + 0j])), Raises(TypeError, r"^efficiency must be a real number, got complex")),
    ("bytes array", dict(tp_size=np.array([b"8"])), Raises(TypeError, r"^tp_size must be a real number, got bytes")),
    ("text array", dict(tp_size=np.array(["8"])), Raises(TypeError, r"^tp_size must be a real number, got str")),
    ("object array with text", dict(tp_size=np.array([1, "a"], dtype=object)),
     Raises(TypeError, r"^tp_size must be a real number, got str \(element 1")),
    ("datetime array", dict(tp_size=np.array(["2024-01-01"], dtype="datetime64[D]")),
     Raises(TypeError, r"^tp_size must be a real number, got date")),
    ("timedelta array", dict(tp_size=np.array([1], dtype="timedelta64[s]")),
     Raises(TypeError, r"^tp_size must be a real number, got timedelta")),
    ("Fractions in a list", dict(efficiency=[Fraction(1, 2)]), Raises(TypeError, r"^efficiency must be a real number, got Fraction")),
    ("bools among efficiencies", dict(efficiency=[True, 0.5]), Raises(TypeError, r"^efficiency must be a number, got bool")),
    ("bool array of efficiencies", dict(efficiency=np.array([True])), Raises(TypeError, r"^efficiency must be a number, got bool")),
    ("ragged list", dict(tp_size=[[1, 2], [8]]), Raises(TypeError, r"^sweep\(\): tp_size is a ragged list")),
    ("list in a list", dict(tp_size=[1, [2]]), Raises(TypeError, r"^sweep\(\): tp_size is a ragged list")),
    ("2-D list in a grid", dict(tp_size=[[1, 2], [4, 8]]), Raises(ValueError, r"^sweep\(\): tp_size must be one-dimensional")),
    ("2-D array in a grid", dict(tp_size=np.ones((2, 1))), Raises(ValueError, r"^sweep\(\): tp_size must be one-dimensional")),
    ("matrix", dict(tp_size=MATRIX), Raises(TypeError, r"^sweep\(\): tp_size must be a plain numpy array, not matrix")),
    ("masked array", dict(tp_size=np.ma.masked_array([1, 8], mask=[0, 1])),
     Raises(TypeError, r"^sweep\(\): tp_size must be a plain numpy array, not MaskedArray")),
    ("generator", dict(tp_size=_gen()), Raises(TypeError, r"^sweep\(\): tp_size must be a number or a list, tuple, range or numpy array of numbers, got generator$")),
    ("iterator", dict(tp_size=iter([1, 8])), Raises(TypeError, r"^sweep\(\): tp_size must be .* got list_iterator$")),
    ("map", dict(tp_size=map(int, "18")), Raises(TypeError, r"^sweep\(\): tp_size must be .* got map$")),
    ("set", dict(tp_size={1, 8}), Raises(TypeError, r"^sweep\(\): tp_size must be .* got set$")),
    ("frozenset", dict(tp_size=frozenset({8})), Raises(TypeError, r"^sweep\(\): tp_size must be .* got frozenset$")),
    ("dict", dict(tp_size={1: 8}), Raises(TypeError, r"^sweep\(\): tp_size must be .* got dict$")),
    ("dict keys", dict(tp_size={1: 8}.keys()), Raises(TypeError, r"^sweep\(\): tp_size must be .* got dict_keys$")),
    ("memoryview", dict(tp_size=memoryview(b"\x01")), Raises(TypeError, r"^sweep\(\): tp_size must be .* got memoryview$")),
    ("generator of switches", dict(overlap_comm=(x for x in (True,))), Raises(TypeError, r"^sweep\(\): overlap_comm must be .* got generator$")),
    # ---- the precision: strings, masked per value as solve() refuses them -----------------------------------
    ("no precision at all", dict(precision=[]), Same(shape=(0,))),
    ("precision list", dict(precision=["fp16", "BF16"]), Same(dict(precision="fp16"), dict(precision="BF16"))),
    ("precision tuple", dict(precision=("fp8", "fp64")), Same(dict(precision="fp8"), dict(precision="fp64"))),
    ("precision array", dict(precision=np.array(["int8", "fp32"])), Same(dict(precision="int8"), dict(precision="fp32"))),
    ("precision not a string", dict(precision=["fp16", 16]), Same(dict(precision="fp16"), dict(precision=16))),
    ("precision None", dict(precision=None), Same(dict(precision=None))),
    ("precision generator", dict(precision=(p for p in ("fp16",))), Raises(TypeError, r"^sweep\(\): precision must be a string or a list")),
    ("precision set", dict(precision={"fp16"}), Raises(TypeError, r"^sweep\(\): precision must be a string or a list")),
    ("nested precision", dict(precision=[["fp16"]]), Raises(TypeError, r"^sweep\(\): precision must be a string or a flat list")),
    # ---- the sweep's own options --------------------------------------------------------------------------
    ("grid as text", dict(tp_size=[1, 8], grid="no"), Raises(TypeError, r"^sweep\(\): grid must be True or False, got 'no'$")),
    ("outputs as a number", dict(tp_size=[1, 8], outputs=5), Raises(TypeError, r"^sweep\(\): outputs must be an output's name")),
    ("outputs as a set", dict(outputs={"mfu"}), Raises(TypeError, r"^sweep\(\): outputs must be an output's name")),
    ("fidelity as a list", dict(fidelity=["mlsysim"]), Raises(ValueError, r"^fidelity must be one of")),
]

#: grid=False: arrays broadcast together, or one ValueError naming them
FLAT = [
    ("same lengths", dict(tp_size=[1, 8], pp_size=[4, 2]), Same(dict(tp_size=1, pp_size=4), dict(tp_size=8, pp_size=2))),
    ("broadcast 2-D with 1-D", dict(tp_size=np.array([[1], [8]]), pp_size=[1, 2, 3]),
     Same(*(dict(tp_size=t, pp_size=p) for t in (1, 8) for p in (1, 2, 3)), shape=(2, 3))),
    ("scalar with arrays", dict(tp_size=8, pp_size=[1, 4]), Same(dict(tp_size=8, pp_size=1), dict(tp_size=8, pp_size=4))),
    ("mismatched lengths", dict(tp_size=[1, 2], pp_size=[1, 2, 4]),
     Raises(ValueError, r"^sweep\(grid=False\): the arrays do not broadcast together \(tp_size \(2,\), pp_size \(3,\)\)")),
    ("mismatched with a field", dict(tp_size=[1, 2], fabric_bandwidth=np.ones(3)),
     Raises(ValueError, r"tp_size \(2,\), fabric_bandwidth \(3,\)")),
]


def _solve(kw):
    """``("ok", mfu)`` or ``("refused", message)`` of solve() at one configuration."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", DistributedModel().solve(M, F, **{**BASE, **kw}).mfu
    except (ValueError, TypeError) as exc:
        return "refused", str(exc)


def _run(kw, grid, expect):
    kw = dict(kw)
    grid = kw.pop("grid", grid)
    if isinstance(expect, Raises):
        with pytest.raises(expect.error, match=expect.match) as info:
            sweep(M, F, grid=grid, **{**BASE, **kw})
        assert "\n" not in str(info.value)
        return
    r = sweep(M, F, grid=grid, **{**BASE, **kw})
    reasons = np.atleast_1d(np.asarray(r.reason, dtype=object)).ravel().tolist()
    mfu = np.atleast_1d(np.asarray(r["mfu"])).ravel()
    valid = np.atleast_1d(np.asarray(r.valid)).ravel()
    if isinstance(expect, Reasons):
        assert reasons == list(expect.reasons)
    else:
        assert len(reasons) == len(expect.per)
        for i, one in enumerate(expect.per):
            what, value = _solve(one)
            if what == "refused":
                assert not valid[i] and reasons[i] == value, (one, reasons[i], value)
                assert math.isnan(mfu[i])
            else:
                assert valid[i] and reasons[i] == "", (one, reasons[i])
                assert mfu[i] == pytest.approx(value, rel=1e-12), one
    if expect.shape is not None:
        assert r.shape == expect.shape


@pytest.mark.parametrize("kw, expect", [pytest.param(k, e, id=i) for i, k, e in KINDS])
def test_every_kind_of_argument_in_a_grid(kw, expect):
    _run(kw, True, expect)


@pytest.mark.parametrize("kw, expect", [pytest.param(k, e, id=i) for i, k, e in FLAT])
def test_every_kind_of_argument_flattened(kw, expect):
    _run(kw, False, expect)


def test_the_probe_covers_75_kinds_and_each_refusal_names_its_argument():
    assert len(KINDS) + len(FLAT) >= 75
    for _, kw, expect in KINDS + FLAT:
        if isinstance(expect, Raises):
            named = [k for k in kw if k not in ("batch_size",)]
            assert any(k in expect.match for k in named), (kw, expect.match)


def test_a_bad_value_is_masked_alike_alone_and_in_a_list():
    # the three reproducers of issue 23 (a scalar raised ZeroDivisionError, OverflowError, AttributeError where the
    # same value in a list was masked): the scalar's mask and message are the list's
    for value in (0, 10 ** 30, True, False, -1, 2.5, math.nan, math.inf, 10 ** 400):
        one = sweep(M, F, batch_size=256, tp_size=value)
        many = sweep(M, F, batch_size=256, tp_size=[value])
        assert one.shape == () and many.shape == (1,)
        assert bool(one.valid) == bool(many.valid[0]) and one.reason == many.reason[0], value
    # worked by hand: tp 0 breaks mlsysim's first check; 10**30 > 256 accelerators; True is tp 1 (solve() prices it)
    assert sweep(M, F, batch_size=256, tp_size=0).reason == "tp_size must be >= 1, got 0"
    assert sweep(M, F, batch_size=256, tp_size=10 ** 30).reason == \
        "Infeasible 4D Parallelism: TP(1000000000000000000000000000000) * PP(1) * EP(1) > Total(256)"
    assert sweep(M, F, batch_size=256, tp_size=True).mfu == sweep(M, F, batch_size=256, tp_size=1).mfu


def test_integers_beside_floats_in_a_list_keep_their_messages_and_numbers():
    # numpy would make [3, 1.5] floats, and the message TP(3.0); solve(tp_size=3) says TP(3), as each element
    # alone does; the valid elements (8 and 4.0) price as solve() prices them
    values = [3, 1.5, 8, 4.0]
    many = sweep(M, F, batch_size=256, tp_size=values)
    for i, v in enumerate(values):
        one = sweep(M, F, batch_size=256, tp_size=v)
        assert bool(many.valid[i]) == bool(one.valid) and many.reason[i] == one.reason, v
    assert many.reason[0].startswith("Infeasible 4D Parallelism: TP(3) * PP(1)")
    assert many.reason[1].startswith("Infeasible 4D Parallelism: TP(1.5) * PP(1)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert [float(many.mfu[i]) for i in (2, 3)] == [DistributedModel().solve(M, F, batch_size=256, tp_size=v).mfu
                                                        for v in (8, 4.0)]


# ----------------------------------------------------------------------------------------------------------
# Pickling
# ----------------------------------------------------------------------------------------------------------
def _same_result(a, b):
    assert a.shape == b.shape and list(a.values) == list(b.values)
    for n in a.values:
        np.testing.assert_array_equal(np.asarray(a[n]), np.asarray(b[n]), err_msg=n)
    np.testing.assert_array_equal(np.asarray(a.valid), np.asarray(b.valid))
    np.testing.assert_array_equal(np.asarray(a.reason_code), np.asarray(b.reason_code))
    np.testing.assert_array_equal(np.asarray(a.reason, dtype=object), np.asarray(b.reason, dtype=object))
    assert a.reasons == b.reasons and list(a.axes) == list(b.axes)
    for k in a.axes:
        np.testing.assert_array_equal(a.axes[k], b.axes[k])
    assert repr(a) == repr(b) and a.configuration == b.configuration and a.to_dict() == b.to_dict()


@pytest.mark.parametrize("kw", [
    dict(batch_size=np.arange(1, 257), tp_size=[1, 2, 3, 8], pp_size=[1, 4, 7], microbatch_count=[1, 8]),  # masked
    dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8),                                     # one, valid
    dict(batch_size=256, tp_size=0),                                                                    # one, masked
    dict(batch_size=256, pp_size=[1, 2, 4, 8], microbatch_count=[1, 2, 4, 8], outputs=("bubble_fraction",)),
])
def test_a_sweep_result_pickles_and_comes_back_equal(kw):
    r = sweep(M, F, **kw)
    again = pickle.loads(pickle.dumps(r))
    _same_result(r, again)
    assert again.table("mfu" if "mfu" in r.values else "bubble_fraction") == \
        r.table("mfu" if "mfu" in r.values else "bubble_fraction")
    # a result pickled before its messages were asked for, and one pickled twice
    fresh = sweep(M, F, **kw)
    _same_result(r, pickle.loads(pickle.dumps(pickle.loads(pickle.dumps(fresh)))))


def test_a_pickled_result_keeps_small_outputs_small():
    # bubble_fraction depends on pp and m only: 4 x 4 values of a 4096 x 4 x 4 grid (a read-only broadcast view);
    # pickled, it stays 16 numbers, not 65,536 (the grid holds no masked configuration: valid is one True)
    r = sweep(M, F, outputs="bubble_fraction", batch_size=np.arange(1, 4097), pp_size=[1, 2, 4, 8],
              microbatch_count=[1, 2, 4, 8], tp_size=8)
    assert r.valid.all() and r["bubble_fraction"].base.shape == (1, 4, 4)
    data = pickle.dumps(r)
    assert len(data) < 8 * 4096 * 4 * 4 / 4                 # far below one full-size float array
    again = pickle.loads(data)
    _same_result(r, again)
    assert again["bubble_fraction"].strides[0] == 0       # broadcast back, not copied
