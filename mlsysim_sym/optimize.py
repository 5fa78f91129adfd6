"""Parallelism search: exhaustive and vectorized, and a mirror of mlsysim's ParallelismOptimizer.

:func:`search` prices every valid split of the fleet at once, as one broadcast
sweep: every divisor ``tp``, ``pp``, ``ep`` of the accelerator count (not only
powers of two), with microbatch counts, virtual stages, ZeRO stages,
recomputation and overlap on axes of their own. Splits whose memory does not fit
are dropped; the rest are ranked by fleet MFU, throughput or step time, and the
top ones come back with their full ``solve()`` breakdown.

:class:`ParallelismOptimizer` reproduces ``mlsysim.solvers.ParallelismOptimizer``
0.3.0: its candidate space (power-of-two TP up to the node size, power-of-two PP),
its memory pre-screen, its objective ``scaling_efficiency * efficiency`` and its
error when nothing fits.
"""
from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .compile import lambdify_numeric
from .display import html_table, number, quantity, text_table, wrap
from .inputs import KEYWORDS, SOLVE_DEFAULTS, as_fleet, as_workload, size_in_bytes
from .solver import SWEPT, DistributedModel, DistributedResult, describe
from .sweeps import resolve_name, sweep
from .symbols import CONSTANT_VALUES, sym

OBJECTIVES = {"mfu": ("mfu", True), "throughput": ("effective_throughput", True),
              "step_time": ("step_latency_total", False)}
#: The solve() keywords a search sets itself (one axis each).
CONFIG_KEYS = ("tp_size", "pp_size", "ep_size", "microbatch_count", "v_stages", "zero_stage",
               "activation_recomputation", "overlap_comm")


def divisors(n: int) -> List[int]:
    """Every divisor of ``n``, ascending."""
    small = [d for d in range(1, int(n ** 0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


@dataclass(frozen=True)
class Candidate:
    """One ranked configuration: its ``solve()`` keywords, dp, the objective value and the full result."""

    config: Dict[str, Any]
    dp: int
    objective: float
    result: DistributedResult


@dataclass(frozen=True)
class SearchResult:
    """Top candidates of a search, best first, with the size of what was searched."""

    objective: str
    candidates: Tuple[Candidate, ...]
    searched: int
    feasible: int
    configuration: str = ""

    @property
    def best(self) -> Candidate:
        return self.candidates[0]

    def _rows(self):
        rows = []
        for i, c in enumerate(self.candidates, 1):
            cfg, r = c.config, c.result
            sched = (f"m {cfg['microbatch_count']}, v {cfg['v_stages']}" if cfg["pp_size"] > 1 else "-")
            extras = ", ".join(x for x, on in (("ZeRO-%d" % cfg["zero_stage"], cfg["zero_stage"]),
                                                 ("recompute", cfg["activation_recomputation"]),
                                                 ("overlap", cfg["overlap_comm"])) if on) or "-"
            rows.append((str(i), f"{cfg['tp_size']} x {cfg['pp_size']} x {cfg['ep_size']} x {c.dp}", sched, extras,
                         f"{r.mfu:.4f}", quantity(r.step_latency_total, "s"),
                         number(r.effective_throughput),
                         quantity(r.node_profile.memory_footprint, "B")))
        return rows

    _HEADER = ("#", "tp x pp x ep x dp", "pipeline", "memory/overlap", "MFU", "step", "samples/s", "memory/acc")

    def __str__(self) -> str:
        head = wrap(f"search of {self.configuration}: {self.feasible:,} feasible of {self.searched:,} "
                    f"configurations, ranked by {self.objective}", "")
        return "\n".join(head + text_table(self._rows(), self._HEADER, indent="  "))

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return html_table(self._rows(), self._HEADER, caption=f"search of {self.configuration}, ranked by "
                                                               f"{self.objective}")


def _choices(value, default) -> List:
    if value is None:
        return list(default)
    return [value] if np.ndim(value) == 0 else list(value)


def search(model, fleet, batch_size: int, *, objective: str = "mfu", top_k: int = 10,
           tp_size: Optional[Sequence[int]] = None, pp_size: Optional[Sequence[int]] = None,
           ep_size: Optional[Sequence[int]] = None,
           microbatch_count: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128),
           v_stages: Sequence[int] = (1, 2, 4), zero_stage: Sequence[int] = (0, 1, 2, 3),
           activation_recomputation: Sequence[bool] = (False, True),
           overlap_comm: Sequence[bool] = (False, True), **fixed) -> SearchResult:
    """Exhaustive search of the parallelism split and schedule (see the module docstring).

    The choices are named like ``solve()``'s keywords; each takes one value or a sequence.
    ``tp_size``/``pp_size``/``ep_size`` default to every divisor of the accelerator count
    (``ep_size``: only 1 for a dense model). ``fixed`` are other ``solve()`` keywords (precision,
    efficiency, seq_len, gradient_accumulation_steps, ...) or record fields, one value each.
    Splits with more data-parallel replicas than ``batch_size`` are left out (they would train
    ``dp`` samples, one per rank).
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    for k in fixed:
        if k != "precision":
            resolve_name(k, "search")
    swept = sorted(k for k, v in fixed.items() if np.ndim(v) > 0)
    if swept:
        raise TypeError(f"search() takes one value for {', '.join(swept)}; sweep over it with sweep()")
    w, f = as_workload(model), as_fleet(fleet)
    n = f.total_accelerators
    divs = divisors(n)
    tps = _choices(tp_size, divs)
    pps = _choices(pp_size, divs)
    eps = _choices(ep_size, divs if w.kind == "sparse_transformer" else [1])
    splits = [(a, b, c) for a, b, c in itertools.product(tps, pps, eps) if n % (a * b * c) == 0]
    if not splits:
        raise ValueError(f"no tp x pp x ep among the choices divides the fleet's {n} accelerators")
    t_, p_, e_ = (np.array(x, dtype=float) for x in zip(*splits))
    axes = [np.asarray(_choices(v, ()), float)
            for v in (microbatch_count, v_stages, zero_stage, activation_recomputation, overlap_comm)]
    shape = (len(splits),) + tuple(len(a) for a in axes)

    def on(axis, x):
        return x.reshape([-1 if i == axis else 1 for i in range(len(shape))])

    key, larger_is_better = OBJECTIVES[objective]
    r = sweep(w, f, grid=False, outputs=(key, "dp", "node_profile.feasible"), batch_size=batch_size,
              tp_size=on(0, t_), pp_size=on(0, p_), ep_size=on(0, e_),
              microbatch_count=on(1, axes[0]), v_stages=on(2, axes[1]), zero_stage=on(3, axes[2]),
              activation_recomputation=on(4, axes[3]), overlap_comm=on(5, axes[4]), **fixed)
    # keep one of each set of configurations the model cannot tell apart
    # (without a pipeline, m and v change nothing; with one replica, ZeRO and overlap change nothing)
    first = [on(i + 1, a) == a[0] for i, a in enumerate(axes)]
    pipelined = on(0, p_) > 1
    replicated = np.nan_to_num(r["dp"], nan=0.0) > 1
    distinct = (pipelined | (first[0] & first[1])) & (replicated | (first[2] & first[4]))
    # a split with more replicas than samples trains dp samples, not batch_size (mlsysim then warns and
    # gives every rank one sample): it is left out rather than ranked on a batch nobody asked for
    enough = np.nan_to_num(r["dp"], nan=np.inf) <= batch_size
    keep = np.broadcast_to(distinct, shape) & r.valid & r["node_profile.feasible"] & enough
    searched = int(np.count_nonzero(np.broadcast_to(distinct, shape)))
    score = np.where(keep, r[key] if larger_is_better else -r[key], -np.inf)
    flat = score.ravel()
    count = int(np.count_nonzero(keep))
    if count == 0:
        raise ValueError("no configuration fits in accelerator memory; widen the choices (recomputation, "
                         "ZeRO, more pipeline stages) or lower batch_size / seq_len")
    k = min(top_k, count)
    # every configuration scoring at least the k-th best, by score then by position: ties at the k-th
    # place resolve the same way whatever k is
    kth = np.partition(-flat, k - 1)[k - 1]
    best = np.flatnonzero(-flat <= kth)
    best = best[np.lexsort((best, -flat[best]))][:k]
    dm = DistributedModel()
    candidates = []
    for idx in best:
        i, im, iv, iz, ir, io = np.unravel_index(idx, shape)
        config = dict(tp_size=splits[i][0], pp_size=splits[i][1], ep_size=splits[i][2],
                      microbatch_count=int(axes[0][im]), v_stages=int(axes[1][iv]), zero_stage=int(axes[2][iz]),
                      activation_recomputation=bool(axes[3][ir]), overlap_comm=bool(axes[4][io]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = dm.solve(w, f, batch_size=batch_size, **config, **fixed)
        value = res.mfu if key == "mfu" else getattr(res, key)
        candidates.append(Candidate(config, res.parallelism["dp"], value, res))
    given = {**SOLVE_DEFAULTS, "batch_size": batch_size, **fixed}
    return SearchResult(objective, tuple(candidates), searched, count,
                        describe(w, f, given["precision"], [SWEPT if k in CONFIG_KEYS else given[k] for k in KEYWORDS]))


# ------------------------------------------------------------------------------------------------
# mlsysim's ParallelismOptimizer
# ------------------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _prescreen():
    """ParallelismOptimizer's memory pre-screen per accelerator, as an expression.

    Weights at 2 bytes (mlsysim calls ``size_in_bytes()`` at its fp16 default: the value of
    ``W_g`` at a 2-byte precision) sharded by TP and PP, gradients of the same size, and
    Adam state (12 B per parameter) sharded the same way.
    """
    weights = sym.W_g / sym.tp / sym.pp
    expr = weights + weights + sym.P * sym.ADAM / (sym.tp * sym.pp)
    return lambdify_numeric((sym.W_g, sym.P, sym.tp, sym.pp, sym.ADAM), [expr], "math", cse=False)


@dataclass(frozen=True)
class ParallelismOptimizerResult:
    """mlsysim's ``ParallelismOptimizerResult`` fields, in SI units (throughput 1/s, step time s)."""

    objective_value: float
    best_config: Dict[str, int]
    total_searched: int
    best_mfu: float
    best_throughput: float
    best_step_time: float
    search_space_size: int
    top_candidates: List[Dict[str, Any]] = field(default_factory=list)


class ParallelismOptimizer:
    """``mlsysim.solvers.ParallelismOptimizer().solve(...)``, priced by our ``solve()``."""

    def solve(self, model, fleet, batch_size: int, precision: str = "fp16", efficiency: float = 0.5,
              max_tp: Optional[int] = None, max_pp: Optional[int] = None, overlap_comm: bool = True,
              seq_len: int = 2048, activation_recomputation: bool = False) -> ParallelismOptimizerResult:
        w, f = as_workload(model), as_fleet(fleet)
        n_gpus = f.total_accelerators
        limit_tp = max_tp or f.node.accelerators_per_node
        limit_pp = max_pp or n_gpus
        prescreen = _prescreen()
        dm = DistributedModel()
        candidates = []
        for tp in [2 ** i for i in range(10) if 2 ** i <= limit_tp]:
            for pp in [2 ** i for i in range(10) if 2 ** i <= limit_pp]:
                if tp * pp > n_gpus or n_gpus % (tp * pp) != 0:
                    continue
                dp = n_gpus // (tp * pp)
                try:   # mlsysim skips a candidate on any exception, as here
                    w16 = size_in_bytes(w, 2)
                    # without a parameter count mlsysim takes 6x the fp16 weight bytes for Adam,
                    # i.e. 12 B for each of w16 / 2 parameters
                    params = w.parameters if w.parameters is not None else w16 / 2
                    per_gpu = prescreen(w16, params, tp, pp, CONSTANT_VALUES[sym.ADAM])[0]
                    if per_gpu > f.node.accelerator.memory_capacity * 0.9:
                        continue
                    res = dm.solve(w, f, batch_size=batch_size, precision=precision, efficiency=efficiency,
                                   tp_size=tp, pp_size=pp, overlap_comm=overlap_comm, seq_len=seq_len,
                                   activation_recomputation=activation_recomputation,
                                   microbatch_count=max(1, batch_size // dp) if pp > 1 else 1)
                    if not res.node_profile.feasible:
                        continue
                    candidates.append({"config": {"tp": tp, "pp": pp, "dp": dp},
                                       "mfu": res.scaling_efficiency * efficiency,
                                       "throughput": res.effective_throughput,
                                       "step_time": res.step_latency_total})
                except Exception:  # noqa: BLE001 - mlsysim's behaviour, reproduced on purpose
                    continue
        if not candidates:
            raise ValueError(
                "No valid parallelism configuration: no TP x PP x DP split of this cluster "
                "fits its training state (activations included) in accelerator memory. "
                "Enable activation_recomputation, lower batch_size or seq_len, or add accelerators.")
        best = max(candidates, key=lambda x: x["mfu"])
        top = sorted(candidates, key=lambda x: x["mfu"], reverse=True)[:5]
        return ParallelismOptimizerResult(
            objective_value=best["mfu"], best_config=best["config"], total_searched=len(candidates),
            best_mfu=best["mfu"], best_throughput=best["throughput"], best_step_time=best["step_time"],
            search_space_size=len(candidates), top_candidates=top)
