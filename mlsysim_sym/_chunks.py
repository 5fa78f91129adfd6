"""A sweep's evaluation in chunks: how large each output is, whether the outputs fit in memory, and the
compiled function run chunk by chunk into preallocated arrays (masked configurations evaluated with valid
stand-ins, an overflow masked where it happens)."""
from __future__ import annotations

import math
import os
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
    """A sweep whose outputs would not fit in the memory available."""


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


def _available_memory() -> int:
    """Bytes of memory available to this process (``MemAvailable``), or the physical memory."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def refuse_if_too_large(names, out_shapes, shape, masked: bool) -> None:
    """Raise :class:`SweepTooLarge` before any work when the outputs would not fit in memory."""
    size = math.prod(shape)
    need = sum(8 * math.prod(out_shapes[n]) for n in names)
    if masked:
        need += 4 * size                             # the rule codes, the masked and the valid flags
    if need < 1 << 28:                               # a quarter of a GB: no machine this runs on lacks it
        return
    need += GRID_CHUNK_BYTES                         # the arrays of one chunk
    have = _available_memory()
    if need > 0.8 * have:
        raise SweepTooLarge(
            f"a sweep of {size:,} configurations with {len(names)} output(s) needs about {_bytes(need)}, "
            f"but only {_bytes(have)} of memory is available; ask for fewer outputs (outputs=('mfu',)) or a "
            f"coarser grid")


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
    """The compiled function's arguments from ``values``: arrays with ``ndim`` axes, numbers as floats."""
    vector = []
    for a in compiled.args:
        v = values[a]
        vector.append(full_ndim(np.asarray(v), ndim) if np.ndim(v) else float(v))
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
        code = np.zeros(shape, dtype=np.int16) if code is None else code
        code[(code == 0) & overflow] = OVERFLOW_CODE
    return outs, code


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
