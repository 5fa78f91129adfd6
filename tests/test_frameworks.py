"""How today's frameworks run a step, in the extended model (``mlsysim_sym.terms.frameworks``): FP8 GEMMs with the
rest in 16-bit, attention at its kernels' efficiency, MoE laid out as Megatron-Core lays it out (``etp_size``),
ZeRO-3 / FSDP prefetch (``fsdp_overlap``), ring attention (``cp_overlap``) and the MoE all-to-all
(``ep_overlap``) overlapped with compute.

Each mechanism against its source's formula, with the numbers worked by hand in the comments, through
``DistributedModel(fidelity="extended").solve()`` and the model's quantities (``parameters_of`` + ``evaluate``).
"""
import math
import warnings
from dataclasses import replace

import pytest

from mlsysim_sym import DistributedModel, modern
from mlsysim_sym.arguments import parameters_of
from mlsysim_sym.compile import evaluate
from mlsysim_sym.mechanisms import MECHANISMS
from mlsysim_sym.symbols import PARAMS, sym

approx = pytest.approx
LLAMA8, LLAMA70, MIXTRAL = "modern/Llama-3.1-8B", "modern/Llama-3.1-70B", "modern/Mixtral-8x7B"
#: 64 H100 SXM: 8 DGX nodes of 8 (NVLink 450 GB/s, 0.5 us), 400G InfiniBand per GPU (50 GB/s, 5 us, osr 1);
#: peaks 989.5 TFLOP/s (bf16) and 1979 TFLOP/s (fp8)
H64 = replace(modern.fleet("modern/H100-SXM-1024"), count=8)
#: the same with a 2:1 oversubscribed fabric (25 GB/s per GPU across nodes)
H64_OSR2 = replace(H64, fabric=replace(H64.fabric, oversubscription_ratio=2.0))
ETA8, ETA_ATT, D_HALF = PARAMS["eta_8"].value, PARAMS["eta_att"].default, PARAMS["d_half"].value   # 0.98, 0.4 (attention_efficiency's default), 1152 (fitted)


def _solve(model, fleet, without=(), **kw):
    with warnings.catch_warnings():      # mlsysim warns where the batch is below the replicas (or memory spills)
        warnings.simplefilter("ignore")
        return DistributedModel(fidelity="extended", without=without).solve(model, fleet, **kw)


def _quantities(model, fleet, names, without=(), **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        variant, values = parameters_of(model, fleet, fidelity="extended", without=without, **kw)
    return evaluate(variant, names, values), values


def _all_to_all(M, n, beta, alpha):     # mlsysim_sym.terms.collectives.AllToAll (ring_phase)
    return (n - 1) / n * M / beta + (n - 1) * alpha


def _ring_all_reduce(M, n, beta, alpha):
    return 2 * (n - 1) / n * M / beta + 2 * (n - 1) * alpha


# ------------------------------------------------------------------------------------------------
# fp8_gemms: Micikevicius et al. 2022, sec. 4; Transformer Engine (only the Linear layers' inputs in FP8)
# ------------------------------------------------------------------------------------------------
L70 = dict(batch_size=64, tp_size=8)        # Llama-3.1-70B on 64 H100: tp 8 -> G 8, dp 8, lb 8, s 2048


def test_fp8_gemms_change_nothing_at_a_16_bit_precision():
    a = _solve(LLAMA70, H64, precision="bf16", **L70)
    b = _solve(LLAMA70, H64, without=("fp8_gemms",), precision="bf16", **L70)
    assert a.node_profile.latency_compute == approx(b.node_profile.latency_compute, rel=1e-12)


def test_fp8_runs_the_gemms_at_eta8_of_the_fp8_peak_and_the_rest_at_16_bit():
    q, v = _quantities(LLAMA70, H64, ["R_gemm", "R_rest", "R_eff", "F_tok"], precision="fp8", **L70)
    assert (v[sym.R_peak], v[sym.R_16]) == (1979e12, 989.5e12)
    # R_GEMM = max(min(1979, 989.5), 0.98 * 1979) = 1939.42 TFLOP/s; R_rest = the 16-bit peak, 989.5 TFLOP/s
    R_gemm = max(989.5e12, ETA8 * 1979e12)
    assert ETA8 == 0.98 and R_gemm == approx(1939.42e12, rel=1e-15)
    assert q["R_gemm"] == approx(R_gemm, rel=1e-14) and q["R_rest"] == 989.5e12
    # F = 139,003,428,864 (the weights' products); attention 2,621,440 per key x 2048/2 keys (causal) = 2,684,354,560
    F, F_tok = v[sym.F], q["F_tok"]
    assert F_tok == F + 2621440 * 1024 == 141687783424
    # R_eff = eta F_tok / (F / R_GEMM + (F_tok - F) / (eta_att R_rest) + (x_1/2 / d) F_tok / R_rest): ~728 TFLOP/s
    R_eff = 0.5 * F_tok / (F / R_gemm + (F_tok - F) / (ETA_ATT * 989.5e12) + (D_HALF / 8192) * F_tok / 989.5e12)
    assert q["R_eff"] == approx(R_eff, rel=1e-13)
    r = _solve(LLAMA70, H64, precision="fp8", **L70)
    assert r.node_profile.peak_flops_actual == approx(R_eff, rel=1e-13)
    # T_compute = 3 F_tok s lb / (G R_eff) = 3 x 141,687,783,424 x 2048 x 8 / (8 x R_eff) ~ 1.20 s
    assert r.node_profile.latency_compute == approx(3 * F_tok * 2048 * 8 / (8 * R_eff), rel=1e-13)


def test_fp8_is_faster_than_bf16_but_by_less_than_the_peaks_ratio():
    bf16 = _solve(LLAMA70, H64, precision="bf16", **L70).step_latency_total
    fp8 = _solve(LLAMA70, H64, precision="fp8", **L70).step_latency_total
    # 3.058 s against 2.324 s: 1.32x (the peaks are 2x apart; attention, the elementwise work, TP all-reduces,
    # the optimizer update stay as they are)
    assert 1.2 < bf16 / fp8 < 1.9


def test_fp8_keeps_two_byte_messages_and_memory():
    bf16 = _solve(LLAMA70, H64, precision="bf16", **L70)
    fp8 = _solve(LLAMA70, H64, precision="fp8", **L70)
    off = _solve(LLAMA70, H64, without=("fp8_gemms",), precision="fp8", **L70)
    # TP: n_AR 4 x 80 layers ring all-reduces over 8 ranks on NVLink of lb s d s_elem = 8 x 2048 x 8192 x 2
    # = 268,435,456 B: 320 x (2 x 7/8 x M / 450e9 + 14 x 0.5 us) = 320 x 1.0509e-3 = 0.33629 s
    lat = 320 * 14 * 5e-7
    assert bf16.tp_communication_latency == approx(320 * 2 * 7 / 8 * 268435456 / 450e9 + lat, rel=1e-13)
    assert fp8.tp_communication_latency == approx(bf16.tp_communication_latency, rel=1e-14)
    assert fp8.node_profile.memory_footprint == approx(bf16.node_profile.memory_footprint, rel=1e-14)
    # priced as mlsysim prices it: 1-byte elements, the bandwidth part halves (the startups stay)
    assert off.tp_communication_latency - lat == approx((bf16.tp_communication_latency - lat) / 2, rel=1e-12)
    # the weights: P / tp x 2 B = 70,553,706,496 / 8 x 2 = 17,638,426,624 B (1 B each without the mechanism)
    w = [_quantities(LLAMA70, H64, ["M_weights"], without=mechs, precision="fp8", **L70)[0]["M_weights"]
         for mechs in ((), ("fp8_gemms",))]
    assert w == [70553706496 / 8 * 2, 70553706496 / 8]


# ------------------------------------------------------------------------------------------------
# attention_kernels: Dao 2023 (FlashAttention-2), sec. 4; Shah et al. 2024 (FlashAttention-3), sec. 4.1
# ------------------------------------------------------------------------------------------------
def test_attention_runs_at_eta_att_of_the_gemms_efficiency():
    # Llama-3.1-8B card, tp 1 -> G 1, dp 64, lb 1, s 8192, bf16 (R 989.5 TFLOP/s, eta 0.5), d 4096;
    # F_tok - F = 524,288 per key x 4096 keys (causal) = 2,147,483,648
    kw = dict(batch_size=64, tp_size=1, seq_len=8192, precision="bf16")
    q, v = _quantities(LLAMA8, H64, ["F_tok"], **kw)
    F, F_tok, R = v[sym.F], q["F_tok"], 989.5e12
    assert F_tok - F == 524288 * 4096
    R_eff = 0.5 * F_tok / (F / R + (F_tok - F) / (ETA_ATT * R) + (D_HALF / 4096) * F_tok / R)
    t = _solve(LLAMA8, H64, **kw).node_profile.latency_compute
    assert t == approx(3 * F_tok * 8192 * 1 / (1 * R_eff), rel=1e-13)
    # without it (eta_att = 1): every FLOP at R eta f_GEMM, f_GEMM = 4096 / (4096 + 1168)
    t1 = _solve(LLAMA8, H64, without=("attention_kernels",), **kw).node_profile.latency_compute
    assert t1 == approx(3 * F_tok * 8192 / (R * 0.5 * 4096 / (4096 + D_HALF)), rel=1e-13)
    assert t > t1


def test_attention_kernels_leave_a_workload_without_a_card_alone():
    kw = dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
    a = _solve("Llama3_70B", "Research_256", **kw)
    b = _solve("Llama3_70B", "Research_256", without=("attention_kernels",), **kw)
    assert a.node_profile.latency_compute == approx(b.node_profile.latency_compute, rel=1e-14)


# ------------------------------------------------------------------------------------------------
# moe_layout: Megatron-Core parallel_state (etp-ep-dp-pp beside tp-cp-dp-pp); DeepSpeed-MoE, sec. 5
# ------------------------------------------------------------------------------------------------
# Mixtral-8x7B card: P = 46,702,792,704, routed experts P_exp = 45,097,156,608, 32 layers, d 4096, top-2;
# batch 256, s 2048, bf16; the fabric 2:1 oversubscribed: 25 GB/s, 5 us; NVLink 450 GB/s, 0.5 us
@pytest.mark.parametrize("ep,etp,tp,nvlink", [(8, 1, 1, True), (4, 2, 1, True), (8, 2, 2, False),
                                              (4, 4, 1, False)])
def test_moe_layout_by_hand(ep, etp, tp, nvlink):
    kw = dict(batch_size=256, tp_size=tp, ep_size=ep, etp_size=etp, zero_stage=1)
    q, v = _quantities(MIXTRAL, H64_OSR2, ["G", "dp", "P_shard", "G_exp", "dp_exp", "beta_ep", "alpha_ep",
                                           "T_dp_expert"], **kw)
    r = _solve(MIXTRAL, H64_OSR2, **kw)
    P, P_exp = v[sym.P], v[sym.P_exp]
    assert (P, P_exp) == (46702792704, 45097156608)
    # EP carved out of DP: a replica spans tp only -> dp = 64 / tp (mlsysim's layout: 64 / (tp ep))
    dp, lb = 64 // tp, 256 // (64 // tp)
    assert q["G"] == tp and q["dp"] == dp and r.parallelism["dp"] == dp and r.parallelism["ep"] == ep
    # the rest over tp pp, the routed experts over ep etp pp: ep 8 -> 1,605,636,096 + 5,637,144,576
    assert q["P_shard"] == approx((P - P_exp) / tp + P_exp / (ep * etp), rel=1e-12)
    # the all-to-all on NVLink when the ep etp ranks of an expert group fit in a node of 8
    beta, alpha = (450e9, 5e-7) if nvlink else (50e9 / 2, 5e-6)
    assert (q["beta_ep"], q["alpha_ep"]) == (beta, alpha)
    # T_EP = n_A2A 4 x 32 layers x AllToAll(lb s d s_elem k_e iota / tp, ep): ep 8 -> M = 4 x 2048 x 4096 x 2 x 2
    # = 134,217,728 B, 128 x (7/8 M / 450e9 + 7 x 0.5 us) = 0.0338533 s
    M = lb * 2048 * 4096 * 2 * 2 / tp
    # with etp > 1, each pass of each layer also all-gathers the N_ETP ranks' tokens before the experts and
    # reduce-scatters after them (Megatron-Core's MoEAlltoAllTokenDispatcher), on NVLink (etp <= 8): a pair of
    # (etp - 1) / etp x etp M / beta + (etp - 1) alpha each, 2 passes: 2 x 2 (etp - 1) (M / 450e9 + 0.5 us) a layer
    etp_gathers = 32 * 2 * 2 * (etp - 1) * (M / 450e9 + 5e-7)
    assert r.ep_communication_latency == approx(4 * 32 * _all_to_all(M, ep, beta, alpha) + etp_gathers, rel=1e-13)
    # the experts' gradients, P_exp s_elem / (ep etp) bytes, reduced over dp_exp = 64 / (ep etp) ranks, one per
    # node (the expert group fills a node): a fabric ring; ep 8: 11,274,289,152 B over 8 ranks, 0.789 s
    n = 64 // (ep * etp)
    assert q["G_exp"] == ep * etp and q["dp_exp"] == n
    assert q["T_dp_expert"] == approx(_ring_all_reduce(P_exp * 2 / (ep * etp), n, 25e9, 5e-6), rel=1e-13)
    assert q["T_dp_expert"] > 0


def test_moe_layout_off_is_mlsysims_layout_and_a_dense_card_reduces_no_experts():
    r = _solve(MIXTRAL, H64, without=("moe_layout",), batch_size=256, tp_size=1, ep_size=8)
    assert r.parallelism["dp"] == 8           # 64 / (tp 1 x ep 8)
    # a dense card: the experts' reduction (an empty ring: latency only) does not enter the DP all-reduce
    q, _ = _quantities(LLAMA8, H64, ["T_dp_expert", "T_dp_allreduce"], batch_size=64, tp_size=1)
    plain, _ = _quantities(LLAMA8, H64, ["T_dp_allreduce"], without=("moe_layout",), batch_size=64, tp_size=1)
    assert q["T_dp_expert"] > 0 and q["T_dp_allreduce"] == plain["T_dp_allreduce"] > 0


# DeepSeek-V3's 256 experts on 72-GPU NVLink domains: expert groups of 8 consecutive ranks lie 9 to a rack; groups
# of 64 do not divide 72 (ranks 64-127 span two racks), so the slowest group's all-to-all crosses the fabric;
# 128 are larger than a rack
@pytest.mark.parametrize("ep,link", [(8, 900e9), (64, None), (128, None)])
def test_an_expert_group_in_one_nvl72_domain_stays_on_nvlink(ep, link):
    f = modern.fleet("modern/GB200-NVL72-1152")
    q, _ = _quantities("modern/DeepSeek-V3", f, ["beta_ep", "dp"], batch_size=1152, ep_size=ep, precision="fp8")
    assert q["dp"] == 1152
    assert q["beta_ep"] == (link or f.fabric.bandwidth / f.fabric.oversubscription_ratio)


@pytest.mark.parametrize("kw,message", [
    (dict(etp_size=0), "etp_size must be >= 1, got 0"),
    # ep 3 neither divides Mixtral's 8 experts nor the 64 GPUs: the experts are checked first
    (dict(ep_size=3), "ep_size (3) must divide the routed experts of each MoE layer (8): each rank holds whole "
                      "experts"),
    (dict(ep_size=16), "ep_size (16) must divide the routed experts of each MoE layer (8)"),
    # etp 3 does not split the experts' 14,336 columns evenly; etp 7 does, but 8 x 7 does not divide 64 GPUs
    (dict(ep_size=8, etp_size=3), "etp_size (3) must divide the width of each routed expert's MLP (14336)"),
    (dict(ep_size=8, etp_size=7), "Infeasible expert parallelism"),
])
def test_etp_size_is_checked(kw, message):
    with pytest.raises(ValueError) as e:
        _solve(MIXTRAL, H64, batch_size=256, **kw)
    assert message in str(e.value)


def test_etp_size_on_a_dense_card_is_refused():
    # Llama 3.1 8B's card has no routed experts: expert tensor parallelism would split nothing (the ep rule's
    # twin); a record without a card (mlsysim's Mixtral_8x7B) says nothing of its experts and is not checked
    with pytest.raises(ValueError) as e:
        _solve(LLAMA8, H64, batch_size=64, tp_size=1, etp_size=2)
    assert str(e.value) == ("etp_size (2) > 1 needs a mixture of experts: the architecture card has no routed "
                            "experts whose matrices it would split")


def test_etp_size_must_split_each_experts_mlp_evenly():
    # Qwen3-30B-A3B's experts are 768 wide (2^8 x 3): etp 7 (ep 8 x etp 7 = 56 divides 448 GPUs) leaves 768 / 7
    # columns a rank, not whole; etp 3 and 2 split it (256 and 384 columns); a record without a card (mlsysim's
    # Mixtral_8x7B: width 0) is not checked
    f448 = replace(H64, count=56)
    with pytest.raises(ValueError) as e:
        _solve("modern/Qwen3-30B-A3B", f448, batch_size=448, ep_size=8, etp_size=7)
    assert str(e.value) == ("etp_size (7) must divide the width of each routed expert's MLP (768): each rank holds "
                            "a whole share of every expert's matrices")
    for etp in (2, 3):
        f = replace(H64, count=8 * etp)
        assert _solve("modern/Qwen3-30B-A3B", f, batch_size=64 * etp, ep_size=8, etp_size=etp).step_latency_total > 0
    assert _solve("Mixtral_8x7B", f448, batch_size=448, ep_size=8, etp_size=7).step_latency_total > 0


def test_moe_layout_shards_expert_states_over_the_expert_data_parallel_ranks():
    # Megatron-Core's distributed optimizer shards the expert parameters' buffers over the expert data-parallel
    # group (DistributedDataParallel.expert_parallel_buffers on intra_expt_dp_group): ep 8 -> the 8 ranks that
    # hold the same experts. ZeRO-1, Adam 12 B per parameter: dense 1,605,636,096 x 12 / 64 = 301,056,768 B,
    # experts 5,637,144,576 x 12 / 8 = 8,455,716,864 B
    kw = dict(batch_size=256, tp_size=1, ep_size=8, zero_stage=1)
    q, v = _quantities(MIXTRAL, H64, ["M_optimizer", "P_update"], **kw)
    dense, experts = v[sym.P] - v[sym.P_exp], v[sym.P_exp] / 8
    assert q["P_update"] == approx(dense / 64 + experts / 8, rel=1e-12)
    assert q["M_optimizer"] == approx(12 * (dense / 64 + experts / 8), rel=1e-12)


def test_moe_layout_streams_the_weights_a_rank_holds():
    # the roofline's traffic is the rank's weight shard plus 10 % of it per sample (mlsysim's), and under the MoE
    # layout the shard is P_shard (ep 8: 7,242,780,672 parameters, 2 B), not P / (tp pp) (every expert)
    kw = dict(batch_size=256, tp_size=1, ep_size=8, zero_stage=1)
    q, v = _quantities(MIXTRAL, H64, ["traffic", "P_shard", "lb"], **kw)
    assert q["traffic"] == approx(q["P_shard"] * 2 * (1 + 0.1 * q["lb"]), rel=1e-12)


# ------------------------------------------------------------------------------------------------
# fsdp_overlap: Zhao et al. 2023 (PyTorch FSDP), sec. 3.3: prefetched gathers, the reduction beside the backward
# ------------------------------------------------------------------------------------------------
# Llama-3.1-8B, batch 64, tp 1: T_DP 0.199 s under the replica's 0.245 s -> the floor, one layer's share (/32);
# Llama-3.1-70B, batch 8, tp 8: T_DP 0.926 s over the replica's 0.252 s -> what it cannot cover, 0.674 s
FSDP = [(LLAMA8, dict(batch_size=64, tp_size=1), "floor"), (LLAMA70, dict(batch_size=8, tp_size=8), "uncovered")]


@pytest.mark.parametrize("model,kw,regime", FSDP, ids=["8B", "70B"])
def test_fsdp_overlap_exposes_what_the_compute_cannot_cover(model, kw, regime):
    names = ["T_dp", "T_node", "L_tp", "T_dp_exposed"]
    q, _ = _quantities(model, H64, names, zero_stage=3, fsdp_overlap=True, **kw)
    uncovered, floor = q["T_dp"] - q["T_node"], q["T_dp"] / q["L_tp"]
    assert (uncovered > floor) == (regime == "uncovered")
    assert q["T_dp_exposed"] == approx(max(uncovered, floor), rel=1e-13)
    on = _solve(model, H64, zero_stage=3, fsdp_overlap=True, **kw)
    off = _solve(model, H64, zero_stage=3, **kw)
    assert on.dp_communication_latency == approx(q["T_dp"], rel=1e-13)
    assert off.step_latency_total - on.step_latency_total == approx(q["T_dp"] - q["T_dp_exposed"], rel=1e-9)
    # without the switch: the old exposure, all of it, or (1 - 0.85) of it with overlap_comm
    q0, _ = _quantities(model, H64, names, zero_stage=3, **kw)
    assert q0["T_dp_exposed"] == q0["T_dp"] == q["T_dp"]
    q1, _ = _quantities(model, H64, names, zero_stage=3, overlap_comm=True, **kw)
    assert q1["T_dp_exposed"] == approx(0.15 * q["T_dp"], rel=1e-13)


@pytest.mark.parametrize("model,kw,regime", FSDP, ids=["8B", "70B"])
def test_fsdp_overlap_leaves_zero_1_alone(model, kw, regime):
    q, _ = _quantities(model, H64, ["T_dp", "T_dp_exposed"], zero_stage=1, fsdp_overlap=True, **kw)
    assert q["T_dp_exposed"] == q["T_dp"] > 0
    a = _solve(model, H64, zero_stage=1, fsdp_overlap=True, **kw)
    b = _solve(model, H64, zero_stage=1, **kw)
    assert a.step_latency_total == b.step_latency_total


# ------------------------------------------------------------------------------------------------
# cp_overlap: Liu et al. 2023 (Ring Attention), sec. 3: each block's transfer beside the blockwise attention
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("tp,rc,fabric", [(1, False, 50e9), (1, True, 50e9), (8, False, 2e9)])
def test_cp_overlap_exposes_what_attention_cannot_cover(tp, rc, fabric):
    # Llama-3.1-8B card, cp 4, s 32768, batch 16, congestion 1.25: tp 1 -> G 4, dp 16, lb 1 (the ring on NVLink);
    # tp 8 -> G 32, dp 2, lb 8, the ring (t cp = 32 ranks) on a 2 GB/s fabric: the exchange outlasts attention
    f = replace(H64, fabric=replace(H64.fabric, bandwidth=fabric))
    kw = dict(batch_size=16, tp_size=tp, cp_size=4, seq_len=32768, activation_recomputation=rc,
              congestion_factor=1.25)
    q, v = _quantities(LLAMA8, f, ["G", "lb", "F_tok", "T_cp_exchange", "T_att", "T_cp"], cp_overlap=True, **kw)
    G, lb = 4 * tp, 16 // (64 // (4 * tp))
    assert (q["G"], q["lb"]) == (G, lb)
    # attention's FLOPs: 524,288 per key x 16,384 keys = 8,589,934,592 per token, x 3 (x 4 recomputed), over the
    # step's s lb tokens on G ranks at R eta eta_att = 989.5e12 x 0.5 x 0.4 (eta_att, attention_efficiency's default)
    mult = 4 if rc else 3
    F_att = q["F_tok"] - v[sym.F]
    assert F_att == 524288 * 16384
    T_att = mult * F_att * 32768 * lb / (G * 989.5e12 * 0.5 * ETA_ATT)
    assert q["T_att"] == approx(T_att, rel=1e-13)
    x = q["T_cp_exchange"]
    assert (x - T_att > x / 4) == (fabric < 50e9)
    assert q["T_cp"] == approx(1.25 * max(x - T_att, x / 4), rel=1e-13)
    r = _solve(LLAMA8, f, cp_overlap=True, **kw)
    assert r.extended["cp_communication_latency"] == approx(q["T_cp"], rel=1e-13)
    # the all-gather form (no switch): the whole exchange exposed
    r0 = _solve(LLAMA8, f, **kw)
    assert r0.extended["cp_communication_latency"] == approx(1.25 * x, rel=1e-13)


# ------------------------------------------------------------------------------------------------
# ep_overlap: Megatron-Core overlap_moe_expert_parallel_comm (one microbatch's all-to-alls beside another's compute,
# each beside one chunk of it: the share eta_EP-ov of the replica's compute)
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("nvlink,m,ga", [(450e9, 8, 1), (450e9, 4, 2), (450e9, 1, 1), (2e9, 8, 1), (2e9, 1, 1)])
def test_ep_overlap_exposes_what_the_compute_cannot_cover_and_one_microbatchs_share(nvlink, m, ga):
    # Mixtral-8x7B card on 64 H100, tp 2, pp 2, ep 8 (ep x etp = 8 fits a node: the all-to-all runs on NVLink),
    # batch 64, s 4096, congestion 1.25: dp 16, lb 4, 16 layers a stage.
    # The all-to-alls run beside eta_EP-ov = 0.6 of the compute (fitted, docs/modern_runs.md). At 450 GB/s: T_EP =
    # 21.16 ms (congestion included) under 0.6 T_node = 0.704 s (m GA = 8): one microbatch's share is exposed,
    # 21.16 / 8 = 2.645 ms. On a 2 GB/s NVLink: T_EP = 4.698 s, beyond the compute it runs beside: 4.698 - 0.6 x
    # 1.173 = 3.994 s exposed. With one microbatch (T_node = 0.938 s) nothing pairs with it: all of it.
    f = replace(H64, node=replace(H64.node, intra_node_bw=nvlink))
    kw = dict(batch_size=64, ep_size=8, tp_size=2, pp_size=2, microbatch_count=m, gradient_accumulation_steps=ga,
              seq_len=4096, precision="bf16", congestion_factor=1.25)
    q, _ = _quantities(MIXTRAL, f, ["T_ep", "T_node", "T_ep_exposed", "dp", "lb", "L_tp", "T_perm"], ep_overlap=True,
                       **kw)
    assert (q["dp"], q["lb"], q["L_tp"]) == (16, 4, 16)
    t, node = q["T_ep"], q["T_node"]
    # T_EP = c n_A2A L_stage AllToAll(lb s d 2 k / N_TP, 8): 1.25 x 4 x 16 all-to-alls of 4 x 4096 x 4096 x 2 x 2 / 2 =
    # 134,217,728 bytes on NVLink (0.5 us)
    assert t == approx(1.25 * 4 * 16 * _all_to_all(134217728, 8, nvlink, 0.5e-6), rel=1e-14)
    # T_node includes the all-to-all dispatcher's permutation (moe_permutation, fused_dispatch off): b_perm 4 x
    # n_A2A 4 x 16 layers x the same 134,217,728 routed bytes / 3.35 TB/s of HBM = 10.257 ms
    assert q["T_perm"] == approx(4 * 4 * 16 * 134217728 / 3.35e12, rel=1e-14)
    assert node == approx(1.173348922 if m * ga == 8 else 0.938148922, rel=1e-8)
    assert PARAMS["eta_epov"].value == 0.6
    assert q["T_ep_exposed"] == approx(max(t - 0.6 * node, t / (m * ga)), rel=1e-14)
    assert q["T_ep_exposed"] == approx({(450e9, 8): 0.00264478916, (2e9, 8): 3.99389112645}.get((nvlink, m * ga), t),
                                       rel=1e-8)
    on, off = _solve(MIXTRAL, f, ep_overlap=True, **kw), _solve(MIXTRAL, f, **kw)
    assert on.extended["ep_exposed_latency"] == approx(q["T_ep_exposed"], rel=1e-14)
    assert off.extended["ep_exposed_latency"] == approx(t, rel=1e-14)
    assert on.step_latency_total - off.step_latency_total == approx(q["T_ep_exposed"] - t, rel=1e-9, abs=1e-15)
    # the all-to-all before overlap is the same either way (what communication_latency reports)
    assert on.ep_communication_latency == off.ep_communication_latency
    # without the mechanism the switch is priced as mlsysim prices it: exposed
    w = _solve(MIXTRAL, f, without=("ep_overlap",), ep_overlap=True, **kw)
    assert w.step_latency_total == approx(off.step_latency_total, rel=1e-14)


def test_ep_overlap_is_a_switch_of_the_extended_model_only():
    m = MECHANISMS["ep_overlap"]
    assert m.switch == "ep_overlap" and m.quantities == ("T_ep_exposed",)
    assert PARAMS["epov"].argument == "ep_overlap" and PARAMS["epov"].default is False
    with pytest.raises(ValueError, match=r"ep_overlap=True is an argument of the extended model.*fidelity='extended'"):
        DistributedModel().solve("Mixtral_8x7B", "Training_1K", batch_size=512, ep_size=8, ep_overlap=True)
    # a dense model has no all-to-all to hide: the switch changes nothing
    a = _solve(LLAMA70, H64, ep_overlap=True, **L70)
    assert a.step_latency_total == _solve(LLAMA70, H64, **L70).step_latency_total


# ------------------------------------------------------------------------------------------------
# Every mechanism off: mlsysim's numbers, on MoE configurations at FP8
# ------------------------------------------------------------------------------------------------
MOE_FP8 = [
    ("Mixtral_8x7B", "Training_1K", dict(batch_size=512, tp_size=2, pp_size=2, ep_size=8, microbatch_count=4,
                                         precision="fp8", zero_stage=3, activation_recomputation=True)),
    (MIXTRAL, "modern/H100-SXM-1024", dict(batch_size=1024, tp_size=2, ep_size=8, precision="fp8", zero_stage=3,
                                           gradient_accumulation_steps=2)),
    ("modern/DeepSeek-V3", "modern/GB200-NVL72-1152", dict(batch_size=1152, pp_size=16, microbatch_count=16,
                                                           ep_size=8, precision="fp8")),
]


@pytest.mark.parametrize("model,fleet,kw", MOE_FP8, ids=[c[0] for c in MOE_FP8])
def test_every_mechanism_off_gives_mlsysims_numbers_for_moe_at_fp8(model, fleet, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = DistributedModel().solve(model, fleet, **kw)
        b = DistributedModel(fidelity="extended", without=tuple(MECHANISMS)).solve(model, fleet, **kw)
        e = DistributedModel(fidelity="extended").solve(model, fleet, **kw)
    for name, x in a.quantities.items():
        y = b.quantities[name]
        assert (x is None and y is None) or x == y, name
    assert not math.isclose(e.step_latency_total, a.step_latency_total, rel_tol=1e-3)    # the mechanisms act


def test_the_shipped_code_is_fingerprinted_on_every_terms_module_the_model_reads():
    # solve() runs pre-generated code while its fingerprint (a sha256 of FINGERPRINT_SOURCES) matches; a change to a
    # terms module the model reads but the fingerprint leaves out (terms/frameworks.py: gemm_rate, effective_rate,
    # overlapped) would leave solve() on the old expressions while evaluate() compiles the new ones
    import inspect
    import re
    from mlsysim_sym import _shipped, model
    used = {a or b for a, b in re.findall(r"from \.terms(?:\.(\w+))? import (\w+)", inspect.getsource(model))}
    assert "frameworks" in used
    assert sorted(m for m in used if f"terms/{m}.py" not in _shipped.FINGERPRINT_SOURCES) == []


# ---- pipeline_balance ---------------------------------------------------------------------------------------
def test_the_last_stage_carries_the_output_layer_and_gates_the_pipeline():
    kw = dict(batch_size=64, tp_size=8, pp_size=4, microbatch_count=8, precision="bf16")
    q, v = _quantities(LLAMA70, H64, ["r_stage", "F_tok"], **kw)
    # the output layer: 2 V d = 2 x 128,256 x 8,192 = 2,101,346,304 FLOPs per token; F_tok = 141,687,783,424
    # (test_fp8_runs_the_gemms...); the last of 4 stages: 1/4 of the rest and all of it, over the mean, 1/4 of all:
    # r_stage = 1 + 3 x 2,101,346,304 / 141,687,783,424 = 1.04449...
    assert v[sym.F_head] == 2 * 128256 * 8192 == 2101346304
    assert q["r_stage"] == approx(1 + 3 * 2101346304 / q["F_tok"], rel=1e-15) == approx(1.044492, rel=1e-6)
    on = _solve(LLAMA70, H64, **kw)
    off = _solve(LLAMA70, H64, without=("pipeline_balance",), **kw)
    assert on.node_profile.latency_compute == approx(off.node_profile.latency_compute * q["r_stage"], rel=1e-13)
    # without a pipeline, or without a card (no output layer known), every stage is the same
    flat = dict(kw, pp_size=1, microbatch_count=1)
    assert _solve(LLAMA70, H64, **flat).node_profile.latency_compute == approx(
        _solve(LLAMA70, H64, without=("pipeline_balance",), **flat).node_profile.latency_compute, rel=1e-15)
    assert _solve("Llama3_70B", H64, **kw).node_profile.latency_compute == approx(
        _solve("Llama3_70B", H64, without=("pipeline_balance",), **kw).node_profile.latency_compute, rel=1e-15)


# ------------------------------------------------------------------------------------------------
# pass_overhead: mlsysim's framework tax (T_overhead), charged for every layer pass of every microbatch
# ------------------------------------------------------------------------------------------------
def test_pass_overhead_is_a_fixed_cost_per_layer_pass_of_every_microbatch():
    m = MECHANISMS["pass_overhead"]
    assert m.switch is None and m.quantities == ("n_pass",) and PARAMS["k_pass"].value == 70
    # Llama-3.1-70B (80 layers) on 64 H100, tp 4, pp 4, m 16: 20 layers a stage, 16 microbatches of 3
    # forward-pass equivalents: n_pass = 70 x 20 x 3 x 16 = 67,200 taxes of 10 us, + the 10 us dispatch tax
    kw = dict(batch_size=64, tp_size=4, pp_size=4, microbatch_count=16)
    q, v = _quantities(LLAMA70, H64, ["n_pass", "T_overhead"], **kw)
    assert (v[sym.TAX], v[sym.tau_d]) == (1e-5, 1e-5)
    assert q["n_pass"] == 67200 and q["T_overhead"] == approx(0.672 + 1e-5, rel=1e-14)
    # full recomputation adds a forward (4 equivalents); accumulation multiplies the microbatches (GA 2: 32)
    q4, _ = _quantities(LLAMA70, H64, ["n_pass"], activation_recomputation=True, gradient_accumulation_steps=2, **kw)
    assert q4["n_pass"] == 70 * 20 * 4 * 32
    # without a pipeline: the accumulation steps, each of m microbatches if m is given (80 layers x 3 x 4, x 8)
    q1, _ = _quantities(LLAMA70, H64, ["n_pass"], batch_size=64, tp_size=8, gradient_accumulation_steps=4)
    assert q1["n_pass"] == 70 * 80 * 3 * 4
    q8, _ = _quantities(LLAMA70, H64, ["n_pass"], batch_size=64, tp_size=8, microbatch_count=8,
                        gradient_accumulation_steps=4)
    assert q8["n_pass"] == 70 * 80 * 3 * 4 * 8
    # priced as mlsysim prices it: 3 launches per layer once a step, 10 us + 3 x 80 x 10 us = 2.41 ms
    off = _solve(LLAMA70, H64, without=("pass_overhead",), **kw)
    assert off.node_profile.latency_overhead == approx(2.41e-3, rel=1e-12)
    on = _solve(LLAMA70, H64, **kw)
    assert on.node_profile.latency_overhead == approx(0.67201, rel=1e-12)
    # its derivative in k_pass is the taxes it multiplies: TAX x L_stage x 3 x m = 1e-5 x 20 x 3 x 16 = 9.6 ms
    from mlsysim_sym.model import build_model
    from mlsysim_sym.arguments import parameters_of as _p
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        variant, values = _p(LLAMA70, H64, fidelity="extended", **kw)
    model = build_model(variant)
    d = model.closed_form("T_overhead").diff(sym.k_pass).subs(values)
    assert float(d) == approx(9.6e-3, rel=1e-14)


# microbatch_memory: Megatron-LM's forward_backward_no_pipelining runs the microbatches one after another
def test_microbatches_without_a_pipeline_hold_one_microbatchs_activations():
    m = MECHANISMS["microbatch_memory"]
    assert m.switch is None and m.quantities == ()
    # Llama-3.1-8B on 64 H100, batch 256, tp 1: 64 replicas of lb = 4 samples. m 4 without a pipeline: ifd = 4,
    # mb = max(1, ceil(4 / (1 x 4))) = 1 sample held, a quarter of m 1's 4 (mlsysim's ifd is 1 at pp 1: mb 4)
    kw = dict(batch_size=256)
    names = ["ifd", "mb", "M_activations"]
    one, _ = _quantities(LLAMA8, H64, names, **kw)
    four, _ = _quantities(LLAMA8, H64, names, microbatch_count=4, **kw)
    off, _ = _quantities(LLAMA8, H64, names, without=("microbatch_memory",), microbatch_count=4, **kw)
    assert (one["ifd"], one["mb"]) == (1, 4) and (four["ifd"], four["mb"]) == (4, 1) and off["mb"] == 4
    assert four["M_activations"] == approx(one["M_activations"] / 4, rel=1e-14)
    assert off["M_activations"] == approx(one["M_activations"], rel=1e-14)
    # the same as 4 accumulation steps hold (lb / GA), which mlsysim's model reads at every pp
    ga, _ = _quantities(LLAMA8, H64, names, gradient_accumulation_steps=4, **kw)
    assert ga["mb"] == 1 and ga["M_activations"] == approx(four["M_activations"], rel=1e-14)
    # with a pipeline it is mlsysim's in-flight divisor: pp 2, m 4 -> max(1, 4 // 2) = 2 (mb = ceil(8 / 2) = 4)
    pp, _ = _quantities(LLAMA8, H64, names, pp_size=2, microbatch_count=4, **kw)
    pp_off, _ = _quantities(LLAMA8, H64, names, without=("microbatch_memory",), pp_size=2, microbatch_count=4, **kw)
    assert (pp["ifd"], pp["mb"]) == (2, 4) and pp == pp_off


def test_a_stages_send_and_receive_buffers_hold_one_microbatchs_message():
    # Llama-3.1-70B (d 8192) in BF16 on 64 H100, batch 64, tp 8, pp 2, m 4, seq 2048: dp 4, B_local 16, microbatches
    # of ceil(16 / 4) = 4 samples; one message 4 x 2048 x 8192 / 8 x 2 B = 16.78 MB, a send and a receive buffer
    # 33.55 MB beside the gradient bucket (5 % of the gradients). mlsysim's buffers hold the activations of
    # B_held = ceil(16 / max(1, 4 // 2)) = 8 samples, unsplit: 2 x 8 x 2048 x 8192 x 2 B = 536.9 MB
    kw = dict(batch_size=64, tp_size=8, pp_size=2, microbatch_count=4, seq_len=2048, precision="bf16")
    q, _ = _quantities(LLAMA70, H64, ["M_buffers", "M_grads", "mb"], **kw)
    off, _ = _quantities(LLAMA70, H64, ["M_buffers", "M_grads", "mb"], without=("pipeline_p2p",), **kw)
    assert q["M_buffers"] == approx(0.05 * q["M_grads"] + 2 * 4 * 2048 * 8192 / 8 * 2, rel=1e-12)
    assert off["mb"] == 8 and off["M_buffers"] == approx(0.05 * off["M_grads"] + 2 * 8 * 2048 * 8192 * 2, rel=1e-12)
    # without a pipeline there are none
    one, _ = _quantities(LLAMA70, H64, ["M_buffers", "M_grads"], **dict(kw, pp_size=1))
    assert one["M_buffers"] == approx(0.05 * one["M_grads"], rel=1e-12)


# fsdp_buffers: PyTorch FSDP holds two units gathered (limit_all_gathers) and one unit's gradients unsharded
LAYER70 = 70553706496 / 80 * 2          # Llama-3.1-70B: one of its 80 layers' parameters in BF16, 1.7638 GB


@pytest.mark.parametrize("tp,pp,z,kw,gathered", [
    (1, 1, 3, dict(fsdp_overlap=True), 3 * LAYER70),        # two layers' weights (prefetched), one's gradients
    (1, 1, 3, {}, 2 * LAYER70),                             # gathers not prefetched: one layer's weights
    (8, 1, 3, dict(fsdp_overlap=True), 3 * LAYER70 / 8),    # the TP rank's slice of a layer: 661.4 MB
    # LoRA: the frozen weights' gradients are none; f_train = 8 d N_L r / P = 8 x 8192 x 80 x 16 / P (r 16)
    (1, 1, 3, dict(fsdp_overlap=True, is_lora=True), (2 + 8 * 8192 * 80 * 16 / 70553706496) * LAYER70),
    (8, 2, 3, dict(fsdp_overlap=True), 0.0),                # under a pipeline the stage holds its weights whole
    (1, 1, 2, dict(fsdp_overlap=True), 0.0), (1, 1, 0, {}, 0.0),     # below ZeRO-3 nothing is gathered
])
def test_fsdp_holds_the_layers_it_computes_gathered(tp, pp, z, kw, gathered):
    m = MECHANISMS["fsdp_buffers"]
    assert m.switch is None and m.quantities == ("P_gather", "M_gather")
    kw = dict(kw, batch_size=64, tp_size=tp, pp_size=pp, microbatch_count=2 * pp - 1, zero_stage=z,
              precision="bf16")
    q, _ = _quantities(LLAMA70, H64, ["M_gather", "M_buffers", "M_acc"], **kw)
    off, _ = _quantities(LLAMA70, H64, ["M_buffers", "M_acc"], without=("fsdp_buffers",), **kw)
    assert q["M_gather"] == approx(gathered, rel=1e-12)
    # in the communication buffers, beside mlsysim's (5 % of the gradients, the pipeline's send buffers)
    assert q["M_buffers"] - off["M_buffers"] == approx(gathered, rel=1e-9, abs=1e-3)
    assert q["M_acc"] - off["M_acc"] == approx(gathered, rel=1e-9, abs=1e-3)


def test_fsdp_gathers_a_ranks_own_experts_and_nothing_held_whole():
    # Mixtral-8x7B (46,702,792,704 parameters, 45,097,156,608 in the routed experts, 32 layers) in BF16, ep 8 carved
    # from the data-parallel ranks, gathers prefetched: on 64 H100 a rank gathers the dense part of a layer and its
    # 1 of 8 experts, 3 x (1605636096 + 45097156608 / 8) / 32 x 2 B = 1.3578 GB; on 8, its experts' data-parallel
    # group is one rank (they are held whole): the dense part alone, 3 x 1605636096 / 32 x 2 B = 301 MB
    kw = dict(batch_size=64, ep_size=8, zero_stage=3, precision="bf16", fsdp_overlap=True)
    q, _ = _quantities(MIXTRAL, H64, ["M_gather"], **kw)
    assert q["M_gather"] == approx(3 * (1605636096 + 45097156608 / 8) / 32 * 2, rel=1e-12)
    one_node = replace(H64, count=1)
    q, _ = _quantities(MIXTRAL, one_node, ["M_gather"], **kw)
    assert q["M_gather"] == approx(3 * 1605636096 / 32 * 2, rel=1e-12)
    # one data-parallel rank holds everything whole: nothing gathered (tp 8 on 8 GPUs)
    q, _ = _quantities(LLAMA70, one_node, ["M_gather"], batch_size=8, tp_size=8, zero_stage=3, fsdp_overlap=True)
    assert q["M_gather"] == 0


def test_pass_overhead_counts_for_a_smaller_microbatch_what_the_same_layout_measured():
    # docs/modern_runs.md's pair: GPT-3 175B FP8 on H100, tp 4, pp 8, v 6, 64 microbatches a pipeline, measured at
    # microbatches of 1 sample (DGX Cloud, 128 GPUs, 728.05 tokens/s per GPU) and of 2 (NeMo 2.x, 512 GPUs, 866.0):
    # 1.19x. The model's ratio (at one efficiency, 0.9) with the fixed cost of every pass is nearer the measured
    # one than without it.
    from derivations import modern as M
    a, b = M.run("dgxc-2502-gpt3-175b-h100-fp8-128"), M.run("nemo-2x-gpt3-175b-h100-fp8-512")
    measured = b["measured"]["tokens_per_sec_per_gpu"] / a["measured"]["tokens_per_sec_per_gpu"]
    assert measured == approx(866.0 / 728.05, rel=1e-12)

    def ratio(without=()):
        t = [M._throughput_function(r["id"], without)(0.9) for r in (a, b)]
        return t[1] / t[0]
    assert abs(math.log(ratio() / measured)) < abs(math.log(ratio(("pass_overhead",)) / measured))
    # without it the model sees the same work twice over: 1.009; with it 1.196 (measured 1.189)
    assert ratio(("pass_overhead",)) == approx(1.009, abs=1e-3) and ratio() == approx(1.196, abs=1e-3)


# ------------------------------------------------------------------------------------------------
# attention_efficiency and ep_overlap through the other entry points: the same checks as solve()'s
# ------------------------------------------------------------------------------------------------
def test_search_checks_the_fixed_keywords_as_solve_does():
    from mlsysim_sym import search
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # a value every split breaks: solve()'s own message, not "no configuration fits in accelerator memory"
        with pytest.raises(ValueError, match=r"^attention_efficiency must be in \[1e-09, 1\.0\], got 1\.5$"):
            search(LLAMA8, H64, 256, fidelity="extended", attention_efficiency=1.5, top_k=1)
        with pytest.raises(ValueError, match=r"^efficiency must be in \[1e-09, 1\.0\], got 2$"):
            search(LLAMA8, H64, 256, fidelity="extended", efficiency=2, top_k=1)
        with pytest.raises(TypeError, match=r"^attention_efficiency must be a real number, got str$"):
            search(LLAMA8, H64, 256, fidelity="extended", attention_efficiency="abc", top_k=1)
        # the extended model's switches take 0 and 1 only, in a list of choices too
        with pytest.raises(ValueError, match=r"^ep_overlap must be True or False \(or 1 or 0\), got 0\.5$"):
            search(MIXTRAL, H64, 256, fidelity="extended", ep_overlap=(0, 0.5, 1), top_k=1)
        # a valid value is searched: the attention share moves the ranked MFU (Llama 3.1 8B, s 2048)
        lo = search(LLAMA8, H64, 256, fidelity="extended", attention_efficiency=0.2, top_k=1).candidates[0]
        hi = search(LLAMA8, H64, 256, fidelity="extended", attention_efficiency=0.8, top_k=1).candidates[0]
        assert lo.result.mfu < hi.result.mfu


def test_sweep_refuses_a_switch_value_other_than_0_and_1():
    from mlsysim_sym import sweep
    with pytest.raises(ValueError, match=r"^ep_overlap must be True or False \(or 1 or 0\), got 2$"):
        sweep(MIXTRAL, H64, fidelity="extended", batch_size=256, ep_size=8, ep_overlap=[0, 2])
    with pytest.raises(ValueError, match=r"^fsdp_overlap must be True or False \(or 1 or 0\), got 0\.5$"):
        sweep(LLAMA8, H64, fidelity="extended", batch_size=256, zero_stage=3, fsdp_overlap=[0.5, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = sweep(MIXTRAL, H64, fidelity="extended", batch_size=256, ep_size=8, ep_overlap=[False, True])
    assert len(r["mfu"]) == 2 and r["mfu"][1] >= r["mfu"][0]


def test_an_extended_keyword_asked_of_mlsysims_model_says_so():
    from mlsysim_sym import required, uncertainty
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="attention_efficiency'\\]: an argument of the extended model: pass "
                                             "fidelity='extended'"):
            uncertainty(LLAMA8, H64, {"attention_efficiency": 0.1}, batch_size=256)
        with pytest.raises(ValueError, match="does not enter the transformer model; it is an argument of the "
                                             "extended model: pass fidelity='extended'"):
            required("mfu", 0.3, "attention_efficiency", LLAMA8, H64, batch_size=256)


def test_the_command_line_gives_the_advice_in_its_own_words():
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-m", "mlsysim_sym", "solve", "--attention-efficiency", "0.2"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == ("mlsysim-sym: error: --attention-efficiency: attention_efficiency=0.2 is an argument of the "
                        "extended model (mlsysim 0.3.0 has no attention kernel efficiency); add --fidelity extended\n")
    # asked through --sigma, the line names --sigma (the option the user typed), not --attention-efficiency
    p = subprocess.run([sys.executable, "-m", "mlsysim_sym", "uncertainty", "--sigma", "attention_efficiency=0.1"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == ("mlsysim-sym: error: --sigma: attention-efficiency: an argument of the extended model: "
                        "add --fidelity extended\n")


def test_the_command_line_sweeps_the_extended_models_own_outputs():
    import subprocess
    import sys
    # Mixtral-8x7B card, ep 8 on 1,024 H100, batch 256, one microbatch: nothing pairs with its all-to-all, so the
    # switch leaves all of it exposed, the same 8.799 ms either way
    p = subprocess.run([sys.executable, "-m", "mlsysim_sym", "sweep", "--model", "modern/Mixtral-8x7B", "--fleet",
                        "modern/H100-SXM-1024", "--batch-size", "256", "--ep", "8", "--fidelity", "extended",
                        "--ep-overlap", "both", "--output", "ep_exposed_latency"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    rows = [line.split() for line in p.stdout.splitlines() if line.strip().startswith(("no ", "yes "))]
    assert [(r[0], r[1], r[2]) for r in rows] == [("no", "8.799", "ms"), ("yes", "8.799", "ms")]


def test_the_configuration_line_says_which_keywords_move_nothing_here():
    from mlsysim_sym import DistributedModel
    from mlsysim_sym.sweeps import sweep
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # mlsysim's Llama3_70B has no architecture card: no attention FLOPs priced apart, so the attention
        # efficiency multiplies a zero term; and no experts, so the EP overlap has no all-to-all to hide
        r = DistributedModel(fidelity="extended").solve("Llama3_70B", "Research_256", batch_size=256,
                                                        attention_efficiency=0.3, ep_overlap=True)
        assert r.configuration.endswith("extended model (no effect here: attention efficiency 0.3, EP overlap)")
        # the 8B card prices its attention: the efficiency moves the step, the overlap still does not
        r = DistributedModel(fidelity="extended").solve("modern/Llama-3.1-8B", "Research_256", batch_size=256,
                                                        cp_size=2, attention_efficiency=0.3, ep_overlap=True)
        assert r.configuration.endswith("extended model (cp 2, attention efficiency 0.3; no effect here: EP overlap)")
        # a sweep's varying arguments: no claim is made
        s = sweep("Llama3_70B", "Research_256", fidelity="extended", batch_size=256, attention_efficiency=[0.3, 0.5])
        assert "no effect" not in s.configuration
        # nor where the question moves the configuration: SP does nothing at tp 1, but the search tries tp > 1
        from mlsysim_sym import search
        found = search("Llama3_70B", "Research_256", 256, fidelity="extended", sequence_parallel=True, top_k=1)
        assert "extended model (SP)" in found.configuration
        # the card's own KV width is the default: 1 on the 8B card (0.25 of its own) is said and moves the step
        kw = dict(batch_size=256, tp_size=8, cp_size=2)
        one = DistributedModel(fidelity="extended").solve(LLAMA8, "Research_256", kv_fraction=1, **kw)
        own = DistributedModel(fidelity="extended").solve(LLAMA8, "Research_256", **kw)
        assert one.configuration.endswith("extended model (cp 2, KV fraction 1)")
        assert own.configuration.endswith("extended model (cp 2)")
        assert one.step_latency_total > own.step_latency_total


# ------------------------------------------------------------------------------------------------
# moe_permutation: Megatron-Core's all-to-all dispatcher (permute, sort_chunks_by_idxs, unpermute)
# ------------------------------------------------------------------------------------------------
def test_moe_permutation_prices_the_all_to_all_dispatchers_kernels_and_fused_dispatch_removes_them():
    # Mixtral-8x7B card on 64 H100, tp 2, pp 2, ep 8, batch 64, s 4096, m 8: dp 16, lb 4, 16 layers a stage.
    # A rank routes k_e = 2 copies of its 1 / N_TP of the replica's tokens: 4 x 4096 x 4096 x 2 B x 2 / 2 =
    # 134,217,728 B; the permutation moves b_perm = 4 B per routed byte around each of the n_A2A = 4 all-to-alls of
    # each of the 16 layers, at 3.35 TB/s: 4 x 4 x 16 x 134,217,728 / 3.35e12 = 10.2566 ms, added to T_node
    kw = dict(batch_size=64, ep_size=8, tp_size=2, pp_size=2, microbatch_count=8, seq_len=4096, precision="bf16")
    assert PARAMS["b_perm"].value == 4 and PARAMS["n_a2a"].value == 4
    q, v = _quantities(MIXTRAL, H64, ["T_perm", "T_node"], **kw)
    assert v[sym.BW_hbm] == 3.35e12 and v[sym.k_e] == 2
    assert q["T_perm"] == approx(0.010256638319, rel=1e-10)
    fused, _ = _quantities(MIXTRAL, H64, ["T_perm", "T_node"], fused_dispatch=True, **kw)
    assert fused["T_perm"] == 0 and fused["T_node"] == approx(q["T_node"] - q["T_perm"], rel=1e-14)
    r, f = _solve(MIXTRAL, H64, **kw), _solve(MIXTRAL, H64, fused_dispatch=True, **kw)
    assert r.extended["permutation_latency"] == approx(q["T_perm"], rel=1e-14)
    assert r.step_latency_total > f.step_latency_total
    # without the mechanism, as mlsysim prices it (no permutation): the fused dispatcher's step
    w = _solve(MIXTRAL, H64, without=("moe_permutation",), **kw)
    assert w.step_latency_total == approx(f.step_latency_total, rel=1e-14)
    # full recomputation permutes the recomputed forward again: x 3/2
    rc, _ = _quantities(MIXTRAL, H64, ["T_perm"], activation_recomputation=True, **kw)
    assert rc["T_perm"] == approx(1.5 * q["T_perm"], rel=1e-14)
    # a dense card routes nothing
    d, _ = _quantities(LLAMA70, H64, ["T_perm"], batch_size=64, tp_size=8)
    assert d["T_perm"] == 0


def test_stages_without_a_layer_are_priced_with_a_warning():
    # Qwen3-30B-A3B's 48 layers over 96 pipeline stages: mlsysim prices it; the extended model says no framework
    # runs it (as it says of microbatches of less than one sample)
    from mlsysim_sym import DistributedModel
    with pytest.warns(UserWarning, match=r"^pp_size \(96\) x v_stages \(1\) > the 48 layers: pipeline stages "
                                         r"without a layer, which no framework runs"):
        DistributedModel(fidelity="extended").solve("modern/Qwen3-30B-A3B", "modern/GB200-NVL72-1152",
                                                    batch_size=1152, pp_size=96, microbatch_count=12)


def test_a_fractional_parallel_degree_is_named_in_the_extended_model():
    # mlsysim multiplies tp 2.5 into its split check ("Infeasible parallelism: TP(2.5) * PP(1) ... must divide");
    # the extended model says what is wrong with it first (2.0 is a whole number and prices as 2)
    from mlsysim_sym import DistributedModel
    ext = DistributedModel(fidelity="extended")
    with pytest.raises(ValueError, match=r"^tp_size must be a whole number, got 2.5$"):
        ext.solve("Llama3_70B", "Research_256", batch_size=256, tp_size=2.5)
    assert ext.solve("Llama3_70B", "Research_256", batch_size=256, tp_size=2.0).step_latency_total == \
        ext.solve("Llama3_70B", "Research_256", batch_size=256, tp_size=2).step_latency_total


def test_a_model_without_routed_expert_weights_pays_no_expert_tensor_parallel_gathers():
    # mlsysim's Llama3_70B record (no card: not refused) at etp 2 splits no expert matrices, so it exchanges
    # nothing: the step is etp 1's (the gathers cost 24 ms a step before they were bound to the experts' weights)
    from mlsysim_sym import DistributedModel
    ext = DistributedModel(fidelity="extended")
    one, two = (ext.solve("Llama3_70B", "Research_256", batch_size=256, tp_size=8, etp_size=e) for e in (1, 2))
    assert two.step_latency_total == one.step_latency_total and two.ep_communication_latency == 0


@pytest.mark.parametrize("m", [1, 8])
def test_fsdp_under_a_pipeline_gathers_its_weights_once_a_step(m):
    # a stage holding its weights gathered (fsdp_pipeline) gathers them once a step and reduce-scatters its gradients
    # once: ZeRO-1's all-reduce time, not ZeRO-3's half of it plus two AllGathers in each of the GA micro-steps
    # (a search ranked ZeRO-3 below ZeRO-1 at the same memory, 0.158 s of DP communication against 0.105 s)
    kw = dict(batch_size=64, tp_size=8, pp_size=2, microbatch_count=m, gradient_accumulation_steps=2,
              precision="bf16")
    names = ["T_dp", "T_dp_allreduce", "T_dp_gather"]
    q3, _ = _quantities(LLAMA70, H64, names, zero_stage=3, **kw)
    q1, _ = _quantities(LLAMA70, H64, names, zero_stage=1, **kw)
    off, _ = _quantities(LLAMA70, H64, names, zero_stage=3, without=("fsdp_pipeline",), **kw)
    assert q3["T_dp"] == q1["T_dp"] > 0
    # without the mechanism: the ReduceScatter (half the all-reduce) and the gathers of each of the m microbatches
    # of the 2 accumulation steps (a stage reshards after each), once a step (ga_once)
    assert off["T_dp"] == approx(off["T_dp_allreduce"] / 2 + 2 * m * off["T_dp_gather"], rel=1e-12)
    assert off["T_dp"] > q3["T_dp"]


def test_a_parallel_degree_that_is_no_number_is_left_to_the_split_check():
    # NaN is not "fractional": the split check names it, as mlsysim's does (the whole-number check raised "cannot
    # convert float NaN to integer")
    from mlsysim_sym import DistributedModel
    with pytest.raises(ValueError, match=r"^Infeasible parallelism: TP\(nan\) \* PP\(1\)"):
        DistributedModel(fidelity="extended").solve("Llama3_70B", "Research_256", batch_size=256,
                                                    tp_size=float("nan"))


@pytest.mark.parametrize("pp,m,z,weights,grads", [(2, 8, 3, False, False), (2, 1, 3, False, True),
                                                   (2, 8, 2, False, False), (1, 8, 3, True, True),
                                                   (2, 8, 1, False, False)])
def test_fsdp_under_a_pipeline_holds_its_stage_gathered(pp, m, z, weights, grads):
    # torchtitan's FSDP2 with pipeline parallelism keeps each stage's weights gathered (reshard_after_forward off
    # under PP) and, with several microbatches, its gradients unreduced until the last one: Llama 3.1 70B, tp 8,
    # pp 2 on 64 H100 (dp 4) holds P / (8 x 2) parameters of weights (2 B each) unsharded under ZeRO-3, and of
    # gradients too with 8 microbatches (ZeRO-2 and 3); one microbatch reduces its gradients as it goes (sharded
    # under ZeRO-2 and 3); no pipeline, or ZeRO-1, is priced as before, and so is without=
    kw = dict(batch_size=64, tp_size=8, pp_size=pp, microbatch_count=m, zero_stage=z, precision="bf16")
    names = ["M_weights", "M_grads", "M_optimizer"]
    q, v = _quantities(LLAMA70, H64, names, **kw)
    off, _ = _quantities(LLAMA70, H64, names, without=("fsdp_pipeline",), **kw)
    stage, dp = v[sym.P] / (8 * pp), 64 // (8 * pp)
    assert q["M_weights"] == approx(2 * stage / (dp ** (z >= 3) if weights else 1), rel=1e-12)
    assert q["M_grads"] == approx(2 * stage / (dp ** (z >= 2) if grads else 1), rel=1e-12)
    assert q["M_optimizer"] == approx(12 * stage / dp, rel=1e-12) == off["M_optimizer"]
    assert off["M_weights"] == approx(2 * stage / dp ** (z >= 3), rel=1e-12)
    assert off["M_grads"] == approx(2 * stage / dp ** (z >= 2), rel=1e-12)
