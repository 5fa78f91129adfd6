"""Display of a sensitivity table: plain text, HTML and LaTeX, for people.

:class:`mlsysim_sym.sensitivity.Sensitivities` prints with :func:`as_text`
(``print(table)``, lines of at most 80 characters) and shows in notebooks with
:func:`as_html` and :func:`as_latex`. Parameters are named in words and by their
symbol in the book's notation; values carry units (``989.4 TFLOP/s``); a
derivative is given per the unit its parameter is printed in (per TFLOP/s there;
the text says it once, the HTML in each cell). The
regime a row's derivative holds in is a letter that the header spells out.
Parameters that do not move the output at this point are listed on one line, and
a kink is explained under the table.
"""
from __future__ import annotations

import html
import math
import re
from typing import TYPE_CHECKING, Dict, List, Tuple

from .. import notation
from ..outputs import output
from ..display import PREFIXED, WIDTH, html_table, number, quantity, si_prefix, text_table, wrap
from ..printing import latex
from ..schedules import RULES
from ..symbols import BY_SYMBOL, by_argument

if TYPE_CHECKING:        # annotations only: the table module is imported by .point
    from .point import DiscreteRow, Row, Sensitivities

def output_name(t: "Sensitivities") -> str:
    """The output in words and symbol: ``fleet MFU``, ``step time T_step`` (:func:`mlsysim_sym.outputs.words`)."""
    e = notation.entry(t.quantity)
    o = output(t.quantity)
    words = o.words if o is not None and o.quantity == t.quantity and o.label else e.meaning.split(",")[0]
    return words if t.quantity.startswith("mfu") else f"{words} {notation.plain(e.latex)}"


def _out_unit(t: "Sensitivities") -> str:
    return notation.entry(t.quantity).unit


def parameter_name(symbol) -> str:
    """A parameter in words and its book symbol: ``fabric bandwidth β_fab``."""
    p = BY_SYMBOL[symbol]
    return f"{p.words} {p.text}" if p.label else p.text


def _elastic(e) -> str:
    if e is None or (isinstance(e, float) and math.isnan(e)):
        return "-"
    return "0" if e == 0 else f"{e:+.3g}"


def _elasticity(r: "Row") -> str:
    if r.kink is None:
        return _elastic(r.elasticity) + (" \u2021" if _end(r) else "")      # its note: _end_note
    return f"{_elastic(r.left.elasticity)} | {_elastic(r.right.elasticity)} *"


def _per(d, value, unit: str, out_unit: str, per: bool = True) -> str:
    """A derivative per the unit the parameter prints in: ``+0.0382 per GB/s`` (``+0.0382`` without ``per``)."""
    if d is None or (isinstance(d, float) and math.isnan(d)):
        return "-"
    if d == 0:
        return "0"
    scale, prefix = si_prefix(value, unit)
    head = number(d * scale, 3) if out_unit in ("1", "") else quantity(d * scale, out_unit, 3)
    if not head.startswith("-"):
        head = "+" + head
    return head + (f" per {prefix}{PREFIXED[unit]}" if unit in PREFIXED and per else "")


def _derivative(r: "Row", out_unit: str, per: bool = True) -> str:
    unit = BY_SYMBOL[r.symbol].unit
    if r.kink is None:
        return _per(r.derivative, float(r.value), unit, out_unit, per)
    return f"{_per(r.left.derivative, float(r.value), unit, out_unit, per)} | " \
           f"{_per(r.right.derivative, float(r.value), unit, out_unit, per)}"


def _value(symbol, value) -> str:
    return quantity(float(value), BY_SYMBOL[symbol].unit)


def _letters(t: "Sensitivities") -> Dict[str, str]:
    return {label: "abcdefghijklmnopqrstuvwxyz"[i] for i, label in enumerate(t.regime)}


def _regime_cell(r: "Row", letters: Dict[str, str]) -> str:
    return " ".join(letters[x] for x in (s.strip() for s in r.regime.split(", ")) if x in letters)


#: The smallest elasticity a table shows as an effect: below it, the rounding residue of a derivative whose terms
#: cancel (a routed-expert parameter count read only where it cancels gave +5e-18), far below any effect a model's
#: inputs are known to.
NO_EFFECT = 1e-12


def _moves(r: "Row") -> bool:
    es = [r.elasticity] if r.kink is None else [r.left.elasticity, r.right.elasticity]
    return any(e is not None and (math.isnan(e) or abs(e) > NO_EFFECT) for e in es)


def _kink_note(r: "Row", out: str) -> List[str]:
    left, right = r.left.elasticity, r.right.elasticity
    down = f"leaves {out} unchanged" if left == 0 else f"changes {out} by {-left:+.3g} % per 1 %"
    up = f"leaves {out} unchanged" if right == 0 else f"changes {out} by {right:+.3g} % per 1 %"
    jump = "; the output itself jumps there" if r.jump else ""
    text = (f"* {parameter_name(r.symbol)} sits at a kink ({r.kink}): lowering it {down}, raising it {up}"
            f"{jump}; ranked by the move that improves {out}" if r.one_sided or r.jump else
            f"* {parameter_name(r.symbol)} sits at a kink ({r.kink}): below | above{jump}")
    return wrap(text + ".", "  ")


def _end(r: "Row"):
    """Where a row's parameter sits at a closed end of its range (an overlap efficiency of 1): ``(where, way, sign,
    range)``, else None."""
    p = BY_SYMBOL.get(r.symbol)
    rg = getattr(p, "range", None)
    if rg is None or r.kink is not None or r.elasticity is None or math.isnan(r.elasticity):
        return None
    for end, open_, where, way, sign in ((rg.hi, rg.hi_open, "top", "lowered", -1),
                                         (rg.lo, rg.lo_open, "bottom", "raised", 1)):
        if not open_ and math.isfinite(end) and float(r.value) == end:
            return where, way, sign, rg
    return None


def _end_note(r: "Row", out: str) -> List[str]:
    """A note for a row whose parameter sits at a closed end of its range, marked \u2021 beside its elasticity: it
    can move one way only, and what that way does."""
    end = _end(r)
    if end is None:
        return []
    where, way, sign, rg = end
    what = f"leaves {out} unchanged" if r.elasticity == 0 else f"changes {out} by {sign * r.elasticity:+.3g} % per 1 %"
    return wrap(f"\u2021 {parameter_name(r.symbol)} is at the {where} of its range ({rg.text}): it can only be "
                f"{way}, which {what}.", "  ")


def _rows(t: "Sensitivities", per: bool = True) -> Tuple[List[Tuple[str, ...]], List["Row"]]:
    """The rows that move the output, and those that do not; ``per``: each derivative names its unit."""
    letters, out_unit = _letters(t), _out_unit(t)
    rows, still = [], []
    for r in t.rows:
        if not _moves(r):
            still.append(r)
            continue
        rows.append((str(len(rows) + 1), parameter_name(r.symbol), _value(r.symbol, r.value), _elasticity(r),
                     _derivative(r, out_unit, per), _regime_cell(r, letters)))
    return rows, still


_HEADER = ("#", "parameter", "value", "elasticity", "derivative", "regime")


def _header(t: "Sensitivities", per: bool = True) -> List[str]:
    out = output_name(t)
    lines = [f"sensitivities of {out} = {quantity(t.value, _out_unit(t))}"]
    if t.configuration:
        lines += wrap(t.configuration, "  ")
    letters = _letters(t)
    if letters:
        lines += wrap("regime: " + ", ".join(f"({c}) {x}" for x, c in letters.items()), "  ")
    unit = "unit of the parameter" if per else "unit of the value column (per GB/s where it says GB/s)"
    lines += wrap(f"elasticity: % change of {out} per 1 % change of the parameter; derivative: change of "
                  f"{out} per {unit}, in this regime", "  ")
    return lines


#: The smallest value of a knob (1 for the others): a neighbour below it is not worth a line.
_FLOOR = {"zero_stage": 0}


def _skipped(k: "DiscreteRow") -> str:
    """``7, 9 (Infeasible 4D Parallelism)``: the values the solver rejected, grouped by reason."""
    groups: Dict[str, List[str]] = {}
    for v, why in k.skipped:
        if v < _FLOOR.get(k.knob, 1):
            continue
        why = re.sub(rf"^{re.escape(k.knob)} \({re.escape(str(v))}\) (?:[<>]=? \S+ )?", "", why)  # its value: listed
        short = re.sub(rf"^{re.escape(k.knob)} ", "", why.split(":")[0] if ":" in why[:40] else why)
        short = re.sub(r", got .*$", "", short).rstrip(".")
        groups.setdefault(short, []).append(str(v))
    return "; ".join(f"{', '.join(vs)} ({why})" for why, vs in groups.items())


def _knob_rows(t: "Sensitivities") -> Tuple[List[Tuple[str, ...]], List[str]]:
    out_unit = _out_unit(t)
    relaxed = {r.parameter: r for r in t.relaxed}
    change = lambda s: "-" if s is None else f"{s.value}: {_delta(s.delta, out_unit)}" + _marks(s)  # noqa: E731
    rows, skipped = [], []
    for k in t.discrete:
        p = by_argument()[k.knob]
        r = relaxed.get(k.knob)
        rel = "-" if r is None else "kink *" if r.kink is not None else _elastic(r.elasticity)
        rows.append((f"{p.words} {p.text}", str(k.value), change(k.down), change(k.up), rel))
        if any(v >= _FLOOR.get(k.knob, 1) for v, _ in k.skipped):     # below the floor: no news
            skipped.append(f"{p.words}: {_skipped(k)}")
    return rows, skipped


def _knob_kinks(t: "Sensitivities") -> List[str]:
    """A note for each integer knob whose relaxed elasticity has a kink: its two sides."""
    kinked = [r for r in t.relaxed if r.kink is not None and any(k.knob == r.parameter for k in t.discrete)]
    return [line for r in kinked for line in wrap(
        f"* {parameter_name(r.symbol)}, relaxed, sits at a kink ({r.kink}): {_elastic(r.left.elasticity)} "
        f"below, {_elastic(r.right.elasticity)} above.", "  ")]


def _marks(s) -> str:
    """A neighbour's marks: ``†`` where no framework runs its schedule, ``§`` where it does not fit in memory
    (``*`` marks a kink, ``‡`` a parameter at the end of its range: the footnotes' order)."""
    return ("" if s.runnable else " †") + ("" if s.fits else " §")


def _mark_notes(steps) -> List[str]:
    """What the marks of these neighbours mean, for those that carry one."""
    lines = []
    if any(not s.runnable for s in steps):
        lines += wrap(f"† no framework runs the schedule there ({RULES}); priced as solve() prices it", "  ")
    if any(not s.fits for s in steps):
        lines += wrap("§ does not fit in accelerator memory there (its state spills to the host)", "  ")
    return lines


def _delta(d, unit: str) -> str:
    text = number(d, 3) if unit in ("1", "") else quantity(d, unit, 3)
    return text if text.startswith("-") or text == "0" or text.startswith("0 ") else "+" + text


def as_text(t: "Sensitivities") -> str:
    """The table as text (at most :data:`~mlsysim_sym.display.WIDTH` characters a line where the names allow):
    the rows, then the integer knobs when the table has a ``solve()`` context."""
    out = output_name(t)
    rows, still = _rows(t, per=False)
    lines = _header(t, per=False) + [""] + text_table(rows, _HEADER, indent="  ", align="lllrll", width=WIDTH, narrow=1)
    if still:
        lines += wrap("no effect here: " + ", ".join(parameter_name(r.symbol) for r in still), "  ")
    for r in t.rows:
        if r.kink is not None and _moves(r):     # a row the table shows (not one of "no effect here")
            lines += _kink_note(r, out)
        elif _moves(r):
            lines += _end_note(r, out)
    if t.context is not None:
        krows, skipped = _knob_rows(t)
        lines += [""] + wrap(f"integer knobs: exact change of {out} at the neighbouring valid value "
                             f"(re-solved); relaxed: its elasticity with floors and ceilings replaced by their "
                             f"quotient, the fleet held fixed", "  ")
        lines += text_table(krows, ("knob", "value", "below: change", "above: change", "relaxed"),
                            indent="  ", align="lrllr", width=WIDTH) + _knob_kinks(t)
        for s in skipped:
            lines += wrap("skipped " + s, "  ")
        lines += _switch_lines(t, out)
        # the marks of both tables, explained once below them (a switch that changes nothing is not a row)
        lines += _mark_notes([s for k in t.discrete for s in (k.down, k.up) if s is not None]
                             + [w.flipped for w in t.switches if w.flipped is not None and w.flipped.delta != 0])
    return "\n".join(lines)


def _switch_lines(t: "Sensitivities", out: str) -> List[str]:
    """The switches the model reads, each flipped: the exact change of the output (re-solved), largest first."""
    if not t.switches:
        return []
    unit = _out_unit(t)
    still = [w for w in t.switches if w.flipped is not None and w.flipped.delta == 0]
    ranked = sorted((w for w in t.switches if w not in still), key=lambda w: -abs(w.flipped.relative)
                    if w.flipped is not None and math.isfinite(w.flipped.relative) else 0.0)
    rows = [(f"{by_argument()[w.switch].words} ({w.switch})", "on" if w.value else "off",
             "refused" if w.flipped is None else _delta(w.flipped.delta, unit) + _marks(w.flipped),
             "-" if w.flipped is None else f"{w.flipped.relative:+.1%}") for w in ranked]
    lines = [""] + wrap(f"switches: exact change of {out} with each switch the model reads flipped (re-solved)", "  ")
    lines += text_table(rows, ("switch", "now", "flipped: change", "relative"), indent="  ", align="llrr",
                        width=WIDTH) if rows else []
    if still:
        lines += wrap("no effect here: " + ", ".join(w.switch for w in still), "  ")
    for w in ranked:
        if w.flipped is None:
            lines += wrap(f"refused {w.switch} flipped: {w.refused}", "  ")
    return lines


def as_html(t: "Sensitivities") -> str:
    """The continuous rows as an HTML table (``_repr_html_``)."""
    e = html.escape
    rows, still = _rows(t)
    head = "".join(f"<p>{e(x.strip())}</p>" for x in _header(t))
    tail = f"<p>no effect here: {e(', '.join(parameter_name(r.symbol) for r in still))}</p>" if still else ""
    return head + html_table(rows, _HEADER) + tail


def _tex_num(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return r"\text{--}"
    if x == 0:
        return "0"
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
        words = BY_SYMBOL[r.symbol].words.replace("%", r"\%")
        lines.append(f"{i + 1} & {latex(r.symbol)} & \\text{{{words}}} & "
                     f"{_tex_num(float(r.value))} & {d} & {el} \\\\")
    return ("$\\begin{array}{rllrrr}\\# & & \\text{parameter} & x & \\partial y/\\partial x & "
            "\\partial \\ln y/\\partial \\ln x \\\\ \\hline " + " ".join(lines) + "\\end{array}$")

