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

from typing import Iterable, Optional, Sequence

import sympy as sp
from sympy.printing.latex import LatexPrinter as _SympyLatexPrinter

from . import notation
from .display import si_prefix
from .simplify import shorten, termwise
from .symbols import PARAMS
from .terms.base import NamedTerm


class LatexPrinter(_SympyLatexPrinter):
    """sympy's LaTeX printer with one more setting, ``book``: print the book's macros where the book
    has a symbol. Without it, the output is exactly ``sympy.latex``'s."""

    printmethod = "_latex"
    _default_settings = {**_SympyLatexPrinter._default_settings, "book": False}


def latex(expr, book: bool = False, **settings) -> str:
    """LaTeX of ``expr`` in the book's notation (``book=True``: with the book's macros)."""
    return LatexPrinter(dict(settings, book=book)).doprint(expr)


def equation(lhs, rhs, book: bool = False, **settings) -> str:
    """``lhs = rhs`` (either side a sympy object or an already printed string)."""
    side = (lambda x: x if isinstance(x, str) else latex(x, book=book, **settings))
    return f"{side(lhs)} = {side(rhs)}"


def split_equation(lhs, rhs, book: bool = False, width: int = 150) -> str:
    """``lhs = rhs``; a long sum is stacked in ``aligned``, its terms packed into lines of about ``width``
    characters of LaTeX source."""
    flat = equation(lhs, rhs, book=book)
    if not isinstance(rhs, sp.Add) or len(flat) <= width:
        return flat
    p = LatexPrinter({"book": book})
    lines: list = []
    for i, t in enumerate(p._as_ordered_terms(rhs, order=None)):
        neg = t.could_extract_minus_sign()
        body = p._print(-t if neg else t)
        piece = ("- " if neg else "+ " if i else "") + body
        if lines and len(lines[-1]) + len(piece) <= width:
            lines[-1] += " " + piece
        else:
            lines.append(piece)
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


def _subclasses(cls):
    for c in cls.__subclasses__():
        yield c
        yield from _subclasses(c)


# every NamedTerm subclass is defined by now: ``.simplify`` (imported above) imports the model, and
# the terms the model does not use are imported here
from .terms import moe as _moe  # noqa: E402,F401

_NAMED_TERMS = {c.__name__: c for c in _subclasses(NamedTerm)}

#: The cost term classes, by name (their notation is :data:`mlsysim_sym.notation.TERMS`, in that order).
TERM_CLASSES = {t.name: _NAMED_TERMS[t.name] for t in notation.TERMS}


def term_call(term: notation.Term) -> sp.Basic:
    """The cost term applied to its formal arguments, e.g. ``RingAllReduce(M, N, beta, alpha)``."""
    args = [notation.FORMAL[a] if a in notation.FORMAL else PARAMS[a].symbol if a in PARAMS
            else notation.symbol(a, positive=True) for a in term.args]  # a model quantity (``T_comm``)
    return TERM_CLASSES[term.name](*args)


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
    return chain(parts, book=book)


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
_PLAIN = {"1": "", "1/s": r"\,\text{s}^{-1}", "flop/B": r"\,\text{flop/B}"}


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
    env.filters["inline"] = lambda x: "$" + (x if isinstance(x, str) else latex(x)) + "$"
    env.filters["md_text"] = md_text
    env.filters["tex_text"] = tex_text
    return env


_TEX_SPECIAL = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "_": r"\_", "&": r"\&", "%": r"\%",
                "#": r"\#", "$": r"\$", "^": r"\^{}", "~": r"\~{}"}


def tex_text(text: str) -> str:
    """Plain text for LaTeX: its special characters escaped."""
    return "".join(_TEX_SPECIAL.get(ch, ch) for ch in str(text))


def md_text(text: str) -> str:
    """Plain text for Markdown (also inside table cells): ``|``, ``*`` and ``_`` escaped."""
    return "".join("\\" + ch if ch in "|*_" else ch for ch in str(text))
