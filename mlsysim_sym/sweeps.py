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
:mod:`mlsysim_sym.checks`, in mlsysim's order, formatted with that
configuration's values; :mod:`mlsysim_sym.masks`); numeric outputs are NaN there. A sweep also masks what
``solve()`` accepts but cannot be meant: non-finite values, non-positive
bandwidths, capacities and sizes, negative latencies, fractional counts, and any
configuration whose result overflows. Warnings ``solve()`` would emit (batch
below dp, precision fallback) are not emitted in a sweep.

Large grids are evaluated in chunks into preallocated outputs (:mod:`mlsysim_sym._chunks`); an output that
depends on few axes stays that small (a read-only broadcast view). A sweep whose
outputs cannot fit in the memory available is refused before any work, with the
size it would need.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import sympy as sp

from . import _chunks
from ._chunks import SweepTooLarge, full_ndim
from .arguments import Arguments, arguments as _arguments_of, describe, settable
from .checks import RAW, compiled_rules, facts
from .compile import compile_quantities
from .display import as_given, html_table, quantity, shorten, text_table, wrap
from .inputs import FLAG_KEYWORDS, PRECISION_BYTES, seq_len_unread, static_values
from .masks import OVERFLOW, Explainer, broken_rules, codes, floats, screen
from .model import Variant, build_model
from .outputs import EXTENDED_OUTPUTS, OUTPUTS, unit_of
from .symbols import keywords, sym

__all__ = ["Configurations", "OVERFLOW", "SweepResult", "SweepTooLarge", "arguments", "configurations",
           "resolve_name", "sweep", "sweep_arguments"]


def arguments() -> Dict[str, sp.Symbol]:
    """Every argument a sweep takes besides ``precision``, ``fidelity`` and ``without``: ``solve()`` keywords
    and record fields (as :data:`mlsysim_sym.symbols.PARAMS` names them), with the symbol each one sets."""
    return dict(_arguments())


@lru_cache(maxsize=1)
def _arguments() -> Dict[str, sp.Symbol]:
    return {**{k: p.symbol for k, p in keywords().items()}, **{k: p.symbol for k, p in settable().items()}}


def resolve_name(name: str, caller: str = "sweep") -> sp.Symbol:
    """A ``solve()`` keyword or record field name -> its symbol (a ``TypeError`` lists the allowed ones)."""
    table = arguments()
    if name in table:
        return table[name]
    allowed = sorted(set(table) | {"precision"})
    raise TypeError(f"{caller}() got an unexpected argument {name!r}; allowed: {', '.join(allowed)}")


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
    arguments: Optional[Arguments] = field(default=None, repr=False)
    _explain: Optional[object] = field(default=None, repr=False)
    _reasons: Optional[Tuple[np.ndarray, Tuple[str, ...]]] = field(default=None, repr=False)

    @property
    def configuration(self) -> str:
        """The configurations swept, in words (:func:`~mlsysim_sym.arguments.describe`: a swept argument with
        its values)."""
        return describe(self.arguments) if self.arguments is not None else ""

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
            unit = unit_of(n)
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
        x, unit = np.broadcast_to(self[output], self.shape), unit_of(output)
        ok = np.broadcast_to(self.valid, self.shape)
        axes = [(k, np.asarray(v)) for k, v in self.axes.items()]
        if len(axes) not in (1, 2) or x.size > limit or x.ndim != len(axes):
            return repr(self)
        fits = np.broadcast_to(self.values.get("node_profile.feasible", True), self.shape)
        cell = lambda i: (quantity(float(x[i]), unit) + ("" if fits[i] else " *")) if ok[i] else "-"  # noqa: E731
        if len(axes) == 1:
            (name, v), = axes
            rows = [(as_given(v[i]), cell((i,))) for i in range(len(v))]
            lines = text_table(rows, (name, output), indent="  ")
        else:
            (n0, v0), (n1, v1) = axes
            rows = [(as_given(v0[i]),) + tuple(cell((i, j)) for j in range(len(v1))) for i in range(len(v0))]
            lines = [f"  {output} by {n0} (rows) and {n1} (columns)"]
            lines += text_table(rows, (f"{n0} \\ {n1}",) + tuple(as_given(a) for a in v1), indent="  ")
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


def configurations(a: Arguments, grid: bool) -> Configurations:
    """The parameter values of the configurations an :class:`~mlsysim_sym.arguments.Arguments` of arrays
    describes (``solve()`` keywords and record fields, scalars or arrays), lowered as ``solve()`` lowers one
    (flags 0/1, ``seq_len`` unread without TP or EP off transformers); with ``grid`` each array is an axis of its
    own, in the order the caller gave them."""
    w, f = a.workload, a.fleet
    args = {**a.kwargs, **dict(a.fields)}
    swept = [k for k in a.given if _is_swept(args[k])]      # axes in the caller's order
    axes = {k: np.asarray(args[k]) for k in swept}
    if grid:
        shape = tuple(len(axes[k]) for k in swept)
        given = {k: np.asarray(args[k]).reshape([-1 if i == j else 1 for j in range(len(swept))])
                 for i, k in enumerate(swept)}
    else:
        shape = tuple(np.broadcast_shapes(*(np.shape(args[k]) for k in swept))) if swept else ()
        given = {k: full_ndim(np.asarray(args[k]), len(shape)) for k in swept}
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
                      base_variant.sram, base_variant.flash).of(a.model)
    values: Dict[sp.Symbol, object] = dict(base)
    for s, v in base.items():           # the parameters the precision changes become arrays over it
        if v is not None and any(statics[k][1][s] != v for k in distinct):
            table = {k: statics[k][1][s] for k in distinct}
            values[s] = np.vectorize(lambda k: float(table[k]), otypes=[float])(keys)
    table = arguments()
    for k, v in given.items():
        if k == "precision":
            continue
        if k in FLAG_KEYWORDS:
            v = np.asarray(v).astype(bool).astype(np.int8) if np.ndim(v) else (1 if v else 0)
        elif isinstance(v, np.ndarray) and v.dtype.kind == "O":
            v = floats(v)                        # Python integers too large for int64
        elif isinstance(v, int) and not isinstance(v, bool) and abs(v) > 1e308:
            v = math.inf if v > 0 else -math.inf  # beyond the float range: masked as not finite
        values[table[k]] = v
    unread = seq_len_unread(w.is_transformer, np.asarray(values[sym.tp]), np.asarray(values[sym.ep]))
    if np.any(unread):           # as solve(): seq_len is not read without TP or EP off transformers
        s_ = np.where(unread, 0, values[sym.s])
        values[sym.s] = s_ if np.ndim(s_) else s_.item()
    return Configurations(variant, values, given, shape, flags, swept, axes)


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
        Result names to compute (default: all of :data:`mlsysim_sym.outputs.OUTPUTS`; the extended model's own
        outputs, ``cp_communication_latency`` ..., where its mechanisms give them).
    **kwargs
        Any ``solve()`` keyword or workload/hardware field (``fabric_bandwidth``, ``memory_capacity``,
        ``peak_flops``, ... see :func:`arguments`), scalar or array-like; ``precision`` may be a list of strings;
        ``fidelity="extended"`` and ``without=`` choose the model.

    Raises
    ------
    SweepTooLarge
        (a ``MemoryError``) when the requested outputs would not fit in the memory available; ask for
        fewer ``outputs=`` or a coarser grid.
    """
    return sweep_arguments(_arguments_of(model, fleet, kwargs, caller="sweep"), grid=grid, outputs=outputs)


def sweep_arguments(a: Arguments, *, grid: bool = True, outputs: Optional[Sequence[str]] = None) -> SweepResult:
    """:func:`sweep` of an :class:`~mlsysim_sym.arguments.Arguments` (scalars or arrays)."""
    return prepare(a, grid=grid, outputs=outputs).run()


@dataclass
class Prepared:
    """A sweep ready to run: its configurations, the checks some configuration breaks (their masks), the compiled
    outputs and their arguments, and how the evaluation is chunked. :meth:`run` evaluates the model over the
    configurations and returns the :class:`SweepResult` (a search keeps one and runs it again)."""

    a: Arguments
    grid: bool
    names: Tuple[str, ...]
    computed: Tuple[str, ...]
    c: Configurations
    compiled: object
    rules: object
    code: Optional[np.ndarray]
    out_shapes: Dict[str, Tuple[int, ...]]
    target: int
    vector: list
    floated: list

    def outputs(self) -> Tuple[Dict[str, np.ndarray], Optional[np.ndarray]]:
        """Evaluate the model: ``(output -> array, code)``; each array in its own shape (an output that depends on
        few axes has length 1 on the others), masked configurations NaN (False for the fit), and the code of the
        rule each configuration breaks (None when none does; :class:`SweepResult`'s ``reason_code``)."""
        c, shape = self.c, self.c.shape
        code = None if self.code is None else self.code.copy()
        bad = code != 0 if code is not None else None
        out, code = _chunks.evaluate(self.compiled, c.values, self.computed, self.out_shapes, shape, bad, code,
                                     self.target, self.vector, self.floated)
        bad = code != 0 if code is not None else None
        out = dict(zip(self.computed, out))
        spill = "node_profile.offload_spill_bytes"
        if spill in self.names:
            out[spill] = np.where(np.asarray(out["node_profile.feasible"], dtype=bool), np.nan, out[spill])
        result = {}
        for n in self.names:
            x = out[n]
            if n == "node_profile.feasible":
                x = np.asarray(x, dtype=bool)
            if bad is not None:
                fill = False if x.dtype == bool else np.nan
                if x.shape == shape and x.flags.writeable and x.base is None:
                    x[bad] = fill                               # in place: no second full-size copy
                else:
                    x = np.where(bad, fill, x)
            result[n] = x
        return result, code

    def run(self) -> SweepResult:
        out, code = self.outputs()
        c, shape = self.c, self.c.shape
        values = {n: np.broadcast_to(x, shape) for n, x in out.items()}   # read-only views of the small arrays
        valid = np.broadcast_to(np.True_, shape) if code is None else code == 0
        code_array = np.broadcast_to(np.int16(0), shape) if code is None else code
        explain = Explainer(self.rules, c.given, c.values, c.flags, self.a.workload, self.a.fleet, shape,
                            masked=code is not None)
        return SweepResult(values, valid, code_array, c.axes if self.grid else {}, self.a, explain)


def prepare(a: Arguments, *, grid: bool = True, outputs: Optional[Sequence[str]] = None) -> Prepared:
    """Everything of a sweep but its evaluation (:class:`Prepared`); raises what :func:`sweep` raises before any
    work (unknown outputs, a parameter without a value, outputs that cannot fit in memory)."""
    if isinstance(outputs, str):
        outputs = (outputs,)
    c = configurations(a, grid)
    variant, values, shape, flags = c.variant, c.values, c.shape, c.flags
    # the extended model's own outputs too (those its mechanisms give for this workload)
    table = dict(OUTPUTS)
    if variant.choice.extended:
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
    for x in compiled.args:
        if values.get(x) is None:
            name = RAW[x].name if x in RAW else x.name
            raise ValueError(f"{name} has no value for this workload or fleet (None); pass it explicitly")

    rules = compiled_rules(variant, "sweep", ())
    raw, candidates = screen(rules, values, flags)            # the rules some configuration may break
    size = math.prod(shape)
    # an output's own shape matters only for a sweep too large to evaluate at once
    fits_whole = 8 * (len(computed) + _chunks.TEMPORARIES) * size <= _chunks.GRID_WHOLE_BYTES
    natural = {n: shape if fits_whole or size <= _chunks.CHUNK else _chunks.output_shape(variant, table[n], values,
                                                                                          shape)
               for n in computed}
    target = _chunks.chunk_elements(natural, shape, grid or len(shape) != 1)
    # refused before any work: with a rule some configuration may break, every output may be full-size
    _chunks.refuse_if_too_large(computed, {n: shape for n in computed} if candidates else natural, shape,
                                bool(candidates))
    broken = broken_rules(rules, raw, candidates)
    code = codes(broken, shape) if broken else None
    out_shapes = {n: shape for n in computed} if broken else natural
    vector = _chunks.arguments_of(compiled, values, len(shape))
    whole = math.prod(shape) <= target
    return Prepared(a, grid, names, computed, c, compiled, rules, code, out_shapes, target, vector,
                    _chunks.as_floats(vector) if whole else None)
