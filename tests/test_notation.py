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


# --------------------------------------------------------------------------------------------
# The registry's rules (mlsysim/notation/data/README.md) over everything book mode prints
# --------------------------------------------------------------------------------------------
from pathlib import Path  # noqa: E402
import shutil  # noqa: E402

from mlsysim_sym import notation  # noqa: E402
from mlsysim_sym.model import Variant, build_model  # noqa: E402
from mlsysim_sym.printing import quantity_latex, term_latex  # noqa: E402
from derivations import registry  # noqa: E402

VARIANTS = [Variant(f, e, s, fl) for f in ("transformer", "generic") for e in (False, True)
            for s, fl in ((False, False), (True, True)) if f == "generic" or not (s or fl)]


def _defined():
    """Every macro the book would define after adopting the extension."""
    return {s.macro for s in mlsysim.Symbols} | {e["macro"] for es in registry.registry_extension().values()
                                                 for e in es}


def test_every_book_mode_equation_uses_only_registry_or_extension_macros():
    known = _defined()
    checked = 0
    for variant in VARIANTS:
        m = build_model(variant)
        for name in m:
            for form in ("structured", "expanded"):
                tex = quantity_latex(m, name, form, book=True)
                assert registry.book_problems(tex, known) == [], (variant, name, form, tex)
                checked += 1
    for t in notation.TERMS:
        assert registry.book_problems(term_latex(t, book=True), known) == [], t.name
    assert checked > 400


def test_the_book_rules_catch_a_stray_letter_an_unknown_macro_and_a_label():
    known = _defined()
    # the plain LaTeX of the model is not book notation: N_{\text{DP}} has a bare letter N
    m = build_model()
    assert "letter N outside \\text{}" in registry.book_problems(quantity_latex(m, "dp"), known)
    assert registry.book_problems(r"\NoSuchMacro + 1", known) == [
        r"\NoSuchMacro is neither a registered macro nor a LaTeX operator"]
    assert registry.book_problems(r"\Bandwidth_{\text{bisect}}", known) == [
        r"\Bandwidth decorated with a text label"]


def test_the_extension_passes_the_registrys_own_schema_and_conventions(tmp_path):
    """Each proposed entry loads in mlsysim's NotationSymbol, breaks none of its naming and field
    conventions, and the registry loads with the entries appended to its files (one step to adopt)."""
    from mlsysim.notation.registry import DATA_DIR, NotationRegistry
    from mlsysim.notation.types import NotationSymbol, convention_problems
    yaml = pytest.importorskip("yaml")
    ext = registry.registry_extension()
    assert set(ext) <= {"distributed", "performance", "learning"}
    assert sum(len(v) for v in ext.values()) >= 60
    definitions = {str(s.definition) for s in mlsysim.Symbols}
    for domain, entries in ext.items():
        for e in entries:
            s = NotationSymbol(**e)
            assert convention_problems(s) == [], (e["macro"], convention_problems(s))
            assert mlsysim.Symbols.get_by_macro(e["macro"]) is None, e["macro"]
            assert e["definition"] not in definitions, e["macro"]   # a new meaning, not a duplicate
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data)
    for domain in ext:
        listed = yaml.safe_load(registry.registry_extension_yaml(domain))["symbols"]
        assert listed == ext[domain]
        original = (data / f"{domain}.yaml").read_text()
        (data / f"{domain}.yaml").write_text(original + "".join(
            line + "\n" for line in registry.registry_extension_yaml(domain).splitlines()[3:]))
    adopted = NotationRegistry(data)
    assert len(adopted) == len(mlsysim.Symbols) + sum(len(v) for v in ext.values())
    for e in registry.lacking():
        assert adopted[e.extension].latex == e.latex, e.name


def test_book_meanings_follow_the_books_notation():
    r"""mlsysim's scaling_efficiency (T_node / T_step) is the book's useful-compute fraction (its
    \ScalingEfficiency is T_1 / (N T_N)); the book's MFU is one device's; the batch is the global one."""
    assert notation.entry("scaling_efficiency").book == r"\UsefulComputeFraction"
    assert notation.entry("mfu_node").book == r"\ModelFlopsUtilization"
    assert notation.entry("mfu").book is None and notation.entry("mfu").extension == r"\FleetModelFlopsUtilization"
    assert PARAMS["B"].book == r"\GlobalBatchSize"
    assert mlsysim.Symbols["UsefulComputeFraction"].latex == notation.entry("scaling_efficiency").latex


def test_no_two_quantities_share_a_glyph():
    assert registry.glyph_clashes() == []
    # the clashes the book's registry has within itself are listed for the authors, each a registry macro
    for macro in registry.REGISTRY_CLASHES:
        assert mlsysim.Symbols.get_by_macro(macro) is not None
    # what the rules catch: n_DP beside N_DP, V beside V_flight (d is a family of widths: the hidden size, a
    # head's, an FFN's; V, the virtual stages, is not one)
    dp = notation.entry("dp")
    fake = notation.Notation("x", r"n_{\text{DP}}", r"\DataParallelDegree", "", "1", "quantity")
    assert "differ only by letter case" in registry.glyph_clashes([dp, fake])[0]
    stages = notation.entry("v")
    fake = notation.Notation("x", r"V_{\text{flight}}", r"\VirtualPipelineStagesPerDevice", "", "1", "quantity")
    assert "share the letter V" in registry.glyph_clashes([stages, fake])[0]


def test_no_cost_term_shares_a_glyph_with_another_meaning(monkeypatch):
    # the book draws its checkpoint waste fraction W (\CheckpointWasteFraction), so the model's weight bytes are
    # W_model; gradient bytes a rank sends are M_DP (the book's traffic volume M), not V_DP beside the virtual
    # stages V; the GEMM-shape factor is f_GEMM, not f_shape beside the FLOPs F_shape
    assert registry.term_glyph_clashes() == []
    assert notation.entry("W").latex == r"W_{\text{model}}" and notation.term("CheckpointWaste").latex == "W"
    assert mlsysim.Symbols["CheckpointWasteFraction"].latex == "W"
    assert [notation.term(n).latex for n in ("DataParallelCommVolume", "Zero3CommVolume", "GemmShapeEfficiency")] \
        == [r"M_{\text{DP}}", r"M_{\text{ZeRO-3}}", r"f_{\text{GEMM}}"]
    # a quantity drawn as the term that defines it is one meaning: T_bubble is BubbleTime's value
    assert notation.entry("T_bubble").latex == notation.term("BubbleTime").latex
    # what the check catches: the old W beside the waste fraction, a case pair
    fakes = (notation.Term("Waste", r"W_{\text{model}}", r"\Waste", (), "x"),
             notation.Term("Shape", r"f_{\text{shape}}", r"\Shape", (), "x"))
    monkeypatch.setattr(registry, "TERMS", notation.TERMS + fakes)
    assert registry.term_glyph_clashes() == [
        r"W and the cost term Waste are both drawn W_{\text{model}}",
        r"F_shape (F_{\text{shape}}) and Shape (f_{\text{shape}}) differ only by letter case"]


def test_expressions_and_conditions_print_in_the_books_symbols_for_a_terminal():
    import sympy as sp
    from mlsysim_sym.terms.base import FloorDiv
    tp, pp, apn, lb, dp = (sp.Symbol(n, positive=True) for n in ("tp", "pp", "apn", "B", "dp"))
    assert notation.plain_expr(sp.Eq(apn, tp)) == notation.tie(apn, tp) == "G_node = N_TP"
    assert notation.plain_expr(pp - 1) == "N_PP - 1"
    assert notation.plain_expr(FloorDiv(lb, dp) >= 1) == "⌊B_global/N_DP⌋ ≥ 1"
    # an Or inside an And keeps its brackets (it would read the other way round without them); Not in words
    assert notation.plain_expr(sp.And(sp.Or(sp.Eq(tp, 1), sp.Eq(pp, 1)), tp < 8)) == \
        "N_TP < 8 and (N_PP = 1 or N_TP = 1)"
    assert notation.plain_expr(sp.Ne(tp, 1)) == "N_TP ≠ 1"
    assert notation.plain_expr(sp.Not(sp.And(sp.Eq(tp, 1), sp.Eq(pp, 1)))) == "not (N_PP = 1 and N_TP = 1)"


def test_a_printed_symbol_names_its_quantity_for_every_reader():
    # the tables print the quantity M_acc as M_total (its LaTeX M_{\text{total}}); outputs,
    # sensitivity and `equations` read them back through notation.printed_as
    from mlsysim_sym.outputs import field_named
    from mlsysim_sym.sensitivity.point import quantity_name
    assert notation.printed_as("M_total", ["T_step", "M_acc"]) == "M_acc"
    assert notation.printed_as("nope", ["M_acc"]) is None
    assert notation.printed_as("M_total", ["not-a-quantity", "M_acc"]) == "M_acc"
    assert field_named("M_total") == "node_profile.memory_footprint"
    assert quantity_name("M_total") == "M_acc"


def test_the_cost_terms_table_gives_units():
    # the cost terms' and their formal arguments' units, as the parameters' and quantities' tables give theirs
    # (a term's from its formula's dimension, printing.term_unit; an argument's from the notation table)
    text = (Path(__file__).resolve().parent.parent / "docs" / "notation.md").read_text()
    table = text.split("## Cost terms and their formal arguments")[1].split("\n## ")[0]
    assert "| `RingAllReduce`, `\\RingAllReduceCompletionTime` | ring all-reduce time, s |" in table
    assert "`E_byte`, `\\NetworkEnergyPerByte` (proposed) | network energy to move one byte from one rank to " \
           "another, J/B |" in table
    assert "| failure rate of one component, 1/s |" in table and "| Meaning, unit |" in table


def test_no_glyph_of_ours_is_a_registry_glyph_of_another_meaning():
    # a student pasting the book-mode output beside the book's own symbols: P_total was the registry's total chip
    # power, P_active its active inference power, M_KV its KV-cache memory, T_att its checkpoint attempt duration
    # (a trial found them). Left alone: y (the registry gives it 27 meanings) and \iota (two integrity labels of the
    # registry; the routing imbalance is mlsysim's keyword's)
    drawn = {}
    for s in mlsysim.Symbols:
        drawn.setdefault(s.latex, set()).add(s.macro)
    ours = [(e.name, e.latex, e.macro) for e in registry.table().values() if e.kind != "formal"]
    ours += [(t.name, t.latex, t.book) for t in notation.TERMS]
    clashes = [(n, latex) for n, latex, macro in ours if latex in drawn and macro not in drawn[latex]]
    assert sorted(clashes) == [("iota", r"\iota"), ("y", "y")]
    assert notation.entry("M_kv").latex == r"M_{\text{KV,seq}}" and mlsysim.Symbols["KvCacheMemory"].latex == \
        r"M_{\text{KV}}"
