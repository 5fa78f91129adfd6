r"""Every cross-reference of the Quarto documents resolves in the document that makes it.

Quarto's rules (its cross-reference syntax, which is pandoc's citation syntax): a reference is ``@eq-id``,
also written ``[@eq-id]``, ``-@eq-id`` (no prefix) or ``@Eq-id`` (capitalized prefix), where the id is
letters, digits, ``_`` and inner ``-``; the ``@`` follows the start of the text or a character that is not
a word character, is not escaped (``\@``), and is not inside code (a code span or a fenced block). A label
is ``{#eq-id}`` after a display equation's closing ``$$``. A reference with no label in its document
renders as ``?@eq-id``. Any other ``@key`` (a citation key: a letter, digit or ``_``, then those and single
inner punctuation of ``:.#$%&-+?<>~/``) is a citation, and these documents have no bibliography: Quarto prints
each as ``?@key`` too (``README.md @68eaf7e``, a commit written after a file, is one unless escaped). The book's own labels (``AC @eq-alpha-beta``) are defined in the book, not here:
the documents link them to the book's sources (:mod:`derivations.book_labels`).
"""
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from derivations import book, book_labels, render  # noqa: E402

#: Quarto's cross-reference kinds the documents could write: equations, tables, figures, sections (an
#: ``@tbl-``/``@fig-``/``@sec-`` reference resolves only to a label of the same document, and these documents
#: define none: each must be a link to the book's source, :mod:`derivations.book_labels`)
_ID = r"(?:[Ee]q|[Tt]bl|[Ff]ig|[Ss]ec)-[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*"
_REFERENCE = re.compile(rf"(?<![\w\\])@({_ID}|[A-Za-z0-9_](?:[A-Za-z0-9_]|[:.#$%&\-+?<>~/](?=[A-Za-z0-9_]))*)")
_LABEL = re.compile(rf"\$\$[ \t]*\{{#({_ID})(?:[ \t][^}}]*)?\}}")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`).*?(?<!`)\1(?!`)", re.S)


def _outside_code(text: str) -> str:
    """The text with its fenced code blocks and code spans blanked (same length, lines kept)."""
    lines, fence = [], ""
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip(" `~"):
                fence = ""
            lines.append("")
        elif m:
            fence = m.group(1)
            lines.append("")
        else:
            lines.append(line)
    return _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), "\n".join(lines))


def references(text: str):
    """The ids the text cross-references or cites (Quarto's rules above), in order."""
    return [r[0].lower() + r[1:] for r in _REFERENCE.findall(_outside_code(text))]


def labels(text: str):
    """The equation ids the text defines."""
    return [r[0].lower() + r[1:] for r in _LABEL.findall(_outside_code(text))]


def unresolved(text: str):
    defined = set(labels(text))
    return [r for r in references(text) if r not in defined]


def test_the_rule_on_small_strings():
    eq = "Some text.\n\n$$\nT = a + b\n$$ {#eq-t}\n\n"
    assert labels(eq) == ["eq-t"] and unresolved(eq + "As @eq-t says.") == []
    # every written form is a reference; a label resolves each
    for form in ("@eq-t", "[@eq-t]", "-@eq-t", "@Eq-t", "(@eq-t)", "see [-@eq-t, p. 3]"):
        assert references(form) == ["eq-t"], form
        assert unresolved(eq + form) == [], form
    assert unresolved("As @eq-alpha-beta says.") == ["eq-alpha-beta"]     # defined nowhere: dangles
    assert references("@eq-a_b-c. And @eq-x-") == ["eq-a_b-c", "eq-x"]    # trailing punctuation is not the id's
    # what is not a reference: escaped, after a word character, in a code span, in a fenced block
    assert references(r"\@eq-t") == references("me@eq-t") == []
    assert references("`@eq-t` and ``a ` @eq-t``") == []
    assert references("```latex\n@eq-t\n```\n~~~~\n@eq-u\n~~~~\n") == []
    assert references("```\ncode\n```\nafter @eq-v") == ["eq-v"]           # the fence closed
    # a label in code is no label; a label needs a display equation before it
    assert labels("```\n$$ {#eq-t}\n```") == [] and labels("text {#eq-t}") == []
    assert labels("$$\nx\n$$ {#eq-t .unnumbered}") == ["eq-t"]
    # tables, figures and sections are references too; none is defined in these documents
    assert references("@tbl-a, [@fig-b-c] and -@Sec-d") == ["tbl-a", "fig-b-c", "sec-d"]
    assert unresolved(eq + "see @tbl-collective-summary") == ["tbl-collective-summary"]
    # any other key is a citation, unresolved with no bibliography: the book's notebooks and definitions, a commit
    assert references("@nbk-a @dfn-b e@tbl-c `@fig-d`") == ["nbk-a", "dfn-b"]
    assert references("README.md @68eaf7e.") == ["68eaf7e"] and references(r"README.md \@68eaf7e") == []
    assert unresolved(eq + "see @nbk-ring-trace") == ["nbk-ring-trace"]


def _documents():
    return sorted((ROOT / "docs").rglob("*.qmd"))


def test_every_reference_of_the_committed_quarto_documents_resolves():
    docs = _documents()
    assert {p.name for p in docs} >= {"book.qmd", "step_time.qmd", "step_time_extended.qmd", "notation.qmd"}
    for path in docs:
        text = path.read_text(encoding="utf-8")
        if "```{python}" in text:       # a chapter with cells: its labels come from the cells' output, as Quarto
            from derivations import toolchain       # executes it first (docs/quarto/chapter_fragment.qmd)
            text = toolchain.execute(path)
        assert unresolved(text) == [], f"{path.relative_to(ROOT)}: {unresolved(text)} are defined nowhere in it"
        assert len(labels(text)) == len(set(labels(text))), path


def _link(chapter: str, label: str) -> str:
    # the label is the link's plain text (a PDF made with pandoc breaks it at its hyphens; code cannot break)
    return f"[{label}](https://github.com/harvard-edge/cs249r_book/blob/HEAD/{book.CHAPTERS[chapter][1]})"


def test_the_books_labels_are_links_to_its_sources_in_the_committed_documents():
    """The 22 citations of the book's labels the documents made before (14 in book.qmd, 4 in each step-time
    edition) are links to the chapter's source, the label as text."""
    text = {p.name: p.read_text(encoding="utf-8") for p in _documents()}
    ac = "book/quarto/contents/vol2/backmatter/appendix_communication.qmd"
    assert book.CHAPTERS["AC"][1] == ac
    assert "*Where:* AC " + _link("AC", "eq-alpha-beta") + "; CC, The alpha-beta model" in text["book.qmd"]
    assert "(the definition is " + _link("DT", "eq-distributed-training-scaling-efficiency") + ")" in text["book.qmd"]
    for name in ("step_time.qmd", "step_time_extended.qmd"):
        assert "Communication Foundations appendix, " + _link("AC", "eq-allgather") in text[name]
        assert sum(text[name].count(_link("AC", label)) for label in
                   ("eq-allgather", "eq-reducescatter", "eq-tree-allreduce", "eq-alpha-beta")) == 4
    links = re.findall(r"\[eq-[^]`]+\]\(https://github\.com/harvard-edge/cs249r_book/blob/HEAD/book/quarto/contents/"
                       r"vol2/[a-z_/]+\.qmd\)", text["book.qmd"])
    assert len(links) >= 14
    # the plain Markdown and the LaTeX document carry the same links
    assert _link("AC", "eq-alpha-beta") in (ROOT / "docs" / "step_time.md").read_text(encoding="utf-8")
    tex = (ROOT / "docs" / "mlsysim_sym.tex").read_text(encoding="utf-8")
    assert r"AC \href{https://github.com/harvard-edge/cs249r_book/blob/HEAD/" + ac + r"}{\texttt{eq-\allowbreak{}alpha-" \
           r"\allowbreak{}beta}}; CC, The alpha-beta model" in tex
    assert "@eq-" not in tex


def test_a_fresh_render_of_the_book_document_resolves_every_reference():
    env = render.environment()
    quarto = render.github_math(env.get_template("book.j2").render(book.context(), macros="_md.j2", top=1))
    assert unresolved(quarto) == [] and len(labels(quarto)) >= 20
    assert "?@" not in quarto
    assert quarto.count("](https://github.com/harvard-edge/cs249r_book/blob/HEAD/book/quarto/contents/vol2/") >= 14


def test_the_books_tables_and_figures_are_links_in_a_fresh_render():
    """book.qmd cited 26 distinct tables and figures of the book (48 times: @tbl-collective-summary,
    @fig-young-daly ...) as Quarto references, which print ?@tbl-...: each is a link to its chapter's source."""
    env = render.environment()
    quarto = render.github_math(env.get_template("book.j2").render(book.context(), macros="_md.j2", top=1))
    assert [r for r in references(quarto) if not r.startswith("eq-")] == []
    links = set(re.findall(r"\[((?:tbl|fig)-[^]`]+)\]\(https://github\.com/harvard-edge/cs249r_book/blob/HEAD/"
                           r"book/quarto/contents/vol2/[a-z_/]+\.qmd\)", quarto))
    assert len(links) >= 26 and {"tbl-collective-summary", "fig-young-daly"} <= links
    assert book_labels.md_text("CC, @tbl-a and @fig-b") == (f"CC, [tbl-a]({book_labels.url('CC')}) and "
                                                           f"[fig-b]({book_labels.url('CC')})")


def test_the_filter_names_the_chapter_that_defines_each_label():
    dt, cc = (book_labels.url(k) for k in ("DT", "CC"))
    assert book_labels.url("FT") == ("https://github.com/harvard-edge/cs249r_book/blob/HEAD/book/quarto/contents/"
                                     "vol2/fault_tolerance/fault_tolerance.qmd")
    # the nearest chapter named before the label, by its key or its title
    assert book_labels.md_text("DT @eq-a; CC, a table, @eq-b_c") == rf"DT [eq-a]({dt}); CC, a table, [eq-b\_c]({cc})"
    assert book_labels.md_text("Collective Communication chapter, @eq-a") == \
        f"Collective Communication chapter, [eq-a]({cc})"
    # else the chapter the caller gives (a row of a chapter's inventory)
    assert book_labels.md_text("@eq-a, a_b", "DT") == rf"[eq-a]({dt}), a\_b"
    with pytest.raises(ValueError, match="name the chapter"):
        book_labels.md_text("the definition is @eq-a")
    # what is not a reference stays text: escaped (once), or after a word character (escaped all the same)
    assert book_labels.md_text(r"a\@eq-a me@eq-b") == r"a\@eq-a me\@eq-b"
    assert references(book_labels.md_text(r"a\@eq-a me@eq-b, README.md @68eaf7e")) == []
    assert book_labels.tex_text("DT @eq-a_b") == r"DT \href{%s}{\texttt{eq-\allowbreak{}a\_\allowbreak{}b}}" % dt
    # every prose string a document renders goes through them: no dangling reference is left in its output
    for text in ("AC @eq-x", "Communication Foundations appendix, @eq-allgather."):
        assert unresolved(book_labels.md_text(text)) == []
