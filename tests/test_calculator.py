"""The calculator's module, ``docs/calculator/mlsysim_sym.mjs``, under node: its ``solve`` is the Python
``solve`` on random configurations of every variant of the catalog (numbers to 1e-12 relative, the same
errors and messages, the same warnings), and the committed module is a fresh generation."""
import json
import math
from dataclasses import replace
import random
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from derivations import web
from mlsysim_sym import DistributedModel, catalog, modern
from mlsysim_sym.inputs import PRECISION_BYTES, as_fleet, as_workload, static_values
from mlsysim_sym.outputs import OUTPUTS

ROOT = Path(__file__).resolve().parents[1]
MODULE = ROOT / "docs" / "calculator" / "mlsysim_sym.mjs"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="needs node (.ci/run installs it)")
#: Random configurations compared (about a third break a check: errors are compared too).
RANDOM_CONFIGURATIONS = 2500



def _node(configs):
    """Every configuration through the module under node: {"result"} or {"error", "type"}."""
    script = f"""
import {{ solve }} from {json.dumps(MODULE.as_uri())};
let text = "";
process.stdin.on("data", (d) => {{ text += d; }});
process.stdin.on("end", () => {{
  const out = JSON.parse(text).map(([m, f, kw]) => {{
    try {{ return {{ result: solve(m, f, kw) }}; }}
    catch (e) {{ return {{ type: e.type || e.name, error: e.message }}; }}
  }});
  process.stdout.write(JSON.stringify(out));
}});
"""
    p = subprocess.run([NODE, "--input-type=module", "-e", script], input=json.dumps(configs), capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def _python(model, fleet, kw):
    kw = dict(kw)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            r = DistributedModel(fidelity=kw.pop("fidelity", "mlsysim")).solve(model, fleet, **kw)
        except Exception as e:      # noqa: BLE001 - every error is compared with the module's
            return {"type": type(e).__name__, "error": str(e)}
    return {"result": r, "warnings": [str(c.message) for c in caught]}


def _random_configuration(rng: random.Random):
    model = rng.choice(catalog.workload_names())
    fleet = rng.choice(catalog.fleet_names())
    n = catalog.fleet(fleet).total_accelerators
    divisors = [d for d in (1, 2, 3, 4, 5, 8, 16, 32, 64) if n % d == 0]
    kw = {"batch_size": rng.choice([1, 7, 64, 256, 1000, 4096, 65536]),
          "tp_size": rng.choice(divisors + [rng.randint(0, 12)]),
          "pp_size": rng.choice(divisors[:4] + [rng.randint(1, 9)]),
          "ep_size": rng.choice([1, 1, 2, 8]),
          "microbatch_count": rng.choice([1, 4, 8, 32]), "v_stages": rng.choice([1, 1, 2, 3]),
          "zero_stage": rng.choice([0, 1, 2, 3]), "precision": rng.choice(["fp16", "bf16", "fp32", "fp8", "int8",
                                                                            "int4", "tf32", "FP16", "fp64"]),
          "efficiency": rng.choice([0.3, 0.5, 0.71, 1.0, 1.5]), "is_lora": rng.random() < 0.2,
          "activation_recomputation": rng.random() < 0.4, "overlap_comm": rng.random() < 0.4,
          "overlap_efficiency": rng.choice([0.0, 0.5, 0.85, 1.2]), "congestion_factor": rng.choice([1.0, 1.3, 0.8]),
          "straggler_factor": rng.choice([1.0, 1.1, 2.0]), "moe_routing_imbalance_factor": rng.choice([1.0, 1.5]),
          "gradient_accumulation_steps": rng.choice([1, 2, 8]), "seq_len": rng.choice([128, 2048, 8192])}
    # fractional counts solve() accepts (mlsysim rounds their quotients in floats, and so must the module)
    if rng.random() < 0.15:
        kw["gradient_accumulation_steps"] = rng.choice([1.4, 2.5, 1.7, 3.3])
    if rng.random() < 0.05:
        kw["microbatch_count"] = rng.choice([2.5, 7.5])
    if rng.random() < 0.1:          # some keywords not given: solve()'s defaults
        for k in rng.sample(sorted(kw), 3):
            kw.pop(k)
    kw.setdefault("precision", "fp16")
    # the extended model (fidelity="extended") and its keywords; now and then on mlsysim's model (an error)
    if rng.random() < 0.4:
        kw["fidelity"] = "extended"
    if kw.get("fidelity") == "extended" or rng.random() < 0.03:
        kw.update(cp_size=rng.choice([1, 1, 2, 4, 3]), sequence_parallel=rng.random() < 0.5,
                  tp_comm_overlap=rng.random() < 0.3, kv_fraction=rng.choice([1.0, 0.125, 0.0625, 1.5]))
    return model, fleet, kw


def _close(a, b) -> bool:
    if a is None or b is None or isinstance(a, (bool, str)):
        return a == b
    if math.isnan(a):
        return math.isnan(b)
    return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))


def test_the_module_equals_python_solve_on_random_configurations_of_every_variant():
    rng = random.Random(20261201)
    configs = [_random_configuration(rng) for _ in range(RANDOM_CONFIGURATIONS)]
    assert compare_all(configs, _node(configs)) >= 500


def compare_all(configs, got, every_variant: bool = True) -> int:
    """Assert the module's answers ``got`` equal Python's on ``configs``; returns how many results were compared
    (``every_variant``: the configurations are the random sample of mlsysim's catalog, which reaches every variant
    in many valid configurations and many errors)."""
    variants, errors, compared, extended, notes = set(), 0, 0, 0, 0
    for (model, fleet, kw), js in zip(configs, got):
        py = _python(model, fleet, kw)
        if "error" in py:
            errors += 1
            assert js.get("error") == py["error"] and js.get("type") == py["type"], (model, fleet, kw, py, js)
            continue
        assert "result" in js, (model, fleet, kw, js)
        r, j = py["result"], js["result"]
        assert j["warnings"] == py["warnings"], (model, fleet, kw)
        ours = r.to_dict()
        for name in OUTPUTS:
            if name == "node_profile.memory_bound":
                continue                    # compared as node_profile.bottleneck below
            if name.startswith("node_profile."):
                a, b = ours["node_profile"][name.split(".", 1)[1]], j["node_profile"][name.split(".", 1)[1]]
            elif name == "dp":
                a, b = r.parallelism["dp"], j["parallelism"]["dp"]
            else:
                a, b = ours[name], j[name]
            assert _close(a, b), (model, fleet, kw, name, a, b)
        assert j["node_profile"]["bottleneck"] == r.node_profile.bottleneck
        assert j["memory_capacity"] == ours["memory_capacity"]      # the HBM the page holds the memory against
        assert j["parallelism"] == r.parallelism
        assert j["notes"] == r._model_notes(), (model, fleet, kw)     # the notes, by their translated conditions
        notes += bool(j["notes"])
        if r.extended is not None:          # the extended model's own terms
            assert set(j["extended"]) == set(r.extended)
            assert all(_close(r.extended[k], j["extended"][k]) for k in r.extended), (model, fleet, kw)
            extended += 1
        else:
            assert "extended" not in j
        compared += 1
        key = kw["precision"].lower() if kw["precision"].lower() in PRECISION_BYTES else "fp16"
        variant = static_values(as_workload(model), as_fleet(fleet), key)[0]
        variants.add(replace(variant, fidelity=kw.get("fidelity", "mlsysim")))
    if every_variant:
        # a real mix: many valid configurations of every variant of the catalog in both models, and many errors
        assert compared >= 500 and errors >= 300 and extended >= 100 and variants == set(web._all_variants())
        assert notes >= 50                      # configurations with a note, compared
    return compared


def _random_modern_configuration(rng: random.Random):
    """Today's models and machines (the modern catalog, some on mlsysim's clusters), mostly in the extended model
    with its experts, context parallelism and switches."""
    model = rng.choice(modern.architecture_names())
    fleet = rng.choice(modern.fleet_names() + ("Research_256",))
    card = modern.architecture(model)
    eps = [1] + [e for e in (2, 4, 8, 16, 32, 64) if card.experts and card.experts % e == 0] + [3]
    kw = {"batch_size": rng.choice([64, 256, 1024, 4096]), "tp_size": rng.choice([1, 2, 4, 8]),
          "pp_size": rng.choice([1, 2, 4, 8, 16]), "ep_size": rng.choice(eps),
          "microbatch_count": rng.choice([1, 8, 32]), "v_stages": rng.choice([1, 1, 2]),
          "zero_stage": rng.choice([0, 1, 3]), "precision": rng.choice(["bf16", "fp8", "fp16"]),
          "efficiency": rng.choice([0.4, 0.5, 0.795]), "activation_recomputation": rng.random() < 0.3,
          "overlap_comm": rng.random() < 0.7, "seq_len": rng.choice([2048, 4096, 8192, 32768])}
    if rng.random() < 0.75:
        kw.update(fidelity="extended", cp_size=rng.choice([1, 1, 2, 4]), etp_size=rng.choice([1, 1, 2]),
                  **{k: rng.random() < 0.5 for k in ("sequence_parallel", "tp_comm_overlap", "fsdp_overlap",
                                                     "cp_overlap", "ep_overlap", "fused_dispatch")})
    return model, fleet, kw


def test_the_module_prices_the_modern_catalog_as_python_does():
    # the page offers today's models and machines (H200, B200, GB200 NVL72; GQA, experts): each random
    # configuration, priced or refused, equals Python's solve(), and a real share of them price
    rng = random.Random(20261207)
    configs = [_random_modern_configuration(rng) for _ in range(600)]
    got = _node(configs)
    assert compare_all(configs, got, every_variant=False) >= 100
    assert sum("result" in g and "extended" in g["result"] and g["result"]["parallelism"]["ep"] > 1
               for g in got) >= 20          # mixtures of experts laid out by the extended model among them
    # a modern name the catalog lacks: the modern catalog's own KeyError and close names (mlsysim_sym.modern)
    got = _node([["modern/DeepSeek-V4", "modern/B200-1024", {}], ["GPT2", "modern/B300-1024", {}],
                 ["GPT2", "plan.yaml", {}]])
    for (m, f, _), g in zip([["modern/DeepSeek-V4", "modern/B200-1024", {}], ["GPT2", "modern/B300-1024", {}]], got):
        assert g == {"type": "KeyError", "error": _python(m, f, {})["error"]}
    assert got[0]["error"].startswith("\"unknown modern architecture 'modern/DeepSeek-V4'; close names: "
                                      "modern/DeepSeek-V3")
    # a plan file the page cannot read: said, where Python reads the file
    assert got[2] == {"type": "ValueError", "error": "fleet 'plan.yaml': the calculator reads no files (a plan "
                      "file is read by the Python package and the command line)"}


def test_every_catalog_variant_is_generated_and_the_module_is_fresh():
    assert MODULE.read_text() == web.render_module()
    text = MODULE.read_text()
    for name in ("outputs_transformer", "outputs_generic", "outputs_generic_explicit_weights"):
        assert f"function {name}(" in text


def test_python_truthiness_of_switches_and_names_that_objects_have():
    script = f"""
import {{ solve }} from {json.dumps(MODULE.as_uri())};
const out = [solve("Llama3_70B", "Research_256", {{batch_size: 256, is_lora: NaN}}).mfu];
for (const a of [["constructor", "Research_256", {{}}], ["GPT2", "Research_256", {{precision: "constructor"}}],
                 ["GPT2", "Research_256", {{toString: 1}}]]) {{
  try {{ solve(...a); out.push("no error"); }} catch (e) {{ out.push(e.type); }}
}}
process.stdout.write(JSON.stringify(out));
"""
    p = subprocess.run([NODE, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=120)
    mfu, *types = json.loads(p.stdout)
    # Python: bool(nan) is True, so NaN switches LoRA on
    assert mfu == _python("Llama3_70B", "Research_256", {"batch_size": 256, "is_lora": True})["result"].mfu
    assert types == ["KeyError", "ValueError", "TypeError"]


def test_module_errors_name_unknown_records_and_keywords():
    got = _node([["Nope", "Research_256", {}], ["GPT2", "Research_256", {"tp": 2}],
                 ["GPT2", "Research_256", {"precision": "fp64"}]])
    assert got[0]["type"] == "KeyError" and "unknown workload 'Nope'" in got[0]["error"]
    assert got[1]["type"] == "TypeError" and "unexpected keyword argument 'tp'" in got[1]["error"]
    assert got[2]["error"] == _python("GPT2", "Research_256", {"precision": "fp64"})["error"]
    # a record field, which Python's solve() sets for the call (count=16 nodes), the page does not set: it says so
    got = _node([["GPT2", "Research_256", {"count": 16}]])
    assert got[0] == {"type": "TypeError", "error": "DistributedModel.solve(): count is a field of the workload or "
                      "the cluster, which this page does not set (it prices the catalogs' records as they are); "
                      "Python's solve(count=...) sets it"}
    assert DistributedModel().solve("GPT2", "Research_256", batch_size=128, count=16).parallelism["dp"] == 128
