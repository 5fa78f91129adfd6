"""Extreme magnitudes against mlsysim 0.3.0: every real keyword and every numeric field of a workload and a fleet
set to 1e-300, 1e-30, 1e30 and 1e300 (and the integer keywords to 10**30 and 10**300), on four configurations
(dense with a pipeline, MoE with expert parallelism, a CNN, ZeRO-3), through the shipped code (plain numbers)
and the compiled code (a numpy number sends a call the careful way).

What must hold:

* where mlsysim returns a finite output, ours is finite; and where every output of mlsysim's is finite (its own
  arithmetic stayed inside a float's range), ours are equal to them (relative 1e-9; below 1e-290, where mlsysim's
  and our orders of operations underflow differently, both count as zero);
* where mlsysim refuses with one of its own checks, we refuse with the same message;
* we raise where mlsysim returns only for a field whose value is beyond a float's range in the SI unit the model
  computes in (``1e300`` TFLOP/s is ``1e312`` flop/s), with a ``ValueError`` naming the field.

Where mlsysim's own arithmetic fails (pydantic refusing a float of ``1e30`` as a count) or returns NaN or inf, we
may return the model's finite value.
"""
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mlsysim")
sys.path.insert(0, str(Path(__file__).parent))
import mlsysim_oracle as oracle  # noqa: E402
from pydantic import BaseModel  # noqa: E402  (mlsysim's records are pydantic models)

MAGNITUDES = (1e-300, 1e-30, 1e30, 1e300)
REAL_KEYWORDS = ("efficiency", "overlap_efficiency", "congestion_factor", "straggler_factor",
                 "moe_routing_imbalance_factor")
INTEGER_KEYWORDS = ("batch_size", "seq_len", "microbatch_count", "gradient_accumulation_steps")
BASES = (
    ("Llama3_70B", "Research_256", dict(batch_size=256, tp_size=8, pp_size=2, microbatch_count=4)),
    ("Mixtral_8x7B", "Research_256", dict(batch_size=256, tp_size=2, ep_size=4, zero_stage=1)),
    ("ResNet50", "Lab_64_A100", dict(batch_size=512)),
    ("Llama3_8B", "Lab_64_H100", dict(batch_size=64, zero_stage=3, overlap_comm=True)),
)
#: mlsysim's own check messages (docs/contract.md §5)
MLSYSIM_CHECKS = ("must be >= ", "must be in [", "Infeasible 4D Parallelism", "must be positive, got",
                  "must be non-negative, got", "Workload must define either")


def _leaves(obj, path=()):
    """``(path, value)`` of every numeric leaf (a pint quantity or a number, not a bool) of a record."""
    if isinstance(obj, BaseModel):
        for k in type(obj).model_fields:
            yield from _leaves(getattr(obj, k), path + (k,))
    elif (hasattr(obj, "magnitude") and hasattr(obj, "units")) or (
            isinstance(obj, (int, float)) and not isinstance(obj, bool)):
        yield path, obj


def _replace(obj, path, value):
    old = getattr(obj, path[0])
    if len(path) == 1:
        return obj.model_copy(update={path[0]: type(old)(value, old.units) if hasattr(old, "units") else value})
    return obj.model_copy(update={path[0]: _replace(old, path[1:], value)})


def _cases():
    for model, fleet, base in BASES:
        for k in REAL_KEYWORDS + INTEGER_KEYWORDS:
            values = (10**30, 10**300) if k in INTEGER_KEYWORDS else MAGNITUDES
            for v in values:
                yield f"{model}/{fleet} {k}={v:.0e}", model, fleet, dict(base, **{k: v})
        w, f = oracle.registry_workload(model), oracle.registry_cluster(fleet)
        for which, record in (("workload", w), ("fleet", f)):
            for path, _ in _leaves(record):
                for v in MAGNITUDES:
                    try:
                        new = _replace(record, path, v)
                    except Exception:  # noqa: BLE001 - a field pydantic will not take that value in
                        continue
                    label = f"{model}/{fleet} {which}.{'.'.join(path)}={v:.0e}"
                    yield (label, new, f, base) if which == "workload" else (label, w, new, base)


def _near(a: float, b: float) -> bool:
    if abs(a) < 1e-290 and abs(b) < 1e-290:
        return True
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def _problems(label, both):
    ours, theirs = both["ours"], both["mlsysim"]
    if theirs["result"] is None:
        e = theirs["exception"]
        if any(c in e[1] for c in MLSYSIM_CHECKS) and ours["exception"] != e:
            return [f"{label}: mlsysim refuses {e}, ours {ours['exception'] or 'returns'}"]
        return []
    if ours["result"] is None:
        e = ours["exception"]
        if e[0] == "ValueError" and "beyond the largest float" in e[1]:
            return []
        return [f"{label}: mlsysim returns, ours raises {e}"]
    out = []
    numbers = {k: v for k, v in theirs["result"].items() if isinstance(v, float)}
    in_range = all(math.isfinite(v) for v in numbers.values())
    for k, v in numbers.items():
        mine = ours["result"].get(k)
        if math.isfinite(v) and not (isinstance(mine, float) and math.isfinite(mine)
                                     and (_near(mine, v) or not in_range)):
            out.append(f"{label}: {k} ours {mine!r}, mlsysim {v!r}")
    return out


@pytest.mark.parametrize("careful", [False, True], ids=["shipped code", "compiled code"])
def test_extreme_magnitudes_against_mlsysim(careful):
    problems, n = [], 0
    for label, model, fleet, kw in _cases():
        if careful:       # a numpy number is not a plain number: every rule in order, then lambdify's code
            kw = dict(kw, efficiency=np.float64(kw.get("efficiency", 0.5)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            both = oracle.call_both(model, fleet, **kw)
        problems += _problems(label, both)
        n += 1
    assert n > 800
    assert not problems, "\n".join(problems[:30])


def test_an_imbalance_of_1e300_on_a_dense_model_prices_no_all_to_all():
    # Llama-3 70B is dense: mlsysim prices no expert all-to-all (ep_size 1), whatever the imbalance factor, and
    # returns its step of 3856.39 ms; in float64 the compiled term is 1e300 * (bytes) * (N_EP - 1) = inf * 0.
    from mlsysim_sym import DistributedModel
    r = DistributedModel().solve("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=2,
                                 microbatch_count=4, moe_routing_imbalance_factor=1e300)
    theirs = oracle.mlsysim_solve("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=2,
                                  microbatch_count=4, moe_routing_imbalance_factor=1e300)
    assert r.ep_communication_latency == 0.0
    assert r.step_latency_total == pytest.approx(theirs["step_latency_total"], rel=1e-12)
    assert r.step_latency_total == pytest.approx(3.85639001140555, rel=1e-12)


def test_where_mlsysims_arithmetic_overflows_the_formulas_finite_value_stands():
    # docs/contract.md §9: an MoE all-to-all 1e300 times its volume; mlsysim's own arithmetic overflows to inf ms
    # (scaling efficiency 0), ours is the formula's finite value: the all-to-all dominates the step, so the
    # scaling efficiency is T_node / T_step, about 1e-299
    from mlsysim_sym import DistributedModel
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = DistributedModel().solve("Mixtral_8x7B", "Lab_64_H100", batch_size=64, ep_size=8,
                                     moe_routing_imbalance_factor=1e300)
        theirs = oracle.mlsysim_solve("Mixtral_8x7B", "Lab_64_H100", batch_size=64, ep_size=8,
                                      moe_routing_imbalance_factor=1e300)
    assert math.isinf(theirs["step_latency_total"]) and theirs["scaling_efficiency"] == 0.0
    assert r.step_latency_total == pytest.approx(9.39524096e297, rel=1e-8) and math.isfinite(r.step_latency_total)
    assert r.scaling_efficiency == pytest.approx(r.node_profile.latency / r.step_latency_total, rel=1e-9)


def test_a_field_beyond_a_floats_range_in_si_units_is_refused_by_name():
    from mlsysim_sym import DistributedModel
    f = oracle.registry_cluster("Lab_64_H100")
    f = _replace(f, ("node", "accelerator", "compute", "peak_flops"), 1e300)     # 1e300 TFLOP/s = 1e312 flop/s
    with pytest.raises(ValueError, match=r"^accelerator\.compute\.peak_flops of 1e\+300 .* beyond the largest "
                                         r"float in flop/s"):
        DistributedModel().solve("Llama3_8B", f, batch_size=64)


def test_a_sweep_returns_a_finite_number_wherever_mlsysim_does():
    """The compiled numpy code (a sweep): where float64 overflows part-way in a configuration mlsysim prices to
    finite numbers, the configuration is evaluated again as solve() evaluates it, not masked."""
    from mlsysim_sym import sweep
    keys = ("step_latency_total", "mfu", "communication_latency", "pipeline_bubble_latency", "effective_throughput")
    problems, n = [], 0
    for model, fleet, base in BASES:
        for k in REAL_KEYWORDS + INTEGER_KEYWORDS:
            for v in ((10**30, 10**300) if k in INTEGER_KEYWORDS else MAGNITUDES):
                kw = dict(base, **{k: v})
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    theirs = oracle.call_both(model, fleet, **kw)["mlsysim"]["result"]
                    if theirs is None:
                        continue
                    r = sweep(model, fleet, **dict(base, **{k: [base.get(k, 1), v]}))
                n += 1
                in_range = all(math.isfinite(x) for x in theirs.values() if isinstance(x, float))
                for key in keys:
                    mine, t = float(np.asarray(r[key])[1]), theirs[key]
                    if math.isfinite(t) and not (math.isfinite(mine) and (_near(mine, t) or not in_range)):
                        problems.append(f"{model} {k}={v:.0e}: {key} sweep {mine!r}, mlsysim {t!r}")
    assert n >= 80                   # of the 4 x 9 x 4 or 2 calls, those mlsysim prices
    assert not problems, "\n".join(problems[:20])


def test_sensitivities_and_uncertainty_give_the_finite_value_solve_gives():
    # an imbalance of 1e308 on a dense model: no all-to-all is priced, so the MFU is solve()'s 0.15343 (the CLI
    # printed "uncertainty of fleet MFU = nan" with exit 0); a non-transformer under the extended model reads no
    # gradient-accumulation symbol it does not have (it raised KeyError: 'GA')
    from mlsysim_sym import DistributedModel, sensitivities, uncertainty
    kw = dict(batch_size=256, moe_routing_imbalance_factor=1e308)
    mfu = DistributedModel().solve("Llama3_70B", "Research_256", **kw).mfu
    assert mfu == pytest.approx(0.15342714110260916, rel=1e-12)
    assert sensitivities("Llama3_70B", "Research_256", **kw).value == pytest.approx(mfu, rel=1e-12)
    u = uncertainty("Llama3_70B", "Research_256", {"efficiency": 0.1}, **kw)
    assert u.value == pytest.approx(mfu, rel=1e-12) and math.isfinite(u.std)
    ext = DistributedModel(fidelity="extended").solve("ResNet50", "Lab_64_A100", batch_size=512).mfu
    assert sensitivities("ResNet50", "Lab_64_A100", batch_size=512, fidelity="extended").value == \
        pytest.approx(ext, rel=1e-12)


def test_the_extended_moe_layout_evaluates_extreme_values_the_careful_way():
    # the extended model's MoE layout tests apn % tp; the careful evaluation (mlsysim_sym.wide) lacked %, so an
    # extreme input raised "unsupported operand type(s) for %: 'Wide' and 'Wide'" instead of pricing it
    from mlsysim_sym import DistributedModel
    kw = dict(batch_size=2304, seq_len=4096, precision="bf16", ep_size=8, zero_stage=2, overlap_comm=True)
    m = DistributedModel(fidelity="extended")
    base = m.solve("modern/Qwen3-235B-A22B", "modern/GB200-NVL72-1152", **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # an imbalance of 1e300 multiplies the all-to-all's bytes (0.1976 s of EP time at 1, its latency unscaled):
        # finite, just under 1e300 times the time at 1
        r = m.solve("modern/Qwen3-235B-A22B", "modern/GB200-NVL72-1152", moe_routing_imbalance_factor=1e300, **kw)
        assert base.ep_communication_latency == pytest.approx(0.19757214, rel=1e-6)
        assert 0.9 < r.ep_communication_latency / (1e300 * base.ep_communication_latency) < 1
        assert math.isfinite(r.step_latency_total)
    # a fabric of 1e-300 B/s: the gradients' all-reduce across racks takes beyond a float's range: inf, said
    with pytest.warns(RuntimeWarning, match="the step time is infinite at these inputs"):
        r = m.solve("modern/Qwen3-235B-A22B", "modern/GB200-NVL72-1152", fabric_bandwidth=1e-300, **kw)
    assert math.isinf(r.step_latency_total) and math.isinf(r.dp_communication_latency)
