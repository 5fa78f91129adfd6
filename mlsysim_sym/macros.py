r"""The book's macros as files an author includes: LaTeX, MathJax, KaTeX and a Quarto include.

One source, :func:`mlsysim_sym.notation.book_macros` (every macro our book-mode output prints, the
registry's and the ones we propose, ``macro -> LaTeX``), written four ways:

* :func:`tex`: ``\providecommand`` lines for a LaTeX preamble (a PDF: Quarto's ``include-in-header``);
  ``\providecommand`` leaves a macro the book's own preamble already defines as it is;
* :func:`mathjax`: a ``<script>`` that adds the macros to MathJax v3's ``tex.macros`` before MathJax loads
  (an HTML page: Quarto's ``include-in-header``; MathJax knows only the macros its configuration or
  earlier math defines, never a ``\newcommand`` of the text);
* :func:`katex`: the JSON object KaTeX's ``macros`` option takes;
* :func:`qmd`: a Quarto include (the ``include`` shortcode): a hidden display block of ``\def``
  lines for the HTML page's math engine, and a raw LaTeX block of ``\providecommand`` lines for a PDF.

A macro whose LaTeX uses arguments (``#1``) is declared with their count in each format. ``python -m
derivations`` writes the four files into ``docs/macros/``; ``mlsysim-sym equations --macros --format
tex|mathjax|katex|qmd`` prints the same text.

Examples
--------
>>> from mlsysim_sym import macros
>>> macros.tex().splitlines()[3]
'\\providecommand{\\AcceleratorCount}{N_{\\text{GPU}}}'
>>> macros.arity("#1^{#2}")
2
"""
from __future__ import annotations

import json
import re
from typing import Dict, Optional

from . import notation

#: The formats, by the name ``--format`` takes, and the file ``docs/macros/`` holds each in.
FORMATS: Dict[str, str] = {"tex": "book_macros.tex", "mathjax": "book_macros.html", "katex": "book_macros.katex.json",
                           "qmd": "_macros.qmd"}

_SOURCE = ("the book's macros (the registry mlsysim.Symbols and the proposals of docs/registry/*.yaml) for the "
           "equations mlsysim-sym prints with book=True; written by python -m derivations from "
           "mlsysim_sym.notation.book_macros(); do not edit")


def arity(latex: str) -> int:
    """How many arguments a macro's LaTeX uses (the largest ``#n``; 0 for none)."""
    return max((int(n) for n in re.findall(r"(?<!\\)#([1-9])", latex)), default=0)


def _macros(macros: Optional[Dict[str, str]]) -> Dict[str, str]:
    return notation.book_macros() if macros is None else macros


def _providecommands(macros: Dict[str, str]) -> str:
    return "\n".join(rf"\providecommand{{{m}}}" + (f"[{arity(t)}]" if arity(t) else "") + f"{{{t}}}"
                     for m, t in macros.items())


def tex(macros: Optional[Dict[str, str]] = None) -> str:
    r"""``\providecommand`` lines for a LaTeX preamble."""
    return f"% {_SOURCE}.\n% LaTeX or PDF: include this file in the preamble (Quarto: include-in-header).\n%\n" \
        + _providecommands(_macros(macros)) + "\n"


def _json(obj) -> str:
    # ``</`` would end the <script> element early: JSON allows ``<\/``
    return json.dumps(obj, indent=1, ensure_ascii=False).replace("</", "<\\/")


def mathjax(macros: Optional[Dict[str, str]] = None) -> str:
    """A ``<script>`` adding the macros to MathJax v3's configuration (``tex.macros``): put it in the page's head
    before MathJax loads. It adds to a configuration set before it (``window.MathJax``) and keeps the rest."""
    table = {m[1:]: ([t, arity(t)] if arity(t) else t) for m, t in _macros(macros).items()}
    return (f"<!-- {_SOURCE}. HTML with MathJax v3: include this file in the page's head (Quarto: include-in-header), "
            "before MathJax loads. -->\n<script>\n(function () {\n"
            f"  var macros = {_json(table)};\n"
            "  var config = window.MathJax = window.MathJax || {};\n"
            "  config.tex = config.tex || {};\n"
            "  config.tex.macros = Object.assign(config.tex.macros || {}, macros);\n"
            "})();\n</script>\n")


def katex(macros: Optional[Dict[str, str]] = None) -> str:
    """The JSON object KaTeX's ``macros`` option takes (KaTeX counts a macro's ``#n`` arguments itself)."""
    return _json(_macros(macros)) + "\n"


def qmd(macros: Optional[Dict[str, str]] = None) -> str:
    r"""A Quarto include: the macros for the HTML page's math engine as a hidden display block of ``\def`` lines
    (``\def`` and not ``\newcommand``: KaTeX given the JSON of :func:`katex` refuses to ``\newcommand`` a macro it
    knows, MathJax and KaTeX both take ``\def``), and for a PDF as a raw LaTeX block of ``\providecommand`` lines
    (a definition inside a PDF's display math would end with it)."""
    m = _macros(macros)
    defs = "\n".join(rf"\def{m}" + "".join(f"#{i}" for i in range(1, arity(t) + 1)) + f"{{{t}}}"
                     for m, t in m.items())
    return (f"<!-- {_SOURCE}. Quarto: include this file once with the include shortcode, before the first equation. HTML with "
            "MathJax: nothing more; HTML with KaTeX: also give KaTeX book_macros.katex.json as its macros option "
            "(KaTeX keeps no definition from one equation to the next); PDF: the raw LaTeX block below defines "
            "them (or include-in-header book_macros.tex). -->\n\n"
            '::: {.content-visible when-format="html"}\n::: {.hidden}\n$$\n' + defs + "\n$$\n:::\n:::\n\n"
            "```{=latex}\n" + _providecommands(m) + "\n```\n")


_WRITERS = {"tex": tex, "mathjax": mathjax, "katex": katex, "qmd": qmd}


def text(format: str = "tex", macros: Optional[Dict[str, str]] = None) -> str:
    """The macros in one of :data:`FORMATS` (``tex``, ``mathjax``, ``katex``, ``qmd``)."""
    if format not in _WRITERS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    return _WRITERS[format](macros)
