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
(:attr:`Document.keywords`). The extension adds, beside mlsysim's keys:

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

Magnitudes are numbers in SI units or strings with a unit (``"400 Gb/s"``, ``"80 GiB"``, ``"989.5 TFLOP/s"``,
``"700 W"``, ``"5 us"``), read by a small parser (never evaluated). A bad file is a ``ValueError`` of one line
naming the file, the field and the allowed values.
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
from .types import Accelerator, Fabric, Fleet, Node, Workload

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

    ``DistributedModel(**doc.model).solve(path, path, **doc.keywords)`` prices the plan ``doc = load(path)``."""

    path: str
    workload: Optional[Workload] = None
    fleet: Optional[Fleet] = None
    keywords: Dict[str, object] = field(default_factory=dict)
    name: str = ""
    model: Dict[str, object] = field(default_factory=dict)
    training: Tuple[str, ...] = ()

    def section_keywords(self, section: str) -> Dict[str, object]:
        """The keywords one section sets: ``"workload"`` (batch, sequence), ``"hardware"`` (precision,
        efficiency) or ``"training"`` (the others it gives)."""
        own = {"workload": ("batch_size", "seq_len"), "hardware": ("precision", "efficiency"),
               "training": self.training}[section]
        return {k: v for k, v in self.keywords.items() if k in own}


# --------------------------------------------------------------------------------------------
# Magnitudes with units (a parser, not an evaluator)
# --------------------------------------------------------------------------------------------
# exact factors (Fractions), so "5 us" is the float nearest 5e-6, as the decimal was written
_PREFIX = {"": Fraction(1), "k": Fraction(10 ** 3), "K": Fraction(10 ** 3), "M": Fraction(10 ** 6),
           "G": Fraction(10 ** 9), "T": Fraction(10 ** 12), "P": Fraction(10 ** 15), "E": Fraction(10 ** 18)}
_BINARY = {"Ki": Fraction(2 ** 10), "Mi": Fraction(2 ** 20), "Gi": Fraction(2 ** 30), "Ti": Fraction(2 ** 40),
           "Pi": Fraction(2 ** 50)}
_KINDS = {
    "bandwidth": ("a bandwidth such as '50 GB/s', '400 Gb/s' or '400 Gbps'", "B/s"),
    "bytes": ("a size such as '80 GiB' or '141 GB'", "B"),
    "rate": ("a rate such as '989.5 TFLOP/s' or '2.25 PFLOPS'", "flop/s"),
    "power": ("a power such as '700 W' or '1.2 kW'", "W"),
    "time": ("a time such as '5 us', '500 ns' or '1e-5 s'", "s"),
}
_NUMBER = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
_TIME = {"s": Fraction(1), "ms": Fraction(1, 10 ** 3), "us": Fraction(1, 10 ** 6), "µs": Fraction(1, 10 ** 6),
         "ns": Fraction(1, 10 ** 9)}


def _unit_factor(unit: str, kind: str) -> Optional[Fraction]:
    u = unit.strip()
    if kind == "time":
        return _TIME.get(u)
    if kind == "power":
        m = re.fullmatch(r"([kMG]?)W", u)
        return _PREFIX[m.group(1)] if m else None
    if kind == "rate":
        m = re.fullmatch(r"([kMGTPE]?)(?:FLOP/s|FLOPS|flop/s|flops)", u)
        return _PREFIX[m.group(1)] if m else None
    if kind == "bytes":
        m = re.fullmatch(r"(Ki|Mi|Gi|Ti|Pi|[kKMGTP]?)B", u)
        if not m:
            return None
        return _BINARY.get(m.group(1)) or _PREFIX[m.group(1)]
    # bandwidth: bytes or bits per second
    m = re.fullmatch(r"([kKMGTP]?)(B/s|Bps|b/s|bps|bit/s|Byte/s)", u)
    if not m:
        return None
    bits = m.group(2) in ("b/s", "bps", "bit/s")
    return _PREFIX[m.group(1)] / (8 if bits else 1)


def magnitude(value: object, kind: str, where: str) -> float:
    """A number in SI units, or a string ``"<number> <unit>"`` of the kind (``"bandwidth"``, ``"bytes"``,
    ``"rate"``, ``"power"``, ``"time"``), as a float in SI units; else a :class:`FileError` naming ``where``."""
    words, si = _KINDS[kind]
    if isinstance(value, bool):
        raise FileError(f"{where}: expected {words} (or a number in {si}), got {value!r}")
    if isinstance(value, (int, float)):
        x = float(value)
    else:
        m = re.fullmatch(r"\s*" + _NUMBER + r"\s*([^\d\s].*?)?\s*", str(value))
        factor = _unit_factor(m.group(2), kind) if m and m.group(2) else (Fraction(1) if m else None)
        if factor is None:
            raise FileError(f"{where}: expected {words} (or a number in {si}), got {value!r}")
        try:
            x = float(Fraction(m.group(1)) * factor)
        except OverflowError:
            x = math.inf
    ok = 0 <= x < math.inf if kind == "time" else 0 < x < math.inf
    if not ok:
        raise FileError(f"{where}: must be {'>= 0' if kind == 'time' else '> 0'} and finite, got {value!r}")
    return x


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


def _read(path: str) -> Dict[str, Any]:
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
        raise FileError(f"{path}: expected a mapping of sections (version, name, workload, hardware, ...), got "
                        f"{type(data).__name__}")
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


def _section(doc: Dict[str, Any], key: str, allowed, path: str) -> Dict[str, Any]:
    sec = doc.get(key)
    return {} if sec is None else _mapping(sec, allowed, f"{path}: {key}", f"{key} takes")


def _whole(sec, key, at, lo=1):
    v = sec.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or v > MAX_WHOLE:
        raise FileError(f"{at}.{key}: must be a whole number >= {lo} and at most 2**53, got {v!r}")
    return v


def _name(sec, key, at) -> Optional[str]:
    v = sec.get(key)
    if v is not None and (not isinstance(v, str) or not v.strip()):
        raise FileError(f"{at}.{key}: must be a name (a string), got {v!r}")
    return v


def load(path: str) -> Document:
    """The workload, fleet and keywords a plan file describes (see the module docstring); read once while the
    file is unchanged."""
    path = os.fspath(path)
    try:
        st = os.stat(path)
    except OSError as e:
        raise FileError(f"{path}: cannot read the file ({e.strerror or e})") from None
    return _load(path, st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=64)
def _load(path: str, mtime: int, size: int) -> Document:
    doc = _read(path)
    for k in doc:
        if k not in _TOP:
            raise FileError(f"{path}: {k}: unknown section; a plan has {', '.join(_TOP)}")
    ops = _section(doc, "ops", ("region", "duration_days"), path)
    if "duration_days" in ops and not (isinstance(ops["duration_days"], (int, float))
                                       and not isinstance(ops["duration_days"], bool) and ops["duration_days"] > 0):
        raise FileError(f"{path}: ops.duration_days: must be a number > 0, got {ops['duration_days']!r}")
    constraints = _section(doc, "constraints", ("assert",), path)
    for i, rule in enumerate(constraints.get("assert") or ()):
        if not isinstance(rule, dict) or "metric" not in rule or set(rule) - {"metric", "max", "min"}:
            raise FileError(f"{path}: constraints.assert[{i}]: expected metric and max or min, got {rule!r}")
    keywords: Dict[str, object] = {}
    workload = _workload(doc, path, keywords)
    fleet = _fleet(doc, path, keywords)
    model, training = _training(doc, path, keywords)
    name = doc.get("name") if isinstance(doc.get("name"), str) else ""
    return Document(path, workload, fleet, keywords, name, model, training)


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
        if isinstance(v, bool) or not isinstance(v, int) or abs(v) > MAX_WHOLE:
            raise FileError(f"{at}: must be a whole number {r.text} (at most 2**53), got {v!r}")
    else:
        # YAML 1.1 reads 1e-3 (no dot) as a string: a number written plainly is one, no other string
        plain = isinstance(v, str) and re.fullmatch(_NUMBER, v.strip())
        try:
            v = float(v) if plain or isinstance(v, (int, float)) and not isinstance(v, bool) else None
        except OverflowError:
            v = None
        if v is None or not math.isfinite(v):
            raise FileError(f"{at}: must be a finite number {r.text}, got {_shown(raw)}")
    if r is not None and v not in r:
        raise FileError(f"{at}: must be {r.text}, got {_shown(raw)}")
    return v


def _shown(v) -> str:
    """A value in a message: its repr, shortened (a 400-digit integer is not printed whole)."""
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _workload(doc, path, keywords) -> Optional[Workload]:
    w = _section(doc, "workload", _WORKLOAD, path)
    at = f"{path}: workload"
    for key in ("batch_size", "seq_len"):
        v = _whole(w, key, at)
        if v is not None:
            keywords[key] = v
    name = _name(w, "name", at)
    card = doc.get("architecture")
    if card is not None:
        if name is not None and (name in catalog.workload_names() or name.startswith(modern.PREFIX)):
            raise FileError(f"{at}.name: {name!r} names a catalog workload; with an architecture: section, name "
                            "the card itself (or leave workload.name out)")
        return _card(card, name, path).workload()
    if name is None:
        return None
    try:
        if name.startswith(modern.PREFIX):
            return modern.workload(name)
        return catalog.workload(name)
    except KeyError as e:
        raise FileError(f"{at}.name: {e.args[0]}; or describe the model in an architecture: section") from None


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


def _fleet(doc, path, keywords) -> Optional[Fleet]:
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
        e = h["efficiency"]
        if isinstance(e, bool) or not isinstance(e, (int, float)) or not 0 < e <= 1:
            raise FileError(f"{at}.efficiency: must be a number in (0, 1], got {e!r}")
        keywords["efficiency"] = float(e)
    sources = [k for k in ("name", "accelerator", "fleet") if k in h]
    if len(sources) != 1:
        raise FileError(f"{at}: give exactly one of name (mlsysim's Hardware registry: H100, B200, GB200_NVL72, "
                        f"...), accelerator (a full record) or fleet (a catalog fleet), got "
                        f"{', '.join(sources) or 'none'}")
    if "fleet" in h:
        return _catalog_fleet(h, at)
    count = nvlink = host = None
    if "name" in h:
        name = _name(h, "name", at)
        try:
            acc, count, nvlink, host = catalog.hardware(name)
        except KeyError as e:
            raise FileError(f"{at}.name: {e.args[0]}") from None
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
    return Fleet(name=f"{label} Fleet ({total:,} accelerators)", node=node, count=total // apn, fabric=fabric)


def _catalog_fleet(h, at) -> Fleet:
    name = _name(h, "fleet", at)
    try:
        f = modern.fleet(name) if name.startswith(modern.PREFIX) else catalog.fleet(name)
    except KeyError as e:
        raise FileError(f"{at}.fleet: {e.args[0]}") from None
    for k in ("accelerators_per_node", "intra_node_bw", "fabric_bandwidth", "accelerator", "fabric", "accelerators"):
        if k in h:
            raise FileError(f"{at}.{k}: a catalog fleet takes only node_count beside it (and precision, "
                            "efficiency)")
    nodes = _whole(h, "node_count", at)
    if nodes is None or nodes == f.count:
        return f
    return Fleet(f"{nodes} nodes of {f.node.name} ({nodes * f.node.accelerators_per_node:,} GPUs; from {name})",
                 f.node, nodes, f.fabric)


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


def workload(path: str) -> Workload:
    """The workload of a plan file (its ``architecture:`` card, else ``workload.name``)."""
    w = load(path).workload
    if w is None:
        raise FileError(f"{path}: no workload: give workload.name or an architecture: section")
    return w


def fleet(path: str) -> Fleet:
    """The fleet of a plan file (its ``hardware:`` section)."""
    f = load(path).fleet
    if f is None:
        raise FileError(f"{path}: no fleet: give a hardware: section")
    return f


def keywords(path: str) -> Tuple[Tuple[str, object], ...]:
    return tuple(load(path).keywords.items())
