"""A sweep's masks: the first check each configuration breaks, and its message, formatted on demand.

The checks are :func:`mlsysim_sym.checks.rules`, compiled for arrays. :func:`screen` bounds each rule over the
ranges of the arguments it reads (:mod:`mlsysim_sym.bounds`: a rule no configuration can break costs nothing
more); :func:`broken_rules` evaluates the rest; :func:`codes` keeps the first broken one per configuration; an
:class:`Explainer` formats ``solve()``'s message for the configurations a result is asked about.
"""
from __future__ import annotations

import copy
import math
from functools import cached_property
from typing import Dict, List, Mapping, Tuple

import numpy as np
import sympy as sp

from . import bounds
from .checks import FACTS, RAW, facts, is_count
from .symbols import Kind, by_argument

__all__ = ["Explained", "Explainer", "OVERFLOW", "OVERFLOW_CODE", "broken_rules", "codes", "floats", "raw", "screen"]


def raw(values: Mapping[sp.Symbol, object], flags) -> Dict[sp.Symbol, object]:
    """Raw symbol -> value (as given: an integer array stays integer), the precision facts included."""
    raw = {RAW[s]: v for s, v in values.items() if s in RAW}
    raw.update(zip(FACTS, flags))
    return raw


def _raw_values(rules, values: Mapping[sp.Symbol, object], flags) -> Dict[sp.Symbol, object]:
    """Raw symbol -> value (:func:`_raw`) for the rules' arguments."""
    given = raw(values, flags)
    return {a: (1.0 if given.get(a) is None else given[a]) for a in rules.args}   # no rule reads an absent field


def floats(a: np.ndarray) -> np.ndarray:
    """``a`` as float64; an integer beyond the float range becomes an infinity (a rule then names it)."""
    if a.dtype == np.float64:
        return a
    try:
        return a.astype(np.float64)
    except (OverflowError, TypeError, ValueError):
        return np.vectorize(lambda x: float(x) if abs(x) < 1e308 else (math.inf if x > 0 else -math.inf),
                            otypes=[np.float64])(a)


def _box(v, fact: bool = False) -> object:
    """The bounds of one argument's values (a :class:`~mlsysim_sym.bounds.Box`; True/False/None for a fact:
    ``fact``)."""
    if type(v) is float or (type(v) is int and -bounds.EXACT < v < bounds.EXACT):   # most arguments are one number
        return bounds.ANY if v != v else bounds.Box(float(v), float(v), float(v).is_integer(), exact=True)
    a = np.asarray(v)
    if a.dtype == bool:
        if not fact:                    # a number given as a bool (solve() computes with True as 1)
            return _box(a.astype(np.int8))
        return bool(a.all()) if a.all() or not a.any() else None
    if a.dtype.kind not in "iuf" or a.size == 0:
        return bounds.ANY
    lo, hi = (float(a.min()), float(a.max())) if a.ndim else (float(a), float(a))
    if math.isnan(lo) or math.isnan(hi):
        return bounds.ANY
    whole = a.dtype.kind in "iu" or (lo == hi and lo.is_integer())
    return bounds.Box(lo, hi, whole, exact=True)


def screen(rules, values, flags):
    """``(raw values, candidates)``: the error rules (``(j, i)``: position among the errors, index) that
    some configuration may break. Each rule is bounded over the ranges of the arguments
    (:mod:`mlsysim_sym.bounds`): a rule no configuration can break costs nothing more. A rule's
    verdict is remembered for the bounds of the arguments it reads (sweeps that vary other
    arguments reuse it)."""
    raw = _raw_values(rules, values, flags)
    boxes = [_box(raw[a], a in _FACT_SET) for a in rules.args]
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


_FACT_SET = frozenset(FACTS)

#: id(rules) -> (rules, {(rule, bounds of its arguments): may be broken}); the rules are kept alive
_SCREENED: Dict[int, Tuple[object, Dict[tuple, bool]]] = {}


def broken_rules(rules, raw, candidates) -> List[Tuple[int, np.ndarray]]:
    """``(index + 1, mask)`` of every candidate rule some configuration breaks, in order; each mask in
    its own (broadcastable, often small) shape."""
    converted: Dict[sp.Symbol, object] = {}
    out = []
    for j, i in candidates:
        args, fn = rules.array(i)
        for a in args:       # integers as float64 (exact below 2**53; no wrap-around of small integer types)
            if a not in converted:
                converted[a] = _number(raw[a])
        with np.errstate(all="ignore"):
            b = np.asarray(fn(*(converted[a] for a in args))[0], dtype=bool)
        if b.any():
            out.append((j + 1, b))
    return out


def _number(v):
    """A rule's argument as numpy computes with it: integers as float64 (exact below 2**53; no wrap-around of
    small integer types; beyond the float range an infinity), a Python number as a numpy one (so that a division
    by zero or an overflow is numpy's inf or NaN, not Python's exception); the facts and floats as they are."""
    if isinstance(v, np.ndarray):
        return floats(v) if v.dtype.kind in "iuO" else v
    if isinstance(v, (bool, np.bool_)) or v is None:
        return v
    if isinstance(v, (int, np.integer)):
        return np.float64(v) if abs(v) < 1e308 else np.float64(math.inf if v > 0 else -math.inf)
    if isinstance(v, float):
        return np.float64(v)
    return v


def codes(broken: List[Tuple[int, np.ndarray]], shape) -> np.ndarray:
    """The first broken rule per configuration (its index + 1; 0 where none is)."""
    code = np.zeros(shape, dtype=np.int16)
    for c, b in broken:
        code[(code == 0) & np.broadcast_to(b, shape)] = c
    return code


class Explainer:
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
        return raw(self.values, self.flags)

    def _one(self) -> "Explainer":
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
        if c == OVERFLOW_CODE:
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
        table = _SYMBOL_OF
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
                    sub[a] = floats(np.broadcast_to(v, self.shape)[where]) if np.ndim(v) else v
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


class Explained:
    """The messages of a result's masked configurations, formatted once (what an :class:`Explainer` gives, kept
    without the compiled rules: a pickled :class:`~mlsysim_sym.sweeps.SweepResult` holds this)."""

    def __init__(self, messages: np.ndarray, texts: Tuple[str, ...], masked: bool):
        self.messages, self.texts, self.masked = messages, texts, masked     # each position's text, by index

    def __call__(self, code: np.ndarray):
        return self.messages, self.texts

    def examples(self, code: np.ndarray, k: int = 3):
        """As :meth:`Explainer.examples`: one message per rule (its first masked configuration), most first."""
        if not self.masked:
            return [], 0
        flat, messages = np.asarray(code).ravel(), np.asarray(self.messages).ravel()
        counts = np.bincount(flat, minlength=1)
        present = np.flatnonzero(counts)
        present = present[present != 0]
        present = present[np.argsort(-counts[present], kind="stable")]
        return [(int(counts[c]), self.texts[messages[int(np.argmax(flat == c))]]) for c in present[:k]], len(present)


#: Argument name -> the symbol it sets (a message names a record field nobody swept by its argument name).
_SYMBOL_OF = {n: p.symbol for n, p in by_argument().items() if p.kind is not Kind.CONSTANT}


def _item(x):
    return x.item() if hasattr(x, "item") else x


OVERFLOW = "the result overflows or divides by zero (an extreme input)"


def _field_names(message: str) -> List[str]:
    import string

    return [f for _, f, _, _ in string.Formatter().parse(message) if f]



#: The code of "the result overflows" (after every rule's code).
OVERFLOW_CODE = 32000
