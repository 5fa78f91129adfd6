r"""The pieces a book author uses in the book's own toolchain: the macros files and an example chapter fragment.

* ``docs/macros/``: the book's macros as files to include (:mod:`mlsysim_sym.macros`: LaTeX, MathJax, KaTeX,
  a Quarto include) and a README saying which goes where;
* ``docs/chapter_fragment.md``: ``docs/quarto/chapter_fragment.qmd`` (written by hand, its equations and
  numbers printed by :mod:`mlsysim_sym.cells` in Python cells with ``output: asis``) executed as Quarto's
  Jupyter engine would (:func:`execute`): includes expanded, each cell run in one namespace, in order, and
  replaced by its output. Quarto cannot be installed on these machines (its package downloads a binary);
  ``tests/test_chapter_fragment.py`` renders the result with pandoc, resolving ``@eq-`` references as Quarto
  does (``tests/quarto_eq_refs.lua``), under MathJax and KaTeX in headless Chromium.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path
from typing import Dict, Optional, Tuple

from mlsysim_sym import macros

ROOT = Path(__file__).resolve().parent.parent
FRAGMENT = ROOT / "docs" / "quarto" / "chapter_fragment.qmd"

_INCLUDE = re.compile(r"^\{\{<\s*include\s+(\S+)\s*>\}\}[ \t]*$", re.M)
_CELL = re.compile(r"^```\{python\}[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
_OPTION = re.compile(r"^#\|\s*([\w-]+)\s*:\s*(.*?)\s*$")
_FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.S)

README = """# The book's macros, ready to include

With `book=True` (`mlsysim_sym.latex(expr, book=True)`, `mlsysim-sym equations NAME --book`,
`mlsysim_sym.cells.equation(NAME, book=True)`) the package prints the book's macros (`\\DataParallelDegree`)
instead of their LaTeX. A page shows them only where its math engine knows them. The files here define every
macro book mode prints (the book's notation registry `mlsysim.Symbols` and the macros we propose in
`docs/registry/*.yaml`), all from `mlsysim_sym.notation.book_macros()`; `python -m derivations` writes them and
`mlsysim-sym equations --macros --format tex|mathjax|katex|qmd` prints the same text.

| output | file | how |
|---|---|---|
| HTML with MathJax (Quarto's default) | `book_macros.html` | in the page's head before MathJax loads: Quarto's `include-in-header` (`format: html: include-in-header: macros/book_macros.html`). It adds the macros to MathJax v3's configuration (`tex.macros`) and raises its `tex.maxBuffer` to %(buffer)s (a larger value the page set is kept): MathJax's default, 5 KiB, is too small for the long expanded and closed forms ("MathJax internal buffer size exceeded"). MathJax knows only the macros its configuration or earlier math defines |
| HTML with KaTeX (`html-math-method: katex`) | `book_macros.katex.json` | KaTeX's `macros` option, for a page that calls KaTeX itself (`katex.render(tex, el, {macros: ..., maxExpand: %(expand_code)s})` or auto-render's options), with KaTeX's `maxExpand` option beside it at %(expand)s or more: KaTeX's default, 1000 macro expansions an equation, is too small for the long closed and expanded forms in book mode ("Too many expansions: infinite loop or need to increase maxExpand setting"; the default model's closed `T_step`, `mfu`, `scaling_efficiency` and `effective_throughput` take about 1,200, the extended model's up to about 10,500). pandoc's `--katex` script, which Quarto's `html-math-method: katex` runs, takes no option: there `_macros.qmd` defines them and raises `maxExpand` |
| PDF (LaTeX) | `book_macros.tex` | in the preamble: Quarto's `include-in-header` (`format: pdf: include-in-header: macros/book_macros.tex`); `\\providecommand` leaves a macro the book's preamble already defines as it is |
| a Quarto chapter, any of these | `_macros.qmd` | the `include` shortcode, once, before the first equation; nothing more for MathJax, for KaTeX as pandoc or Quarto run it, or for a PDF. For HTML: hidden display blocks, `\\def\\gdef{\\def}` then one `\\gdef` line a macro. pandoc's KaTeX script renders every equation of the page with one shared `macros` object, in which a `\\gdef` persists (a `\\def` or `\\newcommand` ends with its equation); MathJax keeps a `\\def` for the whole page but has no `\\gdef`, which the first block gives it (KaTeX drops that local definition at the block's end). A raw HTML script raises MathJax's `tex.maxBuffer` as `book_macros.html` does, whether MathJax loads before or after it, and KaTeX's `maxExpand` to %(expand)s (a larger value the page passed is kept) in `katex.render` and `katex.renderToString`, whether KaTeX loads before the include or after it (pandoc loads it `defer`). For a PDF: a raw LaTeX block of `\\providecommand` lines |

Spacing: the documents, `mlsysim_sym.cells` and `mlsysim-sym equations --quarto` (its `--json` too) write LaTeX's `\\:` and `\\;` (which GitHub's Markdown eats) as `\\mkern4mu` and `\\mkern5mu`, which KaTeX, MathJax 3 and LaTeX all define (MathJax 3.2 lacks `\\medspace` and `\\thickspace`, KaTeX lacks `\\mspace`); `mlsysim_sym.latex()` and `equations` without `--quarto` give sympy's LaTeX as it prints it (`\\:`, `\\left\\{`), which the three read as well: `mlsysim_sym.printing.md_math` turns one into the other.

No macro takes arguments today; one that does (`#1`) is declared with its count in each file.
`docs/quarto/chapter_fragment.qmd` is an example chapter fragment that includes `_macros.qmd` and prints its
equations and numbers with `mlsysim_sym.cells`; `docs/chapter_fragment.md` is it executed (the tests render it
with MathJax and with KaTeX).
""" % {"buffer": f"{macros.MATHJAX_MAX_BUFFER:,}", "expand": f"{macros.KATEX_MAX_EXPAND:,}",
       "expand_code": macros.KATEX_MAX_EXPAND}


def macro_files() -> Dict[str, str]:
    """``docs/macros/*``: the four formats of :mod:`mlsysim_sym.macros` and the README."""
    out = {f"docs/macros/{name}": macros.text(fmt) for fmt, name in macros.FORMATS.items()}
    out["docs/macros/README.md"] = README
    return out


def expand_includes(text: str, base: Path, fresh: Optional[Dict[str, str]] = None, depth: int = 0) -> str:
    """Quarto's ``include`` shortcodes replaced by the files they name (relative to ``base``), recursively; a file
    of ``fresh`` (``docs/...`` path -> text, a render not yet written) is read from there."""
    if depth > 8:
        raise RuntimeError("include shortcodes nested more than 8 deep (an include of itself?)")
    fresh = fresh or {}

    def one(m):
        path = (base / m.group(1)).resolve()
        rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else None
        text = fresh[rel] if rel in fresh else path.read_text(encoding="utf-8")
        return expand_includes(text, path.parent, fresh, depth + 1).rstrip("\n")
    return _INCLUDE.sub(one, text)


def _options(code: str) -> Tuple[Dict[str, str], str]:
    """A cell's ``#| key: value`` options (its first lines) and the rest of its code."""
    lines = code.splitlines()
    opts = {}
    while lines and _OPTION.match(lines[0]):
        key, value = _OPTION.match(lines[0]).groups()
        opts[key] = value.strip("'\"")
        lines.pop(0)
    return opts, "\n".join(lines) + "\n"


def execute(path: Path = FRAGMENT, fresh: Optional[Dict[str, str]] = None) -> str:
    """The Markdown Quarto's Jupyter engine makes of the ``.qmd`` at ``path``: its includes expanded, its Python
    cells run in one namespace, in order (in the document's folder), each replaced by what it prints: as it is
    with ``output: asis``, else as a code block; the code shown unless ``echo: false`` (the cell's option, else
    the front matter's ``execute: echo``). A cell that raises stops the render, as Quarto's does. ``fresh``: files
    to include from a render not yet written (:func:`expand_includes`)."""
    import yaml

    text = expand_includes(path.read_text(encoding="utf-8"), path.parent, fresh)
    front = _FRONT.match(text)
    meta = (yaml.safe_load(front.group(1)) or {}) if front else {}
    echo_default = str((meta.get("execute") or {}).get("echo", True)).lower()
    namespace: Dict[str, object] = {"__name__": "__main__"}
    count = [0]

    def run(m):
        count[0] += 1
        opts, code = _options(m.group(1))
        buffer = io.StringIO()
        here = os.getcwd()
        try:
            os.chdir(path.parent)
            with contextlib.redirect_stdout(buffer):
                exec(compile(code, f"{path.name}, cell {count[0]}", "exec"), namespace)
        except Exception as exc:
            raise RuntimeError(f"{path.name}: cell {count[0]} raised {type(exc).__name__}: {exc}") from exc
        finally:
            os.chdir(here)
        out = buffer.getvalue().rstrip("\n")
        parts = []
        if opts.get("echo", echo_default).lower() != "false":
            parts.append("```python\n" + code.rstrip("\n") + "\n```")
        if out:
            parts.append(out if opts.get("output") == "asis" else "```\n" + out + "\n```")
        return "\n\n".join(parts)
    body = _CELL.sub(run, text)
    return re.sub(r"\n{3,}", "\n\n", body).rstrip("\n") + "\n"


def render_files() -> Dict[str, str]:
    """Every file this module writes into ``docs/``."""
    files = macro_files()
    return {**files, "docs/chapter_fragment.md": execute(FRAGMENT, files)}
