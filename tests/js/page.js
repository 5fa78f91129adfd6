// Loaded by the page tests/browser_check.py builds: renders every pandoc math span with KaTeX and the
// book's macros (as a reader's browser would), waits for the KaTeX fonts, then measures what a reader
// sees and writes it as JSON into <pre id="report"> (chromium --dump-dom prints it).
// window.BOOK_MACROS is set by the page before this script runs.
"use strict";
(function () {
  const content = document.getElementById("content");
  let exceptions = [];
  for (const el of content.querySelectorAll("span.math")) {
    const tex = el.textContent;
    try {
      katex.render(tex, el, {
        displayMode: el.classList.contains("display"),
        macros: Object.assign({}, window.BOOK_MACROS),
        throwOnError: false,     // an error becomes a visible .katex-error element, which the test counts
        strict: "ignore",
        trust: false,
      });
    } catch (err) {
      exceptions.push({ tex: tex.slice(0, 300), error: String(err.message || err) });
    }
  }

  // Text a reader sees outside math and code.
  function visibleText(skip) {
    const out = [];
    const walker = document.createTreeWalker(content, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (n.parentElement.closest(skip)) continue;
      out.push(n.data);
    }
    return out.join("");
  }

  function report() {
    const column = content.getBoundingClientRect().width;
    const displays = [];
    for (const d of content.querySelectorAll(".katex-display > .katex")) {
      let left = Infinity, right = -Infinity;
      for (const b of d.querySelectorAll(".katex-html .base")) {
        const r = b.getBoundingClientRect();
        if (r.width > 0) { left = Math.min(left, r.left); right = Math.max(right, r.right); }
      }
      // the math's own extent (the .katex block is as wide as the column; scrollWidth says only overflow)
      const width = right > left ? right - left : d.scrollWidth;
      const ann = d.querySelector("annotation");
      displays.push({ width: Math.round(width), tex: ann ? ann.textContent.slice(0, 200) : "" });
    }
    // tables: as wide as their content, which may not fit the column (nothing in a cell can wrap)
    const tables = [...content.querySelectorAll("table")].map(t => ({
      width: Math.round(Math.max(t.scrollWidth, t.getBoundingClientRect().width)),
      header: t.querySelector("tr") ? t.querySelector("tr").textContent.trim().slice(0, 120) : "" }));
    const errors = [...content.querySelectorAll(".katex-error")].map(e => ({
      tex: e.textContent.slice(0, 300), error: e.getAttribute("title") || "" }));
    // a macro KaTeX does not know renders as its name in the error colour (throwOnError: false), not as an error
    const undefinedMacros = [...content.querySelectorAll('.katex-mathml mstyle[mathcolor="#cc0000"]')].map(
      e => e.textContent.slice(0, 100));
    const out = {
      column: Math.round(column),
      undefined: undefinedMacros,
      fonts: document.fonts.check("16px KaTeX_Main") && document.fonts.check("16px KaTeX_Math"),
      math: content.querySelectorAll(".katex").length,
      errors, exceptions, displays, tables,
      text: visibleText(".katex, .katex-error, code, pre"),   // prose: no TeX may leak into it
      withCode: visibleText(".katex, .katex-error"),         // prose and code: every macro name written
      height: Math.ceil(document.documentElement.scrollHeight),
    };
    const pre = document.createElement("pre");
    pre.id = "report";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
    if (!window.KEEP_REPORT) pre.style.display = "none";
  }

  // Force the KaTeX fonts to load before measuring (widths depend on them).
  Promise.all(["KaTeX_Main", "KaTeX_Math", "KaTeX_Size1", "KaTeX_Size2"].map(f => document.fonts.load("16px " + f)))
    .then(() => document.fonts.ready).then(report, report);
})();
