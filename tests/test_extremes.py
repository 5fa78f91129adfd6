"""Extreme scales: exact integer structure, no overflow, no warnings, and mlsysim's numbers."""
import dataclasses
import warnings

import numpy as np
import pytest

from mlsysim_sym import DistributedModel, catalog, sweep

mlsysim = pytest.importorskip("mlsysim")
import mlsysim_oracle as oracle  # noqa: E402

solve = DistributedModel().solve


def _fleet(count, apn, base="Research_256"):
    ours = catalog.fleet(base)
    ours = dataclasses.replace(ours, count=count, node=dataclasses.replace(ours.node, accelerators_per_node=apn))
    ms = oracle.registry_cluster(base)
    ms = ms.model_copy(update={"count": count, "node": ms.node.model_copy(update={"accelerators_per_node": apn})})
    return ours, ms


def _both(model, ours_fleet, ms_fleet, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = oracle.mlsysim_solve(model, ms_fleet, **kw)
        mine = oracle.flatten(solve(model if isinstance(model, str) else catalog.from_mlsysim(model),
                                    ours_fleet, **kw))
    assert not oracle.compare(mine, theirs), oracle.compare(mine, theirs)
    return mine


def test_a_million_accelerators_and_a_billion_samples():
    ours, ms = _fleet(125_000, 8)                        # 10^6 accelerators
    r = _both("Llama3_70B", ours, ms, batch_size=10**9, tp_size=8, pp_size=8, microbatch_count=64)
    # dp = 10^6 / 64 = 15625 exactly; local batch 10^9 // 15625 = 64000 exactly
    assert r["parallelism"]["dp"] == 15625
    assert r["node.throughput"] * r["node.latency"] == pytest.approx(64000, rel=1e-15)


def test_a_batch_one_below_a_multiple_of_a_non_power_of_two_dp():
    # Mega_100K: 100,000 accelerators, tp=5 -> dp = 20000; B = 2 * 20000 - 1 -> local batch 1, not 2
    ours, ms = catalog.fleet("Mega_100K"), oracle.registry_cluster("Mega_100K")
    r = _both("Llama3_8B", ours, ms, batch_size=39999, tp_size=5)
    assert r["node.throughput"] * r["node.latency"] == pytest.approx(1, rel=1e-15)
    r = _both("Llama3_8B", ours, ms, batch_size=40000, tp_size=5)
    assert r["node.throughput"] * r["node.latency"] == pytest.approx(2, rel=1e-15)


def test_a_million_token_sequence_and_ten_trillion_parameters():
    big = oracle.registry_workload("Llama3_405B").model_copy(update={"parameters": mlsysim.core.units.Q_(1e13, "count")})
    ours, ms = catalog.fleet("Meta_Llama3_16K_H100"), oracle.registry_cluster("Meta_Llama3_16K_H100")
    r = _both(big, ours, ms, batch_size=4096, tp_size=8, pp_size=64, microbatch_count=64, seq_len=10**6,
              zero_stage=3, activation_recomputation=True)
    assert r["node.memory_footprint"] > 1e12              # it does not fit, and says so
    assert r["node.feasible"] is False


@pytest.mark.parametrize("count,apn", [(1, 1), (1, 8), (2, 1)])
def test_tiny_fleets(count, apn):
    ours, ms = _fleet(count, apn)
    for model in ("Llama3_8B", "ResNet50", "Mixtral_8x7B"):
        _both(model, ours, ms, batch_size=4)
        if count * apn > 1:
            _both(model, ours, ms, batch_size=4, tp_size=count * apn)


def test_extreme_sweeps_stay_exact_and_quiet():
    ours, _ = _fleet(125_000, 8)
    b = np.array([10**9, 10**9 - 1, 15625 * 3 - 1, 1])
    r = sweep("Llama3_70B", ours, grid=False, batch_size=b, tp_size=8, pp_size=8, seq_len=10**6)
    lb = r["node_profile.throughput"] * r["node_profile.latency"]
    np.testing.assert_allclose(lb, [64000, 63999, 2, 1], rtol=1e-15)
    assert np.isfinite(r["step_latency_total"]).all()
