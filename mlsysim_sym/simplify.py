"""Simplification that works on this model: short forms that never crash and never grow.

``sympy.simplify`` is no use here. It crashes on a relation that contains a
``Max`` (``simplify(Eq(Max(1, g/t), 1))`` raises, sympy#17354). Where it does run,
it takes about 20 s and makes the step time four times larger. ``cancel`` can
hang. What this module does instead (sympy only; the model at an operating point
is :mod:`mlsysim_sym.operating_point`):

* :func:`shorten` tries a few cheap rewrites of one expression (``together``,
  ``factor_terms``, ``factor_terms`` per term, ``collect`` by the book's symbols)
  and keeps the smallest by ``count_ops``. The input is the first candidate, so
  the result is never larger. A candidate that raises is skipped.
* :func:`shorten_deep` does the same to every smooth piece between the
  decisions (``Max``, ``Piecewise``, floor divisions, cost terms), and
  :func:`simplify_model` applies it to every quantity of a model.

Examples
--------
>>> import sympy as sp
>>> from mlsysim_sym.simplify import shorten
>>> a, b, c = sp.symbols("a b c", positive=True)
>>> shorten(a * b + a * c)
a*(b + c)
"""
from __future__ import annotations

from typing import Dict, Iterable, Optional, Tuple

import sympy as sp
from sympy.core.relational import Relational

from ._cache import cached_per_arguments
from .model import StepTimeModel, Variant, build_model, expand_in_order
from .symbols import PARAMS
from .terms.base import CeilDiv, FloorDiv, Iverson, NamedTerm

#: Nodes that stop a smooth piece: their arguments are shortened one by one.
_STOPS = (sp.Max, sp.Min, sp.Piecewise, Iverson, FloorDiv, CeilDiv, NamedTerm, sp.floor, sp.ceiling)

#: Integer quantities of the decomposition, kept by name in readable closed forms.
DECOMPOSITION: Tuple[str, ...] = ("N", "G", "dp", "lb", "ifd", "mb", "L_stage", "rpn", "nodes_dp", "L_tp")


def size(expr) -> Tuple[int, int]:
    """``(count_ops, length of str)``: the measure :func:`shorten` minimises."""
    return sp.count_ops(expr), len(str(expr))


def termwise(expr: sp.Basic) -> sp.Basic:
    """``factor_terms`` of each term of a sum: ``2 alpha (N - 1)`` rather than ``alpha (2 N - 2)``."""
    return sp.Add(*(sp.factor_terms(t) for t in sp.Add.make_args(expr)))


def _book_symbols(expr) -> Tuple[sp.Symbol, ...]:
    return tuple(p.symbol for p in PARAMS.values() if p.book and p.symbol in expr.free_symbols)


_REWRITES = (
    ("factor_terms", sp.factor_terms),
    ("termwise", termwise),
    ("together", lambda e: sp.together(e)),
    ("together+factor_terms", lambda e: sp.factor_terms(sp.together(e))),
    ("collect", lambda e: sp.collect(e, _book_symbols(e)) if _book_symbols(e) else e),
)


def shorten(expr: sp.Basic) -> sp.Basic:
    """The smallest of a few cheap rewrites of ``expr`` (``expr`` itself on a tie).

    Never raises on a rewrite's failure and never returns a larger expression
    (:func:`size`). Relations and logic are returned unchanged.
    """
    if not isinstance(expr, sp.Expr) or expr.is_Atom:
        return expr
    best, best_size = expr, size(expr)
    for _, rewrite in _REWRITES:
        try:
            cand = rewrite(expr)
        except Exception:  # noqa: BLE001 - sympy raises assorted errors on Max/Piecewise (sympy#17354)
            continue
        s = size(cand)
        if s < best_size:
            best, best_size = cand, s
    return best


def shorten_deep(expr: sp.Basic, memo: Optional[Dict[sp.Basic, sp.Basic]] = None) -> sp.Basic:
    """:func:`shorten` every smooth piece of ``expr``, inside every decision; never larger.

    Arguments of ``Max``/``Min``, branches and conditions of ``Piecewise``,
    arguments of floor divisions, Iverson brackets and cost terms are shortened
    separately, then the smooth expression around them. ``memo`` shares the work
    between expressions with common parts (the quantities of one model).
    """
    out = _deep(expr, {} if memo is None else memo)
    return out if size(out) <= size(expr) else expr


def _deep(e, memo):
    if e in memo:
        return memo[e]
    if not e.args:
        r = e
    elif isinstance(e, _STOPS) or isinstance(e, (Relational, sp.logic.boolalg.BooleanFunction)):
        r = _rebuild(e, memo)
    else:
        r = _shorten_smooth(_rebuild(e, memo))
    memo[e] = r
    return r


def _shorten_smooth(e):
    """:func:`shorten` of the smooth part of ``e``: every decision inside stands in as a placeholder."""
    stand_in: Dict[sp.Basic, sp.Dummy] = {}

    def hide(x):
        if isinstance(x, _STOPS):
            if x not in stand_in:
                stand_in[x] = sp.Dummy(f"d{len(stand_in)}", **_assumptions(x))
            return stand_in[x]
        if not x.args:
            return x
        return x.func(*(hide(a) for a in x.args))

    skeleton = hide(e)
    short = shorten(skeleton)
    if short is skeleton:
        return e
    return short.xreplace({d: x for x, d in stand_in.items()})


def _assumptions(x) -> Dict[str, bool]:
    if x.is_positive:
        return {"positive": True}
    if x.is_nonnegative:
        return {"nonnegative": True}
    return {"real": True} if x.is_real else {}


def _rebuild(e, memo):
    try:
        if isinstance(e, sp.Piecewise):
            pairs = [(_deep(x, memo), _deep(c, memo)) for x, c in e.args]
            if all(x is a.expr and c is a.cond for (x, c), a in zip(pairs, e.args)):
                return e
            return sp.Piecewise(*pairs)
        args = [_deep(a, memo) for a in e.args]
        if all(a is b for a, b in zip(args, e.args)):
            return e
        if isinstance(e, (sp.Max, sp.Min)):
            return e.func(*args, evaluate=False)
        return e.func(*args)
    except Exception:  # noqa: BLE001 - a rebuilt node that sympy refuses keeps its old form
        return e


@cached_per_arguments(lambda variant, closed: (variant, bool(closed)))
def simplify_model(variant: Variant = Variant(), closed: bool = False) -> Dict[str, sp.Basic]:
    """Every quantity of ``build_model(variant)`` shortened (:func:`shorten_deep`).

    ``closed=True`` starts from :meth:`~mlsysim_sym.model.StepTimeModel.closed_form`
    (cost terms expanded) instead of ``model[name]``. No result is larger than its
    input, and none raises.
    """
    m = build_model(variant)
    memo: Dict[sp.Basic, sp.Basic] = {}
    return {n: shorten_deep(m.closed_form(n) if closed else m[n], memo) for n in m}


def expand_keeping(model: StepTimeModel, name: str, keep: Iterable[str] = ()) -> sp.Basic:
    """``model.closed_form(name)`` with the quantities ``keep`` left as symbols (all decisions kept)."""
    names = list(model)
    if name not in names:
        raise KeyError(name)
    upto = [model.quantity(n) for n in names[:names.index(name) + 1]]
    keep = set(keep) - {name}
    skip = {q.symbol for q in upto if q.name in keep}
    return expand_in_order(((q.symbol, q.definition) for q in upto), skip)[upto[-1].symbol]


def floor_depth(expr: sp.Basic) -> int:
    """How deeply floor and ceiling divisions nest in ``expr`` (0: none)."""
    inner = max((floor_depth(a) for a in expr.args), default=0)
    return inner + 1 if isinstance(expr, (FloorDiv, CeilDiv)) else inner
