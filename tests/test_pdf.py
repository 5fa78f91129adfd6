"""Every Markdown document of docs/ made into a PDF keeps every word of code on the page: no code line or
inline code past the text area's right edge. Two ways of making it are checked:

- the project's settings, ``pandoc -d docs/pdf.yaml docs/x.md -o x.pdf`` (README.md and docs/index.md give this
  command): docs/pdf-header.tex breaks a code line that is longer than the page's (fvextra) and lets inline
  code break after . _ / ( , =; every document;
- the usual way, ``pandoc docs/x.md -o x.pdf`` (pandoc's default LaTeX template, pdflatex): every document but
  the two whose code is longer than a page line by nature (``LONGER_THAN_A_PAGE_LINE``).

pandoc's code environment (fancyvrb's ``Verbatim``) runs off the margin without a warning in pdflatex's log, so
the test measures the PDF itself: ``pdftotext -bbox-layout`` (poppler-utils) gives each word's box in PDF points.
The right edge of the text area is where the justified lines of prose end, the most common right end of a line
(pandoc's default geometry: article, 10 pt, letter paper, a 345 pt text width from 1 in + 62 pt; the lines
end at 477.5 PDF points). A code line fvextra wraps goes on at the left margin of the next line: each of its
pieces is a line of its own, measured by its right end like any other.

Nothing here is skipped: without pandoc, pdflatex, fvextra or pdftotext the test fails and says to run .ci/run,
which installs them.
"""
import collections
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: how far past the right edge a word may end (PDF points): TeX's \hfuzz is 0.1 pt, pdftotext rounds boxes
TOLERANCE = 0.5

_WORD = re.compile(r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">(.*?)</word>')
_LINE = re.compile(r'<line xMin="([\d.]+)" yMin="[\d.]+" xMax="([\d.]+)" yMax="[\d.]+">(.*?)</line>', re.S)
_PAGE = re.compile(r"<page [^>]*>(.*?)</page>", re.S)


def _tools():
    missing = [tool for tool in ("pandoc", "pdflatex", "pdftotext", "pdftohtml") if shutil.which(tool) is None]
    if shutil.which("kpsewhich") and subprocess.run(["kpsewhich", "fvextra.sty"], capture_output=True).returncode:
        missing.append("fvextra.sty")
    if missing:
        pytest.fail(f"{', '.join(missing)} not installed: run .ci/run (Debian: pandoc, texlive-latex-base "
                    "texlive-latex-recommended texlive-latex-extra lmodern, poppler-utils)")


#: the project's settings for a PDF (pandoc --defaults); its paths are its own folder's (``${.}``), so the
#: command works from anywhere; the test runs it from the repository's root, as README.md gives it
SETTINGS = DOCS / "pdf.yaml"
COMMAND = "pandoc -d docs/pdf.yaml docs/guide.md -o guide.pdf"


def pandoc_pdf(markdown: Path, out: Path, settings: bool = False) -> Path:
    """The PDF of a document. ``settings``: the project's, ``pandoc -d docs/pdf.yaml docs/<doc>.md -o <out>``
    from the repository's root; else ``pandoc <doc>.md -o <out>``, run in the document's folder (so its
    pictures are found), as a reader makes a PDF of it with no template and no option."""
    if settings:
        command, cwd = ["pandoc", "-d", str(SETTINGS.relative_to(ROOT)), str(markdown), "-o", str(out)], ROOT
    else:
        command, cwd = ["pandoc", markdown.name, "-o", str(out)], markdown.parent
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{' '.join(command)} failed:\n{proc.stderr[-3000:]}"
    return out


def bbox_pages(pdf: Path) -> list:
    """The lines of each page, ``[[(line left, line right, [(word left, word right, text, code end), ...]), ...],
    ...]`` (PDF points), from ``pdftotext -bbox-layout`` (each word's box); ``code end`` is where the word's
    monospace part (code) ends, ``None`` when it has none: ``pdftohtml -xml`` tells which runs of text are
    set in a monospace font (to a whole point)."""
    html = pdf.with_suffix(".html")
    subprocess.run(["pdftotext", "-bbox-layout", str(pdf), str(html)], check=True, capture_output=True)
    xml = subprocess.run(["pdftohtml", "-xml", "-i", "-zoom", "1", "-stdout", str(pdf)], check=True,
                         capture_output=True, text=True).stdout
    mono_fonts = set(re.findall(r'<fontspec id="(\d+)"[^>]*family="[A-Z]{6}\+LMMono', xml))
    mono = {}           # page -> boxes (left, top, right, bottom) of its monospace runs
    for number, page in re.findall(r'<page number="(\d+)"(.*?)</page>', xml, re.S):
        mono[int(number)] = [(int(left), int(top), int(left) + int(width), int(top) + int(height),
                              unescape(re.sub(r"<[^>]+>", "", text)).strip())
                             for top, left, width, height, font, text in re.findall(
                                 r'<text top="(-?\d+)" left="(-?\d+)" width="(\d+)" height="(\d+)" font="(\d+)">'
                                 r'(.*?)</text>', page) if font in mono_fonts]
    pages = []
    for number, page in enumerate(_PAGE.findall(html.read_text(encoding="utf-8")), 1):
        lines = []
        for left, right, body in _LINE.findall(page):
            words = []
            for a, top, b, bottom, w in _WORD.findall(body):
                a, b, y, w = float(a), float(b), (float(top) + float(bottom)) / 2, unescape(w)
                runs = [(l, r, run) for l, t, r, d, run in mono[number] if t - 2 <= y <= d + 2 and l - 1 < b and r + 1 > a]
                # where the word's code ends: its end when its last glyph is code, else where its code runs end
                # (a parenthesis or punctuation after inline code is prose, and microtype lets it protrude)
                last_is_code = any(r >= b - 3 and run.endswith(w[-1]) for _, r, run in runs)
                # (pdftohtml's runs end to a whole point: 1 pt is allowed there)
                code = (b if last_is_code else min(b, max(r for _, r, _ in runs) - 1)) if runs else None
                words.append((a, b, w, code))
            lines.append((float(left), float(right), words))
        pages.append(lines)
    return pages


#: pandoc's default page (article.cls, 10 pt, US letter, no geometry package): the text starts 1 in + 62 pt from
#: the paper's edge (half of 614.3 pt - 345 pt, less 1 in, to a whole point) and is 345 pt wide, in TeX points;
#: the PDF counts 72 to the inch, not 72.27: 133.8 and 477.5
LEFT, EDGE = (72.27 + 62) * 72 / 72.27, (72.27 + 62 + 345) * 72 / 72.27


def text_area(pages: list) -> tuple:
    """The text area's left and right edges as measured: where most lines start, and where most of the lines
    that start there and fill most of the width end (justified prose), to 0.5 pt."""
    starts = collections.Counter(round(2 * left) / 2 for page in pages for left, _, _ in page)
    left = starts.most_common(1)[0][0]
    ends = collections.Counter(round(2 * right) / 2 for page in pages for start, right, _ in page
                               if abs(start - left) < 1 and right - start > 300)
    return left, ends.most_common(1)[0][0]


def overruns(pages: list, edge: float, mono_only: bool = True) -> list:
    """``(page, points past the edge, the line's text)`` of every line with a word of code (``mono_only``; any
    word otherwise) ending past ``edge``."""
    out = []
    for number, page in enumerate(pages, 1):
        for _, _, words in page:
            ends = [right if not mono_only else code for _, right, _, code in words
                    if code is not None or not mono_only]
            if ends and max(ends) - edge > TOLERANCE:
                out.append((number, round(max(ends) - edge, 1), " ".join(w for _, _, w, _ in words)))
    return out


DOCUMENTS = sorted(p.name for p in DOCS.glob("*.md"))

#: Code longer than a page line (65 characters of code) by nature, made into a PDF with the project's settings
#: only: the user guide's code blocks are the package's real output, exact as the tests of docs/guide.md run
#: them (tables of up to 96 characters, printed LaTeX and dicts of up to 292), with the Greek letters (eta, beta,
#: alpha, iota) that pdflatex stops on unless declared; the contract's tables and prose hold mlsysim's own
#: names (file paths, constants, messages, a call with its keywords) as inline code, up to 103 pt over
#: without a break point.
LONGER_THAN_A_PAGE_LINE = {"contract.md", "guide.md"}


def test_every_document_is_measured():
    # the generated documents, the chapter fragment and the hand-written ones (contract, guide, files)
    assert {"step_time.md", "step_time_extended.md", "book.md", "chapter_fragment.md", "guide.md",
            "contract.md", "index.md"} <= set(DOCUMENTS)
    assert LONGER_THAN_A_PAGE_LINE < set(DOCUMENTS)


def _check(name: str, pdf: Path, how: str):
    bad = overruns(bbox_pages(pdf), EDGE)
    assert bad == [], f"docs/{name} ({how}): {len(bad)} lines of code past the right edge ({EDGE:.1f} pt):\n" + \
        "\n".join(f"  page {page}: {past} pt over: {line[:120]}" for page, past, line in bad)


@pytest.mark.parametrize("name", DOCUMENTS)
def test_the_pdf_with_the_projects_settings_keeps_every_code_line_on_the_page(name, tmp_path):
    """No word of code (a code block's line or inline code, set in monospace) of the PDF
    ``pandoc -d docs/pdf.yaml docs/<name> -o <name>.pdf`` makes ends past the text area's right edge; the page
    and line of each that does are reported."""
    _tools()
    _check(name, pandoc_pdf(DOCS / name, tmp_path / (Path(name).stem + ".pdf"), settings=True), "pdf.yaml")


@pytest.mark.parametrize("name", sorted(set(DOCUMENTS) - LONGER_THAN_A_PAGE_LINE))
def test_the_plain_pandoc_pdf_keeps_every_code_line_on_the_page(name, tmp_path):
    """The same for the PDF a reader makes with no settings, ``pandoc <name> -o <name>.pdf``: every document
    but the two whose code is longer than a page line."""
    _tools()
    _check(name, pandoc_pdf(DOCS / name, tmp_path / (Path(name).stem + ".pdf")), "plain pandoc")


def test_where_a_reader_looks_the_command_is_given():
    """README.md (near the documents' list) and docs/index.md say how to print a document: the command the
    tests run, with the settings' file that exists."""
    assert SETTINGS.exists() and (DOCS / "pdf-header.tex").exists()
    for page in (ROOT / "README.md", DOCS / "index.md"):
        assert f"`{COMMAND}`" in page.read_text(encoding="utf-8"), page.name


def _probe(tmp_path) -> Path:
    probe = tmp_path / "probe.md"
    probe.write_text("Some prose long enough to fill a justified line of the paragraph, and then to go on for "
                     "a second line and a third, so that the right edge is where most lines end, as in every "
                     "document. " * 3 + "\n\n```\n" + "a" * 60 + "\n" + "b" * 80 + "\n```\n\nInline `"
                     + "c" * 90 + "` code.\n\n$$x = " + " + ".join(["y_{1234}"] * 30) + "$$\n",
                     encoding="utf-8")
    return probe


def test_the_measure_sees_code_off_the_page(tmp_path):
    """The probe: a code line of 80 characters and inline code of 90 with no break point are reported; a
    code line of 60 characters and a wide equation (not code) are not, unless every word counts."""
    _tools()
    pages = bbox_pages(pandoc_pdf(_probe(tmp_path), tmp_path / "probe.pdf"))
    left, edge = text_area(pages)       # the prose's margins are pandoc's default page's
    assert abs(left - LEFT) < 0.5 and abs(edge - EDGE) < 0.5, (left, edge)
    # 80 characters at 5.25 pt are 420 pt on a 345 pt line: 75 pt over; the inline code (472.5 pt) more than 100
    (_, code, line), (_, inline, text) = overruns(pages, edge)
    assert (line[:3], round(code), text[:3]) == ("bbb", 75, "Inl") and inline > 100
    assert [line[:3] for _, _, line in overruns(pages, edge, mono_only=False)] == ["bbb", "Inl", "x ="]


def test_the_measure_sees_a_wrapped_code_line_on_the_page(tmp_path):
    """The same probe with the project's settings: fvextra wraps the code line of 80 characters, 64 on the
    first line (65 fit in 345 pt at 5.25 pt; the last room is for the break mark, fvextra's breakanywhere
    symbol) and the other 16 on the next, after the continuation arrow: two lines of code, each measured by its
    right end and each on the page; the inline code with no break point (no . _ / ( , =) still runs off."""
    _tools()
    pages = bbox_pages(pandoc_pdf(_probe(tmp_path), tmp_path / "probe.pdf", settings=True))
    left, edge = text_area(pages)       # the settings keep pandoc's default page
    assert abs(left - LEFT) < 0.5 and abs(edge - EDGE) < 0.5, (left, edge)
    pieces = [words for page in pages for _, _, words in page for word in words if set(word[2]) == {"b"}]
    assert [len(words[0][2]) for words in pieces] == [64, 16] and len(pieces[0]) == 2, pieces
    # the first piece starts at the margin, the second after the arrow; both end as code, on the page
    assert abs(pieces[0][0][0] - LEFT) < 0.5 and pieces[1][0][0] > LEFT + 10
    assert all(words[0][3] is not None and words[0][3] <= EDGE + TOLERANCE for words in pieces)
    [(_, inline, text)] = overruns(pages, edge)
    assert text[:3] == "Inl" and inline > 100
