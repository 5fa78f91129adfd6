"""Errors as the command line reports them: one line that starts with the option it is about.

A message of the package's functions names the argument it is about (``tp_size must be >= 1, got 0``,
``uncertainty(): samples must be ...``): :func:`option_of` reads the option off it. Where a message names none
(the search found nothing, the model overflowed at an extreme value, an allocation failed), :func:`about` names
the options the work was made of, given by the command."""
from __future__ import annotations

import difflib
import re
from contextlib import contextmanager
from typing import Dict, Iterable, Optional, Sequence

from .guards import DIVIDING
from .options import BY_KEYWORD, OPTIONS, UsageError

#: Messages of mlsysim and of the package that do not start with the keyword they are about.
_ABOUT = {"n_microbatches ": "--microbatches", "Infeasible 4D Parallelism": "--tp/--pp/--ep",
          "Infeasible 5D Parallelism": "--tp/--pp/--ep/--cp", "Infeasible parallelism": "--tp/--pp/--cp",
          "Infeasible expert parallelism": "--ep/--etp/--pp", "fidelity ": "--fidelity",
          "Invalid precision": "--precision", "unknown output ": "--output"}
#: Messages that start with one keyword but are about two (the split of a sequence by CP): the start, the other
#: keyword's phrase in the message, and the options.
_PAIRS = (("seq_len ", "cp_size (", "--cp/--seq-len"),)
#: A search's split that no choice of the degrees makes (``optimize``): about the options of the degrees that must
#: divide the fleet (guards.DIVIDING) given, and of the fleet's size where the call sets it.
_NO_SPLIT = "among the choices divides the fleet's"
_DEGREES = tuple(BY_KEYWORD[k].flag for k in (*DIVIDING, "count", "accelerators_per_node"))
#: ``uncertainty(): ...``: the function a message comes from, before what it is about.
_CALLER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\(\): ")


#: The package's advice in Python's words -> the command line's.
IN_CLI_WORDS = (("pass fidelity='extended'", "add --fidelity extended"), ("pass runnable=False", "add --all-schedules"),
                ("runnable=False", "--all-schedules"))


def cli_words(text: str) -> str:
    """``text`` with the package's advice in the command line's words (``--all-schedules``, not ``runnable=False``)."""
    for python, cli in IN_CLI_WORDS:
        text = text.replace(python, cli)
    return text


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (a ``KeyError``'s without its quotes), the package's advice in the command
    line's words (:func:`cli_words`)."""
    args = exc.args
    text = args[0] if len(args) == 1 else args[-1] if args and isinstance(args[-1], str) else exc
    return cli_words(" ".join(str(text).split())) or type(exc).__name__


#: A list of names in a message (``efficiency, overlap-efficiency, congestion, ...``): 8 or more.
_NAMES = re.compile(r"[A-Za-z_][\w.\-]*(?:, (?!(?:or|and) )[A-Za-z_][\w.\-]*){7,}")
#: The longest error line left as it is; a longer one's list of names (of 12 or more) is cut to what fits, at
#: least :data:`_KEEP` of them.
LONG = 160
_KEEP = 4


def short_lists(line: str, width: int = LONG) -> str:
    """An error line whose list of 12 or more names makes it longer than ``width``: the list cut to the names
    closest to the one the message is about (``'gemm'`` -> ``gemm_shape``) and then its first names, as many as
    fit (at least 4), with how many there are in all (the command's ``--help`` lists the names ``--without``,
    ``--sigma`` and ``--solve-for`` take, ``mlsysim-sym equations`` the quantities ``--output`` takes, and
    docs/files.md a file's fields).

    >>> short_lists("--x: unknown 'gemm'; one of: " + ", ".join(f"name_{i}" for i in range(40)) + ", gemm_shape", 90)
    "--x: unknown 'gemm'; one of: gemm_shape, name_0, name_1, name_2, name_3, ... (41 in all)"
    """
    m = _NAMES.search(line)
    if len(line) <= width or m is None or len(m.group(0).split(", ")) < 12:
        return line
    names = m.group(0).split(", ")
    # the name the message is about: quoted ('gemm'), or the field before ": unknown" (training.tensor_parallel)
    bad = (re.search(r"'([^']+)'", line) or re.search(r"(?:^|[\s.])([\w\-]+): unknown", line)
           or re.search(r": ([\w.\-]+) is no ", line))
    close = difflib.get_close_matches(bad.group(1), names, n=3, cutoff=0.5) if bad else []
    room = width - len(line) + len(m.group(0)) - len(f", ... ({len(names)} in all)")
    kept: list = []
    for n in dict.fromkeys(close + names):
        if len(kept) >= _KEEP and len(", ".join(kept + [n])) > room:
            break
        kept.append(n)
    return line[:m.start()] + ", ".join(kept) + f", ... ({len(names)} in all)" + line[m.end():]


def option_of(message: str, dests: Iterable[str] = ()) -> str:
    """The option a message is about, as the start of the error line (``"--tp: "``), or ``""``: the message starts
    with a keyword (``tp_size must ...``, ``etp_size=...``, ``sigma['x'] ...``), with one of the command's own
    options (``dests``: ``days``, ``target``, ``samples``, ``solve_for``), or with a phrase of :data:`_ABOUT`."""
    if message.startswith("without: "):
        return "--"      # "--without: ..." (the message names the argument itself)
    text = _CALLER.sub("", message)
    pair = next((flags for start, also, flags in _PAIRS if text.startswith(start) and also in text), None)
    if pair:
        return pair + ": "
    names = [(o.keyword, o.flag) for o in OPTIONS] + [(d, "--" + d.replace("_", "-")) for d in dests]
    for name, flag in names:
        if any(text.startswith(name + end) for end in (" ", "=", "[", ":")):
            return flag + ": "
    return next((flag + ": " for start, flag in _ABOUT.items() if text.startswith(start)), "")


@contextmanager
def about(args, given: Sequence[str], hints: Optional[Dict[str, str]] = None):
    """The package's errors inside, as one line naming an option (a :class:`UsageError`): the option the message
    names (:func:`option_of`; ``hints``: a phrase of the message and the option it means), else ``given``, the
    options the work was made of. An overflow or a division by zero at an extreme value, and an allocation that
    fails, are named the same way."""
    dests = [d for d in vars(args) if d not in {o.flag.lstrip("-").replace("-", "_") for o in OPTIONS}]
    options = list(dict.fromkeys(given))
    # the options the work was made of; beyond five, the first four and how many (the line fits a terminal)
    fallback = "/".join(options if len(options) <= 5 else options[:4] + [f"... ({len(options)} options)"]) \
        or "--model/--fleet"
    try:
        yield
    except UsageError:
        raise
    except MemoryError as exc:        # SweepTooLarge says it in the command line's words (cli)
        cli = getattr(exc, "cli", None)
        raise UsageError(f"{fallback}: {' '.join(cli.split()) if cli else one_line(exc)}") from None
    except ArithmeticError as exc:
        these = "these values" if "/" in fallback else "this value"
        raise UsageError(f"{fallback}: the model has no finite result at {these} ({type(exc).__name__}: "
                         f"{one_line(exc)})") from None
    except (ValueError, TypeError, KeyError) as exc:
        text = one_line(exc)
        named = option_of(text, dests)
        if not named and _NO_SPLIT in text:
            named = "/".join(o for o in options if o in _DEGREES) + ": " if set(options) & set(_DEGREES) else ""
        if not named:
            named = next((flag + ": " for phrase, flag in (hints or {}).items() if phrase in text), "")
        start = _from_plan(named or fallback + ": ", given, getattr(args, "plan_origin", {}))
        raise UsageError(with_origin(start, unrepeated(named, _in_options_words(text, hints)),
                                     getattr(args, "example_origin", {}))) from None


#: ``uncertainty(): sigma['x']``: the mapping ``uncertainty()`` takes, where ``--sigma`` takes ``x=...``.
_SIGMA = re.compile(r"^uncertainty\(\): sigma\['([A-Za-z_][A-Za-z0-9_]*)'\]")


def _in_options_words(text: str, hints: Optional[Dict[str, str]] = None) -> str:
    """A message of the package's functions in the command line's words: ``uncertainty(): sigma['x']`` as the name
    ``--sigma`` takes (``attention-efficiency``), and a keyword a hint stands for (``price_per_gpu_hour``) left out
    where the message starts with it (the option before it names it).

    >>> _in_options_words("uncertainty(): sigma['attention_efficiency']: an argument of the extended model")
    'attention-efficiency: an argument of the extended model'
    >>> _in_options_words("price_per_gpu_hour must be >= 0", {"price_per_gpu_hour": "--price"})
    'must be >= 0'
    """
    flags = {o.keyword: o.flag[2:] for o in OPTIONS}
    text = _SIGMA.sub(lambda m: flags.get(m.group(1), m.group(1)), text)
    start = next((p for p in hints or {} if p.isidentifier() and text.startswith(p + " ")), None)
    return text[len(start) + 1:] if start else text


def unrepeated(named: str, text: str) -> str:
    """``text`` without the argument it starts with where the option before it names that argument already
    (``--output: output: ...`` -> ``--output: ...``).

    >>> unrepeated("--solve-for: ", "solve_for: x is no input"), unrepeated("--tp: ", "tp_size must be >= 1")
    ('x is no input', 'tp_size must be >= 1')
    """
    key = named[2:-2].replace("-", "_") if named.startswith("--") and named.endswith(": ") else ""
    return text[len(key) + 2:] if key and text.startswith(key + ": ") else text


def _from_plan(named: str, given: Sequence[str], origin: Dict[str, str]) -> str:
    """``named`` (``"--tp/--pp/--ep: "``), or where none of its options was typed and a plan file's
    ``training:`` section gave their values, the file and those fields (``"plan.yaml: training.tp_size: "``)."""
    if named == "--" or not origin:
        return named
    flags = named[:-2].split("/")
    if any(f in given for f in flags):
        return named
    keys = [o.keyword for o in OPTIONS if o.flag in flags and o.keyword in origin]
    if not keys:
        return named
    return f"{origin[keys[0]]}: " + "/".join(f"training.{k}" for k in keys) + ": "


def _from_example(named: str, example: Dict[str, object]) -> str:
    """What an error line adds where the bundled example gave values of the options it names: those values and
    the options that change them (``" (tp 8, pp 4: the bundled example's; --tp, --pp change them)"``), else
    nothing. The user who typed only ``--count 3`` reads where the tp 8 and pp 4 of the message came from."""
    flags = named[:-2].split("/") if named.startswith("--") and named.endswith(": ") else []
    kept = [o for o in OPTIONS if o.flag in flags and o.keyword in example]
    if not kept:
        return ""
    return (" (" + ", ".join(f"{o.flag[2:]} {example[o.keyword]}" for o in kept) + ": the bundled example's; "
            + ", ".join(o.flag for o in kept) + (" changes it)" if len(kept) == 1 else " change them)"))


def with_origin(named: str, text: str, example: Dict[str, object]) -> str:
    """``named`` and ``text`` as one error line, with where the example's values came from (:func:`_from_example`)
    before the message's last full stop."""
    since = _from_example(named, example)
    if since and text.endswith("."):
        return named + text[:-1] + since + "."
    return named + text + since
