"""The calculator's module under hostile input: every value a JavaScript caller can pass (numbers with -0, NaN,
+-Infinity, 1e308 and integers beyond 2**53, BigInts, booleans, null, undefined, strings, arrays, objects), as
model and fleet names, as the keywords object, as keyword names and as their values, gets from the module the
decision Python's ``DistributedModel(fidelity=...).solve`` makes on the value a JSON caller would pass
(:func:`to_python`, the mapping ``derivations/web.py`` states): the same accept or reject, the same exception
type and message, the same warnings, and numbers equal to Python's where both accept (never a NaN where Python
raises).

The configurations are drawn from a fixed seed; each one through the module under node, and through Python."""
import json
import math
import random
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from mlsysim_sym import DistributedModel
from mlsysim_sym.symbols import keywords

ROOT = Path(__file__).resolve().parents[1]
MODULE = ROOT / "docs" / "calculator" / "mlsysim_sym.mjs"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="needs node (.ci/run installs it)")
#: Hostile configurations compared.
HOSTILE_CONFIGURATIONS = 3000


# ---- JavaScript values, written in Python: ("num", float) ("big", int) ("bool", b) ("null",) ("undef",)
# ("str", s) ("arr", [values]) ("obj", [(key, value), ...]) ("fn",) -------------------------------------------
def num(x):
    return ("num", float(x))


NAN, INF, NINF, NEG0 = num("nan"), num("inf"), num("-inf"), num(-0.0)
NUMBERS = [num(x) for x in (0, 1, 2, 3, 4, 8, 16, -1, -2, 0.5, 1.5, 2.5, 0.85, 1e-9, 1e-300, 5e-324, 1e-320, 1e16,
                            2.0**53, 2.0**53 + 2, 1e20, 1e21, 2.0**70, 1e30, 1e300, 1e308, -1e308,
                            1.7976931348623157e308, 4096, 65536, 2048, 0.3)] + [NAN, INF, NINF, NEG0]
BIGINTS = [("big", x) for x in (0, 1, 2, 8, -1, 2**53 + 1, 10**20, 10**30, 10**400, -(10**400))]
STRINGS = [("str", s) for s in ("", "2", "1.0", "fp16", "abc", "no", "True", "nan", "it's", 'say "hi"', "a\nb",
                                "é", "\x00", "\u2028", "😀", "constructor", "__proto__", "toString")]
OTHERS = [("bool", True), ("bool", False), ("null",), ("undef",), ("fn",), ("arr", []), ("arr", [num(2)]),
          ("arr", [num(1), num(2)]), ("arr", [NINF]), ("arr", [("str", "x"), ("null",), ("undef",)]),
          ("obj", []), ("obj", [("a", num(1))]), ("obj", [("k", ("arr", [("bool", True)]))])]
HOSTILE = NUMBERS + BIGINTS + STRINGS + OTHERS
MODELS = ["Llama3_70B", "GPT2", "Mixtral_8x7B", "ResNet50", "Mamba_130M", "DLRM", "BERT_Base", "DeepSeek_V3"]
FLEETS = ["Research_256", "Lab_64_H100", "Mega_100K", "Training_1K_B200", "Kempner_H100_384"]
NAMES = ["Nope", "", "llama3_70b", "Llama3", "GPT", "Research", "research_256", "constructor", "__proto__",
         "toString", "hasOwnProperty", "x" * 250, "Llama3_70B ", "ResNet"]
PRECISIONS = ["fp16", "bf16", "fp32", "tf32", "fp8", "int8", "int4", "FP16", "Bf16", "fp64", "", "half"]


def to_js(v) -> object:
    """The tagged JSON the node side decodes into the JavaScript value."""
    tag = v[0]
    if tag == "num":
        x = v[1]
        if math.isnan(x):
            return {"$n": "NaN"}
        if math.isinf(x):
            return {"$n": "Infinity" if x > 0 else "-Infinity"}
        if x == 0 and math.copysign(1, x) < 0:
            return {"$n": "-0"}
        return {"$n": repr(x)}
    if tag == "big":
        return {"$big": str(v[1])}
    if tag == "bool":
        return v[1]
    if tag == "null":
        return None
    if tag == "undef":
        return {"$undef": 1}
    if tag == "fn":
        return {"$fn": 1}
    if tag == "str":
        return {"$s": v[1]}
    if tag == "arr":
        return {"$a": [to_js(x) for x in v[1]]}
    return {"$o": [[k, to_js(x)] for k, x in v[1]]}


ABSENT = object()


def to_python(v):
    """The Python value a JSON caller would pass for the JavaScript value ``v`` (the mapping of
    ``derivations/web.py``): a number is an ``int`` when it is whole and JavaScript writes it without a point or
    an exponent (below 1e21), else a ``float`` (-0 is ``-0.0``, NaN and the infinities Python's); a BigInt is an
    ``int``; null is ``None``; an array a ``list`` (undefined elements ``None``); an object a ``dict`` of its own
    keys (undefined or function values left out, as JSON leaves them); undefined and a function are "not given"
    (:data:`ABSENT`)."""
    tag = v[0]
    if tag == "num":
        x = v[1]
        if math.isfinite(x) and x.is_integer() and abs(x) < 1e21 and not (x == 0 and math.copysign(1, x) < 0):
            return int(x)
        return x
    if tag == "big":
        return v[1]
    if tag == "bool":
        return v[1]
    if tag == "null":
        return None
    if tag in ("undef", "fn"):
        return ABSENT
    if tag == "str":
        return v[1]
    if tag == "arr":
        return [None if (y := to_python(x)) is ABSENT else y for x in v[1]]
    out = {}
    for k, x in v[1]:
        y = to_python(x)
        if y is not ABSENT:
            out[k] = y
    return out


def hostile_configuration(rng: random.Random):
    """(model, fleet, kwargs) as JavaScript values: mostly a valid configuration with one to three hostile
    values; now and then a hostile name, keyword or keywords object."""
    model = ("str", rng.choice(MODELS))
    fleet = ("str", rng.choice(FLEETS))
    r = rng.random()
    if r < 0.05:
        model = rng.choice([("str", rng.choice(NAMES)), rng.choice(HOSTILE)])
    elif r < 0.1:
        fleet = rng.choice([("str", rng.choice(NAMES)), rng.choice(HOSTILE)])
    table = keywords()
    kw = {"batch_size": num(rng.choice([1, 8, 256, 1024, 4096])), "tp_size": num(rng.choice([1, 2, 4, 8])),
          "pp_size": num(rng.choice([1, 2, 4])), "microbatch_count": num(rng.choice([1, 4, 8])),
          "precision": ("str", rng.choice(PRECISIONS[:7]))}
    if rng.random() < 0.4:
        kw["fidelity"] = ("str", "extended")
    if rng.random() < 0.3:
        kw["zero_stage"] = num(rng.choice([0, 1, 2, 3]))
    names = list(table) + ["precision", "fidelity", "topology_override"]
    for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
        k = rng.choice(names)
        if k == "precision" and rng.random() < 0.5:
            kw[k] = ("str", rng.choice(PRECISIONS))
        elif k == "fidelity" and rng.random() < 0.5:
            kw[k] = ("str", rng.choice(["mlsysim", "extended", "Extended", ""]))
        else:
            kw[k] = rng.choice(HOSTILE)
    r = rng.random()
    if r < 0.04:                        # a keyword Python does not take
        kw[rng.choice(["tp", "model", "fleet", "self", "without", "constructor", "__proto__", "1", "toString",
                       "batch size"])] = num(1)
    items = list(kw.items())
    rng.shuffle(items) if rng.random() < 0.3 else None
    kwargs = ("obj", items)
    if r > 0.98:                        # the keywords object itself
        kwargs = rng.choice([("null",), ("undef",), ("arr", [num(1)]), ("str", "x"), num(3), ("bool", True)])
    return model, fleet, kwargs


def run_node(configs):
    """Every (model, fleet, kwargs) of JavaScript values through the module's solve under node."""
    script = f"""
import {{ solve }} from {json.dumps(MODULE.as_uri())};
function decode(v) {{
  if (v === null || typeof v === "boolean") return v;
  if ("$n" in v) return v.$n === "-0" ? -0 : Number(v.$n);
  if ("$big" in v) return BigInt(v.$big);
  if ("$undef" in v) return undefined;
  if ("$fn" in v) return function () {{ return 1; }};
  if ("$s" in v) return v.$s;
  if ("$a" in v) return v.$a.map(decode);
  const o = {{}};
  for (const [k, x] of v.$o) Object.defineProperty(o, k, {{ value: decode(x), enumerable: true, writable: true,
                                                           configurable: true }});
  return o;
}}
function plain(x) {{ return typeof x === "bigint" ? {{ $big: String(x) }} : x; }}
let text = "";
process.stdin.on("data", (d) => {{ text += d; }});
process.stdin.on("end", () => {{
  const out = JSON.parse(text).map(([m, f, kw]) => {{
    try {{
      const r = solve(decode(m), decode(f), decode(kw));
      return {{ result: JSON.parse(JSON.stringify(r, (k, x) => (typeof x === "number" && !Number.isFinite(x)) ?
        {{ $n: String(x) }} : plain(x))) }};
    }} catch (e) {{ return {{ type: e.type || e.name, error: e.message }}; }}
  }});
  process.stdout.write(JSON.stringify(out));
}});
"""
    p = subprocess.run([NODE, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=900,
                       input=json.dumps([[to_js(m), to_js(f), to_js(kw)] for m, f, kw in configs]))
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def run_python(model, fleet, kwargs):
    """Python's answer for the JavaScript values: ``{"type", "error"}`` or ``{"result", "warnings"}``."""
    model, fleet = (None if x is ABSENT else x for x in map(to_python, (model, fleet)))
    kwargs = to_python(kwargs)
    kwargs = {} if kwargs is ABSENT else kwargs         # solve(model, fleet): no keywords
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if isinstance(kwargs, dict):
                kwargs = dict(kwargs)
                fidelity = kwargs.pop("fidelity", "mlsysim")
                r = DistributedModel(fidelity=fidelity).solve(model, fleet, **kwargs)
            else:
                r = DistributedModel().solve(model, fleet, **kwargs)
        except Exception as e:      # noqa: BLE001 - every error is compared with the module's
            return {"type": type(e).__name__, "error": str(e)}
    return {"result": r, "warnings": [str(c.message) for c in caught]}


def _number(x):
    if isinstance(x, dict) and "$n" in x:
        return float(x["$n"])
    return x


def _same(a, b) -> bool:
    b = _number(b)
    if a is None or b is None or isinstance(a, (bool, str)) or isinstance(b, (bool, str)):
        return a == b
    if math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))


def differences(configs, got):
    """The configurations where the module and Python differ: ``(config, what, python, module)``."""
    out = []
    for config, js in zip(configs, got):
        py = run_python(*config)
        if "error" in py or "error" in js:
            if (py.get("type"), py.get("error")) != (js.get("type"), js.get("error")):
                out.append((config, "decision" if ("error" in py) != ("error" in js) else "message",
                            py.get("error", "accepted"), js.get("error", "accepted")))
            continue
        r, j = py["result"], js["result"]
        if j["warnings"] != py["warnings"]:
            out.append((config, "warnings", py["warnings"], j["warnings"]))
            continue
        ours = r.to_dict()
        for key in ("step_latency_total", "mfu", "scaling_efficiency", "bubble_fraction",
                    "dp_communication_latency", "effective_throughput"):
            if not _same(ours[key], j[key]):
                out.append((config, key, ours[key], j[key]))
                break
        else:
            for key in ("latency", "memory_footprint", "energy", "feasible", "bottleneck", "mfu"):
                if not _same(ours["node_profile"][key], j["node_profile"][key]):
                    out.append((config, "node_profile." + key, ours["node_profile"][key], j["node_profile"][key]))
                    break
    return out


def test_the_module_decides_as_python_on_hostile_configurations():
    rng = random.Random(20261223)
    configs = [hostile_configuration(rng) for _ in range(HOSTILE_CONFIGURATIONS)]
    got = run_node(configs)
    diff = differences(configs, got)
    rejected = sum("error" in g for g in got)
    assert not diff, (len(diff), diff[:5])
    # a real mix: most configurations are refused for one hostile value, many are priced
    assert rejected >= HOSTILE_CONFIGURATIONS // 3 and HOSTILE_CONFIGURATIONS - rejected >= 300


def test_the_issues_reproducers_decide_as_python():
    """Issue 23's cases, one by one: Python's type names, -0 as -0.0, a list as Python prints it, a count of
    1e308 (never a NaN where Python raises), a NaN switch (true, as Python's bool(nan)), a close-name hint."""
    base = {"batch_size": num(256), "tp_size": num(8), "pp_size": num(2), "microbatch_count": num(4)}
    cases = [("Llama3_70B", "Research_256", {**base, "tp_size": ("str", "2")}),
             ("Llama3_70B", "Research_256", {**base, "tp_size": NEG0}),
             ("Llama3_70B", "Research_256", {**base, "tp_size": ("arr", [NINF])}),
             ("Llama3_70B", "Research_256", {**base, "batch_size": num(1e308)}),
             ("GPT2", "Research_256", {"batch_size": num(1e308)}),
             ("Llama3_70B", "Research_256", {**base, "is_lora": NAN}),
             ("Llama3_70B", "Research_256", {**base, "moe_routing_imbalance_factor": num(1e300)}),
             ("Llama3_70B", "Research_256", {**base, "cp_size": ("bool", True)}),
             ("Llama3_70B", "Research_256", {**base, "tp": num(2)}),
             ("llama3_70b", "Research_256", base),
             # the extended model's careful evaluation takes % (it raised "unsupported operand type(s) for %")
             ("Llama3_70B", "Research_256", {**base, "fidelity": ("str", "extended"), "congestion_factor": num(1e307)})]
    configs = [(("str", m), ("str", f), ("obj", list(kw.items()))) for m, f, kw in cases]
    got = run_node(configs)
    assert differences(configs, got) == []
    # the messages in Python's words (worked by hand from checks.py and solver.py)
    assert got[0]["error"] == "tp_size must be a real number, got str"
    assert got[1]["error"] == "tp_size must be >= 1, got -0.0"
    assert got[2]["error"] == "tp_size must be a real number, got list"
    assert got[8] == {"type": "TypeError", "error": "DistributedModel.solve() got an unexpected keyword argument 'tp'"}
    assert got[9]["type"] == "KeyError" and "close names: Llama3_70B" in got[9]["error"]
    # congestion 1e307 multiplies every collective: a step of about 1e307 s, finite, priced as Python prices it
    assert "result" in got[10] and 1e306 < float(_number(got[10]["result"]["step_latency_total"])) < 1e308
    # a NaN switch is on (Python's bool(nan) is True): the step of LoRA
    lora = run_python(("str", "Llama3_70B"), ("str", "Research_256"),
                      ("obj", list({**base, "is_lora": ("bool", True)}.items())))["result"]
    assert _same(lora.mfu, got[5]["result"]["mfu"])
    # no NaN anywhere a configuration is priced
    for g in got:
        if "result" in g:
            assert all(not (isinstance(x, dict) and x.get("$n") == "NaN") for x in g["result"].values())
