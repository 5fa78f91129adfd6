"""The command line's options, read off the parameter table (:data:`OPTIONS`: one per ``solve()`` keyword, the
precision and each settable record field), their values (numbers parsed as numbers only; lists and ranges for
sweeps and searches) and what a command prices (:class:`Setup`)."""
from __future__ import annotations

import difflib
import math
import warnings
from decimal import Decimal, DecimalException
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple, Union

from .. import catalog, files, modern
from ..arguments import settable
from ..checks import UNSUPPORTED_PRECISION
from ..inputs import PRECISION_BYTES
from ..mechanisms import ModelChoice
from ..symbols import Kind, Param, keywords

#: The bundled example: what ``mlsysim-sym`` with no option prices.
EXAMPLE = dict(model="Llama3_70B", fleet="Research_256", batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
#: Where the extended model's efficiencies are: said by ``--efficiency``'s help, and below a result of the extended
#: model priced at solve()'s default efficiency (mlsysim's 0.5).
FITTED_EFFICIENCY = ("the values fitted to published runs per framework and accelerator generation are in "
                     "docs/modern_runs.md")
#: The note below such a result (``setter``: what sets the efficiency where it is shown; the calculator page says its
#: field).
DEFAULT_EFFICIENCY_NOTE = ("note: the efficiency is solve()'s default, mlsysim's 0.5; for the extended model "
                           + FITTED_EFFICIENCY + " ({setter} sets it)")
#: The model, fleet and batch an option list with ``--model`` or ``--fleet`` starts from (the example's; every
#: other keyword: solve()'s default). Without either, the options change the example itself.
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
BY_KEYWORD = {o.keyword: o for o in OPTIONS}


class UsageError(Exception):
    """Bad input: one line, exit status 2."""


_TRUE, _FALSE = ("yes", "true", "on", "1"), ("no", "false", "off", "0")

#: The most values one option may list (a list or a range, counted before it is built).
MAX_VALUES = 100_000
#: The largest whole number an option takes: the model computes in float64, which holds every whole number up to
#: 2**53 exactly (and no C long holds 10**30).
MAX_WHOLE = 2 ** 53


def read_whole(t: str) -> Optional[int]:
    """``t`` as a whole number, also written with an exponent or a point (``1e3``, ``2048.0``), read exactly; None
    where it is none (``1.5``, ``8_0``, which Python reads as 80: a typo, or beyond 400 digits: ``1e9999999``)."""
    if "_" in t:
        return None
    try:
        return int(t)
    except ValueError:
        try:
            d = Decimal(t)
        except DecimalException:
            return None
        return int(d) if d.is_finite() and d.adjusted() <= 400 and d == d.to_integral_value() else None


def _whole(t: str, text: str, flag: str) -> int:
    n = read_whole(t)
    if n is None:
        raise UsageError(f"{flag}: expected a whole number, got {text!r}")
    if abs(n) > MAX_WHOLE:
        raise UsageError(f"{flag}: a whole number of at most 2**53 = {MAX_WHOLE:,} is allowed, got one of "
                         f"{len(str(abs(n)))} digits")
    return n


def read_real(text: str, flag: str, unit: Union[str, Callable[[], str]] = "1") -> float:
    """A real number as typed, or written with a unit of the quantity's kind (``unit``, or a function giving it,
    asked only where the text is no bare number): ``--memory-capacity 141GB``, :func:`mlsysim_sym.files.reading`."""
    t = text.strip()
    if "_" in t:                         # Python reads 0.4_5 as 0.45: a typo (_whole refuses 8_0 itself)
        raise UsageError(f"{flag}: expected a number, got {text!r}")
    try:
        return float(t)
    except ValueError:
        try:
            return files.reading(t, unit() if callable(unit) else unit, flag)
        except files.FileError as e:
            raise UsageError(str(e)) from None


def _scalar(text: str, kind: str, flag: str, unit: str = "1"):
    """One value of an option; a real number of a quantity with a unit (``unit``, the parameter table's) is a
    number in it or written with a unit of its kind (:func:`read_real`)."""
    t = text.strip()
    if kind == "int":
        return _whole(t, text, flag)
    if kind == "float":
        x = read_real(text, flag, unit)
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


def _count_text(n: float) -> str:
    return f"{n:,.0f}" if n < 1e21 else f"about {n:.3g}" if math.isfinite(n) else "more than 1e308"


def _range_parts(text: str, kind: str, flag: str, unit: str = "1"):
    """``start:stop[:step]`` read and checked, and how many values it holds (counted, not built: a range whose
    count passes :data:`MAX_VALUES` is refused before any of it exists)."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or kind not in ("int", "float"):
        raise UsageError(f"{flag}: a range is start:stop or start:stop:step, got {text!r}")
    if len(parts) == 2 and files.KIND_OF_UNIT.get(unit):       # a step of 1 B or 1 s is never what was meant
        raise UsageError(f"{flag}: a range of a quantity in {unit} needs its step, start:stop:step, got {text!r}")
    start, stop = (_scalar(p, kind, flag, unit) for p in parts[:2])
    step = _scalar(parts[2], kind, flag, unit) if len(parts) == 3 else 1
    if step <= 0 or stop < start:
        raise UsageError(f"{flag}: a range needs start <= stop and a step > 0, got {text!r}")
    if kind == "int":
        n = (stop - start) // step + 1           # exact: both ends are whole numbers of at most 2**53
    else:
        q = (stop - start) / step                # inf for a step below the float range's reach (0:1:1e-320)
        if not q < MAX_VALUES:
            n = q + 1
        else:
            n = int(math.floor(q + 1e-9)) + 1
    if n > MAX_VALUES:
        raise UsageError(f"{flag}: the range {text!r} has {_count_text(n)} values; at most {MAX_VALUES:,}")
    return start, step, int(n)


def _range(text: str, kind: str, flag: str, unit: str = "1") -> List:
    """``start:stop[:step]``, ``stop`` included (``256:4096:256``)."""
    start, step, n = _range_parts(text, kind, flag, unit)
    return [start + i * step for i in range(n)] if kind == "int" else [float(start + i * step) for i in range(n)]


def count(text: str, kind: str, flag: str, unit: str = "1") -> int:
    """How many values ``text`` gives an option (each range counted, none built)."""
    if kind == "bool" and text.strip().lower() == "both":
        return 2
    total = 0
    for piece in text.split(","):
        if not piece.strip():
            raise UsageError(f"{flag}: empty value in {text!r}")
        total += _range_parts(piece, kind, flag, unit)[2] if ":" in piece else 1
        if total > MAX_VALUES:
            raise UsageError(f"{flag}: {text!r} lists more than {MAX_VALUES:,} values")
    return total


def values(text: str, kind: str, flag: str, unit: str = "1") -> List:
    """The values of one option: ``4``, ``1,2,4,8``, ``256:4096:256``, ``both`` (a switch: no and yes); counted
    first (:func:`count`), so that no more than :data:`MAX_VALUES` are ever built."""
    count(text, kind, flag, unit)
    if kind == "bool" and text.strip().lower() == "both":
        return [False, True]
    out: List = []
    for piece in text.split(","):
        out += _range(piece, kind, flag, unit) if ":" in piece else [_scalar(piece, kind, flag, unit)]
    return out


def options_given(args) -> Dict[str, List]:
    """Every configuration option the user gave, as lists of values, by argument name."""
    out = {}
    for o in OPTIONS:
        text = getattr(args, attr(o), None)
        if text is not None:
            out[o.keyword] = values(text, o.kind, o.flag, o.param.unit if o.param else "1")
    return out


def check_ranges(given: Dict[str, List], keywords: bool = False) -> None:
    """Every value of a record field (with ``keywords``, of every option, and every precision one mlsysim knows)
    in its range of the parameter table (:attr:`mlsysim_sym.symbols.Param.range`), else one line naming the option:
    ``--memory-bandwidth: memory_bandwidth must be > 0, got 0.0``. ``solve()`` checks its keywords itself (with
    mlsysim's messages, in mlsysim's order); nothing downstream checks a record field (a bandwidth of 0 would
    divide by zero), and a search or a sweep would leave out (mask) every configuration of a value out of its
    range. A keyword whose range ``solve()`` does not check (mlsysim prices a congestion factor of -5 as a negative
    step time) is checked here for every command: the command line refuses what means nothing."""
    for k, vs in given.items():
        o = BY_KEYWORD[k]
        if o.kind == "precision" and keywords:
            bad = next((v for v in vs if not (isinstance(v, str) and v.lower() in PRECISION_BYTES)), None)
            if bad is not None:
                raise UsageError(f"{o.flag}: " + UNSUPPORTED_PRECISION.format(precision=bad))
        r = o.param.range if o.param is not None else None
        if r is None or o.kind not in ("int", "float") or (r.checked and not (o.field or keywords)):
            continue
        bad = next((v for v in vs if v not in r), None)
        if bad is not None:
            # a range mlsysim's solve() does not check: said so (its model prices such a value)
            own = "" if r.checked or o.field else \
                " (mlsysim prices it; the command line and the extended model refuse it)"
            raise UsageError(f"{o.flag}: {k} must be {r.text}, got {bad}{own}")


def attr(o: Option) -> str:
    return o.flag.lstrip("-").replace("-", "_")


def single(given: Dict[str, List]) -> Dict[str, object]:
    for k, v in given.items():
        if isinstance(v, list) and len(v) != 1:
            raise UsageError(f"{BY_KEYWORD[k].flag}: takes one value here (lists and ranges are for sweep "
                             f"and search), got {len(v)} values")
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
    given: Dict[str, List] = field(default_factory=dict)     # the options given, a list of values each
    named: Tuple[str, ...] = ()                                 # "--model", "--fleet" where given

    @property
    def flags(self) -> Tuple[str, ...]:
        """The configuration options given (``--tp``, ...), with ``--model`` and ``--fleet`` where given."""
        return tuple(BY_KEYWORD[k].flag for k in self.given) + self.named

    def line(self, configuration: str) -> str:
        return "configuration: " + configuration + (f" ({self.note})" if self.note else "")


def _same_fleet(name: str, fleet) -> bool:
    """Whether the catalog name ``name`` is the fleet record ``fleet`` (a name that is none: not)."""
    from ..inputs import as_fleet
    try:
        return as_fleet(name) == fleet
    except (KeyError, TypeError, ValueError):
        return False


def setup(args, example: bool = True) -> Setup:
    """The configuration the options describe; the bundled example when nothing is given."""
    given = options_given(args)
    for flag in ("model", "fleet"):         # --model= is no name (it read as "not given": the example)
        if getattr(args, flag, None) is not None and not str(getattr(args, flag)).strip():
            raise UsageError(f"--{flag}: empty; give a catalog name or a file (mlsysim-sym list names them)")
    check_ranges(given)
    without = tuple(x.strip() for x in args.without.split(",") if x.strip()) if getattr(args, "without", None) \
        else None
    fidelity = getattr(args, "fidelity", None)
    if example and args.model is None and args.fleet is None:
        # neither a model nor a fleet named: the options change the bundled example, each what it names
        kw = {k: v for k, v in EXAMPLE.items() if k not in ("model", "fleet")}
        kw.update({k: (v[0] if len(v) == 1 else v) for k, v in given.items()})
        args.example_origin = {k: v for k, v in kw.items() if k not in given}    # said in errors (cli.errors)
        return Setup(EXAMPLE["model"], EXAMPLE["fleet"], kw, ModelChoice(fidelity or "mlsysim", without or ()),
                     "" if given else "the bundled example", given)
    model, fleet = args.model, args.fleet
    from_files: Dict[str, object] = {}
    for name in dict.fromkeys(x for x in (model, fleet) if files.is_file_name(x)):
        doc = files.load(name)          # a bad file: one line naming it and the field
        if name == model and fleet is None and doc.fleet is not None:
            fleet = name                # a plan: its hardware is the fleet
        elif name == model and fleet is None and doc.kind != "model":
            # a plan without hardware (mlsysim eval refuses it) was priced on the default fleet unsaid
            raise UsageError(f"--model {name}: the plan has no hardware: section and no --fleet is given (mlsysim's "
                             "plan requires one; give a hardware: section or --fleet)")
        if name == fleet and model is None and doc.workload is not None:
            model = name
    # the model's file gives the batch and sequence, the fleet's the precision and efficiency; the training:
    # sections the rest of the keywords and the model choice (the model's file over the fleet's)
    origin: Dict[str, str] = {}          # a training: keyword, fidelity or without -> the file that gave it
    chosen: Dict[str, object] = {}       # the files' model choice
    for name, part in ((fleet, "training"), (model, "training"), (model, "workload"), (fleet, "hardware")):
        if files.is_file_name(name):
            doc = files.load(name)
            from_files.update(doc.section_keywords(part))
            if part == "training":
                origin.update({k: name for k in (*doc.training, *doc.model)})
                chosen.update(doc.model)
    if files.is_file_name(model) and model != fleet and fleet is not None:
        # the model's plan has a hardware: section of its own, which another fleet replaces: say what it leaves
        # (the plan's own fleet named again, as a catalog name: its settings are read)
        doc = files.load(model)
        left = {k: v for k, v in doc.section_keywords("hardware").items() if k not in given and k not in from_files}
        if left and doc.fleet is not None and not files.is_file_name(fleet) and _same_fleet(fleet, doc.fleet):
            from_files.update(left)
        elif left:
            warnings.warn(f"{model}: hardware: {', '.join(f'{k} {v}' for k, v in left.items())} "
                          f"go{'es' if len(left) == 1 else ''} with the file's own fleet, not read beside --fleet "
                          f"{fleet} (give "
                          f"{' '.join('--' + k.replace('_', '-') for k in left)})", UserWarning)
    # an option given beside the files wins
    fidelity = fidelity or chosen.get("fidelity", "mlsysim")
    without = without if without is not None else chosen.get("without")
    if fidelity != "extended":          # a training: section's extended keywords need the extended model
        needs = [k for k in origin if k in keywords() and keywords()[k].fidelity == "extended"]
        needs += ["without"] if "without" in origin and without and getattr(args, "without", None) is None else []
        if needs:
            k = needs[0]
            chose = "--fidelity" if getattr(args, "fidelity", None) else f"{origin['fidelity']}: training.fidelity"
            raise UsageError(f"{chose}: mlsysim's model cannot take {origin[k]}'s training.{k} (the extended "
                             "model's); give extended")
    choice = ModelChoice(fidelity, without or ())
    args.plan_origin = origin         # the errors' lines name the file where it gave a value (cli.errors)
    model, fleet = model or BASE["model"], fleet or BASE["fleet"]
    check_names(model, fleet)
    # a plan file read as it is: its batch is mlsysim's plan's (WorkloadConfig.batch_size, 1 when not given, as
    # solve() takes it), not the command line's default for a catalog name
    plan = files.is_file_name(model) and files.load(model).kind != "model"
    kw = {**({} if plan else {"batch_size": BASE["batch_size"]}), **from_files,
          **{k: (v[0] if len(v) == 1 else v) for k, v in given.items()}}
    return Setup(model, fleet, kw, choice, given=given,
                 named=tuple(f"--{k}" for k in ("model", "fleet") if getattr(args, k, None) is not None))


#: What ``--model`` and ``--fleet`` name: the words, the names of each catalog, and what a plan file gives.
_NAMES = {"--model": ("workload", lambda: catalog.workload_names(), lambda: modern.architecture_names(), "workload",
                      "give workload.name or an architecture: section"),
          "--fleet": ("fleet", lambda: catalog.fleet_names(), lambda: modern.fleet_names(), "fleet",
                      "give a hardware: section")}


def check_names(model: str, fleet: str) -> None:
    """A catalog name (mlsysim's, or the modern catalog's ``modern/...``) or a plan file, for each."""
    for flag, name in (("--model", model), ("--fleet", fleet)):
        what, mlsysim_names, modern_names, part, hint = _NAMES[flag]
        if not files.is_file_name(name):
            known = modern_names() if name.startswith(modern.PREFIX) else mlsysim_names()
            if name not in known:
                close = catalog.close_names(name, known)
                if not name.startswith(modern.PREFIX):      # the modern catalog's, typed without its prefix
                    close += catalog.close_names(modern.PREFIX + name, modern_names())
                    # the closest of both catalogs first
                    bare = name.lower()
                    close = sorted(close, key=lambda k: -difflib.SequenceMatcher(
                        None, bare, k.lower().removeprefix(modern.PREFIX)).ratio())
                close = close[:3]       # the three closest: the line fits a terminal's width better
                raise UsageError(f"{flag}: unknown {what} {name!r}; "
                                 + (f"close names: {', '.join(close)}; " if close else "")
                                 + "see: mlsysim-sym list (or give a plan file: docs/files.md)")
        elif getattr(files.load(name), part) is None:
            raise UsageError(f"{flag}: {name}: no {part}: {hint}")


def model_kwargs(s: Setup) -> Dict[str, object]:
    """``fidelity=`` and ``without=`` for the functions that take the model choice with the other arguments."""
    return {"fidelity": s.choice.fidelity, "without": s.choice.off}
