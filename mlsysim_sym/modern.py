"""The modern catalog, beside mlsysim's: architecture cards of today's models and NVIDIA training systems (H100 SXM,
H200, B200, GB200 NVL72), each field with its source (``data/modern.json``, written by
``tools/write_modern_catalog.py``).

Its names start with ``modern/`` wherever a name is taken (``solve("modern/DeepSeek-V3", "modern/B200-1024")``,
``mlsysim-sym solve --model modern/Llama-3.1-70B``), so a name says which catalog it comes from; mlsysim's
registry (:mod:`mlsysim_sym.catalog`) keeps its own names and its records exactly.

>>> from mlsysim_sym import modern
>>> modern.architecture("DeepSeek-V3").parameters
671026404352
>>> modern.fleet("GB200-NVL72-1152").node.accelerators_per_node
72
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any, Dict, Tuple

from .architecture import Architecture
from .catalog import _lookup, _record
from .types import Accelerator, Fabric, Fleet, Node, Workload

PREFIX = "modern/"


@lru_cache(maxsize=1)
def _raw() -> Dict[str, Any]:
    path = resources.files("mlsysim_sym").joinpath("data").joinpath("modern.json")
    return json.loads(path.read_text(encoding="utf-8"))


def _bare(name: str) -> str:
    return name[len(PREFIX):] if isinstance(name, str) and name.startswith(PREFIX) else name


@lru_cache(maxsize=None)
def _architectures() -> Dict[str, Architecture]:
    return {k: Architecture(name=PREFIX + k, **v["fields"]) for k, v in _raw()["architectures"].items()}


@lru_cache(maxsize=None)
def _fleets() -> Dict[str, Fleet]:
    raw = _raw()
    accs = {k: _record(Accelerator, v, precision_flops=tuple((p, float(f)) for p, f in v["precision_flops"]))
            for k, v in raw["accelerators"].items()}
    nodes = {k: _record(Node, v, accelerator=accs[v["accelerator"]]) for k, v in raw["nodes"].items()}
    fabrics = {k: _record(Fabric, v) for k, v in raw["fabrics"].items()}
    return {k: _record(Fleet, v, node=nodes[v["node"]], fabric=fabrics[v["fabric"]])
            for k, v in raw["fleets"].items()}


def _find(table: Dict[str, Any], name: str, what: str):
    """``table[name]`` without its prefix; an unknown name is a ``KeyError`` whose close names carry the prefix
    (``modern/H100-SXM-1024``, as a user types them)."""
    try:
        return table[_bare(name)]
    except (KeyError, TypeError):
        return _lookup({PREFIX + k: v for k, v in table.items()}, name if str(name).startswith(PREFIX)
                       else PREFIX + str(name), what)


def architecture(name: str) -> Architecture:
    """The card under its name (``"DeepSeek-V3"`` or ``"modern/DeepSeek-V3"``)."""
    return _find(_architectures(), name, "modern architecture")


def workload(name: str) -> Workload:
    """The record a card prices as (:meth:`~mlsysim_sym.architecture.Architecture.workload`)."""
    return architecture(name).workload()


def fleet(name: str) -> Fleet:
    """A fleet of the catalog (``"B200-1024"`` or ``"modern/B200-1024"``)."""
    return _find(_fleets(), name, "modern fleet")


def architecture_names() -> Tuple[str, ...]:
    return tuple(PREFIX + k for k in _raw()["architectures"])


def fleet_names() -> Tuple[str, ...]:
    return tuple(PREFIX + k for k in _raw()["fleets"])


def sources(name: str) -> Dict[str, str]:
    """Where each field of a card, or of a fleet's accelerator, node and fabric, comes from: field -> citation."""
    raw, key = _raw(), _bare(name)
    cite = raw["citations"]

    def expand(table):
        out = {}
        for fields, refs in table.items():
            text = "; ".join(cite[r.strip()] for r in refs.split(";"))
            out.update({f: text for f in fields.split(",")})
        return out

    if key in raw["architectures"]:
        return expand(raw["architectures"][key]["sources"])
    f = raw["fleets"][_lookup(raw["fleets"], key, "modern name") and key]
    node = raw["nodes"][f["node"]]
    out = {"accelerator." + k: v for k, v in expand(raw["accelerators"][node["accelerator"]]["sources"]).items()}
    out.update({"node." + k: v for k, v in expand(node["sources"]).items()})
    out.update({"fabric." + k: v for k, v in expand(raw["fabrics"][f["fabric"]]["sources"]).items()})
    return out
