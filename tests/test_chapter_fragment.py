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
    bc.ready()
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
    assert labels == ["eq-t-ring", "eq-t-sync", "eq-t-dp", "eq-b-interleaved"]
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
    order = {"eq-t-ring": "1", "eq-t-sync": "2", "eq-t-dp": "3", "eq-b-interleaved": "4"}
    assert set(_numbered(html)) == set(order.items()) and len(_numbered(html)) == 9
    for label, n in order.items():
        assert re.search(rf'<span id="{label}"><span class="math display">.*?\\qquad\({n}\)', html, re.S), label


def test_the_fragment_renders_with_mathjax(pages):
    header = (ROOT / "docs" / "macros" / "book_macros.html").read_text()
    rep = _mathjax(pages, FRAGMENT_MD.read_text(), header, "mathjax")
    assert rep["engine"] == "MathJax 3.2.2"
    assert page_problems(rep) == []
    # the hidden blocks of definitions (\def\gdef{\def}, the \gdef lines), 4 equations, 5 symbols in the text
    assert rep["math"] == 11 and len([d for d in rep["displays"] if not d["hidden"]]) == 4
    assert "By Equation\xa02 its step of 3.369 s" in rep["text"] and rep["column"] == bc.COLUMN


def test_the_fragment_renders_with_katex(pages):
    rep = _katex(pages, FRAGMENT_MD.read_text(), json.loads((ROOT / "docs" / "macros" / "book_macros.katex.json")
                                                             .read_text()), "katex")
    assert rep["fonts"] and page_problems(rep) == []
    assert rep["math"] == 11 and len(rep["displays"]) == 6          # the hidden blocks of definitions too
    assert "By Equation\xa02 its step of 3.369 s" in rep["text"]


def test_the_include_alone_defines_the_macros_for_mathjax(pages):
    # _macros.qmd's hidden blocks are all MathJax needs (docs/macros/README.md): no header include
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
    assert "\\gdef\\Pair#1#2{\\left(#1, #2\\right)}" in macros.qmd(m)
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
    # and through the include's blocks alone (MathJax)
    rep = _mathjax(pages, macros.qmd(m).split("-->", 1)[1] + "\n" + md, "", "args_include")
    assert page_problems(rep) == [] and rep["math"] == 3


# ---- issue 24: the toolchain defects a reviewer found (spacing, MathJax's buffer, KaTeX through pandoc) ----

def _engine(engine: str, equations: list, tmp_path: Path, macros_: dict = None, mathjax: dict = None) -> dict:
    """``tests/js/tex_engines.js``: the equations ``[(where, tex)]`` typeset by KaTeX or MathJax v3 in node."""
    bc.ensure_katex()
    job = tmp_path / f"{engine}.json"
    job.write_text(json.dumps({"macros": macros_ or {}, "mathjax": mathjax or {},
                               "equations": [{"where": w, "tex": t, "display": True} for w, t in equations]}))
    proc = subprocess.run(["node", str(bc.JS / "tex_engines.js"), engine, str(job)], capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def _math(eq: str) -> str:
    """The TeX of a ``$$ ... $$ {#label}`` display."""
    return eq.split("\n", 1)[1].rsplit("\n", 1)[0]


def test_the_github_safe_spacing_is_defined_in_katex_mathjax_and_latex(tmp_path):
    from mlsysim_sym.printing import _GITHUB_SAFE, md_math
    # \: \> \; become spacing every engine defines (MathJax 3.2.2 has no \medspace or \thickspace, KaTeX no
    # \mspace); a letter or digit after one stays apart from it
    assert md_math(r"a\:b\>c\;1\:x") == r"a\mkern4mu b\mkern4mu c\mkern5mu 1\mkern4mu x"
    tex = [(f"\\{c}", md_math(f"a\\{c}b\\{c}1\\{c} c" + ("\\}" if c == "{" else "\\{" if c == "}" else "")))
           for c in _GITHUB_SAFE]
    # the piecewise equations (T_step's straggler case, BW_eff's hierarchy) in plain LaTeX and with the macros
    m = notation.book_macros()
    piecewise = [(f"{n} book={b}", _math(cells.equation(n, book=b))) for n in ("T_step", "BW_eff") for b in (False, True)]
    assert all(r"\text{for}\mkern4mu " in t for _, t in piecewise)
    for engine in ("katex", "mathjax"):
        rep = _engine(engine, tex + piecewise, tmp_path, m)
        assert rep["errors"] == [] and rep["rendered"] == len(tex) + 2 * 2, (engine, rep["errors"])
    # and the check catches the spacing MathJax lacks
    rep = _engine("mathjax", [("medspace", r"a\medspace b"), ("thickspace", r"a\thickspace b")], tmp_path)
    assert [e["error"] for e in rep["errors"]] == ["Undefined control sequence \\medspace",
                                                   "Undefined control sequence \\thickspace"]
    if shutil.which("pdflatex") is None:
        pytest.fail("pdflatex not installed: run .ci/run", pytrace=False)
    body = "\n".join(f"\\[\n{t}\n\\]" for _, t in tex + piecewise)
    (tmp_path / "t.tex").write_text("\\documentclass{article}\n\\usepackage{amsmath}\n" + macros.tex()
                                    + f"\\begin{{document}}\n{body}\n\\end{{document}}\n")
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "Undefined control sequence" not in proc.stdout, proc.stdout[-2000:]


def _expanded(tex: str, m: dict) -> str:
    """``tex`` with each macro written as the longer of its name and its text: no longer than any text MathJax
    holds while it parses ``tex`` (it replaces a macro by its text in what is left to parse and drops what it
    has parsed)."""
    return re.sub(r"\\[A-Za-z]+", lambda c: max(c.group(0), m.get(c.group(0), ""), key=len), tex)


def test_every_equation_the_package_prints_fits_mathjaxs_buffer():
    # every form, family, fidelity and notation of cells.equation stays under macros.MATHJAX_MAX_BUFFER (the bound
    # of _expanded), and one in twenty of them exceeds MathJax's default, 5 KiB
    from mlsysim_sym.model import Variant, build_model
    m = notation.book_macros()
    sizes = []
    for family in ("transformer", "generic"):
        for fidelity in ("mlsysim", "extended"):
            names = list(build_model(Variant(family=family, fidelity=fidelity))) + [t.name for t in notation.TERMS]
            sizes += [len(_expanded(_math(cells.equation(n, book=b, label=False, form=f, fidelity=fidelity,
                                                           family=family)), m))
                      for n in names for f in cells.FORMS for b in (False, True)]
    assert len(sizes) > 3000 and max(sizes) < macros.MATHJAX_MAX_BUFFER
    assert sum(s > 5 * 1024 for s in sizes) > 100


def test_long_equations_typeset_in_mathjax_with_the_raised_buffer(tmp_path):
    # the reviewer's case: the book-mode expanded and closed forms of the default model (T_step, mfu, T_comm ...)
    # fail with MathJax's default buffer and typeset with the one the MathJax formats set
    from mlsysim_sym.model import build_model
    names = list(build_model())
    eqs = [(f"{n} {f}", _math(cells.equation(n, book=True, label=False, form=f)))
           for n in names for f in ("expanded", "closed")]
    m = notation.book_macros()
    rep = _engine("mathjax", eqs, tmp_path, m)
    failed = {e["where"] for e in rep["errors"]}
    assert all(e["error"].startswith("MathJax internal buffer size exceeded") for e in rep["errors"])
    assert {"T_step expanded", "mfu closed", "T_comm closed"} <= failed
    assert failed <= {w for w, t in eqs if len(_expanded(t, m)) > 5 * 1024}       # the bound holds
    rep = _engine("mathjax", eqs, tmp_path, m, {"maxBuffer": macros.MATHJAX_MAX_BUFFER})
    assert rep["errors"] == [] and rep["rendered"] == len(eqs)


def _run_script(script: str, window: dict) -> dict:
    """``window`` after a ``<script>``'s JavaScript ran in node with it as the page's ``window``."""
    js = re.search(r"<script>\n(.*?)</script>", script, re.S).group(1)
    proc = subprocess.run(["node", "-e", f"var window = {json.dumps(window)};\n{js}\n"
                                         "process.stdout.write(JSON.stringify(window));"],
                          capture_output=True, text=True, timeout=60, check=True)
    return json.loads(proc.stdout)


def test_the_mathjax_formats_raise_the_buffer_and_keep_a_larger_one():
    n = macros.MATHJAX_MAX_BUFFER
    qmd_script = re.search(r"```\{=html\}\n(.*?)```", macros.qmd(), re.S).group(1)
    for script in (macros.mathjax(), qmd_script):
        assert _run_script(script, {})["MathJax"]["tex"]["maxBuffer"] == n
        assert _run_script(script, {"MathJax": {"tex": {"maxBuffer": 4 * n}}})["MathJax"]["tex"]["maxBuffer"] == 4 * n
        assert _run_script(script, {"MathJax": {"tex": {"maxBuffer": 100}}})["MathJax"]["tex"]["maxBuffer"] == n
    # the include after MathJax loaded: its TeX input's options
    loaded = {"MathJax": {"version": "3.2.2", "config": {"tex": {}}, "startup": {"document": {"inputJax": [
        {"parseOptions": {"options": {"maxBuffer": 5120}}}, {}]}}}}
    got = _run_script(qmd_script, loaded)["MathJax"]
    assert got["config"]["tex"]["maxBuffer"] == n
    assert got["startup"]["document"]["inputJax"][0]["parseOptions"]["options"]["maxBuffer"] == n


_KATEX_REPORT = """<script>
document.addEventListener("DOMContentLoaded", function () {
  var content = document.getElementById("content");
  var out = {engine: "KaTeX " + katex.version, math: content.querySelectorAll(".katex").length,
             errors: [].map.call(content.querySelectorAll(".katex-error"), function (e) {
               return {tex: e.textContent.slice(0, 200), error: e.getAttribute("title") || ""}; }),
             red: [].map.call(content.querySelectorAll('.katex-mathml mstyle[mathcolor="#cc0000"]'),
                              function (e) { return e.textContent; })};   // an undefined macro, as page.js
  var pre = document.createElement("pre"); pre.id = "report"; pre.style.display = "none";
  pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
});
</script>
"""


def _standalone(pages: Path, markdown: str, math: str, name: str) -> dict:
    """``pandoc -s --katex`` or ``--mathjax`` (the engine from tests/js/node_modules, where pandoc puts its script:
    KaTeX's renders every math element with one shared macros object) in headless Chromium, and its report."""
    doc = f"::: {{#content}}\n{markdown}\n:::\n"
    if math == "katex":
        args, extra = [f"--katex={bc.KATEX.as_uri()}/"], ["-A", str(pages / "katex_report.html")]
        (pages / "katex_report.html").write_text(_KATEX_REPORT)
    else:
        (pages / "mathjax_report.html").write_text(f'<script src="{(bc.JS / "page_mathjax.js").as_uri()}"></script>\n')
        args, extra = [f"--mathjax={bc.MATHJAX.as_uri()}/tex-chtml.js"], ["-H", str(pages / "mathjax_report.html")]
    proc = subprocess.run(["pandoc", "-s", "-f", "markdown", "-t", "html", "--metadata", "title=check", *args, *extra],
                          input=doc, capture_output=True, text=True, timeout=120, check=True)
    path = pages / f"{name}.html"
    path.write_text(proc.stdout, encoding="utf-8")
    return bc.measure(path)


@pytest.mark.parametrize("math", ["katex", "mathjax"])
def test_the_include_defines_the_macros_for_pandocs_katex_and_mathjax(pages, math):
    include = macros.qmd().split("-->", 1)[1]
    eq = cells.equation("T_dp", book=True)                  # \DataParallelCommunicationTime ... a book macro
    long = cells.equation("T_step", book=True, form="expanded", label=False)     # over MathJax's default buffer
    assert r"\DataParallelCommunicationTime" in eq
    rep = _standalone(pages, include + "\n" + eq + "\n\n" + long + "\n", math, f"include_{math}")
    assert rep["errors"] == [] and rep.get("red", []) == [], rep["errors"][:3]
    assert rep["math"] == 4                                  # \def\gdef, the \gdef lines, the two equations
    # the check catches the include's old form: a \def block keeps nothing in pandoc's KaTeX; without the
    # raised buffer MathJax fails on the long one
    if math == "katex":
        old = include.replace("$$\n\\def\\gdef{\\def}\n$$\n", "").replace("\\gdef\\", "\\def\\")
        rep = _standalone(pages, old + "\n" + eq + "\n", math, "include_old_katex")
        assert "\\DataParallelCommunicationTime" in rep["red"], rep
    else:
        old = re.sub(r"```\{=html\}\n.*?```\n", "", include, flags=re.S)
        rep = _standalone(pages, old + "\n" + long + "\n", math, "include_old_mathjax")
        assert any("buffer size exceeded" in e["error"] for e in rep["errors"]), rep["errors"][:2]
