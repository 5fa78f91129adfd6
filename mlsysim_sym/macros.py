r"""The book's macros as files an author includes: LaTeX, MathJax, KaTeX and a Quarto include.

One source, :func:`mlsysim_sym.notation.book_macros` (every macro our book-mode output prints, the
registry's and the ones we propose, ``macro -> LaTeX``), written four ways:

* :func:`tex`: ``\providecommand`` lines for a LaTeX preamble (a PDF: Quarto's ``include-in-header``);
  ``\providecommand`` leaves a macro the book's own preamble already defines as it is;
* :func:`mathjax`: a ``<script>`` that adds the macros to MathJax v3's ``tex.macros`` before MathJax loads
  (an HTML page: Quarto's ``include-in-header``; MathJax knows only the macros its configuration or
  earlier math defines, never a ``\newcommand`` of the text);
* :func:`katex`: the JSON object KaTeX's ``macros`` option takes;
* :func:`qmd`: a Quarto include (the ``include`` shortcode): hidden display blocks of ``\gdef``
  lines for the HTML page's math engine (MathJax or KaTeX), and a raw LaTeX block of ``\providecommand`` lines
  for a PDF.

The MathJax formats also raise MathJax's ``tex.maxBuffer`` (:data:`MATHJAX_MAX_BUFFER`) for long equations, and the
qmd include KaTeX's ``maxExpand`` (:data:`KATEX_MAX_EXPAND`); a page that calls KaTeX with :func:`katex`'s JSON
passes that ``maxExpand`` beside it.

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

#: MathJax 3's ``tex.maxBuffer`` the MathJax formats set (at least; a larger one the page set is kept): the size
#: of the TeX MathJax holds while it expands macros, 5 KiB by default, which a long equation of the package exceeds
#: ("MathJax internal buffer size exceeded"; the longest, an extended model's closed form, expands to about 240 000
#: characters; tests/test_chapter_fragment.py checks every equation :func:`mlsysim_sym.cells.equation` prints).
MATHJAX_MAX_BUFFER = 1 << 20

#: KaTeX's ``maxExpand`` a page needs (at least): how many macro expansions KaTeX makes in one equation before it
#: stops with "Too many expansions", 1000 by default, which the long equations the package prints with the book's
#: macros exceed (each macro is one expansion): the default model's closed ``T_step``, ``mfu``,
#: ``scaling_efficiency`` and ``effective_throughput`` (about 1 200), the extended model's up to about 10 500 (its
#: closed ``scaling_efficiency``). KaTeX takes it as an option beside ``macros`` (its JSON, :func:`katex`, is that
#: option's value alone); the qmd include raises it in KaTeX's render functions (:func:`qmd`).
KATEX_MAX_EXPAND = 1 << 15

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
            f"  config.tex.maxBuffer = Math.max(config.tex.maxBuffer || 0, {MATHJAX_MAX_BUFFER});\n"
            "})();\n</script>\n")


def katex(macros: Optional[Dict[str, str]] = None) -> str:
    """The JSON object KaTeX's ``macros`` option takes (KaTeX counts a macro's ``#n`` arguments itself). The long
    equations need KaTeX's ``maxExpand`` option too, at least :data:`KATEX_MAX_EXPAND` (an option of its own, not a
    macro: not in this object)."""
    return _json(_macros(macros)) + "\n"


#: For the qmd include's HTML: raise KaTeX's ``maxExpand`` (:data:`KATEX_MAX_EXPAND`; a larger one the caller gave is
#: kept) in ``katex.render`` and ``katex.renderToString``, which pandoc's and Quarto's KaTeX script call with options
#: of their own and no ``maxExpand``. KaTeX loaded before the include is changed at once; one loaded after it (pandoc
#: loads it ``defer``, after the body's scripts ran) when it sets ``window.katex``.
_KATEX_RAISE = ("(function () {\n"
                f"  var n = {KATEX_MAX_EXPAND}, done = '__maxExpandRaised';\n"
                "  function more(o) { o = Object.assign({}, o); o.maxExpand = Math.max(o.maxExpand || 0, n); "
                "return o; }\n"
                "  function raise(k) {\n"
                "    if (!k || k[done]) return k;\n"
                "    var render = k.render, toString = k.renderToString;\n"
                "    if (render) k.render = function (tex, el, o) { return render.call(k, tex, el, more(o)); };\n"
                "    if (toString) k.renderToString = function (tex, o) { return toString.call(k, tex, more(o)); };\n"
                "    k[done] = true;\n"
                "    return k;\n"
                "  }\n"
                "  if (window.katex) { raise(window.katex); return; }\n"
                "  var held;\n"
                "  Object.defineProperty(window, 'katex', {configurable: true, enumerable: true,\n"
                "    get: function () { return held; }, set: function (k) { held = raise(k); }});\n"
                "})();\n")


#: For the qmd include's HTML: raise MathJax's ``tex.maxBuffer`` (:data:`MATHJAX_MAX_BUFFER`), whether MathJax
#: is loaded after the include (then its configuration, ``window.MathJax``) or before it (then its TeX input's
#: options, read when a page is typeset, after the body's scripts ran).
_MAXBUFFER_SCRIPT = ("<script>\n(function () {\n"
                     f"  var n = {MATHJAX_MAX_BUFFER}, mj = window.MathJax = window.MathJax || {{}};\n"
                     "  function raise(o) { if (o) o.maxBuffer = Math.max(o.maxBuffer || 0, n); }\n"
                     "  if (!mj.version) { mj.tex = mj.tex || {}; raise(mj.tex); return; }\n"
                     "  if (mj.config && mj.config.tex) raise(mj.config.tex);\n"
                     "  var doc = mj.startup && mj.startup.document;\n"
                     "  ((doc && doc.inputJax) || []).forEach(function (jax) { raise(jax.parseOptions && "
                     "jax.parseOptions.options); });\n"
                     "})();\n" + _KATEX_RAISE + "</script>")


def qmd(macros: Optional[Dict[str, str]] = None) -> str:
    r"""A Quarto include: the macros for the HTML page's math engine as hidden display blocks, and for a PDF as a
    raw LaTeX block of ``\providecommand`` lines (a definition inside a PDF's display math would end with it).

    The HTML blocks define each macro with ``\gdef`` (not ``\newcommand``: KaTeX given the JSON of :func:`katex`
    refuses to ``\newcommand`` a macro it knows). KaTeX as pandoc and Quarto run it renders every math element
    with one shared ``macros`` object: a ``\gdef`` persists in it, a ``\def`` ends with its equation. MathJax keeps
    a ``\def`` for the whole page but has no ``\gdef``: the first block, ``\def\gdef{\def}``, gives it one
    (KaTeX forgets that local definition when the block ends and keeps its own ``\gdef``). A raw HTML script
    raises MathJax's ``tex.maxBuffer`` (:data:`MATHJAX_MAX_BUFFER`) and KaTeX's ``maxExpand``
    (:data:`KATEX_MAX_EXPAND`) for the long equations."""
    m = _macros(macros)
    defs = "\n".join(rf"\gdef{m}" + "".join(f"#{i}" for i in range(1, arity(t) + 1)) + f"{{{t}}}"
                     for m, t in m.items())
    return (f"<!-- {_SOURCE}. Quarto: include this file once with the include shortcode, before the first equation. "
            "HTML with MathJax or with KaTeX (Quarto's html-math-method, or pandoc --mathjax or --katex): "
            "nothing more; "
            "PDF: the raw LaTeX block below defines them (or include-in-header book_macros.tex). -->\n\n"
            '::: {.content-visible when-format="html"}\n::: {.hidden}\n```{=html}\n' + _MAXBUFFER_SCRIPT
            + "\n```\n\n$$\n\\def\\gdef{\\def}\n$$\n\n$$\n" + defs + "\n$$\n:::\n:::\n\n"
            "```{=latex}\n" + _providecommands(m) + "\n```\n")


_WRITERS = {"tex": tex, "mathjax": mathjax, "katex": katex, "qmd": qmd}


def text(format: str = "tex", macros: Optional[Dict[str, str]] = None) -> str:
    """The macros in one of :data:`FORMATS` (``tex``, ``mathjax``, ``katex``, ``qmd``)."""
    if format not in _WRITERS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    return _WRITERS[format](macros)
