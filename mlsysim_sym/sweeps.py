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

import copy
import math
import os
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import sympy as sp

from . import bounds
from .compile import compile_quantities
from .display import html_table, quantity, shorten, text_table, wrap
from .inputs import (EXTENDED_DEFAULTS, EXTENDED_FLAGS, FACTS, FLAG_KEYWORDS, KEYWORDS, PRECISION_BYTES, RAW,
                     SOLVE_DEFAULTS, as_fleet, as_workload, check_fidelity, compiled_rules, facts, is_count,
                     seq_len_unread, static_values)
from .mechanisms import normalize
from .model import Variant, build_model
from .solver import EXTENDED_OUTPUTS, OUTPUTS, SWEPT, describe, output_unit
from .symbols import Kind, by_argument, extended_keywords, keywords, sym

#: Elements per chunk of a flattened sweep (cache-sized: ~20 % faster than one pass over 10^6).
CHUNK = 16384
#: A grid is evaluated whole while the full-size arrays of one evaluation (its outputs and about
#: ``TEMPORARIES`` intermediate arrays) take less than this many bytes; beyond, in chunks of about
#: ``GRID_CHUNK_BYTES`` (subexpressions that depend on few axes stay small either way).
GRID_WHOLE_BYTES = 1 << 30
GRID_CHUNK_BYTES = 1 << 28
TEMPORARIES = 16

#: The keywords of ``solve()`` a sweep takes (``topology_override`` is never read).
DEFAULTS = {k: v for k, v in SOLVE_DEFAULTS.items() if k != "topology_override"}


def arguments() -> Dict[str, sp.Symbol]:
    """Every argument a sweep takes besides ``precision``: ``solve()`` keywords and record fields
    (as :data:`mlsysim_sym.symbols.PARAMS` names them), with the symbol each one sets."""
    return dict(_arguments())


@lru_cache(maxsize=1)
def _arguments() -> Dict[str, sp.Symbol]:
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
        everything = ok.strides == (0,) * ok.ndim and ok.size and bool(ok.flat[0])     # nothing masked
        rows = []
        for n, x in self.values.items():
            if everything:          # the values themselves (an output on few axes: its small array)
                v = x.base if x.base is not None and x.strides != x.base.strides else x
                v = np.asarray(v)
            else:
                v = np.asarray(x)[np.broadcast_to(ok, x.shape)] if ok.any() else np.array([])
            if v.dtype.kind == "f":
                v = v[~np.isnan(v)]         # the spill is NaN where the state fits
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
        examples, rules = self._explain.examples(self.reason_code) if self._explain else ([], 0)
        if examples:
            lines.append("  masked (rule: configurations, e.g.):")
            for count, text in examples:
                lines.append(shorten(f"    {count:,} x {text}"))
            if rules > len(examples):
                lines.append(f"    ... and {rules - len(examples)} other rule(s) (see .reason)")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return html_table(self._summary(), ("output", "min", "median", "max"), caption=self._head())

    def to_dict(self) -> Dict[str, object]:
        """The swept arguments and every output as nested lists of the full shape (``None`` where a
        configuration is masked or an output is undefined), with ``valid`` and ``reason``: plain
        Python values, so ``json.dumps`` takes it."""
        def plain(x):
            x = np.broadcast_to(np.asarray(x), self.shape)
            if x.dtype.kind == "f":
                x = np.where(np.isnan(x) | ~np.broadcast_to(self.valid, self.shape), None, x.astype(object))
            return x.tolist()
        return {"shape": list(self.shape), "swept": {k: np.asarray(v).tolist() for k, v in self.axes.items()},
                "outputs": {n: plain(x) for n, x in self.values.items()},
                "valid": np.broadcast_to(self.valid, self.shape).tolist(),
                "reason": np.broadcast_to(self.reason, self.shape).tolist()}

    def table(self, output: str = "mfu", limit: int = 200) -> str:
        """One output over the grid, for a terminal: a column per configuration of one swept axis, a
        grid for two (rows the first axis), the summary (``repr``) otherwise or beyond ``limit``
        configurations; masked configurations are ``-``, with their reasons below."""
        x, unit = np.broadcast_to(self[output], self.shape), output_unit(output)
        ok = np.broadcast_to(self.valid, self.shape)
        axes = [(k, np.asarray(v)) for k, v in self.axes.items()]
        if len(axes) not in (1, 2) or x.size > limit or x.ndim != len(axes):
            return repr(self)
        fits = np.broadcast_to(self.values.get("node_profile.feasible", True), self.shape)
        cell = lambda i: (quantity(float(x[i]), unit) + ("" if fits[i] else " *")) if ok[i] else "-"  # noqa: E731
        if len(axes) == 1:
            (name, v), = axes
            rows = [(_value_text(v[i]), cell((i,))) for i in range(len(v))]
            lines = text_table(rows, (name, output), indent="  ")
        else:
            (n0, v0), (n1, v1) = axes
            rows = [(_value_text(v0[i]),) + tuple(cell((i, j)) for j in range(len(v1))) for i in range(len(v0))]
            lines = [f"  {output} by {n0} (rows) and {n1} (columns)"]
            lines += text_table(rows, (f"{n0} \\ {n1}",) + tuple(_value_text(a) for a in v1), indent="  ")
        if not np.all(fits[ok]):
            lines.append("  * does not fit in accelerator memory (spills to the host)")
        examples, rules = self._explain.examples(self.reason_code) if self._explain else ([], 0)
        if examples:
            lines.append("  - masked:")
            lines += [shorten(f"    {count:,} x {text}") for count, text in examples]
        return "\n".join(lines)

    def plot(self, path=None, output: str = "mfu", ax=None):
        """A line chart of ``output`` (one swept argument) or a heatmap (two), masked configurations
        marked (:func:`mlsysim_sym.plot.sweep_chart`; needs matplotlib). Saves a PNG at ``path``."""
        # display hook: the pictures sit above the results (and need matplotlib)
        from .plot import sweep_chart
        return sweep_chart(self, output=output, path=path, ax=ax)


def _value_text(v) -> str:
    v = v.item() if hasattr(v, "item") else v
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return str(v)


@dataclass
class Configurations:
    """The configurations of a sweep: every parameter's value (scalars, or arrays that broadcast to
    ``shape``), the arguments as given (for messages), the precision facts of the rules."""

    variant: Variant
    values: Dict[sp.Symbol, object]
    given: Dict[str, object]
    shape: Tuple[int, ...]
    flags: Tuple[object, ...]
    swept: List[str]
    axes: Dict[str, np.ndarray]


def configurations(w, f, grid: bool, kwargs: Mapping[str, object], caller: str = "sweep") -> Configurations:
    """The parameter values of the configurations ``kwargs`` describe (``solve()`` keywords and record
    fields, scalars or arrays), lowered as ``solve()`` lowers one (flags 0/1, ``seq_len`` unread
    without TP or EP off transformers); with ``grid`` each array is an axis of its own."""
    kwargs = dict(kwargs)
    model = {k: kwargs.pop(k) for k in ("fidelity", "without") if k in kwargs}
    for k in kwargs:
        if k != "precision":
            resolve_name(k, caller)
    check_fidelity({**model, **kwargs})
    fidelity = model.get("fidelity", "mlsysim")
    without = normalize(model.get("without", ()))
    defaults = {**DEFAULTS, **{k: p.default for k, p in extended_keywords().items()}} if fidelity == "extended" \
        else DEFAULTS
    args = {**defaults, **kwargs}
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
    key_of = (lambda p: p.lower() if isinstance(p, str) and p.lower() in PRECISION_BYTES else "fp16")
    keys = np.vectorize(key_of, otypes=[object])(precision) if precision.ndim else np.asarray(key_of(precision.item()),
                                                                                               dtype=object)
    distinct = sorted(set(np.ravel(keys)))
    statics = {k: static_values(w, f, k) for k in distinct}
    base_variant, base = statics[distinct[0]]
    variant = Variant(base_variant.family, any(v.explicit_weights for v, _ in statics.values()),
                      base_variant.sram, base_variant.flash, fidelity, without)
    values: Dict[sp.Symbol, object] = dict(base)
    for s, v in base.items():           # the parameters the precision changes become arrays over it
        if v is not None and any(statics[k][1][s] != v for k in distinct):
            table = {k: statics[k][1][s] for k in distinct}
            values[s] = np.vectorize(lambda k: float(table[k]), otypes=[float])(keys)
    table = arguments()
    for k, v in given.items():
        if k == "precision":
            continue
        if k in FLAG_KEYWORDS or k in EXTENDED_FLAGS:
            v = np.asarray(v).astype(bool).astype(np.int8) if np.ndim(v) else (1 if v else 0)
        elif isinstance(v, np.ndarray) and v.dtype.kind == "O":
            v = _floats(v)                       # Python integers too large for int64
        elif isinstance(v, int) and not isinstance(v, bool) and abs(v) > 1e308:
            v = math.inf if v > 0 else -math.inf  # beyond the float range: masked as not finite
        values[table[k]] = v
    unread = seq_len_unread(w.is_transformer, np.asarray(values[sym.tp]), np.asarray(values[sym.ep]))
    if np.any(unread):           # as solve(): seq_len is not read without TP or EP off transformers
        s_ = np.where(unread, 0, values[sym.s])
        values[sym.s] = s_ if np.ndim(s_) else s_.item()
    if model:
        model = {"fidelity": fidelity, "without": without}
    return Configurations(variant, values, {**given, **model}, shape, flags, swept, axes)


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
    c = configurations(w, f, grid, kwargs)
    variant, values, given, shape, flags = c.variant, c.values, c.given, c.shape, c.flags
    # the extended model's own outputs too (those its mechanisms give for this workload)
    table = dict(OUTPUTS)
    if variant.fidelity == "extended":
        model = build_model(variant)
        table.update({k: n for k, n in EXTENDED_OUTPUTS.items() if n in model})
    names = tuple(outputs) if outputs is not None else tuple(OUTPUTS)
    unknown = [n for n in names if n not in table]
    if unknown:
        raise KeyError(f"unknown outputs {unknown}; outputs: {', '.join(table)}")

    # the spill is reported only where the state does not fit (None in solve(), NaN here)
    spill = "node_profile.offload_spill_bytes"
    computed = names + (("node_profile.feasible",) if spill in names and "node_profile.feasible" not in names else ())
    compiled = compile_quantities(variant, tuple(table[n] for n in computed), "numpy")
    for a in compiled.args:
        if values.get(a) is None:
            name = RAW[a].name if a in RAW else a.name
            raise ValueError(f"{name} has no value for this workload or fleet (None); pass it explicitly")

    rules = compiled_rules(variant, "sweep", ())
    raw, candidates = _screen(rules, values, flags)          # the rules some configuration may break
    size = math.prod(shape)
    # an output's own shape matters only for a sweep too large to evaluate at once
    fits_whole = 8 * (len(computed) + TEMPORARIES) * size <= GRID_WHOLE_BYTES
    natural = {n: shape if fits_whole or size <= CHUNK else _output_shape(variant, table[n], values, shape)
               for n in computed}
    target = _chunk_elements(natural, shape, grid or len(shape) != 1)
    # refused before any work: with a rule some configuration may break, every output may be full-size
    _refuse_if_too_large(computed, {n: shape for n in computed} if candidates else natural, shape,
                         bool(candidates))
    broken = _broken_rules(rules, raw, candidates)
    code = _codes(broken, shape) if broken else None
    out_shapes = {n: shape for n in computed} if broken else natural
    bad = code != 0 if code is not None else None
    out, code = _evaluate(compiled, values, computed, out_shapes, shape, bad, code, target)
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
    explain = _Explainer(rules, given, values, flags, w, f, shape, masked=code is not None)
    config = describe(w, f, SWEPT if "precision" in c.swept else given["precision"],
                      [(SWEPT if k in c.swept else given[k]) for k in KEYWORDS],
                      {k: (SWEPT if k in c.swept else v) for k, v in given.items()
                       if k in EXTENDED_DEFAULTS})
    return SweepResult(result_values, valid, codes, c.axes if grid else {}, config, explain)


def _full_ndim(x: np.ndarray, ndim: int) -> np.ndarray:
    return x.reshape((1,) * (ndim - x.ndim) + x.shape)


# --------------------------------------------------------------------------------------------
# Checks: the first broken rule per configuration
# --------------------------------------------------------------------------------------------
def _raw(values: Mapping[sp.Symbol, object], flags) -> Dict[sp.Symbol, object]:
    """Raw symbol -> value (as given: an integer array stays integer), the precision facts included."""
    raw = {RAW[s]: v for s, v in values.items() if s in RAW}
    raw.update(zip(FACTS, flags))
    return raw


def _raw_values(rules, values: Mapping[sp.Symbol, object], flags) -> Dict[sp.Symbol, object]:
    """Raw symbol -> value (:func:`_raw`) for the rules' arguments."""
    raw = _raw(values, flags)
    return {a: (1.0 if raw.get(a) is None else raw[a]) for a in rules.args}   # no rule reads an absent field


def _floats(a: np.ndarray) -> np.ndarray:
    """``a`` as float64; an integer beyond the float range becomes an infinity (a rule then names it)."""
    if a.dtype == np.float64:
        return a
    try:
        return a.astype(np.float64)
    except (OverflowError, TypeError, ValueError):
        return np.vectorize(lambda x: float(x) if abs(x) < 1e308 else (math.inf if x > 0 else -math.inf),
                            otypes=[np.float64])(a)


def _box(v) -> object:
    """The bounds of one argument's values (a :class:`~mlsysim_sym.bounds.Box`; True/False/None for a fact)."""
    if type(v) is float or (type(v) is int and -bounds.EXACT < v < bounds.EXACT):   # most arguments are one number
        return bounds.ANY if v != v else bounds.Box(float(v), float(v), float(v).is_integer(), exact=True)
    a = np.asarray(v)
    if a.dtype == bool:
        return bool(a.all()) if a.all() or not a.any() else None
    if a.dtype.kind not in "iuf" or a.size == 0:
        return bounds.ANY
    lo, hi = (float(a.min()), float(a.max())) if a.ndim else (float(a), float(a))
    if math.isnan(lo) or math.isnan(hi):
        return bounds.ANY
    whole = a.dtype.kind in "iu" or (lo == hi and lo.is_integer())
    return bounds.Box(lo, hi, whole, exact=True)


def _screen(rules, values, flags):
    """``(raw values, candidates)``: the error rules (``(j, i)``: position among the errors, index) that
    some configuration may break. Each rule is bounded over the ranges of the arguments
    (:mod:`mlsysim_sym.bounds`): a rule no configuration can break costs nothing more. A rule's
    verdict is remembered for the bounds of the arguments it reads (sweeps that vary other
    arguments reuse it)."""
    raw = _raw_values(rules, values, flags)
    boxes = [_box(raw[a]) for a in rules.args]
    env = dict(zip(rules.args, boxes))
    ev = bounds.evaluator(env)
    # a rule's memo key: the bounds of the arguments it reads, as plain tuples (cheap to hash)
    keys = [(b.lo, b.hi, b.whole) if isinstance(b, bounds.Box) else b for b in boxes]
    memo = _SCREENED.setdefault(id(rules), (rules, {}))[1]
    if len(memo) > 100000:
        memo.clear()
    out = []
    positions = rules.free_positions
    for j, i in enumerate(rules.errors):
        key = (i, *map(keys.__getitem__, positions[i]))
        verdict = memo.get(key)
        if verdict is None:
            verdict = memo[key] = bounds.truth(rules.conditions[i], env, ev) is not False
        if verdict:
            out.append((j, i))
    return raw, out


#: id(rules) -> (rules, {(rule, bounds of its arguments): may be broken}); the rules are kept alive
_SCREENED: Dict[int, Tuple[object, Dict[tuple, bool]]] = {}


def _broken_rules(rules, raw, candidates) -> List[Tuple[int, np.ndarray]]:
    """``(index + 1, mask)`` of every candidate rule some configuration breaks, in order; each mask in
    its own (broadcastable, often small) shape."""
    floats: Dict[sp.Symbol, object] = {}
    out = []
    for j, i in candidates:
        args, fn = rules.array(i)
        for a in args:       # integers as float64 (exact below 2**53; no wrap-around of small integer types)
            if a not in floats:
                v = raw[a]
                floats[a] = _floats(v) if isinstance(v, np.ndarray) and v.dtype.kind in "iuO" else v
        with np.errstate(all="ignore"):
            b = np.asarray(fn(*(floats[a] for a in args))[0], dtype=bool)
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
    """Formats the messages of masked configurations on first use (``SweepResult.reason``): each
    distinct combination of a rule's message fields is formatted once."""

    def __init__(self, rules, given, values, flags, w, f, shape, masked: bool):
        self.rules, self.given, self.values, self.flags = rules, given, values, flags
        self.w, self.f, self.shape = w, f, shape
        self.masked = masked            # whether any configuration is masked at all

    @cached_property
    def raw(self) -> Dict[sp.Symbol, object]:
        """Raw symbol -> value (:func:`_raw`), for the messages' computed fields (only when a message is
        asked for)."""
        return _raw(self.values, self.flags)

    def _one(self) -> "_Explainer":
        """This explainer for a sweep of no axes seen as one of shape (1,) (positions need an axis)."""
        twin = copy.copy(self)
        twin.shape = (1,)
        return twin

    def _codes(self, code: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """``(codes, counts)``: the rule codes present (0 aside), by how many configurations each masks
        (most first), and the count per code."""
        counts = np.bincount(code.ravel(), minlength=1)
        present = np.flatnonzero(counts)
        present = present[present != 0]
        return present[np.argsort(-counts[present], kind="stable")], counts

    def examples(self, code: np.ndarray, k: int = 3):
        """``(count, message)`` of one masked configuration per rule, for the ``k`` rules masking most."""
        if not self.masked:
            return [], 0
        if code.ndim == 0:                          # one configuration: explained as a sweep of one
            return self._one().examples(code.reshape(1), k)
        present, counts = self._codes(code)
        out = []
        for c in present[:k]:
            first = np.unravel_index(int(np.argmax(code.ravel() == c)), self.shape)
            where = tuple(np.array([i]) for i in first)
            out.append((int(counts[c]), self._render(int(c), where)[0][0]))
        return out, len(present)

    def __call__(self, code: np.ndarray):
        index: Dict[str, int] = {"": 0}           # message -> its position in the messages
        out = np.zeros(self.shape, dtype=np.int32)
        if not self.masked:
            return out, tuple(index)
        if code.ndim == 0:
            one, texts = self._one()(code.reshape(1))
            return one.reshape(()), texts
        present, _ = self._codes(code)
        for c in sorted(present):
            where = np.nonzero(code == c)
            rendered, inverse = self._render(int(c), where, many=True)
            ks = np.array([index.setdefault(t, len(index)) for t in rendered], dtype=np.int32)
            out[where] = ks[inverse]
        return out, tuple(index)

    def _render(self, c: int, where, many: bool = False):
        """The messages of code ``c`` at ``where``: one per distinct row of its fields (and, with ``many``,
        each position's row)."""
        n = len(where[0])
        if c == _OVERFLOW:
            return [OVERFLOW], np.zeros(n, dtype=int)
        i = self.rules.errors[c - 1]
        rule = self.rules.rules[i]
        cols = self._fields(i, rule, where)
        if not cols:
            return [rule.message], np.zeros(n, dtype=int)
        keys = []
        for col in cols.values():
            try:
                _, inv = np.unique(col, return_inverse=True)
            except TypeError:                         # mixed types: compare as text
                _, inv = np.unique(np.array([repr(x) for x in col], dtype=object), return_inverse=True)
            keys.append(inv.ravel())
        _, first, inverse = np.unique(np.stack(keys, axis=1), axis=0, return_index=True, return_inverse=True)
        names = list(cols)
        rendered = [rule.message.format(**{nm: _item(cols[nm][j]) for nm in names}) for j in first]
        return rendered, inverse.ravel()

    def _at(self, v, where) -> np.ndarray:
        return np.broadcast_to(np.asarray(v, dtype=object) if isinstance(v, str) or v is None else v,
                               self.shape)[where]

    def _fields(self, i, rule, where) -> Dict[str, np.ndarray]:
        """Each message field's values at the masked positions ``where`` (as given, or computed)."""
        fields: Dict[str, np.ndarray] = {}
        names = _field_names(rule.message)
        table = arguments()
        for name in names:
            if name in self.given:
                fields[name] = self._at(self.given[name], where)
            elif name in table:                        # a record field nobody swept
                fields[name] = self._at(self.values[table[name]], where)
            elif name in self._fact_names:
                precision = self._at(self.given["precision"], where)
                fields[name] = np.array([facts(self.w, self.f, p)[name] for p in precision], dtype=object)
        computed = [n for n in names if n not in fields]
        if computed:
            sub = {}
            for a, v in self.raw.items():
                if a in FACTS:                        # the precision facts: boolean, at every position
                    sub[a] = np.broadcast_to(v, self.shape)[where]
                elif v is not None:
                    sub[a] = _floats(np.broadcast_to(v, self.shape)[where]) if np.ndim(v) else v
            sub = {a: sub.get(a, np.nan) for a in self.rules.args}
            got = self.rules.fields(i, sub, "numpy")
            reads = self.rules.field_arguments(i)
            n = len(where[0])
            for name in computed:
                col = np.broadcast_to(np.asarray(got[name], dtype=float), (n,))
                if is_count(name) or self._integer_typed(reads[name]):   # as solve() computes it: an int
                    col = np.array([int(x) if x.is_integer() and abs(x) < bounds.EXACT else x for x in col.tolist()],
                                   dtype=object)
                fields[name] = col
        return fields

    @cached_property
    def _fact_names(self) -> frozenset:
        """The message fields :func:`~mlsysim_sym.inputs.facts` gives (the same for every precision)."""
        return frozenset(facts(self.w, self.f, None)) - {"flags"}

    def _integer_typed(self, symbols) -> bool:
        """Whether every argument a computed value reads holds integers (Python computes an int then)."""
        for a in symbols:
            v = self.raw.get(a)
            if isinstance(v, np.ndarray):
                if v.dtype.kind not in "iu":
                    return False
            elif not (isinstance(v, (int, np.integer)) and not isinstance(v, bool)):
                return False
        return bool(symbols)


def _item(x):
    return x.item() if hasattr(x, "item") else x


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


def _chunk_elements(out_shapes, shape, grid: bool) -> int:
    """Configurations per chunk: a flattened sweep in cache-sized chunks (:data:`CHUNK`); a grid whole
    while its full-size arrays fit :data:`GRID_WHOLE_BYTES`, else in chunks of :data:`GRID_CHUNK_BYTES`."""
    if not grid:
        return CHUNK
    size = math.prod(shape)
    full = sum(1 for s in out_shapes.values() if math.prod(s) == size) + TEMPORARIES
    if 8 * full * size <= GRID_WHOLE_BYTES:
        return size
    return max(CHUNK, GRID_CHUNK_BYTES // (8 * full))


def _evaluate(compiled, values, names, out_shapes, shape, bad, code, target):
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
    safe = None
    whole = math.prod(shape) <= target
    outs: List[Optional[np.ndarray]] = [None] * len(names)
    overflow = None
    for idx in _chunks(shape, target):
        part_in = [_as_float(x) for x in vector] if whole else [_take(x, idx) for x in vector]
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
        code[(code == 0) & overflow] = _OVERFLOW
    return outs, code


#: The code of "the result overflows" (after every rule's code).
_OVERFLOW = 32000


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
