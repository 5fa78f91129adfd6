"""Sensitivities against finite differences of mlsysim 0.3.0's own ``solve()``.

a. every continuous parameter, at 200 random operating points spread over the regimes
   (compute- and memory-bound, fits and spills, DP on NVLink / flat on the fabric /
   hierarchical, TP on NVLink and on the fabric, overlap on and off, straggler below,
   at and above 1), for fleet MFU, step time, scaling efficiency, effective throughput
   and memory per accelerator: the elasticity equals a central finite difference of
   mlsysim's ``solve()`` (the mlsysim object perturbed through ``model_copy``, or the
   keyword). Where the perturbation crosses a kink (detected from the regime at the
   perturbed points) the difference is taken on the side that stays in the regime;
   at a kink (our row reports ``left``/``right``) each side is extrapolated from
   points on that side only;
b. every discrete neighbour change equals the difference of two mlsysim solves, and
   every skipped neighbour is one mlsysim rejects with the same message;
c. identities that follow from the model's structure;
d. sweeps, relaxed derivatives, display.
"""
from __future__ import annotations

import math
import random
import re
import warnings
from collections import Counter
from functools import lru_cache

import numpy as np
import pytest

import sympy as sp

from mlsysim_sym.symbols import by_argument

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    pytest.importorskip("mlsysim")

import mlsysim_oracle as O  # noqa: E402

from mlsysim_sym import DistributedModel  # noqa: E402
from mlsysim_sym.decisions import model_decisions  # noqa: E402
from mlsysim_sym.sensitivity.gradients import shift_values  # noqa: E402
from mlsysim_sym.sensitivity import (CONSTANT_ROWS, CONTINUOUS, HEADLINE, INTEGER_KNOBS, regime,  # noqa: E402
                                     regime_signature, sensitivities, sensitivities_at, sensitivity_sweep)
from mlsysim_sym.inputs import SOLVE_DEFAULTS as DEFAULTS  # noqa: E402
from mlsysim_sym.symbols import sym  # noqa: E402

H = 1e-4                     # relative step of the finite differences
RTOL, ATOL = 1e-6, 1e-11     # ATOL: the finite-difference noise floor where the true value is 0 (~ulp / H)
OUTPUTS = {"mfu": "mfu", "step_time": "step_latency_total", "scaling_efficiency": "scaling_efficiency",
           "effective_throughput": "effective_throughput", "memory": "node.memory_footprint"}
MODELS = ["Llama3_8B", "Llama3_70B", "GPT3", "Llama2_13B", "OPT_13B", "Mixtral_8x7B", "DeepSeek_V3",
          "BERT_Large", "GPT2", "ResNet50", "Mamba_2_8B", "ViT_Large", "StableDiffusion_v1_5"]
GENERIC = {"ResNet50", "Mamba_2_8B", "ViT_Large", "StableDiffusion_v1_5"}
CLUSTERS = ["Research_256", "Lab_64_H100", "Lab_64_A100", "Training_1K_B200", "Kempner_H100_384", "Production_2K"]


# --------------------------------------------------------------------------------------
# Random operating points (mlsysim objects + solve() keywords)
# --------------------------------------------------------------------------------------

def _scaled(obj, path, factor):
    head, *rest = path
    new = getattr(obj, head) * factor if not rest else _scaled(getattr(obj, head), rest, factor)
    return obj.model_copy(update={head: new})


def _point(rng):
    while True:
        name, fleet_name = rng.choice(MODELS), rng.choice(CLUSTERS)
        w, f = O.registry_workload(name), O.registry_cluster(fleet_name)
        if rng.random() < 0.12:
            f = f.model_copy(update={"count": 1})                  # single node: DP ring on NVLink
        if rng.random() < 0.35:                                     # memory-bound
            f = _scaled(f, ["node", "accelerator", "memory", "bandwidth"], rng.choice([0.1, 0.02, 0.005]))
        if rng.random() < 0.25:                                     # spills
            f = _scaled(f, ["node", "accelerator", "memory", "capacity"], rng.choice([0.5, 0.1]))
        if rng.random() < 0.2:
            f = _scaled(f, ["fabric", "oversubscription_ratio"], rng.choice([2.0, 3.0]))
        n = f.count * f.node.accelerators_per_node
        moe = name in ("Mixtral_8x7B", "DeepSeek_V3")
        tp, pp = rng.choice([1, 2, 4, 8, 16]), rng.choice([1, 1, 2, 4, 8])
        ep = rng.choice([1, 2, 4]) if moe else 1
        g = tp * pp * ep
        if g > n or n % g:
            continue
        dp = n // g
        engine = name in GENERIC and g == 1
        kw = dict(
            batch_size=rng.choice([dp, 2 * dp, 8 * dp, 3 * dp + 1, max(dp, 256), max(dp, 1024)]),
            tp_size=tp, pp_size=pp, ep_size=ep, efficiency=round(rng.uniform(0.2, 0.9), 3),
            precision="fp16" if engine else rng.choice(["fp16", "bf16", "fp16", "fp8", "fp32"]),
            microbatch_count=rng.choice([1, 2, 4, 8, 16]), v_stages=rng.choice([1, 1, 2]),
            overlap_comm=rng.random() < 0.5, overlap_efficiency=round(rng.uniform(0.5, 0.95), 3),
            congestion_factor=round(rng.uniform(0.8, 2.5), 3),
            straggler_factor=rng.choice([1.0, round(rng.uniform(1.05, 1.5), 3), round(rng.uniform(0.6, 0.95), 3)]),
            moe_routing_imbalance_factor=round(rng.uniform(1.05, 2.0), 3) if moe else 1.0,
            gradient_accumulation_steps=rng.choice([1, 1, 2, 4]), seq_len=rng.choice([128, 512, 2048, 4096]),
            zero_stage=rng.choice([0, 1, 2, 3]), is_lora=rng.random() < 0.15,
            activation_recomputation=rng.random() < 0.3)
        return name, w, f, kw


@lru_cache(maxsize=None)
def points(n=200, seed=4):
    rng = random.Random(seed)
    return tuple(_point(rng) for _ in range(n))


@lru_cache(maxsize=None)
def tables(i):
    """Our sensitivity tables of point ``i`` for the five outputs (constants included)."""
    _, w, f, kw = points()[i]
    return {o: sensitivities(w, f, o, include_constants=True, **kw) for o in OUTPUTS}


# --------------------------------------------------------------------------------------
# Perturbing mlsysim's inputs
# --------------------------------------------------------------------------------------

_ACC = ["node", "accelerator"]
_FLEET_PATHS = {
    "memory_bandwidth": _ACC + ["memory", "bandwidth"], "memory_capacity": _ACC + ["memory", "capacity"],
    "pcie_bandwidth": _ACC + ["interconnect", "bandwidth"], "dispatch_tax": _ACC + ["dispatch_tax"],
    "tdp": _ACC + ["tdp"], "nvlink_latency": _ACC + ["nvlink", "latency"], "intra_node_bw": ["node", "intra_node_bw"],
    "fabric_bandwidth": ["fabric", "bandwidth"], "fabric_latency": ["fabric", "latency"],
    "oversubscription_ratio": ["fabric", "oversubscription_ratio"],
}
_KEYWORDS = ("efficiency", "overlap_efficiency", "congestion_factor", "straggler_factor",
             "moe_routing_imbalance_factor", "seq_len")


def _get(obj, path):
    for p in path:
        obj = getattr(obj, p, None)
        if obj is None:
            return None
    return obj


def perturb(w, f, kw, name):
    """A function ``factor -> (w, f, kw)`` scaling the mlsysim input behind row ``name``; None if absent."""
    if name in _KEYWORDS:
        x = kw.get(name, DEFAULTS[name])
        return lambda s: (w, f, dict(kw, **{name: x * s}))
    if name in _FLEET_PATHS:
        path = _FLEET_PATHS[name]
        return None if _get(f, path) is None else (lambda s: (w, _scaled(f, path, s), kw))
    if name == "peak_flops":
        key = kw.get("precision", "fp16").lower()
        compute = f.node.accelerator.compute
        if key in (compute.precision_flops or {}):
            def peak(s):
                table = dict(compute.precision_flops, **{key: compute.precision_flops[key] * s})
                c = compute.model_copy(update={"precision_flops": table})
                acc = f.node.accelerator.model_copy(update={"compute": c})
                return w, f.model_copy(update={"node": f.node.model_copy(update={"accelerator": acc})}), kw
            return peak
        return lambda s: (w, _scaled(f, _ACC + ["compute", "peak_flops"], s), kw)
    if name == "parameters":
        fixed = {}
        if not w.inference_flops and type(w).__name__ != "SparseTransformerWorkload":
            from mlsysim.core.units import Q_   # F = 2P in mlsysim: hold it, as the row does
            fixed = {"inference_flops": Q_(2 * w.parameters.m_as("count"), "flop")}
        return lambda s: (w.model_copy(update=dict(fixed, parameters=w.parameters * s)), f, kw)
    if name in ("inference_flops", "hidden_dim"):
        return None if not getattr(w, name, None) else (lambda s: (_scaled(w, [name], s), f, kw))
    return None


def _mlsysim(fn, s):
    w, f, kw = fn(s)
    return O.mlsysim_solve(w, f, **kw)


# --------------------------------------------------------------------------------------
# a. continuous parameters vs central finite differences
# --------------------------------------------------------------------------------------

def _close(ours, fd):
    return abs(ours - fd) <= RTOL * max(abs(ours), abs(fd)) + ATOL


def _check_point(i, stats, failures):
    name, w, f, kw = points()[i]
    _check(name, w, f, kw, tables(i), stats, failures)


def _check(name, w, f, kw, tabs, stats, failures):
    mfu = tabs["mfu"]
    base = O.mlsysim_solve(w, f, **kw)
    for row in mfu.rows:
        if row.parameter in CONSTANT_ROWS or float(row.value) == 0:
            continue
        fn = perturb(w, f, kw, row.parameter)
        if fn is None:
            stats["not perturbable"] += 1
            continue
        cache = {}

        def at(k, fn=fn, cache=cache):
            if k not in cache:
                try:
                    cache[k] = _mlsysim(fn, 1 + k * H)
                except ValueError:      # outside mlsysim's range (imbalance 1.0 - H): take the other side
                    cache[k] = None
            return cache[k]

        def sig(k, x=row.symbol):
            values = dict(mfu.values)
            values[x] = values[x] * (1 + k * H)
            return regime_signature(mfu.variant, values)

        s0 = mfu.signature
        for out, key in OUTPUTS.items():
            r = tabs[out][row.parameter]
            f0 = base[key]
            if f0 == 0:
                continue
            if r.kink is not None:
                checks = []
                for side, sign in (("right", 1), ("left", -1)):
                    if len({sig(sign), sig(2 * sign), sig(3 * sign)}) != 1 or at(3 * sign) is None:
                        stats["kink side crossing again"] += 1
                        continue
                    f1, f2, f3 = (at(sign * k)[key] for k in (1, 2, 3))
                    slope = sign * (-2.5 * f1 + 4 * f2 - 1.5 * f3) / H      # x f'(x) from one side
                    checks.append((getattr(r, side).elasticity, slope / (3 * f1 - 3 * f2 + f3), side))
                stats["at a kink"] += 1
            elif sig(1) == s0 and sig(-1) == s0 and at(-1) is not None:
                checks = [(r.elasticity, (at(1)[key] - at(-1)[key]) / (2 * H * f0), "central")]
                stats["central"] += 1
            else:
                side = 1 if sig(1) == s0 and sig(2) == s0 else -1 if sig(-1) == s0 and sig(-2) == s0 else 0
                if at(-1) is None and sig(1) == s0 and sig(2) == s0:
                    side = 1
                    stats["range boundary"] += 1
                if side == 0:
                    stats["both sides cross"] += 1
                    continue
                slope = side * (-3 * f0 + 4 * at(side)[key] - at(2 * side)[key]) / (2 * H)
                checks = [(r.elasticity, slope / f0, "one-sided")]
                stats["crosses a kink: one-sided"] += 1
            for ours, fd, how in checks:
                if not _close(ours, fd):
                    failures.append(f"{O.describe(name, '?', kw)} {row.parameter} -> {out} ({how}): "
                                    f"ours {ours!r} fd {fd!r}")


@pytest.mark.parametrize("block", range(4))
def test_elasticities_match_finite_differences_of_mlsysim(block):
    stats, failures = Counter(), []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for i in range(block * 50, (block + 1) * 50):
            _check_point(i, stats, failures)
    assert not failures, "\n".join(failures[:20]) + f"\n{len(failures)} mismatches; {dict(stats)}"
    assert stats["central"] >= 50 * 5 * 12, stats
    assert stats["both sides cross"] + stats["kink side crossing again"] <= 5, stats


def test_points_cover_every_regime():
    seen = Counter(label for i in range(len(points())) for label in tables(i)["mfu"].regime)
    for label in ("compute-bound", "memory-bound", "fits in HBM", "spills to host memory (offload)",
                  "DP ring on NVLink (one node)", "DP ring on the fabric", "DP hierarchical (NVLink + fabric)",
                  "TP on NVLink", "TP on the fabric", "DP overlapped with backward", "DP not overlapped",
                  "straggler (× f_strag)", "no straggler (f_strag ≤ 1)"):
        assert seen[label] >= 5, (label, seen)
    kinks = Counter(r.kink for i in range(len(points())) for r in tables(i)["mfu"].rows if r.kink)
    assert kinks["f_strag = 1"] >= 30, kinks


def test_one_sided_derivatives_at_kinks_match_mlsysim():
    kw = dict(batch_size=64, seq_len=512, efficiency=0.6, straggler_factor=1.3, zero_stage=3)
    w, f = O.registry_workload("Llama3_8B"), O.registry_cluster("Lab_64_H100")
    ours = sensitivities(w, f, **kw).context.fleet
    q = DistributedModel().solve(w, f, **kw).node_profile
    cases = {
        # compute time = memory time: a Max kink (no jump)
        "T_compute = T_memory": _scaled(f, _ACC + ["memory", "bandwidth"], q.latency_memory / q.latency_compute),
        # memory-bound, memory exactly at capacity: the bandwidth switches to the host link (a jump)
        "M_device = M_total": _scaled(_scaled(f, _ACC + ["memory", "bandwidth"], 0.3), _ACC + ["memory", "capacity"],
                               q.memory_footprint / ours.node.accelerator.memory_capacity),
    }
    for kink, fleet in cases.items():
        tabs = {o: sensitivities(w, fleet, o, include_constants=True, **kw) for o in OUTPUTS}
        rows = [r for r in tabs["mfu"].rows if r.kink == kink]
        assert rows, (kink, [(r.parameter, r.kink) for r in tabs["mfu"].rows])
        assert all(r.jump == (kink == "M_device = M_total") for r in rows)
        stats, failures = Counter(), []
        _check("Llama3_8B", w, fleet, kw, tabs, stats, failures)
        assert not failures, "\n".join(failures)
        assert stats["at a kink"] >= len(rows) and not stats["kink side crossing again"], stats


def test_warnings_of_solve_reach_the_caller():
    with pytest.warns(UserWarning, match=r"batch_size \(8\) < dp_size \(64\)") as rec:
        sensitivities("Llama3_8B", "Lab_64_H100", batch_size=8)
    assert rec[0].filename == __file__


# --------------------------------------------------------------------------------------
# b. integer knobs: exact neighbour changes
# --------------------------------------------------------------------------------------

def _neighbour(w, f, kw, knob, value):
    if knob == "count":
        return w, f.model_copy(update={"count": value}), kw
    if knob == "layers":
        return w.model_copy(update={"layers": value}), f, kw
    return w, f, dict(kw, **{knob: value})


def test_discrete_changes_equal_differences_of_two_mlsysim_solves():
    """Each neighbour value equals mlsysim's to 1e-12; each change equals the difference of two mlsysim
    solves to 1e-12 of itself, or of 1e-3 x the output where the change is smaller than that (both
    solves are exact to ~1e-16 of the output, so their difference is known no better)."""
    checked, skipped = 0, 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)     # batch < dp at some neighbours, as in solve()
        for i in range(0, 200, 4):
            name, w, f, kw = points()[i]
            for out, key in (("mfu", "mfu"), ("step_time", "step_latency_total")):
                tab = tables(i)[out]
                base = O.mlsysim_solve(w, f, **kw)[key]
                for row in tab.discrete:
                    for step in (row.down, row.up):
                        if step is None:
                            continue
                        w2, f2, kw2 = _neighbour(w, f, kw, row.knob, step.value)
                        theirs = O.mlsysim_solve(w2, f2, **kw2)[key]
                        delta = theirs - base
                        assert step.output == pytest.approx(theirs, rel=1e-12, abs=0)
                        scale = max(abs(delta), 1e-3 * abs(base))
                        assert abs(step.delta - delta) <= 1e-12 * scale, (name, kw, row.knob, step, delta)
                        checked += 1
                    for value, reason in row.skipped:
                        if reason.endswith("must be >= 1"):
                            assert value < 1 and row.knob in ("count", "layers")
                            continue
                        if reason == "zero_stage must be in [0, 3]":    # mlsysim prices it (a non-transformer)
                            assert value in (-1, 4) and row.knob == "zero_stage"
                            continue
                        w2, f2, kw2 = _neighbour(w, f, kw, row.knob, value)
                        with pytest.raises(ValueError) as exc:
                            O.mlsysim_solve(w2, f2, **kw2)
                        assert str(exc.value) == reason
                        skipped += 1
    assert checked >= 800 and skipped >= 100, (checked, skipped)


def test_knobs_name_the_next_valid_value():
    t = sensitivities("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
    tp = t.discrete["tp_size"]
    assert (tp.down.value, tp.up.value) == (4, 16)
    assert [v for v, _ in tp.skipped] == [7, 9]
    # the next counts a framework runs: a replica is 32 GPUs (4 nodes); 36, 40, 48 nodes hold 9, 10, 12 replicas,
    # which do not split 256 samples into 8 microbatches each; 64 nodes hold 16 (16 samples, 8 microbatches of 2),
    # and below, 28, 24, 20 nodes (7, 6, 5 replicas) do not, 16 (8) does
    assert t.discrete["count"].up.value == 64 and t.discrete["count"].down.value == 16
    assert t.discrete["count"].up.runnable and t.discrete["count"].down.runnable
    assert t.discrete["v_stages"].down is None and t.discrete["v_stages"].skipped == ()
    # the batch: 8 replicas of 8 microbatches run a multiple of 64 samples, so 192 and 320 (not 255 and 257)
    assert (t.discrete["batch_size"].down.value, t.discrete["batch_size"].up.value) == (192, 320)
    m = t.discrete["microbatch_count"]             # 32 samples a replica: m divides 32 (5, 6, 7 do not)
    assert (m.down.value, m.up.value) == (4, 16)
    # the knobs of mlsysim's model (the extended model's cp_size and etp_size are knobs of that model only)
    knobs = {k for k in INTEGER_KNOBS if by_argument()[k].fidelity == "mlsysim"}
    assert knobs == set(INTEGER_KNOBS) - {"cp_size", "etp_size"}
    assert knobs == {r.knob for r in t.discrete}
    assert {r.parameter for r in t.relaxed} == knobs - {"zero_stage"}
    tp = t.relaxed["tp_size"]          # tp = 8 = GPUs per node: TP moves to the fabric just above
    assert tp.kink == "G_node = N_TP" and tp.jump and tp.left.elasticity > 0 > tp.right.elasticity


# --------------------------------------------------------------------------------------
# c. identities of the model's structure
# --------------------------------------------------------------------------------------

_RATES = ("peak_flops", "memory_bandwidth", "pcie_bandwidth", "intra_node_bw", "fabric_bandwidth")
_TIMES = ("nvlink_latency", "fabric_latency", "dispatch_tax", "TAX", "alpha_h")
_DEGREE = {"mfu": 0, "step_time": 1, "scaling_efficiency": 0, "effective_throughput": -1, "memory": 0}


def _smooth(tab, names):
    rows = [tab[n] for n in names if any(r.parameter == n for r in tab.rows)]
    return None if any(r.kink for r in rows) else {r.parameter: r.elasticity for r in rows}


def test_structural_identities_hold_at_every_point():
    counts = Counter()
    for i in range(len(points())):
        tabs = tables(i)
        # fleet MFU depends on peak FLOP/s and FLOPs per token only through their ratio
        e = _smooth(tabs["mfu"], ("peak_flops", "inference_flops"))
        if e is not None and len(e) == 2:
            assert abs(e["peak_flops"] + e["inference_flops"]) <= 1e-12 * abs(e["peak_flops"]) + 1e-15
            counts["R/F"] += 1
        for out, tab in tabs.items():
            # oversubscription only divides the fabric bandwidth
            e = _smooth(tab, ("oversubscription_ratio", "fabric_bandwidth"))
            if e is not None and len(e) == 2:
                assert e["oversubscription_ratio"] == pytest.approx(-e["fabric_bandwidth"], rel=1e-12, abs=1e-15)
            # time homogeneity: every rate / 2 and every time x 2 doubles the step
            e = _smooth(tab, _RATES + _TIMES)
            if e is not None:
                total = sum(e.get(n, 0.0) for n in _TIMES) - sum(e.get(n, 0.0) for n in _RATES)
                assert total == pytest.approx(_DEGREE[out], abs=1e-12), (i, out, e)
                counts["homogeneity"] += 1
        # throughput x step time = dp x local batch, which no continuous parameter moves
        for row in tabs["step_time"].rows:
            other = tabs["effective_throughput"][row.parameter]
            if row.kink is None and other.kink is None:
                assert other.elasticity == pytest.approx(-row.elasticity, rel=1e-12, abs=1e-15)
            elif row.kink and other.kink:
                assert other.right.elasticity == pytest.approx(-row.right.elasticity, rel=1e-12, abs=1e-15)
        # memory per accelerator moves with no rate and no time
        assert all(tabs["memory"][n].elasticity == 0 for n in _RATES + _TIMES
                   if any(r.parameter == n for r in tabs["memory"].rows))
    assert counts["R/F"] >= 150 and counts["homogeneity"] >= 900, counts


def test_fleet_mfu_is_node_mfu_times_scaling_efficiency():
    for i in range(0, 200, 10):
        name, w, f, kw = points()[i]
        node = sensitivities(w, f, "node_mfu", **kw)
        tabs = tables(i)
        for row in tabs["mfu"].rows:
            if row.parameter not in CONSTANT_ROWS and row.kink is None and node[row.parameter].kink is None:
                expect = node[row.parameter].elasticity + tabs["scaling_efficiency"][row.parameter].elasticity
                assert row.elasticity == pytest.approx(expect, rel=1e-9, abs=1e-12), (i, row.parameter)


# --------------------------------------------------------------------------------------
# d. relaxed derivatives, sweeps, display, errors
# --------------------------------------------------------------------------------------

def test_relaxed_derivatives():
    checked = 0
    for i in range(0, 200, 12):
        name, w, f, kw = points()[i]
        tab = tables(i)["step_time"]
        knobs = tab.relaxed
        # seq_len is under no floor: the relaxed derivative is the derivative itself
        if any(r.parameter == "seq_len" for r in tab.rows) and tab["seq_len"].kink is None \
                and knobs["seq_len"].kink is None:     # (a non-transformer without TP or EP never reads it)
            assert knobs["seq_len"].elasticity == pytest.approx(tab["seq_len"].elasticity, rel=1e-12)
        # v_stages is under no floor either: mlsysim takes a real v, so its finite difference is the check
        if kw["pp_size"] > 1:
            def step(s):
                return O.mlsysim_solve(w, f, **dict(kw, v_stages=kw["v_stages"] * s))["step_latency_total"]
            f0 = step(1)
            fd = (-3 * f0 + 4 * step(1 + H) - step(1 + 2 * H)) / (2 * H * f0)   # v = 1 is mlsysim's minimum
            assert _close(knobs["v_stages"].elasticity, fd)
            checked += 1
    assert checked >= 8


def test_relaxed_program_is_the_derivative_of_the_relaxed_expression():
    t = sensitivities("Llama3_70B", "Research_256", batch_size=300, tp_size=4, pp_size=2, microbatch_count=3)
    knobs = t.relaxed
    md = model_decisions(t.variant)
    data = md.data(t.values)
    sig = tuple((i, int(md.decisions[i].choose(data[i]))) for i in md.decisions_of(HEADLINE))
    reg = regime(t.variant, HEADLINE, sig, True, tuple(s for s in INTEGER_KNOBS.values() if s))
    expr = reg.expr("mfu")
    args = sorted(expr.free_symbols, key=str)
    fn = sp.lambdify(args, expr, "math")
    vals = dict(t.values)
    vals.update(shift_values(md, reg.shift, t.values))      # each floor = its quotient + its fraction here
    assert fn(*[vals[a] for a in args]) == pytest.approx(t.value, rel=1e-12)
    for knob in ("pp_size", "microbatch_count", "batch_size", "layers", "count"):
        x = INTEGER_KNOBS[knob]
        row = knobs[knob]
        if row.kink:
            continue
        f = lambda s: fn(*[vals[a] * (s if a == x else 1) for a in args])  # noqa: E731
        fd = (f(1 + H) - f(1 - H)) / (2 * H * f(1))
        assert _close(row.elasticity, fd), (knob, row, fd)


def test_sweep_equals_the_scalar_table_and_masks_invalid_points():
    kw = dict(batch_size=256, pp_size=2, microbatch_count=8, seq_len=1024)
    tps, etas, bws = [1, 2, 3, 4, 8], [0.3, 0.6], [3.35e12, 3.35e10]
    r = sensitivity_sweep("Llama3_8B", "Lab_64_H100", "step_time", tp_size=tps, efficiency=etas,
                          memory_bandwidth=bws, **kw)
    assert r.shape == (5, 2, 2) and r.regimes >= 2
    assert not r.valid[2].any() and np.isnan(r.elasticity["efficiency"][2]).all()
    assert "must divide total accelerators" in r.reason[2, 0, 0]
    assert r.ties["f_strag = 1"][r.valid].all() and not r.ties["T_compute = T_memory"].any()
    fleet = O.registry_cluster("Lab_64_H100")
    for a, tp in enumerate(tps):
        for b, eta in enumerate(etas):
            for c, bw in enumerate(bws):
                if tp == 3:
                    continue
                f = _scaled(fleet, ["node", "accelerator", "memory", "bandwidth"], bw / 3.35e12)
                t = sensitivities("Llama3_8B", f, "step_time", tp_size=tp, efficiency=eta, **kw)
                assert r.value[a, b, c] == pytest.approx(t.value, rel=1e-12)
                for row in t.rows:
                    if row.kink is None and row.parameter in r.elasticity:
                        assert r.elasticity[row.parameter][a, b, c] == pytest.approx(row.elasticity, rel=1e-12,
                                                                                     abs=1e-15)


def test_display():
    t = sensitivities("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
    text = str(t)
    lines = text.splitlines()
    assert lines[0] == "sensitivities of fleet MFU = 0.2604"
    assert lines[1].strip() == "Llama-3.1-70B on Research Cluster (256 GPUs): batch 256, tp 8, pp 4, m 8, fp16"
    assert "(b) compute-bound" in text and "integer knobs" in text
    assert max(map(len, lines)) <= 80                     # fits an 80-column terminal
    assert "-0 " not in text and " -0\n" not in text
    # words, the book's symbol and units: 989.4 TFLOP/s is the H100's dense fp16 peak; the derivative is per
    # TFLOP/s, the unit the value is printed in: -0.284 * 0.2604 / 989.4 = -7.48e-05
    row = next(x for x in lines if "peak FLOP/s R_peak" in x)
    assert "989 TFLOP/s" in row and "-7.48e-05" in row and "-0.284" in row
    assert "per unit of the value column (per GB/s where it says GB/s)" in " ".join(text.split())
    # the HTML names each derivative's unit
    assert "-7.48e-05 per TFLOP/s" in t._repr_html_()
    assert "fabric bandwidth BW_inject" in text and "12.5 GB/s" in text
    # mlsysim field names a student cannot read stay out of a training table's text
    assert "inference_flops" not in text and "count " not in text
    # skipped neighbours summarised: one line per knob, values grouped by reason, no full message
    assert "skipped tensor-parallel degree: 7, 9 (Infeasible 4D Parallelism)" in text
    assert "must divide total accelerators" not in text
    # ranking: by the move that can improve MFU; the straggler factor sits at its floor f_strag = 1,
    # where lowering it changes nothing and raising it costs 1 % per 1 %: it ranks last of the
    # rows that move, with its kink explained
    scores = [r.score(1) for r in t.rows]
    assert scores == sorted(scores, reverse=True)
    assert t.rows[0].parameter == "efficiency"
    f_s = t["straggler_factor"]
    assert f_s.one_sided and f_s.score(1) == 0.0 and f_s.score(-1) == 1.0 and f_s.magnitude == 1.0
    moving = [x for x in lines if x.split() and x.split()[0].isdigit()]
    assert "straggler factor f_strag" in moving[-1] and "0 | -1 *" in moving[-1]
    assert ("straggler factor f_strag sits at a kink (f_strag = 1): lowering it leaves fleet MFU unchanged, raising "
            "it changes fleet MFU by -1 % per 1 %") in " ".join(x.strip() for x in lines)
    # parameters that do not move MFU here are one line, not rows of zeros
    assert "no effect here: overlap efficiency η_ov" in text
    assert "<table>" in t._repr_html_() and "achieved efficiency" in t._repr_html_()
    latex = t._repr_latex_()
    assert latex.startswith("$\\begin{array}") and r"\eta_{\text{hw}}" in latex
    # the printed derivative is the derivative that was evaluated
    d = t.expression("efficiency")
    values = {k: v for k, v in t.values.items() if v is not None}
    assert float(d.subs(values)) == pytest.approx(t["efficiency"].derivative, rel=1e-12)
    assert float(t.expression().subs(values)) == pytest.approx(t.value, rel=1e-12)
    assert not t.expression().has(sp.Max, sp.Min, sp.Piecewise)


def test_short_latex_is_the_row_in_named_quantities():
    t = sensitivities("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
    from mlsysim_sym.operating_point import operating_point
    point = operating_point(t.values, t.variant)
    names = {point[n].symbol for n in point.model}
    for p in ("efficiency", "fabric_bandwidth", "intra_node_bw", "parameters", "seq_len"):
        e = t.short(p)
        # written in the model's quantities (T_step, T_node, MFU_node ...), not expanded to parameters
        assert e.free_symbols & names
        assert float(e.subs(point.values)) == pytest.approx(t[p].elasticity, rel=1e-12)
        d = t.short(p, "derivative")
        assert float(d.subs(point.values)) == pytest.approx(t[p].derivative, rel=1e-12)
    text = t.latex("efficiency")
    assert text.startswith(r"\frac{\partial \ln \text{MFU}_{\text{fleet}}}{\partial \ln \eta_{\text{hw}}} = ")
    # the frozen derivative printed 1,316 characters; the chained elasticity about a third of it
    assert len(text) < 500 and len(t.latex("fabric_bandwidth")) < 500
    # a product's elasticity is the sum of its factors' (MFU_fleet = MFU T_node / T_step, the MFU's efficiency
    # cancelling the time's): the efficiency moves the compute and the bubble with it, nothing else, so the
    # elasticity is their share of the step, T_compute (1 + (N_PP - 1) / (m V)) / T_step (it printed
    # MFU T_node ... / (T_step^2 MFU_fleet), correct and unreduced)
    S = {n: point[n].symbol for n in ("T_compute", "T_step")}
    assert sp.simplify(t.short("efficiency") - S["T_compute"] * (1 + (sym.pp - 1) / (sym.m * sym.v)) / S["T_step"]) == 0
    assert text.endswith(r"= \frac{T_{\text{compute}} \left(1 + \frac{N_{\text{PP}} - 1}{m V}\right)}{T_{\text{step}}}")
    assert r"\EfficiencyHw" in t.latex("efficiency", book=True)
    with pytest.raises(ValueError, match="form must be 'elasticity' or 'derivative'"):
        t.short("efficiency", "log")


def test_errors_name_the_choices():
    with pytest.raises(KeyError, match="unknown output 'mfuu'"):
        sensitivities("Llama3_8B", "Lab_64_H100", "mfuu", batch_size=64)
    with pytest.raises(ValueError, match="must divide total accelerators"):
        sensitivities("Llama3_8B", "Lab_64_H100", tp_size=3, batch_size=64)
    t = sensitivities("Llama3_8B", "Lab_64_H100", batch_size=64)
    with pytest.raises(KeyError, match="no row 'nope'"):
        t["nope"]
    bare = sensitivities_at(t.variant, t.values)
    with pytest.raises(ValueError, match="solve\\(\\) context"):
        bare.discrete
    assert bare.rows == t.rows


def test_every_documented_row_is_a_model_symbol():
    from mlsysim_sym.sensitivity import __doc__ as doc

    for name, s in CONTINUOUS.items():
        assert f"``{name}``" in doc or name in ("sram_bandwidth", "flash_bandwidth"), name
        assert s in vars(sym).values()


def test_a_kink_is_explained_only_for_a_row_the_table_shows():
    # the extended model's step time of the bundled example: P_exp (no routed experts here) sits at its kink
    # P_exp = 0 but moves nothing, so it is under "no effect here" and gets no note; f_strag moves it. At fp16
    # every rate is the precision's peak: R_peak sits at no kink (it sat at R_peak,16 = R_peak, where a faster
    # peak moved the GEMMs alone)
    t = sensitivities("Llama3_70B", "Research_256", output="step_latency_total", fidelity="extended",
                      batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
    text = " ".join(str(t).split())
    assert "routed-expert parameters P_exp sits at a kink" not in text
    assert "straggler factor f_strag sits at a kink (f_strag = 1)" in text
    assert "peak FLOP/s R_peak sits at a kink" not in text and t["peak_flops"].kink is None


def test_a_parameter_at_the_end_of_its_range_says_which_way_it_can_move():
    # the overlap efficiency's range is [0, 1]; at 1 it ranks by raising it, which cannot be done: the note under
    # the table says it can only be lowered and what a 1 % drop costs (the elasticity's sign turned), here checked
    # against a one-sided difference of two solves (1 - 1e-6 and 1)
    kw = dict(batch_size=256, overlap_comm=True, overlap_efficiency=1.0)
    t = sensitivities("Llama3_70B", "Research_256", **kw)
    m = [DistributedModel().solve("Llama3_70B", "Research_256", **dict(kw, overlap_efficiency=e)).mfu
         for e in (1.0 - 1e-6, 1.0)]
    e = t["overlap_efficiency"].elasticity
    assert e == pytest.approx((m[1] - m[0]) / m[1] / 1e-6, rel=1e-5) and e > 0
    text = " ".join(x.strip() for x in str(t).splitlines())
    assert (f"‡ overlap efficiency η_ov is at the top of its range (in [0.0, 1.0]): it can only be lowered, which "
            f"changes fleet MFU by {-e:+.3g} % per 1 %.") in text
    # its row carries the note's mark (‡, not the knob table's †: no framework runs the schedule)
    row = next(x for x in str(t).splitlines() if "overlap efficiency η_ov" in x and "range" not in x)
    assert f"{e:+.3g} ‡" in row
    # inside its range, no such note
    inside = str(sensitivities("Llama3_70B", "Research_256", **dict(kw, overlap_efficiency=0.85)))
    assert "‡" not in inside


@pytest.mark.parametrize("bad,error,words", [
    (dict(peak_flops=0.0), ValueError, "peak_flops must be positive, got 0.0"),
    (dict(peak_flops=-1.0), ValueError, "peak_flops must be positive, got -1.0"),
    (dict(hidden_dim=float("nan")), ValueError, "hidden_dim must be finite, got nan"),
    (dict(parameters="x"), TypeError, "parameters must be a real number, got str"),
    (dict(fabric_bandwidth=0.0), ValueError, "fabric_bandwidth must be positive, got 0.0"),
    (dict(microbatch_count=8.5), ValueError, "microbatch_count must be a whole number, got 8.5"),
])
def test_the_sweep_like_entry_points_refuse_what_a_sweep_masks(bad, error, words):
    # a record field given as a keyword reached the generated code: peak_flops=0 raised ZeroDivisionError there,
    # -1 gave an MFU of -9e14 and NaN a NaN; a sweep masks each with these words (its reason), and these raise them
    from mlsysim_sym import required, sweep, uncertainty
    from mlsysim_sym.operating_point import operating_point_of
    kw = {**dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8), **bad}
    masked = sweep("Llama3_70B", "Research_256", **{k: [v] for k, v in kw.items()}) if error is ValueError else None
    # (a sweep refuses a string outright, as these do; of a zero fabric bandwidth it says mlsysim's words first)
    assert masked is None or words in masked.reasons or "bandwidth_bytes_s must be positive" in masked.reasons[1]
    for call in (lambda: sensitivities("Llama3_70B", "Research_256", **kw),
                 lambda: uncertainty("Llama3_70B", "Research_256", {"efficiency": 0.1}, **kw),
                 lambda: operating_point_of("Llama3_70B", "Research_256", **kw),
                 lambda: required("mfu", 0.3, "efficiency", "Llama3_70B", "Research_256", **kw)):
        with pytest.raises(error, match=re.escape(words)):
            call()
    # solve() keeps mlsysim's reading of its own keywords: 8.5 microbatches are priced, as mlsysim prices them
    if "microbatch_count" in bad:
        assert DistributedModel().solve("Llama3_70B", "Research_256", **kw).mfu > 0


def test_the_latex_of_a_kinked_row_gives_both_sides():
    # f_strag = 1 sits at the kink of the straggler's max: the table shows "0 | -1 *"; the LaTeX showed "= 0" only
    t = sensitivities("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
    r = t["straggler_factor"]
    assert (r.left.elasticity, r.right.elasticity) == (0.0, -1.0)
    assert t.latex("straggler_factor").endswith(r"= 0 \quad \left(\text{below: } 0,\ \text{above: } -1\right)")
    assert r"\text{below: }" not in t.latex("efficiency")      # a smooth row is its expression alone


def test_a_knobs_neighbour_is_the_next_value_a_framework_runs_and_one_that_none_runs_is_marked():
    # the bundled example: 8 replicas of 32 samples, 8 microbatches of 4; 7 or 9 microbatches do not split 32
    # samples, 255 or 257 samples do not split over 8 replicas (can_run): the neighbours walk on to 4 and 16
    # microbatches, 192 and 320 samples; tp 4 (16 replicas of 16 samples) runs
    t = sensitivities("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
    d = {k.knob: k for k in t.discrete}
    assert [(s.value, s.runnable) for s in (d["microbatch_count"].down, d["microbatch_count"].up)] == \
        [(4, True), (16, True)]
    assert (d["tp_size"].down.value, d["tp_size"].down.runnable) == (4, True)
    assert "†" not in str(t)
    # tp 4 runs but does not fit: 94.4 GB an accelerator (solve() at tp 4) against the H100's 80 GiB (85.9 GB); the
    # table marks the gain it would otherwise recommend (a trial read ZeRO 2's +0.0044 as a gain: it spilled)
    assert not d["tp_size"].down.fits and d["tp_size"].up.fits and all(s.fits for s in (d["pp_size"].down,
                                                                                          d["pp_size"].up))
    text = " ".join(str(t).split())
    assert "4: -0.0346 §" in text and "§ does not fit in accelerator memory there (its state spills to the host)" \
        in text
    assert t.to_dict()["discrete"][1]["previous"]["fits"] is False
    # a configuration that runs no schedule itself (7 microbatches of 32 samples): its nearest neighbours, marked
    # where they run none either (6), the next that runs where it is the nearest (8)
    t = sensitivities("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4, microbatch_count=7)
    m = t.discrete["microbatch_count"]
    assert [(s.value, s.runnable) for s in (m.down, m.up)] == [(6, False), (8, True)]
    text = str(t)
    assert "6: -0.00886 †" in text and "† no framework runs the schedule there" in " ".join(text.split())
    assert t.to_dict()["discrete"][5]["previous"]["runnable"] is False


def test_a_neighbour_far_from_the_knob_is_found_and_a_length_cp_splits_is_walked_to():
    # Mixtral-8x7B on 1024 GPUs, tp 2, ep 4 carved out of data parallelism: 512 replicas, so the runnable batches
    # nearest 1024 are 512 and 1536 (the walk of 256 values found none and priced 1023 and 1025, marked)
    t = sensitivities("Mixtral_8x7B", "Training_1K", fidelity="extended", batch_size=1024, tp_size=2, ep_size=4,
                      congestion_factor=1.7)
    b = t.discrete["batch_size"]
    assert [(s.value, s.runnable) for s in (b.down, b.up)] == [(512, True), (1536, True)]
    # at cp 2 a sequence length must split in two: 2047 and 2049 are refused, 2046 and 2050 priced
    t = sensitivities("modern/Llama-3.1-8B", "Lab_64_H100", fidelity="extended", batch_size=64, tp_size=8, cp_size=2)
    s = t.discrete["seq_len"]
    assert (s.down.value, s.up.value) == (2046, 2050) and {v for v, _ in s.skipped} == {2047, 2049}
    # at cp 16 the walk reaches the nearest multiples of 16 (it stopped 8 short of them)
    t = sensitivities("modern/Llama-3.1-8B", "Lab_64_H100", fidelity="extended", batch_size=64, tp_size=4, cp_size=16)
    assert (t.discrete["seq_len"].down.value, t.discrete["seq_len"].up.value) == (2032, 2064)


def test_switches_flipped_change_the_output_as_two_solves_do():
    # the bundled example on mlsysim's model reads two switches: recomputation (off) and the DP overlap (off)
    import warnings
    from mlsysim_sym import DistributedModel
    kw = dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
    t = sensitivities("Llama3_70B", "Research_256", **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = DistributedModel().solve("Llama3_70B", "Research_256", **kw).mfu
        on = {k: DistributedModel().solve("Llama3_70B", "Research_256", **kw, **{k: True}).mfu
              for k in ("activation_recomputation", "overlap_comm")}
    assert [(w.switch, w.value) for w in t.switches] == [("activation_recomputation", False), ("overlap_comm", False)]
    for w in t.switches:
        assert w.flipped.output == on[w.switch] and w.flipped.delta == on[w.switch] - base
    assert round(on["overlap_comm"] - base, 4) == 0.0481 and round(on["activation_recomputation"] - base, 4) == -0.0502
    assert t.to_dict()["switches"][1] == {"switch": "overlap_comm", "value": False, "refused": "",
                                          "flipped": {"value": 1, "output": on["overlap_comm"],
                                                      "change": on["overlap_comm"] - base,
                                                      "relative": (on["overlap_comm"] - base) / base,
                                                      "runnable": True, "fits": True}}
    text = " ".join(str(t).split())
    assert "recomputation (activation_recomputation) off -0.0502 -19.3%" in text
    # the extended model reads its own switches too; the ones that change nothing here are named on one line
    ext = sensitivities("Llama3_70B", "Research_256", fidelity="extended", **kw)
    assert {w.switch for w in ext.switches} == {"activation_recomputation", "overlap_comm", "sequence_parallel",
                                               "tp_comm_overlap", "fsdp_overlap", "cp_overlap", "layer_overlap",
                                               "ep_overlap", "fused_dispatch"}
    assert "no effect here: sequence_parallel, fsdp_overlap" in " ".join(str(ext).split())


def test_values_no_configuration_means_are_not_offered_or_shown():
    from mlsysim_sym import sensitivities
    # ZeRO stage -1 is no stage (mlsysim checks the range for transformers only), nor 4 above stage 3: neither is
    # tried nor listed as skipped (the table said "skipped ZeRO stage: 4 (must be 0, 1, 2, or 3)")
    t = sensitivities("ResNet50", "Research_256", batch_size=4096)
    z = t.discrete["zero_stage"]
    assert z.down is None and z.skipped == () and z.up.value == 1
    t = sensitivities("Llama3_70B", "Research_256", batch_size=256, tp_size=8, zero_stage=3)
    z = t.discrete["zero_stage"]
    assert z.up is None and z.skipped == () and z.down.value == 2 and "skipped ZeRO" not in str(t)
    # a non-transformer's sequence length without TP or EP is never read (lowered to 0): no row "S 0"
    names = [r.parameter for r in sensitivities("DLRM", "Training_1K", batch_size=65536).rows]
    assert "seq_len" not in names and "hidden_dim" in names
    assert "seq_len" in [r.parameter for r in sensitivities("DLRM", "Training_1K", batch_size=65536, tp_size=2).rows]


def test_the_extended_model_of_a_non_transformer_has_its_table_knobs_and_switches():
    # ResNet50 on the extended model's engine path reads no accumulation-step symbol: the relaxed rows leave it out
    # (it raised KeyError: GA), and the DP overlap, flipped, moves MFU as two solves say
    import warnings
    from mlsysim_sym import DistributedModel
    t = sensitivities("ResNet50", "Research_256", batch_size=4096, fidelity="extended")
    assert "gradient_accumulation_steps" not in {r.parameter for r in t.relaxed}
    ext = DistributedModel(fidelity="extended")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base, on = (ext.solve("ResNet50", "Research_256", batch_size=4096, overlap_comm=o).mfu for o in (False, True))
    w = {w.switch: w for w in t.switches}["overlap_comm"]
    assert w.flipped.output == on and w.flipped.delta == on - base and "switches:" in str(t)


def test_a_rounding_residue_is_no_effect():
    # a user's MoE card: the routed-expert parameters' elasticity evaluated to +5.38e-18 (terms that cancel) and was
    # ranked as an effect; the fabric latency's -1.87e-4 is one
    from types import SimpleNamespace
    from mlsysim_sym.sensitivity.table import _moves
    assert not _moves(SimpleNamespace(elasticity=5.38e-18, kink=None))
    assert _moves(SimpleNamespace(elasticity=-1.87e-4, kink=None))
    assert _moves(SimpleNamespace(elasticity=float("nan"), kink=None))
    kink = SimpleNamespace(kink="f_strag = 1", left=SimpleNamespace(elasticity=0.0),
                           right=SimpleNamespace(elasticity=-1e-20))
    assert not _moves(kink)


def test_nodes_with_no_runnable_count_nearby_move_to_the_next_count_the_split_takes():
    # 32 nodes of 8 H100s, tp 4 x pp 4 (16 GPUs a replica, so 2 nodes a step), 32 microbatches of a 512-sample
    # batch: above 32 nodes a replica has fewer samples than microbatches and no count runs a schedule; the neighbour
    # is 34 nodes (the next count the split takes, priced and marked †), not 33 (refused by the split) and nothing
    t = sensitivities("modern/Llama-3.1-70B", "modern/H100-SXM-1024", count=32, batch_size=512, seq_len=8192,
                      precision="bf16", tp_size=4, pp_size=4, microbatch_count=32, v_stages=4, zero_stage=1,
                      overlap_comm=True)
    c = t.discrete["count"]
    assert (c.up.value, c.up.runnable, c.up.fits) == (34, False, True) and c.skipped == ()
    # 16 nodes run (64 samples a replica) but do not fit: a replica's activations double (45.6 -> 91.3 GB)
    assert (c.down.value, c.down.runnable, c.down.fits) == (16, True, False)
    assert "nodes N_nodes                   32  16: +0.000819 §   34: -0.000109 †" in str(t)


def test_a_parameter_that_moves_nothing_has_elasticity_plus_zero():
    # the bundled example without overlap: the overlap efficiency multiplies nothing; a trial read -0.0
    s = sensitivities("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
    row = s["overlap_efficiency"]
    assert row.elasticity == 0.0 and math.copysign(1.0, row.elasticity) == 1.0
    assert math.copysign(1.0, row.derivative) == 1.0


def test_the_configuration_line_is_solves_for_the_same_configuration():
    # sequence parallelism at tp 1 moves nothing, nor the CP overlap on a record without an architecture card (no
    # attention FLOPs for the exchange to hide behind): solve() set them apart ("no effect here"), the sensitivity
    # table listed them among the keywords that act; both say the same now, and the table's JSON carries the line
    from mlsysim_sym import DistributedModel, sensitivities
    kw = dict(batch_size=64, sequence_parallel=True, cp_size=2, cp_overlap=True)
    r = DistributedModel(fidelity="extended").solve("Llama3_8B", "Lab_64_H100", **kw)
    t = sensitivities("Llama3_8B", "Lab_64_H100", fidelity="extended", **kw)
    assert r.configuration == t.configuration
    assert r.configuration.endswith("extended model (cp 2; no effect here: SP, CP overlap)")
    assert t.to_dict()["configuration_line"] == r.configuration
