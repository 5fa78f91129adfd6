"""The extended model against measured runs of today (``docs/modern_runs.md``): FP8, mixtures of experts, FSDP,
context parallelism, Hopper and Blackwell, from the performance tables frameworks publish.

* **Runs**: ``derivations/data/modern_runs/<family>.json``, one file per independent source family (NVIDIA's
  Megatron-Bridge/NeMo performance pages, torchtitan and the PyTorch-native pages around it, MosaicML's
  llm-foundry, NVIDIA's DGX Cloud benchmarking recipes and MLPerf Training logs). Each run names its source, every
  configuration field and where that field comes from (printed, a recipe file at a commit, or a framework default),
  the source's FLOP convention, and the measured tokens per second per GPU, which the comparison uses (it needs no
  FLOP convention).
* **Split, fixed before any fit**: :func:`derivations.modern_split.training` (the SHA-256 of the run's id
  divisible by 3 trains; committed before the first fit).
* **What is fitted**: the efficiency passed to ``solve()`` (one value for every run) and ``eta_FP8``, minimizing
  the sum of absolute log errors of the training runs' throughput (a grid, then a finer one). ``x_1/2`` keeps its
  value from the 22 runs of ``docs/extended.md``.
* **Before**: the extended model without this issue's mechanisms (``without=NEW``), its efficiency fitted the
  same way on the same runs.
"""
from __future__ import annotations

import json
import math
import statistics
import textwrap
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np

from mlsysim_sym import catalog, modern
from mlsysim_sym.architecture import Architecture
from mlsysim_sym.arguments import parameters_of
from mlsysim_sym.compile import compile_quantities
from mlsysim_sym.symbols import PARAMS, sym
from mlsysim_sym.types import Fleet, Node

from .modern_split import training

DATA = Path(__file__).parent / "data" / "modern_runs"
#: The mechanisms this validation adds to the extended model (``docs/extended.md`` validates the others).
NEW = ("fp8_gemms", "moe_layout", "fsdp_overlap", "cp_overlap", "ep_overlap", "attention_kernels",
       "pipeline_balance", "pass_overhead", "moe_permutation")
#: The classes the goal is stated per.
CLASSES = ("dense BF16", "dense FP8", "MoE", "FSDP", "CP", "Blackwell")
GOAL_MEDIAN, GOAL_WORST = 0.05, 0.15
ETA_GRID = np.linspace(0.20, 1.00, 161)


@lru_cache(maxsize=1)
def families() -> Dict[str, dict]:
    """Family key -> its file's contents (sources, architectures, runs)."""
    return {p.stem: json.loads(p.read_text()) for p in sorted(DATA.glob("*.json"))}


@lru_cache(maxsize=1)
def runs() -> Tuple[dict, ...]:
    out = []
    for fam, d in families().items():
        for r in d["runs"]:
            out.append(dict(r, family=fam))
    return tuple(out)


def run(run_id: str) -> dict:
    return {r["id"]: r for r in runs()}[run_id]


def architecture(r: dict) -> Architecture:
    own = families()[r["family"]].get("architectures", {})
    if r["model"] in own:
        fields = {k: v for k, v in own[r["model"]].items() if k in Architecture.__dataclass_fields__}
        return Architecture(name=r["model"], **fields)
    return modern.architecture(modern.PREFIX + r["model"])


#: GPU -> the node and fabric its runs are priced on (the modern catalog's, and mlsysim's DGX A100 on HDR).
_NODES = {"H100": "modern/H100-SXM-1024", "H200": "modern/H200-1024", "B200": "modern/B200-1024",
          "GB200": "modern/GB200-NVL72-1152", "A100-80GB": "Training_1K_A100"}


def fleet(r: dict) -> Fleet:
    """The run's accelerators: ``gpus`` of its GPU on the catalog's node and fabric. A GB200 NVL72 rack is one
    NVLink domain of 72; a run whose GPU count 72 does not divide is priced on NVLink domains of 64 (the 16
    compute trays jobs use per rack), or of its whole count below 64."""
    name = _NODES[r["gpu"]]
    base = modern.fleet(name) if name.startswith(modern.PREFIX) else catalog.fleet(name)
    node, n = base.node, int(r["gpus"])
    apn = node.accelerators_per_node
    if r["gpu"] == "GB200" and n % apn:
        apn = 64 if n % 64 == 0 else n
        node = Node(f"{node.name}, {apn} per NVLink domain", node.accelerator, apn, node.intra_node_bw)
    if n % apn:
        apn = n
        node = Node(f"{node.name} ({n} used)", node.accelerator, n, node.intra_node_bw)
    return Fleet(f"{n} x {r['gpu']}", node, n // apn, base.fabric)


def kwargs(r: dict, efficiency: float = 0.5) -> Dict[str, object]:
    """``solve()``'s keywords for the run (the extended model's): its layout, its schedule (microbatches per
    pipeline, else gradient-accumulation steps), its precision and its frameworks' switches."""
    c = r["config"]
    n = int(r["gpus"])
    tp, pp, cp = int(c["tp"]), int(c["pp"]), int(c.get("cp") or 1)
    dp = n // (tp * pp * cp)
    per_step = int(c["global_batch"]) // (dp * int(c["micro_batch"]))
    fsdp = bool(c.get("fsdp"))
    zero = 3 if fsdp else (1 if c.get("distributed_optimizer") else 0)
    return dict(batch_size=int(c["global_batch"]), precision=c["precision"], efficiency=efficiency,
                tp_size=tp, pp_size=pp, ep_size=int(c.get("ep") or 1), etp_size=int(c.get("etp") or 1),
                cp_size=cp, v_stages=int(c.get("vp") or 1),
                microbatch_count=max(1, per_step) if pp > 1 else 1,
                gradient_accumulation_steps=1 if pp > 1 else max(1, per_step), zero_stage=zero,
                activation_recomputation=c.get("recompute") == "full", overlap_comm=True,
                seq_len=int(c["seq"]), sequence_parallel=bool(c.get("sequence_parallel")) and tp > 1,
                tp_comm_overlap=bool(c.get("tp_comm_overlap")) and tp > 1,
                fsdp_overlap=fsdp and c.get("fsdp_prefetch") is not False,
                cp_overlap=cp > 1 and "p2p" in str(c.get("cp_comm") or ""),
                ep_overlap=bool(c.get("ep_overlap")) and int(c.get("ep") or 1) > 1,
                fused_dispatch=c.get("moe_dispatcher") == "flex")


@lru_cache(maxsize=None)
def _throughput_function(run_id: str, without: Tuple[str, ...] = (), changes: Tuple[Tuple[str, object], ...] = ()):
    """Tokens per second per GPU of the run as a numpy function of ``(eta, eta_8, eta_att, k_pass, eta_EP-ov)``,
    from the model's own compiled expressions (the extended model, ``without`` the named mechanisms; ``changes``:
    configuration fields set to other values, ``(field, value)`` pairs)."""
    r = run(run_id)
    if changes:
        r = dict(r, config={**r["config"], **dict(changes)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            variant, values = parameters_of(architecture(r).workload(), fleet(r), **kwargs(r), fidelity="extended",
                                            without=without)
        except ValueError as e:      # mlsysim's layout cannot place an MoE run EP beside DP: it has no price
            return _unpriced(str(e))
    c = compile_quantities(variant, ("T_step", "lb", "dp"), "numpy")
    n = int(r["gpus"])
    s = int(r["config"]["seq"])

    def tokens(eta, eta_8=PARAMS["eta_8"].value, eta_att=PARAMS["eta_att"].default, k=PARAMS["k_pass"].value,
               ep=PARAMS["eta_epov"].value):
        v = {**values, sym.eta: eta, sym.eta_8: eta_8, sym.eta_att: eta_att, sym.k_pass: k, sym.eta_epov: ep}
        T, lb, dp = c.fn(*(v[a] for a in c.args))
        return lb * dp * s / (T * n)
    return tokens


#: The accelerator generations, each with its own efficiency (the ``efficiency`` a user passes to ``solve()``).
GENERATIONS = {"A100-80GB": "Ampere", "H100": "Hopper", "H200": "Hopper", "B200": "Blackwell", "GB200": "Blackwell"}


#: The framework each family's runs were measured with (the efficiency a user passes is their stack's).
FRAMEWORKS = {"megatron_bridge": "Megatron-Core", "dgxc": "Megatron-Core", "torchtitan": "PyTorch FSDP",
              "llm_foundry": "Composer"}


def generation(r: dict, by_release: bool = False) -> str:
    """The key of the run's efficiency: its framework and accelerator generation (``by_release``: a Megatron-Core
    run's release line, :data:`RELEASE_LINES`, in place of its framework)."""
    stack = FRAMEWORKS[r["family"]]
    if by_release and stack == "Megatron-Core":
        stack = RELEASE_LINES[r["source"].split("-")[0]]
    return f"{stack}, {GENERATIONS[r['gpu']]}"


def _unpriced(reason: str):
    def tokens(eta, eta_8=None, eta_att=None, k=None, ep=None):
        return np.full(np.broadcast(eta, eta_8, eta_att).shape, np.nan)
    tokens.reason = reason
    return tokens


def priced(r: dict, without: Tuple[str, ...] = ()) -> bool:
    """Whether the model (``without`` the named mechanisms) can price the run at all."""
    return not hasattr(_throughput_function(r["id"], without), "reason")


def efficiency_of(eta: Dict[str, float], r: dict) -> float:
    """The run's fitted efficiency: its framework's on its generation, or where no training run has that pair,
    the mean of the other frameworks' on the generation."""
    for key in (generation(r, by_release=True), generation(r)):
        if key in eta:
            return eta[key]
    same = [v for k, v in eta.items() if k.endswith(", " + GENERATIONS[r["gpu"]])]
    return float(np.mean(same))


def attention_of(eta_att: Dict[str, float], r: dict) -> float:
    """The run's fitted attention efficiency: its framework's (the attention kernels are its stack's)."""
    return eta_att[FRAMEWORKS[r["family"]]]


def fitted(r: dict, f: Dict[str, object]) -> Tuple[float, float, float, float, float]:
    """The arguments of the run's throughput function (:func:`_throughput_function`) at the constants of fit ``f``:
    its efficiency, ``eta_8``, its framework's attention efficiency, ``k_pass`` and ``eta_EP-ov``."""
    return efficiency_of(f["eta"], r), f["eta_8"], attention_of(f["eta_att"], r), f["k_pass"], f["eta_epov"]


def log_errors(rs, eta, eta_8=PARAMS["eta_8"].value, eta_att=PARAMS["eta_att"].default,
               without: Tuple[str, ...] = (), k=PARAMS["k_pass"].value, ep=PARAMS["eta_epov"].value) -> np.ndarray:
    """log(predicted / measured) of each run; ``eta`` a number, or a mapping generation -> efficiency;
    ``eta_att`` a number, or a mapping framework -> attention efficiency."""
    out = []
    for r in rs:
        e = efficiency_of(eta, r) if isinstance(eta, dict) else eta
        a = attention_of(eta_att, r) if isinstance(eta_att, dict) else eta_att
        out.append(np.log(_throughput_function(r["id"], without)(e, eta_8, a, k, ep)
                          / r["measured"]["tokens_per_sec_per_gpu"]))
    return np.stack(out)


def split() -> Tuple[List[dict], List[dict]]:
    t = [r for r in runs() if training(r["id"])]
    h = [r for r in runs() if not training(r["id"])]
    return t, h


ETA8_GRID = np.linspace(0.50, 1.00, 51)
ATT_GRID = np.linspace(0.20, 1.00, 41)


#: The framework taxes per layer pass tried (``k_pass``, per forward-pass equivalent): 0 (about mlsysim's) to 200.
PASS_GRID = np.arange(0.0, 201.0, 10.0)
#: The shares of a replica's compute the EP all-to-alls can run beside tried (``eta_EP-ov``): none to all of it.
EPOV_GRID = np.round(np.arange(0.0, 1.0001, 0.05), 2)


@lru_cache(maxsize=None)
def fit(without: Tuple[str, ...] = (), by_release: bool = False) -> Dict[str, object]:
    """The constants minimizing the training runs' summed absolute log error of throughput: one efficiency per
    accelerator generation, ``eta_FP8`` (where FP8 GEMMs are priced), ``eta_att`` (where attention kernels
    are), ``k_pass`` (the fixed cost of a layer pass) and ``eta_EP-ov`` (the share of the compute overlapped
    all-to-alls run beside). For each pair of the shared rates on a grid, each generation's efficiency is the best
    of its own grid (the runs of one generation read only its efficiency), so the search is exact on the grids;
    ``k_pass`` and ``eta_EP-ov`` are fitted over :data:`PASS_GRID` and :data:`EPOV_GRID` with every mechanism on and
    one efficiency per framework and generation, and kept at those values by the ablations and the per-release
    fit (each refit of the efficiencies and rates at one count takes about a second)."""
    passes = "pass_overhead" not in without
    full = not without and not by_release
    grid = PASS_GRID if full else np.array([PARAMS["k_pass"].value])
    eps = EPOV_GRID if full else np.array([PARAMS["eta_epov"].value])
    best = min((f for k in grid for f in _fit_at(without, by_release, float(k), eps)), key=lambda f: f["objective"])
    return best if passes else dict(best, k_pass=0.0)


def _fit_at(without: Tuple[str, ...], by_release: bool, k_pass: float, eps: np.ndarray) -> List[Dict[str, object]]:
    """:func:`fit` at one fixed cost of a layer pass, one fit for each ``eta_EP-ov`` of ``eps``. For each
    ``eta_FP8`` on its grid: each framework's attention efficiency is the best of its grid for the framework's
    runs (each of its generations at its own best efficiency), then ``eta_FP8`` the best of the sum over
    frameworks. Only the runs with the EP all-to-all overlapped read ``eta_EP-ov``: the others are priced once."""
    train = [r for r in split()[0] if priced(r, without)]
    e8 = ETA8_GRID if "fp8_gemms" not in without else np.array([PARAMS["eta_8"].value])
    ea = ATT_GRID if "attention_kernels" not in without else np.array([PARAMS["eta_att"].default])
    E, E8, EA = np.meshgrid(ETA_GRID, e8, ea, indexing="ij")
    objectives: List[Dict[str, np.ndarray]] = [{} for _ in eps]   # per eta_EP-ov: generation -> (eta, eta_8, eta_att)
    stack: Dict[str, str] = {}                                     # generation -> framework

    def summed(rs, ep):
        return np.abs(log_errors(rs, E, E8, EA, without, k_pass, ep)).sum(axis=0) if rs else 0.0
    for g in sorted({generation(r, by_release) for r in train}):
        rs = [r for r in train if generation(r, by_release) == g]
        moved = [r for r in rs if r["config"].get("ep_overlap")]
        rest = summed([r for r in rs if r not in moved], eps[0])
        for objective, ep in zip(objectives, eps):
            objective[g] = rest + summed(moved, float(ep))
        stack[g] = FRAMEWORKS[rs[0]["family"]]
    return [_best(objective, stack, e8, ea, k_pass, float(ep)) for objective, ep in zip(objectives, eps)]


def _best(objective: Dict[str, np.ndarray], stack: Dict[str, str], e8, ea, k_pass: float, ep: float):
    per_stack = {a: sum(objective[g].min(axis=0) for g in objective if stack[g] == a)      # (eta_8, eta_att)
                 for a in sorted(set(stack.values()))}
    total = sum(t.min(axis=1) for t in per_stack.values())
    j = int(np.argmin(total))
    att = {a: int(np.argmin(t[j])) for a, t in per_stack.items()}
    return {"eta": {g: round(float(ETA_GRID[np.argmin(o[:, j, att[stack[g]]])]), 3) for g, o in objective.items()},
            "eta_8": round(float(e8[j]), 3), "eta_att": {a: round(float(ea[k]), 3) for a, k in att.items()},
            "k_pass": k_pass, "eta_epov": ep, "objective": float(total[j])}


def _stats(errors) -> Dict[str, float]:
    a = [abs(float(e)) for e in errors if not np.isnan(e)]
    if not a:
        return {"median": math.nan, "worst": math.nan, "n": 0}
    return {"median": statistics.median(a), "worst": max(a), "n": len(a)}


def errors(rs, without: Tuple[str, ...] = (), by_release: bool = False) -> np.ndarray:
    f = fit(without, by_release)
    return np.exp(log_errors(rs, f["eta"], f["eta_8"], f["eta_att"], without, f["k_pass"], f["eta_epov"])) - 1


def by_class(rs, errs) -> Dict[str, Dict[str, float]]:
    out = {"all": _stats(errs)}
    for c in CLASSES:
        out[c] = _stats([e for r, e in zip(rs, errs) if c in r["classes"]])
    return out


# --------------------------------------------------------------------------------------------
# The document (docs/modern_runs.md)
# --------------------------------------------------------------------------------------------
#: The fields that set a run's layout and batch: a run's configuration is fully published when the source prints
#: each of them (or they follow from printed figures, or do not apply), a degree left at 1 by the framework's
#: documented default counting as printed (a TP degree of a framework without TP).
LAYOUT_FIELDS = ("model", "gpu", "gpus", "precision", "global_batch", "micro_batch", "seq", "tp", "pp", "cp", "vp",
                 "ep", "etp")


def _published(r: dict) -> bool:
    """Whether the run's layout and batch are fully published (:data:`LAYOUT_FIELDS`)."""
    for k in LAYOUT_FIELDS:
        v = str(r["provenance"].get(k, "n/a"))
        if v.startswith(("published", "n/a", "derived")):
            continue
        if v.startswith("default") and r["config"].get(k, r.get(k)) in (1, None):
            continue
        return False
    return True


def _origin(r: dict) -> str:
    """Where the configuration comes from: ``P`` when its layout and batch are fully published, else ``p``; then
    the letters of what filled the other fields: ``R`` a recipe, ``D`` a framework default, ``U`` unknown."""
    kinds = set()
    for v in r["provenance"].values():
        v = str(v)
        if v.startswith("recipe"):
            kinds.add("R")
        elif v.startswith("default"):
            kinds.add("D")
        elif v.startswith("unknown"):
            kinds.add("U")
    return ("P" if _published(r) else "p") + "".join(k for k in "RDU" if k in kinds)


def _pct(x: float) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:+.1f}%"


def _apct(x: float) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * abs(x):.1f}%"


def _layout(r: dict) -> str:
    c = r["config"]
    parts = [f"tp{c['tp']}", f"pp{c['pp']}" + (f"v{c['vp']}" if (c.get("vp") or 1) > 1 else ""),
             f"cp{c.get('cp') or 1}"]
    if (c.get("ep") or 1) > 1:
        parts.append(f"ep{c['ep']}" + (f"/etp{c['etp']}" if (c.get("etp") or 1) > 1 else ""))
    if c.get("fsdp"):
        parts.append("FSDP")
    return " ".join(parts)


def switches(r: dict) -> str:
    """The run's switches as :func:`kwargs` sets them, by their short names (``SP, TP overlap, ZeRO 1``): every
    switch that is on but the DP overlap (on in every run) and full recomputation (the recompute column)."""
    from mlsysim_sym.symbols import Kind, keywords
    kw = kwargs(r)
    on = [p.short for k, p in keywords().items() if p.kind is Kind.FLAG and kw.get(k) is True
          and k not in ("overlap_comm", "activation_recomputation")]
    return ", ".join(on + ([f"ZeRO {kw['zero_stage']}"] if kw["zero_stage"] else [])) or "-"


#: A run of the document, its priced throughput reproduced from its data file (the ``Reproducing a run`` section).
EXAMPLE_RUN = "dgxc-2504-llama31-70b-h100-bf16-64"


def reproduced() -> Dict[str, str]:
    """The example run priced as the section's code prices it: ``solve()`` of the extended model on the run's card,
    fleet and keywords, at its fitted efficiencies; tokens per second per GPU."""
    from mlsysim_sym import DistributedModel
    r, f = run(EXAMPLE_RUN), fit()
    eta, eta_att = efficiency_of(f["eta"], r), attention_of(f["eta_att"], r)
    res = DistributedModel(fidelity="extended").solve(architecture(r), fleet(r), **kwargs(r, eta),
                                                      attention_efficiency=eta_att)
    tokens = res.effective_throughput * int(r["config"]["seq"]) / int(r["gpus"])
    return {"id": EXAMPLE_RUN, "tokens": f"{tokens:.1f}", "eta": f"{eta:g}", "eta_att": f"{eta_att:g}",
            "generation": generation(r), "call": (
                f"from derivations import modern as M\nfrom mlsysim_sym import DistributedModel\n"
                f"r = M.run({EXAMPLE_RUN!r})\nresult = DistributedModel(fidelity=\"extended\").solve(\n"
                f"    M.architecture(r), M.fleet(r), **M.kwargs(r, {eta:g}),\n"
                f"    attention_efficiency={eta_att:g})\n"
                f"# M.kwargs(r, {eta:g}) is:\n" + "\n".join(textwrap.wrap(
                    ", ".join(f"{k}={v!r}" for k, v in kwargs(r, eta).items()), 60, initial_indent="#   ",
                    subsequent_indent="#   ")))}


@lru_cache(maxsize=1)
def table() -> List[dict]:
    rs = list(runs())
    after, before = errors(rs), errors(rs, NEW)
    f = fit()
    rows = []
    for r, e, b in zip(rs, after, before):
        pred = r["measured"]["tokens_per_sec_per_gpu"] * (1 + e)
        rows.append({"r": r, "training": training(r["id"]), "error": float(e), "before": float(b),
                     "predicted": float(pred), "eta": efficiency_of(f["eta"], r)})
    return rows


def _class_rows(rows, key: str) -> List[List[str]]:
    out = []
    for c in ("all",) + CLASSES:
        sel = [x for x in rows if c == "all" or c in x["r"]["classes"]]
        a, b = _stats([x[key] for x in sel]), _stats([x["before"] for x in sel])
        pub = _stats([x[key] for x in sel if _published(x["r"])])
        out.append([c, str(a["n"]), _apct(a["median"]), _apct(a["worst"]), _apct(b["median"]), _apct(b["worst"]),
                    f"{pub['n']}", _apct(pub["worst"])])
    return out


@lru_cache(maxsize=1)
def ablation() -> List[List[str]]:
    """Held-out median per class with each of this issue's mechanisms priced as mlsysim prices it, its constants
    fitted again (the runs it cannot price at all are left out of its column)."""
    _, held = split()
    out = []
    for m in ("none",) + NEW:
        wo = () if m == "none" else (m,)
        e = errors(held, wo)
        st = by_class(held, e)
        priced = sum(1 for x in e if not np.isnan(x))
        out.append([(m if m != "none" else "none") + (f" ({priced})" if priced != len(held) else "")] +
                   [_apct(st[c]["median"]) for c in ("all",) + CLASSES])
    return out


def _not_earning(rows: List[List[str]]) -> List[Tuple[str, str]]:
    """The mechanisms whose ablation row's all-runs median is below every mechanism on (the first row)."""
    on = float(rows[0][1].rstrip("%"))
    return [(row[0].split(" (")[0], row[1]) for row in rows[1:] if float(row[1].rstrip("%")) < on]


def dispatchers() -> List[List[str]]:
    """The MoE runs' errors by token dispatcher (Megatron-Core's plain all-to-all, or the fused ``flex`` one of
    DeepEP / HybridEP): ``[dispatcher, runs, median signed error, median absolute, range]``."""
    out = []
    rows = [x for x in table() if "MoE" in x["r"]["classes"]]
    for kind in ("alltoall", "flex"):
        e = [x["error"] for x in rows if x["r"]["config"].get("moe_dispatcher") == kind]
        if e:
            out.append([kind, str(len(e)), _pct(statistics.median(e)), _apct(statistics.median(map(abs, e))),
                        f"{_pct(min(e))} to {_pct(max(e))}"])
    return out


def dispatcher_offsets() -> Dict[str, float]:
    """What reading the dispatcher could at best give: one factor per dispatcher, the median log error of the MoE
    training runs that use it, divided out of every MoE run; returns the factors' errors and the held-out MoE median
    that results (``{"alltoall": .., "flex": .., "held_median": ..}``)."""
    rows = [x for x in table() if "MoE" in x["r"]["classes"]]
    out: Dict[str, float] = {}
    for kind in ("alltoall", "flex"):
        logs = [math.log1p(x["error"]) for x in rows if x["training"] and x["r"]["config"].get("moe_dispatcher") == kind]
        out[kind] = statistics.median(logs) if logs else 0.0
    held = [abs(math.expm1(math.log1p(x["error"]) - out[x["r"]["config"].get("moe_dispatcher") or "alltoall"]))
            for x in rows if not x["training"]]
    out["held_median"] = statistics.median(held)
    return out


def reprint_spread() -> List[List[str]]:
    """How far the same layout's throughput moves between releases of the same framework's page (each run's
    ``reprints`` with the same recipe, against the run's own figure): per class and over all,
    ``[class, runs, reprints, median |reprint / kept - 1|, worst]``. A model of the configuration reads no release,
    so this is an error it cannot remove on these runs."""
    out = []
    for c in ("all",) + CLASSES:
        rs = [r for r in runs() if c == "all" or c in r["classes"]]
        dev = [abs(p["tokens_per_sec_per_gpu"] / r["measured"]["tokens_per_sec_per_gpu"] - 1)
               for r in rs for p in r.get("reprints", ()) if p["same_recipe"]]
        n = sum(1 for r in rs if any(p["same_recipe"] for p in r.get("reprints", ())))
        if dev:
            out.append([c, str(n), str(len(dev)), _apct(statistics.median(dev)), _apct(max(dev))])
    return out


def within_spread() -> List[Dict[str, str]]:
    """The classes whose held-out median is no larger than the release-to-release spread of their layouts (each
    with its median, spread and how many reprints the spread rests on)."""
    spread = {row[0]: (float(row[3].rstrip("%")) / 100, row[1], row[2]) for row in reprint_spread()}
    held = [x for x in table() if not x["training"]]
    out = []
    for c in ("all",) + CLASSES:
        med = _stats([x["error"] for x in held if c == "all" or c in x["r"]["classes"]])["median"]
        if c in spread and med <= spread[c][0]:
            out.append({"class": c, "median": _apct(med), "spread": _apct(spread[c][0]), "runs": spread[c][1],
                        "reprints": spread[c][2]})
    return out


def reprint_worst() -> Dict[str, str]:
    """The largest release-to-release change of one layout (same recipe): the run, the release and the change."""
    best = max(((abs(p["tokens_per_sec_per_gpu"] / r["measured"]["tokens_per_sec_per_gpu"] - 1), r, p)
                for r in runs() for p in r.get("reprints", ()) if p["same_recipe"]), key=lambda t: t[0])
    d, r, p = best
    return {"id": r["id"], "release": p["release"], "kept": r["source"],
            "change": _pct(p["tokens_per_sec_per_gpu"] / r["measured"]["tokens_per_sec_per_gpu"] - 1)}


#: The release line of a Megatron-Core run's source (by the source key's first word): NVIDIA's NeMo 2.0 containers
#: (DGX Cloud benchmarking recipes 24.11-25.05, the NeMo performance pages to 25.07) and MLPerf Training v5.x
#: submissions, or the Megatron-Bridge containers 25.09-26.08 and the Megatron-Core MoE model zoo.
RELEASE_LINES = {"dgxc": "NeMo 2.0", "nemo": "NeMo 2.0", "mlperf": "MLPerf", "mb": "Megatron-Bridge",
                 "modelzoo": "Megatron-Bridge"}


def release_line(r: dict):
    """``(generation, "dense" or "MoE", release line)`` of a Megatron-Core run; None for another framework's."""
    if FRAMEWORKS[r["family"]] != "Megatron-Core":
        return None
    return GENERATIONS[r["gpu"]], "MoE" if "MoE" in r["classes"] else "dense", RELEASE_LINES[r["source"].split("-")[0]]


def release_bias() -> List[List[str]]:
    """Megatron-Core's runs (one fitted efficiency per generation) split by release line: ``[generation, dense or
    MoE, release line, runs, median signed error]``. A model of the configuration reads no release; where one
    generation's lines sit on both sides of zero, the efficiency cannot serve both."""
    groups: Dict[Tuple[str, str, str], List[float]] = {}
    for x in table():
        key = release_line(x["r"])
        if key is not None:
            groups.setdefault(key, []).append(x["error"])
    return [[g, kind, line, str(len(e)), _pct(statistics.median(e))]
            for (g, kind, line), e in sorted(groups.items(), key=lambda kv: (kv[0][0] != "Hopper", kv[0]))]


def limits() -> List[List[str]]:
    """Per class: the held-out median, the release-to-release spread of its runs' layouts, and the held-out runs
    beyond the goal's worst: how many a reason accounts for (:mod:`derivations.modern_reasons`) and how many it
    does not."""
    from .modern_reasons import KINDS, beyond
    spread = {row[0]: row[3] for row in reprint_spread()}
    held = [x for x in table() if not x["training"]]
    far = beyond()
    out = []
    for c in ("all",) + CLASSES:
        sel = [x for x in held if c == "all" or c in x["r"]["classes"]]
        mine = [b for b in far if c == "all" or c in b["classes"]]
        known = sum(1 for b in mine if KINDS[b["kind"]])
        out.append([c, _apct(_stats([x["error"] for x in sel])["median"]), spread.get(c, "-"), str(len(mine)),
                    str(known), str(len(mine) - known)])
    return out


#: One layout measured at two microbatch sizes (the evidence for the fixed cost of a layer pass): GPT-3 175B FP8 on
#: H100, tp 4, pp 8, v 6, 64 microbatches a pipeline, of 1 sample (DGX Cloud) and of 2 (NeMo 2.x).
PAIR = ("dgxc-2502-gpt3-175b-h100-fp8-128", "nemo-2x-gpt3-175b-h100-fp8-512")


def microbatch_pair() -> Dict[str, str]:
    """The pair's measured throughput ratio (microbatch 2 over 1) and the model's, with and without
    ``pass_overhead`` (each at its own fitted constants)."""
    a, b = (run(i) for i in PAIR)
    out = {"small": a["id"], "large": b["id"], "measured": f"{b['measured']['tokens_per_sec_per_gpu'] / a['measured']['tokens_per_sec_per_gpu']:.2f}"}
    for key, without in (("with", ()), ("without", ("pass_overhead",))):
        f = fit(without)
        t = [_throughput_function(r["id"], without)(*fitted(r, f)) for r in (a, b)]
        out[key] = f"{t[1] / t[0]:.2f}"
    return out


def ep_overlap_evidence() -> Dict[str, object]:
    """The runs that read ``eta_EP-ov`` (those whose all-to-alls, overlapped, outlast the share of the compute
    beside them): each with its error with all of the compute covering them and at the fitted share."""
    f = fit()
    overlapped = [r for r in runs() if r["config"].get("ep_overlap")]

    def errs(ep):
        return np.exp(log_errors(overlapped, f["eta"], f["eta_8"], f["eta_att"], (), f["k_pass"], ep)) - 1
    from .modern_reasons import _twinned
    full, at = errs(1.0), errs(f["eta_epov"])
    moved = [(r, a, b) for r, a, b in zip(overlapped, full, at) if abs(a - b) > 1e-9]
    setters = [r for r, _, _ in moved if training(r["id"])]
    twin = {r["id"] for r, _, _ in moved if any(_twinned(r, t) for t in setters)}
    others = [(r, a, b) for r, a, b in moved if not training(r["id"]) and r["id"] not in twin]
    return {"overlapped": len(overlapped), "training": sum(1 for r in overlapped if training(r["id"])),
            "setters": [r["id"] for r in setters], "twins": sorted(twin),
            "moved": [[r["id"] + (" (t)" if training(r["id"]) else " (twin)" if r["id"] in twin else ""), _pct(a),
                       _pct(b)] for r, a, b in moved],
            "better": [r["id"] for r, a, b in others if abs(b) < abs(a)],
            "worse": [r["id"] for r, a, b in others if abs(b) >= abs(a)]}


def context() -> Dict[str, object]:
    from mlsysim_sym.mechanisms import MECHANISMS
    from .modern_reasons import KINDS, LINE_MIN_RUNS, beyond
    far = beyond()
    rows = table()
    held = [x for x in rows if not x["training"]]
    train = [x for x in rows if x["training"]]
    f, f0 = fit(), fit(NEW)
    fams = families()
    sources = []
    for fam, d in fams.items():
        for key, s in d["sources"].items():
            n = sum(1 for r in d["runs"] if r["source"] == key)
            if n:
                sources.append([fam, key, str(n), s["convention"], s["citation"]])
    configs, results = [], []
    for x in sorted(rows, key=lambda x: (x["r"]["family"], x["r"]["model"], x["r"]["gpu"], x["r"]["id"])):
        r, c = x["r"], x["r"]["config"]
        name = r["id"] + (" (t)" if x["training"] else "")
        configs.append([name, f"{r['gpus']} {r['gpu']}", _layout(r), f"{c['global_batch']}/{c['micro_batch']} x "
                        f"{c['seq']}", str(c.get("recompute") or "?")[:4], _origin(r)])
        results.append([name, f"{r['measured']['tokens_per_sec_per_gpu']:.0f}", f"{x['predicted']:.0f}",
                        _pct(x["error"]), _pct(x["before"]), switches(r)])
    from mlsysim_sym.model import Variant, build_model
    from .common import definition_chain
    m = build_model(Variant(fidelity="extended"))
    return {
        "rate": {n: definition_chain(m, n, alone=True) for n in ("R_gemm", "R_eff", "r_stage", "n_pass",
                                                                 "T_ep_exposed")},
        "epov": ep_overlap_evidence(),
        "pair": microbatch_pair(),
        "count": len(rows), "families": len(fams), "n_sources": len(sources), "sources": sources,
        "n_train": len(train), "n_held": len(held),
        "fit": f, "fit_before": f0, "eta_rows": [[k, f"{v:.3f}", f"{f0['eta'].get(k, float('nan')):.3f}"]
                                                 for k, v in f["eta"].items()],
        "met": [c for c in ("all",) + CLASSES if _stats([x["error"] for x in held if c == "all"
                                                           or c in x["r"]["classes"]])["median"] <= GOAL_MEDIAN],
        "held_classes": _class_rows(held, "error"), "train_classes": _class_rows(train, "error"),
        "goal": {"median": _apct(GOAL_MEDIAN), "worst": _apct(GOAL_WORST)},
        "beyond": [[b["id"], _pct(b["error"]), f"{b['kind']}: {b['why']}"] for b in far],
        "kinds": {k: sum(1 for b in far if b["kind"] == k) for k in KINDS}, "line_min": LINE_MIN_RUNS,
        "ablation": ablation(), "classes": CLASSES,
        "not_earning": _not_earning(ablation()), "dispatchers": dispatchers(),
        "dispatch_opposite": len({d[2][0] for d in dispatchers()}) == 2,
        "dispatch_best": _apct(dispatcher_offsets()["held_median"]), "release_bias": release_bias(),
        "reprints": reprint_spread(), "limits": limits(), "reprint_worst": reprint_worst(),
        "within_spread": within_spread(),
        "by_release": _apct(_stats(errors([x["r"] for x in held], by_release=True))["median"]),
        "mechanisms": [{"name": n, "title": MECHANISMS[n].title, "short": MECHANISMS[n].short} for n in NEW],
        "results": results, "configs": configs, "unpriced_before": sum(1 for x in held if math.isnan(x["before"])),
        "data_dir": "derivations/data/modern_runs/", "example": reproduced(),
        "own_cards": sorted({m for d in fams.values() for m in d.get("architectures", {})}),
        "nodes": [[gpu, name] for gpu, name in _NODES.items()],
        "stacks": [[fam, stack] for fam, stack in FRAMEWORKS.items()],
    }
