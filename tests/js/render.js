// Render every equation given in a JSON file with KaTeX and the book's macros.
// Input: {"macros": {"\\Macro": "latex", ...}, "equations": [{"where": "...", "tex": "...", "display": true}]}
// Output (stdout): {"rendered": n, "errors": [{"where": ..., "tex": ..., "error": ...}]}; exit 1 on any error.
"use strict";
const fs = require("fs");
const katex = require("katex");

const input = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const errors = [];
let rendered = 0;
for (const eq of input.equations) {
  try {
    katex.renderToString(eq.tex, {
      displayMode: eq.display,
      macros: Object.assign({}, input.macros),
      throwOnError: true,
      strict: "error",
      trust: false,
    });
    rendered += 1;
  } catch (err) {
    errors.push({ where: eq.where, tex: eq.tex, error: String(err.message || err) });
  }
}
process.stdout.write(JSON.stringify({ rendered, errors }));
process.exit(errors.length ? 1 : 0);
