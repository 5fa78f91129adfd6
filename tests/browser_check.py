"""Render a Markdown document of docs/ as a reader of the book sees it, and measure it.

pandoc (the engine Quarto runs) turns the Markdown into HTML with ``--katex`` math spans; the page
loads KaTeX from ``tests/js/node_modules/katex`` (no network) with the book's macros
(``notation.book_macros()``) and ``tests/js/page.js``, which renders the math, waits for the KaTeX
fonts and writes a JSON report into the page: KaTeX errors, the visible text outside math and code,
and the width of every display equation in a 720 px text column. Headless Chromium loads the page
and prints the DOM (``--dump-dom``); the report is read back from it.

Used by ``tests/test_rendering.py``; by hand, to look at a document::

    python tests/browser_check.py docs/memory.md --screenshot /tmp/memory.png
"""
from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
JS = ROOT / "tests" / "js"
KATEX = JS / "node_modules" / "katex" / "dist"
MATHJAX = JS / "node_modules" / "mathjax" / "es5"
COLUMN = 720          # px: the text column a display equation must fit
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars", "--allow-file-access-from-files", "--virtual-time-budget=15000")


def chromium() -> Optional[str]:
    return next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)


def missing_tools() -> List[str]:
    """What the rendering check needs and this machine lacks (``.ci/run`` installs all of it)."""
    out = [name for name in ("pandoc", "node", "npm") if shutil.which(name) is None]
    if chromium() is None:
        out.append("chromium")
    return out


def ensure_katex() -> None:
    """tests/js/node_modules (KaTeX and MathJax) from the committed lock file (as tests/test_docs.py does)."""
    if not (KATEX / "katex.min.js").is_file() or not (MATHJAX / "tex-chtml.js").is_file():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=JS, check=True,
                       capture_output=True, timeout=300)


def ready() -> None:
    """Fail the calling test, naming what is missing, unless pandoc, chromium, node and npm are here; then the
    KaTeX and MathJax packages (:func:`ensure_katex`). Nothing is skipped."""
    import pytest
    missing = missing_tools()
    if missing:
        pytest.fail(f"{', '.join(missing)} not installed: the rendering test needs pandoc, chromium, node and npm; "
                    f"run .ci/run (it installs them with apt on a fresh Debian machine)", pytrace=False)
    ensure_katex()


def pandoc_html(markdown: str, source: str = "markdown", math: str = "katex", lua_filters=()) -> str:
    """The HTML body pandoc makes of ``markdown`` (math left as ``span.math`` for KaTeX, or for MathJax with
    ``math="mathjax"``), through the Lua filters given."""
    filters = [f"--lua-filter={f}" for f in lua_filters]
    proc = subprocess.run(["pandoc", "-f", source, "-t", "html", f"--{math}", "--wrap=none", *filters],
                          input=markdown, capture_output=True, text=True, timeout=120, check=True)
    return proc.stdout


def mathjax_page(body: str, header: str, base: Path) -> str:
    """A standalone page for MathJax v3 (``tests/js/node_modules/mathjax``, no network): ``header`` in the head
    before MathJax loads (as Quarto's ``include-in-header``), then ``tests/js/page_mathjax.js``, which makes
    every TeX error (an undefined macro too) a reported error and writes the report when MathJax is done."""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><base href="{base.as_uri()}/">
<title>render check (MathJax)</title>
<style>
  html {{ background: #fff; }}
  body {{ margin: 0; padding: 16px 20px; font: 18px/1.5 "DejaVu Serif", serif; color: #111; }}
  #content {{ width: {COLUMN}px; }}
  .hidden {{ display: none; }}
  pre {{ background: #f4f4f4; padding: 6px; overflow-x: auto; }}
</style>
{header}
<script src="{(JS / 'page_mathjax.js').as_uri()}"></script>
<script src="{MATHJAX.as_uri()}/tex-chtml.js"></script>
</head><body><main id="content">
{body}
</main>
</body></html>
"""


def page(body: str, macros: Dict[str, str], base: Path, keep_report: bool = False) -> str:
    """A standalone page: the body in a ``COLUMN`` px column, KaTeX and the book's macros."""
    katex = KATEX.as_uri()
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><base href="{base.as_uri()}/">
<title>render check</title>
<link rel="stylesheet" href="{katex}/katex.min.css">
<style>
  html {{ background: #fff; }}
  body {{ margin: 0; padding: 16px 20px; font: 18px/1.5 "DejaVu Serif", serif; color: #111; }}
  #content {{ width: {COLUMN}px; }}
  table {{ border-collapse: collapse; margin: 1em 0; }}
  th, td {{ border: 1px solid #ccc; padding: 2px 6px; vertical-align: top; }}
  pre {{ background: #f4f4f4; padding: 6px; overflow-x: auto; }}
  code {{ font-size: 0.85em; }}
  img {{ max-width: 100%; }}
</style>
</head><body><main id="content">
{body}
</main>
<script src="{katex}/katex.min.js"></script>
<script>window.BOOK_MACROS = {json.dumps(macros)}; window.KEEP_REPORT = {json.dumps(keep_report)};</script>
<script src="{(JS / 'page.js').as_uri()}"></script>
</body></html>
"""


def _run(args: List[str], timeout: int = 120) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        return subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=timeout)


def measure(html_path: Path, width: int = COLUMN + 40) -> dict:
    """Load the page in headless Chromium and return page.js's report."""
    proc = _run([f"--window-size={width},1000", "--dump-dom", html_path.as_uri()])
    m = re.search(r'<pre id="report"[^>]*>(.*?)</pre>', proc.stdout, re.S)
    if not m:
        raise RuntimeError(f"no report in the page (chromium exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return json.loads(html.unescape(m.group(1)))


def screenshot(html_path: Path, png: Path, height: int, width: int = COLUMN + 40) -> None:
    """A PNG of the whole page (``height`` from :func:`measure`)."""
    proc = _run([f"--window-size={width},{height}", f"--screenshot={png}", html_path.as_uri()])
    if not png.is_file():
        raise RuntimeError(f"chromium wrote no screenshot (exit {proc.returncode}):\n{proc.stderr[-2000:]}")


def render(md_path: Path, out_dir: Path, macros: Dict[str, str], keep_report: bool = False) -> Path:
    """Write ``out_dir/<name>.html`` for one Markdown document; returns its path."""
    body = pandoc_html(md_path.read_text(encoding="utf-8"))
    out = out_dir / (md_path.stem + ".html")
    out.write_text(page(body, macros, md_path.resolve().parent, keep_report), encoding="utf-8")
    return out


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("documents", nargs="+", type=Path)
    parser.add_argument("--screenshot", type=Path, help="PNG file (one document) or folder (several)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from mlsysim_sym import notation
    import mlsysim_sym  # noqa: F401  (registers every symbol)

    if missing_tools():
        print(f"missing: {', '.join(missing_tools())}; run .ci/run (it installs them)", file=sys.stderr)
        return 2
    ensure_katex()
    with tempfile.TemporaryDirectory() as tmp:
        for doc in args.documents:
            page_path = render(doc, Path(tmp), notation.book_macros())
            rep = measure(page_path)
            wide = [d for d in rep["displays"] if d["width"] > COLUMN]
            tables = [t for t in rep["tables"] if t["width"] > COLUMN]
            print(f"{doc}: {rep['math']} math, {len(rep['errors'])} errors, {len(wide)} displays wider than "
                  f"{COLUMN}px {[d['width'] for d in wide]}, {len(tables)} tables wider "
                  f"{[(t['width'], t['header'][:40]) for t in tables]}, fonts loaded: {rep['fonts']}")
            if args.screenshot:
                png = args.screenshot if len(args.documents) == 1 else args.screenshot / (doc.stem + ".png")
                screenshot(page_path, png, rep["height"])
                print(f"  screenshot: {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
