"""Parallelism search: exhaustive and vectorized, and a mirror of mlsysim's ParallelismOptimizer.

:func:`search` prices every valid split of the fleet at once, as one broadcast
sweep: every divisor ``tp``, ``pp``, ``ep`` of the accelerator count (not only
powers of two), with microbatch counts, virtual stages, ZeRO stages,
recomputation and overlap on axes of their own. Schedules a training framework
cannot run (see :func:`can_run`) and splits whose memory does not fit are
dropped; the rest are ranked by fleet MFU, throughput or step time, ZeRO stages
that tie on the objective share one row, and the top rows come back with their
full ``solve()`` breakdown and their memory per accelerator at each of those
ZeRO stages.

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
from .display import html_table, number, quantity, si_prefix, text_table, wrap
from .mechanisms import normalize
from .inputs import EXTENDED_DEFAULTS, KEYWORDS, SOLVE_DEFAULTS, as_fleet, as_workload, size_in_bytes
from .solver import SWEPT, DistributedModel, DistributedResult, describe, solver_of
from .sweeps import resolve_name, sweep
from .symbols import CONSTANT_VALUES, sym

OBJECTIVES = {"mfu": ("mfu", True), "throughput": ("effective_throughput", True),
              "step_time": ("step_latency_total", False)}
#: The solve() keywords a search sets itself (one axis each).
CONFIG_KEYS = ("tp_size", "pp_size", "ep_size", "microbatch_count", "v_stages", "zero_stage",
               "activation_recomputation", "overlap_comm")
#: Relative tolerance within which ZeRO stages of one schedule tie on the objective (one row).
TIE_RTOL = 1e-12


def divisors(n: int) -> List[int]:
    """Every divisor of ``n``, ascending."""
    small = [d for d in range(1, int(n ** 0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def can_run(pp, dp, m, v, batch_size: int, *, gradient_accumulation_steps: int = 1,
            layers: Optional[int] = None):
    """Whether a training framework can run the schedule: the rules :func:`search` applies by default.

    mlsysim's formula prices any ``(pp, dp, m, v)``; a framework runs only some. Arrays broadcast
    (one boolean per configuration); scalars give a ``bool``. With ``B = batch_size``,
    ``GA = gradient_accumulation_steps`` and ``q = B / (dp * GA)`` the samples one replica takes
    in one accumulation step (mlsysim gives each replica ``floor(B / dp)`` samples, spreads them
    over the ``GA`` steps and, in 1F1B memory, over the ``m`` microbatches of a step;
    docs/contract.md §2.1, §2.4):

    1. **The batch splits evenly** over the replicas and the accumulation steps:
       ``B % (dp * GA) == 0``. (mlsysim silently drops the remainder of ``B / dp``, so it would
       price ``dp * floor(B / dp)`` samples, not the batch asked for.)
    2. **Equal microbatches** (pipelined splits, ``pp > 1``): the ``q`` samples of a step are cut
       into ``m`` equal microbatches of at least one sample: ``m <= q`` and ``q % m == 0``.
    3. **A layer per stage** (``pp > 1``): ``layers >= pp``. Stages may hold unequal layer counts
       (mlsysim charges ``ceil(layers / pp)``).
    4. **Interleaved 1F1B** (``pp > 1`` and ``v > 1``): each of the ``pp * v`` model chunks holds
       the same whole number of layers, ``layers % (pp * v) == 0``, and the microbatches come in
       whole rounds of the pipeline, ``m % pp == 0`` ("this schedule requires the number of
       microbatches in a batch to be an integer multiple of the degree of pipeline parallelism";
       Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
       Megatron-LM", SC'21, §2.2.2).

    Without a pipeline (``pp == 1``) ``m`` and ``v`` change nothing in the model (no bubble, one
    microbatch in flight) and rules 2 to 4 do not apply. ``layers=None`` (workloads without a
    layer count: diffusion, plain ``Workload``, CNN or embodied records that leave it unset)
    skips rule 3 and the layer half of rule 4; ``m % pp == 0`` still holds. The records carry no
    attention-head or expert counts, so whether ``tp`` divides the heads or ``ep`` the experts is
    not checked.

    >>> can_run(pp=16, dp=8, m=128, v=4, batch_size=256, layers=80)   # 32 samples, 128 microbatches
    False
    >>> can_run(pp=16, dp=8, m=32, v=4, batch_size=256, layers=80)    # 80 layers over 64 chunks
    False
    >>> can_run(pp=16, dp=8, m=32, v=5, batch_size=256, layers=80)
    True
    >>> can_run(pp=[1, 4, 4], dp=8, m=[64, 16, 6], v=1, batch_size=256, layers=80).tolist()
    [True, True, False]
    >>> can_run(pp=8, dp=8, m=[8, 4], v=2, batch_size=64).tolist()   # no layer count: m % pp only
    [True, False]
    >>> can_run(pp=1, dp=48, m=1, v=1, batch_size=256)                 # 256 samples over 48 replicas
    False
    """
    pp, dp, m, v = (np.asarray(x, dtype=np.int64) for x in (pp, dp, m, v))
    B, ga = int(batch_size), max(1, int(gradient_accumulation_steps))
    share = np.maximum(dp * ga, 1)
    ok = (dp >= 1) & (B % share == 0)
    q = B // share
    piped = pp > 1
    ok = ok & (~piped | ((m >= 1) & (m <= q) & (q % np.maximum(m, 1) == 0)))
    interleaved = piped & (v > 1)
    ok = ok & (~interleaved | (m % np.maximum(pp, 1) == 0))
    if layers is not None:
        ok = ok & (~piped | (int(layers) >= pp))
        ok = ok & (~interleaved | (int(layers) % np.maximum(pp * v, 1) == 0))
    return bool(ok) if ok.ndim == 0 else ok


@dataclass(frozen=True)
class Candidate:
    """One ranked row: its ``solve()`` keywords, dp, the objective value and the full result.

    ``config["zero_stage"]`` is the smallest ZeRO stage that fits among those that tie on the
    objective for this schedule; ``memory_by_zero`` maps each of those stages (ascending) to the
    memory per accelerator, in B, that ``solve()`` gives at it (``result`` is the solve at the
    kept stage).
    """

    config: Dict[str, Any]
    dp: int
    objective: float
    result: DistributedResult
    memory_by_zero: Dict[int, float] = field(default_factory=dict)

    @property
    def zero_stages(self) -> Tuple[int, ...]:
        """The ZeRO stages this row stands for (they tie on the objective and fit), ascending."""
        return tuple(sorted(self.memory_by_zero)) or (self.config["zero_stage"],)

    def to_dict(self) -> Dict[str, Any]:
        """The row as plain JSON-ready values (see :meth:`SearchResult.to_dict`)."""
        r = self.result
        row = {k: (bool(v) if k in ("activation_recomputation", "overlap_comm") else int(v))
               for k, v in self.config.items()}
        row.update(dp=int(self.dp), mfu=float(r.mfu), step_latency_total=float(r.step_latency_total),
                   effective_throughput=float(r.effective_throughput),
                   memory_per_accelerator=float(r.node_profile.memory_footprint),
                   memory_per_accelerator_by_zero_stage={str(z): float(b) for z, b in
                                                         sorted(self.memory_by_zero.items())})
        return row


def _stages(stages: Sequence[int]) -> str:
    """``0-3`` for a run of consecutive ZeRO stages, ``0,2`` otherwise."""
    s = list(stages)
    if len(s) > 2 and s == list(range(s[0], s[-1] + 1)):
        return f"{s[0]}-{s[-1]}"
    return ",".join(map(str, s))


def _memories(values: Sequence[float]) -> str:
    """Bytes per ZeRO stage under one SI prefix: ``41.5/18.3/14.3/10.4 GB``."""
    scale, prefix = si_prefix(max(values), "B")
    return "/".join(number(v / scale, 3) for v in values) + f" {prefix}B"


@dataclass(frozen=True)
class SearchResult:
    """Top rows of a search, best first, with the size of what was searched.

    ``searched`` counts the configurations the model can tell apart; ``unrunnable`` how many of
    them were left out by the schedule rules of :func:`can_run` (0 with ``runnable=False``);
    ``feasible`` how many of the rest fit in memory and were ranked (each ZeRO stage counted; tying
    stages then share one row in ``candidates``).
    """

    objective: str
    candidates: Tuple[Candidate, ...]
    searched: int
    feasible: int
    configuration: str = ""
    unrunnable: int = 0
    runnable: bool = True

    @property
    def best(self) -> Candidate:
        return self.candidates[0]

    def to_dict(self) -> Dict[str, Any]:
        """Plain values for JSON (``json.dumps`` takes it as is): ``objective``, ``configuration``,
        the counts ``searched``, ``feasible``, ``unrunnable``, whether the schedule rules were on
        (``runnable``), and ``results``, one dict per row, best first.

        Each row has its ``solve()`` keywords (``tp_size``, ``pp_size``, ``ep_size``,
        ``microbatch_count``, ``v_stages``, ``zero_stage``, ``activation_recomputation``,
        ``overlap_comm``), ``dp``, ``mfu``, ``step_latency_total`` (s), ``effective_throughput``
        (samples/s), ``memory_per_accelerator`` (B per accelerator at ``zero_stage``) and
        ``memory_per_accelerator_by_zero_stage`` (``{"0": B, ...}``: every stage that ties with it).
        """
        return {"objective": self.objective, "configuration": self.configuration,
                "searched": int(self.searched), "feasible": int(self.feasible),
                "unrunnable": int(self.unrunnable), "runnable": bool(self.runnable),
                "results": [c.to_dict() for c in self.candidates]}

    def _rows(self):
        rows = []
        for i, c in enumerate(self.candidates, 1):
            cfg, r = c.config, c.result
            piped = cfg["pp_size"] > 1
            mem = c.memory_by_zero or {cfg["zero_stage"]: r.node_profile.memory_footprint}
            rows.append((str(i), f"{cfg['tp_size']} x {cfg['pp_size']} x {cfg['ep_size']} x {c.dp}",
                         str(cfg["microbatch_count"]) if piped else "-", str(cfg["v_stages"]) if piped else "-",
                         _stages(c.zero_stages), number(cfg["activation_recomputation"]),
                         number(cfg["overlap_comm"]), f"{r.mfu:.4f}", quantity(r.step_latency_total, "s"),
                         number(r.effective_throughput), _memories([mem[z] for z in sorted(mem)])))
        return rows

    _HEADER = ("#", "tp x pp x ep x dp", "m", "v", "ZeRO", "rec", "ovl", "MFU", "step", "samples/s",
               "memory/acc")
    _HTML_HEADER = ("#", "tp x pp x ep x dp", "microbatches", "virtual stages", "ZeRO stages",
                    "recomputation", "overlap", "MFU", "step", "samples/s", "memory/accelerator by ZeRO stage")

    def _head(self) -> str:
        left = (f"{self.unrunnable:,} left out as not runnable" if self.runnable
                else "schedule rules off: runnable=False")
        return (f"search of {self.configuration}: {self.feasible:,} feasible of {self.searched:,} "
                f"configurations ({left}), ranked by {self.objective}")

    def _legend(self) -> str:
        return ("m: microbatches, v: virtual stages ('-': no pipeline); rec: activation recomputation; "
                "ovl: DP all-reduce overlapped; ZeRO: the stages that fit and tie on "
                f"{self.objective} (zero_stage is the first), memory/acc at each")

    def __str__(self) -> str:
        rows = self._rows()
        table = text_table(rows, self._HEADER, indent="  ")
        if max(map(len, table)) > 100:      # wide cells (a 3-digit rank, long times): no indent
            table = text_table(rows, self._HEADER)
        return "\n".join(wrap(self._head(), "") + table + wrap(self._legend(), "  "))

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return html_table(self._rows(), self._HTML_HEADER, caption=self._head())


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
           overlap_comm: Sequence[bool] = (False, True), runnable: bool = True, **fixed) -> SearchResult:
    """Exhaustive search of the parallelism split and schedule (see the module docstring).

    The choices are named like ``solve()``'s keywords; each takes one value or a sequence.
    ``tp_size``/``pp_size``/``ep_size`` default to every divisor of the accelerator count
    (``ep_size``: only 1 for a dense model). ``fixed`` are other ``solve()`` keywords (precision,
    efficiency, seq_len, gradient_accumulation_steps, ...) or record fields, one value each.

    What is left out, as vectorized masks over the whole sweep:

    * configurations the model cannot tell apart but one (without a pipeline ``m`` and ``v``
      change nothing, with one replica ZeRO and overlap change nothing): the first choice stays;
    * splits with more data-parallel replicas than ``batch_size`` (they would train ``dp``
      samples, one per rank);
    * with ``runnable=True`` (the default), schedules a framework cannot run, by the rules of
      :func:`can_run`: ``batch_size % (dp * GA) == 0``; when pipelined, ``m`` divides the
      ``batch_size / (dp * GA)`` samples of a replica's step and ``layers >= pp``; with virtual
      stages (``v > 1``, the interleaved 1F1B schedule of Narayanan et al. 2021, "Efficient
      Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC'21),
      ``layers % (pp * v) == 0`` and ``m % pp == 0``. ``GA`` is ``gradient_accumulation_steps``
      and ``layers`` the workload's (or ``fixed["layers"]``); a workload without a layer count
      skips the layer rules. ``runnable=False`` ranks every schedule mlsysim's formula accepts,
      as ``solve()`` prices them;
    * configurations that do not fit in accelerator memory or that ``solve()`` rejects.

    ZeRO stages of one schedule (split, ``m``, ``v``, recomputation, overlap) whose objective
    values tie (within :data:`TIE_RTOL` relative; mlsysim's ZeRO changes memory only) make one row:
    it keeps the smallest stage that fits (the model does not price ZeRO's extra communication,
    e.g. stage 3's parameter all-gathers, so a lower stage is the safer choice where memory
    allows) and lists the memory per accelerator of every tying stage in
    ``Candidate.memory_by_zero``. ``top_k`` counts rows. The counts ``searched``, ``unrunnable``
    and ``feasible`` of the result are described in :class:`SearchResult`.
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    for k in fixed:
        if k not in ("precision", "fidelity", "without"):
            resolve_name(k, "search")
    if "without" in fixed:
        fixed = {**fixed, "without": normalize(fixed["without"])}
    swept = sorted(k for k, v in fixed.items() if k not in ("fidelity", "without") and np.ndim(v) > 0)
    if swept:
        raise TypeError(f"search() takes one value for {', '.join(swept)}; sweep over it with sweep()")
    w, f = as_workload(model), as_fleet(fleet)
    n = f.total_accelerators
    divs = divisors(n)
    tps = _choices(tp_size, divs)
    pps = _choices(pp_size, divs)
    eps = _choices(ep_size, divs if w.kind == "sparse_transformer" else [1])
    splits = [(int(a), int(b), int(c)) for a, b, c in itertools.product(tps, pps, eps) if n % (a * b * c) == 0]
    if not splits:
        raise ValueError(f"no tp x pp x ep among the choices divides the fleet's {n} accelerators")
    t_, p_, e_ = (np.array(x, dtype=float) for x in zip(*splits))
    # ZeRO stages ascending, so that the first of a tie is the smallest stage
    zeros = sorted(set(_choices(zero_stage, ())))
    axes = [np.asarray(_choices(v, ()), float)
            for v in (microbatch_count, v_stages, zeros, activation_recomputation, overlap_comm)]
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
    distinct = np.broadcast_to((pipelined | (first[0] & first[1])) & (replicated | (first[2] & first[4])), shape)
    # a split with more replicas than samples trains dp samples, not batch_size (mlsysim then warns and
    # gives every rank one sample): it is left out rather than ranked on a batch nobody asked for
    enough = np.nan_to_num(r["dp"], nan=np.inf) <= batch_size
    fits = distinct & r.valid & r["node_profile.feasible"] & enough
    searched = int(np.count_nonzero(distinct))
    if runnable:
        # the schedule rules (can_run), on the split and schedule axes only, then broadcast
        dp_split = np.array([n // (a * b * c) for a, b, c in splits], dtype=np.int64)
        can = can_run(on(0, p_.astype(np.int64)), on(0, dp_split), on(1, axes[0]), on(2, axes[1]), batch_size,
                      gradient_accumulation_steps=fixed.get("gradient_accumulation_steps", 1),
                      layers=fixed.get("layers", w.layers))
        can = np.broadcast_to(can, shape)
        unrunnable = int(np.count_nonzero(distinct & ~can))
        keep = fits & can
    else:
        unrunnable, keep = 0, fits
    count = int(np.count_nonzero(keep))
    if count == 0:
        if runnable and np.any(fits):
            raise ValueError(f"no runnable configuration fits in accelerator memory: the "
                             f"{int(np.count_nonzero(fits)):,} that fit break the schedule rules of can_run() "
                             "(microbatches that split the batch evenly, layers per stage and virtual stage); "
                             "widen microbatch_count / v_stages, or pass runnable=False to rank them anyway")
        raise ValueError("no configuration fits in accelerator memory; widen the choices (recomputation, "
                         "ZeRO, more pipeline stages) or lower batch_size / seq_len")
    score = np.where(keep, r[key] if larger_is_better else -r[key], -np.inf)

    def ties(a, b):
        return np.isclose(a, b, rtol=TIE_RTOL, atol=0.0)

    # ZeRO stages that tie with a smaller kept stage of the same schedule are shown in its row
    zscore, zkeep = np.moveaxis(score, 3, 0), np.moveaxis(keep, 3, 0)
    tied_below = np.zeros_like(zkeep)
    for i in range(1, len(zeros)):
        for j in range(i):
            tied_below[i] |= zkeep[j] & zkeep[i] & ties(zscore[j], zscore[i])
    row = keep & ~np.moveaxis(tied_below, 0, 3)
    flat = np.where(row, score, -np.inf).ravel()
    k = min(top_k, int(np.count_nonzero(row)))
    # every row scoring at least the k-th best, by score then by position: ties at the k-th
    # place resolve the same way whatever k is
    kth = np.partition(-flat, k - 1)[k - 1]
    best = np.flatnonzero(-flat <= kth)
    best = best[np.lexsort((best, -flat[best]))][:k]
    dm, plain = solver_of(fixed)

    def solve(config):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return dm.solve(w, f, batch_size=batch_size, **config, **plain)

    candidates = []
    for idx in best:
        i, im, iv, iz, ir, io = np.unravel_index(idx, shape)
        config = dict(tp_size=splits[i][0], pp_size=splits[i][1], ep_size=splits[i][2],
                      microbatch_count=int(axes[0][im]), v_stages=int(axes[1][iv]), zero_stage=int(axes[2][iz]),
                      activation_recomputation=bool(axes[3][ir]), overlap_comm=bool(axes[4][io]))
        res = solve(config)
        # this row's stages: the kept one and every stage that fits and ties with it
        memory = {}
        for j, z in enumerate(zeros):
            at = (i, im, iv, j, ir, io)
            if j == iz:
                memory[int(z)] = res.node_profile.memory_footprint
            elif keep[at] and ties(score.flat[idx], score[at]):
                memory[int(z)] = solve(dict(config, zero_stage=int(z))).node_profile.memory_footprint
        value = res.mfu if key == "mfu" else getattr(res, key)
        candidates.append(Candidate(config, int(res.parallelism["dp"]), value, res, memory))
    given = {**SOLVE_DEFAULTS, "batch_size": batch_size, **fixed}
    return SearchResult(objective, tuple(candidates), searched, count,
                        describe(w, f, given["precision"], [SWEPT if k in CONFIG_KEYS else given[k] for k in KEYWORDS],
                                 {k: v for k, v in given.items() if k in EXTENDED_DEFAULTS}),
                        unrunnable, bool(runnable))


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
