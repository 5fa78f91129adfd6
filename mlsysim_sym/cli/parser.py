"""The command line's parser: one subcommand each, the configuration options from :data:`.options.OPTIONS` with their
help read off the parameter table (meaning, unit, range, default)."""
from __future__ import annotations

import argparse
import difflib
import functools
import inspect
import math
import re
from typing import Dict

from .. import __version__, files
from ..inputs import SOLVE_DEFAULTS
from ..macros import FORMATS
from ..mechanisms import FIDELITIES, MECHANISMS
from .options import BASE, EXAMPLE, FITTED_EFFICIENCY, MAX_WHOLE, OPTIONS, Option, UsageError, _whole, read_whole

#: What the command line does, in one line (``mlsysim-sym --help``).
DESCRIPTION = ("The command line: price, sweep, search and explain training steps;\n"
               "print equations; list the catalog.")


def _number(cast, words: str):
    """argparse's type ``cast`` (``int``, ``float``), but ``1_0`` (which Python reads as 10) is a typo, refused, and
    what it cannot read is said in words (not argparse's "invalid _float value")."""
    def parse(text: str):
        try:
            if "_" in text:
                raise ValueError
            return cast(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {words}, got {text!r}") from None
    return parse


def _integral(text: str) -> int:
    """A whole number, written with an exponent or a point too (``--samples 2e4``, as ``--batch-size 1e3``)."""
    n = read_whole(text.strip())
    if n is None or abs(n) > MAX_WHOLE:
        raise ValueError(text)
    return n


_int = _number(_integral, "a whole number")
_float = _number(float, "a number")


def _run_options(c: argparse.ArgumentParser, tokens: str, steps: str) -> None:
    """A run's options (``plan``'s and ``uncertainty``'s): ``--tokens``, ``--steps`` and ``--price``."""
    c.add_argument("--tokens", type=_float, metavar="N", help=tokens)
    c.add_argument("--steps", type=lambda t: _whole(t.strip(), t, "--steps"), metavar="K", help=steps)
    c.add_argument("--price", type=_float, metavar="USD", help="price of one accelerator for one hour, in US "
                   "dollars (e.g. 2.5): adds the run's cost")


def _hint(message: str, commands, args) -> str:
    """What an argument argparse did not recognize was most likely meant as: a command given after options, where
    no command came before it (the command comes first), or a catalog name given without its option, where the
    command takes ``--model`` / ``--fleet`` and it was not given."""
    m = re.match(r"unrecognized arguments: (\S+)", message)
    if m is None:
        return ""
    word = m.group(1)
    before = args[:args.index(word)] if word in args else args
    command = next((a for a in before if a in commands), None)
    if word in commands and command is None:
        return f" (the command comes first: mlsysim-sym {word} [options])"
    if command is not None and word.startswith("--"):       # an option this command does not have
        options = sorted(o for o in commands[command]._option_string_actions if o.startswith("--"))
        close = [o for o in options if o.startswith(word)] or difflib.get_close_matches(word, options, 3, 0.75)
        where = f"mlsysim-sym {command} --help lists its options"
        return f" ({command} has no {word}; did you mean {', '.join(close[:3])}? {where})" if close else f" ({where})"
    takes = command is not None and "--model" in commands[command]._option_string_actions
    from .. import catalog, modern
    for flag, names in (("--model", lambda: [*catalog.workload_names(), *modern.architecture_names()]),
                        ("--fleet", lambda: [*catalog.fleet_names(), *modern.fleet_names()])):
        if takes and flag not in args and not any(a.startswith(flag + "=") for a in args) and word in names():
            return f" (a {flag[2:]} is given as {flag} {word})"
    return ""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 2, an option is written out whole (no prefix of
    it), and a negative number written with an exponent
    (``--tokens -1e12``) or a unit (``--memory-capacity -5GB``), or first in a list or range (``--tp -8,8``), is a
    value, not an option (argparse's own pattern takes ``-5`` and ``-.5`` only: it said "expected one
    argument"); the option's range then says why it is refused."""

    def __init__(self, *args, **kwargs):
        # no abbreviations: "--output" read as "--output-flops" on solve, and a script's "--batch" would change
        # meaning the day another option starts so
        super().__init__(*args, **{**kwargs, "allow_abbrev": False})
        self._negative_number_matcher = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?[ A-Za-z/]*([,:].*)?$")

    def error(self, message):      # noqa: D401 - argparse's hook
        sub = next((a for a in self._actions if isinstance(a, argparse._SubParsersAction)), None)
        raise UsageError(message + _hint(message, sub.choices if sub else {}, getattr(self, "_args", [])))

    def parse_known_args(self, args=None, namespace=None):
        if args is not None and " " not in self.prog:
            self._args = list(args)                     # what the hints of error() read
        if args is not None and " " in self.prog:     # a subcommand's options: each given once
            self._refuse_repeats(list(args))
        return super().parse_known_args(args, namespace)

    def _refuse_repeats(self, args) -> None:
        """An option given twice (``--tp 2 --tp 4``): argparse keeps the last silently; a list is one option's."""
        seen = {}
        for token in args:
            if token == "--":
                break
            if not token.startswith("--"):
                continue
            name = token.split("=", 1)[0]
            action = self._option_string_actions.get(name)
            if action is None:     # argparse's abbreviations: --batch for --batch-size, where one option starts so
                starts = {a for o, a in self._option_string_actions.items() if o.startswith(name)}
                action = starts.pop() if len(starts) == 1 else None
            if action is None or action.dest == "help":
                continue
            if action.dest in seen:
                first = "" if seen[action.dest] == name else f" (first as {seen[action.dest]})"
                self.error(f"{name}: given twice{first}; give each option once")
            seen[action.dest] = name


@functools.lru_cache(maxsize=None)
def _searched() -> Dict[str, str]:
    """What a search varies where an option is not given (``search()``'s defaults), as its help says it."""
    from ..optimize import search
    out = {}
    for k, q in inspect.signature(search).parameters.items():
        if q.default is None and k.endswith("_size"):       # a degree: every divisor (search()'s docstring)
            out[k] = "every divisor of the accelerators" + (" (1 for a dense model; in the extended model, those "
                                                            "that divide the routed experts)" if k == "ep_size" else "")
        elif isinstance(q.default, tuple):
            out[k] = "both" if all(isinstance(x, bool) for x in q.default) else ",".join(map(str, q.default))
    return out


def _help(o: Option, many: bool, example: bool = True) -> str:
    p = o.param
    if p is None:
        return f"training precision: fp32, fp16, bf16, fp8, int8, ...; default {SOLVE_DEFAULTS['precision']}"
    searched = None if example else _searched().get(o.keyword)
    meaning = p.meaning
    if o.kind == "bool":
        value = "yes|no" + ("|both" if many else "")
        default = "no"
        # the command line's words for solve()'s 1 and 0
        meaning = re.sub(r", else 0(?= \(|$)", ", else no", re.sub(r"^1 (when|with) ", r"yes \1 ", meaning))
    else:
        # an example list of values the option takes (a quantity with a unit: none, the unit says what is meant)
        shown = [x for x in ((1, 2, 4) if o.kind == "int" else (0.5, 1, 2)) if x in p.range]
        shown = shown if len(shown) > 1 else [p.range.bounds[0], p.range.bounds[1]]     # a 0/1 field: (0,1)
        value = "" if not many else "list or range (start:stop:step)" if files.example_of(p.unit) else \
            f"list ({','.join(f'{x:g}' for x in shown)}) or range (start:stop:step)"
        default = BASE.get(o.keyword, p.default)
    written = files.example_of(p.unit)
    unit = (f" [{p.unit}" + (f", or with a unit: {written}" if written else "") + "]") if p.unit not in ("1", "") \
        else ""
    allowed = f"; {p.range.text}" if p.range.bounds != (-math.inf, math.inf) and o.kind != "bool" else ""
    if o.field:
        shown = "the record's"
    elif p.record_default:          # kv_fraction: the workload's own where it gives one (arguments.from_record)
        shown = f"the model's own, else {default}"
    else:
        shown = "no" if o.kind == "bool" else default
        if example and o.keyword in EXAMPLE and o.keyword not in BASE:
            shown = f"{shown} (the bundled example's: {EXAMPLE[o.keyword]})"
    only = "; extended model only" if p.fidelity == "extended" else ""
    if o.keyword == "efficiency":       # mlsysim's default; what measured runs give the extended model
        only += "; with --fidelity extended, " + FITTED_EFFICIENCY
    given = f"not given: the search tries {searched}" if searched else f"default {shown}"
    return f"{meaning}{unit}{allowed}; {given}" + (f"; {value}" if value else "") + only


def _configuration_options(p: argparse.ArgumentParser, many: bool = False, one: tuple = (),
                           example: bool = True) -> None:
    """The configuration's options; ``many``: each takes a list or a range, but those named in ``one``;
    ``example``: without --model and --fleet they change the bundled example (a search's start from solve()'s
    defaults)."""
    text = ("Without --model and --fleet, the options change the bundled example (Llama3_70B on Research_256, "
            "batch 256, tp 8, pp 4, 8 microbatches), each what it names; with either, an option not given takes "
            "solve()'s default, except the batch (256)." if example else
            "An option not given takes solve()'s default, except the model, the fleet and the batch, which start "
            "from the bundled example's (Llama3_70B, Research_256, batch 256), and the split and schedule, which "
            "the search tries at the values each option names.")
    g = p.add_argument_group("configuration (solve()'s keywords)", text)
    g.add_argument("--model", help=f"catalog workload (mlsysim's, or modern/...; default {BASE['model']}; see: "
                   "mlsysim-sym list), or a plan file (.yaml, .toml, .json: mlsysim eval's plan or an architecture "
                   "card; its hardware is the fleet and its batch, sequence, precision, efficiency and "
                   "training: section the defaults; docs/files.md)")
    g.add_argument("--fleet", help=f"catalog cluster (mlsysim's, or modern/...; default {BASE['fleet']}; see: "
                   "mlsysim-sym list), or a plan file's hardware (without --model, the file's workload too)")
    g.add_argument("--fidelity", choices=FIDELITIES, help="the model: mlsysim (mlsysim 0.3.0's, exactly; "
                   "the default) or extended (its mechanisms added: docs/extended.md)")
    g.add_argument("--without", metavar="NAME,...", help="extended model: mechanisms priced as mlsysim prices "
                   "them (" + ", ".join(MECHANISMS) + ")")
    fields = p.add_argument_group("record fields and lowered inputs (not given: the workload's and fleet's)")
    for o in OPTIONS:
        where, listed = fields if o.field else g, many and o.keyword not in one
        if o.kind == "bool":
            where.add_argument(o.flag, nargs="?", const="yes", metavar="yes|no" + ("|both" if listed else ""),
                               help=_help(o, listed, example))
        else:
            metavar = ("NAME,..." if listed else "NAME") if o.kind == "precision" else "LIST" if listed else \
                files.KIND_OF_UNIT.get(o.param.unit, o.kind).upper()
            where.add_argument(o.flag, metavar=metavar, help=_help(o, listed, example))


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mlsysim-sym", description=DESCRIPTION,
                formatter_class=argparse.RawDescriptionHelpFormatter,
                epilog="Run 'mlsysim-sym COMMAND --help' for a command's options. With no command: solve.")
    p.add_argument("--version", action="version", version=f"mlsysim-sym {__version__} (the model of mlsysim 0.3.0)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def command(name, help_text, many=False, one=(), plot=None):
        """A subcommand; ``plot``: the help of its --plot, where it draws a picture."""
        c = sub.add_parser(name, help=help_text, description=help_text)
        _configuration_options(c, many, one, example=name != "search")
        c.add_argument("--json", action="store_true", help="print JSON (SI units) instead of a table")
        c.add_argument("-q", "--quiet", action="store_true",
                       help="print no table" + (" (with --plot: the picture only)" if plot else ""))
        if plot:
            c.add_argument("--plot", metavar="FILE.png", help=plot)
        return c

    c = command("solve", "price one training step: its breakdown, MFU and memory",
                plot="save a stacked bar of the step-time terms")
    c = command("sweep", "price every combination of the listed values (--tp 1,2,4,8 --batch-size 256:4096:256)",
                many=True, plot="save a line chart (one swept option) or a heatmap (two)")
    c.add_argument("--output", default="mfu", help="the outputs to tabulate, a column each (default mfu; e.g. "
                   "mfu,step_time,memory, or any quantity 'equations' lists: T_sync, M_gradients); --plot draws "
                   "the first")
    c = command("search", "rank every runnable parallel split and schedule of the fleet", many=True,
                one=("batch_size",))      # every configuration is ranked at one batch
    c.add_argument("--objective", default=None, choices=("mfu", "throughput", "step_time"),
                   help="what to rank by (default mfu; throughput where several precisions are searched, since "
                        "MFU counts each precision against its own peak)")
    c.add_argument("--top", type=_int, default=10, help="how many configurations to show (default 10)")
    c.add_argument("--all-schedules", action="store_true",
                   help="also schedules a real pipeline cannot run (microbatches that do not divide the samples "
                        "per replica, virtual stages that do not divide the layers, with the embedding and the loss or "
                        "without)")
    c = command("sensitivity", "rank the parameters by how much they move an output (elasticities)",
                plot="save a tornado chart of the elasticities")
    c.add_argument("--output", default="mfu", help="mfu (default), step_time, scaling_efficiency, "
                   "effective_throughput, memory, or any model quantity")
    c.add_argument("--constants", action="store_true", help="also rank mlsysim's constants")
    c = command("uncertainty", "how far an output spreads when parameters are known to a relative standard "
                "deviation: first order (exact derivatives) and Monte Carlo")
    c.add_argument("--sigma", required=True, metavar="NAME=SIGMA,...",
                   help="relative standard deviations, e.g. efficiency=0.1,fabric-bandwidth=0.2 (names: this "
                        "command's options without their --, or solve()'s keywords and record fields)")
    c.add_argument("--output", default="mfu", help="mfu (default), step_time, scaling_efficiency, "
                   "effective_throughput, memory, or any sweep output")
    c.add_argument("--samples", type=_int, help="Monte Carlo draws (default: first order only)")
    c.add_argument("--seed", type=_int, default=0, help="seed of the draws (default 0)")
    _run_options(c, "also: how far the run of N training tokens spreads (its days, GPU-hours, energy and, with "
                    "--price, cost)", "as --tokens, a run of K optimizer steps")
    c = command("required", "the value of one input at which an output reaches a target, as a closed form "
                "(every other input held)")
    c.add_argument("--output", help="bubble_fraction, mfu, step_latency_total, scaling_efficiency, "
                   "memory, ... (a solve() result field or a model quantity)")
    c.add_argument("--target", metavar="VALUE", help="the value the output must reach: a number in the output's "
                   "unit, or with a unit of its kind ('40 GB', '300 ms', '400 Gb/s')")
    c.add_argument("--solve-for", metavar="NAME",
                   help="the input to solve for: a solve() keyword or record field (microbatch_count, "
                        "fabric_bandwidth, efficiency, batch_size, parameters, ...)")
    c.add_argument("--tokens", type=_float, metavar="N", help="with --days, instead of --output and --target: the "
                   "nodes (runnable layouts only) that train on N tokens in D days")
    c.add_argument("--days", type=_float, metavar="D", help="the days the --tokens run may take")
    c.add_argument("--side", default="auto", choices=("auto", "at least", "at most"),
                   help="the output at least or at most the target (default: from the configuration: an output "
                        "below the target must rise to it)")
    c.add_argument("--book", action="store_true", help="print the closed form with the book's macros")
    c = command("plan", "how long and how much: the steps, days, GPU-hours, energy and cost of a token budget on "
                "the configuration; with --days, the nodes that finish it in time")
    _run_options(c, "training tokens of the run (e.g. 15e12)", "optimizer steps of the run (instead of --tokens)")
    c.add_argument("--days", type=_float, metavar="D", help="also answer: how many nodes (runnable layouts only) "
                   "finish the tokens in D days, at this batch and split")
    e = sub.add_parser("equations", help="print the LaTeX of a quantity or cost term (lhs = rhs)",
                       description="print the LaTeX of a quantity or cost term (lhs = rhs); no NAME: list them; "
                                   "--macros: the book's macros, as a file to include (docs/macros/)")
    e.add_argument("name", nargs="?", metavar="NAME", help="a model quantity (T_step, mfu, M_acc, ...), the "
                   "symbol a table prints for it (M_total, N_DP), a solve() result field (step_latency_total), an "
                   "output's short name (memory, step_time), a cost term (RingAllReduce) or its symbol (T_ring), or "
                   "a run's quantity (T_train, C_train)")
    e.add_argument("--book", action="store_true", help="print the book's macros (\\TensorParallelDegree)")
    e.add_argument("--expanded", action="store_true", help="a quantity in parameters, its cost terms written "
                   "out (not in other quantities); a cost term's call and formula alone; a run's quantity has no other "
                   "form")
    e.add_argument("--fidelity", default="mlsysim", choices=FIDELITIES,
                   help="the model: mlsysim (default) or extended (docs/step_time_extended.md)")
    e.add_argument("--family", default="transformer", choices=("transformer", "generic"),
                   help="the model of transformers (default) or of every other workload")
    e.add_argument("--quarto", action="store_true", help="a Quarto display equation with a cross-reference "
                   "label, $$ ... $$ {#eq-t-step}, to paste into a chapter (with --book: the book's macros)")
    e.add_argument("--json", action="store_true", help="print JSON")
    e.add_argument("--macros", action="store_true", help="print every macro --book prints, defined, as a file to "
                   "include (no NAME): docs/macros/README.md says which file goes where")
    e.add_argument("--format", choices=tuple(FORMATS), help="with --macros: tex (\\providecommand lines for a LaTeX "
                   "preamble; the default), mathjax (a <script> for an HTML page's head), katex (JSON for KaTeX's "
                   "macros option) or qmd (a Quarto include)")
    c = sub.add_parser("list", help="the catalog: workloads and clusters with key figures",
                       description="the catalog: workloads and clusters with key figures; with a NAME, every field "
                                   "of one, with the parameter it sets and its source")
    c.add_argument("name", nargs="?", metavar="NAME", help="a workload or cluster of either catalog "
                   "(modern/DeepSeek-V3, Llama3_70B, modern/GB200-NVL72-1152)")
    c.add_argument("--json", action="store_true", help="print JSON")
    return p
