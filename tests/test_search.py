"""Parallelism search, and the mirror of mlsysim's ParallelismOptimizer."""
import warnings

import pytest

from mlsysim_sym import DistributedModel, ParallelismOptimizer, catalog, search
from mlsysim_sym.optimize import divisors

mlsysim = pytest.importorskip("mlsysim")
import mlsysim_oracle as oracle  # noqa: E402


def test_divisors():
    assert divisors(384) == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 384]
    assert len(divisors(100000)) == 36          # 2^5 * 5^5: 6 x 6


def test_search_finds_the_best_split_over_every_divisor():
    # Kempner_H100_384 has 4-GPU nodes and 384 = 2^7 * 3 accelerators: splits with 3 are candidates
    r = search("Llama3_70B", "Kempner_H100_384", 768, top_k=5, zero_stage=(0,), overlap_comm=(True,))
    assert len(r.candidates) == 5 and r.feasible > 100
    scores = [c.objective for c in r.candidates]
    assert scores == sorted(scores, reverse=True)
    best = r.best
    # the reported breakdown is an ordinary solve() of the reported configuration, and mlsysim agrees
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = DistributedModel().solve("Llama3_70B", "Kempner_H100_384", batch_size=768, **best.config)
        theirs = oracle.mlsysim_solve("Llama3_70B", "Kempner_H100_384", batch_size=768, **best.config)
    assert ours.mfu == best.objective and ours.node_profile.feasible
    assert oracle.rel_err(best.objective, theirs["mfu"]) <= 1e-12
    # no feasible configuration in the space beats it: check every split at the best schedule by hand
    for tp in divisors(384):
        for pp in divisors(384 // tp):
            cfg = dict(best.config, tp_size=tp, pp_size=pp)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                other = DistributedModel().solve("Llama3_70B", "Kempner_H100_384", batch_size=768, **cfg)
            if other.node_profile.feasible:
                assert other.mfu <= best.objective


def test_search_objectives_and_errors():
    thr = search("Mixtral_8x7B", "Training_1K", 1024, objective="throughput", top_k=3)
    step = search("Mixtral_8x7B", "Training_1K", 1024, objective="step_time", top_k=3)
    assert thr.best.result.effective_throughput >= thr.candidates[-1].result.effective_throughput
    assert step.best.result.step_latency_total <= step.candidates[-1].result.step_latency_total
    assert any(c.config["ep_size"] > 1 for c in thr.candidates + step.candidates) or thr.feasible > 0
    with pytest.raises(ValueError, match="objective must be one of"):
        search("Llama3_8B", "Lab_64_H100", 64, objective="speed")
    with pytest.raises(ValueError, match="no configuration fits"):
        search("GPT4", "Lab_64_A100", 64, tp_size=(1,), pp_size=(1,), zero_stage=(0,))


@pytest.mark.parametrize("fleet", catalog.fleet_names())
def test_parallelism_optimizer_mirror_matches_mlsysim_on_every_language_model(fleet):
    ms_fleet = oracle.registry_cluster(fleet)
    for i, model in enumerate(catalog.workload_names("Language")):
        batch = (256, 1024, 4096)[i % 3]
        kw = dict(batch_size=batch, overlap_comm=bool(i % 2), activation_recomputation=i % 4 == 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                theirs = mlsysim.solvers.ParallelismOptimizer().solve(oracle.registry_workload(model), ms_fleet, **kw)
            except ValueError as exc:
                with pytest.raises(ValueError) as ours_exc:
                    ParallelismOptimizer().solve(model, fleet, **kw)
                assert str(ours_exc.value) == str(exc)
                continue
            ours = ParallelismOptimizer().solve(model, fleet, **kw)
        assert ours.best_config == theirs.best_config, (model, fleet)
        assert ours.total_searched == theirs.total_searched
        assert oracle.rel_err(ours.best_mfu, theirs.best_mfu) <= 1e-12
        assert oracle.rel_err(ours.best_step_time, theirs.best_step_time.m_as("s")) <= 1e-12
        assert oracle.rel_err(ours.best_throughput, theirs.best_throughput.m_as("1/s")) <= 1e-12
        assert [c["config"] for c in ours.top_candidates] == [c["config"] for c in theirs.top_candidates]
        for a, b in zip(ours.top_candidates, theirs.top_candidates):
            assert oracle.rel_err(a["mfu"], b["mfu"]) <= 1e-12
            assert oracle.rel_err(a["step_time"], b["step_time"].m_as("s")) <= 1e-12


def test_search_leaves_out_splits_with_more_replicas_than_samples():
    r = search("Llama3_70B", "Meta_Llama3_16K_H100", 4096, top_k=20)
    assert all(c.dp <= 4096 for c in r.candidates)
    assert r.best.config["tp_size"] * r.best.config["pp_size"] * r.best.config["ep_size"] >= 16384 // 4096


def test_search_takes_solve_keywords_for_its_choices():
    # one value or a sequence, under solve()'s names; an unknown name is an error that lists the allowed ones
    r = search("Llama3_8B", "Lab_64_H100", 64, tp_size=8, pp_size=[1, 2], microbatch_count=4, top_k=3)
    assert {c.config["tp_size"] for c in r.candidates} == {8} and {c.config["microbatch_count"] for c in r.candidates} == {4}
    with pytest.raises(TypeError, match="search\\(\\) got an unexpected argument 'tp'"):
        search("Llama3_8B", "Lab_64_H100", 64, tp=8)
    with pytest.raises(TypeError, match="one value for precision"):
        search("Llama3_8B", "Lab_64_H100", 64, precision=["fp16", "fp8"])
