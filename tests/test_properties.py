"""Properties that follow from the model's physics, checked with hypothesis over the catalog."""
import dataclasses
import math
import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlsysim_sym import DistributedModel, catalog
from mlsysim_sym.optimize import divisors

settings.register_profile("ci", max_examples=150, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci")

MODELS = catalog.workload_names("Language") + ("ResNet50", "Mamba_2_8B", "DLRM", "OpenVLA_7B", "ViT_Large")
FLEETS = catalog.fleet_names()
solve = DistributedModel().solve


@st.composite
def configs(draw, congestion=st.floats(0.0, 3.0), straggler=st.floats(0.5, 2.0)):
    model = draw(st.sampled_from(MODELS))
    fleet = draw(st.sampled_from(FLEETS))
    n = catalog.fleet(fleet).total_accelerators
    tp = draw(st.sampled_from([d for d in divisors(n) if d <= 32]))
    pp = draw(st.sampled_from([d for d in divisors(n // tp) if d <= 64]))
    ep = draw(st.sampled_from([d for d in divisors(n // (tp * pp)) if d <= 16]))
    kw = dict(tp_size=tp, pp_size=pp, ep_size=ep,
              batch_size=draw(st.integers(1, 10**6)), precision=draw(st.sampled_from(
                  ["fp16", "bf16", "fp32", "tf32", "fp8", "int8", "int4"])),
              efficiency=draw(st.floats(1e-9, 1.0)), v_stages=draw(st.integers(1, 8)),
              microbatch_count=draw(st.integers(1, 256)), zero_stage=draw(st.integers(0, 3)),
              is_lora=draw(st.booleans()), activation_recomputation=draw(st.booleans()),
              overlap_comm=draw(st.booleans()), overlap_efficiency=draw(st.floats(0.0, 1.0)),
              congestion_factor=draw(congestion), straggler_factor=draw(straggler),
              moe_routing_imbalance_factor=draw(st.floats(1.0, 4.0)),
              gradient_accumulation_steps=draw(st.integers(1, 64)), seq_len=draw(st.integers(1, 131072)))
    return model, fleet, kw


def run(model, fleet, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # batch below dp, precision fallback
        return solve(model, fleet, **kw)


@given(configs())
def test_every_output_is_finite_and_fleet_mfu_is_node_mfu_times_scaling_efficiency(cfg):
    model, fleet, kw = cfg
    r = run(model, fleet, **kw)
    assert all(math.isfinite(v) for v in r.values if isinstance(v, float))
    assert math.isclose(r.mfu, r.node_profile.mfu * r.scaling_efficiency, rel_tol=1e-14)


@given(configs(congestion=st.floats(0.0, 3.0), straggler=st.floats(1.0, 2.0)))
def test_scaling_efficiency_is_in_0_1(cfg):
    model, fleet, kw = cfg
    r = run(model, fleet, **kw)
    assert 0 < r.scaling_efficiency <= 1


def _faster_links(fleet, fabric=1.0, nvlink=1.0):
    f = catalog.fleet(fleet)
    node = dataclasses.replace(f.node, intra_node_bw=f.node.intra_node_bw * nvlink)
    return dataclasses.replace(f, node=node, fabric=dataclasses.replace(f.fabric, bandwidth=f.fabric.bandwidth * fabric))


@given(configs(), st.floats(1.0, 100.0), st.floats(1.0, 100.0))
def test_more_bandwidth_never_makes_a_step_slower(cfg, k_fabric, k_nvlink):
    model, fleet, kw = cfg
    base = run(model, fleet, **kw).step_latency_total
    assert run(model, _faster_links(fleet, fabric=k_fabric), **kw).step_latency_total <= base
    assert run(model, _faster_links(fleet, nvlink=k_nvlink), **kw).step_latency_total <= base


@given(configs(), st.integers(1, 64))
def test_more_microbatches_never_enlarge_the_bubble(cfg, extra):
    model, fleet, kw = cfg
    a = run(model, fleet, **kw)
    b = run(model, fleet, **dict(kw, microbatch_count=kw["microbatch_count"] + extra))
    assert b.bubble_fraction <= a.bubble_fraction
    assert b.pipeline_bubble_latency <= a.pipeline_bubble_latency


@given(configs())
def test_memory_per_accelerator_never_grows_with_the_zero_stage(cfg):
    model, fleet, kw = cfg
    memory = [run(model, fleet, **dict(kw, zero_stage=z)).node_profile.memory_footprint for z in range(4)]
    assert memory == sorted(memory, reverse=True)
