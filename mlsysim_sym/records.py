"""One catalog record field by field (``mlsysim-sym list NAME``): a model's or a cluster's values, each named by
the parameter it sets (the parameter table's words, symbol and unit, :data:`mlsysim_sym.symbols.PARAMS`), an
architecture card's shape by its symbols (:data:`mlsysim_sym.shape.FIELD_SYMBOLS`), with the sources the modern
catalog cites for them.

>>> r = record("modern/Llama-3.1-8B")
>>> [(row["field"], row["value"]) for row in r["card"]][:7]
[('layers', 32), ('hidden', 4096), ('heads', 32), ('vocab', 128256), ('ffn', 14336), ('kv_heads', 8), ('head_dim', 128)]
>>> next(row["value"] for row in record("modern/B200-1024")["fields"] if row["field"] == "memory_bandwidth")
7700000000000.0
"""
from __future__ import annotations

from dataclasses import fields
from typing import Any, Dict, List, Tuple

from . import catalog, modern, notation
from .architecture import CARD_FIELDS
from .shape import FIELD_SYMBOLS
from .symbols import PARAMS, sym
from .types import Fleet, Workload

__all__ = ["record", "lines"]

#: The fields of a record that set a parameter (shown with it when the record gives them).
PARAM_FIELDS = frozenset(f for p in PARAMS.values() for f in (p.field, getattr(p, "record_default", None)) if f)
#: The parts of a cluster, in the order a record lists them, and how each is reached from the fleet.
_PARTS = (("fleet", lambda f: f), ("node", lambda f: f.node), ("fabric", lambda f: f.fabric),
          ("accelerator", lambda f: f.node.accelerator))


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
    raise KeyError(f"NAME: no workload or cluster {name!r} in the catalog"
                   + (f"; close names: {', '.join(close)}" if close else "; 'mlsysim-sym list' lists them"))


def _card_rows(card) -> List[Dict[str, Any]]:
    """The card's shape: every symbol it sets, by its card field in the card's order, leaving out what the card's
    kind has not (the experts of a dense model, latent attention's ranks of another, a window it does not have);
    the MoE layers, which the card sets through ``first_dense`` and ``moe_every``, last, with no field."""
    values = card.values
    field_of = {sym.L: "layers", sym.H: "hidden", sym.k_e: "top_k",
                **{s: f for f, s in FIELD_SYMBOLS.items() if f != "moe_layers"}}
    order = list(CARD_FIELDS)
    moe, mla, window = card.experts > 0, card.attention == "mla", card.window > 0
    needs = {sym.k_e: moe, FIELD_SYMBOLS["expert_ffn"]: moe, FIELD_SYMBOLS["v_head_dim"]: mla,
             FIELD_SYMBOLS["window_layers"]: window}
    flags = (FIELD_SYMBOLS["tied"], FIELD_SYMBOLS["causal"], FIELD_SYMBOLS["gated"])
    rows = []
    for s in sorted(values, key=lambda s: order.index(field_of[s]) if s in field_of else len(order)):
        v = values[s]
        if not needs.get(s, True) or (v == 0 and s not in flags):
            continue
        entry = notation.entry(str(s))
        words = PARAMS[str(s)].words if str(s) in PARAMS and PARAMS[str(s)].label else entry.meaning
        if s == FIELD_SYMBOLS["moe_layers"]:
            words += f"; the card's first_dense {card.first_dense}, moe_every {card.moe_every}"
        rows.append({"field": field_of.get(s, ""), "symbol": notation.plain(entry.latex), "value": int(v),
                     "meaning": words})
    return rows


def _param_rows(origin: str, obj) -> List[Dict[str, Any]]:
    """The values of ``obj`` (a workload, fleet, node, fabric or accelerator) that set a parameter of the
    models, in the parameter table's order; a field the record leaves empty is left out."""
    rows = []
    for p in PARAMS.values():
        # a keyword whose default is the workload's own value (kv_fraction) is read from the record too
        field = p.field if p.origin.value == origin else (
            getattr(p, "record_default", None) if origin == "workload" else None)
        v = getattr(obj, field, None) if field else None
        if v is None:
            continue
        rows.append({"field": field, "part": origin, "label": p.words, "symbol": p.text, "value": v,
                     "unit": p.unit, "fidelity": p.fidelity})
    if isinstance(obj, Workload):
        # the record's other values (its size in bytes, FLOPs, denoising steps), which mlsysim's lowering reads
        named = {r["field"] for r in rows} | {"name", "kind", "architecture"}
        rows += [{"field": f.name, "part": origin, "label": f.name.replace("_", " ").replace("flops", "FLOPs"),
                  "symbol": "", "value": getattr(obj, f.name),
                  "unit": catalog._UNITS.get(f.name, "1").replace("count", "1"), "fidelity": "mlsysim"}
                 for f in fields(obj) if f.name not in named and getattr(obj, f.name) is not None
                 and f.name not in PARAM_FIELDS]
    return rows


def record(name: str) -> Dict[str, Any]:
    """Every field of the catalog's workload or cluster ``name`` (either catalog's name, ``modern/`` for the
    modern one) with the parameter it sets; an unknown name is a ``KeyError`` with the close names."""
    where, obj = _catalog_of(name)
    out: Dict[str, Any] = {"name": name, "catalog": where}
    if isinstance(obj, Fleet):
        acc = obj.node.accelerator
        out.update(kind="cluster", title=obj.name, accelerators=obj.total_accelerators,
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


def _value(v, unit: str) -> str:
    from .display import quantity
    if unit == "1" and float(v).is_integer():
        return f"{int(v):,}" if abs(v) < 1e7 else _count(v)
    return quantity(v, unit)


def _count(x: float) -> str:
    """A large count as a parameter count is written: ``70.6B``, ``671B``."""
    scale, suffix = next(((s, p) for s, p in ((1e12, "T"), (1e9, "B"), (1e6, "M")) if abs(x) >= s), (1e3, "k"))
    return f"{x / scale:.3g}{suffix}"


def _columns(rows: List[List[str]], last_width: int, indent: str = "  ") -> List[str]:
    """Rows whose last cell (words) wraps within the width the other columns leave it."""
    import textwrap
    if not rows:
        return [indent + "(no field the models read)"]

    from .display import WIDTH
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lead = len(indent) + sum(w + 2 for w in widths)
    room = max(WIDTH - lead, last_width)
    out = []
    for r in rows:
        head = indent + "".join(c.ljust(w + 2) for c, w in zip(r, widths))
        words = textwrap.wrap(r[-1], room) or [""]
        out.append((head + words[0]).rstrip())
        out += [" " * lead + w for w in words[1:]]
    return out


def lines(name: str) -> List[str]:
    """``mlsysim-sym list NAME``'s text: the record's fields, what the models read, and the sources."""
    from .display import wrap
    r = record(name)
    what = (f"a cluster of {r['accelerators']:,} accelerators" if r["kind"] == "cluster"
            else r["kind"].replace("_", " "))
    title = "" if r["title"] == name else f"{r['title']}, "
    out = wrap(f"{name} ({r['catalog']} catalog): {title}{what}", "")
    if "card" in r:
        out += ["its architecture card (the fields a card file takes, docs/files.md):"]
        out += _columns([[c["field"], c["symbol"], f"{c['value']:,}", c["meaning"]] for c in r["card"]], 24)
        out += ["what the models read of it:"]
    rows = [[f["label"] + (" *" if f["fidelity"] == "extended" else ""), f["symbol"], _value(f["value"], f["unit"])]
            for f in r["fields"]]
    if r["kind"] == "cluster":
        peaks = ", ".join(f"{p} {_value(v, 'flop/s')}" for p, v in r["precision_flops"].items())
        if peaks:
            rows.append(["peak FLOP/s by precision", "R_peak", peaks])
    out += _columns(rows, 24)
    if any(f["fidelity"] == "extended" for f in r["fields"]):
        out += ["  * read by the extended model only (fidelity=\"extended\")"]
    if r["sources"]:
        out += ["sources:"]
        by_text: Dict[str, List[str]] = {}
        for field, text in r["sources"].items():
            by_text.setdefault(text, []).append(field)
        for text, fields in by_text.items():
            out += wrap(f"{', '.join(fields)}: {text}", "  ")
    elif r["catalog"] == "mlsysim 0.3.0":
        out += wrap("source: mlsysim 0.3.0's registry (mlsysim.Models and mlsysim.Systems), as mlsysim reads "
                    "it", "")
    return out

