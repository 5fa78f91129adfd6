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
    mlsysim-sym equations --macros --format mathjax   # tex, mathjax, katex or qmd: docs/macros/
    mlsysim-sym list

Every subcommand prints the configuration it priced and takes ``--json`` (SI units,
mlsysim's field names). Options not given take ``solve()``'s defaults (every
parallel degree 1), except that with no option at all ``solve`` and
``sensitivity`` price the bundled example. Warnings print as one line on stderr;
bad input prints one line naming the option and exits with status 2.
"""
from __future__ import annotations

import os
import sys
import warnings
from typing import Optional, Sequence

from .commands import COMMANDS, check_plot
from .errors import one_line, option_of, short_lists, unrepeated
from .options import OPTIONS, UsageError, values
from .parser import parser

__all__ = ["main", "parser", "values", "OPTIONS", "UsageError"]


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = ["solve"] + argv
    try:
        try:
            args = parser().parse_args(argv)
        except SystemExit as done:          # --help, --version
            return int(done.code or 0)
        if getattr(args, "plot", None) is not None:
            try:               # before any work: a core install has no matplotlib
                import matplotlib  # noqa: F401
            except ImportError:
                raise UsageError("--plot: pictures need matplotlib: pip install matplotlib (the package's [plot] "
                                 "extra)") from None
            check_plot(args)   # a format matplotlib writes, in a directory that exists
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            status = COMMANDS[args.command](args)
        for w in caught:
            print("mlsysim-sym: warning: " + " ".join(str(w.message).split()), file=sys.stderr)
        return status
    except BrokenPipeError:            # `mlsysim-sym list | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (UsageError, ImportError) as exc:
        print(short_lists(f"mlsysim-sym: error: {one_line(exc)}"), file=sys.stderr)
        return 2
    except UnicodeEncodeError as exc:  # a terminal or pipe in ASCII: the symbols (β, η) cannot be written
        print(f"mlsysim-sym: error: the output's encoding ({exc.encoding}) cannot write "
              f"{ascii(exc.object[exc.start:exc.end])}: set PYTHONIOENCODING=utf-8 (or a UTF-8 locale), or use "
              "--json", file=sys.stderr)
        return 2
    except (ValueError, TypeError, KeyError) as exc:
        text = one_line(exc)
        named = option_of(text)
        print(short_lists(f"mlsysim-sym: error: {named}{unrepeated(named, text)}"), file=sys.stderr)
        return 2
    except Exception as exc:           # noqa: BLE001 - never a traceback: one line, that says what broke
        print(f"mlsysim-sym: error: internal error, please report it: {type(exc).__name__}: {one_line(exc)}",
              file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
