"""Our symbols use the textbook's notation where the book has a symbol (mlsysim.Symbols)."""
import pytest

from mlsysim_sym.symbols import PARAMS

mlsysim = pytest.importorskip("mlsysim")


def test_book_macros_exist_and_match_our_latex():
    mapped = [p for p in PARAMS.values() if p.book]
    assert len(mapped) >= 15
    for p in mapped:
        entry = getattr(mlsysim.Symbols, p.book.lstrip("\\"))
        assert entry.macro == p.book
        assert entry.latex == p.latex, p.name


def test_latex_names_are_unique():
    seen = {}
    for p in PARAMS.values():
        assert p.latex not in seen, (p.name, seen.get(p.latex))
        seen[p.latex] = p.name
