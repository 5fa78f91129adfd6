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
>>> env = {x: Box(1, 8, True), y: Box(0.5, 0.9)}
>>> truth(x * y > 10, env), truth(x < 1, env), truth(sp.Eq(sp.Mod(16, x), 0), env)
(False, False, None)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Mapping, Optional

import sympy as sp
from sympy.core.relational import Relational

from .terms.base import CeilDiv, FloorDiv, Iverson

_INF = math.inf


@dataclass(frozen=True)
class Box:
    """``lo <= x <= hi`` (``whole``: x takes integer values only). NaN bounds mean "unknown"."""

    lo: float
    hi: float
    whole: bool = False

    @property
    def known(self) -> bool:
        return not (math.isnan(self.lo) or math.isnan(self.hi))

    @property
    def point(self) -> bool:
        return self.known and self.lo == self.hi


ANY = Box(-_INF, _INF)


def _box(lo, hi, whole=False) -> Box:
    if math.isnan(lo) or math.isnan(hi):
        return ANY
    return Box(lo, hi, whole)


def _products(a: Box, b: Box):
    out = []
    for x in (a.lo, a.hi):
        for y in (b.lo, b.hi):
            p = x * y
            out.append(0.0 if math.isnan(p) else p)     # 0 * inf: the bound is 0 there
    return out


def _mul(a: Box, b: Box) -> Box:
    p = _products(a, b)
    return _box(min(p), max(p), a.whole and b.whole)


def _inverse(a: Box) -> Box:
    if a.lo > 0 or a.hi < 0:
        return _box(1 / a.hi if a.hi else -_INF, 1 / a.lo if a.lo else _INF)
    return ANY


def _pow(a: Box, e: Box) -> Box:
    if e.point and float(e.lo).is_integer():
        n = int(e.lo)
        if n == 0:
            return Box(1, 1, True)
        if n < 0:
            return _pow(_inverse(a), Box(-n, -n, True))
        lo, hi = a.lo ** n, a.hi ** n
        if n % 2 == 0 and a.lo < 0 < a.hi:
            return _box(0, max(lo, hi), a.whole)
        return _box(min(lo, hi), max(lo, hi), a.whole)
    if e.known and e.lo >= 0 and e.hi <= 1 and e.whole:       # a 0/1 switch: 1 or the base
        return _box(min(1, a.lo), max(1, a.hi))
    if a.known and a.lo > 0 and e.known:
        c = [a.lo ** e.lo, a.lo ** e.hi, a.hi ** e.lo, a.hi ** e.hi]
        return _box(min(c), max(c))
    return ANY


class _Bounds:
    def __init__(self, env: Mapping[sp.Symbol, object]):
        self.env = env
        self.memo: Dict[sp.Basic, object] = {}

    def __call__(self, e):
        try:
            return self.memo[e]
        except KeyError:
            v = self.memo[e] = self._compute(e)
            return v

    def _compute(self, e):
        if e is sp.true or e is sp.false:
            return bool(e)
        if e.is_Symbol:
            return self.env.get(e, ANY)
        if e.is_Number:
            x = float(e)
            return Box(x, x, e.is_Integer)
        if e.is_Add:
            out = Box(0, 0, True)
            for a in e.args:
                b = self(a)
                out = _box(out.lo + b.lo, out.hi + b.hi, out.whole and b.whole)
            return out
        if e.is_Mul:
            out = Box(1, 1, True)
            for a in e.args:
                out = _mul(out, self(a))
            return out
        if e.is_Pow:
            return _pow(self(e.base), self(e.exp))
        if isinstance(e, (sp.Max, sp.Min)):
            bs = [self(a) for a in e.args]
            f = max if isinstance(e, sp.Max) else min
            return _box(f(b.lo for b in bs), f(b.hi for b in bs), all(b.whole for b in bs))
        if isinstance(e, (FloorDiv, CeilDiv)):
            q = _mul(self(e.args[0]), _inverse(self(e.args[1])))
            r = math.floor if isinstance(e, FloorDiv) else math.ceil
            if not q.known or math.isinf(q.lo) or math.isinf(q.hi):
                return Box(q.lo, q.hi, True) if q.known else ANY
            return Box(r(q.lo), r(q.hi), True)
        if isinstance(e, sp.Mod):
            b = self(e.args[1])
            return _box(0, b.hi) if b.known and b.lo > 0 else ANY
        if isinstance(e, Iverson):
            t = self(e.args[0])
            return Box(1, 1, True) if t is True else Box(0, 0, True) if t is False else Box(0, 1, True)
        if isinstance(e, Relational):
            return _compare(type(e), self(e.lhs), self(e.rhs))
        if isinstance(e, sp.Not):
            t = self(e.args[0])
            return None if t is None else not t
        if isinstance(e, sp.And):
            ts = [self(a) for a in e.args]
            return False if False in ts else True if all(t is True for t in ts) else None
        if isinstance(e, sp.Or):
            ts = [self(a) for a in e.args]
            if True in ts or self._covers(e):
                return True
            return False if all(t is False for t in ts) else None
        if isinstance(e, sp.ITE):
            c = self(e.args[0])
            if c is True:
                return self(e.args[1])
            if c is False:
                return self(e.args[2])
            a, b = self(e.args[1]), self(e.args[2])
            return a if a == b else None
        name = type(e).__name__
        if name == "NonFinite":
            b = self(e.args[0])
            return (False if b.known and not math.isinf(b.lo) and not math.isinf(b.hi) else None)
        if name == "Fractional":
            b = self(e.args[0])
            return False if b.whole and b.known else None
        return ANY if not isinstance(e, sp.logic.boolalg.Boolean) else None


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


def _compare(rel, a: Box, b: Box) -> Optional[bool]:
    if not (a.known and b.known):
        return None
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
