"""Records from files (docs/files.md): mlsysim eval's plan read as it is, the extension (architecture cards, full
hardware records) in YAML and TOML, through Python and the command line; bad files answer one line, exit 2."""
import json
import re
import subprocess
import sys

import pytest

from mlsysim_sym import DistributedModel, files, search, sweep

PLAN = """\
version: "1"
name: llama70b-on-h100
workload: {name: Llama3_70B, batch_size: 256, seq_len: 4096}
hardware:
  name: H100
  node_count: 32
  accelerators_per_node: 8
  fabric_bandwidth: 50 GB/s
  precision: bf16
  efficiency: 0.45
ops: {region: US_Avg, duration_days: 30}
"""

# a 13B-class model with grouped-query attention (Mistral NeMo 12B's shape) on 64 B200 nodes described in full
CARD_YAML = """\
version: "1"
name: my-13b-on-b200
workload: {name: my-13b, batch_size: 512, seq_len: 8192}
architecture: {layers: 40, hidden: 5120, heads: 32, kv_heads: 8, head_dim: 128, ffn: 14336, vocab: 131072}
hardware:
  node_count: 64
  accelerators_per_node: 8
  intra_node_bw: 900 GB/s
  precision: bf16
  accelerator:
    name: B200
    peak_flops: 2250 TFLOP/s
    memory_capacity: 180 GiB
    memory_bandwidth: 7.7 TB/s
    tdp: 1000 W
    precision_flops: {bf16: 2250 TFLOP/s, fp8: 4500 TFLOP/s}
  fabric: {name: ConnectX-7, bandwidth: 400 Gb/s, latency: 5 us}
"""

CARD_TOML = """\
version = "1"
name = "my-13b-on-b200"

[workload]
name = "my-13b"
batch_size = 512
seq_len = 8192

[architecture]
layers = 40
hidden = 5120
heads = 32
kv_heads = 8
head_dim = 128
ffn = 14336
vocab = 131072

[hardware]
node_count = 64
accelerators_per_node = 8
intra_node_bw = "900 GB/s"
precision = "bf16"

[hardware.accelerator]
name = "B200"
peak_flops = "2250 TFLOP/s"
memory_capacity = "180 GiB"
memory_bandwidth = "7.7 TB/s"
tdp = "1000 W"
precision_flops = { bf16 = "2250 TFLOP/s", fp8 = "4500 TFLOP/s" }

[hardware.fabric]
name = "ConnectX-7"
bandwidth = "400 Gb/s"
latency = "5 us"
"""


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "mlsysim_sym", *args], capture_output=True, text=True, timeout=120)


def test_an_mlsysim_plan_builds_the_fleet_mlsysim_eval_builds(tmp_path):
    pytest.importorskip("mlsysim")
    import yaml
    from mlsysim.cli.schemas import MlsysPlanSchema

    from tests.mlsysim_oracle import compare, flatten, mlsysim_solve
    path = _write(tmp_path, "plan.yaml", PLAN)
    theirs = MlsysPlanSchema.model_validate(yaml.safe_load(PLAN))
    doc = files.load(path)
    assert doc.keywords == {"batch_size": 256, "seq_len": 4096, "precision": "bf16", "efficiency": 0.45}
    kw = dict(doc.keywords, tp_size=8, pp_size=4, microbatch_count=8)
    ours = flatten(DistributedModel().solve(path, path, **kw))
    assert compare(ours, mlsysim_solve(theirs.model_obj, theirs.fleet_obj, **kw)) == []


def test_the_gb200_rack_is_one_72_gpu_node_as_mlsysim_eval_reads_it(tmp_path):
    path = _write(tmp_path, "gb200.yaml", PLAN.replace("name: H100\n  node_count: 32\n  accelerators_per_node: 8",
                                                       "name: GB200_NVL72\n  accelerators: 1152"))
    # mlsysim's Hardware.GB200_NVL72 has accelerator_count 72: 16 nodes of 72; its accelerator record is the whole
    # rack (72 x 2.25 PFLOP/s = 1.62e17), which the reader warns about, naming the per-GPU catalog fleet
    with pytest.warns(UserWarning, match=r"hardware.name: GB200_NVL72 .* whole rack \(1.62e\+17 FLOP/s, 14.8 TB of "
                                         r"HBM\).*modern/GB200-NVL72-1152"):
        f = files.fleet(path)
    assert (f.count, f.node.accelerators_per_node) == (16, 72)
    assert f.name == "GB200_NVL72 Fleet (1,152 accelerators)"


@pytest.mark.parametrize("name,text", [("card.yaml", CARD_YAML), ("card.toml", CARD_TOML)])
def test_an_architecture_card_and_a_full_hardware_record(tmp_path, name, text):
    path = _write(tmp_path, name, text)
    doc = files.load(path)
    w, f = doc.workload, doc.fleet
    # Mistral NeMo 12B's shape: 12,247,782,400 parameters (docs/architecture.md)
    assert w.parameters == 12_247_782_400 and w.architecture.kv_heads == 8
    acc = f.node.accelerator
    assert (acc.peak_flops, acc.memory_capacity, acc.memory_bandwidth) == (2.25e15, 180 * 2 ** 30, 7.7e12)
    assert acc.flops_for("fp8") == 4.5e15
    assert (f.count, f.node.intra_node_bw, f.fabric.bandwidth, f.fabric.latency) == (64, 900e9, 50e9, 5e-6)
    kw = dict(doc.keywords, tp_size=4, pp_size=2, microbatch_count=16)
    r = DistributedModel().solve(path, path, **kw)
    same = DistributedModel().solve(w, f, **kw)
    assert r.mfu == same.mfu and 0.1 < r.mfu < 0.7


def test_files_through_sweep_and_search(tmp_path):
    path = _write(tmp_path, "plan.yaml", PLAN)
    s = sweep(path, path, batch_size=256, tp_size=[4, 8], pp_size=4, microbatch_count=8, seq_len=4096,
              precision="bf16")
    one = DistributedModel().solve(path, path, batch_size=256, tp_size=8, pp_size=4, microbatch_count=8,
                                   seq_len=4096, precision="bf16")
    assert s.values["mfu"][1] == pytest.approx(one.mfu, rel=1e-12)
    best = search(path, path, 256, top_k=1, seq_len=4096, precision="bf16")
    b = best.best
    again = DistributedModel().solve(path, path, batch_size=256, seq_len=4096, precision="bf16", **b.config)
    assert b.result.mfu == pytest.approx(again.mfu, rel=1e-12) and b.result.mfu > 0.2


def test_the_cli_prices_a_plan_and_a_card(tmp_path):
    plan = _write(tmp_path, "plan.yaml", PLAN)
    r = _cli("solve", "--model", plan, "--tp", "8", "--pp", "4", "--microbatches", "8", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    # the plan's batch, sequence, precision and efficiency are the defaults
    c = out["configuration"]
    assert (c["batch_size"], c["seq_len"], c["precision"], c["efficiency"]) == (256, 4096, "bf16", 0.45)
    one = DistributedModel().solve(plan, plan, batch_size=256, seq_len=4096, precision="bf16", efficiency=0.45,
                                   tp_size=8, pp_size=4, microbatch_count=8)
    assert out["mfu"] == pytest.approx(one.mfu, rel=1e-12)
    card = _write(tmp_path, "card.yaml", CARD_YAML)
    r = _cli("solve", "--model", card, "--fleet", card, "--tp", "4", "--pp", "2", "--microbatches", "16",
             "--fidelity", "extended")
    assert r.returncode == 0, r.stderr
    assert "my-13b" in r.stdout and "step time" in r.stdout


BAD = [
    ("missing.yaml", None, "cannot read the file"),
    ("broken.yaml", "workload: {name: Llama3_70B\n", "not valid YAML"),
    # where the parser stopped and where the unclosed mapping began (it said only "while parsing a flow mapping")
    ("broken2.yaml", "version: '1'\nworkload: {name: Llama3_70B, batch_size: 256\nhardware: {name: H100}\n",
     "not valid YAML: expected ',' or '}', but got ':' (line 3, column 9), while parsing a flow mapping from line 2"),
    ("notplan.yaml", "- 1\n- 2\n", "expected a mapping of sections"),
    ("extra.yaml", PLAN + "colour: blue\n", "colour: unknown section; a plan has version, name, workload"),
    ("model.yaml", PLAN.replace("Llama3_70B", "Llama9_70B"), "workload.name: unknown workload 'Llama9_70B'"),
    ("hw.yaml", PLAN.replace("name: H100", "name: H1000"), "hardware.name: unknown hardware 'H1000'"),
    ("bw.yaml", PLAN.replace("50 GB/s", "fast"), "hardware.fabric_bandwidth: expected a bandwidth such as"),
    ("eff.yaml", PLAN.replace("0.45", "1.5"), "hardware.efficiency: must be a number in (0, 1], got 1.5"),
    ("nodes.yaml", PLAN.replace("  accelerators_per_node: 8\n", ""),
     "hardware.node_count: requires hardware.accelerators_per_node"),
    ("card.yaml", CARD_YAML.replace("kv_heads: 8", "kv_heads: 5"), "architecture: kv_heads must divide heads (32), "
                                                                   "got 5"),
    ("card2.yaml", CARD_YAML.replace("vocab: 131072", "vocab: 131072, experts_n: 8"),
     "architecture.experts_n: unknown field; an architecture card has "),
    ("acc.toml", CARD_TOML.replace('memory_capacity = "180 GiB"', 'memory_capacity = "180 parsecs"'),
     "hardware.accelerator.memory_capacity: expected a size such as '80 GiB'"),
    ("toml.toml", "version = \n", "not valid TOML"),
    ("twofab.yaml", CARD_YAML.replace("  intra_node_bw: 900 GB/s\n", "  intra_node_bw: 900 GB/s\n  fabric_bandwidth: 10 GB/s\n"),
     "hardware: give one of fabric_bandwidth (mlsysim's) and fabric (a full record), not both"),
    ("tr-ext.yaml", PLAN + "training: {tp_size: 8, cp_size: 2}\n",
     "training.cp_size: an argument of the extended model; add fidelity: extended to training:"),
    ("tr-range.yaml", PLAN + "training: {tp_size: 0}\n", "training.tp_size: must be >= 1, got 0"),
    ("tr-flag.yaml", PLAN + "training: {fidelity: extended, sequence_parallel: 2}\n",
     "training.sequence_parallel: must be true or false (or 1 or 0), got 2"),
    ("tr-real.yaml", PLAN + "training: {fidelity: extended, attention_efficiency: 1.5}\n",
     "training.attention_efficiency: must be in [1e-09, 1.0], got 1.5"),
    ("tr-count.yaml", PLAN + "training: {pp_size: 2.5}\n", "training.pp_size: must be a whole number >= 1 (at most 2**53), got 2.5"),
    ("tr-batch.yaml", PLAN + "training: {batch_size: 64}\n",
     "training.batch_size: give it in the workload: section (as mlsysim's plan does)"),
    ("tr-unknown.yaml", PLAN + "training: {tensor_parallel: 8}\n",
     "training.tensor_parallel: unknown field; training takes "),
    ("tr-without.yaml", PLAN + "training: {without: [pipeline_p2p]}\n",
     "training.without: mechanisms can be switched off only in the extended model; add fidelity: extended"),
    ("tr-fid.yaml", PLAN + "training: {fidelity: exact}\n",
     "training.fidelity: must be one of mlsysim, extended, got 'exact'"),
    ("tr-huge.yaml", PLAN + "training: {congestion_factor: 1" + "0" * 400 + "}\n",
     "training.congestion_factor: must be a finite number >= 0, got 1000000000000000000000000000000000000..."),
    ("tr-big.yaml", PLAN + "training: {tp_size: 100000000000000000000}\n",
     "training.tp_size: must be a whole number >= 1 (at most 2**53), got 100000000000000000000"),
    ("big-batch.yaml", PLAN.replace("batch_size: 256", "batch_size: 100000000000000000000"),
     "workload.batch_size: must be a whole number >= 1 and at most 2**53"),
    ("tr-prec.yaml", PLAN + "training: {precision: fp8}\n",
     "training.precision: give it in the hardware: section (as mlsysim's plan does)"),
    ("twice.yaml", PLAN + "training: {tp_size: 8, tp_size: 4}\n", "not valid YAML: the key 'tp_size' is given twice"),
    ("twice.json", '{"version": "1", "name": "a", "name": "b"}', "not valid JSON: the key 'name' is given twice"),
    ("named.yaml", CARD_YAML.replace("name: my-13b,", "name: Llama3_70B,"),
     "workload.name: 'Llama3_70B' names a catalog workload; with an architecture: section, name the card itself"),
]


@pytest.mark.parametrize("name,text,words", BAD, ids=[b[0] for b in BAD])
def test_a_bad_file_is_one_line_naming_the_file_and_the_field(tmp_path, name, text, words):
    path = str(tmp_path / name) if text is None else _write(tmp_path, name, text)
    r = _cli("solve", "--model", path)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and not r.stdout, r.stderr
    assert lines[0].startswith(f"mlsysim-sym: error: {path}: "), lines[0]
    assert words in lines[0], lines[0]
    with pytest.raises(ValueError, match=re.escape(words)):
        DistributedModel().solve(path, "Research_256")


def test_magnitudes_read_units_and_never_evaluate():
    assert files.magnitude("400 Gb/s", "bandwidth", "x") == 50e9
    assert files.magnitude("400 Gbps", "bandwidth", "x") == 50e9
    assert files.magnitude("3.35 TB/s", "bandwidth", "x") == 3.35e12
    assert files.magnitude("80 GiB", "bytes", "x") == 80 * 2 ** 30
    assert files.magnitude("1.2 kW", "power", "x") == 1200.0
    assert files.magnitude(5e-6, "time", "x") == 5e-6
    for bad in ("__import__('os')", "2**10 GB", "1e400 B", "-5 GB"):
        with pytest.raises(ValueError, match="x: "):
            files.magnitude(bad, "bytes", "x")


def test_list_shows_both_catalogs():
    r = _cli("list", "--json")
    out = json.loads(r.stdout)
    cats = {(w["name"], w["catalog"]) for w in out["workloads"]}
    assert ("Llama3_70B", "mlsysim 0.3.0") in cats and ("modern/DeepSeek-V3", "modern") in cats
    assert ("modern/GB200-NVL72-1152", "modern") in {(f["name"], f["catalog"]) for f in out["fleets"]}
    text = _cli("list").stdout
    assert "the modern catalog" in text and "modern/Qwen3-30B-A3B" in text


def test_the_documented_python_prices_the_documented_training_section(tmp_path, monkeypatch):
    # docs/files.md's Python block, run beside its training: example saved as plan.yaml
    import re
    from pathlib import Path
    text = (Path(__file__).resolve().parents[1] / "docs" / "files.md").read_text()
    plan = next(b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "training:" in b)
    (code,) = re.findall(r"```python\n(.*?)```", text, re.S)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plan.yaml").write_text(plan)
    scope = {}
    exec(compile(code, "files.md", "exec"), scope)
    same = DistributedModel(fidelity="extended").solve(
        "Llama3_70B", "plan.yaml", batch_size=256, seq_len=16384, precision="bf16", efficiency=0.45, tp_size=8,
        pp_size=4, microbatch_count=8, cp_size=2, sequence_parallel=True, tp_comm_overlap=True,
        attention_efficiency=0.4)
    assert scope["r"].step_latency_total == same.step_latency_total


def test_the_documented_examples_read_and_price(tmp_path):
    # every YAML and TOML block of docs/files.md is a plan this package reads
    import re
    from pathlib import Path
    text = (Path(__file__).resolve().parents[1] / "docs" / "files.md").read_text()
    blocks = re.findall(r"```(yaml|toml)\n(.*?)```", text, re.S)
    assert len(blocks) == 4
    for i, (fmt, body) in enumerate(blocks):
        path = _write(tmp_path, f"doc{i}.{fmt}", body)
        doc = files.load(path)
        if doc.training:          # the training: example sets its own layout and model
            r = DistributedModel(**doc.model).solve(path, path, **doc.keywords)
            assert doc.model == {"fidelity": "extended"} and "cp 2" in r.configuration
            same = DistributedModel(fidelity="extended").solve(
                "Llama3_70B", path, batch_size=256, seq_len=16384, precision="bf16", efficiency=0.45, tp_size=8,
                pp_size=4, microbatch_count=8, cp_size=2, sequence_parallel=True, tp_comm_overlap=True,
                attention_efficiency=0.4)
            assert r.step_latency_total == same.step_latency_total
            continue
        kw = dict(doc.keywords, tp_size=8, pp_size=1 if doc.workload.kind == "sparse_transformer" else 4,
                  microbatch_count=8, ep_size=8 if doc.workload.kind == "sparse_transformer" else 1)
        r = DistributedModel(fidelity="extended").solve(path, path, **kw)
        assert r.step_latency_total > 0
    # the DeepSeek-V3-shaped card is DeepSeek-V3's: 671.03B parameters
    dsv3 = files.load(str(tmp_path / "doc2.toml")).workload
    assert dsv3.parameters == 671_026_404_352 and dsv3.architecture.attention == "mla"


def test_the_model_file_gives_the_batch_and_the_fleet_file_the_precision(tmp_path):
    card = _write(tmp_path, "card.yaml", CARD_YAML)
    other = _write(tmp_path, "fleet.yaml", PLAN.replace("batch_size: 256, seq_len: 4096", "batch_size: 64, seq_len: 1024"))
    r = _cli("solve", "--model", card, "--fleet", other, "--tp", "4", "--json")
    c = json.loads(r.stdout)["configuration"]
    # batch and sequence from the card's plan, precision and efficiency from the fleet's
    assert (c["batch_size"], c["seq_len"], c["precision"], c["efficiency"]) == (512, 8192, "bf16", 0.45)


def test_a_catalog_fleet_at_another_node_count_says_so():
    import textwrap
    from pathlib import Path
    import tempfile
    d = Path(tempfile.mkdtemp())
    p = d / "gb.yaml"
    p.write_text(textwrap.dedent("""\
        version: "1"
        name: two-racks
        workload: {name: Llama3_70B}
        hardware: {fleet: modern/GB200-NVL72-1152, node_count: 2}
        """))
    f = files.fleet(str(p))
    assert f.total_accelerators == 144 and f.name.startswith("2 nodes of GB200 NVL72") and "144 GPUs" in f.name


TRAINING = PLAN + """\
training:
  fidelity: extended
  without: pipeline_p2p, optimizer_step
  tp_size: 8
  pp_size: 4
  microbatch_count: 8
  cp_size: 2
  sequence_parallel: yes
  ep_overlap: 0
  attention_efficiency: 0.3
"""


def test_a_training_section_carries_solves_keywords_and_the_model(tmp_path):
    path = _write(tmp_path, "train.yaml", TRAINING)
    doc = files.load(path)
    # every value as its row of the parameter table reads it: YAML's yes a switch's True, 0 its False
    assert doc.keywords == {"batch_size": 256, "seq_len": 4096, "precision": "bf16", "efficiency": 0.45,
                            "tp_size": 8, "pp_size": 4, "microbatch_count": 8, "cp_size": 2,
                            "sequence_parallel": True, "ep_overlap": False, "attention_efficiency": 0.3}
    # the mechanisms off in the table's order (ModelChoice normalizes them)
    assert doc.model == {"fidelity": "extended", "without": ("optimizer_step", "pipeline_p2p")}
    assert doc.training == ("tp_size", "pp_size", "microbatch_count", "cp_size", "sequence_parallel", "ep_overlap",
                            "attention_efficiency")
    by_hand = DistributedModel(fidelity="extended", without=("pipeline_p2p", "optimizer_step")).solve(
        "Llama3_70B", path, batch_size=256, seq_len=4096, precision="bf16", efficiency=0.45, tp_size=8, pp_size=4,
        microbatch_count=8, cp_size=2, sequence_parallel=True, attention_efficiency=0.3)
    ours = DistributedModel(**doc.model).solve(path, path, **doc.keywords)
    assert ours.step_latency_total == by_hand.step_latency_total
    # the command line takes the section as its defaults: the same step
    r = _cli("solve", "--model", path, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["step_latency_total"] == pytest.approx(by_hand.step_latency_total, rel=1e-12)
    assert out["configuration"]["cp_size"] == 2 and out["configuration"]["attention_efficiency"] == 0.3
    # an option beside the file wins
    r = _cli("solve", "--model", path, "--cp", "4", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["configuration"]["cp_size"] == 4
    # mlsysim's model asked for beside a section of extended keywords: one line naming --fidelity
    r = _cli("solve", "--model", path, "--fidelity", "mlsysim")
    assert r.returncode == 2 and not r.stdout
    assert r.stderr == (f"mlsysim-sym: error: --fidelity: mlsysim's model cannot take {path}'s training.cp_size (the "
                        "extended model's); give extended\n")


def test_plan_sections_and_options_combine_as_documented(tmp_path):
    # YAML 1.1 reads 1e-1 (no dot) as a string: a number written plainly is read as one
    path = _write(tmp_path, "num.yaml", PLAN + "training: {overlap_efficiency: 5e-1}\n")
    assert files.load(path).keywords["overlap_efficiency"] == 0.5
    # --without beside a file that chooses the extended model: the file's fidelity stands
    train = _write(tmp_path, "train.yaml", TRAINING)
    r = _cli("solve", "--model", train, "--without", "context_parallel", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["configuration"]["without"] == ["context_parallel"]
    # the model's file chooses mlsysim's model, the fleet's sets an extended keyword: one line naming both files
    m = _write(tmp_path, "m.yaml", PLAN.replace("hardware:", "training: {fidelity: mlsysim}\nhardware:"))
    f = _write(tmp_path, "f.yaml", PLAN + "training: {fidelity: extended, cp_size: 2}\n")
    r = _cli("solve", "--model", m, "--fleet", f)
    assert r.returncode == 2 and not r.stdout
    assert r.stderr == (f"mlsysim-sym: error: {m}: training.fidelity: mlsysim's model cannot take {f}'s "
                        "training.cp_size (the extended model's); give extended\n")
    # a value from a file that solve() refuses: the line names the file and the field, not an option not typed
    cp3 = _write(tmp_path, "cp3.yaml", PLAN + "training: {fidelity: extended, cp_size: 3}\n")
    r = _cli("solve", "--model", cp3)
    assert r.returncode == 2
    assert r.stderr.startswith(f"mlsysim-sym: error: {cp3}: training.cp_size: Infeasible parallelism: TP(1) * PP(1) "
                               "* CP(3) must divide total accelerators (256) exactly"), r.stderr
    # typed beside the file, the option is named
    r = _cli("solve", "--model", cp3, "--tp", "1")
    assert r.returncode == 2 and r.stderr.startswith("mlsysim-sym: error: --tp/--pp/--cp: Infeasible"), r.stderr
