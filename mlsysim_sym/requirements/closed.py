"""The closed-form side of :func:`mlsysim_sym.required`: in each regime the output as an expression in the input,
its roots by formula (:func:`roots`), the limit where no root lies (:func:`limit`), and the walk from regime to
regime (:func:`answer`) up to :data:`MAX_REGIMES`."""
from __future__ import annotations

import math
from typing import Callable, List, Optional, Tuple, Union

import numpy as np
import sympy as sp

from ..operating_point import OperatingPoint
from ..simplify import shorten_deep
from ..symbols import Kind
from .answer import TARGET, Requirement, plain
from .problem import Problem, depends, relaxed
from .whole import LAYOUT, integer, layout_answer, search_integer, unreachable

#: How many regimes a solution may pass through before the search gives up.
MAX_REGIMES = 6

#: What one regime gives: the answer, the next value of the input to visit, or None (give up).
Step = Union[Requirement, float, None]


def answer(pr: Problem) -> Requirement:
    """The answer to ``pr``: from the configuration's regime, regime by regime toward the root."""
    xs = sp.Dummy("x", positive=True)
    v, point, seen, notes = pr.x0, pr.start, [], []
    for _ in range(MAX_REGIMES):
        key = pr.key(point)
        if key in seen:
            break
        seen.append(key)
        step = _in_regime(pr, point, key, v, seen, notes, xs)
        if step is None or isinstance(step, Requirement):
            return step if step is not None else _past_regimes(pr, len(seen))
        v, point = step, pr.point(step)
    return _past_regimes(pr, len(seen))


def _in_regime(pr: Problem, point: OperatingPoint, key, v: float, seen: list, notes: List[str], xs) -> Step:
    """One regime: the output written in the input (the quantities that do not depend on it kept as symbols),
    its root here if one lies here, else where to go next."""
    dep = depends(point, pr.x)
    keep = [n for n in point.model if not dep[n] and n not in pr.names]
    expr = pr.expression(point, keep).xreplace(pr.links)
    smooth = relaxed(expr).xreplace({pr.x: xs})
    env = {point.forms[n].symbol: point.value(n) for n in keep}
    env.update({s: val for s, val in point.params.items() if s != pr.x and s not in pr.links})
    if xs not in smooth.subs(env).free_symbols:
        return _flat(pr, point, expr, v, seen, notes)
    candidates = [(pr.clamp(val), r) for val, r in roots(smooth, xs, env, pr.target) if pr.inside(val)]
    # the root of this regime's expression that lies in this regime; else the nearest, whose regime is next
    inside = [(val, r) for val, r in candidates if pr.safe_key(val) == key]
    if inside:
        val, r = min(inside, key=lambda t: abs(t[0] - v))
        slope = lambda: float(sp.diff(smooth, xs).subs(env).subs({xs: val, TARGET: pr.target}))  # noqa: E731
        return _root_answer(pr, val, r, slope, xs, len(seen), notes)
    candidates = [(val, r) for val, r in candidates if pr.safe_key(val) is not None]
    if candidates:
        return min(candidates, key=lambda t: abs(t[0] - v))[0]
    return _toward_limit(pr, smooth, xs, env, key, v, point, seen)


def _root_answer(pr: Problem, val: float, r: Optional[sp.Basic], slope: Callable[[], float], xs, regimes: int,
                 notes: List[str]) -> Requirement:
    """The root ``val`` (closed form ``r``) of the configuration's output in its own regime; for a whole number, the
    valid whole number at the boundary on the side that meets the target (``slope()``: the output's there)."""
    achieved, whole, meet = None, None, 0
    if r is None:
        notes.append("the root solves a polynomial of degree 3 or more: its value is exact to rounding, "
                     "but no closed form is printed")
    if pr.p.kind is Kind.COUNT:
        meet = 1 if (slope() > 0) == (pr.direction > 0) else -1
        whole, achieved = integer(pr, val, meet, notes)
        if whole is None:
            root = f"{pr.solve_for} = {val:.6g}" + ("" if r is None else f", {plain(shorten_deep(r))}")
            return unreachable(pr, regimes, f"no valid whole number of {pr.solve_for} meets it",
                               (f"the root of this regime is {root}; no schedule a framework runs has a "
                                f"whole number there (see can_run(): the batch splits over the replicas, "
                                f"the microbatches over a replica's samples)",))
    else:
        val, achieved = _inside_domain(pr, val, notes)
    closed = None if r is None else shorten_deep(r.xreplace({xs: pr.x}))
    return pr.answer(regimes, expression=closed, value=val, integer=whole, achieved=achieved,
                     conditions=pr.conditions(pr.point(val)), notes=tuple(notes), meets_toward=meet)


def _flat(pr: Problem, point: OperatingPoint, expr: sp.Basic, v: float, seen: list, notes: List[str]) -> Step:
    """A regime where the output does not depend on the input: the answer if it meets the target here, else the
    next regime that moves it, else no answer."""
    here = pr.value_of(point)
    if pr.meets(here):
        whole, achieved, meet = None, here, 1 if v > pr.x0 else -1
        if pr.p.kind is Kind.COUNT:
            whole, achieved = integer(pr, v, meet, notes)
        return pr.answer(len(seen), value=float(whole if whole is not None else v), integer=whole,
                         achieved=achieved, conditions=pr.conditions(point),
                         notes=(f"{pr.label} does not depend on {pr.solve_for} in this regime and already "
                                "meets the target there",), meets_toward=meet)
    nxt = _next_regime(pr, v, seen, here)
    if nxt is not None:
        return nxt
    return pr.answer(len(seen), limit=(expr, here),
                     reason=f"{pr.label} does not depend on {pr.solve_for} in this regime, and no other value "
                            f"moves it toward {pr.target:g}")


def _toward_limit(pr: Problem, smooth, xs, env, key, v: float, point: OperatingPoint, seen: list) -> Step:
    """No root in this regime: where the output goes as the input moves toward the target; past it, another
    regime (the next step) or the limit as the answer."""
    found = limit(pr, smooth, xs, env)
    if found is None:
        return None
    lim_expr, lim_val, far, end = found
    if far is not None and pr.safe_key(far) != key:
        return far
    if pr.solve_for in LAYOUT:
        return layout_answer(pr, len(seen))
    nxt = _next_regime(pr, v, seen, pr.value_of(point))
    if nxt is not None:
        return nxt
    words = {"oo": "goes to infinity", "0": "goes to 0"}.get(end, f"reaches {end}, the end of its range")
    return pr.answer(len(seen), limit=(shorten_deep(lim_expr), lim_val), toward=end,
                     reason=f"{pr.label} tends to {lim_val:.6g} as {pr.solve_for} {words} in this regime, "
                            f"short of {pr.target:g}")


def _past_regimes(pr: Problem, regimes: int) -> Requirement:
    """More regimes on the way than :data:`MAX_REGIMES`: a whole number through ``solve()`` alone, else none."""
    if pr.p.kind is Kind.COUNT:
        found = search_integer(pr)
        if found is not None:
            v, o, meet = found
            return pr.answer(regimes, value=float(v), integer=v, achieved=o, meets_toward=meet,
                             notes=(f"the output changes regime more than {MAX_REGIMES} times on the way; "
                                    "the whole number was found through solve() (no closed form)",))
    return unreachable(pr, regimes,
                       f"no value of {pr.solve_for} brings {pr.label} to {pr.target:g} within {MAX_REGIMES} regimes")


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
            if (pr.value_of(pr.point(xv)) - here) * pr.direction > 0:
                return xv
    return None


def roots(smooth: sp.Basic, xs: sp.Dummy, env, y: float) -> List[Tuple[float, Optional[sp.Basic]]]:
    """The positive real roots of ``smooth(x) = y``, each with its closed form (None beyond degree 2).

    The equation is brought to a polynomial in ``x`` (its numerator over one denominator). Degree 1 and 2
    are solved by formula, never through sympy's ``solve``, whose simplification of a quadratic with
    dozens of symbols does not finish; the numeric roots come from the polynomial with every other
    value substituted."""
    num = sp.numer(sp.together(smooth - TARGET))
    try:
        poly = sp.Poly(num, xs)
    except sp.PolynomialError:
        return []
    coeffs = poly.all_coeffs()
    numeric = [complex(sp.N(c.subs(env).subs(TARGET, y))) for c in coeffs]
    while numeric and numeric[0] == 0:
        numeric, coeffs = numeric[1:], coeffs[1:]
    if len(numeric) < 2:
        return []
    found = [r.real for r in np.roots(numeric) if abs(r.imag) <= 1e-9 * max(1.0, abs(r.real)) and r.real > 0]
    closed: List[sp.Basic] = []
    if len(coeffs) == 2:
        closed = [-coeffs[1] / coeffs[0]]
    elif len(coeffs) == 3:
        a, b, c = coeffs
        disc = sp.sqrt(b ** 2 - 4 * a * c)
        closed = [(-b + disc) / (2 * a), (-b - disc) / (2 * a)]
    out = []
    for val in found:
        match = None
        for r in closed:
            rv = complex(sp.N(r.subs(env).subs(TARGET, y)))
            if abs(rv - val) <= 1e-9 * max(1.0, abs(val)):
                match = r
                break
        # polish the floating root on the numeric polynomial (np.roots is not exact to 1e-12)
        f = sp.lambdify(xs, num.subs(env).subs(TARGET, y), "mpmath")
        try:
            import mpmath
            val = float(mpmath.findroot(f, val))
        except (ValueError, ZeroDivisionError):
            pass
        out.append((val, match))
    return out


def limit(pr: Problem, smooth, xs, env):
    """The output at the end of the input's range toward which it moves toward the target (a limit when
    that end is 0 or infinity), as ``(closed form, value, a far point in that direction or None, end)``
    with ``end`` ``"oo"``, ``"0"`` or the end's value."""
    direction, y = pr.direction, pr.target
    num = sp.lambdify(xs, smooth.subs(env), "math")
    x0 = pr.x0 if pr.x0 else 1.0
    try:
        step = x0 * 1e-3
        up = num(min(x0 + step, pr.hi)) - num(max(x0 - step, pr.lo if pr.lo > 0 else x0 / 2))
    except (ZeroDivisionError, ValueError, OverflowError):
        return None
    grows_with_x = (up > 0) == (direction > 0)
    bound = pr.hi if grows_with_x else pr.lo
    if math.isfinite(bound) and bound > 0:
        lim, end = smooth.subs(xs, sp.nsimplify(bound)), f"{bound:g}"
    else:
        point = sp.oo if grows_with_x else 0
        side_ = "+" if point == 0 else "-"
        # the numeric limit first (the symbols may hide a 0 coefficient: oo * sign(N_PP - 1) at N_PP = 1);
        # the closed form only when that limit is finite
        lim = sp.limit(smooth.subs(env), xs, point, side_)
        if lim.is_finite:
            lim = sp.limit(smooth, xs, point, side_)
        end = "oo" if grows_with_x else "0"
    lim_val = float(sp.N(lim.subs(env).subs(TARGET, y)))
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


def _inside_domain(pr: Problem, root: float, notes: List[str]) -> Tuple[float, Optional[float]]:
    """The root and the output there through ``solve()``; a root a rounding error outside the input's
    range (an efficiency of 1 + 2e-16) is moved to the nearest float ``solve()`` accepts."""
    val = root
    for _ in range(8):
        try:
            return val, pr.exact(val)
        except (ValueError, TypeError) as exc:
            error = exc
            val = math.nextafter(val, pr.x0)
    notes.append(f"solve() rejects {pr.solve_for} = {root:.6g}: {error}")
    return root, None
