r"""``mlsysim-sym equations`` and the cell API's equations as a textbook author meets them: no x = x(...), one label
for each distinct equation (the command line's, the cells' and the documents' the same), the options that do
nothing refused, the model and the unit in the comment line, close names for a name it does not know, and the long
book-mode forms typeset by KaTeX with the ``maxExpand`` the macros files document and set.
"""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import sympy as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mlsysim_sym import cells, macros, notation  # noqa: E402
from mlsysim_sym.cli import main  # noqa: E402
from mlsysim_sym.model import Variant, build_model  # noqa: E402
from mlsysim_sym.printing import TERM_CLASSES, definition_latex, quantity_latex, term_unit  # noqa: E402
from mlsysim_sym.run_costs import PLAN  # noqa: E402

QMD = ROOT / "docs" / "quarto"


def run(capsys, *args):
    """``mlsysim-sym equations ARGS`` in this process: (exit status, stdout, stderr)."""
    code = main(["equations", *args])
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, *args) -> str:
    code, out, err = run(capsys, *args)
    assert code == 2 and out == "" and len(err.splitlines()) == 1, (args, code, out, err)
    return err.removeprefix("mlsysim-sym: error: ").rstrip("\n")


# --------------------------------------------------------------------------------------------
# 1. A quantity defined as its own cost term goes on to the formula
# --------------------------------------------------------------------------------------------
def test_a_quantity_defined_as_its_cost_term_goes_on_to_the_formula(capsys):
    _, out, _ = run(capsys, "T_bubble")
    # T_bubble = T_bubble(T_node, N_PP, V, m) alone says x = x(...); the bubble adds (N_PP - 1) / (m V) of the replica
    # step (Narayanan et al. 2021: b / (1 - b) with b = (p - 1) / (m V + p - 1))
    assert out == ("% T_bubble: pipeline fill-and-drain time [s]\n\\begin{aligned}\n"
                   # a line beyond 80 columns is broken at a space (in LaTeX a line break is a space), outside the
                   # parentheses where a space past a quarter of the line allows
                   r"T_{\text{bubble}} &=" "\n"
                   r"T_{\text{bubble}}\left(T_{\text{node}}, N_{\text{PP}}, V, m\right) \\" "\n"
                   r"&= \frac{T_{\text{node}} \left(N_{\text{PP}} - 1\right)}{m V}" "\n\\end{aligned}\n")
    _, out, _ = run(capsys, "bubble_fraction", "--book", "--quarto")
    # the lines of the display fit 80 columns (the book's macros are long): broken at a space, a space to LaTeX
    assert out.splitlines()[6:8] == [r"&= \frac{\PipelineParallelDegree - 1}{\MicrobatchCount",
                                     r"\VirtualPipelineStagesPerDevice + \PipelineParallelDegree - 1}"]
    assert max(len(x) for x in out.splitlines()) <= 80
    # the same equation, under the same label, as the documents print it (docs/quarto/step_time.qmd)
    qmd = (QMD / "step_time.qmd").read_text()
    for name, label in (("T_bubble", "eq-t-bubble"), ("bubble_fraction", "eq-bubble-fraction")):
        _, out, _ = run(capsys, name, "--quarto")
        block = out.split("\n", 1)[1].rstrip("\n")
        # the same LaTeX, in lines that fit the terminal (a line break is a space to LaTeX)
        assert block.endswith(f"{{#{label}}}") and " ".join(block.split()) in " ".join(qmd.split()), name
        assert block.split() == cells.equation(name).split() and max(map(len, block.splitlines())) <= 80
    # a definition that is no lone cost term prints as before (tests/test_printing.py's goldens)
    m = build_model()
    assert definition_latex(m, "T_step") == quantity_latex(m, "T_step")
    # the book form is the plain one with macros (it breaks where the plain one does); a term of another glyph
    # goes on too, as the documents print it (T_A2A,EP = T_alltoall(...) = its formula)
    for name in ("T_bubble", "bubble_fraction", "T_ep_alltoall"):
        book = definition_latex(m, name, book=True)
        for macro, tex in sorted(notation.book_macros().items(), key=lambda kv: -len(kv[0])):
            book = book.replace(macro, tex)
        assert book == definition_latex(m, name) and definition_latex(m, name).count("&=") == 2, name
    # the formula is the term's: at N_PP = 4, m = 8, V = 1 the bubble is 3/8 of the replica step
    bubble = m.definition("T_bubble")
    t, pp, v, mb = bubble.args
    assert sp.simplify(bubble.doit().subs({pp: 4, v: 1, mb: 8}) / t) == sp.Rational(3, 8)


# --------------------------------------------------------------------------------------------
# 2. Labels: one for each distinct equation, the command line's and the cells' the same
# --------------------------------------------------------------------------------------------
def test_each_distinct_equation_has_its_own_label():
    labels = {}
    for family in ("transformer", "generic"):
        for fidelity in ("mlsysim", "extended"):
            m = build_model(Variant(family=family, fidelity=fidelity))
            for name in list(m) + list(TERM_CLASSES) + list(PLAN):
                for form in cells.FORMS if name not in PLAN else ("structured",):
                    tex = cells.equation_tex(name, False, form, fidelity, family)
                    labels.setdefault(cells.default_label(name, form, fidelity, family), set()).add(tex)
    shared = {label: len(texs) for label, texs in labels.items() if len(texs) > 1}
    assert shared == {} and len(labels) > 700


def test_the_labels_of_the_command_line_the_cells_and_the_documents_agree(capsys):
    # the author's cases: the ring's one-line formula (--expanded) is not its aligned definition
    _, out, _ = run(capsys, "RingAllReduce", "--expanded", "--quarto")
    assert out.rstrip().endswith("{#eq-t-ring-expanded}")
    assert out.split("\n", 1)[1].split() == cells.equation("RingAllReduce", form="expanded").split()
    _, out, _ = run(capsys, "RingAllReduce", "--quarto")
    assert out.rstrip().endswith("{#eq-t-ring}")
    # --quarto --json gives the math --quarto prints (it gave sympy's \: where --quarto writes \mkern4mu)
    _, out, _ = run(capsys, "T_step", "--quarto")
    shown = out.split("$$")[1].split()
    _, out, _ = run(capsys, "T_step", "--quarto", "--json")
    assert json.loads(out)["latex"].split() == shown and "\\text{for}\\mkern4mu" in "".join(shown)
    # the generic family's memory is not the transformer's: docs/quarto/memory.qmd calls it eq-memory-generic,
    # docs/quarto/step_time.qmd the transformer's eq-m-acc
    for family, label, doc in (("generic", "eq-memory-generic", "memory"), ("transformer", "eq-m-acc", "step_time")):
        _, out, _ = run(capsys, "M_acc", "--family", family, "--quarto")
        assert out.rstrip().endswith(f"{{#{label}}}") and f"{{#{label}}}" in (QMD / f"{doc}.qmd").read_text()
    _, out, _ = run(capsys, "O_model", "--family", "generic", "--json")
    assert json.loads(out)["label"] == "eq-generic-o-model" == cells.default_label("O_model", family="generic")
    # the generic family's step time is the transformer's equation: the same label; its closed form is not
    assert cells.default_label("T_step", family="generic") == "eq-t-step"
    assert cells.default_label("T_step", "closed", family="generic") == "eq-generic-t-step-closed"
    assert cells.default_label("M_acc", "closed", "extended", "generic") == "eq-extended-generic-m-acc-closed"
    # the labels docs/quarto/*.qmd already use stay (a quantity's, an extended one's, a term's, a run's)
    every = "".join(p.read_text() for p in QMD.glob("*.qmd"))
    for name, form, fidelity, label in (("T_step", "structured", "mlsysim", "eq-t-step"),
                                        ("T_cp", "structured", "extended", "eq-extended-t-cp"),
                                        ("BubbleTime", "structured", "mlsysim", "eq-t-bubble-term"),
                                        ("OptimizerUpdateTime", "structured", "mlsysim", "eq-t-opt")):
        assert cells.default_label(name, form, fidelity) == label and f"{{#{label}}}" in every, name
    assert cells.default_label("K") == "eq-plan-k-steps"
    # the documents' form "in parameters" keeps the fleet's integer decomposition (B_local, G_rep); the closed form
    # of the cells and the command line expands it too: a trial found the two under one label, eq-t-compute-closed
    # (and six more), so a chapter mixing them referred to the wrong equation. The documents' has its own label
    for name in ("t-compute", "m-weights", "m-grads", "m-optimizer", "traffic", "t-ep", "t-ep-alltoall"):
        assert f"{{#eq-{name}-closed}}" not in every, name
    assert "{#eq-t-compute-in-parameters}" in every
    tex = (QMD / "step_time.qmd").read_text()
    block = tex[:tex.index("{#eq-t-compute-in-parameters}")].rsplit("$$\n", 2)[-2]
    assert "B_{\\text{local}}" in block and cells.equation_tex("T_compute", form="closed") != block.strip()
    assert "In parameters and the fleet's integer decomposition ($G_{\\text{rep}}$, $B_{\\text{local}}$):" in tex


# --------------------------------------------------------------------------------------------
# 3. Options that would do nothing are refused
# --------------------------------------------------------------------------------------------
def test_options_that_would_do_nothing_are_refused(capsys):
    assert refused(capsys, "T_train", "--expanded").startswith(
        "--expanded: T_train is a run's quantity, written in the step's quantities")
    for option in ("--book", "--quarto", "--expanded"):
        assert refused(capsys, option).startswith(f"{option}: prints the equation of a NAME; give one")
    assert refused(capsys, "--json", "--quarto").startswith("--quarto: ")
    # the list, alone or as JSON, as before
    code, out, _ = run(capsys, "--json")
    assert code == 0 and "T_train" in json.loads(out)["plan"]
    # the cell API: a run's quantity has only its structured form
    with pytest.raises(ValueError, match="^form: T_train is a run's quantity"):
        cells.equation("T_train", form="closed")
    assert cells.equation("T_train").endswith("{#eq-plan-t-train}")


# --------------------------------------------------------------------------------------------
# 4. and 5. The comment line: the model when not the default, the unit as solve() writes it
# --------------------------------------------------------------------------------------------
def test_the_comment_says_which_model(capsys):
    heads = {}
    for args in ((), ("--fidelity", "extended"), ("--family", "generic"),
                 ("--family", "generic", "--fidelity", "extended")):
        _, out, _ = run(capsys, "T_sync", *args)
        heads[args] = out.splitlines()[0]
    assert heads[()] == "% T_sync (T̃_step): step time before the straggler [s]"
    assert heads["--fidelity", "extended"] == "% T_sync (T̃_step), extended model: step time before the straggler [s]"
    assert heads["--family", "generic"] == "% T_sync (T̃_step), generic family: step time before the straggler [s]"
    assert len(set(heads.values())) == 4
    _, out, _ = run(capsys, "T_sync", "--fidelity", "extended", "--quarto")
    assert out.splitlines()[0] == "<!-- T_sync, extended model: step time before the straggler [s] -->"
    # a cost term is the same in every model: no model in its comment
    _, out, _ = run(capsys, "RingAllReduce", "--fidelity", "extended")
    assert out.splitlines()[0] == "% RingAllReduce (T_ring): ring all-reduce time [s]"


# the unit of each: a collective's time is bytes over bytes per second plus latencies (s); the checkpoint is P
# parameters of b bytes (B); the IT load is N accelerators at their TDP (W); Young's interval sqrt(2 T_write MTBF) (s)
TERM_UNITS = {"RingAllReduce": "s", "AllToAll": "s", "PointToPoint": "s", "YoungDalyInterval": "s",
              "CheckpointSize": "B", "ITPower": "W", "BubbleFraction": "1", "AllReduceEnergy": "J",
              "RidgePoint": "flop/B", "AttainableRate": "flop/s", "EccEffectiveBandwidth": "B/s"}


@pytest.mark.parametrize("name", sorted(TERM_UNITS))
def test_a_cost_terms_unit_is_its_formulas(capsys, name):
    assert term_unit(notation.term(name)) == TERM_UNITS[name]
    _, out, _ = run(capsys, name, "--json")
    assert json.loads(out)["unit"] == TERM_UNITS[name]
    _, out, _ = run(capsys, name)
    written = {"1": "", "flop/B": " [FLOP/B]", "flop/s": " [FLOP/s]"}.get(TERM_UNITS[name], f" [{TERM_UNITS[name]}]")
    # the comment, beyond 80 columns continued on "% " lines
    comment = " ".join(x[2:] for x in out.splitlines() if x.startswith("% "))
    assert comment.endswith(notation.term(name).meaning + written)
    assert max(map(len, out.splitlines())) <= 80


def test_every_cost_term_has_a_unit_and_the_units_are_written_as_solve_writes_them(capsys):
    assert all(term_unit(t) in ("1", "s", "B", "J", "W", "flop/B", "flop/s", "B/s") for t in notation.TERMS)
    # the fleet's throughput counts samples (solve prints samples/s); the JSON keeps the SI unit, 1/s
    _, out, _ = run(capsys, "effective_throughput")
    assert out.splitlines()[0] == "% effective_throughput (R_train): samples per second of the fleet [samples/s]"
    _, out, _ = run(capsys, "effective_throughput", "--json")
    assert json.loads(out)["unit"] == "1/s"
    _, out, _ = run(capsys, "O_model")
    assert out.splitlines()[0].endswith("[FLOP]")


# --------------------------------------------------------------------------------------------
# 6. Names: close ones for a name it does not know; a cost term's symbol
# --------------------------------------------------------------------------------------------
def test_a_name_it_does_not_know_gets_the_close_names(capsys):
    for name, close in (("T_STEP", "T_step"), ("t_step", "T_step"), ("ringallreduce", "RingAllReduce")):
        text = refused(capsys, name)
        assert text.startswith(f"NAME: no quantity or cost term {name!r} in the transformer mlsysim model; "
                               f"close names: {close}"), text
    # a one-letter quantity is no hint for 'ringallreduce' though its letters are in it
    assert ", N" not in refused(capsys, "ringallreduce") and ", G" not in refused(capsys, "ringallreduce")
    with pytest.raises(ValueError, match="^name: .*close names: T_step"):
        cells.equation("T_STEP")


def test_a_parameters_name_or_printed_symbol_says_it_is_an_input(capsys):
    # the tables print f_strag, η_hw, χ_rc and G_node: a student looks them up here and learns what they are
    assert refused(capsys, "f_strag") == (
        "NAME: f_strag is a parameter (an input of the model), not a quantity: f_strag, straggler multiplier on the "
        "step (applies only above 1) (solve()'s straggler_factor, --straggler); docs/notation.md lists every "
        "symbol")
    for name in ("η_hw", "eta_hw", "eta", "efficiency"):
        assert refused(capsys, name).startswith(f"NAME: {name} is a parameter (an input of the model), not a "
                                                "quantity: η_hw, achieved fraction of peak FLOP/s (solve()'s "
                                                "efficiency, --efficiency)")
    assert "t_layer, framework tax per layer per kernel launch, in s (a constant)" in refused(capsys, "t_layer")


def test_a_cost_terms_symbol_names_it_when_that_is_unambiguous(capsys):
    _, by_symbol, _ = run(capsys, "T_ring", "--quarto")
    _, by_name, _ = run(capsys, "RingAllReduce", "--quarto")
    assert by_symbol == by_name and by_symbol.rstrip().endswith("{#eq-t-ring}")
    assert cells.equation("T_ring", book=True) == cells.equation("RingAllReduce", book=True)
    # a quantity's name or printed symbol comes first: T_bubble is the quantity, b_interleaved the bubble fraction
    _, out, _ = run(capsys, "T_bubble", "--json")
    assert json.loads(out)["name"] == "T_bubble"
    _, out, _ = run(capsys, "b_interleaved", "--json")
    assert json.loads(out)["name"] == "bubble_fraction"
    # T_opt: the extended model's quantity, and the symbol of OptimizerUpdateTime: refused in the default model
    text = refused(capsys, "T_opt")
    assert "add --fidelity extended" in text and "OptimizerUpdateTime" in text
    _, out, _ = run(capsys, "T_opt", "--fidelity", "extended", "--json")
    assert json.loads(out)["name"] == "T_opt"


# --------------------------------------------------------------------------------------------
# 7. KaTeX's maxExpand: documented, set by the Quarto include, and enough
# --------------------------------------------------------------------------------------------
def _katex_run(js: str, tmp_path: Path) -> dict:
    """What the JavaScript ``js`` writes (JSON), run by node with KaTeX from tests/js/node_modules."""
    import browser_check as bc
    bc.ensure_katex()
    (tmp_path / "job.js").write_text(f"module.paths.unshift({json.dumps(str(bc.JS / 'node_modules'))});\n{js}")
    proc = subprocess.run(["node", str(tmp_path / "job.js")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_katex_renders_the_long_forms_with_the_documented_max_expand(tmp_path):
    from derivations import toolchain
    assert f"maxExpand: {macros.KATEX_MAX_EXPAND}" in toolchain.README
    m = notation.book_macros()
    # the author's equations (mlsysim-sym equations T_step --expanded --book) and the longest the package prints
    # (the extended model's closed scaling_efficiency, about 10 500 expansions)
    eqs = {"T_step": cells.equation_tex("T_step", True, "closed"),
           "mfu": cells.equation_tex("mfu", True, "closed"),
           "longest": cells.equation_tex("scaling_efficiency", True, "closed", "extended")}
    script = re.search(r"```\{=html\}\n<script>\n(.*?)</script>", macros.qmd(), re.S).group(1)
    got = _katex_run(f"""
var katex = require("katex"), eqs = {json.dumps(eqs)}, macros = {json.dumps(m)};
function tryAll(k, extra) {{
  var out = {{}};
  for (var n in eqs) {{
    try {{ k.renderToString(eqs[n], Object.assign({{displayMode: true, throwOnError: true, macros: Object.assign({{}},
                                                    macros)}}, extra)); out[n] = "ok"; }}
    catch (e) {{ out[n] = String(e.message).slice(0, 60); }}
  }}
  return out;
}}
var result = {{bare: tryAll(katex, {{}}), documented: tryAll(katex, {{maxExpand: {macros.KATEX_MAX_EXPAND}}})}};
// the Quarto include's script, KaTeX loaded after it (pandoc loads it defer) and called with no maxExpand
var window = {{}};
{script}
window.katex = katex;
result.include = tryAll(window.katex, {{}});
process.stdout.write(JSON.stringify(result));
""", tmp_path)
    # KaTeX's default, 1000 expansions, is too few for each
    assert all(e.startswith("KaTeX parse error: Too many expansions") for e in got["bare"].values())
    assert got["documented"] == got["include"] == {"T_step": "ok", "mfu": "ok", "longest": "ok"}


def test_the_includes_katex_script_keeps_a_larger_max_expand_and_changes_katex_once(tmp_path):
    script = re.search(r"```\{=html\}\n<script>\n(.*?)</script>", macros.qmd(), re.S).group(1)
    n = macros.KATEX_MAX_EXPAND
    got = _katex_run(f"""
var seen = [], fake = {{render: function (t, el, o) {{ seen.push(o.maxExpand); }},
                        renderToString: function (t, o) {{ seen.push(o.maxExpand); return ""; }}}};
var window = {{katex: fake}};      // KaTeX loaded before the include: changed at once
{script}
{script}
window.katex.render("x", null, {{}});
window.katex.render("x", null, {{maxExpand: {4 * n}}});
window.katex.renderToString("x", {{maxExpand: 10}});
window.katex.renderToString("x");
process.stdout.write(JSON.stringify(seen));
""", tmp_path)
    # the include twice changes KaTeX once; a larger value the page passed is kept, a smaller one raised
    assert got == [n, 4 * n, n, n]


def test_a_long_equation_is_broken_at_spaces_into_lines_that_fit_a_terminal(capsys):
    # T_dp in parameters is a 3,000-character line of LaTeX; printed for a person it is broken at spaces (a line
    # break is a space to LaTeX, in math and in \text alike), so the lines joined by spaces are the JSON's LaTeX
    _, out, _ = run(capsys, "T_dp", "--expanded")
    lines = out.splitlines()
    assert lines[0].startswith("% T_dp (T_DP): DP communication per step") and lines[1].startswith("% ")
    assert len(lines) > 30 and max(map(len, lines)) <= 80
    _, js, _ = run(capsys, "T_dp", "--expanded", "--json")
    tex = json.loads(js)["latex"]
    assert len(tex) > 2000 and " ".join(x for x in lines if not x.startswith("% ")) == " ".join(tex.split())
    # no line starts with a binary + or - (Markdown would read "- " as a list item); a token longer than the room
    # left stays whole (the extended model's T_step in the book's macros has lines of up to 90 columns)
    _, out, _ = run(capsys, "T_step", "--book", "--expanded", "--fidelity", "extended")
    body = [x for x in out.splitlines() if not x.startswith("% ")]
    assert not [x for x in body if x.startswith(("+ ", "- "))] and max(map(len, body)) <= 100
    _, js, _ = run(capsys, "T_step", "--book", "--expanded", "--fidelity", "extended", "--json")
    assert " ".join(body) == " ".join(json.loads(js)["latex"].split())
    # the operator ends its line with the term before it, and that pair moves to the next line when it would pass
    # the width: TreeAllReduce's first line was 81 columns ("... \frac{2 M \log_{2} N}{\beta} +"); the break is
    # outside the fraction's braces where a space allows
    _, out, _ = run(capsys, "TreeAllReduce")
    assert max(map(len, out.splitlines())) <= 80
    assert out.splitlines()[3:5] == [r"T_{\text{tree}}\left(M, N, \beta, \alpha\right) &=",
                                     r"\frac{2 M \log_{2} N}{\beta} + 2 \alpha \log_{2} N \\"]
    for name in ("DataParallelCommVolume", "T_step", "T_dp"):
        _, out, _ = run(capsys, name, "--expanded", "--fidelity", "extended")
        assert max(map(len, out.splitlines())) <= 80, name


# --------------------------------------------------------------------------------------------
# The book's macros and the registry's glyph of a special case find their quantity
# --------------------------------------------------------------------------------------------
def test_the_books_macros_and_a_special_cases_glyph_find_their_quantity(capsys):
    import mlsysim
    # a student with the book types its macro (with or without the backslash) or its glyph: the book's
    # \PipelineBubbleFraction is b_pipe = (N_PP - 1) / (N_PP - 1 + m), the registry's interleaved form at V = 1
    for typed in ("b_pipe", "PipelineBubbleFraction", r"\PipelineBubbleFraction"):
        code, out, _ = run(capsys, typed)
        assert code == 0 and out.splitlines()[:2] == [
            "% bubble_fraction (b_interleaved): idle share of the pipelined step",
            r"% the book's b_pipe (\PipelineBubbleFraction) is this quantity at V = 1"], typed
    for macro, (name, latex, _) in notation.SPECIAL_CASES.items():
        assert mlsysim.Symbols.get_by_macro(macro).latex == latex, macro
    # a quantity's, a cost term's and a parameter's own macro
    assert run(capsys, "InterleavedPipelineBubbleFraction")[1].startswith("% bubble_fraction (b_interleaved)")
    assert run(capsys, r"\RingAllReduceCompletionTime")[1].startswith("% RingAllReduce (T_ring): ring all-reduce")
    assert run(capsys, "DataParallelDegree")[1].startswith("% dp (N_DP): data-parallel replicas")
    assert refused(capsys, "TensorParallelDegree") == (
        "NAME: TensorParallelDegree is a parameter (an input of the model), not a quantity: N_TP, tensor-parallel "
        "degree (solve()'s tp_size, --tp); docs/notation.md lists every symbol")
    # the cell API resolves them alike
    assert cells.equation_tex("b_pipe") == cells.equation_tex("bubble_fraction")


def test_a_name_in_words_or_greek_spelled_out_finds_its_equation(capsys):
    # a student types the words of a meaning (ring), a Greek letter by name (rho: the book's ρ, the
    # communication-to-computation ratio), or a name of the other family
    assert refused(capsys, "ring").startswith("NAME: no quantity or cost term 'ring' in the transformer mlsysim "
                                              "model; close names: RingAllReduce,")
    assert run(capsys, "rho")[1].startswith("% CommComputeRatio (ρ): communication-to-computation ratio")
    assert refused(capsys, "M_weights", "--family", "generic") == (
        "NAME: no quantity or cost term 'M_weights' in the generic mlsysim model; it is one of the transformer "
        "family's (the default family); run 'mlsysim-sym equations --family generic' for the names")
    # a name cut short or misspelled keeps its own name first (the meaning's words come after a near spelling)
    for typed, first in (("T_ste", "T_step"), ("T_memor", "T_memory"), ("T_com", "T_comm"), ("step_tim", "T_step")):
        assert refused(capsys, typed).split("close names: ")[1].startswith(first + ","), typed
    # a Greek letter spelled out finds the extended model's symbol too (α_TP)
    assert "it is one of the extended model's" in refused(capsys, "alpha_TP")
    # a backslash is shown as typed, not doubled as Python's repr doubles it
    assert refused(capsys, r"\NoSuchMacro").startswith(r"NAME: no quantity or cost term '\NoSuchMacro' in")
    # the JSON says what the text says of the book's b_pipe
    assert json.loads(run(capsys, "b_pipe", "--json")[1])["note"] == (
        r"the book's b_pipe (\PipelineBubbleFraction) is this quantity at V = 1")
