"""The planning questions of a run, from a configuration: how long and how much (:func:`plan`), and how many
nodes finish a token budget in time (:func:`accelerators_to_finish`, an exact walk over the runnable node
counts). The expressions are :mod:`mlsysim_sym.run_costs`.

>>> from mlsysim_sym.planning import plan
>>> p = plan("Llama3_70B", "Research_256", tokens=1e12, batch_size=256, tp_size=8, pp_size=4,
...          microbatch_count=8)
>>> p.steps
1907349
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

from .arguments import arguments, describe, node_word
from .display import html_text, wrap
from .mechanisms import ModelChoice
from .run_costs import PLAN, TrainingPlan, _days, plan_of, positive
from .solver import price

__all__ = ["PLAN", "Finish", "TrainingPlan", "accelerators_to_finish", "plan", "plan_of"]


def plan(model, fleet, tokens=None, steps=None, price_per_gpu_hour=None, fidelity: str = "mlsysim",
         without=(), **solve_kwargs) -> TrainingPlan:
    """:func:`plan_of` the configuration ``(model, fleet, **solve_kwargs)`` in the chosen model (``solve_kwargs``
    may set record fields too: ``count=128`` nodes)."""
    a = arguments(model, fleet, solve_kwargs, caller="plan", choice=ModelChoice(fidelity, without))
    return plan_of(price(a), tokens, steps, price_per_gpu_hour)


@dataclass(frozen=True)
class Finish:
    """The fewest nodes that finish a token budget in time: ``nodes`` (None when no runnable count does),
    the ``plan`` there, the deadline, and the configuration's own count and days (``now``)."""

    tokens: float
    days: float
    nodes: Optional[int]
    plan: Optional[TrainingPlan]
    now_nodes: int
    now_days: Optional[float]
    best: Optional[TrainingPlan]
    searched: int
    reason: str = ""
    unfit: int = 0
    now_fits: Optional[bool] = True         # None where the configuration's own layout does not run
    per_node: int = 1                       # accelerators per node
    node: str = "node"                      # what the fleet calls one: "rack" for a GB200 NVL72
    configuration: str = ""                 # the configuration's line (arguments.describe)

    def to_dict(self) -> Dict[str, object]:
        fastest = None if self.best is None or self.nodes is not None else self.best
        return {"tokens": self.tokens, "days": self.days, "nodes": self.nodes,
                "accelerators": None if self.plan is None else self.plan.accelerators,
                "days_there": None if self.plan is None else self.plan.days, "now_nodes": self.now_nodes,
                "now_days": self.now_days, "now_fits": self.now_fits, "node_counts_searched": self.searched,
                # the fastest count searched, where none finishes in time (else the walk stops at the answer)
                "fastest": None if fastest is None else {"nodes": fastest.accelerators // self.per_node,
                                                         "accelerators": fastest.accelerators, "days": fastest.days},
                "node_counts_not_fitting": self.unfit, "reason": self.reason or None,
                "node": self.node, "configuration_line": self.configuration}

    def text(self, configuration: bool = True) -> str:
        """The answer for a terminal (``configuration``: first the configuration's line, which the command line
        prints itself)."""
        w = self.node
        n_ = lambda n: f"{n:,} {w}" + ("s" if n != 1 else "")     # noqa: E731
        head = f"{w}s to finish {self.tokens:.4g} tokens in {self.days:g} days (runnable layouts that fit in HBM):"
        now = (f"  now: {n_(self.now_nodes)} take {_days(self.now_days)} days"
               + ("" if self.now_fits else " (the state does not fit in HBM)") if self.now_days is not None
               else f"  now: {n_(self.now_nodes)} (not a runnable layout)")
        if self.nodes is None:
            best = (f"; the fastest runnable count is {n_(self.best.accelerators // self.per_node)} "
                    f"({self.best.accelerators:,} GPUs), {_days(self.best.days)} days" if self.best else "")
            none = "fits in HBM" if self.searched and self.unfit == self.searched else "finishes in time"
            answer = f"no runnable {w} count {none}: {self.reason}{best}"
        else:
            answer = (f"answer: {n_(self.nodes)} ({self.plan.accelerators:,} GPUs) take "
                      f"{_days(self.plan.days)} days; {self.searched:,} runnable counts searched"
                      + (f", {self.unfit:,} of them left out: the state does not fit in HBM" if self.unfit else ""))
        first = wrap(f"configuration: {self.configuration}", "") if configuration and self.configuration else []
        return "\n".join([*first, *wrap(head, ""), now, *wrap(answer, "  ")])

    def __str__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        return html_text(self.text())


def accelerators_to_finish(tokens, days, model, fleet, fidelity: str = "mlsysim", without=(),
                           **solve_kwargs) -> Finish:
    """The fewest nodes that finish ``tokens`` in ``days`` at this configuration's batch, split and schedule: every
    node count whose layout a framework runs (:attr:`~mlsysim_sym.arguments.Arguments.runnable`: the batch splits
    over the replicas, the microbatches over a replica's samples) and whose training state fits in HBM, up to one
    sample per replica, priced by ``solve()`` (``unfit`` counts those left out as not fitting); the run's days are
    :data:`~mlsysim_sym.run_costs.PLAN`'s ``T_train``. Exact, where
    :func:`mlsysim_sym.required`'s closed form for the node count spans many regimes."""
    positive("tokens", tokens)
    positive("days", days)
    a = arguments(model, fleet, solve_kwargs, caller="accelerators_to_finish", choice=ModelChoice(fidelity, without))
    apn = int(a.get("accelerators_per_node", a.fleet.node.accelerators_per_node))
    word = node_word(a.fleet)
    now_nodes = int(a.get("count", a.fleet.count))
    replica = a.replica
    most = -(-int(a["batch_size"]) * replica // apn)        # one sample per replica
    now = plan_of(price(a), tokens=tokens) if a.runnable else None
    found, best, searched, unfit, refused = None, None, 0, 0, []
    largest = largest_unfit = 0                 # the largest runnable count, and the largest that does not fit
    for n in range(1, most + 1):
        b = a.replace(count=n)
        if (n * apn) % replica or not b.runnable:
            continue
        searched += 1
        largest = n
        try:
            p = plan_of(price(b), tokens=tokens)
        except ValueError as e:     # a count the checks refuse (memory tiers, ...): not an answer
            refused.append((n, e))
            continue
        if not p.fits:              # a state that spills to host memory: a run no one plans
            unfit += 1
            largest_unfit = n
            continue
        if best is None or p.days < best.days:
            best = p
        if p.days <= days:
            found = (n, p)
            break
    now_days, now_fits = (None, None) if now is None else (now.days, now.fits)
    if found is None:
        # what holds the answer back: the state at the counts that would be faster (memory), else the batch and
        # schedule, which run no more replicas than the largest count searched
        faster_unfit = best is None or largest_unfit * apn > best.accelerators
        capped = best is not None and best.accelerators == largest * apn
        # what lets more replicas run: a larger batch, and fewer of what splits a replica's samples
        fewer = [w for w, on in (("microbatches", int(a["pp_size"]) > 1),
                                 ("accumulation steps", int(a["gradient_accumulation_steps"]) > 1)) if on]
        more = "a larger batch" + "".join(f", or fewer {w}" for w in fewer) + ("," if fewer else "")
        reason = (f"no {word} count gives a runnable layout at this batch and split" if searched == 0 else
                  f"{searched:,} runnable counts up to {largest:,} {word}s searched"
                  + (f" (this batch and schedule run no more replicas: {more} runs more)" if capped else "")
                  + ("" if not unfit else
                     f", {unfit:,} of them left out: the training state does not fit in HBM (give a larger tp or "
                     "pp, a ZeRO stage or recomputation)" if faster_unfit else
                     f", {unfit:,} smaller one{'s' if unfit > 1 else ''} left out: the training state does not fit "
                     f"in HBM")
                  + ("" if not refused else
                     f"; solve() refuses {len(refused):,} of them (at {refused[0][0]:,} {word}"
                     f"{'s' if refused[0][0] > 1 else ''}: {' '.join(str(refused[0][1]).split())})"))
        return Finish(float(tokens), float(days), None, None, now_nodes, now_days, best, searched, reason, unfit,
                      now_fits, apn, word, describe(a))
    return Finish(float(tokens), float(days), found[0], found[1], now_nodes, now_days, best, searched, "", unfit,
                  now_fits, apn, word, describe(a))
