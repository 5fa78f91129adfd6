"""One regime of a :func:`mlsysim_sym.required` question, solved once and kept.

The symbolic work of an answer (the output resolved into a regime and written in the input, its numerator as a
polynomial, the roots by formula, the limits, the conditions) depends on the model variant, the regime, the
output, the input solved for and the parameters the lowering ties to it (:attr:`Problem.links
<mlsysim_sym.requirements.problem.Problem.links>`), never on the numbers of the configuration. It is done once
per such key and kept in this process (:func:`regime_at`, :func:`solution`); the numbers of one question go
through code compiled from it:

* :class:`Regime`: the quantities an output needs, each resolved at the sides the regime's decisions take
  (:func:`mlsysim_sym.branches.resolution` with the sides given, from the compiled decisions of
  :func:`mlsysim_sym.decisions.model_decisions`: no sympy work to tell which regime a value lies in), with
  their conditions; :attr:`Regime.key` names the regime as the sides of the decisions the output reaches.
* :class:`Solution`: in one regime, the output in the input ``XS`` and the quantities that do not depend on it
  (kept as symbols, their values read at the point), relaxed (floors as quotients), its numerator as a
  polynomial in ``XS`` whose coefficients are evaluated exactly (Python fractions: a coefficient that vanishes
  at the configuration, ``N_PP - 1`` at one stage, is exactly 0), the real roots from ``numpy.roots``
  polished in ``mpmath``, the closed forms of degree 1 and 2 by formula.
"""
from __future__ import annotations

import cmath
import math
from collections import OrderedDict
from fractions import Fraction
from functools import cached_property
from threading import Lock
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import sympy as sp

from ..branches import resolution
from ..compile import cse_real, lambdify_numeric, numeric_form, numeric_printer
from ..decisions import model_decisions
from ..model import Variant, build_model
from ..operating_point import OperatingPoint, RegimeForm, _choices, _trivial, tidy
from ..simplify import shorten_deep
from ..terms.base import CeilDiv, FloorDiv
from .answer import TARGET

#: The input in the smooth form of a regime (the root's closed form is written back in the input's symbol).
XS = sp.Dummy("x", positive=True)

#: How many regimes and solutions this process keeps (least recently used dropped first).
KEPT = 512


class _Table:
    """A bounded mapping, least recently used dropped first (thread-safe; a value built twice by two threads is
    equal, the first kept)."""

    def __init__(self, size: int):
        self.size, self.items, self.lock = size, OrderedDict(), Lock()

    def get(self, key, build):
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        value = build()
        with self.lock:
            value = self.items.setdefault(key, value)
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return value

    def clear(self):
        with self.lock:
            self.items.clear()


_REGIMES = _Table(KEPT)
_SOLUTIONS = _Table(KEPT)


def clear() -> None:
    """Forget every regime and solution (the next question builds them again)."""
    _REGIMES.clear()
    _SOLUTIONS.clear()


def kept() -> Tuple[int, int]:
    """How many regimes and solutions this process keeps now."""
    return len(_REGIMES.items), len(_SOLUTIONS.items)


def relaxed(expr: sp.Basic) -> sp.Basic:
    """Integer divisions as plain divisions: the smooth expression whose root starts the integer search
    (the exact check is ``solve()``'s)."""
    return expr.replace(FloorDiv, lambda a, b: a / b).replace(CeilDiv, lambda a, b: a / b)


def depends(point: OperatingPoint, moving) -> Dict[str, bool]:
    """Which quantities of ``point`` depend on the symbols ``moving`` in this regime (directly or through
    earlier quantities)."""
    by_symbol = {point.forms[n].symbol: n for n in point.forms}
    dep: Dict[str, bool] = {}
    for n, form in point.forms.items():
        free = form.resolved.free_symbols
        dep[n] = bool(free & moving) or any(dep.get(by_symbol[s], False) for s in free if s in by_symbol)
    return dep


class Regime:
    """The quantities ``names`` need, resolved at the sides ``sides`` (``(decision index, side)`` for the
    decisions of :meth:`~mlsysim_sym.decisions.ModelDecisions.decisions_of` ``names``), the switches ``flags``
    (``(symbol, value)``) set. ``point`` is an :class:`~mlsysim_sym.operating_point.OperatingPoint` of those
    quantities only, without values (its :meth:`~OperatingPoint.closed` and :meth:`~OperatingPoint.conditions`
    read only forms); ``key`` the sides of the decisions the outputs reach, and the switches."""

    def __init__(self, variant: Variant, names: Tuple[str, ...], flags: Tuple[Tuple[sp.Symbol, int], ...],
                 sides: Tuple[Tuple[int, int], ...]):
        m, md = build_model(variant), model_decisions(variant)
        given = {md.decisions[i].node: int(k) for i, k in sides}
        on = {f: sp.Integer(v) for f, v in flags}
        need = set().union(*(md.closure(n) for n in names))
        forms: Dict[str, RegimeForm] = {}
        for name in (n for n in m if n in need):
            q = m.quantity(name)
            res = resolution(q.definition, None, freeze=False, choices=given)
            resolved = res.expr.xreplace(on)
            conds = [tidy(c) for c in (c.xreplace(on) for c in res.conditions) if not _trivial(c)]
            conds += [sp.Eq(f, on[f]) for f in on if f in q.definition.free_symbols]
            forms[name] = RegimeForm(name, q.symbol, resolved, resolved, tuple(conds), None, _choices(res))
        self.variant, self.names, self.flags = variant, names, flags
        self.point = OperatingPoint(m, {}, {}, forms)
        reached = dict.fromkeys(n for q in names for n in self.point.closure(q))
        self.key = tuple((n, forms[n].choices) for n in reached) + tuple(sorted((f.name, v) for f, v in flags))
        out: List[sp.Basic] = []
        for n in names:
            out.extend(c for c in (tidy(c) for c in self.point.conditions(n)) if c not in out)
        #: The relations that keep this regime (each once, as they read best).
        self.conditions: Tuple[sp.Basic, ...] = tuple(out)


def regime_at(variant: Variant, names: Tuple[str, ...], flags, values) -> Regime:
    """The :class:`Regime` of ``names`` at the parameter values ``values`` (the sides from the compiled
    decisions; raises where the model is undefined there, as ``solve()`` would)."""
    md = model_decisions(variant)
    indices = md.decisions_of(names)
    chosen = md.choices(md.data(values), indices)
    sides = tuple((i, int(chosen[i])) for i in indices)
    return _REGIMES.get((variant, names, flags, sides), lambda: Regime(variant, names, flags, sides))


class _ExactPrinter(type(numeric_printer("math"))):
    """The package's printer for one configuration, with rational numbers and floats as ``Fraction``: fed
    fractions, the code computes exactly (an irrational function, ``sqrt``, ``log``, gives a float)."""

    def _print_Rational(self, expr):
        return f"Fraction({expr.p}, {expr.q})"

    _print_Half = _print_Rational

    def _print_Float(self, expr):
        return f"Fraction({float(expr)!r})"


def _exact_code(args, exprs):
    printer = _ExactPrinter(dict(numeric_printer("math")._settings))
    return sp.lambdify(args, list(exprs), modules=[{"Fraction": Fraction}, "math"], cse=cse_real,
                       docstring_limit=0, printer=printer)


def fraction(v) -> Fraction:
    """A number as an exact fraction (a bool as 0 or 1)."""
    return Fraction(int(v)) if isinstance(v, (bool, np.bool_)) else Fraction(v)


class _Polynomial:
    """The numerator of ``smooth - y`` (``smooth`` a form of the output in ``XS``) as a polynomial in ``XS``:
    ``coeffs``, highest power first (None when ``smooth`` is no ratio of polynomials in ``XS``), and code that
    evaluates them exactly from the target and the values of ``symbols``."""

    def __init__(self, smooth: sp.Basic, symbols: Tuple[sp.Symbol, ...]):
        num = sp.numer(sp.together(smooth - TARGET))
        try:
            self.coeffs: Optional[List[sp.Basic]] = sp.Poly(num, XS).all_coeffs()
        except sp.PolynomialError:
            self.coeffs = None
        self._code = _exact_code((TARGET,) + symbols, self.coeffs) if self.coeffs is not None else None
        self._closed: Dict[int, List[sp.Basic]] = {}

    def at(self, y, exact_env: Sequence[Fraction]) -> Optional[List[Fraction]]:
        """The coefficients at the target ``y``, exactly (None: no polynomial, or undefined here)."""
        if self._code is None:
            return None
        try:
            return list(self._code(fraction(y), *exact_env))
        except (ZeroDivisionError, OverflowError, ValueError, TypeError):
            return None

    def closed_roots(self, k: int) -> List[sp.Basic]:
        """The closed forms of the roots with the first ``k`` coefficients gone (degree 1 and 2 only)."""
        if k not in self._closed:
            coeffs = self.coeffs[k:]
            if len(coeffs) == 2:
                self._closed[k] = [-coeffs[1] / coeffs[0]]
            elif len(coeffs) == 3:
                a, b, c = coeffs
                disc = sp.sqrt(b ** 2 - 4 * a * c)
                self._closed[k] = [(-b + disc) / (2 * a), (-b - disc) / (2 * a)]
            else:
                self._closed[k] = []
        return self._closed[k]


def _leading(exact: List[Fraction]) -> int:
    """How many leading coefficients are exactly 0."""
    k = 0
    while k < len(exact) and exact[k] == 0:
        k += 1
    return k


def _by_formula(numeric: Sequence[float]) -> List[complex]:
    """The roots of a polynomial of degree 1 or 2 by the formulas :meth:`_Polynomial.closed_roots` writes."""
    if len(numeric) == 2:
        return [-numeric[1] / numeric[0]]
    if len(numeric) == 3:
        a, b, c = numeric
        disc = cmath.sqrt(b * b - 4 * a * c)
        return [(-b + disc) / (2 * a), (-b - disc) / (2 * a)]
    return []


class Solution:
    """The output ``out`` (of the quantities ``names``) in the input ``x`` in one :class:`Regime`, the
    parameters ``links`` tie to ``x`` substituted.

    Two forms of it: the one the numbers go through, built at once (the quantities expanded as they stand:
    cheap), and the one an answer prints (:attr:`expr`, :attr:`smooth`, :meth:`closed_form`: shortened, as
    :meth:`~mlsysim_sym.operating_point.OperatingPoint.closed` shortens, built only when an answer of this regime
    is written). ``symbols``: what both read besides the input (the quantities that do not depend on it, kept,
    and parameters), in the order the values are given."""

    def __init__(self, regime: Regime, out: sp.Basic, names: Tuple[str, ...], x: sp.Symbol,
                 links: Tuple[Tuple[sp.Symbol, sp.Basic], ...]):
        point, self._links = regime.point, dict(links)
        dep = depends(point, {x, *self._links})
        self._keep = [n for n in point.forms if not dep[n] and n not in names]
        self.regime, self.x, self._out, self._names = regime, x, out, names
        numeric = relaxed(self._in_x(simplified=False)).xreplace({x: XS})
        self.symbols: Tuple[sp.Symbol, ...] = tuple(sorted(numeric.free_symbols - {XS}, key=str))
        self.moves = XS in numeric.free_symbols
        self._numeric = numeric
        self._float = lambdify_numeric((XS,) + self.symbols, [numeric_form(numeric)], "math")
        self._poly = _Polynomial(numeric, self.symbols)
        self._slope = None
        self._shown: Optional[_Polynomial] = None
        self._short: Dict[sp.Basic, sp.Basic] = {}
        self._limits: Dict[object, object] = {}

    def _in_x(self, simplified: bool) -> sp.Basic:
        point = self.regime.point
        forms = {point.forms[n].symbol: point.closed(n, self._keep, simplified=simplified) for n in self._names}
        return self._out.xreplace(forms).xreplace(self._links)

    # ---- numbers -----------------------------------------------------------------------------------------
    def value(self, x: float, env: Sequence[float]) -> float:
        """The smooth output at ``x`` (floats)."""
        return self._float(x, *env)[0]

    def slope(self, x: float, env: Sequence[float]) -> float:
        """Its derivative in the input at ``x``."""
        if self._slope is None:
            d = sp.diff(self._numeric, XS)
            self._slope = lambdify_numeric((XS,) + self.symbols, [numeric_form(d)], "math")
        return self._slope(x, *env)[0]

    def _rational(self, exact_env):
        """``N`` and ``D`` of the output ``N / D``: the numerator ``N - y D`` at ``y = 0`` and ``y = 1``."""
        n, m = self._poly.at(0, exact_env), self._poly.at(1, exact_env)
        if n is None or m is None:
            return None
        return n, [a - b for a, b in zip(n, m)]

    def flat(self, exact_env: Sequence[Fraction]) -> Optional[bool]:
        """Whether the output is the same at every value of the input here (``N`` and ``D`` proportional, exactly);
        None when the output is no ratio of polynomials in the input (the caller asks sympy)."""
        if not self.moves:
            return True
        nd = self._rational(exact_env)
        if nd is None:
            return None
        n, d = nd
        return all(a * b == c * e for a, e in zip(n, d) for c, b in zip(n, d))

    def roots(self, y: float, exact_env: Sequence[Fraction]) -> List[float]:
        """The positive real roots of ``output(x) = y``. Leading coefficients that vanish at the configuration
        are dropped (exactly: the degree is the configuration's); each root is polished in ``mpmath``; a root the
        numerator shares with the denominator (no value of the output there) is left out."""
        exact, nd = self._poly.at(y, exact_env), self._rational(exact_env)
        if exact is None or nd is None:
            return []
        exact = exact[_leading(exact):]
        if len(exact) < 2:
            return []
        numeric = [float(c) for c in exact]
        if not all(math.isfinite(c) for c in numeric):
            return []
        d = [float(c) for c in nd[1]]
        out = []
        for r in np.roots(numeric):
            if abs(r.imag) <= 1e-9 * max(1.0, abs(r.real)) and r.real > 0:
                val = _polish(exact, r.real)
                terms = [c * val ** (len(d) - 1 - i) for i, c in enumerate(d)]
                if abs(sum(terms)) > 1e-9 * sum(abs(t) for t in terms):
                    out.append(val)
        return out

    def limit_value(self, end: str, exact_env: Sequence[Fraction]) -> Optional[float]:
        """The output's limit as the input goes to ``end`` (``"oo"`` or ``"0"``) at the configuration, from the
        ratio of polynomials (None: not a ratio of polynomials, the caller asks sympy)."""
        nd = self._rational(exact_env)
        if nd is None:
            return None
        n, d = nd
        # highest powers first: toward infinity the first nonzero coefficients lead, toward 0 the last ones
        order = range(len(n)) if end == "oo" else range(len(n) - 1, -1, -1)
        i = next((i for i in order if n[i] != 0), None)
        j = next((j for j in order if d[j] != 0), None)
        if j is None:
            return math.nan
        if i is None:
            return 0.0
        if i == j:
            return float(n[i] / d[j])
        if (i < j) if end == "oo" else (i > j):
            return math.copysign(math.inf, n[i] / d[j])
        return 0.0

    def limit_symbolic(self, env: Sequence[float], point, side: str) -> float:
        """The limit of an output that is no ratio of polynomials in the input (sympy, with the numbers in)."""
        lim = sp.limit(self._numeric.subs(dict(zip(self.symbols, env))), XS, point, side)
        try:
            return float(sp.N(lim))
        except TypeError:           # complex or undefined
            return math.nan

    def flat_symbolic(self, env: Sequence[float]) -> bool:
        """Whether an output that is no ratio of polynomials stays still with the numbers in (sympy)."""
        return XS not in self._numeric.subs(dict(zip(self.symbols, env))).free_symbols

    # ---- what an answer prints ---------------------------------------------------------------------------
    @cached_property
    def expr(self) -> sp.Basic:
        """The output in this regime, in ``x`` and the quantities that do not depend on it (shortened)."""
        return self._in_x(simplified=True)

    @cached_property
    def smooth(self) -> sp.Basic:
        """:attr:`expr` with floors as quotients, in ``XS``."""
        return relaxed(self.expr).xreplace({self.x: XS})

    def closed_form(self, val: float, y: float, exact_env: Sequence[Fraction]) -> Optional[sp.Basic]:
        """The closed form (in ``x`` and the target, shortened) of the root ``val`` of ``output(x) = y``: of the
        printed form's numerator, the root of degree 1 or 2 whose value is ``val``; None beyond degree 2."""
        if self._shown is None:
            self._shown = _Polynomial(self.smooth, self.symbols)
        exact = self._shown.at(y, exact_env)
        if exact is None:
            return None
        k = _leading(exact)
        numeric = [float(c) for c in exact[k:]]
        for r, rv in zip(self._shown.closed_roots(k), _by_formula(numeric)):
            if abs(rv - val) <= 1e-9 * max(1.0, abs(val)):
                return self.short(r)
        return None

    def short(self, e: sp.Basic) -> sp.Basic:
        """A closed form in the input's own symbol, shortened (:func:`~mlsysim_sym.simplify.shorten_deep`)."""
        if e not in self._short:
            self._short[e] = shorten_deep(e.xreplace({XS: self.x}))
        return self._short[e]

    def limit_form(self, point, side: str, value: float) -> sp.Basic:
        """The closed form of the output's limit as the input goes to ``point`` (sympy's ``limit``, once); the
        number ``value`` where sympy finds none that is finite (a coefficient it cannot tell is 0)."""
        key = (point, side)
        if key not in self._limits:
            try:
                lim = sp.limit(self.smooth, XS, point, side)
            except (NotImplementedError, ValueError, TypeError, sp.PolynomialError):
                lim = None
            if lim is not None and lim.has(sp.oo, -sp.oo, sp.zoo, sp.nan, sp.Limit):
                lim = None
            self._limits[key] = lim
        lim = self._limits[key]
        return sp.Float(value) if lim is None else lim

    def at_end(self, bound: float) -> sp.Basic:
        """The output's closed form at a finite end of the input's range."""
        if bound not in self._limits:
            self._limits[bound] = self.smooth.subs(XS, sp.nsimplify(bound))
        return self._limits[bound]


def _polish(exact: Sequence[Fraction], val: float) -> float:
    """A root of the polynomial with coefficients ``exact``, from ``val``, to 30 digits, as a float."""
    import mpmath
    with mpmath.workdps(30):
        coeffs = [mpmath.mpf(c.numerator) / c.denominator for c in exact]
        try:
            return float(mpmath.findroot(lambda t: mpmath.polyval(coeffs, t), mpmath.mpf(val)))
        except (ValueError, ZeroDivisionError):
            return val


def solution(regime: Regime, out: sp.Basic, names: Tuple[str, ...], x: sp.Symbol,
             links: Tuple[Tuple[sp.Symbol, sp.Basic], ...]) -> Solution:
    """The :class:`Solution` of one question's output in ``regime`` (built once per variant, regime, output,
    input and links; the regime's key stands for its sides)."""
    key = (regime.variant, regime.names, regime.key, out, x, links)
    return _SOLUTIONS.get(key, lambda: Solution(regime, out, names, x, links))
