"""The bundled registry of mlsysim 0.3.0 (workloads and clusters), as plain SI records.

``data/catalog.json`` is written by ``tools/export_catalog.py`` from the installed
mlsysim, through :func:`from_mlsysim`; at run time it is read once with
``importlib.resources`` and mlsysim is not needed.

Lookup (keys are mlsysim's registry attribute names)::

    workload("Llama3_70B")      # mlsysim.Models.Language.Llama3_70B
    workload("ResNet50")        # mlsysim.Models.Vision.ResNet50 (category "Vision")
    fleet("Research_256")       # mlsysim.Systems.Clusters.Research_256
    accelerator("NVIDIA H100")  # accelerators are keyed by their mlsysim ``name``

An unknown name raises ``KeyError`` whose message repeats the name and lists close
names. :func:`from_mlsysim` converts any mlsysim ``Workload`` / ``Fleet`` / ``Node`` /
``NetworkFabric`` / ``HardwareNode`` (registry or custom) to the records of
:mod:`mlsysim_sym.types`; mlsysim is imported only inside it.

JSON layout (format 1)::

    {"format": 1, "source": {...}, "units": {...},
     "workloads":    {attr: {"category", "name", "kind", "parameters", "model_size",
                             "inference_flops", "active_parameters", "layers",
                             "hidden_dim", "active_experts_per_token", "denoising_steps",
                             "kv_fraction", "attention_heads", "kv_heads"}},
     "accelerators": {name: {<Accelerator fields>, "precision_flops": [[key, flop/s], ...]}},
     "nodes":        {name: {"name", "accelerator": <accelerator name>,
                             "accelerators_per_node", "intra_node_bw"}},
     "fabrics":      {name: {"name", "bandwidth", "oversubscription_ratio", "latency"}},
     "fleets":       {attr: {"name", "node": <node name>, "count", "fabric": <fabric name>}}}

Every magnitude is a float in SI base units (B, s, flop, flop/s, B/s, W), null when
mlsysim has None; counts are ints. A workload's last three come from the heads mlsysim's
record lists (:func:`~mlsysim_sym.types.record_heads`; null where it lists none).
"""
from __future__ import annotations

import difflib
import math
import json
from dataclasses import fields
from fractions import Fraction
from functools import lru_cache
from importlib import resources
from typing import Any, Dict, Optional, Tuple

from .types import CARD_FIELDS, HEAD_FIELDS, Accelerator, Fabric, Fleet, Node, Workload, record_heads

__all__ = [
    "CATALOG_FORMAT",
    "WORKLOAD_CATEGORIES",
    "accelerator",
    "accelerator_names",
    "build_catalog",
    "fleet",
    "fleet_names",
    "from_mlsysim",
    "hardware",
    "hardware_names",
    "mlsysim_registry",
    "workload",
    "workload_category",
    "workload_names",
]

CATALOG_FORMAT = 1

#: mlsysim.Models categories, in the order the catalog lists them.
WORKLOAD_CATEGORIES = (
    "Language",
    "Vision",
    "GenerativeVision",
    "Recommendation",
    "StateSpace",
    "Tiny",
    "Embodied",
)

_UNITS = {
    "parameters": "count", "active_parameters": "count", "model_size": "B",
    "inference_flops": "flop", "peak_flops": "flop/s", "precision_flops": "flop/s",
    "memory_capacity": "B", "sram_capacity": "B", "memory_bandwidth": "B/s",
    "sram_bandwidth": "B/s", "flash_bandwidth": "B/s", "pcie_bandwidth": "B/s (per direction)",
    "intra_node_bw": "B/s", "bandwidth": "B/s", "dispatch_tax": "s", "nvlink_latency": "s",
    "latency": "s", "tdp": "W",
}


# --------------------------------------------------------------------------------------
# Loading the bundled JSON
# --------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _raw() -> Dict[str, Any]:
    path = resources.files("mlsysim_sym").joinpath("data").joinpath("catalog.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("format") != CATALOG_FORMAT:
        raise ValueError(f"catalog.json has format {data.get('format')!r}, expected {CATALOG_FORMAT}")
    return data


def _record(cls, d: Dict[str, Any], **override):
    kw = {f.name: d.get(f.name, f.default) for f in fields(cls) if f.name not in override and f.init}
    kw.update(override)
    return cls(**kw)


def _decode_accelerator(d: Dict[str, Any]) -> Accelerator:
    pf = tuple((str(k), float(v)) for k, v in d.get("precision_flops", ()))
    return _record(Accelerator, d, precision_flops=pf)


@lru_cache(maxsize=None)
def _accelerators() -> Dict[str, Accelerator]:
    return {k: _decode_accelerator(v) for k, v in _raw()["accelerators"].items()}


@lru_cache(maxsize=None)
def _workloads() -> Dict[str, Workload]:
    return {k: _record(Workload, v) for k, v in _raw()["workloads"].items()}


@lru_cache(maxsize=None)
def _fleets() -> Dict[str, Fleet]:
    raw = _raw()
    accs = _accelerators()
    nodes = {
        k: _record(Node, v, accelerator=accs[v["accelerator"]]) for k, v in raw["nodes"].items()
    }
    fabrics = {k: _record(Fabric, v) for k, v in raw["fabrics"].items()}
    return {
        k: _record(Fleet, v, node=nodes[v["node"]], fabric=fabrics[v["fabric"]])
        for k, v in raw["fleets"].items()
    }


def _lookup(table: Dict[str, Any], name: str, what: str):
    try:
        return table[name]
    except (KeyError, TypeError):
        pass
    keys = list(table)
    close = close_names(name, keys)
    hint = f"; close names: {', '.join(close)}" if close else f"; known names: {', '.join(keys)}"
    raise KeyError(f"unknown {what} {name!r}{hint}")


#: How many close names an unknown name's message gives.
CLOSE_NAMES = 5


def close_names(name, keys) -> list:
    """The names of ``keys`` close to ``name`` (spelling, then letter case or a part of it), at most
    :data:`CLOSE_NAMES` (the calculator page reads the same number)."""
    keys = list(keys)
    close = difflib.get_close_matches(str(name), keys, n=CLOSE_NAMES, cutoff=0.5)
    low = str(name).lower()
    close += [k for k in keys if low and (low in k.lower() or k.lower() in low) and k not in close]
    return close[:CLOSE_NAMES]


def workload(name: str) -> Workload:
    """The registry workload under mlsysim's attribute name (e.g. ``"Llama3_70B"``, ``"ResNet50"``)."""
    return _lookup(_workloads(), name, "workload")


def fleet(name: str) -> Fleet:
    """The registry cluster under mlsysim's attribute name (e.g. ``"Research_256"``)."""
    return _lookup(_fleets(), name, "fleet")


def accelerator(name: str) -> Accelerator:
    """A cluster accelerator under its mlsysim name (e.g. ``"NVIDIA H100"``)."""
    return _lookup(_accelerators(), name, "accelerator")


def workload_names(category: Optional[str] = None) -> Tuple[str, ...]:
    """Workload keys, all or those of one mlsysim.Models category (e.g. ``"Language"``)."""
    ws = _raw()["workloads"]
    if category is None:
        return tuple(ws)
    if category not in WORKLOAD_CATEGORIES:
        _lookup({c: c for c in WORKLOAD_CATEGORIES}, category, "workload category")
    return tuple(k for k, v in ws.items() if v["category"] == category)


def workload_category(name: str) -> str:
    """The mlsysim.Models category of a workload key (``"Language"``, ``"Vision"``, ...)."""
    return _lookup(_raw()["workloads"], name, "workload")["category"]


def fleet_names() -> Tuple[str, ...]:
    return tuple(_raw()["fleets"])


def accelerator_names() -> Tuple[str, ...]:
    return tuple(_raw()["accelerators"])


# --------------------------------------------------------------------------------------
# mlsysim -> records (the one conversion, used by the export script and by users)
# --------------------------------------------------------------------------------------

def _exact(x) -> Optional[Fraction]:
    """The decimal value a magnitude was written as (3.35 -> 67/20), or None."""
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return Fraction(x)
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    if f != f or f in (float("inf"), float("-inf")):
        return None
    try:
        return Fraction(repr(f)) if isinstance(x, float) else Fraction(str(x))
    except (ValueError, ZeroDivisionError):
        return Fraction(f)


def _clean_factor(f: float) -> Fraction:
    """A unit factor as the exact number pint meant (1e-06, not 1e-06 +- 1 ulp)."""
    if f.is_integer() and abs(f) < 2.0**53:
        return Fraction(int(f))
    c = Fraction(f"{f:.15g}")
    return c if abs(float(c) - f) <= 1e-14 * abs(f) else Fraction(f)


def _si(q, unit: str, field: str = "a field") -> Optional[float]:
    """Magnitude of a pint Quantity in ``unit``, correctly rounded from the decimal inputs.

    pint multiplies floats (50 µs -> 4.9999999999999996e-05 s); this multiplies the
    written magnitude by the exact unit factor instead (-> 5e-05). None stays None, a
    plain number is taken to be in SI already. A finite magnitude beyond a float's range in ``unit`` is a
    ``ValueError`` naming the ``field`` (the model computes in SI units).
    """
    if q is None:
        return None
    if not hasattr(q, "m_as"):
        return float(q)
    try:
        approx = float(q.m_as(unit))
        if math.isinf(approx) and math.isfinite(float(q.magnitude)):
            raise OverflowError
    except OverflowError:
        raise ValueError(f"{field} of {q.magnitude:g} {q.units:~} is beyond the largest float in {unit} "
                         f"(1.8e+308), the unit the model computes in") from None
    mag = _exact(q.magnitude)
    if mag is None:
        return approx
    factor = _clean_factor(float(type(q)(1, q.units).m_as(unit)))
    value = float(mag * factor)
    if value == approx or abs(value - approx) <= 1e-12 * abs(approx):
        return value
    return approx  # non-multiplicative unit or an odd factor: trust pint


def _count(v) -> Optional[int]:
    if v is None:
        return None
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    f = float(v)
    return int(f) if f.is_integer() else v


def _workload_kind(obj) -> str:
    from mlsysim.models import types as mt

    for cls, kind in (
        (mt.SparseTransformerWorkload, "sparse_transformer"),  # before TransformerWorkload
        (mt.TransformerWorkload, "transformer"),
        (mt.CNNWorkload, "cnn"),
        (mt.SSMWorkload, "ssm"),
        (mt.EmbodiedWorkload, "embodied"),
        (mt.DiffusionWorkload, "diffusion"),
    ):
        if isinstance(obj, cls):
            return kind
    return "workload"


def _convert_workload(m) -> Workload:
    return Workload(
        name=str(m.name),
        kind=_workload_kind(m),
        parameters=_si(getattr(m, "parameters", None), "count", "parameters"),
        model_size=_si(getattr(m, "model_size", None), "byte", "model_size"),
        inference_flops=_si(getattr(m, "inference_flops", None), "flop", "inference_flops"),
        active_parameters=_si(getattr(m, "active_parameters", None), "count", "active_parameters"),
        layers=_count(getattr(m, "layers", None)),
        hidden_dim=_count(getattr(m, "hidden_dim", None)),
        active_experts_per_token=_count(getattr(m, "active_experts_per_token", None)),
        denoising_steps=_count(getattr(m, "denoising_steps", None)),
        **record_heads(*(_count(getattr(m, k, None)) for k in ("heads", "kv_heads", "head_dim", "hidden_dim",
                                                               "kv_lora_rank"))),
    )


def _convert_accelerator(h) -> Accelerator:
    compute, memory = h.compute, h.memory
    ic = h.interconnect
    # distributed.py / engine.py: getattr(ic, "bandwidth_per_direction", getattr(ic, "bandwidth", ...))
    pcie = None
    if ic:
        pcie = _si(getattr(ic, "bandwidth_per_direction", getattr(ic, "bandwidth", None)), "B/s",
                   "accelerator.interconnect.bandwidth")
    nv = h.nvlink
    # solvers/utils.py: `if nvlink and nvlink.latency is not None` (a 0 latency is kept)
    nv_lat = _si(nv.latency, "s", "accelerator.nvlink.latency") if (nv and getattr(nv, "latency", None) is not None) else None
    kw = {}
    if getattr(h, "dispatch_tax", None) is not None:
        kw["dispatch_tax"] = _si(h.dispatch_tax, "s", "accelerator.dispatch_tax")
    return Accelerator(
        name=str(h.name),
        peak_flops=_si(compute.peak_flops, "flop/s", "accelerator.compute.peak_flops"),
        memory_capacity=_si(memory.capacity, "byte", "accelerator.memory.capacity"),
        memory_bandwidth=_si(memory.bandwidth, "B/s", "accelerator.memory.bandwidth"),
        precision_flops=tuple(
            (str(k), _si(v, "flop/s", f"accelerator.compute.precision_flops[{k}]"))
            for k, v in (compute.precision_flops or {}).items()
        ),
        tdp=_si(h.tdp, "W", "accelerator.tdp"),
        pcie_bandwidth=pcie,
        nvlink_latency=nv_lat,
        sram_capacity=_si(getattr(memory, "sram_capacity", None), "byte", "accelerator.memory.sram_capacity"),
        sram_bandwidth=_si(getattr(memory, "sram_bandwidth", None), "B/s", "accelerator.memory.sram_bandwidth"),
        flash_bandwidth=_si(getattr(memory, "flash_bandwidth", None), "B/s", "accelerator.memory.flash_bandwidth"),
        **kw,
    )


def _convert_node(n) -> Node:
    return Node(
        name=str(n.name),
        accelerator=_convert_accelerator(n.accelerator),
        accelerators_per_node=_count(n.accelerators_per_node),
        intra_node_bw=_si(n.intra_node_bw, "B/s", "node.intra_node_bw"),
    )


def _convert_fabric(f) -> Fabric:
    return Fabric(
        name=str(f.name),
        bandwidth=_si(f.bandwidth, "B/s", "fabric.bandwidth"),
        oversubscription_ratio=float(f.oversubscription_ratio),
        latency=_si(f.latency, "s", "fabric.latency"),
    )


def _convert_fleet(f) -> Fleet:
    return Fleet(
        name=str(f.name),
        node=_convert_node(f.node),
        count=_count(f.count),
        fabric=_convert_fabric(f.fabric),
    )


def from_mlsysim(obj):
    """Convert an mlsysim object to the matching record of :mod:`mlsysim_sym.types`.

    Accepts a ``Workload`` (any subclass) -> :class:`Workload`, ``Fleet`` -> :class:`Fleet`,
    ``Node`` -> :class:`Node`, ``NetworkFabric`` -> :class:`Fabric`, ``HardwareNode`` ->
    :class:`Accelerator`. Quantities become SI floats, missing/None fields become None
    (the solver applies mlsysim's fallbacks). A record of ours is returned unchanged.
    """
    if isinstance(obj, (Workload, Accelerator, Node, Fabric, Fleet)):
        return obj
    try:
        from mlsysim.hardware.types import HardwareNode
        from mlsysim.models.types import Workload as MWorkload
        from mlsysim.systems.types import Fleet as MFleet
        from mlsysim.systems.types import NetworkFabric as MFabric
        from mlsysim.systems.types import Node as MNode
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("from_mlsysim needs the optional dependency mlsysim") from e

    if isinstance(obj, MWorkload):
        return _convert_workload(obj)
    if isinstance(obj, MFleet):
        return _convert_fleet(obj)
    if isinstance(obj, MNode):
        return _convert_node(obj)
    if isinstance(obj, MFabric):
        return _convert_fabric(obj)
    if isinstance(obj, HardwareNode):
        return _convert_accelerator(obj)
    raise TypeError(
        "from_mlsysim expects an mlsysim Workload, Fleet, Node, NetworkFabric or HardwareNode, "
        f"got {type(obj).__name__}"
    )


def mlsysim_registry() -> Dict[str, Dict[str, Any]]:
    """mlsysim's registry objects that DistributedModel can use (imports mlsysim).

    Returns ``{"workloads": {attr: (category, obj)}, "fleets": {attr: obj}}`` with the
    categories of :data:`WORKLOAD_CATEGORIES` followed by any other ``mlsysim.Models``
    category, names in each in ``dir()`` order (as ``Registry.list``).
    """
    import mlsysim
    from mlsysim.models.types import Workload as MWorkload
    from mlsysim.systems.types import Fleet as MFleet

    def members(reg, cls):
        out = {}
        for attr in dir(reg):
            if attr.startswith("_") or attr == "list":
                continue
            obj = getattr(reg, attr)
            if isinstance(obj, cls):
                out[attr] = obj
        return out

    extra = sorted(
        a for a in dir(mlsysim.Models)
        if not a.startswith("_") and a not in WORKLOAD_CATEGORIES and isinstance(getattr(mlsysim.Models, a), type)
    )
    workloads: Dict[str, Tuple[str, Any]] = {}
    for cat in WORKLOAD_CATEGORIES + tuple(extra):
        reg = getattr(mlsysim.Models, cat, None)
        if reg is None:
            continue
        for attr, obj in members(reg, MWorkload).items():
            if attr in workloads:
                raise ValueError(f"workload name {attr!r} is in both {workloads[attr][0]} and {cat}")
            workloads[attr] = (cat, obj)
    return {"workloads": workloads, "fleets": members(mlsysim.Systems.Clusters, MFleet),
            "hardware": hardware_zoo()}


def hardware_zoo() -> Dict[str, Any]:
    """mlsysim's ``Hardware`` registry, flat: attribute name -> ``HardwareNode``, the first of a name in the order
    ``mlsysim eval`` searches it (its ``_find_flat``: ``Cloud``, ``Workstation``, ...), so a plan's
    ``hardware.name`` means here what it means there (imports mlsysim)."""
    import mlsysim
    from mlsysim.core.registry import Registry
    from mlsysim.hardware.types import HardwareNode

    out: Dict[str, Any] = {}

    def walk(reg):
        for k, v in vars(reg).items():
            if isinstance(v, type) and issubclass(v, Registry):
                walk(v)
            elif isinstance(v, HardwareNode) and k not in out:
                out[k] = v
    walk(mlsysim.Hardware)
    return out


# --------------------------------------------------------------------------------------
# records -> JSON (used by tools/export_catalog.py)
# --------------------------------------------------------------------------------------

def _plain(rec, skip=()) -> Dict[str, Any]:
    return {f.name: getattr(rec, f.name) for f in fields(rec) if f.name not in skip}


def _put(table: Dict[str, Any], key: str, value: Dict[str, Any], what: str) -> None:
    if key in table and table[key] != value:
        raise ValueError(f"two different {what}s share the name {key!r}:\n{table[key]}\n{value}")
    table[key] = value


def build_catalog(
    workloads: Dict[str, Tuple[str, Workload]],
    fleets: Dict[str, Fleet],
    source: Optional[Dict[str, Any]] = None,
    hardware: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """The JSON-ready catalog: workloads ``{key: (category, Workload)}``, fleets ``{key: Fleet}``.

    Accelerators, nodes and fabrics are stored once under their ``name`` (two different
    objects with one name raise ValueError).
    """
    out: Dict[str, Any] = {
        "format": CATALOG_FORMAT,
        "source": dict(source or {}),
        "units": dict(_UNITS),
        "workloads": {},
        "accelerators": {},
        "nodes": {},
        "fabrics": {},
        "fleets": {},
    }
    for key, (category, w) in workloads.items():
        out["workloads"][key] = {"category": category,
                                 **_plain(w, skip=[f for f in CARD_FIELDS if f not in HEAD_FIELDS])}
    for key, f in fleets.items():
        acc = f.node.accelerator
        a = _plain(acc)
        a["precision_flops"] = [[k, v] for k, v in acc.precision_flops]
        _put(out["accelerators"], acc.name, a, "accelerator")
        node = {**_plain(f.node), "accelerator": acc.name}  # field order of types.Node
        _put(out["nodes"], f.node.name, node, "node")
        _put(out["fabrics"], f.fabric.name, _plain(f.fabric), "fabric")
        out["fleets"][key] = {"name": f.name, "node": f.node.name, "count": f.count, "fabric": f.fabric.name}
    if hardware:
        out["hardware"] = {}
        for key, (acc, count, nvlink, interconnect) in hardware.items():
            a = _plain(acc)
            a["precision_flops"] = [[k, v] for k, v in acc.precision_flops]
            _put(out["accelerators"], acc.name, a, "accelerator")
            out["hardware"][key] = {"accelerator": acc.name, "accelerator_count": count, "nvlink_bw": nvlink,
                                    "interconnect_bw": interconnect}
    return out


def convert_hardware(h) -> Tuple[Accelerator, Optional[int], Optional[float], Optional[float]]:
    """What a plan reads of an mlsysim ``HardwareNode``: the accelerator, ``accelerator_count`` (GPUs in one
    NVLink domain, e.g. 72 for GB200 NVL72), the NVLink and host-link bandwidths per direction (B/s)."""
    nv, ic = h.nvlink, h.interconnect
    return (_convert_accelerator(h), _count(getattr(h, "accelerator_count", None)),
            _si(nv.bandwidth_per_direction, "B/s", "nvlink.bandwidth") if nv else None,
            _si(ic.bandwidth_per_direction, "B/s", "interconnect.bandwidth") if ic else None)


@lru_cache(maxsize=None)
def _hardware() -> Dict[str, Any]:
    accs = _accelerators()
    return {k: (accs[v["accelerator"]], v["accelerator_count"], v["nvlink_bw"], v["interconnect_bw"])
            for k, v in _raw().get("hardware", {}).items()}


def hardware(name: str) -> Tuple[Accelerator, Optional[int], Optional[float], Optional[float]]:
    """mlsysim's ``Hardware`` entry under its attribute name (``"H100"``, ``"GB200_NVL72"``), as a plan reads it:
    ``(accelerator, accelerator_count, NVLink B/s per direction, host link B/s per direction)``."""
    return _lookup(_hardware(), name, "hardware")


def hardware_names() -> Tuple[str, ...]:
    return tuple(_raw().get("hardware", {}))
