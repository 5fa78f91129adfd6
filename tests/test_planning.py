"""How long and how much (mlsysim_sym.planning), and the memory per accelerator term by term."""
import json
import math
import re
import subprocess
import sys

import pytest

from mlsysim_sym import DistributedModel
from mlsysim_sym.planning import PLAN, accelerators_to_finish, plan

KW = dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)


def test_a_token_budget_worked_by_hand():
    r = DistributedModel().solve("Llama3_70B", "Research_256", **KW)
    p = r.plan(tokens=1e12, price_per_gpu_hour=2.5)
    # 256 samples of 2048 tokens a step: ceil(1e12 / 524,288) = ceil(1,907,348.6) = 1,907,349 steps
    assert p.tokens_per_step == 524_288 and p.steps == 1_907_349
    assert p.wall_time == pytest.approx(1_907_349 * r.step_latency_total, rel=1e-12)
    assert p.accelerator_hours == pytest.approx(p.wall_time * 256 / 3600, rel=1e-12)
    # the model's energy per step: 8 replicas, each its roofline step's energy
    assert p.energy == pytest.approx(1_907_349 * 8 * r.node_profile.energy, rel=1e-12)
    assert p.cost == pytest.approx(2.5 * p.accelerator_hours, rel=1e-12)
    assert p.days == pytest.approx(p.wall_time / 86400)
    # tokens a second: 524,288 tokens a step of 3.3686 s (docs/contract.md's 3368.627 ms) = 155,638 tokens/s, 608
    # per GPU of 256; the figure frameworks publish, which the plan prints and its JSON gives
    assert p.tokens_per_second == pytest.approx(524_288 / r.step_latency_total, rel=1e-12)
    assert round(p.tokens_per_second) == 155_638 and round(p.tokens_per_second_per_accelerator) == 608
    assert "tokens a second R_tok 155,638 tokens/s, 608 per GPU" in " ".join(str(p).split())
    assert p.to_dict()["tokens_per_second_per_accelerator"] == p.tokens_per_second_per_accelerator
    same = plan("Llama3_70B", "Research_256", steps=1_907_349, price_per_gpu_hour=2.5, **KW)
    assert same.wall_time == p.wall_time and same.tokens is None


def test_a_batch_that_does_not_split_evenly_counts_the_samples_the_step_prices():
    # Research_256 at tp 8, pp 4: 8 replicas. A batch of 259 is priced at floor(259 / 8) = 32 samples a replica
    # (as mlsysim prices it), 256 in all, the same step as a batch of 256: the run counts 256 samples a step,
    # ceil(1e12 / (256 x 2048)) = 1,907,349 steps, as the batch of 256 takes (it counted 259 x 2048, 1,885,257)
    r = DistributedModel().solve("Llama3_70B", "Research_256", **dict(KW, batch_size=259))
    p = r.plan(tokens=1e12)
    assert (p.samples_per_step, p.tokens_per_step, p.steps) == (256, 524_288, 1_907_349)
    assert p.wall_time == pytest.approx(plan("Llama3_70B", "Research_256", tokens=1e12, **KW).wall_time, rel=1e-12)
    assert "does not split evenly over 8 data-parallel replicas: a step is priced at 32 samples a replica, 256" \
        in " ".join(str(p).split())
    assert p.to_dict()["samples_per_step"] == 256 and p.to_dict()["batch_size"] == 259
    # a batch below the replicas trains its own samples (solve() warns that the others idle): 4 x 2048 a step
    with pytest.warns(UserWarning, match="some ranks will be idle"):
        small = plan("Llama3_70B", "Research_256", tokens=1e9, **dict(KW, batch_size=4, microbatch_count=1))
    assert small.tokens_per_step == 8192 and "split evenly" not in str(small)
    # and says that solve() prices 8 samples a step (one a replica: its throughput and MFU count those), of which
    # the run counts the batch's 4: 8 - 4 = 4 replicas' work trains nothing
    assert ("the batch of 4 is smaller than the 8 data-parallel replicas: solve() prices a step as every replica "
            "training one sample (8 samples;") in " ".join(str(small).split())
    assert "4 replicas' work trains nothing" in " ".join(str(small).split())



def test_a_run_on_part_of_each_node_says_what_it_leaves_idle():
    # Research_256's 32 nodes hold 8 accelerators each; at 4 a node the run uses 128 and the other 128 idle: the
    # accelerator-hours count the 128 in use (a trial planned DeepSeek-V3 on GB200 racks at 64 of 72 GPUs a rack
    # and read 1,846,328 GPU-h for 1,024 GPUs without a word of the 128 idle ones it pays for)
    p = plan("Llama3_70B", "Research_256", tokens=1e12, **dict(KW, tp_size=4), accelerators_per_node=4)
    assert p.accelerators == 128 and p.idle == 128 and p.to_dict()["idle_accelerators"] == 128
    assert p.accelerator_hours == pytest.approx(p.wall_time * 128 / 3600, rel=1e-12)
    assert ("the run uses 4 of each node's 8 accelerators (128 of 256): the accelerator-hours, energy and cost "
            "count the 128 in use, not the 128 left idle") in " ".join(str(p).split())
    whole = plan("Llama3_70B", "Research_256", tokens=1e12, **KW)
    assert whole.idle == 0 and "idle" not in str(whole) and whole.to_dict()["idle_accelerators"] == 0

def test_the_plan_is_sympy():
    import sympy as sp
    from mlsysim_sym.printing import latex
    assert isinstance(PLAN["C_train"], sp.Basic)
    assert r"T_{\text{train}}" not in latex(PLAN["C_train"])   # written in the step's quantities
    assert "R_{\\text{GPU/hr}}" in latex(PLAN["C_train"])


def test_the_nodes_that_finish_a_budget_in_time():
    kw = dict(batch_size=2048, tp_size=8, pp_size=4, microbatch_count=16, seq_len=4096)
    r = accelerators_to_finish(2e12, 30, "Llama3_70B", "Research_256", **kw)
    # runnable counts: the 2048 sequences split over dp = 2 n replicas, 16 microbatches over a replica's share;
    # 64 nodes (dp 16) take more than 30 days, 128 (dp 32) fewer
    assert r.nodes == 128 and r.plan.accelerators == 1024 and r.plan.days <= 30
    assert plan("Llama3_70B", "Research_256", tokens=2e12, count=64, **kw).days > 30
    assert r.now_nodes == 32 and r.now_days == pytest.approx(plan("Llama3_70B", "Research_256", tokens=2e12,
                                                                   **kw).days)
    # a target the fleet already meets: the fewest nodes that still meet it (with recomputation and ZeRO-3 the
    # state fits from 4 nodes, 72.8 GB, 36.4 GB at 8; ZeRO-3 shards it over fewer replicas at 1 and 2 nodes, which
    # do not fit)
    small_kw = dict(batch_size=1024, seq_len=8192, precision="bf16", activation_recomputation=True, zero_stage=3)
    small = accelerators_to_finish(1e12, 30, "modern/Llama-3.1-8B", "modern/H100-SXM-1024", **small_kw)
    assert small.nodes == 8 and small.plan.days <= 30 and small.plan.fits and small.unfit == 2
    four = plan("modern/Llama-3.1-8B", "modern/H100-SXM-1024", tokens=1e12, count=4, **small_kw)
    assert four.days > 30 and four.fits
    # no runnable count in time: said, with the fastest runnable count
    none = accelerators_to_finish(2e12, 1, "Llama3_70B", "Research_256", **kw)
    assert none.nodes is None and "runnable counts" in none.reason and none.best.days > 1


def test_a_node_count_whose_state_does_not_fit_is_no_answer():
    # the bundled example (batch 256, tp 8, pp 4, m 8) runs at 4, 8, 16 and 32 nodes (dp 1, 2, 4, 8); fewer replicas
    # hold more of the batch each, and solve() puts 226.6 GB (4 nodes) and 131.1 GB (8) of state on an H100 of
    # 80 GiB = 85.9 GB, 83.3 GB at 16: the deadline every count meets is met first by 16 nodes, not by 4
    kw = dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
    at = {n: plan("Llama3_70B", "Research_256", tokens=1e12, count=n, **kw) for n in (4, 8, 16)}
    assert [round(at[n].memory / 1e9, 1) for n in at] == [226.6, 131.1, 83.3]
    assert [at[n].fits for n in at] == [False, False, True] and at[4].capacity == 80 * 2 ** 30
    r = accelerators_to_finish(1e12, 1e9, "Llama3_70B", "Research_256", **kw)
    assert r.nodes == 16 and r.unfit == 2 and r.searched == 3 and r.now_fits
    assert "3 runnable counts searched, 2 of them left out: the state does not fit in HBM" in " ".join(str(r).split())
    # the plan of a state that does not fit says so, beside its memory and the HBM
    text = " ".join(str(at[4]).split())
    assert "226.6 GB of 80 GiB = 85.9 GB HBM in HBM does not fit" in text
    assert "each step is priced spilling to host memory" in text and max(map(len, str(at[4]).splitlines())) <= 80
    # no count fits (tp 1, no pipeline: the whole 70B model's state on each accelerator): the reason says so
    none = accelerators_to_finish(1e12, 10, "Llama3_70B", "Research_256", batch_size=256)
    assert none.nodes is None and none.best is None and not none.now_fits
    assert "left out: the training state does not fit in HBM" in none.reason
    assert "no runnable node count fits in HBM: 6 runnable counts up to 32 nodes searched, 6 of them left out" in \
        " ".join(str(none).split())
    # the fastest count in nodes (8 GPUs a node), in the text and the JSON: r's 16 nodes beyond its deadline
    late = accelerators_to_finish(1e12, 100, "Llama3_70B", "Research_256", count=16, **kw)
    # where a count finishes in time the walk stops there: no "fastest" beside the answer (a trial read the
    # answer's 32 nodes repeated as the fastest, beside 16 nodes now)
    assert late.nodes == 32 and late.to_dict()["fastest"] is None and late.to_dict()["days_there"] <= 100
    slow = accelerators_to_finish(1e12, 1, "Llama3_70B", "Research_256", **kw)
    f = slow.to_dict()["fastest"]
    assert f["accelerators"] == 8 * f["nodes"] and f["days"] == slow.best.days
    assert f"the fastest runnable count is {f['nodes']:,} nodes ({f['accelerators']:,} GPUs)" in \
        " ".join(str(slow).split())
    # the fastest is the largest count the batch runs (one sample a microbatch: 32 replicas of 8 samples, 128
    # nodes): the batch and schedule hold it back, not the memory of the smaller counts left out
    assert f["nodes"] == 128 and "(this batch and schedule run no more replicas: a larger batch, or fewer " \
        "microbatches, runs more), 2 smaller ones left out: the training state does not fit in HBM;" in \
        " ".join(str(slow).split())
    # a layout no framework runs (12 microbatches of a replica's 32 samples) is priced and said to be
    odd = plan("Llama3_70B", "Research_256", tokens=1e12, microbatch_count=12, **{k: v for k, v in kw.items()
                                                                                if k != "microbatch_count"})
    assert not odd.runnable and odd.to_dict()["runnable"] is False
    assert "no framework runs this layout as given" in " ".join(str(odd).split())


def test_a_rack_scale_fleet_counts_racks():
    # the modern GB200 NVL72 fleet's node is a 72-GPU rack: the answer counts racks, as the fleet's name does
    # (16 racks, 1152 GPUs; tp 4, ZeRO-3 on the extended model; batch 1152 runs at most 1152 replicas = 64 racks)
    r = accelerators_to_finish(15e12, 30, "modern/Llama-3.1-70B", "modern/GB200-NVL72-1152", fidelity="extended",
                               batch_size=1152, tp_size=4, zero_stage=3)
    text = " ".join(r.text(configuration=False).split())
    assert text.startswith("racks to finish 1.5e+13 tokens in 30 days") and "now: 16 racks take" in text
    # printed alone, it says which configuration it answers for, first (as the JSON's configuration_line)
    line = ("modern/Llama-3.1-70B on 16 GB200 NVL72 racks on 400G InfiniBand (1152 GB200): batch 1152, tp 4, "
            "ZeRO 3")
    assert " ".join(str(r).split()).startswith("configuration: " + line) and \
        r.to_dict()["configuration_line"].startswith(line)
    assert "up to 64 racks searched" in text and " nodes" not in text
    assert r.to_dict()["node"] == "rack" and r.to_dict()["fastest"]["accelerators"] == 72 * r.to_dict()["fastest"]["nodes"] == 4608


@pytest.mark.parametrize("bad,words", [
    (dict(tokens=-1.0), "tokens must be a finite number > 0, got -1.0"),
    (dict(steps=2.5), "steps must be a whole number >= 1, got 2.5"),
    (dict(), "give tokens"),
    (dict(tokens=1e12, price_per_gpu_hour=float("nan")), "price_per_gpu_hour must be a finite number >= 0"),
])
def test_bad_plans_name_the_argument(bad, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(")):
        plan("Llama3_70B", "Research_256", **KW, **bad)


def test_memory_per_accelerator_term_by_term():
    r = DistributedModel().solve("Llama3_70B", "Research_256", **KW)
    m = r.memory
    assert list(m) == ["M_weights", "M_grads", "M_optimizer", "M_activations", "M_buffers"]
    # 70.6e9 parameters over tp 8 x pp 4, 2 bytes each, no ZeRO: 4.4125 GB of weights and as much of gradients;
    # Adam's 12 bytes per parameter: 26.475 GB
    assert m["M_weights"] == pytest.approx(70.6e9 / 32 * 2, rel=1e-12)
    assert m["M_grads"] == pytest.approx(70.6e9 / 32 * 2, rel=1e-12)
    assert m["M_optimizer"] == pytest.approx(70.6e9 / 32 * 12, rel=1e-12)
    assert sum(m.values()) == pytest.approx(r.node_profile.memory_footprint, rel=1e-12)
    assert r.to_dict()["memory"] == m
    # a workload that is not a transformer: mlsysim prices its state as one sum
    assert DistributedModel().solve("ResNet50", "Research_256", batch_size=256).memory == {}


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "mlsysim_sym", *args], capture_output=True, text=True, timeout=120)


def test_the_cli_plans_and_shows_the_memory():
    r = _cli("plan", "--model", "Llama3_70B", "--batch-size", "256", "--tp", "8", "--pp", "4", "--microbatches",
             "8", "--tokens", "1e12", "--price", "2.5", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    p = plan("Llama3_70B", "Research_256", tokens=1e12, price_per_gpu_hour=2.5, **KW)
    assert out["steps"] == p.steps and out["cost"] == pytest.approx(p.cost, rel=1e-12)
    assert out["configuration"]["tp_size"] == 8
    text = _cli("plan", "--tokens", "1e12", "--price", "2.5").stdout
    assert "days" in text and "GPU-h" in text and "MWh" in text and "$" in text
    solve = _cli("solve", "--json")
    assert set(json.loads(solve.stdout)["memory"]) == {"M_weights", "M_grads", "M_optimizer", "M_activations",
                                                       "M_buffers"}
    assert "activation memory M_activations" in _cli("solve").stdout
    bad = _cli("plan", "--tokens", "-5")
    assert bad.returncode == 2 and bad.stderr.strip() == \
        "mlsysim-sym: error: --tokens: tokens must be a finite number > 0, got -5.0"
    bad = _cli("plan")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_required_answers_the_nodes_for_a_token_budget_through_the_cli():
    args = ["--batch-size", "2048", "--seq-len", "4096", "--tp", "8", "--pp", "4", "--microbatches", "16",
            "--tokens", "2e12", "--days", "30"]
    r = _cli("required", *args, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["nodes"] == 128 and out["accelerators"] == 1024 and out["now_nodes"] == 32
    text = _cli("required", *args).stdout
    assert "answer: 128 nodes (1,024 GPUs) take 28.6 days" in text
    bad = _cli("required", "--tokens", "2e12")
    assert bad.returncode == 2 and bad.stderr.startswith("mlsysim-sym: error: --tokens and --days: give both")
    bad = _cli("required", "--tokens", "2e12", "--days", "0")
    assert bad.returncode == 2 and bad.stderr.strip() == "mlsysim-sym: error: --days: must be a finite number > 0, got 0"


def test_the_cli_refuses_a_bad_price_or_sigma_in_its_own_words():
    # the package's messages name the Python keywords (price_per_gpu_hour, sigma['efficiency']); the command line's
    # line names the option the user typed and the name --sigma takes
    p = _cli("plan", "--tokens", "1e12", "--price", "-1")
    assert p.returncode == 2 and p.stderr == "mlsysim-sym: error: --price: must be a finite number >= 0, got -1.0\n"
    p = _cli("uncertainty", "--sigma", "fabric-bandwidth=-1")
    assert p.returncode == 2 and p.stderr.startswith(
        "mlsysim-sym: error: --sigma: fabric-bandwidth must be a finite number >= 0 (a relative standard deviation")


def test_a_budget_beyond_a_doubles_digits_prints_powers_of_ten_and_an_overflow_is_refused():
    # 1e200 tokens over 524,288 a step: 1.907e194 steps, printed as 300 columns of digits before
    r = DistributedModel().solve("Llama3_70B", "Research_256", **KW)
    text = str(r.plan(tokens=1e200))
    assert any(re.fullmatch(r"  steps K +1\.907e\+194", line) for line in text.splitlines())
    assert max(map(len, text.splitlines())) <= 80
    # a dispatch overhead of 1e300 s: the energy overflows (the table printed "inf MWh", the JSON refused it); the
    # bundled example's pipeline (pp 4, m 8) stretches the overhead by (m + pp - 1) / m = 11 / 8 = 1.375
    r = _cli("plan", "--tokens", "1e12", "--dispatch-tax", "1e300")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("mlsysim-sym: error: --dispatch-tax/--tokens: the run's energy inf is not finite at "
                               "these values (a step of 1.375e+300 s, 1.907e+06 steps)")


def test_an_fp8_step_on_mlsysims_model_says_what_that_model_leaves_out_and_its_plan_repeats_it():
    # the default model prices FP8 as the FP8 peak for all of a step's compute (a planner saw 99 days against the
    # extended model's 196 for one 70B run): the result, its JSON and the plan of a run say so; bf16 and the
    # extended model do not
    from mlsysim_sym import DistributedModel
    note = ("mlsysim's model prices all of the step's compute at the fp8 peak and its tensors at 1 byte; the "
            "extended model (fidelity=\"extended\") runs only the GEMMs at that rate")
    kw = dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)      # 59.4 GB of 85.9: it fits
    r = DistributedModel().solve("Llama3_70B", "Research_256", precision="fp8", **kw)
    assert r.to_dict()["notes"][0].startswith(note)
    assert " ".join(" ".join(r.notes()).split()).startswith("note: " + note)
    p = r.plan(tokens=1e12)
    assert p.notes == tuple(r.to_dict()["notes"]) and p.to_dict()["notes"] == list(p.notes)
    assert " ".join(str(p).split()).endswith(" ".join(p.notes[0].split()))
    for other in (DistributedModel().solve("Llama3_70B", "Research_256", precision="bf16", **kw),
                  DistributedModel(fidelity="extended").solve("Llama3_70B", "Research_256", precision="fp8", **kw)):
        assert other.to_dict()["notes"] == [] and other.plan(tokens=1e12).notes == ()


def test_a_node_count_the_checks_refuse_is_counted_and_named_where_no_count_finishes():
    # DeepSeek-V3 on GB200 NVL72 racks, pp 2 x ep 8 (16 ranks carved out of the data-parallel ones): 4608 samples
    # in 8 microbatches a replica run at 1, 2, 4, 8 and 16 racks (4608 / 36n a multiple of 8); one rack's 72
    # GPUs do not hold whole 16-rank expert groups (solve() refuses it), the other four do not fit in HBM
    kw = dict(fidelity="extended", precision="fp8", efficiency=0.635, batch_size=4608, seq_len=4096,
              overlap_comm=True, pp_size=2, ep_size=8, microbatch_count=8, zero_stage=1)
    f = accelerators_to_finish(15e12, 60, "modern/DeepSeek-V3", "modern/GB200-NVL72-1152", **kw)
    assert f.nodes is None and (f.searched, f.unfit) == (5, 4)
    assert f.reason.endswith("; solve() refuses 1 of them (at 1 rack: Infeasible expert parallelism: EP(8) * ETP(1) "
                             "* PP(2) must divide total accelerators (72) exactly: expert parallelism is carved out "
                             "of each stage's tensor-, data- and context-parallel ranks)")
