"""Dimensional analysis of the model's expressions, branch by branch.

A unit is a vector of exponents over the base units ``s``, ``B``, ``flop`` and
``W`` (``J`` is ``W*s``; counts and ratios are ``1``, tokens ``tok`` too). :func:`dimension` walks
an expression and checks every sum, ``Max``/``Min``, every ``Piecewise`` branch
and every comparison for equal dimensions, so a term in an inactive branch is
checked too (substituting numbers would only check the active one).
"""
from __future__ import annotations

from typing import Dict, Tuple

import sympy as sp

from .symbols import BY_SYMBOL
from .terms.base import CeilDiv, Exp, FloorDiv, Iverson, Log2, NamedTerm

BASE = ("s", "B", "flop", "W")
Dim = Tuple[sp.Rational, ...]
ONE: Dim = (sp.S.Zero,) * len(BASE)
_ALIASES = {"J": {"W": 1, "s": 1}, "1": {}, "tok": {}}        # tokens are a count


class DimensionError(ValueError):
    """Two terms that must share a dimension do not."""


def parse_unit(unit: str) -> Dim:
    """``"B/s"`` -> exponents over :data:`BASE`. Grammar: factors joined by ``*`` and ``/``."""
    exps = {b: sp.S.Zero for b in BASE}
    sign = 1
    for token in unit.replace("/", " / ").replace("*", " * ").split():
        if token == "/":
            sign = -1
            continue
        if token == "*":
            continue
        for base, e in (_ALIASES[token].items() if token in _ALIASES else [(token, 1)]):
            if base not in exps:
                raise ValueError(f"unknown unit {token!r} in {unit!r}")
            exps[base] += sign * e
    return tuple(exps[b] for b in BASE)


def show(d: Dim) -> str:
    parts = [f"{b}^{e}" if e != 1 else b for b, e in zip(BASE, d) if e != 0]
    return "*".join(parts) or "1"


def _same(dims, expr) -> Dim:
    """The one dimension of ``dims`` (``None``, a zero's or an infinity's, goes with any; all ``None``: ``None``)."""
    dims = [d for d in dims if d is not None] or [None]
    for d in dims[1:]:
        if d != dims[0]:
            raise DimensionError(f"mixed dimensions {show(dims[0])} and {show(d)} in {expr}")
    return dims[0]


def dimension(expr, units: Dict[sp.Symbol, str] | None = None) -> Dim:
    """Dimension of ``expr``; parameter units come from the symbol table, others from ``units``."""
    units = units or {}

    def walk(e) -> Dim:
        if e.is_zero or e in (sp.oo, -sp.oo):
            return None             # zero and infinity carry any dimension (a branch's 0 beside a time)
        if isinstance(e, sp.Symbol):
            if e in units:
                return parse_unit(units[e])
            if e in BY_SYMBOL:
                return parse_unit(BY_SYMBOL[e].unit)
            raise DimensionError(f"no unit known for symbol {e}")
        if e.is_Number or isinstance(e, (sp.logic.boolalg.BooleanAtom,)):
            return ONE
        if isinstance(e, NamedTerm):
            return walk(e.doit(deep=False))
        if isinstance(e, (FloorDiv, CeilDiv, sp.Mod)):
            a, b = (walk(x) for x in e.args)
            if a != b:
                raise DimensionError(f"{e.func.__name__} of {show(a)} by {show(b)} is not a count: {e}")
            return a if isinstance(e, sp.Mod) else ONE        # a remainder is of its dividend's kind
        if isinstance(e, Iverson):
            walk(e.args[0])
            return ONE
        if isinstance(e, sp.Add):
            return _same((walk(a) for a in e.args), e)
        if isinstance(e, (sp.Max, sp.Min)):
            return _same((walk(a) for a in e.args), e)
        if isinstance(e, sp.Mul):
            total = ONE
            for a in e.args:
                d = walk(a)
                if d is None:
                    return None
                total = tuple(x + y for x, y in zip(total, d))
            return total
        if isinstance(e, sp.Pow):
            base, ex = walk(e.base), walk(e.exp)
            if base is None:
                return None
            if ex != ONE:
                raise DimensionError(f"exponent with a dimension: {e}")
            if base == ONE:
                return ONE
            if not e.exp.is_Number:
                raise DimensionError(f"symbolic power of a dimensioned quantity: {e}")
            return tuple(x * e.exp for x in base)
        if isinstance(e, (sp.log, sp.exp, Log2, Exp)):
            if walk(e.args[0]) != ONE:
                raise DimensionError(f"{e.func.__name__} of a dimensioned quantity: {e}")
            return ONE
        if isinstance(e, sp.Piecewise):
            for _, c in e.args:
                walk(c)
            return _same((walk(x) for x, _ in e.args), e)
        if isinstance(e, sp.core.relational.Relational):
            _same((walk(e.lhs), walk(e.rhs)), e)
            return ONE
        if isinstance(e, sp.logic.boolalg.BooleanFunction):
            for a in e.args:
                walk(a)
            return ONE
        raise DimensionError(f"cannot take the dimension of {type(e).__name__}: {e}")

    d = walk(sp.sympify(expr, strict=True))
    return ONE if d is None else d
