"""The symbolic model as a user touches it: sympy.lambdify and subs of any quantity give solve()'s numbers.

The package computes through its own compiler; a user takes ``build_model()[name]``, the
parameter values of a configuration (``parameters_of``) and sympy's own ``lambdify`` or
``subs``. Named cost terms print parenthesized into every printer lambdify picks (math, numpy,
mpmath, the plain Python printer), so ``3*RingAllReduce(...)`` is three ring all-reduces.
"""
from __future__ import annotations

import random
import warnings
from dataclasses import replace
from functools import lru_cache

import numpy as np
import pytest
import sympy as sp

from mlsysim_sym import DistributedModel, build_model, catalog, parameters_of
from mlsysim_sym.model import Variant
from mlsysim_sym.solver import OUTPUTS
from mlsysim_sym.terms.collectives import AllToAll, HierarchicalAllReduce, RingAllReduce
from mlsysim_sym.terms.pipeline import BubbleFraction, BubbleTime

M, n, beta, alpha = sp.symbols("M n beta alpha", positive=True)


def _with_tiers(fleet, **tiers):
    f = catalog.fleet(fleet)
    acc = replace(f.node.accelerator, **tiers)
    return replace(f, node=replace(f.node, accelerator=acc))


#: (workload, fleet) pairs that reach every model variant.
CASES = {
    Variant("transformer"): [("Llama3_70B", "Research_256"), ("Mixtral_8x7B", "Training_1K"),
                             ("GPT3", "Training_1K_A100"), ("Llama3_8B", "Mega_100K")],
    # model_size is used at 2-byte precisions only (Workload.size_in_bytes): see PRECISIONS
    Variant("transformer", explicit_weights=True): [
        (replace(catalog.workload("Llama3_8B"), model_size=2.0e10), "Lab_64_H100")],
    Variant("generic"): [("ResNet50", "Lab_64_A100"), ("Mamba_2_8B", "Research_256")],
    Variant("generic", explicit_weights=True): [("DLRM", "Research_256")],
    Variant("generic", sram=True): [("ResNet50", _with_tiers("Lab_64_H100", sram_capacity=5e7,
                                                               sram_bandwidth=2e13))],
    Variant("generic", flash=True): [("MobileNetV2", _with_tiers("Lab_64_A100", flash_bandwidth=5e11))],
    Variant("generic", True, True, True): [("DLRM", _with_tiers("Lab_64_H100", sram_capacity=1e6,
                                                                  sram_bandwidth=3e13, flash_bandwidth=2e12))],
}


#: Precisions a case may draw (a transformer's model_size makes its weights explicit at 2 bytes only).
PRECISIONS = {Variant("transformer", explicit_weights=True): ["fp16", "bf16"]}


def _configuration(rng, fleet, generic, precisions=("fp16", "bf16", "fp8", "fp32", "int8")):
    f = catalog.fleet(fleet) if isinstance(fleet, str) else fleet
    total = f.total_accelerators
    while True:
        tp, pp, ep = rng.choice([1, 1, 2, 4, 8]), rng.choice([1, 1, 2, 4]), rng.choice([1, 1, 2])
        if generic and rng.random() < 0.4:
            tp = pp = ep = 1                                 # the Engine path, where the tiers act
        if total % (tp * pp * ep) == 0:
            break
    return dict(batch_size=rng.choice([1, 7, 64, 256, 1000, 4096]), tp_size=tp, pp_size=pp, ep_size=ep,
                precision=rng.choice(list(precisions)), efficiency=rng.uniform(0.2, 0.9),
                microbatch_count=rng.choice([1, 2, 4, 8]), v_stages=rng.choice([1, 2]),
                zero_stage=rng.choice([0, 1, 2, 3]), is_lora=rng.random() < 0.3,
                activation_recomputation=rng.random() < 0.5, overlap_comm=rng.random() < 0.5,
                overlap_efficiency=rng.uniform(0, 1), congestion_factor=rng.uniform(0.8, 2.5),
                straggler_factor=rng.choice([1.0, 0.9, 1.3]), moe_routing_imbalance_factor=rng.choice([1.0, 1.4]),
                gradient_accumulation_steps=rng.choice([1, 2, 4]), seq_len=rng.choice([512, 2048, 4096]))


@lru_cache(maxsize=None)
def _lambdified(variant, name, module):
    expr = build_model(variant)[name]
    args = sorted(expr.free_symbols, key=str)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return args, sp.lambdify(args, expr, module)


def _close(a, b):
    a, b = float(a), float(b)
    return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))


def test_named_terms_print_parenthesized_in_every_printer():
    expr = 3 * RingAllReduce(M, n, beta, alpha)       # 3 * (2*1/2*1/1 + 2*1*1) = 9 at (1, 2, 1, 1)
    for module in ("math", "numpy", "mpmath", "sympy"):
        assert float(sp.lambdify((M, n, beta, alpha), expr, module)(1, 2, 1, 1)) == 9.0, module
    assert sp.pycode(expr) == "3*(M*(2*n - 2)/(beta*n) + alpha*(2*n - 2))"
    # each term inside a product: 2 * T(...) is twice the formula
    cases = ((AllToAll(M, n, beta, alpha), (M, n, beta, alpha), (1, 2, 1, 1), 2 * (0.5 + 1)),
             (BubbleFraction(M, n, beta), (M, n, beta), (4, 1, 8), 2 * 3 / 11),         # p=4, v=1, m=8
             (BubbleTime(M, n, beta, alpha), (M, n, beta, alpha), (2, 3, 1, 4), 2 * 2 * 2 / 4),
             # 8 B over 2 nodes of 4 ranks, every link 1 B/s and 1 s: intra 2*(3/4*8 + 3) = 18,
             # inter ring on 8/4 = 2 B over 2 nodes: 2*(1/2)*2 + 2*1 = 4
             (HierarchicalAllReduce(M, n, beta, 1, 1, 1, 1), (M, n, beta), (8, 2, 4), 2 * (18 + 4)))
    for term, symbols, args, value in cases:
        for module in ("math", "numpy", "mpmath"):
            assert float(sp.lambdify(symbols, 2 * term, module)(*args)) == pytest.approx(value, rel=1e-15), term


def test_the_issue_example_mixtral_expert_all_to_all():
    kw = dict(batch_size=1024, tp_size=2, ep_size=4, congestion_factor=1.7)
    r = DistributedModel().solve("Mixtral_8x7B", "Training_1K", **kw)
    variant, values = parameters_of("Mixtral_8x7B", "Training_1K", **kw)
    for name, field in (("T_ep", "ep_communication_latency"), ("T_step", "step_latency_total"), ("mfu", "mfu")):
        args, fn = _lambdified(variant, name, "math")
        assert _close(fn(*[values[a] for a in args]), getattr(r, field)), name
    assert r.ep_communication_latency == pytest.approx(0.01373, rel=1e-3)


@pytest.mark.parametrize("variant", list(CASES), ids=lambda v: "-".join(str(x) for x in vars(v).values()))
def test_lambdify_of_every_output_equals_solve_on_random_configurations(variant):
    rng = random.Random(hash(tuple(vars(variant).values())) % 1000)
    checked = 0
    for model, fleet in CASES[variant]:
        for i in range(12):
            kw = _configuration(rng, fleet, variant.family == "generic",
                                **({"precisions": PRECISIONS[variant]} if variant in PRECISIONS else {}))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")         # batch below dp, precision fallback: as solve() warns
                try:
                    r = DistributedModel().solve(model, fleet, **kw)
                except ValueError:
                    continue
                got_variant, values = parameters_of(model, fleet, **kw)
            assert got_variant == variant
            assert set(values) == set(build_model(variant).parameters)      # exactly the free symbols
            expected = dict(zip(OUTPUTS, r.values))
            modules = ("math", "numpy", "mpmath") if i < 3 else ("math", "numpy")
            for field, name in OUTPUTS.items():
                for module in modules:
                    args, fn = _lambdified(variant, name, module)
                    got = fn(*[values[a] for a in args])
                    assert _close(got, expected[field]), (variant, model, kw, field, module, got, expected[field])
                    checked += 1
    assert checked >= 27 * 2 * 10


def test_subs_of_a_quantity_gives_solves_number():
    kw = dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
    r = DistributedModel().solve("Llama3_70B", "Research_256", **kw)
    variant, values = parameters_of("Llama3_70B", "Research_256", **kw)
    m = build_model(variant)
    for name, expected in (("T_step", 3.368626711354994), ("mfu", r.mfu),
                           ("M_acc", r.node_profile.memory_footprint), ("dp", 8)):
        got = m[name].subs(values).doit()
        assert got.is_number and _close(got, expected), name


def test_parameters_of_runs_solves_checks_warnings_and_lowering():
    with pytest.raises(ValueError, match=r"^tp_size must be >= 1, got 0$"):
        parameters_of("Llama3_70B", "Research_256", tp_size=0)
    with pytest.raises(ValueError, match="must divide total accelerators \\(256\\) exactly"):
        parameters_of("Llama3_70B", "Research_256", tp_size=3)
    with pytest.raises(ValueError, match="efficiency must be finite, got nan"):
        parameters_of("Llama3_70B", "Research_256", batch_size=256, efficiency=float("nan"))
    with pytest.warns(UserWarning, match=r"batch_size \(8\) < dp_size \(256\)") as rec:
        parameters_of("Llama3_8B", "Research_256", batch_size=8)
    assert rec[0].filename == __file__                      # the warning points at the caller's line
    from mlsysim_sym.symbols import sym
    _, values = parameters_of("ResNet50", "Lab_64_A100", batch_size=64, seq_len=-5, overlap_comm=True)
    assert values[sym.s] == 0 and values[sym.ov] == 1      # seq_len is never read there; flags are 0/1
    with pytest.raises(TypeError, match=r"^overlap_comm must be a bool \(True or False, or 1 or 0\), got str 'no'$"):
        parameters_of("ResNet50", "Lab_64_A100", batch_size=64, overlap_comm="no")     # "no" is true: refused
    # one configuration's switch given as a list: [False] is true (mlsysim's reading), refused here and in solve()
    for call in (parameters_of, DistributedModel().solve):
        with pytest.raises(TypeError, match=r"^overlap_comm must be a bool \(True or False, or 1 or 0\), got list "
                                            r"\[False\]; one configuration takes one value \(a sweep takes a list\)$"):
            call("ResNet50", "Lab_64_A100", batch_size=64, overlap_comm=[False])
    # a numpy 0-d array holds one value: read as mlsysim reads it (its truth)
    _, values = parameters_of("ResNet50", "Lab_64_A100", batch_size=64, overlap_comm=np.array(True))
    assert values[sym.ov] == 1
    h100 = catalog.fleet("Research_256").node.accelerator
    _, values = parameters_of("Llama3_70B", "Research_256", batch_size=256, tp_size=8, precision="FP8")
    assert values[sym.bpp] == 1 and values[sym.R_peak] == h100.flops_for("fp8") and h100.flops_for("fp8") is not None
    a100 = catalog.fleet("Training_1K_A100").node.accelerator
    _, values = parameters_of("GPT3", "Training_1K_A100", batch_size=512, tp_size=16, pp_size=8, precision="fp8")
    assert a100.flops_for("fp8") is None and values[sym.R_peak] == a100.peak_flops      # mlsysim's fallback
    assert all(v is not None for v in values.values())


def test_solves_warnings_point_at_the_callers_line_on_every_path():
    # plain numbers (one compiled call), a numpy number (the careful path), a numpy bool flag
    for kw in (dict(batch_size=8), dict(batch_size=np.int64(8)), dict(batch_size=8, is_lora=np.bool_(True))):
        with pytest.warns(UserWarning, match=r"batch_size \(8\) < dp_size \(64\)") as rec:
            DistributedModel().solve("Llama3_8B", "Lab_64_H100", **kw)
        assert [r.filename for r in rec] == [__file__], kw


def test_the_packages_lambdify_compiles_a_whole_outputs_derivative():
    # d MFU / d eta holds a Heaviside for every Max on the way (sympy's lambdify takes minutes on it); the
    # package's lambdify gives the slope two values of MFU a step h apart give (central difference)
    from mlsysim_sym import sym
    from mlsysim_sym.compile import lambdify
    m = build_model()
    _, values = parameters_of("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4,
                              microbatch_count=8)
    d = sp.diff(m["mfu"], sym.eta)
    assert d.has(sp.Heaviside)
    d_args = sorted(d.free_symbols, key=str)
    args = sorted(m["mfu"].free_symbols, key=str)
    mfu = lambdify(args, m["mfu"], "math")

    def mfu_at(eta):
        return mfu(*[eta if a == sym.eta else values[a] for a in args])
    h = 1e-6
    slope = (mfu_at(0.5 + h) - mfu_at(0.5 - h)) / (2 * h)
    for backend in ("numpy", "math"):
        assert float(lambdify(d_args, d, backend)(*[values[a] for a in d_args])) == pytest.approx(slope, rel=1e-8)


def test_the_packages_lambdify_prints_heaviside_as_sympy_defines_it():
    # sympy's Heaviside: 0 below zero, 1 above, H0 (one half unless given) at zero; NaN stays NaN
    from mlsysim_sym.compile import lambdify
    x = sp.Symbol("x", real=True)
    for backend in ("numpy", "math"):
        f, g = lambdify([x], sp.Heaviside(x), backend), lambdify([x], sp.Heaviside(x, 1), backend)
        assert [float(f(v)) for v in (-2.0, 0.0, 3.0)] == [0.0, 0.5, 1.0]
        assert float(g(0.0)) == 1.0 and np.isnan(f(float("nan")))
    with pytest.raises(TypeError, match="expr must be a sympy expression"):
        lambdify([x], "x**2")
    with pytest.raises(ValueError, match="backend must be 'numpy' or 'math', got 'jax'"):
        lambdify([x], x, "jax")


def test_a_term_of_numbers_is_a_number_to_n_float_and_comparisons():
    # BubbleFraction(4, 1, 8) = (4 - 1) / (8 + 4 - 1) = 3/11 = 0.2727...: a named term stays a name until doit(),
    # and sympy.N, float() and a comparison read it as its formula's value (float() said "Cannot convert complex")
    from mlsysim_sym import sym
    e = build_model().definition("bubble_fraction").subs({sym.pp: 4, sym.v: 1, sym.m: 8})
    assert isinstance(e, BubbleFraction)
    assert float(e) == pytest.approx(3 / 11, rel=1e-15) and float(sp.N(e)) == pytest.approx(3 / 11, rel=1e-15)
    assert bool(e < 0.5) and not bool(e > 0.3)
    # a ring all-reduce of 1000 B over 8 ranks at 10 B/s and 1 s a step: 2 (7/8) 100 + 2 x 7 = 189 s
    assert float(RingAllReduce(1000, 8, 10, 1)) == pytest.approx(189.0, rel=1e-15)


@pytest.mark.parametrize("model,fleet,kw", [
    ("Llama3_70B", "Research_256", dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)),
    ("modern/Mixtral-8x7B", "modern/H100-SXM-1024", dict(batch_size=1024, tp_size=2, ep_size=8, precision="fp8")),
])
def test_subs_of_the_extended_model_gives_solves_numbers(model, fleet, kw):
    # the extended model's Max of a GEMM-shape factor compared once its arguments are numbers (it raised
    # "not comparable" from subs before)
    v, values = parameters_of(model, fleet, fidelity="extended", **kw)
    m = build_model(v)
    r = DistributedModel(fidelity="extended").solve(model, fleet, **kw)
    assert float(m["T_step"].subs(values).doit()) == pytest.approx(r.step_latency_total, rel=1e-12)
    assert float(m["mfu"].subs(values).doit()) == pytest.approx(r.mfu, rel=1e-12)
