"""The command line as users meet it: through a subprocess, every subcommand, JSON checked against the
Python API, bad input (exit 2, one line, no traceback), warnings as one line, pictures as PNG files."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mlsysim_sym import DistributedModel, cells, search, sensitivities, sweep
from mlsysim_sym.model import build_model
from mlsysim_sym.printing import md_math, quantity_latex
from derivations import registry  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

PNG = b"\x89PNG\r\n\x1a\n"


def run(*args, ok=True):
    """``python -m mlsysim_sym ARGS``: (exit status, stdout, stderr)."""
    p = subprocess.run([sys.executable, "-m", "mlsysim_sym", *args], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONWARNINGS": ""})
    if ok:
        assert p.returncode == 0, p.stderr
        assert p.stderr == "" or all(x.startswith(("mlsysim-sym: warning:", "picture:"))
                                     for x in p.stderr.splitlines()), p.stderr
    return p.returncode, p.stdout, p.stderr


def test_no_arguments_solves_the_bundled_example_through_the_console_script():
    exe = shutil.which("mlsysim-sym")
    assert exe is not None, "pip install puts the mlsysim-sym script on PATH"
    p = subprocess.run([exe], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stderr == ""
    out = p.stdout
    # docs/contract.md §8 row 1: Llama3_70B on Research_256, b256 tp8 pp4 m8: 3368.627 ms, DP 618.450 ms
    assert " ".join(out.split()).startswith("configuration: Llama-3.1-70B on Research Cluster (256 GPUs): batch 256, "
                                            "tp 8, pp 4, m 8, fp16")
    assert "(the bundled example)" in " ".join(out.split())
    assert "step time T_step" in out and "3.369 s" in out and "618.5 ms / 334.6 ms / 0 s" in out
    assert max(map(len, out.splitlines())) <= 80


def test_version_and_help_name_units_and_defaults():
    _, out, _ = run("--version")
    assert out.strip() == "mlsysim-sym 0.1.0 (the model of mlsysim 0.3.0)"
    _, out, _ = run("solve", "--help")
    text = " ".join(out.split())
    # from the parameter table: meaning, unit, the range solve() accepts, the default
    assert "--batch-size INT global batch size, in samples (sequences); >= 1; default 256" in text
    assert "--tp INT tensor-parallel degree; >= 1; default 1" in text
    assert "--efficiency FLOAT achieved fraction of peak FLOP/s; in [1e-09, 1.0]; default 0.5" in text
    assert "--seq-len INT sequence length, tokens per sample; >= 1; default 2048" in text
    assert "--kv-fraction FLOAT width of the keys and values as a fraction of d" in text and "extended model only" in text
    # a quantity with a unit is named by its kind and takes a value written with a unit too
    assert ("--fabric-bandwidth BANDWIDTH fabric (NIC) bandwidth per accelerator [B/s, or with a unit: 50GB/s]; "
            "> 0; default the record's") in text
    for flag in ("--model", "--fleet", "--pp", "--ep", "--microbatches", "--v-stages", "--zero-stage", "--precision",
                 "--recompute", "--overlap", "--overlap-efficiency", "--congestion", "--straggler",
                 "--moe-imbalance", "--gradient-accumulation", "--lora", "--json", "--plot"):
        assert flag in out
    _, out, _ = run("--help")
    for c in ("solve", "sweep", "search", "sensitivity", "equations", "list"):
        assert c in out


def test_solve_json_is_the_python_result_under_mlsysims_names():
    _, out, _ = run("solve", "--model", "Mixtral_8x7B", "--fleet", "Training_1K", "--batch-size", "1024", "--tp", "2",
                    "--ep", "4", "--congestion", "1.7", "--json")
    got = json.loads(out)
    r = DistributedModel().solve("Mixtral_8x7B", "Training_1K", batch_size=1024, tp_size=2, ep_size=4,
                                 congestion_factor=1.7)
    assert got["step_latency_total"] == r.step_latency_total and got["mfu"] == r.mfu
    assert got["ep_communication_latency"] == r.ep_communication_latency
    assert got["node_profile"]["memory_footprint"] == r.node_profile.memory_footprint
    assert got["node_profile"]["bottleneck"] == r.node_profile.bottleneck
    assert got["parallelism"] == {"dp": 128, "tp": 2, "pp": 1, "ep": 4}
    # the full configuration, under solve()'s keyword names: an option not given is solve()'s default
    c = got["configuration"]
    assert c["model"] == "Mixtral_8x7B" and c["fleet"] == "Training_1K"
    assert (c["batch_size"], c["tp_size"], c["pp_size"], c["ep_size"], c["microbatch_count"]) == (1024, 2, 1, 4, 1)
    assert c["congestion_factor"] == 1.7 and c["precision"] == "fp16" and c["activation_recomputation"] is False


def test_another_model_does_not_keep_the_examples_pipeline():
    _, out, _ = run("solve", "--model", "Llama3_8B", "--fleet", "Lab_64_H100", "--batch-size", "64")
    assert out.startswith("configuration: Llama-3.1-8B on Lab Cluster (64 H100 GPUs): batch 64, fp16\n")
    r = DistributedModel().solve("Llama3_8B", "Lab_64_H100", batch_size=64)
    assert f"{r.mfu:.4f} / {r.node_profile.mfu:.4f}" in out
    assert "dp 64, tp 1, pp 1, ep 1" in out


def test_sweep_json_and_table_equal_the_python_sweep():
    _, out, _ = run("sweep", "--tp", "1,2,4,8", "--pp", "1,2,3,4,8", "--json")
    got = json.loads(out)
    # without --model and --fleet the options change the bundled example: its 8 microbatches stay
    r = sweep("Llama3_70B", "Research_256", batch_size=256, tp_size=[1, 2, 4, 8], pp_size=[1, 2, 3, 4, 8],
              microbatch_count=8)
    assert got["shape"] == [4, 5] and got["swept"] == {"tp_size": [1, 2, 4, 8], "pp_size": [1, 2, 3, 4, 8]}
    mfu = np.array(got["outputs"]["mfu"], dtype=float)       # None (masked) -> nan
    np.testing.assert_array_equal(mfu, np.where(r.valid, r["mfu"], np.nan))
    assert got["valid"] == r.valid.tolist()
    # pp 3 does not divide 256 accelerators: masked with solve()'s message
    assert got["valid"][0][2] is False and got["outputs"]["mfu"][0][2] is None
    assert got["reason"][0][2].startswith("Infeasible 4D Parallelism: TP(1) * PP(3) * EP(1)")
    assert got["configuration"]["tp_size"] == [1, 2, 4, 8] and got["configuration"]["microbatch_count"] == 8
    _, out, _ = run("sweep", "--tp", "1,2,4,8", "--pp", "1,2,3,4,8")
    assert "mfu by tp_size (rows) and pp_size (columns)" in out
    row8 = next(x for x in out.splitlines() if x.strip().startswith("8 "))
    assert f"{r['mfu'][3, 4]:.4g}" in row8 and " - " in row8       # tp 8 x pp 8 fits; pp 3 masked
    assert "* does not fit in accelerator memory" in out


def test_sweep_ranges_include_their_stop():
    _, out, _ = run("sweep", "--batch-size", "256:1024:256", "--tp", "8", "--pp", "4", "--microbatches", "8",
                    "--output", "step_latency_total", "--json")
    got = json.loads(out)
    assert got["swept"] == {"batch_size": [256, 512, 768, 1024]}
    want = [DistributedModel().solve("Llama3_70B", "Research_256", batch_size=b, tp_size=8, pp_size=4,
                                     microbatch_count=8).step_latency_total for b in (256, 512, 768, 1024)]
    assert got["outputs"]["step_latency_total"] == pytest.approx(want, rel=1e-12)


def test_search_json_rows_are_runnable_and_equal_solve():
    _, out, _ = run("search", "--batch-size", "256", "--top", "5", "--json")
    got = json.loads(out)
    rows = got["results"]
    assert len(rows) == 5
    for row in rows:
        split = {k: row[k] for k in ("tp_size", "pp_size", "ep_size", "microbatch_count", "v_stages", "zero_stage",
                                     "activation_recomputation", "overlap_comm")}
        r = DistributedModel().solve("Llama3_70B", "Research_256", batch_size=256, **split)
        assert row["mfu"] == pytest.approx(r.mfu, rel=1e-12) and row["dp"] == r.parallelism["dp"]
        assert row["step_latency_total"] == pytest.approx(r.step_latency_total, rel=1e-12)
        assert row["memory_per_accelerator"] == pytest.approx(r.node_profile.memory_footprint, rel=1e-12)
        per_replica = 256 // row["dp"]
        assert row["microbatch_count"] <= per_replica and per_replica % row["microbatch_count"] == 0
        assert 80 % (row["pp_size"] * row["v_stages"]) == 0
    py = search("Llama3_70B", "Research_256", batch_size=256, top_k=5)
    assert [c.config for c in py.candidates] == [{k: r[k] for k in c.config} for c, r in zip(py.candidates, rows)]
    # the configuration holds what was given; the keywords the rows choose are named, not given their defaults
    assert got["searched_keywords"] == list(py.candidates[0].config)
    assert not set(got["searched_keywords"]) & set(got["configuration"])
    assert got["configuration"]["batch_size"] == 256 and got["configuration"]["model"] == "Llama3_70B"
    _, out, _ = run("search", "--batch-size", "256", "--top", "3")
    assert "ranked by mfu" in out and max(map(len, out.splitlines())) <= 80


def test_sensitivity_json_equals_the_python_table():
    _, out, _ = run("sensitivity", "--json")
    got = json.loads(out)
    t = sensitivities("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
    assert got["output"] == "mfu" and got["value"] == t.value
    rows = {r["parameter"]: r for r in got["rows"]}
    assert rows["efficiency"]["elasticity"] == t["efficiency"].elasticity
    assert rows["fabric_bandwidth"]["unit"] == "B/s" and rows["fabric_bandwidth"]["value"] == 12.5e9
    assert rows["efficiency"]["regime"] == "compute-bound"
    f_s = rows["straggler_factor"]
    assert f_s["kink"] == "f_strag = 1" and f_s["elasticity"] is None
    assert f_s["below"]["elasticity"] == 0.0 and f_s["above"]["elasticity"] == pytest.approx(-1.0, rel=1e-12)
    knobs = {k["knob"]: k for k in got["discrete"]}
    assert knobs["tp_size"]["next"]["value"] == 16
    assert knobs["tp_size"]["next"]["change"] == t.discrete["tp_size"].up.delta
    # the relaxed elasticities the text prints in its last column (the JSON had none): +0.185 for the batch, a kink
    # at the node's width for tp (+0.0963 below, -0.867 above), none for the ZeRO stage
    assert knobs["batch_size"]["relaxed"]["elasticity"] == t.relaxed["batch_size"].elasticity
    assert round(knobs["batch_size"]["relaxed"]["elasticity"], 3) == 0.185 and "+0.185" in run("sensitivity")[1]
    tp = knobs["tp_size"]["relaxed"]
    assert tp["kink"] == "G_node = N_TP" and tp["elasticity"] is None
    assert (round(tp["below"]["elasticity"], 4), round(tp["above"]["elasticity"], 3)) == (0.0963, -0.867)
    assert knobs["zero_stage"]["relaxed"] is None
    assert [r["parameter"] for r in got["rows"]] == [r.parameter for r in t.rows]
    _, out, _ = run("sensitivity")
    assert "sensitivities of fleet MFU = 0.2604" in out and max(map(len, out.splitlines())) <= 80
    # the configuration once: the command's line (which says it is the bundled example), not the table's again
    flat = " ".join(out.split())
    assert flat.count("Llama-3.1-70B on Research Cluster") == 1 and "fp16 (the bundled example)" in flat


MOE = ("--model", "modern/DeepSeek-V3", "--fleet", "modern/H100-SXM-1024", "--fidelity", "extended",
       "--batch-size", "4096")


@pytest.mark.parametrize("args", [
    ("list",), ("plan", "--tokens", "1e12"), ("sweep", "--tp", "1,2,4,8", "--pp", "1,2,4"),
    ("solve", "--fidelity", "extended"), ("search", *MOE), ("solve", *MOE, "--ep", "8", "--tp", "2", "--pp", "8"),
    ("sensitivity", *MOE, "--ep", "8", "--tp", "2", "--pp", "8")], ids=lambda a: " ".join(a[:2]))
def test_every_command_fits_an_80_column_terminal(args):
    _, out, _ = run(*args)
    assert max(map(len, out.splitlines())) <= 80
    # which configuration: its line, or a search's own first line
    assert out.startswith("search of " if args[0] == "search" else "configuration: ") or args == ("list",)


def test_equations_print_the_model_latex():
    _, out, _ = run("equations", "T_step")
    m = build_model()
    # the equation's lines (broken at spaces to fit 80 columns) are its LaTeX
    assert " ".join(x for x in out.splitlines() if not x.startswith("% ")) == " ".join(
        quantity_latex(m, "T_step").split())
    _, out, _ = run("equations", "step_latency_total", "--book", "--expanded", "--json")
    got = json.loads(out)
    assert got["name"] == "T_step" and got["latex"] == quantity_latex(m, "T_step", "closed", book=True)
    _, out, _ = run("equations", "RingAllReduce")
    assert r"T_{\text{ring}}" in out and r"2 \alpha \left(N - 1\right)" in out
    _, out, _ = run("equations")
    assert "T_step" in out and "RingAllReduce" in out


def test_an_expanded_form_too_long_to_read_says_so_and_where_the_readable_one_is():
    # the extended model's MFU in parameters is ~346,000 characters (KaTeX 0.16 overflows its stack on it); the
    # mlsysim model's, ~28,000 (it renders), has no note; the LaTeX itself is unchanged (the lines join to it)
    _, out, _ = run("equations", "mfu", "--expanded", "--fidelity", "extended")
    notes = [x[2:] for x in out.splitlines() if x.startswith("% ")]
    tex = " ".join(x for x in out.splitlines() if not x.startswith("% "))
    full = json.loads(run("equations", "mfu", "--expanded", "--fidelity", "extended", "--json")[1])["latex"]
    assert len(full) > 300_000 and " ".join(notes[1:]).startswith(f"{len(full):,} characters of LaTeX")
    assert tex.split() == full.split()
    assert "without --expanded, mfu is written in named quantities" in " ".join(notes)
    _, out, _ = run("equations", "mfu", "--expanded")
    assert [x for x in out.splitlines() if x.startswith("% ")] == ["% mfu (MFU_fleet): fleet model FLOPs utilization"]
    assert "" not in out.splitlines()


def test_equations_emit_quarto_display_math_with_the_docs_labels():
    """--quarto prints $$ ... $$ {#eq-...} with the label docs/quarto/*.qmd gives the same equation, so a
    chapter can cross-reference it (@eq-t-step); with --book, only the book's macros."""
    _, out, _ = run("equations", "T_step", "--quarto", "--book")
    lines = out.splitlines()
    assert lines[0] == "<!-- T_step: wall-clock time of one training step [s] -->"
    assert lines[1] == "$$" and lines[-1] == "$$ {#eq-t-step}"
    # the math as cells.equation prints it (GitHub-safe spacing, no \: that GitHub's Markdown would eat)
    # in lines of at most 80 columns, broken at spaces (a line break is a space to LaTeX)
    assert " ".join(lines[2:-1]) == md_math(quantity_latex(build_model(), "T_step", book=True))
    assert " ".join(lines[1:]).split() == cells.equation("T_step", book=True).split() and "\\:" not in out
    assert len(lines) == 6 and max(map(len, lines)) <= 80
    qmd = (ROOT / "docs" / "quarto" / "step_time.qmd").read_text()
    for name, label in (("T_step", "eq-t-step"), ("RingAllReduce", "eq-t-ring"), ("BubbleTime", "eq-t-bubble-term")):
        _, out, _ = run("equations", name, "--quarto")
        assert out.splitlines()[-1] == f"$$ {{#{label}}}" and f"{{#{label}}}" in qmd
    assert json.loads(run("equations", "RingAllReduce", "--json")[1])["label"] == "eq-t-ring"


def test_equations_macros_print_the_files_of_docs_macros():
    """--macros prints every macro --book prints, defined, in the format of each file of docs/macros/ (the same
    text, from notation.book_macros()); tex by default."""
    from mlsysim_sym import macros, notation
    for fmt, name in (("tex", "book_macros.tex"), ("mathjax", "book_macros.html"), ("katex", "book_macros.katex.json"),
                      ("qmd", "_macros.qmd")):
        _, out, _ = run("equations", "--macros", "--format", fmt)
        assert out == (ROOT / "docs" / "macros" / name).read_text() == macros.text(fmt)
    _, out, _ = run("equations", "--macros")
    assert out == macros.text("tex")
    assert "\\providecommand{\\RingAllReduceCompletionTime}{T_{\\text{ring}}}" in out.splitlines()
    assert sum(line.startswith("\\providecommand") for line in out.splitlines()) == len(notation.book_macros())
    assert json.loads(run("equations", "--macros", "--format", "katex")[1])["\\DataParallelDegree"] == \
        notation.book_macros()["\\DataParallelDegree"]
    for args, option in ((("--macros", "T_step"), "NAME"), (("--macros", "--json"), "--json"),
                         (("--macros", "--book"), "--book"), (("T_step", "--format", "tex"), "--format"),
                         (("--macros", "--format", "html"), "argument --format")):
        code, out, err = run("equations", *args, ok=False)
        assert code == 2 and out == "" and len(err.splitlines()) == 1 and f"error: {option}" in err, (args, err)


def test_every_book_mode_equation_of_the_cli_passes_the_registrys_rules():
    mlsysim = pytest.importorskip("mlsysim")
    from mlsysim_sym import notation
    known = {s.macro for s in mlsysim.Symbols} | set(notation.book_macros())
    names = json.loads(run("equations", "--json")[1])
    for name in names["quantities"][::4] + names["terms"]:
        _, out, _ = run("equations", name, "--book")
        assert registry.book_problems("\n".join(x for x in out.splitlines() if not x.startswith("% ")), known) \
            == [], name


def test_list_shows_the_catalog_with_key_figures():
    _, out, _ = run("list")
    line = next(x for x in out.splitlines() if x.strip().startswith("Research_256 "))
    assert "256" in line and "H100" in line and "12.5 GB/s" in line
    assert any(x.strip().startswith("Llama3_70B ") and "70.6B" in x and " 80 " in x for x in out.splitlines())
    got = json.loads(run("list", "--json")[1])
    fleets = {f["name"]: f for f in got["fleets"]}
    assert fleets["Research_256"]["accelerators"] == 256 and fleets["Research_256"]["fabric_bandwidth"] == 12.5e9


def test_list_name_shows_one_record_field_by_field_with_its_symbol_unit_and_source():
    # Llama 3.1 8B's config.json: 32 layers, hidden 4096, 32 heads, 8 key/value heads, head_dim 128, ffn 14336
    _, out, _ = run("list", "modern/Llama-3.1-8B")
    lines = out.splitlines()
    assert lines[0] == "modern/Llama-3.1-8B (modern catalog): transformer"
    row = {x.split()[0]: x.split()[1:3] for x in lines if x.startswith("  ") and len(x.split()) >= 3}
    assert row["kv_heads"] == ["H_KV", "8"] and row["head_dim"] == ["d_head", "128"]
    assert row["ffn"] == ["d_ff", "14,336"] and "experts" not in row        # a dense card shows no experts
    assert any("K/V width over d *" in x and x.endswith(" 0.25") for x in lines)     # 8 x 128 / 4096
    assert "head_dim, vocab, tied: config.json of meta-llama/Llama-3.1-{8B,70B,405B}" in out
    assert max(map(len, lines)) <= 80
    # DeepSeek-V3: 61 layers, the first 3 dense (first_k_dense_replace 3): 58 MoE layers
    got = json.loads(run("list", "modern/DeepSeek-V3", "--json")[1])
    card = {c["symbol"]: c["value"] for c in got["card"]}
    assert (card["N_experts"], card["k_experts"], card["r_lat,Q"], card["r_lat,KV"], card["N_L,MoE"]) \
        == (256, 8, 1536, 512, 58)
    assert got["card_fields"]["first_dense"] == 3 and got["kind"] == "sparse_transformer"
    # the B200 datasheet: 7.7 TB/s of HBM, 4.5 PFLOP/s dense FP8; 1,024 GPUs in nodes of 8 are 128 nodes
    got = json.loads(run("list", "modern/B200-1024", "--json")[1])
    value = {f["field"]: f["value"] for f in got["fields"]}
    assert value["memory_bandwidth"] == 7.7e12 and got["precision_flops"]["fp8"] == 4.5e15
    assert (got["accelerators"], value["count"], value["accelerators_per_node"]) == (1024, 128, 8)
    assert "DGX B200 User Guide" in got["sources"]["node.accelerators_per_node"]
    # a card's switches as its file writes them, the defaults it leaves marked (gated: 3 would not read back)
    assert row["gated"] == ["n_MLP", "true"] and "default:" in next(x for x in lines if x.startswith("  gated"))
    # mlsysim's registry: Research_256 is 32 DGX H100 nodes; its fabric 12.5 GB/s per GPU, latency 50 us;
    # the H100's 80 GiB is 85.9 GB
    _, out, _ = run("list", "Research_256")
    got = {x.split()[0]: " ".join(x.split()[1:3]) for x in out.splitlines() if x.startswith("  ") and x.split()}
    assert "256 NVIDIA H100 in nodes of DGX H100" in out
    assert got["BW_inject"] == "12.5 GB/s" and got["α_fab"] == "50 us" and got["N_nodes"].startswith("32 ")
    assert "80 GiB = 85.9 GB" in out
    # GB200's record gives no PCIe figure: the row shows the 64 GB/s the model takes, marked as a fallback
    _, out, _ = run("list", "modern/GB200-NVL72-1152")
    assert any(x.split()[:4] == ["BW_PCIe", "64", "GB/s", "(fallback)"] for x in out.splitlines())
    # a count as the catalog's table writes it: YOLOv8-Nano's 3,200,000 parameters are 3.2M
    _, out, _ = run("list", "YOLOv8_Nano")
    assert any(x.split()[:3] == ["parameters", "P", "3.2M"] for x in out.splitlines())


def test_list_of_an_unknown_name_is_one_line_with_the_close_names():
    code, out, err = run("list", "modern/Qwen3", ok=False)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "NAME: no workload or cluster 'modern/Qwen3' in the catalog; close names: modern/Qwen3-30B-A3B" in err


@pytest.mark.parametrize("args, message", [
    (("solve", "--tp", "x"), "--tp: expected a whole number, got 'x'"),
    (("solve", "--tp", "3"), "--tp/--pp/--ep: Infeasible 4D Parallelism: TP(3) * PP(4) * EP(1) must divide"),
    (("solve", "--tp", "0"), "--tp: tp_size must be >= 1, got 0"),
    # a negative value with a unit, as a separate word, is a value (argparse took it for an option)
    (("solve", "--memory-capacity", "-5GB"), "--memory-capacity: memory_capacity must be > 0, got -5000000000.0"),
    (("solve", "--efficiency", "nan"), "--efficiency: must be a finite number, got nan"),
    (("solve", "--batch-size", "1.5e-3"), "--batch-size: expected a whole number, got '1.5e-3'"),
    (("solve", "--tp", "1,2"), "--tp: takes one value here"),
    (("solve", "--model", "Foo"), "--model: unknown workload 'Foo'"),
    (("solve", "--fleet", "Research_512"), "--fleet: unknown fleet 'Research_512'"),
    (("solve", "--precision", "fp99"), "--precision: precision 'fp99' is not supported"),
    (("solve", "--recompute", "maybe"), "--recompute: expected yes or no, got 'maybe'"),
    (("solve", "--pp", "2", "--microbatches", "0"), "--microbatches: n_microbatches must be >= 1, got 0"),
    (("sweep", "--batch-size", "10:1"), "--batch-size: a range needs start <= stop"),
    (("sweep", "--output", "nope"), "--output: no output 'nope'"),
    # a listed value no configuration can take is refused with solve()'s message (it was masked, exit status 0);
    # tp 3 stays masked (the split fails on this fleet only)
    (("sweep", "--tp", "0,8"), "--tp: tp_size must be >= 1, got 0"),
    (("sweep", "--precision", "fp9,bf16"), "--precision: precision 'fp9' is not supported. Supported precision "
                                          "values: bf16, fp16, fp32, fp8, int4, int8, tf32"),
    (("sensitivity", "--output", "nope"), "unknown output 'nope'"),
    (("search", "--top", "0"), "--top: must be >= 1, got 0"),
    (("equations", "Nope"), "NAME: no quantity or cost term 'Nope'"),
    (("bogus",), "invalid choice: 'bogus'"),
    (("solve", "--no-such-option"), "unrecognized arguments: --no-such-option"),
    # no option is read from a prefix of it: solve's --output was read as --output-flops ("expected a number, got
    # 'mfu'"), and --batch as --batch-size
    (("solve", "--output", "mfu"), "solve has no --output; did you mean --output-flops?"),
    (("sweep", "--batch", "64"), "sweep has no --batch; did you mean --batch-size?"),
    # a field only the extended model reads, which mlsysim's model would price as if it were not given
    # a quantity with a unit takes a value written with a unit of its kind, and names the kind otherwise
    (("solve", "--fabric-latency", "5 GB"), "--fabric-latency: expected a time such as '5 us', '500 ns', '0.01 ms' "
                                            "or '5 microsecond' (or a number in s), got '5 GB'"),
    (("solve", "--memory-capacity=-5GB"), "--memory-capacity: memory_capacity must be > 0, got -5000000000.0"),
    # a step of 1 B or 1 s is never what a range of sizes or times means
    (("sweep", "--fabric-latency", "1us:5us"), "--fabric-latency: a range of a quantity in s needs its step, "
                                               "start:stop:step, got '1us:5us'"),
    (("required", "--output", "throughput", "--target", "100 /s", "--solve-for", "efficiency"),
     "--target: expected a number in 1/s (no unit is read for it), got '100 /s'"),
    (("solve", "--efficiency", "0.5x"), "--efficiency: expected a number, got '0.5x'"),
    (("required", "--output", "memory", "--target", "40 GW", "--solve-for", "batch_size"),
     "--target: expected a size such as '80 GiB', '141 GB' or '80 gigabyte' (or a number in B), got '40 GW'"),
    (("required", "--output", "mfu", "--target", "30 %", "--solve-for", "batch_size"),
     "--target: expected a number, got '30 %'"),
    (("sweep", "--pp", "1,2", "--experts", "4,8"), "--experts: experts=[4, 8] is a field only the extended model "
                                                  "reads (mlsysim 0.3.0's model has no routed experts); add "
                                                  "--fidelity extended"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    status, out, err = run(*args, ok=False)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("mlsysim-sym: error: ") and message in err, err


def test_a_warning_is_one_line_on_stderr():
    _, out, err = run("solve", "--model", "Llama3_70B", "--batch-size", "4")
    assert err == ("mlsysim-sym: warning: batch_size (4) < dp_size (256): some ranks will be idle. "
                   "Using local_batch=1.\n")
    assert "configuration: Llama-3.1-70B on Research Cluster (256 GPUs): batch 4, fp16\n" in out


@pytest.mark.parametrize("args", [
    ("solve",), ("sensitivity",), ("sweep", "--tp", "1,2,4,8", "--pp", "1,2,4,8"),
    ("sweep", "--batch-size", "64:1024:64", "--tp", "8", "--pp", "4", "--microbatches", "8"),
])
def test_plot_writes_a_png(tmp_path, args):
    path = tmp_path / "picture.png"
    _, _, err = run(*args, "--plot", str(path))
    data = path.read_bytes()
    assert data.startswith(PNG) and len(data) > 10_000
    assert err.strip().endswith(f"picture: {path}")


def test_plot_without_matplotlib_says_what_to_install(tmp_path):
    # a core install (sympy, numpy, jinja2) has no matplotlib: --plot is one line and exit 2, before any
    # table is printed
    code = ("import sys; sys.modules['matplotlib'] = None; from mlsysim_sym.cli import main; "
            f"sys.exit(main(['sweep', '--tp', '1,2', '--plot', {str(tmp_path / 'x.png')!r}]))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == ("mlsysim-sym: error: --plot: pictures need matplotlib: pip install matplotlib (the package's "
                        "[plot] extra)\n")
    assert not (tmp_path / "x.png").exists()


def test_uncertainty_prints_the_spread_and_its_json_is_the_python_result():
    from mlsysim_sym import uncertainty
    _, out, _ = run("uncertainty", "--sigma", "efficiency=0.02,fabric_bandwidth=0.02", "--samples", "4000")
    assert " ".join(out.split()).startswith("configuration: Llama-3.1-70B on Research Cluster (256 GPUs): batch 256, "
                                            "tp 8, pp 4,")
    assert "uncertainty of fleet MFU = 0.2604" in out and "first order holds" in " ".join(out.split())
    assert " ".join(out.split()).count("Llama-3.1-70B on Research Cluster") == 1      # said once, above
    assert max(map(len, out.splitlines())) <= 80
    _, out, _ = run("uncertainty", "--model", "Llama3_8B", "--fleet", "Lab_64_H100", "--batch-size", "64",
                    "--sigma", "pcie_bandwidth=0.05", "--samples", "3000", "--seed", "7", "--output", "step_time",
                    "--json")
    got = json.loads(out)
    u = uncertainty("Llama3_8B", "Lab_64_H100", {"pcie_bandwidth": 0.05}, "step_time", samples=3000, seed=7,
                    batch_size=64)
    assert got["configuration"]["model"] == "Llama3_8B" and got["quantity"] == "T_step"
    assert got["first_order"]["std"] == u.std and got["monte_carlo"]["std"] == u.monte_carlo.std


def test_uncertainty_bad_sigma_is_one_line_naming_the_allowed_names():
    # the command line's names: its options without their -- (tp, congestion), or solve()'s keywords
    for sigma, message in (("tp_size=0.1", "--sigma: tp is a whole number (vary it with: mlsysim-sym sweep --tp LIST)"),
                           ("tp=0.1", "--sigma: tp is a whole number"), ("efficiency", "--sigma: expected"),
                           ("efficiency=-1", "must be a finite number >= 0"),
                           ("foo=0.1", "--sigma: foo is no parameter with an uncertainty; it takes: efficiency, "
                                       "overlap-efficiency, congestion, straggler, ... (26 in all)")):
        code, out, err = run("uncertainty", "--sigma", sigma, ok=False)
        assert code == 2 and out == "" and len(err.splitlines()) == 1 and message in err, err


def test_uncertainty_takes_the_command_lines_names_for_sigma():
    # congestion=0.1 is congestion_factor=0.1, fabric-bandwidth is fabric_bandwidth: the same table
    _, a, _ = run("uncertainty", "--sigma", "efficiency=0.05,fabric-bandwidth=0.1,congestion=0.1", "--json")
    _, b, _ = run("uncertainty", "--sigma", "efficiency=0.05,fabric_bandwidth=0.1,congestion_factor=0.1", "--json")
    assert a == b and '"congestion_factor"' in a


def test_required_answers_from_the_command_line():
    # (p - 1) / (m + p - 1) <= 0.05 with p = 4 needs m = 57; the bundled example's 32 samples a replica step
    # run at most 32 microbatches (3 / 35), a batch of 512 runs 64 (3 / 67)
    _, out, _ = run("required", "--output", "bubble_fraction", "--target", "0.05", "--solve-for", "microbatch_count")
    flat = " ".join(out.split())
    assert "(the bundled example)" in flat and "the best found is 0.0857143, at microbatch_count = 32" in flat
    assert "the root of this regime is microbatch_count = 57" in flat
    _, out, _ = run("required", "--output", "bubble_fraction", "--target", "0.05", "--solve-for", "microbatch_count",
                    "--batch-size", "512", "--tp", "8", "--pp", "4", "--microbatches", "8")
    assert "answer: microbatch_count = 57; whole number 64 gives bubble_fraction = 0.0447761" in " ".join(out.split())
    # the LaTeX wraps at spaces to fit a terminal (where LaTeX reads a space)
    assert r"LaTeX: m = - \frac{N_{\text{PP}} y - N_{\text{PP}} - y + 1}{V y}" in " ".join(out.split())
    got = json.loads(run("required", "--output", "scaling_efficiency", "--target", "0.8", "--solve-for",
                         "fabric-bandwidth", "--json")[1])
    assert got["value"] is None and got["limit"]["value"] == pytest.approx(0.638623, abs=1e-6)
    assert got["configuration"]["tp_size"] == 8 and "Research Cluster" in got["configuration_line"]
    _, out, _ = run("required", "--output", "scaling_efficiency", "--target", "0.8", "--solve-for",
                    "fabric_bandwidth", "--book")
    assert r"LaTeX: \lim_{\InjectionBandwidth \to \infty} \UsefulComputeFraction = " in " ".join(out.split())
    assert max(len(line) for line in out.splitlines()) <= 80
    code, out, err = run("required", "--output", "mfu", "--target", "0.3", "--solve-for", "nope", ok=False)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert err.startswith("mlsysim-sym: error:") and "solve_for must be" in err and "got 'nope'" in err
    # the command's own option name is the keyword (--tp: tp_size)
    _, out, _ = run("required", "--output", "mfu", "--target", "0.3", "--solve-for", "tp")
    assert out.splitlines()[2] == "tp_size (N_TP) for mfu at least 0.3"


def test_a_quantity_with_a_unit_is_read_as_written_with_its_unit():
    # 141 GB = 141e9 B; 400 Gb/s = 400e9 / 8 = 50e9 B/s; 5 us = 5e-6 s; 80 GiB = 80 * 2**30 = 85,899,345,920 B
    written = json.loads(run("solve", "--memory-capacity", "141GB", "--fabric-bandwidth", "400 Gb/s",
                             "--fabric-latency", "5us", "--json")[1])
    si = json.loads(run("solve", "--memory-capacity", "141e9", "--fabric-bandwidth", "5e10", "--fabric-latency",
                        "5e-6", "--json")[1])
    assert written == si and si["configuration"]["fabric_bandwidth"] == 5e10
    got = json.loads(run("sweep", "--memory-capacity", "80GiB,141 GB", "--fabric-latency", "1us:5us:2us",
                         "--json")[1])
    assert got["swept"]["memory_capacity"] == [85_899_345_920.0, 141e9]
    assert got["swept"]["fabric_latency"] == pytest.approx([1e-6, 3e-6, 5e-6], rel=1e-12)
    # --target in the output's unit: a step time of 4 s is 4000 ms, a memory of 40 GB is 40e9 B
    for output, with_unit, number in (("step_latency_total", "4000 ms", "4"), ("memory", "40 GB", "4e10"),
                                      ("energy", "20 kJ", "2e4")):
        a, b = (json.loads(run("required", "--output", output, "--target", t, "--solve-for", "batch_size",
                               "--json")[1]) for t in (with_unit, number))
        assert a == b and a["target"] == float(number)
    # an output of the extended model alone (the optimizer update, T_opt) takes its unit too: 10 ms = 0.01 s
    a, b = (json.loads(run("required", "--fidelity", "extended", "--output", "T_opt", "--target", t,
                           "--solve-for", "efficiency", "--json")[1]) for t in ("10 ms", "0.01"))
    assert a == b and a["target"] == 0.01
    # a zero written with a unit is the zero written without one (the range, >= 0, is the option's)
    assert run("solve", "--tdp", "0 W", "--json")[1] == run("solve", "--tdp", "0", "--json")[1]


# ------------------------------------------------------------------------------------------------------------
# The reproducers of issue 23 (the command line under hostile input): each one line on stderr naming its
# option, exit status 2, no traceback; work too large for memory or time refused before it starts, with its size.
# ------------------------------------------------------------------------------------------------------------

def refused(*args):
    """The one error line of an invocation that must fail (exit 2, nothing on stdout, no traceback)."""
    status, out, err = run(*args, ok=False)
    assert status == 2 and out == "" and "Traceback" not in err, (status, out, err)
    assert err.count("\n") == 1 and err.startswith("mlsysim-sym: error: "), err
    return err[len("mlsysim-sym: error: "):-1]


def test_a_sweep_too_large_is_refused_before_it_is_built_with_its_count():
    # 100,000 x 100,000 = 10^10 configurations (was SweepTooLarge, a MemoryError main() did not catch)
    assert refused("sweep", "--tp", "1:100000", "--pp", "1:100000") == (
        "--tp/--pp: a sweep of 10,000,000,000 configurations (100,000 tp_size x 100,000 pp_size); at most "
        "1,000,000: give fewer values")
    # JSON writes every output of every configuration: 300 x 400 = 120,000 > 100,000
    assert refused("sweep", "--tp", "1:300", "--pp", "1:400", "--json") == (
        "--tp/--pp: a sweep of 120,000 configurations (300 tp_size x 400 pp_size); at most 100,000 with --json: "
        "give fewer values or leave out --json")


def test_a_search_too_large_is_refused_before_its_product_is_built():
    # (was: past 90 s building a 10^10-element product in Python). With the nodes listed the accelerators are
    # not fixed, so every degree counts: 10^15 x the search's own 8 microbatch counts x 12 virtual stage counts
    # (optimize.V_STAGES) x 4 ZeRO stages x 2 x 2 = 1.536e18
    assert refused("search", "--tp", "1:100000", "--pp", "1:100000", "--count", "1:100000") == (
        "--tp/--pp/--count: a search of 1,536,000,000,000,000,000 configurations (100,000 tp_size x 100,000 "
        "pp_size x 100,000 count x 1,536 schedules of the search's own); at most 1,000,000: give fewer values")
    # on the fixed fleet's 256 GPUs a degree can only be one of 256's 9 divisors, as search() takes them:
    # 9 x 9 x 1,536 = 124,416 configurations before the ones the model cannot tell apart are merged, searched
    status, out, err = run("search", "--tp", "1:100000", "--pp", "1:100000", ok=False)
    assert status == 0 and "Traceback" not in err, err
    assert "feasible of 44,674 configurations" in " ".join(out.split()), out



def test_a_search_is_refused_on_its_exact_grid_the_fleets_divisors_included():
    # the count from the options leaves out the divisors a degree not given takes: DeepSeek-V3 on 1,152 GB200s
    # (24 divisors) with two precisions, cp 1,2,4, etp 1,2 and two switches passed it and ran 2 min 16 s on 68 M
    # configurations (a wider one ran out of patience at 6.5 GB); it is refused in about a second, with its count
    from mlsysim_sym.optimize import SearchTooLarge
    err = refused("search", "--model", "modern/DeepSeek-V3", "--fleet", "modern/GB200-NVL72-1152", "--fidelity",
                  "extended", "--batch-size", "4608", "--precision", "fp8,bf16", "--cp", "1,2,4", "--etp", "1,2",
                  "--fsdp-overlap", "both", "--ep-overlap", "both")
    assert err.endswith(": a search of 68,198,400 configurations (5,550 splits of the fleet, tp x pp x cp x ep x "
                        "etp, times 12,288 choices of the rest); at most 10,000,000: give fewer values or fix a "
                        "degree"), err
    # in Python the limit is an argument: Llama-3-70B on 256 GPUs has 45 splits tp x pp (each a divisor of 2^8 with
    # exponents summing to 8 at most) times the 1,536 schedules of the search's own (8 m x 12 v x 4 ZeRO x 2 x 2)
    with pytest.raises(SearchTooLarge, match=r"^a search of 69,120 configurations \(45 splits of the fleet, tp x pp "
                                             r"x ep, times 1,536 choices of the rest\); at most 69,119") as e:
        search("Llama3_70B", "Research_256", 256, max_configurations=69_119)
    assert e.value.size == 69_120 and isinstance(e.value, ValueError)

def test_a_range_is_counted_before_it_is_built():
    from mlsysim_sym.cli.options import UsageError, count, values
    # a step of 1e-320 makes (1 - 0) / step overflow to inf (was: OverflowError in the range parser)
    assert refused("sweep", "--efficiency", "0:1:1e-320") == (
        "--efficiency: the range '0:1:1e-320' has more than 1e308 values; at most 100,000")
    assert count("256:4096:256,1,2", "int", "--batch-size") == 16 + 2
    assert values("0.5:1:0.25", "float", "--efficiency") == [0.5, 0.75, 1.0]
    with pytest.raises(UsageError, match=r"^--tp: the range '1:1000000' has 1,000,000 values; at most 100,000$"):
        count("1:1000000", "int", "--tp")
    with pytest.raises(UsageError, match=r"^--tp: '1:60000,1:60000' lists more than 100,000 values$"):
        values("1:60000,1:60000", "int", "--tp")


def test_a_picture_into_a_missing_directory_is_one_line_before_any_work(tmp_path):
    path = tmp_path / "no" / "x.png"
    assert refused("sweep", "--tp", "1,2", "--plot", str(path)) == (
        f"--plot: {path}: the directory {path.parent} does not exist")


def test_a_picture_path_needs_an_ending_matplotlib_writes_and_is_written_as_given(tmp_path):
    formats = (".eps, .gif, .jpg, .jpeg, .pdf, .pgf, .png, .ps, .raw, .rgba, .svg, .svgz, .tif, .tiff, .webp, "
               ".avif")
    # (was: matplotlib wrote PATH.png while the CLI reported PATH)
    assert refused("sweep", "--tp", "1,2", "--plot", str(tmp_path / "mfu")) == (
        f"--plot: {tmp_path / 'mfu'} has no ending; the picture's format is its ending, one of {formats}")
    assert refused("solve", "--plot", str(tmp_path / "x.bmp")) == (
        f"--plot: {tmp_path / 'x.bmp'} has ending .bmp; the picture's format is its ending, one of {formats}")
    assert refused("solve", "--plot", str(tmp_path)) == (
        f"--plot: {tmp_path} is a directory; give a file name ending in one of {formats}")
    assert list(tmp_path.iterdir()) == []
    path = tmp_path / "mfu.svg"
    _, out, err = run("sweep", "--tp", "1,2", "--plot", str(path), "--quiet")
    assert err == f"picture: {path}\n" and out == ""
    assert [p.name for p in tmp_path.iterdir()] == ["mfu.svg"] and path.read_text().lstrip().startswith("<?xml")


def test_a_sweep_of_tp_0_is_one_line_with_solves_message():
    # (was: ZeroDivisionError) one configuration, masked by solve()'s rule V1: nothing to tabulate
    assert refused("sweep", "--tp", "0") == "--tp: tp_size must be >= 1, got 0"


def test_a_whole_number_beyond_2_to_the_53_is_refused_naming_the_option():
    # 10**30 (was: OverflowError, "Python int too large to convert to C long")
    assert refused("sweep", "--tp", "1" + "0" * 30) == (
        "--tp: a whole number of at most 2**53 = 9,007,199,254,740,992 is allowed, got one of 31 digits")
    assert refused("solve", "--layers", "-" + "9" * 400) == (
        "--layers: a whole number of at most 2**53 = 9,007,199,254,740,992 is allowed, got one of 400 digits")


def test_an_overflow_in_uncertainty_is_one_line_naming_sigma():
    # a relative standard deviation of 1e308: its squared contribution overflows (was: OverflowError)
    assert refused("uncertainty", "--sigma", "efficiency=1e308") == (
        "--sigma: the model has no finite result at this value (OverflowError: Numerical result out of range)")


def test_too_many_monte_carlo_draws_are_refused_before_any_is_drawn():
    # 10^9 draws (was: numpy's allocation error, 7.45 GiB)
    assert refused("uncertainty", "--sigma", "efficiency=0.1", "--samples", "1000000000") == (
        "--samples: at most 10,000,000 Monte Carlo draws, got 1,000,000,000")


def test_the_sensitivity_of_a_yes_no_output_is_one_line_naming_output():
    # node_profile.feasible is a comparison (memory <= capacity): no derivative (was: RuntimeError)
    assert refused("sensitivity", "--output", "node_profile.feasible") == (
        "--output: node_profile.feasible is a yes/no value (0 or 1), with no derivative; ask for the quantity it "
        "tests or a smooth output: mfu, step_time, scaling_efficiency, memory, ...")
    # required too (was: TypeError from inside the regime's algebra), and the Python API in the same words
    assert refused("required", "--output", "feasible", "--target", "1", "--solve-for", "tp").startswith(
        "--output: feasible is a yes/no value (0 or 1), with no derivative")
    from mlsysim_sym import required
    with pytest.raises(ValueError, match=r"^output: memory_bound is a yes/no value \(0 or 1\)"):
        required("memory_bound", 1, "tp_size", "Llama3_70B", "Research_256", batch_size=256)


def test_messages_that_named_no_option_now_start_with_it():
    # numpy's "expected non-negative integer" for a negative seed
    assert refused("uncertainty", "--sigma", "efficiency=0.1", "--seed", "-1") == (
        "--seed: must be a whole number >= 0, got -1")
    # a target below the float's normal range reaches "Array must not contain infs or NaNs" inside required():
    # the question's options are named
    assert refused("required", "--output", "bubble_fraction", "--solve-for", "microbatch_count", "--target",
                   "1e-320").startswith("--output/--target/--solve-for: ")
    # a record field out of the parameter table's range (was: a cost term's "bandwidth_bytes_s must be
    # positive", or a ZeroDivisionError)
    assert refused("sensitivity", "--fabric-bandwidth", "0") == "--fabric-bandwidth: fabric_bandwidth must be > 0, got 0.0"
    assert refused("solve", "--memory-bandwidth", "0") == "--memory-bandwidth: memory_bandwidth must be > 0, got 0.0"
    # the plan's configuration errors name their option (were wrapped without it)
    assert refused("plan", "--tokens", "1e12", "--ep", "-1") == "--ep: ep_size must be >= 1, got -1"
    # a search with a keyword out of range would leave out every configuration ("no configuration fits")
    assert refused("search", "--efficiency", "-1") == "--efficiency: efficiency must be in [1e-09, 1.0], got -1.0"
    # uncertainty's messages about sigma
    assert refused("uncertainty", "--sigma", "foo=0.1").startswith("--sigma: foo is no parameter with an uncertainty")
    assert refused("uncertainty", "--sigma", "efficiency=0.1", "--samples", "0") == (
        "--samples: Monte Carlo draws must be a whole number >= 2 (leave it out for the first order alone), got 0")


def test_a_sweep_of_one_configuration_gives_its_value_not_a_summary():
    # no option given a list: the bundled example's one configuration, whose MFU solve() prices at 0.260397
    _, out, _ = run("sweep", "--tp", "8", "--pp", "4", "--microbatches", "8")
    assert out.splitlines()[-1] == "one configuration (no argument given a list or a range): mfu = 0.2604"
    # tp 1, no pipeline (the model named: solve()'s defaults): solve() puts 1.18 TB on each accelerator (feasible
    # False), said of this one alone
    _, out, _ = run("sweep", "--model", "Llama3_70B")
    assert out.splitlines()[-1] == "  this configuration does not fit in accelerator memory (it spills to the host)"


def test_a_sweep_prints_several_outputs_a_column_or_a_grid_each():
    # the bundled example at tp 2, 4, 8: MFU and step time as solve() prices them (tp 8: 0.2604 and 3.369 s; tp 4:
    # 0.2258 and 3.884 s), memory too (tp 2 and 4 spill: 165.2 and 94.4 GB an accelerator over its 85.9 GB)
    _, out, _ = run("sweep", "--tp", "2,4,8", "--output", "mfu,step_time,memory")
    assert out.splitlines()[2:] == ["  tp_size       mfu  step_time      memory",
                                    "  2        0.1686 *  5.202 s *  165.2 GB *",
                                    "  4        0.2258 *  3.884 s *   94.4 GB *",
                                    "  8        0.2604    3.369 s    59.41 GB",
                                    "  * does not fit in accelerator memory (spills to the host)"]
    # two swept options: a grid each, the note once below them; one configuration: one line
    _, out, _ = run("sweep", "--tp", "4,8", "--pp", "2,4", "--output", "mfu,step_time")
    lines = out.splitlines()
    assert "  mfu by tp_size (rows) and pp_size (columns)" in lines and \
        "  step_time in s by tp_size (rows) and pp_size (columns)" in lines
    assert lines.count("  * does not fit in accelerator memory (spills to the host)") == 1
    _, out, _ = run("sweep", "--output", "mfu, step_time")
    assert out.splitlines()[-2:] == ["one configuration (no argument given a list or a range): mfu = 0.2604,",
                                     "  step_time = 3.369 s"]
    assert refused("sweep", "--output", "mfu,nope").startswith("--output: no output 'nope'; outputs: ")
    assert refused("sweep", "--output", "mfu,") == "--output: a name or a list of names (mfu,step_time), got 'mfu,'"


def test_the_packages_advice_is_given_in_the_command_lines_words():
    # search() says "pass runnable=False" and its header "runnable=False": the command line's switch is
    # --all-schedules (a trial typed the Python keyword); 7 microbatches of 32 samples run on no framework
    assert refused("search", "--batch-size", "256", "--tp", "8", "--pp", "4", "--microbatches", "7", "--v-stages",
                   "1").endswith("or add --all-schedules to rank them anyway")
    _, out, _ = run("search", "--all-schedules", "--top", "1")
    assert "(schedule rules off: --all-schedules)" in " ".join(out.split()) and "runnable=False" not in out


def test_search_takes_one_batch_and_its_help_says_so():
    _, out, _ = run("search", "--help")
    assert "[--batch-size INT]" in out and "[--tp LIST]" in out and "[--precision NAME,...]" in out
    assert refused("search", "--batch-size", "128,256") == (
        "--batch-size: takes one value in search (every configuration is ranked at one batch; sweep takes a "
        "list), got 2 values")


def test_required_writes_its_conditions_as_a_student_writes_them():
    # the regime's conditions in the book's symbols: the floor of B/N_DP, chi_rc = 0, not sympy's Eq()/FloorDiv()
    _, out, _ = run("required", "--output", "mfu", "--target", "0.3", "--solve-for", "batch_size")
    flat = " ".join(out.split())
    assert ("holds while ⌊B_global/N_DP⌋ ≥ 1, χ_rc = 0, N_L ≥ 1, T_compute ≥ T_memory, χ_LoRA = 0, "
            "N_nodes,DP ≠ 1, g_DP = 1, G_node ≥ N_TP, χ_ov = 0, f_strag ≤ 1") in flat
    assert "Eq(" not in out and "FloorDiv" not in out


def test_sweep_and_equations_take_the_names_the_other_commands_print():
    # --output step_time is step_latency_total (the bundled example at tp 8: 3.369 s, solve()'s step time)
    _, out, _ = run("sweep", "--tp", "4,8", "--pp", "4", "--microbatches", "8", "--output", "step_time")
    assert "tp_size  step_time" in out and out.splitlines()[-2].split() == ["8", "3.369", "s"]
    for name in ("memory", "M_total"):     # the alias, and the symbol solve's table prints: 59.41 GB at tp 8
        _, out, _ = run("sweep", "--tp", "4,8", "--pp", "4", "--microbatches", "8", "--output", name)
        assert out.splitlines()[-2].split() == ["8", "59.41", "GB"], out
    # the symbol a table prints (M_total, the memory per accelerator) names its quantity
    _, out, _ = run("equations", "M_total")
    assert out.startswith("% M_acc (M_total): training memory per accelerator [B]\nM_{\\text{total}} = ")
    _, out, _ = run("equations", "memory")
    assert out.startswith("% M_acc (M_total):")
    # the symbols plan prints: K, T_train, H_GPU, C_train (a run's time and cost in the step's quantities)
    _, out, _ = run("equations", "T_train")
    assert out == "% T_train: wall-clock time of the run [s]\nT_{\\text{train}} = K T_{\\text{step}}\n"
    _, out, _ = run("equations", "K", "--quarto")
    assert r"K = \left\lceil{\frac{D_{\text{tok}}}{S \min\left(B_{\text{global}}, N_{\text{DP}} B_{\text{local}}" \
        in " ".join(out.split()) and out.rstrip().endswith("{#eq-plan-k-steps}")
    _, out, _ = run("equations", "H_GPU", "--json")
    assert json.loads(out)["latex"] == r"H_{\text{GPU}} = \frac{K N_{\text{GPU}} T_{\text{step}}}{3600}"


def test_uncertainty_refuses_a_sigma_given_twice_and_reads_a_zero_spread():
    assert refused("uncertainty", "--sigma", "congestion=0.1,congestion_factor=0.2") == (
        "--sigma: congestion_factor is given twice (give each parameter one sigma)")
    # sigma 0: the first-order sd is 0, and the Monte Carlo's is rounding noise, not an infinite difference
    _, out, _ = run("uncertainty", "--sigma", "efficiency=0", "--samples", "100")
    flat = " ".join(out.split())
    assert "the first-order sd is 0 and the Monte Carlo's" in flat and "rounding noise: first order holds" in flat
    assert "inf" not in flat


def test_the_regime_leaves_out_a_schedule_that_is_switched_off():
    # the per-layer overlap acts with --overlap and --layer-overlap only; without them the regime names no
    # per-layer schedule (it named "each layer's AllReduce hidden ..." beside "DP not overlapped")
    _, off, _ = run("sensitivity", "--model", "Llama3_70B", "--fidelity", "extended")
    flat = " ".join(off.split())
    assert "each layer's AllReduce" not in flat and "DP not overlapped" in flat
    _, on, _ = run("sensitivity", "--model", "Llama3_70B", "--fidelity", "extended", "--overlap", "--layer-overlap")
    assert "each layer's AllReduce outlasts a layer's backward" in " ".join(on.split())


def test_required_answers_a_met_ceiling_with_the_configuration_not_an_unrunnable_value():
    # at most 60 GB: the configuration's 59.41 GB (m 8) already meets it, fewer microbatches (m 4 to 7: 83.3 GB)
    # do not; the regimes the closed form walks to (m 177, 250) run no schedule and were answered (m = 250)
    _, out, _ = run("required", "--output", "memory", "--target", "60e9", "--solve-for", "microbatch_count",
                    "--side", "at most", "--batch-size", "256", "--tp", "8", "--pp", "4", "--microbatches", "8")
    flat = " ".join(out.split())
    assert "microbatch_count (m) for memory at most 60 GB" in flat
    assert "answer: microbatch_count = 8; whole number 8 gives memory = 59.4114 GB" in flat
    assert "regime change" not in flat and "note: the configuration already meets the target" in flat
    # m 12 meets it too (51.9 GB) but runs no schedule (12 does not divide a replica's 32 samples): the nearest
    # valid m that meets it, 8
    _, out, _ = run("required", "--output", "memory", "--target", "60e9", "--solve-for", "microbatch_count",
                    "--side", "at most", "--batch-size", "256", "--tp", "8", "--pp", "4", "--microbatches", "12")
    flat = " ".join(out.split())
    assert "answer: microbatch_count = 8; whole number 8 gives memory = 59.4114 GB" in flat
    assert "the configuration meets the target but runs no schedule (see can_run()); 8 is the valid" in flat


def test_a_sweep_chart_of_three_options_is_refused_in_the_command_lines_words(tmp_path):
    assert refused("sweep", "--tp", "1,2", "--pp", "1,2", "--microbatches", "1,2", "--plot",
                   str(tmp_path / "x.png")) == (
        "--plot: a chart shows one or two swept options (a line, a heatmap); this sweep has 3 (--tp, --pp, "
        "--microbatches): give all but one or two of them one value")
    assert not (tmp_path / "x.png").exists()


def test_skipped_knob_values_are_grouped_by_one_reason():
    # ep 2 and 4 on a dense model: one reason, without the value each message repeats ("ep_size (2) > 1 needs ...")
    _, out, _ = run("sensitivity", "--fidelity", "extended", "--model", "modern/Llama-3.1-70B", "--fleet",
                    "modern/H100-SXM-1024", "--tp", "8", "--pp", "4", "--microbatches", "8", "--batch-size", "512")
    assert "  skipped expert-parallel degree: 2, 4 (needs a mixture of experts)" in out.splitlines()


def test_the_command_lines_own_names_reach_required_and_sensitivity():
    # --solve-for congestion is congestion_factor: MFU 0.3 needs c_cong = 0.5334 on the bundled example (its MFU
    # 0.260397 scales as 1 / (compute + c_cong * communication); required's own test works the closed form)
    _, out, _ = run("required", "--output", "mfu", "--target", "0.3", "--solve-for", "congestion")
    assert "answer: congestion_factor = 0.5334 gives mfu = 0.3" in " ".join(out.split())
    assert refused("required", "--tokens", "2e12", "--days", "30", "--side", "at least") == (
        "--tokens and --days: give both, and not --output, --target or --side (the output is the run's days, at "
        "most --days)")
    # the symbol solve's table prints for the memory names the output (59.41 GB, solve()'s memory)
    _, out, _ = run("sensitivity", "--output", "M_total")
    assert out.splitlines()[2] == "sensitivities of memory per accelerator M_total = 59.41 GB"
    _, out, _ = run("sensitivity", "--output", "T_sync")
    assert "step time before the straggler T\u0303_step = 3.369 s" in out      # T with a tilde, not "tildeT"


def test_an_empty_model_or_fleet_is_refused_not_read_as_the_example():
    # `--model=` (an unset shell variable) priced the bundled Llama-3.1-70B example and exited 0
    for flag in ("--model=", "--fleet= "):
        code, out, err = run("solve", flag, ok=False)
        name = flag.strip("-= ")
        assert code == 2 and out == ""
        assert err == f"mlsysim-sym: error: --{name}: empty; give a catalog name or a file (mlsysim-sym list " \
                      "names them)\n"


def test_a_long_list_of_names_in_an_error_is_cut_to_the_closest_ones():
    # the 22 mechanisms (25 now) made this line 424 characters: it keeps the names closest to 'gemm', then the first
    # ones
    code, out, err = run("solve", "--fidelity", "extended", "--without", "gemm", ok=False)
    assert code == 2 and out == ""
    assert err == ("mlsysim-sym: error: --without: unknown mechanism 'gemm'; the extended model's mechanisms are: "
                   "fp8_gemms, gemm_shape, context_parallel, sequence_parallel, ... (25 in all)\n")
    # a short list stays whole (8 sections of a plan file; test_files.py)


def test_an_unknown_catalog_name_lists_the_close_ones():
    # a name in the wrong letter case said only "see: mlsysim-sym list"
    code, out, err = run("solve", "--model", "modern/llama-3.1-8b", ok=False)
    assert code == 2 and err.startswith("mlsysim-sym: error: --model: unknown workload 'modern/llama-3.1-8b'; close "
                                        "names: modern/Llama-3.1-8B, ")
    code, out, err = run("solve", "--fleet", "research_256", ok=False)
    assert code == 2 and "close names: Research_256" in err and err.endswith(
        "see: mlsysim-sym list (or give a plan file: docs/files.md)\n")


def test_a_whole_number_may_be_written_with_an_exponent():
    # --tokens 15e12 was taken and --batch-size 1e3 refused; a whole number written 1e3 or 2048.0 is read exactly
    _, out, _ = run("solve", "--batch-size", "1e3", "--tp", "8", "--json")
    assert json.loads(out)["configuration"]["batch_size"] == 1000
    _, out, _ = run("sweep", "--batch-size", "256,2.048e3", "--tp", "8", "--json")
    assert json.loads(out)["swept"]["batch_size"] == [256, 2048]


def test_plan_reads_steps_and_negative_numbers_as_the_other_options_do():
    # --steps 1e6 is a whole number (as --batch-size 1e3 is); argparse's int said "invalid int value"
    _, out, _ = run("plan", "--steps", "1e6")
    assert "steps K" in out and "1,000,000" in out
    assert refused("plan", "--steps", "1.5") == "--steps: expected a whole number, got '1.5'"
    # so are --top and --samples (they refused 1e1 and 2e3 as no whole number)
    assert run("search", "--top", "3e0", "--json")[1] == run("search", "--top", "3", "--json")[1]
    assert len(json.loads(run("search", "--top", "3e0", "--json")[1])["results"]) == 3
    assert refused("search", "--top", "2.5") == "argument --top: expected a whole number, got '2.5'"
    # an exponent beyond Decimal's own range is no whole number either (it was an internal error)
    assert refused("search", "--top", "1e9999999") == "argument --top: expected a whole number, got '1e9999999'"
    assert refused("search", "--batch-size", "1e999999999") == "--batch-size: expected a whole number, got '1e999999999'"
    # -1e12 is a number, not an option (argparse said "expected one argument"): refused by its range
    assert refused("plan", "--tokens", "-1e12") == "--tokens: tokens must be a finite number > 0, got -1000000000000.0"
    # and so is a list or range that starts with one: the sweep refuses the value by its range
    assert refused("sweep", "--tp", "-8,8") == "--tp: tp_size must be >= 1, got -8"


def test_an_option_given_twice_is_refused():
    # argparse keeps the last of a repeated option silently (--tp 2 --tp 4 priced tp 4); its abbreviation too
    assert refused("solve", "--tp", "2", "--tp", "4") == "--tp: given twice; give each option once"
    assert refused("sweep", "--batch", "256", "--batch-size=512") == \
        "--batch-size: given twice (first as --batch); give each option once"


def test_a_cards_experts_and_a_sequence_context_parallelism_cannot_split_are_refused():
    # Qwen3-30B-A3B's card: 128 routed experts of 30.5 B parameters; a token routed to 200 of them, routed experts
    # larger than the model (the all-to-all's bytes came out negative: "message_bytes must be non-negative"), and
    # 4096 tokens over 3 context-parallel ranks were priced or refused in mlsysim's internal words
    q = ("--model", "modern/Qwen3-30B-A3B", "--fleet", "modern/GB200-NVL72-1152", "--fidelity", "extended",
         "--seq-len", "4096", "--batch-size", "1152")
    assert refused("solve", *q, "--active-experts-per-token", "200") == (
        "--active-experts-per-token: active_experts_per_token (200) must be <= the routed experts of each MoE "
        "layer (128)")
    assert refused("solve", *q, "--expert-parameters", "1e15") == (
        "--expert-parameters: expert_parameters (1e+15) must be <= parameters (3.05321e+10): the routed experts "
        "are part of the model")
    # the extended model's rates are shares of a token's FLOPs (it divided by zero: "no finite result")
    assert refused("solve", "--fidelity", "extended", "--inference-flops", "0").startswith(
        "--inference-flops: inference_flops must be > 0 for a transformer without an architecture card")
    # the user typed --cp; the message is about both options
    assert refused("solve", *q, "--cp", "3") == (
        "--cp/--seq-len: seq_len (4096) must be a multiple of cp_size (3): context parallelism gives each rank an "
        "equal part of every sequence")


def test_uncertainty_of_a_run_is_the_plans_days_with_their_spread():
    # the bundled example's run of 1e12 tokens takes 74.4 days (plan); its spread under 5 % on the efficiency is the
    # step time's (the Python result's, checked in test_uncertainty)
    _, out, _ = run("plan", "--tokens", "1e12", "--json")
    days = json.loads(out)["days"]
    _, out, _ = run("uncertainty", "--sigma", "efficiency=0.05", "--tokens", "1e12", "--price", "2.5", "--json")
    d = json.loads(out)["run"]
    assert d["days"]["value"] == pytest.approx(days, rel=1e-12) and round(days, 1) == 74.4
    assert d["cost"]["value"] == pytest.approx(2.5 * d["accelerator_hours"]["value"], rel=1e-12)
    _, out, _ = run("uncertainty", "--sigma", "efficiency=0.05", "--steps", "1000")
    assert "the run: 1,000 steps K" in out and "time T_train (days)" in out
    for args, message in ((("--price", "2"), "--price: needs --tokens or --steps (the run to price)"),
                          (("--tokens", "1e12", "--steps", "5"), "--tokens or --steps: give one of them"),
                          (("--tokens", "-1"), "--tokens: tokens must be a finite number > 0, got -1.0")):
        code, out, err = run("uncertainty", "--sigma", "efficiency=0.1", *args, ok=False)
        assert code == 2 and out == "" and len(err.splitlines()) == 1 and message in err, err


def test_what_a_trial_misread_on_the_command_line():
    # a range mlsysim's solve() does not check is refused, and said to be the command line's and the extended
    # model's (a trial compared it with Python's solve(), which prices congestion -1 as mlsysim does)
    assert refused("solve", "--congestion", "-1") == ("--congestion: congestion_factor must be >= 0, got -1.0 "
                                                      "(mlsysim prices it; the command line and the extended "
                                                      "model refuse it)")
    # a count of values, not the value 2
    assert refused("solve", "--tp", "8,16").endswith("got 2 values")
    # no split of tp 3 or 5 divides 256 accelerators: the degree given is named, not every option of the call
    assert refused("search", "--batch-size", "256", "--tp", "3,5") == \
        "--tp: no tp x pp x ep among the choices divides the fleet's 256 accelerators"
    # the fleet's size the call sets is named beside the degree (16 nodes of 8: 128 accelerators)
    assert refused("search", "--batch-size", "256", "--tp", "3,5", "--count", "16") == \
        "--tp/--count: no tp x pp x ep among the choices divides the fleet's 128 accelerators"
    # a search's help gives what it tries where an option is not given (search()'s defaults), not solve()'s
    _, out, _ = run("search", "--help")
    flat = " ".join(out.split())
    assert "--v-stages LIST virtual pipeline stages per device (interleaving); >= 1; not given: the search tries " \
        "1,2,3,4,5,6,8,10,12,16,20,24;" in flat
    assert "not given: the search tries 0,1,2,3; list (1,2) or range" in flat       # no ZeRO stage 4 as an example
    assert "--tp LIST tensor-parallel degree; >= 1; not given: the search tries every divisor of the " \
        "accelerators" in flat
    assert "yes with full activation recomputation, else no; not given: the search tries both" in flat
    _, out, _ = run("solve", "--help")
    assert "yes when fine-tuning with LoRA adapters, else no; default no" in " ".join(out.split())


def test_required_prints_the_latex_of_a_closed_form_only_where_it_says_so():
    # the text said "761 characters, not shown (to_dict()['expression'], latex(), or --json)" and then printed
    # thirty lines of its LaTeX; a form of 170 characters is said to be in LaTeX below, which follows
    _, out, _ = run("required", "--output", "mfu", "--target", "0.3", "--solve-for", "efficiency")
    flat = " ".join(out.split())
    assert "closed form (y = target): 170 characters, in LaTeX below" in flat and "LaTeX: \\eta_{\\text{hw}} =" in flat
    _, out, _ = run("required", "--model", "modern/Llama-3.1-70B", "--fleet", "modern/H100-SXM-1024",
                    "--batch-size", "1024", "--seq-len", "8192", "--precision", "bf16", "--fidelity", "extended",
                    "--tp", "8", "--pp", "4", "--microbatches", "32", "--v-stages", "4", "--zero-stage", "1",
                    "--overlap", "--output", "mfu", "--target", "0.4", "--solve-for", "efficiency")
    flat = " ".join(out.split())
    assert "closed form (y = target): 761 characters, not shown (to_dict()['expression'], latex(), or --json)" \
        in flat and "LaTeX:" not in flat


def test_an_ascii_terminal_gets_one_line_that_says_how_to_print_the_symbols():
    # β (the NVLink bandwidth's symbol) cannot be written in ASCII; the message names the setting that can
    p = subprocess.run([sys.executable, "-m", "mlsysim_sym", "list", "Research_256"], capture_output=True,
                       timeout=300, env={**os.environ, "PYTHONWARNINGS": "", "PYTHONIOENCODING": "ascii"})
    err = p.stderr.decode("ascii")
    assert p.returncode == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("mlsysim-sym: error: the output's encoding (ascii) cannot write '\\u03b2': set "
                          "PYTHONIOENCODING=utf-8")
