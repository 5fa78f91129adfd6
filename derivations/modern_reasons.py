"""Why a held-out run of ``docs/modern_runs.md`` stays beyond the goal's worst error: each reason is tried in turn,
and the first that applies is the run's.

1. **source**: the run's own source says why (:data:`SOURCE_SAYS`, matched on the id's start: power-limited or
   non-datasheet hardware, a slowdown the page flags, a token-drop run).
2. **input**: the run was measured on code that is not published (:data:`UNPUBLISHED`), or a configuration field
   the source leaves unprinted (its provenance ``unknown``) has another value at which the model reaches the run
   (:data:`UNPRINTED`, each field with the values its frameworks allow).
3. **comparison**: a second measured run that differs from this one in a stated way, whose measured ratio to this
   one the model does not reproduce (:data:`COMPARISONS`): what differs is what the model misses.
4. **release**: a Megatron-Core run whose release line misses the same way (the median signed error of the other
   runs of its generation, model kind and line, at least :data:`LINE_MIN_RUNS` of them, beyond the goal's median)
   and which, that median divided out, is within the goal's worst: the release, an input the model does not read.
5. **code**: mechanisms read in the framework's code at the run's commit that the model does not price, where
   they account for part of the miss only (:data:`CODE`), and **candidate**: a mechanism the runs point to that no
   measurement here establishes (:data:`CANDIDATES`); neither explains the run.
6. **none**: nothing here explains it.

The first four kinds account for the run (they name the mechanism or the unpublished input that limits it, with a
measurement behind it); ``code``, ``candidate`` and ``none`` do not, the first two naming where to look.
"""
from __future__ import annotations

import statistics
from functools import lru_cache
from typing import Dict, List, Optional, Tuple

from . import modern as M

#: The kinds of reason, in the order they are tried, and whether each accounts for the run.
KINDS = {"source": True, "input": True, "comparison": True, "release": True, "code": False, "candidate": False,
         "none": False}
#: A release line's bias counts only with this many other runs of its generation, model kind and line.
LINE_MIN_RUNS = 3

#: What keeps a held-out run beyond the goal's worst, for the runs whose source says why (matched on the id's
#: start): the reason a model of the configuration cannot reach it.
SOURCE_SAYS = (
    ("ao-2508-llama3-8b-b200", "the page says its B200s are power limited (limit not printed): the fleet prices "
                               "datasheet B200s"),
    ("tt-2506-llama31-8b-h100-fp8rw", "the page's own flagged slowdown of rowwise float8 under TP (torchtitan "
                                      "issue #1207), on Grand Teton H100 96 GB HBM2e at a 500 W limit"),
    ("tt-2506-llama31-70b-h100-fp8rw", "the page's own flagged slowdown of rowwise float8 under TP (torchtitan "
                                       "issue #1207), on Grand Teton H100 96 GB HBM2e at a 500 W limit"),
    ("tt-2506-llama31-8b-h100", "Grand Teton H100 96 GB HBM2e at a 500 W limit (the fleet prices a 700 W H100 SXM)"),
    ("tt-2506-llama31-70b-h100", "Grand Teton H100 96 GB HBM2e at a 500 W limit (the fleet prices a 700 W H100 "
                                 "SXM)"),
    ("tt-2412-", "Grand Teton H100 96 GB HBM2e at a 500 W limit (the fleet prices a 700 W H100 SXM)"),
    ("mb-2509-qwen3", "token-drop run (capacity factor 1, padded to capacity): the padded experts' work is not in "
                      "the card's FLOPs, and the same layout printed token-dropless later measured otherwise"),
)

#: The fields a source may leave unprinted that move a run's price, with the values the frameworks allow.
UNPRINTED = (("recompute", ("none", "selective", "full")), ("tp_comm_overlap", (False, True)),
             ("sequence_parallel", (False, True)), ("distributed_optimizer", (False, True)),
             ("fsdp_prefetch", (True, False)), ("ep_overlap", (False, True)), ("moe_dispatcher", ("alltoall", "flex")))

#: A held-out run (by id) and a second measured run with what sets them apart, and what the model misses there.
COMPARISONS = (
    ("tt-2506-llama31-8b-h200-fp8-32", "tt-2412-llama31-8b-h100-fp8-8",
     "the same model, micro batch, sequence and float8 recipe on torchtitan's Grand Teton H100s at a 500 W limit",
     "PyTorch FSDP's Hopper efficiency is fitted on those power-limited H100s; these are 700 W H200s, which the "
     "fleet prices as H100s with more memory"),
    ("tt-2506-llama31-8b-h200-fp8-64", "tt-2412-llama31-8b-h100-fp8-8",
     "the same model, micro batch, sequence and float8 recipe on torchtitan's Grand Teton H100s at a 500 W limit",
     "PyTorch FSDP's Hopper efficiency is fitted on those power-limited H100s; these are 700 W H200s, which the "
     "fleet prices as H100s with more memory"),
    ("mb-2511-llama31-405b-h100-fp8cs-1024", "mb-2606-llama31-405b-h100-fp8-1024",
     "the same layout and FP8 recipe at a global batch of 1536 in a later release",
     "a cost of each step (at the pipeline's flush: gradient synchronization, optimizer) beyond what the model "
     "prices, or the release"),
    ("dgxc-2502-nemotron4-15b-h100-fp8-2048", "dgxc-2502-nemotron4-15b-h100-bf16-2048",
     "the same layout and recipe in BF16",
     "the model gives FP8 more than the measured speedup at this layout (tp 4 on a model of width 6144), "
     "pricing FP8 GEMMs at one efficiency for every shape"),
    ("mb-2509-llama31-405b-gb200-mxfp8-128", "mb-2509-llama31-405b-gb200-fp8-fsdp-128",
     "the same model on as many GB200s in the same release, with FSDP at tp 2 and no pipeline",
     "the model ranks this layout (tp 4, pp 8, v 8, cp 2) against FSDP the other way round from the measurement"),
)

#: Runs measured on code that is not published (matched on the id's start): the input that set their speed.
UNPUBLISHED = (
    ("mz-qwen3-235b-a22b-h100-bf16-256-ep32-pp8",
     "measured on an internal Megatron-LM branch (the table names moe_dev f3e6c5; it is not in the public "
     "repository): the code that set its speed is not published"),
)

#: Mechanisms read in the framework's code that the model does not price and that account for part of a miss.
_GPT_OSS = ("Megatron-Core runs gpt-oss with unfused passes the other MoE models do not have (Megatron-LM 2d1fa8d3 "
            "and 44151194, the commits Megatron-Bridge 17a381f95 and 21d102f5e pin; files under megatron/core): "
            "the activation's clamp outside the fused kernel (fusions/fused_bias_geglu.py), the experts' second bias "
            "added expert by expert (_apply_bias in transformer/moe/experts.py) and YaRN RoPE unfused "
            "(rope_utils.py, mscale not 1); by their memory traffic an estimated 12-17% of a Blackwell step, not "
            "the whole miss")
CODE = (("mb-260401-gpt-oss-120b", _GPT_OSS),)

#: Mechanisms the runs point to that no measurement here establishes.
CANDIDATES = (
    ("mb-2606-qwen3-30b-a3b-h100-fp8-16",
     "expert parallelism of 16 across 2 nodes with HybridEP, which sends a token once to each node that holds one "
     "of its experts and fans it out over NVLink, where the model prices every routed copy across the fabric (of "
     "a token's 8 copies, about 4 leave the node, where one transfer carries them); how much of the cross-node "
     "transfer the dispatcher saves or hides is not measured here"),
    ("mb-260401-deepseek-v3-b200-mxfp8-256-pp8",
     "expert parallelism of 32 across 4 nodes with DeepEP and the all-to-all overlapped with the other "
     "microbatch: DeepEP sends a token once to each node holding its experts, where the model prices every routed "
     "copy across the fabric; the same model at EP 8 in the node (mb-2604-deepseek-v3-b200-mxfp8-256-pp16) is "
     "within its release line's bias"),
    ("dgxc-2505-nemotron4-340b-h100",
     "one layer per virtual pipeline stage (pp 8, v 12), every stage boundary crossing InfiniBand (tp 8 fills a "
     "node): the interleaved schedule's sends and their synchronization, which the model prices by bandwidth and "
     "latency alone; this model's H100 runs all miss the same way, its GB200 runs (pp 4, v 12, stage boundaries on "
     "NVLink) do not"),
)


def _error(r: dict, changes: Tuple[Tuple[str, object], ...] = ()) -> float:
    """The model's signed throughput error on ``r`` at the fitted constants, with ``changes`` to its fields."""
    f = M.fit()
    y = M._throughput_function(r["id"], (), changes)(M.efficiency_of(f["eta"], r), f["eta_8"],
                                                     M.attention_of(f["eta_att"], r), f["k_pass"])
    return float(y / r["measured"]["tokens_per_sec_per_gpu"] - 1)


def unprinted(r: dict) -> Optional[Tuple[str, object, float]]:
    """The unprinted field and value (``unknown`` provenance, :data:`UNPRINTED`) at which the model misses ``r`` least,
    with that error, when it is within the goal's worst; else None."""
    best = None
    for field, values in UNPRINTED:
        if not str(r["provenance"].get(field, "")).startswith("unknown"):
            continue
        for v in values:
            if v != r["config"].get(field):
                e = _error(r, ((field, v),))
                if best is None or abs(e) < abs(best[2]):
                    best = (field, v, e)
    return best if best is not None and abs(best[2]) <= M.GOAL_WORST else None


def comparison(run_id: str, other_id: str) -> Dict[str, float]:
    """The measured throughput ratio (per GPU) of ``run_id`` to ``other_id``, and the model's."""
    a, b = M.run(run_id), M.run(other_id)
    measured = a["measured"]["tokens_per_sec_per_gpu"] / b["measured"]["tokens_per_sec_per_gpu"]
    return {"measured": measured, "model": measured * (1 + _error(a)) / (1 + _error(b))}


def line_bias(r: dict) -> Optional[Tuple[float, int]]:
    """The median signed error of the other runs of ``r``'s generation, model kind and release line (training and
    held out), and how many there are; None for a run that is not Megatron-Core's."""
    key = M.release_line(r)
    if key is None:
        return None
    others = [x["error"] for x in M.table() if x["r"]["id"] != r["id"] and M.release_line(x["r"]) == key]
    return (statistics.median(others), len(others)) if others else None


@lru_cache(maxsize=None)
def why(run_id: str) -> Tuple[str, str]:
    """``(kind, text)``: the first reason of the module's list that applies to the run (:data:`KINDS`)."""
    r = M.run(run_id)
    for prefix, text in SOURCE_SAYS:
        if run_id.startswith(prefix):
            return "source", text
    for prefix, text in UNPUBLISHED:
        if run_id.startswith(prefix):
            return "input", text
    found = unprinted(r)
    if found:
        field, v, e = found
        return "input", (f"the source does not print its {field.replace('_', ' ')} (read as "
                         f"{r['config'].get(field)}); at {v} the model misses by {M._pct(e)}")
    for rid, other, what, meaning in COMPARISONS:
        if run_id == rid:
            c = comparison(rid, other)
            return "comparison", (f"it measures {c['measured']:.2f} times the tokens/s per GPU of {other} ({what}); "
                                  f"the model gives {c['model']:.2f} times: {meaning}")
    bias, e = line_bias(r), _error(r)
    if bias and bias[1] >= LINE_MIN_RUNS and abs(bias[0]) > M.GOAL_MEDIAN and (bias[0] > 0) == (e > 0):
        rest = (1 + e) / (1 + bias[0]) - 1
        if abs(rest) <= M.GOAL_WORST:
            g, kind, line = M.release_line(r)
            return "release", (f"its release line misses the same way: the other {bias[1]} {kind} {g} runs of "
                               f"{line} by {M._pct(bias[0])} in the median; that divided out, {M._pct(rest)}")
    for table, kind in ((CODE, "code"), (CANDIDATES, "candidate")):
        for prefix, text in table:
            if run_id.startswith(prefix):
                return kind, text
    return "none", "unexplained: neither its configuration, its release line nor a comparison run explains it"


def beyond() -> List[dict]:
    """The held-out runs beyond the goal's worst, worst first, each with its error and reason."""
    rows = [x for x in M.table() if not x["training"] and abs(x["error"]) > M.GOAL_WORST]
    out = []
    for x in sorted(rows, key=lambda x: -abs(x["error"])):
        kind, text = why(x["r"]["id"])
        out.append({"id": x["r"]["id"], "error": x["error"], "kind": kind, "why": text,
                    "classes": x["r"]["classes"]})
    return out
