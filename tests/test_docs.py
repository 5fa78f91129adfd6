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
