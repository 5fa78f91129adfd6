r"""Render every derivation document into ``docs/``: Markdown with ``$$`` math and one ``.tex``.

Every display equation has a stable label from its subject (``eq-t-ring``): ``docs/quarto/*.qmd`` are
the Markdown documents with Quarto's cross-reference attribute after each display
(``$$ ... $$ {#eq-t-ring}``, for pasting into the book and citing as ``@eq-t-ring``); ``docs/*.md``
leave it out (plain pandoc and GitHub would print it as text); the ``.tex`` numbers every equation and
labels it ``\label{eq:t-ring}``.

``python -m derivations`` writes the files; ``python -m derivations --check`` writes
nothing and exits 1 when a committed file differs from a fresh render.
"""
from __future__ import annotations

import argparse
import difflib
import re
from pathlib import Path
from typing import Dict, List, Optional

from mlsysim_sym import notation
from mlsysim_sym import printing
from mlsysim_sym.printing import md_math

from . import architecture, book, book_labels, examples, extended, memory, modern, notation_doc, published, required_doc, step_time, web
from . import registry, toolchain

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

#: document name -> (title, context builder)
DOCUMENTS = {
    "step_time": ("The step time, term by term", step_time.context),
    "memory": ("Memory per accelerator: ZeRO stages side by side", memory.context),
    "examples": ("Worked examples", examples.context),
    "notation": ("Notation", notation_doc.context),
    "book": ("The book's distributed-training equations, checked", book.context),
    "published_runs": ("The model against published training runs", published.context),
    "required": ("Requirements in closed form", required_doc.context),
    "extended": ("The extended model, validated on held-out published runs", extended.context),
    "step_time_extended": ("The step time, term by term: the extended model", step_time.extended_context),
    "architecture": ("Architecture cards: parameters and FLOPs from a model's shape", architecture.context),
    "modern_runs": ("The extended model on today's runs", modern.context),
}


#: Code, and math between unescaped dollars (an escaped ``\$`` is a price in the prose, not math).
_CODE_OR_MATH = re.compile(r"^```.*?^```$|`[^`\n]*`|\\\$|\$\$.*?\$\$|\$[^$\n]+?\$", re.S | re.M)


def github_math(markdown: str) -> str:
    """Every math span of a Markdown document (not code) through :func:`mlsysim_sym.printing.md_math`."""
    return _CODE_OR_MATH.sub(lambda m: md_math(m.group(0)) if m.group(0).startswith("$") else m.group(0),
                             markdown)


_LABEL = re.compile(r"^\$\$ \{#(eq-[a-z0-9-]+)\}$", re.M)


def labels(quarto_markdown: str) -> List[str]:
    """The equation labels of a Quarto document, in order."""
    return _LABEL.findall(quarto_markdown)


#: An anchor as the Quarto documents write it, an empty span with an id (``[]{#entry-ring}``): pandoc and Quarto
#: make it an HTML id and a LaTeX label, so a link to it works in a PDF as well.
_ANCHOR = re.compile(r"\[\]\{#([A-Za-z][\w-]*)\}")


def strip_labels(quarto_markdown: str) -> str:
    """The plain Markdown of a Quarto document: its equation labels left out, its anchors written as the HTML
    GitHub keeps (``<a id="entry-ring"></a>``; GitHub would print the span's brackets)."""
    return _ANCHOR.sub(r'<a id="\1"></a>', _LABEL.sub("$$", quarto_markdown))


def environment():
    """The package's template environment (:func:`mlsysim_sym.printing.environment`) with the prose filters
    ``md_text`` and ``tex_text`` of :mod:`derivations.book_labels`: a label of the book's (``AC @eq-alpha-beta``)
    becomes a link to its chapter's source, so no document cites a label it does not define."""
    env = printing.environment()
    env.filters["md_text"] = book_labels.md_text
    env.filters["tex_text"] = book_labels.tex_text
    env.globals["chapter_of"] = book_labels.chapter_of
    env.globals["book_url"] = book_labels.url
    return env


def _contexts() -> Dict[str, dict]:
    return {name: build() for name, (_, build) in DOCUMENTS.items()}


def render_all() -> Dict[str, str]:
    """``relative path -> text`` of every file of ``docs/``."""
    env = environment()
    contexts = _contexts()
    out: Dict[str, str] = {}
    seen: Dict[str, str] = {}
    for name, ctx in contexts.items():
        quarto = github_math(env.get_template(f"{name}.j2").render(ctx, macros="_md.j2", top=1))
        for label in labels(quarto):
            if label in seen:
                raise RuntimeError(f"equation label {label} of docs/{name}.md is also one of docs/{seen[label]}.md")
            seen[label] = name
        out[f"docs/quarto/{name}.qmd"] = quarto
        out[f"docs/{name}.md"] = strip_labels(quarto)
    out["docs/index.md"] = env.get_template("index.j2").render(
        macros="_md.j2", top=1, documents=[(n, t) for n, (t, _) in DOCUMENTS.items()])
    bodies = [env.get_template(f"{name}.j2").render(ctx, macros="_tex.j2", top=2) for name, ctx in contexts.items()]
    out["docs/mlsysim_sym.tex"] = env.get_template("document.tex.j2").render(
        bodies=bodies, newcommands=registry.newcommands())
    out = {rel: re.sub(r"\n{3,}", "\n\n", text) for rel, text in out.items()}
    for domain in registry.registry_extension():
        out[f"docs/registry/{domain}.yaml"] = registry.registry_extension_yaml(domain)
    out.update(web.render_files())
    out.update(toolchain.render_files())      # docs/macros/*, docs/chapter_fragment.md
    return out


def check(rendered: Optional[Dict[str, str]] = None) -> List[str]:
    """Differences between ``docs/`` and a fresh render (unified diffs; empty when equal)."""
    rendered = rendered or render_all()
    diffs = []
    for rel, text in rendered.items():
        path = ROOT / rel
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        if old != text:
            diffs.append("".join(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                                      f"{rel} (committed)", f"{rel} (fresh render)", n=1)))
    return diffs


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m derivations", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare docs/ with a fresh render; write nothing")
    parser.add_argument("--web", action="store_true", help="only the calculator: docs/calculator/mlsysim_sym.mjs and "
                        "index.html (derivations/web.py)")
    args = parser.parse_args(argv)
    if args.web:
        return web.main(check=args.check)
    rendered = render_all()
    if args.check:
        diffs = check(rendered)
        print("".join(diffs) or "docs/ is up to date")
        return 1 if diffs else 0
    for rel, text in rendered.items():
        (ROOT / rel).parent.mkdir(parents=True, exist_ok=True)
        (ROOT / rel).write_text(text, encoding="utf-8")
        print(f"wrote {rel}")
    return 0
