"""required(): each answer plugged back into solve() meets the target (continuous inputs to 1e-9 relative;
a whole-number answer meets it and the next valid value toward the root misses), on random configurations
across regimes, plus the cases where no value reaches the target."""
import json
import math
import random
import re
import subprocess
import sys
import warnings

import pytest
import sympy as sp

from mlsysim_sym import DistributedModel, build_model, required, sweep, sym
from mlsysim_sym.requirements import TARGET
from mlsysim_sym.requirements.answer import plain
from mlsysim_sym.arguments import arguments
from mlsysim_sym.sensitivity.point import _solve_output, quantity_name
from derivations import registry  # noqa: E402

LLAMA = dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)


def exact(model, fleet, kw, solve_for, value, output):
    """The output at solve_for = value, through solve() (the plug-back)."""
    return _solve_output(arguments(model, fleet, kw).moved(solve_for, value), quantity_name(output))[0]


@pytest.mark.parametrize("kw, best, at", [
    # the extended model's MFU rises with m (the bubble shrinks) and then falls (each microbatch pays its layer
    # passes): on the bundled example 0.208014 at m 8, 0.210128 at m 16 (the best: solve() at each m of 1 ... 32
    # that runs), less at 32; the answer is the best, not the limit "tends to 0 as m goes to infinity"
    (dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8), 0.210128, 16),
])
def test_an_unreachable_whole_number_answers_its_best_value_where_the_output_peaks_inside(kw, best, at):
    ext = DistributedModel(fidelity="extended")
    r = required("mfu", 0.5, "microbatch_count", "Llama3_70B", "Research_256", fidelity="extended", **kw)
    assert not r.reachable and r.limit[1] == pytest.approx(best, abs=1e-6)
    assert r.reason.startswith(f"the best valid microbatch_count, {at}, gives {best}, short of 0.5")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mfus = {m: ext.solve("Llama3_70B", "Research_256", **dict(kw, microbatch_count=m)).mfu
                for m in (4, 8, 16, 32)}
    assert max(mfus, key=mfus.get) == at and mfus[at] == r.limit[1] and mfus[8] < mfus[16] > mfus[32]


def test_microbatches_for_a_bubble_under_five_percent():
    # (p - 1) / (v m + p - 1) <= 0.05 with p = 4, v = 1: m >= 3 (1 - 0.05) / 0.05 = 57, exactly 0.05 there; a batch
    # of 512 over 8 replicas gives each 64 samples a step, and the microbatches must split them (can_run): of
    # 57..64 only 64 does, with a bubble of 3 / 67
    kw = dict(LLAMA, batch_size=512)
    r = required("bubble_fraction", 0.05, "microbatch_count", "Llama3_70B", "Research_256", **kw)
    assert r.value == pytest.approx(57, rel=1e-12) and r.integer == 64 and r.achieved == pytest.approx(3 / 67)
    assert r.direction == -1 and r.regimes == 1
    m, p, v = sym.m, sym.pp, sym.v
    assert sp.simplify(r.expression - sp.solve(sp.Eq((p - 1) / (v * m + p - 1), TARGET), m)[0]) == 0
    # the next runnable count below, 32, misses it: 3 / 35 > 0.05
    assert exact("Llama3_70B", "Research_256", kw, "microbatch_count", 32, "bubble_fraction") > 0.05
    assert r.latex().startswith("m = ") and "\\MicrobatchCount" in r.latex(book=True)


def test_a_long_closed_form_of_an_unreachable_root_is_not_printed():
    # 32 nodes of tp 4, pp 4, 32 microbatches of a 512-sample batch: 8 nodes more leave a replica fewer samples than
    # microbatches, so no count above 32 runs; the root (49.15 nodes) is named, its 1,321-character closed form in
    # the parameters is not (it filled 25 lines of a terminal)
    r = required("step_time", 10.0, "count", "modern/Llama-3.1-70B", "modern/H100-SXM-1024", count=32,
                 batch_size=512, seq_len=8192, precision="bf16", tp_size=4, pp_size=4, microbatch_count=32,
                 v_stages=4, zero_stage=1, overlap_comm=True)
    assert not r.reachable and r.limit[1] == pytest.approx(15.3309, rel=1e-5)
    assert "the root of this regime is count = 49.1545 (a closed form of 1,321 characters, not shown);" in r.notes[0]
    assert max(map(len, str(r).splitlines())) <= 80
    # reachable (30 s): the answer's closed form is as long, counted on the screen and whole in the JSON and LaTeX
    r = required("step_time", 30.0, "count", "modern/Llama-3.1-70B", "modern/H100-SXM-1024", count=32,
                 batch_size=512, seq_len=8192, precision="bf16", tp_size=4, pp_size=4, microbatch_count=32,
                 v_stages=4, zero_stage=1, overlap_comm=True)
    n = len(plain(r.expression))
    assert r.reachable and n > 1000 and f"closed form (y = target): {n:,} characters, not shown" in str(r)
    assert len(str(r).splitlines()) < 15 and sp.sympify(r.to_dict()["expression"]) != 0


def test_a_whole_number_answer_is_a_schedule_a_framework_runs():
    # batch 256 over 8 replicas: 32 samples a step, so at most 32 microbatches (3 / 35 = 8.6 %): the root 57
    # needs more samples than a replica has, and the answer says so instead of pricing 57 microbatches
    r = required("bubble_fraction", 0.05, "microbatch_count", "Llama3_70B", "Research_256", **LLAMA)
    assert not r.reachable and r.integer is None
    assert r.limit[1] == pytest.approx(3 / 35) and "at microbatch_count = 32" in r.reason
    # b = (N_PP - 1)/(m V + N_PP - 1) = y: m = (N_PP - 1)(1 - y)/(V y), factored (at y = 0.05, pp 4, V 1: 57)
    assert "the root of this regime is microbatch_count = 57, -(N_PP - 1)*(y - 1)/(V*y) (y = the target);" \
        in r.notes[0]
    # the input by its printed symbol (m) and the output by the book's glyph (b_pipe) ask the same question
    assert required("b_pipe", 0.05, "m", "Llama3_70B", "Research_256", **LLAMA).notes == r.notes
    assert r.latex() == r"\min_{m} b_{\text{interleaved}} = 0.0857143"      # 3 / 35 to the 6 digits the text prints
    # nodes for a 2048-sample batch (tp 8, pp 4: 32 accelerators a replica, 32 microbatches of a replica's
    # samples): every answer splits the batch evenly over the replicas and the microbatches over their samples
    kw = dict(LLAMA, batch_size=2048, microbatch_count=32)
    for output, target in (("mfu", 0.3), ("scaling_efficiency", 0.5), ("step_latency_total", 3.0)):
        r = required(output, target, "count", "Llama3_70B", "Research_256", **kw)
        n = r.integer if r.reachable else int(re.search(r"at count = (\d+)", r.reason).group(1))
        dp = n * 8 // 32
        assert 2048 % dp == 0 and (2048 // dp) % 32 == 0, (output, str(r))
    # through the command line: the same whole number (256 nodes: 64 replicas of 32 samples, one a microbatch)
    p = subprocess.run([sys.executable, "-m", "mlsysim_sym", "required", "--output", "mfu", "--target", "0.3",
                        "--solve-for", "count", "--batch-size", "2048", "--tp", "8", "--pp", "4", "--microbatches",
                        "32", "--json"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    r = required("mfu", 0.3, "count", "Llama3_70B", "Research_256", **kw)
    assert got["integer"] == r.integer == 256 and 2048 % (256 * 8 // 32) == 0


CONTINUOUS = [
    ("mfu", "efficiency"), ("step_latency_total", "fabric_latency"), ("scaling_efficiency", "fabric_bandwidth"),
    ("mfu", "fabric_latency"), ("memory", "parameters"), ("step_latency_total", "overlap_efficiency"),
    ("mfu", "peak_flops"), ("step_latency_total", "congestion_factor"),
]
CONFIGS = [
    ("Llama3_70B", "Research_256", LLAMA),
    ("Llama3_70B", "Research_256", dict(LLAMA, overlap_comm=True, zero_stage=1)),
    ("Mixtral_8x7B", "Training_1K", dict(batch_size=1024, tp_size=2, ep_size=4, precision="bf16", zero_stage=1,
                                          overlap_comm=True, gradient_accumulation_steps=4)),
    ("Llama3_8B", "Lab_64_H100", dict(batch_size=64, tp_size=2, pp_size=2, microbatch_count=4, seq_len=8192)),
    ("GPT3", "Training_1K_A100", dict(batch_size=512, tp_size=16, pp_size=8, microbatch_count=4, v_stages=2,
                                      precision="fp8", activation_recomputation=True)),
]


def _reachable_target(model, fleet, kw, solve_for, output, rng):
    """A target the output takes at a nearby value of the input: reachable by construction."""
    from mlsysim_sym import parameters_of
    from mlsysim_sym.symbols import by_argument
    x0 = float(parameters_of(model, fleet, **kw)[1][by_argument()[solve_for].symbol])
    factor = rng.choice([0.7, 0.9, 1.25, 1.6])
    x1 = min(x0 * factor, 1.0) if solve_for in ("efficiency", "overlap_efficiency") else x0 * factor
    if x1 == x0:
        return None
    try:
        return exact(model, fleet, kw, solve_for, x1, output)
    except (ValueError, TypeError):
        return None


@pytest.mark.parametrize("case", range(16))
def test_continuous_answers_meet_the_target_through_solve(case):
    rng = random.Random(case)
    model, fleet, kw = CONFIGS[case % len(CONFIGS)]
    output, solve_for = CONTINUOUS[(case * 7) % len(CONTINUOUS)]
    if solve_for == "overlap_efficiency" and not kw.get("overlap_comm"):
        kw = dict(kw, overlap_comm=True)
    target = _reachable_target(model, fleet, kw, solve_for, output, rng)
    if target is None:
        pytest.skip("this draw moves nothing")      # pragma: no cover - the draws below all move
    r = required(output, target, solve_for, model, fleet, **kw)
    assert r.reachable, str(r)
    got = exact(model, fleet, kw, solve_for, r.value, output)
    assert got == pytest.approx(target, rel=1e-9), str(r)
    assert r.achieved == pytest.approx(target, rel=1e-9)


INTEGER = [("bubble_fraction", "microbatch_count"), ("memory", "batch_size"), ("mfu", "batch_size"),
           ("step_latency_total", "microbatch_count"), ("memory", "microbatch_count"), ("mfu", "count")]


@pytest.mark.parametrize("case", range(12))
def test_whole_number_answers_meet_the_target_and_the_next_value_misses(case):
    rng = random.Random(100 + case)
    model, fleet, kw = CONFIGS[case % len(CONFIGS)]
    output, solve_for = INTEGER[case % len(INTEGER)]
    if solve_for == "microbatch_count" and kw.get("pp_size", 1) == 1:
        kw = dict(kw, pp_size=2, microbatch_count=4)
    base = exact(model, fleet, kw, solve_for, kw.get(solve_for, None) or _count(fleet), output)
    target = base * rng.choice([0.8, 0.95, 1.05, 1.3])
    r = required(output, target, solve_for, model, fleet, **kw)
    if not r.reachable:
        assert r.limit is not None and r.reason
        return
    assert r.integer is not None, str(r)
    got = exact(model, fleet, kw, solve_for, r.integer, output)
    meets = (got - target) * r.direction >= -1e-12 * abs(target)
    assert meets, str(r)
    # the next valid value on the other side of the boundary misses (valid: solve() takes it and a framework runs
    # the schedule, as required() answers only those)
    toward = -r.meets_toward
    assert toward in (1, -1)
    nxt = r.integer + toward
    for _ in range(4096):
        try:
            if not arguments(model, fleet, kw).moved(solve_for, nxt).runnable:
                raise ValueError("not runnable")
            other = exact(model, fleet, kw, solve_for, nxt, output)
            break
        except (ValueError, TypeError):
            nxt += toward
    else:                                              # pragma: no cover
        return
    assert (other - target) * r.direction < 0, (str(r), nxt, other)


def _count(fleet):
    from mlsysim_sym.inputs import as_fleet
    return as_fleet(fleet).count


def test_a_scaling_efficiency_beyond_infinite_bandwidth_is_no_solution_with_its_limit():
    # at 12.5 GB/s the Llama example has f_compute 0.5215; DP and EP bandwidth terms vanish as the fabric
    # bandwidth grows, leaving T_node / (T_node + T_TP + T_bubble + latencies): 0.6386
    r = required("scaling_efficiency", 0.8, "fabric_bandwidth", "Llama3_70B", "Research_256", **LLAMA)
    assert not r.reachable and r.value is None and r.integer is None
    expr, value = r.limit
    assert value == pytest.approx(0.638623, abs=1e-6)
    far = exact("Llama3_70B", "Research_256", LLAMA, "fabric_bandwidth", 1e18, "scaling_efficiency")
    assert far == pytest.approx(value, rel=1e-6)
    assert "short of 0.8" in r.reason and "no value reaches it" in str(r)
    # the limit is a closed form in the quantities that do not depend on the bandwidth
    names = {build_model().quantity(n).symbol for n in ("T_node", "T_tp", "T_bubble")}
    assert names <= expr.free_symbols


def test_a_parallel_degree_is_searched_among_the_valid_degrees():
    kw = dict(LLAMA, tp_size=2)
    r = required("mfu", 0.27, "tp_size", "Llama3_70B", "Research_256", **kw)
    # tp 8 gives the best MFU of the valid degrees (0.2604); 0.27 is out of reach
    assert not r.reachable and "tp_size = 8" in r.reason and r.limit[1] == pytest.approx(0.260397, abs=1e-6)


def test_a_root_in_the_next_regime_is_found_there():
    # with 2 microbatches on 4 stages the in-flight divisor max(1, m // p) is 1: memory does not depend on m
    # at all in this regime. From m = 4 on it does: ceil(32 / (m // 4)) samples per microbatch. 45 GB needs
    # m // 4 = 6 (6 samples: 44.48 GB at m = 24), but the microbatches must split a replica's 32 samples
    # (can_run): the runnable counts are 16 (8 samples, 47.47 GB) and 32 (4 samples, 41.49 GB)
    kw = dict(LLAMA, microbatch_count=2)
    r = required("memory", 45e9, "microbatch_count", "Llama3_70B", "Research_256", **kw)
    assert r.regimes == 2 and r.integer == 32 and r.achieved == pytest.approx(41.4933e9, rel=1e-5)
    assert exact("Llama3_70B", "Research_256", kw, "microbatch_count", 16, "memory") > 45e9
    assert "1 regime change" in str(r) and "χ_LoRA" in str(r)


def test_regime_changes_are_followed():
    # raising the batch past what fits moves the memory roofline to the host link: the root of the
    # step time lies in the spilling regime, and solve() agrees there
    kw = dict(batch_size=64, tp_size=2, pp_size=2, microbatch_count=4)
    base = DistributedModel().solve("Llama3_8B", "Lab_64_H100", **kw).step_latency_total
    r = required("memory", 85e9, "batch_size", "Llama3_8B", "Lab_64_H100", **kw)
    assert r.integer is not None
    got = exact("Llama3_8B", "Lab_64_H100", kw, "batch_size", r.integer, "memory")
    assert got >= 85e9 and base > 0


@pytest.mark.parametrize("args, message", [
    (("mfu", 0.3, "tensor_parallel"), "solve_for must be a solve() argument or record field"),
    (("mfu", float("nan"), "efficiency"), "target must be a finite number"),
    (("nope", 0.3, "efficiency"), "unknown output 'nope'"),
    (("mfu", 0.3, "zero_stage"), "solve_for must be"),
    (("mfu", -1, "efficiency"), "target must be >= 0: mfu is never negative; got -1"),
    (("step_latency_total", -3.0, "batch_size"), "target must be >= 0: step_latency_total is never negative"),
])
def test_bad_input_is_named(args, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        required(*args, "Llama3_70B", "Research_256", **LLAMA)
    with pytest.raises(ValueError, match="side must be"):
        required("mfu", 0.3, "efficiency", "Llama3_70B", "Research_256", side="above", **LLAMA)


@pytest.mark.parametrize("fidelity", ["mlsysim", "extended"])
def test_no_quantity_of_the_model_is_negative_which_a_negative_target_refusal_reads(fidelity):
    # required() refuses a negative target for a named output because every quantity of the model is an amount
    # (a time, a size, a share, a rate, a count, a 0/1 flag) but the bytes over the HBM, negative while the state
    # fits: here at the bundled example and at a layout where every term is in play (DP, TP, PP with a bubble,
    # ZeRO-3, recompute, overlap)
    from mlsysim_sym.requirements.problem import SIGNED, Problem
    seen = set()
    for kw in (LLAMA, dict(LLAMA, zero_stage=3, activation_recomputation=True, overlap_comm=True, microbatch_count=2)):
        pr = Problem("mfu", 0.3, "efficiency", "Llama3_70B", "Research_256", dict(kw, fidelity=fidelity), "auto")
        _, symbols = pr._all
        values = pr.quantities(pr.x0)
        assert len(symbols) > 40
        negative = {n for n, s in symbols.items() if float(values[s]) < 0}
        assert negative <= set(SIGNED), negative
        seen |= negative
    assert seen == set(SIGNED)      # at the example, where the state fits
    # through the command line: one line, exit status 2
    p = subprocess.run([sys.executable, "-m", "mlsysim_sym", "required", "--output", "mfu", "--target", "-1",
                        "--solve-for", "efficiency"], capture_output=True, text=True)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip() == "mlsysim-sym: error: --target: target must be >= 0: mfu is never negative; got -1"
    # a share (MFU, scaling efficiency, bubble fraction) is never above 1: a target of 1.5 is refused, not answered
    # with "no value reaches it"; 1 itself is a question (the efficiency it takes)
    for output in ("mfu", "scaling_efficiency", "bubble_fraction", "node_mfu"):
        with pytest.raises(ValueError, match=f"target must be <= 1: {output} is a share, never above 1; got 1.5"):
            required(output, 1.5, "efficiency", "Llama3_70B", "Research_256", **LLAMA)
    assert required("mfu", 1.0, "efficiency", "Llama3_70B", "Research_256", **LLAMA).target == 1.0


def test_an_expression_of_quantities_is_an_output():
    m = build_model()
    T = {n: m.quantity(n).symbol for n in ("T_dp", "T_compute")}
    # the global batch at which the DP all-reduce fits in the backward pass (2/3 of the compute)
    r = required(T["T_dp"] / T["T_compute"], sp.Rational(2, 3), "batch_size", "Llama3_70B", "Research_256",
                 side="at most", **LLAMA)
    from mlsysim_sym.operating_point import operating_point_of
    p = operating_point_of("Llama3_70B", "Research_256", **dict(LLAMA, batch_size=r.integer))
    assert p.value("T_dp") / p.value("T_compute") <= 2 / 3
    # the runnable batch below (a multiple of 8 replicas x 8 microbatches) misses
    assert r.integer % 64 == 0
    q = operating_point_of("Llama3_70B", "Research_256", **dict(LLAMA, batch_size=r.integer - 64))
    assert q.value("T_dp") / q.value("T_compute") > 2 / 3
    assert math.isfinite(r.value) and r.expression is not None


def test_the_requirements_document_shows_what_required_computes():
    from pathlib import Path
    from derivations import required_doc
    text = (Path(__file__).resolve().parents[1] / "docs" / "required.md").read_text()
    ctx = required_doc.context()
    by_key = {a["q"].key: a["r"] for a in ctx["answers"]}
    # the bubble's root, 57 microbatches, is no runnable count at a batch of 256 (32 samples a replica step): the
    # best is 32; at 512, 64 microbatches split the 64 samples (3 / 67)
    assert by_key["microbatches"].integer is None and "at microbatch\\_count = 32: at least $0.0857$" in text
    assert "The root of this regime is microbatch\\_count = 57" in text
    assert by_key["microbatches-512"].integer == 64 and "| whole number, through solve() | 64 | 0.04478 |" in text
    assert "| root of the closed form | 43.61 GB/s | 0.6 |" in text
    assert not by_key["bandwidth-limit"].reachable and "at most $0.6386$" in text
    # the largest model per accelerator grows with the ZeRO stage: 111.5, 320.6, 477.2, 892.2 billion
    assert [round(z["value"] / 1e9, 1) for z in ctx["zero"]] == [111.5, 320.6, 477.2, 892.2]
    for z in ctx["zero"]:
        assert f"ZeRO stage {z['z']}: {z['text']} parameters" in text
        got = exact("Llama3_70B", "Research_256", dict(LLAMA, zero_stage=z["z"]), "parameters", z["value"], "memory")
        assert got == pytest.approx(80e9, rel=1e-9)


def test_an_output_that_does_not_depend_on_the_input_says_so():
    r = required("memory", 70e9, "memory_capacity", "Llama3_70B", "Research_256", **LLAMA)
    assert not r.reachable and "does not depend on memory_capacity" in r.reason


def test_book_mode_prints_registry_macros_of_the_same_equation():
    mlsysim = pytest.importorskip("mlsysim")
    from mlsysim_sym import notation
    known = {s.macro for s in mlsysim.Symbols} | set(notation.book_macros())
    for output, target, x in (("bubble_fraction", 0.05, "microbatch_count"),
                              ("scaling_efficiency", 0.6, "fabric_bandwidth"), ("mfu", 0.3, "efficiency")):
        tex = required(output, target, x, "Llama3_70B", "Research_256", **LLAMA).latex(book=True)
        assert registry.book_problems(tex, known) == [], tex
    # (p - 1) / (v m + p - 1) = y gives m = -(p y - p - y + 1) / (v y) (at y = 1/20, 19 (p - 1) / v): the book's
    # form is the plain one in macros, the target y a macro too (expanding the macros gives the plain form exactly)
    r = required("bubble_fraction", 0.05, "microbatch_count", "Llama3_70B", "Research_256",
                 **dict(LLAMA, batch_size=512))
    tex = r.latex(book=True)
    assert tex == (r"\MicrobatchCount = - \frac{\PipelineParallelDegree \RequiredOutputTarget - "
                   r"\PipelineParallelDegree - \RequiredOutputTarget + 1}{\VirtualPipelineStagesPerDevice "
                   r"\RequiredOutputTarget}")
    assert r.latex() == r"m = - \frac{N_{\text{PP}} y - N_{\text{PP}} - y + 1}{V y}"


MIXTRAL = dict(batch_size=1024, tp_size=2, ep_size=4, precision="bf16", zero_stage=1, overlap_comm=True,
               gradient_accumulation_steps=4)


@pytest.mark.parametrize("args, kw, best, words", [
    # efficiency is at most 1: at 1 the step takes 2.1625 s, so 1 s is out of reach (not "efficiency = 27.6")
    (("step_time", 1.0, "efficiency", "Llama3_70B", "Research_256"), LLAMA, 2.1625017, "reaches 1, the end"),
    (("mfu", 0.9, "efficiency", "Llama3_70B", "Research_256"), LLAMA, 0.4056329, "reaches 1, the end"),
    # the routing imbalance is at least 1: the best MFU is at 1
    (("mfu", 0.5, "moe_routing_imbalance_factor", "Mixtral_8x7B", "Training_1K"), MIXTRAL, 0.3161443,
     "reaches 1, the end"),
    # one gradient-accumulation step is the fewest: 0.924 s, not "0.88 steps"
    (("step_time", 1.0, "gradient_accumulation_steps", "Mixtral_8x7B", "Training_1K"), MIXTRAL, 0.9241946,
     "reaches 1, the end"),
])
def test_answers_stay_in_the_inputs_range(args, kw, best, words):
    r = required(*args, **kw)
    assert not r.reachable and r.value is None and r.integer is None
    assert r.limit[1] == pytest.approx(best, rel=1e-6) and words in r.reason
    assert r"\to 1" in r.latex() or "1" in r.toward


def test_a_flat_regime_that_already_meets_the_target_answers_with_the_boundary():
    # memory is 83.3 GB for m = 1 ... 7 (the in-flight divisor is 1 until m = 8 = 2 p), 59.4 GB at m = 8; of
    # 1 ... 7, the counts that split a replica's 32 samples are 1, 2 and 4
    r = required("memory", 80e9, "microbatch_count", "Llama3_70B", "Research_256", **LLAMA)
    assert r.direction == 1 and r.integer == 4 and r.achieved == pytest.approx(83.302136168e9)
    assert exact("Llama3_70B", "Research_256", LLAMA, "microbatch_count", 8, "memory") < 80e9


def test_many_regime_changes_fall_back_to_a_search_through_solve():
    # on 100,000 GPUs the MFU falls with the node count through many tiers: 0.2516 at 2048 nodes
    kw = dict(batch_size=4096, tp_size=8, pp_size=4, microbatch_count=8)
    r = required("mfu", 0.25, "count", "Llama3_70B", "Mega_100K", **kw)
    assert r.integer is not None and r.achieved >= 0.25 and r.expression is None
    assert exact("Llama3_70B", "Mega_100K", kw, "count", r.integer, "mfu") == pytest.approx(r.achieved)
    # the answer runs (4096 samples split over its replicas, each replica's over 8 microbatches), and the next
    # valid node count on the other side misses
    moved = arguments("Llama3_70B", "Mega_100K", kw).moved("count", r.integer)
    assert moved.runnable
    v = r.integer - r.meets_toward
    for _ in range(4096):
        if arguments("Llama3_70B", "Mega_100K", kw).moved("count", v).runnable:
            assert exact("Llama3_70B", "Mega_100K", kw, "count", v, "mfu") < 0.25
            break
        v -= r.meets_toward


def test_a_lowered_input_is_set_as_the_sweeps_set_it_and_one_the_model_lacks_is_refused():
    # the forward FLOPs per token have no record field: set as a lowered input (as sweep() sets it)
    r = required("mfu", 0.3, "inference_flops", "Llama3_70B", "Research_256", **LLAMA)
    assert r.reachable
    got = sweep("Llama3_70B", "Research_256", outputs=("mfu",), inference_flops=[r.value], **LLAMA)["mfu"][0]
    assert got == pytest.approx(0.3, rel=1e-9)
    with pytest.raises(ValueError, match="weight_bytes does not enter the transformer model"):
        required("mfu", 0.3, "weight_bytes", "Llama3_70B", "Research_256", **LLAMA)


@pytest.mark.parametrize("batch", [256, 2**17])
def test_an_output_already_at_the_target_answers_the_current_value(batch):
    # ResNet-50 has no pipeline: pp = 1 (and v = 1), so the bubble (p - 1) / (v m + p - 1) = 0 / m = 0 at every m.
    # Now m = 1 and the bubble is 0: a target of 0 is met where the configuration stands, so the answer is m = 1
    # (a schedule a framework runs: without a pipeline the microbatches change nothing), not the far end of the
    # plateau (256 = the batch, or 100001 = one past the walk's bound, as it answered before)
    r = required("bubble_fraction", 0, "microbatch_count", "ResNet50", "Research_256", batch_size=batch)
    assert r.current == 1 and r.current_output == 0 and r.direction == 1
    assert r.reachable and r.value == 1 and r.integer == 1 and r.achieved == 0
    assert any("already meets the target" in n for n in r.notes)
    # a continuous input the bubble does not read either: its current value
    r = required("bubble_fraction", 0, "efficiency", "ResNet50", "Research_256", batch_size=batch)
    assert r.value == 0.5 and r.achieved == 0


def _question_of(draw):
    output, target, solve_for, model, fleet, kw = draw
    return (output, target, solve_for, model, fleet), kw


def test_a_regime_is_solved_once_and_answers_the_same_cold_and_warm():
    from mlsysim_sym.requirements import regime
    regime.clear()
    args, kw = ("scaling_efficiency", 0.6, "fabric_bandwidth", "Llama3_70B", "Research_256"), LLAMA
    cold = required(*args, **kw)
    kept = regime.kept()
    assert kept[1] >= 1
    warm = required(*args, **kw)
    assert warm == cold and regime.kept() == kept           # nothing built again
    assert warm.expression is cold.expression                # the kept closed form itself
    # other numbers in the same regime (another target, another compute efficiency, another batch) reuse the
    # kept solution, and each answer plugs back into solve()
    for target, more in ((0.55, {}), (0.6, dict(efficiency=0.4)), (0.62, dict(batch_size=512))):
        k = dict(kw, **more)
        r = required("scaling_efficiency", target, "fabric_bandwidth", "Llama3_70B", "Research_256", **k)
        assert regime.kept()[1] == kept[1], more
        assert r.expression is cold.expression
        got = exact("Llama3_70B", "Research_256", k, "fabric_bandwidth", r.value, "scaling_efficiency")
        assert got == pytest.approx(target, rel=1e-9)
    # after the cache is cleared the same question builds it again and answers the same
    regime.clear()
    assert required(*args, **kw) == cold and regime.kept()[1] >= 1


def test_the_cache_keys_on_the_regime_not_the_numbers():
    # 4 stages, 8 then 16 microbatches: the same regime, the same closed form; 2 stages: the bubble reads
    # (p - 1) / (v m + p - 1) all the same, so the closed form is the same expression too (p is a symbol in it)
    from mlsysim_sym.requirements import regime
    forms = set()
    for pp, m in ((4, 8), (4, 16), (2, 8)):
        kw = dict(LLAMA, batch_size=1024, pp_size=pp, microbatch_count=m)
        r = required("bubble_fraction", 0.05, "microbatch_count", "Llama3_70B", "Research_256", **kw)
        forms.add(r.expression)
        # the root (p - 1)(1 - y) / (v y) = 19 (p - 1)
        assert r.value == pytest.approx(19 * (pp - 1), rel=1e-12)
        assert exact("Llama3_70B", "Research_256", kw, "microbatch_count", r.integer, "bubble_fraction") <= 0.05
    assert len(forms) == 1
    assert regime.kept()[1] >= 1


def _guard(seconds):
    """A generous bound on one call (a hang guard, not a timing goal: those are in benchmarks/)."""
    import signal

    def late(signum, frame):
        raise TimeoutError(f"past {seconds} s")
    signal.signal(signal.SIGALRM, late)
    signal.alarm(seconds)


@pytest.mark.parametrize("args, kw, words", [
    (("scaling_efficiency", 0.8, "fabric_bandwidth", "Llama3_70B", "Research_256"), LLAMA,
     "scaling_efficiency tends to 0.638623 as fabric_bandwidth goes to infinity in this regime, short of 0.8"),
    # more nodes: each replica's share of the batch, and its step, shrink, but the data-parallel latency grows
    # with the replicas: the throughput tends to the limit B_local k / (2 c_cong alpha_fab) (the node counts that
    # may run reach 8192, too many to try each: the limit, not a best value, is the answer)
    (("throughput", 1e9, "count", "Llama3_70B", "Research_256"), dict(LLAMA, batch_size=2048, microbatch_count=32),
     "throughput tends to 10000 samples/s as count goes to infinity in this regime, short of 1e+09 samples/s"),
    # a step of 10 ms is out of reach: six regimes on the way (the all-reduce changes tier), then the best
    # node count through solve(): 256 nodes, the most that run (64 replicas of 32 GPUs, each 32 microbatches of
    # one sample), 2.957 s as a sweep gives it (64 nodes: 9.678 s, 128: 5.196 s)
    (("step_time", 0.01, "count", "Llama3_70B", "Research_256"), dict(LLAMA, batch_size=2048, microbatch_count=32),
     "no value of count brings step_time to 10 ms within 6 regimes; the best found is 2.95735 s, at count = 256"),
    (("step_time", 1e-6, "efficiency", "Llama3_70B", "Research_256"), LLAMA, "reaches 1, the end of its range"),
])
def test_an_unreachable_target_says_so_with_the_best_value(args, kw, words):
    _guard(120)
    try:
        r = required(*args, **kw)
    finally:
        import signal
        signal.alarm(0)
    assert not r.reachable and words in r.reason and "no value reaches it" in str(r)
    best = r.limit[1]
    assert math.isfinite(best)


def _exact_any(model, fleet, kw, solve_for, value, output):
    """The output at solve_for = value through solve(), for any model family (its own variant's quantity)."""
    import warnings
    a = arguments(model, fleet, kw).moved(solve_for, value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _solve_output(a, quantity_name(output, a.variant))[0]


def test_random_questions_plug_back_into_solve():
    # the benchmark's seeded questions: every answer meets its target through solve() (a root to 1e-9, a whole
    # number at or past it), every refusal is a ValueError with words, no unreachable answer without a reason
    import signal
    import warnings
    from benchmarks.bench_required import questions
    answered = 0
    for draw in questions(60, seed=7):
        args, kw = _question_of(draw)
        output, target, solve_for, model, fleet = args
        _guard(120)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = required(*args, **kw)
        except ValueError as exc:
            assert str(exc)
            continue
        finally:
            signal.alarm(0)
        if not r.reachable:
            assert r.reason and r.limit is not None, str(r)
            continue
        tol = 1e-9 * max(1.0, abs(target))
        if r.integer is not None:
            got = _exact_any(model, fleet, kw, solve_for, r.integer, output)
            assert (got - target) * r.direction >= -tol, str(r)
        elif r.achieved is not None:
            got = _exact_any(model, fleet, kw, solve_for, r.value, output)
            assert got == pytest.approx(r.achieved, rel=1e-12) and (got - target) * r.direction >= -tol, str(r)
            if r.expression is not None:                    # a root: the target itself
                assert got == pytest.approx(target, rel=1e-9, abs=1e-300), str(r)
        answered += 1
    assert answered >= 10


def test_an_input_that_cannot_make_the_schedule_run_is_not_walked():
    # batch 256 over tp 2 x pp 4 on 100,000 GPUs: 12,500 replicas, so the batch does not split over them and no
    # framework runs the schedule (can_run); the sequence length does not enter that rule, so no whole number of
    # it is valid: said at once (it walked 100,000 values before)
    kw = dict(batch_size=256, tp_size=2, pp_size=4, precision="bf16", microbatch_count=4, seq_len=8192)
    assert not arguments("Llama2_13B", "Mega_100K", kw).runnable
    with pytest.warns(UserWarning, match="some ranks will be idle"):       # mlsysim's warning for batch < dp
        r = required("step_time", 1.0, "seq_len", "Llama2_13B", "Mega_100K", **kw)
    assert not r.reachable and "no valid whole number of seq_len meets it" in r.reason
    assert any("runs no schedule a framework runs" in n and "no value of seq_len changes that" in n
               for n in r.notes), r.notes


def test_the_layer_count_cannot_make_a_batch_split_over_the_replicas():
    # batch 256 over pp 2 on 1,024 A100s: 512 replicas, so the batch does not split over them (can_run's rule 1);
    # the layer count enters only rules 3 and 4 (a layer per stage, equal chunks), so no whole number of layers
    # makes the schedule run: said at once, with that note alone (it walked 100,000 layer counts, 2.8 s, before)
    kw = dict(batch_size=256, tp_size=1, pp_size=2, precision="fp16", microbatch_count=16, ep_size=1)
    a = arguments("Llama3_70B", "Training_1K_A100", kw)
    assert not a.runnable and not a.runs(layer_rules=False)
    with pytest.warns(UserWarning, match="some ranks will be idle"):
        r = required("node_profile.mfu", 1e-9, "layers", "Llama3_70B", "Training_1K_A100", **kw)
    assert not r.reachable and "no valid whole number of layers meets it" in r.reason
    assert [n for n in r.notes if "no value of layers changes that" in n] and not [
        n for n in r.notes if "the root of this regime" in n], r.notes
    # with pp 8 the batch splits (256 samples over 128 replicas, 2 microbatches of 1): the layer rules decide
    ok = dict(kw, pp_size=8, microbatch_count=2)
    assert arguments("Llama3_70B", "Training_1K_A100", ok).runs(layer_rules=False)


def test_a_root_that_solve_refuses_is_no_answer_and_says_why():
    # DeepSeek-V3 at tp 2, pp 8, ep 8: 294 GB per GPU. Memory falls with the parameter count, and the closed
    # form reaches 80 GB at P = 4.60e11; but the card's routed experts alone hold more than that, so the dense
    # remainder (and its messages) would be negative there: solve() refuses the configuration, and the answer says
    # that no valid value meets the target, where it used to print the root as an answer
    r = required("memory", 80e9, "parameters", "modern/DeepSeek-V3", "modern/H100-SXM-1024", fidelity="extended",
                 ep_size=8, tp_size=2, pp_size=8, batch_size=4096, microbatch_count=16)
    assert not r.reachable and r.reason.startswith("no valid value of parameters meets it")
    assert r.notes == ("the root of this regime is parameters = 4.59876e+11, where solve() refuses the configuration "
                       "(expert_parameters (6.53909e+11) must be <= parameters (4.59876e+11): the routed experts are "
                       "part of the model)",)
    assert "answer:" not in r.text()


def test_a_side_the_configuration_already_meets_keeps_the_configuration():
    # mfu at least 0.01 by microbatches: the example's m = 8 gives 0.2604 and the MFU grows with m, so the root
    # of mfu(m) = 0.01 lies below m = 1: every valid m meets it (it answered "no value reaches it ... short of
    # 0.01" with the limit 0.3237 as m goes to infinity, which is above 0.01)
    r = required("mfu", 0.01, "microbatch_count", "Llama3_70B", "Research_256", side="at least", **LLAMA)
    assert r.reachable and r.integer == 8 and r.achieved == pytest.approx(r.current_output)
    low = exact("Llama3_70B", "Research_256", LLAMA, "microbatch_count", 1, "mfu")
    assert 0.01 < low < r.current_output        # m = 1, the other end, still meets it (the note prints it)
    assert f"at microbatch_count = 1, the end of its range, it is {low:.6g}" in " ".join(str(r).split())
    assert "already meets the target" in " ".join(str(r).split()) and r.latex() == "m = 8"
    # a continuous input the same way: at the top of efficiency's range (1) the MFU is still under 0.9
    r = required("mfu", 0.9, "efficiency", "Llama3_70B", "Research_256", side="at most", **LLAMA)
    top = exact("Llama3_70B", "Research_256", LLAMA, "efficiency", 1.0, "mfu")
    assert r.reachable and r.value == 0.5 and top < 0.9 and f"it is {top:.6g}" in " ".join(str(r).split())


@pytest.mark.parametrize("start", [512, 256, 64])
def test_the_best_whole_number_found_does_not_depend_on_the_start(start):
    # a step of 1 s is out of reach at tp 8, pp 4, m 8 on 256 GPUs: 8 replicas of 8 microbatches run at
    # batch 64 and above (64 = 8 x 8), and the step shrinks with the batch, so the best is batch 64, 1.3089 s
    # (solve()); from 512 it said 256 (3.369 s), from 256 it said 128 (1.995 s)
    from mlsysim_sym import DistributedModel, required
    kw = dict(tp_size=8, pp_size=4, microbatch_count=8)
    r = required("step_time", 1.0, "batch_size", "Llama3_70B", "Research_256", batch_size=start, **kw)
    best = DistributedModel().solve("Llama3_70B", "Research_256", batch_size=64, **kw).step_latency_total
    assert r.value is None and r.limit[1] == pytest.approx(best, rel=1e-12)
    assert "the best found is 1.3089 s, at batch_size = 64" in " ".join(str(r).split())


def test_a_limit_at_a_count_that_runs_no_configuration_answers_the_best_valid_count():
    # tp 8 x pp 4 needs 32 accelerators, 4 nodes of 8: MFU grows as the nodes go (fewer replicas to synchronize)
    # toward count = 1, the end of its range, where the layout does not fit; the best valid count is 4 (0.319348,
    # solve()'s own MFU; it said "mfu tends to 0.319604 as count reaches 1"), but at 4 and 8 nodes a replica holds
    # 226.6 and 131.1 GB, more than the 85.9 GB of HBM: the answer is 16 nodes (83.3 GB), 0.291119
    r = required("mfu", 0.5, "count", "Llama3_70B", "Research_256", **LLAMA)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        at = {c: DistributedModel().solve("Llama3_70B", "Research_256", count=c, **LLAMA) for c in (4, 8, 16)}
    assert [at[c].node_profile.feasible for c in (4, 8, 16)] == [False, False, True]
    best = at[16].mfu
    assert not r.reachable and r.limit[1] == best and round(best, 6) == 0.291119 and round(at[4].mfu, 6) == 0.319348
    assert f"the best valid count, 16, gives {best:.6g}, short of 0.5" in " ".join(r.reason.split())
    assert r.notes == ("count = 4 gives more, 0.319348, but does not fit in accelerator memory; the answer is the "
                       "best value found that fits",)
    assert r.latex().startswith(r"\max_{N_{\text{nodes}}}")
    # the energy of one replica step grows as the nodes go (a replica's share of the batch grows): 1 MJ is out of
    # reach, the most it takes is at 4 nodes, 204.364 kJ (the formula's 817.409 kJ at one node, where tp 8 x pp 4
    # does not fit, was the answer), and among the counts that fit in memory at 16, 51.1033 kJ
    r = required("energy", 1e6, "count", "Llama3_70B", "Research_256", **LLAMA)
    assert round(at[4].node_profile.energy) == 204364
    assert not r.reachable and r.limit[1] == at[16].node_profile.energy and r.value is None
    assert "the best valid count, 16, gives 51.1033 kJ, short of 1 MJ" in " ".join(r.reason.split())
    assert r.notes == ("count = 4 gives more, 204.364 kJ, but does not fit in accelerator memory; the answer is "
                       "the best value found that fits",)


def test_the_best_unreachable_value_is_the_best_that_fits_in_memory_and_a_misfit_answer_says_so():
    # Llama-3.1-70B on Research_256 at pp 1 (solve() at each tp; 85.9 GB of HBM): tp 4 gives the most MFU, 0.185915,
    # holding 329.8 GB; the first tp that fits is 32 (81.15 GB), 0.0154911: the answer is the best that fits
    kw = dict(batch_size=256, tp_size=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = {tp: DistributedModel().solve("Llama3_70B", "Research_256", **dict(kw, tp_size=tp)) for tp in (4, 32)}
    assert not runs[4].node_profile.feasible and runs[32].node_profile.feasible
    r = required("mfu", 0.9, "tp_size", "Llama3_70B", "Research_256", **kw)
    assert not r.reachable and r.limit[1] == runs[32].mfu and r.reason.endswith("is at tp_size = 32")
    assert r.notes == ("tp_size = 4 gives more, 0.185915, but does not fit in accelerator memory; the answer is the "
                       "best value found that fits",)
    # a target met only where the configuration does not fit: the answer, and a note with solve()'s memory
    r = required("mfu", 0.1, "tp_size", "Llama3_70B", "Research_256", **kw)
    assert r.integer == 16 and r.notes[-1] == ("at tp_size = 16 the configuration does not fit: it holds 116.7 GB per "
                                               "accelerator, more than its 85.9 GB of memory (solve()'s feasible is "
                                               "False)")
    # the memory itself as the output: no such note (the answer is about the memory)
    r = required("memory", 120e9, "tp_size", "Llama3_70B", "Research_256", **kw)
    assert not any("does not fit" in n for n in r.notes)


def test_a_best_value_is_one_the_search_tried_all_of_and_the_json_gives_it_with_the_notes():
    # ResNet50's batch runs at every multiple of its 256 replicas, far more values than are scanned: the answer
    # stays the closed-form limit (0.5 as the batch goes to infinity), not the largest of the doublings tried
    r = required("mfu", 0.99, "batch_size", "ResNet50", "Research_256", batch_size=256)
    assert r.toward == "oo" and r.best is None and r.limit[1] == pytest.approx(0.5, rel=1e-9)
    # the bundled example's microbatches (m 1 ... 32 run): the best, m 16, is in the JSON beside the limit
    d = required("mfu", 0.5, "microbatch_count", "Llama3_70B", "Research_256", fidelity="extended",
                 **LLAMA).to_dict()
    assert d["best"] == 16 and d["limit"]["value"] == pytest.approx(0.210128, abs=1e-6) and d["value"] is None
    # and a note the text gives (a better count that does not fit) is in the JSON too
    d = required("mfu", 0.5, "count", "Llama3_70B", "Research_256", **LLAMA).to_dict()
    assert d["best"] == 16 and d["notes"] == ["count = 4 gives more, 0.319348, but does not fit in accelerator "
                                              "memory; the answer is the best value found that fits"]


def test_a_whole_number_away_from_an_unreachable_root_still_answers():
    # Qwen3-235B on GB200 racks of 72, one sample a rank at 32 racks: 2,304 samples split evenly over 72 c ranks
    # only where c divides 32, so after 16 racks (1.987 s) the next count that runs is 32. The smooth root of the
    # configuration's regime (count 125,213) runs no schedule; 32 racks meet 1.5 s, and the answer says so (it
    # answered "no value reaches it", with 32 named as the best found)
    r = required("step_time", 1.5, "count", "modern/Qwen3-235B-A22B", "modern/GB200-NVL72-1152", fidelity="extended",
                 batch_size=2304, seq_len=4096, precision="bf16", ep_size=8, microbatch_count=1, zero_stage=2,
                 overlap_comm=True)
    assert r.reachable and r.integer == 32 and r.achieved == pytest.approx(1.12361, rel=1e-5)
    assert r.current == 16 and r.current_output == pytest.approx(1.98709, rel=1e-5)
    assert r.notes[-1].startswith("the root of this regime is count = 125213")


def test_an_output_that_levels_off_past_the_configurations_regime_says_where():
    # Llama 3.1 70B in FP8 under FSDP at cp 4: MFU rises with the efficiency (0.2791 at 0.5, elasticity +0.89)
    # until the FSDP gathers set the step (0.297024 at 0.55 and beyond, solve() by hand); the answer said "does
    # not depend on efficiency in this regime", of the configuration's regime, where it does
    kw = dict(fidelity="extended", batch_size=512, seq_len=8192, precision="fp8", cp_size=4, zero_stage=3,
              fsdp_overlap=True, cp_overlap=True, sequence_parallel=True, microbatch_count=2)
    r = required("mfu", 0.35, "efficiency", "modern/Llama-3.1-70B", "modern/H100-SXM-1024", **kw)
    assert not r.reachable and r.current_output == pytest.approx(0.279097, rel=1e-5)
    assert r.limit[1] == pytest.approx(0.297024, rel=1e-5)
    assert "does not depend on efficiency in the regime past the configuration's (at efficiency = " in r.reason
    assert ", in that regime, it is 0.297024)" in r.reason
    # the name the answers print for the CP degree (c) is the CP degree, not congestion (internally c)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # (the walk passes CP degrees that leave ranks idle)
        assert required("mfu", 0.3, "c", "Llama3_70B", "Research_256", fidelity="extended", cp_size=2).solve_for \
            == "cp_size"
    # a name that is no string is refused as an unknown output (it raised AttributeError)
    with pytest.raises(ValueError, match="unknown output None"):
        required(None, 0.3, "efficiency", "Llama3_70B", "Research_256", batch_size=256)


def test_what_an_engineers_trial_found_required_answering_wrong():
    # Llama-3.1-70B in FP8 on 128 DGX H200 with CP 2, extended model (MFU 0.16054 now)
    kw = dict(fidelity="extended", precision="fp8", efficiency=0.4, tp_size=8, pp_size=4, cp_size=2,
              microbatch_count=16, batch_size=1024, seq_len=8192)
    model, fleet = "modern/Llama-3.1-70B", "modern/H200-1024"
    fid = kw.pop("fidelity")

    def solve(**over):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return DistributedModel(fidelity=fid).solve(model, fleet, **{**kw, **over})
    # the peak rate at which MFU reaches 0.17: FP8's peak (the H200's 1.979 PFLOP/s) moves, not the record's
    # 16-bit field, and the check re-solves there (it printed "gives mfu = 0.16054", today's MFU)
    r = required("mfu", 0.17, "peak_flops", model, fleet, fidelity=fid, **kw)
    assert r.achieved == pytest.approx(0.17, rel=1e-9) and solve(peak_flops=r.value).mfu == pytest.approx(0.17)
    assert 1.7e15 < r.value < 1.979e15         # MFU rises as the peak falls (the step's compute slows less)
    # no sequence length reaches 0.17; the best that fits lies at the memory's edge: 6702 tokens (151.4 GB of HBM;
    # 6704 holds more), MFU 0.160847, where the answer was 4096 (0.156041), a halving of today's 8192
    r = required("mfu", 0.17, "seq_len", model, fleet, fidelity=fid, **kw)
    assert not r.reachable and r.best == 6702 and r.limit[1] == solve(seq_len=6702).mfu
    assert solve(seq_len=6702).node_profile.feasible and not solve(seq_len=6704).node_profile.feasible
    assert solve(seq_len=6702).mfu > solve(seq_len=6144).mfu > solve(seq_len=4096).mfu
