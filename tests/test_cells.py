"""The cell API (mlsysim_sym.cells): equations and numbers as Markdown for a Quarto cell with ``output: asis``.

Numbers are checked against mlsysim 0.3.0's own ``DistributedModel().solve`` (tests/mlsysim_oracle.py), equations
against the LaTeX the documents print and the formulas they stand for.
"""
import re
import sys
from pathlib import Path

import pytest
import sympy as sp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import mlsysim_oracle as oracle  # noqa: E402

from mlsysim_sym import DistributedModel, cells, notation  # noqa: E402
from mlsysim_sym.model import build_model  # noqa: E402
from mlsysim_sym.printing import latex, md_math, quantity_latex  # noqa: E402

MODEL, FLEET = "Llama3_70B", "Research_256"
KW = dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)     # the bundled example (README)


def _value(text: str) -> float:
    return float(text.split()[0].rstrip("%"))


@pytest.mark.parametrize("model,fleet,kw", [
    (MODEL, FLEET, KW),
    ("Mixtral_8x7B", "Training_1K", dict(batch_size=1024, tp_size=2, ep_size=4, congestion_factor=1.7)),
])
def test_numbers_are_mlsysims(model, fleet, kw):
    theirs = oracle.mlsysim_solve(model, fleet, **kw)        # mlsysim's own solver, in SI units
    for output, field, unit, scale in (("step_time", "step_latency_total", "ms", 1e3),
                                       ("dp_communication_latency", "dp_communication_latency", "ms", 1e3),
                                       ("ep_communication_latency", "ep_communication_latency", "us", 1e6),
                                       ("memory", "node.memory_footprint", "GB", 1e-9),
                                       ("throughput", "effective_throughput", "samples/s", 1.0),
                                       ("mfu", "mfu", "%", 100.0)):
        text = cells.number(output, model, fleet, unit=unit, digits=12, **kw)
        assert text.endswith(unit)
        assert _value(text) == pytest.approx(theirs[field] * scale, rel=1e-10, abs=1e-12), (output, text)


def test_the_bundled_examples_numbers_as_a_reader_sees_them():
    # README: mlsysim's step time 3368.62671135 ms; memory 59411380584 B per accelerator; DP 618.5 ms
    n = lambda output, **kw: cells.number(output, MODEL, FLEET, **KW, **kw)  # noqa: E731
    assert n("step_time") == "3.369 s" and n("step_latency_total", unit="ms", digits=12) == "3368.62671135 ms"
    assert n("memory") == "59.41 GB" and n("node_profile.memory_footprint", unit="B", digits=17) == "59411380584 B"
    assert n("T_dp_exposed") == "618.5 ms"                      # a term of the step
    # a term of the memory: 70.6e9 parameters x 2 B (fp16) over TP 8 x PP 4 = 4.4125e9 B of weights
    assert n("M_weights", unit="B", digits=17) == "4412500000 B"
    assert n("mfu", unit="%") == "26.04%" and n("mfu") == "0.2604"   # README: fleet MFU = 0.2604
    assert n("bubble_fraction", digits=3) == "0.273"                 # (4-1)/(8+4-1) = 3/11
    # math=True: the number in math, every unit after it as text, "%" as the others (a \% in the math would lose
    # its backslash to GitHub's Markdown and start a TeX comment)
    assert n("step_time", math=True) == "$3.369$ s" and n("memory", math=True) == "$59.41$ GB"
    assert n("mfu", unit="%", math=True) == "$26.04$%" and n("step_time", unit="ms", math=True) == "$3369$ ms"
    assert n("mfu", math=True) == "$0.2604$"
    # a number over a million written out in text, never Python's 3.369e+06 (3368.62671135 ms as above)
    assert n("step_time", unit="us") == "3369000 us" and n("step_time", unit="ns") == "3369000000 ns"
    assert n("step_time", unit="us", math=True) == r"$3.369 \times 10^{6}$ us"
    assert n("step_time", unit="us", digits=12) == "3368626.71135 us"
    assert n("node_profile.feasible") == "yes"
    # the extended model's own outputs: cp 2, sequence parallel, the record's 8 of 64 key/value heads (kv_fraction
    # 0.125): 109.4 ms of K/V exchange, as in docs/guide.md (every head's, kv_fraction 1, would be 861 ms)
    assert cells.number("cp_communication_latency", MODEL, FLEET, fidelity="extended", cp_size=2,
                        sequence_parallel=True, **KW) == "109.4 ms"
    assert cells.number("cp_communication_latency", MODEL, FLEET, fidelity="extended", cp_size=2,
                        sequence_parallel=True, kv_fraction=1, **KW) == "861 ms"


def test_equations_are_the_documents():
    m = build_model()
    assert cells.equation("T_dp") == "$$\nT_{\\text{DP}} = \\frac{T_{\\text{AR,DP}} c_{\\text{cong}}}{k}\n$$ {#eq-t-dp}"
    # a result field names its quantity; the math as the documents print it (GitHub-safe spacing)
    assert cells.equation("step_time") == "$$\n" + md_math(quantity_latex(m, "T_step")) + "\n$$ {#eq-t-step}"
    # \: as \mkern4mu: GitHub would eat \:, MathJax 3.2 does not define \medspace
    assert r"\text{for}\mkern4mu f_{\text{strag}} > 1" in cells.equation("step_time")
    # the book's notation: its macros, which expand to the plain equation exactly
    book = cells.equation("T_dp", book=True, label="eq-dp-book")
    assert book == ("$$\n\\DataParallelCommunicationTime = \\frac{\\GradientAllReduceTime \\CongestionSlowdownFactor}"
                    "{\\AccumulationStepCount}\n$$ {#eq-dp-book}")
    expanded = book
    for macro, tex in sorted(notation.book_macros().items(), key=lambda kv: -len(kv[0])):
        expanded = expanded.replace(macro, tex)
    assert expanded.replace("{#eq-dp-book}", "{#eq-t-dp}") == cells.equation("T_dp")
    # a cost term: the ring all-reduce, 2(N-1) M/(N beta) + 2(N-1) alpha (Patarasuk & Yuan 2009)
    ring = cells.equation("RingAllReduce")
    assert ring.endswith("$$ {#eq-t-ring}") and r"T_{\text{ring}}\left(M, N, \beta, \alpha\right)" in ring
    assert r"\frac{2 M \left(N - 1\right)}{N \beta} + 2 \alpha \left(N - 1\right)" in ring
    M, N, b, a = sp.symbols("M N beta alpha", positive=True)
    tex = cells.equation("RingAllReduce", form="expanded", label=False)
    assert tex == ("$$\nT_{\\text{ring}}\\left(M, N, \\beta, \\alpha\\right) = \\frac{M \\left(2 N - 2\\right)}{N \\beta} "
                   "+ \\alpha \\left(2 N - 2\\right)\n$$")
    assert sp.simplify(M * (2 * N - 2) / (N * b) + a * (2 * N - 2) - (2 * (N - 1) * M / (N * b) + 2 * (N - 1) * a)) == 0
    # forms: in parameters with the cost terms by name, or written out
    assert r"T_{\text{ring}}\left(" in cells.equation("T_dp", form="expanded")
    assert r"T_{\text{ring}}" not in cells.equation("T_dp", form="closed")
    assert cells.equation("T_dp", form="closed").endswith("{#eq-t-dp-closed}")
    # the extended model's quantities
    assert cells.equation("T_cp", fidelity="extended").endswith("{#eq-extended-t-cp}")


def test_labels_are_the_command_lines_and_the_documents():
    qmd = (ROOT / "docs" / "quarto" / "step_time.qmd").read_text()
    for name, label in (("T_step", "eq-t-step"), ("RingAllReduce", "eq-t-ring"), ("BubbleTime", "eq-t-bubble-term"),
                        ("T_dp", "eq-t-dp")):
        assert cells.default_label(name) == label and f"{{#{label}}}" in qmd
    assert cells.default_label("step_latency_total") == "eq-t-step"
    assert cells.equation("T_dp", label="eq-my-dp").endswith("$$ {#eq-my-dp}")
    assert cells.equation("T_dp", label=False).endswith("\n$$")
    assert cells.display(r"x \, y", "eq-x") == "$$\nx \\thinspace y\n$$ {#eq-x}"      # GitHub keeps the space


def test_inline_symbols():
    assert cells.inline("T_dp") == r"$T_{\text{DP}}$" and cells.inline("T_dp", book=True) == r"$\DataParallelCommunicationTime$"
    assert cells.inline("tp", book=True) == r"$\TensorParallelDegree$" and cells.inline("mfu") == r"$\text{MFU}_{\text{fleet}}$"
    assert cells.inline("RingAllReduce", book=True) == r"$\RingAllReduceCompletionTime$"
    assert cells.inline(sp.Symbol("x") ** 2) == "$x^{2}$"
    # a cost term by the symbol equation() takes (it was refused: "no quantity, parameter or cost term 'T_ring'")
    assert cells.inline("T_ring") == r"$T_{\text{ring}}$" and cells.inline("T_hier") == r"$T_{\text{hier}}$"
    assert cells.inline("T_ring", book=True) == cells.inline("RingAllReduce", book=True)
    with pytest.raises(ValueError, match="^what: no quantity, parameter or cost term 'T_nope'"):
        cells.inline("T_nope")
    # latex() of a name printed it as monospace text, \mathtt{\text{T\_step}}: a name is no expression
    with pytest.raises(TypeError, match="expr must be a sympy expression, got the string 'T_step'"):
        latex("T_step")


@pytest.mark.parametrize("call,argument", [
    (lambda: cells.equation("T_nothing"), "name"),
    (lambda: cells.equation(3), "name"),
    (lambda: cells.equation("T_cp"), "name"),                      # the extended model's: says fidelity='extended'
    (lambda: cells.equation("T_dp", form="short"), "form"),
    (lambda: cells.equation("T_dp", label="t-dp"), "label"),
    (lambda: cells.equation("T_dp", label="eq-T_dp"), "label"),
    (lambda: cells.equation("T_dp", book="yes"), "book"),
    (lambda: cells.equation("T_dp", fidelity="fast"), "fidelity"),
    (lambda: cells.equation("T_dp", family="cnn"), "family"),
    (lambda: cells.display("", "eq-x"), "tex"),
    (lambda: cells.display("$x=1$", "eq-x"), "tex"),              # the math alone: display() adds the $$
    (lambda: cells.display(r"\text{\$} x$", False), "tex"),
    (lambda: cells.display(r"\frac{a}{b", "eq-x"), "tex"),          # braces that do not pair
    (lambda: cells.display(r"x} + {y", "eq-x"), "tex"),
    (lambda: cells.number("step_time", "Llama3_7B", FLEET, **KW), "model"),      # not a catalog name
    (lambda: cells.number("step_time", MODEL, "Research256", **KW), "fleet"),
    (lambda: cells.inline("T_nothing"), "what"),
    (lambda: cells.inline(3.0), "what"),
    (lambda: cells.number("speed", MODEL, FLEET, **KW), "output"),
    (lambda: cells.number("step_time", MODEL, FLEET, unit="GB", **KW), "unit"),
    (lambda: cells.number("mfu", MODEL, FLEET, unit="ms", **KW), "unit"),
    (lambda: cells.number("node_profile.feasible", MODEL, FLEET, unit="%", **KW), "unit"),
    (lambda: cells.number("step_time", MODEL, FLEET, digits=0, **KW), "digits"),
    (lambda: cells.number("step_time", MODEL, FLEET, digits=2.5, **KW), "digits"),
    (lambda: cells.number("step_time", MODEL, FLEET, math=1, **KW), "math"),
    (lambda: cells.number("cp_communication_latency", MODEL, FLEET, **KW), "output"),
    (lambda: cells.number("node_profile.offload_spill_bytes", MODEL, FLEET, **KW), "output"),
])
def test_bad_input_is_a_value_error_naming_the_argument(call, argument):
    with pytest.raises(ValueError) as e:
        call()
    assert str(e.value).startswith(argument), str(e.value)


def test_an_unknown_name_says_the_close_ones():
    with pytest.raises(ValueError, match=r"^model: unknown workload 'Llama3_7B'; close names: Llama3_70B, Llama3_8B"):
        cells.number("step_time", "Llama3_7B", FLEET, **KW)
    with pytest.raises(ValueError, match=r"^fleet: unknown fleet 'Research256'; close names: Research_256"):
        cells.number("step_time", MODEL, "Research256", **KW)


def test_display_keeps_escaped_dollars_and_braces():
    assert cells.display(r"\$3 + \{a\} + \frac{a}{b} \\ c", False) == "$$\n\\$3 + \\lbrace a\\rbrace + \\frac{a}{b} \\\\ c\n$$"


def test_solves_own_errors_reach_the_author():
    # mlsysim's message for a split that does not divide the fleet, as solve() raises it
    with pytest.raises(ValueError, match=re.escape("TP(3) * PP(1) * EP(1) must divide total accelerators (256)")):
        cells.number("step_time", MODEL, FLEET, tp_size=3)
    with pytest.raises(ValueError, match="Infeasible"):
        DistributedModel().solve(MODEL, FLEET, tp_size=3)
