"""What a new user met trying the package as an engineer planning a run (a helper's trial, 2026-12-03), each
fixed and held here: nonsense the command line refuses, layouts no framework runs, a search across precisions,
the configuration line of a resized fleet, units where a person reads a number."""
import dataclasses
import json
import os
import subprocess
import sys
import warnings

import pytest

from mlsysim_sym import DistributedModel, modern, required, search, sensitivities, sweep
from mlsysim_sym.architecture import Architecture
from mlsysim_sym.run_costs import _amount

H100 = "modern/H100-SXM-1024"
L70 = "modern/Llama-3.1-70B"


def cli(*args):
    p = subprocess.run([sys.executable, "-m", "mlsysim_sym", *args], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONWARNINGS": ""})
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("flag,value,name", [("--congestion", "-5", "congestion_factor"),
                                             ("--straggler", "-3", "straggler_factor")])
def test_the_command_line_refuses_a_negative_factor_that_mlsysim_prices_as_a_negative_time(flag, value, name):
    # mlsysim (and solve(), its twin) price congestion -5 as a step of -14 s; the command line answers one line
    code, out, err = cli("solve", f"{flag}={value}")
    assert code == 2 and out == ""
    assert err.strip() == (f"mlsysim-sym: error: {flag}: {name} must be >= 0, got {float(value)} (mlsysim prices "
                           "it; the command line and the extended model refuse it)")


def test_tensor_parallelism_divides_the_heads_as_megatron_core_requires():
    m = DistributedModel(fidelity="extended")
    # Llama 3.1 70B: 64 heads, 8 key/value heads. TP 128 splits no head: refused, naming the heads
    with pytest.raises(ValueError, match=r"tp_size \(128\) must divide the attention heads of each layer \(64\)"):
        m.solve(L70, H100, batch_size=256, tp_size=128)
    # TP 16 is a multiple of the 8 key/value heads (each replicated on 2 ranks): Megatron-Core runs it since
    # Megatron-LM f7dfb99795 (2025-12-07, "Support TP greater than num_kv_heads"); before, TP had to divide them
    assert m.solve(L70, H100, batch_size=256, tp_size=16, pp_size=2).step_latency_total > 0
    # 48 heads, 8 key/value heads (Grok-1's shape): TP 6 divides the heads but is neither a multiple nor a
    # divisor of 8; on 3 nodes of 8 (24 GPUs) the split itself is valid
    card = Architecture("48-head", layers=4, hidden=6144, heads=48, kv_heads=8, ffn=8192, vocab=32000)
    fleet = dataclasses.replace(modern.fleet(H100), count=3)
    with pytest.raises(ValueError, match=r"tp_size \(6\) must be a multiple or a divisor of the key/value heads "
                                         r"of each layer \(8\)"):
        m.solve(card.workload(), fleet, batch_size=8, tp_size=6)
    # the mlsysim twin keeps mlsysim's checks: no heads there
    assert DistributedModel().solve(card.workload(), fleet, batch_size=8, tp_size=6).step_latency_total > 0
    # a search leaves the layouts out: of TP 16, 32, 64, 128 only 16 is a layout
    r = search(L70, H100, 256, fidelity="extended", tp_size=[16, 32, 64, 128], top_k=50)
    assert {c.config["tp_size"] for c in r.candidates} == {16}


def test_a_pipeline_warns_where_its_microbatches_hold_less_than_one_sample():
    # DeepSeek-V3 on 1152 GB200: pp 4, ep 32 (carved out of data parallelism): dp = 1152 / 4 = 288 replicas, a
    # batch of 2304 gives each 8 samples; 16 microbatches would hold half a sample each
    kw = dict(precision="fp8", batch_size=2304, seq_len=4096, pp_size=4, ep_size=32)
    m = DistributedModel(fidelity="extended")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m.solve("modern/DeepSeek-V3", "modern/GB200-NVL72-1152", microbatch_count=16, **kw)
        m.solve("modern/DeepSeek-V3", "modern/GB200-NVL72-1152", microbatch_count=8, **kw)
    said = [str(w.message) for w in caught]
    assert said == ["microbatch_count (16) x gradient_accumulation_steps (1) > the 8 samples a replica trains per "
                    "step: microbatches of less than one sample, which no framework runs (priced as mlsysim prices "
                    "them)"]


def test_without_a_pipeline_microbatches_and_micro_steps_warn_where_they_hold_less_than_one_sample():
    # Llama 3 8B on Research_256 at TP 8, no pipeline: 32 replicas, a batch of 256 gives each 8 samples; 8
    # micro-steps (or 8 microbatches) hold one sample each, 9 micro-steps or 16 microbatches or 4 x 4 hold less,
    # and the model prices them all (1.2514 s at 9 micro-steps, 1.7218 s at 16 microbatches against 1.1842 s at 8)
    m = DistributedModel(fidelity="extended")
    kw = dict(batch_size=256, tp_size=8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        at8 = m.solve("Llama3_8B", "Research_256", gradient_accumulation_steps=8, **kw).step_latency_total
        m.solve("Llama3_8B", "Research_256", microbatch_count=8, **kw)
        at9 = m.solve("Llama3_8B", "Research_256", gradient_accumulation_steps=9, **kw).step_latency_total
        at16 = m.solve("Llama3_8B", "Research_256", microbatch_count=16, **kw).step_latency_total
        m.solve("Llama3_8B", "Research_256", microbatch_count=4, gradient_accumulation_steps=4, **kw)
        DistributedModel().solve("Llama3_8B", "Research_256", gradient_accumulation_steps=9, **kw)  # twin: silent
    assert at8 == pytest.approx(1.1842, abs=1e-4) and at9 == pytest.approx(1.2514, abs=1e-4)
    assert at16 == pytest.approx(1.7218, abs=1e-4)
    end = "> the 8 samples a replica trains per step: microbatches of less than one sample, which no framework runs " \
          "(priced as mlsysim prices them)"
    assert [str(w.message) for w in caught] == [
        f"microbatch_count (1) x gradient_accumulation_steps (9) {end}",
        f"microbatch_count (16) x gradient_accumulation_steps (1) {end}",
        f"microbatch_count (4) x gradient_accumulation_steps (4) {end}"]


def test_the_configuration_line_says_how_many_accelerators_a_resized_fleet_has():
    code, out, _ = cli("solve", "--model", L70, "--fleet", H100, "--count", "8", "--tp", "8")
    assert code == 0
    # 8 nodes of 8 H100: 64, where the catalog's name says 1024
    assert " ".join(out.split()).startswith("configuration: modern/Llama-3.1-70B on 128 DGX H100 on 400G "
                                            "InfiniBand (1024 H100 SXM), resized to 8 nodes (64 accelerators): "
                                            "batch 256, tp 8")
    # from Python, a record copied with another count under its old name
    f = dataclasses.replace(modern.fleet(H100), count=8)
    first = " ".join(str(DistributedModel().solve("Llama3_70B", f, batch_size=64, tp_size=8)).split()).split(":")[0]
    assert first.endswith("(1024 H100 SXM), resized to 8 nodes (64 accelerators)")
    # the count the name states is the one in parentheses, not another number of the name (128 DGX, 400G, NVL72)
    # (a GB200 NVL72 fleet counts racks, as plan and search do)
    for fleet, count, n, word in ((H100, 16, 128, "node"), (H100, 50, 400, "node"),
                                  ("modern/GB200-NVL72-1152", 1, 72, "rack")):
        code, out, _ = cli("solve", "--fleet", fleet, "--count", str(count))
        assert code == 0 and f"resized to {count} {word}{'s' if count > 1 else ''} ({n} accelerators)" in \
            " ".join(out.split())
    # a fleet whose name states its accelerators keeps its name alone
    assert "resized" not in str(DistributedModel().solve("Llama3_70B", "Research_256", batch_size=256)).split(":")[0]


def test_a_plan_files_resized_fleet_is_not_said_to_be_resized_twice(tmp_path):
    # hardware: modern/H200-1024 at 64 nodes: the file names the fleet "64 nodes of DGX H200 (8 H200 SXM) (512 GPUs;
    # from modern/H200-1024)", whose last count in parentheses is the 512 it prices (the first, 8, is the node's)
    plan = tmp_path / "plan.yaml"
    plan.write_text('version: "1"\nworkload: {name: modern/Llama-3.1-70B, batch_size: 512}\n'
                    'hardware: {fleet: modern/H200-1024, node_count: 64}\ntraining: {tp_size: 8}\n')
    code, out, err = cli("solve", "--model", str(plan))
    line = " ".join(out.split()).split(": batch")[0]
    assert code == 0, err
    assert line == ("configuration: modern/Llama-3.1-70B on 64 nodes of DGX H200 (8 H200 SXM) (512 GPUs; from "
                    "modern/H200-1024)")


def test_a_search_across_precisions_ranks_by_throughput_since_mfu_counts_each_against_its_own_peak():
    kw = dict(fidelity="extended", precision=["bf16", "fp8"], seq_len=8192, tp_size=8, pp_size=4, count=8,
              top_k=400)
    r = search(L70, H100, 512, **kw)
    assert r.objective == "throughput"
    top = r.candidates[0]
    assert top.config["precision"] == "fp8"
    # FP8's MFU (against the FP8 peak) is below BF16's best, though it trains faster
    best16 = max((c for c in r.candidates if c.config["precision"] == "bf16"), key=lambda c: c.result.mfu)
    assert top.result.mfu < best16.result.mfu and top.result.effective_throughput > best16.result.effective_throughput
    # asked for MFU explicitly, the header says what it counts
    assert "(each precision's MFU against its own peak)" in search(L70, H100, 512, objective="mfu", **kw)._head()
    assert search(L70, H100, 512, fidelity="extended", seq_len=8192, tp_size=8, pp_size=4, count=8).objective == "mfu"


def test_expert_parallelism_steps_to_its_next_valid_degree_in_the_sensitivity_table():
    t = sensitivities("modern/DeepSeek-V3", "modern/GB200-NVL72-1152", fidelity="extended", precision="fp8",
                      batch_size=2304, seq_len=4096, pp_size=4, ep_size=32, zero_stage=1,
                      activation_recomputation=True)
    ep = t.discrete["ep_size"]
    # EP x ETP x PP must divide 1152 and EP the 256 routed experts: EP in the divisors of 1152 / 4 = 288 that
    # divide 256 (1, 2, 4, 8, 16, 32); below 32 the next is 16, above none (the neighbours 31 and 33 are refused)
    assert ep.down.value == 16 and ep.up is None
    assert {v for v, _ in ep.skipped} == {31, 33}


def test_required_prints_the_output_in_its_unit():
    r = required("memory", 40e9, "microbatch_count", "Llama3_70B", "Research_256", batch_size=256, tp_size=8,
                 pp_size=4, microbatch_count=8)
    text = r.text()
    assert "for memory at most 40 GB" in text and "memory = 59.4114 GB" in text
    assert "the best found is 41.4933 GB, at microbatch_count = 32" in " ".join(text.split())
    assert max(len(line) for line in text.splitlines()) <= 80


def test_a_plan_shows_small_amounts_with_three_digits_not_zero():
    # one step of 3.369 s on 256 GPUs: 3.369 x 256 / 3600 = 0.2396 GPU-h
    assert _amount(0.2396) == "0.24" and _amount(3.9e-05) == "3.9e-05"
    assert _amount(6853489.4) == "6,853,489" and _amount(100.4) == "100"
    code, out, _ = cli("plan", "--tokens", "1")
    assert code == 0 and "0.24 GPU-h on 256 GPUs" in out


def test_text_refuses_an_infinite_answer_as_json_does():
    code, out, err = cli("solve", "--peak-flops", "1e-300")
    assert code == 2 and out == ""
    assert err.strip() == ("mlsysim-sym: error: --peak-flops: the result holds a number that is not finite "
                           "(NaN or infinity)")


def test_a_table_with_an_undefined_cell_still_prints():
    # without a pipeline the bubble is 0: its elasticities are undefined and print as "-", the command succeeds
    code, out, _ = cli("sensitivity", "--output", "bubble_fraction", "--pp", "1")
    assert code == 0 and "b_interleaved = 0" in out


def test_a_plan_files_unknown_precision_names_the_files_field(tmp_path):
    plan = tmp_path / "p.yaml"
    plan.write_text('version: "1"\nname: x\nworkload: {name: Llama3_70B, batch_size: 256}\n'
                    "hardware: {name: H100, node_count: 8, precision: bf17}\n")
    code, out, err = cli("solve", "--model", str(plan), "--fleet", str(plan))
    assert code == 2 and out == ""
    assert err.strip() == (f"mlsysim-sym: error: {plan}: hardware.precision: must be one of fp32, tf32, bf16, fp16, "
                           f"fp8, int8, int4, got 'bf17'")


def test_without_a_model_or_fleet_the_options_change_the_bundled_example_each_what_it_names():
    # the student's "what if the efficiency were 0.4": the example's layout (tp 8, pp 4, m 8) stays; before, any
    # option reset it to solve()'s tp 1, pp 1, m 1 (0.1534 MFU, spilling to host memory); a sweep does the same
    code, out, err = cli("solve", "--efficiency", "0.4", "--json")
    r = json.loads(out)
    assert code == 0 and (r["configuration"]["tp_size"], r["configuration"]["pp_size"],
                          r["configuration"]["microbatch_count"]) == (8, 4, 8)
    same = DistributedModel().solve("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4,
                                    microbatch_count=8, efficiency=0.4)
    assert r["mfu"] == pytest.approx(same.mfu, rel=1e-12)
    code, out, _ = cli("sweep", "--efficiency", "0.4,0.8")
    assert code == 0 and "tp 8, pp 4, m 8" in " ".join(out.split())
    # with the model (or the fleet) named it is another job: an option not given takes solve()'s default
    code, out, _ = cli("solve", "--model", "Llama3_70B", "--efficiency", "0.4", "--json")
    assert code == 0 and json.loads(out)["configuration"]["tp_size"] == 1


def test_solve_says_when_no_framework_runs_the_schedule_it_prices():
    # the bundled example's 8 replicas each train 32 samples: 3 microbatches do not split them (can_run), and
    # 126 layers do not split over 16 stages x 3 virtual stages (126, 127 and 128 are no multiples of 48; at 2
    # virtual stages 128 are, the embedding and the loss counted as a layer each); solve() prices both as mlsysim
    # does, and says so
    code, out, _ = cli("solve", "--microbatches", "3")
    flat = " ".join(out.split())
    # the note names the rule the schedule breaks, with its numbers: 256 samples over 8 replicas are 32 each
    assert code == 0 and ("note: no framework runs this schedule as given: can_run() asks that the microbatches "
                          "split the 32 samples of a replica evenly (m 3); it is priced") in flat
    assert flat.endswith("it is priced as mlsysim prices it")
    r = DistributedModel(fidelity="extended").solve("modern/Llama-3.1-405B", "modern/H100-SXM-1024", batch_size=1024,
                                                    tp_size=8, pp_size=16, v_stages=3, microbatch_count=16)
    assert r.notes() and "no framework runs this schedule" in repr(r)
    # 16 microbatches are a whole round of 16 stages; 126 + 2 layers are no multiple of 48 chunks
    assert r.arguments.why_not_runnable() == ("can_run() asks that the 48 virtual stages hold equal layers (126 "
                                              "layers, 127 or 128 with the embedding and the loss)")
    assert DistributedModel(fidelity="extended").solve("modern/Llama-3.1-405B", "modern/H100-SXM-1024",
                                                       batch_size=1024, tp_size=8, pp_size=16, v_stages=2,
                                                       microbatch_count=16).runnable
    # the JSON and the notebook's table say it too
    d = r.to_dict()
    assert d["runnable"] is False and d["notes"][0].startswith("no framework runs this schedule as given")
    assert "<p>note: no framework runs this schedule" in r._repr_html_()
    code, out, _ = cli("solve", "--microbatches", "3", "--json")
    assert code == 0 and json.loads(out)["runnable"] is False
    code, out, _ = cli("solve")
    assert code == 0 and "no framework runs" not in out
    code, out, _ = cli("solve", "--json")
    assert code == 0 and json.loads(out)["runnable"] is True and json.loads(out)["notes"] == []


def test_a_dense_card_has_no_expert_parallel_slope():
    # Llama 3.1 70B's card has no routed experts: the extended model refuses ep and etp beyond 1, so no relaxed
    # slope is given for them (it gave -0.00702 for N_EP while the same table skipped ep 2 and 4); a mixture of
    # experts keeps its row
    kw = dict(batch_size=1024, seq_len=8192, precision="bf16", fidelity="extended", sequence_parallel=True,
              tp_size=8, pp_size=4, microbatch_count=32)
    t = sensitivities(L70, "modern/H200-1024", **kw)
    relaxed = {r.parameter for r in t.relaxed}
    assert "ep_size" not in relaxed and "etp_size" not in relaxed and "tp_size" in relaxed
    row = next(x for x in str(t).splitlines() if x.startswith("expert-parallel degree"))
    assert row.split()[-1] == "-"
    moe = sensitivities("modern/Mixtral-8x7B", "modern/H200-1024", batch_size=1024, fidelity="extended",
                        ep_size=8, precision="bf16")
    assert "ep_size" in {r.parameter for r in moe.relaxed}


@pytest.mark.parametrize("args,line", [
    # the command after an option, a catalog name without its option: argparse says only "unrecognized"
    (("--tp", "8", "solve"), "unrecognized arguments: solve (the command comes first: mlsysim-sym solve [options])"),
    (("solve", "Llama3_70B"), "unrecognized arguments: Llama3_70B (a model is given as --model Llama3_70B)"),
    (("solve", "Research_256"), "unrecognized arguments: Research_256 (a fleet is given as --fleet Research_256)"),
    (("solve", "nonsense"), "unrecognized arguments: nonsense"),
    # Python's int() reads 8_0 as 80 and float() 0.4_5 as 0.45: typos, refused
    (("solve", "--tp", "8_0"), "--tp: expected a whole number, got '8_0'"),
    (("sweep", "--efficiency", "0.4_5,0.5"), "--efficiency: expected a number, got '0.4_5'"),
])
def test_what_argparse_does_not_recognize_gets_a_hint_and_underscored_numbers_are_refused(args, line):
    code, out, err = cli(*args)
    assert (code, out, err) == (2, "", f"mlsysim-sym: error: {line}\n")


def test_a_sweep_of_an_empty_list_says_it_has_no_values():
    # an empty axis is an empty result (as numpy's); its configuration line read "batch 256, tp , fp16"
    r = sweep("Llama3_70B", "Research_256", batch_size=256, tp_size=[])
    assert r.shape == (0,) and "batch 256, tp (no values), fp16" in " ".join(repr(r).split())


def test_a_memory_term_is_found_by_the_symbol_the_text_prints():
    # the text prints "gradient memory M_gradients" beside the term keyed M_grads: both names find it
    r = DistributedModel().solve("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4)
    assert "gradient memory M_gradients" in str(r)
    assert r.memory["M_gradients"] == r.memory["M_grads"] == 4412500000.0     # 70.6e9 x 2 B / (8 x 4)
    with pytest.raises(KeyError, match="printed M_weights, M_gradients"):
        r.memory["M_grad"]


def test_a_step_time_beyond_a_floats_range_is_said_not_silent():
    # a straggler factor of 1e308 stretches the 3.37 s step beyond 1.8e308: mlsysim returns inf, and so does
    # solve(), with a warning that names it (the command line refuses it: "not finite")
    with pytest.warns(RuntimeWarning, match=r"^the step time is infinite at these inputs \(beyond a float's range\)"):
        r = DistributedModel().solve("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4,
                                     microbatch_count=8, straggler_factor=1e308)
    assert r.step_latency_total == float("inf")
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # 1e300 x 3.37 s is finite: nothing to say
        assert DistributedModel().solve("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4,
                                        microbatch_count=8, straggler_factor=1e300).step_latency_total > 1e300


def test_a_huge_batch_prints_and_memory_terms_answer_get_and_in():
    # batch 1e20 is beyond int64 in can_run: the text printed before the schedule note and must still print
    r = DistributedModel().solve("Llama3_70B", "Research_256", batch_size=1e20, tp_size=8, pp_size=4,
                                 microbatch_count=8)
    assert str(r).startswith("DistributedResult of Llama-3.1-70B")
    m = DistributedModel().solve("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4).memory
    assert "M_gradients" in m and m.get("M_gradients") == m["M_grads"] and m.get("M_nothing") is None


@pytest.mark.parametrize("args,line", [
    (("list", "Llama3_70B", "Llama3_8B"), "unrecognized arguments: Llama3_8B"),   # list takes no --model
    (("solve", "sweep"), "unrecognized arguments: sweep"),                      # a command was given
    (("solve", "--model", "Llama3_70B", "Llama3_8B"), "unrecognized arguments: Llama3_8B"),   # --model given
    (("plan", "--steps", "8_0"), "--steps: expected a whole number, got '8_0'"),
    (("search", "--top", "1_0"), "argument --top: expected a whole number, got '1_0'"),
])
def test_hints_only_where_they_apply_and_every_number_refuses_underscores(args, line):
    assert cli(*args) == (2, "", f"mlsysim-sym: error: {line}\n")


def test_equations_prefers_the_printed_symbol_and_names_a_record_field_as_one():
    # c is the context-parallel degree as the tables print it (congestion's internal name is c too)
    code, _, err = cli("equations", "c")
    assert code == 2 and "c, context-parallel degree" in err and "solve()'s cp_size, --cp" in err
    code, _, err = cli("equations", "P")
    assert "(a record's field, sweep()'s parameters, --parameters)" in err


def test_a_split_error_on_the_bundled_example_says_where_the_degrees_came_from():
    # the student typed only --count 3 (3 nodes of 8 = 24 GPUs); the example's tp 8 x pp 4 = 32 does not fit them.
    # The line names --tp/--pp/--ep, none of which was typed: it says whose tp and pp they are
    code, out, err = cli("solve", "--count", "3")
    assert code == 2 and out == "" and err == (
        "mlsysim-sym: error: --tp/--pp/--ep: Infeasible 4D Parallelism: TP(8) * PP(4) * EP(1) > Total(24) (tp 8, "
        "pp 4: the bundled example's; --tp, --pp change them)\n")
    # one degree typed: the one the example gave, before the message's full stop
    code, _, err = cli("solve", "--count", "5", "--tp", "4")
    assert code == 2 and err == ("mlsysim-sym: error: --tp/--pp/--ep: Infeasible 4D Parallelism: TP(4) * PP(4) * "
                                 "EP(1) must divide total accelerators (40) exactly (pp 4: the bundled example's; "
                                 "--pp changes it).\n")
    # a sweep none of whose nodes counts fits the example's layout says it too
    code, _, err = cli("sweep", "--count", "3,5")
    assert code == 2 and "> Total(24) (tp 8, pp 4: the bundled example's; --tp, --pp change them) (the first of" \
        in err
    # with --model the degrees are solve()'s defaults, not the example's: nothing to say
    code, _, err = cli("solve", "--model", "Llama3_70B", "--count", "3", "--tp", "8", "--pp", "4")
    assert code == 2 and err.endswith("> Total(24)\n")


def test_the_extended_model_at_mlsysims_default_efficiency_says_where_the_fitted_ones_are():
    # a planner priced 70B on 512 H200 at the default 0.5 (448 days) where the Megatron-Core value fitted in
    # docs/modern_runs.md gives 292: the efficiency moves the answer more than anything else, so the text says
    # where the measured values are whenever the extended model prices at mlsysim's default
    note = ("note: the efficiency is solve()'s default, mlsysim's 0.5; for the extended model the values fitted to "
            "published runs per framework and accelerator generation are in docs/modern_runs.md (--efficiency sets "
            "it)")
    code, out, _ = cli("plan", "--fidelity", "extended", "--tokens", "1e12")
    assert code == 0 and " ".join(out.split()).endswith(note)
    for args in (("plan", "--fidelity", "extended", "--tokens", "1e12", "--efficiency", "0.7"),
                 ("plan", "--tokens", "1e12")):
        code, out, _ = cli(*args)
        assert code == 0 and "solve()'s default, mlsysim's 0.5" not in out, args
