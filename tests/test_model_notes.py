"""The notes below a result's breakdown (mlsysim_sym.model_notes): each where its configuration calls for it, and
none on the configurations it does not describe; a switch given as text is refused, naming it."""
import warnings

import pytest

from mlsysim_sym import DistributedModel, search, sweep
from mlsysim_sym.model_notes import NOTES

EXT = DistributedModel(fidelity="extended")
H100, GB200 = "modern/H100-SXM-1024", "modern/GB200-NVL72-1152"


def _notes(model, fleet, dm=EXT, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # memory spills, batches below the replicas
        r = dm.solve(model, fleet, **kw)
    return " ".join(" ".join(r.notes()).split()), r


def test_a_record_without_expert_parameters_is_said_to_split_none_of_its_weights():
    # mlsysim's Mixtral_8x7B record gives no routed-expert parameters: the MoE layout splits no weight over EP
    # (weights 93.4 GB at ep 1 and ep 8 alike: 46.7e9 parameters x 2 bytes), while the card splits its experts
    text, r = _notes("Mixtral_8x7B", H100, batch_size=1024, ep_size=8)
    one = EXT.solve("Mixtral_8x7B", H100, batch_size=1024)
    assert "ep_size 8: Mixtral-8x7B gives no routed-expert parameters (expert_parameters)" in text
    assert r.memory["M_weights"] == one.memory["M_weights"] == pytest.approx(2 * 46.7e9, rel=1e-2)
    card, c = _notes("modern/Mixtral-8x7B", H100, batch_size=1024, ep_size=8)
    assert "routed-expert" not in card and c.memory["M_weights"] < r.memory["M_weights"] / 4


def test_context_parallelism_on_a_record_without_key_value_heads_says_kv_fraction_is_one():
    # mlsysim's Llama3_70B record lists 64 heads and 8 key/value heads: read (8 x 128 / 8192 = 0.125 of the hidden
    # size), as given by hand or by the card: no note, the same exchange
    from dataclasses import replace

    from mlsysim_sym import catalog
    kw = dict(batch_size=256, tp_size=8, cp_size=2)
    listed, r = _notes("Llama3_70B", "Research_256", **kw)
    given, g = _notes("Llama3_70B", "Research_256", kv_fraction=0.125, **kw)
    card, _ = _notes("modern/Llama-3.1-70B", "Research_256", **kw)
    assert "kv_fraction" not in listed + given + card
    assert r.extended["cp_communication_latency"] == g.extended["cp_communication_latency"]
    # the same record without its heads exchanges every head's keys and values (8 times as many bytes), and says so
    bare = replace(catalog.workload("Llama3_70B"), attention_heads=None, kv_heads=None, kv_fraction=None)
    text, w = _notes(bare, "Research_256", **kw)
    assert "cp_size 2: Llama-3.1-70B lists no attention heads, so kv_fraction is 1" in text
    assert w.extended["cp_communication_latency"] > 4 * r.extended["cp_communication_latency"]


@pytest.mark.parametrize("model,kw,group", [
    # 72 GPUs an NVL72 rack: 16 does not divide 72 (a group of ranks 64-79 straddles two racks), 8 and 9 do
    ("modern/Llama-3.1-405B", dict(tp_size=16, pp_size=8, microbatch_count=8), "the TP group of 16"),
    ("modern/Llama-3.1-405B", dict(tp_size=4, cp_size=4, pp_size=8, microbatch_count=8), "the TP x CP group of 16"),
    ("modern/DeepSeek-V3", dict(ep_size=16, pp_size=4, microbatch_count=16), "the expert group (EP x ETP) of 16"),
    ("modern/DeepSeek-V3", dict(ep_size=8, pp_size=4, microbatch_count=16), None),
    ("modern/Llama-3.1-405B", dict(tp_size=8, pp_size=8, microbatch_count=8), None),
])
def test_a_group_that_straddles_two_nvlink_domains_is_said_to_run_on_the_fabric(model, kw, group):
    text, _ = _notes(model, GB200, batch_size=4608, precision="fp8", **kw)
    if group is None:
        assert "NVLink domain" not in text
    else:
        assert f"{group} does not divide the 72 accelerators of an NVLink domain" in text


@pytest.mark.parametrize("z,m,held", [(3, 8, 1), (3, 1, 2), (2, 8, 1), (2, 1, None), (1, 8, None)])
def test_zero_under_a_pipeline_says_which_stage_its_memory_is(z, m, held):
    text, _ = _notes("modern/Llama-3.1-70B", H100, batch_size=256, tp_size=8, pp_size=4, microbatch_count=m,
                     zero_stage=z)
    if held is None:
        assert "under a pipeline" not in text
    else:
        assert f"ZeRO-{z} under a pipeline" in text and f"its memory is ZeRO-{held}'s" in text


def test_no_note_where_the_model_does_not_price_what_it_would_say():
    # TP on the fabric only with sequence_parallel's link rule (else mlsysim's: tp <= 8... 72 on NVLink); the expert
    # group only with the MoE layout's all-to-all per layer; ZeRO held under a pipeline only for transformers
    text, _ = _notes("modern/Llama-3.1-405B", GB200, dm=DistributedModel(fidelity="extended",
                                                                          without=("sequence_parallel",)),
                     batch_size=4608, precision="fp8", tp_size=16, pp_size=8, microbatch_count=8)
    assert "NVLink domain" not in text
    text, _ = _notes("modern/DeepSeek-V3", GB200, dm=DistributedModel(fidelity="extended", without=("moe_per_layer",)),
                     batch_size=4608, precision="fp8", ep_size=16, pp_size=4, microbatch_count=16)
    assert "NVLink domain" not in text
    text, _ = _notes("ResNet50", "Lab_64_A100", batch_size=64, pp_size=2, zero_stage=3)
    assert "under a pipeline" not in text


def test_mlsysims_model_notes_its_fp8_pricing_not_the_extended_models_layouts():
    text, _ = _notes("Llama3_70B", "Research_256", dm=DistributedModel(), batch_size=256, tp_size=8, pp_size=4,
                     microbatch_count=8, zero_stage=3, precision="fp8")
    assert text.startswith("note: mlsysim's model prices all of the step's compute at the fp8 peak")
    assert "ZeRO" not in text and len(NOTES) == 13


@pytest.mark.parametrize("kw,name,shown", [
    (dict(activation_recomputation="no"), "activation_recomputation", "str 'no'"),
    (dict(overlap_comm="false"), "overlap_comm", "str 'false'"),
    (dict(is_lora=b"no"), "is_lora", "bytes b'no'"),
])
def test_a_switch_given_as_text_is_refused_not_read_as_true(kw, name, shown):
    # "no" is a true value: mlsysim would switch recomputation on; every entry point refuses it, naming it
    message = rf"^{name} must be a bool \(True or False, or 1 or 0\), got {shown}$"
    with pytest.raises(TypeError, match=message):
        DistributedModel().solve("Llama3_70B", "Research_256", batch_size=256, **kw)
    with pytest.raises(TypeError, match=message):
        sweep("Llama3_70B", "Research_256", batch_size=[256, 512], **kw)
    if name != "is_lora":       # a search's own switches
        with pytest.raises(TypeError, match=message):
            search("Llama3_8B", "Lab_64_H100", 64, tp_size=[1, 8], **kw)


def test_mlsysims_model_says_where_its_expert_parallelism_has_no_experts_to_split():
    # mlsysim's model splits every weight over EP whatever the workload (Llama-3.1-70B at ep 64: its weights an
    # accelerator holds fall 64-fold beside ep 1, 2 x 70.6e9 / 64 = 2.2 GB) and says so where the workload has no
    # experts, or fewer than the ranks (Qwen3-30B-A3B's card: 128 routed experts, ep 256); a mixture of experts of
    # mlsysim's registry (Mixtral_8x7B: active parameters, no expert count) and ep within the experts: no note
    mlsysim = DistributedModel()
    text, r = _notes("Llama3_70B", "Research_256", mlsysim, batch_size=256, ep_size=64)
    assert ("ep_size 64: Llama-3.1-70B is dense (no routed experts); mlsysim's model splits every weight over expert "
            "parallelism and prices its all-to-all all the same") in text
    assert r.memory["M_weights"] == pytest.approx(2 * 70.6e9 / 64, rel=1e-2)
    assert "the extended model, fidelity=\"extended\", splits none of a dense model's weights over EP" in text
    # a workload other than a transformer is dense too (ResNet-50 at ep 2)
    assert "ep_size 2: ResNet-50 is dense" in _notes("ResNet50", "Research_256", mlsysim, batch_size=256, ep_size=2)[0]
    for ep in (256, 512):       # more ranks than experts (which the extended model refuses: they do not divide them)
        text, _ = _notes("modern/Qwen3-30B-A3B", H100, mlsysim, batch_size=1024, ep_size=ep)
        assert f"ep_size {ep}: the 128 routed experts of modern/Qwen3-30B-A3B do not split evenly over {ep} ranks" \
            in text
        with pytest.raises(ValueError, match=f"ep_size \\({ep}\\) must divide the routed experts"):
            EXT.solve("modern/Qwen3-30B-A3B", H100, batch_size=1024, ep_size=ep)
    for model, ep in (("Mixtral_8x7B", 8), ("modern/Qwen3-30B-A3B", 128)):
        assert "ep_size" not in _notes(model, H100, mlsysim, batch_size=1024, ep_size=ep)[0]
    # the extended model says its own
    assert "mlsysim's model splits" not in _notes("Llama3_70B", "Research_256", batch_size=256, ep_size=64)[0]


def test_the_extended_model_says_a_dense_record_at_ep_above_1_is_dense_not_that_it_lacks_expert_parameters():
    # Llama-3.1-70B's record at ep 2: no experts to split (it told the user to pass expert_parameters= or use a
    # card with experts); the extended model prices the all-to-all all the same, and at ep 1 none
    text, r = _notes("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4, microbatch_count=8,
                     ep_size=2, efficiency=0.4)
    assert "ep_size 2: Llama-3.1-70B is dense (no routed experts): the extended model splits none of its weights" \
        in text and "expert_parameters" not in text
    one, r1 = _notes("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4, microbatch_count=8,
                     efficiency=0.4)
    assert r.ep_communication_latency > 0 == r1.ep_communication_latency and "dense" not in one
    # Mixtral's record is a mixture of experts whose expert weights it does not give: that note stays
    text, _ = _notes("Mixtral_8x7B", H100, batch_size=1024, ep_size=8)
    assert "gives no routed-expert parameters" in text and "is dense" not in text


def test_a_field_set_on_a_cards_shape_or_a_records_heads_is_said_to_set_that_input_alone():
    # a card derives its parameters and FLOPs from its shape: layers=40 on the 80-layer card halves no weight (the
    # same 70.6e9 parameters over tp 8 x pp 4), and says so; the card's own 80 says nothing
    kw = dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
    mlsysim = DistributedModel()
    text, r = _notes("modern/Llama-3.1-70B", "Research_256", dm=mlsysim, layers=40, **kw)
    same, s = _notes("modern/Llama-3.1-70B", "Research_256", dm=mlsysim, layers=80, **kw)
    assert "layers 40: the parameters and FLOPs of modern/Llama-3.1-70B's architecture card stay those" in text
    assert "architecture card" not in same and r.memory["M_weights"] == s.memory["M_weights"]
    # a record's key/value width comes from its listed heads (8 of 64: 0.125): kv_heads=4 under CP moves the head
    # checks, not the width (the same exchange), and says so; given kv_fraction, or without CP, nothing to say
    kw = dict(batch_size=256, tp_size=8, cp_size=2)
    text, r = _notes("Llama3_70B", "Research_256", kv_heads=4, **kw)
    _, plain = _notes("Llama3_70B", "Research_256", **kw)
    assert ("cp_size 2, kv_heads 4: the key/value width priced stays kv_fraction 0.125, which setting kv_heads does "
            "not change; kv_fraction sets it") in text
    assert r.extended["cp_communication_latency"] == plain.extended["cp_communication_latency"]
    given, g = _notes("Llama3_70B", "Research_256", kv_heads=4, kv_fraction=0.0625, **kw)
    one, _ = _notes("Llama3_70B", "Research_256", kv_heads=4, batch_size=256, tp_size=8)
    assert "key/value width" not in given + one
    assert g.extended["cp_communication_latency"] < r.extended["cp_communication_latency"]
    # a record that lists no heads, given heads by a field: the same (not "lists no attention heads": the advice to
    # give heads would change nothing here)
    from dataclasses import replace

    from mlsysim_sym import catalog
    bare = replace(catalog.workload("Llama3_70B"), attention_heads=None, kv_heads=None, kv_fraction=None)
    text, _ = _notes(bare, "Research_256", attention_heads=64, kv_heads=8, **kw)
    assert "attention_heads 64: the key/value width priced stays kv_fraction 1.0" in text
    assert "lists no attention heads" not in text
    # heads a model has not (8 key/value heads for 64 query heads is a model; 96 for 64 is none): refused by name
    with pytest.raises(ValueError, match=r"kv_heads \(96\) must divide the attention heads of each layer \(64\)"):
        EXT.solve("GPT3", "Research_256", batch_size=256, attention_heads=64)
