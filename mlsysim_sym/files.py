"""Records from files: a plan written for ``mlsysim eval`` (YAML, read as it is), and its documented extension for
architecture cards and full hardware records (YAML, TOML or JSON); ``docs/files.md`` is the format.

mlsysim's plan (``mlsysim schema -t plan``)::

    version: "1"
    name: llama70b-on-h100
    workload: {name: Llama3_70B, batch_size: 256, seq_len: 4096}
    hardware: {name: H100, node_count: 32, accelerators_per_node: 8, fabric_bandwidth: 50 GB/s,
               precision: bf16, efficiency: 0.45}
    ops: {region: US_Avg, duration_days: 30}

The fleet is built as ``mlsysim eval`` builds it (``MlsysPlanSchema``): accelerators per node from the plan,
else the hardware's own count (72 for ``GB200_NVL72``), else 1; the NVLink bandwidth from the plan, else the
hardware's NVLink, else its host link, else the fabric's; a fabric of ``fabric_bandwidth`` (50 GB/s when not
given). The plan's batch, sequence length, precision and efficiency are ``solve()``'s keywords
(:attr:`Document.keywords`); whole numbers and reals are read as mlsysim's schema reads them (pydantic's lax mode:
``256.0`` and ``"256"`` are 256, ``"0.45"`` is 0.45). ``workload.name`` and ``hardware.name`` may name a model
or hardware file in mlsysim's own layout (a name ending in ``.yaml`` or ``.yml``, found beside the plan or from
the working directory, where ``mlsysim eval`` opens it), read as mlsysim reads it: its classes' fields, pint's
units; a model file alone is a workload too (``solve("mymodel.yaml", "Research_256")``). The extension adds,
beside mlsysim's keys:

* ``architecture:`` an architecture card (:class:`~mlsysim_sym.architecture.Architecture`'s fields) as the
  workload (``workload.name`` then names it, or is left out);
* ``workload.name`` and ``hardware.fleet`` may name the modern catalog (``modern/DeepSeek-V3``,
  ``modern/B200-1024``);
* ``hardware.accelerator:`` a full accelerator record instead of ``hardware.name`` (``peak_flops``,
  ``memory_capacity``, ``memory_bandwidth``, and optionally ``precision_flops``, ``tdp``, ``pcie_bandwidth``,
  ``nvlink_latency``, ``dispatch_tax``); ``hardware.fabric:`` a full fabric (``bandwidth``,
  ``oversubscription_ratio``, ``latency``);
* ``training:`` the rest of ``solve()``'s keywords (every keyword of the parameter table,
  :func:`mlsysim_sym.symbols.keywords`, but the batch, sequence and efficiency of mlsysim's sections) and the
  model choice (``fidelity``, ``without``): ``{tp_size: 8, pp_size: 4, fidelity: extended, cp_size: 2}``.

Magnitudes are numbers in SI units or strings with a unit (``"400 Gb/s"``, ``"80 GiB"``, ``"3.35 TB / s"``,
``"989.5 TFLOP/s"``, ``"700 W"``, ``"5 us"``): pint's spellings of mlsysim's units and a few more, read by a small
parser (never evaluated). A bad file is a ``ValueError`` of one line naming the file, the field and the allowed
values.
"""
from __future__ import annotations

import json
import math
import os
import re
import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any, Dict, Optional, Tuple

from . import catalog, modern
from .architecture import CARD_FIELDS, Architecture
from .mechanisms import FIDELITIES, ModelChoice
from .symbols import Kind
from .symbols import keywords as table_keywords
from .types import Accelerator, Fabric, Fleet, Node, Workload, record_heads

#: The endings a file name may have, by format.
SUFFIXES = {".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".json": "json"}


_ENDINGS = tuple(SUFFIXES) + tuple(k.upper() for k in SUFFIXES)


def is_file_name(text: object) -> bool:
    """Whether a model or fleet argument names a file (by its ending) rather than a catalog entry."""
    if isinstance(text, str):
        return text.endswith(_ENDINGS)
    return isinstance(text, os.PathLike) and os.fspath(text).lower().endswith(tuple(SUFFIXES))


class FileError(ValueError):
    """A file that cannot be read as a plan: one line naming the file and the field."""


@dataclass(frozen=True)
class Document:
    """What a file describes: the workload (None when it has none), the fleet (None likewise), and ``solve()``'s
    keywords it sets (batch, sequence length, precision, efficiency, and those of its ``training:`` section);
    ``model``: the model choice its ``training:`` section gives (``fidelity``, ``without``: the arguments of
    :class:`~mlsysim_sym.solver.DistributedModel`); ``training``: the keywords that section sets, in its order.

    ``DistributedModel(**doc.model).solve(path, path, **doc.keywords)`` prices the plan ``doc = load(path)``.

    ``kind``: ``"plan"``, or ``"model"`` for a model file in mlsysim's own layout (a workload, nothing else);
    ``sources``: the model and hardware files the plan names, each as (name, path read, its mtime and size)."""

    path: str
    workload: Optional[Workload] = None
    fleet: Optional[Fleet] = None
    keywords: Dict[str, object] = field(default_factory=dict)
    name: str = ""
    model: Dict[str, object] = field(default_factory=dict)
    training: Tuple[str, ...] = ()
    kind: str = "plan"
    sources: Tuple[Tuple[str, str, Tuple[int, int]], ...] = field(default=(), compare=False, repr=False)

    def section_keywords(self, section: str) -> Dict[str, object]:
        """The keywords one section sets: ``"workload"`` (batch, sequence), ``"hardware"`` (precision,
        efficiency) or ``"training"`` (the others it gives)."""
        own = {"workload": ("batch_size", "seq_len"), "hardware": ("precision", "efficiency"),
               "training": self.training}[section]
        return {k: v for k, v in self.keywords.items() if k in own}


def unapplied(path, priced, choice, fleet) -> str:
    """What a plan file (``path``, the call's model) sets that a call priced at ``solve()``'s default instead
    (``priced(name)``: the value the call took; ``choice``: its :class:`~mlsysim_sym.mechanisms.ModelChoice`;
    ``fleet``: its fleet as given), as a sentence for a warning, or ``""``: ``solve(path, path)`` reads the file's
    workload and fleet, not its settings, which are ``solve()``'s arguments (``doc.keywords``, ``doc.model``). A
    value other than the default was given on purpose, and is not named."""
    from .inputs import SOLVE_DEFAULTS
    doc = load(path)
    if doc.kind != "plan":
        return ""
    left = [(k, v, priced(k)) for k, v in doc.keywords.items()
            if priced(k) != v and priced(k) in (SOLVE_DEFAULTS.get(k), None)]
    if doc.model.get("fidelity", choice.fidelity) != choice.fidelity:
        left.append(("fidelity", doc.model["fidelity"], choice.fidelity))
    if tuple(doc.model.get("without", choice.off)) != tuple(choice.off):
        left.append(("without", tuple(doc.model["without"]), tuple(choice.off)))
    if not left:
        return ""
    same = isinstance(fleet, (str, os.PathLike)) and os.fspath(fleet) == os.fspath(path)
    return (f"{os.fspath(path)}: the file sets {', '.join(f'{k} {v!r}' for k, v, _ in left)}; this call priced "
            f"{', '.join(f'{k} {p!r}' for k, _, p in left)} (a file gives solve() its workload and fleet; its "
            "settings are arguments): doc = mlsysim_sym.files.load(path); DistributedModel(**doc.model).solve("
            + ("path, path" if same else "path, fleet") + ", **doc.keywords) prices them")


# --------------------------------------------------------------------------------------------
# Magnitudes with units (a parser, not an evaluator)
# --------------------------------------------------------------------------------------------
# A unit is a product of the units below joined by "/" and "*" (spaces around them allowed: mlsysim's own files
# write "3.35 TB / s"); each unit has an exact factor (a Fraction), so "5 us" is the float nearest 5e-6, as the
# decimal was written, and a dimension over these bases:
_BASES = ("B", "flop", "s", "W", "count")
Dim = Tuple[int, ...]


def _dim(**exponents: int) -> Dim:
    return tuple(exponents.get(b, 0) for b in _BASES)


#: Each kind of magnitude: the words of its message, its SI unit and its dimension.
_KINDS = {
    "bandwidth": ("a bandwidth such as '50 GB/s', '3.35 TB / s', '50 GiB/s', '400 Gb/s' or '400 Gbps'", "B/s",
                  _dim(B=1, s=-1)),
    "bytes": ("a size such as '80 GiB', '141 GB' or '80 gigabyte'", "B", _dim(B=1)),
    "rate": ("a rate such as '989.5 TFLOP/s', '1200 TFLOPs / s', '2.25 PFLOPS' or '1979 TOPS'", "flop/s",
             _dim(flop=1, s=-1)),
    "power": ("a power such as '700 W', '800 watt' or '1.2 kW'", "W", _dim(W=1)),
    "time": ("a time such as '5 us', '500 ns', '0.01 ms' or '5 microsecond'", "s", _dim(s=1)),
    "flops": ("a number of operations such as '26e9 flop' or '26 GFLOP'", "flop", _dim(flop=1)),
    "energy": ("an energy such as '20 kJ', '1.5 MJ' or '300 J'", "J", _dim(W=1, s=1)),
    "count": ("a count such as '13e9 param' or '13 Bparam'", "1", _dim(count=1)),
}
#: The words where a file of mlsysim's own layout (read with pint) allows fewer spellings.
_PINT_WORDS = {"bandwidth": "a bandwidth such as '50 GB/s', '3.35 TB / s', '50 GiB/s', '400 Gbit/s' or '400 Gbps'",
               "rate": "a rate such as '989.5 TFLOP/s', '1200 TFLOPs / s' or '1979 TOPS'"}
_DECIMAL = {"k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18, "Z": 21}
_DECIMAL_WORDS = {"kilo": 3, "mega": 6, "giga": 9, "tera": 12, "peta": 15, "exa": 18, "zetta": 21}
_SMALL = {"m": -3, "u": -6, "\u00b5": -6, "\u03bc": -6, "n": -9, "p": -12}     # µ (micro sign) and μ (Greek mu)
_SMALL_WORDS = {"milli": -3, "micro": -6, "nano": -9, "pico": -12}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BINARY_WORDS = {"kibi": 10, "mebi": 20, "gibi": 30, "tebi": 40, "pebi": 50, "exbi": 60}


def _pint_units() -> Dict[str, Tuple[Fraction, Dim]]:
    """The unit names mlsysim's pint registry reads (pint's own and ``mlsysim/core/mlsysim_units.txt``) that these
    kinds use, each with its exact factor and its dimension; ``tests/test_files.py`` checks every one with pint."""
    out: Dict[str, Tuple[Fraction, Dim]] = {}

    def put(names, factor, dim):
        for n in names:
            out[n] = (Fraction(factor), dim)

    ten, two = Fraction(10), Fraction(2)
    byte, bit, flop, sec, watt = _dim(B=1), _dim(B=1), _dim(flop=1), _dim(s=1), _dim(W=1)
    put(("B", "byte", "bytes"), 1, byte)
    put(("bit", "bits"), Fraction(1, 8), bit)
    for p, e in _DECIMAL.items():
        put((p + "B", p + "byte"), ten ** e, byte)
        put((p + "bit",), ten ** e / 8, bit)
        put((p + "flop", p + "flops"), ten ** e, flop)
        put((p + "OPS",), ten ** e, _dim(flop=1, s=-1))              # pint's kOPS; mlsysim's MOPS ... TOPS
    for w, e in _DECIMAL_WORDS.items():
        put((w + "byte", w + "bytes"), ten ** e, byte)
        put((w + "bit", w + "bits"), ten ** e / 8, bit)
        put((w + "flop", w + "flops"), ten ** e, flop)
    for p, e in _BINARY.items():
        put((p + "B", p + "byte"), two ** e, byte)
        put((p + "bit",), two ** e / 8, bit)
    for w, e in _BINARY_WORDS.items():
        put((w + "byte", w + "bytes"), two ** e, byte)
        put((w + "bit", w + "bits"), two ** e / 8, bit)
    put(("KB",), 10 ** 3, byte)                                           # mlsysim's (pint's K is the kelvin)
    put(("Gbps",), Fraction(10 ** 9, 8), _dim(B=1, s=-1))                 # mlsysim's: 1e9 bit/s
    put(("flop", "flops"), 1, flop)                                       # pint: "flops" is the plural of flop
    for p, e in {"K": 3, **{k: v for k, v in _DECIMAL.items() if k != "k"}}.items():
        put((p + "FLOP", p + "FLOPs"), ten ** e, flop)                    # mlsysim's KFLOP ... ZFLOPs
    put(("OPS",), 1, _dim(flop=1, s=-1))
    put(("KOPS",), 10 ** 3, _dim(flop=1, s=-1))                           # mlsysim's OPS ... TOPS: flop/s
    put(("s", "sec", "second", "seconds"), 1, sec)
    for p, e in _SMALL.items():
        put((p + "s", p + "sec"), ten ** e, sec)
    for w, e in _SMALL_WORDS.items():
        put((w + "second", w + "seconds"), ten ** e, sec)
    put(("MS",), Fraction(1, 10 ** 3), sec)
    put(("US",), Fraction(1, 10 ** 6), sec)                               # mlsysim's legacy MS, US, NS
    put(("NS",), Fraction(1, 10 ** 9), sec)
    put(("min", "minute", "minutes"), 60, sec)
    put(("h", "hr", "hour", "hours"), 3600, sec)
    put(("W", "watt", "watts"), 1, watt)
    for p, e in {**{k: _DECIMAL[k] for k in "kMGT"}, **_SMALL}.items():
        put((p + "W",), ten ** e, watt)
    for w, e in {**{k: _DECIMAL_WORDS[k] for k in ("kilo", "mega", "giga", "tera")}, **_SMALL_WORDS}.items():
        put((w + "watt", w + "watts"), ten ** e, watt)
    put(("J", "joule", "joules"), 1, _dim(W=1, s=1))
    put(("kJ", "kilojoule", "kilojoules"), 10 ** 3, _dim(W=1, s=1))
    put(("MJ", "megajoule", "megajoules"), 10 ** 6, _dim(W=1, s=1))
    put(("count", "counts", "param", "params"), 1, _dim(count=1))
    for p, e in {"K": 3, "M": 6, "B": 9, "T": 12}.items():
        put((p + "param",), ten ** e, _dim(count=1))                      # mlsysim's Kparam ... Tparam
    return out


#: The units mlsysim (pint) reads: name -> (exact factor to the SI unit, dimension).
PINT_UNITS = _pint_units()
#: The spellings this package reads beside pint's (in a plan, not in a file of mlsysim's own layout): FLOP and FLOPs
#: alone (pint knows only KFLOP ... ZFLOPs), FLOPS as a rate (2.25 PFLOPS), and Byte.
_EXTRA_UNITS = {
    **{n: (Fraction(f), _dim(flop=1)) for n, f in (("FLOP", 1), ("FLOPs", 1), ("kFLOP", 10 ** 3),
                                                   ("kFLOPs", 10 ** 3))},
    **{p + "FLOPS": (Fraction(10) ** e, _dim(flop=1, s=-1)) for p, e in (("", 0), ("K", 3), *_DECIMAL.items())},
    **{p + "Byte": (Fraction(10) ** e, _dim(B=1)) for p, e in (("", 0), ("K", 3), *_DECIMAL.items())},
}
#: Whole bandwidths read beside pint's: b for a bit before /s (pint's Gb is the gilbert), bps and Bps
#: (pint's bps is the baud), K for 1000.
_EXTRA_BANDWIDTHS = {p + u: Fraction(10) ** e / (8 if u in ("b/s", "bps", "bit/s") else 1)
                     for p, e in (("", 0), ("k", 3), ("K", 3), ("M", 6), ("G", 9), ("T", 12), ("P", 15))
                     for u in ("b/s", "bps", "bit/s", "B/s", "Bps", "Byte/s")}
_NUMBER = r"([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)"


def _unit_factor(unit: str, kind: str, strict: bool = False) -> Optional[Fraction]:
    """The exact factor of ``unit`` to the SI unit of ``kind``, or None when it is not a unit of that kind;
    ``strict``: pint's spellings only."""
    u = re.sub(r"\s*([/*])\s*", r"\1", unit.strip())
    if not strict and kind == "bandwidth" and u in _EXTRA_BANDWIDTHS:
        return _EXTRA_BANDWIDTHS[u]
    parts = re.split(r"([/*])", u)
    factor, dim = Fraction(1), [0] * len(_BASES)
    for i in range(0, len(parts), 2):
        entry = PINT_UNITS.get(parts[i]) or (None if strict else _EXTRA_UNITS.get(parts[i]))
        if entry is None:
            return None
        sign = -1 if i and parts[i - 1] == "/" else 1        # left to right, as pint reads a/b*c: (a/b)*c
        factor *= entry[0] ** sign
        dim = [d + sign * e for d, e in zip(dim, entry[1])]
    if tuple(dim) == _KINDS[kind][2]:
        return factor
    if not strict and kind == "rate" and len(parts) == 1 and parts[0].lower().endswith("flops") \
            and tuple(dim) == _dim(flop=1):
        return factor             # 2.25 PFLOPS, 989.5 flops, 1200 TFLOPs: a rate (pint: flops is a count)
    return None


def magnitude(value: object, kind: str, where: str, strict: bool = False, signed: bool = False) -> float:
    """A number in SI units, or a string ``"<number> <unit>"`` of the kind (``"bandwidth"``, ``"bytes"``,
    ``"rate"``, ``"power"``, ``"time"``, ``"flops"``, ``"count"``, ``"energy"``), as a float in SI units; else a
    :class:`FileError` naming ``where``. ``strict``: as mlsysim reads its own files (pint's spellings, and the
    unit is required); ``signed``: any finite value, the caller checking its range (else a time is at least 0, any
    other magnitude above 0)."""
    words, si, _ = _KINDS[kind]
    if strict:
        words = _PINT_WORDS.get(kind, words)
    x = None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not strict:
        try:
            x = float(value)
        except OverflowError:
            x = math.inf
    elif isinstance(value, str):
        m = re.fullmatch(r"\s*" + _NUMBER + r"\s*([^\d\s].*?)?\s*", value)
        factor = None
        if m and m.group(2):
            factor = _unit_factor(m.group(2), kind, strict)
            if factor is None and strict and _unit_factor(m.group(2), kind) is not None:
                raise FileError(f"{where}: expected {words}, got {value!r}: mlsysim reads its files' units with "
                                f"pint, which does not read {m.group(2).strip()!r} as {si}")
        elif m and not strict:
            factor = Fraction(1)
        if factor is not None:
            try:
                x = float(Fraction(m.group(1)) * factor)
            except OverflowError:
                x = math.inf
    if x is None:
        if strict and (isinstance(value, (int, float)) and not isinstance(value, bool)
                       or isinstance(value, str) and re.fullmatch(r"\s*" + _NUMBER + r"\s*", value)):
            raise FileError(f"{where}: expected {words}, got {value!r}: mlsysim needs the unit here (pint reads a "
                            "bare number as dimensionless)")
        raise FileError(f"{where}: expected {words}" + ("" if strict else f" (or a number in {si})")
                        + f", got {value!r}")
    ok = -math.inf < x < math.inf if signed else 0 <= x < math.inf if kind == "time" else 0 < x < math.inf
    if not ok and signed:
        raise FileError(f"{where}: must be finite, got {value!r}")
    if not ok:
        raise FileError(f"{where}: must be {'>= 0' if kind == 'time' else '> 0'} and finite, got {value!r}")
    if isinstance(value, (int, float)) and kind in _IMPLAUSIBLE and x < _IMPLAUSIBLE[kind][0]:
        meant = " or ".join(f"'{value!r} {u}'" for u in _IMPLAUSIBLE[kind][1])
        warnings.warn(f"{where}: the bare number {value!r} is read in SI units, {value!r} {si}; write the unit "
                      f"meant, such as {meant}", UserWarning, stacklevel=2)
    return x


#: The kind of magnitude of each SI unit (``"B"``: ``"bytes"``): the unit of a parameter or an output says how a
#: value written with a unit is read (the command line's ``--memory-capacity 141GB``, ``--target "40 GB"``).
KIND_OF_UNIT = {si: kind for kind, (_, si, _) in _KINDS.items() if si != "1"}


def example_of(unit: str) -> Optional[str]:
    """The first example of a quantity in ``unit`` written with a unit, without a space (one word, which a help
    text does not break: ``"B"``: ``'80GiB'``), or None where values in ``unit`` are bare numbers."""
    kind = KIND_OF_UNIT.get(unit)
    return re.search(r"'([^']+)'", _KINDS[kind][0]).group(1).replace(" ", "") if kind else None


def reading(text: str, unit: str, where: str) -> float:
    """``text`` as a value in ``unit``: a number in it, or a number with a unit of its kind (``"141 GB"`` for
    ``"B"``, ``"400 Gb/s"`` for ``"B/s"``), in SI units, any finite value (the caller checks the range: ``"0 W"``
    reads as ``0``, as ``0`` does); else a :class:`FileError` naming ``where`` and what it reads.

    >>> reading("141 GB", "B", "--memory-capacity"), reading("5us", "s", "--fabric-latency")
    (141000000000.0, 5e-06)
    >>> reading("400 Gb/s", "B/s", "--fabric-bandwidth"), reading("20 kJ", "J", "--target")
    (50000000000.0, 20000.0)
    >>> reading("0 W", "W", "--tdp")
    0.0
    """
    kind = KIND_OF_UNIT.get(unit)
    if kind is None:
        try:
            return float(text)
        except ValueError:
            raise FileError(f"{where}: expected a number" + ("" if unit == "1" else f" in {unit} (no unit is read "
                            "for it)") + f", got {text!r}") from None
    return magnitude(text, kind, where, signed=True)


#: A bare number below which a magnitude is almost surely written in a larger unit (a fabric of 800 B/s, an
#: accelerator of 80 B): the SI reading and the unit the file likely meant.
_IMPLAUSIBLE = {"bandwidth": (1e6, ("GB/s", "Gb/s")), "bytes": (1e6, ("GB", "GiB")), "rate": (1e9, ("TFLOP/s",))}


# --------------------------------------------------------------------------------------------
# Numbers as mlsysim's plan schema (pydantic, lax mode) reads them
# --------------------------------------------------------------------------------------------
_DIGITS = r"[0-9]+(?:_[0-9]+)*"
#: pydantic's whole number in a string: digits (single underscores between them), and a fraction of zeros
_WHOLE_TEXT = re.compile(r"[-+]?" + _DIGITS + r"(?:\.0+)?")
#: pydantic's (and Python's) real number in a string, without inf and nan
_REAL_TEXT = re.compile(r"[-+]?(?:" + _DIGITS + r"(?:\.(?:" + _DIGITS + r")?)?|\." + _DIGITS + r")(?:[eE][-+]?"
                        + _DIGITS + r")?")


def lax_whole(v) -> Optional[int]:
    """``v`` as a whole number the way pydantic's lax mode reads an ``int`` field (256, 256.0, "256", " 256 ",
    "256.0", "1_024"), or None; never a boolean (pydantic's True is 1: not here)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(v) if math.isfinite(v) and v.is_integer() else None
    if isinstance(v, str) and len(v) <= 100 and _WHOLE_TEXT.fullmatch(v.strip()):
        return int(v.strip().split(".")[0].replace("_", ""))
    return None


def lax_real(v) -> Optional[float]:
    """``v`` as a finite real number the way pydantic's lax mode reads a ``float`` field (0.45, 1, "0.45",
    "4.5e-1"), or None; never a boolean, NaN or an infinity."""
    if isinstance(v, bool):
        return None
    x = None
    if isinstance(v, (int, float)):
        try:
            x = float(v)
        except OverflowError:
            return None
    elif isinstance(v, str) and len(v) <= 1000 and _REAL_TEXT.fullmatch(v.strip()):
        x = float(v.strip().replace("_", ""))
    return x if x is not None and math.isfinite(x) else None


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------
def _unique_pairs(pairs):
    """A JSON object whose keys are given once each (json keeps the last of a repeated key, silently)."""
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"the key {k!r} is given twice")
        out[k] = v
    return out


@lru_cache(maxsize=1)
def _unique_keys_loader(yaml):
    """PyYAML's safe loader, refusing a mapping that gives a key twice (it keeps the last, silently)."""
    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise yaml.constructor.ConstructorError(None, None, f"the key {key!r} is given twice",
                                                            key_node.start_mark)
                seen.add(key)
            return super().construct_mapping(node, deep=deep)
    return Loader


def _read(path: str, what: str = "sections (version, name, workload, hardware, ...)") -> Dict[str, Any]:
    fmt = SUFFIXES.get(os.path.splitext(path)[1].lower())
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as e:
        raise FileError(f"{path}: cannot read the file ({e.strerror or e})") from None
    try:
        if fmt == "yaml":
            try:
                import yaml
            except ImportError:
                raise FileError(f"{path}: reading YAML needs PyYAML (pip install pyyaml); or write the plan "
                                "as TOML (.toml) or JSON (.json)") from None
            data = yaml.load(raw.decode("utf-8"), Loader=_unique_keys_loader(yaml))
        elif fmt == "toml":
            import tomllib       # refuses a key given twice itself
            data = tomllib.loads(raw.decode("utf-8"))
        else:
            data = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique_pairs)
    except FileError:
        raise
    except Exception as e:     # the parsers' own errors: one line, with where the parser stopped
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        mark = getattr(e, "problem_mark", None)     # YAML's: where it stopped (TOML and JSON name it themselves)
        if mark is not None and getattr(e, "problem", None):
            start = getattr(e, "context_mark", None)
            first = (f"{e.problem} (line {mark.line + 1}, column {mark.column + 1})"
                     + (f", {e.context} from line {start.line + 1}" if start is not None and e.context else ""))
        raise FileError(f"{path}: not valid {fmt.upper()}: {first}") from None
    if not isinstance(data, dict):
        raise FileError(f"{path}: expected a mapping of {what}, got {type(data).__name__}")
    return data


_TOP = ("version", "name", "workload", "hardware", "ops", "constraints", "architecture", "training")
_WORKLOAD = ("name", "batch_size", "seq_len")
_HARDWARE = ("name", "accelerators", "node_count", "accelerators_per_node", "intra_node_bw", "fabric_bandwidth",
             "precision", "efficiency", "accelerator", "fabric", "fleet")
_ACCELERATOR = {"name": None, "peak_flops": "rate", "memory_capacity": "bytes", "memory_bandwidth": "bandwidth",
                "precision_flops": None, "tdp": "power", "pcie_bandwidth": "bandwidth", "nvlink_latency": "time",
                "dispatch_tax": "time"}
_FABRIC = {"name": None, "bandwidth": "bandwidth", "oversubscription_ratio": None, "latency": "time"}


def _mapping(sec, allowed, at: str, what: str) -> Dict[str, Any]:
    """``sec`` when it is a mapping of fields ``allowed`` (``what`` names its kind in the message)."""
    if not isinstance(sec, dict):
        raise FileError(f"{at}: expected a mapping of {', '.join(allowed)}, got {sec!r}")
    for k in sec:
        if k not in allowed:
            raise FileError(f"{at}.{k}: unknown field; {what} {', '.join(allowed)}")
    return sec


#: The sections mlsysim's plan types as a mapping, never empty (``MlsysPlanSchema``: ``workload``, ``hardware``);
#: ``ops`` and ``constraints`` may be empty there (``Optional``).
_NOT_EMPTY = ("workload", "hardware")


def _section(doc: Dict[str, Any], key: str, allowed, path: str) -> Dict[str, Any]:
    sec = doc.get(key)
    if sec is None and key in doc and key in _NOT_EMPTY:
        # "hardware:" with nothing under it: mlsysim eval refuses it; here it read as no section, and the command
        # line priced the plan on its default fleet unsaid
        raise FileError(f"{path}: {key}: empty; give its fields ({', '.join(allowed[:3])}, ...) or leave the "
                        "section out")
    return {} if sec is None else _mapping(sec, allowed, f"{path}: {key}", f"{key} takes")


def _whole(sec, key, at, lo=1, empty: bool = True):
    """A whole number as mlsysim's schema (pydantic's lax mode) reads one: 256, 256.0 or "256"; an empty value
    (YAML's null) only where mlsysim's schema allows one (``empty``: ``Optional``), else refused as it refuses it."""
    v = sec.get(key)
    if v is None and key in sec and not empty:
        raise FileError(f"{at}.{key}: empty; give a whole number >= {lo} or leave the field out (its default)")
    if v is None:
        return None


    n = lax_whole(v)
    if n is None or n < lo or n > MAX_WHOLE:
        raise FileError(f"{at}.{key}: must be a whole number >= {lo} and at most 2**53, got {_shown(v)}")
    return n


def _name(sec, key, at) -> Optional[str]:
    v = sec.get(key)
    if v is not None and (not isinstance(v, str) or not v.strip()):
        raise FileError(f"{at}.{key}: must be a name (a string), got {v!r}")
    return v


def load(path: str) -> Document:
    """The workload, fleet and keywords a plan file describes (see the module docstring), or the workload of a
    model file in mlsysim's own layout; read once while the file and the files it names are unchanged."""
    path = os.fspath(path)
    try:
        st = os.stat(path)
    except OSError as e:
        raise FileError(f"{path}: cannot read the file ({e.strerror or e})") from None
    doc = _load(path, st.st_mtime_ns, st.st_size)
    if doc.sources and not all(_found(name, path) == (read, stamp) for name, read, stamp in doc.sources):
        _load.cache_clear()               # a file it names changed (or the working directory did): read again
        doc = _load(path, st.st_mtime_ns, st.st_size)
    return doc


@lru_cache(maxsize=64)
def _load(path: str, mtime: int, size: int) -> Document:
    doc = _read(path)
    own = _own_layout(doc)           # a model file of mlsysim's own layout, as mlsysim eval MODEL.yaml reads it
    if own == "model":
        if SUFFIXES.get(os.path.splitext(path)[1].lower()) != "yaml":
            raise FileError(f"{path}: a model file in mlsysim's own layout is YAML (.yaml or .yml), as mlsysim "
                            "reads it; or write a plan with an architecture: section")
        w = _own_workload(doc, path)
        return Document(path, workload=w, name=w.name, kind="model")
    if own == "hardware":
        raise FileError(f"{path}: a hardware file in mlsysim's own layout describes one accelerator, not a fleet: "
                        "name it in a plan's hardware.name, with node_count and accelerators_per_node")
    for k in doc:
        if k not in _TOP:
            raise FileError(f"{path}: {k}: unknown section; a plan has {', '.join(_TOP)}")
    for k in ("version", "name"):       # strings in mlsysim's plan (version: "1", not 1)
        if k in doc and not isinstance(doc[k], str):
            raise FileError(f"{path}: {k}: must be a string, as in mlsysim's plan (version: \"1\", name: my-run), "
                            f"got {_shown(doc[k])}")
    ops = _section(doc, "ops", ("region", "duration_days"), path)
    if "duration_days" in ops and not (lax_real(ops["duration_days"]) or 0) > 0:
        raise FileError(f"{path}: ops.duration_days: must be a number > 0, got {_shown(ops['duration_days'])}")
    constraints = _section(doc, "constraints", ("assert",), path)
    for i, rule in enumerate(constraints.get("assert") or ()):
        if not isinstance(rule, dict) or "metric" not in rule or set(rule) - {"metric", "max", "min"}:
            raise FileError(f"{path}: constraints.assert[{i}]: expected metric and max or min, got {rule!r}")
    keywords: Dict[str, object] = {}
    sources: list = []
    workload = _workload(doc, path, keywords, sources)
    fleet = _fleet(doc, path, keywords, sources)
    model, training = _training(doc, path, keywords)
    name = doc.get("name") if isinstance(doc.get("name"), str) else ""
    return Document(path, workload, fleet, keywords, name, model, training, sources=tuple(sources))


#: The keywords of the parameter table that mlsysim's own sections carry, and the section that carries each.
_ELSEWHERE = {"batch_size": "workload", "seq_len": "workload", "efficiency": "hardware", "precision": "hardware"}
#: The largest whole number a file may give: the command line's bound (integers are exact in float64 to 2**53).
MAX_WHOLE = 2 ** 53


def _training(doc, path, keywords) -> Tuple[Dict[str, object], Tuple[str, ...]]:
    """The ``training:`` section: the model choice, and the keywords it sets (each checked against its row of
    the parameter table: its kind and range; an extended model's keyword needs ``fidelity: extended`` beside
    it)."""
    sec = doc.get("training")
    if sec is None:
        return {}, ()
    table = table_keywords()
    allowed = ("fidelity", "without") + tuple(k for k in table if k not in _ELSEWHERE)
    at = f"{path}: training"
    if not isinstance(sec, dict):
        raise FileError(f"{at}: expected a mapping of solve()'s keywords (tp_size, pp_size, ...), fidelity and "
                        f"without, got {sec!r}")
    for k in sec:
        if k in _ELSEWHERE:
            raise FileError(f"{at}.{k}: give it in the {_ELSEWHERE[k]}: section (as mlsysim's plan does)")
        if k not in allowed:
            raise FileError(f"{at}.{k}: unknown field; training takes {', '.join(allowed)}")
    fidelity = sec.get("fidelity", "mlsysim")
    if fidelity not in FIDELITIES:
        raise FileError(f"{at}.fidelity: must be one of {', '.join(FIDELITIES)}, got {fidelity!r}")
    without = sec.get("without", ())
    if isinstance(without, str):
        without = tuple(x.strip() for x in without.split(",") if x.strip())
    if not isinstance(without, (list, tuple)) or not all(isinstance(x, str) for x in without):
        raise FileError(f"{at}.without: expected a list of mechanism names, got {without!r}")
    try:
        choice = ModelChoice(fidelity, tuple(without))
    except ValueError as e:
        text = str(e).removeprefix("without: ").replace("pass fidelity='extended'",
                                                         "add fidelity: extended to training:")
        raise FileError(f"{at}.without: {text}") from None
    set_here = []
    for k, v in sec.items():
        if k in ("fidelity", "without"):
            continue
        p = table[k]
        if p.fidelity == "extended" and not choice.extended:
            raise FileError(f"{at}.{k}: an argument of the extended model; add fidelity: extended to training:")
        keywords[k] = _keyword(v, k, p, f"{at}.{k}")
        set_here.append(k)
    model = {k: v for k, v in (("fidelity", choice.fidelity), ("without", choice.off)) if k in sec}
    return model, tuple(set_here)


def _keyword(v, name: str, p, at: str):
    """One keyword's value as its row of the parameter table reads it: a switch is true or false (or 1 or 0); a
    count a whole number; a magnitude a number; each in the row's range."""
    from .inputs import FLAG_KEYWORDS          # inputs reads files: imported on use
    r, raw = p.range, v
    if name in FLAG_KEYWORDS:
        if v in (True, False) and not isinstance(v, float):
            return bool(v)
        raise FileError(f"{at}: must be true or false (or 1 or 0), got {v!r}")
    if p.kind in (Kind.COUNT, Kind.FLAG):                  # zero_stage is a FLAG-kind count
        v = lax_whole(v)                                   # 8, 8.0 or "8", as the workload: section reads it
        if v is None or abs(v) > MAX_WHOLE:
            raise FileError(f"{at}: must be a whole number {r.text} (at most 2**53), got {_shown(raw)}")
    else:
        # YAML 1.1 reads 1e-3 (no dot) as a string: a number written plainly is one, no other string
        v = lax_real(v)
        if v is None:
            raise FileError(f"{at}: must be a finite number {r.text}, got {_shown(raw)}")
    if r is not None and v not in r:
        raise FileError(f"{at}: must be {r.text}, got {_shown(raw)}")
    return v


def _shown(v) -> str:
    """A value in a message: its repr, shortened (a 400-digit integer is not printed whole)."""
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _workload(doc, path, keywords, sources) -> Optional[Workload]:
    w = _section(doc, "workload", _WORKLOAD, path)
    at = f"{path}: workload"
    for key in ("batch_size", "seq_len"):
        v = _whole(w, key, at, empty=False)
        if v is not None:
            keywords[key] = v
    name = _name(w, "name", at)
    card = doc.get("architecture")
    if card is not None:
        if name is not None and is_reference(name):
            raise FileError(f"{at}.name: {name!r} names a model file; with an architecture: section, name the card "
                            "itself (or leave workload.name out)")
        if name is not None and (name in catalog.workload_names() or name.startswith(modern.PREFIX)):
            raise FileError(f"{at}.name: {name!r} names a catalog workload; with an architecture: section, name "
                            "the card itself (or leave workload.name out)")
        return _card(card, name, path).workload()
    if name is None:
        return None
    if is_reference(name):                 # a model file, as mlsysim eval reads one (its _resolve_model)
        read, data = _reference(name, path, f"{at}.name", sources, "model")
        return _own_workload(data, f"{at}.name: {read}")
    if name.startswith("hf://"):
        raise FileError(f"{at}.name: {name!r}: mlsysim's import from the Hugging Face Hub is not read here (it needs "
                        "the network); save the model as a model file (.yaml) or describe it in an architecture: "
                        "section")
    try:
        if name.startswith(modern.PREFIX):
            return modern.workload(name)
        return catalog.workload(name)
    except KeyError as e:
        raise FileError(f"{at}.name: {e.args[0]}{_not_a_reference(name)}; or describe the model in an "
                        "architecture: section") from None


def _card(card, name, path) -> Architecture:
    at = f"{path}: architecture"
    fields = dict(_mapping(card, CARD_FIELDS, at, "an architecture card has"))
    fields.setdefault("name", name or os.path.splitext(os.path.basename(path))[0])
    missing = [k for k in ("layers", "hidden", "heads", "vocab") if k not in fields]
    if missing:
        raise FileError(f"{at}: missing {', '.join(missing)} (a card needs layers, hidden, heads and vocab)")
    try:
        return Architecture(**fields)
    except ValueError as e:
        raise FileError(f"{at}: {str(e).split(': ', 1)[-1]}") from None


def _fleet(doc, path, keywords, sources) -> Optional[Fleet]:
    h = _section(doc, "hardware", _HARDWARE, path)
    if not h:
        return None
    at = f"{path}: hardware"
    if "precision" in h:
        from .inputs import PRECISION_BYTES     # inputs reads this module: imported when a plan is read
        p = h["precision"]
        if not isinstance(p, str) or p.lower() not in PRECISION_BYTES:
            raise FileError(f"{at}.precision: must be one of {', '.join(PRECISION_BYTES)}, got {p!r}")
        keywords["precision"] = p.lower()
    if "efficiency" in h:
        e = lax_real(h["efficiency"])         # 0.45 or "0.45", as mlsysim's schema reads it
        if e is None or not 0 < e <= 1:
            raise FileError(f"{at}.efficiency: must be a number in (0, 1], got {_shown(h['efficiency'])}")
        keywords["efficiency"] = e
    given = [k for k in ("name", "accelerator", "fleet") if k in h]
    if len(given) != 1:
        raise FileError(f"{at}: give exactly one of name (mlsysim's Hardware registry: H100, B200, GB200_NVL72, "
                        f"..., or a hardware file), accelerator (a full record) or fleet (a catalog fleet), got "
                        f"{', '.join(given) or 'none'}")
    if "fleet" in h:
        return _catalog_fleet(h, at)
    count = nvlink = host = None
    if "name" in h and is_reference(h["name"]):         # a hardware file, as mlsysim eval reads one
        label = h["name"]
        read, data = _reference(label, path, f"{at}.name", sources, "hardware")
        acc, count, nvlink, host = _own_hardware(data, f"{at}.name: {read}")
    elif "name" in h:
        name = _name(h, "name", at)
        try:
            acc, count, nvlink, host = catalog.hardware(name)
        except KeyError as e:
            raise FileError(f"{at}.name: {e.args[0]}{_not_a_reference(name)}") from None
        label = name
        if count and acc.name.endswith(f"NVL{count}"):      # mlsysim's record of a whole rack, counted 72 a node
            warnings.warn(f"{at}.name: {name} is mlsysim's registry entry, whose accelerator record "
                          f"'{acc.name}' is a whole rack ({acc.peak_flops:.3g} FLOP/s, "
                          f"{acc.memory_capacity / 1e12:.3g} TB of HBM), counted as one accelerator as mlsysim "
                          f"eval counts it; for its GPUs use hardware.fleet: modern/GB200-NVL72-1152",
                          UserWarning, stacklevel=2)
    else:
        acc = _accelerator(h["accelerator"], f"{at}.accelerator")
        label = acc.name
    apn = _whole(h, "accelerators_per_node", at) or count or 1
    nodes, total = _whole(h, "node_count", at), _whole(h, "accelerators", at)
    if nodes is not None and "accelerators_per_node" not in h:
        raise FileError(f"{at}.node_count: requires hardware.accelerators_per_node (as mlsysim eval does)")
    if nodes is not None and total is not None and nodes * apn != total:
        raise FileError(f"{at}: node_count * accelerators_per_node must equal accelerators, got "
                        f"{nodes} * {apn} != {total}")
    total = nodes * apn if nodes is not None else (total or 1)
    if total % apn:
        raise FileError(f"{at}: the accelerators ({total}) must be a multiple of accelerators_per_node ({apn})")
    if "fabric" in h and "fabric_bandwidth" in h:
        raise FileError(f"{at}: give one of fabric_bandwidth (mlsysim's) and fabric (a full record), not both")
    fab_bw = magnitude(h.get("fabric_bandwidth", 50e9), "bandwidth", f"{at}.fabric_bandwidth")
    intra = (magnitude(h["intra_node_bw"], "bandwidth", f"{at}.intra_node_bw") if "intra_node_bw" in h
             else nvlink or host or fab_bw)
    fabric = (_fabric(h["fabric"], f"{at}.fabric") if "fabric" in h
              else Fabric(name="Default Fabric", bandwidth=fab_bw))
    node = Node(name=f"{label} Node", accelerator=acc, accelerators_per_node=apn, intra_node_bw=intra)
    return Fleet(name=f"{label} Fleet ({total:,} accelerator{'s' if total != 1 else ''})", node=node,
                 count=total // apn, fabric=fabric)


def _catalog_fleet(h, at) -> Fleet:
    name = _name(h, "fleet", at)
    try:
        f = modern.fleet(name) if name.startswith(modern.PREFIX) else catalog.fleet(name)
    except KeyError as e:
        raise FileError(f"{at}.fleet: {e.args[0]}") from None
    for k in ("intra_node_bw", "fabric_bandwidth", "accelerator", "fabric", "accelerators"):
        if k in h:
            raise FileError(f"{at}.{k}: a catalog fleet takes only node_count and accelerators_per_node beside it "
                            "(and precision, efficiency)")
    n = _whole(h, "node_count", at) or f.count
    apn = _whole(h, "accelerators_per_node", at) or f.node.accelerators_per_node
    node = f.node
    if apn != node.accelerators_per_node:
        # the accelerators of one NVLink domain (64 of a GB200 NVL72's 72, which an expert group of 32 divides): the
        # node's accelerator and links, fewer or more of them a node
        node = Node(f"{node.name}, {apn} per node", node.accelerator, apn, node.intra_node_bw)
    if node is f.node and n == f.count:
        return f
    return Fleet(f"{n} nodes of {node.name} ({n * apn:,} GPUs; from {name})", node, n, f.fabric)


def _accelerator(sec, at) -> Accelerator:
    _mapping(sec, _ACCELERATOR, at, "an accelerator has")
    for k in ("name", "peak_flops", "memory_capacity", "memory_bandwidth"):
        if k not in sec:
            raise FileError(f"{at}: missing {k} (an accelerator needs name, peak_flops, memory_capacity and "
                            "memory_bandwidth)")
    kw = {k: magnitude(v, _ACCELERATOR[k], f"{at}.{k}") for k, v in sec.items() if _ACCELERATOR.get(k)}
    pf = sec.get("precision_flops") or {}
    if not isinstance(pf, dict):
        raise FileError(f"{at}.precision_flops: expected a mapping of precision to a rate, got {pf!r}")
    flops = tuple((str(k).lower(), magnitude(v, "rate", f"{at}.precision_flops.{k}")) for k, v in pf.items())
    return Accelerator(name=_name(sec, "name", at), precision_flops=flops, **kw)


def _fabric(sec, at) -> Fabric:
    _mapping(sec, _FABRIC, at, "a fabric has")
    if "bandwidth" not in sec:
        raise FileError(f"{at}: missing bandwidth")
    osr = sec.get("oversubscription_ratio", 1.0)
    if isinstance(osr, bool) or not isinstance(osr, (int, float)) or not osr >= 1:
        raise FileError(f"{at}.oversubscription_ratio: must be a number >= 1, got {osr!r}")
    latency = magnitude(sec["latency"], "time", f"{at}.latency") if "latency" in sec else None
    return Fabric(name=_name(sec, "name", at) or "fabric", bandwidth=magnitude(sec["bandwidth"], "bandwidth",
                                                                                f"{at}.bandwidth"),
                  oversubscription_ratio=float(osr), latency=latency)


# --------------------------------------------------------------------------------------------
# Model and hardware files in mlsysim's own layout (mlsysim.cli.schemas._resolve_model / _resolve_hardware)
# --------------------------------------------------------------------------------------------
# The fields of mlsysim 0.3.0's pydantic classes, each with how it is read: a kind of magnitude (read, with
# pint's units: "rate", "bytes", ...), "whole" (read, >= 1), "int", "real", "str" (checked, not used), "any" (a
# magnitude not used: a number or a string), a nested class (a tuple: its fields, its required fields, its
# name) or a list of one (a list of that tuple). Every class forbids other fields, as mlsysim's do
# (extra="forbid"); tests/test_files.py holds these tables equal to mlsysim's.
_METADATA = ({"provenance": "map", "description": "str", "last_verified": "str", "version": "str"}, (), "Metadata")
_OWN_WORKLOAD = {
    "name": "str", "architecture": "str", "metadata": _METADATA, "parameters": "count", "model_size": "bytes",
    "embedding_entries": "any", "inference_flops": "flops", "inference_energy": "any", "data_rate": "any",
    "training_dataset_size": "any", "parameter_range_min": "any", "parameter_range_max": "any",
    "release_year": "int"}
_OWN_TRANSFORMER = {
    **_OWN_WORKLOAD, "layers": "whole", "hidden_dim": "whole", "heads": "int", "kv_heads": "int", "head_dim": "int",
    "kv_lora_rank": "int", "qk_rope_head_dim": "int", "training_ops": "any", "training_tokens": "any",
    "training_accelerators_ref": "any", "training_days_ref": "any", "training_energy_mwh": "any",
    "training_gpu_days": "real", "training_hardware_label": "str", "context_length": "int", "vocab_size": "int",
    "training_co2e": "any"}
#: mlsysim picks a model file's class by the first of these words in its ``architecture`` (lower case), else the
#: plain Workload: (word, class, the workload kind here, fields, required fields)
_OWN_WORKLOADS = (
    ("transformer", "TransformerWorkload", "transformer", _OWN_TRANSFORMER,
     ("name", "architecture", "parameters", "layers")),
    ("cnn", "CNNWorkload", "cnn", {**_OWN_WORKLOAD, "layers": "whole", "width_multiplier": "real"},
     ("name", "architecture", "parameters", "inference_flops")),
    ("ssm", "SSMWorkload", "ssm", {**_OWN_WORKLOAD, "layers": "whole", "state_size": "int", "hidden_dim": "whole"},
     ("name", "architecture", "parameters", "layers", "state_size", "hidden_dim")),
    ("diffusion", "DiffusionWorkload", "diffusion",
     {**_OWN_WORKLOAD, "denoising_steps": "whole", "resolution": "int"},
     ("name", "architecture", "parameters", "denoising_steps", "resolution")),
    ("", "Workload", "workload", _OWN_WORKLOAD, ("name", "architecture")),
)
_OWN_LINK = ({"name": "str", "bandwidth": "bandwidth", "latency": "time", "direction": "direction"},
             ("name", "bandwidth"), "IOInterconnect")
_OWN_HARDWARE = ({
    "name": "str", "release_year": "int",
    "compute": ({"peak_flops": "rate", "precision_flops": "rates", "sm_count": "int", "clock_rate": "any",
                 "core_count": "int", "fp32_cores_per_sm": "int", "tensor_cores_per_sm": "int",
                 "systolic_array_dim": "int", "max_threads_per_sm": "int", "max_registers_per_thread": "int",
                 "warp_size": "int"}, ("peak_flops",), "ComputeCore"),
    "memory": ({"capacity": "bytes", "bandwidth": "bandwidth", "sram_capacity": "bytes",
                "sram_bandwidth": "bandwidth", "flash_capacity": "any", "flash_bandwidth": "bandwidth",
                "l2_cache": "any", "register_file_per_sm": "any", "shared_memory_per_sm": "any", "bus_width": "any",
                "pin_data_rate": "any", "hbm_stacks": "int"}, ("capacity", "bandwidth"), "MemoryHierarchy"),
    "storage": ({"capacity": "any", "bandwidth": "any", "latency": "any"}, ("capacity", "bandwidth"),
                "StorageHierarchy"),
    "interconnect": _OWN_LINK, "nvlink": _OWN_LINK, "tdp": "power", "tdp_min": "any", "tdp_max": "any",
    "die_area": "any", "transistor_count": "real", "die_to_die_bandwidth": "any", "battery_capacity": "any",
    "unit_cost": "any", "unit_cost_max": "any", "accelerator_count": "whole", "embodied_carbon_kg": "real",
    "dispatch_tax": "time",
    "mig_profiles": [({"name": "str", "gpu_memory": "any", "sm_count": "int", "typical_workload": "str"},
                      ("name", "gpu_memory", "sm_count"), "MigProfile")],
    "metadata": _METADATA}, ("name", "release_year", "compute", "memory"), "HardwareNode")
#: fields mlsysim gives a default but no None (pydantic refuses null for them)
_NOT_NULL = ("metadata", "precision_flops", "dispatch_tax", "direction")
_DIRECTIONS = ("per_direction", "bidirectional_total")
#: what a model or hardware file holds, for the message of a file that holds no mapping
_OWN_WHAT = {"model": "a model's fields (name, architecture, parameters, layers, ...)",
             "hardware": "an accelerator's fields (name, release_year, compute, memory, ...)"}


def _own_layout(doc: Dict[str, Any]) -> str:
    """What a file is: ``"plan"``, or a ``"model"`` or ``"hardware"`` file in mlsysim's own layout (no section of
    a plan; a model names its architecture, a hardware file has compute: and memory:)."""
    if any(k in doc for k in ("version", "workload", "hardware", "ops", "constraints", "training")):
        return "plan"
    if isinstance(doc.get("architecture"), str) or any(k in doc for k in ("parameters", "layers")):
        return "model"
    return "hardware" if "compute" in doc or "memory" in doc else "plan"


def _own_fields(data, spec, at: str, prefix: str = "") -> Dict[str, Any]:
    """The values of one class of mlsysim's (``spec``: its fields, required fields and name) that the model reads,
    each checked as mlsysim checks it; the others are checked for their type only."""
    fields_, required, cls = spec
    where = f"{at}: {prefix}"
    if not isinstance(data, dict):
        raise FileError(f"{at}{': ' + prefix[:-1] if prefix else ''}: expected a mapping of mlsysim's {cls} fields "
                        f"({', '.join(fields_)}), got {_shown(data)}")
    for k in data:
        if k not in fields_:
            raise FileError(f"{where}{k}: unknown field; mlsysim's {cls} has {', '.join(fields_)}")
    for k in required:
        if data.get(k) is None:
            raise FileError(f"{where}{k}: missing (mlsysim's {cls} requires {', '.join(required)})")
    out: Dict[str, Any] = {}
    for k, v in data.items():
        how, here = fields_[k], f"{where}{k}"
        if v is None:
            if k in _NOT_NULL:
                raise FileError(f"{here}: must be given a value or left out, got null")
            continue
        if isinstance(how, tuple):
            out[k] = _own_fields(v, how, at, f"{prefix}{k}.")
        elif isinstance(how, list):              # a tuple of records: checked, not used
            if not isinstance(v, (list, tuple)):
                raise FileError(f"{here}: expected a list of mlsysim's {how[0][2]} records, got {_shown(v)}")
            for i, item in enumerate(v):
                _own_fields(item, how[0], at, f"{prefix}{k}[{i}].")
        elif how in ("str", "direction"):
            if not isinstance(v, str) or (how == "direction" and v not in _DIRECTIONS):
                raise FileError(f"{here}: must be " + ("one of " + ", ".join(_DIRECTIONS) if how == "direction"
                                                       else "a string") + f", got {_shown(v)}")
            out[k] = v
        elif how in ("int", "whole"):
            n = lax_whole(v)
            if n is None or how == "whole" and not 1 <= n <= MAX_WHOLE:
                raise FileError(f"{here}: must be a whole number" + (" >= 1 and at most 2**53" if how == "whole"
                                                                     else "") + f", got {_shown(v)}")
            out[k] = n
        elif how == "real":
            if lax_real(v) is None:
                raise FileError(f"{here}: must be a finite number, got {_shown(v)}")
        elif how in ("any", "map"):
            ok = isinstance(v, dict) if how == "map" else isinstance(v, (str, int, float)) and not isinstance(v, bool)
            if not ok:
                raise FileError(f"{here}: expected " + ("a mapping" if how == "map" else "a magnitude with its unit")
                                + f", got {_shown(v)}")
        elif how == "rates":
            if not isinstance(v, dict) or not all(isinstance(p, str) for p in v):
                raise FileError(f"{here}: expected a mapping of precision to a rate, got {_shown(v)}")
            out[k] = tuple((p, magnitude(r, "rate", f"{here}.{p}", strict=True)) for p, r in v.items())
        else:
            out[k] = magnitude(v, how, here, strict=True)
    return out


def _own_workload(data: Dict[str, Any], at: str) -> Workload:
    """The workload of a model file in mlsysim's own layout (``at``: the file, as the messages name it)."""
    arch = data.get("architecture")
    card = [k for k in ("hidden", "vocab", "ffn", "experts", "top_k") if k in data]   # none of mlsysim's fields
    if arch is None and card:
        # an architecture card's fields at the top level (mlsysim's own model files have none of them)
        raise FileError(f"{at}: {', '.join(card)}: fields of an architecture card, which go under an "
                        "architecture: section (docs/files.md), not at the file's top level")
    if not isinstance(arch, str):
        raise FileError(f"{at}: architecture: " + ("missing" if arch is None else f"must be a string, got "
                                                   f"{_shown(arch)}")
                        + " (mlsysim picks the model's class by it: Transformer, CNN, SSM, Diffusion, or another "
                          "name for a plain Workload)")
    _, cls, kind, fields_, required = next(c for c in _OWN_WORKLOADS if c[0] in arch.lower())
    v = _own_fields(data, (fields_, required, cls), at)
    if v.get("parameters") is None:
        # mlsysim reads such a file, but its step cannot be priced: mlsysim's lowering needs the parameters too
        raise FileError(f"{at}: parameters: missing (mlsysim's {cls} reads the file without it, but the step's "
                        "weights, gradients and FLOPs are priced from the parameters)")
    return Workload(name=v["name"], kind=kind, **{k: v.get(k) for k in ("parameters", "model_size",
                                                                        "inference_flops", "layers", "hidden_dim",
                                                                        "denoising_steps")},
                    **record_heads(*(v.get(k) for k in ("heads", "kv_heads", "head_dim", "hidden_dim",
                                                        "kv_lora_rank"))))


def _own_hardware(data: Dict[str, Any], at: str):
    """What a plan reads of a hardware file in mlsysim's own layout, as :func:`catalog.hardware` gives a registry
    entry: (accelerator, accelerator_count, NVLink and host-link bandwidths per direction)."""
    v = _own_fields(data, _OWN_HARDWARE, at)
    compute, memory, links = v["compute"], v["memory"], {}
    for k in ("interconnect", "nvlink"):       # mlsysim's bandwidth_per_direction
        link = v.get(k)
        if link is not None:
            links[k] = link["bandwidth"] / (2 if link.get("direction") == "bidirectional_total" else 1)
    nv_latency = (v.get("nvlink") or {}).get("latency")
    acc = Accelerator(
        name=v["name"], peak_flops=compute["peak_flops"], memory_capacity=memory["capacity"],
        memory_bandwidth=memory["bandwidth"], precision_flops=compute.get("precision_flops", ()), tdp=v.get("tdp"),
        pcie_bandwidth=links.get("interconnect"), nvlink_latency=nv_latency,
        sram_capacity=memory.get("sram_capacity"), sram_bandwidth=memory.get("sram_bandwidth"),
        flash_bandwidth=memory.get("flash_bandwidth"),
        **({"dispatch_tax": v["dispatch_tax"]} if "dispatch_tax" in v else {}))
    return acc, v.get("accelerator_count"), links.get("nvlink"), links.get("interconnect")


def is_reference(name: object) -> bool:
    """Whether a plan's ``workload.name`` or ``hardware.name`` names a file: as mlsysim reads them, a name ending in
    ``.yaml`` or ``.yml`` (letter case as written)."""
    return isinstance(name, str) and name.endswith((".yaml", ".yml"))


def _not_a_reference(name: str) -> str:
    """The hint for a name that looks like a file but is not one mlsysim reads."""
    return "; mlsysim reads a file here only from a name ending in .yaml or .yml" if is_file_name(name) else ""


def _found(name: str, plan: str) -> Tuple[str, Tuple[int, int]]:
    """The file a plan's reference names (and its mtime and size), found as :func:`_reference` finds it; an
    unreadable one gives ("", (0, 0))."""
    try:
        read = _resolve(name, plan, "")
        st = os.stat(read)
    except (FileError, OSError):
        return "", (0, 0)
    return read, (st.st_mtime_ns, st.st_size)


def _resolve(name: str, plan: str, at: str) -> str:
    beside = os.path.join(os.path.dirname(plan), name)
    # mlsysim eval opens the name from the working directory (Path(name)); a plan is read beside itself as well,
    # so it reads alike from anywhere: the two may not name two different files
    found = [p for p in dict.fromkeys((beside, name)) if os.path.isfile(p)]
    if len(found) == 2 and not os.path.samefile(*found):
        raise FileError(f"{at}: {name!r} names two files: {beside} beside the plan and {os.path.abspath(name)} in "
                        "the working directory (where mlsysim eval looks); give a path that names one")
    if not found:
        where = f"beside the plan ({beside}) or " if beside != name else ""
        raise FileError(f"{at}: no file {name!r} {where}in the working directory (where mlsysim eval looks)")
    return found[0]


def _reference(name: str, plan: str, at: str, sources: list, what: str) -> Tuple[str, Dict[str, Any]]:
    """The path and the fields of the ``what`` (``"model"``, ``"hardware"``) file a plan's ``name`` gives: beside
    the plan, or from the working directory as mlsysim eval opens it (the same file when both exist); noted in
    ``sources``."""
    read, stamp = _found(name, plan)
    if not read:
        _resolve(name, plan, at)           # its message
        raise FileError(f"{at}: cannot read {name!r}")
    sources.append((name, read, stamp))
    try:
        data = _read(read, _OWN_WHAT[what])
    except FileError as e:
        raise FileError(f"{at}: {e}") from None
    if any(k in data for k in ("version", "workload", "hardware")):
        raise FileError(f"{at}: {read} is a plan, not a {what} file in mlsysim's own layout")
    return read, data


def workload(path: str) -> Workload:
    """The workload of a plan file (its ``architecture:`` card, else ``workload.name``)."""
    w = load(path).workload
    if w is None:
        raise FileError(f"{path}: no workload: give workload.name or an architecture: section")
    return w


def fleet(path: str) -> Fleet:
    """The fleet of a plan file (its ``hardware:`` section)."""
    doc = load(path)
    if doc.kind == "model":
        raise FileError(f"{path}: a model file in mlsysim's own layout has no fleet; give a catalog fleet or a plan "
                        "with a hardware: section")
    f = doc.fleet
    if f is None:
        raise FileError(f"{path}: no fleet: give a hardware: section")
    return f


def keywords(path: str) -> Tuple[Tuple[str, object], ...]:
    return tuple(load(path).keywords.items())
