"""The per-layer overlap schedule of the Collective Communication chapter (``LayerOverlapTime``) and the extended
model's mechanism ``layer_overlap`` that prices the DP AllReduce with it.

The book: cs249r_book, ``book/quarto/contents/vol2/collective_communication/collective_communication.qmd``, sec.
"Overlap Limits: When Hiding Fails", notebook "Overlap Budget for a 7B Transformer" (cell ``overlap-budget-calc``):
32 layers, 15 ms of backward each (480 ms), one layer's AllReduce 880 MB / 100 MB buckets x 3 ms = 26.4 ms;
sequential 480 + 32 x 26.4 = 1,324.8 ms, pipelined 480 + 26.4 + 31 x max(0, 26.4 - 15) = 859.8 ms (printed 1325
and 860 ms, a saving of 35 %). mlsysim's fixed share hides eta_ov = 0.85 of the 844.8 ms instead:
480 + 0.15 x 844.8 = 606.72 ms.
"""
import importlib.util
import sys
import warnings
from pathlib import Path

import pytest
import sympy as sp

from mlsysim_sym import DistributedModel, notation, sweep
from mlsysim_sym.arguments import parameters_of
from mlsysim_sym.compile import evaluate
from mlsysim_sym.mechanisms import MECHANISMS
from mlsysim_sym.model import Variant, build_model
from mlsysim_sym.printing import latex, term_latex
from mlsysim_sym.symbols import PARAMS, sym
from mlsysim_sym.terms.communication import LayerOverlapTime, exposed_dp, layer_overlap_exposed
from mlsysim_sym.units import dimension, parse_unit

approx = pytest.approx
EXT = DistributedModel(fidelity="extended")
T_BWD = notation.symbol("T_bwd", positive=True)
T_LAYER = notation.symbol("T_dp_layer", positive=True)
N_L = PARAMS["L"].symbol


def _solve(model, fleet, dm=EXT, **kw):
    with warnings.catch_warnings():      # mlsysim warns where the batch is below the replicas or memory spills
        warnings.simplefilter("ignore")
        return dm.solve(model, fleet, **kw)


# ------------------------------------------------------------------------------------------------
# The term: the book's formula and the notebook's numbers
# ------------------------------------------------------------------------------------------------
def test_the_term_is_the_books_formula():
    # CC notebook: T_backward + T_first_comm + (N_L - 1) max(0, T_comm - T_backward / N_L), where T_first_comm
    # and T_comm are both one layer's AllReduce
    book = T_BWD + T_LAYER + (N_L - 1) * sp.Max(0, T_LAYER - T_BWD / N_L)
    assert sp.simplify(LayerOverlapTime(T_BWD, T_LAYER, N_L).doit() - book) == 0
    # the two-machine flow shop of N_L equal jobs: t_b + T_layer + (N_L - 1) max(t_b, T_layer), t_b = T_bwd / N_L
    flow = T_BWD / N_L + T_LAYER + (N_L - 1) * sp.Max(T_BWD / N_L, T_LAYER)
    # on either side of the kink, T_layer = T_bwd / N_L + d or T_bwd = N_L (T_layer + d), d > 0
    d = sp.Symbol("d", positive=True)
    diff = LayerOverlapTime(T_BWD, T_LAYER, N_L).doit() - flow
    assert sp.simplify(diff.subs(T_LAYER, T_BWD / N_L + d)) == 0
    assert sp.simplify(diff.subs(T_BWD, N_L * (T_LAYER + d))) == 0
    # the model's exposed part is the term less the backward pass
    assert sp.simplify(layer_overlap_exposed(T_BWD, T_LAYER, N_L) + T_BWD - book) == 0


def test_the_notebooks_numbers():
    pipelined = float(LayerOverlapTime(0.480, 0.0264, 32).doit())
    assert pipelined == approx(0.8598, rel=1e-12)                # the cell's with_overlap_ms, 859.8 ms
    assert round(pipelined * 1e3) == 860                          # as the text prints it
    sequential = float(0.480 + exposed_dp(32 * 0.0264, 0))      # nothing overlapped
    assert sequential == approx(1.3248, rel=1e-12) and round(sequential * 1e3) == 1325
    assert round(100 * (1 - pipelined / sequential)) == 35        # "Overlap reduces total step time by 35%"
    # exposed per layer: 26.4 - 15 = 11.4 ms (printed 11)
    per_layer = (float(layer_overlap_exposed(0.480, 0.0264, 32)) - 0.0264) / 31
    assert per_layer == approx(0.0114, rel=1e-12)
    # mlsysim's fixed share at the same inputs: 480 + (1 - 0.85) x 844.8 = 606.72 ms
    fixed = float((0.480 + exposed_dp(32 * 0.0264, 1)).subs(sym.eta_ov, PARAMS["eta_ov"].default))
    assert fixed == approx(0.60672, rel=1e-12)
    # where each layer's backward covers its AllReduce (15 ms against 10 ms) only the last AllReduce is exposed
    assert float(LayerOverlapTime(0.480, 0.010, 32).doit()) == approx(0.490, rel=1e-12)


def test_the_companion_entry_reproduces_the_notebook():
    from derivations import book, book_overlap
    e = book_overlap.entry().verify()
    assert e.key == "per-layer-overlap" and e.symbolic is not None
    assert [x.package for x in e.numbers][:1] == [approx(0.8598, rel=1e-12)]
    assert book_overlap.extended_model_pipelined() == approx(0.8598, rel=1e-12)
    assert book_overlap.fixed_share() == approx(0.60672, rel=1e-12)
    assert "overlap" in book.CHAPTER_MODULES
    assert book_overlap.groups() == {"Overlap": [e]} and book_overlap.inventory() == []


def test_the_term_prints_in_the_books_notation():
    t = notation.term("LayerOverlapTime")
    assert t.book == r"\OverlappedBackwardCommunicationTime" and t.latex == r"T_{\text{pipelined}}"
    plain, book_mode = term_latex(t), term_latex(t, book=True)
    assert r"T_{\text{pipelined}}\left(T_{\text{backward}}, T_{\text{layer comm}}, N_L\right)" in plain
    assert r"\max\left(0," in plain
    for macro in (r"\OverlappedBackwardCommunicationTime", r"\BackwardPassTime", r"\LayerAllReduceTime",
                  r"\LayerCount"):
        assert macro in book_mode
    # the registry's own LaTeX for these macros
    mlsysim = pytest.importorskip("mlsysim")
    for name, macro in (("T_bwd", r"\BackwardPassTime"), ("T_dp_layer", r"\LayerAllReduceTime")):
        assert notation.entry(name).book == macro and mlsysim.Symbols[macro].latex == notation.entry(name).latex
    assert mlsysim.Symbols[r"\OverlappedBackwardCommunicationTime"].latex == t.latex


def test_the_term_is_seconds_and_differentiable_where_smooth():
    s = parse_unit("s")
    assert dimension(LayerOverlapTime(PARAMS["tau_d"].symbol, PARAMS["alpha_fab"].symbol, N_L).doit()) == s
    # d/dT_layer: 1 + (N_L - 1) [T_layer > T_bwd / N_L]: N_L where the AllReduce outlasts a layer's backward, 1 where
    # the backward covers it; d/dT_bwd: 1 - (N_L - 1) / N_L = 1 / N_L, or 1
    term = LayerOverlapTime(T_BWD, T_LAYER, N_L)
    d_layer, d_bwd = sp.diff(term, T_LAYER), sp.diff(term, T_BWD)
    comm_bound = {T_BWD: sp.Rational(480, 1000), T_LAYER: sp.Rational(264, 10000), N_L: 32}
    covered = {T_BWD: sp.Rational(480, 1000), T_LAYER: sp.Rational(1, 100), N_L: 32}
    assert d_layer.subs(comm_bound) == 32 and d_layer.subs(covered) == 1
    assert d_bwd.subs(comm_bound) == sp.Rational(1, 32) and d_bwd.subs(covered) == 1
    # and the derivative against a finite difference of the formula
    f = sp.lambdify((T_BWD, T_LAYER, N_L), term.doit())
    h = 1e-7
    assert (f(0.48, 0.0264 + h, 32) - f(0.48, 0.0264 - h, 32)) / (2 * h) == approx(32, rel=1e-6)


# ------------------------------------------------------------------------------------------------
# The mechanism
# ------------------------------------------------------------------------------------------------
def test_the_mechanism_row_and_its_switch():
    m = MECHANISMS["layer_overlap"]
    assert m.switch == "layer_overlap" and m.quantities == ("T_bwd", "T_dp_layer") and not m.needs
    assert PARAMS["lov"].argument == "layer_overlap" and PARAMS["lov"].default is False
    assert PARAMS["lov"].fidelity == "extended"


#: The extended model's numbers on these configurations with layer_overlap off (measured when the switch was added,
#: at commit f6612a8, and again when pass_overhead was added and x_1/2 refitted, and when k_pass was refitted with
#: attention_efficiency fitted per framework, and when k_pass was refitted to 70 with the MoE
#: permutation priced, and when fsdp_pipeline gathered a pipelined ZeRO-3 stage's weights once a step: the second
#: row's DP communication from 2.783 s, 0.3092 s of ReduceScatter and 4 micro-steps' gathers of 0.6185 s, to ZeRO-1's
#: all-reduce, 0.6185 s): step time, DP communication, fleet MFU. With layer_overlap off they must not move.
BEFORE = [
    ("Llama3_70B", "Research_256", dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8, overlap_comm=True),
     3.6912522233421066, 0.61845, 0.23763800106934008),
    ("Llama3_70B", "Research_256", dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8, v_stages=2,
                                        zero_stage=3, activation_recomputation=True, gradient_accumulation_steps=4,
                                        overlap_comm=True),
     5.946433698591225, 0.61845, 0.1475139292321698),
    ("Mixtral_8x7B", "Training_1K", dict(batch_size=512, tp_size=2, pp_size=2, ep_size=8, microbatch_count=4,
                                         zero_stage=1, overlap_comm=True, straggler_factor=1.2),
     0.6997869378880986, 0.9803710138888888, 0.11451932880690249),
    ("GPT3", "Mega_100K", dict(batch_size=4096, tp_size=8, pp_size=10, microbatch_count=40, congestion_factor=1.3),
     1.5433880603051584, 0.243555, 0.05282981517266655),
    ("ResNet50", "Research_256", dict(batch_size=1024, precision="bf16", overlap_comm=True),
     0.00235340566348753, 0.004296111905555556, 0.042276790767834097),
]


@pytest.mark.parametrize("model,fleet,kw,step,t_dp,mfu", BEFORE, ids=[f"{b[0]}-{i}" for i, b in enumerate(BEFORE)])
def test_switched_off_the_extended_model_is_unchanged(model, fleet, kw, step, t_dp, mfu):
    for r in (_solve(model, fleet, **kw), _solve(model, fleet, layer_overlap=False, **kw)):
        # the same numbers (the regenerated code may round the last bit differently: MFU by 3e-16 on GPT-3, the DP
        # communication of the ZeRO-3 pipeline by one unit in the last place since fsdp_pipeline holds its memory)
        assert r.step_latency_total == approx(step, rel=1e-15) and r.dp_communication_latency == approx(t_dp,
                                                                                                         rel=1e-15)
        assert r.mfu == approx(mfu, rel=1e-14)
    # without overlap_comm the switch has nothing to replace; on a workload that is not a transformer it is not priced
    if not kw.get("overlap_comm") or model == "ResNet50":
        assert _solve(model, fleet, layer_overlap=True, **kw).step_latency_total == step


def test_without_the_mechanism_is_the_switch_off():
    kw = dict(batch_size=256, overlap_comm=True)
    off = DistributedModel(fidelity="extended", without=("layer_overlap",))
    a = _solve("Llama3_8B", "Research_256", dm=off, layer_overlap=True, **kw)
    b = _solve("Llama3_8B", "Research_256", **kw)
    for name, x in b.quantities.items():
        assert a.quantities[name] == x, name
    # and the expressions: the model without it has no T_bwd, and its T_dp_exposed is the fixed share's
    m_off = build_model(Variant(fidelity="extended", off=("layer_overlap",)))
    m_on = build_model(Variant(fidelity="extended"))
    assert "T_bwd" not in m_off and "T_bwd" in m_on
    assert m_on["T_dp_exposed"].subs(sym.lov, 0) == m_off["T_dp_exposed"].subs(sym.lov, 0)


def test_the_twin_is_mlsysims_and_refuses_the_switch():
    sys.modules.setdefault("mlsysim_oracle", _oracle())
    oracle = sys.modules["mlsysim_oracle"]
    for model, fleet, kw, *_ in BEFORE[:3]:
        both = oracle.call_both(model, fleet, **kw)
        assert oracle.diff_outcomes(both) == [], (model, kw)
    with pytest.raises(ValueError, match=r"layer_overlap=True is an argument of the extended model.*"
                                         r"fidelity='extended'"):
        DistributedModel().solve("Llama3_8B", "Research_256", batch_size=256, overlap_comm=True, layer_overlap=True)


def _oracle():
    spec = importlib.util.spec_from_file_location("mlsysim_oracle", Path(__file__).with_name("mlsysim_oracle.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_hand_worked_where_each_layers_allreduce_outlasts_its_backward():
    # Llama 3 8B on Research_256, batch 256: dp 256, one sample per replica, 32 layers; under overlap_comm the
    # replica's step T_node = 343.2 ms, its backward 2/3 of it, T_bwd = 228.83 ms (7.151 ms a layer); the DP
    # AllReduce T_DP = 376.7 ms, 11.77 ms a layer. Exposed: 11.77 + 31 x (11.77 - 7.151) = 155.0 ms, where the
    # fixed share leaves 0.15 x 376.7 = 56.5 ms
    kw = dict(batch_size=256, overlap_comm=True)
    off, on = _solve("Llama3_8B", "Research_256", **kw), _solve("Llama3_8B", "Research_256", layer_overlap=True, **kw)
    t_node, t_dp, n_l = on.node_profile.latency, on.dp_communication_latency, 32
    assert (t_node, t_dp) == (off.node_profile.latency, off.dp_communication_latency)
    assert t_node == approx(0.34324125, rel=1e-12) and t_dp == approx(0.37672506, rel=1e-7)
    t_bwd = t_node * 2 / 3
    t_layer = t_dp / n_l
    exposed = t_layer + (n_l - 1) * max(0.0, t_layer - t_bwd / n_l)
    assert exposed == approx(0.15504841, rel=1e-7)
    assert on.step_latency_total - off.step_latency_total == approx(exposed - 0.15 * t_dp, rel=1e-12)
    # the model's quantities say the same
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        variant, values = parameters_of("Llama3_8B", "Research_256", fidelity="extended", layer_overlap=True, **kw)
    q = evaluate(variant, ["T_bwd", "T_dp_layer", "L_tp", "T_dp_exposed"], values)
    assert (q["T_bwd"], q["T_dp_layer"], q["L_tp"]) == (approx(t_bwd, rel=1e-15), approx(t_layer, rel=1e-15), 32)
    assert q["T_dp_exposed"] == approx(exposed, rel=1e-12)


def test_hand_worked_where_the_backward_covers_each_layer_and_recomputation_joins_the_backward():
    # Llama 3 70B on Research_256, tp 8, pp 4, m 8: 20 layers a stage; T_DP = 618.45 ms, 30.92 ms a layer, under
    # T_bwd / 20 (about 78 ms): only the last layer's AllReduce is exposed, 30.92 ms (the fixed share: 92.77 ms)
    kw = dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8, overlap_comm=True)
    on = _solve("Llama3_70B", "Research_256", layer_overlap=True, **kw)
    assert on.step_latency_total == approx(3.6912522233421066 - 0.15 * 0.61845 + 0.61845 / 20, rel=1e-12)
    # with full recomputation the backward is 3/4 of the replica's step (m_train = 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        variant, values = parameters_of("Llama3_70B", "Research_256", fidelity="extended", layer_overlap=True,
                                        activation_recomputation=True, **kw)
    q = evaluate(variant, ["T_bwd", "T_node"], values)
    assert q["T_bwd"] == approx(0.75 * q["T_node"], rel=1e-15)


def test_fsdp_overlap_keeps_its_own_schedule_under_zero_3():
    kw = dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8, overlap_comm=True, zero_stage=3,
              fsdp_overlap=True)
    a = _solve("Llama3_70B", "Research_256", layer_overlap=True, **kw)
    b = _solve("Llama3_70B", "Research_256", **kw)
    assert a.step_latency_total == b.step_latency_total


def test_the_model_quantities_have_their_units_and_the_step_its_derivative():
    m = build_model(Variant(fidelity="extended"))
    for name in ("T_bwd", "T_dp_layer", "T_dp_exposed"):
        assert m.quantity(name).unit == "s" and dimension(m[name]) == parse_unit("s")
    assert r"T_{\text{layer comm}}" in latex(m.definition("T_dp_exposed"))
    # derivatives of the step time in the regime of the point, resolved through the schedule's max (the comm-bound
    # side here: Llama 3 8B, batch 256 on 256 GPUs, memory-bound with T_node = 352.8 ms (276.0 ms of memory, 76.8 ms
    # of overhead), T_DP = 376.7 ms, 32 layers)
    from mlsysim_sym import sensitivities
    kw = dict(batch_size=256, overlap_comm=True, layer_overlap=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = sensitivities("Llama3_8B", "Research_256", output="step_time", fidelity="extended", **kw)
    r = _solve("Llama3_8B", "Research_256", **kw)
    assert s.value == approx(r.step_latency_total, rel=1e-12)
    assert "each layer's AllReduce outlasts a layer's backward" in s.regime
    # T_DP,exposed = N_L T_layer - (N_L - 1) T_bwd / N_L = T_DP - (31/32) T_bwd on this side:
    # d T_step / d c_cong = T_DP (T_DP is linear in the congestion; the fixed share would give 0.15 T_DP) ...
    assert s["congestion_factor"].derivative == approx(r.dp_communication_latency, rel=1e-12)
    # ... and a second of dispatch overhead adds a second to T_node, 2/3 of it to T_bwd, which hides (31/32) of
    # that: d T_step / d t_dispatch = 1 - (31/32)(2/3) = 17/48
    assert s["dispatch_tax"].derivative == approx(17 / 48, rel=1e-12)
    # and against a central difference of solve()
    h = 1e-6
    up = _solve("Llama3_8B", "Research_256", congestion_factor=1 + h, **kw).step_latency_total
    down = _solve("Llama3_8B", "Research_256", congestion_factor=1 - h, **kw).step_latency_total
    assert (up - down) / (2 * h) == approx(r.dp_communication_latency, rel=1e-6)


def test_a_bad_switch_value_is_refused_naming_it():
    kw = dict(batch_size=256, overlap_comm=True)
    for bad in (2, 0.5, -1):
        with pytest.raises(ValueError, match=rf"^layer_overlap must be True or False \(or 1 or 0\), got {bad}$"):
            EXT.solve("Llama3_8B", "Research_256", layer_overlap=bad, **kw)
    with pytest.raises(TypeError, match=r"^layer_overlap must be a bool"):
        EXT.solve("Llama3_8B", "Research_256", layer_overlap="yes", **kw)
    assert _solve("Llama3_8B", "Research_256", layer_overlap=1, **kw).step_latency_total == \
        _solve("Llama3_8B", "Research_256", layer_overlap=True, **kw).step_latency_total


def test_sweep_and_the_command_line_take_the_switch():
    kw = dict(batch_size=256, overlap_comm=True)
    r = sweep("Llama3_8B", "Research_256", fidelity="extended", layer_overlap=[False, True], **kw)
    for i, lo in enumerate((False, True)):
        s = _solve("Llama3_8B", "Research_256", layer_overlap=lo, **kw)
        assert r.step_latency_total[i] == approx(s.step_latency_total, rel=1e-12)
    from mlsysim_sym.cli import main
    import contextlib
    import io
    import json
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["solve", "--model", "Llama3_8B", "--fleet", "Research_256", "--batch-size", "256", "--overlap",
                     "--fidelity", "extended", "--layer-overlap", "--json"])
    assert code in (0, None)
    got = json.loads(out.getvalue())
    s = _solve("Llama3_8B", "Research_256", layer_overlap=True, **kw)
    assert got["step_latency_total"] == approx(s.step_latency_total, rel=1e-12)
