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
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import sympy as sp

from . import _chunks, notation
from ._chunks import SweepTooLarge, full_ndim
from .arguments import Arguments, arguments as _arguments_of, describe, settable, switch_type_error
from .checks import RAW, compiled_rules, facts, rules as check_rules
from .compile import compile_quantities
from .display import PREFIXED, WIDTH, as_given, html_table, number, quantity, text_prefix, text_table, \
    wrap, written
from .inputs import FLAG_KEYWORDS, PRECISION_BYTES, as_workload, seq_len_unread, static_values
from .masks import OVERFLOW, Explained, Explainer, broken_rules, codes, floats, screen
from .model import Variant, build_model
from .outputs import EXTENDED_OUTPUTS, OUTPUTS, field_named, output, quantity_of, unit_of
from .schedules import RULES, can_run
from .symbols import Kind, by_argument, keywords, sym

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


# --------------------------------------------------------------------------------------------
# What a sweep reads: a number, or a list, tuple, range or numpy array of numbers
# --------------------------------------------------------------------------------------------
#: The containers a sweep reads as an axis of values.
SEQUENCES = (list, tuple, range, np.ndarray)
#: numpy's kinds of array a sweep reads as numbers: bool, signed and unsigned integers, floats (``O``: Python
#: integers beyond int64 and mixed numbers, each element checked).
_NUMERIC_KINDS = "biuf"


def _type_name(x) -> str:
    """A value's type as Python names it (numpy's scalars as ``int64``, ``float32`` ..., as ``solve()`` says)."""
    return type(x).__name__


def _switch_values(name: str, v) -> None:
    """The extended model's switches take 0 and 1 only, as ``solve()`` checks them
    (:func:`mlsysim_sym.arguments.check_switches`): a ``ValueError`` naming the first other value."""
    for x in np.asarray(v, dtype=object).ravel():
        if x is not None and x != 0 and x != 1:
            raise ValueError(f"{name} must be True or False (or 1 or 0), got {x!r}")


def _is_real(x) -> bool:
    """A real number as ``solve()`` takes one (Python's int, float and bool, numpy's real scalars)."""
    return isinstance(x, (int, float, np.integer, np.floating, np.bool_))


def _not_readable(caller: str, name: str, v) -> TypeError:
    return TypeError(f"{caller}(): {name} must be a number or a list, tuple, range or numpy array of numbers, got "
                     f"{_type_name(v)}")


def _element_error(caller: str, name: str, index, x, scalar: bool) -> TypeError:
    """``solve()``'s message for a value that is not a real number (``tp_size must be a real number, got str``),
    with the position of the element in a sweep's array."""
    at = "" if scalar else f" (element {index} of the array)"
    return TypeError(f"{name} must be a real number, got {_type_name(x)}{at}")


def _first_not_real(a: np.ndarray):
    """``(index, element)`` of the first element of an object array that is not a real number, or None."""
    if all(_is_real_type(t) for t in set(map(type, a.flat))):
        return None
    for i, x in zip(np.ndindex(a.shape), a.flat):
        if not _is_real(x):
            return (i[0] if len(i) == 1 else i), x
    return None


@lru_cache(maxsize=64)
def _is_real_type(t: type) -> bool:
    return issubclass(t, (int, float, np.integer, np.floating, np.bool_))


def _mixed(types) -> bool:
    """Integers beside floats among a list's element types (numpy would print the integers as floats)."""
    return any(issubclass(t, (int, np.integer)) and not _is_bool_type(t) for t in types) and \
        any(issubclass(t, (float, np.floating)) for t in types)


def _is_bool_type(t: type) -> bool:
    return issubclass(t, (bool, np.bool_))


def _as_array(caller: str, name: str, v) -> np.ndarray:
    """A list, tuple, range or array as a numpy array: of numbers, or of objects where a list holds something
    else (for :func:`_numbers` to name it); a ragged list or a matrix is a ``TypeError`` naming the argument."""
    if isinstance(v, (np.matrix, np.ma.MaskedArray)):
        raise TypeError(f"{caller}(): {name} must be a plain numpy array, not {_type_name(v)} (a matrix is always "
                        f"2-D and a masked array hides values); pass np.asarray(...) of the values meant")
    if isinstance(v, np.ndarray):
        return v
    if isinstance(v, range):
        return np.asarray(v)
    # a list or a tuple: its elements as given first (numpy would turn [1, "a"] into strings, [True, 0.5] into
    # floats); rows of different lengths stay lists there
    flat = set(map(type, v))
    if flat and all(_is_real_type(t) and not _is_bool_type(t) for t in flat):     # plain numbers: the common case
        if _mixed(flat):
            return np.asarray(v, dtype=object)     # integers beside floats: each as given, as a message shows it
        try:
            return np.asarray(v)
        except (OverflowError, ValueError):
            pass
    o = np.empty(0, dtype=object) if len(v) == 0 else np.asarray(v, dtype=object)
    if any(isinstance(x, (list, tuple, range, np.ndarray)) for x in o.flat):
        raise TypeError(f"{caller}(): {name} is a ragged list (its rows have different lengths or hold lists); a "
                        f"sweep takes a flat list of numbers (or, with grid=False, arrays of one shape)")
    types = set(map(type, o.flat))
    if not all(_is_real_type(t) for t in types) or any(_is_bool_type(t) for t in types):
        return o                                       # named or read element by element below
    if any(t is int for t in types):
        try:
            return np.asarray(v)                       # integers (object where beyond int64)
        except (OverflowError, ValueError):
            return o
    return np.asarray(v)


def _numbers(caller: str, name: str, v, bools: bool, nullable: bool, flag: bool):
    """One argument's value as a sweep reads it: a number stays as given (a value ``solve()`` refuses is masked
    with its message); a list, tuple, range or array becomes an array of numbers. What is no number at all
    (a string, ``None``, a complex number, a ``Fraction``), a container a sweep does not read (a generator, a
    set, a dict, a matrix) or a ragged list is a ``TypeError`` naming the argument, as ``solve()`` names it.
    ``bools``: a bool counts as a number (``solve()`` computes with True as 1); ``nullable``: ``None`` is the
    keyword's default (the record gives it); ``flag``: one of mlsysim's switches, read by its truth value as
    ``solve()`` reads one."""
    if not isinstance(v, SEQUENCES):
        if isinstance(v, (set, frozenset, dict, memoryview, bytearray)) or hasattr(v, "__next__") or (
                hasattr(v, "__iter__") and not isinstance(v, (str, bytes))):
            raise _not_readable(caller, name, v)
        if flag:
            if isinstance(v, (str, bytes)):
                raise switch_type_error(name, v)
            return v
        if v is None and nullable:
            return v
        if isinstance(v, (bool, np.bool_)) and not bools:
            raise TypeError(f"{name} must be a number, got bool")
        if not _is_real(v):
            raise _element_error(caller, name, None, v, True)
        return v
    a = _as_array(caller, name, v)
    if a.ndim == 0:                              # one value (numpy's text and dates as Python's, to be named so)
        return _numbers(caller, name, a[()] if a.dtype.kind in "biufO" else a.item(), bools, nullable, flag)
    kind = a.dtype.kind
    if flag:
        if kind in "biuf":
            return a
        text = next((x for x in a.flat if isinstance(x, (str, bytes))), None) if kind in "OSU" else None
        if text is not None:
            raise switch_type_error(name, text)
        return np.vectorize(bool, otypes=[bool])(a) if a.size else a.astype(bool)   # each value's truth
    if kind == "O":
        bad = _first_not_real(a)
        if bad is not None:
            raise _element_error(caller, name, *bad, False)
        types = set(map(type, a.flat))
        if any(_is_bool_type(t) for t in types):
            if not bools:
                raise TypeError(f"{name} must be a number, got bool (an element of the array)")
            # bools only: a bool array; among numbers: kept as given (a message shows False as solve() does)
            return a.astype(bool) if all(_is_bool_type(t) for t in types) else a
        if _mixed(types):
            return a                             # integers beside floats: each as given (solve() says TP(3))
        try:
            return np.asarray(a.tolist())        # plain numbers again (Python integers beyond int64 stay objects)
        except (OverflowError, ValueError):
            return a
    if kind not in _NUMERIC_KINDS:              # complex, strings, bytes, dates: solve()'s message for the first
        x = a.flat[0] if a.size else a.dtype.type()
        raise _element_error(caller, name, 0 if a.ndim == 1 else (0,) * a.ndim,
                             x.item() if isinstance(x, np.generic) else x, False)
    if kind == "b" and not bools and a.size:
        raise TypeError(f"{name} must be a number, got bool (an array of bools)")
    return a


def _precision(caller: str, v):
    """The precision as a sweep reads it: a value (a string, or anything else, which the checks mask with
    ``solve()``'s message), or a list, tuple or array of them as a 1-D array of objects (``[16, "fp16"]`` keeps
    its 16: numpy would make it the string '16')."""
    if isinstance(v, (np.matrix, np.ma.MaskedArray)):
        raise TypeError(f"{caller}(): precision must be a string or a list, tuple or numpy array of strings, got "
                        f"{_type_name(v)}")
    if isinstance(v, np.ndarray):
        if v.ndim == 0:
            return v[()]
        a = np.empty(v.shape, dtype=object)
        a[...] = v.tolist() if v.dtype.kind != "O" else v
        return a
    if isinstance(v, (list, tuple)):
        a = np.empty(len(v), dtype=object)
        a[:] = list(v)
        if any(isinstance(x, (list, tuple, np.ndarray)) for x in a):
            raise TypeError(f"{caller}(): precision must be a string or a flat list of strings, got a nested list")
        return a
    if isinstance(v, (set, frozenset, dict, range, memoryview)) or hasattr(v, "__next__"):
        raise TypeError(f"{caller}(): precision must be a string or a list, tuple or numpy array of strings, got "
                        f"{_type_name(v)}")
    return v


@lru_cache(maxsize=1)
def _refusing_bools() -> frozenset:
    """The arguments ``solve()`` refuses a bool for (its checks' ``bools=False``: mlsysim multiplies a quantity
    with units by them)."""
    return frozenset(s.name for r in check_rules() if r.numeric and not r.bools for s in r.broken.free_symbols)


def read_arguments(kwargs: Dict[str, object], grid: bool, caller: str = "sweep", transformer: bool = True,
                   max_memory=None) -> Dict[str, object]:
    """The arguments of a sweep as it reads them (:func:`_numbers`, :func:`_precision`), checked before any work:
    a kind it cannot read is one ``TypeError`` naming the argument; with ``grid`` every array must be
    one-dimensional (an axis each), without it the arrays must broadcast together (a ``ValueError`` naming them
    and their shapes); a ``range`` is counted before it is built (:class:`SweepTooLarge` when its values alone
    exceed the memory budget). Names it does not know are left for :func:`~mlsysim_sym.arguments.arguments` to
    refuse; ``fidelity`` and ``without`` for the model choice."""
    table = arguments()
    params = {**keywords(), **settable()}
    refusing = _refusing_bools() - (set() if transformer else {"seq_len"})   # as check(): seq_len off transformers
    out = {}
    for name, v in kwargs.items():
        if name == "precision":
            out[name] = _precision(caller, v)
        elif name in table:
            p = params[name]
            flag = name in FLAG_KEYWORDS and p.fidelity == "mlsysim"
            if isinstance(v, range):
                _chunks.refuse(8 * len(v), f"{name} of {len(v):,} values", "give fewer values", max_memory)
            out[name] = _numbers(caller, name, v, bools=name not in refusing, flag=flag,
                                 nullable=p.record_default is not None or p.kind is Kind.FLAG)
            if p.kind is Kind.FLAG and p.fidelity != "mlsysim":
                _switch_values(name, out[name])
        else:
            out[name] = v
    swept = {k: v for k, v in out.items() if k in table or k == "precision" if _is_swept(v)}
    if grid:
        for k, v in swept.items():
            if np.ndim(v) != 1:
                raise ValueError(f"{caller}(): {k} must be one-dimensional in a grid (each argument is an axis of "
                                 f"its own), got shape {np.shape(v)}; pass grid=False to broadcast arrays together")
    elif swept:
        try:
            np.broadcast_shapes(*(np.shape(v) for v in swept.values()))
        except ValueError:
            shapes = ", ".join(f"{k} {np.shape(v)}" for k, v in swept.items())
            raise ValueError(f"{caller}(grid=False): the arrays do not broadcast together ({shapes}); give them one "
                             f"length (or shapes that broadcast), or pass grid=True for every combination") from None
    return out


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
    #: whether a training framework runs each configuration's schedule (:func:`~mlsysim_sym.schedules.can_run`, as
    #: ``Arguments.runnable`` reads it for one): ``solve()`` prices the others, as mlsysim does, and so does a sweep
    runnable: Optional[np.ndarray] = field(default=None, repr=False)

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
        """An output by its result field, or by the alias, model quantity or printed symbol other functions take
        (``step_time``, ``memory``, ``T_dp``, ``M_total``: :func:`mlsysim_sym.outputs.field_named`)."""
        for key in (name, field_named(name)):
            if key in self.values:
                return self.values[key]
        raise KeyError(f"no output {name!r}; outputs: {', '.join(self.values)}")

    def __getattr__(self, name: str) -> np.ndarray:
        if name.startswith("_") or name not in self.__dict__.get("values", {}):
            raise AttributeError(name)
        return self.values[name]

    def __len__(self) -> int:
        return int(self.valid.size)

    # ---- pickling: the messages formatted once instead of the compiled rules; small arrays stay small ------
    def __getstate__(self) -> Dict[str, object]:
        state = dict(self.__dict__)
        if self._explain is not None and not isinstance(self._explain, Explained):
            masked = self._explain.masked
            codes, texts = self._messages() if masked else (np.zeros((1,) * len(self.shape), np.int32), ("",))
            state["_explain"] = Explained(_compact(codes), texts, masked)
        elif isinstance(self._explain, Explained):
            state["_explain"] = Explained(_compact(self._explain.messages), self._explain.texts, self._explain.masked)
        state["_reasons"] = None
        state["values"] = {n: _compact(x) for n, x in self.values.items()}
        state["valid"], state["reason_code"] = _compact(self.valid), _compact(self.reason_code)
        state["runnable"] = None if self.runnable is None else _compact(self.runnable)
        state["_shape"] = self.shape
        return state

    def __setstate__(self, state: Dict[str, object]) -> None:
        shape = state.pop("_shape")
        grow = lambda x: np.broadcast_to(x, shape) if x.shape != shape else x   # noqa: E731
        state["values"] = {n: grow(x) for n, x in state["values"].items()}
        state["valid"], state["reason_code"] = grow(state["valid"]), grow(state["reason_code"])
        state["runnable"] = None if state.get("runnable") is None else grow(state["runnable"])
        if isinstance(state["_explain"], Explained):
            state["_explain"].messages = grow(state["_explain"].messages)
        self.__dict__.update(state)

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
            o = output(n)
            yes_no = v.dtype == bool or (o is not None and o.yes_no)     # memory_bound: 0 or 1
            if v.size and yes_no:    # counted over the valid configurations, not the output's own array
                grid = np.broadcast_shapes(np.shape(x), ok.shape)
                v = np.broadcast_to(np.asarray(x), grid)[np.broadcast_to(ok, grid)]
            if v.size == 0 or yes_no:
                cells = ("-", "-", "-") if v.size == 0 else (f"{int(np.count_nonzero(v))} of {v.size} true", "", "")
            else:
                lo, hi, mid = float(v.min()), float(v.max()), float(np.median(v))
                cells = tuple(quantity(t, unit) for t in (lo, mid, hi))
            rows.append((n, *cells))
        return rows

    def _head(self) -> str:
        n, ok = self.valid.size, int(np.count_nonzero(self.valid))
        axes = ", ".join(f"{k} ({len(v)})" for k, v in self.axes.items())
        off = self._unrunnable()
        return (f"SweepResult: shape {self.shape}, {ok:,} of {n:,} configurations valid"
                + (f" ({off:,} of them no framework runs)" if off else "") + (f"; axes {axes}" if axes else ""))

    def _unrunnable(self) -> int:
        """How many valid configurations run no schedule a framework runs."""
        if self.runnable is None:
            return 0
        return int(np.count_nonzero(np.broadcast_to(self.valid, self.shape) & ~np.broadcast_to(self.runnable,
                                                                                                 self.shape)))

    def __repr__(self) -> str:
        lines = wrap(self._head(), "") + wrap(self.configuration or "a sweep")
        lines += wrap("each output's min, median and max over the valid configurations:")
        lines += text_table(self._summary(), ("output", "min", "median", "max"), indent="  ", width=WIDTH)
        examples, rules = self._explain.examples(self.reason_code) if self._explain else ([], 0)
        if examples:
            lines.append("  masked configurations (how many, and the first one's reason):")
            for count, text in examples:
                lines += wrap(f"{count:,} x {text}", "    ")
            if rules > len(examples):
                lines.append(f"    ... and {rules - len(examples)} other rule(s) (see .reason)")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return html_table(self._summary(), ("output", "min", "median", "max"), caption=self._head())

    def to_dict(self) -> Dict[str, object]:
        """The swept arguments (a grid's axes; with ``grid=False``, each configuration's values of the arguments
        that vary) and every output as nested lists of the full shape (``None`` where a
        configuration is masked or an output is undefined), with ``valid`` and ``reason``, and the configuration
        the sweep was given (``configuration``: the model and fleet, the model choice and every argument, a list
        where it varies, as ``solve()``'s ``to_dict()`` gives one; ``configuration_line`` in words): plain Python
        values, so ``json.dumps`` takes it."""
        from .checks import is_count
        valid = np.broadcast_to(self.valid, self.shape)

        def plain(x, count=False):
            # a masked configuration has no value (None), a count is a whole number (dp 32, not 32.0)
            x = np.broadcast_to(np.asarray(x), self.shape)
            if x.dtype.kind == "f":
                shown = x.astype(object)
                if count:
                    shown = np.frompyfunc(lambda v: int(v) if math.isfinite(v) else v, 1, 1)(x)
                x = np.where(np.isnan(x) | ~valid, None, shown)
            elif x.dtype.kind == "b":
                x = np.where(valid, x.astype(object), None)
            return x.tolist()
        given = {} if self.arguments is None else {"configuration": self.arguments.to_dict(),
                                                    "configuration_line": self.configuration}
        swept = {k: np.asarray(v).tolist() for k, v in self.axes.items()}
        if not swept and self.arguments is not None:       # grid=False: each configuration's own values
            a = self.arguments
            swept = {k: np.broadcast_to(np.asarray(v), self.shape).tolist()
                     for k, v in (*a.kwargs.items(), *a.fields) if np.ndim(v) > 0}
        return {**given, "shape": list(self.shape), "swept": swept,
                "outputs": {n: plain(x, is_count(quantity_of(n))) for n, x in self.values.items()},
                "valid": valid.tolist(),
                **({} if self.runnable is None else {"runnable": plain(self.runnable)}),
                "reason": np.broadcast_to(self.reason, self.shape).tolist()}

    def table(self, output: Union[str, Sequence[str]] = "mfu", limit: int = 200) -> str:
        """One output over the grid, for a terminal: a column per configuration of one swept axis, a
        grid for two (rows the first axis), a row per configuration for more, its value for one configuration
        (nothing swept), the summary (``repr``) beyond ``limit`` configurations; masked configurations are ``-``, with their
        reasons below. Several outputs (a list of names): a column each beside one swept axis, each in the line
        of one configuration, a grid each for two, the notes once below them.

        >>> r = sweep("Llama3_70B", "Research_256", batch_size=256, tp_size=[4, 8], pp_size=4, microbatch_count=8)
        >>> print(r.table(["mfu", "step_time"]))
          tp_size       mfu  step_time
          4        0.2258 *  3.884 s *
          8        0.2604    3.369 s
          * does not fit in accelerator memory (spills to the host)
        """
        names = (output,) if isinstance(output, str) else tuple(dict.fromkeys(output))      # each output once
        if not names:
            raise ValueError("table(): name at least one output")
        output = names[0]
        x = np.broadcast_to(self[output], self.shape)
        ok = np.broadcast_to(self.valid, self.shape)
        axes = [(k, np.asarray(v)) for k, v in self.axes.items()]
        if x.size > limit or x.ndim != len(axes):
            return repr(self)
        fits = np.broadcast_to(self.values.get("node_profile.feasible", True), self.shape)
        star = not np.all(fits[ok]) and np.any(fits[ok])     # a mark where some fit and some do not
        runs = np.broadcast_to(True if self.runnable is None else self.runnable, self.shape)
        dag = bool(np.any(ok & ~runs))                      # a mark where a framework runs no such schedule
        marked = lambda i: ("" if fits[i] or not star else " *") + ("" if runs[i] else " †")  # noqa: E731
        # every cell padded to the widest mark, so that the numbers of a right-aligned column stay aligned
        wide = max((len(marked(i)) for i in np.ndindex(self.shape) if ok[i]), default=0)
        mark = lambda i: marked(i).ljust(wide)  # noqa: E731
        columns = [(n, np.broadcast_to(self[n], self.shape), unit_of(field_named(n))) for n in names]
        if not axes:
            lines = wrap("one configuration (no argument given a list or a range): " + ", ".join(
                f"{n} = " + (quantity(float(c), unit) + mark(()) if ok else "-") for n, c, unit in columns), "")
        elif len(axes) == 1:
            cell = lambda c, i: (quantity(float(c[1][i]), c[2]) + mark(i)) if ok[i] else "-"  # noqa: E731
            (name, v), = axes
            rows = [(_axis_value(name, v[i]),) + tuple(cell(c, (i,)) for c in columns) for i in range(len(v))]
            lines = text_table(rows, (name,) + names, indent="  ", width=WIDTH)
        elif len(axes) > 2:     # a row per configuration, a column per swept axis, then one per output
            cell = lambda c, i: (quantity(float(c[1][i]), c[2]) + mark(i)) if ok[i] else "-"  # noqa: E731
            rows = [tuple(_axis_value(n, v[j]) for (n, v), j in zip(axes, i)) + tuple(cell(c, i) for c in columns)
                    for i in np.ndindex(self.shape)]
            for short in (False, True):     # the axes by their short names where their own are too wide
                head = tuple((getattr(by_argument().get(n), "short", None) or n) if short else n for n, _ in axes)
                lines = text_table(rows, head + names, indent="  ", align="l" * len(axes) + "r" * len(names),
                                   width=WIDTH)
                if max(map(len, lines)) <= WIDTH:
                    break
        else:                   # a grid each, one below the other
            lines = []
            for k, (n, c, unit) in enumerate(columns):
                lines += [""] * bool(k) + self._grid(n, c, unit, ok, axes, mark)
        if dag:
            lines += wrap(f"† no framework runs this schedule ({RULES}); priced as solve() prices it", "  ")
        own = [n for n in names if field_named(n) in _OWN_PEAK]
        if "precision" in self.axes and len(self.axes["precision"]) > 1 and own:
            lines += wrap(f"{' and '.join(own)} {'count' if len(own) > 1 else 'counts'} each precision against its "
                          f"own peak (fp8's is twice bf16's): {'they do' if len(own) > 1 else 'it does'} not rank "
                          "precisions; throughput or step_time does", "  ")
        if star:
            lines.append("  * does not fit in accelerator memory (spills to the host)")
        elif np.any(ok) and not np.any(fits[ok]):
            lines += wrap("this configuration does not fit in accelerator memory (it spills to the host)" if x.size == 1
                          else "none of these configurations fits in accelerator memory (each spills to the host)")
        examples, rules = self._explain.examples(self.reason_code) if self._explain else ([], 0)
        if examples:
            lines.append("  masked configurations (how many, and the first one's reason):")
            lines += [line for count, text in examples for line in wrap(f"{count:,} x {text}", "    ")]
        return "\n".join(line.rstrip() for line in lines)

    @staticmethod
    def _grid(output: str, x: np.ndarray, unit: str, ok: np.ndarray, axes, mark) -> List[str]:
        """One output over two swept axes, its unit in the title (the cells bare numbers, the headers with units)."""
        valid = np.abs(x[ok & ~np.isnan(x)]) if np.any(ok) else np.array([])
        scale, prefix = text_prefix(float(valid.max()) if valid.size else 0.0, unit)
        shown = (prefix + PREFIXED[unit]) if unit in PREFIXED else written(unit)
        cell = lambda i: (number(float(x[i]) / scale) + mark(i)) if ok[i] else "-"  # noqa: E731
        (n0, v0), (n1, v1) = axes
        rows = [(_axis_value(n0, v0[i]),) + tuple(cell((i, j)) for j in range(len(v1))) for i in range(len(v0))]
        lines = wrap(f"{output}" + (f" in {shown}" if shown else "") + f" by {n0} (rows) and {n1} (columns)")
        return lines + text_table(rows, (n0,) + tuple(_axis_value(n1, a) for a in v1), indent="  ", width=WIDTH)

    def plot(self, path=None, output: str = "mfu", ax=None):
        """A line chart of ``output`` (one swept argument) or a heatmap (two), masked configurations
        marked (:func:`mlsysim_sym.plot.sweep_chart`; needs matplotlib). Saves a PNG at ``path``."""
        # display hook: the pictures sit above the results (and need matplotlib)
        from .plot import sweep_chart
        return sweep_chart(self, output=output, path=path, ax=ax)


def _axis_value(name: str, v) -> str:
    """A swept value in a table's header or first column: with its unit where the argument has one
    (``25 GB/s``), as given otherwise."""
    p = by_argument().get(name)
    if p is None or p.unit in ("1", "") or isinstance(v, (bool, np.bool_)) or p.kind is Kind.FLAG:
        return as_given(v)
    return quantity(float(v), p.unit, 3)


def _compact(x: np.ndarray) -> np.ndarray:
    """An array without its broadcast axes (length 1 where its stride is 0: a read-only view of a small array
    stays that small in a pickle; :meth:`SweepResult.__setstate__` broadcasts it back)."""
    x = np.asarray(x)
    if x.ndim and 0 in x.strides:
        return np.ascontiguousarray(x[tuple(slice(0, 1) if st == 0 else slice(None) for st in x.strides)])
    return x


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
    distinct = sorted(set(np.ravel(keys))) or ["fp16"]            # an empty axis of precisions: no configuration
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
        elif isinstance(v, (bool, np.bool_)):
            v = int(v)                           # solve() computes with True as 1 (the message shows it as given)
        elif isinstance(v, np.ndarray) and v.dtype == bool:
            v = v.astype(np.int8)
        elif isinstance(v, int) and abs(v) > 1e308:
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


def sweep(model, fleet, *, grid: bool = True, outputs: Optional[Sequence[str]] = None, max_memory=None,
          **kwargs) -> SweepResult:
    """Evaluate the model over arrays of arguments (see the module docstring).

    Parameters
    ----------
    model, fleet
        As in :meth:`mlsysim_sym.DistributedModel.solve` (catalog names, records, mlsysim objects).
    grid
        True: each array argument is an axis of its own (outer product). False: arrays broadcast together.
    outputs
        Result names to compute (default: all of :data:`mlsysim_sym.outputs.OUTPUTS`; the extended model's own
        outputs, ``cp_communication_latency`` ..., where its mechanisms give them), or any other quantity of the
        model by its name or printed symbol (``T_sync``, ``M_grads`` or ``M_gradients``), kept under that name.
    **kwargs
        Any ``solve()`` keyword or workload/hardware field (``fabric_bandwidth``, ``memory_capacity``,
        ``peak_flops``, ... see :func:`arguments`), scalar or array-like; ``precision`` may be a list of strings;
        ``fidelity="extended"`` and ``without=`` choose the model. A bad value (``tp_size=0``, ``10**30``, NaN)
        is masked with ``solve()``'s message, alone or in an array (the command line refuses a listed value no
        configuration can take, ``--tp 0,8``: a person typed it); a kind of value a sweep cannot read (a string
        where a number is meant, ``None``, a complex number, a generator, a set, a dict, a ragged list, a
        matrix) is a ``TypeError`` naming the argument (:func:`read_arguments`).
    max_memory
        Bytes the sweep may take (default: :func:`mlsysim_sym._chunks.memory_budget`, the tightest of the
        cgroup limit, ``ulimit -v`` and the memory available).

    Raises
    ------
    SweepTooLarge
        (a ``MemoryError``) when the requested outputs would not fit the memory budget, before any work; its
        one-line message names the bytes needed, the budget and the limit it comes from. Ask for fewer
        ``outputs=`` or a coarser grid.
    """
    grid, outputs = _options(grid, outputs)
    w = as_workload(model)
    read = read_arguments(kwargs, grid, "sweep", w.is_transformer, max_memory)
    return sweep_arguments(_arguments_of(model, fleet, read, caller="sweep"), grid=grid, outputs=outputs,
                           max_memory=max_memory)


def _options(grid, outputs) -> Tuple[bool, Optional[Tuple[str, ...]]]:
    """``grid`` as a bool and ``outputs`` as a tuple of names (a ``TypeError`` naming either otherwise)."""
    if not (isinstance(grid, (bool, np.bool_)) or (type(grid) is int and grid in (0, 1))):
        raise TypeError(f"sweep(): grid must be True or False, got {grid!r}")
    if outputs is None:
        return bool(grid), None
    names = (outputs,) if isinstance(outputs, str) else outputs
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"sweep(): outputs must be an output's name or a list or tuple of names, got "
                        f"{outputs!r:.80}")
    return bool(grid), tuple(names)


def sweep_arguments(a: Arguments, *, grid: bool = True, outputs: Optional[Sequence[str]] = None,
                    max_memory=None) -> SweepResult:
    """:func:`sweep` of an :class:`~mlsysim_sym.arguments.Arguments` (scalars or arrays)."""
    return prepare(a, grid=grid, outputs=outputs, max_memory=max_memory).run()


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
                if x.shape == shape and x.flags.writeable and x.base is None and x.dtype.kind in "bf":
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
        return SweepResult(values, valid, code_array, c.axes if self.grid else {}, self.a, explain,
                           runnable=_runnable(self.a, c.values, shape))


def _runnable(a: Arguments, values: Dict[sp.Symbol, object], shape) -> np.ndarray:
    """Whether a framework runs each configuration's schedule: :attr:`Arguments.runnable
    <mlsysim_sym.arguments.Arguments.runnable>` over the sweep's arrays (a value that is no whole number, masked
    anyway, reads as 1)."""
    def whole(name):
        x = values.get(by_argument()[name].symbol)
        x = np.asarray(1.0 if x is None else x, dtype=float)
        return np.where(np.isfinite(x) & (x >= 1) & (x < 2.0 ** 53), x, 1).astype(np.int64)
    layers = values.get(by_argument()["layers"].symbol)
    with np.errstate(all="ignore"):      # products of huge counts wrap around: those are masked by the checks
        g = np.prod(np.broadcast_arrays(*(whole(k) for k in a.model.splits)), axis=0)
        n = whole("count") * whole("accelerators_per_node")
        g = np.where(g >= 1, g, 1)
        schedule = (whole("pp_size"), n // g, whole("microbatch_count"), whole("v_stages"), whole("batch_size"))
        rules = dict(gradient_accumulation_steps=whole("gradient_accumulation_steps"),
                     unpiped_microbatches=a.microbatches_unpiped)
        ok = can_run(*schedule, **rules)                                # a record without a layer count: these rules
        if layers is not None:                                          # and with one, the layer rules too
            counted = np.asarray(layers, dtype=float)
            counted = np.isfinite(counted) & (counted >= 1)
            ok = np.where(counted, can_run(*schedule, **rules, layers=whole("layers")), ok)
        ok = (n % g == 0) & ok
    return np.broadcast_to(ok, shape)


#: The outputs that count against the precision's own peak (mlsysim's MFU and HFU).
_OWN_PEAK = ("mfu", "node_profile.mfu", "node_profile.hfu")


def prepare(a: Arguments, *, grid: bool = True, outputs: Optional[Sequence[str]] = None, max_memory=None,
            working: int = 0) -> Prepared:
    """Everything of a sweep but its evaluation (:class:`Prepared`); raises what :func:`sweep` raises before any
    work (unknown outputs, a parameter without a value, outputs that cannot fit the memory budget:
    ``max_memory``, and ``working`` bytes per configuration the caller allocates besides the outputs)."""
    if isinstance(outputs, str):
        outputs = (outputs,)
    c = configurations(a, grid)
    variant, values, shape, flags = c.variant, c.values, c.shape, c.flags
    # the extended model's own outputs too (those its mechanisms give for this workload)
    table = dict(OUTPUTS)
    model = build_model(variant)
    if variant.choice.extended:
        table.update({k: n for k, n in EXTENDED_OUTPUTS.items() if n in model})
    # by default every output solve() gives: mlsysim's, and the extended model's own where its mechanisms give them
    names = tuple(outputs) if outputs is not None else tuple(OUTPUTS) + tuple(k for k in EXTENDED_OUTPUTS if k in table)
    # an output by its alias (step_time, memory, throughput: the names sensitivities and required take), and any
    # other quantity of the model by its name or printed symbol (T_sync, M_grads, M_gradients), kept under the
    # name asked for
    table.update({n: table[field_named(n)] for n in names if n not in table and field_named(n) in table})
    table.update({n: n if n in model else notation.printed_as(n, model) for n in names if n not in table})
    table = {k: q for k, q in table.items() if q is not None}
    unknown = [n for n in names if n not in table]
    if unknown:
        raise KeyError(f"unknown outputs {unknown}; outputs: {', '.join(table)}, or any quantity of the model "
                       f"(build_model(), or the command line's 'equations')")

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
                                bool(candidates), max_memory, working)
    broken = broken_rules(rules, raw, candidates)
    code = codes(broken, shape) if broken else None
    out_shapes = {n: shape for n in computed} if broken else natural
    vector = _chunks.arguments_of(compiled, values, len(shape))
    whole = math.prod(shape) <= target
    return Prepared(a, grid, names, computed, c, compiled, rules, code, out_shapes, target, vector,
                    _chunks.as_floats(vector) if whole else None)
