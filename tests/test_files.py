"""Records from files (docs/files.md): mlsysim eval's plan read as it is, the extension (architecture cards, full
hardware records) in YAML and TOML, through Python and the command line; bad files answer one line, exit 2."""
import json
import re
import subprocess
import sys
import warnings

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
    # (the plan's efficiency 0.45 is not passed, nor to the sweep: solve() says so)
    with pytest.warns(UserWarning, match=r"the file sets efficiency 0.45; this call priced efficiency 0.5"):
        one = DistributedModel().solve(path, path, batch_size=256, tp_size=8, pp_size=4, microbatch_count=8,
                                       seq_len=4096, precision="bf16")
    assert s.values["mfu"][1] == pytest.approx(one.mfu, rel=1e-12)
    best = search(path, path, 256, top_k=1, seq_len=4096, precision="bf16")
    b = best.best
    with pytest.warns(UserWarning, match=r"the file sets efficiency 0.45; this call priced efficiency 0.5"):
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
    # (6144 tokens: cp 3 splits the sequence, and the split of the 256 accelerators is what fails)
    cp3 = _write(tmp_path, "cp3.yaml", PLAN.replace("seq_len: 4096", "seq_len: 6144")
                 + "training: {fidelity: extended, cp_size: 3}\n")
    r = _cli("solve", "--model", cp3)
    assert r.returncode == 2
    assert r.stderr.startswith(f"mlsysim-sym: error: {cp3}: training.cp_size: Infeasible parallelism: TP(1) * PP(1) "
                               "* CP(3) must divide total accelerators (256) exactly"), r.stderr
    # typed beside the file, the option is named
    r = _cli("solve", "--model", cp3, "--tp", "1")
    assert r.returncode == 2 and r.stderr.startswith("mlsysim-sym: error: --tp/--pp/--cp: Infeasible"), r.stderr


# --------------------------------------------------------------------------------------------
# mlsysim's own model and hardware files named by a plan; unit spellings; numbers read as pydantic's lax mode
# --------------------------------------------------------------------------------------------
MODEL_FILE = """\
name: My-13B
architecture: Transformer
parameters: 13e9 param
inference_flops: 26e9 flop
layers: 40
hidden_dim: 5120
heads: 40
kv_heads: 8
"""

# mlsysim's own hardware layout, with its spellings ("1200 TFLOPs / s", "4.0 TB / s")
HARDWARE_FILE = """\
name: My Accelerator
release_year: 2025
compute:
  peak_flops: 1200 TFLOPs / s
  precision_flops:
    fp8: 2400 TFLOPs / s
memory:
  capacity: 96 GiB
  bandwidth: 4.0 TB / s
interconnect:
  name: PCIe Gen5 x16
  bandwidth: 64.0 GB / s
nvlink:
  name: NVLink
  direction: bidirectional_total
  bandwidth: 900.0 GB / s
tdp: 800 W
dispatch_tax: 0.01 ms
"""

PLAN_FILES = """\
version: "1"
name: my13b-on-myhw
workload: {name: mymodel.yaml, batch_size: 512, seq_len: 4096}
hardware:
  name: myhw.yaml
  node_count: 16
  accelerators_per_node: 8
  fabric_bandwidth: 50 GB/s
  precision: fp16
  efficiency: 0.45
"""


def _mlsysim_plan(text):
    """mlsysim eval's reading of a plan (its schema), in the working directory, where it opens the files named."""
    import yaml
    from mlsysim.cli.schemas import MlsysPlanSchema
    return MlsysPlanSchema.model_validate(yaml.safe_load(text))


def _files_dir(tmp_path, model=MODEL_FILE, hardware=HARDWARE_FILE, plan=PLAN_FILES):
    _write(tmp_path, "mymodel.yaml", model)
    _write(tmp_path, "myhw.yaml", hardware)
    return _write(tmp_path, "plan.yaml", plan)


def test_a_plan_names_mlsysim_model_and_hardware_files_as_mlsysim_eval_reads_them(tmp_path, monkeypatch):
    pytest.importorskip("mlsysim")
    from mlsysim_sym import catalog
    from tests.mlsysim_oracle import compare, flatten, mlsysim_solve
    path = _files_dir(tmp_path)
    monkeypatch.chdir(tmp_path)               # mlsysim eval opens the named files from the working directory
    theirs = _mlsysim_plan(PLAN_FILES)
    doc = files.load(path)
    # the records mlsysim builds, field for field (the catalog's converter of mlsysim's objects is the reference)
    assert doc.workload == catalog.from_mlsysim(theirs.model_obj)
    assert doc.fleet.node == catalog.from_mlsysim(theirs.fleet_obj).node
    assert doc.fleet.fabric == catalog.from_mlsysim(theirs.fleet_obj).fabric
    # and the values written: 13e9 parameters, 26e9 flop a token, 96 GiB, the NVLink's 900 GB/s total halved
    w, acc = doc.workload, doc.fleet.node.accelerator
    assert (w.name, w.kind, w.parameters, w.inference_flops, w.layers, w.hidden_dim) == \
        ("My-13B", "transformer", 13e9, 26e9, 40, 5120)
    assert (acc.peak_flops, acc.memory_capacity, acc.memory_bandwidth, acc.flops_for("fp8")) == \
        (1.2e15, 96 * 2 ** 30, 4e12, 2.4e15)
    assert (acc.tdp, acc.dispatch_tax, acc.pcie_bandwidth) == (800.0, 1e-5, 64e9)
    assert (doc.fleet.count, doc.fleet.node.accelerators_per_node, doc.fleet.node.intra_node_bw) == (16, 8, 450e9)
    assert doc.keywords == {"batch_size": 512, "seq_len": 4096, "precision": "fp16", "efficiency": 0.45}
    # priced as mlsysim prices the objects its schema built
    for kw in (dict(tp_size=8, pp_size=2, microbatch_count=4), dict(tp_size=4, precision="fp8", zero_stage=1)):
        kw = dict(doc.keywords, **kw)
        ours = flatten(DistributedModel().solve(path, path, **kw))
        assert compare(ours, mlsysim_solve(theirs.model_obj, theirs.fleet_obj, **kw)) == []
    # the command line reads the plan alone, from another directory (the files are found beside the plan)
    monkeypatch.chdir(tmp_path.parent)
    r = _cli("solve", "--model", path, "--tp", "8", "--pp", "2", "--microbatches", "4", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    one = DistributedModel().solve(path, path, **dict(doc.keywords, tp_size=8, pp_size=2, microbatch_count=4))
    assert out["mfu"] == pytest.approx(one.mfu, rel=1e-12) and one.mfu > 0.1


def test_a_model_file_alone_is_a_workload(tmp_path):
    pytest.importorskip("mlsysim")
    import yaml
    from mlsysim.models.types import TransformerWorkload

    from tests.mlsysim_oracle import compare, flatten, mlsysim_solve
    model = _write(tmp_path, "mymodel.yaml", MODEL_FILE)
    doc = files.load(model)
    assert doc.kind == "model" and doc.fleet is None and doc.keywords == {} and doc.workload.parameters == 13e9
    theirs = TransformerWorkload(**yaml.safe_load(MODEL_FILE))      # what mlsysim eval mymodel.yaml H100 builds
    kw = dict(batch_size=256, tp_size=8, pp_size=2, microbatch_count=4)
    ours = flatten(DistributedModel().solve(model, "Research_256", **kw))
    assert compare(ours, mlsysim_solve(theirs, "Research_256", **kw)) == []
    r = _cli("solve", "--model", model, "--fleet", "Research_256", "--tp", "8", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["mfu"] == pytest.approx(
        DistributedModel().solve(model, "Research_256", batch_size=256, tp_size=8).mfu, rel=1e-12)
    # a model file is no fleet, a hardware file alone no fleet either (one accelerator): one line each
    with pytest.raises(files.FileError, match=r"mymodel.yaml: a model file in mlsysim's own layout has no fleet"):
        DistributedModel().solve("Llama3_8B", model)
    hw = _write(tmp_path, "myhw.yaml", HARDWARE_FILE)
    with pytest.raises(files.FileError, match=r"myhw.yaml: a hardware file in mlsysim's own layout describes one "
                                              r"accelerator, not a fleet: name it in a plan's hardware.name"):
        DistributedModel().solve("Llama3_8B", hw)
    # mlsysim reads a model file from YAML only
    toml = _write(tmp_path, "mymodel.toml", 'name = "x"\narchitecture = "Transformer"\nparameters = "1e9 param"\n'
                                            'layers = 4\n')
    with pytest.raises(files.FileError, match=r"mymodel.toml: a model file in mlsysim's own layout is YAML"):
        files.load(toml)


# each: (the file changed, the text replaced, its replacement, our message; None: both read it, to equal values)
OWN_FILE_CASES = [
    ("mymodel.yaml", "layers: 40", "layers: 40.5", "workload.name: {d}/mymodel.yaml: layers: must be a whole number "
                                                   ">= 1 and at most 2**53, got 40.5"),
    ("mymodel.yaml", "layers: 40\n", "", "layers: missing (mlsysim's TransformerWorkload requires name, architecture, "
                                         "parameters, layers)"),
    ("mymodel.yaml", "kv_heads: 8", "experts: 8", "experts: unknown field; mlsysim's TransformerWorkload has name, "
                                                  "architecture, metadata, parameters"),
    ("mymodel.yaml", "13e9 param", "13e9", "parameters: expected a count such as '13e9 param' or '13 Bparam', got "
                                           "'13e9': mlsysim needs the unit here"),
    ("mymodel.yaml", "13e9 param", "13 GB", "parameters: expected a count such as '13e9 param'"),
    ("mymodel.yaml", "architecture: Transformer\n", "", "architecture: missing (mlsysim picks the model's class"),
    # a CNN has no hidden_dim (the first field of the file that it lacks)
    ("mymodel.yaml", "architecture: Transformer", "architecture: CNN", "hidden_dim: unknown field; mlsysim's "
                                                                       "CNNWorkload has"),
    ("mymodel.yaml", "heads: 40", "heads: many", "heads: must be a whole number, got 'many'"),
    ("myhw.yaml", "1200 TFLOPs / s\n  precision", "1200 TFLOPS\n  precision",
     "hardware.name: {d}/myhw.yaml: compute.peak_flops: expected a rate such as '989.5 TFLOP/s', '1200 TFLOPs / s' "
     "or '1979 TOPS', got '1200 TFLOPS': mlsysim reads its files' units with pint, which does not read 'TFLOPS'"),
    ("myhw.yaml", "4.0 TB / s", "32 Tb/s", "memory.bandwidth: expected a bandwidth such as"),
    ("myhw.yaml", "4.0 TB / s", "4.0 TFLOP/s", "memory.bandwidth: expected a bandwidth such as"),
    ("myhw.yaml", "release_year: 2025\n", "", "release_year: missing (mlsysim's HardwareNode requires name, "
                                              "release_year, compute, memory)"),
    ("myhw.yaml", "  bandwidth: 4.0 TB / s\n", "", "memory.bandwidth: missing (mlsysim's MemoryHierarchy requires "
                                                   "capacity, bandwidth)"),
    ("myhw.yaml", "bidirectional_total", "both", "nvlink.direction: must be one of per_direction, "
                                                 "bidirectional_total, got 'both'"),
    ("myhw.yaml", "tdp: 800 W", "tdp: 800 K", "tdp: expected a power such as '700 W'"),
    ("myhw.yaml", "dispatch_tax: 0.01 ms", "dispatch_tax: 1e-5", "dispatch_tax: expected a time such as '5 us', "
                                                                 "'500 ns', '0.01 ms' or '5 microsecond', got '1e-5'"),
    ("myhw.yaml", "tdp: 800 W", "tdp: 800 W\ncolour: red", "colour: unknown field; mlsysim's HardwareNode has"),
    ("myhw.yaml", "  name: NVLink\n", "", "nvlink.name: missing (mlsysim's IOInterconnect requires name, "
                                          "bandwidth)"),
    # read by both, to the same records
    ("mymodel.yaml", "layers: 40", "layers: '40'", None),
    ("mymodel.yaml", "layers: 40", "layers: 40.0", None),
    ("mymodel.yaml", "13e9 param", "13 Bparam", None),
    ("mymodel.yaml", "26e9 flop", "26 GFLOPs", None),
    ("myhw.yaml", "1200 TFLOPs / s\n  precision", "1979 TOPS\n  precision", None),
    ("myhw.yaml", "96 GiB", "96 gibibyte", None),
    ("myhw.yaml", "4.0 TB / s", "4 terabyte / second", None),
    ("myhw.yaml", "800 W", "800 watt", None),
    ("myhw.yaml", "800 W", "800 J/s", None),
    ("myhw.yaml", "0.01 ms", "10 \u03bcs", None),           # Greek mu
    ("myhw.yaml", "0.01 ms", "10 \u00b5s", None),           # the micro sign
    ("myhw.yaml", "0.01 ms", "5 microsecond", None),
    ("myhw.yaml", "release_year: 2025", "release_year: 2025\naccelerator_count: 4", None),
    ("myhw.yaml", "direction: bidirectional_total", "direction: per_direction", None),
]


@pytest.mark.parametrize("which,old,new,words", OWN_FILE_CASES,
                         ids=[f"{c[0]}:{c[2].splitlines()[0] if c[2] else 'no ' + c[1].split(':')[0].strip()}"
                              for c in OWN_FILE_CASES])
def test_model_and_hardware_files_refuse_what_mlsysim_refuses(tmp_path, monkeypatch, which, old, new, words):
    pytest.importorskip("mlsysim")
    from mlsysim_sym import catalog
    model, hardware = MODEL_FILE, HARDWARE_FILE
    if which == "mymodel.yaml":
        assert old in model
        model = model.replace(old, new)
    else:
        assert old in hardware
        hardware = hardware.replace(old, new)
    path = _files_dir(tmp_path, model, hardware)
    monkeypatch.chdir(tmp_path)
    if words is None:
        theirs = _mlsysim_plan(PLAN_FILES)
        doc = files.load(path)
        assert doc.workload == catalog.from_mlsysim(theirs.model_obj)
        assert doc.fleet.node == catalog.from_mlsysim(theirs.fleet_obj).node
        return
    with pytest.raises(Exception):            # mlsysim refuses it too
        _mlsysim_plan(PLAN_FILES)
    with pytest.raises(files.FileError) as e:
        files.load(path)
    line = str(e.value)
    assert "\n" not in line and line.startswith(f"{path}: {'workload' if which == 'mymodel.yaml' else 'hardware'}"
                                                f".name: {tmp_path}/{which}: "), line
    assert words.format(d=tmp_path) in line, line


def test_where_a_referenced_file_is_found(tmp_path, monkeypatch):
    sub = tmp_path / "sub"
    sub.mkdir()
    plan = _files_dir(sub)
    # beside the plan, from any working directory
    monkeypatch.chdir(tmp_path)
    assert files.load("sub/plan.yaml").workload.name == "My-13B"
    assert [s[:2] for s in files.load("sub/plan.yaml").sources] == [("mymodel.yaml", "sub/mymodel.yaml"),
                                                                    ("myhw.yaml", "sub/myhw.yaml")]
    # from the working directory, as mlsysim eval opens it
    other = tmp_path / "other"
    other.mkdir()
    cwd_plan = _write(other, "plan.yaml", PLAN_FILES.replace("name: my", "name: sub/my"))
    assert files.load(cwd_plan).fleet.node.accelerator.name == "My Accelerator"
    # two different files of that name: refused, naming both
    _write(tmp_path, "mymodel.yaml", MODEL_FILE.replace("My-13B", "Another"))
    with pytest.raises(files.FileError, match=r"sub/plan.yaml: workload.name: 'mymodel.yaml' names two files: "
                                              r"sub/mymodel.yaml beside the plan and .*/mymodel.yaml in the working "
                                              r"directory \(where mlsysim eval looks\)"):
        files.load("sub/plan.yaml")
    (tmp_path / "mymodel.yaml").unlink()
    # a referenced file edited since: read again (the plan itself unchanged)
    assert files.load(plan).workload.layers == 40
    (sub / "mymodel.yaml").write_text(MODEL_FILE.replace("layers: 40", "layers: 48"))
    assert files.load(plan).workload.layers == 48
    # none
    monkeypatch.chdir(other)
    with pytest.raises(files.FileError, match=r"plan.yaml: workload.name: no file 'sub/mymodel.yaml' beside the plan "
                                              r"\(.*other/sub/mymodel.yaml\) or in the working directory"):
        files.load(cwd_plan)
    # a name mlsysim does not read as a file, and a card beside a model file
    bad = _write(tmp_path, "toml.yaml", PLAN_FILES.replace("name: mymodel.yaml", "name: mymodel.toml"))
    with pytest.raises(files.FileError, match=r"unknown workload 'mymodel.toml'.*; mlsysim reads a file here only "
                                              r"from a name ending in .yaml or .yml"):
        files.load(bad)
    both = _write(tmp_path, "both.yaml", PLAN_FILES + "architecture: {layers: 2, hidden: 64, heads: 2, vocab: 100}\n")
    with pytest.raises(files.FileError, match=r"workload.name: 'mymodel.yaml' names a model file; with an "
                                              r"architecture: section, name the card itself"):
        files.load(both)


def test_unit_spellings_are_pints_with_pints_values():
    pytest.importorskip("mlsysim")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from mlsysim.core.types import require_unit_family
        from mlsysim.core.units import Q_, ureg
    si = {"B": ureg.byte, "flop": ureg.flop, "s": ureg.second, "W": ureg.watt, "count": ureg.count}
    families = {(1, 0, -1, 0, 0): (ureg.byte / ureg.second, "data"), (1, 0, 0, 0, 0): (ureg.byte, "data"),
                (0, 1, -1, 0, 0): (ureg.flop / ureg.second, "operation"), (0, 1, 0, 0, 0): (ureg.flop, "operation"),
                (0, 0, 0, 0, 1): (ureg.count, "count")}
    assert files._BASES == tuple(si)
    for name, (factor, dim) in files.PINT_UNITS.items():
        unit = 1
        for base, e in zip(files._BASES, dim):
            unit = unit * si[base] ** e
        # every spelling read as mlsysim's pint reads it: the same value, and a unit of the family mlsysim asks for
        assert Q_(f"1 {name}").m_as(unit) == pytest.approx(float(factor), rel=1e-15), name
        if dim in families:
            require_unit_family(f"1 {name}", *families[dim][:1], "f", families[dim][1])
    # the spellings mlsysim's own files use, as exact SI values
    m = files.magnitude
    assert m("50 GB / s", "bandwidth", "x") == 50e9 and m("3.35 TB / s", "bandwidth", "x") == 3.35e12
    assert m("50 GiB/s", "bandwidth", "x") == 50 * 2 ** 30 and m("50 gigabyte/second", "bandwidth", "x") == 50e9
    assert m("400 Gbit/s", "bandwidth", "x") == m("400 Gbps", "bandwidth", "x") == 50e9
    assert m("1200 TFLOPs / s", "rate", "x") == 1.2e15 and m("1 teraflop/s", "rate", "x") == 1e12
    assert m("800 watt", "power", "x") == 800.0 and m("1.2 kilowatt", "power", "x") == 1200.0
    assert m("10 \u03bcs", "time", "x") == m("10 \u00b5s", "time", "x") == m("10 us", "time", "x") == 1e-5
    assert m("5 microsecond", "time", "x") == 5e-6 and m("0.01 ms", "time", "x") == 1e-5
    assert m("80 gibibyte", "bytes", "x") == 80 * 2 ** 30 and m("1 PiB", "bytes", "x") == 2 ** 50
    # TOPS is mlsysim's 1e12 flop/s (its OPS is flop/s): 1979 TOPS is 1.979e15 flop/s, as pint reads it
    assert m("1979 TOPS", "rate", "x") == Q_("1979 TOPS").m_as("flop/s") == 1.979e15
    with pytest.raises(files.FileError, match="x: expected a rate"):
        m("1979 TOPS/s", "rate", "x")                          # flop/s²
    # beside pint's spellings a plan reads a few more (same values); a file of mlsysim's own layout does not
    assert m("400 Gb/s", "bandwidth", "x") == m("50 Bps", "bandwidth", "x") * 1e9 == 50e9
    assert m("2.25 PFLOPS", "rate", "x") == m("2250 TFLOPs", "rate", "x") == 2.25e15
    for text, kind in (("400 Gb/s", "bandwidth"), ("2.25 PFLOPS", "rate"), ("989.5 FLOP/s", "rate")):
        with pytest.raises(files.FileError, match="mlsysim reads its files' units with pint, which does not read"):
            m(text, kind, "x", strict=True)
    with pytest.raises(files.FileError, match="mlsysim needs the unit here"):
        m(50e9, "bandwidth", "x", strict=True)
    for bad in ("__import__('os')", "1e400 B/s", "-5 GB/s", "50 GB//s", "50 GB s", "50 kelvin/s", "50 GB/s/s"):
        with pytest.raises(files.FileError, match="x: "):
            m(bad, "bandwidth", "x")


@pytest.mark.parametrize("fb", ["50 GB / s", "50 GiB/s", "50 gigabyte/second", "400 Gbit/s", "3.35 TB / s"])
def test_a_plans_fabric_bandwidth_as_mlsysim_eval_reads_it(tmp_path, fb):
    pytest.importorskip("mlsysim")
    from mlsysim_sym import catalog
    text = PLAN.replace("fabric_bandwidth: 50 GB/s", f"fabric_bandwidth: {fb}")
    theirs = catalog.from_mlsysim(_mlsysim_plan(text).fleet_obj).fabric
    assert files.load(_write(tmp_path, "fb.yaml", text)).fleet.fabric == theirs


# (the section, the field, the value written, what mlsysim's schema reads, our keyword or fleet value)
LAX = [("workload", "batch_size", "256.0", 256), ("workload", "batch_size", "'256'", 256),
       ("workload", "batch_size", "' 1_024 '", 1024), ("workload", "seq_len", "4096.0", 4096),
       ("hardware", "node_count", "'32'", 32), ("hardware", "accelerators_per_node", "8.0", 8),
       ("hardware", "efficiency", "'0.45'", 0.45), ("hardware", "efficiency", "'4.5e-1'", 0.45)]


@pytest.mark.parametrize("section,key,text,value", LAX, ids=[f"{c[1]}={c[2]}" for c in LAX])
def test_plan_numbers_read_as_mlsysims_schema_reads_them(tmp_path, section, key, text, value):
    pytest.importorskip("mlsysim")
    plan = re.sub(rf"({key}: )[^,}}\n]+", lambda mt: mt.group(1) + text, PLAN, count=1)
    assert f"{key}: {text}" in plan
    theirs = _mlsysim_plan(plan)
    assert getattr(getattr(theirs, section), key) == value              # mlsysim's schema reads it so
    doc = files.load(_write(tmp_path, "lax.yaml", plan))
    ours = doc.keywords.get(key) if key in doc.keywords else \
        {"node_count": doc.fleet.count, "accelerators_per_node": doc.fleet.node.accelerators_per_node}[key]
    assert ours == value and type(ours) is type(value)


LAX_BAD = [("batch_size: 256", "batch_size: 256.5", "workload.batch_size: must be a whole number >= 1 and at most "
                                                    "2**53, got 256.5"),
           ("batch_size: 256", "batch_size: abc", "workload.batch_size: must be a whole number >= 1 and at most "
                                                  "2**53, got 'abc'"),
           ("batch_size: 256", "batch_size: '2.56e2'", "workload.batch_size: must be a whole number >= 1"),
           ("batch_size: 256", "batch_size: true", "workload.batch_size: must be a whole number >= 1 and at most "
                                                   "2**53, got True"),
           ("node_count: 32", "node_count: '32.5'", "hardware.node_count: must be a whole number >= 1"),
           ("efficiency: 0.45", "efficiency: .nan", "hardware.efficiency: must be a number in (0, 1], got nan"),
           ("efficiency: 0.45", "efficiency: '.inf'", "hardware.efficiency: must be a number in (0, 1], got '.inf'"),
           ("efficiency: 0.45", "efficiency: abc", "hardware.efficiency: must be a number in (0, 1], got 'abc'"),
           ("efficiency: 0.45", "efficiency: yes", "hardware.efficiency: must be a number in (0, 1], got True"),
           ("duration_days: 30", "duration_days: '-3'", "ops.duration_days: must be a number > 0, got '-3'")]


@pytest.mark.parametrize("old,new,words", LAX_BAD, ids=[c[1] for c in LAX_BAD])
def test_plan_numbers_refused_as_before(tmp_path, old, new, words):
    # booleans are refused although pydantic's lax mode reads True as 1; the rest mlsysim's schema refuses too
    path = _write(tmp_path, "bad.yaml", PLAN.replace(old, new))
    with pytest.raises(files.FileError, match=re.escape(f"{path}: {words}")):
        files.load(path)


def test_training_counts_read_as_the_workload_section_reads_them(tmp_path):
    path = _write(tmp_path, "tr.yaml", PLAN + "training: {tp_size: '8', pp_size: 4.0, overlap_efficiency: '0.5'}\n")
    kw = files.load(path).keywords
    assert (kw["tp_size"], kw["pp_size"], kw["overlap_efficiency"]) == (8, 4, 0.5)
    assert type(kw["tp_size"]) is int and type(kw["pp_size"]) is int


def test_the_own_layout_tables_are_mlsysims():
    pytest.importorskip("mlsysim")
    import typing

    from mlsysim.hardware import types as ht
    from mlsysim.models import types as mt

    def check(spec, cls):
        fields_, required, name = spec
        assert name == cls.__name__
        assert list(fields_) == list(cls.model_fields), name
        assert set(required) == {k for k, f in cls.model_fields.items() if f.is_required()}, name
        for k, how in fields_.items():
            ann = cls.model_fields[k].annotation
            base = [a for a in typing.get_args(ann) if a is not type(None)] or [ann]
            if how in ("int", "whole"):
                assert base == [int], (name, k)
            elif how == "real":
                assert base == [float], (name, k)
            elif how == "str":
                assert base == [str], (name, k)
            elif isinstance(how, tuple):
                check(how, base[0])
            elif isinstance(how, list):
                check(how[0], typing.get_args(base[0])[0])
    for _, cls, _, fields_, required in files._OWN_WORKLOADS:
        check((fields_, required, cls), getattr(mt, cls))
    check(files._OWN_HARDWARE, ht.HardwareNode)


def test_the_documented_mlsysim_files_read_and_price(tmp_path, monkeypatch):
    # docs/files.md's model file, hardware file and the plan naming them (its yml blocks), read as mlsysim reads them
    pytest.importorskip("mlsysim")
    from pathlib import Path

    from mlsysim_sym import catalog
    text = (Path(__file__).resolve().parents[1] / "docs" / "files.md").read_text()
    model, hw, plan = re.findall(r"```yml\n(.*?)```", text, re.S)
    assert model.startswith("# mymodel.yaml") and hw.startswith("# myhw.yaml")
    path = _files_dir(tmp_path, model, hw, plan)
    monkeypatch.chdir(tmp_path)
    theirs = _mlsysim_plan(plan)
    doc = files.load(path)
    assert doc.workload == catalog.from_mlsysim(theirs.model_obj)
    assert doc.fleet.node == catalog.from_mlsysim(theirs.fleet_obj).node
    r = DistributedModel().solve(path, path, **doc.keywords, tp_size=8, pp_size=2, microbatch_count=4)
    assert 0.1 < r.mfu < 0.7


def test_a_plain_model_file_without_parameters_is_refused_by_name(tmp_path):
    # mlsysim reads a plain Workload with no parameters, but no step can be priced from it: it was an
    # "internal error" (NotImplementedError from the lowering)
    path = _write(tmp_path, "m_plain.yaml", "name: P\narchitecture: MLP\n")
    with pytest.raises(files.FileError) as e:
        files.load(path)
    assert str(e.value) == (f"{path}: parameters: missing (mlsysim's Workload reads the file without it, but the "
                            "step's weights, gradients and FLOPs are priced from the parameters)")


def test_a_bare_number_too_small_for_its_kind_is_read_in_si_units_with_a_warning(tmp_path):
    # a planner wrote fabric_bandwidth: 800 meaning 800 GB/s: it is 800 B/s (a step of 3.3e7 s, MFU 0.0000);
    # the file is read as written, and a warning says how it was read and how to write what was likely meant
    path = _write(tmp_path, "plan.yaml", PLAN.replace("fabric_bandwidth: 50 GB/s", "fabric_bandwidth: 800"))
    files._load.cache_clear()
    with pytest.warns(UserWarning, match=r"hardware\.fabric_bandwidth: the bare number 800 is read in SI units, "
                                         r"800 B/s; write the unit meant, such as '800 GB/s' or '800 Gb/s'"):
        doc = files.load(path)
    assert doc.fleet.fabric.bandwidth == 800.0
    # in SI units, a bare 50e9 is a bandwidth any fabric has: no warning
    ok = _write(tmp_path, "ok.yaml", PLAN.replace("fabric_bandwidth: 50 GB/s", "fabric_bandwidth: 50.0e9"))
    assert files.load(ok).fleet.fabric.bandwidth == 50e9
    p = _cli("solve", "--model", path)
    assert p.returncode == 0 and p.stderr.strip().splitlines() == [
        f"mlsysim-sym: warning: {path}: hardware.fabric_bandwidth: the bare number 800 is read in SI units, 800 B/s; "
        "write the unit meant, such as '800 GB/s' or '800 Gb/s'"]


def test_a_card_written_at_the_top_level_is_pointed_to_its_section(tmp_path):
    # a new user's card without its section read as an mlsysim model file: "architecture: missing (mlsysim picks the
    # model's class by it ...)", which did not say where the fields go
    path = _write(tmp_path, "card.yaml", "name: moe200\nlayers: 48\nhidden: 6144\nheads: 48\nffn: 16384\n"
                                         "vocab: 131072\nexperts: 64\ntop_k: 6\n")
    with pytest.raises(files.FileError, match=r"card.yaml: hidden, vocab, ffn, experts, top_k: fields of an "
                                              r"architecture card, which go under an architecture: section "
                                              r"\(docs/files.md\), not at the file's top level$"):
        files.load(path)
    # under its section it is a plan of that workload
    path = _write(tmp_path, "plan.yaml", "architecture:\n  name: moe200\n  layers: 48\n  hidden: 6144\n  heads: 48\n"
                                         "  ffn: 16384\n  vocab: 131072\n")
    assert files.load(path).workload.layers == 48


def test_solve_of_a_plan_file_says_which_of_its_settings_it_did_not_take(tmp_path):
    # solve(path, path) prices the file's workload and fleet at solve()'s defaults (batch 1, seq 2048, fp16, 0.5):
    # a user read a batch-1 step as the plan's, with no word that its settings were left out
    path = _write(tmp_path, "plan.yaml", PLAN)
    # (batch_size 32 is given on purpose: not named)
    with pytest.warns(UserWarning, match=r"plan.yaml: the file sets seq_len 4096, precision 'bf16', efficiency "
                                         r"0.45; this call priced seq_len 2048, precision 'fp16', efficiency 0.5 "
                                         r".*DistributedModel\(\*\*doc\.model\)\.solve\(path, path, "
                                         r"\*\*doc\.keywords\) prices them$"):
        DistributedModel().solve(path, path, batch_size=32, tp_size=8)     # 32 replicas of one sample
    with pytest.warns(UserWarning, match=r"DistributedModel\(\*\*doc\.model\)\.solve\(path, fleet, "):
        DistributedModel().solve(path, "Research_256", batch_size=32, tp_size=8)      # another fleet: named so
    doc = files.load(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = DistributedModel(**doc.model).solve(path, path, **doc.keywords)
    assert r.configuration == ("Llama-3.1-70B on H100 Fleet (256 accelerators): batch 256, efficiency 0.45, seq 4096, "
                               "bf16")


def test_a_plans_hardware_settings_left_beside_another_fleet_are_named(tmp_path):
    # --model plan.yaml --fleet Research_256: the plan's hardware: section (bf16, efficiency 0.45) goes with its own
    # fleet and was dropped without a word; an option given for one of them is not named
    path = _write(tmp_path, "plan.yaml", PLAN)
    p = _cli("solve", "--model", path, "--fleet", "Research_256", "--tp", "8")
    assert p.returncode == 0 and p.stderr.splitlines() == [
        f"mlsysim-sym: warning: {path}: hardware: precision bf16, efficiency 0.45 go with the file's own fleet, not "
        "read beside --fleet Research_256 (give --precision --efficiency)"]
    assert "batch 256" in p.stdout and "seq 4096" in p.stdout      # the workload: section's, read
    p = _cli("solve", "--model", path, "--fleet", "Research_256", "--tp", "8", "--precision", "bf16")
    assert p.stderr.splitlines() == [f"mlsysim-sym: warning: {path}: hardware: efficiency 0.45 goes with the file's "
                                     "own fleet, not read beside --fleet Research_256 (give --efficiency)"]
    assert _cli("solve", "--model", path, "--tp", "8").stderr == ""
    # the plan's own catalog fleet named again: its settings go with it, read
    own = _write(tmp_path, "own.yaml", 'version: "1"\nworkload: {name: Llama3_70B, batch_size: 256}\n'
                 "hardware: {fleet: Research_256, precision: bf16, efficiency: 0.45}\n")
    p = _cli("solve", "--model", own, "--fleet", "Research_256", "--tp", "8")
    assert p.stderr == "" and "efficiency 0.45, tp 8, bf16" in " ".join(p.stdout.split())


def test_a_catalog_fleet_in_a_plan_takes_the_accelerators_of_a_node(tmp_path):
    # the model's note says to set accelerators_per_node to one an expert group of 32 divides (64 of a GB200 NVL72's
    # 72); the plan refused it beside hardware.fleet. 8 racks of 64 GPUs: 512, on the rack's GPU and NVLink
    path = _write(tmp_path, "plan.yaml", 'version: "1"\nworkload: {name: modern/DeepSeek-V3, batch_size: 4608, '
                  "seq_len: 4096}\nhardware: {fleet: modern/GB200-NVL72-1152, node_count: 8, "
                  "accelerators_per_node: 64, precision: fp8}\n")
    f = files.load(path).fleet
    from mlsysim_sym import modern
    rack = modern.fleet("modern/GB200-NVL72-1152").node
    assert (f.count, f.node.accelerators_per_node, f.total_accelerators) == (8, 64, 512)
    assert (f.node.accelerator, f.node.intra_node_bw) == (rack.accelerator, rack.intra_node_bw)
    bad = _write(tmp_path, "bad.yaml", 'version: "1"\nworkload: {name: Llama3_8B}\nhardware: {fleet: Research_256, '
                 "intra_node_bw: 900 GB/s}\n")
    with pytest.raises(files.FileError, match=r"hardware.intra_node_bw: a catalog fleet takes only node_count and "
                                              r"accelerators_per_node beside it"):
        files.load(bad)


def test_what_an_engineers_trial_found_a_plan_file_left_unsaid(tmp_path):
    # a plan without batch_size prices mlsysim's plan default, batch 1 (WorkloadConfig.batch_size), on the command
    # line as solve(path, path, **files.load(path).keywords) and mlsysim eval do: the command line priced 256
    plain = _write(tmp_path, "plain.yaml", 'version: "1"\nname: x\nworkload: {name: Llama3_8B}\n'
                                           "hardware: {name: H100, node_count: 2, accelerators_per_node: 8}\n")
    p = _cli("solve", "--model", plain, "--json")
    assert p.returncode == 0, p.stderr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = DistributedModel().solve(plain, plain, **files.load(plain).keywords)
    assert json.loads(p.stdout)["step_latency_total"] == r.step_latency_total and r.effective_throughput * \
        r.step_latency_total == pytest.approx(16)       # batch 1: max(1, 1 // 16) = 1 sample on each of 16 replicas
    # a plan with no hardware and no --fleet: refused (mlsysim eval refuses it), not priced on Research_256
    p = _cli("solve", "--model", _write(tmp_path, "nohw.yaml", 'version: "1"\nname: x\n'
                                                             "workload: {name: Llama3_70B}\n"))
    assert p.returncode == 2 and p.stderr.strip().endswith(
        "nohw.yaml: the plan has no hardware: section and no --fleet is given (mlsysim's plan requires one; give "
        "a hardware: section or --fleet)")
    # empty values mlsysim's schema refuses: a section ("hardware:" alone), the batch; a version that is no string
    for name, text, said in [
            ("hwnull.yaml", 'version: "1"\nname: x\nworkload: {name: Llama3_70B}\nhardware:\n',
             "hwnull.yaml: hardware: empty; give its fields (name, accelerators, node_count, ...) or leave the "
             "section out"),
            ("bsnull.yaml", 'version: "1"\nname: x\nworkload: {name: Llama3_70B, batch_size: null}\n'
                            "hardware: {name: H100}\n",
             "bsnull.yaml: workload.batch_size: empty; give a whole number >= 1 or leave the field out (its default)"),
            ("vernum.yaml", 'version: 1\nname: x\nworkload: {name: Llama3_70B}\nhardware: {name: H100}\n',
             "vernum.yaml: version: must be a string, as in mlsysim's plan (version: \"1\", name: my-run), got 1")]:
        path = _write(tmp_path, name, text)
        with pytest.raises(files.FileError) as e:
            files.load(path)
        assert str(e.value) == path.rsplit("/", 1)[0] + "/" + said
        p = _cli("solve", "--model", path)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and said in p.stderr
    # one accelerator is one, not "1 accelerators"
    one = _write(tmp_path, "one.yaml", 'version: "1"\nname: x\nworkload: {name: GPT2}\nhardware: {name: H100}\n')
    assert files.load(one).fleet.name == "H100 Fleet (1 accelerator)"
    # a rack-scale fleet resized counts racks, as plan and search count them (it said "resized to 4 nodes")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = DistributedModel().solve("Llama3_70B", "modern/GB200-NVL72-1152", count=4, batch_size=288, tp_size=8)
    assert r.configuration.startswith("Llama-3.1-70B on 16 GB200 NVL72 racks on 400G InfiniBand (1152 GB200), "
                                      "resized to 4 racks (288 accelerators)")


def test_a_model_file_in_mlsysims_layout_carries_its_key_value_heads(tmp_path):
    # heads 64 and kv_heads 8 in mlsysim's own model layout: read as from_mlsysim reads mlsysim's TransformerWorkload
    # (and the bundled registry its records): 8 key/value heads of 8192 / 64 = 128 are 0.125 of the hidden size, the
    # width the modern catalog's card of the same shape exchanges; no note. The same file without heads exchanges
    # every head's keys and values, and says so
    text = ("name: My-70B\narchitecture: Transformer\nparameters: 70.6e9 param\ninference_flops: 141.2e9 flop\n"
            "layers: 80\nhidden_dim: 8192\n")
    model = _write(tmp_path, "my70b.yaml", text + "heads: 64\nkv_heads: 8\n")
    bare = _write(tmp_path, "bare.yaml", text)
    w = files.workload(model)
    assert (w.kv_fraction, w.attention_heads, w.kv_heads) == (0.125, 64, 8)
    assert files.workload(bare).kv_fraction is None
    kw = dict(batch_size=1024, tp_size=8, pp_size=4, cp_size=2, microbatch_count=16, seq_len=8192)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        read = DistributedModel(fidelity="extended").solve(model, "modern/H200-1024", **kw)
        given = DistributedModel(fidelity="extended").solve(bare, "modern/H200-1024", kv_fraction=0.125, **kw)
        whole = DistributedModel(fidelity="extended").solve(bare, "modern/H200-1024", **kw)
        card = DistributedModel(fidelity="extended").solve("modern/Llama-3.1-70B", "modern/H200-1024", **kw)
    assert read._model_notes() == [] and read.step_latency_total == given.step_latency_total
    assert whole._model_notes()[0].startswith("cp_size 2: My-70B lists no attention heads, so kv_fraction is 1")
    assert read.extended["cp_communication_latency"] == pytest.approx(
        whole.extended["cp_communication_latency"] * 0.125, rel=0.05)
    assert read.extended["cp_communication_latency"] == pytest.approx(card.extended["cp_communication_latency"],
                                                                      rel=0.01)
    # mlsysim's conventions: head_dim overrides hidden_dim / heads (1 key/value head of 256 of 8192)
    palm = _write(tmp_path, "palm.yaml", text + "heads: 64\nkv_heads: 1\nhead_dim: 256\n")
    assert files.workload(palm).kv_fraction == 256 / 8192
    # what mlsysim reads but gives no width: no head (0), more heads than hidden units (a width of 8192 // 9000 = 0),
    # latent attention (kv_lora_rank: its keys and values are no H_KV d_head): no heads carried
    for name, extra in (("zero", "heads: 0\n"), ("wide", "heads: 9000\n"), ("mla", "heads: 64\nkv_lora_rank: 512\n")):
        w = files.workload(_write(tmp_path, f"{name}.yaml", text + extra))
        assert (w.kv_fraction, w.attention_heads, w.kv_heads) == (None, None, None), name
    # key/value heads that do not divide the heads: read as mlsysim reads them (its model prices the file), refused
    # by name by the extended model, which reads them
    odd = _write(tmp_path, "odd.yaml", text + "heads: 64\nkv_heads: 7\n")
    assert files.workload(odd).kv_heads == 7
    DistributedModel().solve(odd, "Research_256", batch_size=256, tp_size=8, pp_size=4)
    with pytest.raises(ValueError, match=r"kv_heads \(7\) must divide the attention heads of each layer \(64\)"):
        DistributedModel(fidelity="extended").solve(odd, "Research_256", batch_size=256, tp_size=8, pp_size=4)
