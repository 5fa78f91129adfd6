r"""The inverse question: what value of one input makes an output reach a target.

:func:`required` answers "how many microbatches keep the bubble under 5 %?", "what fabric bandwidth
gives 90 % scaling efficiency?", "how many parameters fit per accelerator at ZeRO-3?" with a closed
form, not a search. At the configuration, the model is resolved into its regime
(:func:`mlsysim_sym.operating_point.operating_point`: every maximum, case and indicator at its active
side), the output is written in the input ``x`` and in the quantities that do not depend on it, and
sympy solves ``output(x) = target`` for ``x``.

* The answer holds while the regime holds; its conditions are returned with it. When the root lies in
  another regime (the all-reduce changes tier, the state stops fitting in memory), the solution moves
  into that regime's expression and solves again, up to :data:`MAX_REGIMES` regimes.
* When no value reaches the target (a scaling efficiency above what infinite bandwidth gives), the
  answer says so and gives the limit of the output, as a closed form, on the side the target lies.
* For a whole-number input (microbatches, batch size, nodes), the answer also gives the valid integer
  nearest the root on the side that meets the target, checked through ``solve()``'s own checks; valid also
  means a schedule a training framework runs, as :func:`mlsysim_sym.search` keeps
  (:func:`mlsysim_sym.schedules.can_run`: the batch splits evenly over the replicas and a replica's samples
  over the microbatches). When none meets the target, the answer is the best valid value.

The symbolic work of a regime (the resolved output in the input, its numerator as a polynomial, the closed
forms) depends on the model variant, the regime, the output and the input, never on the configuration's
numbers: it is done once and kept in this process (:mod:`mlsysim_sym.requirements.regime`), and a question
asked again, or one with other numbers in a regime already solved, costs only its numbers (compiled code,
exact fractions for the polynomial's coefficients, ``solve()`` for the whole numbers).

The target is "met" on the far side of the root from the configuration: an output below the target
must rise to at least the target, one above it must fall to at most the target.

Examples
--------
>>> from mlsysim_sym import required
>>> r = required("bubble_fraction", 0.05, "microbatch_count", "Llama3_70B", "Research_256",
...              batch_size=512, tp_size=8, pp_size=4, microbatch_count=8)
>>> r.value, r.integer, r.expression          # 57 by the formula; 64 split a replica's 64 samples evenly
(57.0, 64, -(pp*y - pp - y + 1)/(v*y))
>>> print(r.latex())
m = - \frac{N_{\text{PP}} y - N_{\text{PP}} - y + 1}{V y}
"""
from __future__ import annotations

from .answer import TARGET, Requirement, plain
from .closed import MAX_REGIMES, answer
from .problem import Problem
from .whole import MAX_WALK

__all__ = ["required", "Requirement", "TARGET", "MAX_REGIMES", "MAX_WALK", "plain"]


def required(output, target: float, solve_for: str, model, fleet, *, side: str = "auto",
             **solve_kwargs) -> Requirement:
    """The value of one input (``solve_for``: a ``solve()`` argument or record field, e.g.
    ``"fabric_bandwidth"``, ``"microbatch_count"``, ``"efficiency"``, ``"parameters"``) at which ``output``
    reaches ``target``, every other input held at the configuration ``(model, fleet, **solve_kwargs)``.

    ``output``: a result field of ``solve()`` (``"step_latency_total"``), a model quantity
    (``"bubble_fraction"``), an alias (``"memory"``, ``"step_time"``, ``"mfu"``), or a sympy expression in
    model quantities and parameters (``T_dp / T_compute``). ``side``: ``"at least"`` or ``"at most"`` the
    target; ``"auto"`` (default) reads it from the configuration (an output below the target must rise to
    it). See the module docstring; the nodes that finish a token budget in time are
    :func:`mlsysim_sym.planning.accelerators_to_finish`.
    """
    return answer(Problem(output, target, solve_for, model, fleet, solve_kwargs, side))
