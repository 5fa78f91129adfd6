r"""The one LaTeX printer of the package: the book's notation, readable cases.

:class:`LatexPrinter` is sympy's printer with

* every parameter, model quantity and formal argument named as in
  :mod:`mlsysim_sym.notation`; with ``book=True`` the book's macros instead
  (``\TensorParallelDegree``), so a chapter can paste either form;
* cost terms (``RingAllReduce`` ...) printed under the book's name for them;
* ``Piecewise`` as ``cases`` with *if* / *otherwise*, the Iverson bracket as the
  book's indicator ``\mathbf{1}\{c\}``, floor and ceiling brackets;
* a power with a negative symbolic exponent written as a fraction
  (``x / N_{DP}^{\mathbf{1}\{z \geq 3\}}``), and sums of model quantities in
  reading order (node time, then communication, then bubble).

Expanding the book macros of a book-mode string gives the plain string exactly
(tested), so both forms say the same thing.

In a notebook, :func:`model_repr_latex` and :func:`quantity_repr_latex` are the
``_repr_latex_`` of the model and its quantities; for any expression,
``sympy.init_printing(latex_printer=mlsysim_sym.printing.latex)`` makes this
printer the notebook's.

Examples
--------
>>> from mlsysim_sym.printing import latex
>>> from mlsysim_sym.symbols import sym
>>> latex(sym.tp * sym.pp)
'N_{\\text{PP}} N_{\\text{TP}}'
>>> latex(sym.tp * sym.pp, book=True)
'\\PipelineParallelDegree \\TensorParallelDegree'
"""
from __future__ import annotations

from typing import Iterable, Mapping, Optional, Sequence

import sympy as sp
from sympy.printing.latex import LatexPrinter as _SympyLatexPrinter

from . import notation
from .terms.base import Iverson, NamedTerm


class LatexPrinter(_SympyLatexPrinter):
    """sympy's LaTeX printer in the notation of :mod:`mlsysim_sym.notation` (see the module docstring).

    Settings beyond sympy's: ``book`` (print book macros where the book has a symbol).
    ``symbol_names`` given by the caller extend (and override) the notation table.
    """

    printmethod = "_latex"
    _default_settings = {**_SympyLatexPrinter._default_settings, "book": False}

    def __init__(self, settings: Optional[Mapping] = None):
        settings = dict(settings or {})
        names = dict(notation.symbol_names(bool(settings.get("book", False))))
        names.update(settings.get("symbol_names") or {})
        settings["symbol_names"] = names
        super().__init__(settings)

    # -- our expression classes ---------------------------------------------------------
    def _print(self, expr, **kwargs) -> str:
        if isinstance(expr, NamedTerm):
            return self._print_term(expr, **kwargs)
        if isinstance(expr, Iverson):
            return self._print_indicator(expr, **kwargs)
        return super()._print(expr, **kwargs)

    def _term_name(self, cls) -> str:
        t = notation.TERM_OF.get(cls)
        if t is None:
            return cls.tex
        return t.book if (self._settings["book"] and t.book) else t.latex

    def _print_term(self, expr, exp=None) -> str:
        args = ", ".join(self._print(a) for a in expr.args)
        body = r"%s\left(%s\right)" % (self._term_name(type(expr)), args)
        return body if exp is None else r"\left(%s\right)^{%s}" % (body, exp)

    def _print_indicator(self, expr, exp=None) -> str:
        name = notation.INDICATOR[0] if self._settings["book"] else notation.INDICATOR[1]
        body = r"%s\left\{%s\right\}" % (name, self._print(expr.args[0]))
        return body if exp is None else r"%s^{%s}" % (body, exp)

    # -- readable structure ---------------------------------------------------------------
    def _print_Piecewise(self, expr, exp=None) -> str:
        rows = []
        for e, c in expr.args:
            cond = r"\text{otherwise}" if c is sp.true else r"\text{if } %s" % self._print(c)
            rows.append(r"%s & %s" % (self._print(e), cond))
        tex = r"\begin{cases} %s \end{cases}" % r" \\ ".join(rows)
        return tex if exp is None else r"\left(%s\right)^{%s}" % (tex, exp)

    def _print_Mul(self, expr) -> str:
        numer, denom = [], []
        for f in sp.Mul.make_args(expr):
            if f.is_Pow and not f.exp.is_Number and f.exp.could_extract_minus_sign():
                denom.append(sp.Pow(f.base, -f.exp))
            else:
                numer.append(f)
        if not denom:
            return super()._print_Mul(expr)
        n, d = sp.fraction(sp.Mul(*numer), exact=True)
        sign = ""
        if n.could_extract_minus_sign():
            sign, n = "- ", -n
        return r"%s\frac{%s}{%s}" % (sign, self._print(n), self._print(sp.Mul(d, *denom)))

    def _as_ordered_terms(self, expr, order=None):
        terms = super()._as_ordered_terms(expr, order=order)
        if not expr.is_Add:
            return terms
        rank = notation.quantity_order()
        keys = [min((rank[s] for s in t.free_symbols if s in rank), default=None) for t in terms]
        named = sorted(((k, t) for k, t in zip(keys, terms) if k is not None), key=lambda kt: _reading_rank(kt[0]))
        out = [t for _, t in named] + [t for k, t in zip(keys, terms) if k is None]
        if out[0].could_extract_minus_sign():
            first = next((t for t in out if not t.could_extract_minus_sign()), None)
            if first is not None:
                out.remove(first)
                out.insert(0, first)
        return out


#: Quantities printed first in a sum, in this order (the step assembly reads node, DP, TP, EP, bubble).
_FIRST = ("T_node", "T_dp_exposed", "T_dp", "T_tp", "T_ep", "T_bubble")


def _reading_rank(model_index: int):
    entries = notation.quantity_entries()
    name = entries[model_index].name
    return (0, _FIRST.index(name)) if name in _FIRST else (1, model_index)


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
    for i, t in enumerate(p._as_ordered_terms(rhs)):
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


def term_latex(term: notation.Term, book: bool = False) -> str:
    """The definition of a cost term on its formal arguments, in its alpha-beta form and shortened.

    ``T_ring(M, N, beta, alpha) = 2M(N-1)/(N beta) + 2 alpha (N-1) = 2(N-1)(M/(N beta) + alpha)``
    (a form equal to the previous one is left out).
    """
    from .simplify import shorten, termwise

    call = term.call()
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
_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"),
             (1e-6, "u"), (1e-9, "n"))
#: Units that take an SI prefix.
_PREFIXED = ("s", "B", "flop", "flop/s", "B/s", "J", "W")
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
    if unit not in _PREFIXED or abs(value) < 0.9995e-9:
        return number(value, digits) + r"\,\text{%s}" % unit
    scale, prefix = next((s, p) for s, p in _PREFIXES if abs(value) >= s * 0.9995)
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
