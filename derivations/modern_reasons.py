"""Why a held-out run of ``docs/modern_runs.md`` stays beyond the goal's worst error: each reason is tried in turn,
and the first that applies is the run's. The error is signed: positive when the model is too fast.

1. **source**: the run's own source says why the run is slower than its configuration on the fleet's hardware
   (:data:`SOURCE_SAYS`, matched on the id's start: power-limited B200s, a slowdown the page flags, a token-drop
   run); it applies only where the model is too fast.
2. **input**: the run was measured on code that is not published (:data:`UNPUBLISHED`).
3. **comparison**: a second measured run, within the goal's worst itself, whose throughput ratio to this one the
   model does not reproduce (:data:`COMPARISONS`; the fields in which the two differ are listed from the data):
   what differs is what the model misses. Or, found without a list, a twin (:func:`twins`: the same model,
   accelerator, layout and batch per GPU, another FP8 recipe, fleet size or source) that the model prices within
   the goal's median, as it prices every other twin that differs from the run in as few fields.
4. **line**: a Megatron-Core run whose release line misses the same way (the median signed error of the other
   runs of its generation, model kind and line, at least :data:`LINE_MIN_RUNS` of them, beyond the goal's
   median) and which, after dividing that median out, is within the goal's median.
5. **code**: mechanisms read in the framework's code at the run's commit that the model does not price, which
   account for part of the miss (:data:`CODE`), or activations the run's recipe offloads to host memory, where
   the model, which has no offloading, prices the step as spilling its state over the host link
   (:func:`spilled`).
6. **model**: a run whose framework's other runs of the same model all miss on the same side (at least
   :data:`LINE_MIN_RUNS` of them, beyond the goal's median in the median) and which, after dividing that median out,
   is within the goal's median: the miss is the framework's on this model, not the run's; what in the framework
   makes it, nothing here measures (the other frameworks' runs of the model are given beside it).
7. **candidate**: a configuration field the source leaves unprinted (its provenance ``unknown``) at another value
   of which the model reaches the run (:data:`UNPRINTED`), or a mechanism the runs point to (:data:`CANDIDATES`),
   that no measurement here establishes.
8. **none**: none of these.

The first four kinds account for the run (they name the mechanism or the unpublished input that limits it, with a
measurement behind it); ``code``, ``model``, ``candidate`` and ``none`` do not, the first three naming where to
look.
"""
from __future__ import annotations

import statistics
from dataclasses import replace
from functools import lru_cache
from typing import Dict, List, Optional, Tuple

from . import modern as M

#: The kinds of reason, in the order the document lists them, and whether each accounts for the run.
KINDS = {"source": True, "input": True, "comparison": True, "line": True, "code": False, "model": False,
         "candidate": False, "none": False}
#: A release line's bias counts only with this many other runs of its generation, model kind and line.
LINE_MIN_RUNS = 3

_ROWWISE = ("the page's own flagged slowdown of rowwise float8 under TP (torchtitan issue #1207: the small K/V "
            "projections run about 40% slower in rowwise float8)")
#: Runs whose source says why they are slower than their configuration on the fleet's hardware (matched on the id's
#: start).
SOURCE_SAYS = (
    ("ao-2508-llama3-8b-b200", "the page says its B200s are power limited (limit not printed): the fleet prices "
                               "datasheet B200s, and no PyTorch FSDP run on Blackwell trains the efficiency"),
    ("tt-2506-llama31-8b-h100-fp8rw", _ROWWISE),
    ("tt-2506-llama31-70b-h100-fp8rw", _ROWWISE),
    ("mb-2509-qwen3", "token-drop run (capacity factor 1, padded to capacity): the padded experts' work is not in "
                      "the card's FLOPs"),
)

#: Runs measured on code that is not published (matched on the id's start): the input that set their speed.
UNPUBLISHED = (
    ("mz-qwen3-235b-a22b-h100-bf16-256-ep32-pp8",
     "measured on an internal Megatron-LM branch (the table names moe_dev f3e6c5; it is not in the public "
     "repository): the code that set its speed is not published"),
)

#: The fields a source may leave unprinted that move a run's price, with the values the frameworks allow.
UNPRINTED = (("recompute", ("none", "selective", "full")), ("tp_comm_overlap", (False, True)),
             ("sequence_parallel", (False, True)), ("distributed_optimizer", (False, True)),
             ("fsdp_prefetch", (True, False)), ("ep_overlap", (False, True)), ("moe_dispatcher", ("alltoall", "flex")))

_H200 = ("the same model, micro batch, sequence and float8 recipe on 8 of torchtitan's Grand Teton H100s at a 500 W "
         "limit",
         "PyTorch FSDP's Hopper efficiency is fitted on torchtitan's power-limited H100s; these H200s run at 700 W, "
         "which the fleet prices at the same compute peak")
_RING = ("the same table's run at CP 4, also 32k tokens a rank",
         "the model prices a key of attention alike at every CP degree; fitted on the table's CP 8 run (a training "
         "run), it prices CP 4 and 8 within the goal and CP 1 and 2 too slow: measured, a key costs more at CP 4 "
         "and 8. PyTorch's ring attention (read in torch 2.6.0's context-parallel _attention.py, close to the "
         "table's nightly of 2024-12-23) computes no fully masked block and overlaps its K/V exchange, so its "
         "code does not say why; a profile of one layer at CP 2 and CP 4 would")
#: A held-out run (by id), a second measured run, what the second is, and what the model misses between them.
COMPARISONS = (
    ("tt-2412-llama31-8b-h100-fp8-8-s32k-cp1", "tt-2412-llama31-8b-h100-fp8-8-s128k-cp4", *_RING),
    ("tt-2412-llama31-8b-h100-fp8-8-s64k-cp2", "tt-2412-llama31-8b-h100-fp8-8-s128k-cp4", *_RING),
    ("tt-2506-llama31-8b-h200-fp8-32", "tt-2412-llama31-8b-h100-fp8-8", *_H200),
    ("tt-2506-llama31-8b-h200-fp8-64", "tt-2412-llama31-8b-h100-fp8-8", *_H200),
    ("dgxc-2502-nemotron4-15b-h100-fp8-2048", "dgxc-2502-nemotron4-15b-h100-bf16-2048",
     "the same layout and recipe in BF16",
     "the model gives FP8 more speedup over BF16 than measured, as on this model's other pairs of FP8 and BF16 "
     "runs on H100, and misses the BF16 run itself"),
)

#: Fields in which two runs of a model on one accelerator may differ and still be twins: the FP8 recipe, and the
#: global batch and data-parallel degrees, which scale with the fleet while the batch per GPU stays; the source and
#: the GPU count may differ as well.
TWIN_MAY_DIFFER = ("fp8_recipe", "global_batch", "dp_shard", "dp_replicate")

#: Mechanisms read in the framework's code that the model does not price and that account for part of a miss.
_GPT_OSS = ("Megatron-Core runs gpt-oss with unfused passes the other MoE models do not have (Megatron-LM 2d1fa8d3 "
            "and 44151194, the commits Megatron-Bridge 17a381f95 and 21d102f5e pin; files under megatron/core): "
            "the activation's clamp outside the fused kernel (fusions/fused_bias_geglu.py), the experts' second bias "
            "added expert by expert (_apply_bias in transformer/moe/experts.py) and YaRN RoPE unfused "
            "(rope_utils.py, mscale not 1); memory-bound passes the model does not price, whose share of the step "
            "is not measured here")
CODE = (("mb-260401-gpt-oss-120b", _GPT_OSS),)

#: Mechanisms the runs point to that no measurement here establishes.
CANDIDATES = (
    ("mb-2606-qwen3-30b-a3b-h100-fp8-16",
     "expert parallelism of 16 across 2 nodes with HybridEP, which sends a token once to each node that holds one "
     "of its experts and fans it out over NVLink, where the model prices every routed copy across the fabric (of "
     "a token's 8 copies, about 4 leave the node, where one transfer carries them); how much of the cross-node "
     "transfer the dispatcher saves or hides is not measured here"),
    ("mb-260401-deepseek-v3-b200-mxfp8-256-pp8",
     "expert parallelism of 32 across 4 nodes with DeepEP, the all-to-all overlapped with the other "
     "microbatch's compute: DeepEP sends a token once to each node holding its experts, where the model prices "
     "every routed copy across the fabric (DeepSeek-V3 routes a token to at most 4 nodes: at most 3 transfers "
     "leave its node for its 8 copies); how much of the cross-node transfer that saves, or the overlap hides, is "
     "not measured here"),
    ("dgxc-2505-nemotron4-340b-h100",
     "one layer per virtual pipeline stage (pp 8, v 12), every stage boundary crossing InfiniBand (tp 8 fills a "
     "node): the interleaved schedule's sends and their synchronization, which the model prices by bandwidth and "
     "latency alone; this model's H100 runs all are priced too fast, its GB200 runs are not, but there stages "
     "hold 2 layers and the efficiency is Blackwell's, so the contrast does not isolate the sends"),
    ("tt-2506-llama31-8b-h100-fp8tw",
     "float8 on every linear under TP 8, the small K/V projections included (4096 by 128 a rank), whose casts and "
     "scaling the model does not price; the page measured this cost for rowwise float8 (torchtitan issue #1207); "
     "its 8B tensorwise run without async TP is priced too fast as well, its 70B tensorwise runs are not"),
)


def _error(r: dict, changes: Tuple[Tuple[str, object], ...] = ()) -> float:
    """The model's signed throughput error on ``r`` at the fitted constants, with ``changes`` to its fields."""
    f = M.fit()
    y = M._throughput_function(r["id"], (), changes)(*M.fitted(r, f))
    return float(y / r["measured"]["tokens_per_sec_per_gpu"] - 1)


def unprinted(r: dict) -> Optional[Tuple[str, object, float, Dict[object, float]]]:
    """The unprinted field (``unknown`` provenance, :data:`UNPRINTED`) and value at which the model misses ``r``
    least, with that error and the errors at the field's other values, when it is within the goal's worst; else
    None."""
    best = None
    for field, values in UNPRINTED:
        if not str(r["provenance"].get(field, "")).startswith("unknown"):
            continue
        at = {v: _error(r, ((field, v),)) for v in values if v != r["config"].get(field)}
        at[r["config"].get(field)] = _error(r)
        v = min(at, key=lambda k: abs(at[k]))
        if best is None or abs(at[v]) < abs(best[2]):
            best = (field, v, at[v], {k: e for k, e in at.items() if k != v})
    return best if best is not None and abs(best[2]) <= M.GOAL_WORST else None


def _solve(r: dict, capacity: Optional[float] = None):
    """The run through the public ``solve()`` at the fitted constants (``capacity``: the accelerator's HBM set to
    that many bytes)."""
    from mlsysim_sym import DistributedModel
    f = M.fit()
    kw = M.kwargs(r, M.efficiency_of(f["eta"], r))
    kw["attention_efficiency"] = M.attention_of(f["eta_att"], r)
    fleet = M.fleet(r)
    if capacity is not None:
        acc = replace(fleet.node.accelerator, memory_capacity=capacity)
        fleet = replace(fleet, node=replace(fleet.node, accelerator=acc))
    return DistributedModel(fidelity="extended").solve(M.architecture(r).workload(), fleet, **kw)


def _solve_error(r: dict, res) -> float:
    c = r["config"]
    tokens = c["global_batch"] * c["seq"] / (res.step_latency_total * r["gpus"])
    return tokens / r["measured"]["tokens_per_sec_per_gpu"] - 1


def spilled(r: dict) -> Optional[Dict[str, float]]:
    """For a run whose recipe offloads activations to host memory and which the model prices memory-bound on a
    spill (its state over the HBM, streamed over the host link): the memory per accelerator the model counts, how
    much of it is over the HBM, the step's memory and compute times, and the model's error with the HBM large
    enough to hold it all (at its compute bound); else None."""
    if "offload" not in str(r["config"].get("recompute_layers") or ""):
        return None
    p = _solve(r).node_profile
    if p.feasible or p.latency_memory <= p.latency_compute:
        return None
    return {"footprint": p.memory_footprint, "over": p.offload_spill_bytes, "memory": p.latency_memory,
            "compute": p.latency_compute, "fits": _solve_error(r, _solve(r, p.memory_footprint))}


def _fields(a: dict, b: dict) -> set:
    """The configuration fields of two runs that mean something for both (FSDP's prefetch only where one of them
    shards its parameters)."""
    moot = {"fsdp_prefetch"} if not (a["config"]["fsdp"] or b["config"]["fsdp"]) else set()
    return (set(a["config"]) | set(b["config"])) - moot


def comparison(run_id: str, other_id: str) -> Dict[str, object]:
    """The measured throughput ratio (per GPU) of ``run_id`` to ``other_id``, the model's, the model's error on
    ``other_id``, and the fields in which the two runs differ (the GPU, its count, the source, the configuration;
    FSDP's prefetch only where one of them shards its parameters)."""
    a, b = M.run(run_id), M.run(other_id)
    measured = a["measured"]["tokens_per_sec_per_gpu"] / b["measured"]["tokens_per_sec_per_gpu"]
    differ = [k for k in ("model", "gpu", "gpus", "source") if a[k] != b[k]]
    differ += sorted(k for k in _fields(a, b) if a["config"].get(k) != b["config"].get(k))
    return {"measured": measured, "model": measured * (1 + _error(a)) / (1 + _error(b)), "other": _error(b),
            "differ": differ}


def _twinned(a: dict, b: dict) -> bool:
    if (a["model"], a["gpu"]) != (b["model"], b["gpu"]) or a["id"] == b["id"]:
        return False
    if a["config"]["global_batch"] * b["gpus"] != b["config"]["global_batch"] * a["gpus"]:
        return False
    return all(a["config"].get(k) == b["config"].get(k) for k in _fields(a, b) - set(TWIN_MAY_DIFFER))


def twins(r: dict) -> List[dict]:
    """The rows of the table (:func:`modern.table`) of ``r``'s twins: runs of its model on its accelerator with
    its configuration and its batch per GPU, differing at most in :data:`TWIN_MAY_DIFFER`, the source and the GPU
    count; those differing in fewer fields first, then those the model misses least."""
    rows = [x for x in M.table() if _twinned(r, x["r"])]
    return sorted(rows, key=lambda x: (len(comparison(r["id"], x["r"]["id"])["differ"]), abs(x["error"])))


def line_bias(r: dict) -> Optional[Tuple[float, int]]:
    """The median signed error of the other runs of ``r``'s generation, model kind and release line (training and
    held out), and how many there are; None for a run that is not Megatron-Core's."""
    key = M.release_line(r)
    if key is None:
        return None
    others = [x["error"] for x in M.table() if x["r"]["id"] != r["id"] and M.release_line(x["r"]) == key]
    return (statistics.median(others), len(others)) if others else None


def model_bias(r: dict) -> Optional[Tuple[float, int, List[str], bool]]:
    """The median signed error of the other runs of ``r``'s model under its framework (training and held out),
    how many there are, the accelerators they ran on, and whether every one misses on the same side as that
    median; None where there is no other."""
    stack = M.FRAMEWORKS[r["family"]]
    others = [x for x in M.table() if x["r"]["id"] != r["id"] and x["r"]["model"] == r["model"]
              and M.FRAMEWORKS[x["r"]["family"]] == stack]
    if not others:
        return None
    errs = [x["error"] for x in others]
    med = statistics.median(errs)
    gpus = sorted({x["r"]["gpu"] for x in others})
    return med, len(errs), gpus, all((e > 0) == (med > 0) for e in errs)


def _words(field: str) -> str:
    return field.replace("_", " ")


def nearest_twins(r: dict) -> List[dict]:
    """The twins of ``r`` (:func:`twins`) that differ from it in the fewest fields."""
    found = [(len(comparison(r["id"], x["r"]["id"])["differ"]), x) for x in twins(r)]     # fewest fields first
    return [x for n, x in found if n == found[0][0]]


def _twin_text(r: dict, x: dict) -> str:
    other = x["r"]["id"]
    c = comparison(r["id"], other)
    unread = [what for field, what in (("fp8_recipe", "the FP8 recipe"), ("source", "the release"))
              if field in c["differ"]]
    return (f"its twin {other} (the same model, accelerator, layout, micro batch, sequence and batch per GPU; they "
            f"differ in {', '.join(_words(k) for k in c['differ'])}) is priced within the goal's median, missing by "
            f"{M._pct(c['other'])}; this run measures {c['measured']:.2f} times the twin's tokens/s per GPU, the "
            f"model gives {c['model']:.2f} times: what differs is what the model misses"
            + (f", and the model reads neither {' nor '.join(unread)}" if len(unread) == 2 else
               f", and the model does not read {unread[0]}" if unread else ""))


@lru_cache(maxsize=None)
def why(run_id: str) -> Tuple[str, str]:
    """``(kind, text)``: the first reason of the module's list that applies to the run (:data:`KINDS`)."""
    r = M.run(run_id)
    e = _error(r)
    for prefix, text in SOURCE_SAYS:
        if run_id.startswith(prefix) and e > 0:
            return "source", text
    for prefix, text in UNPUBLISHED:
        if run_id.startswith(prefix):
            return "input", text
    for other, what, meaning in (c[1:] for c in COMPARISONS if c[0] == run_id):
        c = comparison(run_id, other)
        if abs(c["other"]) <= M.GOAL_WORST:
            return "comparison", (f"it measures {c['measured']:.2f} times the tokens/s per GPU of {other} ({what}; "
                                  f"they differ in {', '.join(_words(k) for k in c['differ'])}); the model gives "
                                  f"{c['model']:.2f} times, missing {other} by {M._pct(c['other'])}: {meaning}")
    near = nearest_twins(r)
    if near and all(abs(x["error"]) <= M.GOAL_MEDIAN for x in near):
        return "comparison", _twin_text(r, near[0])
    bias = line_bias(r)
    if bias and bias[1] >= LINE_MIN_RUNS and abs(bias[0]) > M.GOAL_MEDIAN and (bias[0] > 0) == (e > 0):
        rest = (1 + e) / (1 + bias[0]) - 1
        if abs(rest) <= M.GOAL_MEDIAN:
            g, kind, line = M.release_line(r)
            return "line", (f"its release line misses the same way: the other {bias[1]} {kind} {g} runs of {line} "
                            f"by {M._pct(bias[0])} in the median; after dividing that out, {M._pct(rest)}")
    for prefix, text in CODE:
        if run_id.startswith(prefix):
            return "code", text
    s = spilled(r)
    if s:
        return "code", (f"its recipe offloads activations to host memory, which the model does not price; its "
                        f"recompute field reads \"{r['config']['recompute_layers']}\". The model counts "
                        f"{s['footprint'] / 1e9:.0f} GB per GPU, "
                        f"{s['over'] / 1e9:.0f} GB over the HBM, and streams the step's traffic over the host link, "
                        f"memory-bound ({s['memory']:.2f} s against {s['compute']:.2f} s of compute); with the HBM "
                        f"holding it all the model misses by {M._pct(s['fits'])}, and what the offloading costs is "
                        f"not measured here")
    same = model_bias(r)
    if same and same[1] >= LINE_MIN_RUNS and same[3] and abs(same[0]) > M.GOAL_MEDIAN and (same[0] > 0) == (e > 0):
        rest = (1 + e) / (1 + same[0]) - 1
        if abs(rest) <= M.GOAL_MEDIAN:
            stack = M.FRAMEWORKS[r["family"]]
            elsewhere = [x["error"] for x in M.table() if x["r"]["model"] == r["model"]
                         and M.FRAMEWORKS[x["r"]["family"]] != stack]
            beside = (f"; the other frameworks' {len(elsewhere)} runs of it miss by "
                      f"{M._pct(statistics.median(elsewhere))} in the median" if elsewhere else "")
            return "model", (f"the other {same[1]} {stack} runs of {r['model']} (on {', '.join(same[2])}) all miss "
                             f"on the same side, by {M._pct(same[0])} in the median; after dividing that out, "
                             f"{M._pct(rest)}: the miss is {stack}'s on this model, not this run's{beside}; what "
                             f"in the framework makes it is not measured here")
    found = unprinted(r)
    if found:
        field, v, err, others = found
        rest = ", ".join(f"at {k} {M._pct(x)}" for k, x in others.items())
        return "candidate", (f"the source leaves its {_words(field)} unprinted (read as {r['config'].get(field)}); "
                             f"at {v} the model misses it by {M._pct(err)} ({rest}), which nothing here confirms")
    for prefix, text in CANDIDATES:
        if run_id.startswith(prefix):
            return "candidate", text
    return "none", ("neither its source, an unpublished input, a comparison run, its release line nor its model "
                    "accounts for it")


def beyond() -> List[dict]:
    """The held-out runs beyond the goal's worst, worst first, each with its error and reason."""
    rows = [x for x in M.table() if not x["training"] and abs(x["error"]) > M.GOAL_WORST]
    out = []
    for x in sorted(rows, key=lambda x: -abs(x["error"])):
        kind, text = why(x["r"]["id"])
        out.append({"id": x["r"]["id"], "error": x["error"], "kind": kind, "why": text,
                    "classes": x["r"]["classes"]})
    return out
