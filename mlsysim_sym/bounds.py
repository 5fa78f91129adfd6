"""Bounds of an expression over a box of arguments: interval arithmetic on sympy expressions.

Each argument is known to lie in ``[lo, hi]`` (the range of a swept array, or one
number) and possibly to take whole values only. :func:`truth` bounds a condition
over the whole box: ``False`` when it holds nowhere, ``True`` everywhere, ``None``
when the bounds cannot tell. A sweep uses it to skip, without touching its arrays,
every check that no configuration can break (:mod:`mlsysim_sym.sweeps`); the ones
that remain are evaluated elementwise. Bounds are conservative: an operation they
do not know gives "anything".

Examples
--------
>>> import sympy as sp
>>> x, y = sp.symbols("x y", real=True)
>>> env = {x: Box(1, 8, True, True), y: Box(0.5, 0.9, False, True)}
>>> truth(x * y > 10, env), truth(x < 1, env), truth(sp.Eq(sp.Mod(16, x), 0), env)
(False, False, None)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Mapping, Optional

import sympy as sp
from sympy.core.relational import Relational

from .compile import Fractional, NonFinite
from .terms.base import CeilDiv, FloorDiv, Iverson

_INF = math.inf


@dataclass(frozen=True)
class Box:
    """``lo <= x <= hi``. ``whole``: x takes integer values only. ``exact``: the bounds carry no
    rounding (the values of an argument, or integer arithmetic on them); comparisons of inexact
    bounds leave a relative margin, so a rounded bound never decides a condition.
    NaN bounds mean "unknown"."""

    lo: float
    hi: float
    whole: bool = False
    exact: bool = False

    @property
    def known(self) -> bool:
        return not (math.isnan(self.lo) or math.isnan(self.hi))

    @property
    def point(self) -> bool:
        return self.known and self.lo == self.hi


ANY = Box(-_INF, _INF)
#: Integers of smaller magnitude are exact in float64.
EXACT = 2 ** 53


def _box(lo, hi, whole=False, exact=False) -> Box:
    if math.isnan(lo) or math.isnan(hi):
        return ANY
    return Box(lo, hi, whole, exact and whole and max(abs(lo), abs(hi)) < EXACT)


def _mul(a: Box, b: Box) -> Box:
    if not (a.known and b.known):
        return ANY
    p = []
    for x in (a.lo, a.hi):
        for y in (b.lo, b.hi):
            v = x * y
            p.append(0.0 if math.isnan(v) else v)          # 0 * inf, both bounds known: 0 there
    return _box(min(p), max(p), a.whole and b.whole, a.exact and b.exact)


def _inverse(a: Box) -> Box:
    if a.known and (a.lo > 0 or a.hi < 0):
        return _box(1 / a.hi if a.hi else -_INF, 1 / a.lo if a.lo else _INF)
    return ANY


def _widen(b: Box) -> Box:
    """An inexact box with a relative margin on each side (rounding of its bounds)."""
    if b.exact or not b.known:
        return b
    return Box(b.lo - abs(b.lo) * 1e-12 - 1e-300, b.hi + abs(b.hi) * 1e-12 + 1e-300, b.whole)


def _pow(a: Box, e: Box) -> Box:
    if not (a.known and e.known):
        return ANY
    try:
        if e.point and float(e.lo).is_integer():
            n = int(e.lo)
            if n == 0:
                return Box(1, 1, True, True)
            if n < 0:
                return _pow(_inverse(a), Box(-n, -n, True, True))
            lo, hi = a.lo ** n, a.hi ** n
            if n % 2 == 0 and a.lo < 0 < a.hi:
                return _box(0, max(lo, hi), a.whole, a.exact)
            return _box(min(lo, hi), max(lo, hi), a.whole, a.exact)
        if e.lo >= 0 and e.hi <= 1 and e.whole:                 # a 0/1 switch: 1 or the base
            return _box(min(1, a.lo), max(1, a.hi), a.whole, a.exact)
        if a.lo > 0:
            c = [a.lo ** e.lo, a.lo ** e.hi, a.hi ** e.lo, a.hi ** e.hi]
            return _box(min(c), max(c))
    except (OverflowError, ZeroDivisionError):
        pass
    return ANY


def _divide_round(q: Box, up: bool) -> Box:
    """The integer interval of ``floor`` (``ceil``) of a quotient within ``q`` (widened: never too narrow)."""
    if not q.known or math.isinf(q.lo) or math.isinf(q.hi):
        return Box(-_INF if not q.known else q.lo, _INF if not q.known else q.hi, True)
    w = _widen(q)
    r = math.ceil if up else math.floor
    return Box(r(w.lo), r(w.hi), True, max(abs(w.lo), abs(w.hi)) < EXACT)


class _Bounds:
    """The bounds of every subexpression over one box, each computed once (dispatch on the node's type)."""

    def __init__(self, env: Mapping[sp.Symbol, object]):
        self.env = env
        self.memo: Dict[int, object] = {}
        self._alive = []          # the nodes whose id keys the memo (ids are not reused while they live)

    def __call__(self, e):
        # keyed by identity: the conditions of a rule table are fixed objects, and hashing and comparing
        # sympy trees costs more than computing their bounds
        try:
            return self.memo[id(e)]
        except KeyError:
            self._alive.append(e)
            v = self.memo[id(e)] = self._compute(e)
            return v

    def _compute(self, e):
        t = type(e)
        handler = _HANDLERS.get(t)
        if handler is None:
            handler = _HANDLERS[t] = _handler_for(t)
        return handler(self, e)

    def _number(self, e):
        x = float(e)
        return Box(x, x, bool(e.is_Integer), bool(e.is_Integer or e.is_Float) and math.isfinite(x))

    def _symbol(self, e):
        return self.env.get(e, ANY)

    def _add(self, e):
        out = Box(0, 0, True, True)
        for a in e.args:
            b = self(a)
            out = _box(out.lo + b.lo, out.hi + b.hi, out.whole and b.whole, out.exact and b.exact)
        return out

    def _mul(self, e):
        out = Box(1, 1, True, True)
        for a in e.args:
            out = _mul(out, self(a))
        return out

    def _pow(self, e):
        return _pow(self(e.base), self(e.exp))

    def _extreme(self, e):
        bs = [self(a) for a in e.args]
        if not all(b.known for b in bs):
            return ANY
        f = max if isinstance(e, sp.Max) else min
        return _box(f(b.lo for b in bs), f(b.hi for b in bs), all(b.whole for b in bs), all(b.exact for b in bs))

    def _division(self, e):
        q = _mul(self(e.args[0]), _inverse(self(e.args[1])))
        return _divide_round(Box(q.lo, q.hi, q.whole), isinstance(e, CeilDiv))

    def _mod(self, e):
        a, b = self(e.args[0]), self(e.args[1])
        finite = a.known and not (math.isinf(a.lo) or math.isinf(a.hi))
        return _box(0, b.hi) if finite and b.known and b.lo > 0 else ANY

    def _iverson(self, e):
        t = self(e.args[0])
        return Box(1, 1, True, True) if t is True else Box(0, 0, True, True) if t is False else Box(0, 1, True, True)

    def _relation(self, e):
        return _compare(type(e), self(e.lhs), self(e.rhs))

    def _not(self, e):
        t = self(e.args[0])
        return None if t is None else not t

    def _and(self, e):
        ts = [self(a) for a in e.args]
        return False if False in ts else True if all(t is True for t in ts) else None

    def _or(self, e):
        ts = [self(a) for a in e.args]
        if True in ts or self._covers(e):
            return True
        return False if all(t is False for t in ts) else None

    def _ite(self, e):
        when, then, other = e.args
        if other is sp.false and self(then) is False:     # a check's failure first: often decided cheaply
            return False
        c = self(when)
        if c is True:
            return self(then)
        if c is False:
            return self(other)
        a, b = self(then), self(other)
        return a if a == b else None

    def _non_finite(self, e):
        b = self(e.args[0])
        return False if b.known and not math.isinf(b.lo) and not math.isinf(b.hi) else None

    def _fractional(self, e):
        b = self(e.args[0])
        return False if b.whole and b.known else None

    def _atom(self, e):
        return bool(e)

    def _unknown(self, e):
        return None if isinstance(e, sp.logic.boolalg.Boolean) else ANY

    def _covers(self, e) -> bool:
        """``x = c1 | x = c2 | ...`` where the ``c`` cover every whole value ``x`` can take."""
        if not all(isinstance(a, sp.Eq) for a in e.args):
            return False
        sides = [(a.lhs, a.rhs) if a.rhs.is_Number else (a.rhs, a.lhs) for a in e.args]
        if len({x for x, _ in sides}) != 1 or not all(c.is_Number for _, c in sides):
            return False
        b = self(sides[0][0])
        if not (b.whole and b.known) or b.hi - b.lo > 64:
            return False
        values = {float(c) for _, c in sides}
        return all(float(k) in values for k in range(int(b.lo), int(b.hi) + 1))


#: node type -> handler, filled on first sight of each type (by what the type is)
_HANDLERS: Dict[type, object] = {}


#: (node class, handler), the first class a node's type is a subclass of decides
_DISPATCH = ((sp.Symbol, _Bounds._symbol), (sp.Number, _Bounds._number), (sp.Add, _Bounds._add),
             (sp.Mul, _Bounds._mul), (sp.Pow, _Bounds._pow), ((sp.Max, sp.Min), _Bounds._extreme),
             ((FloorDiv, CeilDiv), _Bounds._division), (sp.Mod, _Bounds._mod), (Iverson, _Bounds._iverson),
             (Relational, _Bounds._relation), (sp.Not, _Bounds._not), (sp.And, _Bounds._and),
             (sp.Or, _Bounds._or), (sp.ITE, _Bounds._ite), (NonFinite, _Bounds._non_finite),
             (Fractional, _Bounds._fractional))


def _handler_for(t):
    if t in (sp.logic.boolalg.BooleanTrue, sp.logic.boolalg.BooleanFalse):
        return _Bounds._atom
    return next((h for cls, h in _DISPATCH if issubclass(t, cls)), _Bounds._unknown)


def _compare(rel, a: Box, b: Box) -> Optional[bool]:
    if not (isinstance(a, Box) and isinstance(b, Box) and a.known and b.known):    # a truth value compared: unknown
        return None
    a, b = _widen(a), _widen(b)
    if rel is sp.StrictLessThan:
        return True if a.hi < b.lo else False if a.lo >= b.hi else None
    if rel is sp.LessThan:
        return True if a.hi <= b.lo else False if a.lo > b.hi else None
    if rel is sp.StrictGreaterThan:
        return _compare(sp.StrictLessThan, b, a)
    if rel is sp.GreaterThan:
        return _compare(sp.LessThan, b, a)
    same = a.point and b.point and a.lo == b.lo
    apart = a.hi < b.lo or b.hi < a.lo
    if rel is sp.Eq:
        return True if same else False if apart else None
    if rel is sp.Ne:
        return False if same else True if apart else None
    return None


def truth(condition: sp.Basic, env: Mapping[sp.Symbol, Box], memo: Optional[_Bounds] = None) -> Optional[bool]:
    """Whether ``condition`` holds on the whole box ``env`` (True), nowhere (False), or either (None).

    Pass the same ``memo`` (:func:`evaluator`) for several conditions over one box to share the work.
    """
    ev = memo if memo is not None else _Bounds(env)
    t = ev(condition)
    return t if isinstance(t, bool) or t is None else None


def evaluator(env: Mapping[sp.Symbol, Box]) -> _Bounds:
    """A memoized bounds evaluator over one box (for :func:`truth` of several conditions)."""
    return _Bounds(env)


def interval(expr: sp.Basic, env: Mapping[sp.Symbol, Box]) -> Box:
    """The bounds of an expression over the box."""
    return _Bounds(env)(expr)
