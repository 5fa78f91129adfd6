"""The model against published training runs (``docs/published_runs.md``).

Each run of ``derivations/data/published_runs.json`` is configured from its publication's own figures
(model shape, GPUs, TP/PP/DP, batch, microbatches, interleaving, recomputation, precision) and priced by
``mlsysim_sym.DistributedModel().solve``. The comparison uses the publication's own FLOP convention:

* the workload's forward FLOPs per token (``inference_flops``) are the publication's FLOPs per
  iteration divided by ``(3 + r) B s`` (``r`` = 1 with full recomputation), so the FLOPs the model
  executes per step, ``(3 + r) F_fwd B s``, are exactly the FLOPs the publication counts;
* predicted throughput per GPU = publication FLOPs per iteration / (model step time x GPUs), which is
  also ``mfu x peak x (3 + r) / 3`` of the model's own outputs (checked for every row);
* predicted MFU (Korthikanti's rows) = that throughput / the publication's peak.

The efficiency a row needs is solved from the regime-resolved step time (``operating_point_of``:
``T_step = a + b / eta`` in the compute-bound regime), then confirmed by ``solve()``.
"""
from __future__ import annotations

import json
import math
import statistics
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Optional

import sympy as sp

from mlsysim_sym import DistributedModel, Fabric, Fleet, Node, Workload, catalog, operating_point_of, sym
from mlsysim_sym.printing import latex

DATA = Path(__file__).resolve().parent / "data" / "published_runs.json"
#: The run whose required efficiency is used for every other run (chosen before looking at the errors:
#: the GPT-3-sized row of Narayanan et al.'s Table 1, 1536 GPUs, interleaved pipeline).
CALIBRATION_ROW = "narayanan-145.6b"
DEFAULT_EFFICIENCY = 0.5
REL_TOL = 1e-9

#: Publication FLOP conventions: per-iteration FLOPs as a sympy expression of the run's numbers.
B, s, l, h, V, N, f = sp.symbols("B s l h V N f", positive=True)
CONVENTIONS = {
    "narayanan": {
        "name": "Narayanan et al., Eq. (3): hardware FLOPs (full recomputation counted: four forward-"
                "equivalents; the logits term is not recomputed, so the formula holds for such runs only)",
        "flops": 96 * B * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h)),
    },
    "korthikanti": {
        "name": "Korthikanti et al., Eq. (7): model FLOPs (no recomputation)",
        "flops": 72 * B * s * l * h**2 * (1 + s / (6 * h) + V / (12 * h * l)),
    },
    "palm": {
        "name": "Chowdhery et al. (PaLM), Appendix B: model FLOPs, attention included",
        "flops": (6 * N + 12 * l * h * s) * B * s,
    },
}
#: What was looked for and not used.
NOT_FOUND = (
    "Narayanan et al.'s Table 2 (PTD-P against ZeRO-3) and the figures' per-configuration numbers: not read from a "
    "primary source here, not used.",
    "NVIDIA's NeMo Framework performance summary (docs.nvidia.com, NeMo 24.12, Performance Benchmarks) lists "
    "Model TFLOP/s per GPU at FP8 (for example GPT3-175B on 512 GPUs, 888); the part of the page read here names "
    "neither the GPU nor the FLOP formula, so no row was made from it.",
    "MT-NLG's micro batch size and interleaving, Llama 3's micro batch size, interleaving degree and recomputation, "
    "Jean Zay's NVLink rate: not published in the sources read; assumed as listed per run.",
    "The BLOOM paper's rounded figure (about 150 TFLOP/s per GPU): the training log's value at one iteration is used "
    "instead, with its iteration time.",
)
METRICS = {"tflops_per_gpu": "TFLOP/s per GPU", "mfu": "MFU"}


@lru_cache(maxsize=1)
def load() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


def runs() -> List[dict]:
    return load()["runs"]


def run(run_id: str) -> dict:
    return next(r for r in runs() if r["id"] == run_id)


def convention(r: dict) -> str:
    return load()["sources"][r["source"]]["convention"]


def recompute(r: dict) -> int:
    """``r`` of the model: 1 with full recomputation (4 forward-equivalents), else 0."""
    return 1 if r["config"]["recompute"] == "full" else 0


def fleet(r: dict) -> Fleet:
    spec = load()["fleets"][r["fleet"]]
    node = spec["node"]
    if isinstance(node, str):
        node = catalog.fleet("Training_1K_A100").node if node == "DGX A100" else _catalog_node(node)
    else:
        node = Node(node["name"], catalog.accelerator(node["accelerator"]), node["accelerators_per_node"],
                    float(node["intra_node_bw"]))
    fab = spec["fabric"]
    fab = _catalog_fabric(fab) if isinstance(fab, str) else Fabric(fab["name"], float(fab["bandwidth"]),
                                                                   fab["oversubscription_ratio"], fab["latency"])
    gpus = r["config"]["gpus"]
    assert gpus % node.accelerators_per_node == 0, r["id"]
    return Fleet(f"{spec['name']}, {gpus // node.accelerators_per_node} nodes", node,
                 gpus // node.accelerators_per_node, fab)


def _from_catalog(part: str, name: str):
    """The catalog's node or fabric (``part``) called ``name``, from whichever cluster has it."""
    for key in catalog.fleet_names():
        record = getattr(catalog.fleet(key), part)
        if record.name == name:
            return record
    raise KeyError(name)


def _catalog_node(name: str) -> Node:
    return _from_catalog("node", name)


def _catalog_fabric(name: str) -> Fabric:
    return _from_catalog("fabric", name)


def peak(r: dict) -> float:
    """The accelerator's peak at the run's precision, as the model looks it up (contract §1.5)."""
    acc = fleet(r).node.accelerator
    return acc.flops_for(r["config"]["precision"].lower()) or acc.peak_flops


def dp_published(r: dict) -> int:
    c = r["config"]
    return c["gpus"] // (c["tp"] * c["pp"] * c.get("cp", 1))


def microbatches(r: dict) -> int:
    """Microbatches per pipeline per iteration: batch per DP group / micro batch."""
    c = r["config"]
    m, rem = divmod(c["global_batch"], dp_published(r) * c["micro_batch"])
    assert rem == 0, r["id"]
    return m


def pub_flops(r: dict) -> float:
    """FLOPs per iteration in the publication's own convention."""
    mo, c = r["model"], r["config"]
    expr = CONVENTIONS[convention(r)]["flops"]
    return float(expr.subs({B: c["global_batch"], s: c["seq"], l: mo["layers"], h: mo["hidden"],
                            V: mo.get("vocab", 0), N: mo["parameters"], f: 3 + recompute(r)}))


def tokens(r: dict) -> int:
    return r["config"]["global_batch"] * r["config"]["seq"]


def forward_flops_per_token(r: dict) -> float:
    """``inference_flops``: the publication's FLOPs per iteration over (3 + r) forward-equivalents."""
    return pub_flops(r) / ((3 + recompute(r)) * tokens(r))


def workload(r: dict) -> Workload:
    mo = r["model"]
    return Workload(r["label"], kind="transformer", parameters=float(mo["parameters"]), layers=mo["layers"],
                    hidden_dim=mo["hidden"], inference_flops=forward_flops_per_token(r))


def solve_kwargs(r: dict, efficiency: float = DEFAULT_EFFICIENCY) -> Dict[str, object]:
    c = r["config"]
    return dict(batch_size=c["global_batch"], tp_size=c["tp"], pp_size=c["pp"], v_stages=c["v"],
                microbatch_count=microbatches(r), activation_recomputation=bool(recompute(r)),
                precision=c["precision"], zero_stage=c["zero_stage"], seq_len=c["seq"], efficiency=efficiency)


def solve(r: dict, efficiency: float = DEFAULT_EFFICIENCY):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DistributedModel().solve(workload(r), fleet(r), **solve_kwargs(r, efficiency))


def metric_of_step(r: dict, step_time: float) -> float:
    """The publication's metric for an iteration of ``step_time`` seconds."""
    x = pub_flops(r) / (step_time * r["config"]["gpus"])
    return x / 1e12 if r["measured"]["metric"] == "tflops_per_gpu" else x / peak(r)


def step_of_metric(r: dict, value: float) -> float:
    """The iteration time the publication's metric implies."""
    x = value * 1e12 if r["measured"]["metric"] == "tflops_per_gpu" else value * peak(r)
    return pub_flops(r) / (x * r["config"]["gpus"])


def predict(r: dict, efficiency: float = DEFAULT_EFFICIENCY) -> Dict[str, float]:
    res = solve(r, efficiency)
    value = metric_of_step(r, res.step_latency_total)
    # the same number from the model's own fleet MFU: throughput = mfu x peak x (3 + r) / 3
    via_mfu = res.mfu * peak(r) * (3 + recompute(r)) / 3
    via_mfu = via_mfu / 1e12 if r["measured"]["metric"] == "tflops_per_gpu" else via_mfu / peak(r)
    assert math.isclose(value, via_mfu, rel_tol=1e-12), (r["id"], value, via_mfu)
    return {"step": res.step_latency_total, "value": value, "error": value / r["measured"]["value"] - 1,
            "feasible": res.node_profile.feasible, "result": res}


def step_time_in_efficiency(r: dict) -> sp.Expr:
    """The model's step time in this run's regime as a function of the efficiency alone."""
    eta = sym.eta
    p = operating_point_of(workload(r), fleet(r), **solve_kwargs(r))
    e = p.closed("T_step", simplified=False)
    return sp.nsimplify(e.xreplace({k: v for k, v in p.params.items() if k != eta}), rational=False)


@lru_cache(maxsize=None)
def required_efficiency(run_id: str) -> Optional[float]:
    """The efficiency at which the model's step time equals the measured one (None: above 1)."""
    r = run(run_id)
    target = step_of_metric(r, r["measured"]["value"])
    t = step_time_in_efficiency(r)
    roots = [complex(x) for x in sp.solve(sp.Eq(t, target), sym.eta)]
    roots = [x.real for x in roots if abs(x.imag) < 1e-12 and x.real > 0]
    if not roots:
        return None
    eta = min(roots)
    if eta > 1:
        return None
    # the regime was taken at eta = 0.5; confirm with solve() at the root
    assert math.isclose(solve(r, eta).step_latency_total, target, rel_tol=REL_TOL), (run_id, eta)
    return eta


def _pct(x: float) -> str:
    return f"{100 * x:+.1f}%"


def _num(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}g}"


def _metric(r: dict, x: float) -> str:
    return f"{x:.1f}" if r["measured"]["metric"] == "tflops_per_gpu" else f"{100 * x:.1f}%"


def table_rows() -> List[dict]:
    cal = required_efficiency(CALIBRATION_ROW)
    out = []
    for r in runs():
        mo = r["model"]
        d, k = predict(r), predict(r, cal)
        need = required_efficiency(r["id"])
        default_flops = (3 + recompute(r)) * 2 * mo["parameters"] * tokens(r)
        res = d["result"]
        lacks = load()["sources"][r["source"]]["lacks"] + r.get("lacks", [])
        if not res.node_profile.feasible:
            lacks = lacks + [f"a memory estimate that fits: the model's {res.node_profile.memory_footprint / 2**30:.0f} GiB "
                             f"per GPU exceeds the {fleet(r).node.accelerator.memory_capacity / 2**30:.0f} GiB HBM, so it "
                             "prices memory traffic at the host link (the step stays compute-bound)"]
        published_time = r["measured"].get("iteration_time")
        out.append({
            "id": r["id"], "r": r, "source": load()["sources"][r["source"]],
            "label": r["label"], "metric": METRICS[r["measured"]["metric"]],
            "measured": r["measured"]["value"], "default": d, "calibrated": k, "required": need,
            "published_time": published_time,
            "time_check": metric_of_step(r, published_time) if published_time else None,
            "measured_step": step_of_metric(r, r["measured"]["value"]),
            "flops_ratio": pub_flops(r) / default_flops,
            "dp": dp_published(r), "m": microbatches(r),
            "lacks": lacks,
            "breakdown": {"node": res.node_profile.latency / res.step_latency_total,
                          "tp": res.tp_communication_latency / res.step_latency_total,
                          "dp": res.dp_communication_latency / res.step_latency_total,
                          "bubble": res.pipeline_bubble_latency / res.step_latency_total},
            "assumed": load()["sources"][r["source"]]["assumed"] + r.get("assumed", []),
        })
    return out


def summary(rows: List[dict]) -> Dict[str, float]:
    default = [abs(x["default"]["error"]) for x in rows]
    calibrated = [abs(x["calibrated"]["error"]) for x in rows if x["id"] != CALIBRATION_ROW]
    return {"median_default": statistics.median(default), "worst_default": max(default),
            "median_calibrated": statistics.median(calibrated), "worst_calibrated": max(calibrated),
            "calibration_efficiency": required_efficiency(CALIBRATION_ROW), "rows": len(rows)}


def _cells(rows: List[dict]) -> Dict[str, List[List[str]]]:
    config, shape, results, times, shares = [], [], [], [], []
    for x in rows:
        r, c, mo = x["r"], x["r"]["config"], x["r"]["model"]
        cp = c.get("cp", 1)
        par = f"{c['tp']}/{c['pp']}/{x['dp']}" + (f"/CP {cp}" if cp > 1 else "")
        shape.append([x["id"], _num(mo["parameters"] / 1e9, 4), str(mo["layers"]), str(mo["hidden"]), str(c["seq"]),
                      str(c["global_batch"]), f"{x['flops_ratio']:.3f}"])
        config.append([x["id"], str(c["gpus"]), par, f"{x['m']} x {c['micro_batch']}", str(c["v"]), c["recompute"],
                       c["precision"]])
        need = "> 1" if x["required"] is None else f"{x['required']:.3f}"
        results.append([x["id"], _metric(r, x["measured"]), _metric(r, x["default"]["value"]),
                        _pct(x["default"]["error"]), _metric(r, x["calibrated"]["value"]),
                        _pct(x["calibrated"]["error"]), need])
        times.append([x["id"],
                      f"{x['published_time']:.2f}" if x["published_time"] else "-",
                      _metric(r, x["time_check"]) if x["time_check"] is not None else "-",
                      f"{x['measured_step']:.2f}", f"{x['default']['step']:.2f}", f"{x['calibrated']['step']:.2f}"])
        b = x["breakdown"]
        shares.append([x["id"]] + [f"{100 * b[k]:.1f}%" for k in ("node", "tp", "dp", "bubble")])
    return {"config": config, "shape": shape, "results": results, "times": times, "shares": shares}


def formulas() -> Dict[str, str]:
    """The conversions, printed from sympy: forward FLOPs per token given to the model, predicted throughput
    per GPU and MFU in the publication's convention."""
    F_pub, T, n_gpu, R, r, Bs = sp.symbols(r"F_{\text{pub}} T_{\text{step}} N_{\text{GPU}} R_{\text{peak}} r B\thinspace{}s")
    X, M, F_fwd, mfu = sp.symbols(r"X_{\text{pred}} \text{MFU}_{\text{pred}} F_{\text{fwd}} \text{mfu}")
    return {
        "forward": latex(sp.Eq(F_fwd, F_pub / ((3 + r) * Bs), evaluate=False)),
        "throughput": latex(X) + " = " + latex(F_pub / (T * n_gpu)) + " = " + latex(mfu * R * (3 + r) / 3),
        "mfu": latex(sp.Eq(M, X / R, evaluate=False)),
    }


def calibration() -> Dict[str, str]:
    """The calibration row's step time in its regime, a function of the efficiency alone, and its root."""
    r = run(CALIBRATION_ROW)
    t = step_time_in_efficiency(r)
    eta = sym.eta
    shown = sp.Float(t.subs(eta, sp.oo), 6) + sp.Float((t - t.subs(eta, sp.oo)) * eta, 6) / eta
    target = step_of_metric(r, r["measured"]["value"])
    return {"equation": r"T_{\text{step}}(" + latex(eta) + ") = " + latex(sp.expand(shown)) + " = " + f"{target:.4f}"
            + r"\thinspace\text{s}",
            "eta": f"{required_efficiency(CALIBRATION_ROW):.4f}", "target": f"{target:.3f}"}


def context() -> Dict[str, object]:
    rows = table_rows()
    conventions = [{"key": k, "name": v["name"],
                    "formula": latex(sp.Symbol(r"F_{\text{%s}}" % k)) + " = " + latex(v["flops"])}
                   for k, v in CONVENTIONS.items()]
    by_source: Dict[str, List[dict]] = {}
    for x in rows:
        by_source.setdefault(x["r"]["source"], []).append(x)
    s_ = summary(rows)
    headline = {k: f"{100 * v:.1f}%" for k, v in s_.items() if k.startswith(("median", "worst"))}
    headline["calibration_efficiency"] = f"{s_['calibration_efficiency']:.3f}"
    needs = [x for x in rows if x["required"] is not None]
    lo = min(needs, key=lambda x: x["required"])
    hi = max(needs, key=lambda x: x["required"])
    headline.update(need_low=f"{lo['required']:.3f}", need_low_id=lo["id"], need_high=f"{hi['required']:.3f}",
                    need_high_id=hi["id"], need_high_bubble=f"{100 * hi['breakdown']['bubble']:.0f}%",
                    unreachable=str(len(rows) - len(needs)))
    return {"rows": rows, "cells": _cells(rows), "summary": s_, "headline": headline,
            "calibration": CALIBRATION_ROW, "calibration_fit": calibration(), "formulas": formulas(),
            "default_efficiency": DEFAULT_EFFICIENCY, "conventions": conventions,
            "sources": load()["sources"], "fleets": load()["fleets"], "by_source": by_source,
            "data_file": "derivations/data/published_runs.json", "count": len(rows), "not_found": NOT_FOUND}
