"""What the command line refuses before any work: a sweep, search, JSON document or Monte Carlo run too large to
finish in reasonable time or fit in memory (counted from the options, before anything is built), and a picture
path matplotlib cannot write as given. Each refusal is a :class:`.options.UsageError` naming the options and the
count against its limit."""
from __future__ import annotations

import inspect
import math
import os
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from .options import BY_KEYWORD, UsageError

#: Configurations of one sweep: a million take 1 to 4 s and about 0.5 GB (every output of the model over the
#: grid; nine million took 22 s); the sweep's own memory budget refuses what does not fit besides.
MAX_SWEEP = 1_000_000
#: Configurations of a sweep printed as JSON: every output of every configuration is a JSON value (a hundred
#: thousand configurations make about 50 MB of text in about 3 s).
MAX_JSON = 100_000
#: Configurations a search is asked to rank, counted from the options before anything is built (the divisors of
#: the fleet that the degrees not given take are not counted here; :data:`MAX_SEARCH_GRID` counts them).
MAX_SEARCH = 1_000_000
#: Configurations of a search's grid, counted exactly before it is evaluated (``search(max_configurations=)``): the
#: splits that divide the fleet times every other choice. Measured on one core: DeepSeek-V3 on 1,152 GB200s, the
#: search's defaults, 1,880,064 in 15 s; with two precisions, cp 1,2,4, etp 1,2 and two switches, 68,198,400 in
#: 2 min 16 s (the divisors of 1,152 are 24 degrees of tp and of pp).
MAX_SEARCH_GRID = 10_000_000
#: Monte Carlo draws of ``uncertainty``: ten million take about 4 s and 0.5 GB.
MAX_SAMPLES = 10_000_000


def flags(keywords: Sequence[str]) -> str:
    """``--tp/--pp``: the options of these arguments, as an error line names them."""
    return "/".join(BY_KEYWORD[k].flag for k in keywords)


def _listed(given: Dict[str, List]) -> Dict[str, int]:
    return {k: len(v) for k, v in given.items() if len(v) > 1}


def _product(counts: Dict[str, int]) -> str:
    return " x ".join(f"{n:,} {k}" for k, n in counts.items())


def refuse_large_sweep(given: Dict[str, List], json: bool) -> None:
    """A sweep is the grid of every option given as a list: refused beyond :data:`MAX_SWEEP` configurations
    (:data:`MAX_JSON` with ``--json``), named by its options and its count."""
    listed = _listed(given)
    n = math.prod(listed.values())
    limit = MAX_JSON if json else MAX_SWEEP
    if n > limit:
        raise UsageError(f"{flags(listed)}: a sweep of {n:,} configurations ({_product(listed)}); at most "
                         + (f"{limit:,} with --json: give fewer values or leave out --json" if json else
                            f"{limit:,}: give fewer values"))


def _schedule_defaults() -> Dict[str, int]:
    """The search's own choices of its schedule arguments (``search()``'s defaults: microbatches, virtual stages,
    ZeRO stages, recomputation, overlap), by how many there are."""
    from ..optimize import search
    return {k: len(p.default) for k, p in inspect.signature(search).parameters.items()
            if isinstance(p.default, tuple)}


#: The degrees a search can only take at values that divide the fleet's accelerators (the split degrees and the
#: expert tensor-parallel degree: :data:`mlsysim_sym.mechanisms.SPLIT_DEGREES`, ``search()``'s groups).
DIVIDING = ("tp_size", "pp_size", "ep_size", "cp_size", "etp_size")


def _divides(x, n: int) -> bool:
    try:
        return x >= 1 and int(x) == x and n % int(x) == 0
    except (TypeError, ValueError, OverflowError):
        return False


def refuse_large_search(given: Dict[str, List], accelerators: Optional[int] = None) -> None:
    """A search ranks the product of its choices: those given as lists, and the search's own schedule choices
    where none is given. Refused beyond :data:`MAX_SEARCH` configurations, counted before any is built. Where the
    fleet's ``accelerators`` are fixed, a degree counts only its values that divide them, as ``search()`` does
    (the divisors it takes for a degree not given are not counted: at most a few dozen)."""
    if accelerators:
        given = {k: ([x for x in v if _divides(x, accelerators)] or v[:1])
                 if k in DIVIDING else v for k, v in given.items()}
    listed = _listed(given)
    own = {k: n for k, n in _schedule_defaults().items() if k not in given}
    n = math.prod(listed.values()) * math.prod(own.values())
    if n > MAX_SEARCH:
        counts = _product(listed) + (f" x {math.prod(own.values()):,} schedules of the search's own" if own else "")
        raise UsageError(f"{flags(listed)}: a search of {n:,} configurations ({counts}); at most {MAX_SEARCH:,}: "
                         "give fewer values")


def refuse_many_samples(samples) -> None:
    """``--samples``: from 2 Monte Carlo draws (a spread needs two) to :data:`MAX_SAMPLES` (not given: the first
    order alone)."""
    if samples is not None and samples < 2:
        raise UsageError(f"--samples: Monte Carlo draws must be a whole number >= 2 (leave it out for the first "
                         f"order alone), got {samples}")
    if samples is not None and samples > MAX_SAMPLES:
        raise UsageError(f"--samples: at most {MAX_SAMPLES:,} Monte Carlo draws, got {samples:,}")


def picture_formats() -> Sequence[str]:
    """The file endings matplotlib writes (``png``, ``pdf``, ``svg``, ...)."""
    from matplotlib.backend_bases import FigureCanvasBase
    return tuple(FigureCanvasBase.get_supported_filetypes())


def check_picture_path(path: str) -> None:
    """``--plot PATH`` before any work: a file name whose ending is a format matplotlib writes (so that the
    picture is written at exactly ``PATH``: matplotlib adds ``.png`` to a name without an ending), in a
    directory that exists and can be written."""
    formats = picture_formats()
    allowed = ", ".join("." + f for f in formats)
    if not path.strip():
        raise UsageError(f"--plot: give a file name ending in one of {allowed}, got ''")
    p = Path(path)
    if path.endswith(("/", os.sep)) or p.is_dir():
        raise UsageError(f"--plot: {path} is a directory; give a file name ending in one of {allowed}")
    ending = p.suffix[1:].lower()
    if ending not in formats:
        got = f"ending .{p.suffix[1:]}" if p.suffix else "no ending"
        raise UsageError(f"--plot: {path} has {got}; the picture's format is its ending, one of {allowed}")
    parent = p.parent
    if not parent.is_dir():
        why = "is not a directory" if parent.exists() else "does not exist"
        raise UsageError(f"--plot: {path}: the directory {parent} {why}")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"--plot: {path}: the directory {parent} cannot be written")
