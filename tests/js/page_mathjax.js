// Loaded by the MathJax page tests/browser_check.py builds (mathjax_page), after the page's own MathJax
// configuration (the book's macros: docs/macros/book_macros.html) and before MathJax itself. It adds to that
// configuration: an undefined macro is a TeX error (MathJax's noundefined package, which would show it in red
// silently, is left out), every TeX error is recorded, and when MathJax has typeset the page a JSON report is
// written into <pre id="report"> (chromium --dump-dom prints it): errors, the visible text outside math and code,
// the width of every display equation.
"use strict";
(function () {
  const errors = [];
  const config = window.MathJax = window.MathJax || {};
  config.tex = config.tex || {};
  config.tex.packages = { "[-]": ["noundefined"] };
  config.tex.formatError = function (jax, err) {
    errors.push({ tex: String(jax.latex || "").slice(0, 300), error: String(err.message || err) });
    return jax.formatError(err);
  };

  function visibleText(root, skip) {
    const out = [];
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (n.parentElement.closest(skip)) continue;
      out.push(n.data);
    }
    return out.join("");
  }

  function report(failure) {
    const content = document.getElementById("content");
    const displays = [...content.querySelectorAll('mjx-container[display="true"]')].map(d => {
      const m = d.querySelector("mjx-math");
      return { width: Math.round(m ? m.getBoundingClientRect().width : d.scrollWidth),
               hidden: !!d.closest(".hidden") };
    });
    const merrors = [...content.querySelectorAll("mjx-merror")].map(e => ({
      tex: "", error: e.getAttribute("data-mjx-error") || e.textContent.slice(0, 200) }));
    const out = {
      engine: "MathJax " + (window.MathJax && MathJax.version),
      column: Math.round(content.getBoundingClientRect().width),
      math: content.querySelectorAll("mjx-container").length,
      pending: content.querySelectorAll("span.math").length - content.querySelectorAll("span.math mjx-container").length,
      errors: errors.concat(merrors),
      failure: failure ? String(failure.message || failure) : null,
      displays,
      text: visibleText(content, "mjx-container, code, pre, .hidden"),
      height: Math.ceil(document.documentElement.scrollHeight),
    };
    const pre = document.createElement("pre");
    pre.id = "report";
    pre.style.display = "none";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }

  config.startup = config.startup || {};
  config.startup.pageReady = function () {
    return MathJax.startup.defaultPageReady().then(() => report(null), report);
  };
})();
