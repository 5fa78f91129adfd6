"""The one LaTeX printer: golden headline equations, the book's notation in plain sympy.latex too, templates."""
import re

import jinja2
import pytest
import sympy as sp

from mlsysim_sym import notation
from mlsysim_sym import proposals
from mlsysim_sym.model import StepTimeModel, Variant, build_model
from mlsysim_sym.printing import (LatexPrinter, environment, equation, expr_repr_latex, latex, md_text,
                                  model_latex, model_repr_latex, number, quantity_latex, quantity_repr_latex,
                                  split_equation, term_latex, tex_text, value_latex)
from mlsysim_sym.operating_point import operating_point_of
from mlsysim_sym.simplify import DECOMPOSITION
from mlsysim_sym.symbols import PARAMS, sym
from mlsysim_sym.terms.base import CeilDiv, FloorDiv, Iverson
from mlsysim_sym.terms.memory import ShardDivisor
from derivations import registry  # noqa: E402

TERM = {t.name: t for t in notation.TERMS}
VARIANTS = (Variant(), Variant("transformer", True), Variant("generic"), Variant("generic", True),
            Variant("generic", False, True, False), Variant("generic", True, True, True),
            Variant(fidelity="extended"), Variant("generic", fidelity="extended"))
_MACRO = re.compile(r"\\([A-Za-z]+)")


def expand_macros(tex: str) -> str:
    """Replace every book macro by its LaTeX (what a reader's TeX engine does)."""
    macros = notation.book_macros()
    return _MACRO.sub(lambda m: macros.get(m.group(0), m.group(0)), tex)


@pytest.fixture(scope="module")
def model():
    return build_model()


# --------------------------------------------------------------------------------------------
# Golden headline equations
# --------------------------------------------------------------------------------------------
def test_golden_ring_allreduce():
    assert term_latex(TERM["RingAllReduce"]) == (
        "\\begin{aligned}\n"
        r"T_{\text{ring}}\left(M, N, \beta, \alpha\right) &= \frac{2 M \left(N - 1\right)}{N \beta} "
        r"+ 2 \alpha \left(N - 1\right) \\" "\n"
        r"&= 2 \left(N - 1\right) \left(\frac{M}{N \beta} + \alpha\right)" "\n"
        "\\end{aligned}")
    assert term_latex(TERM["RingAllReduce"], book=True).startswith(
        "\\begin{aligned}\n"
        r"\RingAllReduceCompletionTime\left(\CollectivePayloadSize, \DeviceCount, \LinkBandwidth, "
        r"\MessageStartupLatency\right) &= \frac{2 \CollectivePayloadSize \left(\DeviceCount - 1\right)}"
        r"{\DeviceCount \LinkBandwidth} + 2 \MessageStartupLatency \left(\DeviceCount - 1\right)")


def test_golden_hierarchical_allreduce():
    # too wide for a 720 px column on one line: the call on a line of its own, the sums broken at terms;
    # the formal arguments print as the parameters of the same meaning (proposals.SAME_MEANING)
    assert term_latex(TERM["HierarchicalAllReduce"]) == (
        "\\begin{aligned}\n"
        r"&T_{\text{hier}}\left(M, N_{\text{nodes}}, G_{\text{node}}, \beta_{\text{intra}}, \alpha_{\text{intra}}, "
        r"\beta_{\text{inter}}, \alpha_{\text{fab}}\right) \\" "\n"
        r"&= \frac{2 M \left(N_{\text{nodes}} - 1\right)}{G_{\text{node}} \beta_{\text{inter}} N_{\text{nodes}}} "
        r"+ \frac{2 M \left(G_{\text{node}} - 1\right)}{G_{\text{node}} \beta_{\text{intra}}} \\" "\n"
        r"&\quad + 2 \alpha_{\text{intra}} \left(G_{\text{node}} - 1\right) "
        r"+ 2 \alpha_{\text{fab}} \left(N_{\text{nodes}} - 1\right) \\" "\n"
        r"&= 2 \biggl( \frac{M \left(N_{\text{nodes}} - 1\right)}{G_{\text{node}} \beta_{\text{inter}} "
        r"N_{\text{nodes}}} + \frac{M \left(G_{\text{node}} - 1\right)}{G_{\text{node}} \beta_{\text{intra}}} \\" "\n"
        r"&\quad + \alpha_{\text{intra}} \left(G_{\text{node}} - 1\right) + \alpha_{\text{fab}} "
        r"\left(N_{\text{nodes}} - 1\right) \biggr)" "\n"
        "\\end{aligned}")


def test_a_chain_that_fits_prints_on_one_line_and_a_wide_one_breaks():
    from mlsysim_sym.printing import broken_chain, chain, visible_length

    assert broken_chain([sym.tp, sym.pp]) == chain([sym.tp, sym.pp])
    assert visible_length(r"\frac{a + b}{c}") == visible_length("a + b")
    long_sum = sum(sp.Symbol(f"x_{{{i}}}") for i in range(40))
    tex = broken_chain([sym.tp, long_sum])
    assert tex.startswith("\\begin{aligned}\nN_{\\text{TP}} &= ") and tex.count(r"&\quad +") >= 1


def test_markdown_text_keeps_macro_names_and_math_survives_github():
    from mlsysim_sym.printing import md_math

    assert md_text(r"the book's \InterleavedPipelineBubbleFraction. R_eff") == \
        r"the book's `\InterleavedPipelineBubbleFraction`. R\_eff"
    assert md_math(r"3\,\text{s} \mathbf{1}\{x\} \\ a\,b") == r"3\thinspace\text{s} \mathbf{1}\lbrace x\rbrace \\ a\thinspace b"


def test_golden_bubble(model):
    assert term_latex(TERM["BubbleFraction"]) == (
        r"b_{\text{interleaved}}\left(N_{\text{PP}}, V, m\right) = \frac{N_{\text{PP}} - 1}{m V + N_{\text{PP}} - 1}")
    assert term_latex(TERM["BubbleFraction"], book=True) == (
        r"\InterleavedPipelineBubbleFraction\left(\PipelineParallelDegree, \VirtualPipelineStagesPerDevice, "
        r"\MicrobatchCount\right) = \frac{\PipelineParallelDegree - 1}{\MicrobatchCount "
        r"\VirtualPipelineStagesPerDevice + \PipelineParallelDegree - 1}")
    assert term_latex(TERM["BubbleTime"]) == (
        r"T_{\text{bubble}}\left(T_{\text{busy}}, N_{\text{PP}}, V, m\right) = "
        r"\frac{T_{\text{busy}} \left(N_{\text{PP}} - 1\right)}{m V}")
    assert quantity_latex(model, "T_bubble") == (
        r"T_{\text{bubble}} = T_{\text{bubble}}\left(T_{\text{node}}, N_{\text{PP}}, V, m\right)")


def test_golden_zero_shards(model):
    assert quantity_latex(model, "M_weights") == (
        r"M_{\text{weights}} = \frac{P_{\text{shard}} s_{\text{elem}}}"
        r"{N_{\text{DP}}^{\mathbf{1}\left\{z_{\text{ZeRO}} \geq 3\right\}}}")
    assert quantity_latex(model, "M_grads") == (
        r"M_{\text{gradients}} = \frac{P_{\text{shard}} s_{\text{elem}} f_{\text{tune}}}"
        r"{N_{\text{DP}}^{\mathbf{1}\left\{z_{\text{ZeRO}} \geq 2\right\}}}")
    # book mode: every symbol is a macro, the registry's or the one we propose (proposals.EXTENSION)
    assert quantity_latex(model, "M_optimizer", book=True) == (
        r"\OptimizerStateMemory = \frac{\OptimizerStateBytesPerParameter \ShardParameterCount "
        r"\TrainableParameterFraction}{\DataParallelDegree^{\EventIndicator\left\{\ZeroShardingStage \geq 1"
        r"\right\}}}")


def test_golden_step_time(model):
    assert quantity_latex(model, "T_sync") == (
        r"\tilde{T}_{\text{step}} = T_{\text{node}} + T_{\text{DP,exposed}} + T_{\text{TP}} + T_{\text{EP}} "
        r"+ T_{\text{bubble}}")
    assert quantity_latex(model, "T_step") == (
        r"T_{\text{step}} = \begin{cases} \tilde{T}_{\text{step}} f_{\text{strag}} & \text{for}\: f_{\text{strag}} > 1 "
        r"\\\tilde{T}_{\text{step}} & \text{otherwise} \end{cases}")
    assert quantity_latex(model, "T_node") == (
        r"T_{\text{node}} = L_{\text{lat}} + \max\left(T_{\text{compute}}, T_{\text{memory}}\right)")


def test_golden_scaling_efficiency_and_mfu(model):
    # mlsysim's scaling_efficiency is the book's useful-compute fraction (its \ScalingEfficiency is a speedup
    # over N), and the book's MFU is one device's: the fleet's gets a subscript
    assert quantity_latex(model, "scaling_efficiency") == r"f_{\text{compute}} = \frac{T_{\text{node}}}{T_{\text{step}}}"
    assert quantity_latex(model, "scaling_efficiency", book=True) == (
        r"\UsefulComputeFraction = \frac{\ReplicaRooflineTime}{\DistributedStepTime}")
    assert quantity_latex(model, "mfu") == r"\text{MFU}_{\text{fleet}} = \text{MFU} f_{\text{compute}}"
    assert quantity_latex(model, "mfu", book=True) == (
        r"\FleetModelFlopsUtilization = \ModelFlopsUtilization \UsefulComputeFraction")
    assert quantity_latex(model, "mfu_node") == (
        r"\text{MFU} = \frac{O_{\text{model}}}{G_{\text{rep}} R_{\text{peak}} T_{\text{node}}}")
    p = operating_point_of("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
    assert equation(p["mfu"].symbol, p.closed("mfu", DECOMPOSITION + ("T_step",))) == (
        r"\text{MFU}_{\text{fleet}} = \frac{3 F_{\text{fwd}} B_{\text{local}} S}{G_{\text{rep}} R_{\text{peak}} T_{\text{step}}}")


# --------------------------------------------------------------------------------------------
# The book's notation
# --------------------------------------------------------------------------------------------
def test_book_mode_expands_to_the_plain_form(model):
    checked = 0
    for name in model:
        for form in ("structured", "expanded"):
            if form == "expanded" and sp.count_ops(model[name]) > 60:
                continue
            assert expand_macros(quantity_latex(model, name, form, book=True)) == quantity_latex(model, name, form)
            checked += 1
    for t in notation.TERMS:
        assert expand_macros(term_latex(t, book=True)) == term_latex(t)
    assert checked > 70


def test_notation_covers_every_symbol_once():
    table = notation.table()
    used = set()
    for variant in VARIANTS:
        m = build_model(variant)
        assert all(n in table and table[n].kind == "quantity" for n in m)
        used |= set(m)
    # every quantity of the table is one of some variant (no stale entry), every parameter is in the table
    assert used == {e.name for e in notation.entries("quantity")}
    assert all(table[p.name].kind == "parameter" and table[p.name].latex == p.latex for p in PARAMS.values())
    # one glyph, one meaning: entries share a glyph only when they share the macro (a cost term's formal
    # argument of a parameter's meaning prints as the parameter: proposals.SAME_MEANING)
    macro_of = {}
    for e in table.values():
        assert macro_of.setdefault(e.latex, e.macro) == e.macro, f"one glyph for two meanings: {e.latex}"
    assert len(macro_of) == len(table) - len(proposals.SAME_MEANING)
    for formal, name in proposals.SAME_MEANING.items():
        assert (table[formal].latex, table[formal].macro) == (table[name].latex, table[name].macro)
    assert {e.macro for e in table.values()} >= set(notation.book_macros()) - {
        t.macro for t in notation.TERMS} - {notation.INDICATOR[0]}


def test_plain_sympy_latex_equals_the_package_printer_for_every_definition_and_expansion():
    # the notation lives in the symbols' and terms' own _latex hooks: sympy.latex (and a notebook's display)
    # prints the book's notation without being told, exactly as mlsysim_sym.latex does
    checked = 0
    for variant in VARIANTS:
        m = build_model(variant)
        for name in m:
            q = m.quantity(name)
            for expr in (q.symbol, m.definition(name), m[name]):
                assert sp.latex(expr) == latex(expr), (variant, name)
                checked += 1
            assert sp.latex(q.symbol) == q.latex == notation.entry(name).latex
    assert checked > 800
    # and the notebook display of any model expression is the same LaTeX
    assert build_model()["T_step"]._repr_latex_() == "$\\displaystyle " + latex(build_model()["T_step"]) + "$"


def test_symbols_the_book_lacks_are_listed_with_readable_notation():
    lacking = {e.name: e for e in registry.lacking()}
    assert {"ep", "G", "T_dp_exposed", "T_sync", "R_eff"} <= set(lacking)
    assert all(e.latex and e.meaning for e in lacking.values())
    assert "dp" not in lacking and "T_step" not in lacking
    assert lacking["T_sync"].note and lacking["R_eff"].note


def test_book_macros_match_the_notation_registry():
    mlsysim = pytest.importorskip("mlsysim")
    macros = notation.book_macros()
    proposed = {e["macro"] for entries in registry.registry_extension().values() for e in entries}
    assert len(macros) - len(proposed) >= 45
    for macro, tex in macros.items():
        if macro in proposed:       # ours: not in the registry yet (tests/test_notation.py checks the entries)
            assert mlsysim.Symbols.get_by_macro(macro) is None, macro
            continue
        entry = mlsysim.Symbols[macro]
        assert entry.macro == macro and entry.latex == tex, macro
    for e in notation.entries("quantity"):
        if e.book:
            assert mlsysim.Symbols[e.book].latex == e.latex, e.name


def test_newcommands_define_every_macro():
    lines = registry.newcommands().splitlines()
    assert len(lines) == len(notation.book_macros())
    assert r"\newcommand{\DataParallelDegree}{N_{\text{DP}}}" in lines


# --------------------------------------------------------------------------------------------
# Printer behaviour
# --------------------------------------------------------------------------------------------
def test_piecewise_prints_as_sympy_prints_it():
    x = sp.Symbol("x", positive=True)
    tex = latex(sp.Piecewise((sym.tp, x > 1), (sym.pp, True)))
    assert tex == sp.latex(sp.Piecewise((sym.tp, x > 1), (sym.pp, True))) == (
        r"\begin{cases} N_{\text{TP}} & \text{for}\: x > 1 \\N_{\text{PP}} & \text{otherwise} \end{cases}")


def test_floor_ceiling_and_indicator_brackets():
    assert latex(FloorDiv(sym.B, sym.tp)) == r"\left\lfloor \frac{B_{\text{global}}}{N_{\text{TP}}} \right\rfloor"
    assert latex(CeilDiv(sym.L, sym.pp)) == r"\left\lceil \frac{N_L}{N_{\text{PP}}} \right\rceil"
    assert latex(sp.floor(sym.B / sym.tp)) == r"\left\lfloor{\frac{B_{\text{global}}}{N_{\text{TP}}}}\right\rfloor"
    assert latex(Iverson(sym.pp > 1)) == r"\mathbf{1}\left\{N_{\text{PP}} > 1\right\}"
    assert latex(Iverson(sym.pp > 1), book=True) == r"\EventIndicator\left\{\PipelineParallelDegree > 1\right\}"


def test_a_zero_shard_prints_as_a_fraction():
    shard = sym.P / ShardDivisor(sym.tp, Iverson(sym.z >= 1))
    assert latex(shard) == sp.latex(shard) == (
        r"\frac{P}{N_{\text{TP}}^{\mathbf{1}\left\{z_{\text{ZeRO}} \geq 1\right\}}}")
    assert latex(-shard).startswith(r"- \frac{P}")
    assert ShardDivisor(sym.tp, 1) == sym.tp and ShardDivisor(sym.tp, 0) == 1    # at a point: plain
    # the power it stands for is what is computed
    assert shard.doit() == sym.P * sym.tp ** -Iverson(sym.z >= 1)


def test_sums_of_quantities_read_in_step_order(model):
    q = {n: model.quantity(n).symbol for n in model}
    assert latex(q["T_bubble"] + q["T_ep"] + q["T_node"]) == (
        r"T_{\text{node}} + T_{\text{EP}} + T_{\text{bubble}}")
    assert latex(q["T_tp"] + q["T_dp"] + q["T_ep"]) == r"T_{\text{DP}} + T_{\text{TP}} + T_{\text{EP}}"
    # everything else sorts as sympy sorts it (by name)
    assert latex(q["M_acc"] - sym.CAP) == sp.latex(q["M_acc"] - sym.CAP)


def test_caller_symbol_names_extend_the_table():
    x = sp.Symbol("x")
    assert LatexPrinter({"symbol_names": {x: r"\xi"}}).doprint(x * sym.tp) == r"N_{\text{TP}} \xi"
    with pytest.raises(TypeError):
        LatexPrinter({"no_such_setting": 1})


def test_long_sums_are_split_over_lines(model):
    p = operating_point_of("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
    tex = split_equation(p["T_step"].symbol, p.closed("T_step", DECOMPOSITION + ("T_node",)))
    assert tex.startswith("\\begin{aligned}\nT_{\\text{step}} &= ") and tex.count(r"&\quad +") >= 2
    assert "&\\quad + T_{\\text{node}}" in tex
    assert split_equation(sym.tp, sym.pp) == r"N_{\text{TP}} = N_{\text{PP}}"


def test_values_print_with_si_prefixes():
    assert value_latex(3.3686267, "s") == r"3.369\,\text{s}"
    assert value_latex(0.6184, "s") == r"618.4\,\text{ms}"
    assert value_latex(1.5e-5, "s") == r"15\,\mu\text{s}"
    assert value_latex(59411380584.0, "B") == r"59.41\,\text{GB}"
    assert value_latex(4.945e14, "flop/s") == r"494.5\,\text{Tflop/s}"
    assert value_latex(0.26039, "1") == "0.2604"
    assert value_latex(True, "1") == r"\text{true}"
    assert value_latex(18.22, "1/s") == r"18.22\,\text{s}^{-1}"
    assert number(2206250000) == r"2.206 \times 10^{9}" and number(256) == "256"
    assert value_latex(1e-18, "s") == r"1 \times 10^{-18}\,\text{s}"


def test_repr_latex_helpers(model):
    tex = model_repr_latex(model)
    assert tex.startswith("$$\\begin{aligned}") and tex.endswith("\\end{aligned}$$")
    assert tex.count("&=") == len(model)
    q = model.quantity("dp")
    assert quantity_repr_latex(q) == r"$$N_{\text{DP}} = \left\lfloor \frac{N_{\text{GPU}}}{G_{\text{rep}}} \right\rfloor$$"
    assert expr_repr_latex(sym.tp) == r"$$N_{\text{TP}}$$"
    assert model_latex(model, "expanded", names=["N"]) == "\\begin{aligned}\nN_{\\text{GPU}} &= G_{\\text{node}} N_{\\text{nodes}}\n\\end{aligned}"
    with pytest.raises(ValueError, match="form must be one of"):
        quantity_latex(model, "dp", "pretty")


@pytest.mark.skipif(not hasattr(StepTimeModel, "_repr_latex_"),
                    reason="the _repr_latex_ hooks of model.py are not added yet (issue 5)")
def test_notebook_hooks(model):
    assert model._repr_latex_() == model_repr_latex(model)
    assert model.quantity("dp")._repr_latex_() == quantity_repr_latex(model.quantity("dp"))


# --------------------------------------------------------------------------------------------
# Templates
# --------------------------------------------------------------------------------------------
def test_environment_uses_latex_delimiters_strict_undefined_and_the_printer():
    env = environment()
    assert isinstance(env.loader, jinja2.PackageLoader)
    t = env.from_string(r"\BLOCK{for x in xs}\VAR{x | tex}; \BLOCK{endfor}\VAR{y | book}\#{ignored}")
    assert t.render(xs=[sym.tp, "raw"], y=sym.pp) == r"N_{\text{TP}}; raw; \PipelineParallelDegree"
    with pytest.raises(jinja2.UndefinedError):
        env.from_string(r"\VAR{missing}").render()
    assert env.from_string(r"\VAR{v | value('s')}").render(v=0.5) == r"500\,\text{ms}"
    assert {"_md.j2", "_tex.j2", "document.tex.j2", "step_time.j2"} <= set(env.list_templates())


def test_text_escaping():
    assert tex_text("a_b & 5% #1 {x} ~^\\") == r"a\_b \& 5\% \#1 \{x\} \~{}\^{}\textbackslash{}"
    assert md_text("a|b*c_d") == r"a\|b\*c\_d"


def test_an_operating_point_goes_to_json_with_its_values_and_forms():
    # the bundled example: T_step = 3.369 s (solve()'s), its form in this regime (no straggler: the step before the
    # straggler's stretch) and the condition that selects it; feasible stays a yes/no
    import json
    from mlsysim_sym import DistributedModel, operating_point_of
    kw = dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
    d = json.loads(json.dumps(operating_point_of("Llama3_70B", "Research_256", **kw).to_dict()))
    step = d["quantities"]["T_step"]
    solved = DistributedModel().solve("Llama3_70B", "Research_256", **kw).step_latency_total
    assert step["value"] == pytest.approx(solved, rel=1e-14)   # (the point evaluates its forms in another order)
    assert (step["unit"], step["conditions"]) == ("s", ["f_strag ≤ 1"])
    assert step["latex"] == r"\tilde{T}_{\text{step}}"
    assert d["quantities"]["feasible"]["value"] is True and "Llama-3.1-70B" in d["configuration_line"]
    assert (d["configuration"]["model"], d["configuration"]["tp_size"]) == ("Llama3_70B", 8)
