"""The example chapter fragment and the macros files, as the book's toolchain uses them.

``docs/quarto/chapter_fragment.qmd`` prints its equations and numbers with :mod:`mlsysim_sym.cells` in cells with
``output: asis`` and includes ``docs/macros/_macros.qmd``; ``docs/chapter_fragment.md`` is it executed as Quarto's
Jupyter engine would (``derivations/toolchain.py``). Quarto cannot be installed here, nor pandoc-crossref: pandoc
renders the Markdown to HTML as Quarto's engine does, with ``tests/quarto_eq_refs.lua`` resolving ``@eq-``
references by Quarto's rules, and headless Chromium renders the math with MathJax v3 (the book's macros from
``docs/macros/book_macros.html`` in the head, as ``include-in-header`` puts them) and with KaTeX (its ``macros``
option from ``docs/macros/book_macros.katex.json``). No math error, no undefined macro, no unresolved reference,
nothing of TeX in the text, every display inside the column. Each check is shown to catch its defect.

Nothing is skipped: without pandoc, chromium, node or npm the tests fail and say to run .ci/run.
"""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import browser_check as bc  # noqa: E402

from derivations import toolchain  # noqa: E402
from mlsysim_sym import cells, macros, notation  # noqa: E402

FRAGMENT_MD = ROOT / "docs" / "chapter_fragment.md"
FILTER = ROOT / "tests" / "quarto_eq_refs.lua"
_LABEL = re.compile(r"^\$\$ \{#(eq-[a-z0-9-]+)\}$", re.M)
_REF = re.compile(r"-?@(eq-[A-Za-z0-9_-]*[A-Za-z0-9])")


@pytest.fixture(scope="module")
def fresh():
    return toolchain.render_files()


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    missing = bc.missing_tools()
    if missing:
        pytest.fail(f"{', '.join(missing)} not installed: the rendering test needs pandoc, chromium, node and npm; "
                    f"run .ci/run (it installs them with apt on a fresh Debian machine)", pytrace=False)
    bc.ensure_katex()
    return tmp_path_factory.mktemp("fragment")


def test_the_committed_files_are_a_fresh_render(fresh):
    stale = [rel for rel, text in fresh.items() if not (ROOT / rel).is_file() or (ROOT / rel).read_text() != text]
    assert not stale, f"{stale} differ from a fresh render; run `python -m derivations`"
    assert set(fresh) == {"docs/chapter_fragment.md", "docs/macros/README.md", "docs/macros/book_macros.tex",
                          "docs/macros/book_macros.html", "docs/macros/book_macros.katex.json",
                          "docs/macros/_macros.qmd"}


def test_the_fragment_is_its_cells_output(fresh):
    qmd = toolchain.FRAGMENT.read_text()
    md = fresh["docs/chapter_fragment.md"]
    assert "{{< include ../macros/_macros.qmd >}}" in qmd and fresh["docs/macros/_macros.qmd"].rstrip() in md
    # no equation typed by hand in the source: every $$ and $ of the .qmd's text is in a cell's output
    prose = re.sub(r"^```\{python\}.*?^```$", "", qmd, flags=re.S | re.M)
    assert "$" not in prose
    # the equations are the cell API's, the numbers those of solve() (the bundled example, README: 3.369 s, DP
    # 618.5 ms, memory 59.41 GB)
    for eq in (cells.equation("RingAllReduce", book=True), cells.equation("T_dp"), cells.equation("T_sync", book=True),
               cells.equation("BubbleFraction", book=True)):
        assert eq in md
    assert "its step of 3.369 s is 1.757 s of the replica's own work, 618.5 ms of data-parallel" in md.replace("’", "'")
    assert "each accelerator holds 59.41 GB" in md
    assert "```python" not in md            # echo: false in the front matter


def test_every_reference_of_the_fragment_names_one_of_its_equations(fresh):
    md = fresh["docs/chapter_fragment.md"]
    labels = _LABEL.findall(md)
    refs = set(_REF.findall(md))
    assert labels == ["eq-t-ring", "eq-t-sync", "eq-t-dp", "eq-b-pipe"]
    assert refs == set(labels)


def _pandoc(markdown: str, math: str):
    """HTML of ``markdown`` through pandoc with the Quarto reference filter, and what the filter wrote to stderr."""
    proc = subprocess.run(["pandoc", "-f", "markdown", "-t", "html", f"--{math}", "--wrap=none",
                           f"--lua-filter={FILTER}"], input=markdown, capture_output=True, text=True, timeout=120)
    if proc.returncode:
        raise RuntimeError(proc.stderr)
    return proc.stdout, proc.stderr


def reference_problems(html: str, stderr: str) -> list:
    """Unresolved or dangling references in pandoc's HTML (Quarto writes an unresolved one as ``?@eq-x``)."""
    out = [line for line in stderr.splitlines() if line.strip()]
    visible = re.sub(r"<!--.*?-->", "", html, flags=re.S)
    out += [f"unresolved reference {m.group(0)}" for m in re.finditer(r"\??@eq-[\w-]+", visible)]
    out += [f"label left as text: {m.group(0)}" for m in re.finditer(r"\{#eq-[\w-]+\}", visible)]
    ids = set(re.findall(r'id="(eq-[\w-]+)"', html))
    out += [f"link to #{h} names no equation" for h in re.findall(r'href="#(eq-[\w-]+)"', html) if h not in ids]
    return out


def page_problems(rep: dict) -> list:
    """What a reader would see wrong on the rendered page (either engine's report)."""
    out = [f"math error: {e['error']} in {e['tex'][:100]!r}" for e in rep["errors"] + rep.get("exceptions", [])]
    out += [f"undefined macro {m}" for m in rep.get("undefined", [])]
    if rep.get("failure") or rep.get("pending"):
        out.append(f"MathJax did not finish: {rep.get('failure')}, {rep.get('pending')} spans left")
    for m in re.finditer(r"\$|\\[A-Za-z]+|\\[^A-Za-z\s]|\{#eq-|@eq-", rep["text"]):
        out.append(f"TeX or a reference leaks into the text: {rep['text'][max(0, m.start() - 40):m.end() + 30]!r}")
    out += [f"display equation {d['width']} px wide (column {bc.COLUMN} px)" for d in rep["displays"]
            if d["width"] > bc.COLUMN and not d.get("hidden")]
    return out


def _mathjax(pages: Path, markdown: str, header: str, name: str) -> dict:
    html, _ = _pandoc(markdown, "mathjax")
    path = pages / f"{name}.html"
    path.write_text(bc.mathjax_page(html, header, ROOT / "docs"), encoding="utf-8")
    return bc.measure(path)


def _katex(pages: Path, markdown: str, macros_json: dict, name: str) -> dict:
    html, _ = _pandoc(markdown, "katex")
    path = pages / f"{name}.html"
    path.write_text(bc.page(html, macros_json, ROOT / "docs"), encoding="utf-8")
    return bc.measure(path)


def _numbered(html: str) -> list:
    return re.findall(r'<a href="#(eq-[\w-]+)" class="quarto-xref">Equation\xa0(\d+)</a>', html)


@pytest.mark.parametrize("math", ["mathjax", "katex"])
def test_the_fragment_resolves_every_reference_as_quarto_does(math):
    html, stderr = _pandoc(FRAGMENT_MD.read_text(), math)
    assert reference_problems(html, stderr) == []
    # numbered in document order; @eq-x is "Equation N" linking to it
    order = {"eq-t-ring": "1", "eq-t-sync": "2", "eq-t-dp": "3", "eq-b-pipe": "4"}
    assert set(_numbered(html)) == set(order.items()) and len(_numbered(html)) == 9
    for label, n in order.items():
        assert re.search(rf'<span id="{label}"><span class="math display">.*?\\qquad\({n}\)', html, re.S), label


def test_the_fragment_renders_with_mathjax(pages):
    header = (ROOT / "docs" / "macros" / "book_macros.html").read_text()
    rep = _mathjax(pages, FRAGMENT_MD.read_text(), header, "mathjax")
    assert rep["engine"] == "MathJax 3.2.2"
    assert page_problems(rep) == []
    # the hidden block of definitions, 4 equations, 5 symbols in the text
    assert rep["math"] == 10 and len([d for d in rep["displays"] if not d["hidden"]]) == 4
    assert "By Equation\xa02 its step of 3.369 s" in rep["text"] and rep["column"] == bc.COLUMN


def test_the_fragment_renders_with_katex(pages):
    rep = _katex(pages, FRAGMENT_MD.read_text(), json.loads((ROOT / "docs" / "macros" / "book_macros.katex.json")
                                                             .read_text()), "katex")
    assert rep["fonts"] and page_problems(rep) == []
    assert rep["math"] == 10 and len(rep["displays"]) == 5          # the hidden block of definitions too
    assert "By Equation\xa02 its step of 3.369 s" in rep["text"]


def test_the_include_alone_defines_the_macros_for_mathjax(pages):
    # _macros.qmd's hidden \def block is all MathJax needs (docs/macros/README.md): no header include
    rep = _mathjax(pages, FRAGMENT_MD.read_text(), "", "include_only")
    assert page_problems(rep) == []


def test_each_check_catches_its_defect(pages):
    md = FRAGMENT_MD.read_text()
    # a reference to an equation the document does not define: Quarto's ?@eq-x, and the filter says so
    html, stderr = _pandoc(md + "\nAs @eq-not-here shows.\n", "mathjax")
    found = reference_problems(html, stderr)
    assert any("?@eq-not-here" in f for f in found) and any("unresolved" in f and "eq-not-here" in f for f in found)
    # a label defined twice is an error
    with pytest.raises(RuntimeError, match="defined twice"):
        _pandoc(md + "\n$$\nx\n$$ {#eq-t-dp}\n", "katex")
    # without the macros (no include, no header): MathJax reports each undefined macro, KaTeX draws it in red
    bare = re.sub(r'::: \{\.content-visible when-format="html"\}.*?\n:::\n:::\n', "", md, flags=re.S)
    assert bare != md
    found = page_problems(_mathjax(pages, bare, "", "bare_mathjax"))
    assert any("Undefined control sequence \\RingAllReduceCompletionTime" in f for f in found), found
    found = page_problems(_katex(pages, bare, {}, "bare_katex"))
    assert "undefined macro \\RingAllReduceCompletionTime" in found, found
    # TeX that no engine typesets leaks into the text; a display wider than the column
    wide = "$$\n" + " + ".join(f"x_{{{i}}}" for i in range(120)) + "\n$$\n"
    found = page_problems(_mathjax(pages, wide, "", "wide"))
    assert any(f.startswith("display equation") for f in found), found


def test_the_macros_file_compiles_with_latex(tmp_path):
    """The PDF route: book_macros.tex in the preamble (twice: \\providecommand keeps the first), then the raw LaTeX
    block of _macros.qmd in the body, then the fragment's book-mode equations."""
    if shutil.which("pdflatex") is None:
        pytest.fail("pdflatex not installed: run .ci/run", pytrace=False)
    raw = re.search(r"```\{=latex\}\n(.*?)```", (ROOT / "docs" / "macros" / "_macros.qmd").read_text(), re.S).group(1)
    body = "\n".join(f"\\[\n{eq.split(chr(10), 1)[1].rsplit(chr(10), 1)[0]}\n\\]"
                     for eq in (cells.equation("RingAllReduce", book=True, label=False),
                                cells.equation("T_sync", book=True, label=False)))
    doc = ("\\documentclass{article}\n\\usepackage{amsmath}\n\\input{book_macros.tex}\n\\input{book_macros.tex}\n"
           f"\\begin{{document}}\n{raw}\n{body}\n\\end{{document}}\n")
    shutil.copy(ROOT / "docs" / "macros" / "book_macros.tex", tmp_path)
    (tmp_path / "t.tex").write_text(doc)
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert (tmp_path / "t.pdf").is_file() and "Undefined control sequence" not in proc.stdout


def test_each_format_declares_a_macros_arguments():
    # no macro of the book takes arguments today; one that does works in each format
    m = {"\\Sq": "{#1}^{2}", "\\Pair": "\\left(#1, #2\\right)", "\\N": "N"}
    assert macros.arity(m["\\Pair"]) == 2 and macros.arity("\\#1") == 0
    assert "\\providecommand{\\Pair}[2]{\\left(#1, #2\\right)}" in macros.tex(m)
    assert '"Pair": [\n  "\\\\left(#1, #2\\\\right)",\n  2\n ]' in macros.mathjax(m)
    assert json.loads(macros.katex(m)) == m
    assert "\\def\\Pair#1#2{\\left(#1, #2\\right)}" in macros.qmd(m)
    assert all(macros.arity(t) == 0 for t in notation.book_macros().values())
    with pytest.raises(ValueError, match="format must be one of tex, mathjax, katex, qmd"):
        macros.text("html")


def test_macros_with_arguments_render_in_both_engines(pages):
    m = {"\\Sq": "{#1}^{2}", "\\Pair": "\\left(#1, #2\\right)"}
    md = "$$\n\\Sq{x} = \\Pair{a}{b}\n$$\n"
    rep = _mathjax(pages, md, macros.mathjax(m), "args_mathjax")
    assert page_problems(rep) == [] and rep["math"] == 1
    rep = _katex(pages, md, json.loads(macros.katex(m)), "args_katex")
    assert page_problems(rep) == [] and rep["math"] == 1
    # and through the include's \def block alone (MathJax)
    rep = _mathjax(pages, macros.qmd(m).split("-->", 1)[1] + "\n" + md, "", "args_include")
    assert page_problems(rep) == [] and rep["math"] == 2
