"""Numbers with units for people: plain text and HTML tables (no sympy here).

Values are SI floats; :func:`quantity` prints one with an SI prefix and its unit
(``3.369 s``, ``59.41 GB``, ``494.7 TFLOP/s``), :func:`text_table` and
:func:`html_table` lay out rows of cells. The result objects of the package
(``DistributedResult``, ``SweepResult``, search results, operating points) use
these for their ``repr`` and ``_repr_html_``.

Examples
--------
>>> quantity(3.368626711354994, "s"), quantity(59411380584.0, "B"), quantity(0.0125, "s")
('3.369 s', '59.41 GB', '12.5 ms')
>>> quantity(0.38671, "1"), quantity(40.01, "1/s")
('0.3867', '40.01 samples/s')
"""
from __future__ import annotations

import html
import math
import re
import textwrap
from typing import Iterable, List, Optional, Sequence, Tuple

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"),
             (1e-6, "u"), (1e-9, "n"))
#: An SI prefix as written (``"u"`` for micro) -> its scale.
SCALES = {p: s for s, p in _PREFIXES}
#: Units shown with an SI prefix, and how each is written.
PREFIXED = {"s": "s", "B": "B", "flop": "FLOP", "flop/s": "FLOP/s", "B/s": "B/s", "J": "J", "W": "W"}
#: the step model's only rates count samples; a run's count tokens (``tok``, a count: :mod:`mlsysim_sym.units`)
_PLAIN = {"1": "", "1/s": " samples/s", "flop/B": " FLOP/B", "tok/s": " tokens/s"}
#: The widest line printed for a person: a terminal's 80 columns.
WIDTH = 80


def written(unit: str) -> str:
    """How a unit is written for people: ``"flop/s"`` -> ``"FLOP/s"``, ``"1/s"`` -> ``"samples/s"``,
    ``"1"`` -> ``""``."""
    return PREFIXED.get(unit) or _PLAIN.get(unit, unit).strip()


def number(x, digits: int = 4) -> str:
    """A number to ``digits`` significant digits; integers as integers; ``-0`` as ``0``."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    if float(x) == 0:
        return "0"
    if float(x).is_integer() and abs(x) < 1e7:
        return str(int(x))
    return f"{x:.{digits}g}"


def as_given(x) -> str:
    """A value as a user writes it (a swept value, a keyword): a switch as yes/no, a whole float as an integer,
    another float to 6 significant digits (numpy numbers as Python's)."""
    x = x.item() if hasattr(x, "item") else x
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:g}" if isinstance(x, float) else str(x)


def si_prefix(value, unit: str) -> Tuple[float, str]:
    """``(scale, prefix)`` to print ``value`` of ``unit`` with (``1.0, ""`` where no prefix applies)."""
    if unit not in PREFIXED or not value or math.isnan(value) or math.isinf(value) or abs(value) < 0.9995e-9:
        return 1.0, ""
    return next(((s, p) for s, p in _PREFIXES if abs(value) >= s * 0.9995), _PREFIXES[-1])


def text_prefix(value, unit: str) -> Tuple[float, str]:
    """:func:`si_prefix` for plain text: no prefix below a byte (``mB``) nor above a second (``Ms`` reads as
    ``ms`` in a terminal); typeset documents keep ``ks``."""
    if value is not None and not isinstance(value, bool) and math.isfinite(value) and (
            (unit == "B" and abs(value) < 0.9995) or (unit == "s" and abs(value) >= 999.5)):
        return 1.0, ""
    return si_prefix(value, unit)


def quantity(value, unit: str, digits: int = 4) -> str:
    """``value`` (SI) with an SI prefix and ``unit`` (``"s"``, ``"B"``, ``"flop/s"``, ``"1"``, ...)."""
    if value is None or isinstance(value, bool) or unit in _PLAIN:
        return number(value, digits) + _PLAIN.get(unit, "")
    if unit not in PREFIXED:
        return f"{number(value, digits)} {unit}"
    scale, prefix = text_prefix(value, unit)
    x = value / scale
    if math.isfinite(x) and 10 ** digits <= abs(x) < 1000:
        # fewer digits than the prefixed number has before its point: 596 ms at 2 digits is "600 ms", not "6e+02 ms"
        x = float(round(x, digits - 1 - math.floor(math.log10(abs(x)))))
        if abs(x) >= 1000:          # rounded up to the next prefix (999.4 ms is 1 s)
            return quantity(x * scale, unit, digits)
    return f"{number(x, digits)} {prefix}{PREFIXED[unit]}"


def text_table(rows: Sequence[Sequence[str]], header: Optional[Sequence[str]] = None, indent: str = "",
               align: str = "", width: Optional[int] = None, narrow: int = 0) -> List[str]:
    """Rows of cells as aligned lines. ``align`` has one letter per column, ``l`` or ``r`` (default: the
    first column left, the others right, as numbers). With ``width``, the column ``narrow`` (the first by
    default) is narrowed where the lines would be wider, after the indent is dropped: a longer cell of it ends
    its line, and the rest of its row follows on the next line.

    >>> text_table([("MobileNetV2_Alpha0_5FeatureExtractor", "688k"), ("GPT2", "1.5B")], ("name", "size"), width=20)
    ['name            size', 'MobileNetV2_Alpha0_5FeatureExtractor', '                688k', 'GPT2            1.5B']
    """
    rows = [list(map(str, r)) for r in rows]
    allrows = ([list(header)] if header else []) + rows
    if not allrows:
        return []
    ncol = max(len(r) for r in allrows)
    align = align or "l" + "r" * (ncol - 1)
    widths = [max(len(r[i]) for r in allrows if i < len(r)) for i in range(ncol)]
    if width is not None and len(indent) + sum(widths) + 2 * (ncol - 1) > width:
        indent = ""                          # a table too wide first loses its indent
        rest = width - sum(widths) + widths[narrow] - 2 * (ncol - 1)   # what the others leave the narrowed one
        widths[narrow] = max(min(widths[narrow], rest), len(allrows[0][narrow]) if header else 1)
    cell = lambda i, c: c.ljust(widths[i]) if align[i] == "l" else c.rjust(widths[i])  # noqa: E731
    out = []
    for r in allrows:
        if len(r) > narrow and len(r[narrow]) > widths[narrow]:
            out.append(indent + "".join(cell(i, c) + "  " for i, c in enumerate(r[:narrow])) + r[narrow])
            r = [""] * (narrow + 1) + r[narrow + 1:]
        out.append((indent + "  ".join(cell(i, c) for i, c in enumerate(r))).rstrip())
    return out


def key_values(rows: Sequence[Tuple[str, str]], indent: str = "") -> List[str]:
    """Label and value pairs as lines, the values right-aligned on one column that is as far right as the
    longest pair needs (not the longest label plus the longest value).

    >>> key_values([("step time T_step", "3.369 s"), ("parallelism", "dp 8, tp 8, pp 4, ep 1")])
    ['step time T_step            3.369 s', 'parallelism  dp 8, tp 8, pp 4, ep 1']
    """
    end = max((len(k) + 2 + len(v) for k, v in rows), default=0)
    return [indent + k + v.rjust(end - len(k)) for k, v in rows]


#: A space that a line break would split a name from its number (``tp 8``), a number from its unit
#: (``25 GB/s``, ``1024 H100``) or a condition (``f_strag = 1``, ``T_compute ≥ T_memory``) at.
_PAIRED = re.compile(r"(?<=[A-Za-z_]) (?=\d)|(?<=\d) (?=[A-Za-z%])|(?<=\S) (?=[≤≥≠] )|(?<= [≤≥≠]) (?=\S)"
                     r"|(?<=[A-Za-z_]) (?== -?\d)|(?<=[A-Za-z_] =) (?=-?\d)")


def glossary(rows: Sequence[Tuple[str, str]], header: Tuple[str, str], width: int = WIDTH) -> List[str]:
    """Names and their descriptions as lines: the names in a column, each description wrapped beside its name.

    >>> glossary([("T_step", "time of one training step, the slowest replica's")], ("name", "meaning"), 36)
    ['name    meaning', 'T_step  time of one training step,', "        the slowest replica's"]
    """
    w = max(len(k) for k, _ in [header, *rows])
    out = []
    for k, text in [header, *rows]:
        lines = textwrap.wrap(text, max(width - w - 2, 20)) or [""]
        out += [(k.ljust(w) + "  " + lines[0]).rstrip()] + [" " * (w + 2) + line for line in lines[1:]]
    return out


def wrap(text: str, indent: str = "  ", width: int = WIDTH) -> List[str]:
    """``text`` wrapped into lines of at most ``width`` characters, continuation lines indented further; a
    name and its number, and a number and its unit, stay on one line.

    >>> wrap("batch 256, tp 8, pp 4, m 8", "", 20)
    ['batch 256, tp 8,', '  pp 4, m 8']
    """
    text = _PAIRED.sub("\u00a0", text)
    words = re.split(r"[ \t\n]+", text.strip())
    if max(map(len, words)) <= width - len(indent) - 2:
        lines = textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent + "  ",
                              break_on_hyphens=False) or [indent]
    else:
        lines = _fill(words, indent, width)
    return [line.replace("\u00a0", " ") for line in lines]


def _fill(words: List[str], indent: str, width: int) -> List[str]:
    """Words filled into lines as textwrap fills them, a word too long for a line (a formula) broken after a ``*``,
    ``/`` or ``(``, never inside a name (``f_GEMM``, ``T_DP,exposed``); a piece with none of them, at ``width``.

    >>> _fill(["y", "=", "a_1*b_2*(c_3+d_4)/e_5"], "", 12)
    ['y = a_1*b_2*', '  (c_3+d_4)/', '  e_5']
    """
    pieces = []                                         # (text, joined to the piece before it)
    for w in words:
        parts = re.findall(r"[^*/(]*[*/(]|[^*/(]+$", w) if len(w) > width - len(indent) - 2 else [w]
        pieces += [(p, i > 0) for i, p in enumerate(parts)]
    lines, line, more = [], indent, indent + "  "
    for text, joined in pieces:
        grown = line + ("" if joined or not line.strip() else " ") + text
        if len(grown) <= width or not line.strip():
            line = grown
            continue
        lines.append(line)
        line = more + text
    lines.append(line)
    out = []
    for line in lines:                                  # a piece longer than a line: cut where it must
        while len(line) > width:
            out.append(line[:width])
            line = more + line[width:]
        out.append(line)
    return out


def count_text(x) -> str:
    """A count as a parameter count is written: ``70.6B``, ``110M``, ``10k``; ``-`` for none.

    >>> count_text(70.6e9), count_text(3_504_872), count_text(10_000), count_text(None)
    ('70.6B', '3.5M', '10k', '-')
    """
    if not x:
        return "-"
    scale, suffix = next(((s, p) for s, p in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")) if x >= s), (1, ""))
    return f"{x / scale:.3g}{suffix}"


def capacity_words(capacity: float) -> str:
    """An accelerator's memory as its label gives it and in SI units: ``80 GiB = 85.9 GB`` (mlsysim reads the
    H100's 80 GB as GiB), the SI quantity alone where it is no whole number of GiB.

    >>> capacity_words(80 * 2 ** 30), capacity_words(40e9)
    ('80 GiB = 85.9 GB', '40 GB')
    """
    gib = capacity / 2 ** 30
    whole = gib >= 1 and float(gib).is_integer()
    return (f"{gib:.0f} GiB = " if whole else "") + quantity(capacity, "B")


def fit_words(memory: float, capacity: Optional[float], fits: bool) -> str:
    """Whether the training state fits in HBM, in words: ``fits``, ``fits, 99 % full`` above 95 % (a framework
    needs some HBM of its own: the CUDA context, communication buffers, fragmentation), ``does not fit``.

    >>> fit_words(85.29e9, 85.9e9, True), fit_words(40e9, 80e9, True), fit_words(90e9, 80e9, False)
    ('fits, 99 % full', 'fits', 'does not fit')
    """
    if not fits:
        return "does not fit"
    full = memory / capacity if capacity else 0.0
    return f"fits, {math.floor(full * 100):.0f} % full" if full > 0.95 else "fits"


def shorten(text: str, width: int = WIDTH) -> str:
    """``text`` cut to ``width`` characters (with an ellipsis)."""
    return text if len(text) <= width else text[:width - 3] + "..."


def html_text(text: str) -> str:
    """A result's terminal text for a notebook (``_repr_html_``): escaped, in a ``<pre>`` block that keeps its
    columns and indents."""
    return f"<pre>{html.escape(text)}</pre>"


def html_table(rows: Iterable[Sequence[str]], header: Optional[Sequence[str]] = None, caption: str = "") -> str:
    """An HTML table (every cell escaped; a cell's leading spaces, a sub-row's indent, kept as no-break spaces)."""
    def e(x: str) -> str:
        x = html.escape(x)
        lead = len(x) - len(x.lstrip(" "))
        return "&nbsp;" * lead + x[lead:]
    head = "" if not header else "<thead><tr>" + "".join(f"<th>{e(str(h))}</th>" for h in header) + "</tr></thead>"
    body = "".join("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    cap = f"<caption>{e(caption)}</caption>" if caption else ""
    return f"<table>{cap}{head}<tbody>{body}</tbody></table>"
