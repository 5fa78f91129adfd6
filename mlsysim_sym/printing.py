r"""The one LaTeX printer of the package: the book's notation, equations, values, templates.

Every symbol, quantity and cost term of the model prints itself in the book's
notation through its own ``_latex`` hook (:mod:`mlsysim_sym.notation` holds the
one table), so plain ``sympy.latex(expr)`` and a notebook's display already read
like the book. :func:`latex` is that same printer with one setting more:
``book=True`` prints the book's macros (``\TensorParallelDegree``) instead of
their LaTeX, so a chapter can paste either form. Expanding the macros of a
book-mode string gives the plain string exactly (tested).

Sums of model quantities print in reading order (node time, then communication,
then bubble) and the Iverson bracket as the book's indicator
``\mathbf{1}\{c\}``; both come from the hooks, not from this printer.

Examples
--------
>>> import sympy
>>> from mlsysim_sym.printing import latex
>>> from mlsysim_sym.symbols import sym
>>> latex(sym.tp * sym.pp)
'N_{\\text{PP}} N_{\\text{TP}}'
>>> latex(sym.tp * sym.pp) == sympy.latex(sym.tp * sym.pp)
True
>>> latex(sym.tp * sym.pp, book=True)
'\\PipelineParallelDegree \\TensorParallelDegree'
"""
from __future__ import annotations

import re
from typing import Iterable, List, Optional, Sequence

import sympy as sp
from sympy.printing.latex import LatexPrinter as _SympyLatexPrinter

from . import notation
from .display import WIDTH, si_prefix
from .simplify import shorten, termwise
from .symbols import PARAMS
from .terms.base import TERM_CLASSES as _REGISTERED
from .terms.base import NamedTerm


class LatexPrinter(_SympyLatexPrinter):
    """sympy's LaTeX printer with one more setting, ``book``: print the book's macros where the book
    has a symbol. Without it, the output is exactly ``sympy.latex``'s."""

    printmethod = "_latex"
    _default_settings = {**_SympyLatexPrinter._default_settings, "book": False}


def latex(expr, book: bool = False, **settings) -> str:
    """LaTeX of ``expr`` in the book's notation (``book=True``: with the book's macros). A name is no expression:
    ``latex("T_step")`` printed the string as monospace text; :func:`mlsysim_sym.cells.inline` takes a name."""
    if isinstance(expr, str):
        raise TypeError(f"expr must be a sympy expression, got the string {expr!r}: for a quantity, parameter or "
                        f"cost term by name, build_model()[name] (its expression) or mlsysim_sym.cells.inline(name) "
                        f"(its symbol)")
    return LatexPrinter(dict(settings, book=book)).doprint(expr)


def equation(lhs, rhs, book: bool = False, **settings) -> str:
    """``lhs = rhs`` (either side a sympy object or an already printed string)."""
    side = (lambda x: x if isinstance(x, str) else latex(x, book=book, **settings))
    return f"{side(lhs)} = {side(rhs)}"


def _sum_lines(rhs: sp.Add, book: bool, measure, width: int) -> List[str]:
    """The terms of a sum, signs attached, packed into lines of about ``width`` (``measure`` of the plain
    LaTeX, so that the book-macro form breaks where the plain form does)."""
    plain, p = LatexPrinter({"book": False}), LatexPrinter({"book": book})
    lines: List[List[str]] = []
    for i, t in enumerate(plain._as_ordered_terms(rhs, order=None)):
        neg = t.could_extract_minus_sign()
        sign = "- " if neg else "+ " if i else ""
        pieces = [sign + plain._print(-t if neg else t), sign + p._print(-t if neg else t)]
        if lines and measure(lines[-1][0]) + measure(pieces[0]) <= width:
            lines[-1] = [f"{a} {b}" for a, b in zip(lines[-1], pieces)]
        else:
            lines.append(pieces)
    return [line[1] for line in lines]


#: The width (:func:`visible_length`) of display math a 720 px text column holds at 18 px text (about
#: 8 px a character in display style), with a margin.
LINE = 80

_MARKUP = re.compile(r"\\(?:left|right|text|mathbf|mathrm|operatorname|begin|end)\b|[{}]")
_RELATION = re.compile(r"\\(?:geq|leq|wedge|vee|cdot|times|neq|quad)\b|[=<>+]| - ")
_FRAC = re.compile(r"\\frac\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}")


def visible_length(tex: str) -> int:
    r"""A rough width of LaTeX in characters: markup (braces, ``\left``, ``\text``) dropped, every other
    command one character, a fraction as wide as its wider half."""
    prev = None
    while prev != tex:     # innermost fractions first
        prev, tex = tex, _FRAC.sub(lambda m: "x" * max(visible_length(m.group(1)), visible_length(m.group(2))),
                                   tex)
    tex = _MARKUP.sub("", tex)
    tex = _RELATION.sub("xxx", tex)     # spaced on both sides in display style
    return len(re.sub(r"\\[A-Za-z]+ ?|\\.", "x", tex).replace(" ", ""))


def _part_lines(part, book: bool, width: int) -> List[str]:
    r"""One form of a chain as lines: a long sum breaks at its terms, an indicator of a long disjunction
    at its ``\vee``; anything else is one line."""
    from .terms.base import Iverson

    tex = part if isinstance(part, str) else latex(part, book=book)
    if isinstance(part, str) or visible_length(latex(part)) <= width:
        return [tex]
    if isinstance(part, sp.Add):
        return _sum_lines(part, book, visible_length, width)
    coeff, rest = part.as_coeff_Mul() if isinstance(part, sp.Mul) else (None, None)
    if coeff is not None and coeff != 1 and isinstance(rest, sp.Add):     # 2 (a + b + ...)
        lines = _sum_lines(rest, book, visible_length, width - 4)
        if len(lines) > 1:     # (the packing is the plain form's: _sum_lines)
            return ([rf"{latex(coeff, book=book)} \biggl( {lines[0]}"] + lines[1:-1]
                    + [rf"{lines[-1]} \biggr)"])
    if isinstance(part, sp.Piecewise):
        return [_stacked_cases(part, book, width)]
    if isinstance(part, Iverson) and isinstance(part.args[0], sp.Or):
        args = [latex(a, book=book) for a in part.args[0].args]
        args = [rf"\left({a}\right)" if " " in a else a for a in args]
        return ([rf"{notation.indicator(book)}\bigl\{{ {args[0]}"] + [rf"\qquad \vee {a}" for a in args[1:-1]]
                + [rf"\qquad \vee {args[-1]} \bigr\}}"])
    return [tex]


def _stacked_cases(part: sp.Piecewise, book: bool, width: int) -> str:
    r"""A case distinction as one ``cases`` block: nested distinctions folded into one list of cases (they are
    tried in order, so an inner one's cases follow the outer one's), and, when a case and its condition side by
    side would be wider than ``width``, each condition on the line below its case."""
    folded = sp.piecewise_fold(part)
    if not isinstance(folded, sp.Piecewise):
        return latex(part, book=book)
    cases = [(latex(a.expr, book=book), r"\text{otherwise}" if a.cond == sp.true
              else r"\text{for}\: " + latex(a.cond, book=book)) for a in folded.args]
    plain = [visible_length(latex(a.expr)) + (0 if a.cond == sp.true else visible_length(latex(a.cond)) + 4)
             for a in folded.args]
    if max(plain) + 4 <= width:
        if folded == part:
            return latex(part, book=book)
        rows = [f"{v} & {c}" for v, c in cases]
    else:
        rows = [f"{v} \\\\ \\qquad {c}" for v, c in cases]
    return "\\begin{cases} " + " \\\\ ".join(rows) + " \\end{cases}"


def broken_chain(parts: Sequence, book: bool = False, width: int = LINE) -> str:
    r""":func:`chain` for a display of its own, kept within a text column: when a line would be wider than
    ``width`` (:func:`visible_length`), a long sum breaks at its terms, an indicator of a long disjunction
    at its ``\vee``, and a long left side stands on a line of its own. A chain that fits prints as
    :func:`chain` does."""
    plain = [p if isinstance(p, str) else latex(p) for p in parts]     # the layout is the plain form's
    head = visible_length(plain[0]) + 3
    if all(head + visible_length(t) <= width for t in plain[1:]):
        return chain(parts, book=book)
    alone = any(visible_length(x) > width - head for p in parts[1:] for x in _part_lines(p, False, width - head))
    forms = [_part_lines(p, book, width - 4 if alone else width - head) for p in parts[1:]]
    tex = [p if isinstance(p, str) else latex(p, book=book) for p in parts]
    rows = [f"&{tex[0]}"] if alone else []
    for k, lines in enumerate(forms):
        rows.append(f"&= {lines[0]}" if (alone or k) else f"{tex[0]} &= {lines[0]}")
        rows += [rf"&\quad {x}" for x in lines[1:]]
    return "\\begin{aligned}\n" + " \\\\\n".join(rows) + "\n\\end{aligned}"


def split_equation(lhs, rhs, book: bool = False, width: int = 150) -> str:
    """``lhs = rhs``; a long sum is stacked in ``aligned``, its terms packed into lines of about ``width``
    characters of LaTeX source."""
    flat = equation(lhs, rhs, book=book)
    if not isinstance(rhs, sp.Add) or len(flat) <= width:
        return flat
    lines = _sum_lines(rhs, book, len, width)
    head = lhs if isinstance(lhs, str) else latex(lhs, book=book)
    return ("\\begin{aligned}\n" + f"{head} &= {lines[0]}" + "".join(f" \\\\\n&\\quad {x}" for x in lines[1:])
            + "\n\\end{aligned}")


def chain(parts: Sequence, book: bool = False, **settings) -> str:
    """``a = b = c``: several forms of one quantity; three or more parts are stacked in ``aligned``."""
    tex = [p if isinstance(p, str) else latex(p, book=book, **settings) for p in parts]
    if len(tex) <= 2:
        return " = ".join(tex)
    return "\\begin{aligned}\n" + f"{tex[0]} &= {tex[1]}" + "".join(f" \\\\\n&= {t}" for t in tex[2:]) \
        + "\n\\end{aligned}"


def quantity_latex(model, name: str, form: str = "structured", book: bool = False) -> str:
    """``lhs = rhs`` for one quantity of a :class:`~mlsysim_sym.model.StepTimeModel`.

    ``form``: ``"structured"`` (the definition, in earlier quantities), ``"expanded"``
    (``model[name]``: in parameters, cost terms by name) or ``"closed"`` (cost
    terms expanded too).
    """
    q = model.quantity(name)
    rhs = {"structured": model.definition, "expanded": model.__getitem__,
           "closed": model.closed_form}
    if form not in rhs:
        raise ValueError(f"form must be one of {', '.join(rhs)}, got {form!r}")
    return equation(q.symbol, rhs[form](name), book=book)


def definition_latex(model, name: str, form: str = "structured", book: bool = False) -> str:
    r""":func:`quantity_latex` as the documents print it (``docs/step_time.md``, the calculator): in the structured
    form a chain that breaks where a line would be wider than the text column (:func:`broken_chain`: a long sum at
    its terms, nested cases folded into one stacked list), and a right side that is one cost term goes on to the
    term's formula: ``T_bubble = T_bubble(T_node, N_PP, V, m)`` alone would say x = x(...), the quantity and its
    cost term sharing a glyph. The formula is the term's own (``NamedTerm.doit``), shortened as the documents
    shorten it in the structured form, and in the expanded form the closed form
    (:meth:`~mlsysim_sym.model.StepTimeModel.closed_form`). What :func:`mlsysim_sym.cells.equation` and
    ``mlsysim-sym equations`` print."""
    if form == "structured":
        model.quantity(name)                             # checks the name
        return broken_chain(definition_parts(model, name), book=book)
    tex = quantity_latex(model, name, form, book)        # checks the form
    rhs = model[name] if form == "expanded" else None
    if not isinstance(rhs, NamedTerm):
        return tex
    return broken_chain([model.quantity(name).symbol, rhs, model.closed_form(name)], book=book)


def definition_parts(model, name: str) -> list:
    """``[q, definition]``, and the term's shortened formula after them where the definition is one cost term:
    the chain :func:`definition_latex` and the documents print."""
    d = model.definition(name)
    return [model.quantity(name).symbol, d] + ([shorten(d.doit())] if isinstance(d, NamedTerm) else [])


#: The cost term classes, by name (their notation is :data:`mlsysim_sym.notation.TERMS`, in that order): the
#: registry every :class:`~mlsysim_sym.terms.base.NamedTerm` joins when its family is imported (``terms``
#: imports every family).
TERM_CLASSES = {t.name: _REGISTERED[t.name] for t in notation.TERMS}


def term_call(term: notation.Term) -> sp.Basic:
    """The cost term applied to its formal arguments, e.g. ``RingAllReduce(M, N, beta, alpha)``."""
    args = [notation.FORMAL[a] if a in notation.FORMAL else PARAMS[a].symbol if a in PARAMS
            else notation.symbol(a, positive=True) for a in term.args]  # a model quantity (``T_comm``)
    return TERM_CLASSES[term.name](*args)


#: The units a cost term's value is written in (:func:`term_unit`), each a unit of the notation's table, the first
#: of its dimension.
_TERM_UNITS = ("1", "s", "B", "flop", "W", "J", "B/s", "flop/s", "flop/B", "J/B", "1/s")


def term_unit(term: notation.Term) -> str:
    """The SI unit of a cost term's value (``"s"`` for ``RingAllReduce``, ``"1"`` for a share): its formula's
    dimension over its arguments' units (:func:`mlsysim_sym.units.dimension`, which checks every sum of it), as
    the notation writes a unit (``"B/s"``, ``"J"``; one with no such name as :func:`mlsysim_sym.units.show`
    writes it)."""
    from .units import dimension, parse_unit, show

    call = term_call(term)
    d = dimension(call, {s: notation.entry(s.name).unit for s in call.free_symbols})
    return next((u for u in _TERM_UNITS if parse_unit(u) == d), None) or show(d)


def term_latex(term: notation.Term, book: bool = False) -> str:
    """The definition of a cost term on its formal arguments, in its alpha-beta form and shortened.

    ``T_ring(M, N, beta, alpha) = 2M(N-1)/(N beta) + 2 alpha (N-1) = 2(N-1)(M/(N beta) + alpha)``
    (a form equal to the previous one is left out).
    """
    call = term_call(term)
    formula = call.doit()
    parts = [call]
    for form in (termwise(formula), shorten(formula)):
        if all(form != p for p in parts[1:]):
            parts.append(form)
    return broken_chain(parts, book=book)


def aligned(lines: Iterable[str]) -> str:
    r"""Equations ``lhs = rhs`` stacked in an ``aligned`` block, aligned at the first ``=``."""
    rows = [line.replace(" = ", " &= ", 1) for line in lines]
    return "\\begin{aligned}\n" + " \\\\\n".join(rows) + "\n\\end{aligned}"


def model_latex(model, form: str = "structured", book: bool = False, names: Optional[Sequence[str]] = None) -> str:
    """Every quantity of a model (or ``names``) as one ``aligned`` block."""
    return aligned(quantity_latex(model, n, form, book) for n in (names or list(model)))


def model_repr_latex(model) -> str:
    """``_repr_latex_`` of a :class:`~mlsysim_sym.model.StepTimeModel`: its structured definitions."""
    return "$$" + model_latex(model) + "$$"


def quantity_repr_latex(quantity) -> str:
    """``_repr_latex_`` of a :class:`~mlsysim_sym.model.Quantity`: its definition."""
    return "$$" + equation(quantity.symbol, quantity.definition) + "$$"


def expr_repr_latex(expr) -> str:
    """``_repr_latex_`` for any expression of the model."""
    return "$$" + latex(expr) + "$$"


# --------------------------------------------------------------------------------------
# Numbers with units
# --------------------------------------------------------------------------------------
#: Units printed as they are, with no SI prefix (a price in dollars is written USD: a dollar sign would end the math).
_PLAIN = {"1": "", "1/s": r"\,\text{s}^{-1}", "flop/B": r"\,\text{flop/B}", "$": r"\,\text{USD}"}


def number(x: float, digits: int = 4) -> str:
    """LaTeX of a number to ``digits`` significant digits (``1.5 \\times 10^{-18}`` for tiny ones)."""
    if isinstance(x, bool):
        return r"\text{%s}" % ("true" if x else "false")
    if float(x).is_integer() and abs(x) < 1e6:
        return str(int(x))
    text = f"{x:.{digits}g}"
    if "e" in text:
        mant, exp = text.split("e")
        return r"%s \times 10^{%d}" % (mant, int(exp))
    return text


def value_latex(value, unit: str, digits: int = 4) -> str:
    """LaTeX of a value in SI units with a prefix: ``59.41\\,\\text{GB}``, ``3.369\\,\\text{s}``."""
    if isinstance(value, bool) or unit in _PLAIN or value == 0:
        return number(value, digits) + _PLAIN.get(unit, "" if unit == "1" else r"\,\text{%s}" % unit)
    scale, prefix = si_prefix(value, unit)
    if prefix == "u":
        return number(value / scale, digits) + r"\,\mu\text{%s}" % unit
    return number(value / scale, digits) + r"\,\text{%s%s}" % (prefix, unit)


# --------------------------------------------------------------------------------------
# Templates
# --------------------------------------------------------------------------------------
def environment():
    r"""The jinja2 environment of the package's templates (``mlsysim_sym/templates``).

    LaTeX-friendly delimiters: ``\VAR{x}``, ``\BLOCK{for ...}``, ``\#{comment}``;
    ``StrictUndefined`` (a missing variable is an error); filter ``tex`` renders a
    sympy object through :class:`LatexPrinter` (strings pass through), ``book`` the
    same with book macros, ``value(unit)`` a number with its unit.
    """
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("mlsysim_sym", "templates"),
        block_start_string=r"\BLOCK{", block_end_string="}",
        variable_start_string=r"\VAR{", variable_end_string="}",
        comment_start_string=r"\#{", comment_end_string="}",
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
        autoescape=False, undefined=jinja2.StrictUndefined)
    env.filters["tex"] = lambda x: x if isinstance(x, str) else latex(x)
    env.filters["book"] = lambda x: x if isinstance(x, str) else latex(x, book=True)
    env.filters["value"] = value_latex
    # an empty cell stays empty text: as math it would print a literal "$$" (a table's empty header)
    env.filters["inline"] = lambda x: "" if x == "" else "$" + (x if isinstance(x, str) else latex(x)) + "$"
    env.filters["md_text"] = md_text
    env.filters["label"] = equation_label
    env.filters["tex_text"] = tex_text
    env.filters["tex_code"] = tex_code
    env.filters["wrap_code"] = wrap_code
    env.filters["table_rule"] = table_rule
    return env


def equation_label(*parts: str) -> str:
    r"""A stable cross-reference label from an equation's subject: ``eq-`` and the parts' words in lower
    case joined by ``-`` (``("T_ring",)`` -> ``eq-t-ring``; LaTeX ``T_{\text{ring}}`` gives the same).
    Quarto's ``{#eq-t-ring}``; the LaTeX document's ``\label{eq:t-ring}``."""
    words = []
    for p in parts:
        p = re.sub(r"\\(?:text|mathrm|mathbf|operatorname)\b", "", str(p))
        words += re.findall(r"[A-Za-z0-9]+", p.replace("_", " "))
    return "eq-" + "-".join(w.lower() for w in words)


_TEX_SPECIAL = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "_": r"\_", "&": r"\&", "%": r"\%",
                "#": r"\#", "$": r"\$", "^": r"\^{}", "~": r"\~{}"}


def tex_text(text: str) -> str:
    """Plain text for LaTeX: its special characters escaped."""
    return "".join(_TEX_SPECIAL.get(ch, ch) for ch in str(text))


#: Where inline code may break across lines in LaTeX: after these characters (the break adds no glyph).
_CODE_BREAKS = "._/(,=-"


def tex_code(text: str) -> str:
    r"""Inline code for LaTeX (inside ``\texttt``): :func:`tex_text`, and a line may break after ``.``, ``_``,
    ``/``, ``(``, ``,``, ``=`` or ``-`` (``\allowbreak``), so a long name never runs off the page."""
    return "".join(_TEX_SPECIAL.get(ch, ch) + (r"\allowbreak{}" if ch in _CODE_BREAKS else "") for ch in str(text))


#: The longest code line of the documents: 64 characters fit every PDF made from them. Pandoc's default
#: LaTeX (article, 10 pt, a 345 pt text width; how a Markdown document becomes a PDF with no template)
#: sets code at 5.25 pt a character, 65 to a line; the standalone ``.tex``'s listings hold about 100.
CODE_WIDTH = 64


def _break_points(line: str, lang: str):
    """Where a code line may break, ``(index, characters the break replaces)``: LaTeX at a space, or after a
    control word followed by a command; Python at a space inside brackets and outside a string (an
    implicit line continuation)."""
    if lang == "latex":   # a space; or between a control word and the next command (TeX drops that line end)
        return sorted([(i, 1) for i, ch in enumerate(line) if ch == " "]
                      + [(m.end(), 0) for m in re.finditer(r"(?<!\\)(?:\\\\)*\\[A-Za-z]+(?=\\)", line)])
    points, depth, quote, i = [], 0, "", 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            break
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == " " and depth > 0:
            points.append((i, 1))
        i += 1
    return points


def _group_breaks(line: str):
    r"""Where a LaTeX line with no other break point may still break: after a group's ``}`` followed by ``{`` or
    a command (``}{``, ``}\right``), outside the argument of ``\text`` (and its kin) and never inside a command
    name. The line end and the next line's indent are one space there, which math ignores and which TeX skips
    between a command's arguments (``\frac{a}{b}``, ``\newcommand{\X}{...}``)."""
    points, depth, text_depths, i = [], 0, [], 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            cmd = re.match(r"\\(?:[A-Za-z]+|.?)", line[i:]).group(0)
            if re.fullmatch(r"\\(?:text[a-z]*|mbox|mathrm|operatorname)", cmd) and line[i + len(cmd):][:1] == "{":
                text_depths.append(depth + 1)
            i += len(cmd)
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            if text_depths and text_depths[-1] == depth:
                text_depths.pop()
            depth -= 1
            if not text_depths and line[i + 1:i + 2] in ("{", "\\"):
                points.append((i + 1, 0))
        i += 1
    return points


def wrap_code(text: str, lang: str = "latex", width: int = CODE_WIDTH) -> str:
    """Code with every line longer than ``width`` broken at the spaces where ``lang`` allows it (greedily;
    the continuation indented by four more spaces), meaning the same: TeX reads a line end and the next
    line's leading spaces as the one space they replace, and Python continues a line inside brackets. A
    LaTeX line holding ``%`` (a comment to its end) is left whole, as is code of any other language and
    a piece longer than ``width`` with no break point. A LaTeX piece with no space or control word to break at
    breaks between groups (:func:`_group_breaks`)."""
    if lang not in ("latex", "python"):
        return str(text)
    out = []
    for line in str(text).split("\n"):
        if len(line) <= width or (lang == "latex" and "%" in line):
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip(" ")) + 4)
        points = [p for p in _break_points(line, lang) if line[:p[0]].strip()]
        spare = [p for p in _group_breaks(line) if line[:p[0]].strip()] if lang == "latex" else []
        start = 0
        while len(line) - start + (len(indent) if start else 0) > width:
            room = width - (len(indent) if start else 0)
            fits = ([p for p in points if start < p[0] <= start + room]
                    or [p for p in spare if start < p[0] <= start + room])
            cut, skip = fits[-1] if fits else next((p for p in points if p[0] > start), (None, 0))
            if cut is None:
                break
            out.append(indent + line[start:cut].strip(" ") if start else line[:cut].rstrip(" "))
            start = cut + skip
        out.append(line[start:] if not start else indent + line[start:].strip(" "))
    return "\n".join(out)


def table_rule(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """The rule under a Markdown table's header, ``|---|------|``: its dashes share the width among the columns
    as their longest cells do (pandoc sets a wide table's column widths from them; a column with unbreakable code
    gets the room it needs, and GitHub ignores the dashes)."""
    widths = [max([len(str(h))] + [len(str(r[i])) for r in rows if i < len(r)]) for i, h in enumerate(header)]
    total = sum(widths) or 1
    return "|" + "".join("-" * max(3, round(60 * w / total)) + "|" for w in widths)


def md_text(text: str) -> str:
    r"""Plain text for Markdown (also inside table cells): ``|``, ``*``, ``_``, ``$`` and ``@`` escaped (a price,
    ``$3 per GPU-hour``, opens no math; a commit, ``README.md @68eaf7e``, is no citation, which pandoc and
    Quarto would print as ``?@68eaf7e``), a LaTeX command (``\InterleavedPipelineBubbleFraction``) as inline
    code (bare, pandoc and Quarto take it for raw TeX and drop it from HTML)."""
    parts = re.split(r"(\\[A-Za-z]+)", str(text))
    return "".join(f"`{p}`" if i % 2 else "".join("\\" + ch if ch in "|*_$" or (ch == "@" and p[j - 1:j] != "\\")
                                                   else ch for j, ch in enumerate(p))
                   for i, p in enumerate(parts))


#: What GitHub's Markdown would eat in math (it applies backslash escapes to ASCII punctuation first),
#: written as commands that survive: same spacing and glyphs. Each is one that KaTeX, MathJax 3.2 (the version
#: Quarto loads) and LaTeX all define: ``\medspace`` and ``\thickspace`` are not MathJax 3.2's, ``\mspace`` is
#: not KaTeX's; ``\:`` (amsmath's ``\>``) is a medium space, 4 mu, ``\;`` a thick one, 5 mu.
_GITHUB_SAFE = {",": r"\thinspace", ":": r"\mkern4mu", ">": r"\mkern4mu", ";": r"\mkern5mu",
                "!": r"\negthinspace", "{": r"\lbrace", "}": r"\rbrace", "|": r"\Vert"}


def md_math(tex: str) -> str:
    r"""Math for Markdown that GitHub renders too: ``\,`` becomes ``\thinspace``, ``\{ \}`` become
    ``\lbrace \rbrace``, ``\:`` ``\mkern4mu`` (:data:`_GITHUB_SAFE`); ``\\`` and commands are kept. KaTeX,
    MathJax 3 and LaTeX render both forms alike."""
    def swap(m):
        cmd = m.group(0)
        if len(cmd) == 2 and cmd[1] in _GITHUB_SAFE:
            follows = m.string[m.end():m.end() + 1]
            # a letter or digit after it would be read into the command's name or the \mkern's size
            return _GITHUB_SAFE[cmd[1]] + (" " if follows.isalnum() else "")
        return cmd
    return re.sub(r"\\(?:[A-Za-z]+|.)", swap, tex)


def tex_lines(tex: str, width: int = WIDTH) -> List[str]:
    """LaTeX for a terminal or a Markdown file: each line broken at spaces into lines of at most ``width`` columns
    where a space allows (a longer token stays whole): at the outermost space past half the line (outside braces
    and ``\\left ... \\right`` where it can), or past a quarter of it where that space is outside them all, and
    never inside a ``\\text{...}`` name, after a ``%`` or after a ``\\`` that a space follows. To LaTeX a line
    break is a space, in math and in ``\\text`` alike, so the lines paste as they are; none starts with what
    Markdown reads at a line's start as a list item, a quote or a heading, even between ``$$`` (``- ``, ``+ ``,
    ``* ``, ``> ``, ``# ``, ``1. ``): such a token ends the line before it, with the term before it, and ``=`` or
    ``<`` begins a line with the term after it (a line of ``=`` alone would underline the one above)."""
    # a name in \text{...} ("layer comm") stays on one line: its spaces are held while the line is cut
    tex = re.sub(r"\\text\{[^{}]*\}", lambda m: m.group(0).replace(" ", "\0"), tex)
    out = []
    for line in tex.split("\n"):
        tokens: List[str] = []
        glue = comment = False            # the next token stays on this token's line; a comment runs to its end
        for token in line.split(" "):
            if tokens and (glue or token in ("+", "-", "*", ">") or token.startswith(("#", ">"))
                           or re.fullmatch(r"\d+[.)]", token)):
                tokens[-1] += " " + token          # the operator goes with the term before it
            else:
                tokens.append(token)
            comment = comment or re.search(r"(?<!\\)%", token) is not None      # the rest of the line with it
            glue = comment or token in ("=", "<") or (len(token) - len(token.rstrip("\\"))) % 2 == 1
        depth, d = [], 0             # the nesting at each token's start
        for token in tokens:
            depth.append(d)
            d += (token.count("{") - token.count("}") + len(_LEFT.findall(token)) - len(_RIGHT.findall(token)))
        current: List[int] = []
        for i in range(len(tokens)):
            current.append(i)
            while len(current) > 1 and len(" ".join(tokens[k] for k in current)) > width:
                # where the line may break: before one of its tokens, past half the line, or past a quarter of it
                # outside every brace; the outermost of those, the last of the outermost
                before = {j: len(" ".join(tokens[k] for k in current[:j])) for j in range(1, len(current))}
                cuts = ([j for j, n in before.items() if n >= width // 2
                         or (n >= width // 4 and depth[current[j]] == 0)] or [len(current) - 1])
                j = min(cuts, key=lambda j: (depth[current[j]], -j))
                out.append(" ".join(tokens[k] for k in current[:j]))
                current = current[j:]
        out.append(" ".join(tokens[k] for k in current))
    return [x.replace("\0", " ") for x in out]


_LEFT, _RIGHT = re.compile(r"\\left(?![A-Za-z])"), re.compile(r"\\right(?![A-Za-z])")


# the notebook display of the model's objects (their ``_repr_latex_`` hooks look it up)
notation.DISPLAY.update(quantity=quantity_repr_latex, model=model_repr_latex)
