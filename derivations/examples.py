"""Worked examples: the model at three real configurations, every intermediate value shown.

The numbers are the model's: each quantity's definition, resolved at the point
(:func:`mlsysim_sym.operating_point.operating_point_of`), evaluated in order; they are
checked here against the compiled model and in ``tests/test_docs.py`` against
mlsysim 0.3.0's ``DistributedModel().solve`` for the same configuration.
"""
from __future__ import annotations

import math
from typing import Dict, List, Sequence

import sympy as sp

from mlsysim_sym import notation
from mlsysim_sym.compile import evaluate
from mlsysim_sym.printing import chain, latex, number, split_equation, value_latex
from mlsysim_sym.operating_point import OperatingPoint, operating_point_of
from mlsysim_sym.simplify import DECOMPOSITION

from .common import EXAMPLES, Example

#: Headline quantities in closed form, and the quantities each keeps by name.
HEADLINES = (
    ("T_compute", ()), ("T_memory", ()), ("T_node", ()), ("T_dp", ()), ("T_tp", ()), ("T_ep", ()),
    ("T_bubble", ("T_node",)), ("T_step", ("T_node",)), ("M_acc", ()),
    ("scaling_efficiency", ("T_node", "T_step")), ("mfu", ("T_step",)),
)
#: Equations shown with their numbers substituted.
SUBSTITUTED = ("T_node", "T_dp", "T_sync", "T_step", "M_acc", "scaling_efficiency", "mfu")


def point(example: Example) -> OperatingPoint:
    """The model resolved at the example's configuration, cross-checked against the compiled model."""
    p = operating_point_of(example.model, example.fleet, **example.solve_kwargs)
    names = tuple(n for n in p.model if n != "feasible")
    compiled = evaluate(p.model.variant, names, p.params)
    for n in names:
        a, b = float(p.value(n)), float(compiled[n])
        if not math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-300):
            raise AssertionError(f"{example.key}: {n} resolved {a!r} != compiled {b!r}")
    return p


def _value(p: OperatingPoint, name: str) -> str:
    return value_latex(p.value(name), notation.entry(name).unit)


def substituted(p: OperatingPoint, name: str) -> str:
    """``q = structured form = the same with every symbol's value = value``."""
    f = p[name]
    names = {}
    for s in f.structured.free_symbols:
        n = s.name
        unit = notation.entry(n).unit if n in notation.table() else "1"
        names[s] = value_latex(p.values[s], unit)
    if f.structured.is_Symbol:
        return chain([f.symbol, f.structured, _value(p, name)])
    numbers = latex(f.structured, symbol_names=names, mul_symbol="times")
    return chain([f.symbol, f.structured, numbers, _value(p, name)])


def _conditions(p: OperatingPoint, names: Sequence[str]) -> List[str]:
    out: List[sp.Basic] = []
    for n in names:
        out.extend(c for c in p.conditions(n) if c not in out)
    return [latex(c) for c in out]


def _config_rows(example: Example) -> List[List[str]]:
    return [[f"`{k}`", f"`{v!r}`"] for k, v in example.kwargs]


#: Rows of the sensitivity table of each example (largest |elasticity| first).
SENSITIVITY_ROWS = 8


def sensitivity_rows(example: Example) -> List[List[str]]:
    """The fleet-MFU sensitivities at the example (``mlsysim_sym.sensitivities``), as LaTeX cells:
    parameter, value, elasticity (both one-sided values at a kink)."""
    import warnings

    from mlsysim_sym import sensitivities
    from mlsysim_sym.symbols import PARAMS

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = sensitivities(example.model, example.fleet, output="mfu", **example.solve_kwargs)
    rows = []
    for r in table.rows[:SENSITIVITY_ROWS]:
        if r.kink is None:
            elasticity = number(r.elasticity)
        else:
            elasticity = r"%s \,/\, %s" % (number(r.left.elasticity), number(r.right.elasticity))
        rows.append([latex(r.symbol), value_latex(r.value, PARAMS[r.symbol.name].unit), elasticity])
    return rows


def example_context(example: Example) -> Dict[str, object]:
    p = point(example)
    rows = []
    for n in p.model:
        e = notation.entry(n)
        rows.append({"meaning": e.meaning, "symbol": e.latex, "form": latex(p[n].structured),
                     "value": _value(p, n)})
    closed = [{"name": n, "equation": split_equation(p[n].symbol, p.closed(n, DECOMPOSITION + keep)),
               "conditions": _conditions(p, [n])} for n, keep in HEADLINES]
    return {
        "key": example.key, "title": example.title, "model": example.model, "fleet": example.fleet,
        "call": example.call(), "kwargs": list(example.kwargs), "rows": rows, "closed": closed,
        "substituted": [{"name": n, "equation": substituted(p, n)} for n in SUBSTITUTED],
        "regime": _conditions(p, list(p.model)),
        "values": {n: p.value(n) for n in p.model},
        "sensitivities": sensitivity_rows(example),
    }


def context() -> Dict[str, object]:
    return {"examples": [example_context(e) for e in EXAMPLES]}
