"""Terms the textbook uses beside the model's (issue 11): each against the book's formula as written and
its worked numbers, through doit(), lambdify (numpy and math), the derivative and the units.

The book is *Machine Learning Systems* vol. 2 (harvard-edge/cs249r_book): "appendix" is
backmatter/appendix_communication.qmd (Communication Foundations), "chapter" is
collective_communication/collective_communication.qmd. Fabric numbers the book takes from mlsysim
(InfiniBand NDR: 400 Gbps = 50 GB/s, 5 us; H100 NVLink 900 GB/s) are written out here.
"""
import math

import numpy as np
import pytest
import sympy as sp

from mlsysim_sym import notation
from mlsysim_sym.printing import TERM_CLASSES, term_call
from mlsysim_sym.symbols import sym
from mlsysim_sym.terms.collectives import (AllGather, DataParallelCommVolume, DoubleTreeAllReduce,
                                           HierarchicalAllReduce, PointToPoint,
                                           ReduceScatter, RingAllReduce, TreeAllReduce, Zero3CommTime,
                                           Zero3CommVolume)
from mlsysim_sym.terms.communication import CommComputeRatio
from mlsysim_sym.terms.memory import ActivationsNoRecompute, ActivationsSeqParallel
from mlsysim_sym.terms.moe import ExpertCapacity
from mlsysim_sym.terms.pipeline import PipelineSendTime
from mlsysim_sym.units import dimension, parse_unit
from term_checks import check_term  # noqa: E402  (tests/term_checks.py)

M, N, b, a = sp.symbols("M N beta alpha", positive=True)
NEW = ("AllGather", "ReduceScatter", "TreeAllReduce", "DoubleTreeAllReduce", "PointToPoint", "PipelineSendTime",
       "CommComputeRatio", "ExpertCapacity", "ActivationsNoRecompute", "ActivationsSeqParallel",
       "DataParallelCommVolume", "Zero3CommVolume", "Zero3CommTime")
UNIT = {"AllGather": "s", "ReduceScatter": "s", "TreeAllReduce": "s", "DoubleTreeAllReduce": "s",
        "PointToPoint": "s", "PipelineSendTime": "s", "Zero3CommTime": "s", "CommComputeRatio": "1",
        "ExpertCapacity": "1", "ActivationsNoRecompute": "B", "ActivationsSeqParallel": "B",
        "DataParallelCommVolume": "B", "Zero3CommVolume": "B"}
NDR_BETA, NDR_ALPHA = 50e9, 5e-6


def _units_of_args(call):
    return {s: notation.entry(s.name).unit for s in call.free_symbols}


# --------------------------------------------------------------------------------------------
# Collectives
# --------------------------------------------------------------------------------------------
def test_allgather_and_reducescatter_are_the_books_equations():
    # appendix @eq-allgather and @eq-reducescatter, as written
    book = (N - 1) / N * M / b + (N - 1) * a
    assert sp.simplify(AllGather(M, N, b, a).doit() - book) == 0
    assert sp.simplify(ReduceScatter(M, N, b, a).doit() - book) == 0
    assert AllGather(M, 1, b, a).doit() == 0 and ReduceScatter(M, 1, b, a).doit() == 0


def test_ring_allreduce_is_reducescatter_then_allgather():
    # appendix: "the costs add up exactly to @eq-ring-allreduce"
    assert sp.simplify(RingAllReduce(M, N, b, a).doit()
                       - (ReduceScatter(M, N, b, a) + AllGather(M, N, b, a)).doit()) == 0


def test_tree_allreduce_is_the_books_equation():
    # appendix @eq-tree-allreduce: 2 log2 N * M/beta + 2 log2 N * alpha
    book = 2 * sp.log(N, 2) * M / b + 2 * sp.log(N, 2) * a
    assert sp.simplify((TreeAllReduce(M, N, b, a).doit() - book).rewrite(sp.log)) == 0
    assert TreeAllReduce(M, 1, b, a).doit() == 0
    # printed as the book writes it, log2 N (not sympy's log(N)/log(2))
    assert r"\log_{2} N" in sp.latex(TreeAllReduce(M, N, b, a).doit())


def test_ring_vs_tree_worked_example_1mb_64_gpus():
    # chapter, notebook "The ring vs. tree crossover" (tbl-collective-communication-ring-vs-tree-1mb-64gpu):
    # 1 MB over 64 GPUs, alpha = 10 us, beta = 10 GB/s. Ring: 1260 us latency + 196.875 us bandwidth;
    # tree: 120 us + 1200 us, so tree wins by 9 % ("near the crossover").
    ring = float(RingAllReduce(1e6, 64, 10e9, 10e-6).doit())
    tree = float(TreeAllReduce(1e6, 64, 10e9, 10e-6).doit())
    assert ring == pytest.approx(1260e-6 + 196.875e-6, rel=1e-12)
    assert tree == pytest.approx(120e-6 + 1200e-6, rel=1e-12)
    assert round((ring - tree) / ring * 100) == 9
    # the book's log-aware crossover N alpha beta / log2 N = 1.07 MB ("1.1 MB")
    assert round(64 * 10e-6 * 10e9 / math.log2(64) / 1e6, 1) == 1.1


def test_ring_vs_tree_worked_example_1gb_256_gpus():
    # appendix, notebook "Ring vs. tree AllReduce": 1 GB over 256 H100s on InfiniBand NDR
    ring = float(RingAllReduce(1e9, 256, NDR_BETA, NDR_ALPHA).doit())
    tree = float(TreeAllReduce(1e9, 256, NDR_BETA, NDR_ALPHA).doit())
    assert ring == pytest.approx(2 * 255 / 256 * 0.02 + 2 * 255 * 5e-6, rel=1e-12)   # 42.4 ms
    assert tree == pytest.approx(2 * 8 * 0.02 + 2 * 8 * 5e-6, rel=1e-12)             # 320.1 ms
    assert (round(ring * 1e3, 1), round(tree * 1e3, 1)) == (42.4, 320.1)


def test_tree_allreduce_equals_mlsysim_on_powers_of_two():
    from mlsysim.physics import calc_tree_allreduce_time
    for n in (2, 8, 64, 256):
        want = calc_tree_allreduce_time(1e9, n, NDR_BETA, NDR_ALPHA).to("second").magnitude
        assert float(TreeAllReduce(1e9, n, NDR_BETA, NDR_ALPHA).doit()) == pytest.approx(want, rel=1e-14)


def test_double_tree_is_the_books_approximation():
    # chapter, sec. "Double binary tree": 2 log2 N alpha + 2 M / beta; 8 GPUs: 6 alpha + 2 M/beta
    # the terms write log2 N as Log2 (printed \log_{2} N); rewritten as logs it is the book's log2
    assert sp.simplify((DoubleTreeAllReduce(M, N, b, a).doit() - (2 * sp.log(N, 2) * a + 2 * M / b)).rewrite(sp.log)) == 0
    assert sp.simplify(DoubleTreeAllReduce(M, 8, b, a).doit() - (6 * a + 2 * M / b)) == 0


def test_point_to_point_is_the_alpha_beta_model():
    # appendix @eq-alpha-beta: T(n) = alpha + n/beta; chapter, alpha-beta definition: fusing 100 4 KB messages
    # into one 400 KB message on IB NDR (alpha 2 us, beta 50 GB/s) costs alpha + n/beta ~ 10 us, not 100 alpha
    n = sp.Symbol("n", positive=True)
    assert PointToPoint(n, b, a).doit() == a + n / b
    assert float(PointToPoint(400e3, 50e9, 2e-6).doit()) == pytest.approx(10e-6, rel=1e-12)
    # chapter, notebook "AllToAll for MoE token routing": 262.144 KB per transfer at 3 us, 50 GB/s is 8 us
    # (the book rounds the bandwidth term, 5.24 us, to 5 us)
    assert float(PointToPoint(262144, 50e9, 3e-6).doit()) == pytest.approx(3e-6 + 5.24288e-6, rel=1e-12)


def test_hierarchical_budget_and_comm_compute_ratio_llama_70b():
    # chapter, sec. "Putting the model to work: Llama 70B communication budget": 140 GB of BF16 gradients,
    # 128 GPUs = 16 nodes x 8, IB NDR 50 GB/s, alpha 3 us, 200 ms of compute per step. The cell's header
    # comment: hierarchical ~929 ms (NVLink at 900 GB/s, both directions), flat ring ~5,557 ms, ratios 4.6
    # and 27.8; the cell itself takes NVLink at 450 GB/s per direction and computes ~1,201 ms.
    # Hierarchical: NVLink ReduceScatter 7/8 * 140 GB / B_NVLink, a ring over 16 nodes on 17.5 GB, and the
    # AllGather back.
    G, nodes, grad, alpha, t_compute = 8, 16, 140e9, 3e-6, 0.2
    intra = float(ReduceScatter(grad, G, 900e9, 0).doit())
    hier = 2 * intra + float(RingAllReduce(grad / G, nodes, NDR_BETA, alpha).doit())
    flat = float(RingAllReduce(grad, 128, NDR_BETA, alpha).doit())
    assert round(intra * 1e3, 1) == 136.1 and round(hier * 1e3) == 929 and round(flat * 1e3) == 5557
    per_direction = float(HierarchicalAllReduce(grad, nodes, G, 450e9, 0, NDR_BETA, alpha).doit())
    assert round(per_direction * 1e3, 1) == 1200.8
    rho_hier = float(CommComputeRatio(hier, t_compute).doit())
    rho_flat = float(CommComputeRatio(flat, t_compute).doit())
    assert (round(rho_hier, 1), round(rho_flat, 1)) == (4.6, 27.8)
    tc, tk = sp.symbols("T_c T_k", positive=True)
    assert CommComputeRatio(tc, tk).doit() == tc / tk


# --------------------------------------------------------------------------------------------
# ZeRO-3 / FSDP
# --------------------------------------------------------------------------------------------
def test_zero3_moves_three_halves_of_plain_data_parallelism():
    # Rajbhandari et al. (2020), sec. 7: DP 2 Psi, ZeRO-3 3 Psi per rank (ring factors (N-1)/N each)
    assert sp.simplify(DataParallelCommVolume(M, N).doit() - 2 * (N - 1) / N * M) == 0
    assert sp.simplify(Zero3CommVolume(M, N).doit() - 3 * (N - 1) / N * M) == 0
    assert sp.simplify(Zero3CommVolume(M, N).doit() / DataParallelCommVolume(M, N).doit()) == sp.Rational(3, 2)
    # the DP volume is the bytes of the ring all-reduce's bandwidth term; the ZeRO-3 time is 2 AG + 1 RS
    assert sp.simplify(DataParallelCommVolume(M, N).doit() / b - (RingAllReduce(M, N, b, 0).doit())) == 0
    assert sp.simplify(Zero3CommTime(M, N, b, a).doit()
                       - (2 * AllGather(M, N, b, a) + ReduceScatter(M, N, b, a)).doit()) == 0
    # 70B parameters in BF16 (the chapter's 140 GB) over 1024 ranks: 279.7 GB vs 419.6 GB per rank and step
    assert round(float(DataParallelCommVolume(140e9, 1024).doit()) / 1e9, 1) == 279.7
    assert round(float(Zero3CommVolume(140e9, 1024).doit()) / 1e9, 1) == 419.6


def test_zero3_traffic_multiple_equals_mlsysim():
    from mlsysim import Models
    from mlsysim.engine.solvers.parallelism import ZeroShardingModel
    r = ZeroShardingModel().solve(Models.Language.Llama2_70B, 64)
    assert float(Zero3CommVolume(M, 64).doit() / DataParallelCommVolume(M, 64).doit()) == pytest.approx(
        r.traffic_multiple["ZeRO-3"], rel=1e-14)


# --------------------------------------------------------------------------------------------
# Pipeline, MoE, activations
# --------------------------------------------------------------------------------------------
def test_pipeline_send_is_a_point_to_point_of_one_microbatch_activation():
    mb, s, h, e = sp.symbols("b s h e", positive=True)
    assert PipelineSendTime(mb, s, h, e, b, a).doit() == PointToPoint(mb * s * h * e, b, a).doit()
    # GPT-3-like boundary: 1 x 2048 x 12288 BF16 = 50.3 MB on IB NDR: 5 us + 1.00663 ms
    t = float(PipelineSendTime(1, 2048, 12288, 2, NDR_BETA, NDR_ALPHA).doit())
    assert t == pytest.approx(5e-6 + 2048 * 12288 * 2 / 50e9, rel=1e-12)
    # on the model's parameters: the message is B_micro S d s_elem bytes
    assert PipelineSendTime(mb, sym.s, sym.H, sym.bpp, b, 0).doit() * b == mb * sym.s * sym.H * sym.bpp


def test_expert_capacity_is_fedus_eq_3_and_the_books_moe_example():
    c, t, e = sp.symbols("c t e", positive=True)
    assert ExpertCapacity(c, t, e).doit() == c * t / e
    # chapter, notebook "AllToAll for MoE token routing": 4,096 tokens, 64 experts, uniform: 64 tokens each
    assert ExpertCapacity(1, 4096, 64).doit() == 64
    # Fedus et al. (2022) train with capacity factor 1.25: 80 slots, and 2.0 gives 128
    assert ExpertCapacity(sp.Rational(5, 4), 4096, 64).doit() == 80
    assert ExpertCapacity(2, 4096, 64).doit() == 128


def test_korthikanti_activations():
    s, bm, h, hd, t = sp.symbols("s b h a t", positive=True)
    # eq. (1) at 2-byte activations, t = 1: s b h (34 + 5 a s / h), for both variants
    eq1 = s * bm * h * (34 + 5 * hd * s / h)
    assert sp.simplify(ActivationsNoRecompute(s, bm, h, hd, 1, 2).doit() - eq1) == 0
    assert sp.simplify(ActivationsSeqParallel(s, bm, h, hd, 1, 2).doit() - eq1) == 0
    # tensor parallel: s b h (10 + 24/t + 5 a s/(h t)); with sequence parallelism everything over t
    assert sp.simplify(ActivationsNoRecompute(s, bm, h, hd, t, 2).doit()
                       - s * bm * h * (10 + 24 / t + 5 * hd * s / (h * t))) == 0
    assert sp.simplify(ActivationsSeqParallel(s, bm, h, hd, t, 2).doit() - eq1 / t) == 0
    # GPT-3 175B (s 2048, h 12288, a 96): 5 a s / h = 80 against 34 -- attention is 70 % of the layer
    assert 5 * 96 * 2048 / 12288 == 80 and round(80 / 114, 2) == 0.70
    gpt3 = float(ActivationsNoRecompute(2048, 1, 12288, 96, 1, 2).doit())
    assert gpt3 == 2048 * 12288 * 114
    # equals mlsysim's calc_activation_memory(strategy='none') per layer, at BF16 and FP32
    from mlsysim.physics.memory import calc_activation_memory
    for prec in (2, 4):
        want = calc_activation_memory(1, 2048, 1, 12288, n_heads=96, precision_bytes=prec,
                                      strategy="none").to("byte").magnitude
        assert float(ActivationsNoRecompute(2048, 1, 12288, 96, 1, prec).doit()) == pytest.approx(want, rel=1e-14)


# --------------------------------------------------------------------------------------------
# Every new term: notation, units, derivative, code printing
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NEW)
def test_new_terms_have_notation_units_derivative_and_code(name):
    # units: seconds for times, bytes for memory and volume, 1 for ratios and factors
    check_term(name, UNIT[name])


def test_book_macros_of_the_new_terms_are_the_registrys():
    mlsysim = pytest.importorskip("mlsysim")
    for name in NEW:
        t = notation.term(name)
        if t.book:
            assert mlsysim.Symbols[t.book].latex == t.latex, name
    for name in ("n_msg", "M_param", "n_heads", "C_cap", "N_experts"):
        e = notation.entry(name)
        assert mlsysim.Symbols[e.book].latex == e.latex, name


def test_new_term_glyphs_are_unique():
    glyphs = [t.latex for t in notation.TERMS if t.name in NEW]
    assert len(glyphs) == len(set(glyphs))
    table = {e.latex for e in notation.table().values()}
    assert not (set(glyphs) & table)
