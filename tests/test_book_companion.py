"""docs/book.md, the book companion: its checks run when it is rendered and cannot pass when false, and
every equation the documents offer with the book's macros passes the registry's notation rules."""
import re
from pathlib import Path

import pytest
import sympy as sp

from derivations import book
from mlsysim_sym import notation
from derivations import registry  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
mlsysim = pytest.importorskip("mlsysim")


@pytest.fixture(scope="module")
def context():
    return book.context()


def test_every_entry_is_checked_and_the_count_is_the_documents(context):
    entries = [e for group in context["groups"].values() for e in group]
    assert len(entries) == context["count"] >= 20
    assert len({e.key for e in entries}) == len(entries)
    # every entry is checked one way or the other: symbolic equality, worked numbers, or both
    assert all(e.symbolic is not None or e.numbers for e in entries)
    assert sum(e.symbolic is not None for e in entries) >= 15
    assert sum(len(e.numbers) for e in entries) >= 25
    text = (ROOT / "docs" / "book.md").read_text()
    # the intro counts the entries and the chapters' equations apart (108 entries, 245 equations when written)
    assert (f"{context['count']} entries are listed; they reproduce or explain the {len(context['inventory'])} "
            "equations counted in the chapters") in text
    assert len(context["inventory"]) > context["count"]
    # every chapter key the entries cite is defined in the intro
    for key, (title, _) in book.CHAPTERS.items():
        assert re.search(rf"\b{key} (is )?(the )?{title.split(' (')[0]}", text), key
    # a number "differs" only where the entry says the book's own arithmetic is off (expect=False)
    wrong = [x for e in entries for x in e.numbers if not x.expect]
    assert text.count("reproduced (") >= 25 and text.count("differs (") == len(wrong) >= 1


def test_the_books_zero_figures_and_worked_collectives_are_reproduced(context):
    by_key = {e.key: e for group in context["groups"].values() for e in group}
    # DT's ZeRO figure: 7B parameters x 16 B = 112 GB; over 64 GPUs: 29.3, 15.5, 1.75 GB
    got = [x.package for x in by_key["zero"].numbers]
    assert [round(g / 1e9, 2) for g in got] == [112.0, 29.31, 15.53, 1.75]
    # AC: 1 GB over 256 GPUs at 50 GB/s, 5 us: ring 42.4 ms, tree 320.1 ms
    assert round(by_key["ring"].numbers[0].package * 1e3, 1) == 42.4
    assert round(by_key["tree"].numbers[0].package * 1e3, 1) == 320.1
    # CC: the crossover 2 us x 50 GB/s = 100 KB, and 5 us x 50 GB/s = 250 KB
    assert [x.package for x in by_key["crossover"].numbers] == pytest.approx([100e3, 250e3], rel=1e-12)


def test_a_false_check_stops_the_render():
    M, N = notation.FORMAL["M_coll"], notation.FORMAL["N_coll"]
    wrong = book.Entry("x", "x", "x", "x", (M, M), symbolic=(2 * M, M))
    with pytest.raises(AssertionError, match="not equal"):
        wrong.verify()
    off = book.Entry("x", "x", "x", "x", (M, M), numbers=(book.Number("n", 1.0, 1.2, "s", 0.01),))
    with pytest.raises(AssertionError, match="book 1.0, package 1.2"):
        off.verify()
    # a number the book gets wrong is expected to differ, and passes only while it does
    known = book.Entry("x", "x", "x", "x", (M, M), numbers=(book.Number("n", 1.0, 1.2, "s", 0.01, expect=False),))
    assert known.verify() is known
    assert book.equal(sp.log(N, 2), book.LOG2N)


def test_code_and_prose_differences_are_computed_at_one_configuration(context):
    diffs = {d.topic: d for d in context["differences"]}
    # mlsysim prices the DP all-reduce the same at ZeRO-3; the book's 1.5x is half again
    (what, book_way, code_way), = diffs["ZeRO-3 communication"].rows
    assert book_way != code_way
    # Mixtral has 32 layers: the book's 2 x 2 all-to-alls per MoE layer are 128 per step against mlsysim's 1
    assert diffs["MoE all-to-all per step"].rows[1][1:] == ("128", "1")


def _latex_blocks():
    for path in sorted((ROOT / "docs").glob("*.md")):
        for block in re.findall(r"```latex\n(.*?)```", path.read_text(), re.S):
            if "\\newcommand" not in block:
                yield path.name, block


def test_every_equation_offered_with_the_books_macros_passes_the_registrys_rules():
    """Every ``latex`` block of the documents (the equations to paste into a chapter) uses only the
    registry's macros or the proposed extension's, and nothing the registry's strict check rejects."""
    known = {s.macro for s in mlsysim.Symbols} | {e["macro"] for es in registry.registry_extension().values()
                                                 for e in es}
    blocks = list(_latex_blocks())
    assert len(blocks) >= 45 and {name for name, _ in blocks} >= {"book.md", "notation.md", "step_time.md"}
    for name, block in blocks:
        assert registry.book_problems(block, known) == [], (name, block[:200])


def test_the_readme_states_the_companions_counts(context):
    # README.md's paragraph on docs/book.md gives the count, the entries and the split; kept true here
    inv = context["inventory"]
    reproduced, explained = sum(bool(r.entry) for r in inv), sum(bool(r.why) for r in inv)
    assert reproduced + explained == len(inv)
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"counted ({len(inv)}; how, it says)" in readme
    assert f"one of {context['count']} entries ({reproduced}:" in readme and f"explained ({explained}:" in readme


def test_the_inventory_links_each_row_to_its_entry_and_every_heading_is_a_heading(context):
    text = (ROOT / "docs" / "book.md").read_text()
    lines = text.split("\n")
    # pandoc and Quarto read a heading only after a blank line (else it folds into the paragraph before it)
    glued = [lines[i] for i in range(1, len(lines)) if lines[i].startswith("#") and lines[i - 1].strip()
             and not lines[i - 1].startswith("```")]
    assert glued == []
    # each entry carries its key as an anchor under its title; each row's "entry key" links to it (the key the
    # link's plain text: a PDF made with pandoc breaks it at its hyphens)
    keys = {e.key for group in context["groups"].values() for e in group}
    anchors = set(re.findall(r'<a id="entry-([a-z0-9-]+)"></a>\*Entry\* `\1`', text))
    assert anchors == keys
    links = re.findall(r"entry \[([a-z0-9-]+)\]\(#entry-([a-z0-9-]+)\)", text)
    assert len(links) == sum(1 for c in context["inventory"] if c.entry) and all(a == b for a, b in links)
    assert {a for a, _ in links} <= anchors and "entry `" not in text
    # the Quarto edition writes the anchors as empty spans with ids (Quarto's PDF keeps them as labels; raw HTML
    # would be dropped there), the same keys
    qmd = (ROOT / "docs" / "quarto" / "book.qmd").read_text()
    assert set(re.findall(r"\[\]\{#entry-([a-z0-9-]+)\}\*Entry\* `\1`", qmd)) == keys and "<a id=" not in qmd


def test_exactly_means_the_books_printed_digits(context):
    # FA's peak of 1,024 H100s: the book's 1,012,736 TFLOP/s; at 4 digits the package's value printed 1013 beside
    # the book's 1012.74 under "reproduced (exactly)"
    text = (ROOT / "docs" / "book.md").read_text()
    rows = [r.split(" | ") for r in text.split("\n") if r.endswith("| reproduced (exactly) |")]
    assert len(rows) >= 20 and all(r[-3] == r[-2] for r in rows), [r for r in rows if r[-3] != r[-2]]
    assert r"| peak of 1,024 H100s (the book's 1,012,736 TFLOP/s, shown in Pflop/s) | $1012.74\thinspace\text{Pflop/s}$ " \
           r"| $1012.74\thinspace\text{Pflop/s}$ | reproduced (exactly) |" in text
    # AC has no label for the ring-tree crossover (its section states the boundary in words)
    assert "eq-ring-tree-crossover" not in text
