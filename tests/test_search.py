"""Parallelism search, and the mirror of mlsysim's ParallelismOptimizer."""
import json
import warnings

import numpy as np
import pytest

from mlsysim_sym import DistributedModel, ParallelismOptimizer, catalog, search
from mlsysim_sym.inputs import as_workload
from mlsysim_sym.optimize import CONFIG_KEYS, can_run, divisors

mlsysim = pytest.importorskip("mlsysim")
import mlsysim_oracle as oracle  # noqa: E402


def _runs(cfg, dp, batch, layers, ga=1):
    """The schedule rules, written out independently of optimize.can_run."""
    if batch % (dp * ga):
        return False
    pp, m, v = cfg["pp_size"], cfg["microbatch_count"], cfg["v_stages"]
    if pp == 1:
        return True
    per_step = batch // (dp * ga)
    if m > per_step or per_step % m or (layers is not None and layers < pp):
        return False
    # interleaved: equal chunks, the embedding and the loss counted as a layer each or not (Megatron-Core's
    # account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split)
    even = layers is None or any((layers + e) % (pp * v) == 0 for e in (0, 1, 2))
    return v == 1 or (m % pp == 0 and even)


def _flat(text):
    """Text with its line breaks and runs of spaces as one space (headers wrap)."""
    return " ".join(text.split())


def _solve(model, fleet, batch, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DistributedModel().solve(model, fleet, batch_size=batch, **kw)


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
    # no feasible configuration in the space beats it: check every split at the best schedule by hand.
    # Since search keeps only runnable schedules, the comparison is with the splits whose schedule
    # runs (tp 3, pp 8, v 4 scores higher, but 80 layers do not split into 8 x 4 chunks)
    beaten_only_by_unrunnable = 0
    for tp in divisors(384):
        for pp in divisors(384 // tp):
            cfg = dict(best.config, tp_size=tp, pp_size=pp)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                other = DistributedModel().solve("Llama3_70B", "Kempner_H100_384", batch_size=768, **cfg)
            if other.node_profile.feasible:
                if _runs(cfg, other.parallelism["dp"], 768, 80):
                    assert other.mfu <= best.objective
                elif other.mfu > best.objective:
                    beaten_only_by_unrunnable += 1
    assert beaten_only_by_unrunnable > 0        # the rules matter here


def test_search_objectives_and_errors():
    thr = search("Mixtral_8x7B", "Training_1K", 1024, objective="throughput", top_k=3)
    step = search("Mixtral_8x7B", "Training_1K", 1024, objective="step_time", top_k=3)
    assert thr.best.result.effective_throughput >= thr.candidates[-1].result.effective_throughput
    assert step.best.result.step_latency_total <= step.candidates[-1].result.step_latency_total
    assert any(c.config["ep_size"] > 1 for c in thr.candidates + step.candidates) or thr.feasible > 0
    with pytest.raises(ValueError, match="objective must be one of"):
        search("Llama3_8B", "Lab_64_H100", 64, objective="speed")
    # the result field names the same objective (sensitivities and required take both names)
    by_field = search("Mixtral_8x7B", "Training_1K", 1024, objective="effective_throughput", top_k=3)
    assert [c.config for c in by_field.candidates] == [c.config for c in thr.candidates]
    # the error says how far the leanest is: GPT-4's experts over ep 64 with recomputation hold 958 GB an A100
    # (solve(..., ep_size=64, activation_recomputation=True): 958,146,075,520 B), against its 80 GiB (85.9 GB)
    with pytest.raises(ValueError, match=r"^no configuration fits in accelerator memory \(the leanest holds 958 GB "
                                         r"per accelerator, which has 85\.9 GB\); .*, or add accelerators$"):
        search("GPT4", "Lab_64_A100", 64, tp_size=(1,), pp_size=(1,), zero_stage=(0,))
    r = DistributedModel().solve("GPT4", "Lab_64_A100", batch_size=64, ep_size=64, activation_recomputation=True)
    assert r.node_profile.memory_footprint == pytest.approx(958.146e9, rel=1e-5)


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


@pytest.mark.parametrize("runnable", [False, True])
def test_a_search_whose_every_split_has_more_replicas_than_samples_says_so(runnable):
    # tp 1 pp 1 on 64 GPUs: 64 replicas for 8 samples; solve() prices it (one sample a replica, with a warning,
    # 0.41 GB of 85.9 GB), so the search's reason is the replicas, not the memory
    with pytest.raises(ValueError, match=r"^every split has more data-parallel replicas than batch_size has "
                       r"samples \(the fewest: 64 replicas, batch_size 8\): raise batch_size to at least 64"):
        search("ResNet50", "Lab_64_H100", 8, tp_size=[1], pp_size=[1], runnable=runnable)


def test_a_search_whose_replicas_times_accumulation_steps_outnumber_the_samples_says_so():
    # tp 8 pp 1 on 256 GPUs: 32 replicas of 1 sample each at batch 32, which 4 accumulation steps cannot split;
    # the least GA among the choices (4 of 4, 8) sets how many samples the batch needs: 32 x 4 = 128
    with pytest.raises(ValueError, match=r"^every split has more data-parallel replicas times "
                       r"gradient_accumulation_steps than batch_size has samples \(the fewest: 32 replicas x 4 "
                       r"steps = 128, batch_size 32\): raise batch_size to at least 128, lower gradient_acc"):
        search("Llama3_70B", "Research_256", 32, tp_size=[8], pp_size=[1], gradient_accumulation_steps=[4, 8])
    # at 128 samples the same search ranks its configurations
    assert search("Llama3_70B", "Research_256", 128, tp_size=[8], pp_size=[1], gradient_accumulation_steps=4).best


def test_search_takes_solve_keywords_for_its_choices():
    # one value or a sequence, under solve()'s names; an unknown name is an error that lists the allowed ones
    r = search("Llama3_8B", "Lab_64_H100", 64, tp_size=8, pp_size=[1, 2], microbatch_count=4, top_k=3)
    assert {c.config["tp_size"] for c in r.candidates} == {8} and {c.config["microbatch_count"] for c in r.candidates} == {4}
    with pytest.raises(TypeError, match="search\\(\\) got an unexpected keyword argument 'tp'"):
        search("Llama3_8B", "Lab_64_H100", 64, tp=8)
    # a list of another argument is searched too: an axis of its own and a column of the table
    r = search("Llama3_8B", "Lab_64_H100", 64, precision=["fp16", "fp8"], tp_size=1, pp_size=1, top_k=2,
               objective="mfu")
    assert {c.config["precision"] for c in r.candidates} == {"fp16", "fp8"} and " precision " in str(r)
    # by default a search across precisions ranks by throughput (MFU counts each against its own peak): mlsysim
    # prices FP8 at twice FP16's peak, so both first rows are FP8
    d = search("Llama3_8B", "Lab_64_H100", 64, precision=["fp16", "fp8"], tp_size=1, pp_size=1, top_k=2)
    assert d.objective == "throughput" and {c.config["precision"] for c in d.candidates} == {"fp8"}
    for c in r.candidates:
        assert c.result.mfu == _solve("Llama3_8B", "Lab_64_H100", 64, **c.config).mfu
    assert max(map(len, str(r).splitlines())) <= 80


# ---- runnable schedules, ZeRO rows, to_dict -------------------------------------------------------
CASES = [("Llama3_70B", "Research_256", 256, {}),
         ("Mixtral_8x7B", "Training_1K", 1024, {}),                      # MoE, 32 layers
         ("GPT3", "Training_512_H100", 1536, {}),                        # 96 layers
         ("Llama3_70B", "Research_256", 256, {"gradient_accumulation_steps": 2}),
         ("StableDiffusion_v1_5", "Lab_64_H100", 64, {})]                 # no layer count


@pytest.mark.parametrize("model,fleet,batch,kw", CASES, ids=[f"{c[0]}-{c[1]}-{c[3]}" for c in CASES])
def test_search_recommends_only_schedules_that_run(model, fleet, batch, kw):
    r = search(model, fleet, batch, top_k=15, **kw)
    layers = as_workload(model).layers
    ga = kw.get("gradient_accumulation_steps", 1)
    assert len(r.candidates) == 15 and r.unrunnable > 0 and r.runnable
    for c in r.candidates:
        cfg, dp = c.config, c.dp
        pp, m, v = cfg["pp_size"], cfg["microbatch_count"], cfg["v_stages"]
        assert dp == c.result.parallelism["dp"] and batch % (dp * ga) == 0
        if pp > 1:
            assert m <= batch // (dp * ga) and (batch // (dp * ga)) % m == 0
            if layers is not None:
                assert layers >= pp
            if v > 1:
                assert m % pp == 0
                assert layers is None or min((layers + e) % (pp * v) for e in range(3)) == 0
    # the same space with the rules off: as many configurations, none left out, more (or as many) ranked
    off = search(model, fleet, batch, top_k=1, runnable=False, **kw)
    assert off.searched == r.searched and off.unrunnable == 0 and off.feasible > r.feasible
    assert off.best.objective >= r.best.objective


def test_the_counts_of_a_small_search_match_solve_one_by_one():
    # tp 8 on Research_256 (dp = 32 / pp): every pipeline depth, microbatch count and virtual stage count
    pps, ms, vs = (1, 2, 4, 8, 16, 32), (1, 2, 4, 8, 16, 32, 64, 128), (1, 2, 4)
    r = search("Llama3_70B", "Research_256", 256, tp_size=8, pp_size=pps, microbatch_count=ms, v_stages=vs,
               zero_stage=0, activation_recomputation=False, overlap_comm=True, top_k=1000)
    searched = unrunnable = feasible = 0
    for pp in pps:
        for m in ms if pp > 1 else ms[:1]:          # without a pipeline m and v change nothing
            for v in vs if pp > 1 else vs[:1]:
                cfg = dict(tp_size=8, pp_size=pp, microbatch_count=m, v_stages=v, zero_stage=0,
                           activation_recomputation=False, overlap_comm=True)
                res = _solve("Llama3_70B", "Research_256", 256, **cfg)
                searched += 1
                if not _runs(cfg, res.parallelism["dp"], 256, 80):
                    unrunnable += 1
                elif res.node_profile.feasible:
                    feasible += 1
    # by hand: 120 pipelined schedules (5 depths x 8 x 3) of which 54 run -- v 1: m <= 256 / dp, 34;
    # v 2 (pp 2, 4, 8; 80 % 2pp == 0) and v 4 (pp 2, 4): m % pp == 0 too, 12 + 8 -- so 66 do not
    assert (r.searched, r.unrunnable, r.feasible) == (searched, unrunnable, feasible) == (121, 66, 47)
    assert len(r.candidates) == feasible            # zero_stage=0 only: one row per configuration


def test_runnable_false_reproduces_the_old_ranking():
    # the example: without the rules, tp 2 pp 16 dp 8 with 128 microbatches of 32 samples and
    # v 4 (80 layers over 64 chunks) ranks first, as before; its ZeRO stages 0-3 are now one row
    old = search("Llama3_70B", "Research_256", batch_size=256, top_k=5, runnable=False, v_stages=(1, 2, 4))
    rows = [(c.config["tp_size"], c.config["pp_size"], c.dp, c.config["microbatch_count"], c.config["v_stages"],
             c.config["zero_stage"], c.zero_stages, c.config["overlap_comm"], c.config["activation_recomputation"])
            for c in old.candidates]
    assert rows == [(2, 16, 8, 128, 4, 0, (0, 1, 2, 3), True, False), (1, 32, 8, 128, 4, 0, (0, 1, 2, 3), True, False),
                    (2, 32, 4, 128, 4, 0, (0, 1, 2, 3), True, False), (4, 16, 4, 128, 4, 0, (0, 1, 2, 3), True, False),
                    (2, 16, 8, 64, 4, 0, (0, 1, 2, 3), True, False)]
    assert [round(c.objective, 12) for c in old.candidates] == [0.450125146343, 0.448477989338, 0.447501440797,
                                                                0.440523774461, 0.438542898848]
    assert (old.searched, old.feasible, old.unrunnable) == (11266, 9801, 0)
    assert "schedule rules off: runnable=False" in _flat(str(old))
    # with the rules: the best schedule runs (16 samples per replica in 16 microbatches, 80 layers in 4 x 4)
    new = search("Llama3_70B", "Research_256", batch_size=256, top_k=5, v_stages=(1, 2, 4))
    assert (new.searched, new.feasible, new.unrunnable) == (11266, 4275, 6610)
    b = new.best
    assert (b.config["tp_size"], b.config["pp_size"], b.dp, b.config["microbatch_count"], b.config["v_stages"],
            b.config["zero_stage"], b.config["overlap_comm"], b.config["activation_recomputation"]) == \
        (4, 4, 16, 16, 4, 0, True, False)
    assert b.objective == pytest.approx(0.402134, abs=1e-6) and b.objective < old.best.objective
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = oracle.mlsysim_solve("Llama3_70B", "Research_256", batch_size=256, **b.config)
    assert oracle.rel_err(b.objective, theirs["mfu"]) <= 1e-12       # and mlsysim prices it the same
    assert not can_run(16, 8, 128, 4, 256, layers=80) and can_run(4, 16, 16, 4, 256, layers=80)


@pytest.mark.parametrize("model,fleet,batch", [("Llama3_70B", "Research_256", 256), ("GPT3", "Training_512_H100", 1536)])
def test_zero_stages_that_tie_share_one_row_that_shows_each_stages_memory(model, fleet, batch):
    r = search(model, fleet, batch, top_k=8)
    schedules = [tuple((k, v) for k, v in c.config.items() if k != "zero_stage") for c in r.candidates]
    assert len(set(schedules)) == len(schedules)    # no two rows differ only in zero_stage
    for c in r.candidates:
        stages = c.zero_stages
        assert c.config["zero_stage"] == min(stages) == stages[0]      # the smallest stage that fits
        for z in range(4):
            res = _solve(model, fleet, batch, **dict(c.config, zero_stage=z))
            if z in c.memory_by_zero:
                assert c.memory_by_zero[z] == res.node_profile.memory_footprint and res.node_profile.feasible
                assert res.mfu == pytest.approx(c.objective, rel=1e-12)
            elif c.dp > 1:      # a stage left out does not fit (ZeRO changes memory only in this model)
                assert not res.node_profile.feasible
            else:               # one replica: ZeRO shards nothing, the search prices stage 0 only
                assert stages == (0,) and res.node_profile.memory_footprint == c.memory_by_zero[0]
        if c.dp > 1 and len(stages) > 1:    # more ZeRO, less memory
            mem = [c.memory_by_zero[z] for z in stages]
            assert mem == sorted(mem, reverse=True) and mem[0] > mem[-1]
    text = str(r)
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "left out as not runnable" in _flat(text) and "ZeRO" in text and " rec" in text and " ovl" in text


def test_the_table_shows_memory_per_zero_stage_with_units():
    r = search("Llama3_70B", "Research_256", 256, top_k=3, v_stages=(1, 2, 4))
    best = r.best
    # tp 4 pp 4 dp 16: 82.7 GB without ZeRO, 16.1 GB at ZeRO 3
    assert [round(best.memory_by_zero[z] / 1e9, 1) for z in range(4)] == [82.7, 33.1, 24.4, 16.1]
    lines = str(r).splitlines()
    row = next(line for line in lines if line.lstrip().startswith("1 "))
    # the columns with one value in every row (ZeRO 0-3, no recompute, overlap) move to the legend: 80 columns
    assert row.split() == ["1", "4", "x", "4", "x", "1", "x", "16", "16", "4", "0.4021", "2.181", "s", "117.4",
                           "82.7/33.1/24.4/16.1", "GB"]
    assert "in every row: ZeRO 0-3, rec no, ovl yes" in _flat(str(r))
    assert "4,275 feasible of 11,266 configurations (6,610 left out as not runnable)" in _flat(str(r))
    assert all(len(line) <= 80 for line in lines)
    html = r._repr_html_()
    assert "82.7/33.1/24.4/16.1 GB" in html and "ZeRO stages" in html and "recomputation" in html


def test_to_dict_is_json_and_matches_solve():
    r = search("Mixtral_8x7B", "Training_1K", 1024, top_k=4, objective="throughput")
    d = json.loads(json.dumps(r.to_dict()))
    assert d == r.to_dict()         # plain values only: the round trip changes nothing
    assert (d["objective"], d["searched"], d["feasible"], d["unrunnable"]) == \
        ("throughput", r.searched, r.feasible, r.unrunnable)
    assert d["configuration_line"].startswith("Mixtral-8x7B on Training Cluster (1024 GPUs): batch 1024")
    assert len(d["results"]) == 4

    def plain(x):
        if isinstance(x, dict):
            return all(type(k) is str and plain(v) for k, v in x.items())
        if isinstance(x, list):                     # a row's notes: sentences
            return all(plain(v) for v in x)
        return type(x) in (int, float, bool, str)
    for row, c in zip(d["results"], r.candidates):
        assert plain(row)
        config = {k: row[k] for k in CONFIG_KEYS}
        assert config == c.config
        assert type(row["activation_recomputation"]) is bool and type(row["tp_size"]) is int
        res = _solve("Mixtral_8x7B", "Training_1K", 1024, **config)
        assert row["dp"] == res.parallelism["dp"] == c.dp
        assert row["mfu"] == res.mfu and row["step_latency_total"] == res.step_latency_total
        assert row["effective_throughput"] == res.effective_throughput == c.objective
        assert row["memory_per_accelerator"] == res.node_profile.memory_footprint
        assert row["memory_per_accelerator_by_zero_stage"] == {
            str(z): _solve("Mixtral_8x7B", "Training_1K", 1024, **dict(config, zero_stage=z)).node_profile.memory_footprint
            for z in c.zero_stages}
        assert row["memory_per_accelerator_by_zero_stage"][str(row["zero_stage"])] == row["memory_per_accelerator"]


def test_a_search_where_nothing_runnable_fits_says_so():
    # pp 16 with 3 microbatches: 3 divides none of the 16..256 samples per replica
    kw = dict(pp_size=16, microbatch_count=3, v_stages=1)
    with pytest.raises(ValueError, match="no runnable configuration fits .* pass runnable=False"):
        search("Llama3_70B", "Research_256", 256, **kw)
    r = search("Llama3_70B", "Research_256", 256, runnable=False, top_k=1, **kw)
    assert r.best.config["microbatch_count"] == 3 and r.best.config["pp_size"] == 16


def test_degree_ranges_are_cut_to_the_fleets_divisors_before_their_product():
    # tp and pp from 1 to 100,000 on 256 GPUs: 10^10 pairs as a product; only the 9 divisors of 256 each can
    # split the fleet, so the search is the one over those (it ran past 90 s before, building the product)
    divisors = tuple(d for d in range(1, 257) if 256 % d == 0)
    assert divisors == (1, 2, 4, 8, 16, 32, 64, 128, 256)
    wide = search("Llama3_70B", "Research_256", 256, tp_size=range(1, 100_001), pp_size=range(1, 100_001), top_k=3)
    narrow = search("Llama3_70B", "Research_256", 256, tp_size=divisors, pp_size=divisors, top_k=3)
    assert [c.config for c in wide.candidates] == [c.config for c in narrow.candidates]
    assert wide.best.objective == narrow.best.objective


def test_a_table_too_wide_keeps_the_column_it_ranks_by():
    # two more columns (congestion and precision given as lists): the table sheds the time it does not rank by
    kw = dict(top_k=12, overlap_efficiency=[0.5, 0.85], congestion_factor=[1.0, 1.2], precision=["fp16", "fp8"])
    for objective, kept, dropped in (("throughput", "samples/s", "step"), ("mfu", "MFU", "samples/s")):
        r = search("Llama3_70B", "Research_256", 256, objective=objective, **kw)
        text = str(r)
        header = next(line for line in text.splitlines() if line.lstrip().startswith("#")).split()
        assert kept in header and dropped not in header, (objective, header)
        assert f"left out for the width: {dropped} (to_dict() and --json give every column)" in _flat(text)
        assert max(map(len, text.splitlines())) <= 80
        # the memory at the kept ZeRO stage only, and the legend says so; the swept overlap efficiency and
        # congestion by their symbols, which the legend names
        assert "memory/acc at zero_stage" in _flat(text)
        if objective == "throughput":       # (ranked by MFU, the table fits with their words)
            assert {"η_ov", "c_cong"} <= set(header)
            assert "η_ov: overlap efficiency; c_cong: congestion factor" in _flat(text)
    # one row too wide for a line: a column a line (one row is no pattern to move to the legend)
    r = search("Llama3_70B", "Research_256", 256, objective="throughput", **dict(kw, top_k=1))
    lines = str(r).splitlines()
    assert "  tp x pp x ep x dp  4 x 16 x 1 x 4" in lines and "  precision                     fp8" in lines
    assert "  overlap efficiency           0.85" in lines      # its words: a line has room for them
    assert "in every row" not in str(r) and max(map(len, lines)) <= 80


def test_a_bad_top_k_batch_or_seed_is_refused_by_name():
    # they reached numpy ("Partition index must be integer", "cannot convert float NaN to integer",
    # "SeedSequence expects int ...")
    from mlsysim_sym import uncertainty
    with pytest.raises(ValueError, match=r"^top_k must be a whole number >= 1, got 2.5$"):
        search("Llama3_70B", "Research_256", batch_size=256, top_k=2.5)
    with pytest.raises(ValueError, match=r"^batch_size must be a whole number >= 1 \(every configuration is ranked "
                                         r"at one batch\), got nan$"):
        search("Llama3_70B", "Research_256", batch_size=float("nan"))
    with pytest.raises(ValueError, match=r"seed must be a whole number >= 0, got 'a'"):
        uncertainty("Llama3_70B", "Research_256", {"efficiency": 0.1}, samples=100, seed="a", batch_size=256)
    # a whole number as a float is a batch: 256.0 ranks as 256
    assert search("Llama3_70B", "Research_256", batch_size=256.0, top_k=1).best.config == \
        search("Llama3_70B", "Research_256", batch_size=256, top_k=1).best.config


def test_overlap_choices_that_tie_share_one_row():
    # ZeRO-3 under the FSDP overlap: the step reads fsdp_overlap, not overlap_comm, so both overlap choices price
    # the same step (a 0.2913 MFU at tp 1 each, as solve() says) and the first, no overlap, stays
    kw = dict(zero_stage=3, fsdp_overlap=True)
    r = search("modern/Llama-3.1-8B", "modern/H100-SXM-1024", 1024, top_k=4, tp_size=(1, 2), pp_size=(1,),
               activation_recomputation=False, fidelity="extended", **kw)
    # and m, which the extended model reads at pp 1: one sample a replica at tp 1 (m 1), two at tp 2 (m 1 or 2)
    assert [(c.config["tp_size"], c.config["overlap_comm"], c.config["microbatch_count"]) for c in r.candidates] \
        == [(1, False, 1), (2, False, 1), (2, False, 2)]
    one = [DistributedModel(fidelity="extended").solve("modern/Llama-3.1-8B", "modern/H100-SXM-1024",
                                                       batch_size=1024, overlap_comm=ov, **kw).mfu
           for ov in (False, True)]
    assert one[0] == one[1] == r.best.objective and round(one[0], 4) == 0.2913


def test_a_search_over_the_node_count_judges_each_fleets_own_replicas():
    # Llama-3.1-70B, batch 256, tp 8 on 24 or 32 nodes of 8: 24 nodes give 6, 12 or 24 replicas at pp 4, 2, 1, none
    # of which divides 256 (can_run's first rule); the rules were judged on the base fleet's 32 nodes (8, 16, 32
    # replicas), so the 24-node rows ranked first as runnable
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = search("Llama3_70B", "Research_256", 256, count=[24, 32], tp_size=[8], pp_size=[1, 2, 4], top_k=50)
        loose = search("Llama3_70B", "Research_256", 256, count=[24, 32], tp_size=[8], pp_size=[1, 2, 4],
                       top_k=50, runnable=False)
    rows = [c.to_dict() for c in s.candidates]
    assert rows and {r["count"] for r in rows} == {32} and all(256 % r["dp"] == 0 for r in rows)
    assert rows[0]["dp"] == 8 and (rows[0]["pp_size"], rows[0]["microbatch_count"]) == (4, 32)
    assert 24 in {c.to_dict()["count"] for c in loose.candidates}



def test_a_search_over_the_fleets_size_is_the_union_of_a_search_of_each_size():
    # the splits were those of the base fleet's size alone (32 nodes of 8: 256 accelerators), so a split of only
    # another size was never tried: 12 or 16 nodes (96 or 128) lost every split of 96 that does not divide 256 (tp 3,
    # pp 3, ...), and the counts folded a size into the other where neither fit (2,913 searched, against 4,150 +
    # 2,214 when each size is searched alone)
    kw = dict(microbatch_count=(1, 4, 8), v_stages=(1, 2))
    both = search("Llama3_70B", "Research_256", 384, count=[12, 16], **kw)
    each = [search("Llama3_70B", "Research_256", 384, count=n, **kw) for n in (12, 16)]
    assert (both.searched, both.unrunnable, both.feasible) == (4150 + 2214, 1406 + 758, 1260 + 766)
    assert both.best.objective == max(r.best.objective for r in each) == each[0].best.objective
    assert both.best.config["count"] == 12 and both.best.dp == 48
    # DeepSeek-V3 on GB200 racks used as 64 of their 72 GPUs (16 x 64 = 1,024: ep 64 x pp 16 divides it, not
    # 1,152): refused as "no ... divides the fleet's 1152 accelerators", the list [64] alone too
    kw = dict(fidelity="extended", precision="fp8", seq_len=4096, efficiency=0.4, pp_size=[16], ep_size=[64],
              microbatch_count=[64], zero_stage=[1], v_stages=[1], activation_recomputation=[False],
              overlap_comm=[True])
    alone = search("modern/DeepSeek-V3", "modern/GB200-NVL72-1152", 4096, accelerators_per_node=64, **kw)
    for per in ([64], [64, 72]):
        r = search("modern/DeepSeek-V3", "modern/GB200-NVL72-1152", 4096, accelerators_per_node=per, **kw)
        assert r.best.objective == alone.best.objective and r.best.config["accelerators_per_node"] == 64
        assert (r.searched, r.feasible) == (alone.searched, alone.feasible)
    with pytest.raises(ValueError, match="no tp x pp x cp and ep x etp x pp among the choices divides the fleet's "
                                         "1,152 accelerators"):
        search("modern/DeepSeek-V3", "modern/GB200-NVL72-1152", 4096, accelerators_per_node=[72], **kw)

def test_the_rules_a_schedule_breaks_are_named_exactly_when_can_run_refuses_it():
    from mlsysim_sym.schedules import broken_schedule_rules, can_run
    rng = np.random.default_rng(7)
    for _ in range(2000):
        kw = dict(pp=int(rng.choice([1, 2, 4, 8, 16])), dp=int(rng.integers(0, 9)), m=int(rng.integers(1, 40)),
                  v=int(rng.choice([1, 2, 3, 4, 8])), batch_size=int(rng.integers(1, 300)),
                  gradient_accumulation_steps=int(rng.integers(1, 4)),
                  layers=[None, int(rng.integers(1, 130))][int(rng.integers(0, 2))],
                  unpiped_microbatches=bool(rng.integers(0, 2)))
        assert (broken_schedule_rules(**kw) == []) == can_run(**kw), kw
    # one schedule at a time: arrays are can_run()'s
    with pytest.raises(TypeError, match="takes one schedule"):
        broken_schedule_rules(pp=[1, 2], dp=2, m=2, v=1, batch_size=8)


def test_the_default_virtual_stages_hold_the_recipes_and_find_what_1_2_4_missed():
    # Llama-3.1-70B (80 layers) on 1024 H100s, extended model at Megatron-Core's fitted Hopper efficiency 0.795: with
    # v 1, 2, 4 (the old default) the best was tp 8 without a pipeline, MFU 0.3881; NVIDIA's recipes run 70B at
    # pp 4 v 5 (docs/modern_runs.md). The default now holds 5 and 10: 80 layers over pp 4 x v 10 = 40 chunks of 2
    # layers run, and that schedule ranks first (MFU 0.3966), as solve() prices it
    from mlsysim_sym.optimize import V_STAGES
    assert V_STAGES == (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24)
    kw = dict(fidelity="extended", efficiency=0.795, precision="bf16", seq_len=8192, top_k=3)
    old = search("modern/Llama-3.1-70B", "modern/H100-SXM-1024", 256, v_stages=(1, 2, 4), **kw)
    new = search("modern/Llama-3.1-70B", "modern/H100-SXM-1024", 256, **kw)
    b = new.best
    assert (b.config["tp_size"], b.config["pp_size"], b.config["v_stages"], b.config["microbatch_count"]) == \
        (8, 4, 10, 8)
    assert round(b.objective, 4) == 0.3966 and round(old.best.objective, 4) == 0.3881
    assert old.best.config["pp_size"] == 1 and old.best.config["tp_size"] == 8
    assert b.objective == DistributedModel(fidelity="extended").solve(
        "modern/Llama-3.1-70B", "modern/H100-SXM-1024", batch_size=256, efficiency=0.795, precision="bf16",
        seq_len=8192, **b.config).mfu
    for c in new.candidates:                     # each ranked schedule splits the 80 layers evenly
        pp, v = c.config["pp_size"], c.config["v_stages"]
        assert pp == 1 or min((80 + e) % (pp * v) for e in range(3)) == 0
    assert "v 1,2,3,4,5,6,8,10,12,16,20,24," in _flat(str(new))


def test_a_search_says_the_notes_its_rows_share_as_solve_says_them():
    # FP8 in mlsysim's model: every row priced at the fp8 peak for all of its compute (about 2x BF16), which solve()
    # says below one configuration and the search left unsaid; each row's own notes are in its JSON
    r = search("Llama3_70B", "Research_256", 256, precision="fp8", top_k=3)
    best = _solve("Llama3_70B", "Research_256", 256, precision="fp8", **r.best.config)
    assert r.notes() == best._model_notes() and r.notes()[0].startswith("mlsysim's model prices all of the step's "
                                                                         "compute at the fp8 peak")
    assert "note: mlsysim's model prices all of the step's compute at the fp8 peak" in _flat(str(r))
    d = r.to_dict()
    assert d["notes"] == r.notes() and all(row["notes"] == r.notes() for row in d["results"])
    # the extended model runs only the GEMMs at the FP8 rate: no such note; nor at 16 bits
    assert "fp8 peak" not in str(search("Llama3_70B", "Research_256", 256, precision="fp8", top_k=3,
                                        fidelity="extended"))
    assert search("Llama3_70B", "Research_256", 256, top_k=3).notes() == []
