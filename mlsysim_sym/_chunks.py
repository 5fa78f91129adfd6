"""A sweep's evaluation in chunks: how large each output is, whether the outputs fit in memory, and the
compiled function run chunk by chunk into preallocated arrays (masked configurations evaluated with valid
stand-ins, an overflow masked where it happens)."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, List, Optional, Tuple

import numpy as np
import sympy as sp

from .display import quantity
from .masks import OVERFLOW_CODE
from .model import Variant, build_model
from .symbols import keywords

#: Elements per chunk of a flattened sweep (cache-sized: ~20 % faster than one pass over 10^6).
CHUNK = 16384
#: A grid is evaluated whole while the full-size arrays of one evaluation (its outputs and about
#: ``TEMPORARIES`` intermediate arrays) take less than this many bytes; beyond, in chunks of about
#: ``GRID_CHUNK_BYTES`` (subexpressions that depend on few axes stay small either way).
GRID_WHOLE_BYTES = 1 << 30
GRID_CHUNK_BYTES = 1 << 28
TEMPORARIES = 16


class SweepTooLarge(MemoryError):
    """Work that would not fit in the memory budget (:func:`memory_budget`), refused before it starts; its
    message is one line naming the bytes asked for, the budget and the limit it comes from. ``cli`` is the same
    line for the command line (its options, not Python's arguments), where it differs."""

    def __init__(self, message: str, cli: Optional[str] = None):
        super().__init__(message)
        self.cli = cli or message


def full_ndim(x: np.ndarray, ndim: int) -> np.ndarray:
    return x.reshape((1,) * (ndim - x.ndim) + x.shape)


@lru_cache(maxsize=None)
def dependencies(variant: Variant, quantity: str) -> frozenset:
    return frozenset(build_model(variant).closed_form(quantity).free_symbols)


def output_shape(variant, quantity, values, shape) -> Tuple[int, ...]:
    """The shape of one output: the broadcast of the arguments it depends on (1 along the others)."""
    deps = [np.shape(values[s]) for s in dependencies(variant, quantity) if np.ndim(values.get(s))]
    if not deps:
        return (1,) * len(shape)
    return tuple(np.broadcast_shapes(*deps, (1,) * len(shape)))


# --------------------------------------------------------------------------------------------
# The memory budget: the tightest real limit on this process
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sources:
    """Where the limits are read (a test points them at files of its own). ``cgroup``: the process's cgroups
    (``/proc/self/cgroup``); ``cgroup2``: the unified hierarchy's mount (``memory.max`` and ``memory.current`` of
    the process's cgroup and its ancestors); ``cgroup1``: the v1 memory controller's mount
    (``memory.limit_in_bytes`` and ``memory.usage_in_bytes``); ``status``: the process's ``VmSize`` (its address
    space, against ``RLIMIT_AS``); ``meminfo``: ``MemAvailable``. The kernel's documentation names them all
    (Documentation/admin-guide/cgroup-v2.rst, cgroup-v1/memory.rst, filesystems/proc.rst)."""

    cgroup: str = "/proc/self/cgroup"
    cgroup2: str = "/sys/fs/cgroup"
    cgroup1: str = "/sys/fs/cgroup/memory"
    status: str = "/proc/self/status"
    meminfo: str = "/proc/meminfo"


#: The files the budget reads (module-level, so that a test may point every sweep at a fake cgroup).
SOURCES = Sources()
#: The share of the tightest limit's headroom a request may take (the interpreter, the inputs and the
#: allocator's slack need the rest).
HEADROOM = 0.8
#: A v1 cgroup without a limit reports about 2**63 bytes.
_UNLIMITED = 1 << 60


@dataclass(frozen=True)
class Budget:
    """The bytes a request may take (``limit``) and where they come from (``source``: the limit in words)."""

    limit: int
    source: str

    def __str__(self) -> str:
        return f"{_bytes(self.limit)} ({self.source})"


def _read(path: str) -> Optional[str]:
    try:
        with open(path) as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):
        return None


def _number(text: Optional[str]) -> Optional[int]:
    try:
        return int(text.split()[0]) if text else None
    except ValueError:                   # "max": no limit
        return None


def _cgroup_paths(src: Sources) -> Dict[str, str]:
    """The process's cgroup path per hierarchy: ``"2"`` for the unified one, ``"1"`` for v1's memory controller."""
    out = {}
    for line in (_read(src.cgroup) or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            if parts[0] == "0" and parts[1] == "":
                out["2"] = parts[2]
            elif "memory" in parts[1].split(","):
                out["1"] = parts[2]
    return out


def _levels(root: str, path: str) -> List[str]:
    """The directories of a cgroup and its ancestors under a mount (the mount itself last); a path the mount does
    not show (a cgroup namespace) is the mount's own files."""
    parts = [p for p in (path or "/").split("/") if p]
    dirs = [os.path.join(root, *parts[:i]) for i in range(len(parts), -1, -1)]
    return [d for d in dirs if os.path.isdir(d)] or [root]


def _cgroup_headroom(src: Sources) -> Optional[Tuple[int, str]]:
    """``(bytes left, words)`` under the tightest cgroup memory limit (v2, else v1), or None without one."""
    paths = _cgroup_paths(src)
    best = None
    for version, root, limit_file, usage_file in (("2", src.cgroup2, "memory.max", "memory.current"),
                                                  ("1", src.cgroup1, "memory.limit_in_bytes", "memory.usage_in_bytes")):
        if version not in paths and not os.path.exists(os.path.join(root, limit_file)):
            continue
        for d in _levels(root, paths.get(version, "/")):
            limit = _number(_read(os.path.join(d, limit_file)))
            if limit is None or limit >= _UNLIMITED:
                continue
            used = _number(_read(os.path.join(d, usage_file))) or 0
            left = max(0, limit - used)
            if best is None or left < best[0]:
                best = (left, f"the cgroup memory limit: {os.path.join(d, limit_file)} {_bytes(limit)} minus "
                              f"{usage_file} {_bytes(used)}")
        if best is not None:
            return best
    return None


def _address_space_headroom(src: Sources) -> Optional[Tuple[int, str]]:
    """``(bytes left, words)`` under ``RLIMIT_AS`` (``ulimit -v``): the limit minus the address space in use."""
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError, AttributeError):
        return None
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    size = 0
    for line in (_read(src.status) or "").splitlines():
        if line.startswith("VmSize:"):
            size = int(line.split()[1]) * 1024
    return max(0, soft - size), (f"the address-space limit: RLIMIT_AS (ulimit -v) {_bytes(soft)} minus the "
                                 f"{_bytes(size)} in use")


def _available_headroom(src: Sources) -> Tuple[int, str]:
    """``(bytes, words)`` of memory available (``MemAvailable``; else the free physical pages)."""
    for line in (_read(src.meminfo) or "").splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024, f"the memory available: MemAvailable of {src.meminfo}"
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"), "the free physical memory"
    except (ValueError, OSError, AttributeError):
        return 1 << 62, "no limit found"


def memory_budget(max_memory=None, sources: Optional[Sources] = None) -> Budget:
    """The bytes one request (a sweep, a search, a Monte Carlo) may take: ``max_memory`` when given (bytes, a
    number > 0), else :data:`HEADROOM` of the tightest of the cgroup limit's headroom (v2 ``memory.max`` minus
    ``memory.current``, v1 ``memory.limit_in_bytes`` minus ``memory.usage_in_bytes``, of the process's cgroup
    and its ancestors), ``RLIMIT_AS`` minus the address space in use (``VmSize``) and ``MemAvailable``."""
    if max_memory is not None:
        return Budget(check_max_memory(max_memory), "max_memory=")
    src = sources or SOURCES
    found = [h for h in (_cgroup_headroom(src), _address_space_headroom(src)) if h is not None]
    found.append(_available_headroom(src))
    left, words = min(found, key=lambda h: h[0])
    return Budget(int(HEADROOM * left), f"{HEADROOM:.0%} of what is left under {words}")


def check_max_memory(max_memory) -> int:
    """``max_memory=`` as a whole number of bytes (a ``TypeError``/``ValueError`` naming it otherwise)."""
    if isinstance(max_memory, bool) or not isinstance(max_memory, (int, float, np.integer, np.floating)):
        raise TypeError(f"max_memory must be a number of bytes, got {type(max_memory).__name__}")
    if not (math.isfinite(max_memory) and max_memory > 0):
        raise ValueError(f"max_memory must be a finite number of bytes > 0, got {max_memory!r}")
    return int(max_memory)


#: A request below this many bytes is not measured against the limits (reading them costs more than it).
SMALL = 1 << 25


def refuse(need: float, what: str, advice: str, max_memory=None, cli: Optional[Tuple[str, str]] = None) -> None:
    """Raise :class:`SweepTooLarge` before any work when ``need`` bytes exceed :func:`memory_budget`: one line
    naming ``what`` is asked for, the bytes it needs, the budget and the limit it comes from, and ``advice``
    (``cli``: what and advice in the command line's words, where they differ)."""
    if need < SMALL and max_memory is None:
        return
    budget = memory_budget(max_memory)
    if need > budget.limit:
        line = "{} needs about " + _bytes(need) + f", over the memory budget of {budget}; " + "{}"
        raise SweepTooLarge(line.format(what, advice), line.format(*cli) if cli else None)


def refuse_if_too_large(names, out_shapes, shape, masked: bool, max_memory=None, working: int = 0) -> None:
    """Raise :class:`SweepTooLarge` before any work when a sweep's outputs would not fit the memory budget
    (``working``: bytes per configuration the caller allocates besides them)."""
    size = math.prod(shape)
    need = sum(8 * math.prod(out_shapes[n]) for n in names) + working * size
    if masked:
        need += 4 * size                             # the rule codes, the masked and the valid flags
    need += min(GRID_CHUNK_BYTES, 8 * (len(names) + TEMPORARIES) * size)     # the arrays of one chunk
    refuse(need, f"a sweep of {size:,} configurations with {len(names)} output(s)",
           "ask for fewer outputs (outputs=('mfu',)) or a coarser grid, or pass max_memory=", max_memory,
           cli=(f"a sweep of {size:,} configurations", "give fewer values"))


def _bytes(n: float) -> str:
    return quantity(float(n), "B")


def _chunks(shape: Tuple[int, ...], target: int):
    """Index tuples covering ``shape`` in blocks of about ``target`` elements (C order)."""
    if not shape or math.prod(shape) <= target:
        yield tuple(slice(None) for _ in shape)
        return
    k = next(i for i in range(len(shape)) if math.prod(shape[i + 1:]) <= target)
    step = max(1, target // max(1, math.prod(shape[k + 1:])))
    for outer in np.ndindex(*shape[:k]):
        for a in range(0, shape[k], step):
            yield tuple(slice(i, i + 1) for i in outer) + (slice(a, min(a + step, shape[k])),) + \
                tuple(slice(None) for _ in shape[k + 1:])


def _as_float(x):
    return x.astype(np.float64) if isinstance(x, np.ndarray) and x.dtype != np.float64 else x


def _take(x, idx):
    """The part of a broadcastable input that a chunk ``idx`` needs (its size-1 axes kept whole), as float64."""
    if not isinstance(x, np.ndarray):
        return x
    return _as_float(x[tuple(s if n > 1 else slice(None) for s, n in zip(idx, x.shape))])


def chunk_elements(out_shapes, shape, grid: bool) -> int:
    """Configurations per chunk: a flattened sweep in cache-sized chunks (:data:`CHUNK`); a grid whole
    while its full-size arrays fit :data:`GRID_WHOLE_BYTES`, else in chunks of :data:`GRID_CHUNK_BYTES`."""
    if not grid:
        return CHUNK
    size = math.prod(shape)
    full = sum(1 for s in out_shapes.values() if math.prod(s) == size) + TEMPORARIES
    if 8 * full * size <= GRID_WHOLE_BYTES:
        return size
    return max(CHUNK, GRID_CHUNK_BYTES // (8 * full))


def arguments_of(compiled, values, ndim: int) -> list:
    """The compiled function's arguments from ``values``: arrays with ``ndim`` axes, numbers as numpy floats (a
    division by zero or an overflow of one configuration is then numpy's, masked, never Python's exception)."""
    vector = []
    for a in compiled.args:
        v = values[a]
        vector.append(full_ndim(np.asarray(v), ndim) if np.ndim(v) else np.float64(v))
    return vector


def as_floats(vector: list) -> list:
    """The arguments as float64 (what one pass over a whole grid takes)."""
    return [_as_float(x) for x in vector]


def evaluate(compiled, values, names, out_shapes, shape, bad, code, target, vector=None, floated=None):
    """Every output, chunk by chunk, into preallocated arrays of their own shapes.

    Inputs are converted to float64 chunk by chunk (in cache). A chunk holding masked
    configurations is evaluated with valid stand-ins there (no division by zero is ever
    evaluated); a division by zero, an overflow or an invalid operation in a valid
    configuration (an extreme input) masks that configuration. ``vector``: the arguments
    (:func:`arguments_of`), and ``floated`` the same as float64 (:func:`as_floats`), when the caller has them.
    """
    if vector is None:
        vector = arguments_of(compiled, values, len(shape))
    safe = None
    whole = math.prod(shape) <= target
    floats = (floated if floated is not None else as_floats(vector)) if whole else None
    outs: List[Optional[np.ndarray]] = [None] * len(names)
    overflow = None
    for idx in _chunks(shape, target):
        part_in = list(floats) if whole else [_take(x, idx) for x in vector]
        part_bad = None if bad is None else bad[idx]
        if part_bad is not None and part_bad.any():
            if safe is None:
                safe = {i: _stand_in(a, values) for i, a in enumerate(compiled.args)
                        if isinstance(vector[i], np.ndarray)}
            for i, s in safe.items():
                part_in[i] = np.where(part_bad, s, part_in[i])
        try:
            with np.errstate(divide="raise", invalid="raise", over="raise"):
                part = compiled.fn(*part_in)
        except FloatingPointError:
            with np.errstate(all="ignore"):
                part = compiled.fn(*part_in)
            cshape = tuple(len(range(*s.indices(n))) for s, n in zip(idx, shape))
            finite = np.ones(cshape, dtype=bool)
            for x in part:
                finite &= np.broadcast_to(np.isfinite(np.asarray(x, dtype=float)), cshape)
            if overflow is None:
                overflow = np.zeros(shape, dtype=bool)
            overflow[idx] |= ~finite
        if whole:
            outs = [np.asarray(x) for x in part]
            break
        for j, x in enumerate(part):
            out = outs[j]
            if out is None:
                x = np.asarray(x)
                out = outs[j] = np.empty(out_shapes[names[j]], dtype=bool if x.dtype == bool else np.float64)
            out[tuple(s if n > 1 else slice(None) for s, n in zip(idx, out.shape))] = x
    if overflow is not None and overflow.any():
        if bad is not None:
            overflow &= ~bad
        outs = _again_wide(compiled, vector, names, out_shapes, outs, overflow)
        code = np.zeros(shape, dtype=np.int16) if code is None else code
        code[(code == 0) & overflow] = OVERFLOW_CODE
    return outs, code


#: At most this many configurations of a sweep are evaluated again one by one where float64 overflows (each takes
#: a millisecond or so); beyond them, the rest stay masked as overflowing.
MAX_WIDE = 20_000


def _again_wide(compiled, vector, names, out_shapes, outs, overflow):
    """The configurations where float64 overflowed part-way, evaluated again one by one as ``solve()`` evaluates
    them (:func:`mlsysim_sym.wide.evaluate`: a float's precision and an unbounded exponent); where every output
    comes back finite, it is written and the configuration unmasked (``overflow`` is cleared there, in place)."""
    from .compile import compile_quantities
    from .wide import evaluate as wide_evaluate

    scalar = compile_quantities(compiled.variant, compiled.names, "math")
    if scalar.args != compiled.args:
        return outs
    outs = [np.array(np.broadcast_to(o, out_shapes[n]), dtype=bool if np.asarray(o).dtype == bool else np.float64)
            for o, n in zip(outs, names)]
    for ix in map(tuple, np.argwhere(overflow)[:MAX_WIDE]):
        args = [x.item() if np.ndim(x) == 0 else x[tuple(k if n > 1 else 0 for k, n in zip(ix, x.shape))].item()
                for x in vector]
        try:
            values = wide_evaluate(scalar.fn, args)
        except (ArithmeticError, ValueError):
            continue
        if not all(np.isfinite(float(v)) for v in values):
            continue
        for o, v in zip(outs, values):
            o[tuple(k if n > 1 else 0 for k, n in zip(ix, o.shape))] = v
        overflow[ix] = False
    return outs


@lru_cache(maxsize=1)
def _keyword_params() -> Dict[sp.Symbol, object]:
    """Symbol -> the parameter of the ``solve()`` keyword that sets it."""
    return {p.symbol: p for p in keywords().values()}


def _stand_in(a: sp.Symbol, values) -> float:
    """A valid value for masked configurations: ``solve()``'s default, or the first valid entry."""
    kw = _keyword_params()
    if a in kw:
        return float(kw[a].default)
    v = np.asarray(values[a], dtype=float).ravel()
    good = v[np.isfinite(v) & (v > 0)]
    return float(good[0]) if good.size else 1.0
