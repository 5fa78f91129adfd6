"""The command line's commands: each prices what its options describe (:func:`.options.setup`) through the
package's functions and prints the configuration line and a table, or JSON (``--json``)."""
from __future__ import annotations

import json
import logging
import sys
import textwrap
import warnings
from dataclasses import replace
from typing import Callable, Dict, List, Optional, Tuple

from .. import catalog
from ..display import WIDTH, wrap
from .errors import about, cli_words, one_line, option_of, with_origin
from .guards import MAX_SEARCH_GRID, check_picture_path, refuse_large_search, refuse_large_sweep, refuse_many_samples
from .options import (BY_KEYWORD, DEFAULT_EFFICIENCY_NOTE, OPTIONS, Setup, UsageError, check_ranges, model_kwargs,
                      read_real, setup, single)


def _finite_json(obj, indent=None) -> str:
    """``obj`` as JSON, refusing NaN and infinity (one line names the option that caused it)."""
    try:
        return json.dumps(obj, indent=indent, allow_nan=False)
    except ValueError:
        raise ValueError("the result holds a number that is not finite (NaN or infinity)") from None


def _json(obj) -> None:
    print(_finite_json(obj, 2))


def _emit(args, s: Setup, obj, text: Callable[[], str], finite: bool = False, named: bool = False) -> None:
    """A command's result: JSON (the configuration and ``obj.to_dict()``), or the configuration line and
    ``text()``, or nothing with ``--quiet``. ``finite``: one configuration's price, whose every number is an
    answer, so text refuses what JSON refuses (NaN or infinity); a table's cells show a missing value as ``-``.
    ``named``: the text's first line names the configuration itself (a search's), so it is not said twice."""
    from ..arguments import arguments
    from ..display import wrap
    if args.json:
        config = arguments(s.model, s.fleet, s.kwargs, caller=args.command, choice=s.choice).to_dict()
        out = obj.to_dict()
        # a search's chosen keywords are in its rows: the configuration holds what was given (a list searched
        # over, or one value), not the defaults of the others
        config = {k: v for k, v in config.items() if k not in out.get("searched_keywords", ()) or k in s.kwargs}
        _json({"configuration": config, **{k: v for k, v in out.items() if k != "configuration"}})
    elif not args.quiet:
        if finite:                          # no "step time inf s" printed as an answer
            _finite_json(obj.to_dict())
        if not named:
            print("\n".join(wrap(s.line(obj.configuration), "")))
        print(text())
        _efficiency_note(s)


def _efficiency_note(s: Setup) -> None:
    """Below a result of the extended model at solve()'s default efficiency: where the fitted ones are (the answer
    rests on the efficiency more than on anything else, and mlsysim's default is no measured value)."""
    if s.choice.fidelity == "extended" and "efficiency" not in s.kwargs:
        print("\n".join(wrap(DEFAULT_EFFICIENCY_NOTE.format(setter="--efficiency"), "")))


class _LogToWarnings(logging.Handler):
    """matplotlib's log lines (``The PostScript backend does not support transparency``) as warnings: the
    command prints each as one ``mlsysim-sym: warning:`` line."""

    def emit(self, record):
        warnings.warn(record.getMessage())


def _plot(obj, path: Optional[str], **kw) -> None:
    """The picture at exactly ``path`` (its ending checked before any work: :func:`.guards.check_picture_path`),
    before anything is printed: a picture that cannot be drawn or written is one line naming --plot."""
    if not path:
        return
    log = logging.getLogger("matplotlib")
    handler, propagate = _LogToWarnings(logging.WARNING), log.propagate
    log.addHandler(handler)
    log.propagate = False
    try:
        obj.plot(path, **kw)
    except OSError as exc:
        raise UsageError(f"--plot: cannot write {path}: {exc.strerror or one_line(exc)}") from None
    except (ValueError, RuntimeError) as exc:
        raise UsageError(f"--plot: {path}: {one_line(exc)}") from None
    finally:
        log.removeHandler(handler)
        log.propagate = propagate
    print(f"picture: {path}", file=sys.stderr)


def check_plot(args) -> None:
    """``--plot``: the path checked before any work."""
    if getattr(args, "plot", None) is not None:
        check_picture_path(args.plot)


def cmd_solve(args) -> int:
    from ..arguments import arguments
    from ..display import key_values
    from ..solver import price
    s = setup(args)
    with about(args, s.flags):
        r = price(arguments(s.model, s.fleet, single(s.kwargs), caller="solve", choice=s.choice))
        _plot(r, args.plot)
        _emit(args, s, r, lambda: "\n".join(key_values(r._rows(), indent="  ") + r.notes()), finite=True)
    return 0


def cmd_sweep(args) -> int:
    from ..sweeps import sweep
    s = setup(args)
    check_ranges(s.given, keywords=True)      # a value no configuration can take (tp 0, fp9): refused, not masked
    refuse_large_sweep(s.given, args.json)
    swept = [BY_KEYWORD[k].flag for k, v in s.given.items() if len(v) > 1]
    listed = tuple(swept) or s.flags
    if args.plot and len(swept) not in (1, 2):      # said before the sweep is priced
        raise UsageError(f"--plot: a chart shows one or two swept options (a line, a heatmap); this sweep has "
                         f"{len(swept)}" + (f" ({', '.join(swept)}): give all but one or two of them one value"
                                            if swept else ": give one option a list (--tp 1,2,4,8)"))
    names = list(dict.fromkeys(n.strip() for n in args.output.split(",")))     # each output once
    if not all(names):
        raise UsageError(f"--output: a name or a list of names (mfu,step_time), got {args.output!r}")
    with about(args, listed):
        r = sweep(s.model, s.fleet, **s.kwargs, **model_kwargs(s))
        # a field, or the alias, quantity or printed symbol of one (step_time, memory, T_dp, M_total); an output the
        # sweep leaves out by default (the extended model's own fields, T_ep_exposed ...) is priced again with it
        missing = [n for n in names if not _has(r, n)]
        if missing:
            try:
                r = sweep(s.model, s.fleet, **s.kwargs, **model_kwargs(s), outputs=(*r.values, *missing))
            except (KeyError, ValueError):
                bad = next((n for n in missing if not _priced(s, n)), missing[0])
                raise UsageError(f"--output: no output {bad!r}; outputs: {', '.join(r.values)}, or a "
                                 f"quantity of the model ('mlsysim-sym equations' lists them)") from None
        _refuse_all_masked(r, listed, getattr(args, "example_origin", {}))
        _plot(r, args.plot, output=names[0])
        _emit(args, s, r, lambda: r.table(names))
    return 0


def _has(r, name: str) -> bool:
    try:
        r[name]
        return True
    except KeyError:
        return False


def _priced(s: Setup, name: str) -> bool:
    """Whether a sweep of the setup's one configuration gives ``name`` (an output the command line names)."""
    from ..sweeps import sweep
    one = {k: (v[0] if isinstance(v, list) else v) for k, v in s.kwargs.items()}
    try:
        sweep(s.model, s.fleet, **one, **model_kwargs(s), outputs=(name,))
        return True
    except (KeyError, ValueError):
        return False


def _refuse_all_masked(r, given, example=None) -> None:
    """A sweep none of whose configurations is valid: one line, the first one's reason named by its option (as
    ``solve`` reports that configuration; a reason that names none, by the options given), with where the bundled
    example's values in it came from (``example``: keyword -> value, :func:`.errors.with_origin`)."""
    import numpy as np
    valid = np.broadcast_to(r.valid, r.shape)
    if valid.any():
        return
    reason = str(np.broadcast_to(r.reason, r.shape).flat[0])
    n = valid.size
    named = option_of(reason) or "/".join(given) + ": "
    raise UsageError(with_origin(named, reason, example or {})
                     + (f" (the first of the sweep's {n:,} configurations, all masked)" if n > 1 else ""))


def _fixed_accelerators(s) -> Optional[int]:
    """The fleet's accelerators when the call fixes them (neither nodes nor accelerators per node listed), else
    None; None too where the fleet cannot be read (the search says why)."""
    from ..inputs import as_fleet
    if any(len(s.given.get(k, ())) > 1 for k in ("count", "accelerators_per_node")):
        return None
    try:
        f = as_fleet(s.fleet)
        count = s.given.get("count", [f.count])[0]
        per_node = s.given.get("accelerators_per_node", [f.node.accelerators_per_node])[0]
        return int(count) * int(per_node)
    except Exception:       # noqa: BLE001 - the search reports an unreadable fleet itself
        return None


def cmd_search(args) -> int:
    from ..optimize import search
    s = setup(args, example=False)
    if args.top < 1:
        raise UsageError(f"--top: must be >= 1, got {args.top}")
    check_ranges(s.given, keywords=True)      # a search leaves a configuration out of range out, silently
    refuse_large_search(s.given, _fixed_accelerators(s))
    kw = dict(s.kwargs)
    batch = kw.pop("batch_size")
    if isinstance(batch, list) and len(batch) != 1:
        raise UsageError(f"--batch-size: takes one value in search (every configuration is ranked at one batch; "
                         f"sweep takes a list), got {len(batch)} values")
    batch = single({"batch_size": batch})["batch_size"]
    with about(args, s.flags):
        r = search(s.model, s.fleet, batch, objective=args.objective, top_k=args.top,
                   runnable=not args.all_schedules, max_configurations=MAX_SEARCH_GRID, **kw, **model_kwargs(s))
        _emit(args, s, r, lambda: cli_words(str(r)), named=True)
    return 0


def _not_smooth(args, exc: RuntimeError) -> Exception:
    """``a derivative is not smooth in this regime`` (the sensitivities of a yes/no output, or of one with a step
    at the configuration) as one line naming --output; any other error as it is."""
    if "not smooth" not in str(exc):
        return exc
    return UsageError(f"--output: {args.output!r} has no derivative at this configuration (a yes/no value, or a "
                      "step here); ask for a smooth output: mfu, step_time, scaling_efficiency, memory, ...")


def cmd_sensitivity(args) -> int:
    from ..sensitivity import sensitivities
    s = setup(args)
    try:
        with about(args, s.flags):
            t = sensitivities(s.model, s.fleet, args.output, include_constants=args.constants, **single(s.kwargs),
                              **model_kwargs(s))
            _plot(t, args.plot)
            _emit(args, s, t, lambda: str(replace(t, configuration="")))   # the line above names it
    except RuntimeError as exc:
        raise _not_smooth(args, exc) from None
    return 0


def _keyword_of(name: str) -> str:
    """``solve()``'s keyword (or record field) a typed name means: one of the command's options without its ``--``
    (``tp``, ``congestion``), or the keyword itself, hyphens read as underscores (``fabric-bandwidth``)."""
    name = name.strip().lstrip("-")
    # an option's name with underscores for its hyphens too (moe_imbalance: --moe-imbalance)
    return next((o.keyword for o in OPTIONS if o.flag[2:] in (name, name.replace("_", "-"))),
                name.replace("-", "_"))


def _sigma(text: str) -> Dict[str, float]:
    """``efficiency=0.1,fabric-bandwidth=0.2`` -> ``{"efficiency": 0.1, "fabric_bandwidth": 0.2}``: a name is one
    of the command's options without its ``--`` (``congestion``) or ``solve()``'s keyword (``congestion_factor``);
    ``uncertainty()`` checks the names and values."""
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, eq, value = part.partition("=")
        name = name.strip().lstrip("-")
        try:
            if not eq or not name or "_" in value:     # 0.1_0: a typo Python reads as 0.10
                raise ValueError
            key = _keyword_of(name)
            sigma = float(value)
        except ValueError:
            raise UsageError(f"--sigma: expected NAME=SIGMA,... (efficiency=0.1), got {part!r}") from None
        if key in out:
            raise UsageError(f"--sigma: {name} is given twice (give each parameter one sigma)")
        out[key] = sigma
    if not out:
        raise UsageError("--sigma: give at least one NAME=SIGMA")
    return out


def cmd_uncertainty(args) -> int:
    from ..sensitivity import uncertainty
    from ..sensitivity.uncertainty import UNCERTAIN
    s = setup(args)
    sigma = _sigma(args.sigma)
    for name in sigma:
        if name not in UNCERTAIN:       # the command's own names, and the command that varies a whole number
            whole = f" is a whole number (vary it with: mlsysim-sym sweep {BY_KEYWORD[name].flag} LIST)" \
                if name in BY_KEYWORD and BY_KEYWORD[name].kind == "int" else " is no parameter with an uncertainty"
            raise UsageError(f"--sigma: {BY_KEYWORD[name].flag[2:] if name in BY_KEYWORD else name}{whole}; it takes: "
                             + ", ".join(BY_KEYWORD[n].flag[2:] if n in BY_KEYWORD else n for n in UNCERTAIN))
    refuse_many_samples(args.samples)
    if args.seed < 0:
        raise UsageError(f"--seed: must be a whole number >= 0, got {args.seed}")
    run = _run_flags(args, required=False)
    try:
        hints = {"sigma": "--sigma", "price_per_gpu_hour": "--price", **({"the run's": "/".join(run)} if run else {})}
        with about(args, s.flags + ("--sigma",) + run, hints=hints):
            u = uncertainty(s.model, s.fleet, sigma, args.output, samples=args.samples, seed=args.seed,
                            tokens=args.tokens, steps=args.steps, price_per_gpu_hour=args.price,
                            **single(s.kwargs), **model_kwargs(s))
            _emit(args, s, u, lambda: str(replace(u, configuration="")))   # the line above names it
    except RuntimeError as exc:
        raise _not_smooth(args, exc) from None
    return 0


def cmd_required(args) -> int:
    from ..requirements import required
    s = setup(args)
    if args.tokens is not None or args.days is not None:
        if args.tokens is None or args.days is None or args.output or args.target is not None \
                or args.side != "auto":
            raise UsageError("--tokens and --days: give both, and not --output, --target or --side (the output is "
                             "the run's days, at most --days)")
        from ..planning import accelerators_to_finish
        if args.solve_for not in (None, "count"):
            raise UsageError(f"--solve-for: with --tokens and --days the answer is the node count, got "
                             f"{args.solve_for!r}")
        for flag, v in (("--tokens", args.tokens), ("--days", args.days)):
            if not v > 0 or v == float("inf"):
                raise UsageError(f"{flag}: must be a finite number > 0, got {v:g}")
        with about(args, s.flags + ("--tokens", "--days")):
            r = accelerators_to_finish(args.tokens, args.days, s.model, s.fleet, **single(s.kwargs),
                                       **model_kwargs(s))
            _emit(args, s, _Described(r, s), lambda: r.text(configuration=False))
        return 0
    missing = [f for f, v in (("--output", args.output), ("--target", args.target),
                              ("--solve-for", args.solve_for)) if v is None]
    if missing:
        raise UsageError(f"{', '.join(missing)}: required (or --tokens and --days: the nodes that finish a "
                         "token budget in time)")
    # with the configuration's options, the question's name what the model cannot answer (a target beyond the
    # float range's reach, an output that is no number)
    with about(args, s.flags + ("--output", "--target", "--solve-for")):
        r = required(args.output, _target(args.target, args.output, s.choice), _keyword_of(args.solve_for), s.model,
                     s.fleet, side=args.side, **single(s.kwargs), **model_kwargs(s))
        # the LaTeX below the text, unless the closed form is too long for a terminal (the text says where it is)
        latex_below = not r.form_too_long
        _emit(args, s, r, lambda: r.text(configuration=False, latex_below=latex_below)
              + ("\n" + "\n".join(wrap("LaTeX: " + r.latex(book=args.book), "  ")) if latex_below else ""))
    return 0


def _target(text: str, output: str, choice) -> float:
    """``--target``: a number in the output's unit, or written with a unit of its kind (``"40 GB"`` for a memory,
    ``"300 ms"`` for a step time, ``"20 kJ"`` for an energy); the output is looked up in the chosen model
    (``choice``: an extended model's own output, ``T_opt``, too), and an unknown one is refused as required()
    refuses it, naming --output."""
    from ..model import Variant
    from ..outputs import unit_of
    from ..sensitivity.point import quantity_name
    return read_real(text, "--target",
                     lambda: unit_of(quantity_name(output, Variant(fidelity=choice.fidelity, off=choice.off))))


class _Described:
    """A planning answer with the configuration line ``_emit`` prints above it."""

    def __init__(self, answer, s):
        from ..arguments import arguments, describe
        self.answer = answer
        self.configuration = describe(arguments(s.model, s.fleet, single(s.kwargs), choice=s.choice))

    def to_dict(self):
        return self.answer.to_dict()


def _run_flags(args, required: bool) -> Tuple[str, ...]:
    """The run's options given (``--tokens`` or ``--steps``, ``--price``), checked: one of the first two (where
    ``required``; else none or one), and a price only beside them."""
    given = tuple(f for f, v in (("--tokens", args.tokens), ("--steps", args.steps), ("--price", args.price))
                  if v is not None)
    if (args.tokens is not None and args.steps is not None) or (required and given in ((), ("--price",))):
        raise UsageError("--tokens or --steps: give one of them (the run's training tokens, or its steps)")
    if given == ("--price",):
        raise UsageError("--price: needs --tokens or --steps (the run to price)")
    return given


def cmd_plan(args) -> int:
    from ..arguments import arguments
    from ..planning import accelerators_to_finish
    from ..run_costs import plan_of
    from ..solver import price
    s = setup(args)
    kw = single(s.kwargs)
    run = _run_flags(args, required=True)
    if args.days is not None and args.tokens is None:
        raise UsageError("--days: needs --tokens (the nodes that finish a token budget in time)")
    with about(args, s.flags):
        r = price(arguments(s.model, s.fleet, kw, caller="plan", choice=s.choice))
    with about(args, s.flags + run, hints={"price_per_gpu_hour": "--price"}):
        p = plan_of(r, tokens=args.tokens, steps=args.steps, price_per_gpu_hour=args.price)
    need = None
    if args.days is not None:
        if not 0 < args.days < float("inf"):
            raise UsageError(f"--days: must be a finite number > 0, got {args.days:g}")
        with about(args, s.flags + ("--tokens", "--days")):
            need = accelerators_to_finish(args.tokens, args.days, s.model, s.fleet, **kw, **model_kwargs(s))
    with about(args, s.flags + run):
        if args.json:
            _json({**p.to_dict(), "configuration": arguments(s.model, s.fleet, kw, caller="plan",
                                                             choice=s.choice).to_dict(),
                   **({"nodes_to_finish": need.to_dict()} if need is not None else {})})
        elif not args.quiet:
            print(p)
            if need is not None:
                print("\n" + need.text(configuration=False))
            _efficiency_note(s)
    return 0


def cmd_equations(args) -> int:
    from .. import macros, notation
    from ..cells import _resolve, default_label, display, equation_tex
    from ..display import written
    from ..model import Variant, build_model
    from ..printing import TERM_CLASSES, md_math, term_unit, tex_lines
    from ..run_costs import PLAN
    if args.format is not None and not args.macros:
        raise UsageError("--format: only with --macros")
    if args.macros:
        clash = next((o for o, on in (("NAME", args.name is not None), ("--book", args.book), ("--expanded",
                     args.expanded), ("--quarto", args.quarto), ("--json", args.json)) if on), None)
        if clash:
            raise UsageError(f"{clash}: --macros prints every macro, as one file (for JSON: --format katex)")
        print(macros.text(args.format or "tex"), end="")
        return 0
    if args.name is None:
        # these shape one equation: with no NAME (the list of names) they would do nothing
        clash = next((o for o, on in (("--book", args.book), ("--expanded", args.expanded), ("--quarto", args.quarto))
                      if on), None)
        if clash:
            raise UsageError(f"{clash}: prints the equation of a NAME; give one ('mlsysim-sym equations' alone lists "
                             f"the names; every macro --book prints: --macros)")
        m = build_model(Variant(family=args.family, fidelity=args.fidelity))
        rows = [(n, notation.entry(n).meaning) for n in m] + [(t.name, t.meaning) for t in notation.TERMS]
        rows += [(n, notation.entry(n).meaning) for n in PLAN]
        if args.json:
            _json({"quantities": list(m), "terms": [t.name for t in notation.TERMS], "plan": list(PLAN)})
        else:
            from ..display import glossary
            print("\n".join(glossary(rows, ("name", "meaning"))))
        return 0
    # a quantity, cost term or run's quantity by its name; a result field, an alias (memory, step_time); the symbol
    # the tables print for a quantity (M_total, G_shard) or for a cost term (T_ring), as cells.equation reads it
    try:
        name = _resolve(args.name, args.family, args.fidelity, "add --fidelity extended")
    except ValueError as e:
        flags = "".join(f" --{k} {v}" for k, v in (("family", args.family), ("fidelity", args.fidelity))
                        if v != {"family": "transformer", "fidelity": "mlsysim"}[k])
        more = "" if "is a parameter" in str(e) else f"; run 'mlsysim-sym equations{flags}' for the names"
        raise UsageError(f"NAME: {e}{more}") from None
    if args.expanded and name in PLAN:
        raise UsageError(f"--expanded: {name} is a run's quantity, written in the step's quantities (T_step, N_GPU, "
                         f"...), with no other form; for those in parameters: mlsysim-sym equations T_step --expanded")
    # --expanded: a quantity in parameters with its cost terms written out; a cost term's call and formula alone
    form = ("expanded" if name in TERM_CLASSES else "closed") if args.expanded else "structured"
    tex = equation_tex(name, args.book, form, args.fidelity, args.family)
    label = default_label(name, form, args.fidelity, args.family)      # cells.equation's, the documents' labels
    if name in TERM_CLASSES:
        term = notation.term(name)
        meaning, unit, shown = term.meaning, term_unit(term), notation.plain(term.latex)
    else:
        entry = notation.entry(name)
        meaning, unit, shown = entry.meaning, entry.unit, notation.plain(entry.latex)
    # the model, when not the default one (a cost term or a run's quantity is the same in every model)
    model = ""
    if name not in TERM_CLASSES and name not in PLAN:
        model = ", ".join(([f"{args.family} family"] if args.family != "transformer" else [])
                          + (["extended model"] if args.fidelity == "extended" else []))
    # the unit as solve() writes it (samples/s, FLOP); --json: the SI unit, as the other commands' JSON
    tail = (f", {model}" if model else "") + f": {meaning}" + (f" [{written(unit)}]" if written(unit) else "")
    # a closed form this long is for a program: say so, and where the readable form is
    long = (f"{len(tex):,} characters of LaTeX: a form for a program rather than a page (KaTeX's parser runs "
            f"out of stack on some this long); without --expanded, {name} is written in named quantities"
            if len(tex) > LONG_TEX else "")
    case = notation.special_case(args.name)          # b_pipe: the book's symbol for a case of this quantity
    if args.json:
        # with --quarto, the math as --quarto prints it (md_math: \\mkern4mu for \\:, which GitHub's Markdown eats)
        _json({"name": name, "latex": md_math(tex.strip()) if args.quarto else tex, "meaning": meaning, "unit": unit,
               "family": args.family,
               "fidelity": args.fidelity,
               "book": args.book, "expanded": args.expanded, "label": label, **({"note": case} if case else {})})
    elif args.quarto:
        # a Markdown comment (not LaTeX's %) keeps the meaning beside the equation in a .qmd
        for text in filter(None, (f"{name}{tail}", case, long)):        # a Markdown comment may span lines
            print("\n".join(textwrap.wrap(f"<!-- {text} -->", WIDTH, break_long_words=False, break_on_hyphens=False)))
        # as cells.equation writes it (math GitHub's Markdown keeps too), in lines that fit the terminal (a line break
        # is a space to LaTeX, and no line starts with what Markdown reads as a list, a quote or a heading)
        block = display(tex, label).split("\n")
        print("\n".join([block[0], *tex_lines("\n".join(block[1:-1])), block[-1]]))
    else:
        head = f"{name}" + (f" ({shown})" if shown and shown != name else "") + tail     # as the tables print it
        for text in filter(None, (head, case, long)):
            print("\n".join("% " + x for x in textwrap.wrap(text, WIDTH - 2, break_long_words=False,
                                                              break_on_hyphens=False)))
        print("\n".join(tex_lines(tex)))
    return 0


#: LaTeX longer than this (characters) is printed with a note that it is for a program (the extended model's
#: MFU in parameters, ~346,000: KaTeX 0.16 overflows its stack parsing it; mlsysim's, ~28,000, renders)
LONG_TEX = 50_000


def cmd_list(args) -> int:
    from .. import modern, records
    if args.name is not None:
        try:
            one = records.record(args.name)
        except KeyError as e:
            raise UsageError(e.args[0]) from None
        if args.json:
            _json(one)
        else:
            print("\n".join(records.lines(args.name)))
        return 0
    from ..display import count_text, number, quantity, text_table
    ws = [(n, catalog.workload(n), "mlsysim 0.3.0") for n in catalog.workload_names()]
    ws += [(n, modern.workload(n), "modern") for n in modern.architecture_names()]
    fs = [(n, catalog.fleet(n), "mlsysim 0.3.0") for n in catalog.fleet_names()]
    fs += [(n, modern.fleet(n), "modern") for n in modern.fleet_names()]
    if args.json:
        _json({"workloads": [{"name": n, "catalog": c, "title": w.name, "kind": w.kind, "parameters": w.parameters,
                              "active_parameters": w.active_parameters, "layers": w.layers,
                              "hidden_dim": w.hidden_dim} for n, w, c in ws],
               "fleets": [{"name": n, "catalog": c, "title": f.name, "accelerators": f.total_accelerators,
                           "accelerator": f.node.accelerator.name, "accelerators_per_node":
                           f.node.accelerators_per_node, "fabric_bandwidth": f.fabric.bandwidth,
                           "intra_node_bw": f.node.intra_node_bw} for n, f, c in fs]})
        return 0
    for title, catalog_name in (("mlsysim 0.3.0's registry", "mlsysim 0.3.0"),
                                ("the modern catalog (cited sources: mlsysim_sym/data/modern.json)", "modern")):
        print("\n".join(wrap(f"workloads (--model), {title}", "")))
        print("\n".join(text_table(
            [(n, w.kind.replace("_", " "), count_text(w.parameters), count_text(w.active_parameters), number(w.layers),
              number(w.hidden_dim)) for n, w, c in ws if c == catalog_name],
            ("name", "kind", "parameters", "active", "layers", "hidden"), indent="  ", align="llrrrr", width=WIDTH)))
        if catalog_name == "modern":
            oss = count_text(modern.workload("modern/GPT-OSS-120B").active_parameters)
            print("\n".join(wrap("parameters and active (those a token meets) count every weight, the input "
                                 "embedding included, which a published active count often leaves out (GPT-OSS-120B: "
                                 f"{oss} here, 5.1B in its model card)", "  ")))
        print()
    for title, catalog_name in (("mlsysim 0.3.0's registry", "mlsysim 0.3.0"), ("the modern catalog", "modern")):
        print(f"clusters (--fleet), {title}")
        print("\n".join(text_table(
            [(n, f"{f.total_accelerators:,}", f.node.accelerator.name, str(f.node.accelerators_per_node),
              quantity(f.node.intra_node_bw, "B/s"), quantity(f.fabric.bandwidth, "B/s"))
             for n, f, c in fs if c == catalog_name],
            ("name", "GPUs", "accelerator", "per node", "NVLink", "fabric per GPU"), indent="  ", align="lrlrrr",
            width=WIDTH)))
        print()
    print("\n".join(wrap("or a plan file: --model PLAN.yaml (mlsysim eval's format, or an architecture card; "
                         "docs/files.md)", "")))
    print("\n".join(wrap("mlsysim-sym list NAME: every field of one, with its symbol and source",
                         "")))
    return 0


COMMANDS: Dict[str, Callable] = {"solve": cmd_solve, "sweep": cmd_sweep, "search": cmd_search,
                                 "uncertainty": cmd_uncertainty, "required": cmd_required,
                                 "sensitivity": cmd_sensitivity, "equations": cmd_equations, "list": cmd_list,
                                 "plan": cmd_plan}
