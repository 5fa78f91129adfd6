"""Simplification that works on this model: short forms that never crash and never grow.

``sympy.simplify`` is no use here. It crashes on a relation that contains a
``Max`` (``simplify(Eq(Max(1, g/t), 1))`` raises, sympy#17354). Where it does run,
it takes about 20 s and makes the step time four times larger. ``cancel`` can
hang. What this module does instead:

* :func:`shorten` tries a few cheap rewrites of one expression (``together``,
  ``factor_terms``, ``factor_terms`` per term, ``collect`` by the book's symbols)
  and keeps the smallest by ``count_ops``. The input is the first candidate, so
  the result is never larger. A candidate that raises is skipped.
* :func:`shorten_deep` does the same to every smooth piece between the
  decisions (``Max``, ``Piecewise``, floor divisions, cost terms), and
  :func:`simplify_model` applies it to every quantity of a model.
* :func:`operating_point` resolves the model at one configuration of
  ``solve()``. Every ``Max``/``Min``/``Piecewise``/Iverson bracket becomes its
  active side (:func:`mlsysim_sym.regime.resolution`). Floor divisions are kept,
  so the forms hold at every integer point of the regime. The 0/1 switches
  (ZeRO stage, LoRA, recomputation, overlap) are set to their values. Each
  quantity then has a short per-regime form, in earlier quantities
  (:attr:`RegimeForm.structured`) and closed in parameters
  (:meth:`OperatingPoint.closed`), with the conditions that keep the regime
  stated beside it.

Examples
--------
>>> import sympy as sp
>>> from mlsysim_sym.simplify import shorten
>>> a, b, c = sp.symbols("a b c", positive=True)
>>> shorten(a * b + a * c)
a*(b + c)
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Dict, FrozenSet, Iterable, Mapping, Optional, Sequence, Tuple

import sympy as sp
from sympy.core.relational import Relational

from .model import StepTimeModel, Variant, build_model
from .notation import parameter_entries
from .regime import resolution
from .symbols import PARAMS
from .terms.base import CeilDiv, FloorDiv, Iverson, NamedTerm

#: Nodes that stop a smooth piece: their arguments are shortened one by one.
_STOPS = (sp.Max, sp.Min, sp.Piecewise, Iverson, FloorDiv, CeilDiv, NamedTerm, sp.floor, sp.ceiling)

#: Parameters that are 0/1 switches (or the ZeRO stage): fixed inside a regime.
FLAGS: Tuple[sp.Symbol, ...] = tuple(p.symbol for p in PARAMS.values() if p.kind == "flag")

#: Integer quantities of the decomposition, kept by name in readable closed forms.
DECOMPOSITION: Tuple[str, ...] = ("N", "G", "dp", "lb", "ifd", "mb", "L_stage", "rpn", "nodes_dp", "L_tp")


def size(expr) -> Tuple[int, int]:
    """``(count_ops, length of str)``: the measure :func:`shorten` minimises."""
    return sp.count_ops(expr), len(str(expr))


def termwise(expr: sp.Basic) -> sp.Basic:
    """``factor_terms`` of each term of a sum: ``2 alpha (N - 1)`` rather than ``alpha (2 N - 2)``."""
    return sp.Add(*(sp.factor_terms(t) for t in sp.Add.make_args(expr)))


def _book_symbols(expr) -> Tuple[sp.Symbol, ...]:
    return tuple(e.symbol for e in parameter_entries() if e.book and e.symbol in expr.free_symbols)


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


@lru_cache(maxsize=None)
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
    keep = set(keep) - {name}
    sub: Dict[sp.Symbol, sp.Basic] = {}
    for n in model:
        q = model.quantity(n)
        if n not in keep:
            sub[q.symbol] = _closed_terms(q.definition.xreplace(sub))
        if n == name:
            return sub[q.symbol]
    raise KeyError(name)


def floor_depth(expr: sp.Basic) -> int:
    """How deeply floor and ceiling divisions nest in ``expr`` (0: none)."""
    inner = max((floor_depth(a) for a in expr.args), default=0)
    return inner + 1 if isinstance(expr, (FloorDiv, CeilDiv)) else inner


# --------------------------------------------------------------------------------------
# Per regime
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RegimeForm:
    """One quantity at an operating point.

    ``resolved``: the definition with its decisions resolved and flags set (in
    earlier quantities); ``structured``: the same, shortened; ``conditions``: the
    relations (among earlier quantities and parameters) that select this quantity's
    branch, true at the point; ``value``: its value there.
    """

    name: str
    symbol: sp.Symbol
    resolved: sp.Basic
    structured: sp.Basic
    conditions: Tuple[sp.Basic, ...]
    value: object
    choices: Tuple[int, ...] = ()


@dataclass
class OperatingPoint:
    """The model resolved at one configuration: a :class:`RegimeForm` per quantity.

    ``values`` holds every parameter and every quantity (by symbol) at the point.
    """

    model: StepTimeModel
    params: Dict[sp.Symbol, object]
    values: Dict[sp.Symbol, object]
    forms: Dict[str, RegimeForm]
    _closed: Dict[Tuple[str, FrozenSet[str], bool], sp.Basic] = field(default_factory=dict, repr=False)

    def __getitem__(self, name: str) -> RegimeForm:
        return self.forms[name]

    def value(self, name: str):
        return self.forms[name].value

    @property
    def signature(self) -> Tuple[Tuple[str, Tuple[int, ...]], ...]:
        """Which side every decision takes, and the flags: equal signatures, same regime."""
        flags = tuple(("flag:" + f.name, (self.params[f],)) for f in FLAGS if f in self.params)
        return flags + tuple((n, f.choices) for n, f in self.forms.items() if f.choices)

    def closure(self, name: str) -> Tuple[str, ...]:
        """``name`` and every quantity its definition needs, in model order."""
        by_symbol = {self.model.quantity(n).symbol: n for n in self.model}
        need, todo = set(), [name]
        while todo:
            n = todo.pop()
            if n not in need:
                need.add(n)
                todo.extend(by_symbol[s] for s in self.forms[n].resolved.free_symbols if s in by_symbol)
        return tuple(n for n in self.model if n in need)

    def conditions(self, name: str) -> Tuple[sp.Basic, ...]:
        """Every condition of the regime of ``name`` (its own and those of the quantities it needs)."""
        out = []
        for n in self.closure(name):
            out.extend(c for c in self.forms[n].conditions if c not in out)
        return tuple(out)

    def closed(self, name: str, keep: Iterable[str] = (), simplified: bool = True) -> sp.Basic:
        """``name`` in this regime, expanded down to parameters and the quantities ``keep``.

        Cost terms are expanded; ``simplified`` shortens the result
        (:func:`shorten_deep`, never larger than the unsimplified form).
        """
        key = (name, frozenset(keep), simplified)
        if key not in self._closed:
            if simplified:
                out = shorten_deep(self.closed(name, keep, simplified=False))
            else:
                sub = {}
                for n in self.closure(name):
                    f = self.forms[n]
                    if n not in key[1] or n == name:
                        sub[f.symbol] = _closed_terms(f.resolved.xreplace(sub))
                out = sub[self.forms[name].symbol]
            self._closed[key] = out
        return self._closed[key]


def _closed_terms(expr):
    return expr.replace(lambda e: isinstance(e, NamedTerm), lambda e: e.doit())


def _number(expr, values):
    v = expr.xreplace({s: values[s] for s in expr.free_symbols}).doit()
    if v is sp.true or v is sp.false:
        return bool(v)
    if isinstance(v, sp.Integer):
        return int(v)
    return float(v)


def _sympy_value(v):
    if isinstance(v, bool):
        return sp.true if v else sp.false
    if isinstance(v, int):
        return sp.Integer(v)
    if isinstance(v, float) and v.is_integer() and abs(v) < 2 ** 53:
        return sp.Integer(int(v))
    return sp.Float(v, 17)


def tidy(cond):
    """A condition as it reads best: a number on the right, negations pushed into the relations."""
    if isinstance(cond, Relational) and cond.lhs.is_Number and not cond.rhs.is_Number:
        return cond.reversed
    if isinstance(cond, sp.Not):
        return cond.to_nnf()
    return cond


def _trivial(cond) -> bool:
    """True for a condition that holds at every point: ``ceil(a/b) >= 1`` with ``a, b > 0``, or one
    that sympy's assumptions prove (never ``simplify``)."""
    if cond is sp.true:
        return True
    if isinstance(cond, (sp.GreaterThan, sp.LessThan)):
        big, small = (cond.lhs, cond.rhs) if isinstance(cond, sp.GreaterThan) else (cond.rhs, cond.lhs)
        if isinstance(big, CeilDiv) and small == 1 and all(a.is_positive for a in big.args):
            return True
        return (big - small).is_nonnegative is True
    return False


def _choices(res) -> Tuple[int, ...]:
    return tuple(int(k) for _, k in res.choices)


def operating_point(values: Mapping[sp.Symbol, object], variant: Variant = Variant()) -> OperatingPoint:
    """Resolve every quantity of ``build_model(variant)`` at the parameter values ``values``."""
    m = build_model(variant)
    params = dict(values)
    flags = {f: _sympy_value(params[f]) for f in FLAGS if f in params}
    exact = {s: _sympy_value(v) for s, v in params.items() if v is not None}
    forms: Dict[str, RegimeForm] = {}
    for name in m:
        q = m.quantity(name)
        res = resolution(q.definition, exact, freeze=False)
        value = _number(res.expr, exact)
        exact[q.symbol] = _sympy_value(value)
        used = [f for f in FLAGS if f in q.definition.free_symbols]
        resolved = res.expr.xreplace(flags)
        conds = [c.xreplace(flags) for c in res.conditions]
        conds = [tidy(c) for c in conds if not _trivial(c)]
        conds += [sp.Eq(f, flags[f]) for f in used if f in flags]
        forms[name] = RegimeForm(name, q.symbol, resolved, shorten_deep(resolved), tuple(conds), value,
                                 _choices(res))
    vals = {s: (bool(v) if isinstance(v, sp.logic.boolalg.BooleanAtom) else
                int(v) if isinstance(v, sp.Integer) else float(v)) for s, v in exact.items()}
    return OperatingPoint(m, params, vals, forms)


def solve_values(model, fleet, **kwargs) -> Tuple[Variant, Dict[sp.Symbol, object]]:
    """The variant and parameter values of one ``DistributedModel().solve(model, fleet, **kwargs)`` call.

    Unspecified keywords take ``solve()``'s defaults; ``precision`` selects the
    element size and peak rate.
    """
    from .inputs import RUN_SYMBOLS, parameter_values, resolve_precision
    from .solver import DistributedModel, as_fleet, as_workload

    sig = inspect.signature(DistributedModel.solve)
    unknown = set(kwargs) - set(sig.parameters)
    if unknown:
        raise TypeError(f"unknown solve() keywords: {', '.join(sorted(unknown))}")
    args = {k: p.default for k, p in sig.parameters.items() if k in RUN_SYMBOLS}
    args.update({k: v for k, v in kwargs.items() if k in RUN_SYMBOLS})
    key, _ = resolve_precision(kwargs.get("precision", sig.parameters["precision"].default))
    return parameter_values(as_workload(model), as_fleet(fleet), key, **args)


def operating_point_of(model, fleet, **kwargs) -> OperatingPoint:
    """:func:`operating_point` of one ``solve()`` configuration (see :func:`solve_values`)."""
    variant, values = solve_values(model, fleet, **kwargs)
    return operating_point(values, variant)


def evaluate(expr: sp.Basic, values: Mapping[sp.Symbol, object]):
    """The value of any model expression at ``values`` (exact integers, 17-digit floats)."""
    exact = {s: _sympy_value(v) for s, v in values.items() if v is not None}
    return _number(_closed_terms(expr), exact)


def regime_forms(point: OperatingPoint, names: Optional[Sequence[str]] = None,
                 keep: Iterable[str] = DECOMPOSITION) -> Dict[str, Tuple[sp.Basic, Tuple[sp.Basic, ...]]]:
    """``name -> (short closed form, conditions)`` at a point (default: every quantity)."""
    keep = tuple(keep)
    return {n: (point.closed(n, keep), point.conditions(n)) for n in (names or list(point.model))}
