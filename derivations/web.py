"""``docs/calculator/mlsysim_sym.mjs``: ``solve()`` as one dependency-free ES module, generated from the package.

**The code is the package's own.** Every function the module computes with is a compiled Python function that
``solve()`` itself runs, translated operation by operation (:class:`_PythonToJS`, reading its source with
:mod:`ast`): the outputs (:func:`mlsysim_sym.compile.compile_quantities`), the checks' first-broken function and,
per rule, its own condition and message fields (:class:`mlsysim_sym.checks.CompiledRules`). Each operation is a
call of the runtime's ``P`` (``derivations/web_runtime.mjs``), which does what CPython does: a Python ``int`` is
a BigInt and stays exact, a ``float`` is a number, ``/`` of ints is correctly rounded, ``//`` and ``%`` follow
Python's signs, a division by zero, ``math.ceil`` of a NaN or an infinity, an int beyond the float range mixed
with a float, a float power that overflows raise Python's exception with Python's message; where the outputs'
float arithmetic overflows part-way the runtime evaluates them again on wide numbers, as
:func:`mlsysim_sym.wide.evaluate` does. The hand-written runtime follows ``DistributedModel.solve``'s path:
the model choice, the keyword binding, the catalog lookup (``difflib``'s close names), the record defaults,
``refuse_extended``, the lowering of switches and ``seq_len``, the precision's facts, then
:func:`mlsysim_sym.checks.check` (the compiled checks on plain numbers, else the rules in order, each argument's
type checked where that rule reads it), then the outputs and ``solver._result``'s conversions, and the notes
below a result (:mod:`mlsysim_sym.model_notes`: each note's own condition translated, its sentence as data).
What is data, not arithmetic, is embedded (ints as BigInt literals): the catalog, each workload's lowering per
precision, each cluster's fields and peak rate per precision, mlsysim's constants, the catalog's names. The elasticities of the
page are printed by sympy's JavaScript printer (:class:`JSPrinter`) on plain numbers.

**JavaScript values are the Python values a JSON caller would pass.** ``solve(model, fleet, kwargs)`` takes
each value as ``json.loads(JSON.stringify(value))`` would give it to ``DistributedModel(fidelity).solve(model,
fleet, **kwargs)`` (``kwargs.fidelity`` is the model's fidelity), and decides, raises and prints as Python does
on that value (``tests/test_calculator_hostile.py`` holds them equal):

* a number is an ``int`` when it is whole and JavaScript writes it without a point or an exponent (``|x| <
  1e21``), else a ``float``; ``-0`` is ``-0.0`` and ``NaN``/``Infinity`` are Python's (JSON has no spelling
  for them; Python's ``json`` reads ``NaN`` and ``Infinity``); a BigInt is an ``int``;
* ``true``/``false`` are ``True``/``False``, ``null`` is ``None``, a string a ``str``, an array a ``list``
  (an undefined element ``None``), any other object a ``dict`` of its own enumerable keys in their order;
* ``undefined``, a function or a symbol is "not given" (JSON leaves it out): a keyword at its default, no
  keywords for ``kwargs``, ``None`` for ``model`` or ``fleet``.

Messages show the Python values (``got str``, ``got 2``, ``got -0.0``, ``[1, 2]``). The module bundles
mlsysim's catalog and the modern one (``modern/...``: architecture cards and fleets, lowered by the package as
``solve()`` lowers them); a file name, which the package reads, is refused with a ``ValueError`` that says so.

``python -m derivations --web`` writes it (``--check`` also checks it is fresh).
"""
from __future__ import annotations

import ast
import inspect
import json
import math
import warnings
from pathlib import Path
from typing import List, Sequence, Tuple

import sympy as sp
from sympy.printing.jscode import JavascriptCodePrinter

from mlsysim_sym import catalog
from mlsysim_sym import DistributedModel
from mlsysim_sym.checks import FACT_NAMES, RAW, compiled_rules, facts
from mlsysim_sym.compile import compile_quantities, cse_real, numeric_form
from mlsysim_sym.inputs import FLAG_KEYWORDS, PRECISION_BYTES, static_values
from mlsysim_sym.mechanisms import FIDELITIES, ModelChoice
from mlsysim_sym.model_notes import MECHANISMS_READ, NOTES, workload_inputs
from mlsysim_sym.model import Variant, build_model
from mlsysim_sym.outputs import OUTPUTS
from mlsysim_sym.outputs import words as output_words
from mlsysim_sym.solver import INFINITE_STEP, solve_quantities
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


class _PythonToJS:
    """The JavaScript of a lambdified (or shipped) Python function of :mod:`mlsysim_sym.compile`, read from its
    source with :mod:`ast`: each operation a call of the runtime's ``P`` (Python's arithmetic on ints as BigInt and
    floats as numbers, with Python's exceptions), so that the module computes, raises and rounds where the package
    does. Only the constructs the package's printers emit are known; anything else fails the generation."""

    BINARY = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv",
              ast.Mod: "mod", ast.Pow: "pow"}
    COMPARE = {ast.Lt: "<", ast.Gt: ">", ast.LtE: "<=", ast.GtE: ">=", ast.Eq: "eq", ast.NotEq: "ne"}
    CALLS = {"math.isfinite": "isfinite", "isfinite": "isfinite", "math.ceil": "ceil", "ceil": "ceil",
             "math.floor": "floor", "floor": "floor", "max": "max", "min": "min", "int": "int", "float": "float",
             "math.sqrt": "sqrt", "sqrt": "sqrt", "abs": "abs"}

    def __init__(self, fn, name: str):
        tree = ast.parse(inspect.getsource(fn))
        (self.fdef,) = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        self.name = name

    def params(self):
        return [a.arg for a in self.fdef.args.args]

    def source(self) -> str:
        lines = [f"function {self.name}({', '.join(_js_name(a) for a in self.params())}) {{"]
        for stmt in self.fdef.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue                                    # a docstring
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                lines.append(f"  const {_js_name(stmt.targets[0].id)} = {self.expr(stmt.value)};")
            elif isinstance(stmt, ast.Return):
                lines.append(f"  return {self.expr(stmt.value)};")
            else:
                raise ValueError(f"{self.name}: cannot translate {ast.unparse(stmt)!r}")
        lines.append("}")
        return "\n".join(lines)

    def expr(self, n) -> str:
        e = self.expr
        if isinstance(n, ast.Name):
            return _js_name(n.id)
        if isinstance(n, ast.Constant):
            return _js_literal(n.value)
        if isinstance(n, (ast.List, ast.Tuple)):
            return "[" + ", ".join(e(x) for x in n.elts) + "]"
        if isinstance(n, ast.BinOp) and type(n.op) in self.BINARY:
            return f"P.{self.BINARY[type(n.op)]}({e(n.left)}, {e(n.right)})"
        if isinstance(n, ast.UnaryOp):
            if isinstance(n.op, ast.Not):
                return f"(!P.truth({e(n.operand)}))"
            if isinstance(n.op, ast.USub):
                return f"P.neg({e(n.operand)})"
            if isinstance(n.op, ast.UAdd):
                return f"P.pos({e(n.operand)})"
        if isinstance(n, ast.BoolOp):          # Python's and/or: lazy, the deciding operand is the value
            fn = "and" if isinstance(n.op, ast.And) else "or"
            out = e(n.values[-1])
            for x in reversed(n.values[:-1]):
                out = f"P.{fn}({e(x)}, () => {out})"
            return out
        if isinstance(n, ast.Compare):
            parts, left = [], n.left
            for op, right in zip(n.ops, n.comparators):
                if type(op) not in self.COMPARE:
                    break
                c = self.COMPARE[type(op)]
                parts.append(f"P.{c}({e(left)}, {e(right)})" if c in ("eq", "ne")
                             else f"P.cmp({e(left)}, {e(right)}, {json.dumps(c)})")
                left = right
            else:
                return "(" + " && ".join(parts) + ")"
        if isinstance(n, ast.IfExp):
            return f"(P.truth({e(n.test)}) ? ({e(n.body)}) : ({e(n.orelse)}))"
        if isinstance(n, ast.Call) and not n.keywords and ast.unparse(n.func) in self.CALLS:
            return f"P.{self.CALLS[ast.unparse(n.func)]}({', '.join(e(a) for a in n.args)})"
        raise ValueError(f"{self.name}: cannot translate {ast.unparse(n)!r}")


def _js_literal(value) -> str:
    """A Python value as the runtime holds it: an int as a BigInt, a float as a number (NaN, Infinity), None as
    null, containers of them."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value}n"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_js_literal(x) for x in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {_js_literal(x)}" for k, x in value.items()) + "}"
    raise TypeError(f"no JavaScript literal for {type(value).__name__}")


def translated(fn, name: str) -> Tuple[str, List[str]]:
    """``(JavaScript source, parameter names)`` of the Python function ``fn`` (:class:`_PythonToJS`)."""
    t = _PythonToJS(fn, name)
    return t.source(), t.params()


def _variant_key(v: Variant) -> str:
    return v.family + ("_explicit_weights" if v.explicit_weights else "") + \
        ("" if v.fidelity == "mlsysim" else f"_{v.fidelity}")


def _all_variants():
    """The catalog's variants of each model: mlsysim's, then the extended one (``fidelity="extended"``)."""
    return tuple(v.of(ModelChoice(f)) for f in FIDELITIES for v in VARIANTS)


def _rules_source(v: Variant, key: str) -> Tuple[List[str], dict]:
    """The checks of one variant as the package runs them (:func:`mlsysim_sym.checks.check`): the compiled
    first-broken function (the ``first`` of :class:`~mlsysim_sym.checks.CompiledRules`), and per rule its own
    condition (the walk in order, for arguments that are not plain numbers), its message and the function of its
    computed message fields, with what :func:`~mlsysim_sym.checks.check` reads of it."""
    from mlsysim_sym.compile import lambdify_numeric
    c = compile_quantities(v, solve_quantities(v), "math")
    r = compiled_rules(v, "solve", c.args)
    names, first = r.first_named
    code = [translated(first, f"first_{key}")[0]]
    meta = []
    for i, rule in enumerate(r.rules):
        # the function CompiledRules.broken builds for rule i, and that of its message fields
        cond = lambdify_numeric(r.free[i], [r.conditions[i]], "math", cse=False)
        code.append(translated(cond, f"rule_{key}_{i}")[0])
        labels, _, args, fields_fn = r._fields(i, "math")
        fn = None
        if labels:
            fn = f"fields_{key}_{i}"
            code.append(translated(fields_fn, fn)[0])
        meta.append({"message": rule.message, "warning": rule.warning, "error": rule.error.__name__,
                     "fields": labels, "field_args": [a.name for a in args], "fn": fn,
                     "args": [a.name for a in r.free[i]], "reads": list(r.reads[i]), "numeric": rule.numeric,
                     "bools": rule.bools})
    code.append(translated(c.fn, f"outputs_{key}")[0])
    return code, {"first_args": list(names), "rules": meta, "warnings": list(r.warnings),
                  "errors": list(r.errors), "out_args": [RAW[a].name for a in c.args]}


def _catalog_workloads() -> List[Tuple[str, object]]:
    """The page's workloads: mlsysim's registry, then the modern catalog's architecture cards (as
    ``solve()`` reads them), by the names ``solve()`` takes."""
    from mlsysim_sym import modern
    return ([(n, catalog.workload(n)) for n in catalog.workload_names()]
            + [(n, modern.workload(n)) for n in modern.architecture_names()])


def _catalog_fleets() -> List[Tuple[str, object]]:
    """The page's clusters: mlsysim's registry, then the modern catalog's fleets."""
    from mlsysim_sym import modern
    return ([(n, catalog.fleet(n)) for n in catalog.fleet_names()]
            + [(n, modern.fleet(n)) for n in modern.fleet_names()])


def _data() -> dict:
    """The catalogs and everything their records lower to, by the package."""
    from mlsysim_sym.arguments import _FROM_RECORD
    wl = {}
    for name, w in _catalog_workloads():
        by_key = {}
        for key in PRECISION_BYTES:
            v, values = static_values(w, catalog.fleet("Research_256"), key)
            by_key[key] = {"variant": _variant_key(v),
                           **{RAW[p.symbol].name: values[p.symbol] for p in PARAMS.values()
                              if p.origin in (Origin.WORKLOAD, Origin.PRECISION) and p.symbol in values}}
        wl[name] = {"name": w.name, "transformer": w.is_transformer, "by_precision": by_key,
                    "notes": workload_inputs(w),        # what the notes read of the workload
                    # the workload's own defaults of keywords a record gives (arguments.from_record)
                    "record": {f: getattr(w, f, None) for _, f in _FROM_RECORD}}
    fl = {}
    for name, f in _catalog_fleets():       # (every variant the catalogs reach must be generated)
        for _, w in _catalog_workloads():
            for key in PRECISION_BYTES:
                if static_values(w, f, key)[0] not in VARIANTS:
                    raise RuntimeError(f"{w.name} on {name} at {key} needs a variant the calculator lacks")
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


#: The equations the page shows before the step's terms (the breakdown's rows, whatever the model): the step.
EQUATIONS = ("T_sync", "T_step")
#: And after them: what the terms are made of, the memory and the MFU (each where the model has it).
INSIDE_TERMS = ("T_compute", "T_memory", "T_perm", "T_dp", "T_tp", "T_ep", "M_acc", "mfu")


def _equations(v: Variant) -> list:
    """``[[quantity, LaTeX], ...]``: each quantity's definition, the step's terms in the breakdown's order (the
    extended model's CP exchange, sends and optimizer update too); a named cost term also shows its formula."""
    from mlsysim_sym.printing import latex
    m = build_model(v)
    out = []
    for n in dict.fromkeys(EQUATIONS + m.step_terms + INSIDE_TERMS):
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


def _about() -> dict:
    """The start of a message that names no keyword -> the page's fields it is about (the command line's table,
    ``mlsysim_sym.cli.errors._ABOUT``, its options read as the keywords they set)."""
    from mlsysim_sym.cli.errors import _ABOUT
    from mlsysim_sym.cli.options import OPTIONS
    by_flag = {o.flag: o.keyword for o in OPTIONS} | {"--fidelity": "fidelity"}
    return {start: [by_flag[f] for f in flags.split("/")] for start, flags in _ABOUT.items()
            if all(f in by_flag for f in flags.split("/"))}


def render_module() -> str:
    from mlsysim_sym import arguments, files, modern
    from mlsysim_sym.arguments import _EXTENDED, _FROM_RECORD, settable
    from mlsysim_sym.solver import _layout
    from mlsysim_sym.cli.options import DEFAULT_EFFICIENCY_NOTE
    code: List[str] = []
    meta = {}
    words = {}
    for v in _all_variants():
        key = _variant_key(v)
        c = compile_quantities(v, solve_quantities(v), "math")
        model = build_model(v)
        rules_code, rules_meta = _rules_source(v, key)
        code += rules_code
        # where the step's terms and the extended model's own outputs sit among the outputs (solve()'s layout)
        terms, own, _, _ = _layout(v)
        rules_meta["terms"] = [list(t) for t in terms]
        rules_meta["extended"] = None if own is None else [list(t) for t in own]
        rules_meta["cp_splits"] = "cp_size" in v.choice.splits
        rules_meta["mechanisms"] = {m: int(v.on(m)) for m in MECHANISMS_READ}     # which the notes read
        words.update({n: output_words(n) for n, _ in terms})
        words["T_sync"] = output_words("T_sync")
        el_code, el_names = _elasticities(v, key, c.args)
        code.append(el_code)
        rules_meta["elasticities"] = el_names
        rules_meta["equations"] = _equations(v)
        meta[key] = rules_meta
    data = _data()
    # the notes below a result (mlsysim_sym.model_notes): each one's own function, translated, and its sentence
    note_rows = []
    for n in NOTES:
        code.append(translated(n.when, f"note_{n.name}")[0])
        note_rows.append(f"{{when: note_{n.name}, reads: {json.dumps(list(n.reads))}, text: {json.dumps(n.text)}}}")
    table = {k: {"default": p.default, "kind": p.kind.value, "fidelity": p.fidelity, "label": p.label,
                 # a range solve() does not check (mlsysim prices a congestion factor of -1): the page refuses it, as
                 # the command line does (cli/options.check_ranges)
                 **({"unchecked": {"lo": float(p.range.lo), "hi": float(p.range.hi), "lo_open": p.range.lo_open,
                                   "hi_open": p.range.hi_open, "text": p.range.text}}
                    if p.range is not None and not p.range.checked else {})}
             for k, p in keywords().items()}
    template = (Path(__file__).resolve().parent / "web_runtime.mjs").read_text()
    fns = "\n".join(f"  {k}: {{outputs: outputs_{k}, first: first_{k}, elasticities: elasticities_{k}}},"
                    for k in map(_variant_key, _all_variants()))
    labels = {k: {"label": p.words, "symbol": p.text, "latex": p.latex, "unit": p.unit}
              for k, p in PARAMS_BY_ARGUMENT.items() if p.kind is not Kind.CONSTANT}
    rule_fns = sorted({f"rule_{k}_{i}" for k in meta for i in range(len(meta[k]["rules"]))}
                      | {m["fn"] for k in meta for m in meta[k]["rules"] if m["fn"]})
    # what solve() itself decides before the checks: its signature, the catalog's names as mlsysim_sym looks
    # them up, the names that are files or the modern catalog's, the extended keywords and record defaults
    # (its keywords; the record fields it also takes, **fields, the page leaves to Python and the command line)
    params = [k for k, p in inspect.signature(DistributedModel.solve).parameters.items() if p.kind is not p.VAR_KEYWORD]
    signature = {"positional": params[:3], "keywords": params[3:], "name": DistributedModel.solve.__qualname__,
                 "qualified": f"{DistributedModel.solve.__module__}.{DistributedModel.solve.__qualname__}"}
    names = {"workload": list(catalog._workloads()), "fleet": list(catalog._fleets()),
             "file_endings": list(files._ENDINGS), "modern_prefix": modern.PREFIX,
             "close_names": catalog.CLOSE_NAMES,
             "modern_workloads": list(modern.architecture_names()), "modern_fleets": list(modern.fleet_names()),
             "fidelities": list(FIDELITIES), "extended": [k for k, _ in _EXTENDED], "fields": list(settable()),
             "from_record": [name for _, name in _FROM_RECORD],
             "from_record_keywords": [k for k, p in keywords().items() if p.record_default],
             # the extended model's switches read strictly (arguments.check_switches), where the package does
             "strict_switches": [k for _, k in arguments.SWITCHES]
             if hasattr(arguments, "check_switches") else []}
    header = ("// Generated by `python -m derivations --web` from the sympy model of mlsysim_sym; do not edit.\n"
              "// derivations/web.py explains how; derivations/web_runtime.mjs is the hand-written part.\n")
    return (header + "\n".join(code) + "\n\n"
            + f"const DATA = {_js_literal(data)};\n"
            + f"const META = {json.dumps(meta, sort_keys=True)};\n"
            + f"const KEYWORDS = {_js_literal(table)};\n"
            + f"const FLAG_KEYWORDS = {json.dumps(list(FLAG_KEYWORDS))};\n"
            + f"const PRECISION_BYTES = {json.dumps(PRECISION_BYTES)};\n"
            + f"const OUTPUT_NAMES = {json.dumps(list(OUTPUTS))};\n"
            + f"const INFINITE_STEP = {json.dumps(INFINITE_STEP)};\n"
            + f"const EFFICIENCY_NOTE = {json.dumps(DEFAULT_EFFICIENCY_NOTE.format(setter='the efficiency field'))};\n"
            + f"const TERM_WORDS = {json.dumps(words, sort_keys=True)};\n"
            + f"const LABELS = {json.dumps(labels, sort_keys=True)};\n"
            + f"const FACT_NAMES = {json.dumps(list(FACT_NAMES))};\n"
            + f"const SIGNATURE = {json.dumps(signature)};\n"
            + f"const NAMES = {json.dumps(names)};\n"
            + f"const ABOUT = {json.dumps(_about(), sort_keys=True)};\n"
            + f"const VARIANT_FUNCTIONS = {{\n{fns}\n}};\n"
            + f"const RULE_FUNCTIONS = {{{', '.join(rule_fns)}}};\n"
            + f"const NOTES = [\n  {(',' + chr(10) + '  ').join(note_rows)}\n];\n\n" + template)


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
