"""The command line: price, sweep, search and explain training steps; print equations; list the catalog.

    mlsysim-sym                                  # the bundled example: Llama3_70B on Research_256,
                                                 # batch 256, tp 8, pp 4, 8 microbatches
    mlsysim-sym solve --model Mixtral_8x7B --fleet Training_1K --batch-size 1024 --tp 2 --ep 4 --json
    mlsysim-sym sweep --tp 1,2,4,8 --pp 1,2,4,8 --plot mfu.png
    mlsysim-sym search --model Llama3_70B --fleet Research_256 --batch-size 256
    mlsysim-sym sensitivity --plot tornado.png
    mlsysim-sym required --output bubble_fraction --target 0.05 --solve-for microbatch_count
    mlsysim-sym equations T_step --book
    mlsysim-sym equations T_step --book --quarto
    mlsysim-sym list

Every subcommand prints the configuration it priced and takes ``--json`` (SI units,
mlsysim's field names). Options not given take ``solve()``'s defaults (every
parallel degree 1), except that with no option at all ``solve`` and
``sensitivity`` price the bundled example. Warnings print as one line on stderr;
bad input prints one line naming the option and exits with status 2.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import warnings
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from . import __version__, catalog
from .arguments import MODEL_ARGUMENTS, settable
from .inputs import SOLVE_DEFAULTS
from .mechanisms import FIDELITIES, MECHANISMS, ModelChoice
from .symbols import Kind, Param, keywords

#: The bundled example: what ``mlsysim-sym`` with no option prices.
EXAMPLE = dict(model="Llama3_70B", fleet="Research_256", batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
#: The model, fleet and batch an option list starts from (the example's; every other keyword: solve()'s default).
BASE = dict(model="Llama3_70B", fleet="Research_256", batch_size=256)


@dataclass(frozen=True)
class Option:
    """One command-line option and the argument it sets: a ``solve()`` keyword, the precision, or a record
    field (``field``); read off the parameter table (:attr:`mlsysim_sym.symbols.Param.option`)."""

    flag: str
    keyword: str
    kind: str                 # "int", "float", "bool", "precision"
    param: Optional[Param] = None
    field: bool = False


def _option(p: Param, field: bool = False) -> Option:
    kind = {Kind.COUNT: "int", Kind.FLAG: "bool", Kind.REAL: "float"}[p.kind]
    if p.argument == "zero_stage":
        kind = "int"
    return Option(p.option, p.argument, kind, p, field)


def _options() -> Tuple[Option, ...]:
    out = []
    for p in keywords().values():
        out.append(_option(p))
        if p.argument == "batch_size":
            out.append(Option("--precision", "precision", "precision"))
    return tuple(out) + tuple(_option(p, True) for p in settable().values())


#: Every option, in ``solve()``'s order (the precision after the batch), then the record fields.
OPTIONS = _options()
_BY_KEYWORD = {o.keyword: o for o in OPTIONS}


class UsageError(Exception):
    """Bad input: one line, exit status 2."""


# ------------------------------------------------------------------------------------------------
# Values: numbers parsed as numbers only, lists and ranges for sweeps and searches
# ------------------------------------------------------------------------------------------------
_TRUE, _FALSE = ("yes", "true", "on", "1"), ("no", "false", "off", "0")


def _scalar(text: str, kind: str, flag: str):
    t = text.strip()
    if kind == "int":
        try:
            return int(t)
        except ValueError:
            raise UsageError(f"{flag}: expected a whole number, got {text!r}") from None
    if kind == "float":
        try:
            x = float(t)
        except ValueError:
            raise UsageError(f"{flag}: expected a number, got {text!r}") from None
        if not math.isfinite(x):
            raise UsageError(f"{flag}: must be a finite number, got {text}")
        return x
    if kind == "bool":
        if t.lower() in _TRUE:
            return True
        if t.lower() in _FALSE:
            return False
        raise UsageError(f"{flag}: expected yes or no, got {text!r}")
    return t


def _range(text: str, kind: str, flag: str) -> List:
    """``start:stop[:step]``, ``stop`` included (``256:4096:256``)."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or kind not in ("int", "float"):
        raise UsageError(f"{flag}: a range is start:stop or start:stop:step, got {text!r}")
    start, stop = (_scalar(p, kind, flag) for p in parts[:2])
    step = _scalar(parts[2], kind, flag) if len(parts) == 3 else 1
    if step <= 0 or stop < start:
        raise UsageError(f"{flag}: a range needs start <= stop and a step > 0, got {text!r}")
    n = int(math.floor((stop - start) / step + 1e-9)) + 1
    if n > 100_000:
        raise UsageError(f"{flag}: the range {text!r} has {n:,} values; at most 100,000")
    return [start + i * step for i in range(n)] if kind == "int" else [float(start + i * step) for i in range(n)]


def values(text: str, kind: str, flag: str) -> List:
    """The values of one option: ``4``, ``1,2,4,8``, ``256:4096:256``, ``both`` (a switch: no and yes)."""
    if kind == "bool" and text.strip().lower() == "both":
        return [False, True]
    out: List = []
    for piece in text.split(","):
        if not piece.strip():
            raise UsageError(f"{flag}: empty value in {text!r}")
        out += _range(piece, kind, flag) if ":" in piece else [_scalar(piece, kind, flag)]
    return out


# ------------------------------------------------------------------------------------------------
# The parser
# ------------------------------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 2."""

    def error(self, message):      # noqa: D401 - argparse's hook
        raise UsageError(message)


def _help(o: Option, many: bool) -> str:
    p = o.param
    if p is None:
        return f"training precision: fp32, fp16, bf16, fp8, int8, ...; default {SOLVE_DEFAULTS['precision']}"
    if o.kind == "bool":
        value = "yes|no" + ("|both" if many else "")
        default = "no"
    else:
        value = "list (1,2,4) or range (start:stop:step)" if many else ""
        default = BASE.get(o.keyword, p.default)
    unit = f" [{p.unit}]" if p.unit not in ("1", "") else ""
    allowed = f"; {p.range.text}" if p.range.checked and o.kind != "bool" else ""
    if o.field:
        shown = "the record's"
    else:
        shown = "no" if o.kind == "bool" else default
    only = "; extended model only" if p.fidelity == "extended" else ""
    return f"{p.meaning}{unit}{allowed}; default {shown}" + (f"; {value}" if value else "") + only


def _configuration_options(p: argparse.ArgumentParser, many: bool = False) -> None:
    g = p.add_argument_group("configuration (solve()'s keywords; not given: solve()'s default)")
    g.add_argument("--model", help=f"catalog workload (default {BASE['model']}; see: mlsysim-sym list)")
    g.add_argument("--fleet", help=f"catalog cluster (default {BASE['fleet']}; see: mlsysim-sym list)")
    g.add_argument("--fidelity", choices=FIDELITIES, help="the model: mlsysim (mlsysim 0.3.0's, exactly; "
                   "the default) or extended (its mechanisms added: docs/extended.md)")
    g.add_argument("--without", metavar="NAME,...", help="extended model: mechanisms priced as mlsysim prices "
                   "them (" + ", ".join(MECHANISMS) + ")")
    fields = p.add_argument_group("record fields and lowered inputs (not given: the workload's and fleet's)")
    for o in OPTIONS:
        where = fields if o.field else g
        if o.kind == "bool":
            where.add_argument(o.flag, nargs="?", const="yes", metavar="yes|no" + ("|both" if many else ""),
                               help=_help(o, many))
        else:
            metavar = "LIST" if many and o.kind != "precision" else "NAME" if o.kind == "precision" else o.kind.upper()
            where.add_argument(o.flag, metavar=metavar, help=_help(o, many))


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mlsysim-sym", description=__doc__.split("\n\n")[0],
                formatter_class=argparse.RawDescriptionHelpFormatter,
                epilog="Run 'mlsysim-sym COMMAND --help' for a command's options. With no command: solve.")
    p.add_argument("--version", action="version", version=f"mlsysim-sym {__version__} (the model of mlsysim 0.3.0)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def command(name, help_text, many=False):
        c = sub.add_parser(name, help=help_text, description=help_text)
        _configuration_options(c, many)
        c.add_argument("--json", action="store_true", help="print JSON (SI units) instead of a table")
        c.add_argument("-q", "--quiet", action="store_true", help="print no table (with --plot: the picture only)")
        return c

    c = command("solve", "price one training step: its breakdown, MFU and memory")
    c.add_argument("--plot", metavar="FILE.png", help="save a stacked bar of the step-time terms")
    c = command("sweep", "price every combination of the listed values (--tp 1,2,4,8 --batch-size 256:4096:256)",
                many=True)
    c.add_argument("--output", default="mfu", help="the output to tabulate and plot (default mfu; e.g. "
                   "step_latency_total, node_profile.memory_footprint)")
    c.add_argument("--plot", metavar="FILE.png", help="save a line chart (one swept option) or a heatmap (two)")
    c = command("search", "rank every runnable parallel split and schedule of the fleet", many=True)
    c.add_argument("--objective", default="mfu", choices=("mfu", "throughput", "step_time"),
                   help="what to rank by (default mfu)")
    c.add_argument("--top", type=int, default=10, help="how many configurations to show (default 10)")
    c.add_argument("--all-schedules", action="store_true",
                   help="also schedules a real pipeline cannot run (microbatches that do not divide the samples "
                        "per replica, virtual stages that do not divide the layers)")
    c = command("sensitivity", "rank the parameters by how much they move an output (elasticities)")
    c.add_argument("--output", default="mfu", help="mfu (default), step_time, scaling_efficiency, "
                   "effective_throughput, memory, or any model quantity")
    c.add_argument("--constants", action="store_true", help="also rank mlsysim's constants")
    c.add_argument("--plot", metavar="FILE.png", help="save a tornado chart of the elasticities")
    c = command("uncertainty", "how far an output spreads when parameters are known to a relative standard "
                "deviation: first order (exact derivatives) and Monte Carlo")
    c.add_argument("--sigma", required=True, metavar="NAME=SIGMA,...",
                   help="relative standard deviations, e.g. efficiency=0.1,fabric_bandwidth=0.2 (names: the "
                        "sensitivity rows, solve() keywords or record fields)")
    c.add_argument("--output", default="mfu", help="mfu (default), step_time, scaling_efficiency, "
                   "effective_throughput, memory, or any sweep output")
    c.add_argument("--samples", type=int, help="Monte Carlo draws (default: first order only)")
    c.add_argument("--seed", type=int, default=0, help="seed of the draws (default 0)")
    c = command("required", "the value of one input at which an output reaches a target, as a closed form "
                "(every other input held)")
    c.add_argument("--output", required=True, help="bubble_fraction, mfu, step_latency_total, scaling_efficiency, "
                   "memory, ... (a solve() result field or a model quantity)")
    c.add_argument("--target", required=True, type=float, help="the value the output must reach")
    c.add_argument("--solve-for", required=True, metavar="NAME",
                   help="the input to solve for: a solve() keyword or record field (microbatch_count, "
                        "fabric_bandwidth, efficiency, batch_size, parameters, ...)")
    c.add_argument("--side", default="auto", choices=("auto", "at least", "at most"),
                   help="the output at least or at most the target (default: from the configuration: an output "
                        "below the target must rise to it)")
    c.add_argument("--book", action="store_true", help="print the closed form with the book's macros")
    e = sub.add_parser("equations", help="print the LaTeX of a quantity or cost term (lhs = rhs)",
                       description="print the LaTeX of a quantity or cost term (lhs = rhs); no NAME: list them")
    e.add_argument("name", nargs="?", metavar="NAME", help="a model quantity (T_step, mfu, M_acc, ...), a "
                   "solve() result field (step_latency_total) or a cost term (RingAllReduce)")
    e.add_argument("--book", action="store_true", help="print the book's macros (\\TensorParallelDegree)")
    e.add_argument("--expanded", action="store_true", help="in parameters, cost terms written out (not in other "
                   "quantities)")
    e.add_argument("--fidelity", default="mlsysim", choices=FIDELITIES,
                   help="the model: mlsysim (default) or extended (docs/step_time_extended.md)")
    e.add_argument("--family", default="transformer", choices=("transformer", "generic"),
                   help="the model of transformers (default) or of every other workload")
    e.add_argument("--quarto", action="store_true", help="a Quarto display equation with a cross-reference "
                   "label, $$ ... $$ {#eq-t-step}, to paste into a chapter (with --book: the book's macros)")
    e.add_argument("--json", action="store_true", help="print JSON")
    c = sub.add_parser("list", help="the catalog: workloads and clusters with key figures",
                       description="the catalog: workloads and clusters with key figures")
    c.add_argument("--json", action="store_true", help="print JSON")
    return p


# ------------------------------------------------------------------------------------------------
# From arguments to solve() keywords
# ------------------------------------------------------------------------------------------------
def _given(args) -> Dict[str, List]:
    """Every configuration option the user gave, as lists of values, by argument name."""
    out = {}
    for o in OPTIONS:
        text = getattr(args, _attr(o), None)
        if text is not None:
            out[o.keyword] = values(text, o.kind, o.flag)
    return out


def _attr(o: Option) -> str:
    return o.flag.lstrip("-").replace("-", "_")


def _single(given: Dict[str, List]) -> Dict[str, object]:
    for k, v in given.items():
        if isinstance(v, list) and len(v) != 1:
            raise UsageError(f"{_BY_KEYWORD[k].flag}: takes one value here (lists and ranges are for sweep "
                             f"and search), got {len(v)}")
    return {k: (v[0] if isinstance(v, list) else v) for k, v in given.items()}


@dataclass(frozen=True)
class Setup:
    """What a command prices: the model and fleet names, the arguments (a list per option, one value for a
    single one), the model choice, and a note for the configuration line."""

    model: str
    fleet: str
    kwargs: Dict[str, object]
    choice: ModelChoice
    note: str = ""

    def line(self, configuration: str) -> str:
        return "configuration: " + configuration + (f" ({self.note})" if self.note else "")


def _setup(args, example: bool = True) -> Setup:
    """The configuration the options describe; the bundled example when nothing is given."""
    given = _given(args)
    without = tuple(x.strip() for x in args.without.split(",") if x.strip()) if getattr(args, "without", None) \
        else ()
    choice = ModelChoice(getattr(args, "fidelity", None) or "mlsysim", without)
    if example and not given and args.model is None and args.fleet is None:
        kw = {k: v for k, v in EXAMPLE.items() if k not in ("model", "fleet")}
        return Setup(EXAMPLE["model"], EXAMPLE["fleet"], kw, choice, "the bundled example")
    kw = {"batch_size": BASE["batch_size"], **{k: (v[0] if len(v) == 1 else v) for k, v in given.items()}}
    model, fleet = args.model or BASE["model"], args.fleet or BASE["fleet"]
    _check_names(model, fleet)
    return Setup(model, fleet, kw, choice)


def _check_names(model: str, fleet: str) -> None:
    if model not in catalog.workload_names():
        raise UsageError(f"--model: unknown workload {model!r}; see: mlsysim-sym list")
    if fleet not in catalog.fleet_names():
        raise UsageError(f"--fleet: unknown fleet {fleet!r}; see: mlsysim-sym list")


def _model_kwargs(s: Setup) -> Dict[str, object]:
    """``fidelity=`` and ``without=`` for the functions that take the model choice with the other arguments."""
    return {"fidelity": s.choice.fidelity, "without": s.choice.off}


def _json(obj) -> None:
    print(json.dumps(obj, indent=2, allow_nan=False))


def _emit(args, s: Setup, obj, text: Callable[[], str]) -> None:
    """A command's result: JSON (the configuration and ``obj.to_dict()``), or the configuration line and
    ``text()``, or nothing with ``--quiet``."""
    from .arguments import arguments
    from .display import wrap
    if args.json:
        config = arguments(s.model, s.fleet, s.kwargs, caller=args.command, choice=s.choice).to_dict()
        _json({"configuration": config, **obj.to_dict()})
    elif not args.quiet:
        print("\n".join(wrap(s.line(obj.configuration), "", 98)))
        print(text())


def _plot(obj, path: Optional[str], **kw) -> None:
    if path:
        obj.plot(path, **kw)
        print(f"picture: {path}", file=sys.stderr)


# ------------------------------------------------------------------------------------------------
# Commands
# ------------------------------------------------------------------------------------------------
def cmd_solve(args) -> int:
    from .arguments import arguments
    from .display import text_table
    from .solver import price
    s = _setup(args)
    r = price(arguments(s.model, s.fleet, _single(s.kwargs), caller="solve", choice=s.choice))
    _emit(args, s, r, lambda: "\n".join(text_table(r._rows(), indent="  ")))
    _plot(r, args.plot)
    return 0


def cmd_sweep(args) -> int:
    from .sweeps import sweep
    s = _setup(args, example=False)
    r = sweep(s.model, s.fleet, **s.kwargs, **_model_kwargs(s))
    if args.output not in r.values:
        raise UsageError(f"--output: no output {args.output!r}; outputs: {', '.join(r.values)}")
    _emit(args, s, r, lambda: r.table(args.output))
    _plot(r, args.plot, output=args.output)
    return 0


def cmd_search(args) -> int:
    from .optimize import search
    s = _setup(args, example=False)
    if args.top < 1:
        raise UsageError(f"--top: must be >= 1, got {args.top}")
    kw = dict(s.kwargs)
    batch = _single({"batch_size": kw.pop("batch_size")})["batch_size"]
    r = search(s.model, s.fleet, batch, objective=args.objective, top_k=args.top, runnable=not args.all_schedules,
               **kw, **_model_kwargs(s))
    _emit(args, s, r, lambda: str(r))
    return 0


def cmd_sensitivity(args) -> int:
    from .sensitivity import sensitivities
    s = _setup(args)
    t = sensitivities(s.model, s.fleet, args.output, include_constants=args.constants, **_single(s.kwargs),
                      **_model_kwargs(s))
    _emit(args, s, t, lambda: str(t))
    _plot(t, args.plot)
    return 0


def _sigma(text: str) -> Dict[str, float]:
    """``efficiency=0.1,fabric_bandwidth=0.2`` -> ``{"efficiency": 0.1, ...}`` (``uncertainty()`` checks the
    names and values)."""
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, eq, value = part.partition("=")
        try:
            if not eq:
                raise ValueError
            out[name.strip()] = float(value)
        except ValueError:
            raise UsageError(f"--sigma: expected NAME=SIGMA,... (efficiency=0.1), got {part!r}") from None
    if not out:
        raise UsageError("--sigma: give at least one NAME=SIGMA")
    return out


def cmd_uncertainty(args) -> int:
    from .sensitivity import uncertainty
    s = _setup(args)
    sigma = _sigma(args.sigma)
    u = uncertainty(s.model, s.fleet, sigma, args.output, samples=args.samples, seed=args.seed, **_single(s.kwargs),
                    **_model_kwargs(s))
    _emit(args, s, u, lambda: str(u))
    return 0


def cmd_required(args) -> int:
    from .requirements import required
    s = _setup(args)
    r = required(args.output, args.target, args.solve_for.replace("-", "_"), s.model, s.fleet, side=args.side,
                 **_single(s.kwargs), **_model_kwargs(s))
    _emit(args, s, r,
          lambda: r.text(configuration=False) + ("\n  LaTeX: " + r.latex(book=args.book)))
    return 0


def cmd_equations(args) -> int:
    from . import notation
    from .model import Variant, build_model
    from .printing import TERM_CLASSES, equation, equation_label, quantity_latex, term_call, term_latex
    from .outputs import OUTPUTS
    m = build_model(Variant(family=args.family, fidelity=args.fidelity))
    if args.name is None:
        rows = [(n, notation.entry(n).meaning) for n in m] + [(t.name, t.meaning) for t in notation.TERMS]
        if args.json:
            _json({"quantities": list(m), "terms": [t.name for t in notation.TERMS]})
        else:
            from .display import text_table
            print("\n".join(text_table(rows, ("name", "meaning"), align="ll")))
        return 0
    name = OUTPUTS.get(args.name, args.name)
    if name in TERM_CLASSES:
        term = notation.term(name)
        if args.expanded:
            call = term_call(term)
            tex = equation(call, call.doit(), book=args.book)
        else:
            tex = term_latex(term, book=args.book)
        meaning, unit = term.meaning, ""
    elif name in m:
        tex = quantity_latex(m, name, "closed" if args.expanded else "structured", book=args.book)
        meaning, unit = notation.entry(name).meaning, notation.entry(name).unit
    else:
        model = args.family + (" extended" if args.fidelity == "extended" else "")
        hint = ("; it is one of the extended model's: add --fidelity extended"
                if args.fidelity == "mlsysim" and name in build_model(Variant(args.family, fidelity="extended"))
                else "; run 'mlsysim-sym equations' for the names")
        raise UsageError(f"NAME: no quantity or cost term {args.name!r} in the {model} model{hint}")
    # the labels of docs/quarto/*.qmd: a quantity's from its name, a term's from its symbol
    if name in TERM_CLASSES:
        label = equation_label(notation.term(name).latex)
        label += "-term" if label in {equation_label(n) for n in m} else ""
    else:
        label = equation_label(("extended " if args.fidelity == "extended" else "") + name,
                               "closed" if args.expanded else "")
    if args.json:
        _json({"name": name, "latex": tex, "meaning": meaning, "unit": unit, "family": args.family,
               "fidelity": args.fidelity,
               "book": args.book, "expanded": args.expanded, "label": label})
    elif args.quarto:
        # a Markdown comment (not LaTeX's %) keeps the meaning beside the equation in a .qmd
        print(f"<!-- {name}: {meaning}" + (f" [{unit}]" if unit and unit != "1" else "") + " -->")
        print(f"$$\n{tex}\n$$ {{#{label}}}")
    else:
        print(f"% {name}: {meaning}" + (f" [{unit}]" if unit and unit != "1" else ""))
        print(tex)
    return 0


def cmd_list(args) -> int:
    from .display import number, quantity, text_table
    ws = [(n, catalog.workload(n)) for n in catalog.workload_names()]
    fs = [(n, catalog.fleet(n)) for n in catalog.fleet_names()]
    if args.json:
        _json({"workloads": [{"name": n, "title": w.name, "kind": w.kind, "parameters": w.parameters,
                              "layers": w.layers, "hidden_dim": w.hidden_dim} for n, w in ws],
               "fleets": [{"name": n, "title": f.name, "accelerators": f.total_accelerators,
                           "accelerator": f.node.accelerator.name, "accelerators_per_node":
                           f.node.accelerators_per_node, "fabric_bandwidth": f.fabric.bandwidth,
                           "intra_node_bw": f.node.intra_node_bw} for n, f in fs]})
        return 0
    print("workloads (--model)")
    print("\n".join(text_table(
        [(n, w.kind.replace("_", " "), _count(w.parameters), number(w.layers),
          number(w.hidden_dim)) for n, w in ws], ("name", "kind", "parameters", "layers", "hidden"),
        indent="  ", align="llrrr")))
    print("\nclusters (--fleet)")
    print("\n".join(text_table(
        [(n, f"{f.total_accelerators:,}", f.node.accelerator.name, str(f.node.accelerators_per_node),
          quantity(f.node.intra_node_bw, "B/s"), quantity(f.fabric.bandwidth, "B/s")) for n, f in fs],
        ("name", "GPUs", "accelerator", "per node", "NVLink", "fabric per GPU"), indent="  ", align="lrlrrr")))
    return 0


COMMANDS: Dict[str, Callable] = {"solve": cmd_solve, "sweep": cmd_sweep, "search": cmd_search,
                                 "uncertainty": cmd_uncertainty, "required": cmd_required,
                                 "sensitivity": cmd_sensitivity, "equations": cmd_equations, "list": cmd_list}


#: Messages of mlsysim that do not start with the keyword they are about.
_ABOUT = {"n_microbatches ": "--microbatches", "Infeasible 4D Parallelism": "--tp/--pp/--ep",
          "Infeasible 5D Parallelism": "--tp/--pp/--ep/--cp", "fidelity ": "--fidelity",
          "Invalid precision": "--precision"}


def _option_of(message: str) -> str:
    """The option a message is about (it starts with the keyword), for the one-line error."""
    if message.startswith("without: "):
        return "--"      # "--without: ..." (the message names the argument itself)
    for o in OPTIONS:
        if message.startswith(o.keyword + " ") or message.startswith(o.keyword + "="):
            return o.flag + ": "
    return next((flag + ": " for start, flag in _ABOUT.items() if message.startswith(start)), "")


def _count(x) -> str:
    """A parameter count as the field writes it: ``70.6B``, ``110M``."""
    if not x:
        return "-"
    scale, suffix = next(((s, p) for s, p in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")) if x >= s), (1, ""))
    return f"{x / scale:.3g}{suffix}"


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = ["solve"] + argv
    try:
        try:
            args = parser().parse_args(argv)
        except SystemExit as done:          # --help, --version
            return int(done.code or 0)
        if getattr(args, "plot", None):
            try:               # before any work: a core install has no matplotlib
                import matplotlib  # noqa: F401
            except ImportError:
                raise UsageError("--plot: pictures need matplotlib: pip install 'mlsysim-sym[plot]'") from None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            status = COMMANDS[args.command](args)
        for w in caught:
            print("mlsysim-sym: warning: " + " ".join(str(w.message).split()), file=sys.stderr)
        return status
    except BrokenPipeError:            # `mlsysim-sym list | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except UsageError as exc:
        print(f"mlsysim-sym: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:
        print(f"mlsysim-sym: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, KeyError) as exc:
        text = " ".join(str(exc.args[0] if exc.args else exc).split())
        print(f"mlsysim-sym: error: {_option_of(text)}{text}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
