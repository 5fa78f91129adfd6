"""The command line under hostile input: a few hundred invocations generated from the parser's own options (so an
option added later is fuzzed too) with huge, tiny, negative, NaN, infinite, non-numeric and empty values, odd
lists and ranges, missing and unreadable files, bad picture paths and unknown names.

Every invocation runs in-process through ``main(argv)`` (stdout and stderr captured) inside one worker process
bounded in memory (``RLIMIT_AS``) and in time (an alarm per invocation); a few run as real subprocesses of the
console program. The rule checked for each: no traceback (no exception leaves ``main``), no time-out, and every
failure is exit status 2 with exactly one line on stderr, ``mlsysim-sym: error: ...``, that names an option the
invocation gave (or its command, its file, or argparse's own ``unrecognized arguments``)."""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest

from mlsysim_sym.cli import OPTIONS, parser

ROOT = Path(__file__).resolve().parents[1]

#: Per invocation and in all: the bounds of the worker (generous: a hung or runaway command is what they catch).
SECONDS_EACH = 60
MEMORY_BYTES = 6 << 30

HUGE = "1" + "0" * 30                    # 10**30: no C long holds it
HUGER = "9" * 400                        # beyond a float

#: Hostile values by the kind of option (``int``, ``float``, ``bool``, ``precision``: the configuration options;
#: the others by what the option names).
VALUES: Dict[str, List[str]] = {
    "int": ["0", "-1", "1e3", "1.5", HUGE, HUGER, "x", "", " ", "nan", "inf", "0x10"],
    "float": ["nan", "inf", "-inf", "1e308", "1e309", "1e-320", "5e-324", "-1", "0", "-0", "x", "", HUGER],
    "bool": ["maybe", "", "2", "both", "YES", "nan"],
    "precision": ["fp99", "", "FP16", "int4", "x" * 300],
    "choice": ["bogus", "", "MFU"],
    "model": ["Foo", "", "modern/Nope", "{tmp}/missing.yaml", "{tmp}/garbage.yaml", "{tmp}/dir.yaml",
              "{tmp}/empty.json", "{tmp}/list.toml"],
    "plot": ["{tmp}/no/such/dir/x.png", "{tmp}/noext", "{tmp}/x.xyz", "{tmp}", "", "{tmp}/x.png/",
             "{tmp}/dir.yaml/x.png"],
    "output": ["nope", "", "node_profile.feasible", "node_profile.bottleneck", "parallelism", "dp", "__class__"],
    "sigma": ["efficiency=1e308", "efficiency=nan", "efficiency=inf", "=", "efficiency=", "foo=0.1", "efficiency=-1",
              "efficiency=1e-320", "tp_size=0.1", ",", "efficiency=0.1,efficiency=0.2", "efficiency=x"],
    "without": ["nope", ",", "", "moe_layout,nope"],
    "solve_for": ["nope", "", "tp", "precision", "batch_size", "model"],
    "name": ["Nope", "", "x" * 10_000, "__class__", "T_step'"],
    "string": ["", "nope", "x" * 1000, "-1", "nan"],
}
#: Lists and ranges, where an option takes many values (sweep, search).
MANY = ["0:1:1e-320", "10:1", "1:100000", "1:2:0", "1:1e308", "::", "1:2:3:4", "1:", ":5", "1,,2", ",", "1:3:-1",
        "nan:1", "0:1e308:1e-308", "1:1000000", f"1:{HUGE}", f"{HUGE}:{HUGE}", "1,2,x"]
#: Values of the command-specific numeric options (int: ``--top``, ``--samples``, ``--seed``, ``--steps``).
NUMBERS = {"int": ["0", "-1", "1e9", "1000000000", HUGE, "x", ""], "float": VALUES["float"]}
#: What a command needs besides the option under test, to get as far as its work.
NEEDS = {"uncertainty": ["--sigma", "efficiency=0.1"],
         "required": ["--output", "bubble_fraction", "--target", "0.05", "--solve-for", "microbatch_count"],
         "plan": ["--tokens", "1e12"]}
#: The configuration options ``required`` is fuzzed with.
REQUIRED = [["--tp", "0"], ["--efficiency", "nan"], ["--fabric-bandwidth", "0"], ["--batch-size", HUGE],
            ["--pp", "3"], ["--layers", "-1"], ["--precision", "fp99"], ["--tp", "1,2"], ["--model", "Foo"]]
#: Whole invocations: several hostile options at once, and the reproducers of the issue.
COMBINED = [
    ["sweep", "--tp", "1:100000", "--pp", "1:100000"], ["search", "--tp", "1:100000", "--pp", "1:100000"],
    ["sweep", "--tp", "1:3000", "--pp", "1:3000"], ["sweep", "--tp", "1:1000", "--pp", "1:1000", "--json"], ["search", "--tp", "1:1000", "--pp", "1:1000"],
    ["sweep", "--tp", "1:1000", "--pp", "1:1000", "--microbatches", "1:1000"],
    ["sweep", "--batch-size", "1:100000", "--efficiency", "0.01:1:0.01"],
    ["search", "--microbatches", "1:100000", "--v-stages", "1:100000"],
    ["sweep", "--tp", "0"], ["sweep", "--tp", HUGE], ["sweep", "--efficiency", "0:1:1e-320"],
    ["uncertainty", "--sigma", "efficiency=1e308"], ["uncertainty", "--sigma", "efficiency=0.1", "--samples", "1e9"],
    ["uncertainty", "--sigma", "efficiency=0.1", "--samples", "1000000000"],
    ["sensitivity", "--output", "node_profile.feasible"],
    ["sweep", "--tp", "1,2", "--plot", "{tmp}/no/such/dir/x.png"], ["sweep", "--tp", "1,2", "--plot", "{tmp}/noext"],
    ["solve", "--moe-imbalance", "1e300", "--tp", "8", "--pp", "2", "--microbatches", "4"],
    ["required", "--tokens", "1e308", "--days", "1e-300"], ["plan", "--tokens", "1e308", "--price", "1e308"],
    ["plan", "--steps", HUGE], ["search", "--top", HUGE], ["search", "--count", "3"],
    ["sweep", "--fidelity", "extended", "--cp", "1:4", "--without", "nope"],
    ["solve", "--model", "{tmp}/garbage.yaml", "--fleet", "{tmp}/missing.toml"],
    ["equations", "T_step", "--family", "bogus"], ["list", "--json", "extra"], ["bogus"], [],
    ["solve", "--tp"], ["solve", "--tp", "1", "--tp", "x"], ["sweep", "--output"],
]


def _kind(command: str, action: argparse.Action) -> str:
    """What values an option gets, from the option itself: a configuration option's kind, a choice, int or
    float, else by the name of what it sets."""
    flag = action.option_strings[-1] if action.option_strings else action.dest
    by_flag = {o.flag: o.kind for o in OPTIONS}
    if flag in by_flag:
        return by_flag[flag]
    if action.choices:
        return "choice"
    if action.type in (int, float):
        return "number-" + action.type.__name__
    dest = action.dest
    if dest in ("model", "fleet"):
        return "model"
    return dest if dest in VALUES else "string"


def _commands() -> Dict[str, argparse.ArgumentParser]:
    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def invocations() -> List[List[str]]:
    """The fuzz's invocations (``{tmp}`` stands for a scratch directory). Each configuration option gets each of
    its hostile values once, the commands taking turns; on sweep and search also the lists and ranges; every
    other option of every command every value of its kind."""
    out: List[List[str]] = []
    commands = _commands()
    # required answers each question in about a second: it takes the configuration options through the same
    # setup as the others, and gets a few of them (REQUIRED)
    priced = [c for c in commands if any(a.option_strings == ["--tp"] for a in commands[c]._actions)
              and c != "required"]
    config = {o.flag for o in OPTIONS}
    alone = {k for k in VALUES if sum(o.kind == k for o in OPTIONS) == 1}
    for i, o in enumerate(OPTIONS):
        for j, v in enumerate(VALUES[o.kind]):
            if (i + j) % 2 and o.kind not in alone:     # half of the values each, every value to half the options
                continue
            c = priced[(i + j // 2) % len(priced)]
            out.append([c, *NEEDS.get(c, []), o.flag, v])
        for k, c in enumerate(("sweep", "search")):
            if o.kind in ("int", "float"):
                out += [[c, o.flag, v] for v in MANY[(i + k) % 9::9]]
    out += [["required", *NEEDS["required"], *x] for x in REQUIRED]
    for c, p in commands.items():
        for a in p._actions:
            if isinstance(a, (argparse._HelpAction, argparse._VersionAction)):
                continue
            flag = a.option_strings[-1] if a.option_strings else None
            if flag in config:
                continue
            if a.nargs == 0:                          # a switch: on, with the command's needs
                out.append([c, *NEEDS.get(c, []), flag])
                continue
            kind = _kind(c, a)
            vals = NUMBERS[kind.split("-")[1]] if kind.startswith("number-") else VALUES[kind]
            need = NEEDS.get(c, [])
            base = [y for k, v in zip(need[::2], need[1::2]) if k != flag for y in (k, v)]
            for v in vals:
                out.append([c, *base, v] if flag is None else [c, *base, flag, v])
    return out + [list(x) for x in COMBINED]


WORKER = r"""
import contextlib, io, json, os, resource, signal, sys, time, traceback
limit, seconds, cases_path, out_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

class TimedOut(BaseException):
    pass

def alarm(signum, frame):
    raise TimedOut()

signal.signal(signal.SIGALRM, alarm)
from mlsysim_sym.cli import main
results = []
for argv in json.load(open(cases_path)):
    out, err = io.StringIO(), io.StringIO()
    escaped, timed_out, status = None, False, None
    start = time.perf_counter()
    signal.alarm(seconds)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(argv)
    except TimedOut:
        timed_out = True
    except BaseException:
        escaped = traceback.format_exc()
    finally:
        signal.alarm(0)
    results.append(dict(argv=argv, status=status, stdout=out.getvalue()[:2000], stderr=err.getvalue()[:5000],
                        escaped=escaped, timed_out=timed_out, seconds=time.perf_counter() - start))
json.dump(results, open(out_path, "w"))
"""


def _scratch(tmp: Path) -> None:
    """The files the invocations name: unreadable plans and a directory named like one."""
    (tmp / "garbage.yaml").write_text("model: [unclosed\n  - : :\n")
    (tmp / "empty.json").write_text("")
    (tmp / "list.toml").write_text("= 1\n")
    (tmp / "dir.yaml").mkdir()


def _fill(argv: List[str], tmp: Path) -> List[str]:
    return [a.replace("{tmp}", str(tmp)) for a in argv]


def _env() -> Dict[str, str]:
    # one BLAS thread: each thread's buffers would count against the address-space limit
    return {**os.environ, "PYTHONWARNINGS": "", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg"}


def run_all(cases: List[List[str]], tmp: Path) -> List[dict]:
    """Every case in-process through ``main`` in one worker bounded in memory and in time per case."""
    path, out = tmp / "cases.json", tmp / "results.json"
    path.write_text(json.dumps(cases))
    p = subprocess.run([sys.executable, "-c", WORKER, str(MEMORY_BYTES), str(SECONDS_EACH), str(path), str(out)],
                       capture_output=True, text=True, timeout=SECONDS_EACH * 10, env=_env(), cwd=tmp)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(out.read_text())


_FLAG = re.compile(r"--[a-z][a-z0-9-]*")


def problems(r: dict, tmp: Path) -> List[str]:
    """What is wrong with one result, as lines for the assertion message (none: it holds)."""
    argv, err, status = r["argv"], r["stderr"], r["status"]
    if r["escaped"]:
        return [f"traceback: {argv}: {r['escaped'].strip().splitlines()[-1]}"]
    if r["timed_out"]:
        return [f"timed out after {SECONDS_EACH} s: {argv}"]
    if status == 0:
        bad = [x for x in err.splitlines() if not x.startswith(("mlsysim-sym: warning: ", "picture: "))]
        return [f"exit 0 with stderr {bad!r}: {argv}"] if bad else []
    lines = err.splitlines()
    if status != 2 or len(lines) != 1 or not lines[0].startswith("mlsysim-sym: error: ") or r["stdout"]:
        return [f"exit {status}, stdout {len(r['stdout'])} chars, stderr {err!r}: {argv}"]
    return [] if names_what_it_is_about(lines[0][len("mlsysim-sym: error: "):], argv) else \
        [f"names no option given: {lines[0]!r}: {argv}"]


def names_what_it_is_about(message: str, argv: List[str]) -> bool:
    """The message starts with what it is about: an option the invocation gave (``--tp:``, ``--tp/--pp/--ep:``,
    argparse's ``argument --tp:``), the command's positional (``NAME:``, ``argument COMMAND:``), a file the
    invocation named, or argparse's ``unrecognized arguments`` (which lists them)."""
    head = message.split(": ")[0]
    given = {a.split("=")[0] for a in argv if a.startswith("--")}
    if head.startswith("argument "):
        head = head[len("argument "):]
    flags = set(_FLAG.findall(head))
    if flags and flags & given and _FLAG.sub("", head).strip("/, ") in ("", "and", "or"):
        return True
    if head in ("NAME", "COMMAND", "unrecognized arguments") or message.startswith("the following arguments are"):
        return True
    return any(head == a for a in argv if not a.startswith("-") and ("/" in a or "." in a))


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli_fuzz")
    _scratch(tmp)
    cases = [_fill(a, tmp) for a in invocations()]
    return run_all(cases, tmp), tmp


def test_the_fuzz_covers_every_option_of_every_command():
    cases = invocations()
    assert len(cases) >= 300
    for c, p in _commands().items():
        for a in p._actions:
            if isinstance(a, (argparse._HelpAction, argparse._VersionAction)):
                continue
            flag = a.option_strings[-1] if a.option_strings else None
            assert any(x[:1] == [c] and (flag is None or flag in x) for x in cases) or \
                (flag in {o.flag for o in OPTIONS} and any(flag in x for x in cases)), (c, flag)


def test_no_invocation_ends_in_a_traceback_and_every_failure_is_one_line_naming_its_option(fuzzed):
    results, tmp = fuzzed
    bad = [p for r in results for p in problems(r, tmp)]
    assert not bad, f"{len(bad)} of {len(results)} invocations:\n" + "\n".join(bad[:60])


def _limited():
    """In the child of a subprocess run: the same address-space bound as the worker's."""
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))


def _console(argv: List[str], tmp: Path) -> dict:
    """One invocation as a user runs it: the console program in a process of its own, bounded in memory and
    time (a time-out is reported as such, not raised)."""
    try:
        p = subprocess.run([sys.executable, "-m", "mlsysim_sym", *argv], capture_output=True, text=True,
                           timeout=SECONDS_EACH, env=_env(), cwd=tmp, preexec_fn=_limited)
    except subprocess.TimeoutExpired:
        return dict(argv=argv, status=None, stdout="", stderr="", escaped=None, timed_out=True)
    escaped = p.stderr if "Traceback (most recent call last)" in p.stderr else None
    return dict(argv=argv, status=p.returncode, stdout=p.stdout[:2000], stderr=p.stderr, escaped=escaped,
                timed_out=False)


def test_the_reproducers_and_a_sample_hold_as_real_subprocesses(tmp_path):
    """Reproducers of the issue (a sweep and a search of 10^10 (the search now cut to the fleet's divisors), tp 0, 10**30, a step of 1e-320, sigma 1e308,
    10^9 draws, a yes/no output's derivative, a picture into a missing directory) and every 300th of the other
    invocations, through ``python -m mlsysim_sym``: the console program's own stdout, stderr and exit status."""
    from concurrent.futures import ThreadPoolExecutor
    _scratch(tmp_path)
    cases = invocations()
    reproducers = [COMBINED[i] for i in (0, 1, 8, 9, 10, 11, 13, 14, 15)]
    chosen = [_fill(a, tmp_path) for a in reproducers + cases[:-len(COMBINED)][::300]]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda a: _console(a, tmp_path), chosen))
    bad = [p for r in results for p in problems(r, tmp_path)]
    assert not bad, f"{len(bad)} of {len(results)} invocations:\n" + "\n".join(bad)
    # the reproducers fail as they should: exit 2; but the search of tp and pp 1:100000 (the second) runs: on the
    # 256 GPUs of the bundled fleet only 256's 9 divisors can split it, as search() takes them
    assert [r["status"] for r in results[:len(reproducers)]] == [2, 0] + [2] * (len(reproducers) - 2), results
