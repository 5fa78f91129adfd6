"""Every document of docs/ as the book's toolchain and its readers see it.

Each Markdown document goes through pandoc (the engine Quarto runs) to HTML with KaTeX and the book's
macros, in a 720 px text column, and headless Chromium renders it (``tests/browser_check.py`` drives
it; ``tests/js/page.js`` measures the page). Per document: no KaTeX error, no TeX or ``$`` leaking into
the prose, no macro name written in the Markdown missing from the page, no display equation wider than
the column. GitHub, the other reader, applies Markdown's backslash escapes inside math before rendering
it, so the math of every document has no backslash before punctuation it would eat.

Nothing here is skipped: without pandoc, chromium, node or npm the test fails and says to run .ci/run,
which installs them.
"""
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
sys.path.insert(0, str(ROOT / "tests"))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import browser_check as bc  # noqa: E402

import mlsysim_sym  # noqa: E402,F401  (registers every symbol)
from mlsysim_sym import notation  # noqa: E402

DOCUMENTS = sorted(p.relative_to(ROOT).as_posix() for p in DOCS.glob("*.md"))

_FENCE = re.compile(r"^```.*?^```$", re.S | re.M)
_MATH = re.compile(r"\$\$.*?\$\$|(?<![\\$])\$[^$\n]+?\$", re.S)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_MACRO = re.compile(r"\\[A-Za-z]+")


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    bc.ready()
    return tmp_path_factory.mktemp("pages")


def _report(path: Path, out: Path) -> dict:
    return bc.measure(bc.render(path, out, notation.book_macros()))


def problems(markdown: str, rep: dict) -> list:
    """What a reader would see wrong in one rendered document."""
    out = []
    if not rep["fonts"]:
        out.append("the KaTeX fonts did not load: widths would be wrong")
    out += [f"KaTeX error: {e['error']} in {e['tex'][:120]!r}" for e in rep["errors"]]
    out += [f"KaTeX exception: {e['error']} in {e['tex'][:120]!r}" for e in rep["exceptions"]]
    text = rep["text"]
    # a dollar sign before a digit is a price in the prose ($3 per GPU-hour), escaped in the Markdown
    for m in re.finditer(r"\$(?!\d)|\\[A-Za-z]+|\\[^A-Za-z\s]", text):
        out.append(f"TeX leaks into the text: {text[max(0, m.start() - 50):m.end() + 30]!r}")
    prose = _MATH.sub("", _FENCE.sub("", markdown))
    for name in sorted(set(_MACRO.findall(prose))):
        if name not in rep["withCode"]:
            out.append(f"the macro name {name} of the Markdown is not on the page")
    out += [f"display equation {d['width']} px wide (column {bc.COLUMN} px): {d['tex'][:120]!r}"
            for d in rep["displays"] if d["width"] > bc.COLUMN]
    return out


#: Tables wider than the column by content that cannot wrap: the hand-written registry tables of the
#: contract (one row per mlsysim record field and model), and the worked examples' quantity tables, where
#: one cost-term call per table (T_ring(M_act, N_TP, beta, alpha) beside its value) needs 750-790 px. A
#: browser scrolls them sideways; every other table must fit.
WIDE_TABLES = {"docs/contract.md": 7, "docs/examples.md": 3}


def wide_tables(rep: dict) -> list:
    return [f"table {t['width']} px wide (column {bc.COLUMN} px): {t['header'][:60]!r}"
            for t in rep["tables"] if t["width"] > bc.COLUMN]


@pytest.mark.parametrize("rel", DOCUMENTS)
def test_document_renders_in_a_browser_as_written(pages, rel):
    markdown = (ROOT / rel).read_text(encoding="utf-8")
    rep = _report(ROOT / rel, pages)
    found = problems(markdown, rep)
    assert not found, f"{rel}: {len(found)} problems\n" + "\n".join(found[:30])
    assert rep["column"] == bc.COLUMN
    assert len(wide_tables(rep)) == WIDE_TABLES.get(rel, 0), wide_tables(rep)
    if "$" in _FENCE.sub("", markdown):
        assert rep["math"] > 0 and rep["displays"] is not None


def test_the_rendering_check_catches_each_defect(pages):
    bad = "\n".join([
        "The book's \\InterleavedPipelineBubbleFraction vanishes.",
        "",
        "| $$ | $x$ |",
        "|---|---|",
        "| 1 | 2 |",
        "",
        "$$",
        "\\frac{1}{",
        "$$",
        "",
        "$$",
        " + ".join(f"x_{{{i}}}" for i in range(120)),
        "$$",
        ""])
    path = pages / "bad.md"
    path.write_text(bad, encoding="utf-8")
    found = problems(bad, _report(path, pages))
    kinds = {f.split(":")[0].split(" (")[0] for f in found}
    assert any(f.startswith("KaTeX error") for f in found), found
    assert any(f.startswith("TeX leaks") and "$$" in f for f in found), found
    assert any("\\InterleavedPipelineBubbleFraction" in f and "not on the page" in f for f in found), found
    assert any(f.startswith("display equation") for f in found), kinds
    wide = "| `" + "x" * 120 + "` | $y$ |\n|---|---|\n| 1 | 2 |\n"
    path.write_text(wide, encoding="utf-8")
    assert wide_tables(_report(path, pages))[0].startswith("table ")


# GitHub applies backslash escapes to ASCII punctuation inside math: \, \{ \} \; \! would lose the backslash.
_EATEN = re.compile(r"(?<!\\)(?:\\\\)*\\([!-/:-@\[\]-`{-~])")


@pytest.mark.parametrize("rel", DOCUMENTS)
def test_math_survives_githubs_markdown(rel):
    markdown = _FENCE.sub("", (ROOT / rel).read_text(encoding="utf-8"))
    markdown = _INLINE_CODE.sub("", markdown)
    eaten = []
    for m in _MATH.finditer(markdown):
        for e in _EATEN.finditer(m.group(0)):
            if e.group(1) != "\\":
                eaten.append(m.group(0)[max(0, e.start() - 30):e.end() + 30])
    assert not eaten, f"{rel}: {len(eaten)} escapes GitHub eats (write \\thinspace, \\lbrace ...):\n" + \
        "\n".join(eaten[:10])


# --------------------------------------------------------------------------------------------
# Quarto cross-references: docs/quarto/*.qmd label every display ($$ ... $$ {#eq-...}); the .md files
# are the same documents without the labels (plain pandoc and GitHub would print them as text); the
# .tex labels the same equations \label{eq:...}.
# --------------------------------------------------------------------------------------------
def test_quarto_documents_label_every_display_uniquely_and_match_the_markdown_and_the_tex():
    from derivations import render

    all_labels = []
    # chapter_fragment.qmd is written by hand, its equations printed by Python cells (tests/test_chapter_fragment.py)
    for qmd in sorted(p for p in (DOCS / "quarto").glob("*.qmd") if p.name != "chapter_fragment.qmd"):
        text = qmd.read_text(encoding="utf-8")
        displays = re.findall(r"^\$\$\n.*?\n\$\$([^\n]*)$", _FENCE.sub("", text), re.S | re.M)
        assert displays and all(re.fullmatch(r" \{#eq-[a-z0-9-]+\}", d) for d in displays), \
            f"{qmd.name}: a display without a label"
        assert len(displays) == len(render.labels(text))
        assert render.strip_labels(text) == (DOCS / (qmd.stem + ".md")).read_text(encoding="utf-8")
        all_labels += render.labels(text)
    assert len(all_labels) > 100 and len(set(all_labels)) == len(all_labels)
    assert {"eq-t-ring", "eq-t-hier", "eq-zero-state", "eq-t-step"} <= set(all_labels)
    tex_labels = re.findall(r"\\label\{eq:([a-z0-9-]+)\}", (DOCS / "mlsysim_sym.tex").read_text(encoding="utf-8"))
    assert sorted("eq-" + x for x in tex_labels) == sorted(all_labels)
