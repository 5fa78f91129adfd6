"""The model at one operating point: every quantity in its regime, short, with its conditions.

:func:`operating_point` resolves the model at one configuration. Every
``Max``/``Min``/``Piecewise``/Iverson bracket becomes its active side
(:func:`mlsysim_sym.branches.resolution`). Floor divisions are kept, so the forms
hold at every integer point of the regime. The 0/1 switches (ZeRO stage, LoRA,
recomputation, overlap) are set to their values. Each quantity then has a short
per-regime form, in earlier quantities (:attr:`RegimeForm.structured`) and closed
in parameters (:meth:`OperatingPoint.closed`), with the conditions that keep the
regime stated beside it; values come from the one exact evaluator
(:class:`mlsysim_sym.branches.Numbers`).

Examples
--------
>>> from mlsysim_sym.operating_point import operating_point_of
>>> p = operating_point_of("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
>>> p["T_node"].structured, p.value("dp")
(T_compute + T_overhead, 8)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, Mapping, Optional, Sequence, Tuple

import sympy as sp
from sympy.core.relational import Relational

from . import notation
from .display import WIDTH, html_table, quantity, shorten, text_table, wrap
from .arguments import checked, describe
from .model import StepTimeModel, Variant, build_model, expand_in_order
from .printing import latex
from .branches import Numbers, resolution
from .simplify import DECOMPOSITION, shorten_deep
from .symbols import FLAGS
from .terms.base import CeilDiv


__all__ = ["FLAGS", "OperatingPoint", "RegimeForm", "operating_point", "operating_point_of", "regime_forms",
           "tidy"]


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
    configuration: str = ""
    arguments: Optional[object] = field(default=None, repr=False)     # the call's Arguments, when it had one
    _closed: Dict[Tuple[str, FrozenSet[str], bool], sp.Basic] = field(default_factory=dict, repr=False)

    def _rows(self, width: int = 48):
        rows = []
        for n, form in self.forms.items():
            q = self.model.quantity(n)
            rows.append((n, quantity(form.value, q.unit) if not isinstance(form.value, bool) else str(form.value),
                         shorten(notation.plain_expr(form.structured), width), q.meaning))
        return rows

    def __repr__(self) -> str:
        head = wrap(f"OperatingPoint of {self.configuration or 'one configuration'} ({len(self.forms)} quantities)",
                    "")
        # the book's symbols, as the forms print them (M_total, N_DP); a quantity is read by its name, p["M_acc"]
        rows = [(notation.plain(notation.entry(n).latex), v, f) for n, v, f, _ in self._rows()]
        return "\n".join(head + text_table(rows, ("quantity", "value", "form in this regime"), indent="  ",
                                             align="lrl", width=WIDTH)
                         + wrap("read one by its name: p['M_acc'].value, p.value('T_step'); the names: list(p.forms)",
                                "  "))

    def _repr_html_(self) -> str:
        rows = [(n, v, m, f"${latex(self.forms[n].structured)}$") for n, v, _, m in self._rows()]
        return html_table(rows, ("quantity", "value", "meaning", "form in this regime"),
                          caption=f"OperatingPoint of {self.configuration}")

    def __getitem__(self, name: str) -> RegimeForm:
        return self.forms[name]

    def to_dict(self) -> Dict[str, object]:
        """The point for a script (``json.dumps`` takes it): the configuration, and per quantity in model order its
        printed symbol, value (SI units), unit, meaning, its form in this regime (LaTeX and plain text) and the
        conditions that select it."""
        def plain_value(v):
            return bool(v) if isinstance(v, (bool, sp.logic.boolalg.BooleanAtom)) else float(v)
        # the configuration as solve()'s keywords (the call's names: solve(**it) prices it again) and as its line
        return {"configuration": self.arguments.to_dict() if self.arguments is not None else self.configuration,
                "configuration_line": self.configuration,
                "quantities": {n: {"symbol": notation.plain(notation.entry(n).latex), "value": plain_value(f.value),
                                   "unit": self.model.quantity(n).unit, "meaning": self.model.quantity(n).meaning,
                                   "latex": latex(f.structured), "text": notation.plain_expr(f.structured),
                                   "conditions": [notation.plain_expr(c) for c in f.conditions]}
                               for n, f in self.forms.items()}}

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
                forms = [self.forms[n] for n in self.closure(name)]
                skip = {f.symbol for f in forms if f.name in key[1] and f.name != name}
                out = expand_in_order(((f.symbol, f.resolved) for f in forms), skip)[self.forms[name].symbol]
            self._closed[key] = out
        return self._closed[key]


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
    flags = {f: sp.Integer(int(params[f])) for f in FLAGS if f in params}
    env: Dict[sp.Symbol, object] = {s: v for s, v in params.items() if v is not None}
    forms: Dict[str, RegimeForm] = {}
    for name in m:
        q = m.quantity(name)
        res = resolution(q.definition, env, freeze=False)
        value = env[q.symbol] = Numbers(env)(res.expr)
        used = [f for f in FLAGS if f in q.definition.free_symbols]
        resolved = res.expr.xreplace(flags)
        conds = [c.xreplace(flags) for c in res.conditions]
        conds = [tidy(c) for c in conds if not _trivial(c)]
        conds += [sp.Eq(f, flags[f]) for f in used if f in flags]
        forms[name] = RegimeForm(name, q.symbol, resolved, shorten_deep(resolved), tuple(conds), value,
                                 _choices(res))
    return OperatingPoint(m, params, env, forms)


def operating_point_of(model, fleet, **kwargs) -> OperatingPoint:
    """:func:`operating_point` of one ``solve()`` configuration (:func:`mlsysim_sym.inputs.parameters_of`:
    the same checks, warnings and lowering as ``solve()``)."""
    a = checked(model, fleet, kwargs, caller="operating_point_of")
    point = operating_point(a.values, a.variant)
    point.configuration, point.arguments = describe(a, effects=True), a
    return point


def regime_forms(point: OperatingPoint, names: Optional[Sequence[str]] = None,
                 keep: Iterable[str] = DECOMPOSITION) -> Dict[str, Tuple[sp.Basic, Tuple[sp.Basic, ...]]]:
    """``name -> (short closed form, conditions)`` at a point (default: every quantity)."""
    keep = tuple(keep)
    return {n: (point.closed(n, keep), point.conditions(n)) for n in (names or list(point.model))}
