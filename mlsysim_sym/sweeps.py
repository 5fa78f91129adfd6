"""Vectorized sweeps: any ``solve()`` argument or hardware/workload field as an array.

``sweep(model, fleet, tp_size=[1, 2, 4, 8], batch_size=[256, 512], ...)`` evaluates
the compiled numpy form of the model (:mod:`mlsysim_sym.compile`). With
``grid=True`` (the default) each swept argument gets an axis of its own and the
result has the outer-product shape; subexpressions that depend on few axes are
computed on small arrays (broadcasting), which is what makes grids cheap. With
``grid=False`` the arrays are broadcast against each other as given (for
lists of random configurations).

Invalid combinations are masked, never raised: ``result.valid`` is False and
``result.reason`` holds the message ``solve()`` would raise there (the rules of
:mod:`mlsysim_sym.inputs`, in mlsysim's order, formatted with that
configuration's values); numeric outputs are NaN there. A sweep also masks what
``solve()`` accepts but cannot be meant: non-finite values, non-positive
bandwidths, capacities and sizes, negative latencies, fractional counts, and any
configuration whose result overflows. Warnings ``solve()`` would emit (batch
below dp, precision fallback) are not emitted in a sweep.

Large grids are evaluated in chunks into preallocated outputs; an output that
depends on few axes stays that small (a read-only broadcast view). A sweep whose
outputs cannot fit in the memory available is refused before any work, with the
size it would need.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import sympy as sp

from . import bounds
from .compile import compile_quantities
from .display import html_table, quantity, shorten, text_table, wrap
from .inputs import (FACTS, FLAG_KEYWORDS, KEYWORDS, PRECISION_BYTES, RAW, SOLVE_DEFAULTS, as_fleet, as_workload,
                     compiled_rules, facts, is_count, static_values)
from .model import Variant, build_model
from .solver import OUTPUTS, SWEPT, describe, output_unit
from .symbols import Kind, Origin, by_argument, keywords, sym

#: Elements per chunk of a flattened sweep (cache-sized: ~20 % faster than one pass over 10^6).
CHUNK = 16384
#: Elements per chunk of a grid (large: its subexpressions on few axes are small anyway).
GRID_CHUNK = 1 << 20

#: The keywords of ``solve()`` a sweep takes (``topology_override`` is never read).
DEFAULTS = {k: v for k, v in SOLVE_DEFAULTS.items() if k != "topology_override"}


def arguments() -> Dict[str, sp.Symbol]:
    """Every argument a sweep takes besides ``precision``: ``solve()`` keywords and record fields
    (as :data:`mlsysim_sym.symbols.PARAMS` names them), with the symbol each one sets."""
    return {name: p.symbol for name, p in by_argument().items() if p.kind is not Kind.CONSTANT}


def resolve_name(name: str, caller: str = "sweep") -> sp.Symbol:
    """A ``solve()`` keyword or record field name -> its symbol (a ``TypeError`` lists the allowed ones)."""
    table = arguments()
    if name in table:
        return table[name]
    allowed = sorted(set(table) | {"precision"})
    raise TypeError(f"{caller}() got an unexpected argument {name!r}; allowed: {', '.join(allowed)}")


class SweepTooLarge(MemoryError):
    """A sweep whose outputs would not fit in the memory available."""


@dataclass
class SweepResult:
    """Named arrays of a sweep, all of one ``shape``.

    ``result["step_latency_total"]`` or ``result.step_latency_total``; node-profile
    outputs as ``result["node_profile.memory_footprint"]``. ``axes`` maps each
    swept argument to its values (grid sweeps). ``valid`` is False where a
    configuration is masked and ``reason`` says why (``solve()``'s message).
    """

    values: Dict[str, np.ndarray]
    valid: np.ndarray
    reason_code: np.ndarray
    axes: Dict[str, np.ndarray] = field(default_factory=dict)
    configuration: str = ""
    _explain: Optional[object] = field(default=None, repr=False)
    _reasons: Optional[Tuple[np.ndarray, Tuple[str, ...]]] = field(default=None, repr=False)

    @property
    def shape(self) -> Tuple[int, ...]:
        return self.valid.shape

    def _messages(self):
        if self._reasons is None:
            self._reasons = self._explain(self.reason_code) if self._explain else (
                np.zeros(self.shape, dtype=np.int32), ("",))
        return self._reasons

    @property
    def reason(self) -> np.ndarray:
        """Why each configuration is masked ('' where valid): ``solve()``'s message for it."""
        codes, texts = self._messages()
        return np.asarray(texts, dtype=object)[codes]

    @property
    def reasons(self) -> Tuple[str, ...]:
        """The distinct messages of :attr:`reason` ('' first)."""
        return self._messages()[1]

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self.values[name]
        except KeyError:
            raise KeyError(f"no output {name!r}; outputs: {', '.join(self.values)}") from None

    def __getattr__(self, name: str) -> np.ndarray:
        if name.startswith("_") or name not in self.__dict__.get("values", {}):
            raise AttributeError(name)
        return self.values[name]

    def __len__(self) -> int:
        return int(self.valid.size)

    def _summary(self) -> List[Tuple[str, str, str, str]]:
        ok = self.valid
        rows = []
        for n, x in self.values.items():
            v = np.asarray(x)[np.broadcast_to(ok, x.shape)] if ok.any() else np.array([])
            unit = output_unit(n)
            if v.size == 0 or v.dtype == bool:
                cells = ("-", "-", "-") if v.size == 0 else (f"{int(v.sum())} of {v.size} true", "", "")
            else:
                lo, hi, mid = float(v.min()), float(v.max()), float(np.median(v))
                cells = tuple(quantity(t, unit) for t in (lo, mid, hi))
            rows.append((n, *cells))
        return rows

    def _head(self) -> str:
        n, ok = self.valid.size, int(np.count_nonzero(self.valid))
        axes = ", ".join(f"{k} ({len(v)})" for k, v in self.axes.items())
        return (f"SweepResult: shape {self.shape}, {ok:,} of {n:,} configurations valid"
                + (f"; axes {axes}" if axes else ""))

    def __repr__(self) -> str:
        lines = wrap(self._head(), "") + wrap(self.configuration or "a sweep")
        lines += text_table(self._summary(), ("output (valid configurations)", "min", "median", "max"), indent="  ")
        codes, texts = self._messages()
        if len(texts) > 1:
            counts = np.bincount(np.ravel(codes), minlength=len(texts))
            lines.append("  masked:")
            for k in np.argsort(-counts[1:])[:3] + 1:
                lines.append(shorten(f"    {counts[k]:,} x {texts[k]}"))
            if len(texts) > 4:
                lines.append(f"    ... and {len(texts) - 4} other reasons (see .reason)")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return html_table(self._summary(), ("output", "min", "median", "max"), caption=self._head())


def _is_swept(v) -> bool:
    if isinstance(v, np.ndarray):
        return v.ndim > 0
    return isinstance(v, (list, tuple, range))


def sweep(model, fleet, *, grid: bool = True, outputs: Optional[Sequence[str]] = None, **kwargs) -> SweepResult:
    """Evaluate the model over arrays of arguments (see the module docstring).

    Parameters
    ----------
    model, fleet
        As in :meth:`mlsysim_sym.DistributedModel.solve` (catalog names, records, mlsysim objects).
    grid
        True: each array argument is an axis of its own (outer product). False: arrays broadcast together.
    outputs
        Result names to compute (default: all of :data:`mlsysim_sym.solver.OUTPUTS`).
    **kwargs
        Any ``solve()`` keyword or workload/hardware field (``fabric_bandwidth``, ``memory_capacity``,
        ``peak_flops``, ... see :func:`arguments`), scalar or array-like. ``precision`` may be a list of strings.

    Raises
    ------
    SweepTooLarge
        (a ``MemoryError``) when the requested outputs would not fit in the memory available; ask for
        fewer ``outputs=`` or a coarser grid.
    """
    w, f = as_workload(model), as_fleet(fleet)
    if isinstance(outputs, str):
        outputs = (outputs,)
    names = tuple(outputs) if outputs is not None else tuple(OUTPUTS)
    unknown = [n for n in names if n not in OUTPUTS]
    if unknown:
        raise KeyError(f"unknown outputs {unknown}; outputs: {', '.join(OUTPUTS)}")
    for k in kwargs:
        if k != "precision":
            resolve_name(k)
    args = {**DEFAULTS, **kwargs}

    swept = [k for k, v in kwargs.items() if _is_swept(v)]  # axes in the caller's order
    axes = {k: np.asarray(args[k]) for k in swept}
    if grid:
        shape = tuple(len(axes[k]) for k in swept)
        given = {k: np.asarray(args[k]).reshape([-1 if i == j else 1 for j in range(len(swept))])
                 for i, k in enumerate(swept)}
    else:
        shape = tuple(np.broadcast_shapes(*(np.shape(args[k]) for k in swept))) if swept else ()
        given = {k: _full_ndim(np.asarray(args[k]), len(shape)) for k in swept}
    given = {k: given.get(k, v) for k, v in args.items()}

    # the precision: its facts for the rules, and the values that depend on it
    precision = np.asarray(given["precision"], dtype=object)
    flags = np.vectorize(lambda p: facts(w, f, p)["flags"], otypes=[bool, bool, bool])(precision) \
        if precision.ndim else tuple(np.asarray(x) for x in facts(w, f, precision.item())["flags"])
    keys = np.vectorize(lambda p: p.lower() if isinstance(p, str) and p.lower() in PRECISION_BYTES else "fp16",
                        otypes=[object])(precision)
    distinct = sorted(set(np.ravel(keys)))
    statics = {k: static_values(w, f, k) for k in distinct}
    base_variant, base = statics[distinct[0]]
    variant = Variant(base_variant.family, any(v.explicit_weights for v, _ in statics.values()),
                      base_variant.sram, base_variant.flash)
    values: Dict[sp.Symbol, object] = dict(base)
    if len(distinct) > 1:
        for s in (sym.bpp, sym.R_peak, sym.F, sym.W_lw, sym.W_g):
            if values.get(s) is not None:
                table = {k: statics[k][1][s] for k in distinct}
                values[s] = np.vectorize(lambda k: float(table[k]), otypes=[float])(keys)
    table = arguments()
    kw = keywords()
    for k, v in given.items():
        if k == "precision":
            continue
        if k in FLAG_KEYWORDS:
            v = np.asarray(v).astype(bool).astype(np.int8) if np.ndim(v) else (1 if v else 0)
        values[table[k]] = v
    if not w.is_transformer:     # as solve(): seq_len is not read without TP or EP
        values[sym.s] = np.where((np.asarray(values[sym.tp]) == 1) & (np.asarray(values[sym.ep]) == 1), 0,
                                 values[sym.s])
        if not np.ndim(values[sym.s]):
            values[sym.s] = values[sym.s].item()

    # the spill is reported only where the state does not fit (None in solve(), NaN here)
    spill = "node_profile.offload_spill_bytes"
    computed = names + (("node_profile.feasible",) if spill in names and "node_profile.feasible" not in names else ())
    compiled = compile_quantities(variant, tuple(OUTPUTS[n] for n in computed), "numpy")
    for a in compiled.args:
        if values.get(a) is None:
            p = by_argument()
            name = next((n for n, q in p.items() if q.symbol == a), a.name)
            raise ValueError(f"{name} has no value for this workload or fleet (None); pass it explicitly")

    rules = compiled_rules(variant, "sweep", ())
    broken = _broken_rules(rules, values, flags, shape)
    masked = bool(broken)
    out_shapes = {n: shape if masked else _output_shape(variant, OUTPUTS[n], values, shape) for n in computed}
    _refuse_if_too_large(computed, out_shapes, shape, masked)
    code = _codes(broken, shape) if masked else None
    bad = code != 0 if code is not None else None
    out, code = _evaluate(compiled, values, computed, out_shapes, shape, bad, code, grid or len(shape) != 1)
    bad = code != 0 if code is not None else None
    out = dict(zip(computed, out))
    if spill in names:
        out[spill] = np.where(np.asarray(out["node_profile.feasible"], dtype=bool), np.nan, out[spill])
    result_values = {}
    for n in names:
        x = out[n]
        if n == "node_profile.feasible":
            x = np.asarray(x, dtype=bool)
        if bad is not None:
            fill = False if x.dtype == bool else np.nan
            if x.shape == shape and x.flags.writeable and x.base is None:
                x[bad] = fill                               # in place: no second full-size copy
            else:
                x = np.where(bad, fill, x)
        result_values[n] = np.broadcast_to(x, shape)    # a read-only view where an output depends on few axes
    valid = np.broadcast_to(np.True_, shape) if bad is None else ~bad
    codes = np.broadcast_to(np.int16(0), shape) if code is None else code
    explain = _Explainer(rules, given, values, flags, w, f, shape)
    config = describe(w, f, given["precision"] if precision.ndim == 0 else SWEPT,
                      [(SWEPT if k in swept else given[k]) for k in KEYWORDS])
    return SweepResult(result_values, valid, codes, {k: axes[k] for k in swept} if grid else {}, config, explain)


def _full_ndim(x: np.ndarray, ndim: int) -> np.ndarray:
    return x.reshape((1,) * (ndim - x.ndim) + x.shape)


# --------------------------------------------------------------------------------------------
# Checks: the first broken rule per configuration
# --------------------------------------------------------------------------------------------
def _raw_values(rules, values: Mapping[sp.Symbol, object], flags) -> Dict[sp.Symbol, object]:
    """Raw symbol -> value (as given: an integer array stays integer) for the rules' arguments."""
    raw = {RAW[s]: v for s, v in values.items() if s in RAW}
    raw.update(zip(FACTS, flags))
    return {a: (1.0 if raw.get(a) is None else raw[a]) for a in rules.args}   # no rule reads an absent field


def _box(v) -> object:
    """The bounds of one argument's values (a :class:`~mlsysim_sym.bounds.Box`; True/False/None for a fact)."""
    a = np.asarray(v)
    if a.dtype == bool:
        return bool(a.all()) if a.all() or not a.any() else None
    if a.dtype.kind not in "iuf":
        return bounds.ANY
    lo, hi = (float(a.min()), float(a.max())) if a.ndim else (float(a), float(a))
    whole = a.dtype.kind in "iu" or (lo == hi and float(lo).is_integer())
    return bounds.Box(lo, hi, whole)


def _broken_rules(rules, values, flags, shape) -> List[Tuple[int, np.ndarray]]:
    """``(index + 1, mask)`` of every error rule some configuration breaks, in order; each mask in
    its own (broadcastable, often small) shape.

    Each rule is first bounded over the ranges of the arguments (:mod:`mlsysim_sym.bounds`):
    a rule no configuration can break costs nothing; the others are evaluated elementwise.
    """
    raw = _raw_values(rules, values, flags)
    env = {a: _box(v) for a, v in raw.items()}
    ev = bounds.evaluator(env)
    out = []
    for j, i in enumerate(rules.errors):
        if bounds.truth(rules.conditions[i], env, ev) is False:
            continue
        args, fn = rules.array(i)
        with np.errstate(all="ignore"):
            b = np.asarray(fn(*(raw[a] for a in args))[0], dtype=bool)
        if b.any():
            out.append((j + 1, b))
    return out


def _codes(broken: List[Tuple[int, np.ndarray]], shape) -> np.ndarray:
    """The first broken rule per configuration (its index + 1; 0 where none is)."""
    code = np.zeros(shape, dtype=np.int16)
    for c, b in broken:
        code[(code == 0) & np.broadcast_to(b, shape)] = c
    return code


class _Explainer:
    """Formats the messages of masked configurations on first use (``SweepResult.reason``)."""

    def __init__(self, rules, given, values, flags, w, f, shape):
        self.rules, self.given, self.values, self.flags = rules, given, values, flags
        self.w, self.f, self.shape = w, f, shape

    def __call__(self, code: np.ndarray):
        texts: List[str] = [""]
        out = np.zeros(self.shape, dtype=np.int32)
        errors = self.rules.errors
        for c in np.unique(code):
            if c == 0:
                continue
            where = np.nonzero(code == c)
            if c == _OVERFLOW:
                rows, render = [()] * len(where[0]), lambda row: OVERFLOW
            else:
                i = errors[int(c) - 1]
                fields = self._fields(i, self.rules.rules[i], where)
                rows = list(zip(*fields.values())) if fields else [()] * len(where[0])
                render = lambda row, r=self.rules.rules[i], names=tuple(fields): r.message.format(  # noqa: E731
                    **dict(zip(names, row)))
            index: Dict[tuple, int] = {}
            ks = np.empty(len(rows), dtype=np.int32)
            for j, row in enumerate(rows):
                k = index.get(row)
                if k is None:
                    text = render(row)
                    k = index[row] = texts.index(text) if text in texts else len(texts)
                    if k == len(texts):
                        texts.append(text)
                ks[j] = k
            out[where] = ks
        return out, tuple(texts)

    def _fields(self, i, rule, where) -> Dict[str, List[object]]:
        """Each message field's values at the masked positions ``where`` (as given, or computed)."""
        def at(v):
            a = np.broadcast_to(np.asarray(v, dtype=object) if isinstance(v, str) else v, self.shape)
            return [x.item() if hasattr(x, "item") else x for x in a[where]]

        fields: Dict[str, List[object]] = {}
        names = _field_names(rule.message)
        for name in names:
            if name in self.given:
                fields[name] = at(self.given[name])
            elif name == "precision_type":
                fields[name] = [type(p).__name__ for p in at(self.given["precision"])]
            elif name in ("accelerator", "available", "precision_key"):
                fields[name] = [facts(self.w, self.f, p)[name] for p in at(self.given["precision"])]
        computed = [n for n in names if n not in fields]
        if computed:
            sub = {RAW[s]: (np.broadcast_to(v, self.shape)[where] if np.ndim(v) else v)
                   for s, v in self.values.items() if s in RAW and v is not None}
            sub.update({FACTS[k]: np.broadcast_to(x, self.shape)[where] for k, x in enumerate(self.flags)})
            got = self.rules.fields(i, sub, "numpy")
            n = len(where[0])
            for name in computed:
                col = np.broadcast_to(got[name], (n,))
                fields[name] = [_plain(x, is_count(name)) for x in col]
        return fields


def _plain(x, count: bool):
    """A numpy number as the Python number a message shows (counts as ints)."""
    x = x.item() if hasattr(x, "item") else x
    return int(x) if count and isinstance(x, float) and x.is_integer() and abs(x) < 2 ** 53 else x


OVERFLOW = "the result overflows or divides by zero (an extreme input)"


def _field_names(message: str) -> List[str]:
    import string

    return [f for _, f, _, _ in string.Formatter().parse(message) if f]


# --------------------------------------------------------------------------------------------
# Evaluation in chunks
# --------------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _dependencies(variant: Variant, quantity: str) -> frozenset:
    return frozenset(build_model(variant).closed_form(quantity).free_symbols)


def _output_shape(variant, quantity, values, shape) -> Tuple[int, ...]:
    """The shape of one output: the broadcast of the arguments it depends on (1 along the others)."""
    deps = [np.shape(values[s]) for s in _dependencies(variant, quantity) if np.ndim(values.get(s))]
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


def _refuse_if_too_large(names, out_shapes, shape, masked: bool) -> None:
    """Raise :class:`SweepTooLarge` before any work when the outputs would not fit in memory."""
    size = math.prod(shape)
    need = sum(8 * math.prod(out_shapes[n]) for n in names)
    if masked:
        need += 4 * size                             # the rule codes, the masked and the valid flags
    need += 40 * 8 * min(size, GRID_CHUNK)           # the temporaries of one chunk
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


def _take(x, idx):
    """The part of a broadcastable input that a chunk ``idx`` needs (its size-1 axes kept whole), as float64."""
    if not isinstance(x, np.ndarray):
        return x
    part = x[tuple(s if n > 1 else slice(None) for s, n in zip(idx, x.shape))]
    return part if part.dtype == np.float64 else part.astype(np.float64)


def _evaluate(compiled, values, names, out_shapes, shape, bad, code, grid):
    """Every output, chunk by chunk, into preallocated arrays of their own shapes.

    Inputs are converted to float64 chunk by chunk (in cache). A chunk holding masked
    configurations is evaluated with valid stand-ins there (no division by zero is ever
    evaluated); a division by zero, an overflow or an invalid operation in a valid
    configuration (an extreme input) masks that configuration.
    """
    ndim = len(shape)
    vector = []
    for a in compiled.args:
        v = values[a]
        vector.append(_full_ndim(np.asarray(v), ndim) if np.ndim(v) else float(v))
    safe = {i: _stand_in(a, values) for i, a in enumerate(compiled.args) if isinstance(vector[i], np.ndarray)}
    target = GRID_CHUNK if grid else CHUNK
    whole = math.prod(shape) <= target
    outs: List[Optional[np.ndarray]] = [None] * len(names)
    overflow = None
    for idx in _chunks(shape, target):
        part_in = [_take(x, idx) for x in vector]
        part_bad = None if bad is None else bad[idx]
        if part_bad is not None and part_bad.any():
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
        code[(code == 0) & overflow] = _OVERFLOW
    return outs, code


#: The code of "the result overflows" (after every rule's code).
_OVERFLOW = 32000


def _stand_in(a: sp.Symbol, values) -> float:
    """A valid value for masked configurations: ``solve()``'s default, or the first valid entry."""
    kw = {p.symbol: p for p in keywords().values()}
    if a in kw:
        d = kw[a].default
        return float(1 if d is True else 0 if d is False else d)
    v = np.asarray(values[a], dtype=float).ravel()
    good = v[np.isfinite(v) & (v > 0)]
    return float(good[0]) if good.size else 1.0
