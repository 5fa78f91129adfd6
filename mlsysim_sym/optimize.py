"""Parallelism search: exhaustive and vectorized, and a mirror of mlsysim's ParallelismOptimizer.

:func:`search` prices every valid split of the fleet at once, as one broadcast
sweep: every divisor ``tp``, ``pp``, ``ep`` of the accelerator count (not only
powers of two; in the extended model's MoE layout ``ep`` is carved out of a
stage's tensor-, data- and context-parallel ranks, beside ``tp``, ``pp``, ``cp``), with
microbatch counts, virtual stages, ZeRO stages,
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

import dataclasses
import itertools
import math
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import sympy as sp

from . import _chunks
from .arguments import Arguments, arguments, describe, refuse_extended, settable, switch_type_error
from .compile import lambdify_numeric
from .inputs import FLAG_KEYWORDS, as_fleet, as_workload, size_in_bytes
from .display import quantity
from .outputs import OBJECTIVES, field_named
from .schedules import can_run
from .search_result import Candidate, SearchResult, chosen_value
from .solver import DistributedModel, price
from .sweeps import _element_error, _is_real, _switch_values, prepare
from .symbols import CONSTANT_VALUES, Kind, by_argument, keywords, sym

__all__ = ["CONFIG_KEYS", "Axis", "Candidate", "OBJECTIVES", "ParallelismOptimizer", "SearchResult", "SearchTooLarge",
           "can_run", "divisors", "search"]

#: The ``solve()`` keywords a search always sets itself (one axis each, the split's degrees on one axis).
CONFIG_KEYS = ("tp_size", "pp_size", "ep_size", "microbatch_count", "v_stages", "zero_stage",
               "activation_recomputation", "overlap_comm")
#: Relative tolerance within which ZeRO stages of one schedule tie on the objective (one row).
TIE_RTOL = 1e-12
#: The virtual stage counts a search tries by default: those the published pipeline recipes run (1 to 6, 8, 12 and
#: 24 in the Megatron-Bridge, NeMo and DGX Cloud recipes of docs/modern_runs.md), with 10, 16 and 20 between, so
#: that a model's layers split evenly at most pipeline depths (80 layers over 4 stages: v 5, 10 or 20). Which of
#: them a split can run the runnable rules say (``(layers + e) % (pp v) == 0``); in mlsysim's model, which prices
#: no stage-to-stage sends, the bubble alone makes a larger ``v`` faster.
V_STAGES = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24)


def divisors(n: int) -> List[int]:
    """Every divisor of ``n``, ascending (:func:`sympy.divisors`)."""
    return list(_divisors(int(n)))


@lru_cache(maxsize=256)
def _divisors(n: int) -> Tuple[int, ...]:
    return tuple(int(d) for d in sp.divisors(n))


@dataclass(frozen=True)
class Axis:
    """One axis of a search's grid: the argument it varies (``"split"`` for the degrees that split the fleet,
    which vary together) and its choices."""

    name: str
    values: np.ndarray

    def __len__(self) -> int:
        return len(self.values)


def _choices(value, default) -> List:
    if value is None:
        return list(default)
    return [value] if np.ndim(value) == 0 else list(value)


def search(model, fleet, batch_size: int, *, objective: Optional[str] = None, top_k: int = 10,
           tp_size: Optional[Sequence[int]] = None, pp_size: Optional[Sequence[int]] = None,
           ep_size: Optional[Sequence[int]] = None,
           microbatch_count: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128),
           v_stages: Sequence[int] = V_STAGES, zero_stage: Sequence[int] = (0, 1, 2, 3),
           activation_recomputation: Sequence[bool] = (False, True),
           overlap_comm: Sequence[bool] = (False, True), runnable: bool = True, max_memory=None,
           max_configurations: Optional[int] = None, **fixed) -> SearchResult:
    """Exhaustive search of the parallelism split and schedule (see the module docstring).

    The choices are named like ``solve()``'s keywords; each takes one value or a sequence.
    ``tp_size``/``pp_size``/``ep_size`` default to every divisor of the accelerator count
    (``ep_size``: only 1 for a dense model). ``fixed`` are other ``solve()`` keywords (precision,
    efficiency, seq_len, gradient_accumulation_steps, ...), record fields (``fabric_bandwidth``, ...),
    ``fidelity`` and ``without``: one value each, or a list of choices, which the search varies too (an axis of
    its own and a column of the table). In the extended model ``cp_size`` (default 1) joins the split.
    ``objective`` (``mfu``, ``throughput`` or ``step_time``) defaults to ``mfu``, or to ``throughput`` where several
    precisions are searched: MFU counts each precision against its own peak (mlsysim's), so FP8 at 1.4 times
    BF16's throughput may show the lower MFU.

    The extended model lays a mixture of experts out as Megatron-Core does (the mechanism ``moe_layout``):
    ``ep_size`` does not multiply the accelerators of a replica (``tp x pp x cp``, ``dp = N / (tp pp cp)``) but is
    carved out of a stage's tensor-, data- and context-parallel ranks. For an MoE workload (or where ``ep_size``
    or a list of ``etp_size`` is given) the split then holds ``ep_size`` and ``etp_size`` (default 1; a list is
    searched) beside ``tp x pp x cp``, and keeps the rows where ``tp pp cp`` and ``ep etp pp`` each divide the
    accelerator count; the table shows them after the replicas (``tp x pp x cp x dp, ep``, with ``x etp`` where it
    is not 1).

    What is left out, as vectorized masks over the whole sweep:

    * configurations the model cannot tell apart but one (without a pipeline ``v`` changes nothing, nor ``m``
      in mlsysim's model; the extended model's transformers pay a step's layer passes per microbatch, so there
      ``m`` is searched, and must divide a replica's samples, at ``pp = 1`` too; with one replica ZeRO and
      overlap change nothing; choices of the overlap or another
      argument that give the same objective and memory as its first choice): the first choice stays;
    * splits with more data-parallel replicas than ``batch_size`` (they would train ``dp``
      samples, one per rank);
    * with ``runnable=True`` (the default), schedules a framework cannot run, by the rules of
      :func:`can_run`: ``batch_size % (dp * GA) == 0``; when pipelined, ``m`` divides the
      ``batch_size / (dp * GA)`` samples of a replica's step and ``layers >= pp``; with virtual
      stages (``v > 1``, the interleaved 1F1B schedule of Narayanan et al. 2021, "Efficient
      Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC'21),
      ``(layers + e) % (pp * v) == 0`` for ``e`` in 0, 1, 2 (the embedding and the loss may count
      as a layer each, as Megatron-Core's ``account_for_embedding_in_pipeline_split`` and
      ``account_for_loss_in_pipeline_split`` count them) and ``m % pp == 0``. ``GA`` is ``gradient_accumulation_steps``
      and ``layers`` the workload's (or ``fixed["layers"]``); a workload without a layer count
      skips the layer rules. ``runnable=False`` ranks every schedule mlsysim's formula accepts,
      as ``solve()`` prices them;
    * configurations that do not fit in accelerator memory or that ``solve()`` rejects.

    ZeRO stages of one schedule (split, ``m``, ``v``, recomputation, overlap) whose objective
    values tie (within :data:`TIE_RTOL` relative; mlsysim's ZeRO changes memory only) make one row:
    it keeps the smallest stage that fits (mlsysim's model does not price ZeRO's extra communication,
    e.g. stage 3's parameter all-gathers, so a lower stage is the safer choice where memory
    allows) and lists the memory per accelerator of every tying stage in
    ``Candidate.memory_by_zero``. ``top_k`` counts rows. The counts ``searched``, ``unrunnable``
    and ``feasible`` of the result are described in :class:`SearchResult`.

    ``max_configurations``: a grid of more configurations (the splits that divide the fleet times every other
    choice) is refused before it is evaluated (:class:`SearchTooLarge`, a ``ValueError`` giving the count; the
    command line's limit). A grid whose evaluation would not fit the memory budget (``max_memory`` bytes; default
    :func:`mlsysim_sym._chunks.memory_budget`, the tightest of the cgroup limit, ``ulimit -v`` and the memory
    available) is refused before it is evaluated (:class:`~mlsysim_sym.sweeps.SweepTooLarge`, a ``MemoryError``).
    """
    if objective is None:
        # MFU counts each precision against its own peak (mlsysim's), so it does not rank precisions
        objective = "throughput" if _precisions(fixed.get("precision")) > 1 else "mfu"
    # an objective by its result field or quantity too (effective_throughput, step_latency_total, T_step)
    objective = next((k for k, o in OBJECTIVES.items() if isinstance(objective, str)
                      and field_named(objective) == o.field), objective)
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)} (or their result fields: "
                         f"{', '.join(o.field for o in OBJECTIVES.values())}), got {objective!r}")
    if isinstance(batch_size, bool) or not _is_real(batch_size) or not np.isfinite(batch_size) or batch_size < 1 \
            or batch_size != int(batch_size):
        raise ValueError(f"batch_size must be a whole number >= 1 (every configuration is ranked at one batch), "
                         f"got {batch_size!r}")
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
        raise ValueError(f"top_k must be a whole number >= 1, got {top_k!r}")
    if max_memory is not None:
        _chunks.check_max_memory(max_memory)
    scalars = {k: v for k, v in fixed.items() if k in ("fidelity", "without") or np.ndim(v) == 0}
    for k, v in scalars.items():                      # solve()'s message for a keyword that is not a number
        if k in keywords() and v is not None and not _is_real(v):
            raise _element_error("search", k, 0, v, scalar=True)
    base = arguments(model, fleet, dict(scalars, batch_size=batch_size), caller="search")
    varied = [k for k in fixed if k not in scalars]
    for k in varied:                                  # the extended model's switches: 0 and 1 only, as solve()
        p = keywords().get(k)
        if p is not None and p.kind is Kind.FLAG and p.fidelity != "mlsysim":
            _switch_values(k, fixed[k])
    for k in varied:                                  # a list of an unknown name: the same error as a scalar's
        if k not in base.kwargs and k not in settable():
            arguments(base.workload, base.fleet, {k: None}, caller="search")
    split_names = base.model.splits + _expert_degrees(base, ep_size, fixed)
    given = dict(tp_size=tp_size, pp_size=pp_size, ep_size=ep_size, cp_size=fixed.get("cp_size"),
                 etp_size=fixed.get("etp_size"))
    varied = [k for k in varied if k not in split_names]
    split, axes = _axes(base, given, split_names, dict(microbatch_count=microbatch_count, v_stages=v_stages,
                                                       zero_stage=zero_stage,
                                                       activation_recomputation=activation_recomputation,
                                                       overlap_comm=overlap_comm),
                        {k: fixed[k] for k in varied})
    size = len(split) * math.prod(len(ax.values) for ax in axes[1:])
    if max_configurations is not None and size > max_configurations:
        raise SearchTooLarge(f"a search of {size:,} configurations ({len(split):,} splits of the fleet, "
                             f"{' x '.join(k.split('_')[0] for k in split_names)}, times "
                             f"{size // len(split):,} choices of the rest); at most {max_configurations:,}: give "
                             "fewer values or fix a degree", size)
    return _rank(base, split, split_names, axes, objective, top_k, runnable, max_memory)


class SearchTooLarge(ValueError):
    """A search whose grid holds more configurations than ``max_configurations`` (``.size``: how many)."""

    def __init__(self, message: str, size: int):
        super().__init__(message)
        self.size = size


#: The degrees of the MoE layout's expert groups (``moe_layout``: ``ep etp pp`` must divide the accelerators).
EXPERT_GROUP = ("ep_size", "etp_size", "pp_size")


def _expert_degrees(base: Arguments, ep_size, fixed) -> Tuple[str, ...]:
    """The expert degrees a search varies beside the split (``("ep_size", "etp_size")``) where the model carves
    expert parallelism out of the data-parallel ranks (``moe_layout``, so ``ep_size`` is no splitting degree) and
    the workload is a mixture of experts or the caller gives ``ep_size`` or a list of ``etp_size``; else none."""
    if "ep_size" in base.model.splits or not base.model.on("moe_layout"):
        return ()
    if base.workload.kind == "sparse_transformer" or ep_size is not None or np.ndim(fixed.get("etp_size")) > 0:
        return ("ep_size", "etp_size")
    return ()


def _groups(base: Arguments, split_names) -> Tuple[Tuple[int, ...], ...]:
    """The columns of the split whose product must divide the accelerators: the degrees that split the fleet
    (one replica spans their product) and, where the split holds the expert degrees, an expert group's."""
    groups = [tuple(split_names.index(k) for k in base.model.splits)]
    if "etp_size" in split_names:
        groups.append(tuple(split_names.index(k) for k in EXPERT_GROUP))
    return tuple(groups)


def _width(base: Arguments, splits, split_names) -> np.ndarray:
    """The accelerators one data-parallel replica spans, per split (the product of the splitting degrees)."""
    return np.prod(splits[:, [split_names.index(k) for k in base.model.splits]], axis=1)


def _axes(base: Arguments, given, split_names, schedule, extra) -> Tuple[np.ndarray, List[Axis]]:
    """The splits (one row of degrees per split that divides the fleet) and the grid's axes: the split, the
    schedule, then each other argument given as a list."""
    sizes = _fleet_sizes(base, extra)
    divs = tuple(sorted({d for m in sizes for d in _divisors(m)}))
    defaults = {"tp_size": divs, "pp_size": divs, "cp_size": (1,), "etp_size": (1,),
                "ep_size": divs if base.workload.kind == "sparse_transformer" else (1,)}
    groups = _groups(base, split_names)
    choices = tuple(tuple(_degrees(k, _choices(given[k], defaults[k]))) for k in split_names)
    experts = base.workload.experts
    if (not experts and getattr(base.workload, "output_flops", 0) and "ep_size" in split_names
            and base.model.on("moe_layout") and given["ep_size"] is not None):
        # a dense architecture card: a listed EP degree above 1 is refused, as solve() refuses it (checks.py)
        broken = [e for e in choices[split_names.index("ep_size")] if e > 1]
        if broken:
            raise ValueError(f"ep_size ({', '.join(map(str, broken))}) > 1 needs a mixture of experts: the "
                             "architecture card has no routed experts")
    if experts and "ep_size" in split_names and base.model.on("moe_layout"):
        # each rank holds whole experts: an EP degree that does not divide the card's experts is no layout
        i = split_names.index("ep_size")
        whole = tuple(e for e in choices[i] if experts % e == 0)
        # a listed degree no layout takes is an error, as any other; of the default divisors, the others are left
        broken = [e for e in choices[i] if e not in whole] if given["ep_size"] is not None else []
        if not whole or broken:
            raise ValueError(f"ep_size ({', '.join(map(str, broken or choices[i]))}) must divide the routed experts "
                             f"of each MoE layer ({experts}): each rank holds whole experts")
        choices = tuple(c if j != i else whole for j, c in enumerate(choices))
    # where the fleet's size varies, a split of any of its sizes (the sweep leaves it out of the others)
    splits = _splits(sizes[0], choices, groups) if len(sizes) == 1 else \
        np.unique(np.concatenate([_splits(m, choices, groups) for m in sizes]), axis=0)
    if not len(splits):
        say = " and ".join(" x ".join(split_names[i].split("_")[0] for i in g) for g in groups)
        of = f"{sizes[0]:,}" if len(sizes) == 1 else f"{', '.join(f'{m:,}' for m in sizes[:-1])} or {sizes[-1]:,}"
        raise ValueError(f"no {say} among the choices divides the fleet's {of} accelerators")
    axes = [Axis("split", np.arange(len(splits)))]
    # ZeRO stages ascending, so that the first of a tie is the smallest stage
    schedule = dict(schedule, zero_stage=sorted(set(_choices(schedule["zero_stage"], ()))))
    for k, v in schedule.items():       # a switch given as text reads as true ("no" is): refused, as solve() does
        text = next((x for x in _choices(v, ()) if isinstance(x, (str, bytes))), None)
        if text is not None and k in FLAG_KEYWORDS:
            raise switch_type_error(k, text)
    axes += [Axis(k, np.asarray(_choices(v, ()), float)) for k, v in schedule.items()]
    axes += [Axis(k, np.asarray(list(v), dtype=object if k == "precision" or by_argument()[k].kind is Kind.FLAG
                                else float)) for k, v in extra.items()]
    return splits, axes


#: The fields that set the fleet's size (its accelerators: nodes times accelerators per node).
FLEET_SIZE = ("count", "accelerators_per_node")


def _fleet_sizes(base: Arguments, extra) -> Tuple[int, ...]:
    """The fleet's accelerator counts, ascending: one, or where the search varies ``count`` or
    ``accelerators_per_node``, each combination's (a value that is not a whole number >= 1 is left to the sweep's
    check, which names it)."""
    def whole(k):
        values = [v for v in _choices(extra.get(k), ()) if _is_real(v) and v >= 1 and v == int(v)]
        return values or [_fleet_field(base, k)]
    counts, per = (whole(k) for k in FLEET_SIZE)
    return tuple(sorted({int(c) * int(a) for c in counts for a in per}))


def _fleet_field(base: Arguments, k: str) -> int:
    """The fleet's ``count`` or ``accelerators_per_node``, as the call sets it or the record has it."""
    record = base.fleet.count if k == "count" else base.fleet.node.accelerators_per_node
    return int(base.get(k, record))


def _precisions(v) -> int:
    """How many distinct precisions a search's ``precision`` choice names (1 for one or none)."""
    if v is None or isinstance(v, str) or np.ndim(v) == 0:
        return 1
    return len({str(x).lower() for x in v})


def _degrees(name: str, values) -> List[int]:
    """A split degree's choices as whole numbers, each in the parameter table's range (``etp_size must be >= 1,
    got 0``, as ``solve()`` says it)."""
    out = []
    for x in values:
        try:
            whole = int(x) == x
        except (TypeError, ValueError, OverflowError):
            whole = False
        if not whole:
            raise ValueError(f"{name} must be a whole number, got {x!r}")
        if int(x) < 1:
            raise ValueError(f"{name} must be {by_argument()[name].range.text}, got {int(x)}")
        out.append(int(x))
    return out


@lru_cache(maxsize=256)
def _splits(n: int, choices: Tuple[Tuple[int, ...], ...], groups: Optional[Tuple[Tuple[int, ...], ...]] = None
            ) -> np.ndarray:
    """Every combination of the choices where the product of each group of columns (``groups``: indices; default
    all the columns) divides ``n``, one row each (read-only: it is shared)."""
    groups = groups or (tuple(range(len(choices))),)
    # a factor of a product that divides n divides n: the other values of a grouped column are left out before
    # the product is formed (a range of 1 to 100,000 for two degrees is a few divisors each, not 10^10 rows)
    grouped = {i for g in groups for i in g}
    choices = tuple(tuple(x for x in c if i not in grouped or (int(x) >= 1 and n % int(x) == 0))
                    for i, c in enumerate(choices))
    rows = [tuple(int(x) for x in s) for s in itertools.product(*choices)
            if all(n % math.prod(s[i] for i in g) == 0 for g in groups)]
    out = np.array(rows, dtype=np.int64).reshape(len(rows), len(choices))
    out.flags.writeable = False
    return out


@dataclass
class _Plan:
    """A search ready to run (kept per distinct search, :func:`_planned`): its grid, the prepared sweep over it
    (:class:`~mlsysim_sym.sweeps.Prepared`: the arguments' arrays, the masks of the checks), the configurations
    the model tells apart by structure and those a framework runs, and the configuration line."""

    shape: Tuple[int, ...]
    at: Dict[str, int]
    prepared: Any
    structural: np.ndarray          # pipelined, or the first m and v; replicated, or the first ZeRO stage and overlap
    first: Dict[str, np.ndarray]
    column: Tuple[int, ...]         # the shape of an array along the split's axis
    can: Optional[np.ndarray]
    line: str
    # the schedule rules (can_run) at given replicas, where the fleet varies (its replicas come from the sweep)
    rules: Optional[Callable[[np.ndarray], np.ndarray]] = None
    # where the fleet is fixed and no other argument varies, what a split's replicas decide is fixed too: the
    # configurations the model tells apart, those of them a framework runs with a sample per replica, the counts
    static: Optional[Tuple[np.ndarray, int, int]] = None


_PLANS: Dict[tuple, _Plan] = {}


def _planned(base: Arguments, splits, split_names, axes: List[Axis], objective: str, runnable: bool,
             max_memory=None) -> _Plan:
    """:func:`_plan`, kept for the same search (the same records, arguments, choices and objective: a repeated
    search evaluates the model over the same grid again, without preparing it again)."""
    try:
        key = (id(base.workload), id(base.fleet), base.precision, base.keywords, base.fields, base.model,
               splits.tobytes(), split_names, tuple((ax.name, tuple(ax.values.tolist())) for ax in axes[1:]),
               objective, runnable, max_memory)
        hash(key)
    except TypeError:                                   # an argument that does not hash: prepared afresh
        return _plan(base, splits, split_names, axes, objective, runnable, max_memory)
    entry = _PLANS.get(key)
    if entry is None or entry[0] is not base.workload or entry[1] is not base.fleet:
        if len(_PLANS) > 64:
            _PLANS.clear()
        entry = _PLANS[key] = (base.workload, base.fleet, _plan(base, splits, split_names, axes, objective, runnable,
                                                                max_memory))
    return entry[2]


#: Bytes per configuration a search allocates besides the sweep's outputs while it ranks (the scores, the kept
#: flags, the negated objective, the scores of the kept configurations).
RANK_BYTES = 8 + 1 + 8 + 8


def _plan(base: Arguments, splits, split_names, axes: List[Axis], objective: str, runnable: bool,
          max_memory=None) -> _Plan:
    # the grid in memory: the axes reversed, so that the longest (the splits) is innermost: numpy's broadcasting
    # then runs long inner loops (an order of magnitude faster than the split outermost)
    shape = tuple(len(ax) for ax in reversed(axes))
    at = {ax.name: len(axes) - 1 - i for i, ax in enumerate(axes)}
    by_name = {ax.name: ax for ax in axes}

    def on(name, x):
        return np.asarray(x).reshape([-1 if i == at[name] else 1 for i in range(len(shape))])

    grid = {k: on("split", splits[:, j].astype(float)) for j, k in enumerate(split_names)}
    grid.update({ax.name: on(ax.name, ax.values) for ax in axes[1:]})
    o = OBJECTIVES[objective]
    every = base.replace(**grid)
    refuse_extended(every)                   # the mlsysim model takes no list of the extended model's keywords
    prepared = prepare(every, grid=False,
                       outputs=(o.field, "dp", "node_profile.feasible", "node_profile.memory_footprint"),
                       max_memory=max_memory, working=RANK_BYTES)
    # keep one of each set of configurations the model cannot tell apart
    # (without a pipeline, v changes nothing, nor m where the model reads it only in a pipeline; with one replica,
    # ZeRO and the DP overlap change nothing)
    first = {ax.name: on(ax.name, np.arange(len(ax))) == 0 for ax in axes[1:]}
    pipelined = on("split", splits[:, 1] > 1)
    unpiped = base.microbatches_unpiped
    structural = (pipelined | (first["v_stages"] & (unpiped | first["microbatch_count"])),
                  first["zero_stage"] & first["overlap_comm"])
    can = rules = None
    if runnable:
        # the schedule rules (can_run), on the split and schedule axes only, then broadcast
        ga, layers = (on(k, by_name[k].values) if k in at else base.get(k, d) for k, d in
                      (("gradient_accumulation_steps", 1), ("layers", base.workload.layers)))

        def rules(dp):
            return can_run(on("split", splits[:, 1]), dp, on("microbatch_count", by_name["microbatch_count"].values),
                           on("v_stages", by_name["v_stages"].values), base["batch_size"],
                           gradient_accumulation_steps=ga, layers=layers or None if np.ndim(layers) == 0 else layers,
                           unpiped_microbatches=unpiped)
        # the base fleet's replicas; where the fleet varies, each configuration's (_rank, from the sweep)
        can = rules(on("split", base.accelerators // _width(base, splits, split_names)))
    column = tuple(-1 if i == at["split"] else 1 for i in range(len(shape)))
    plan = _Plan(shape, at, prepared, structural, first, column, can, _line(base, splits, split_names, axes), rules)
    if not (set(FLEET_SIZE) & set(at)) and len(axes) == 6:
        dp = _replicas(base, splits, split_names, plan)
        distinct = _distinct(base, plan, dp, splits, split_names)
        runs = distinct if can is None else distinct & can
        plan.static = (runs & _enough(base, dp), _count(distinct, shape),
                       0 if can is None else _count(distinct & ~can, shape))
    return plan


def _replicas(base: Arguments, splits, split_names, plan: _Plan, r=None) -> np.ndarray:
    """The replicas of each split (along the split's axis); from the sweep's ``r`` where the fleet varies too."""
    if r is not None:
        return np.where(np.isnan(r["dp"]), 0.0, r["dp"])
    return (base.accelerators // _width(base, splits, split_names)).reshape(plan.column)


def _distinct(base: Arguments, plan: _Plan, dp, splits, split_names) -> np.ndarray:
    """The configurations the model tells apart by structure: without a pipeline v changes nothing (nor m, unless
    the model reads it unpiped: :attr:`~mlsysim_sym.arguments.Arguments.microbatches_unpiped`), without
    ranks that share a gradient (data or context parallel, or, in the MoE layout, expert data parallel) ZeRO and
    the DP overlap change nothing."""
    def column(k):
        return splits[:, split_names.index(k)].reshape(plan.column)

    cp = column("cp_size") if "cp_size" in split_names else 1
    shared = dp * cp > 1
    if "etp_size" in split_names and base.workload.kind == "sparse_transformer":
        # the experts' gradients, reduced over N / (ep etp pp) ranks
        n = dp * _width(base, splits, split_names).reshape(plan.column)      # N, where the fleet varies too
        shared = shared | (n // (column("ep_size") * column("etp_size") * column("pp_size")) > 1)
    return plan.structural[0] & (shared | plan.structural[1])


def _divides(base: Arguments, splits, split_names, plan: _Plan, axes: List[Axis]) -> np.ndarray:
    """Where the search varies the fleet's size: whether each configuration's split divides its own fleet (each
    group of :func:`_groups`)."""
    n = np.ones((1,) * len(plan.shape), dtype=np.int64)
    for k in FLEET_SIZE:
        ax = next((a for a in axes if a.name == k), None)
        shape = [1] * len(plan.shape)
        if ax is not None:
            shape[plan.at[k]] = len(ax.values)
        n = n * (np.asarray(ax.values, dtype=np.int64).reshape(shape) if ax is not None else _fleet_field(base, k))
    ok = np.ones(plan.shape, dtype=bool)
    for g in _groups(base, split_names):
        ok = ok & (n % np.prod(splits[:, list(g)], axis=1).reshape(plan.column) == 0)
    return ok


def _enough(base: Arguments, dp) -> np.ndarray:
    """A split with more replicas than samples trains dp samples, not the batch (mlsysim then warns and gives
    every rank one sample): it is left out rather than ranked on a batch nobody asked for."""
    return (dp <= base["batch_size"]) & (dp > 0)


def _line(base: Arguments, splits, split_names, axes: List[Axis]) -> str:
    """The configuration line: what the search chose among several choices, and what it was given one of."""
    one, several = {}, []
    choices = {k: sorted(set(splits[:, j].tolist())) for j, k in enumerate(split_names)}
    choices.update({ax.name: [chosen_value(ax.name, x) for x in ax.values] for ax in axes[1:]})
    for k, values in choices.items():
        if len(values) == 1:
            one[k] = values[0]
        else:
            several.append(k)
    return describe(dataclasses.replace(base.replace(**one), searched=tuple(several),
                                        tried=tuple((k, tuple(choices[k])) for k in several)))


def _rank(base: Arguments, splits, split_names, axes: List[Axis], objective: str, top_k: int,
          runnable: bool, max_memory=None) -> SearchResult:
    """Sweep the grid of ``axes``, mask what cannot run or fit, keep what the model tells apart, rank."""
    plan = _planned(base, splits, split_names, axes, objective, runnable, max_memory)
    shape, at, first = plan.shape, plan.at, plan.first
    o = OBJECTIVES[objective]
    r, code = plan.prepared.outputs()           # each output in its own shape (broadcasting below)
    fits = r["node_profile.feasible"] if code is None else r["node_profile.feasible"] & (code == 0)
    objective_values = r[o.field] if o.better > 0 else -r[o.field]
    memory = r["node_profile.memory_footprint"]
    if plan.static is not None:
        runs, searched, unrunnable = plan.static
        keep = np.broadcast_to(runs & fits, shape)
        dp = _replicas(base, splits, split_names, plan)
    else:
        varies = bool(set(FLEET_SIZE) & set(at))
        dp = _replicas(base, splits, split_names, plan, r if varies else None)
        distinct = _distinct(base, plan, dp, splits, split_names)
        if varies:          # a split of one of the fleet's sizes is no configuration of the others: not counted
            distinct = distinct & _divides(base, splits, split_names, plan, axes)
        fits = fits & _enough(base, dp)
        can = plan.can
        if varies and plan.rules is not None:
            # the schedule rules at each fleet's own replicas (a split with none is masked by _enough)
            can = plan.rules(np.maximum(dp, 1).astype(np.int64)) & (dp > 0)
        for ax in axes[1 + 5:]:              # another argument's choices the model cannot tell apart
            if ax.name in FLEET_SIZE:        # (another fleet is another configuration, whatever it prices)
                continue
            i = at[ax.name]
            score = np.where(fits, objective_values, -np.inf)
            head = np.take(score, [0], axis=i), np.take(memory, [0], axis=i)
            same = (score == head[0]) & ((memory == head[1]) | ~fits)
            distinct = distinct & (first[ax.name] | ~same)
        searched = _count(distinct, shape)
        unrunnable = 0 if can is None else _count(distinct & ~can, shape)
        keep = np.broadcast_to(distinct & fits & (True if can is None else can), shape)
    i = at["overlap_comm"]
    if shape[i] > 1:
        # the DP overlap where the step does not read it (ZeRO-3 under the FSDP overlap, or nothing to hide): its
        # choices tie on the objective and memory, and the first stays
        score = np.where(keep, objective_values, -np.inf)
        same = (score == np.take(score, [0], axis=i)) & (memory == np.take(memory, [0], axis=i))
        keep = keep & (first["overlap_comm"] | ~same)
    count = int(np.count_nonzero(keep))
    if count == 0:
        if code is not None and not np.any(code == 0):
            # every configuration breaks one of solve()'s checks: where the fixed arguments break it whatever the
            # split (an efficiency of 1.5), solve()'s own error says which; else say that the checks reject all
            from .checks import check
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                check(base)
                # else the first configuration's, in solve()'s words
                config = dict(zip(split_names, (int(x) for x in splits[0])))
                config.update({ax.name: chosen_value(ax.name, ax.values[0]) for ax in axes[1:]})
                try:
                    check(base.replace(**config))
                    first = "; price one with solve() to see which"
                except (ValueError, TypeError, ArithmeticError) as e:
                    first = f" (the first: {e})"
            raise ValueError(f"every configuration breaks one of solve()'s checks{first}; widen the choices")
        if not np.any(_enough(base, dp)):
            fewest = int(np.min(np.where(dp > 0, dp, np.inf)))
            raise ValueError(f"every split has more data-parallel replicas than batch_size has samples (the fewest: "
                             f"{fewest:,} replicas, batch_size {base['batch_size']:,}): raise batch_size to at least "
                             f"{fewest:,}, or widen tp_size / pp_size so that a replica spans more accelerators")
        ga_axis = next((ax.values for ax in axes if ax.name == "gradient_accumulation_steps"), None)
        ga = int(np.min(ga_axis) if ga_axis is not None else base.get("gradient_accumulation_steps", 1))
        if runnable and ga > 1 and not np.any(_enough(base, dp * ga)):
            fewest = int(np.min(np.where(dp > 0, dp, np.inf)))
            raise ValueError(f"every split has more data-parallel replicas times gradient_accumulation_steps than "
                             f"batch_size has samples (the fewest: {fewest:,} replicas x {ga} steps = "
                             f"{fewest * ga:,}, batch_size {base['batch_size']:,}): raise batch_size to at least "
                             f"{fewest * ga:,}, lower gradient_accumulation_steps, or widen tp_size / pp_size so "
                             "that a replica spans more accelerators")
        if runnable and np.any(fits):
            raise ValueError(f"no runnable configuration fits in accelerator memory: the "
                             f"{int(np.count_nonzero(fits)):,} that fit break the schedule rules of can_run() "
                             "(microbatches that split the batch evenly, layers per stage and virtual stage); "
                             "widen microbatch_count / v_stages, or pass runnable=False to rank them anyway")
        # what the leanest configuration holds against what an accelerator has: how far the choices are from it
        held = np.broadcast_to(memory, shape)[np.broadcast_to(code == 0, shape)] if code is not None else memory
        held = np.asarray(held, dtype=float)
        held = held[np.isfinite(held)]
        cap = base.get("memory_capacity") or base.fleet.node.accelerator.memory_capacity     # a field the call sets
        least = (f" (the leanest holds {quantity(float(held.min()), 'B', 3)} per accelerator, which has "
                 f"{quantity(float(cap), 'B', 3)})") if held.size and cap else ""
        raise ValueError(f"no configuration fits in accelerator memory{least}; widen the choices (recomputation, "
                         "ZeRO, more pipeline stages), lower batch_size / seq_len, or add accelerators")
    score = np.where(keep, objective_values, -np.inf)
    zeros, memory = next(ax for ax in axes if ax.name == "zero_stage").values, np.broadcast_to(memory, shape)
    strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    # the order of the axes as given (the split first) breaks ties between equal scores
    public = [(at[ax.name], math.prod(len(b) for b in axes[i + 1:])) for i, ax in enumerate(axes)]
    candidates, z = [], at["zero_stage"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # the rows' solve(): warnings of batches below dp, as masked
        for index, stages in _best_rows(score, keep, z, min(top_k, count), public):
            where = [(index // s) % n for s, n in zip(strides, shape)]
            config = dict(zip(split_names, (int(x) for x in splits[where[at["split"]]])))
            config.update({ax.name: chosen_value(ax.name, ax.values[where[at[ax.name]]]) for ax in axes[1:]})
            res = price(base.replace(**config))
            memory_by_zero = {int(zeros[stage]): float(memory[tuple(where[:z] + [stage] + where[z + 1:])])
                              for stage in (((int(s) // strides[z]) % len(zeros)) for s in stages)}
            candidates.append(Candidate(config, int(res.parallelism["dp"]), getattr(res, o.field), res,
                                        memory_by_zero))
    line = plan.line
    fleet = base.model.splits
    # the expert degrees after the replicas: ep, and etp where it is not 1
    experts = tuple(k for j, k in enumerate(split_names) if k not in fleet
                    and (k != "etp_size" or set(splits[:, j].tolist()) != {1}))
    return SearchResult(objective, tuple(candidates), searched, count, line, unrunnable, bool(runnable),
                        fleet, tuple(ax.name for ax in axes[1 + 5:]), experts, base.microbatches_unpiped)


def _count(mask, shape) -> int:
    """How many configurations of the grid ``shape`` a mask that broadcasts to it holds (counted on the mask)."""
    mask = np.asarray(mask)
    return int(np.count_nonzero(mask)) * (math.prod(shape) // max(1, mask.size))


def _zero_ties(score, keep, flat_index, axis: int):
    """For the configurations at ``flat_index``, per ZeRO stage (the axis ``axis``): whether it fits and ties with
    them on the objective (within :data:`TIE_RTOL`), and its flat position. ``(ties, positions)``, each of shape
    (stages, configurations)."""
    stride = math.prod(score.shape[axis + 1:])
    stage = (flat_index // stride) % score.shape[axis]
    flat, kept = score.ravel(), keep.ravel()
    mine = flat[flat_index]
    positions = np.array([flat_index + (j - stage) * stride for j in range(score.shape[axis])])
    other = flat[positions]
    ties = (kept[positions] & (np.abs(other - mine) <= TIE_RTOL * np.abs(mine))) | (positions == flat_index)
    return ties, positions


def _best_rows(score, keep, axis: int, k: int, public):
    """The flat positions of the ``k`` best rows, best first, and for each the flat positions of its ZeRO stages.

    By score, then by position in the order of the axes as given (``public``: per given axis, its axis in the grid
    and its stride in the given order), so that ties at the k-th place resolve the same way whatever k is. A ZeRO
    stage that
    ties with a smaller stage of its schedule that fits is no row of its own (it is shown in that stage's row):
    since a row stands for at most one entry per stage, the ``k`` rows lie among the best ``k`` times the stages,
    which are sorted; the others are never looked at."""
    flat = score.ravel()
    kept = np.flatnonzero(keep.ravel())
    values = -flat[kept]
    m = min(k * score.shape[axis], kept.size)
    kth = np.partition(values, m - 1)[m - 1]
    chosen = values <= kth
    best, values = kept[chosen], values[chosen]
    coordinates = np.unravel_index(best, score.shape)
    position = sum(coordinates[i] * stride for i, stride in public)
    best = best[np.lexsort((position, values))]
    ties, positions = _zero_ties(score, keep, best, axis)
    stage = (best // math.prod(score.shape[axis + 1:])) % score.shape[axis]
    below = (ties & (np.arange(score.shape[axis])[:, None] < stage[None, :])).any(axis=0)
    rows = np.flatnonzero(~below)[:k]           # a smaller stage of the same schedule stands for the others
    return [(int(best[r]), positions[ties[:, r], r]) for r in rows]


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
