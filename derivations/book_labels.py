r"""The book's own equation, table, figure and section labels in the documents' prose, written as links to the
book's sources.

The documents cite the book's equations by the labels of its Quarto sources (``AC @eq-alpha-beta``). No
document of this package defines those labels, so left as they are Quarto would print ``?@eq-alpha-beta``
(an unresolved cross-reference) and LaTeX the raw text. Every prose string of the documents (an entry's
``where``, a note, a term's source) passes through :func:`md_text` or :func:`tex_text` (the templates'
``md_text`` / ``tex_text`` filters in the environment of :func:`derivations.render.environment`), which
turn each ``@eq-...`` into a link to the chapter's source file in the book's repository with the label
as its text: ``AC [eq-alpha-beta](https://github.com/harvard-edge/cs249r_book/blob/HEAD/book/quarto/
contents/vol2/backmatter/appendix_communication.qmd)``, in LaTeX ``\href{...}{\texttt{eq-alpha-beta}}``.
In Markdown the label is the link's plain text, not code: a PDF made of the document with pandoc can break it
after each ``-`` (inline code cannot break, and ``tbl-collective-communication-ring-vs-tree-1mb-64gpu`` is
wider than the page).

Which chapter defines a label: the nearest chapter named before it in the same string, by its key of
:data:`derivations.book.CHAPTERS` (``AC``, ``DT``, ...) or by its title (``Communication Foundations``),
else the ``chapter`` the caller gives (the companion's inventory table gives the row's chapter). A
label with no chapter is an error: the render stops and names it.
"""
from __future__ import annotations

import re
from typing import List, Optional, Tuple, Union

from mlsysim_sym import printing

from .book import CHAPTERS

#: The book's repository on GitHub: ``blob/HEAD`` is its default branch.
REPOSITORY = "https://github.com/harvard-edge/cs249r_book/blob/HEAD/"

#: A reference to one of the book's equations, tables, figures, sections, notebooks or definitions as the documents
#: write it (Quarto's cross-reference syntax: ``@eq-``, ``@tbl-``, ``@fig-``, ``@sec-``, or the book's own callout
#: kinds ``@nbk-`` and ``@dfn-``, and an id of letters, digits,
#: ``_`` and inner ``-``), not preceded by a word character, ``\`` or another ``@``. None of them is defined in
#: this package's documents: Quarto would print each as ``?@tbl-...``.
REFERENCE = re.compile(r"(?<![\w\\@])@((?:eq|tbl|fig|sec|nbk|dfn)-[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*)")


def _chapter_names() -> re.Pattern:
    names = {}
    for key, (title, _) in CHAPTERS.items():
        names[key] = key
        names[title.split(" (")[0]] = key
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<!\w)({alternatives})(?!\w)"), names


def chapter_of(text: str) -> Optional[str]:
    """The key of the first chapter the text names (an entry's ``where``), or None: the chapter of the labels
    in the entry's other prose (its worked numbers and note) that name none."""
    pattern, names = _chapter_names()
    m = pattern.search(str(text))
    return names[m.group(1)] if m else None


def url(chapter: str) -> str:
    """The chapter's source file in the book's repository (its path in :data:`derivations.book.CHAPTERS`)."""
    return REPOSITORY + CHAPTERS[chapter][1]


def split(text: str, chapter: Optional[str] = None) -> List[Union[str, Tuple[str, str]]]:
    """The text as plain pieces (``str``) and book references (``(label, chapter key)``), in order."""
    pattern, names = _chapter_names()
    pieces: List[Union[str, Tuple[str, str]]] = []
    start = 0
    for m in REFERENCE.finditer(text):
        named = [names[c.group(1)] for c in pattern.finditer(text, 0, m.start())]
        owner = named[-1] if named else chapter
        if owner is None:
            raise ValueError(f"{m.group(0)} in {text!r}: name the chapter of the book that defines it "
                             f"({', '.join(CHAPTERS)}) before it")
        pieces += [text[start:m.start()], (m.group(1), owner)]
        start = m.end()
    pieces.append(text[start:])
    return [p for p in pieces if p != ""]


def md_text(text: str, chapter: Optional[str] = None) -> str:
    """:func:`mlsysim_sym.printing.md_text`, each book label a Markdown link to its chapter's source, the label
    its text (plain text, so that it can break at its hyphens)."""
    return "".join(printing.md_text(p) if isinstance(p, str) else f"[{printing.md_text(p[0])}]({url(p[1])})"
                   for p in split(str(text), chapter))


def tex_text(text: str, chapter: Optional[str] = None) -> str:
    r""":func:`mlsysim_sym.printing.tex_text`, each book label an ``\href`` to its chapter's source."""
    return "".join(printing.tex_text(p) if isinstance(p, str)
                   else r"\href{%s}{\texttt{%s}}" % (url(p[1]), printing.tex_code(p[0]))
                   for p in split(str(text), chapter))
