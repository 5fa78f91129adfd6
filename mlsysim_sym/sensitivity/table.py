"""Display of a sensitivity table: plain text, HTML and LaTeX.

:class:`mlsysim_sym.sensitivity.Sensitivities` prints with :func:`as_text`
(``print(table)``) and shows in notebooks with :func:`as_html` and
:func:`as_latex`. Numbers are given to 6 significant digits (4 in LaTeX); at a
kink a cell shows the left and the right derivative, ``L ... | R ...``.
"""
from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Dict, List, Tuple

from ..display import html_table, text_table
from ..printing import latex

if TYPE_CHECKING:        # annotations only: the table module is imported by .point
    from .point import DiscreteRow, Row, Sensitivities


def _num(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    return f"{x:.6g}"


def _cells(r: "Row") -> Tuple[str, str]:
    if r.kink is None:
        return _num(r.derivative), _num(r.elasticity)
    return (f"L {_num(r.left.derivative)} | R {_num(r.right.derivative)}",
            f"L {_num(r.left.elasticity)} | R {_num(r.right.elasticity)}")


def _where(r: "Row") -> str:
    k = f"kink {r.kink}" + (" (jump)" if r.jump else "") if r.kink else ""
    return "; ".join(x for x in (k, r.regime) if x)


def _knob_cells(k: "DiscreteRow", relaxed: Dict[str, "Row"]) -> Tuple[str, str, str]:
    step = lambda s: "-" if s is None else f"{s.value}: {s.delta:+.6g}"  # noqa: E731
    r = relaxed.get(k.knob)
    rel = "-" if r is None else _cells(r)[1] + (f" (kink {r.kink})" if r.kink else "")
    return step(k.down), step(k.up), rel


def as_text(t: "Sensitivities") -> str:
    """The table as text: the rows, then the integer knobs when the table has a ``solve()`` context."""
    head = [f"sensitivities of {t.output} ({t.quantity}) = {t.value:.6g}", "regime: " + ", ".join(t.regime)]
    rows = [("#", "parameter", "value", f"d {t.quantity}/dx", "elasticity", "regime")]
    rows += [(str(i + 1), r.parameter, _num(float(r.value)), *_cells(r), _where(r)) for i, r in enumerate(t.rows)]
    out = head + [""] + _columns(rows)
    if t.context is not None:
        krows = [("knob", "value", "previous: change", "next: change", "relaxed elasticity", "skipped")]
        relaxed = {r.parameter: r for r in t.relaxed}
        for k in t.discrete:
            skipped = "; ".join(f"{v}: {why}" for v, why in k.skipped[:2]) + (" ..." if len(k.skipped) > 2 else "")
            krows.append((k.knob, str(k.value), *_knob_cells(k, relaxed), skipped))
        out += ["", "integer knobs: exact change of the output at the neighbouring valid value (through solve()); "
                "relaxed: floors and ceilings replaced by their quotient, fleet held fixed"] + _columns(krows)
    return "\n".join(out)


def _columns(rows) -> List[str]:
    return text_table(rows, align="l" * len(rows[0]))


def as_html(t: "Sensitivities") -> str:
    """The continuous rows as an HTML table (``_repr_html_``)."""
    e = html.escape
    header = ("#", "parameter", "value", f"d {t.quantity}/dx", "elasticity", "regime")
    rows = [(str(i + 1), r.parameter, _num(float(r.value)), *_cells(r), _where(r)) for i, r in enumerate(t.rows)]
    return (f"<p><b>{e(t.output)}</b> = {e(_num(t.value))}; regime: {e(', '.join(t.regime))}</p>"
            + html_table(rows, header))


def _tex_num(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return r"\text{--}"
    m, _, ex = f"{x:.4g}".partition("e")
    return f"{m} \\times 10^{{{int(ex)}}}" if ex else m


def as_latex(t: "Sensitivities") -> str:
    """The continuous rows as a LaTeX array in the book's notation (``_repr_latex_``), printed by the
    package's one printer (:func:`mlsysim_sym.printing.latex`)."""
    lines = []
    for i, r in enumerate(t.rows):
        if r.kink is None:
            d, el = _tex_num(r.derivative), _tex_num(r.elasticity)
        else:
            d = f"{_tex_num(r.left.derivative)} \\mid {_tex_num(r.right.derivative)}"
            el = f"{_tex_num(r.left.elasticity)} \\mid {_tex_num(r.right.elasticity)}"
        lines.append(f"{i + 1} & {latex(r.symbol)} & \\text{{{r.parameter.replace('_', ' ')}}} & "
                     f"{_tex_num(float(r.value))} & {d} & {el} \\\\")
    return ("$\\begin{array}{rllrrr}\\# & & \\text{parameter} & x & \\partial y/\\partial x & "
            "\\partial \\ln y/\\partial \\ln x \\\\ \\hline " + " ".join(lines) + "\\end{array}$")
