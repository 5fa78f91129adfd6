"""Sweeps: vectorized results equal mlsysim's solve(), invalid configurations are masked with a reason."""
import random
import warnings

import numpy as np
import pytest

from mlsysim_sym import DistributedModel, _chunks, catalog, sweep
from mlsysim_sym.solver import OUTPUTS

pytest.importorskip("mlsysim")
import mlsysim_oracle as oracle  # noqa: E402

NON_POW2 = ["Mega_100K", "Reference_25K_H100", "Kempner_H100_384", "Training_10K", "Meta_RSC_A100_16K"]
FLAT_KEY = {k: ("node." + k[len("node_profile."):] if k.startswith("node_profile.") else k) for k in OUTPUTS}
SKIP = {"dp", "node_profile.memory_bound", "node_profile.offload_spill_bytes"}   # compared differently below


def _draw(rng, n_acc, moe):

    odd = [d for d in (3, 5, 6, 10, 25) if n_acc % d == 0]
    while True:
        tp = rng.choice([1, 2, 4, 8, 16] + odd)
        pp = rng.choice([1, 2, 4, 8] + odd)
        ep = rng.choice([1, 2, 4]) if moe else 1
        if n_acc % (tp * pp * ep) == 0:
            break
    dp = n_acc // (tp * pp * ep)
    return dict(
        tp_size=tp, pp_size=pp, ep_size=ep,
        batch_size=rng.choice([1, 3, max(1, dp - 1), dp, dp + 1, 2 * dp, 7 * dp + 3, 256, 1024, rng.randint(1, 5000)]),
        precision=rng.choice(["fp16", "bf16", "fp32", "fp8", "int8", "tf32"]),
        efficiency=rng.uniform(0.05, 1.0), v_stages=rng.choice([1, 2, 4]),
        microbatch_count=rng.choice([1, 2, 3, 4, 8, 16, 32]), zero_stage=rng.randint(0, 3),
        is_lora=rng.random() < 0.2, activation_recomputation=rng.random() < 0.5,
        overlap_comm=rng.random() < 0.5, overlap_efficiency=rng.uniform(0, 1),
        congestion_factor=rng.uniform(0.5, 3), straggler_factor=rng.choice([0.8, 1.0, 1.2, rng.uniform(0.5, 2)]),
        moe_routing_imbalance_factor=rng.choice([1.0, 1.3, 2.0]),
        gradient_accumulation_steps=rng.choice([1, 1, 2, 3, 4, 8]), seq_len=rng.choice([128, 512, 1000, 2048, 4096]))


def test_vectorized_sweep_equals_mlsysim_on_random_configurations():
    # 10,000 configurations: 40 (model, cluster) pairs x 250 draws, evaluated as one flattened sweep
    # per pair and compared output by output with mlsysim's own solve().
    rng = random.Random(2026)
    models = catalog.workload_names("Language")
    fleets = catalog.fleet_names()
    pairs = [(m, f) for m in models for f in NON_POW2][:20] + \
        [(rng.choice(models), rng.choice(fleets)) for _ in range(15)] + \
        [(m, rng.choice(fleets)) for m in ("ResNet50", "Mamba_2_8B", "DLRM", "StableDiffusion_v1_5", "OpenVLA_7B")]
    worst = 0.0
    compared = 0
    for model, fleet in pairs:
        n_acc = catalog.fleet(fleet).total_accelerators
        moe = catalog.workload(model).kind == "sparse_transformer"
        draws = [_draw(rng, n_acc, moe) for _ in range(250)]
        if catalog.workload(model).kind != "transformer" and catalog.workload(model).kind != "sparse_transformer":
            for d in draws[::3]:
                d.update(tp_size=1, pp_size=1, ep_size=1)       # the Engine path
        cols = {k: np.array([d[k] for d in draws]) for k in draws[0]}
        r = sweep(model, fleet, grid=False, **cols)
        assert r.valid.all(), set(r.reason[~r.valid])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i, d in enumerate(draws):
                theirs = oracle.mlsysim_solve(model, fleet, **d)
                assert bool(r["node_profile.feasible"][i]) == theirs["node.feasible"]
                assert (r["node_profile.memory_bound"][i] == 1) == (theirs["node.bottleneck"] == "Memory")
                assert int(r["dp"][i]) == theirs["parallelism"]["dp"]
                for k, flat in FLAT_KEY.items():
                    if k in SKIP or k == "node_profile.feasible":
                        continue
                    a, b = float(r[k][i]), theirs[flat]
                    err = oracle.rel_err(a, b)
                    assert err <= 1e-12 or (a == b == 0), (model, fleet, d, k, a, b)
                    worst = max(worst, err)
                compared += 1
    assert compared == 10000
    assert worst <= 1e-12


def test_a_sweep_of_one_configuration_says_why_it_is_masked():
    from mlsysim_sym import DistributedModel

    kw = dict(batch_size=256, tp_size=3, pp_size=4)      # 3 * 4 does not divide 256
    with pytest.raises(ValueError) as exc:
        DistributedModel().solve("Llama3_70B", "Research_256", **kw)
    r = sweep("Llama3_70B", "Research_256", **kw)
    assert r.shape == () and not r.valid and r.reason == str(exc.value)
    assert f"1 x {str(exc.value)[:60]}" in repr(r)
    ok = sweep("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4)
    assert ok.valid and ok.reason == "" and "masked" not in repr(ok)


def test_grid_axes_follow_the_callers_order_and_mask_invalid_splits():
    r = sweep("Llama3_70B", "Kempner_H100_384", batch_size=[128, 384], tp_size=[1, 2, 3, 5, 8], pp_size=[1, 4, 7])
    assert r.shape == (2, 5, 3)
    assert list(r.axes) == ["batch_size", "tp_size", "pp_size"]
    # 384 = 2^7 * 3: tp=5 never divides; tp=3, pp=4 divides; pp=7 never
    assert not r.valid[:, 3, :].any() and not r.valid[:, :, 2].any() and r.valid[0, 2, 1]
    # solve()'s own message for that configuration
    assert r.reason[0, 3, 0] == ("Infeasible 4D Parallelism: TP(5) * PP(1) * EP(1) must divide total accelerators "
                                 "(384) exactly.")
    assert np.isnan(r["step_latency_total"][0, 3, 0]) and r.reason[0, 0, 0] == ""


def test_invalid_values_are_masked_in_mlsysims_check_order():
    r = sweep("Llama3_8B", "Lab_64_H100", grid=False, tp_size=np.array([0, 1, 1, 1, 1, 1]),
              efficiency=np.array([0.5, 0.0, 0.5, 0.5, np.nan, 0.5]),
              precision=np.array(["fp16", "fp16", "fp64", "fp16", "fp16", "FP16"]),
              seq_len=np.array([2048, 2048, 2048, 0, 2048, 2048]))
    assert r.reason.tolist() == ["tp_size must be >= 1, got 0", "efficiency must be in [1e-09, 1.0], got 0.0",
                                 "precision 'fp64' is not supported. Supported precision values: bf16, fp16, fp32, "
                                 "fp8, int4, int8, tf32", "seq_len must be >= 1, got 0",
                                 "efficiency must be finite, got nan", ""]
    assert r.valid.tolist() == [False] * 5 + [True]


def test_a_million_configurations_without_a_numpy_warning():
    # pyproject turns every warning into an error: a division by zero in an inactive branch or in a
    # masked configuration would fail this test. A third of the splits do not divide the fleet.
    rng = np.random.default_rng(11)
    n = 10**6
    r = sweep("Mixtral_8x7B", "Training_10K", grid=False, outputs=("mfu", "step_latency_total"),
              tp_size=rng.choice([1, 2, 3, 4, 8, 16], n), pp_size=rng.choice([1, 2, 4, 5, 8], n),
              ep_size=rng.choice([1, 2, 4, 8], n), batch_size=rng.integers(1, 100000, n),
              microbatch_count=rng.integers(1, 64, n), zero_stage=rng.integers(0, 4, n),
              activation_recomputation=rng.random(n) < 0.5, overlap_comm=rng.random(n) < 0.5)
    assert r.shape == (n,)
    assert 0 < r.valid.sum() < n
    assert np.isfinite(r["mfu"][r.valid]).all() and np.isnan(r["mfu"][~r.valid]).all()
    assert ((r["mfu"][r.valid] > 0) & (r["mfu"][r.valid] < 1)).all()


def test_unknown_arguments_and_outputs_are_named():
    with pytest.raises(TypeError, match="unexpected keyword argument 'tensor_parallel'"):
        sweep("Llama3_8B", "Lab_64_H100", tensor_parallel=[1, 2])
    # one set of names: solve()'s keywords and the record fields (not the symbols' internal names)
    with pytest.raises(TypeError, match="unexpected keyword argument 'tp'; allowed: .*tp_size"):
        sweep("Llama3_8B", "Lab_64_H100", tp=[1, 2])
    assert sweep("Llama3_8B", "Lab_64_H100", tp_size=[1, 2], fabric_bandwidth=5e10).shape == (2,)
    with pytest.raises(KeyError, match="unknown outputs"):
        sweep("Llama3_8B", "Lab_64_H100", outputs=("speed",))


def test_non_physical_hardware_values_are_masked_with_the_argument_named():
    r = sweep("Llama3_8B", "Lab_64_H100", grid=False, batch_size=64,
              fabric_bandwidth=np.array([-1.0, 0.0, 2.5e10, 2.5e10, 2.5e10]),
              memory_capacity=np.array([8e10, 8e10, np.inf, 8e10, 8e10]),
              fabric_latency=np.array([5e-6, 5e-6, 5e-6, -1e-6, 5e-6]))
    # where solve() would raise (mlsysim's collective helper rejects the bandwidth and the latency of the
    # fabric ring), the sweep gives solve()'s message; what solve() computes with is masked by the sweep's own
    assert r.reason.tolist() == ["bandwidth_bytes_s must be positive, got -1.0 B/s",
                                 "bandwidth_bytes_s must be positive, got 0.0 B/s",
                                 "memory_capacity must be finite, got inf", "latency_s must be non-negative, got -1e-06 s",
                                 ""]
    r = sweep("Llama3_8B", "Lab_64_H100", grid=False, batch_size=64, tp_size=8, pp_size=8,
              fabric_bandwidth=np.array([-1.0, 2.5e10]))
    assert r.reason.tolist() == ["fabric_bandwidth must be positive, got -1.0", ""]     # dp = 1: no DP ring


def test_a_subset_of_outputs_is_validated_like_all_of_them():
    # bubble_fraction depends on pp, v and m only; the split must still divide the fleet
    r = sweep("Llama3_70B", "Research_256", outputs="bubble_fraction", pp_size=[1, 2, 3, 4])
    assert r.valid.tolist() == [True, True, False, True]
    np.testing.assert_allclose(r["bubble_fraction"][[0, 1, 3]], [0.0, 0.5, 0.75])   # (p-1)/(m v + p-1), m = v = 1


def test_a_result_that_overflows_is_masked_not_raised():
    r = sweep("Llama3_8B", "Research_256", fabric_bandwidth=[1e-300, 5e10], parameters=[8e9])
    assert r.valid.ravel().tolist() == [False, True]
    assert r.reason.ravel()[0] == "the result overflows or divides by zero (an extreme input)"
    r = sweep("Llama3_8B", "Research_256", parameters=[0.0, 8e9])
    assert r.reason.tolist() == ["parameters must be positive, got 0.0", ""]


def test_grids_evaluated_in_chunks_equal_one_pass(monkeypatch):
    import mlsysim_sym.sweeps as sweeps

    grid = dict(batch_size=np.arange(1, 301, 7), tp_size=[1, 2, 3, 5, 8], pp_size=[1, 2, 4, 8],
                microbatch_count=[1, 4, 8], efficiency=np.linspace(0.2, 0.9, 6))
    whole = sweep("Llama3_70B", "Kempner_H100_384", **grid)
    assert whole.shape == (43, 5, 4, 3, 6) and 0 < whole.valid.sum() < whole.valid.size
    # a grid larger than the "whole" budget goes in chunks (here of about 500 configurations, so that
    # the chunks split inside the second axis)
    monkeypatch.setattr(_chunks, "GRID_WHOLE_BYTES", 0)
    monkeypatch.setattr(_chunks, "CHUNK", 100)
    monkeypatch.setattr(_chunks, "GRID_CHUNK_BYTES", 8 * 500 * (27 + _chunks.TEMPORARIES))
    chunked = sweep("Llama3_70B", "Kempner_H100_384", **grid)
    assert (chunked.valid == whole.valid).all() and (chunked.reason == whole.reason).all()
    for name in whole.values:
        np.testing.assert_array_equal(chunked[name], whole[name], err_msg=name)
    # an output that depends on few axes stays that small (a broadcast view), masked or not
    r = sweep("Llama3_70B", "Research_256", outputs=("bubble_fraction", "mfu"), batch_size=np.arange(1, 513),
              pp_size=[1, 2, 4, 8], microbatch_count=[1, 2, 4, 8])
    assert r["bubble_fraction"].base.shape == (1, 4, 4) and r["mfu"].shape == (512, 4, 4)


def test_flattened_sweeps_in_chunks_equal_one_pass(monkeypatch):
    import mlsysim_sym.sweeps as sweeps

    rng = np.random.default_rng(5)
    n = 5000
    cols = dict(tp_size=rng.choice([1, 2, 3, 4, 8], n), batch_size=rng.integers(1, 2000, n),
                efficiency=rng.uniform(0.1, 1.0, n), fabric_bandwidth=rng.choice([5e10, 1e-300, -1.0], n))
    whole = sweep("Llama3_8B", "Lab_64_H100", grid=False, **cols)
    monkeypatch.setattr(_chunks, "CHUNK", 700)
    chunked = sweep("Llama3_8B", "Lab_64_H100", grid=False, **cols)
    assert (chunked.valid == whole.valid).all() and (chunked.reason == whole.reason).all()
    assert set(whole.reasons) >= {"", sweeps.OVERFLOW}
    for name in whole.values:
        np.testing.assert_array_equal(chunked[name], whole[name], err_msg=name)


def test_a_sweep_that_cannot_fit_in_memory_is_refused_up_front():
    import time

    from mlsysim_sym.sweeps import SweepTooLarge

    t = time.perf_counter()
    with pytest.raises(SweepTooLarge, match=r"a sweep of 1,000,000,000,000 configurations with 1 output\(s\) "
                                            r"needs about \d+ TB.*outputs=.*coarser grid"):
        sweep("Llama3_70B", "Research_256", outputs="mfu", batch_size=np.arange(1, 10**6 + 1),
              efficiency=np.linspace(0.01, 1, 10**3), seq_len=np.arange(1, 10**3 + 1))
    assert time.perf_counter() - t < 5            # refused before any work
    assert issubclass(SweepTooLarge, MemoryError)


def test_spill_is_nan_where_the_state_fits():
    r = sweep("Llama3_70B", "Research_256", batch_size=256, tp_size=[1, 8], pp_size=4, microbatch_count=8)
    feasible = r["node_profile.feasible"]
    assert feasible.tolist() == [False, True]
    assert r["node_profile.offload_spill_bytes"][0] > 0 and np.isnan(r["node_profile.offload_spill_bytes"][1])
    one = sweep("Llama3_70B", "Research_256", outputs="node_profile.offload_spill_bytes", tp_size=[1, 8],
                batch_size=256, pp_size=4, microbatch_count=8)
    np.testing.assert_array_equal(one["node_profile.offload_spill_bytes"], r["node_profile.offload_spill_bytes"])


def test_odd_arrays_are_read_as_numbers():
    from dataclasses import replace

    # small integer types never wrap around inside the checks (256 does not fit in an int8)
    r = sweep("Llama3_70B", "Research_256", batch_size=256, tp_size=np.array([1, 2, 3, 8], dtype=np.int8))
    assert r.valid.tolist() == [False, True, False, True] or r.valid.tolist() == [True, True, False, True]
    assert r.reason[2] == "Infeasible 4D Parallelism: TP(3) * PP(1) * EP(1) must divide total accelerators (256) exactly."
    r = sweep("ResNet50", "Research_256", batch_size=256, seq_len=np.array([-5], dtype=np.int8), tp_size=[1, 2])
    assert r.reason.ravel().tolist() == ["", "message_bytes must be non-negative, got -81920 B"]     # as solve()
    # integers beyond int64, or the float range
    r = sweep("Llama3_70B", "Research_256", batch_size=256, tp_size=np.array([2 ** 32, 8]), pp_size=np.array([2 ** 32, 1]),
              grid=False)
    assert r.reason.tolist() == ["Infeasible 4D Parallelism: TP(4294967296) * PP(4294967296) * EP(1) > Total(256)", ""]
    r = sweep("Llama3_70B", "Research_256", batch_size=[10 ** 400, 256], tp_size=8)
    assert r.valid.tolist() == [False, True] and r.reason[0].startswith("batch_size must be finite")
    # an empty axis is an empty result
    assert sweep("Llama3_70B", "Research_256", tp_size=[]).shape == (0,)
    # a check that fires on a record field nobody swept names it with its value
    f = catalog.fleet("Research_256")
    bad = replace(f, fabric=replace(f.fabric, latency=-1e-6))
    r = sweep("Llama3_70B", bad, batch_size=256, tp_size=[8], pp_size=[32])
    assert r.reason.ravel().tolist() == ["fabric_latency must be non-negative, got -1e-06"]
    # zero latencies are physical (solve() computes with them): not masked
    r = sweep("Llama3_70B", "Research_256", batch_size=256, tp_size=8, fabric_latency=[0.0, 1e-6],
              nvlink_latency=[0.0], dispatch_tax=[0.0, 1e-5])
    assert r.valid.all()


def test_the_checks_bounds_never_skip_a_rule_a_configuration_breaks():
    from dataclasses import replace

    from mlsysim_sym.bounds import Box, interval, truth
    import sympy as sp

    x, y = sp.symbols("x y", real=True)
    assert interval(x * y, {x: Box(float("nan"), float("nan")), y: Box(2, 3)}).lo == -np.inf     # unknown stays so
    # 98 / 49 is 2: a quotient computed as 98 * (1/49) = 1.9999999999999998 must not freeze floor() at 1
    assert truth(x > 1, {x: Box(2, 2, True, True)}) is True and truth(x > 2, {x: Box(2, 2, True, True)}) is False
    f = catalog.fleet("Research_256")
    f98 = replace(f, count=98, node=replace(f.node, accelerators_per_node=1))
    r = sweep("Llama3_8B", f98, batch_size=256, pp_size=[49], fabric_latency=[-1e-6, 1e-6])
    assert r.reason.ravel().tolist() == ["latency_s must be non-negative, got -1e-06 s", ""]     # as solve() says
    # a NaN among the values does not hide the other values' broken rules
    r = sweep("ResNet50", "Research_256", batch_size=256, tp_size=2, seq_len=[np.nan, -5.0, 2048])
    assert r.reason.ravel().tolist() == ["seq_len must be finite, got nan",
                                         "message_bytes must be non-negative, got -81920.0 B", ""]


def test_a_sweep_reads_an_output_by_its_alias_or_quantity():
    # step_time, T_step and step_latency_total are one output (mlsysim_sym.outputs.OUTPUT_TABLE)
    r = sweep("Llama3_70B", "Research_256", batch_size=256, tp_size=[4, 8], pp_size=4, microbatch_count=8)
    assert np.array_equal(r["step_time"], r["step_latency_total"]) and np.array_equal(r["T_step"], r["step_time"])
    assert np.array_equal(r["memory"], r["node_profile.memory_footprint"])
    with pytest.raises(KeyError, match="no output 'nope'; outputs: dp_communication_latency"):
        r["nope"]


def test_a_list_of_models_is_refused_naming_the_argument():
    # a sweep's axes are solve()'s keywords; the model and the fleet are one each (was: "from_mlsysim expects an
    # mlsysim Workload ... got list")
    with pytest.raises(TypeError, match=r"^model must be one workload \(a catalog name, a plan file, a record or an "
                                        r"mlsysim object\), got a list; to compare several, price each in turn$"):
        sweep(["Llama3_8B", "Llama3_70B"], "Research_256", batch_size=256)
    # no model at all (None), or a number, in the same words (was: "from_mlsysim expects ... got NoneType")
    from mlsysim_sym import DistributedModel
    with pytest.raises(TypeError, match=r"^model must be a workload \(a catalog name, a plan file, a record or an "
                                        r"mlsysim object\), got NoneType$"):
        DistributedModel().solve(None, "Research_256")
    with pytest.raises(TypeError, match=r"^fleet must be a fleet \(.*\), got int$"):
        sweep("Llama3_70B", 256, batch_size=256)


def test_any_quantity_of_the_model_is_an_output_by_name_or_printed_symbol():
    # gradient memory per accelerator, M_grads (printed M_gradients): 70.6e9 fp16 parameters, 2 bytes each,
    # over tp 2, 4, 8 = 70.6, 35.3, 17.65 GB (no ZeRO); T_sync as solve()'s operating point has it
    from mlsysim_sym.operating_point import operating_point_of
    r = sweep("Llama3_70B", "Research_256", batch_size=256, tp_size=[2, 4, 8], outputs=("M_gradients", "T_sync"))
    np.testing.assert_allclose(r["M_gradients"], [70.6e9, 35.3e9, 17.65e9], rtol=1e-12)
    assert r["T_sync"][2] == pytest.approx(operating_point_of("Llama3_70B", "Research_256", batch_size=256,
                                                              tp_size=8).value("T_sync"), rel=1e-12)
    with pytest.raises(KeyError, match="or any quantity of the model"):
        sweep("Llama3_70B", "Research_256", batch_size=256, tp_size=[2, 4], outputs=("M_nothing",))
    # the command line names it the same way, with its unit
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-m", "mlsysim_sym", "sweep", "--tp", "2,4,8", "--output", "M_gradients"],
                       capture_output=True, text=True)
    assert p.returncode == 0 and "17.65 GB" in p.stdout and "M_gradients" in p.stdout


def test_a_sweep_marks_the_schedules_no_framework_runs():
    # batch 256 over tp 8 x pp 4 on 256 GPUs: 8 replicas of 32 samples; 64 microbatches of a replica's 32 samples
    # is no schedule (can_run), solve() prices it as mlsysim does (and warns): the sweep says so (it listed it as
    # one of "64 of 64 valid configurations" without a mark)
    from mlsysim_sym.arguments import arguments
    r = sweep("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4,
              microbatch_count=[1, 2, 4, 8, 16, 32, 64])
    assert r.runnable.tolist() == [True] * 6 + [False] and bool(np.all(r.valid))
    assert [arguments("Llama3_70B", "Research_256", dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=m))
            .runnable for m in (32, 64)] == [True, False]
    assert r.to_dict()["runnable"][-1] is False and "(1 of them no framework runs)" in " ".join(repr(r).split())
    table = r.table("mfu")
    row = next(line for line in table.splitlines() if line.strip().startswith("64 "))
    assert row.endswith(" †") and "† no framework runs this schedule" in table
    # a batch of 300 does not split over 8 replicas, whatever the microbatches
    r = sweep("Llama3_70B", "Research_256", batch_size=[256, 300], tp_size=8, pp_size=4, microbatch_count=8)
    assert r.runnable.tolist() == [True, False]


def test_without_a_pipeline_the_extended_models_microbatches_split_a_replicas_samples_too():
    # batch 1,024 over tp 2 on 1,024 B200: 512 replicas of 2 samples. The extended model pays a step's layer passes
    # per microbatch without a pipeline too (16 microbatches: 7.82 s a step against 5.30 s at 1), so 16 microbatches
    # of 2 samples is no schedule there, as its warning says: solve(), sweep() and the configuration agree. mlsysim's
    # model never reads m without a pipeline (3.954 s at 1 and at 16): runnable there, as before.
    kw = dict(batch_size=1024, seq_len=8192, precision="bf16", tp_size=2, microbatch_count=16)
    with pytest.warns(UserWarning, match=r"microbatch_count \(16\) x gradient_accumulation_steps \(1\) > the 2 "
                                         "samples a replica trains per step"):
        r = DistributedModel(fidelity="extended").solve("modern/Llama-3.1-70B", "modern/B200-1024", **kw)
    assert r.runnable is False and round(r.step_latency_total, 2) == 7.82
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = sweep("modern/Llama-3.1-70B", "modern/B200-1024", fidelity="extended", **{**kw, "microbatch_count": [1, 2,
                                                                                                            16]})
        assert s.runnable.tolist() == [True, True, False]
        twin = sweep("modern/Llama-3.1-70B", "modern/B200-1024", **{**kw, "microbatch_count": [1, 16]})
    assert twin.runnable.tolist() == [True, True] and twin["step_time"][0] == twin["step_time"][1]


def test_outputs_by_their_aliases_as_sensitivities_and_required_take_them():
    # step_time, memory and throughput are solve()'s step_latency_total, memory_footprint and
    # effective_throughput (the bundled example at tp 8, pp 4, m 8: 3.369 s, 59.41 GB, 76.0 samples/s)
    from mlsysim_sym import DistributedModel
    kw = dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
    r = sweep("Llama3_70B", "Research_256", outputs=["step_time", "memory", "throughput"], **kw)
    s = DistributedModel().solve("Llama3_70B", "Research_256", **kw)
    assert float(r["step_time"]) == s.step_latency_total and float(r["throughput"]) == s.effective_throughput
    assert float(r["memory"]) == s.node_profile.memory_footprint


def test_marked_cells_keep_the_numbers_aligned_and_precisions_get_a_note():
    # tp 1 and 2 at pp 4 run no schedule a framework runs with m 16 here (†); the unmarked cells are padded to the
    # mark's width, so a right-aligned column keeps its numbers' last digits in one place
    kw = dict(batch_size=1024, seq_len=8192, pp_size=4, microbatch_count=16, precision="bf16")
    r = sweep("modern/Llama-3.1-70B", "modern/H100-SXM-1024", fidelity="extended", tp_size=[1, 2, 4, 8], **kw)
    rows = [line for line in r.table("step_time").splitlines() if line.strip()[:1].isdigit()]
    ends = {line.rstrip(" †").rindex("s") for line in rows}
    assert len(rows) == 4 and len(ends) == 1 and any(line.endswith("†") for line in rows)
    # MFU over precisions: each counts against its own peak, and the table says so
    p = sweep("modern/Llama-3.1-8B", "modern/B200-1024", batch_size=1024, precision=["bf16", "fp8"])
    assert "mfu counts each precision against its own peak" in " ".join(p.table("mfu").split())
    assert "own peak" not in p.table("throughput")


def test_the_json_of_a_masked_configuration_holds_no_value_and_counts_are_whole():
    # tp 0 breaks solve()'s range check and tp 3 the split: neither has a value, not even "runnable" or "feasible"
    # (tp 0 said runnable: true, feasible: false); tp 8 leaves 256 / 8 = 32 replicas, a count: 32, not 32.0
    d = sweep("Llama3_70B", "Research_256", batch_size=256, tp_size=[0, 3, 8]).to_dict()
    assert d["valid"] == [False, False, True] and d["runnable"] == [None, None, True]
    assert d["outputs"]["dp"] == [None, None, 32] and isinstance(d["outputs"]["dp"][2], int)
    assert d["outputs"]["node_profile.feasible"][:2] == [None, None]
    assert d["outputs"]["node_profile.memory_bound"][2] in (0, 1) and d["outputs"]["mfu"][2] > 0


def test_a_sweep_gives_what_solve_gives_and_says_what_it_was_given():
    # the extended model's own outputs come by default, as solve()'s result.extended has them, and they equal
    # solve()'s at each configuration
    kw = dict(batch_size=256, tp_size=[2, 8], pp_size=4, microbatch_count=8)
    r = sweep("Llama3_70B", "Research_256", fidelity="extended", **kw)
    one = DistributedModel(fidelity="extended").solve("Llama3_70B", "Research_256", batch_size=256, tp_size=8,
                                                      pp_size=4, microbatch_count=8)
    assert set(one.extended) <= set(r.values)
    for name, v in one.extended.items():
        assert np.broadcast_to(r[name], r.shape)[1] == pytest.approx(v, rel=1e-12), name
    # a replica's field by its name alone, as solve()'s r.node_profile.memory_footprint reads it
    assert np.array_equal(r["memory_footprint"], r["node_profile.memory_footprint"])
    # to_dict() holds the configuration (the model and fleet as given, every argument, a list where it varies),
    # so a script can join the outputs to their inputs; with grid=False, "swept" gives each configuration's values
    d = r.to_dict()
    assert d["configuration"]["model"] == "Llama3_70B" and d["configuration"]["fidelity"] == "extended"
    assert d["configuration"]["tp_size"] == [2, 8] and d["configuration"]["pp_size"] == 4
    assert d["configuration_line"].startswith("Llama-3.1-70B on Research Cluster (256 GPUs): batch 256, tp 2,8")
    flat = sweep("Llama3_70B", "Research_256", grid=False, batch_size=[128, 256], tp_size=[2, 8]).to_dict()
    assert flat["swept"] == {"batch_size": [128, 256], "tp_size": [2, 8]} and flat["shape"] == [2]


def test_three_swept_axes_tabulate_a_row_per_configuration():
    # --output with three swept options printed the summary of every output (min, median, max), not the outputs
    # asked for; now a row each. Two rows worked elsewhere: tp 8, pp 4, m 8 is the README's 3.3686 s, and tp 8,
    # pp 2, m 4 is mlsysim's 3856.39 ms (tests/test_extreme_magnitudes.py)
    r = sweep("Llama3_70B", "Research_256", batch_size=256, tp_size=[4, 8], pp_size=[2, 4], microbatch_count=[4, 8])
    lines = r.table(["mfu", "step_time"]).splitlines()
    assert lines[0].split() == ["tp_size", "pp_size", "microbatch_count", "mfu", "step_time"]
    assert len(lines) == 1 + 8 + 1                      # the header, 2 x 2 x 2 rows, the note on the * mark
    assert lines[8].split() == ["8", "4", "8", "0.2604", "3.369", "s"]
    assert lines[5].split() == ["8", "2", "4", "0.2275", "*", "3.856", "s", "*"]
