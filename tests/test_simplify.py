"""Simplification: never crashes, never grows, and every per-regime form equals the model in its regime."""
import math
import random
import warnings
import zlib

import pytest
import sympy as sp

from mlsysim_sym.compile import compile_quantities
from mlsysim_sym.model import Variant, build_model
from mlsysim_sym.branches import evaluate
from mlsysim_sym.arguments import parameters_of
from mlsysim_sym.operating_point import FLAGS, operating_point, regime_forms, tidy
from mlsysim_sym.simplify import (DECOMPOSITION, expand_keeping, floor_depth, shorten, shorten_deep, simplify_model,
                                  size, termwise)
from mlsysim_sym.symbols import BY_SYMBOL, sym
from mlsysim_sym.terms.base import CeilDiv, FloorDiv, Iverson

#: Operating points that between them take every side of the model's decisions.
POINTS = {
    "llama_example": ("Llama3_70B", "Research_256",
                      dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8), {}),
    "mixtral_example": ("Mixtral_8x7B", "Training_1K",
                        dict(batch_size=1024, tp_size=2, ep_size=4, precision="bf16", zero_stage=1,
                             overlap_comm=True, gradient_accumulation_steps=4), {}),
    "gpt3_example": ("GPT3", "Training_1K_A100",
                     dict(batch_size=512, tp_size=16, pp_size=8, microbatch_count=4, v_stages=2, precision="fp8",
                          activation_recomputation=True, is_lora=True), {}),
    "memory_bound_spilling": ("Llama3_8B", "Research_256", dict(batch_size=8), {}),
    "straggler_overlap_hierarchical": ("Llama3_8B", "Research_256",
                                       dict(batch_size=256, tp_size=2, straggler_factor=1.3, overlap_comm=True,
                                            zero_stage=3), {}),
    "tp_on_the_fabric": ("Llama3_70B", "Research_256",
                         dict(batch_size=256, tp_size=16, pp_size=2, microbatch_count=4, zero_stage=2), {}),
    "one_node_nvlink_ring": ("Llama3_8B", "Lab_64_H100", dict(batch_size=64, tp_size=2), {"n_nodes": 1}),
    "generic_workload": ("ResNet50", "Lab_64_A100", dict(batch_size=512, pp_size=2, microbatch_count=4), {}),
}
#: Integer parameters a random point may scale (by 1/2 or 2); the others stay.
SCALED_COUNTS = frozenset({sym.B, sym.m, sym.s, sym.H, sym.L, sym.GA})


def point_values(key):
    model, fleet, kwargs, overrides = POINTS[key]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)    # batch below dp: solve()'s warning, expected here
        variant, values = parameters_of(model, fleet, **kwargs)
    values.update({getattr(sym, k): v for k, v in overrides.items()})
    return variant, values


def nearby(values, rng):
    """A random point near ``values``: reals scaled by up to 35 %, a few counts halved or doubled."""
    out = dict(values)
    for s, v in values.items():
        if v is None or s in FLAGS or isinstance(v, bool) or v == 0:
            continue
        p = BY_SYMBOL[s]
        if p.kind == "count":
            if s in SCALED_COUNTS and rng.random() < 0.5:
                out[s] = max(1, int(v * rng.choice((0.5, 2))))
        elif p.kind in ("real", "constant"):
            out[s] = v * math.exp(rng.uniform(-0.3, 0.3))
    return out


def compiled_values(variant, values):
    m = build_model(variant)
    c = compile_quantities(variant, tuple(m), "math")
    by_name = c.evaluate(values)
    return by_name, {m.quantity(n).symbol: v for n, v in by_name.items()}


def holds(cond, values) -> bool:
    out = cond.xreplace({s: (sp.Integer(v) if isinstance(v, int) and not isinstance(v, bool) else sp.Float(v, 17))
                         for s, v in values.items() if s in cond.free_symbols and v is not None})
    return bool(out)


def close(a, b):
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9 * max(1.0, abs(float(b))) * 1e-6)


# --------------------------------------------------------------------------------------------
# shorten / shorten_deep
# --------------------------------------------------------------------------------------------
def test_shorten_prefers_the_smallest_rewrite_and_never_grows():
    a, b, c = sp.symbols("a b c", positive=True)
    assert shorten(a * b + a * c) == a * (b + c)
    e = a / b + c / b
    assert size(shorten(e)) <= size(e)
    expanded = sp.expand((a + b) ** 6)
    assert size(shorten(expanded)) <= size(expanded)
    assert shorten(sym.tp) is sym.tp and shorten(sp.Eq(sym.tp, 1)) == sp.Eq(sym.tp, 1)


def test_termwise_factors_each_term():
    n, a = sp.symbols("n a", positive=True)
    assert termwise(a * (2 * n - 2) + 4 * n - 4) == 2 * a * (n - 1) + 4 * (n - 1)


def test_shorten_deep_survives_what_crashes_sympy_simplify():
    g, t, x = sp.symbols("g t x", positive=True)
    e = sp.Piecewise((x * g + x * t, sp.Eq(sp.Max(1, g / t), 1)), (x * g / t + x / t, True))
    with pytest.raises(ValueError):        # sympy#17354: the reason this module exists
        sp.simplify(sp.Eq(sp.Max(1, g / t), 1))
    out = shorten_deep(e)
    assert size(out) <= size(e)
    for vals in ({g: 1.0, t: 3.0, x: 2.0}, {g: 5.0, t: 2.0, x: 0.5}):
        assert close(out.xreplace(vals), e.xreplace(vals))


@pytest.mark.parametrize("variant", [Variant(), Variant("generic", True, True, True)], ids=str)
@pytest.mark.parametrize("closed", [False, True], ids=["expanded", "closed"])
def test_whole_model_simplification_never_grows_and_keeps_the_values(variant, closed):
    m = build_model(variant)
    simple = simplify_model(variant, closed)
    assert set(simple) == set(m)
    shrunk = 0
    for n in m:
        original = m.closed_form(n) if closed else m[n]
        assert sp.count_ops(simple[n]) <= sp.count_ops(original), n
        shrunk += size(simple[n]) < size(original)
    assert shrunk >= 10
    keys = ["llama_example", "memory_bound_spilling", "straggler_overlap_hierarchical"] \
        if variant.family == "transformer" else ["generic_workload"]
    rng = random.Random(5)
    for key in keys:
        _, values = point_values(key)
        if variant.sram:
            values.update({sym.CAP_sram: 4e7, sym.BW_sram: 2e13, sym.BW_flash: 5e9})
        if variant.explicit_weights:        # the point's workload sizes its weights as P x element size
            values.update({sym.W_lw: values[sym.P] * values[sym.bpp], sym.W_g: values[sym.P] * values[sym.bpp]})
        for vals in (values, nearby(values, rng)):
            expected, _ = compiled_values(variant, vals)
            for n in m:
                assert close(evaluate(simple[n], vals), expected[n]), (key, n)


# --------------------------------------------------------------------------------------------
# Per regime
# --------------------------------------------------------------------------------------------
def _inside(p, rng, want=3, tries=30):
    """Random points near ``p`` where every condition of its regime holds (flags unchanged)."""
    conds = [c for n in p.model for c in p[n].conditions]
    found = []
    for _ in range(tries):
        vals = nearby(p.params, rng)
        by_name, by_symbol = compiled_values(p.model.variant, vals)
        if all(holds(c, {**vals, **by_symbol}) for c in conds):
            found.append((vals, by_name, by_symbol))
            if len(found) == want:
                break
    assert len(found) == want, f"only {len(found)} random points inside the regime"
    return found


@pytest.mark.parametrize("key", list(POINTS))
def test_each_regime_form_equals_the_model_inside_its_regime_and_is_no_larger(key):
    variant, values = point_values(key)
    p = operating_point(values, variant)
    names = list(p.model) if key.endswith("example") else \
        ["T_node", "T_dp_allreduce", "T_tp_allreduce", "BW_eff", "M_acc", "T_dp_exposed", "T_step", "mfu"]
    names = [n for n in names if n in p.model]
    forms = {}
    for n in names:
        for keep in ((), DECOMPOSITION):
            short, raw = p.closed(n, keep), p.closed(n, keep, simplified=False)
            assert sp.count_ops(short) <= sp.count_ops(raw), (n, keep)
            assert not short.has(sp.Max, sp.Min, sp.Piecewise, Iverson), (n, short)
            forms[n, keep] = short
    inside = _inside(p, random.Random(zlib.crc32(key.encode())))
    for vals, by_name, by_symbol in [(p.params, *compiled_values(variant, p.params))] + inside:
        for (n, keep), form in forms.items():
            assert close(evaluate(form, {**vals, **by_symbol}), by_name[n]), (key, n, keep)


def test_regime_values_and_forms_at_a_point():
    variant, values = point_values("llama_example")
    p = operating_point(values, variant)
    assert p.value("dp") == 8 and p.value("lb") == 32 and p.value("feasible") is True
    assert math.isclose(p.value("T_step"), 3.368626711354994, rel_tol=1e-12)
    assert p["T_node"].structured == p.model.quantity("T_compute").symbol + p.model.quantity("T_overhead").symbol
    conds = [str(c) for c in p.conditions("T_node")]
    assert "T_compute >= T_memory" in conds
    assert p.closure("T_node")[-1] == "T_node" and "N" in p.closure("T_node")
    forms = regime_forms(p, ["T_compute"])
    assert str(forms["T_compute"][0]) == "3*F*lb*s/(G*R_peak*eta)"
    flags = dict(p.signature)
    assert flags["flag:z"] == (0,) and flags["T_node"] == (0,)


def test_conditions_read_well():
    assert str(tidy(sp.GreaterThan(1, FloorDiv(sym.m, sym.pp)))) == "FloorDiv(m, pp) <= 1"
    assert tidy(sp.Not(sp.And(sym.tp > 1, sym.pp > 1))) == sp.Or(sym.tp <= 1, sym.pp <= 1)


def test_expand_keeping_and_floor_depth():
    m = build_model()
    lb = expand_keeping(m, "lb", ("dp",))
    assert lb == sp.Max(1, FloorDiv(sym.B, m.quantity("dp").symbol))
    assert floor_depth(m["lb"]) == 2 and floor_depth(lb) == 1 and floor_depth(sym.B) == 0
    assert floor_depth(CeilDiv(sym.L, sym.pp)) == 1


def test_parameters_of_takes_solve_defaults_and_rejects_unknown_keywords():
    variant, values = parameters_of("Llama3_70B", "Research_256", batch_size=256)
    assert variant == Variant() and values[sym.eta] == 0.5 and values[sym.s] == 2048 and values[sym.ov] == 0
    with pytest.raises(TypeError, match="parameters_of\\(\\) got an unexpected keyword argument 'batchsize'"):
        parameters_of("Llama3_70B", "Research_256", batchsize=256)
