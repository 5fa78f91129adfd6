"""One configuration, one corridor: the extended model's keywords travel with every other argument (one
parameter table, one :class:`~mlsysim_sym.arguments.Arguments`, one configuration line), the tables are derived
from it, and each defect the second corridor caused stays fixed (each reproducer of issue 20 is a test here)."""
import json
import math
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import sympy as sp

from mlsysim_sym import (DistributedModel, build_model, operating_point_of, required, search, sensitivities, sweep,
                         uncertainty)
from mlsysim_sym.arguments import arguments, describe
from mlsysim_sym.inputs import with_field
from mlsysim_sym.mechanisms import MECHANISMS, ModelChoice
from mlsysim_sym.model import STEP_ORDER, Variant
from mlsysim_sym.symbols import by_argument, keywords

EXT = DistributedModel(fidelity="extended")
LLAMA = dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "mlsysim_sym", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONWARNINGS": ""})


# ---- the reproducers of issue 20 ----------------------------------------------------------------------
def test_sensitivities_of_the_extended_model_print_and_move_the_cp_knob():
    t = sensitivities("Llama3_70B", "Research_256", fidelity="extended", **LLAMA)
    text = str(t)                            # was KeyError: 'cp_size'
    assert "context-parallel degree" in text and "extended model" in t.configuration
    cp = t.discrete["cp_size"]
    assert cp.value == 1 and cp.up.value == 2 and cp.down is None
    # the neighbour is the extended model's solve() at cp 2 (the split's other degrees held)
    at2 = EXT.solve("Llama3_70B", "Research_256", cp_size=2, **LLAMA).mfu
    assert cp.up.output == at2
    p = _cli("sensitivity", "--fidelity", "extended")
    assert p.returncode == 0, p.stderr
    assert "context-parallel degree c" in p.stdout and "(the bundled example)" in " ".join(p.stdout.split())


def test_search_takes_record_fields_and_prices_its_rows_there():
    r = search("Llama3_70B", "Research_256", 256, top_k=3, fabric_bandwidth=50e9)     # was a raw TypeError
    assert "fabric bandwidth 50 GB/s" in r.configuration
    w, f = with_field(*(arguments("Llama3_70B", "Research_256", {}).workload,
                        arguments("Llama3_70B", "Research_256", {}).fleet), by_argument()["fabric_bandwidth"], 50e9)
    for c in r.candidates:                     # each row is solve() on the fleet with a 50 GB/s fabric
        assert c.result.mfu == DistributedModel().solve(w, f, batch_size=256, **c.config).mfu
    faster = search("Llama3_70B", "Research_256", 256, top_k=1)
    assert r.best.objective > faster.best.objective      # 50 GB/s beats the catalog's 12.5 GB/s
    p = _cli("search", "--fabric-bandwidth", "50e9", "--top", "1", "--json")
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert got["configuration"]["fabric_bandwidth"] == 50e9 and "fabric bandwidth 50 GB/s" in got["configuration_line"]
    assert got["results"][0]["mfu"] == r.best.result.mfu


def test_search_takes_lists_of_the_extended_keywords_and_shows_cp():
    r = search("Llama3_70B", "Training_512_H100", 512, top_k=5, fidelity="extended", cp_size=[1, 2, 4, 8],
               tp_size=1, pp_size=1, zero_stage=3, microbatch_count=1, v_stages=1, sequence_parallel=[False, True],
               tp_comm_overlap=[False, True], kv_fraction=[0.125, 1.0])
    text = str(r)
    # the extended model carves EP out of the data-parallel ranks: the replica's split is tp x pp x cp
    assert "tp x pp x cp x dp" in text and max(map(len, text.splitlines())) <= 80
    rows = r.to_dict()["results"]
    assert {row["cp_size"] for row in rows} <= {1, 2, 4, 8} and all("kv_fraction" in row for row in rows)
    for c in r.candidates:
        # a cp-2 run on 512 GPUs reads 1 x 1 x 2 x 256 (was 1 x 1 x 1 x 256)
        assert c.dp * c.config["cp_size"] == 512
        assert f"1 x 1 x {c.config['cp_size']} x {c.dp}" in text
        assert c.result.mfu == EXT.solve("Llama3_70B", "Training_512_H100", batch_size=512, **c.config).mfu
    # kv_fraction only moves the CP exchange: at cp 1 its choices tie and only the first is searched
    assert r.searched < 4 * 2 * 2 * 2 * 2
    p = _cli("search", "--fidelity", "extended", "--cp", "1,2,4", "--sequence-parallel", "both", "--tp", "8",
             "--pp", "4", "--top", "3", "--json")
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert all("cp_size" in row and "sequence_parallel" in row for row in got["results"])
    assert got["configuration"]["cp_size"] == [1, 2, 4]


def test_a_search_at_a_fixed_cp_judges_the_schedule_on_the_replicas_cp_leaves():
    # cp 2 on 256 GPUs at tp 4, pp 8: dp = 256 / (4 * 8 * 2) = 4 replicas of 64 samples, so 64 microbatches run.
    # The search before issue 20 judged the schedule on dp = 256 / (4 * 8) = 8 (32 samples) and dropped every
    # layout of 64 microbatches; asked for exactly that layout, it found none
    r = search("Llama3_70B", "Research_256", 256, fidelity="extended", cp_size=2, tp_size=4, pp_size=8,
               microbatch_count=64, top_k=1)
    best = r.candidates[0]
    assert (best.config["tp_size"], best.config["pp_size"], best.config["cp_size"], best.dp) == (4, 8, 2, 4)
    assert (best.config["microbatch_count"], best.config["v_stages"]) == (64, 2)
    kw = {k: v for k, v in best.config.items()}
    assert best.result.mfu == EXT.solve("Llama3_70B", "Research_256", batch_size=256, **kw).mfu
    # (0.2252357181 when the record's heads were not read: every head's keys and values exchanged, 8 times as many)
    assert best.result.mfu == pytest.approx(0.2264497073, rel=1e-9)


def test_the_mlsysim_model_refuses_lists_of_the_extended_keywords_in_a_search():
    with pytest.raises(ValueError, match=r"cp_size=.* is an argument of the extended model"):
        search("Llama3_70B", "Research_256", 256, cp_size=[1, 2])


def test_the_breakdown_chart_names_the_extended_terms():
    pytest.importorskip("matplotlib")
    from mlsysim_sym.plot import _segments
    r = EXT.solve("Llama3_70B", "Research_256", cp_size=2, sequence_parallel=True, **LLAMA)
    parts = {label: t for label, t, _ in _segments(r)}
    # was 0.911 s of "straggler & other": the CP exchange, the pipeline sends and the optimizer update
    # the record's 8 of 64 key/value heads (kv_fraction 0.125); every head's would be 0.8609934592 s
    assert parts["CP key/value exchange"] == pytest.approx(0.1093741824, rel=1e-9)
    assert parts["pipeline stage-to-stage sends"] > 0 and parts["optimizer update"] > 0
    assert not any("straggler" in label for label in parts)
    assert math.isclose(sum(parts.values()), r.step_latency_total, rel_tol=1e-12)


def test_the_breakdown_chart_keeps_an_moe_cards_token_permutation():
    # T_node of an MoE card in the extended model is the roofline side + overhead + the token permutation T_perm
    # (360.8 ms here, solve's text shows it): the bar left it out and ended 0.36 s short of the step time
    pytest.importorskip("matplotlib")
    from mlsysim_sym.plot import _segments
    r = EXT.solve("modern/DeepSeek-V3", "modern/GB200-NVL72-1152", batch_size=4608, seq_len=4096, pp_size=4,
                  ep_size=32, microbatch_count=16, zero_stage=1, precision="fp8", activation_recomputation=True)
    parts = {label: t for label, t, _ in _segments(r)}
    assert parts["replica MoE token permutation"] == pytest.approx(r.extended["permutation_latency"], rel=1e-12)
    assert r.extended["permutation_latency"] > 0.3
    assert math.isclose(sum(parts.values()), r.step_latency_total, rel_tol=1e-12)


def test_the_breakdown_chart_of_an_extended_result_through_the_cli(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "breakdown.png"
    p = _cli("solve", "--fidelity", "extended", "--cp", "2", "--sequence-parallel", "--tp", "8", "--pp", "4",
             "--microbatches", "8", "--plot", str(path), "--json")
    assert p.returncode == 0, p.stderr
    terms = json.loads(p.stdout)["terms"]          # the chart's segments are these terms (the test above)
    assert terms["T_cp"] == pytest.approx(0.1093741824, rel=1e-9) and path.stat().st_size > 10_000


@pytest.mark.parametrize("recompute", [False, True])
def test_regime_words_follow_the_decision_not_its_position(recompute):
    # TP 8 inside an 8-GPU node is on NVLink, recomputation or not (the recompute bracket came first in the
    # extended model's TP term and was read as the link)
    kw = dict(LLAMA, activation_recomputation=recompute)
    for t in (sensitivities("Llama3_70B", "Research_256", **kw),
              sensitivities("Llama3_70B", "Research_256", fidelity="extended", **kw)):
        assert "TP on NVLink" in t.regime and "TP on the fabric" not in t.regime
    # the extended model's links have words too: the TP and CP groups, the pipeline's sends
    t = sensitivities("Llama3_70B", "Research_256", fidelity="extended", cp_size=2, sequence_parallel=True, **kw)
    assert {"TP on NVLink", "pipeline sends on the fabric"} <= set(t.regime)
    t = sensitivities("Llama3_70B", "Research_256", fidelity="extended", **dict(kw, tp_size=16, pp_size=2))
    assert "TP on the fabric" in t.regime
    p = _cli("sensitivity", "--fidelity", "extended", "--recompute", "yes" if recompute else "no", "--tp", "8", "--pp",
             "4", "--microbatches", "8", "--json")
    assert p.returncode == 0, p.stderr
    regime = json.loads(p.stdout)["regime"]
    assert "TP on NVLink" in regime and "TP on the fabric" not in regime


def test_a_mechanism_name_that_does_not_exist_is_refused():
    with pytest.raises(ValueError, match="unknown mechanism 'gemm_shap'; the extended model's mechanisms are"):
        Variant(fidelity="extended").on("gemm_shap")        # was silently True
    with pytest.raises(ValueError, match="unknown mechanism"):
        ModelChoice("mlsysim").on("nothing")
    with pytest.raises(ValueError, match="without: unknown mechanism 'gemm'"):
        DistributedModel(fidelity="extended", without=("gemm",))
    p = _cli("solve", "--fidelity", "extended", "--without", "gemm")
    assert p.returncode == 2 and p.stderr.startswith("mlsysim-sym: error: --without: unknown mechanism 'gemm'")
    assert len(p.stderr.strip().splitlines()) == 1


# ---- one table, derived --------------------------------------------------------------------------------
def test_each_mechanism_lists_the_quantities_it_adds():
    every = set(build_model(Variant(fidelity="extended")))
    for name, m in MECHANISMS.items():
        without = set(build_model(Variant(fidelity="extended", off=(name,))))
        gone = every - without
        # what goes besides its own: quantities of mechanisms that act inside it (CP overlap in context
        # parallelism) or jointly with it (the EP group's link: the MoE layout's, priced per layer)
        inside = {q for other in MECHANISMS.values() if name in other.needs for q in other.quantities}
        joint = {q for other in MECHANISMS.values() if other is not m for q in other.quantities}
        assert set(m.quantities) | inside <= gone and gone - set(m.quantities) <= inside | joint, name


def test_the_steps_terms_are_read_from_the_model_in_reading_order():
    for variant in (Variant(), Variant(fidelity="extended"), Variant("generic"),
                    Variant(fidelity="extended", off=("tp_overlap", "context_parallel"))):
        m = build_model(variant)
        addends = set(m.definition("T_sync").args)
        assert {m.quantity(n).symbol for n in m.step_terms} == addends, variant
        assert [n for n in STEP_ORDER if n in m.step_terms] == list(m.step_terms)
    r = EXT.solve("Llama3_70B", "Research_256", cp_size=2, **LLAMA)
    assert list(r.terms) == list(build_model(Variant(fidelity="extended")).step_terms)
    assert sum(r.terms.values()) == pytest.approx(r.step_latency_total, rel=1e-12)
    # the result prints a row per term, in that order
    text = repr(r)
    at = [text.index(f" T_{n}") for n in ("node", "DP,exposed", "TP,exposed", "EP", "CP", "P2P", "bubble", "update")]
    assert at == sorted(at)


def test_ranges_are_the_parameter_tables_and_every_user_reads_them():
    from mlsysim_sym.checks import rules
    from mlsysim_sym.sensitivity.uncertainty import domain
    messages = [r.message for r in rules()]
    for name in ("tp_size", "efficiency", "overlap_efficiency", "moe_routing_imbalance_factor", "cp_size"):
        assert f"{name} must be {keywords()[name].range.text}, got {{{name}}}" in messages, name
    # the keys' and values' width can pass d (latent attention's up-projected heads: 2.86 d for DeepSeek-V3)
    assert "kv_fraction must be > 0, got {kv_fraction}" in messages
    assert domain("efficiency", 0.5) == (1e-9, 1.0) and domain("congestion_factor", 2.0) == (0.0, math.inf)
    assert domain("kv_fraction", 0.5) == (0.0005, math.inf) and domain("fabric_bandwidth", 50e9) == (50e6, math.inf)
    with pytest.raises(ValueError, match=r"kv_fraction must be > 0, got -0.5"):
        EXT.solve("Llama3_70B", "Research_256", kv_fraction=-0.5, **LLAMA)
    # required() answers inside the range solve() accepts: an efficiency above 1 is out of reach
    r = required("mfu", 0.9, "efficiency", "Llama3_70B", "Research_256", **LLAMA)
    assert not r.reachable and "1, the end of its range" in r.reason


def test_one_configuration_line_everywhere():
    kw = dict(LLAMA, fidelity="extended", cp_size=2, sequence_parallel=True)
    line = describe(arguments("Llama3_70B", "Research_256", kw))
    assert line == ("Llama-3.1-70B on Research Cluster (256 GPUs): batch 256, tp 8, pp 4, m 8, fp16; extended "
                    "model (cp 2, SP)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert EXT.solve("Llama3_70B", "Research_256", cp_size=2, sequence_parallel=True, **LLAMA).configuration == line
        assert sensitivities("Llama3_70B", "Research_256", **kw).configuration == line
        assert operating_point_of("Llama3_70B", "Research_256", **kw).configuration == line
        assert required("bubble_fraction", 0.2, "microbatch_count", "Llama3_70B", "Research_256",
                        **kw).configuration == line
        assert uncertainty("Llama3_70B", "Research_256", {"efficiency": 0.1}, **kw).configuration == line
    p = _cli("solve", "--tp", "8", "--pp", "4", "--microbatches", "8", "--fidelity", "extended", "--cp", "2",
             "--sequence-parallel")
    assert " ".join(p.stdout.split()).startswith("configuration: " + line)
    s = sweep("Llama3_70B", "Research_256", tp_size=[4, 8], **{k: v for k, v in kw.items() if k != "tp_size"})
    assert s.configuration == line.replace("tp 8", "tp 4,8")


def test_a_results_configuration_passes_back_to_solve(tmp_path):
    # to_dict()'s configuration named the model and fleet by their records' titles ("Research Cluster (256 GPUs)"),
    # which no catalog lookup takes: it names them as the call did, so solve(**it) prices the same step
    r = EXT.solve("Llama3_70B", "Research_256", cp_size=2, **LLAMA)
    c = dict(r.to_dict()["configuration"])
    assert (c["model"], c["fleet"], c["fidelity"]) == ("Llama3_70B", "Research_256", "extended")
    again = DistributedModel(fidelity=c.pop("fidelity"), without=c.pop("without")).solve(c.pop("model"),
                                                                                         c.pop("fleet"), **c)
    assert again.step_latency_total == r.step_latency_total and again.configuration == r.configuration
    # a file named by a pathlib.Path: its path, as a string (it fell back to the records' titles)
    path = tmp_path / "plan.yaml"
    path.write_text('version: "1"\nworkload: {name: Llama3_70B}\nhardware: {fleet: Research_256}\n')
    named = DistributedModel().solve(path, path, batch_size=256, tp_size=8).to_dict()["configuration"]
    assert (named["model"], named["fleet"]) == (str(path), str(path))
    # a plan's and an operating point's too (they gave the line where the result gives the keywords)
    assert r.plan(tokens=1e12).to_dict()["configuration"] == r.to_dict()["configuration"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        point = operating_point_of("Llama3_70B", "Research_256", fidelity="extended", cp_size=2, **LLAMA).to_dict()
    assert point["configuration"] == r.to_dict()["configuration"]
    assert point["configuration_line"] == r.configuration == r.plan(tokens=1e12).to_dict()["configuration_line"]


def test_a_count_given_as_a_bool_reads_as_mlsysim_reads_it():
    # mlsysim reads tp_size=True as 1 (a bool is an int); the line said "tp yes"
    line = describe(arguments("Llama3_70B", "Research_256", dict(batch_size=256, tp_size=True)))
    assert line == "Llama-3.1-70B on Research Cluster (256 GPUs): batch 256, tp 1, fp16"


def test_the_cli_options_are_the_parameter_tables():
    from mlsysim_sym.cli import OPTIONS
    flags = {o.keyword: o.flag for o in OPTIONS}
    for name, p in keywords().items():
        assert flags[name] == p.option
    # record fields too, for sweeps and searches: --fabric-bandwidth LIST
    p = _cli("sweep", "--fabric-bandwidth", "12.5e9,50e9", "--tp", "8", "--pp", "4", "--microbatches", "8")
    assert p.returncode == 0, p.stderr
    assert "fabric bandwidth 12.5 GB/s,50 GB/s" in " ".join(p.stdout.split())


def test_the_extended_solve_takes_the_shipped_fast_path():
    from mlsysim_sym import solver
    from mlsysim_sym.compile import compile_quantities
    variant = Variant(fidelity="extended")
    c = compile_quantities(variant, solver.solve_quantities(variant), "math")
    assert c.fn.__code__.co_filename.endswith("math_transformer_extended.py")
    a = arguments("Llama3_70B", "Research_256", dict(LLAMA), choice=ModelChoice("extended"))
    assert solver._bound(a.workload, a.fleet, "fp16", a.model) is not None


def test_arguments_are_frozen_and_replace_reads_the_one_table():
    a = arguments("Llama3_70B", "Research_256", dict(LLAMA, fidelity="extended"))
    with pytest.raises(Exception):
        a.keywords = ()
    b = a.replace(cp_size=2, fabric_bandwidth=50e9)
    assert (b["cp_size"], b["fabric_bandwidth"], a["cp_size"]) == (2, 50e9, 1)
    assert b.values[by_argument()["fabric_bandwidth"].symbol] == 50e9
    with pytest.raises(TypeError, match="unexpected keyword argument 'cp'"):
        arguments("Llama3_70B", "Research_256", {"cp": 2})
    assert sp.Symbol is not None and np.ndim(b["tp_size"]) == 0
