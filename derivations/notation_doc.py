"""The notation: our symbols, the book's macros, and the notation we chose where the book has none."""
from __future__ import annotations

from typing import Dict, List

from mlsysim_sym import notation
from mlsysim_sym.printing import quantity_latex, term_unit

from .common import term_chain, transformer_model
from . import registry

#: Headline equations offered with the book's macros, ready to paste into a chapter.
HEADLINES = ("T_sync", "T_step", "scaling_efficiency", "mfu", "T_node", "M_weights", "M_grads", "M_optimizer")


def _rows(entries) -> List[Dict[str, object]]:
    return [{"name": e.name, "latex": e.latex, "book": e.macro, "proposed": not e.book, "meaning": e.meaning,
             "unit": e.unit, "note": e.note} for e in entries]


def context() -> Dict[str, object]:
    model = transformer_model()
    return {
        "parameters": _rows(notation.entries("parameter")),
        "quantities": _rows(notation.entries("quantity")),
        "formal": _rows(notation.entries("formal")),
        "terms": [{"name": t.name, "latex": t.latex, "book": t.macro, "proposed": not t.book, "meaning": t.meaning,
                   "unit": term_unit(t)} for t in notation.TERMS],
        "lacking": _rows(e for e in registry.lacking() if e.kind != "formal"),
        "notes": _rows(e for e in notation.table().values() if e.book and e.note),
        "newcommands": registry.newcommands(),
        "headlines": [{"name": n, "plain": quantity_latex(model, n), "book": quantity_latex(model, n, book=True)}
                      for n in HEADLINES]
        + [{"name": t.latex, "plain": term_chain(t), "book": term_chain(t, book=True)} for t in notation.TERMS[:2]],
    }
