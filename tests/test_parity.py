"""Parity of ``mlsysim_sym.DistributedModel().solve`` with mlsysim 0.3.0.

a. the golden values of docs/contract.md §8 (literals, our solver only);
b. a random grid over all 16 language models x all 18 clusters;
c. all 26 non-language workloads on the Engine path and on the replica path;
d. custom fleets / workloads built from mlsysim's own pydantic classes (every fallback);
e. error and warning parity (docs/contract.md §5).

Every comparison checks numbers (relative error <= 1e-12), ``feasible``, ``bottleneck``,
``overhead_dominated``, ``parallelism``, exceptions (type and message) and warnings
(category and message). The helpers live in ``tests/mlsysim_oracle.py``.
"""
from __future__ import annotations

import importlib.util
import math
import random
import sys
import warnings
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest

with warnings.catch_warnings():
    # mlsysim 0.3.0 imports without warnings; mute only DeprecationWarnings should a dependency add one.
    warnings.simplefilter("ignore", DeprecationWarning)
    pytest.importorskip("mlsysim")


def _load_oracle():
    name = "mlsysim_oracle"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("mlsysim_oracle.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


oracle = _load_oracle()
RTOL = 1e-12
SEED = 2026
MAX_REPORTED = 25

from mlsysim_sym import DistributedModel  # noqa: E402


def _ms():
    return oracle.mlsysim_module()


def _Q(*a):
    from mlsysim.core.units import Q_

    return Q_(*a)


# ======================================================================================
# Shared machinery
# ======================================================================================

class Tally:
    """Runs configurations through both solvers, collecting mismatches and counters."""

    def __init__(self):
        self.mismatches = []      # (label, reproducer, [diffs])
        self.count = Counter()
        self.max_err = {}

    def run(self, model, fleet, kw, label=None):
        both = oracle.call_both(model, fleet, **kw)
        diffs = oracle.diff_outcomes(both, RTOL)
        self.count["configs"] += 1
        theirs = both["mlsysim"]
        if theirs["exception"] is None:
            self.count["solved"] += 1
        else:
            self.count["rejected"] += 1
        if both["ours"]["result"] is not None and theirs["result"] is not None:
            oracle.max_rel_errors(both["ours"]["result"], theirs["result"], self.max_err)
        if diffs:
            self.mismatches.append((label, oracle.describe(model, fleet, kw), diffs))
        return both

    def report(self, what):
        lines = [f"{len(self.mismatches)} of {self.count['configs']} {what} configurations differ:"]
        for label, repro, diffs in self.mismatches[:MAX_REPORTED]:
            lines.append(f"  [{label}] {repro}")
            lines.extend(f"      {d}" for d in diffs[:8])
        return "\n".join(lines)


def _fleet_shape(fleet):
    f = oracle.as_mlsysim_fleet(fleet)
    return f.total_accelerators, f.node.accelerators_per_node, f.count


def _dp_kind(n, apn, g):
    """Which DP collective mlsysim runs (docs/contract.md §2.6)."""
    dp = n // g
    if dp <= 1:
        return "none"
    rpn = max(1, apn // g)
    nodes = math.ceil(dp / rpn)
    if nodes == 1:
        return "nvlink_ring"
    if rpn == 1:
        return "fabric_ring"
    return "hierarchical"


TP_POOL = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 32)
PP_POOL = (1, 2, 3, 4, 5, 6, 8, 16)
EP_POOL_MOE = (1, 2, 3, 4, 8, 16)
EP_POOL_DENSE = (1, 2)
PRECISIONS = ("fp16", "bf16", "fp32", "tf32", "fp8", "int8", "int4", "FP16", "BF16")
PRECISION_WEIGHTS = (5, 4, 3, 1, 3, 2, 1, 1, 1)


def draw_shape(rng, n, ep_pool, p_valid=0.88):
    """(tp, pp, ep) with independent marginals; valid (G | N) with probability ``p_valid``."""
    want_valid = rng.random() < p_valid
    shape = None
    for _ in range(400):
        shape = (rng.choice(TP_POOL), rng.choice(PP_POOL), rng.choice(ep_pool))
        g = shape[0] * shape[1] * shape[2]
        if (g <= n and n % g == 0) == want_valid:
            break
    return shape


def draw_kwargs(rng, n, shape):
    """Every other solve() kwarg, drawn at random; about 8% of kwargs are left at their default."""
    tp, pp, ep = shape
    g = tp * pp * ep
    dp = max(1, n // g)
    batch = rng.choice([1, 3, dp - 1, dp, dp + 1, 2 * dp, 7 * dp + 3, 256, 1024, 4096,
                        rng.randint(1, 8 * dp + 64)])
    r = rng.random()
    eff = 1.0 if r < 0.05 else (0.5 if r < 0.1 else 1.0 - rng.random())
    straggler = rng.choice([0.8, 1.0, 1.2, rng.uniform(0.5, 2.0)])
    kw = {
        "batch_size": batch,            # dp - 1 == 0 when dp == 1: a V4 error, compared too
        "precision": rng.choices(PRECISIONS, PRECISION_WEIGHTS)[0],
        "efficiency": eff,
        "tp_size": tp, "pp_size": pp, "ep_size": ep,
        "v_stages": rng.choice([1, 2, 4]),
        "microbatch_count": rng.choice([1, 2, 3, 4, 8, 16, 32]),
        "topology_override": "ring" if rng.random() < 0.15 else None,
        "zero_stage": rng.randint(0, 3),
        "is_lora": rng.random() < 0.3,
        "activation_recomputation": rng.random() < 0.4,
        "overlap_comm": rng.random() < 0.4,
        "overlap_efficiency": rng.choice([0.85, 0.0, 1.0, rng.random(), rng.random()]),
        "congestion_factor": 1.0 if rng.random() < 0.5 else rng.uniform(0.5, 3.0),
        "straggler_factor": straggler,
        "moe_routing_imbalance_factor": rng.choice([1.0, 1.3, 2.0]),
        "gradient_accumulation_steps": rng.choice([1, 1, 1, 2, 3, 4, 8]),
        "seq_len": rng.choice([128, 512, 1000, 2048, 4096, 8192]),
    }
    keep = ("tp_size", "pp_size", "ep_size")
    return {k: v for k, v in kw.items() if k in keep or rng.random() >= 0.08}


def _count_config(c: Counter, both, n, apn, count, kw):
    """Coverage counters of one configuration (from the inputs and mlsysim's outcome)."""
    theirs = both["mlsysim"]
    tp, pp, ep = kw["tp_size"], kw["pp_size"], kw["ep_size"]
    g = tp * pp * ep
    if any("dp_size" in m and "idle" in m for _, m in theirs["warnings"]):
        c["warn_batch_lt_dp"] += 1
    if any("precision_flops" in m for _, m in theirs["warnings"]):
        c["warn_precision_fallback"] += 1
    exc = theirs["exception"]
    if exc is not None:
        c["exc_" + ("V9_gt_total" if "> Total" in exc[1] else
                    "V10_not_divisible" if "must divide" in exc[1] else exc[0])] += 1
        return
    r = theirs["result"]
    c["infeasible"] += not r["node.feasible"]
    c["memory_bound"] += r["node.bottleneck"] == "Memory"
    c["overhead_dominated"] += bool(r["node.overhead_dominated"])
    c["pp_gt_1"] += pp > 1
    c["ep_gt_1"] += ep > 1
    c["dp_" + _dp_kind(n, apn, g)] += 1
    c["tp_over_fabric"] += tp > apn
    c["tp_nvlink"] += 1 < tp <= apn
    c["tp_odd"] += tp in (3, 5, 6, 10, 12)
    c["straggler_gt_1"] += kw.get("straggler_factor", 1.0) > 1.0
    c["overlap"] += bool(kw.get("overlap_comm", False))
    c["ga_gt_1"] += kw.get("gradient_accumulation_steps", 1) > 1
    c["lora"] += bool(kw.get("is_lora", False))
    c["recompute"] += bool(kw.get("activation_recomputation", False))
    c[f"zero_{kw.get('zero_stage', 0)}"] += 1
    c[f"prec_{kw.get('precision', 'fp16')}"] += 1


# ======================================================================================
# a. Golden values of docs/contract.md §8 (our solver only)
# ======================================================================================

# model, cluster, kwargs, dp, then the printed columns of §8 as strings:
# step (ms), se, t_dp (ms), t_tp (ms), t_ep (ms), t_bub (ms), T_node (ms), mem (GB), node mfu, eff_thr (1/s)
GOLDEN = [
    ("Llama3_70B", "Research_256",
     dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8), 8,
     ("3368.62671135", "0.521510321602", "618.45", "334.613011911", "0", "658.790099848",
      "1756.7735996", "59.411380584", "0.499314083499", "75.9953601083")),
    ("Llama3_70B", "Research_256",
     dict(batch_size=256, tp_size=8, pp_size=16, microbatch_count=128, overlap_comm=True), 2,
     ("2310.09101771", "0.760478087715", "88.35", "334.193011911", "0", "205.871906203",
      "1756.7735996", "15.658151514", "0.499314083499", "110.81814441")),
    ("Mixtral_8x7B", "Training_1K",
     dict(batch_size=1024, tp_size=2, ep_size=4, precision="bf16", zero_stage=1, overlap_comm=True,
          gradient_accumulation_steps=4), 128,
     ("506.978216245", "0.634201848199", "927.147625", "38.3054870756", "8.07406368", "0",
      "321.526521739", "33.607821129", "0.498491570781", "2019.81064904")),
    ("GPT3", "Training_1K_A100",
     dict(batch_size=512, tp_size=16, pp_size=8, microbatch_count=4, v_stages=2, precision="fp8",
          activation_recomputation=True, is_lora=True), 8,
     ("23045.5382366", "0.398890166737", "1.05503125", "5808.2858496", "0", "8043.55876603",
      "9192.63858974", "5.8117669304", "0.374881902787", "22.2168818425")),
    ("Llama3_8B", "Lab_64_H100",
     dict(batch_size=32, zero_stage=3, straggler_factor=1.2, congestion_factor=1.5, seq_len=4096), 64,
     ("845.614533873", "0.473088421342", "304.628333333", "0", "0", "0",
      "400.050444894", "20.273657883", "0.498787652892", "75.6846026604")),
]
GOLDEN_COLUMNS = (("step_latency_total", 1e3), ("scaling_efficiency", 1.0), ("dp_communication_latency", 1e3),
                  ("tp_communication_latency", 1e3), ("ep_communication_latency", 1e3),
                  ("pipeline_bubble_latency", 1e3), ("node.latency", 1e3), ("node.memory_footprint", 1e-9),
                  ("node.mfu", 1.0), ("effective_throughput", 1.0))


def _golden_tolerance(literal: str) -> float:
    """Absolute tolerance for a printed §8 value: relative 1e-9.

    Every literal of §8 is printed with enough digits for 1e-9 (the shortest ones, such as
    "618.45" ms, are exact decimal values), so no literal needs a wider tolerance.
    """
    return 1e-9 * abs(float(Decimal(literal)))


@pytest.mark.parametrize("row", range(len(GOLDEN)), ids=[f"{g[0]}-{g[1]}-{i}" for i, g in enumerate(GOLDEN)])
def test_golden_values_section8(row):
    model, cluster, kw, dp, printed = GOLDEN[row]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = DistributedModel().solve(model, cluster, **kw)
    expected_warnings = []
    if kw["batch_size"] < dp:
        expected_warnings = [f"batch_size ({kw['batch_size']}) < dp_size ({dp}): some ranks will be idle. "
                             f"Using local_batch=1."]
    assert [str(w.message) for w in caught] == expected_warnings
    assert all(w.category is UserWarning for w in caught)
    flat = oracle.flatten(r)
    assert r.parallelism["dp"] == dp
    bad = []
    for (key, scale), lit in zip(GOLDEN_COLUMNS, printed):
        got = flat[key] * scale
        want = float(lit)
        tol = _golden_tolerance(lit)
        if want == 0.0:
            if got != 0.0:
                bad.append(f"{key}: got {got!r}, expected exactly 0")
        elif not abs(got - want) <= tol:
            bad.append(f"{key}: got {got!r}, expected {lit} (abs err {abs(got - want):.3g} > tol {tol:.3g})")
    # fleet MFU = node MFU x scaling efficiency (docs/contract.md §4.3)
    se, node_mfu = float(printed[1]), float(printed[8])
    if not abs(r.mfu - se * node_mfu) <= 2e-9 * se * node_mfu:
        bad.append(f"mfu: got {r.mfu!r}, expected {se * node_mfu!r} (= se x node mfu)")
    assert not bad, "\n".join(bad)


# ======================================================================================
# b. Language grid: 16 models x 18 clusters x random shapes and kwargs
# ======================================================================================

LANG_DRAWS_PER_CELL = 50
NON_POW2_CLUSTERS = ("Mega_100K", "Reference_25K_H100", "Kempner_H100_384", "Training_10K", "Meta_RSC_A100_16K")


def language_configs():
    rng = random.Random(SEED)
    ms = _ms()
    from mlsysim.models.types import SparseTransformerWorkload

    for model in oracle.workload_names("Language"):
        moe = isinstance(getattr(ms.Models.Language, model), SparseTransformerWorkload)
        for cluster in oracle.cluster_names():
            n, apn, count = _fleet_shape(cluster)
            for i in range(LANG_DRAWS_PER_CELL):
                shape = draw_shape(rng, n, EP_POOL_MOE if moe else EP_POOL_DENSE)
                kw = draw_kwargs(rng, n, shape)
                # a few cells pass the mlsysim object to our solver too (converter path)
                m = getattr(ms.Models.Language, model) if i % 10 == 9 else model
                yield cluster, m, kw


@pytest.fixture(scope="module")
def language_grid():
    per_cluster = {}
    coverage = Counter()
    for cluster, model, kw in language_configs():
        t = per_cluster.setdefault(cluster, Tally())
        n, apn, count = _fleet_shape(cluster)
        both = t.run(model, cluster, kw, label=cluster)
        _count_config(coverage, both, n, apn, count, kw)
        coverage["configs"] += 1
        if both["mlsysim"]["exception"] is None:
            coverage["solved"] += 1
            coverage[f"solved_{cluster}"] += 1
            if kw["tp_size"] in (3, 5, 6, 10, 12):
                coverage[f"odd_tp_{cluster}"] += 1
    return per_cluster, coverage


@pytest.mark.parametrize("cluster", [
    "DgxH100SuperPodSU", "Frontier_8K", "Kempner_H100_384", "Lab_64_A100", "Lab_64_H100", "Mega_100K",
    "Meta_GenAI_H100_24K_IB", "Meta_GenAI_H100_24K_RoCE", "Meta_Llama3_16K_H100", "Meta_RSC_A100_16K",
    "Production_2K", "Reference_25K_H100", "Research_256", "Training_10K", "Training_1K", "Training_1K_A100",
    "Training_1K_B200", "Training_512_H100"])
def test_language_grid(language_grid, cluster):
    per_cluster, _ = language_grid
    assert cluster in oracle.cluster_names()
    t = per_cluster[cluster]
    assert t.count["configs"] == 16 * LANG_DRAWS_PER_CELL
    assert not t.mismatches, t.report(f"language/{cluster}")


def test_language_grid_coverage(language_grid):
    per_cluster, c = language_grid
    assert set(per_cluster) == set(oracle.cluster_names()) and len(per_cluster) == 18
    assert c["configs"] == 16 * 18 * LANG_DRAWS_PER_CELL
    need = ["solved", "infeasible", "memory_bound", "pp_gt_1", "ep_gt_1", "dp_none", "dp_hierarchical",
            "dp_fabric_ring", "tp_over_fabric", "tp_nvlink", "tp_odd", "warn_batch_lt_dp", "straggler_gt_1",
            "overlap", "ga_gt_1", "lora", "recompute", "zero_0", "zero_1", "zero_2", "zero_3",
            "exc_V9_gt_total", "exc_V10_not_divisible", "exc_ValueError", "overhead_dominated"]
    need += [f"prec_{p}" for p in PRECISIONS]
    need += [f"solved_{cl}" for cl in oracle.cluster_names()]
    need += [f"odd_tp_{cl}" for cl in NON_POW2_CLUSTERS]
    missing = [k for k in need if c[k] <= 0]
    assert not missing, f"grid never reached: {missing}\n{dict(c)}"
    assert c["solved"] >= 0.75 * c["configs"]


# ======================================================================================
# c. Non-language workloads: Engine path (tp=pp=ep=1) and replica path (tp*pp*ep > 1)
# ======================================================================================

ENGINE_CLUSTERS = ("Research_256", "Lab_64_A100", "Training_1K_B200")   # H100, A100, B200
REPLICA_SHAPES = ((2, 1, 1), (1, 2, 1), (1, 1, 2), (4, 2, 1), (8, 1, 1), (16, 1, 1), (3, 1, 1), (2, 2, 2),
                  (5, 1, 1), (1, 4, 4), (2, 3, 1), (6, 1, 1))
OTHER_DRAWS_PER_CELL = 6


def _other_names():
    return [n for cat in oracle.OTHER_CATEGORIES for n in oracle.workload_names(cat)]


@pytest.fixture(scope="module")
def other_grid():
    rng = random.Random(SEED)
    t = Tally()
    c = Counter()
    names = _other_names()
    # Engine path: every workload x {H100, A100, B200} x every precision x lora on/off
    for model in names:
        for cluster in ENGINE_CLUSTERS:
            n, apn, count = _fleet_shape(cluster)
            for prec in PRECISIONS:
                for lora in (False, True):
                    kw = draw_kwargs(rng, n, (1, 1, 1))
                    kw.update(precision=prec, is_lora=lora)
                    both = t.run(model, cluster, kw, label="engine")
                    _count_config(c, both, n, apn, count, kw)
                    if both["mlsysim"]["exception"] is None:
                        c["engine_solved"] += 1
                        c[f"engine_lora_{lora}"] += 1
    # both paths over all clusters, random shapes and kwargs
    for model in names:
        for cluster in oracle.cluster_names():
            n, apn, count = _fleet_shape(cluster)
            for i in range(OTHER_DRAWS_PER_CELL):
                shape = (1, 1, 1) if i < 2 else rng.choice(REPLICA_SHAPES)
                kw = draw_kwargs(rng, n, shape)
                m = oracle.registry_workload(model) if i == 5 else model
                both = t.run(m, cluster, kw, label="grid")
                _count_config(c, both, n, apn, count, kw)
                if both["mlsysim"]["exception"] is None:
                    c["engine_solved" if shape == (1, 1, 1) else "replica_solved"] += 1
    return t, c


def test_non_language_workloads(other_grid):
    t, c = other_grid
    assert len(_other_names()) == 26
    assert not t.mismatches, t.report("non-language")


def test_non_language_coverage(other_grid):
    t, c = other_grid
    need = ["engine_solved", "replica_solved", "warn_precision_fallback", "warn_batch_lt_dp", "infeasible",
            "engine_lora_True", "engine_lora_False", "exc_V10_not_divisible", "tp_over_fabric", "ep_gt_1",
            "pp_gt_1", "dp_hierarchical", "dp_fabric_ring", "memory_bound", "overhead_dominated"]
    missing = [k for k in need if c[k] <= 0]
    assert not missing, f"non-language grid never reached: {missing}\n{dict(c)}"


@pytest.mark.parametrize("model,cluster,precision", [
    ("ResNet50", "Research_256", "int4"),        # H100 has no int4 key
    ("ResNet50", "Lab_64_A100", "fp8"),          # A100 has no fp8 key
    ("ResNet50", "Lab_64_A100", "int4"),
    ("ResNet50", "Training_1K_B200", "int8"),    # B200 has no int8 key
    ("DLRM", "Research_256", "int4"),
])
def test_engine_precision_fallback_warning(model, cluster, precision):
    both = oracle.call_both(model, cluster, batch_size=100000, precision=precision)
    theirs = both["mlsysim"]
    assert theirs["exception"] is None
    assert [c for c, _ in theirs["warnings"]] == ["UserWarning"]
    assert f"Precision '{precision}' not in" in theirs["warnings"][0][1]
    assert oracle.diff_outcomes(both, RTOL) == []
    # the replica path falls back silently (docs/contract.md §1.5)
    both = oracle.call_both(model, cluster, batch_size=100000, precision=precision, tp_size=2)
    assert both["mlsysim"]["warnings"] == [] and both["mlsysim"]["exception"] is None
    assert oracle.diff_outcomes(both, RTOL) == []


# ======================================================================================
# d. Custom fleets and workloads (mlsysim pydantic objects, passed to both solvers)
# ======================================================================================

def _cp(obj, **update):
    return obj.model_copy(update=update)


def _with_acc(fleet, **update):
    node = fleet.node
    return _cp(fleet, node=_cp(node, accelerator=_cp(node.accelerator, **update)))


def _with_memory(fleet, **update):
    acc = fleet.node.accelerator
    return _with_acc(fleet, memory=_cp(acc.memory, **update))


def _with_node(fleet, count, **update):
    return _cp(fleet, count=count, node=_cp(fleet.node, **update))


def custom_fleets():
    ms = _ms()
    C = ms.Systems.Clusters
    h100, a100, b200 = C.Research_256, C.Lab_64_A100, C.Training_1K_B200
    Q = _Q
    acc = h100.node.accelerator
    fl = {
        "fabric_latency_None": _cp(h100, fabric=_cp(h100.fabric, latency=None)),
        "fabric_latency_0": _cp(h100, fabric=_cp(h100.fabric, latency=Q(0, "us"))),
        "nvlink_None": _with_acc(h100, nvlink=None),
        "nvlink_latency_None": _with_acc(h100, nvlink=_cp(acc.nvlink, latency=None)),
        "nvlink_latency_2us": _with_acc(h100, nvlink=_cp(acc.nvlink, latency=Q(2, "us"))),
        "interconnect_None": _with_acc(a100, interconnect=None),
        "interconnect_bidir": _with_acc(a100, interconnect=_cp(a100.node.accelerator.interconnect,
                                                               direction="bidirectional_total")),
        "tdp_None": _with_acc(h100, tdp=None),
        "osr_2": _cp(h100, fabric=_cp(h100.fabric, oversubscription_ratio=2.0)),
        "osr_3": _cp(a100, fabric=_cp(a100.fabric, oversubscription_ratio=3.0)),
        "apn_1": _with_node(h100, 64, accelerators_per_node=1),
        "apn_2": _with_node(h100, 32, accelerators_per_node=2, intra_node_bw=Q(100, "GB/s")),
        "apn_4": _with_node(a100, 16, accelerators_per_node=4),
        "apn_6": _with_node(h100, 12, accelerators_per_node=6),
        "apn_16": _with_node(b200, 8, accelerators_per_node=16),
        "single_node_8": _cp(h100, count=1),
        "single_node_16": _with_node(b200, 1, accelerators_per_node=16),
        "single_node_6": _with_node(a100, 1, accelerators_per_node=6),
        "single_node_1": _with_node(h100, 1, accelerators_per_node=1),
        "sram": _with_memory(h100, sram_capacity=Q(50, "MB"), sram_bandwidth=Q(20, "TB/s")),
        "flash": _with_memory(a100, flash_bandwidth=Q(500, "GB/s")),
        "sram_and_flash": _with_memory(h100, sram_capacity=Q(1, "MB"), sram_bandwidth=Q(30, "TB/s"),
                                       flash_bandwidth=Q(2, "TB/s")),
        "sram_cap_only": _with_memory(h100, sram_capacity=Q(1, "GB")),
        "tiny_hbm": _with_memory(h100, capacity=Q(1, "GiB")),
        "tiny_hbm_bidir_pcie": _with_acc(
            _with_memory(a100, capacity=Q(256, "MiB")),
            interconnect=_cp(a100.node.accelerator.interconnect, direction="bidirectional_total")),
        "empty_precision_flops": _with_acc(h100, compute=_cp(acc.compute, precision_flops={})),
        "dispatch_tax_0.2ms": _with_acc(b200, dispatch_tax=Q(0.2, "ms")),
        "everything_None": _with_node(
            _cp(h100, fabric=_cp(h100.fabric, latency=None, oversubscription_ratio=2.0)), 16,
            accelerators_per_node=4,
            accelerator=_cp(acc, nvlink=None, interconnect=None, tdp=None,
                            memory=_cp(acc.memory, capacity=Q(4, "GiB")))),
    }
    return fl


def custom_workloads():
    ms = _ms()
    L, V = ms.Models.Language, ms.Models.Vision
    Q = _Q
    wl = {
        "Llama3_8B": L.Llama3_8B,
        "BERT_Base": L.BERT_Base,
        "Mixtral_8x7B": L.Mixtral_8x7B,
        "ResNet50": V.ResNet50,
        "DLRM": ms.Models.Recommendation.DLRM,
        "Mamba_130M": ms.Models.StateSpace.Mamba_130M,
        "StableDiffusion_v1_5": ms.Models.GenerativeVision.StableDiffusion_v1_5,
        "AnomalyDetector": ms.Models.Tiny.AnomalyDetector,
        "LeNet1": V.LeNet1,
        "DiffusionPolicy_PushT": ms.Models.Embodied.DiffusionPolicy_PushT,
        "transformer_model_size": _cp(L.Llama3_8B, model_size=Q(20, "GB")),
        "transformer_model_size_hidden_None": _cp(L.Llama2_7B, model_size=Q(13, "GB"), hidden_dim=None),
        "moe_flops_None": _cp(L.Mixtral_8x7B, inference_flops=None),
        "moe_flops_None_k0": _cp(L.DeepSeek_V3, inference_flops=None, active_experts_per_token=0),
        "workload_params_and_size": _cp(V.ViT_Large, model_size=Q(1, "GB")),
        "workload_size_only_flops": _cp(ms.Models.Recommendation.DLRM, inference_flops=Q(2e9, "flop"),
                                        model_size=Q(3, "GB")),
        "cnn_layers_None": V.EfficientNetB0,
    }
    return wl


CUSTOM_SHAPES = ((1, 1, 1), (1, 1, 1), (2, 1, 1), (1, 2, 1), (1, 1, 2), (2, 2, 1), (4, 1, 1), (8, 1, 1),
                 (3, 1, 1), (6, 1, 1), (16, 1, 1), (2, 2, 2), (1, 4, 2))
CUSTOM_DRAWS = 6


@pytest.fixture(scope="module")
def custom_grid():
    rng = random.Random(SEED)
    t = Tally()
    c = Counter()
    fleets, workloads = custom_fleets(), custom_workloads()
    for fname, fleet in fleets.items():
        n, apn, count = fleet.total_accelerators, fleet.node.accelerators_per_node, fleet.count
        mem = fleet.node.accelerator.memory
        sram_bw = mem.sram_bandwidth.m_as("byte/s") if mem.sram_bandwidth is not None else None
        flash_bw = mem.flash_bandwidth.m_as("byte/s") if mem.flash_bandwidth is not None else None
        for wname, w in workloads.items():
            for i in range(CUSTOM_DRAWS):
                shape = rng.choice(CUSTOM_SHAPES)
                kw = draw_kwargs(rng, n, shape)
                if fname in ("sram", "sram_and_flash", "flash") and i < 2:
                    kw["batch_size"] = rng.choice([1, n, 4 * n])
                both = t.run(w, fleet, kw, label=f"{fname}/{wname}")
                _count_config(c, both, n, apn, count, kw)
                r = both["mlsysim"]["result"]
                if r is not None:
                    c[f"fleet_{fname}"] += 1
                    c[f"workload_{wname}"] += 1
                    if sram_bw is not None and r["node.peak_bw_actual"] == sram_bw:
                        c["engine_sram_bw"] += 1
                    if flash_bw is not None and r["node.peak_bw_actual"] == flash_bw:
                        c["engine_flash_bw"] += 1
    return t, c, list(fleets), list(workloads)


def test_custom_fleets_and_workloads(custom_grid):
    t, c, _, _ = custom_grid
    assert not t.mismatches, t.report("custom")


def test_custom_coverage(custom_grid):
    t, c, fleets, workloads = custom_grid
    need = [f"fleet_{f}" for f in fleets] + [f"workload_{w}" for w in workloads]
    need += ["engine_sram_bw", "engine_flash_bw", "dp_nvlink_ring", "dp_hierarchical", "dp_fabric_ring",
             "infeasible", "tp_over_fabric", "warn_precision_fallback"]
    missing = [k for k in need if c[k] <= 0]
    assert not missing, f"custom grid never reached: {missing}\n{dict(c)}"


# ======================================================================================
# e. Errors (docs/contract.md §5.1, with precedence) and warnings (§5.2)
# ======================================================================================

def _error_cases():
    """(id, model, fleet, kwargs, expected mlsysim outcome): ("raise", type, message start) or ("ok", warnings)."""
    ms = _ms()
    Q = _Q
    h100 = ms.Systems.Clusters.Research_256
    a100 = ms.Systems.Clusters.Lab_64_A100
    no_params = ms.Models.Vision.LeNet1.model_copy(update={"parameters": None})
    zero_fabric = h100.model_copy(update={"fabric": h100.fabric.model_copy(update={"bandwidth": Q(0, "Gbps")})})
    neg_fabric_lat = h100.model_copy(update={"fabric": h100.fabric.model_copy(update={"latency": Q(-1, "us")})})
    zero_intra = h100.model_copy(update={"node": h100.node.model_copy(update={"intra_node_bw": Q(0, "GB/s")})})
    neg_layers = ms.Models.Language.Llama3_8B.model_copy(update={"layers": -2})
    neg_hidden = ms.Models.Language.Llama3_8B.model_copy(update={"hidden_dim": -64})
    VE = "ValueError"
    L, R = "Llama3_8B", "Research_256"
    return [
        # V1-V5
        ("tp0", L, R, dict(tp_size=0), ("raise", VE, "tp_size must be >= 1, got 0")),
        ("pp0", L, R, dict(pp_size=0), ("raise", VE, "pp_size must be >= 1, got 0")),
        ("ep0", L, R, dict(ep_size=0), ("raise", VE, "ep_size must be >= 1, got 0")),
        ("ep-3", L, R, dict(ep_size=-3), ("raise", VE, "ep_size must be >= 1, got -3")),
        ("batch0", L, R, dict(batch_size=0), ("raise", VE, "batch_size must be >= 1, got 0")),
        ("ga0", L, R, dict(gradient_accumulation_steps=0),
         ("raise", VE, "gradient_accumulation_steps must be >= 1, got 0")),
        # V6-V8
        ("eff0", L, R, dict(efficiency=0.0), ("raise", VE, "efficiency must be in [1e-09, 1.0], got 0.0")),
        ("eff1.5", L, R, dict(efficiency=1.5), ("raise", VE, "efficiency must be in [1e-09, 1.0], got 1.5")),
        ("eff1e-10", L, R, dict(efficiency=1e-10), ("raise", VE, "efficiency must be in")),
        ("eff1e-9_ok", L, R, dict(efficiency=1e-9, batch_size=512), ("ok", [])),
        ("ov1.1", L, R, dict(overlap_efficiency=1.1),
         ("raise", VE, "overlap_efficiency must be in [0.0, 1.0], got 1.1")),
        ("ov-0.1", L, R, dict(overlap_efficiency=-0.1), ("raise", VE, "overlap_efficiency must be in")),
        ("imb0.5", L, R, dict(moe_routing_imbalance_factor=0.5),
         ("raise", VE, "moe_routing_imbalance_factor must be >= 1.0, got 0.5")),
        # V9-V10
        ("G_gt_N", L, R, dict(tp_size=512), ("raise", VE, "Infeasible 4D Parallelism: TP(512) * PP(1) * EP(1) > Total(256)")),
        ("G_not_div", L, R, dict(tp_size=3), ("raise", VE, "Infeasible 4D Parallelism: TP(3) * PP(1) * EP(1) must divide")),
        ("G_not_div_odd_cluster", L, "Mega_100K", dict(tp_size=8, pp_size=3),
         ("raise", VE, "Infeasible 4D Parallelism: TP(8) * PP(3) * EP(1) must divide total accelerators (100000)")),
        # V11 precision
        ("prec_int", L, R, dict(precision=16), ("raise", "TypeError", "precision must be a string, got int")),
        ("prec_None", L, R, dict(precision=None), ("raise", "TypeError", "precision must be a string, got NoneType")),
        ("prec_fp64", L, R, dict(precision="fp64"), ("raise", VE, "precision 'fp64' is not supported")),
        ("prec_FP64", L, R, dict(precision="FP64"), ("raise", VE, "precision 'FP64' is not supported")),
        ("prec_fp64_engine", "ResNet50", R, dict(precision="fp64"), ("raise", VE, "precision 'fp64' is not supported")),
        ("prec_int_engine", "ResNet50", R, dict(precision=8), ("raise", "TypeError", "precision must be a string")),
        # V12 transformer memory checks
        ("seq0", L, R, dict(seq_len=0, batch_size=256), ("raise", VE, "seq_len must be >= 1, got 0")),
        ("zero4", L, R, dict(zero_stage=4, batch_size=256), ("raise", VE, "zero_stage must be 0, 1, 2, or 3")),
        ("zero-1", L, R, dict(zero_stage=-1, batch_size=256), ("raise", VE, "zero_stage must be 0, 1, 2, or 3")),
        ("zeroTrue", L, R, dict(zero_stage=True, batch_size=256), ("ok", [])),
        # between them, under LoRA, the trainable fraction (negative only for a non-physical workload)
        ("lora_neg_layers", neg_layers, R, dict(is_lora=True, batch_size=256),
         ("raise", VE, "trainable_fraction must be in [0.0, 1.0], got -0.000130582")),
        ("lora_neg_layers_seq0", neg_layers, R, dict(is_lora=True, batch_size=256, seq_len=0),
         ("raise", VE, "seq_len must be >= 1, got 0")),
        ("lora_neg_hidden_zero7", neg_hidden, R, dict(is_lora=True, batch_size=256, zero_stage=7),
         ("raise", VE, "trainable_fraction must be in [0.0, 1.0], got -3.26455")),
        # V13 bubble checks (also with pp = 1)
        ("m0", L, R, dict(microbatch_count=0, batch_size=256), ("raise", VE, "n_microbatches must be >= 1, got 0")),
        ("v0", L, R, dict(v_stages=0, batch_size=256), ("raise", VE, "v_stages must be >= 1, got 0")),
        ("m0_pp4", L, R, dict(microbatch_count=0, pp_size=4, batch_size=256), ("raise", VE, "n_microbatches")),
        ("v0_engine", "ResNet50", R, dict(v_stages=0, batch_size=256), ("raise", VE, "v_stages must be >= 1")),
        # precedence: the first failing check wins
        ("tp0_pp0", L, R, dict(tp_size=0, pp_size=0), ("raise", VE, "tp_size must be >= 1")),
        ("pp0_batch0", L, R, dict(pp_size=0, batch_size=0), ("raise", VE, "pp_size must be >= 1")),
        ("batch0_eff0", L, R, dict(batch_size=0, efficiency=0.0), ("raise", VE, "batch_size must be >= 1")),
        ("ga0_eff0", L, R, dict(gradient_accumulation_steps=0, efficiency=0.0),
         ("raise", VE, "gradient_accumulation_steps must be >= 1")),
        ("eff0_ov2", L, R, dict(efficiency=0.0, overlap_efficiency=2.0), ("raise", VE, "efficiency must be in")),
        ("ov2_imb0", L, R, dict(overlap_efficiency=2.0, moe_routing_imbalance_factor=0.0),
         ("raise", VE, "overlap_efficiency must be in")),
        ("imb0_Ggt", L, R, dict(moe_routing_imbalance_factor=0.0, tp_size=1024), ("raise", VE, "moe_routing")),
        ("Ggt_prec", L, R, dict(tp_size=1024, precision="fp64"), ("raise", VE, "Infeasible 4D Parallelism")),
        ("Gdiv_prec", L, R, dict(tp_size=3, precision=1), ("raise", VE, "Infeasible 4D Parallelism")),
        ("prec_seq0", L, R, dict(precision="fp64", seq_len=0), ("raise", VE, "precision 'fp64'")),
        ("seq0_zero9", L, R, dict(seq_len=0, zero_stage=9), ("raise", VE, "seq_len must be >= 1")),
        ("zero9_m0", L, R, dict(zero_stage=9, microbatch_count=0), ("raise", VE, "zero_stage must be")),
        ("m0_v0", L, R, dict(microbatch_count=0, v_stages=0), ("raise", VE, "n_microbatches")),
        ("prec_m0_engine", "ResNet50", R, dict(precision="fp64", microbatch_count=0), ("raise", VE, "precision")),
        ("batch_lt_dp_then_error", L, R, dict(batch_size=3, precision="fp64"), ("raise", VE, "precision 'fp64'")),
        # not validated: accepted silently
        ("nontransformer_seq0_engine", "ResNet50", R, dict(seq_len=0, batch_size=256), ("ok", [])),
        ("nontransformer_seq0_replica", "ResNet50", R, dict(seq_len=0, batch_size=256, tp_size=2), ("ok", [])),
        ("nontransformer_zero7", "ResNet50", R, dict(zero_stage=7, batch_size=256), ("ok", [])),
        ("nontransformer_zero7_replica", "Mamba_130M", R, dict(zero_stage=7, batch_size=256, pp_size=2), ("ok", [])),
        ("congestion_negative", L, R, dict(congestion_factor=-1.0, batch_size=256), ("ok", [])),
        ("congestion_zero", L, R, dict(congestion_factor=0.0, batch_size=256, tp_size=2), ("ok", [])),
        ("straggler_0.5", L, R, dict(straggler_factor=0.5, batch_size=256), ("ok", [])),
        ("topology_tree", L, R, dict(topology_override="tree", batch_size=256), ("ok", [])),
        # warnings (§5.2)
        ("warn_batch_lt_dp", L, R, dict(batch_size=100),
         ("ok", ["batch_size (100) < dp_size (256): some ranks will be idle. Using local_batch=1."])),
        ("no_warn_batch_eq_dp", L, R, dict(batch_size=256), ("ok", [])),
        ("warn_engine_int4_h100", "ResNet50", R, dict(batch_size=256, precision="int4"), ("ok", [
            "Precision 'int4' not in NVIDIA H100 precision_flops (available: ['tf32', 'fp16_dense', "
            "'fp16_sparse', 'fp8', 'int8', 'tf32_sparse', 'int8_sparse', 'fp32']); using default peak_flops "
            "(FP16). Results may be inaccurate."])),
        ("warn_both_order", "ResNet50", "Lab_64_A100", dict(batch_size=5, precision="FP8"), ("ok", [
            "batch_size (5) < dp_size (64): some ranks will be idle. Using local_batch=1.",
            "Precision 'fp8' not in NVIDIA A100 precision_flops (available: ['fp32', 'tf32', 'int8', "
            "'fp16_dense', 'fp16_sparse']); using default peak_flops (FP16). Results may be inaccurate."])),
        ("no_warn_engine_bf16", "ResNet50", R, dict(batch_size=256, precision="BF16"), ("ok", [])),
        ("no_warn_replica_int4", "ResNet50", R, dict(batch_size=256, precision="int4", tp_size=2), ("ok", [])),
        ("no_warn_transformer_int4", L, R, dict(batch_size=256, precision="int4"), ("ok", [])),
        # NotImplementedError from lower()
        ("no_params_no_size", no_params, R, dict(batch_size=256), ("raise", "NotImplementedError", "")),
        ("no_params_no_size_replica", no_params, R, dict(batch_size=256, tp_size=2),
         ("raise", "NotImplementedError", "")),
        # comm-helper checks (custom objects only)
        ("fabric_bw_0", L, zero_fabric, dict(batch_size=256, tp_size=8),
         ("raise", VE, "bandwidth_bytes_s must be positive")),
        ("fabric_latency_negative", L, neg_fabric_lat, dict(batch_size=256, tp_size=8),
         ("raise", VE, "latency_s must be non-negative")),
        ("intra_bw_0_hier", L, zero_intra, dict(batch_size=256), ("raise", VE, "intra_node_bw must be positive")),
        ("neg_seq_nontransformer_tp", "ResNet50", a100, dict(batch_size=64, seq_len=-5, tp_size=2),
         ("raise", VE, "message_bytes must be non-negative")),
        # degenerate fleets
        ("fleet_count_0", L, h100.model_copy(update={"count": 0}), dict(batch_size=256),
         ("raise", VE, "Infeasible 4D Parallelism: TP(1) * PP(1) * EP(1) > Total(0)")),
        ("oversubscription_0", L, h100.model_copy(update={"fabric": h100.fabric.model_copy(
            update={"oversubscription_ratio": 0.0})}), dict(batch_size=256, tp_size=8),
         ("raise", "ZeroDivisionError", "float division by zero")),
        # mlsysim divides by the oversubscription whenever dp > 1, even when DP stays in one node
        ("oversubscription_0_one_node", L, h100.model_copy(update={"count": 1, "fabric": h100.fabric.model_copy(
            update={"oversubscription_ratio": 0.0})}), dict(batch_size=64),
         ("raise", "ZeroDivisionError", "float division by zero")),
        # the workload is lowered after the argument checks and the precision: their errors come first
        ("no_params_tp0", no_params, R, dict(tp_size=0), ("raise", VE, "tp_size must be >= 1, got 0")),
        ("no_params_eff2", no_params, R, dict(efficiency=2.0, batch_size=256),
         ("raise", VE, "efficiency must be in [1e-09, 1.0], got 2.0")),
        ("no_params_tp3", no_params, R, dict(tp_size=3), ("raise", VE, "Infeasible 4D Parallelism: TP(3)")),
        # an integer beyond the float range does not stop mlsysim's own checks from firing first
        ("huge_batch_eff2", L, R, dict(batch_size=10 ** 400, efficiency=2.0),
         ("raise", VE, "efficiency must be in [1e-09, 1.0], got 2.0")),
    ]


ERROR_CASES = None


def _cases():
    global ERROR_CASES
    if ERROR_CASES is None:
        ERROR_CASES = _error_cases()
    return ERROR_CASES


_ERROR_IDS = [
    "tp0", "pp0", "ep0", "ep-3", "batch0", "ga0", "eff0", "eff1.5", "eff1e-10", "eff1e-9_ok", "ov1.1", "ov-0.1",
    "imb0.5", "G_gt_N", "G_not_div", "G_not_div_odd_cluster", "prec_int", "prec_None", "prec_fp64", "prec_FP64",
    "prec_fp64_engine", "prec_int_engine", "seq0", "zero4", "zero-1", "zeroTrue", "lora_neg_layers",
    "lora_neg_layers_seq0", "lora_neg_hidden_zero7", "m0", "v0", "m0_pp4",
    "v0_engine", "tp0_pp0", "pp0_batch0", "batch0_eff0", "ga0_eff0", "eff0_ov2", "ov2_imb0", "imb0_Ggt",
    "Ggt_prec", "Gdiv_prec", "prec_seq0", "seq0_zero9", "zero9_m0", "m0_v0", "prec_m0_engine",
    "batch_lt_dp_then_error", "nontransformer_seq0_engine", "nontransformer_seq0_replica", "nontransformer_zero7",
    "nontransformer_zero7_replica", "congestion_negative", "congestion_zero", "straggler_0.5", "topology_tree",
    "warn_batch_lt_dp", "no_warn_batch_eq_dp", "warn_engine_int4_h100", "warn_both_order", "no_warn_engine_bf16",
    "no_warn_replica_int4", "no_warn_transformer_int4", "no_params_no_size", "no_params_no_size_replica",
    "fabric_bw_0", "fabric_latency_negative", "intra_bw_0_hier", "neg_seq_nontransformer_tp",
    "fleet_count_0", "oversubscription_0", "oversubscription_0_one_node", "no_params_tp0", "no_params_eff2",
    "no_params_tp3", "huge_batch_eff2",
]


def test_error_case_ids_complete():
    assert [c[0] for c in _cases()] == _ERROR_IDS


@pytest.mark.parametrize("case_id", _ERROR_IDS)
def test_error_and_warning_parity(case_id):
    (_, model, fleet, kw, expect), = [c for c in _cases() if c[0] == case_id]
    both = oracle.call_both(model, fleet, **kw)
    theirs = both["mlsysim"]
    # the case really exercises what it names (on mlsysim's side)
    if expect[0] == "raise":
        assert theirs["exception"] is not None, f"mlsysim did not raise: {theirs['warnings']}"
        assert theirs["exception"][0] == expect[1] and theirs["exception"][1].startswith(expect[2]), theirs
    else:
        assert theirs["exception"] is None, theirs["exception"]
        assert [m for _, m in theirs["warnings"]] == expect[1]
        assert all(c == "UserWarning" for c, _ in theirs["warnings"])
    diffs = oracle.diff_outcomes(both, RTOL)
    assert not diffs, oracle.describe(model, fleet, kw) + "\n" + "\n".join(diffs)


# ======================================================================================
# d'. Degenerate custom workloads / fleets, one configuration each
# ======================================================================================

def _edge_cases():
    ms = _ms()
    Q = _Q
    L, V = ms.Models.Language, ms.Models.Vision
    h100 = ms.Systems.Clusters.Research_256
    acc = h100.node.accelerator
    pf = {"fp16": Q(500, "TFLOPs/s"), "bf16": Q(400, "TFLOPs/s"), "int4": Q(3000, "TOPS")}
    pf_fleet = _with_acc(h100, compute=_cp(acc.compute, precision_flops=pf))
    odd_units = _cp(h100, fabric=_cp(h100.fabric, bandwidth=Q(12.5, "GB/s"), latency=Q(0.05, "ms")),
                    node=_cp(h100.node, intra_node_bw=Q(3600, "Gbps"),
                             accelerator=_cp(acc, tdp=Q(0.7, "kW"), nvlink=_cp(acc.nvlink, latency=Q(0.3, "us")),
                                             memory=_cp(acc.memory, bandwidth=Q(3350, "GB/s"), capacity=Q(80, "GB")))))
    sd = ms.Models.GenerativeVision.StableDiffusion_v1_5
    return {
        # constructible through mlsysim's own validators
        "transformer_layers_0": (_cp(L.Llama3_8B, layers=0), h100, dict(batch_size=256, tp_size=2, pp_size=2)),
        "transformer_layers_0_lora": (_cp(L.Llama3_8B, layers=0), h100, dict(batch_size=256, is_lora=True)),
        "transformer_hidden_0_lora": (_cp(L.Llama3_8B, hidden_dim=0), h100,
                                      dict(batch_size=256, tp_size=2, pp_size=2, is_lora=True)),
        "transformer_flops_0": (_cp(L.Llama3_8B, inference_flops=Q(0, "flop")), h100, dict(batch_size=256)),
        "transformer_hidden_None_lora": (_cp(L.OPT_13B, hidden_dim=None), h100,
                                         dict(batch_size=256, tp_size=4, is_lora=True)),
        "tiny_transformer_lora_fraction_1": (_cp(L.GPT2_Small, parameters=Q(1e5, "param")), h100,
                                             dict(batch_size=256, is_lora=True)),
        "moe_k_None": (_cp(L.Mixtral_8x7B, active_experts_per_token=None), h100, dict(batch_size=256, ep_size=4)),
        "diffusion_steps_0_engine": (_cp(sd, denoising_steps=0), h100, dict(batch_size=256)),
        "diffusion_steps_0_replica": (_cp(sd, denoising_steps=0), h100, dict(batch_size=256, tp_size=2)),
        "workload_params_0": (_cp(V.LeNet1, parameters=Q(0, "param")), h100, dict(batch_size=256)),
        "size_only_int4_engine": (_cp(ms.Models.Recommendation.DLRM, model_size=Q(3, "GB")), h100,
                                  dict(batch_size=256, precision="int4")),
        "pf_has_fp16_key_engine": (V.ResNet50, pf_fleet, dict(batch_size=256, precision="bf16")),
        "pf_has_fp16_key_replica": (L.Llama3_8B, pf_fleet, dict(batch_size=256, precision="FP16")),
        "pf_int4_TOPS": (L.Llama3_8B, pf_fleet, dict(batch_size=256, precision="int4", tp_size=2)),
        "odd_units": (L.Llama3_8B, odd_units, dict(batch_size=256, tp_size=2)),
        "odd_units_tp_fabric": (L.Llama3_8B, odd_units, dict(batch_size=256, tp_size=16, pp_size=2)),
        # schema-invalid objects (model_copy skips mlsysim's validators)
        "cnn_flops_None": (_cp(V.ResNet50, inference_flops=None), h100, dict(batch_size=256)),
        "transformer_params_None": (_cp(L.Llama3_8B, parameters=None), h100, dict(batch_size=256)),
    }


_EDGE_IDS = [
    "transformer_layers_0", "transformer_layers_0_lora", "transformer_hidden_0_lora", "transformer_flops_0",
    "transformer_hidden_None_lora", "tiny_transformer_lora_fraction_1", "moe_k_None", "diffusion_steps_0_engine",
    "diffusion_steps_0_replica", "workload_params_0", "size_only_int4_engine", "pf_has_fp16_key_engine",
    "pf_has_fp16_key_replica", "pf_int4_TOPS", "odd_units", "odd_units_tp_fabric",
    "transformer_params_None",
]


def test_cnn_without_inference_flops_gets_a_clear_error_where_mlsysim_fails_by_accident():
    # A deliberate deviation: a CNNWorkload whose inference_flops is None (schema-invalid: built with
    # model_copy) makes mlsysim fail inside lower() with "unsupported operand type(s) for /:
    # 'NoneType' and 'Quantity'"; we say which field is missing.
    model, fleet, kw = _edge_cases()["cnn_flops_None"]
    both = oracle.call_both(model, fleet, **kw)
    assert both["mlsysim"]["exception"][0] == "TypeError"
    assert both["ours"]["exception"] == ("NotImplementedError",
                                     "workload 'ResNet-50': a CNN workload needs inference_flops (it is None)")


@pytest.mark.parametrize("case_id", _EDGE_IDS)
def test_custom_edge_inputs(case_id):
    model, fleet, kw = _edge_cases()[case_id]
    both = oracle.call_both(model, fleet, **kw)
    diffs = oracle.diff_outcomes(both, RTOL)
    assert not diffs, oracle.describe(model, fleet, kw) + "\n" + "\n".join(diffs)


def test_numpy_numbers_are_numbers():
    # mlsysim computes with numpy scalars; so do we (the same numbers). A float32 is read as the number it
    # holds (mlsysim multiplies in float32 and rounds: 2.9e-8 off for efficiency=np.float32(0.5))
    import numpy as np

    both = oracle.call_both("Llama3_8B", "Research_256", batch_size=np.int64(256), tp_size=np.int64(8),
                            efficiency=np.float64(0.5), seq_len=np.int64(4096), congestion_factor=np.float64(1.3))
    assert both["ours"]["exception"] is None and not oracle.diff_outcomes(both, RTOL)
    # a numpy bool is a number to mlsysim where a count goes, as True is (1): it said "must be a real number"
    both = oracle.call_both("Llama3_70B", "Research_256", batch_size=256, tp_size=np.True_, pp_size=np.True_,
                            microbatch_count=np.True_, zero_stage=np.True_, activation_recomputation=np.True_)
    assert both["ours"]["exception"] is None and not oracle.diff_outcomes(both, RTOL)
    assert both["mlsysim"]["result"]["parallelism"]["tp"] == 1


@pytest.mark.parametrize("ga", [1.4, 2.5, 1.7, 3.3])
def test_fractional_gradient_accumulation_rounds_as_mlsysim(ga):
    # mlsysim computes the microbatch held by a stage as math.ceil(batch / (dp * GA * in-flight)) in floats;
    # with a fractional GA the float quotient (112 / 1.4 = 80.00000000000001) rounds up, and ours must too
    for model, fleet, kw in (("GPT2", "Research_256", dict(batch_size=3584)),
                             ("Llama3_70B", "Research_256", dict(batch_size=512, tp_size=8, pp_size=4,
                                                                  microbatch_count=8)),
                             ("Mixtral_8x7B", "Training_1K", dict(batch_size=2048, tp_size=2, ep_size=8))):
        both = oracle.call_both(model, fleet, gradient_accumulation_steps=ga, **kw)
        assert both["ours"]["exception"] is None and not oracle.diff_outcomes(both, RTOL), (model, ga)


def test_solve_takes_record_fields_as_mlsysim_takes_the_changed_fleet():
    # solve(count=16, fabric_bandwidth=50e9) prices the catalog's fleet with those fields, as sweep() and
    # sensitivities() take them: mlsysim's solve() on its Research_256 copied with count 16 and a 50 GB/s fabric
    fleet = oracle.registry_cluster("Research_256")
    changed = _cp(fleet, count=16, fabric=_cp(fleet.fabric, bandwidth=_Q(50, "GB/s")))
    kw = dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
    theirs = oracle.flatten_mlsysim(oracle.mlsysim_solver().solve(oracle.registry_workload("Llama3_70B"), changed,
                                                                    **kw))
    r = DistributedModel().solve("Llama3_70B", "Research_256", count=16, fabric_bandwidth=50e9, **kw)
    assert oracle.compare(oracle.flatten(r), theirs, RTOL) == []
    assert r.parallelism["dp"] == 4          # 16 nodes x 8 = 128 = tp 8 x pp 4 x dp 4
    assert "resized to 16 nodes (128 accelerators)" in r.configuration
    assert "fabric bandwidth 50 GB/s" in r.configuration
    # a name that is neither a keyword nor a field: the TypeError Python gives mlsysim's solve()
    with pytest.raises(TypeError, match=r"^DistributedModel.solve\(\) got an unexpected keyword argument 'nodes'$"):
        DistributedModel().solve("Llama3_70B", "Research_256", nodes=16)
    # a field's value out of its range: the sweeps' own refusal, naming the field (mlsysim has no such call)
    for bad, words in ((dict(count=-1), ValueError("count must be positive, got -1")),
                       (dict(count=1.5), ValueError("count must be a whole number, got 1.5")),
                       (dict(fabric_bandwidth=math.nan), ValueError("fabric_bandwidth must be finite, got nan")),
                       (dict(peak_flops=0), ValueError("peak_flops must be positive, got 0")),
                       (dict(memory_capacity="80GB"), TypeError("memory_capacity must be a real number, got str"))):
        with pytest.raises(type(words)) as e:
            DistributedModel().solve("Llama3_70B", "Research_256", **kw, **bad)
        assert str(e.value) == str(words)
