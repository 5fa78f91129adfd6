"""One catalog record field by field (``mlsysim-sym list NAME``): an architecture card as a card file writes it,
each field with its symbol and meaning (:data:`mlsysim_sym.shape.FIELD_SYMBOLS`); every value of a model or a
cluster the models read, named by the parameter it sets (the parameter table's words, symbol and unit,
:data:`mlsysim_sym.symbols.PARAMS`), a cluster's by its part; and the sources the modern catalog cites for them.

>>> r = record("modern/Llama-3.1-8B")
>>> [(row["field"], row["value"]) for row in r["card"]][:6]
[('layers', 32), ('hidden', 4096), ('heads', 32), ('vocab', 128256), ('ffn', 14336), ('kv_heads', 8)]
>>> next(row["value"] for row in record("modern/B200-1024")["fields"] if row["field"] == "memory_bandwidth")
7700000000000.0
"""
from __future__ import annotations

from dataclasses import fields
from typing import Any, Dict, List, Tuple

from . import catalog, modern, notation
from .architecture import CARD_FIELDS, CARD_REQUIRED
from .display import WIDTH, capacity_words, count_text, quantity, wrap
from .shape import FIELD_SYMBOLS
from .symbols import PARAMS, sym
from .types import Fleet, Workload

__all__ = ["record", "lines"]

#: The parts of a cluster, in the order a record lists them, and how each is reached from the fleet.
_PARTS = (("fleet", lambda f: f), ("node", lambda f: f.node), ("fabric", lambda f: f.fabric),
          ("accelerator", lambda f: f.node.accelerator))
#: The fields of a record that set a parameter (a keyword whose default is the record's own, kv_fraction, too).
PARAM_FIELDS = frozenset(f for p in PARAMS.values() for f in (p.field, getattr(p, "record_default", None)) if f)
#: A card's fields whose default is another field's value (shown with the value they take), and the words for it.
_DERIVED_DEFAULTS = {"kv_heads": "= heads", "head_dim": "= hidden / heads", "expert_ffn": "= ffn",
                     "v_head_dim": "= head_dim", "window_layers": "all layers"}
#: The card's switches of its shape, shown whether the card sets them or leaves their default.
_SWITCHES = ("gated", "tied", "causal")
#: The card's fields that set no symbol of the shape, in words.
_WORDS = {"attention": "attention: gqa (multi-head, grouped- or multi-query) or mla (latent)",
          "first_dense": "dense layers before the first MoE layer",
          "moe_every": "every how-many-th layer from first_dense on is a MoE layer (1: each)"}


def _catalog_of(name: str) -> Tuple[str, Any]:
    """(the catalog's name, its record: a card, a workload or a fleet) for a name of either catalog."""
    if str(name).startswith(modern.PREFIX):
        if name in modern.architecture_names():
            return "modern", modern.architecture(name)
        if name in modern.fleet_names():
            return "modern", modern.fleet(name)
        keys = modern.architecture_names() + modern.fleet_names()
    else:
        if name in catalog.workload_names():
            return "mlsysim 0.3.0", catalog.workload(name)
        if name in catalog.fleet_names():
            return "mlsysim 0.3.0", catalog.fleet(name)
        keys = catalog.workload_names() + catalog.fleet_names() + modern.architecture_names() + modern.fleet_names()
    close = catalog.close_names(name, keys)
    shown = repr(name) if len(str(name)) <= 60 else repr(str(name)[:57] + "...")
    file_hint = ("; list shows the catalogs' names (a plan file is read by --model and --fleet)"
                 if str(name).lower().endswith((".yaml", ".yml", ".toml", ".json")) else "")
    raise KeyError(f"NAME: no workload or cluster {shown} in the catalog{file_hint}"
                   + (f"; close names: {', '.join(close)}" if close else "; 'mlsysim-sym list' lists them"))


def _card_rows(card) -> List[Dict[str, Any]]:
    """The card as a card file writes it, in the card's order: every field it sets, the fields whose default is
    another field's value (``kv_heads`` = ``heads``) and the shape's switches (gated, tied, causal) marked as
    defaults, leaving out what the card's kind has not (the experts of a dense model, latent attention's ranks of
    another, a window it does not have); then the MoE layers, which ``first_dense`` and ``moe_every`` set."""
    given, values = card.to_dict(), card.values
    symbol_of = {"layers": sym.L, "hidden": sym.H, "top_k": sym.k_e, **FIELD_SYMBOLS}
    moe, mla, window = card.experts > 0, card.attention == "mla", card.window > 0
    kind_has = {"top_k": moe, "shared_experts": moe, "expert_ffn": moe, "first_dense": moe, "moe_every": moe,
                "q_rank": mla, "kv_rank": mla, "rope_dim": mla, "v_head_dim": mla, "window_layers": window}
    rows = []
    for f in CARD_FIELDS:
        is_set = f in given and f != "name"
        if f == "name" or not kind_has.get(f, True) or not (is_set or f in _DERIVED_DEFAULTS or f in _SWITCHES):
            continue
        s = symbol_of.get(f)
        value = getattr(card, f) if is_set or f in _SWITCHES else int(values[s])
        words = (PARAMS[str(s)].words if str(s) in PARAMS else notation.entry(str(s)).meaning) if s is not None \
            else _WORDS[f]
        if not is_set:
            words = (f"default ({_DERIVED_DEFAULTS[f]}): " if f in _DERIVED_DEFAULTS else "default: ") + words
        if f == "ffn" and moe and card.moe_layers == card.layers:
            words += " (unused: every layer is a MoE layer)"
        rows.append({"field": f, "symbol": notation.plain(notation.entry(str(s)).latex) if s is not None else "",
                     "value": value, "set": is_set, "required": f in CARD_REQUIRED, "meaning": words})
    if moe:
        s = FIELD_SYMBOLS["moe_layers"]
        rows.append({"field": "", "symbol": notation.plain(notation.entry(str(s)).latex), "value": card.moe_layers,
                     "set": False, "required": False,
                     "meaning": f"derived (first_dense, moe_every): {notation.entry(str(s)).meaning}"})
    return rows


def _param_rows(origin: str, obj) -> List[Dict[str, Any]]:
    """The values of ``obj`` (a workload, fleet, node, fabric or accelerator) the models read, in the parameter
    table's order: each field that sets a parameter (a part of a cluster that leaves one empty shows the
    fallback the model takes, marked); a workload's zeros that mean "none" (no window) are left out, and its
    other values (size in bytes, FLOPs, denoising steps, which mlsysim's lowering reads) follow."""
    rows = []
    for p in PARAMS.values():
        field = p.field if p.origin.value == origin else (
            getattr(p, "record_default", None) if origin == "workload" else None)
        v = getattr(obj, field, None) if field else None
        fallback = v is None and p.fallback is not None and p.origin.value == origin != "workload"
        if fallback:
            v = p.fallback
        if v is None or (origin == "workload" and v == 0 and p.fallback == 0):
            continue
        rows.append({"field": field, "part": origin, "label": p.words, "meaning": p.meaning, "symbol": p.text,
                     "value": v, "unit": p.unit, "fidelity": p.fidelity, "fallback": fallback})
    if isinstance(obj, Workload):
        per = "token" if obj.is_transformer else "denoising step" if obj.kind == "diffusion" else "sample"
        named = {r["field"] for r in rows} | PARAM_FIELDS | {"name", "kind", "architecture"}
        for f in fields(obj):
            v = getattr(obj, f.name)
            if f.name in named or v is None:
                continue
            label = f"inference FLOPs per {per}" if f.name == "inference_flops" else f.name.replace("_", " ")
            rows.append({"field": f.name, "part": origin, "label": label, "meaning": label, "symbol": "",
                         "value": v, "unit": catalog._UNITS.get(f.name, "1").replace("count", "1"),
                         "fidelity": "mlsysim", "fallback": False})
    return rows


def record(name: str) -> Dict[str, Any]:
    """Every field of the catalog's workload or cluster ``name`` (either catalog's name, ``modern/`` for the
    modern one) with the parameter it sets; an unknown name is a ``KeyError`` with the close names."""
    where, obj = _catalog_of(name)
    out: Dict[str, Any] = {"name": name, "catalog": where}
    if isinstance(obj, Fleet):
        acc = obj.node.accelerator
        out.update(kind="cluster", title=obj.name, accelerators=obj.total_accelerators, accelerator=acc.name,
                   node=obj.node.name, fabric=obj.fabric.name,
                   fields=[r for part, reach in _PARTS for r in _param_rows(part, reach(obj))],
                   precision_flops=dict(acc.precision_flops))
    else:
        card = obj if not isinstance(obj, Workload) else None
        w = card.workload() if card is not None else obj
        out.update(kind=w.kind, title=w.name, fields=_param_rows("workload", w))
        if card is not None:
            out.update(card=_card_rows(card), card_fields=card.to_dict())
    out["sources"] = modern.sources(name) if where == "modern" else {}
    return out


def _value(v, unit: str, field: str = "") -> str:
    """A value as a person reads it: a whole count in full below 10,000, else as a parameter count is written
    (``3.2M``); an accelerator's memory as its label gives it and in SI (``80 GiB = 85.9 GB``); else with its
    unit and an SI prefix."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    if unit == "card":                  # a card's value as its file writes it
        return f"{v:,}"
    if field == "memory_capacity":
        return capacity_words(v)
    if unit == "1" and float(v).is_integer():
        return f"{int(v):,}" if abs(v) < 1e4 else count_text(v)
    return quantity(v, unit)


def _columns(rows: List[List[str]], indent: str = "  ", widths=None) -> List[str]:
    """Rows whose last cell (words) wraps within the width the other columns leave it (a number and its unit
    kept together, no word broken at a hyphen); ``widths``: the other columns' (default: their widest cells)."""
    if not rows:
        return [indent + "(no field the models read)"]
    widths = widths or [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lead = len(indent) + sum(w + 2 for w in widths)
    out = []
    for r in rows:
        head = indent + "".join(c.ljust(w + 2) for c, w in zip(r, widths))
        words = wrap(r[-1], " " * lead, max(WIDTH, lead + 24)) if r[-1] else [""]
        out.append((head + words[0][lead:]).rstrip())
        out += words[1:]
    return out


def lines(name: str) -> List[str]:
    """``mlsysim-sym list NAME``'s text: the card, the values the models read, and the sources."""
    r = record(name)
    title = "" if r["title"] == name else f"{r['title']}, "
    if r["kind"] == "cluster":
        out = wrap(f"{name} ({r['catalog']} catalog): {r['title']}", "")
        out += wrap(f"{r['accelerators']:,} {r['accelerator']} in nodes of {r['node']}; fabric: {r['fabric']}", "  ")
        parts = {part: [[f["symbol"], _value(f["value"], f["unit"], f["field"])
                         + (" (fallback)" if f["fallback"] else ""), f["meaning"]]
                        for f in r["fields"] if f["part"] == part] for part, _ in _PARTS}
        parts["accelerator"] += [["", _value(v, "flop/s"), f"peak FLOP/s at {p}"]
                                 for p, v in r["precision_flops"].items()]
        every = [row for rows in parts.values() for row in rows]
        widths = [max(len(row[i]) for row in every) for i in range(2)]      # one alignment for every part
        for part, rows in parts.items():
            out += [f"{part}:"] + _columns(rows, widths=widths)
        if any(f["fallback"] for f in r["fields"]):
            out += wrap("(fallback): the record leaves the field empty; the models take this value", "  ")
    else:
        out = wrap(f"{name} ({r['catalog']} catalog): {title}{r['kind'].replace('_', ' ')}", "")
        if "card" in r:
            out += ["its architecture card (the fields a card file takes, docs/files.md):"]
            out += _columns([[c["field"], c["symbol"], _value(c["value"], "card"), c["meaning"]] for c in r["card"]])
            out += ["what the models read of it:"]
        out += _columns([[f["label"] + (" *" if f["fidelity"] == "extended" else ""), f["symbol"],
                          _value(f["value"], f["unit"], f["field"])] for f in r["fields"]])
        if any(f["fidelity"] == "extended" for f in r["fields"]):
            out += ["  * read by the extended model only (fidelity=\"extended\")"]
    if r["sources"]:
        out += ["sources:"]
        by_text: Dict[str, List[str]] = {}
        for field, text in r["sources"].items():
            by_text.setdefault(text, []).append(field)
        for text, cited in by_text.items():
            out += wrap(f"{', '.join(cited)}: {text}", "  ")
    elif r["catalog"] == "mlsysim 0.3.0":
        out += wrap("source: mlsysim 0.3.0's registry (mlsysim.Models, mlsysim.Systems), as mlsysim reads it", "")
    return out
