"""The planning questions of a run, from a configuration: how long and how much (:func:`plan`), and how many
nodes finish a token budget in time (:func:`accelerators_to_finish`). The expressions are
:mod:`mlsysim_sym.run_costs`.

>>> from mlsysim_sym.planning import plan
>>> p = plan("Llama3_70B", "Research_256", tokens=1e12, batch_size=256, tp_size=8, pp_size=4,
...          microbatch_count=8)
>>> p.steps
1907349
"""
from __future__ import annotations

import sympy as sp

from .arguments import arguments
from .mechanisms import ModelChoice
from .requirements import required
from .run_costs import PLAN, TrainingPlan, model_symbols, plan_of, positive, steps_for
from .solver import price
from .symbols import sym

__all__ = ["PLAN", "TrainingPlan", "accelerators_to_finish", "plan", "plan_of"]


def plan(model, fleet, tokens=None, steps=None, price_per_gpu_hour=None, fidelity: str = "mlsysim",
         without=(), **solve_kwargs) -> TrainingPlan:
    """:func:`plan_of` the configuration ``(model, fleet, **solve_kwargs)`` in the chosen model (``solve_kwargs``
    may set record fields too: ``count=128`` nodes)."""
    a = arguments(model, fleet, solve_kwargs, caller="plan", choice=ModelChoice(fidelity, without))
    return plan_of(price(a), tokens, steps, price_per_gpu_hour)


def accelerators_to_finish(tokens, days, model, fleet, **solve_kwargs):
    """How many nodes finish ``tokens`` in ``days``: :func:`mlsysim_sym.required` of ``K T_step / 86400 s <= days``, solved
    for the fleet's node ``count`` at the configuration's batch (runnable layouts only); ``K`` is the run's steps."""
    positive("tokens", tokens)
    positive("days", days)
    batch, seq = int(solve_kwargs.get("batch_size", 1)), int(solve_kwargs.get("seq_len", 2048))
    k = int(steps_for(sp.Integer(int(tokens))).xreplace({sym.B: batch, sym.s: seq}))
    return required(k * model_symbols()["T_step"] / 86400, days, "count", model, fleet, side="at most",
                    label=f"days of the {tokens:.4g}-token run ({k:,} steps)", **solve_kwargs)
