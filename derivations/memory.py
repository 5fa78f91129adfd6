"""Memory per accelerator: the ZeRO stages side by side, activations, buffers, LoRA."""
from __future__ import annotations

from typing import Dict, List

import sympy as sp

from mlsysim_sym import notation
from mlsysim_sym.model import Variant, build_model
from mlsysim_sym.printing import aligned, equation, latex, value_latex
from mlsysim_sym.branches import resolution
from mlsysim_sym.operating_point import operating_point_of
from mlsysim_sym.simplify import shorten_deep
from mlsysim_sym.symbols import sym
from mlsysim_sym.terms.base import Iverson

from .common import EXAMPLES, definition_chain, transformer_model

STAGES = (0, 1, 2, 3)
SHARDED = ("M_weights", "M_grads", "M_optimizer")
PARTS = ("M_weights", "M_grads", "M_optimizer", "M_activations", "M_buffers", "M_acc")


def at_switch(expr, flag: sp.Symbol, value: int) -> sp.Basic:
    """``expr`` with every Iverson bracket on ``flag`` alone resolved at ``flag = value``, shortened."""
    r = resolution(expr, {flag: value}, conditions=False,
                   only=lambda n: isinstance(n, Iverson) and n.free_symbols == {flag})
    return shorten_deep(r.expr)


HEADER = [""] + [rf"{notation.entry('z').latex} = {k}" for k in STAGES]


def _zero_rows(model) -> List[List[str]]:
    rows = []
    for name in SHARDED:
        cells = [(latex(at_switch(model.definition(name), sym.z, k))) for k in STAGES]
        rows.append([(notation.entry(name).latex)] + cells)
    return rows


def _sums(model) -> str:
    """The three sharded parts together at each stage: one case per stage, under the sum (the sum and a
    case on one line are wider than a text column)."""
    total = sum((model.definition(n) for n in SHARDED), sp.S.Zero)
    lhs = " + ".join(notation.entry(n).latex for n in SHARDED)
    cases = r" \\ ".join(rf"{latex(at_switch(total, sym.z, k))} & {notation.entry('z').latex} = {k}"
                          for k in STAGES)
    return "\\begin{aligned}\n" + f"&{lhs} \\\\\n" + rf"&\quad = \begin{{cases}} {cases} \end{{cases}}" \
        + "\n\\end{aligned}"


def _numbers(example) -> List[List[object]]:
    rows = []
    points = {k: operating_point_of(example.model, example.fleet, **dict(example.solve_kwargs, zero_stage=k))
              for k in STAGES}
    for name in PARTS:
        e = notation.entry(name)
        rows.append([(e.latex)] + [(value_latex(points[k].value(name), e.unit)) for k in STAGES])
    return rows


def stage_values(example) -> Dict[int, Dict[str, object]]:
    """``stage -> quantity -> value`` of the example at each ZeRO stage (the numbers of the table)."""
    return {k: {n: operating_point_of(example.model, example.fleet,
                                      **dict(example.solve_kwargs, zero_stage=k)).value(n) for n in PARTS}
            for k in STAGES}


def context() -> Dict[str, object]:
    model = transformer_model()
    generic = build_model(Variant("generic"))
    example = EXAMPLES[0]
    return {
        "definitions": aligned(definition_chain(model, n) for n in PARTS),
        "supporting": aligned(definition_chain(model, n) for n in ("P_shard", "f_train", "ifd", "mb", "L_stage")),
        "header": HEADER,
        "zero_rows": _zero_rows(model),
        "sums": _sums(model),
        "activations": aligned(equation(model.quantity("M_activations").symbol,
                                        at_switch(model.definition("M_activations"), sym.rc, k))
                               + rf" \qquad ({notation.entry('rc').latex} = {k})" for k in (0, 1)),
        "generic": definition_chain(generic, "M_acc", alone=True),
        "example": example,
        "numbers": _numbers(example),
        "fits": definition_chain(model, "feasible", alone=True),
        "f_train": notation.entry("f_train").latex,
    }
