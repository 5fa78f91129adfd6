"""``docs/calculator/mlsysim_sym.mjs``: ``solve()`` as one dependency-free ES module, generated from the model.

The module is printed from the same compiled expressions as the Python package (:mod:`mlsysim_sym.compile`:
the closed forms of ``solve()``'s outputs and the ordered checks of :mod:`mlsysim_sym.inputs`, each in
:func:`~mlsysim_sym.compile.numeric_form`, common subexpressions shared), by sympy's JavaScript printer with
the package's numeric conventions:

* ``FloorDiv`` / ``CeilDiv`` as ``Math.floor(a / b)`` / ``Math.ceil(a / b)``: one correctly rounded
  division, exact for integers below 2**53 (the argument of :mod:`mlsysim_sym.terms.base`); ``CeilDiv`` is
  mlsysim's ``math.ceil(a / b)`` for fractional divisors too, as the Python code;
* ``Max`` / ``Min`` as Python's ``max`` / ``min`` (numbers first, a NaN argument loses), ``Piecewise``,
  ``ITE`` and ``Where`` as conditional expressions, the Iverson bracket as ``cond ? 1 : 0``;
* floats printed with Python's ``repr`` (the shortest string that reads back to the same float64).

What is data, not arithmetic, is computed here by the package and embedded: the catalog, each workload's
lowering per precision (forward FLOPs, weight bytes, element size), each cluster's record fields and peak
rate per precision, mlsysim's constants. The module's ``solve(model, fleet, kwargs)`` takes catalog names and
``solve()``'s keyword names, runs the checks in mlsysim's order (the first broken one throws its message,
warnings are returned in ``result.warnings``), and returns the result under ``DistributedResult``'s field
names with ``node_profile`` nested, in SI units.

``python -m derivations --web`` writes it (``--check`` also checks it is fresh).
"""
from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import List, Sequence, Tuple

import sympy as sp
from sympy.printing.jscode import JavascriptCodePrinter

from mlsysim_sym import catalog, notation
from mlsysim_sym.checks import FACT_NAMES, RAW, compiled_rules, facts, is_count
from mlsysim_sym.compile import compile_quantities, cse_real, numeric_form
from mlsysim_sym.inputs import FLAG_KEYWORDS, PRECISION_BYTES, static_values
from mlsysim_sym.mechanisms import FIDELITIES, ModelChoice
from mlsysim_sym.model import Variant, build_model
from mlsysim_sym.outputs import EXTENDED_OUTPUTS, OUTPUTS
from mlsysim_sym.outputs import words as output_words
from mlsysim_sym.solver import solve_quantities
from mlsysim_sym.symbols import PARAMS, Kind, Origin, keywords
from mlsysim_sym.terms.base import CeilDiv, FloorDiv, Iverson, NamedTerm

ROOT = Path(__file__).resolve().parent.parent
MODULE = ROOT / "docs" / "calculator" / "mlsysim_sym.mjs"
#: The structures the bundled catalog reaches (``tools/generate_code.py`` ships the same), in mlsysim's model.
VARIANTS = (Variant("transformer"), Variant("generic"), Variant("generic", explicit_weights=True))


class JSPrinter(JavascriptCodePrinter):
    """sympy's JavaScript printer with the package's numeric conventions (module docstring)."""

    def __init__(self):
        super().__init__({"full_prec": True, "allow_unknown_functions": False})

    def _print_Float(self, expr):
        x = float(expr)
        if math.isnan(x):
            return "NaN"
        if math.isinf(x):
            return "Infinity" if x > 0 else "-Infinity"
        return repr(x)

    def _print_Rational(self, expr):
        return f"({expr.p}/{expr.q})"

    def _print_Piecewise(self, expr):
        *head, (last, cond) = expr.args
        out = self._print(last) if cond == sp.true else f"(({self._print(cond)}) ? ({self._print(last)}) : NaN)"
        for e, c in reversed(head):
            out = f"(({self._print(c)}) ? ({self._print(e)}) : ({out}))"
        return out

    def _print_ITE(self, expr):
        a, b, c = (self._print(x) for x in expr.args)
        return f"(({a}) ? ({b}) : ({c}))"

    def _print_Where(self, expr):
        return self._print_ITE(expr)

    def _print_Iverson(self, expr):
        return f"(({self._print(expr.args[0])}) ? 1 : 0)"

    def _minmax(self, fn, expr):
        args = sorted(expr.args, key=lambda a: not a.is_Number)
        return f"{fn}({', '.join(self._print(a) for a in args)})"

    def _print_Max(self, expr):
        return self._minmax("pymax", expr)

    def _print_Min(self, expr):
        return self._minmax("pymin", expr)

    def _print_Function(self, expr):
        if isinstance(expr, NamedTerm):
            return f"({self._print(expr.formula(*expr.args))})"
        if isinstance(expr, FloorDiv):
            a, b = (self._print(x) for x in expr.args)
            return f"Math.floor(({a})/({b}))"
        if isinstance(expr, CeilDiv):
            a, b = (self._print(x) for x in expr.args)
            return f"Math.ceil(({a})/({b}))"
        if isinstance(expr, Iverson):
            return self._print_Iverson(expr)
        return super()._print_Function(expr)

    def _print_NonFinite(self, expr):
        return f"(!Number.isFinite({self._print(expr.args[0])}))"

    def _print_Fractional(self, expr):
        x = self._print(expr.args[0])
        return f"(Math.floor({x}) !== ({x}))"

    def _print_And(self, expr):
        return "(" + " && ".join(self._print(a) for a in expr.args) + ")"

    def _print_Or(self, expr):
        return "(" + " || ".join(self._print(a) for a in expr.args) + ")"

    def _print_Not(self, expr):
        return f"(!{self._print(expr.args[0])})"

    def _print_BooleanTrue(self, expr):
        return "true"

    def _print_BooleanFalse(self, expr):
        return "false"

    def _print_Equality(self, expr):
        return f"(({self._print(expr.lhs)}) === ({self._print(expr.rhs)}))"

    def _print_Unequality(self, expr):
        return f"(({self._print(expr.lhs)}) !== ({self._print(expr.rhs)}))"

    def _print_Relational(self, expr):
        return f"(({self._print(expr.lhs)}) {expr.rel_op} ({self._print(expr.rhs)}))"

    def _print_Mod(self, expr):
        a, b = (self._print(x) for x in expr.args)
        return f"pymod({a}, {b})"

    def _print_Symbol(self, expr):
        return _js_name(expr.name)


def _js_name(name: str) -> str:
    return "v_" + "".join(c if c.isalnum() else "_" for c in name)


def js_function(name: str, args: Sequence[sp.Symbol], exprs: Sequence[sp.Basic]) -> str:
    """A JavaScript function ``name(args...)`` returning the list of ``exprs`` (common subexpressions shared)."""
    p = JSPrinter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        subs, reduced = cse_real(list(exprs))
    lines = [f"function {name}({', '.join(_js_name(a.name) for a in args)}) {{"]
    for s, e in subs:
        lines.append(f"  const {_js_name(s.name)} = {p.doprint(e)};")
    lines.append(f"  return [{', '.join(p.doprint(e) for e in reduced)}];")
    lines.append("}")
    return "\n".join(lines)


def _variant_key(v: Variant) -> str:
    return v.family + ("_explicit_weights" if v.explicit_weights else "") + \
        ("" if v.fidelity == "mlsysim" else f"_{v.fidelity}")


def _all_variants():
    """The catalog's variants of each model: mlsysim's, then the extended one (``fidelity="extended"``)."""
    return tuple(v.of(ModelChoice(f)) for f in FIDELITIES for v in VARIANTS)


def _rules_source(v: Variant, key: str) -> Tuple[List[str], dict]:
    """The checks of one variant: the first-broken function and, per rule, its message and fields."""
    out_args = compile_quantities(v, solve_quantities(v), "math").args
    r = compiled_rules(v, "solve", out_args)
    raw_args = tuple(r.args)
    code = [js_function(f"rules_{key}", raw_args, r.first_program())]
    meta = []
    for i, rule in enumerate(r.rules):
        labels, exprs, args, _ = r._fields(i, "math")
        fn = None
        if labels:
            fn = f"fields_{key}_{i}"
            code.append(js_function(fn, args, [numeric_form(e) for e in exprs]))
        meta.append({"message": rule.message, "warning": rule.warning, "error": rule.error.__name__,
                     "fields": labels, "field_args": [a.name for a in args], "fn": fn,
                     "ints": [bool(lab in _INT_FIELDS) for lab in labels]})
    return code, {"args": [a.name for a in raw_args], "rules": meta, "warnings": list(r.warnings),
                  "out_args": [RAW[a].name for a in out_args]}


#: Message fields that are whole numbers (model quantities declared integer).
_INT_FIELDS = frozenset(n for n in build_model() if is_count(n))


def _data() -> dict:
    """The catalog and everything its records lower to, by the package."""
    wl = {}
    for name in catalog.workload_names():
        w = catalog.workload(name)
        by_key = {}
        for key in PRECISION_BYTES:
            v, values = static_values(w, catalog.fleet("Research_256"), key)
            by_key[key] = {"variant": _variant_key(v),
                           **{RAW[p.symbol].name: values[p.symbol] for p in PARAMS.values()
                              if p.origin in (Origin.WORKLOAD, Origin.PRECISION) and p.symbol in values}}
        wl[name] = {"name": w.name, "transformer": w.is_transformer, "by_precision": by_key}
    fl = {}
    for name in catalog.fleet_names():       # (every variant the catalog reaches must be generated)
        for w in map(catalog.workload, catalog.workload_names()):
            for key in PRECISION_BYTES:
                if static_values(w, catalog.fleet(name), key)[0] not in VARIANTS:
                    raise RuntimeError(f"{w.name} on {name} at {key} needs a variant the calculator lacks")
        f = catalog.fleet(name)
        by_key = {}
        for key in PRECISION_BYTES:
            _, values = static_values(catalog.workload("GPT2"), f, key)
            by_key[key] = {"peak_flops": values[PARAMS["R_peak"].symbol],
                           "fallback": facts(catalog.workload("ResNet50"), f, key)["flags"][2]}
        acc = f.node.accelerator
        _, values = static_values(catalog.workload("GPT2"), f, "fp16")      # record fields: any precision
        fields = {RAW[p.symbol].name: values[p.symbol] for p in PARAMS.values()
                  if p.origin in (Origin.FLEET, Origin.NODE, Origin.FABRIC, Origin.ACCELERATOR)
                  and p.name != "R_peak" and p.symbol in values}
        fl[name] = {"name": f.name, "accelerator": acc.name, "available": str([k for k, _ in acc.precision_flops]),
                    "fields": fields, "by_precision": by_key}
    constants = {RAW[p.symbol].name: p.value for p in PARAMS.values() if p.kind is Kind.CONSTANT}
    return {"workloads": wl, "fleets": fl, "constants": constants}


#: The equations the page shows, each quantity's definition in the book's notation.
EQUATIONS = ("T_sync", "T_step", "T_node", "T_compute", "T_memory", "T_dp_exposed", "T_dp", "T_tp", "T_ep",
             "T_bubble", "M_acc", "mfu")


def _equations(v: Variant) -> list:
    """``[[quantity, LaTeX], ...]``: each quantity's definition; a named cost term also shows its formula."""
    from mlsysim_sym.printing import latex
    m = build_model(v)
    out = []
    for n in EQUATIONS:
        if n not in m:
            continue
        d = m.definition(n)
        tex = latex(m.quantity(n).symbol) + " = " + latex(d)
        if isinstance(d, NamedTerm):
            tex += " = " + latex(d.doit())
        out.append([n, tex])
    return out


def _elasticities(v: Variant, key: str, args) -> Tuple[str, List[str]]:
    """``elasticities_<key>(args)``: d ln(MFU) / d ln(x) of the fleet MFU for each continuous parameter, the
    derivatives of the closed form (in the regime the point is in: sympy differentiates each branch)."""
    from mlsysim_sym.sensitivity.point import CONTINUOUS
    e = build_model(v).closed_form("mfu")
    names = [(n, x) for n, x in CONTINUOUS.items() if x in e.free_symbols]
    exprs = [numeric_form(sp.diff(e, x) * x / e) for _, x in names]
    return js_function(f"elasticities_{key}", args, exprs), [n for n, _ in names]


def render_module() -> str:
    code: List[str] = []
    meta = {}
    words = {}
    for v in _all_variants():
        key = _variant_key(v)
        c = compile_quantities(v, solve_quantities(v), "math")
        model = build_model(v)
        # the step's terms as the model adds them up, and their sum; the extended model's own outputs
        terms = [*model.step_terms, "T_sync"]
        extra = {k: n for k, n in EXTENDED_OUTPUTS.items() if v.fidelity == "extended" and n in model}
        words.update({n: output_words(n) for n in terms})
        exprs = [numeric_form(model.closed_form(n)) for n in (*OUTPUTS.values(), *terms, *extra.values())]
        code.append(js_function(f"outputs_{key}", c.args, exprs))
        rules_code, rules_meta = _rules_source(v, key)
        rules_meta["terms"], rules_meta["extended"] = terms, list(extra)
        code += rules_code
        el_code, el_names = _elasticities(v, key, c.args)
        code.append(el_code)
        rules_meta["elasticities"] = el_names
        rules_meta["equations"] = _equations(v)
        meta[key] = rules_meta
    data = _data()
    table = {k: {"default": p.default, "kind": p.kind.value, "fidelity": p.fidelity, "label": p.label}
             for k, p in keywords().items()}
    template = (Path(__file__).resolve().parent / "web_runtime.mjs").read_text()
    fns = "\n".join(f"  {_variant_key(v)}: {{outputs: outputs_{_variant_key(v)}, rules: rules_{_variant_key(v)}, "
                    f"elasticities: elasticities_{_variant_key(v)}}},"
                    for v in _all_variants())
    labels = {k: {"label": p.words, "symbol": p.text, "latex": p.latex, "unit": p.unit}
              for k, p in PARAMS_BY_ARGUMENT.items() if p.kind is not Kind.CONSTANT}
    field_fns = ", ".join(sorted({m["fn"] for k in meta for m in meta[k]["rules"] if m["fn"]}))
    header = ("// Generated by `python -m derivations --web` from the sympy model of mlsysim_sym; do not edit.\n"
              "// derivations/web.py explains how; derivations/web_runtime.mjs is the hand-written part.\n")
    return (header + "\n".join(code) + "\n\n"
            + f"const DATA = {json.dumps(data, sort_keys=True)};\n"
            + f"const META = {json.dumps(meta, sort_keys=True)};\n"
            + f"const KEYWORDS = {json.dumps(table)};\n"
            + f"const FLAG_KEYWORDS = {json.dumps(list(FLAG_KEYWORDS))};\n"
            + f"const PRECISION_BYTES = {json.dumps(PRECISION_BYTES)};\n"
            + f"const OUTPUT_NAMES = {json.dumps(list(OUTPUTS))};\n"
            + f"const TERM_WORDS = {json.dumps(words, sort_keys=True)};\n"
            + f"const LABELS = {json.dumps(labels, sort_keys=True)};\n"
            + f"const FACT_NAMES = {json.dumps(list(FACT_NAMES))};\n"
            + f"const VARIANT_FUNCTIONS = {{\n{fns}\n}};\n"
            + f"const FIELD_FUNCTIONS = {{{field_fns}}};\n\n" + template)


PARAMS_BY_ARGUMENT = {p.argument: p for p in PARAMS.values() if p.argument is not None}
PAGE = ROOT / "docs" / "calculator" / "index.html"
KATEX = ROOT / "docs" / "calculator" / "vendor" / "katex"


def _katex_css() -> str:
    """KaTeX's stylesheet with its woff2 fonts inlined (data URIs): the page needs no other file."""
    import base64
    import re
    css = (KATEX / "katex.min.css").read_text()

    def font(m):
        data = base64.b64encode((KATEX / "fonts" / m.group(1)).read_bytes()).decode()
        return f'url(data:font/woff2;base64,{data}) format("woff2")'
    css = re.sub(r'url\(fonts/([\w-]+\.woff2)\) format\("woff2"\)', font, css)
    # the woff and ttf fallbacks are not shipped: drop them
    return re.sub(r',url\(fonts/[\w-]+\.(?:woff|ttf)\) format\("(?:woff|truetype)"\)', "", css)


def render_page(module: str) -> str:
    """``docs/calculator/index.html``: the page, the module and KaTeX in one file (works from ``file://``)."""
    page = (Path(__file__).resolve().parent / "web_page.html").read_text()
    body = module.replace("</script", "<\\/script")
    return (page.replace("/*KATEX_CSS*/", _katex_css())
            .replace("/*KATEX_JS*/", (KATEX / "katex.min.js").read_text().replace("</script", "<\\/script"))
            .replace("/*MODULE*/", body))


def render_files() -> dict:
    """``relative path -> text`` of the calculator's generated files."""
    module = render_module()
    return {str(MODULE.relative_to(ROOT)): module, str(PAGE.relative_to(ROOT)): render_page(module)}


def main(check: bool = False) -> int:
    stale = []
    for rel, text in render_files().items():
        path = ROOT / rel
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(rel)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {rel}")
    if stale:
        print("stale: " + ", ".join(stale) + " (run python -m derivations --web)")
        return 1
    return 0
