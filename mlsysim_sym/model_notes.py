"""What the priced numbers of one configuration do not say about the model that priced them: one sentence each,
below a result's breakdown (``DistributedResult.notes()``), in its JSON (``notes``), in a plan of the run and on
the calculator page.

Each note is one row of :data:`NOTES`: where it applies (``when``, a function of the named values of
:func:`inputs`, written with nothing but comparisons and ``and``/``or``/``not``, so that ``derivations/web.py``
translates the same function for the calculator page) and its sentence (``text``, formatted with those values).
They name an input the model reads at a value the user may not have meant (a record's ``kv_fraction`` of 1,
expert weights it cannot split) or a choice the model makes for the user (a group priced on the fabric, a ZeRO
stage held as a lower one), with what to pass instead.

Examples
--------
>>> [n.name for n in NOTES][:3]
['fp8_in_mlsysim', 'ep_on_dense', 'ep_uneven']
>>> NOTES[0].when(extended=0, transformer=1, one_byte=1)
1
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

from .arguments import Arguments
from .symbols import sym
from .types import HEAD_FIELDS


@dataclass(frozen=True)
class Note:
    """One note: its ``name``, where it applies (``when``: a function of named values of :func:`inputs`) and its
    sentence (``text``: a format string of those values)."""

    name: str
    when: Callable[..., object]
    text: str

    @property
    def reads(self) -> Tuple[str, ...]:
        """The values ``when`` reads (its parameters' names)."""
        return tuple(inspect.signature(self.when).parameters)


#: What a group that straddles two NVLink domains costs, and what keeps it on NVLink.
_ON_THE_FABRIC = ("does not divide the {apn} accelerators of an NVLink domain: some groups straddle two, and the "
                  "extended model prices these collectives on the fabric; a degree that divides it (or "
                  "accelerators_per_node set to one it divides: 64 of a GB200 NVL72's 72) keeps them on NVLink")
#: Where a ZeRO stage held under a pipeline is documented.
_HELD = "(only the optimizer state stays sharded; docs/extended.md, fsdp_pipeline)"


def _fp8_in_mlsysim(extended, transformer, one_byte):
    return not extended and transformer and one_byte


def _ep_on_dense(extended, ep, experts, moe_record):
    return not extended and ep > 1 and experts == 0 and not moe_record


def _ep_uneven(extended, ep, experts):
    return not extended and ep > 1 and experts > 0 and experts % ep != 0


def _experts_unsplit(on_moe_layout, transformer, ep, expert_weights, experts, moe_record):
    return on_moe_layout and transformer and ep > 1 and not expert_weights and (experts > 0 or moe_record)


def _ep_on_dense_extended(on_moe_layout, transformer, ep, expert_weights, experts, moe_record):
    return on_moe_layout and transformer and ep > 1 and not expert_weights and experts == 0 and not moe_record


def _kv_whole(on_context_parallel, transformer, cp, kvf, kv_given, shape_set):
    return on_context_parallel and transformer and cp > 1 and kvf == 1 and not kv_given and shape_set == ""


def _card_shape_set(card, shape_set):
    return card and shape_set != ""


def _record_heads_set(extended, transformer, cp, shape_set, kv_moved):
    return (extended and transformer and cp > 1 and (shape_set == "attention_heads" or shape_set == "kv_heads")
            and not kv_moved)


# mlsysim_sym.terms.extended.group_link: a group's collectives on NVLink only where its size divides a node's
def _tp_straddles(extended, transformer, on_sequence_parallel, tp, apn):
    return extended and transformer and on_sequence_parallel and 1 < tp and tp < apn and apn % tp != 0


def _experts_straddle(extended, transformer, on_moe_layout, on_moe_per_layer, ep_etp, apn):
    return (extended and transformer and on_moe_layout and on_moe_per_layer and 1 < ep_etp and ep_etp < apn
            and apn % ep_etp != 0)


def _tp_cp_straddles(extended, transformer, on_context_parallel, cp, tp_cp, apn):
    return (extended and transformer and on_context_parallel and cp > 1 and 1 < tp_cp and tp_cp < apn
            and apn % tp_cp != 0)


def _zero_held_one(on_fsdp_pipeline, transformer, z, pp, m):
    return on_fsdp_pipeline and transformer and z >= 2 and pp > 1 and m > 1


def _zero_held_two(on_fsdp_pipeline, transformer, z, pp, m):
    return on_fsdp_pipeline and transformer and z == 3 and pp > 1 and m <= 1


#: The notes, in the order they are printed.
NOTES: Tuple[Note, ...] = (
    Note("fp8_in_mlsysim", _fp8_in_mlsysim,
         "mlsysim's model prices all of the step's compute at the {precision_key} peak and its tensors at 1 byte; "
         "the extended model (fidelity=\"extended\") runs only the GEMMs at that rate, as FP8 training does, and is "
         "validated on published FP8 runs (docs/modern_runs.md)"),
    Note("ep_on_dense", _ep_on_dense,
         "ep_size {ep}: {workload} is dense (no routed experts); mlsysim's model splits every weight over expert "
         "parallelism and prices its all-to-all all the same (the extended model, fidelity=\"extended\", splits "
         "none of a dense model's weights over EP)"),
    Note("ep_uneven", _ep_uneven,
         "ep_size {ep}: the {experts} routed experts of {workload} do not split evenly over {ep} ranks; mlsysim's "
         "model splits every weight over expert parallelism all the same (the extended model, "
         "fidelity=\"extended\", refuses an ep_size that does not divide the routed experts)"),
    Note("experts_unsplit", _experts_unsplit,
         "ep_size {ep}: {workload} gives no routed-expert parameters (expert_parameters), so the extended model "
         "splits none of its weights over expert parallelism while it prices the all-to-all; an architecture card "
         "with experts (mlsysim-sym list: modern/...) or expert_parameters= splits them (mlsysim's model, "
         "fidelity=\"mlsysim\", splits every weight over EP instead)"),
    Note("ep_on_dense_extended", _ep_on_dense_extended,
         "ep_size {ep}: {workload} is dense (no routed experts): the extended model splits none of its weights over "
         "expert parallelism, yet prices an all-to-all of its tokens; ep_size 1 prices it without (mlsysim's model, "
         "fidelity=\"mlsysim\", splits every weight over EP instead)"),
    Note("kv_whole", _kv_whole,
         "cp_size {cp}: {workload} lists no attention heads, so kv_fraction is 1 (every attention head its own "
         "keys and values); a grouped-query model exchanges less: give its heads and kv_heads (a model file), "
         "pass its kv_fraction (its key/value heads over its heads: 8 of 64 is 0.125) or use its architecture "
         "card (modern/...)"),
    Note("card_shape_set", _card_shape_set,
         "{shape_set} {shape_value}: the parameters and FLOPs of {workload}'s architecture card stay those of its "
         "own shape, which a field does not change; a card of the shape meant prices that model "
         "(docs/architecture.md)"),
    Note("record_heads_set", _record_heads_set,
         "cp_size {cp}, {shape_set} {shape_value}: the key/value width priced stays kv_fraction {kvf}, which "
         "setting {shape_set} does not change; kv_fraction sets it"),
    Note("tp_straddles", _tp_straddles, "the TP group of {tp} " + _ON_THE_FABRIC),
    Note("experts_straddle", _experts_straddle, "the expert group (EP x ETP) of {ep_etp} " + _ON_THE_FABRIC),
    Note("tp_cp_straddles", _tp_cp_straddles, "the TP x CP group of {tp_cp} " + _ON_THE_FABRIC),
    Note("zero_held_one", _zero_held_one,
         "ZeRO-{z} under a pipeline: a stage keeps its weights gathered through the step and, with several "
         "microbatches, its gradients unreduced until the last, so its memory is ZeRO-1's " + _HELD),
    Note("zero_held_two", _zero_held_two,
         "ZeRO-{z} under a pipeline: a stage keeps its weights gathered through the step, so its memory is "
         "ZeRO-2's " + _HELD),
)


#: The fields of a workload from which it derives others: an architecture card's shape (its parameters, FLOPs
#: and key/value width), the heads of a record (its key/value width, ``types.record_heads``, whether it lists them
#: or not). A call that sets one sets that input of the model alone.
_CARD_SHAPE = ("layers", "hidden_dim", "attention_heads", "kv_heads", "experts", "expert_ffn")
_RECORD_HEADS = tuple(f for f in HEAD_FIELDS if f != "kv_fraction")

#: The mechanisms a note reads whether they are priced (its ``on_<name>`` values), from the notes themselves.
MECHANISMS_READ = tuple(dict.fromkeys(k[3:] for n in NOTES for k in n.reads if k.startswith("on_")))


def workload_inputs(w) -> Dict[str, int]:
    """What the notes read of the workload: an architecture card's routed experts (0: none given), whether it is a
    mixture of experts whose experts a record does not count (its active parameters), whether it gives its own
    key/value share, whether it is an architecture card (the calculator page embeds these per catalog
    workload)."""
    return {"experts": int(w.experts or 0), "moe_record": int(bool(w.active_parameters)),
            "kv_given": int(bool(getattr(w, "kv_fraction", None))), "card": int(w.architecture is not None)}


def inputs(a: Arguments) -> Dict[str, object]:
    """The named values the notes read and show, of the call's configuration (the calculator page builds the same
    from its own state: ``derivations/web_runtime.mjs``, ``notesOf``)."""
    w = a.workload
    ep, etp, tp, cp = (int(a[k]) for k in ("ep_size", "etp_size", "tp_size", "cp_size"))
    values = {
        "extended": int(a.model.extended), "transformer": int(w.is_transformer),
        "one_byte": int(a.key in ("fp8", "int8")), "precision_key": a.key, "workload": w.name,
        "ep": ep, "etp": etp, "tp": tp, "cp": cp, "ep_etp": ep * etp, "tp_cp": tp * cp,
        "z": int(a["zero_stage"]), "pp": int(a["pp_size"]), "m": int(a["microbatch_count"]),
        "apn": int(a.get("accelerators_per_node", a.fleet.node.accelerators_per_node)), **workload_inputs(w),
        "expert_weights": int(bool(a.values.get(sym.P_exp) or 0)), "kvf": float(a["kv_fraction"]),
    }
    values.update({f"on_{m}": int(a.model.on(m)) for m in MECHANISMS_READ})
    derived = _CARD_SHAPE if values["card"] else _RECORD_HEADS
    moved = [(k, v) for k, v in a.fields if k in derived and float(v) != float(getattr(w, k) or 0)]
    # kv_moved: the width priced is not the record's own (a card's, a record's heads', else the default 1)
    values.update(shape_set=moved[0][0] if moved else "", shape_value=moved[0][1] if moved else 0,
                  kv_moved=int(float(a["kv_fraction"]) != float(w.kv_fraction or 1)))
    return values


def model_notes(a: Optional[Arguments]) -> List[str]:
    """The notes that apply to the call's configuration (none without one, or where a value is no plain
    number)."""
    if a is None:
        return []
    try:
        values = inputs(a)
    except (TypeError, ValueError, OverflowError, KeyError):    # a value that is no plain number: no note
        return []
    return [n.text.format(**values) for n in NOTES if n.when(**{k: values[k] for k in n.reads})]
