"""The derivation documents: fresh, their numbers mlsysim's, every equation renders (KaTeX, pdflatex)."""
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
JS = ROOT / "tests" / "js"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from derivations import examples, memory, render  # noqa: E402

from mlsysim_sym import notation  # noqa: E402
from mlsysim_sym.solver import OUTPUTS  # noqa: E402


@pytest.fixture(scope="module")
def rendered():
    return render.render_all()


def test_committed_docs_equal_a_fresh_render(rendered):
    diffs = render.check(rendered)
    assert not diffs, "docs/ differs from a fresh render; run `python -m derivations`\n" + "".join(diffs)[:6000]


def test_every_document_is_rendered_in_both_formats(rendered):
    assert set(rendered) == {"docs/index.md", "docs/step_time.md", "docs/memory.md", "docs/examples.md",
                             "docs/notation.md", "docs/book.md", "docs/published_runs.md", "docs/required.md",
                             "docs/extended.md", "docs/step_time_extended.md", "docs/architecture.md",
                             "docs/modern_runs.md",
                             "docs/mlsysim_sym.tex",
                             "docs/calculator/mlsysim_sym.mjs", "docs/calculator/index.html",
                             "docs/registry/distributed.yaml",
                             "docs/registry/learning.yaml", "docs/registry/performance.yaml",
                             "docs/chapter_fragment.md", "docs/macros/README.md", "docs/macros/book_macros.tex",
                             "docs/macros/book_macros.html", "docs/macros/book_macros.katex.json",
                             "docs/macros/_macros.qmd"} | {
        f"docs/quarto/{name}.qmd" for name in render.DOCUMENTS}
    tex = rendered["docs/mlsysim_sym.tex"]
    for title, _ in render.DOCUMENTS.values():
        assert title in rendered["docs/index.md"] and title.split(":")[0] in tex


# --------------------------------------------------------------------------------------------
# Equations
# --------------------------------------------------------------------------------------------
_DISPLAY = re.compile(r"^\$\$\n(.*?)\n\$\$(?: \{#eq-[a-z0-9-]+\})?$", re.S | re.M)   # labelled: chapter_fragment.md
_CODE = re.compile(r"^```(\w*)\n(.*?)\n```$", re.S | re.M)
_INLINE = re.compile(r"(?<![\\$])\$([^$\n]+?)\$")


def equations(text: str, where: str):
    """Every display, inline and ``latex`` code-block equation of a Markdown document."""
    out = []
    for lang, body in _CODE.findall(text):
        if lang == "latex":
            out.extend({"where": f"{where} (book macros)", "tex": block, "display": True}
                       for block in body.split("\n\n") if not block.startswith(r"\newcommand"))
    text = _CODE.sub("", text)
    out.extend({"where": where, "tex": m, "display": True} for m in _DISPLAY.findall(text))
    text = _DISPLAY.sub("", text)
    out.extend({"where": where, "tex": m, "display": False} for m in _INLINE.findall(text))
    return out


def test_equation_extraction_finds_every_kind():
    text = "a $x_1$ b\n\n$$\ny = 2\n$$\n\n```latex\n\\DataParallelDegree\n```\n\n```python\nf($)\n```\n"
    found = equations(text, "t")
    assert [(e["tex"], e["display"]) for e in found] == [
        ("\\DataParallelDegree", True), ("y = 2", True), ("x_1", False)]


def test_every_equation_renders_in_katex_with_the_book_macros(rendered, tmp_path):
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the KaTeX check needs node and npm (tests/js)")
    if not (JS / "node_modules" / "katex").is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=JS, check=True,
                       capture_output=True, timeout=300)
    items = [e for rel, text in rendered.items() if rel.endswith(".md") for e in equations(text, rel)]
    # the hand-written contract of the plain API's solver too
    items += equations((ROOT / "docs" / "contract.md").read_text(encoding="utf-8"), "docs/contract.md")
    assert len(items) > 800
    assert sum(1 for e in items if "(book macros)" in e["where"]) >= 15
    job = tmp_path / "equations.json"
    job.write_text(json.dumps({"macros": notation.book_macros(), "equations": items}), encoding="utf-8")
    proc = subprocess.run(["node", str(JS / "render.js"), str(job)], capture_output=True, text=True, timeout=300)
    result = json.loads(proc.stdout)
    assert not result["errors"], "\n".join(f"{e['where']}: {e['error']}\n  {e['tex'][:300]}"
                                           for e in result["errors"][:10])
    assert proc.returncode == 0 and result["rendered"] == len(items)


def test_the_katex_check_fails_on_a_bad_equation(tmp_path):
    if shutil.which("node") is None or not (JS / "node_modules" / "katex").is_dir():
        pytest.skip("node or KaTeX missing (the main KaTeX test installs it)")
    job = tmp_path / "bad.json"
    job.write_text(json.dumps({"macros": {}, "equations": [
        {"where": "bad", "tex": r"\frac{1}{", "display": True},
        {"where": "unknown macro", "tex": r"\DataParallelDegree", "display": True}]}))
    proc = subprocess.run(["node", str(JS / "render.js"), str(job)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert [e["where"] for e in json.loads(proc.stdout)["errors"]] == ["bad", "unknown macro"]


def test_the_standalone_tex_compiles_with_pdflatex(rendered, tmp_path):
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex is not installed (Debian: texlive-latex-base texlive-latex-recommended)")
    tex = rendered["docs/mlsysim_sym.tex"]
    assert r"\begin{equation}\fit{0.9\linewidth}{\UsefulComputeFraction = " in tex   # book-macro equations too
    assert r"\label{eq:t-ring}" in tex and r"\tableofcontents" in tex and "{hyperref}" in tex
    (tmp_path / "mlsysim_sym.tex").write_text(tex, encoding="utf-8")
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "mlsysim_sym.tex"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    log = (tmp_path / "mlsysim_sym.log").read_text(errors="replace")
    assert proc.returncode == 0, log[-3000:]
    assert "Undefined control sequence" not in log and "Missing $ inserted" not in log
    assert (tmp_path / "mlsysim_sym.pdf").stat().st_size > 50_000


_OVERFULL = re.compile(r"^Overfull \\hbox \(([\d.]+)pt too wide\) in (?:paragraph|alignment) at lines (\d+)--(\d+)\n"
                       r"(.*?)\n\s*\n", re.M | re.S)


def code_overflows(tex: str, log: str):
    r"""The overfull boxes pdflatex reports for code, ``(source lines, points too wide)``: a line of a
    ``lstlisting`` (its box dump names no font: the log only says at which lines), or a line set in the
    typewriter font (``lmtt`` in the box dump: inline code, ``\texttt``)."""
    listing, inside = set(), False
    for number, line in enumerate(tex.splitlines(), 1):
        if line.startswith(r"\begin{lstlisting}"):
            inside = True
        elif line.startswith(r"\end{lstlisting}"):
            inside = False
        elif inside:
            listing.add(number)
    found = []
    for m in _OVERFULL.finditer(log):
        first, last = int(m.group(2)), int(m.group(3))
        if "lmtt" in m.group(4).replace("\n", "") or listing & set(range(first, last + 1)):
            found.append((f"lines {first}--{last}", float(m.group(1))))
    return found


def _pdflatex(tex: str, where: Path) -> str:
    (where / "doc.tex").write_text(tex, encoding="utf-8")
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
                          cwd=where, capture_output=True, text=True, timeout=300)
    log = (where / "doc.log").read_text(errors="replace")
    assert proc.returncode == 0, log[-3000:]
    return log


def test_the_pdf_keeps_every_code_line_on_the_page(tmp_path):
    """No line of code (a listing, or inline code) runs off the right edge of docs/mlsysim_sym.tex's PDF
    (the committed file; test_committed_docs_equal_a_fresh_render says it is the fresh one). Before code
    lines broke (LaTeX code wrapped at its spaces, inline code after ``.``, ``_``, ``(``...), the step-time
    edition's ``mlsysim_sym.model.build_model(Variant(fidelity="extended"))`` ran 66.8 pt past the margin."""
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex is not installed (Debian: texlive-latex-base texlive-latex-recommended)")
    tex = (ROOT / "docs" / "mlsysim_sym.tex").read_text(encoding="utf-8")
    assert code_overflows(tex, _pdflatex(tex, tmp_path)) == []
    # the rule finds what it looks for: a listing line and an inline-code line too long for the page
    wide = "x" * 300
    probe = tex.replace(r"\begin{document}", "\\begin{document}\n\\begin{lstlisting}\n" + wide
                        + "\n\\end{lstlisting}\n\\texttt{" + wide + "}\n", 1)
    (probe_dir := tmp_path / "probe").mkdir()
    assert len(code_overflows(probe, _pdflatex(probe, probe_dir))) == 2


def test_generated_code_lines_fit_a_page_and_mean_the_same():
    """Every line of a generated LaTeX or Python code block of docs/*.md is at most 64 characters (what fits
    the PDFs made from them: pandoc's default LaTeX sets code at 5.25 pt a character on a 345 pt line, 65
    characters; made so, the step-time edition's 19 pages ran off the page from page 13 on, lines of up
    to 271 characters), and wrapping changes no token: LaTeX reads the same words, Python the same tree."""
    import ast

    from mlsysim_sym.printing import CODE_WIDTH, wrap_code
    for name in ("book", "step_time", "step_time_extended", "notation", "examples", "memory", "required"):
        text = (ROOT / "docs" / f"{name}.md").read_text(encoding="utf-8")
        for lang, block in re.findall(r"^```(latex|python)\n(.*?)^```$", text, re.S | re.M):
            for line in block.splitlines():
                # longer only where the language allows no break (a comment, a run of braces and commands)
                assert len(line) <= CODE_WIDTH or wrap_code(line, lang) == line, (name, line)
    latex_line = (r"\RingAllReduceCompletionTime\left(\CollectivePayloadSize, \DeviceCount\right) &= \frac{2 "
                  r"\CollectivePayloadSize \left(\DeviceCount - 1\right)}{\DeviceCount \LinkBandwidth} + \text{a b} \\")
    wrapped = wrap_code(latex_line, "latex", 40)
    assert len(wrapped.splitlines()) > 3 and all(len(x) <= 40 for x in wrapped.splitlines())
    def tokens(tex):   # TeX's reading: a line end and indent are one space, dropped after a control word
        return re.sub(r"(\\[A-Za-z]+) +", r"\1", re.sub(r"\n +", " ", tex))
    assert tokens(wrapped) == tokens(latex_line) and "\n" in wrapped
    # with no space to break at, a line breaks after a control word followed by a command (TeX drops that
    # line end and the next line's indent, so the tokens are the same)
    word = r"\TrainableParameterFraction}{\DataParallelDegree^{\EventIndicator\left\{\ZeroShardingStage \geq 2\right\}}}"
    wrapped = wrap_code(word, "latex", 70)
    assert all(len(x) <= 70 for x in wrapped.splitlines()) and len(wrapped.splitlines()) == 2
    assert re.sub(r"(\\[A-Za-z]+)\n +(?=\\)", r"\1", wrapped) == word
    assert wrap_code(r"\alpha\beta", "latex", 6) == "\\alpha\n    \\beta"
    assert wrap_code(r"x\\beta\\gamma", "latex", 5) == r"x\\beta\\gamma"    # a line break then text: no command
    assert wrap_code("% " + "x " * 60) == "% " + "x " * 60                   # a comment is never split
    call = ('r = DistributedModel().solve("Llama3_70B", "Research 256", batch_size=256, tp_size=8, pp_size=4, '
            'microbatch_count=8, note="a, b (c) # d")  # a comment, with commas')
    wrapped = wrap_code(call, "python", 60)
    assert len(wrapped.splitlines()) == 4 and max(map(len, wrapped.splitlines())) <= 60
    assert ast.dump(ast.parse(wrapped)) == ast.dump(ast.parse(call))
    assert wrap_code("x" * 100, "python") == "x" * 100 and wrap_code("a " * 60, "console") == "a " * 60


# --------------------------------------------------------------------------------------------
# Numbers: the worked examples equal mlsysim 0.3.0's results
# --------------------------------------------------------------------------------------------
def _flat_key(output: str) -> str:
    return output.replace("node_profile.", "node.")


def _expected(flat, output):
    if output == "dp":
        return flat["parallelism"]["dp"]
    if output == "node_profile.memory_bound":
        return 1 if flat["node.bottleneck"] == "Memory" else 0
    return flat[_flat_key(output)]


@pytest.mark.parametrize("example", examples.EXAMPLES, ids=lambda e: e.key)
def test_worked_examples_equal_mlsysim(example):
    oracle = pytest.importorskip("mlsysim_oracle")
    flat = oracle.mlsysim_solve(example.model, example.fleet, **example.solve_kwargs)
    values = examples.example_context(example)["values"]
    checked = 0
    for output, name in OUTPUTS.items():
        expected = _expected(flat, output)
        if expected is None:          # offload spill: reported only when the state does not fit
            assert values["feasible"]
            continue
        ours = values[name]
        if isinstance(expected, bool):
            assert bool(ours) is expected, name
        else:
            assert math.isclose(ours, expected, rel_tol=1e-9, abs_tol=1e-12), (name, ours, expected)
        checked += 1
    assert checked >= 25


def test_zero_stage_table_equals_mlsysim():
    oracle = pytest.importorskip("mlsysim_oracle")
    example = memory.EXAMPLES[0]
    table = memory.stage_values(example)
    for stage, values in table.items():
        flat = oracle.mlsysim_solve(example.model, example.fleet, **dict(example.solve_kwargs, zero_stage=stage))
        assert math.isclose(values["M_acc"], flat["node.memory_footprint"], rel_tol=1e-12)
    assert table[3]["M_weights"] * 8 == pytest.approx(table[0]["M_weights"])    # ZeRO-3 shards over dp = 8


def test_examples_carry_the_sensitivity_table_of_the_model():
    import warnings

    from mlsysim_sym import sensitivities

    text = (Path(__file__).resolve().parents[1] / "docs" / "examples.md").read_text()
    assert text.count("### Which knob moves MFU most") == 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = sensitivities("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
    # efficiency: elasticity of fleet MFU, printed to 4 digits in the first example's table
    assert f"| $\\eta_{{\\text{{hw}}}}$ | $0.5$ | ${t['efficiency'].elasticity:.4g}$ |" in text


def test_every_contract_citation_names_a_section_of_docs_contract_md():
    # comments cite "docs/contract.md §2.6"; each such section exists (a reader of a clone can follow it)
    headings = set(re.findall(r"^#{2,3} (\d+(?:\.\d+[a-z]?)?)[ .]", (ROOT / "docs" / "contract.md").read_text(),
                              re.M))
    assert {"1", "1.1", "2.2", "2.3a", "5.1", "8"} <= headings
    cited = {}
    for path in list((ROOT / "mlsysim_sym").rglob("*.py")) + list((ROOT / "tests").glob("*.py")) + [ROOT / "README.md"]:
        for ref in re.findall(r"docs/contract\.md`*\s*((?:§[\d.a-z]+[-, ]*)+)", path.read_text(encoding="utf-8")):
            for sec in re.findall(r"§([\d]+(?:\.[\d]+[a-z]?)?)", ref):
                cited.setdefault(sec, path.name)
    assert len(cited) >= 10
    missing = {sec: where for sec, where in cited.items() if sec not in headings}
    assert not missing, missing


def test_every_table_rule_is_followed_by_its_rows():
    # a blank line after a table's rule ends the table in GitHub and pandoc: its rows would print as paragraphs
    # (the rule's dashes are sized by printing.table_rule; a template once left a blank line there)
    broken, tables = [], 0
    for path in sorted((ROOT / "docs").rglob("*.md")) + sorted((ROOT / "docs" / "quarto").glob("*.qmd")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines[:-1]):
            if re.fullmatch(r"\|(:?-{3,}:?\|)+", line):
                tables += 1
                if not lines[i + 1].startswith("|"):
                    broken.append(f"{path.relative_to(ROOT)}:{i + 2}")
    assert tables > 100 and broken == [], broken[:10]
