"""Architecture cards: parameter counts against the published ones, FLOPs per token against each convention's
formula, the card's checks, and what the models do with a card (docs/architecture.md)."""
import math

import pytest
import sympy as sp

from mlsysim_sym import DistributedModel
from mlsysim_sym.architecture import Architecture
from mlsysim_sym.modern import architecture as card
from mlsysim_sym.shape import CONVENTIONS, ShapeKind, build_shape

# (card, published total, published active, where). The published figures are the publishers' own, as they print
# them; the tolerance is 0.5 %. Two active figures are printed with two digits, so the test takes the interval the
# digits allow: DeepSeek's "37B" (rounded: [36.5, 37.5) B; its README_WEIGHTS, older version, gives 36.6B without
# the input embedding, which the count without it matches within 0.1 %) and Qwen's "3.3B" (truncated, as its
# "29.9B" non-embedding count is 29.91B: [3.3, 3.4) B). Publishers disagree on whether the input embedding (a lookup)
# is active: Mistral AI and Qwen count it, DeepSeek does not (its README_WEIGHTS: "including 0.9B for the output
# head"); the rows say which.
PUBLISHED = [
    ("Llama-3.1-8B", 8.03e9, None, "Hugging Face model page of meta-llama/Llama-3.1-8B: 8.03B params"),
    ("Llama-3.1-70B", 70.6e9, None, "Hugging Face model page of meta-llama/Llama-3.1-70B: 70.6B params"),
    ("Llama-3.1-405B", 406e9, None, "Hugging Face model page of meta-llama/Llama-3.1-405B: 406B params"),
    ("Mixtral-8x7B", 46.7e9, 12.9e9, "Mistral AI, 'Mixtral of experts' (2023-12-11): 46.7B total, 12.9B per token"),
    ("Mixtral-8x22B", 141e9, 39e9, "Mistral AI, 'Cheaper, Better, Faster, Stronger' (2024-04-17): 141B, 39B active"),
    ("DeepSeek-V3", 671e9, (36.5e9, 37.5e9, "no input embedding"), "DeepSeek-AI (2024), DeepSeek-V3 Technical Report, abstract: 671B "
                                             "total, 37B activated per token"),
    ("Qwen3-30B-A3B", 30.5e9, (3.3e9, 3.4e9), "Qwen team, Qwen3-30B-A3B model card: 30.5B total, 3.3B activated, "
                                              "29.9B non-embedding"),
    ("Qwen3-235B-A22B", 235e9, (22e9, 23e9), "Qwen team, Qwen3-235B-A22B model card: 235B total, 22B activated"),
    ("GPT-3-175B", 175e9, None, "Brown et al. (2020), Language Models are Few-Shot Learners, Table 2.1: 175.0B"),
]


@pytest.mark.parametrize("name,total,active,source", PUBLISHED, ids=[r[0] for r in PUBLISHED])
def test_parameter_counts_equal_the_published_ones(name, total, active, source):
    c = card(name)
    assert c.parameters == pytest.approx(total, rel=5e-3), source
    if isinstance(active, tuple):
        counted = c.active_parameters - (c.input_embedding if "no input embedding" in active else 0)
        assert active[0] <= counted < active[1], source
    elif active is not None:
        assert c.active_parameters == pytest.approx(active, rel=5e-3), source


def test_the_publishers_other_figures():
    # DeepSeek's README_WEIGHTS (older version): 36.6B activated "including 0.9B for the output head"
    ds = card("DeepSeek-V3")
    assert ds.active_parameters - ds.input_embedding == pytest.approx(36.6e9, rel=1e-3)
    # Qwen: 29.9B non-embedding (both embedding matrices left out)
    qw = card("Qwen3-30B-A3B")
    assert qw.parameters - 2 * qw.input_embedding == pytest.approx(29.9e9, rel=5e-3)


def test_the_counts_are_exact_where_the_checkpoints_give_them():
    # the safetensors headers of the checkpoints, summed (see docs/architecture.md); no biases in these models
    assert card("Llama-3.1-8B").parameters == 8_030_261_248
    assert card("Llama-3.1-70B").parameters == 70_553_706_496
    assert card("Llama-3.1-405B").parameters == 405_853_388_800
    assert card("Mixtral-8x7B").parameters == 46_702_792_704
    # Mixtral's 12.9B per token counts the whole embedding: 2 experts of 8 in 32 layers
    assert card("Mixtral-8x7B").active_parameters == 12_879_925_248


def test_a_layer_of_llama_8b_worked_by_hand():
    # attention: q and o 4096 x 4096 each, k and v 4096 x 1024 each: 2*16.78M + 2*4.19M = 41,943,040
    # MLP: 3 x 4096 x 14336 = 176,160,768; norms 2 x 4096; one layer 218,112,000
    m = build_shape(ShapeKind())
    c = card("Llama-3.1-8B")
    assert c.evaluate(m["P_attn"]) == 41_943_040
    assert c.evaluate(m["P_mlp"]) == 176_160_768
    assert c.evaluate(m["P_dense_layer"]) == 218_112_000
    # 32 layers + embeddings 2 x 128256 x 4096 + final norm 4096 = 6,979,584,000 + 1,050,673,152 + 4096
    assert c.parameters == 32 * 218_112_000 + 2 * 128_256 * 4096 + 4096


def _megatron_by_hand(c: Architecture, S: int) -> float:
    """Megatron-LM's num_floating_point_operations for one sequence of S tokens, per token, written out here
    from its definition (megatron/training/training.py): 3 x 2 x (projections + MLP/experts + logits) per token,
    plus the causal attention core 3 x 2 x (a (d_qk + d_v) / 2) x S per layer."""
    h, L, a = c.hidden, c.layers, c.heads
    d = c.head_dim or h // a
    g = 1.5 if c.gated else 1.0                       # Megatron's gated_linear_multiplier, over 2 matrices
    n_moe = c.moe_layers
    dense_mlp = 2 * g * c.ffn * (L - n_moe)
    e = c.expert_ffn if c.expert_ffn is not None else c.ffn
    moe_mlp = 2 * g * e * (c.top_k + c.shared_experts) * n_moe
    if c.attention == "mla":
        dv = c.v_head_dim or d
        qh = a * (d + c.rope_dim)
        q_term = h * qh if c.q_rank == 0 else c.q_rank * (h + qh + 1)
        proj = q_term + c.kv_rank * (h + a * (d + dv) + 1) + h * c.rope_dim + a * dv * h
        core = a * (d + c.rope_dim) / 2 + a * dv / 2
    else:
        kv = c.kv_heads or a
        proj = h * (a * d + 2 * kv * d) + a * d * h
        core = a * d
    return 6 * (h * (dense_mlp + moe_mlp) + L * proj + L * core * S + h * c.vocab)


@pytest.mark.parametrize("name", ["Llama-3.1-8B", "Llama-3.1-405B", "Mixtral-8x22B", "DeepSeek-V3",
                                  "Qwen3-30B-A3B", "Qwen3-235B-A22B", "GPT-3-175B", "Mistral-NeMo-12B"])
@pytest.mark.parametrize("S", [2048, 8192])
def test_the_megatron_convention_is_megatrons_formula(name, S):
    c = card(name)
    assert float(c.flops_per_token(S, "megatron")) == pytest.approx(_megatron_by_hand(c, S), rel=1e-12)


def test_the_other_conventions_are_their_formulas():
    c = card("Llama-3.1-70B")
    S = 8192
    assert c.flops_per_token(S, "6N") == 6 * c.parameters
    # PaLM, Appendix B: 6N + 12 L H Q T, H heads of Q = 128, T the sequence
    assert c.flops_per_token(S, "palm") == 6 * c.parameters + 12 * 80 * 64 * 128 * S
    # this package's count of a dense GQA model without a window is Megatron's (no router, the same core)
    assert c.flops_per_token(S, "shape") == c.flops_per_token(S, "megatron")
    # with full recomputation the hardware executes one more forward: 4/3
    assert c.flops_per_token(S, "shape", recompute=True) == sp.Rational(4, 3) * c.flops_per_token(S, "shape")
    # a mixture of experts: the router's product (2 E d per MoE layer forward) is the difference
    m = card("Mixtral-8x7B")
    router = 3 * 2 * 8 * 4096 * 32
    assert m.flops_per_token(4096, "shape") - m.flops_per_token(4096, "megatron") == router


def test_causal_and_windowed_attention_count_the_keys_attended():
    base = Architecture("toy", layers=2, hidden=64, heads=4, vocab=100, ffn=128)
    S = 1024
    att = 2 * 4 * (16 + 16)                           # 2 N_heads (d_qk + d_v) per key, one layer
    full = base.flops_per_token(S, "shape") / 3
    noncausal = base.replace(causal=False).flops_per_token(S, "shape") / 3
    assert noncausal - full == 2 * att * S / 2        # S keys instead of S/2, two layers
    # a window of 128 on one layer: 128 - 128^2/(2 S) keys there instead of S/2
    windowed = base.replace(window=128, window_layers=1).flops_per_token(S, "shape") / 3
    assert full - windowed == att * (S / 2 - (128 - sp.Rational(128 ** 2, 2 * S)))
    # a window as long as the sequence changes nothing
    assert base.replace(window=S).flops_per_token(S, "shape") == base.flops_per_token(S, "shape")


@pytest.mark.parametrize("changes,words", [
    (dict(kv_heads=5), "kv_heads must divide heads (32), got 5"),
    (dict(kv_heads=0), "kv_heads must be a whole number in [1, 32], got 0"),
    (dict(layers=0), "layers must be a whole number >= 1, got 0"),
    (dict(hidden=4096.5), "hidden must be a whole number >= 1, got 4096.5"),
    (dict(gated="yes"), "gated must be true or false, got 'yes'"),
    (dict(experts=8, top_k=9), "top_k must be a whole number in [1, 8], got 9"),
    (dict(attention="linear"), "attention must be 'gqa'"),
    (dict(ffn=0), "ffn must be a whole number >= 1 for the dense layers, got 0"),
    (dict(top_k=2), "top_k applies to a mixture of experts; give experts (>= 1) too, or leave top_k out"),
    (dict(q_rank=1536), "q_rank applies to latent attention; give attention: mla too, or leave q_rank out"),
    (dict(shared_experts=-1), "shared_experts must be a whole number >= 0, got -1"),
])
def test_a_bad_card_names_the_field_and_the_allowed_values(changes, words):
    with pytest.raises(ValueError) as e:
        card("Llama-3.1-8B").replace(**changes)
    assert str(e.value).startswith("architecture 'modern/Llama-3.1-8B': " + words)


@pytest.mark.parametrize("name", ["Mistral-NeMo-12B", "Mixtral-8x7B"])
def test_mlsysims_model_prices_a_card_as_mlsysim_prices_its_record(name):
    pytest.importorskip("mlsysim")
    from mlsysim.core.units import Q_
    from mlsysim.models.types import SparseTransformerWorkload, TransformerWorkload
    from tests.mlsysim_oracle import compare, flatten, mlsysim_solve

    c = card(name)
    w = c.workload()
    common = dict(name=c.name, parameters=Q_(w.parameters, "param"), layers=w.layers, hidden_dim=w.hidden_dim,
                  heads=c.heads, kv_heads=c.kv_heads, inference_flops=Q_(w.inference_flops, "flop"))
    if c.experts:
        theirs = SparseTransformerWorkload(architecture="MoE", active_parameters=Q_(w.active_parameters, "param"),
                                           experts=c.experts, active_experts_per_token=c.top_k, **common)
    else:
        theirs = TransformerWorkload(architecture="Transformer", **common)
    kw = dict(batch_size=256, tp_size=4, pp_size=2, microbatch_count=8, seq_len=4096, precision="bf16",
              ep_size=2 if c.experts else 1)
    ours = flatten(DistributedModel().solve(c, "Research_256", **kw))
    assert compare(ours, mlsysim_solve(theirs, "Research_256", **kw)) == []
    assert ours["mfu"] > 0.05


def test_the_extended_model_adds_the_cards_attention_and_reads_its_kv_width():
    c = card("Llama-3.1-70B")
    kw = dict(batch_size=512, tp_size=8, pp_size=4, microbatch_count=16, seq_len=8192, precision="bf16",
              cp_size=2)
    model = DistributedModel(fidelity="extended")
    ext = model.solve(c, "Research_256", **kw)
    # the forward FLOPs per token: the weights' products (2 x the parameters less the input embedding and the
    # norms: 139.0 GFLOP) and attention, 4 x 64 heads x 128 per key per layer over 80 layers and 4096 keys
    # (causal, S = 8192): 10.7 GFLOP
    f_tok = ext.extended["forward_flops_per_token"]
    assert f_tok == pytest.approx(2 * (c.active_parameters - c.input_embedding - (2 * 80 + 1) * 8192)
                                  + 4 * 64 * 128 * 80 * 4096, rel=1e-12)
    # the card's attention moves the compute time by that share (at the GEMMs' efficiency, and with the stages'
    # work even: attention_kernels and pipeline_balance, tested in test_frameworks.py, priced as mlsysim does)
    same_rate = ("attention_kernels", "pipeline_balance")
    plain = DistributedModel(fidelity="extended", without=("attention_flops",) + same_rate).solve(
        c, "Research_256", **kw)
    even = DistributedModel(fidelity="extended", without=same_rate).solve(c, "Research_256", **kw)
    assert even.node_profile.latency_compute / plain.node_profile.latency_compute == pytest.approx(
        f_tok / c.workload().inference_flops, rel=1e-9)
    # the CP exchange carries 8 KV heads of 128, 1/8 of d: the card's width unless kv_fraction= is given
    assert math.isclose(c.kv_fraction, 0.125)
    same = model.solve(c, "Research_256", kv_fraction=0.125, **kw)
    wider = model.solve(c, "Research_256", kv_fraction=1.0, **kw)
    assert ext.extended["cp_communication_latency"] == same.extended["cp_communication_latency"]
    assert wider.extended["cp_communication_latency"] > 4 * ext.extended["cp_communication_latency"]


def test_the_extended_model_keeps_the_cards_activations():
    # Korthikanti's 34 values per token and hidden unit, term by term, are a multi-head layer with a 4d GeLU MLP:
    # GPT-3's card keeps exactly 34
    assert card("GPT-3-175B").workload().activation_values == 34
    # Llama 3.1 70B (d = 8192): norms 4d; attention 2d input + 2d Q + 4 x 8 x 128 K and V + 2d output + d mask
    # = 7.5d; SwiGLU MLP 2d input + 6 x 28672 + d mask = 24d: 35.5
    c = card("Llama-3.1-70B")
    assert c.workload().activation_values == 35.5
    kw = dict(batch_size=512, tp_size=8, pp_size=4, microbatch_count=16, seq_len=8192, precision="bf16")
    on = DistributedModel(fidelity="extended")
    off = DistributedModel(fidelity="extended", without=("card_activations",))
    a, b = on.solve(c, "Research_256", **kw).memory, off.solve(c, "Research_256", **kw).memory
    # without sequence parallelism, tp 8: (10 + 25.5 / 8) / (10 + 24 / 8)
    assert a["M_activations"] / b["M_activations"] == pytest.approx((10 + 25.5 / 8) / (10 + 24 / 8), rel=1e-12)
    sp_on = on.solve(c, "Research_256", sequence_parallel=True, **kw).memory["M_activations"]
    sp_off = off.solve(c, "Research_256", sequence_parallel=True, **kw).memory["M_activations"]
    assert sp_on / sp_off == pytest.approx(35.5 / 34, rel=1e-12)
    # mlsysim's model keeps its 34 for the card as for any record
    twin = DistributedModel().solve(c, "Research_256", **kw).memory["M_activations"]
    assert twin == pytest.approx(DistributedModel().solve(c.workload(), "Research_256", **kw).memory["M_activations"])


def test_a_bad_sequence_and_a_card_as_the_fleet_are_refused():
    c = card("Llama-3.1-8B")
    for bad in (0, -1, 4096.5, float("nan"), True):
        with pytest.raises(ValueError, match="seq_len must be a whole number >= 1"):
            c.flops_per_token(bad)
    with pytest.raises(TypeError, match="fleet must be a fleet .* got the architecture card 'modern/Llama-3.1-8B'"):
        DistributedModel().solve(c, c)
