"""Branches and decisions: the smooth expression of a regime and the conditions that select it."""
from __future__ import annotations

import random

import numpy as np
import pytest
import sympy as sp

from mlsysim_sym import DistributedModel, build_model
from mlsysim_sym.branches import DECISIONS, Tie, resolution, resolve
from mlsysim_sym.decisions import labels, model_decisions
from mlsysim_sym.arguments import parameters_of
from mlsysim_sym.model import Variant
from mlsysim_sym.symbols import sym
from mlsysim_sym.terms.base import CeilDiv, FloorDiv, Iverson

x, y = sp.symbols("x y", positive=True)
n, g = sp.symbols("n g", positive=True, integer=True)
GOLDEN = dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)


def point(model="Llama3_70B", fleet="Research_256", **kw):
    return parameters_of(model, fleet, **kw)


def value(expr, values):
    free = sorted(expr.free_symbols, key=str)
    return sp.lambdify(free, expr, "math")(*[values[s] for s in free])


# --------------------------------------------------------------------------------------
# resolve on small expressions
# --------------------------------------------------------------------------------------

def test_each_decision_becomes_its_active_side():
    e = sp.Max(x, 2 * y) + sp.Min(x, y) + sp.Piecewise((x, y > 1), (y, True)) + Iverson(x > y) * x
    smooth, conds = resolve(e, {x: 3.0, y: 0.5})
    assert smooth == 2 * x + 2 * y            # Max -> x, Min -> y, Piecewise -> y, [x > y] -> 1
    assert set(conds) == {x >= 2 * y, y <= x, y <= 1, x > y}
    smooth, conds = resolve(e, {x: 1.0, y: 2.0})
    assert smooth == 2 * y + 2 * x            # Max -> 2y, Min -> x, Piecewise -> x, [x > y] -> 0
    assert set(conds) == {2 * y >= x, x <= y, y > 1}


def test_integer_division_is_frozen_or_relaxed():
    e = sp.Max(1, FloorDiv(n, g)) + CeilDiv(n, g)
    smooth, conds = resolve(e, {n: 12, g: 5})
    assert smooth == 5
    assert set(conds) == {sp.Eq(FloorDiv(n, g), 2, evaluate=False), sp.Eq(CeilDiv(n, g), 3, evaluate=False)}
    smooth, conds = resolve(e, {n: 12, g: 5}, relax=True)
    assert smooth == 2 * n / g and conds == (n / g >= 1,)
    # below one the Max takes the 1: the relaxed form is constant there
    assert resolve(e, {n: 3, g: 5}, relax=True)[0] == 1 + n / g
    kept = resolution(e, {n: 12, g: 5}, freeze=False)
    assert kept.expr == FloorDiv(n, g) + CeilDiv(n, g) and kept.expr.diff(n) == 0


def test_ties_are_reported_with_the_tied_sides():
    r = resolution(sp.Max(x, 2 * y, y), {x: 2.0, y: 1.0 + 1e-12})        # x and 2y within 1e-9
    assert r.ties == (Tie(sp.Max(x, 2 * y, y), None, r.ties[0].indices),) and len(r.ties[0].indices) == 2
    assert {sp.Max(x, 2 * y, y).args[i] for i in r.ties[0].indices} == {x, 2 * y}
    r = resolution(sp.Piecewise((x, y > 1), (2 * x, True)), {x: 1.0, y: 1.0})
    assert r.ties == (Tie(r.ties[0].decision, y > 1, ()),) and r.expr == 2 * x
    assert resolution(sp.Max(x, y), {x: 2.0, y: 1.0}).ties == ()
    # an equality is not a kink: it has no two sides
    assert resolution(sp.Piecewise((x, sp.Eq(n, 1)), (y, True)), {n: 1, x: 1.0, y: 2.0}).ties == ()


def test_given_choices_and_partial_resolution():
    e = sp.Max(x, y) + sp.Piecewise((x, n > 1), (y, True))
    r = resolution(e, None, choices={sp.Max(x, y): 1, e.args[1] if isinstance(e.args[1], sp.Piecewise)
                                     else e.args[0]: 0}, conditions=False)
    assert r.expr == x + y
    pw = next(a for a in e.args if isinstance(a, sp.Piecewise))
    kept = resolution(e, {x: 1.0, y: 2.0, n: 3}, only=lambda d: isinstance(d, sp.Max))
    assert kept.expr == y + pw
    with pytest.raises(ValueError, match="no parameter values"):
        resolution(e, None)
    with pytest.raises(KeyError, match="no value given for parameter y"):
        resolve(e, {x: 1.0, n: 2})


# --------------------------------------------------------------------------------------
# resolve on the model
# --------------------------------------------------------------------------------------

def test_the_resolved_model_is_smooth_and_exact_at_the_point():
    variant, values = point(**GOLDEN)
    r = DistributedModel().solve("Llama3_70B", "Research_256", **GOLDEN)
    m = build_model(variant)
    for name, expect in (("mfu", r.mfu), ("T_step", r.step_latency_total), ("M_acc", r.node_profile.memory_footprint)):
        smooth, conds = resolve(m[name], values)
        assert not smooth.has(*DECISIONS, FloorDiv, CeilDiv)
        assert value(smooth.doit(), values) == pytest.approx(expect, rel=1e-12)
        for c in conds:                                 # every condition holds at the point
            assert bool(c.subs({k: v for k, v in values.items() if v is not None})) is True, c
    relaxed, _ = resolve(m["mfu"], values, relax=True)
    assert not relaxed.has(FloorDiv, CeilDiv)
    # 256 / 8 is exact: relaxed and frozen agree at this point
    assert value(relaxed.doit(), values) == pytest.approx(r.mfu, rel=1e-12)


def test_conditions_separate_regimes():
    variant, compute_bound = point(**GOLDEN)
    _, conds = resolve(build_model(variant)["T_node"], compute_bound)
    assert any("T_compute" in str(c) or "R" in str(c) for c in conds)
    memory_bound = {**compute_bound, sym.BW_hbm: 1e9}
    subs = {k: v for k, v in memory_bound.items() if v is not None}
    assert not all(bool(c.subs(subs)) for c in conds)
    smooth_m, _ = resolve(build_model(variant)["T_node"], memory_bound)
    assert sym.BW_hbm in smooth_m.free_symbols and sym.eta not in smooth_m.free_symbols


def test_model_decisions_vectorized_choices_equal_scalar_ones():
    variant, base = point(**GOLDEN)
    md = model_decisions(variant)
    rng = random.Random(1)
    configs = []
    for _ in range(60):
        v = dict(base)
        v[sym.BW_hbm] = base[sym.BW_hbm] * rng.choice([1, 0.01, 0.001])
        v[sym.CAP] = base[sym.CAP] * rng.choice([1, 0.2])
        v[sym.f_s] = rng.choice([0.8, 1.0, 1.3])
        v[sym.tp], v[sym.pp] = rng.choice([(1, 1), (2, 4), (8, 4), (16, 2)])
        v[sym.ov] = rng.choice([0, 1])
        configs.append(v)
    arrays = {s: (np.array([c[s] for c in configs], dtype=float) if base[s] is not None else None) for s in base}
    vec = md.data(arrays, "numpy")
    for j, c in enumerate(configs):
        one = md.data(c)
        for i, d in enumerate(md.decisions):
            column = [np.broadcast_to(a, (len(configs),))[j] for a in vec[i]]
            assert int(d.choose(one[i])) == int(np.broadcast_to(d.choose(vec[i]), (len(configs),))[j]) \
                == int(d.choose(column)), (i, d.quantity)


def test_labels_name_the_regime():
    variant, values = point(**GOLDEN)
    md = model_decisions(variant)
    data = md.data(values)
    names = set(labels(md, md.choices(data), values).values()) - {None}
    assert names == {"fits in HBM", "compute-bound", "DP ring on the fabric", "TP on NVLink", "DP not overlapped",
                     "no straggler (f_strag ≤ 1)"}
    assert md.closure("M_acc")[-1] == "M_acc" and "T_node" not in md.closure("M_acc")
    assert set(md.decisions_of("M_acc")) < set(md.decisions_of("mfu"))


def test_generic_variant_with_memory_tiers():
    variant = Variant("generic", explicit_weights=False, sram=True, flash=True)
    md = model_decisions(variant)
    bw = [d for d in md.decisions if d.quantity == "BW_eff" and isinstance(d.node, sp.Piecewise)][0]
    assert len(bw.node.args) == 4 and sym.CAP_sram in bw.moves_with
