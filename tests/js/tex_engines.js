// Typeset TeX with KaTeX or with MathJax v3 (node, no browser) and report every error.
// Usage: node tex_engines.js katex|mathjax JOB.json
// Input: {"macros": {"\\Macro": "latex", ...}, "equations": [{"where": "...", "tex": "...", "display": true}],
//         "mathjax": {...options of MathJax's tex block, e.g. maxBuffer}}
// KaTeX as pandoc's --katex script renders (one macros object for every equation, so \gdef persists, strict
// "error"); MathJax 3 with its TeX input as tex-chtml.js loads it, with the noundefined package left out, so an
// undefined macro is an error (not red text), and a TeX error (buffer size too) is reported.
// Output (stdout): {"engine": ..., "rendered": n, "errors": [{"where", "tex", "error"}]}.
"use strict";
const fs = require("fs");

const engine = process.argv[2];
const input = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const errors = [];
let rendered = 0;

function done(version) {
  process.stdout.write(JSON.stringify({ engine: engine + " " + version, rendered, errors }));
}

if (engine === "katex") {
  const katex = require("katex");
  const macros = Object.assign({}, input.macros || {});
  for (const eq of input.equations) {
    try {
      katex.renderToString(eq.tex, { displayMode: eq.display, macros, throwOnError: true, strict: "error" });
      rendered += 1;
    } catch (err) {
      errors.push({ where: eq.where, tex: eq.tex.slice(0, 300), error: String(err.message || err) });
    }
  }
  done(katex.version);
} else if (engine === "mathjax") {
  const macros = {};
  for (const [m, t] of Object.entries(input.macros || {})) macros[m.replace(/^\\/, "")] = t;
  const tex = Object.assign({ macros, packages: { "[-]": ["noundefined"] },
                              formatError: (jax, err) => { throw err; } }, input.mathjax || {});
  require("mathjax").init({ loader: { load: ["input/tex"] }, tex }).then((MathJax) => {
    for (const eq of input.equations) {
      try {
        MathJax.tex2mml(eq.tex, { display: eq.display });
        rendered += 1;
      } catch (err) {
        errors.push({ where: eq.where, tex: eq.tex.slice(0, 300), error: String(err.message || err) });
      }
    }
    done(MathJax.version);
  }).catch((err) => { errors.push({ where: "startup", tex: "", error: String(err) }); done("?"); });
} else {
  process.stderr.write("engine must be katex or mathjax\n");
  process.exit(2);
}
