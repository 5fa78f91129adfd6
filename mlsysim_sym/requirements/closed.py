"""The closed-form side of :func:`mlsysim_sym.required`: in each regime the output as an expression in the input,
its roots by formula (:meth:`Solution.roots <mlsysim_sym.requirements.regime.Solution.roots>`), the limit where no
root lies (:func:`limit`), and the walk from regime to regime (:func:`answer`) up to :data:`MAX_REGIMES`. The
symbolic work of a regime is done once and kept (:mod:`mlsysim_sym.requirements.regime`); here it meets the
numbers of one question."""
from __future__ import annotations

import math
from typing import List, Optional, Tuple, Union

import sympy as sp

from ..schedules import RULES
from ..symbols import Kind
from .answer import SHOWN_FORM, Requirement, plain
from .problem import Problem
from .regime import Regime, Solution
from .whole import LAYOUT, _output, at_configuration, best_valid, exhaustive, integer, layout_answer, \
    search_integer, unreachable

#: How many regimes a solution may pass through before the search gives up.
MAX_REGIMES = 6

#: What one regime gives: the answer, the next value of the input to visit, or None (give up).
Step = Union[Requirement, float, None]


def answer(pr: Problem) -> Requirement:
    """The answer to ``pr``: from the configuration's regime, regime by regime toward the root."""
    v, seen, notes = pr.x0, [], []
    regime = pr.regime(v)
    for _ in range(MAX_REGIMES):
        if regime.key in seen:
            break
        seen.append(regime.key)
        step = _in_regime(pr, regime, v, seen, notes)
        if step is None or isinstance(step, Requirement):
            return step if step is not None else _past_regimes(pr, len(seen))
        v, regime = step, pr.regime(step)
    return _past_regimes(pr, len(seen))


def _in_regime(pr: Problem, regime: Regime, v: float, seen: list, notes: List[str]) -> Step:
    """One regime: the output written in the input (the quantities that do not depend on it kept as symbols),
    its root here if one lies here, else where to go next."""
    sol = pr.solution(regime)
    env, exact = pr.env(sol, v)
    flat = sol.flat(exact)
    if flat is None:        # not a ratio of polynomials in the input: sympy reads it with the numbers in
        flat = sol.flat_symbolic(env)
    if flat:
        return _flat(pr, sol, v, seen, notes)
    candidates = [pr.clamp(val) for val in sol.roots(pr.target, exact) if pr.inside(val)]
    # the root of this regime's expression that lies in this regime; else the nearest, whose regime is next
    inside = [val for val in candidates if pr.safe_key(val) == regime.key]
    if inside:
        val = min(inside, key=lambda t: abs(t - v))
        return _root_answer(pr, sol, val, env, exact, len(seen), notes)
    candidates = [val for val in candidates if pr.safe_key(val) is not None]
    if candidates:
        return min(candidates, key=lambda t: abs(t - v))
    return _toward_limit(pr, sol, env, exact, v, seen)


def _root_answer(pr: Problem, sol: Solution, val: float, env, exact, regimes: int,
                 notes: List[str]) -> Requirement:
    """The root ``val`` of the configuration's output in its own regime, with its closed form; for a whole number,
    the valid whole number at the boundary on the side that meets the target (the output's slope there says
    which)."""
    achieved, whole, meet = None, None, 0
    r = sol.closed_form(val, pr.target, exact)
    if r is None:
        notes.append("the root solves a polynomial of degree 3 or more: its value is exact to rounding, "
                     "but no closed form is printed")
    if pr.p.kind is Kind.COUNT:
        meet = 1 if (sol.slope(val, env) > 0) == (pr.direction > 0) else -1
        whole, achieved = integer(pr, val, meet, notes)
        if whole is None:
            # factored where short ((N_PP - 1)(1 - y)/(V y), not its expansion); a long closed form would fill the
            # screen: its length
            form = "" if r is None else plain(sp.factor(r) if sp.count_ops(r) <= 40 else r)
            root = f"{pr.solve_for} = {val:.6g}" + (f", {form} (y = the target)" if len(form) <= SHOWN_FORM else
                                                    f" (a closed form of {len(form):,} characters, not shown)")
            # why no whole number runs: the input cannot make any run, or none runs at the root
            why = tuple(notes) if pr.never_runs else (
                f"the root of this regime is {root}; no schedule a framework runs has a whole number there "
                f"({RULES})",)
            # away from the smooth root a valid whole number may still meet it (the output steps with the layout)
            found = None if pr.never_runs else _through_solve(pr, regimes, tuple(notes) + (
                f"the root of this regime is {root}, where no schedule a framework runs has a whole number; the "
                "whole number was found through solve()",))
            if found is not None:
                return found
            return unreachable(pr, regimes, f"no valid whole number of {pr.solve_for} meets it", why)
    else:
        val, achieved, refusal = _inside_domain(pr, val)
        if achieved is None:            # the root is no configuration solve() prices: no answer, and why
            return unreachable(pr, regimes, f"no valid value of {pr.solve_for} meets it", tuple(notes) + (
                f"the root of this regime is {pr.solve_for} = {pr.shown_input(val)}, where solve() refuses the "
                f"configuration ({refusal})",))
    return pr.answer(regimes, expression=r, value=val, integer=whole, achieved=achieved,
                     conditions=sol.regime.conditions, notes=tuple(notes), meets_toward=meet)


def _flat(pr: Problem, sol: Solution, v: float, seen: list, notes: List[str]) -> Step:
    """A regime where the output does not depend on the input: the answer if it meets the target here (at the
    configuration: its own value), else the next regime that moves it, else no answer."""
    here = pr.value(v)
    if pr.meets(here):
        whole, achieved, meet = None, here, 1 if v > pr.x0 else -1
        if pr.p.kind is Kind.COUNT:
            # from the configuration nothing needs to move: the valid whole number nearest it; from another
            # regime, the boundary on the configuration's side
            whole, achieved = at_configuration(pr, notes) if v == pr.x0 else integer(pr, v, meet, notes)
            if whole is None and v != pr.x0:
                return _no_whole_here(pr, len(seen))
        return pr.answer(len(seen), value=float(whole if whole is not None else v), integer=whole,
                         achieved=achieved, conditions=sol.regime.conditions,
                         notes=(f"{pr.label} does not depend on {pr.solve_for} in this regime and already "
                                "meets the target there",), meets_toward=meet)
    nxt = _next_regime(pr, v, seen, here)
    if nxt is not None:
        return nxt
    # where the walk left the configuration's regime, say where the output levels off (the configuration's own
    # regime moves it: its sensitivity is not 0)
    where = "in this regime" if v == pr.x0 else (
        f"in the regime past the configuration's (at {pr.solve_for} = {pr.shown_input(v)}, in that regime, it is "
        f"{pr.shown(here)})")
    return pr.answer(len(seen), limit=(sol.expr, here),
                     reason=f"{pr.label} does not depend on {pr.solve_for} {where}, and no other value "
                            f"moves it toward {pr.shown(pr.target)}")


def _toward_limit(pr: Problem, sol: Solution, env, exact, v: float, seen: list) -> Step:
    """No root in this regime: where the output goes as the input moves toward the target; past it, another
    regime (the next step) or the limit as the answer."""
    found = limit(pr, sol, env, exact)
    if found is None:
        return None
    lim_expr, lim_val, far, end = found
    if far is not None and pr.safe_key(far) not in (None, sol.regime.key):     # a regime where the model holds
        return far
    if pr.solve_for in LAYOUT:
        return layout_answer(pr, len(seen))
    nxt = _next_regime(pr, v, seen, pr.value(v))
    if nxt is not None:
        return nxt
    words = ({"oo": "goes to infinity", "0": "goes to 0"}[end] if end in ("oo", "0")
             else f"reaches {pr.shown_input(float(end))}, the end of its range")
    if pr.meets(pr.current) and pr.meets(lim_val):
        return _met_throughout(pr, sol, len(seen), end)
    invalid = end not in ("oo", "0") and pr.p.kind is Kind.COUNT and _output(pr, int(round(float(end)))) is None
    if pr.p.kind is Kind.COUNT and (exhaustive(pr) or invalid):
        # a whole number whose runnable values are few, or a limit at a value no configuration runs: the best value
        # its valid range gives, through solve() (the output need not be monotone in it: the extended model's
        # bubble falls and its pass overhead grows with m)
        best, passed = best_valid(pr)
        if best is not None and not (end not in ("oo", "0") and best[0] == round(float(end))):   # else the limit
            v, o = best
            return pr.answer(len(seen), limit=(sp.Float(o), o), at=v, notes=passed,
                             reason=f"the best valid {pr.solve_for}, {v}, gives {pr.shown(o)}, short of "
                                    f"{pr.shown(pr.target)} ({pr.label} tends to {pr.shown(lim_val)} as "
                                    f"{pr.solve_for} {words} in this regime"
                                    + (", where the configuration is not valid)" if invalid else ")"))
    return pr.answer(len(seen), limit=(sol.short(lim_expr), lim_val), toward=end,
                     reason=f"{pr.label} tends to {pr.shown(lim_val)} as {pr.solve_for} {words} in this regime, "
                            f"short of {pr.shown(pr.target)}")


def _met_throughout(pr: Problem, sol: Solution, regimes: int, end: str) -> Requirement:
    """The configuration meets the target (a side the user chose) and no value in its regime brings the output to
    it: the configuration is the answer (for a whole number, the valid one nearest it), and the note says so, with
    the output at the end of the input's range toward the target (``end`` is the other end, :func:`limit`'s)."""
    toward = pr.lo if end in ("oo", f"{pr.hi:g}") else pr.hi
    there = ""
    if math.isfinite(toward) and toward > 0 and toward != pr.x0:       # (the configuration's own value: no news)
        try:
            there = (f"; at {pr.solve_for} = {pr.shown_input(toward)}, the end of its range, it is "
                     f"{pr.shown(pr.value(toward))}")
        except (ZeroDivisionError, ValueError, TypeError, OverflowError):
            pass
    notes: List[str] = []
    whole, achieved = at_configuration(pr, notes) if pr.p.kind is Kind.COUNT else (None, pr.current)
    if pr.p.kind is Kind.COUNT and whole is None:
        return unreachable(pr, regimes, f"no valid whole number of {pr.solve_for} meets it", tuple(notes))
    return pr.answer(regimes, value=float(whole if whole is not None else pr.x0), integer=whole, achieved=achieved,
                     conditions=sol.regime.conditions, meets_toward=0,
                     notes=(f"the configuration already meets the target, and no {pr.solve_for} in this regime brings "
                            f"{pr.label} to {pr.shown(pr.target)}: every value here meets it{there}",))


def _no_whole_here(pr: Problem, regimes: int) -> Requirement:
    """A regime away from the configuration meets the target but holds no valid whole number (its values run no
    schedule): where the configuration meets the target itself, the valid whole number nearest it that does (its
    own where it runs), else one found through ``solve()`` alone, else none."""
    why = "the regimes beyond the configuration that meet the target hold no valid whole number"
    notes: List[str] = []
    if pr.meets(pr.current):
        whole, achieved = at_configuration(pr, notes)
        if whole is not None:
            here = "the configuration already meets the target" if whole == pr.x0 else (
                f"the configuration meets the target but runs no schedule (see can_run()); {whole} is the valid "
                f"whole number nearest it that meets it")
            return pr.answer(1, value=float(whole), integer=whole, achieved=achieved, meets_toward=0,
                             notes=(f"{here}; {why}",))
    found = _through_solve(pr, regimes, (f"{why}; the whole number was found through solve() (no closed form)",))
    if found is not None:
        return found
    return unreachable(pr, regimes, f"no valid whole number of {pr.solve_for} meets it", tuple(notes) + (why,))


def _through_solve(pr: Problem, regimes: int, notes: Tuple[str, ...]) -> Optional[Requirement]:
    """The whole-number boundary through ``solve()`` alone (:func:`search_integer`) as the answer, with ``notes``;
    None where the search finds none."""
    found = search_integer(pr)
    if found is None:
        return None
    v, o, meet = found
    return pr.answer(regimes, value=float(v), integer=v, achieved=o, meets_toward=meet, notes=notes)


def _past_regimes(pr: Problem, regimes: int) -> Requirement:
    """More regimes on the way than :data:`MAX_REGIMES`: a whole number through ``solve()`` alone, else none."""
    if pr.p.kind is Kind.COUNT:
        found = _through_solve(pr, regimes, (f"the output changes regime more than {MAX_REGIMES} times on the way; "
                                             "the whole number was found through solve() (no closed form)",))
        if found is not None:
            return found
    return unreachable(pr, regimes, f"no value of {pr.solve_for} brings {pr.label} to {pr.shown(pr.target)} "
                                    f"within {MAX_REGIMES} regimes")


def _next_regime(pr: Problem, v: float, seen, here: float) -> Optional[float]:
    """The nearest value of the input, doubling or halving from ``v``, that lies in a regime not yet
    visited and moves the output toward the target (an output a regime holds still may move in the
    next: the in-flight divisor of a pipeline, ``max(1, m // p)``, is 1 until ``m`` reaches ``p``)."""
    tried = set()
    for k in range(1, 48):
        for sign in (1, -1):
            xv = v * 2.0 ** (sign * k)
            if pr.p.kind is Kind.COUNT:
                xv = max(1, int(round(xv)))
            if xv in tried or xv <= 0 or not pr.inside(xv):
                continue
            tried.add(xv)
            key = pr.safe_key(xv)
            if key is None or key in seen:
                continue
            try:
                moved = pr.value(xv)
            except (ZeroDivisionError, ValueError, TypeError, OverflowError):
                continue
            if (moved - here) * pr.direction > 0:
                return xv
    return None


def limit(pr: Problem, sol: Solution, env, exact):
    """The output at the end of the input's range toward which it moves toward the target (a limit when
    that end is 0 or infinity), as ``(closed form, value, a far point in that direction or None, end)``
    with ``end`` ``"oo"``, ``"0"`` or the end's value."""
    direction, y = pr.direction, pr.target

    def num(t):
        return sol.value(t, env)
    x0 = pr.x0 if pr.x0 else 1.0
    try:
        step = x0 * 1e-3
        up = num(min(x0 + step, pr.hi)) - num(max(x0 - step, pr.lo if pr.lo > 0 else x0 / 2))
    except (ZeroDivisionError, ValueError, OverflowError):
        return None
    grows_with_x = (up > 0) == (direction > 0)
    bound = pr.hi if grows_with_x else pr.lo
    if math.isfinite(bound) and bound > 0:
        lim, end = sol.at_end(bound), f"{bound:g}"
        try:
            lim_val = num(bound)
        except (ZeroDivisionError, ValueError, OverflowError):
            return None
    else:
        point = sp.oo if grows_with_x else 0
        side_ = "+" if point == 0 else "-"
        end = "oo" if grows_with_x else "0"
        # the limit at the configuration's numbers first (the symbols may hide a 0 coefficient: oo * sign(N_PP
        # - 1) at N_PP = 1); the closed form only when that limit is finite
        lim_val = sol.limit_value(end, exact)
        if lim_val is None:         # not a ratio of polynomials in the input: sympy, with the numbers in
            lim_val = sol.limit_symbolic(env, point, side_)
        if not math.isfinite(lim_val):
            return None
        lim = sol.limit_form(point, side_, lim_val)
    if not math.isfinite(lim_val):
        return None
    far = min(x0 * 1e6, pr.hi) if grows_with_x else max(x0 * 1e-6, pr.lo)
    if pr.p.kind is Kind.COUNT:
        far = max(1, int(far))
    try:
        far_val = num(far)
    except (ZeroDivisionError, ValueError, OverflowError):
        return lim, lim_val, None, end
    if far != pr.x0 and (far_val - y) * direction >= 0:      # met somewhere out there: another regime
        return lim, lim_val, far, end
    return lim, lim_val, None, end


def _inside_domain(pr: Problem, root: float) -> Tuple[float, Optional[float], Optional[Exception]]:
    """The root, the output there through ``solve()`` and, where ``solve()`` refuses it, the refusal; a root a
    rounding error outside the input's range (an efficiency of 1 + 2e-16) is moved to the nearest float
    ``solve()`` accepts."""
    val = root
    for _ in range(8):
        try:
            return val, pr.exact(val), None
        except (ValueError, TypeError) as exc:
            error = exc
            val = math.nextafter(val, pr.x0)
    return root, None, error
