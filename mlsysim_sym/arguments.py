"""One call's configuration: built once where the call comes in, carried to the number.

An :class:`Arguments` holds everything a call prices: the workload and fleet records, the model choice
(:class:`~mlsysim_sym.mechanisms.ModelChoice`: fidelity and the mechanisms off), the precision, every keyword
of the parameter table (:func:`mlsysim_sym.symbols.keywords`: mlsysim's and the extended model's, the latter at
their neutral values unless given), and the record fields or lowered inputs the call sets
(``fabric_bandwidth=50e9``). The values are as given: numbers for one configuration, arrays for a sweep or a
search. What follows from them (the precision key, the lowered keywords, the model variant, every parameter's
value) is worked out once, on first use.

``solve()``, sweeps, search, sensitivities, :func:`mlsysim_sym.required`, :func:`mlsysim_sym.uncertainty`,
operating points, the command line and the calculator's generator take one; :func:`describe` writes the
configuration line every result prints.

Examples
--------
>>> from mlsysim_sym.arguments import arguments, describe
>>> a = arguments("Llama3_70B", "Research_256", dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8,
...               fidelity="extended", cp_size=2))
>>> a["tp_size"], a.model.fidelity, a.variant.fidelity
(8, 'extended', 'extended')
>>> describe(a)
'Llama-3.1-70B on Research Cluster (256 GPUs): batch 256, tp 8, pp 4, m 8, fp16; extended model (cp 2)'
"""
from __future__ import annotations

import dataclasses
import math
import numbers
import os
import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Dict, Mapping, Optional, Tuple

import numpy as np
import sympy as sp

from .checks import check, check_given
from .compile import compile_quantities, solve_quantities
from .display import as_given, quantity
from .inputs import (FLAG_KEYWORDS, KEYWORDS, PRECISION_BYTES, SOLVE_DEFAULTS, FleetLike, WorkloadLike, as_fleet,
                     as_workload, lower_arguments, static_values, with_field)
from .mechanisms import ModelChoice
from .model import Variant, build_model
from .schedules import broken_schedule_rules, can_run
from .symbols import Kind, Origin, Param, by_argument, keywords
from .types import Fleet, Workload

#: ``solve()``'s arguments besides the keywords of the parameter table (``topology_override``: never read).
_OTHER = ("precision", "topology_override")
#: The arguments that choose the model (:class:`~mlsysim_sym.mechanisms.ModelChoice`), where an entry point
#: takes them beside ``solve()``'s keywords.
MODEL_ARGUMENTS = ("fidelity", "without")
_INDEX = {k: i for i, k in enumerate(KEYWORDS)}
_DEFAULTS = tuple(SOLVE_DEFAULTS[k] for k in KEYWORDS)


@lru_cache(maxsize=1)
def settable() -> Dict[str, Param]:
    """The record fields and lowered inputs a call may set besides ``solve()``'s keywords (``fabric_bandwidth``,
    ``peak_flops``, ``layers``, ...): every non-constant parameter that is not a keyword, by argument name."""
    return {n: p for n, p in by_argument().items() if p.kind is not Kind.CONSTANT and p.origin is not Origin.SOLVE}


#: A schedule keyword -> the argument of :func:`~mlsysim_sym.schedules.can_run` it sets.
_SCHEDULE_ARGUMENT = {"batch_size": "batch_size", "microbatch_count": "m", "v_stages": "v",
                      "gradient_accumulation_steps": "gradient_accumulation_steps", "layers": "layers"}


@dataclass(frozen=True, eq=False, init=False)
class Arguments:
    """One call's configuration (see the module docstring).

    ``keywords``: the value of every keyword of :data:`~mlsysim_sym.inputs.KEYWORDS`, in that order, as given
    (its default where not given); ``fields``: ``(name, value)`` of the record fields and lowered inputs the
    call sets; ``searched``: the keywords a search chooses (the configuration line says so); ``names``: the
    model's and fleet's names as the caller gave them (a catalog name, else the record's); ``given``: the names
    of the arguments the caller passed, in the caller's order (a sweep's axes come in that order).
    ``a["tp_size"]`` reads any of them.
    """

    workload: Workload
    fleet: Fleet
    model: ModelChoice
    precision: object
    keywords: Tuple[object, ...]
    fields: Tuple[Tuple[str, object], ...] = ()
    searched: Tuple[str, ...] = ()
    names: Tuple[str, str] = field(default=("", ""))
    given: Tuple[str, ...] = ()
    tried: Tuple[Tuple[str, Tuple[object, ...]], ...] = ()     # a search's values of what it searched

    def __init__(self, workload: Workload, fleet: Fleet, model: ModelChoice, precision, keywords: Tuple[object, ...],
                 fields: Tuple[Tuple[str, object], ...] = (), searched: Tuple[str, ...] = (),
                 names: Tuple[str, str] = ("", ""), given: Tuple[str, ...] = (),
                 tried: Tuple[Tuple[str, Tuple[object, ...]], ...] = ()):
        # one write of the instance's dictionary (solve() builds one per call: field by field costs a microsecond)
        object.__setattr__(self, "__dict__", {"workload": workload, "fleet": fleet, "model": model,
                                              "precision": precision, "keywords": keywords, "fields": fields,
                                              "searched": searched, "names": names, "given": given,
                                              "tried": tried})

    def __getitem__(self, name: str):
        if name in _INDEX:
            return self.keywords[_INDEX[name]]
        if name == "precision":
            return self.precision
        for k, v in self.fields:
            if k == name:
                return v
        raise KeyError(f"no argument {name!r}")

    def get(self, name: str, default=None):
        try:
            return self[name]
        except KeyError:
            return default

    @property
    def kwargs(self) -> Dict[str, object]:
        """``solve()``'s keywords as given: the precision and every keyword of the table."""
        return {"precision": self.precision, **dict(zip(KEYWORDS, self.keywords))}

    def replace(self, **changes) -> "Arguments":
        """A copy with keywords, the precision or fields changed (``a.replace(tp_size=4, fabric_bandwidth=5e10)``)."""
        kw = list(self.keywords)
        fields = dict(self.fields)
        precision = self.precision
        for k, v in changes.items():
            if k in _INDEX:
                kw[_INDEX[k]] = v
            elif k == "precision":
                precision = v
            elif k in settable():
                fields[k] = v
            else:
                raise TypeError(f"unknown argument {k!r}")
        return Arguments(self.workload, self.fleet, self.model, precision, tuple(kw), tuple(fields.items()),
                         self.searched, self.names, self.given + tuple(k for k in changes if k not in self.given))

    def moved(self, name: str, value) -> "Arguments":
        """A copy with one input moved, as a user would move it: a keyword or the precision as given; a record
        field in the record, lowered again (the parameter count moves the forward FLOPs mlsysim derives from
        it); a lowered input without a record field (``inference_flops``) as set."""
        p = settable().get(name)
        if p is None or p.field is None or name in dict(self.fields):
            return self.replace(**{name: value})
        w, f = with_field(self.workload, self.fleet, p, value)
        moved = dataclasses.replace(self, workload=w, fleet=f)
        # a field the lowering does not read as it is (peak_flops where the precision has its own peak, FP8's on
        # an H200): set for the call, as solve(peak_flops=...) and the command line's --peak-flops set it
        if p.symbol in moved.values and moved.values[p.symbol] != value:
            return self.replace(**{name: value})
        return moved

    @property
    def extended_at_neutral(self) -> bool:
        """Whether every keyword of the extended model is at its neutral value, exactly as the defaults (mlsysim's
        model takes them so only; :func:`refuse_extended` says which one is not)."""
        return self.keywords[_FIRST_EXTENDED:] == _NEUTRAL

    @property
    def replica(self) -> int:
        """How many accelerators one data-parallel replica spans: the product of the degrees that split the fleet
        (:attr:`~mlsysim_sym.mechanisms.ModelChoice.splits`)."""
        return math.prod(int(self[k]) for k in self.model.splits)

    @property
    def runnable(self) -> bool:
        """Whether a training framework can run this schedule (:func:`mlsysim_sym.schedules.can_run`: the batch
        splits evenly over the replicas, the microbatches over a replica's samples, every stage holds a layer and,
        interleaved, every virtual stage as many, the embedding and the loss may count as a layer each, and the
        microbatches come in whole rounds of the pipeline)."""
        return self.runs()

    def runs(self, layer_rules: bool = True) -> bool:
        """:attr:`runnable`; with ``layer_rules=False``, by the rules that do not read the layer count alone (when
        those fail, no layer count makes the schedule run)."""
        return self.accelerators % self.replica == 0 and \
            bool(can_run(**self._schedule(layers=self._layers() if layer_rules else None)))

    def why_not_runnable(self) -> str:
        """The rules of :func:`~mlsysim_sym.schedules.can_run` this schedule breaks, in words with its numbers, for
        the note that says no framework runs it ("" when one does)."""
        g, n = self.replica, self.accelerators
        broken = [f"the fleet's {n} accelerators split into whole replicas of {g}"] if n % g else \
            broken_schedule_rules(**self._schedule(layers=self._layers()))
        return "can_run() asks that " + ", and that ".join(broken) if broken else ""

    def runs_with(self, knob: str, values) -> "np.ndarray":
        """:attr:`runnable` at each of ``values`` of one schedule keyword (``batch_size``, ``microbatch_count``,
        ``v_stages``, ``gradient_accumulation_steps``, ``layers``), the rest held: one boolean per value, in one
        call of :func:`~mlsysim_sym.schedules.can_run`."""
        values = np.asarray(values, dtype=np.int64)
        if self.accelerators % self.replica:
            return np.zeros(values.shape, dtype=bool)
        changed = self._schedule(layers=self._layers())
        changed[_SCHEDULE_ARGUMENT[knob]] = values
        return np.broadcast_to(can_run(**changed), values.shape)

    def _layers(self) -> Optional[int]:
        """The layer count the schedule rules read (the call's, else the workload's; None without one)."""
        return self.get("layers", self.workload.layers) or None

    def _schedule(self, layers) -> dict:
        """The arguments of :func:`~mlsysim_sym.schedules.can_run` for this configuration."""
        return dict(pp=self["pp_size"], dp=self.accelerators // self.replica, m=self["microbatch_count"],
                    v=self["v_stages"], batch_size=int(self["batch_size"]),
                    gradient_accumulation_steps=int(self["gradient_accumulation_steps"]), layers=layers,
                    unpiped_microbatches=self.microbatches_unpiped)

    @property
    def microbatches_unpiped(self) -> bool:
        """Whether the model reads the microbatch count without a pipeline too (the extended model's transformers
        pay a step's layer passes per microbatch): :func:`~mlsysim_sym.schedules.can_run`'s rule 2 then holds at
        ``pp == 1`` as well."""
        return self.model.extended and self.workload.is_transformer

    # ---- what follows from them, for one configuration (scalars) -----------------------------------------
    @cached_property
    def key(self) -> str:
        """The precision's key (``"bf16"``), ``"fp16"`` when the precision is not one (a check says so)."""
        p = self.precision
        return p.lower() if isinstance(p, str) and p.lower() in PRECISION_BYTES else "fp16"

    @cached_property
    def static(self) -> Tuple[Variant, Dict[sp.Symbol, object]]:
        """The model variant (structure from the records, fidelity from the model choice) and the values the
        records and the precision fix (raises where mlsysim cannot lower the workload)."""
        variant, values = static_values(self.workload, self.fleet, self.key)
        return variant.of(self.model), values

    @property
    def variant(self) -> Variant:
        return self.static[0]

    @cached_property
    def lowered(self) -> Dict[str, object]:
        """The keywords as the model reads them (:func:`~mlsysim_sym.inputs.lower_arguments`)."""
        return lower_arguments(self.workload, self.kwargs)

    @cached_property
    def overrides(self) -> Dict[sp.Symbol, object]:
        """The fields the call sets, by the symbol of their parameter."""
        table = settable()
        return {table[k].symbol: v for k, v in self.fields}

    @property
    def named_fields(self) -> Dict[str, object]:
        return dict(self.fields)

    @cached_property
    def values(self) -> Dict[sp.Symbol, object]:
        """Every parameter of ``build_model(self.variant)``, by symbol (:func:`parameters_of`)."""
        variant, static = self.static
        values = dict(static)
        values.update(self.overrides)
        table = keywords()
        values.update({table[k].symbol: v for k, v in self.lowered.items() if k in table})
        free = set(build_model(variant).parameters)
        return {s: v for s, v in values.items() if s in free}

    @property
    def accelerators(self) -> int:
        """Accelerators of the fleet (nodes and accelerators per node as the call sets them)."""
        return int(self.get("count", self.fleet.count)) * int(self.get("accelerators_per_node",
                                                                        self.fleet.node.accelerators_per_node))

    # ---- for people and scripts -------------------------------------------------------------------------
    def to_dict(self) -> Dict[str, object]:
        """The configuration as plain values (``json.dumps`` takes it): the model and fleet as given, the model
        choice, the precision, every keyword and every field set (lists where an argument varies)."""
        out = {"model": self.names[0] or self.workload.name, "fleet": self.names[1] or self.fleet.name,
               "fidelity": self.model.fidelity, "without": list(self.model.off)}
        out.update({k: _plain(v) for k, v in self.kwargs.items()})
        out.update({k: _plain(v) for k, v in self.fields})
        if self.searched:
            out["searched"] = list(self.searched)
        return out

    def __repr__(self) -> str:
        return f"Arguments({describe(self)})"


def _plain(v):
    """A value as JSON takes it (numpy arrays and numbers as Python's)."""
    if isinstance(v, (list, tuple, range)):
        return [_plain(x) for x in v]
    return v.tolist() if hasattr(v, "tolist") else v


#: ``(position, workload field)`` of the keywords whose default a record gives (:attr:`Param.record_default`).
_FROM_RECORD = tuple((i, p.record_default) for i, p in enumerate(keywords().values()) if p.record_default)
_RECORD_POSITIONS = frozenset(i for i, _ in _FROM_RECORD)


def from_record(values: Tuple[object, ...], workload: Workload, choice: ModelChoice) -> Tuple[object, ...]:
    """The keyword values with ``None`` where a record gives the default (``kv_fraction=None``, ``solve()``'s
    default) filled: in the extended model with an architecture card's own value (the keys' and values' width),
    else with the table's neutral default (mlsysim's model never reads it)."""
    for i, _ in _FROM_RECORD:
        if values[i] is None:
            break
    else:
        return values
    out = list(values)
    for i, name in _FROM_RECORD:
        if out[i] is None:
            v = getattr(workload, name) if choice.extended else None
            out[i] = _DEFAULTS[i] if v is None else v
    return tuple(out)


def arguments(model: WorkloadLike, fleet: FleetLike, kwargs: Mapping[str, object], *, caller: str = "solve",
              choice: Optional[ModelChoice] = None) -> Arguments:
    """The :class:`Arguments` of a call: ``kwargs`` are ``solve()``'s keywords (mlsysim's and the extended
    model's), ``precision``, record fields and lowered inputs (:func:`settable`), and, unless ``choice`` is
    given, ``fidelity`` and ``without``. An unknown name is a ``TypeError`` naming it; the mlsysim model refuses
    the extended model's keywords away from their neutral values (a ``ValueError`` that says so)."""
    kw = dict(kwargs)
    chosen = choice is not None
    if not chosen:
        choice = ModelChoice(kw.pop("fidelity", "mlsysim"), kw.pop("without", ()))
    table = settable()
    for k in kw:
        if k not in _INDEX and k not in _OTHER and k not in table:
            allowed = [*KEYWORDS, "precision", *(() if chosen else MODEL_ARGUMENTS), *table]
            raise TypeError(f"{caller}() got an unexpected keyword argument {k!r}; allowed: {', '.join(allowed)}")
    workload = as_workload(model)
    values = from_record(tuple(kw.get(k, None if i in _RECORD_POSITIONS else d)
                               for i, (k, d) in enumerate(zip(KEYWORDS, _DEFAULTS))), workload, choice)
    fields = tuple((k, v) for k, v in kw.items() if k in table)
    names = (given_name(model), given_name(fleet))
    a = Arguments(workload, as_fleet(fleet), choice, kw.get("precision", "fp16"), values, fields,
                  names=names, given=tuple(k for k in kw if k != "topology_override"))
    refuse_text(a)
    refuse_extended(a)
    return a


#: The switches (mlsysim's read for their truth) by their places among the keywords.
_FLAGS = tuple((_INDEX[k], k) for k in FLAG_KEYWORDS)


#: The values that hold several: one configuration's switch is none of them (``[False]`` is true).
_SEVERAL = (list, tuple, set, frozenset, dict, np.ndarray)


def given_name(x) -> str:
    """A model or fleet as the call named it (a catalog name or a file's path), or ``""`` for a record."""
    return x if isinstance(x, str) else os.fspath(x) if isinstance(x, os.PathLike) else ""


def switch_type_error(name: str, v) -> TypeError:
    """The error for a switch given a value that is no bool, 0 or 1 (text above all: ``"no"`` is true)."""
    several = "; one configuration takes one value (a sweep takes a list)" if isinstance(v, _SEVERAL) else ""
    return TypeError(f"{name} must be a bool (True or False, or 1 or 0), got {type(v).__name__} {v!r}{several}")


def refuse_text(a: Arguments, one: bool = False) -> None:
    """A ``TypeError`` naming the first switch given as text: ``activation_recomputation="no"`` would read as
    true (mlsysim reads its switches for their truth, so it would switch recomputation on); ``one``: the
    arguments of one configuration, where a list is refused too (``overlap_comm=[False]`` is true)."""
    for i, name in _FLAGS:
        v = a.keywords[i]
        if isinstance(v, (str, bytes)) or one and isinstance(v, _SEVERAL) and not (isinstance(v, np.ndarray)
                                                                                     and v.ndim == 0):
            raise switch_type_error(name, v)


# --------------------------------------------------------------------------------------------
# mlsysim's model takes the extended model's keywords at their neutral values only
# --------------------------------------------------------------------------------------------
_EXTENDED = tuple((k, p) for k, p in keywords().items() if p.fidelity == "extended")
_NEUTRAL = tuple(p.default for _, p in _EXTENDED)
_FIRST_EXTENDED = len(KEYWORDS) - len(_EXTENDED)
#: The record fields only the extended model reads (a card's attention, heads, experts), by argument name.
_EXTENDED_FIELDS = {k: p for k, p in settable().items() if p.fidelity == "extended"}


def refuse_extended(a: Arguments) -> None:
    """A ``ValueError`` naming the first keyword of the extended model that mlsysim's model is given away from
    its neutral value (an array or ``True`` included), or a record field only the extended model reads that the
    caller sets: mlsysim 0.3.0 has no such argument, and its model would price the call as if it were not given."""
    if a.model.extended:
        return
    given = a.keywords[_FIRST_EXTENDED:]
    for (k, p), v, d in zip(_EXTENDED, given, _NEUTRAL):
        if v is d or (type(v) is type(d) and v == d):          # untouched: the common case, at no cost
            continue
        if p.kind is Kind.FLAG:
            neutral = _one_truth_value(v) and bool(v) == bool(p.default)
        else:
            neutral = _same_number(v, p.default)
        if not neutral:
            raise ValueError(f"{k}={_shown(v, p)} is an argument of the extended model (mlsysim 0.3.0 has no "
                             f"{p.label}); pass fidelity='extended'")
    for k, v in a.fields:          # a record field only the extended model reads, set by the caller
        p = _EXTENDED_FIELDS.get(k)
        if p is not None:
            raise ValueError(f"{k}={_shown(v, p)} is a field only the extended model reads (mlsysim 0.3.0's model "
                             f"has no {p.label}); pass fidelity='extended'")


#: The extended model's switches and their places among the keywords: mlsysim has no rule for them, so they are
#: read strictly (a bool, or 0 or 1), not for their truth as mlsysim reads its own flags.
SWITCHES = tuple((_FIRST_EXTENDED + i, k) for i, (k, p) in enumerate(_EXTENDED) if p.kind is Kind.FLAG)


def check_switches(a: Arguments) -> None:
    """A ``TypeError`` (not a number) or ``ValueError`` (a number other than 0 and 1) naming the first of the
    extended model's switches given a value that is not a bool, 0 or 1 (``sequence_parallel="no"`` would
    otherwise switch it on)."""
    for i, name in SWITCHES:
        v = a.keywords[i]
        if type(v) is bool or isinstance(v, np.bool_):
            continue
        if not isinstance(v, numbers.Real):
            raise switch_type_error(name, v)
        if v != 0 and v != 1:
            raise ValueError(f"{name} must be True or False (or 1 or 0), got {v!r}")


def _shown(v, p) -> str:
    """A value as the user wrote it: an array (a sweep's or a search's grid) as the list of its distinct
    values, a count as a whole number."""
    if np.ndim(v) == 0:
        return repr(v)
    values = np.unique(np.asarray(v)).tolist()
    if p.kind in (Kind.COUNT, Kind.FLAG):
        values = [int(x) if p.kind is Kind.COUNT else bool(x) for x in values]
    return repr(values)


def _one_truth_value(v) -> bool:
    """True for a value with one truth value (not an array of several)."""
    try:
        bool(v)
        return True
    except Exception:
        return False


def _same_number(v, default) -> bool:
    try:
        return not isinstance(v, bool) and bool(v == default)
    except Exception:       # an array or an object that does not compare: not the neutral value
        return False


# --------------------------------------------------------------------------------------------
# The configuration line
# --------------------------------------------------------------------------------------------
def describe(a: Arguments, effects: bool = False) -> str:
    """``"Llama-3.1-70B on Research Cluster (256 GPUs): batch 256, tp 8, pp 4, m 8, fp16"``: the workload, the
    fleet, the batch, every keyword away from its default by its short name (a switch by its name alone), the
    precision, the fields the call sets with their units; then the model when it is the extended one, with its
    own keywords; then what a search chooses. An argument that varies (a sweep's axis) shows its values.

    ``effects``: the line prices exactly this configuration (``solve()``'s result), so it may set apart the
    extended keywords that move none of its numbers (``no effect here: EP overlap``); a search, a sweep or an
    inverse question moves the configuration away from ``a`` and claims nothing."""
    mlsysim, own, idle = [], [], []
    for (k, p), v in zip(keywords().items(), a.keywords):
        if k in a.searched:
            continue
        card = _record_default(a, p) if a.model.extended else None
        own_default = card is not None
        if own_default and _same_number(v, card):
            continue            # the card's own value (its keys' and values' width): the default for it
        # away from the card's own value, shown even at the table's default (kv_fraction 1 on a GQA card); an
        # architecture card's sequence always (mlsysim's default 2048 is not the length today's models train at)
        text = _part(p, v, always=k == "batch_size" or own_default
                     or (k == "seq_len" and getattr(a.workload, "architecture", None) is not None))
        if text and p.fidelity == "extended":
            (own if not effects or _moves(a, k) else idle).append(text)
        elif text:
            mlsysim.append(text)
    if "precision" not in a.searched:
        mlsysim.append(_values(a.precision, str))
    table = settable()
    fleet, counted = _fleet_text(a)
    for k, v in a.fields:
        if k not in a.searched and not (k == "count" and counted):
            p = table[k]
            mlsysim.append(f"{p.short} {_values(v, lambda x: quantity(float(x), p.unit))}")
    line = f"{a.workload.name} on {fleet}: " + ", ".join(mlsysim)
    if a.model.extended:
        said = ", ".join(own) + ("; " if own and idle else "") + (f"no effect here: {', '.join(idle)}" if idle else "")
        line += "; extended model" + (f" ({said})" if said else "")
        if a.model.off:
            line += f", without {', '.join(a.model.off)}"
    if a.searched:
        short = {**{k: p.short for k, p in keywords().items()}, "precision": "precision",
                 **{k: p.short for k, p in table.items()}}
        tried = dict(a.tried)
        line += "; searched: " + ", ".join(short[k] + _tried(tried.get(k, ())) for k in a.searched)
    return line


def _tried(values) -> str:
    """A search's whole-number values of one input, as its configuration line gives them: `` 1,2,4``; beyond
    five, where they step evenly (each twice the last, or the last plus one step), the first three and the last
    (`` 1,2,4,...,128``); else all of them up to twelve, and beyond, the first three, the last and how many
    (`` 1,2,3,...,1152 (24 values)``: an ellipsis alone would read as every number between); nothing for switches
    and other values (their names say it).

    >>> _tried((1, 2, 4)), _tried((1, 2, 4, 8, 16, 32, 64, 128)), _tried((1, 2, 3, 4, 6, 8, 12, 384)[:5])
    (' 1,2,4', ' 1,2,4,...,128', ' 1,2,3,4,6')
    >>> _tried((1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24)), _tried(tuple(range(1, 25)))
    (' 1,2,3,4,5,6,8,10,12,16,20,24', ' 1,2,3,...,24')
    >>> _tried((1, 2, 3, 4, 6, 8, 9, 12, 16, 18, 24, 32, 36))
    ' 1,2,3,...,36 (13 values)'
    >>> _tried((False, True))
    ''
    """
    if not values or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        return ""
    v = [int(x) for x in values]
    shown = [str(x) for x in v]
    if len(v) <= 5:
        return " " + ",".join(shown)
    even = all(b == 2 * a for a, b in zip(v, v[1:])) or all(b - a == v[1] - v[0] for a, b in zip(v, v[1:]))
    if even:
        return " " + ",".join(shown[:3] + ["...", shown[-1]])
    if len(v) <= 12:
        return " " + ",".join(shown)
    return " " + ",".join(shown[:3] + ["...", shown[-1]]) + f" ({len(v)} values)"


def node_word(fleet) -> str:
    """What a fleet's node is called: ``"rack"`` for a rack-scale NVLink domain (a GB200 NVL72, whose name says
    ``NVL`` and its size), else ``"node"``."""
    return "rack" if re.search(r"NVL\d+", fleet.node.name) else "node"


def _fleet_text(a: Arguments) -> Tuple[str, bool]:
    """The fleet as the configuration line names it, and whether that names a node count the call sets: its
    name, or where the call prices another number of accelerators than the name states (``count`` set, or a
    record copied with another count under its old name), ``"<name>, resized to 8 nodes (64 accelerators)"``.
    The catalogs' names state the count first in parentheses (``"... (1024 H100 SXM)"``, ``"Research Cluster
    (256 GPUs)"``); a name that does not is annotated only when ``count`` differs from the record's."""
    count = a.get("count")
    if "count" in a.searched or _varies(count):
        return a.fleet.name, False
    nodes = int(count) if count is not None else a.fleet.count
    per = a.get("accelerators_per_node")
    per = a.fleet.node.accelerators_per_node if per is None or _varies(per) else int(per)
    n = nodes * per
    stated = [int(c.replace(",", "")) for c in re.findall(r"\((\d[\d,]*) ", a.fleet.name)]
    if stated:      # the last count in parentheses (a plan file's resized fleet: "(8 H200 SXM) (512 GPUs; ...")
        same = stated[-1] == n
    else:
        same = nodes == a.fleet.count and per == a.fleet.node.accelerators_per_node
    if same:
        return a.fleet.name, False
    word = node_word(a.fleet)
    return (f"{a.fleet.name}, resized to {nodes} {word}{'s' if nodes != 1 else ''} ({n:,} "
            f"accelerator{'s' if n != 1 else ''})"), True


def _record_default(a: Arguments, p: Param):
    """The workload's own value of a keyword that defaults to it (``kv_fraction``: the keys' and values' width of
    a card, or of the heads a record lists), or None (no such field, or the record does not set it)."""
    return getattr(a.workload, p.record_default, None) if p.record_default else None


def _moves(a: Arguments, name: str) -> bool:
    """Whether the extended model's keyword ``name`` moves any of ``solve()``'s numbers for one configuration
    ``a`` (its value against its default: an attention efficiency without an architecture card's attention, an
    EP overlap without experts move nothing). True where ``a`` varies or cannot be priced (nothing is claimed)."""
    if any(_varies(v) for v in a.keywords) or any(_varies(v) for _, v in a.fields):
        return True
    try:
        c = compile_quantities(a.variant, solve_quantities(a.variant), "math")
        p = keywords()[name]
        own = _record_default(a, p)
        other = a.replace(**{name: p.default if own is None else own})
        with np.errstate(all="ignore"):
            return tuple(c.fn(*(a.values[x] for x in c.args))) != tuple(c.fn(*(other.values[x] for x in c.args)))
    except Exception:       # a configuration solve() refuses: its own error says why, not this line
        return True


def _part(p: Param, v, always: bool = False) -> str:
    """One keyword in a configuration line ('' at its default)."""
    if _varies(v):
        return f"{p.short} {_values(v, as_given)}"
    if p.kind is Kind.FLAG and p.argument != "zero_stage":
        return p.short if _truth(v) else ""
    if not always and _same_number(v, p.default):
        return ""
    if isinstance(v, (bool, np.bool_)):     # a count given as a bool (tp_size=True): mlsysim's 1, an int
        v = int(v)
    return f"{p.short} {as_given(v)}"


def _truth(v) -> bool:
    try:
        return bool(v)
    except Exception:
        return True


def _varies(v) -> bool:
    """A list, a tuple, a range or an array of values (numpy is not imported to ask)."""
    return isinstance(v, (list, tuple, range)) or getattr(v, "ndim", 0) > 0


def _values(v, fmt) -> str:
    """One value, or a list of them (``1,2,4,8``; ``1..512 (512 values)`` beyond six)."""
    if not _varies(v):
        return fmt(v)
    xs = _flat(v)
    if not xs:      # an empty axis: an empty sweep, said so (it read "tp ,")
        return "(no values)"
    if len(xs) <= 6:
        return ",".join(fmt(x) for x in xs)
    return f"{fmt(xs[0])}..{fmt(xs[-1])} ({len(xs)} values)"


def _flat(v) -> list:
    """The values of a list or an array, flattened."""
    if hasattr(v, "ravel"):
        return v.ravel().tolist()
    return [y for x in v for y in (_flat(x) if _varies(x) else [x])]


def parameters_of(model: WorkloadLike, fleet: FleetLike, **kwargs) -> Tuple[Variant, Dict[sp.Symbol, object]]:
    """``(variant, values)`` of one ``DistributedModel().solve(model, fleet, **kwargs)`` call (``fidelity=`` and
    ``without=`` choose the model; record fields may be set too).

    ``values`` maps every free symbol of ``build_model(variant)`` to its number, after exactly the checks (same
    errors, same warnings) and lowering of ``solve()``, so that ``build_model(variant)[q].subs(values)`` and
    ``sympy.lambdify`` of any quantity give ``solve()``'s numbers.
    """
    a = checked(model, fleet, kwargs, caller="parameters_of", stacklevel=4)
    return a.variant, a.values


def checked(model: WorkloadLike, fleet: FleetLike, kwargs: Mapping[str, object], *, caller: str = "solve",
            choice: Optional[ModelChoice] = None, stacklevel: int = 4) -> Arguments:
    """:func:`arguments`, checked as ``solve()`` checks one configuration (its errors raised, its warnings
    warned; :func:`mlsysim_sym.checks.check`); a caller other than ``solve()`` also refuses the values it is given
    that a sweep masks (:func:`mlsysim_sym.checks.check_given`: ``peak_flops=0``, 8.5 microbatches)."""
    a = arguments(model, fleet, kwargs, caller=caller, choice=choice)
    refuse_text(a, one=True)           # one configuration: a list is no switch either
    if caller != "solve":
        check_given(a)
    check(a, stacklevel=stacklevel)
    return a
