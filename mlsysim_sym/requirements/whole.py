"""Whole-number answers and best-found answers of :func:`mlsysim_sym.required`, through ``solve()`` itself.

The exact output of a whole-number input (floors and all) is a step function, and only the values at which a
schedule runs count (:attr:`~mlsysim_sym.arguments.Arguments.runnable`, as :func:`mlsysim_sym.search` keeps):
:func:`integer` walks from the smooth root to the boundary; :func:`search_integer` finds the boundary with no
root (too many regimes on the way); :func:`layout_answer` tries the parallel degrees that divide the fleet;
:func:`unreachable` gives the best value the input's valid range reaches when none meets the target."""
from __future__ import annotations

import math
from typing import List, Optional, Tuple

import sympy as sp

from ..schedules import RULES
from ..symbols import Kind
from .answer import Requirement
from .problem import Problem

#: How many whole numbers the integer answer may walk from the smooth root.
MAX_WALK = 100_000

#: How many valid whole numbers the walk from the root takes one by one before it looks at the far end of its
#: reach: when the output misses the target there too, no value in between meets it (in one regime the output
#: is monotone) and the walk stops.
LINEAR = 64

#: Whole numbers whose runnable values end below this are listed and walked one by one.
LISTED = 100_000

#: A whole number whose runnable values end below this is scanned whole for the best one.
SCAN = 4096

#: The parallel degrees: their valid values divide the fleet, and the output changes regime between them
#: (an all-reduce leaves NVLink), so beyond the configuration's regime they are searched, not solved.
LAYOUT = ("tp_size", "pp_size", "ep_size")


def _output(pr: Problem, v) -> Optional[float]:
    """The output at ``v`` through ``solve()``'s checks; None where ``v`` is not valid."""
    try:
        return pr.exact(v)
    except (ValueError, TypeError, ZeroDivisionError):
        return None


def first_valid(pr: Problem, v: int, step: int) -> Tuple[Optional[int], Optional[float]]:
    """The first valid whole number from ``v`` on, in steps of ``step``, with its exact output (``solve()``'s
    checks); ``(None, None)`` past 1 or the top, or beyond :data:`MAX_WALK` steps."""
    for _ in range(MAX_WALK):
        if v < 1 or v > pr.top:              # beyond the top no schedule runs
            return None, None
        o = _output(pr, v)
        if o is not None:
            return v, o
        v += step
    return None, None


def integer(pr: Problem, root: float, meet: int, notes: List[str]) -> Tuple[Optional[int], Optional[float]]:
    """The valid whole number that meets the target next to the boundary: every valid value beyond it,
    toward the root, misses. The exact output of a whole number (floors and all, through ``solve()``'s
    checks) is a step function whose boundary may sit a plateau away from the smooth root, so the search
    starts at the root and walks: toward the side that meets the target (``meet``: +1 when larger values
    meet it) until it meets, then back while the next valid value still meets."""
    if pr.never_runs:
        notes.append(_NEVER.format(pr.solve_for))
        return None, None
    v, o = first_valid(pr, max(1, round(root)), meet)
    walked = 0
    while v is not None and not pr.meets(o) and walked < MAX_WALK:
        if walked == LINEAR:
            far, _ = first_valid(pr, min(max(1, v + meet * (MAX_WALK - walked)), pr.top), -meet)
            if far is None or (far - v) * meet <= 0 or not pr.meets(_output(pr, far)):
                walked = MAX_WALK
                break
        v, o = first_valid(pr, v + meet, meet)
        walked += 1
    if v is None or walked >= MAX_WALK:
        notes.append(f"no valid whole number within {MAX_WALK} of the root meets the target")
        return None, None
    while walked < MAX_WALK:
        w, p = first_valid(pr, v - meet, -meet)
        if w is None or not pr.meets(p):
            return v, o
        v, o = w, p
        walked += 1
    return v, o


_NEVER = f"the configuration runs no schedule a framework runs ({RULES}), and no value of {{}} changes that"


def at_configuration(pr: Problem, notes: List[str]) -> Tuple[Optional[int], Optional[float]]:
    """The configuration's own whole number when it meets the target (nothing needs to move), else the valid
    whole number nearest it that does, either side, within :data:`MAX_WALK` (through ``solve()``'s checks)."""
    if pr.never_runs:
        notes.append(_NEVER.format(pr.solve_for))
        return None, None
    base = int(pr.x0)
    for d in range(MAX_WALK):
        if base - d < 1 and base + d > pr.top:
            break
        for v in ((base,) if d == 0 else (base - d, base + d)):
            if 1 <= v <= pr.top and (o := _output(pr, v)) is not None and pr.meets(o):
                return v, o
    notes.append(f"no valid whole number within {MAX_WALK} of the configuration meets the target")
    return None, None


def search_integer(pr: Problem):
    """The whole-number boundary through ``solve()`` alone: double away from the configuration until the
    target is met, then bisect (invalid values are stepped over); where the runnable values are few (they end at
    :attr:`Problem.top`), walk them in order from the configuration instead. ``(value, output, meets_toward)``."""
    if pr.top <= LISTED or pr.never_runs:
        return _walk_runnable(pr)

    def out(v):
        for d in range(64):
            for w in (v + d, v - d):
                if w >= 1 and (o := _output(pr, w)) is not None:
                    return w, o
        return None
    base = int(pr.x0)
    for meet in (1, -1):
        lo, v = base, base
        for _ in range(40):
            v = v * 2 if meet > 0 else v // 2
            if v < 1:
                break
            got = out(v)
            if got is None:
                continue
            if pr.meets(got[1]):
                a, b = (lo, got[0]) if meet > 0 else (got[0], lo)
                while b - a > 1:
                    mid = out((a + b) // 2)
                    if mid is None or not (a < mid[0] < b):
                        break
                    if pr.meets(mid[1]) == (meet > 0):
                        b = mid[0]
                    else:
                        a = mid[0]
                got = out(b if meet > 0 else a)
                return got[0], got[1], meet
            lo = got[0]
    return None


def _walk_runnable(pr: Problem):
    """The first runnable value, walking away from the configuration, that meets the target: the boundary on that
    side (the value before it misses). ``(value, output, meets_toward)`` or None."""
    base, lo, top = int(pr.x0), max(1, int(pr.lo)), int(pr.top)
    if pr.never_runs:
        return None
    for meet in (1, -1):
        for v in (range(base + 1, top + 1) if meet > 0 else range(min(base - 1, top), lo - 1, -1)):
            o = _output(pr, v)          # None where no schedule runs or solve() refuses
            if o is not None and pr.meets(o):
                return v, o, meet
    return None


def layout_answer(pr: Problem, regimes: int) -> Requirement:
    """The valid parallel degree nearest the configuration's that meets the target, through ``solve()``;
    else the best the valid degrees reach."""
    n = pr.a.accelerators
    tried = []
    for d in sorted((d for d in range(1, n + 1) if n % d == 0), key=lambda d: (abs(d - pr.x0), d)):
        o = _output(pr, d)
        if o is None:
            continue
        tried.append((d, o))
        if pr.meets(o):
            return pr.answer(regimes, value=float(d), integer=d, achieved=o,
                             notes=(f"no root in the configuration's regime: {pr.solve_for} = {d} is the valid "
                                    "value nearest the configuration's that meets the target (searched through "
                                    "solve(); the output changes regime between the degrees, so there is no one "
                                    "closed form)",))
    best = _best_that_fits(pr, tried)
    passed = _passed_over(pr, tried, best)
    reason = (f"no valid {pr.solve_for} meets it; the best, {pr.shown(best[1])}, is at {pr.solve_for} = {best[0]}"
              if best else f"no valid {pr.solve_for} for this fleet")
    return pr.answer(regimes, limit=(sp.Float(best[1]) if best else sp.nan, best[1] if best else float("nan")),
                     reason=reason, at=best[0] if best else None, notes=passed)


def _candidates(pr: Problem):
    """The values tried for the best one when nothing reaches the target: every whole number a schedule runs at
    (up to :data:`SCAN`, when the input's runnable values end there); else the configuration's, its halvings and
    doublings, and the first runnable values from each end of the range (the output of one regime is monotone in
    the input: its best lies at an end, where a schedule still runs); a real number, a few around the
    configuration."""
    if pr.p.kind is not Kind.COUNT:
        return (pr.x0, pr.lo, pr.hi, pr.lo + 1, 2 * pr.x0, pr.x0 / 2)
    if pr.never_runs:
        return ()
    lo, top = max(1, int(pr.lo)), min(pr.top, pr.hi)
    if exhaustive(pr):
        return [v for v in range(lo, int(top) + 1) if pr.at(v).runnable]
    base = int(pr.x0)
    out = {base} | {base >> k for k in range(1, base.bit_length())} | {base << k for k in range(1, 41)}
    out |= {next((v for v in range(lo, lo + SCAN) if pr.at(v).runnable), lo)}
    if math.isfinite(top):
        out |= {next((v for v in range(int(top), max(lo, int(top) - SCAN), -1) if pr.at(v).runnable), int(top))}
    return sorted(v for v in out if lo <= v <= top)


def best_valid(pr: Problem) -> Tuple[Optional[Tuple[float, float]], Tuple[str, ...]]:
    """The best output the input's valid range gives among :func:`_candidates` (through ``solve()``) where the
    configuration fits in memory (:func:`_best_that_fits`), with the value that gives it (None when no candidate
    is valid), and the note of :func:`_passed_over`."""
    tried = []
    for v in _candidates(pr):
        if not (math.isfinite(v) and pr.inside(v)) or (pr.p.kind is Kind.COUNT and v != int(v)) or v <= 0:
            continue
        o = _output(pr, int(v) if pr.p.kind is Kind.COUNT else v)
        if o is not None:
            tried.append((int(v) if pr.p.kind is Kind.COUNT else v, o))
    best = _best_that_fits(pr, tried)
    top = max(tried, key=lambda t: t[1] * pr.direction) if tried else None
    if best is not None and top is not None and (top[1] - best[1]) * pr.direction > 0:
        # the memory binds between the best that fits and a better value that does not: the best that fits lies
        # at the memory's edge, not at a halving or doubling of the configuration's value (seq_len 6702, not 4096)
        edge = _at_memory_edge(pr, best, top)
        if edge is not None and (edge[1] - best[1]) * pr.direction > 0:
            best = edge
    return best, _passed_over(pr, tried, best)


def _at_memory_edge(pr: Problem, fits: Tuple[float, float], over: Tuple[float, float]) -> Optional[Tuple[float, float]]:
    """Between ``fits`` (a value and its output, in memory) and ``over`` (a better one that does not fit), the valid
    value nearest the memory's edge that fits, with its output through ``solve()``: the edge bisected (the memory
    moves one way with one input), then, for a whole number, the first valid value from it back toward ``fits``
    (within :data:`SCAN`); None where none is found."""
    count = pr.p.kind is Kind.COUNT
    a, b = fits[0], over[0]
    for _ in range(64):
        if count and abs(b - a) <= 1:
            break
        m = (a + b) // 2 if count else (a + b) / 2
        if m in (a, b):
            break
        if pr.does_not_fit(m) is None:
            a = m
        else:
            b = m
    step = 1 if fits[0] > a else -1
    for v in ([a + k * step for k in range(SCAN) if (fits[0] - (a + k * step)) * step >= 0] if count else [a]):
        o = _output(pr, int(v) if count else v)
        if o is not None and pr.does_not_fit(v) is None:
            return (int(v) if count else v), o
    return None


def _best_that_fits(pr: Problem, tried) -> Optional[Tuple[float, float]]:
    """The best ``(value, output)`` of ``tried`` whose configuration fits in accelerator memory (the first of equal
    outputs); where none fits, the best of all (the answer's note says that it does not fit); None when empty."""
    ranked = sorted(tried, key=lambda t: -t[1] * pr.direction)      # stable: ties keep the order tried
    return next((t for t in ranked if pr.does_not_fit(t[0]) is None), ranked[0] if ranked else None)


def _passed_over(pr: Problem, tried, best) -> Tuple[str, ...]:
    """A note naming the better value :func:`_best_that_fits` passed over because it does not fit in memory."""
    top = max(tried, key=lambda t: t[1] * pr.direction) if tried else None
    if best is None or top is None or top[1] == best[1]:
        return ()
    return (f"{pr.solve_for} = {pr.shown_input(top[0])} gives more, {pr.shown(top[1])}, but does not fit in "
            "accelerator memory; the answer is the best value found that fits",)


def exhaustive(pr: Problem) -> bool:
    """Whether :func:`_candidates` tries every whole number a schedule runs at (their range ends by :data:`SCAN`),
    so that :func:`best_valid` is the best of the range, not of a sample of it."""
    return pr.p.kind is Kind.COUNT and not pr.never_runs and min(pr.top, pr.hi) <= SCAN


def unreachable(pr: Problem, regimes: int, why: str, notes: Tuple[str, ...] = ()) -> Requirement:
    """No value reaches the target: the best value the input's valid range gives (through ``solve()``)."""
    best, passed = best_valid(pr)
    lim = (sp.Float(best[1]), best[1]) if best else (sp.nan, float("nan"))
    reason = why + (f"; the best found is {pr.shown(best[1])}, at {pr.solve_for} = {pr.shown_input(best[0])}"
                    if best else "")
    return pr.answer(regimes, limit=lim, reason=reason, notes=tuple(notes) + passed,
                     at=best[0] if best else None)
