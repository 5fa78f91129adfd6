"""Branches of any expression at a point: the active side of every decision, and its exact value.

At one point (``Symbol -> number``) an expression of the model is a smooth
function of its continuous parameters: resolve every ``Max`` / ``Min`` /
``Piecewise`` / Iverson bracket to its active side and freeze every floor.

* :func:`resolve` returns ``(smooth_expr, conditions)``: each ``Max``/``Min``
  replaced by its active argument, each ``Piecewise`` by its active branch, each
  Iverson bracket by 0 or 1, each :class:`~mlsysim_sym.terms.base.FloorDiv` /
  ``CeilDiv`` frozen at its value (``relax=True``: the real quotient ``a/b``);
  the conditions are the relations that hold at the point and keep those sides.
* :func:`resolution` does the same with more control (sides given instead of
  evaluated, only some decisions resolved, floors kept) and also reports the
  choices made and the **ties**: decisions whose sides are within a relative
  :data:`KINK_RTOL`, where the model has a kink.
* :class:`Numbers` is the one exact evaluator of the package's symbolic side: the
  value of any expression from plain Python numbers (integer division exact, named
  cost terms through their formula); :func:`evaluate` is its one-shot form.

The helpers (:func:`truth`, :func:`first_true`, :func:`extreme`) evaluate
conditions and sides for one point or, elementwise, for arrays.
:mod:`mlsysim_sym.decisions` applies all this to the definitions of a model variant.

Examples
--------
>>> import sympy as sp
>>> x, y = sp.symbols("x y", positive=True)
>>> resolve(sp.Max(x, 2 * y) + sp.Piecewise((x, y > 1), (y, True)), {x: 3.0, y: 0.5})
(x + y, (x >= 2*y, y <= 1))
"""
from __future__ import annotations

import math

import operator
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import sympy as sp
from sympy.core.relational import Relational

from .terms.base import CeilDiv, FloorDiv, Iverson, NamedTerm

#: Two sides of a decision closer than this (relative) are a tie: a kink of the model.
KINK_RTOL = 1e-9

#: The expression nodes that switch between regimes.
DECISIONS = (sp.Max, sp.Min, sp.Piecewise, Iverson)

#: Relation class -> the Python comparison that evaluates it.
COMPARE = {
    sp.Eq: operator.eq, sp.Ne: operator.ne, sp.StrictGreaterThan: operator.gt,
    sp.GreaterThan: operator.ge, sp.StrictLessThan: operator.lt, sp.LessThan: operator.le,
}
#: Relations whose truth moves with a continuous change (an equality does not have two sides).
ORDERED = (sp.StrictGreaterThan, sp.GreaterThan, sp.StrictLessThan, sp.LessThan)


@dataclass(frozen=True)
class Tie:
    """A decision whose sides are equal within :data:`KINK_RTOL` at the point.

    ``atom`` is the relation that is (nearly) an equality, for a ``Piecewise`` or
    Iverson bracket; ``None`` for a ``Max``/``Min``, whose tied arguments are
    ``indices``.
    """

    decision: sp.Basic
    atom: Optional[sp.Basic] = None
    indices: Tuple[int, ...] = ()


@dataclass(frozen=True)
class Resolution:
    """The outcome of :func:`resolution`: the smooth expression and what selected it."""

    expr: sp.Basic
    conditions: Tuple[sp.Basic, ...]
    choices: Tuple[Tuple[sp.Basic, int], ...]
    ties: Tuple[Tie, ...]


def near(a, b, rtol: float = KINK_RTOL):
    """``|a - b| <= rtol * max(|a|, |b|)`` (scalars or arrays)."""
    return np.abs(a - b) <= rtol * np.maximum(np.abs(a), np.abs(b))


def atoms_of(cond: sp.Basic) -> Tuple[sp.Basic, ...]:
    """The relations of a condition, in order of appearance (``True`` has none)."""
    if isinstance(cond, Relational):
        return (cond,)
    out: List[sp.Basic] = []
    for a in cond.args:
        out.extend(x for x in atoms_of(a) if x not in out)
    return tuple(out)


def truth(cond: sp.Basic, atom_truth: Mapping[sp.Basic, object]):
    """A condition's truth from the truth of its relations (bools or bool arrays)."""
    if cond is sp.true or cond is sp.false:
        return bool(cond)
    if isinstance(cond, Relational):
        return atom_truth[cond]
    parts = [truth(a, atom_truth) for a in cond.args]
    if not any(isinstance(p, np.ndarray) for p in parts):
        if isinstance(cond, sp.Not):
            return not parts[0]
        if isinstance(cond, (sp.And, sp.Or)):
            return all(parts) if isinstance(cond, sp.And) else any(parts)
    if isinstance(cond, sp.Not):
        return np.logical_not(parts[0])
    fn = np.logical_and if isinstance(cond, sp.And) else np.logical_or if isinstance(cond, sp.Or) else None
    if fn is None:
        raise TypeError(f"cannot evaluate the condition {cond} ({type(cond).__name__})")
    out = parts[0]
    for p in parts[1:]:
        out = fn(out, p)
    return out


def first_true(truths: Sequence[object], default: int):
    """Index of the first true entry (scalars or arrays); ``default`` where none is."""
    out = default
    for i in reversed(range(len(truths))):
        out = np.where(truths[i], i, out)
    return out


def extreme(values: Sequence[object], is_max: bool):
    """Index of the first largest (``Max``) or smallest (``Min``) value (scalars or arrays)."""
    stacked = np.stack(np.broadcast_arrays(*values))
    return np.argmax(stacked, axis=0) if is_max else np.argmin(stacked, axis=0)


class Memo:
    """Calling the instance on a subexpression computes it once (``_compute``), then reads ``memo``."""

    memo: Dict[sp.Basic, object]

    def __call__(self, e):
        try:
            return self.memo[e]
        except KeyError:
            v = self.memo[e] = self._compute(e)
            return v


class Numbers(Memo):
    """Memoised numeric value of a subexpression from parameter values (plain Python numbers)."""

    def __init__(self, values: Mapping[sp.Symbol, object], forced: Optional[Mapping[sp.Basic, int]] = None):
        self.values = values
        self.forced = forced or {}
        self.memo: Dict[sp.Basic, object] = {}

    def _compute(self, e):
        if e in self.forced:
            k = self.forced[e]
            return k if isinstance(e, Iverson) else self(e.args[k].expr if isinstance(e, sp.Piecewise) else e.args[k])
        if e.is_Symbol:
            try:
                return self.values[e]
            except KeyError:
                raise KeyError(f"no value given for parameter {e}") from None
        if e.is_Integer:
            return int(e)
        if e.is_Number:
            return float(e)
        if e.is_Add:
            return sum(self(a) for a in e.args)
        if e.is_Mul:
            out = 1
            for a in e.args:
                out = out * self(a)
            return out
        if e.is_Pow:
            return self(e.base) ** self(e.exp)
        if isinstance(e, (sp.Max, sp.Min)):
            return (max if isinstance(e, sp.Max) else min)(self(a) for a in e.args)
        if isinstance(e, sp.Piecewise):
            for branch, cond in e.args:
                if self.truth(cond):
                    return self(branch)
            return float("nan")
        if isinstance(e, FloorDiv):
            return self(e.args[0]) // self(e.args[1])
        if isinstance(e, sp.Mod):                                    # a group's fit in an NVLink domain
            return self(e.args[0]) % self(e.args[1])
        if isinstance(e, CeilDiv):
            return math.ceil(self(e.args[0]) / self(e.args[1]))     # as mlsysim: math.ceil(a / b)
        if isinstance(e, Iverson):
            return 1 if self.truth(e.args[0]) else 0
        if isinstance(e, NamedTerm):
            return e.formula(*(self(a) for a in e.args))
        if isinstance(e, sp.logic.boolalg.Boolean):
            return self.truth(e)
        raise TypeError(f"cannot evaluate {type(e).__name__} in {e}")

    def truth(self, cond) -> bool:
        return bool(truth(cond, {a: COMPARE[type(a)](self(a.lhs), self(a.rhs)) for a in atoms_of(cond)}))


class _Resolver(Memo):
    """One bottom-up pass that replaces decisions by their active side (see :func:`resolution`)."""

    def __init__(self, values, choices, relax, freeze, only, collect, rtol, shift=None):
        self.num = Numbers(values) if values is not None else None
        self.shift = shift
        self.given = dict(choices or {})
        self.relax, self.freeze, self.only, self.collect, self.rtol = relax, freeze, only, collect, rtol
        self.chosen: Dict[sp.Basic, int] = {}
        self.conditions: List[sp.Basic] = []
        self.ties: List[Tie] = []
        self.memo: Dict[sp.Basic, sp.Basic] = {}

    def _compute(self, e):
        if isinstance(e, DECISIONS) and (self.only is None or self.only(e)):
            return self._decide(e)
        if isinstance(e, (FloorDiv, CeilDiv)):
            if self.relax:
                q = self(e.args[0]) / self(e.args[1])
                if self.shift is None:
                    return q
                return q + self.shift.setdefault(e, sp.Dummy(f"delta_{len(self.shift)}", real=True))
            if self.freeze:
                k = sp.Integer(self._numbers(e)(e))
                a, b = self(e.args[0]), self(e.args[1])
                if self.collect and not (a.is_Number and b.is_Number):
                    self._condition(sp.Eq(e.func(a, b), k, evaluate=False))
                return k
        if isinstance(e, sp.logic.boolalg.Boolean) or not e.args:
            return e
        return e.func(*(self(a) for a in e.args))

    def _numbers(self, e):
        if self.num is None:
            raise ValueError(f"no parameter values given to resolve {e}")
        return self.num

    def _choose(self, d) -> int:
        if d in self.given:
            return int(self.given[d])
        num = self._numbers(d)
        if isinstance(d, (sp.Max, sp.Min)):
            vals = [num(a) for a in d.args]
            k = int(extreme(vals, isinstance(d, sp.Max)))
            tied = tuple(i for i, v in enumerate(vals) if near(v, vals[k], self.rtol))
            if len(tied) > 1:
                self.ties.append(Tie(d, None, tied))
            return k
        conds = [d.args[0]] if isinstance(d, Iverson) else [c for _, c in d.args]
        for i, c in enumerate(conds):
            for a in atoms_of(c):
                if isinstance(a, ORDERED) and near(num(a.lhs), num(a.rhs), self.rtol):
                    self.ties.append(Tie(d, a))
            if num.truth(c):
                return (1 if isinstance(d, Iverson) else i)
        return 0 if isinstance(d, Iverson) else len(conds) - 1

    def _decide(self, d):
        k = self.chosen[d] = self._choose(d)
        if isinstance(d, (sp.Max, sp.Min)):
            if self.collect:
                rel = sp.GreaterThan if isinstance(d, sp.Max) else sp.LessThan
                for j, a in enumerate(d.args):
                    if j != k:
                        self._condition(rel(self(d.args[k]), self(a)))
            return self(d.args[k])
        if isinstance(d, Iverson):
            if self.collect:
                c = self._cond(d.args[0])
                self._condition(c if k else sp.Not(c))
            return sp.Integer(k)
        if self.collect:
            for j, (_, c) in enumerate(d.args[:k + 1]):
                c = self._cond(c)
                self._condition(c if j == k else sp.Not(c))
        return self(d.args[k].expr)

    def _cond(self, c):
        if isinstance(c, Relational):
            return c.func(self(c.lhs), self(c.rhs))
        if c.args:
            return c.func(*(self._cond(a) for a in c.args))
        return c

    def _condition(self, c):
        if c is not sp.true and c not in self.conditions:
            self.conditions.append(c)


def resolution(expr: sp.Basic, values: Optional[Mapping[sp.Symbol, object]] = None, relax: bool = False, *,
               freeze: bool = True, choices: Optional[Mapping[sp.Basic, int]] = None,
               only: Optional[Callable[[sp.Basic], bool]] = None, conditions: bool = True,
               rtol: float = KINK_RTOL, shift: Optional[Dict[sp.Basic, sp.Symbol]] = None) -> Resolution:
    """Resolve ``expr`` at a point (see :func:`resolve`), reporting choices and ties too.

    Parameters
    ----------
    expr
        Any expression of the model (``model[name]``, a definition, a derivative ...).
    values
        ``Symbol -> number`` for every free symbol the decisions need.
    relax
        Replace ``FloorDiv(a, b)`` / ``CeilDiv(a, b)`` by ``a/b`` (else freeze them).
    freeze
        With ``relax=False``: True puts the integer value in place, False keeps the
        ``FloorDiv`` node (its derivative is 0 either way; the node keeps the
        expression valid for every integer value).
    choices
        ``decision node -> choice`` given instead of evaluated: the index of the active
        argument (``Max``/``Min``) or branch (``Piecewise``), or 0/1 (Iverson).
    only
        Resolve only the decisions for which ``only(node)`` is true; keep the others.
    conditions
        Collect the conditions (False saves the work).
    shift
        With ``relax=True``: a dict that receives, per integer division, a symbol
        ``delta`` added to its quotient (``a/b + delta``); with ``delta`` set to the
        fractional correction at a point the relaxed expression keeps the exact
        value there while every floor moves like its quotient.
    """
    r = _Resolver(values, choices, relax, freeze, only, conditions, rtol, shift)
    out = r(expr)
    return Resolution(out, tuple(r.conditions), tuple(r.chosen.items()), tuple(r.ties))


def resolve(expr: sp.Basic, values: Mapping[sp.Symbol, object], relax: bool = False):
    """``(smooth_expr, conditions)``: ``expr`` in the regime of the point ``values``.

    Every ``Max``/``Min`` becomes its active argument, every ``Piecewise`` its
    active branch, every Iverson bracket 0 or 1, every ``FloorDiv``/``CeilDiv``
    its integer value (``relax=True``: the real quotient ``a/b``). ``conditions``
    are the relations that hold at the point and select this regime, in terms of
    the resolved sides. Named cost terms (``RingAllReduce`` ...) are kept; expand
    them with ``.doit()``.

    Examples
    --------
    >>> import sympy as sp
    >>> from mlsysim_sym.terms.base import FloorDiv
    >>> n, g = sp.symbols("n g", positive=True, integer=True)
    >>> resolve(sp.Max(1, FloorDiv(n, g)), {n: 12, g: 5})
    (2, (Eq(FloorDiv(n, g), 2),))
    >>> resolve(sp.Max(1, FloorDiv(n, g)), {n: 12, g: 5}, relax=True)
    (n/g, (n/g >= 1,))
    """
    r = resolution(expr, values, relax)
    return r.expr, r.conditions


def evaluate(expr: sp.Basic, values: Mapping[sp.Symbol, object]):
    """The value of any model expression at ``values`` (plain Python numbers: exact integer
    division, named cost terms through their formula; a condition gives a bool)."""
    return Numbers(values)(expr)
