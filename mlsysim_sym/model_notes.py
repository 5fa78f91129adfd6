"""What the priced numbers of one configuration do not say about the model that priced them: one sentence each,
below a result's breakdown (``DistributedResult.notes()``), in its JSON (``notes``) and in a plan of the run.

Each note is one row of :data:`NOTES`: a function of the call's :class:`~mlsysim_sym.arguments.Arguments` that
returns the sentence where it applies, else ``None``. They name an input the model reads at a value the user may
not have meant (a record's ``kv_fraction`` of 1, expert weights it cannot split) or a choice the model makes for
the user (a group priced on the fabric, a ZeRO stage held as a lower one), with what to pass instead.
"""
from __future__ import annotations

from typing import Callable, List, Optional, Tuple

from .arguments import Arguments
from .symbols import sym


def _fp8_in_mlsysim(a: Arguments) -> Optional[str]:
    if a.model.extended or a.key not in ("fp8", "int8") or not a.workload.is_transformer:
        return None
    return (f"mlsysim's model prices all of the step's compute at the {a.key} peak and its tensors at 1 byte; the "
            "extended model (fidelity=\"extended\") runs only the GEMMs at that rate, as FP8 training does, and is "
            "validated on published FP8 runs (docs/modern_runs.md)")


def _experts_unsplit(a: Arguments) -> Optional[str]:
    if not (a.model.on("moe_layout") and int(a["ep_size"]) > 1 and a.workload.is_transformer):
        return None
    if a.values[sym.P_exp]:
        return None
    return (f"ep_size {int(a['ep_size'])}: {a.workload.name} gives no routed-expert parameters (expert_parameters), "
            "so the extended model splits none of its weights over expert parallelism while it prices the "
            "all-to-all; an architecture card with experts (mlsysim-sym list: modern/...) or expert_parameters= "
            "splits them (mlsysim's model, fidelity=\"mlsysim\", splits every weight over EP instead)")


def _ep_in_mlsysim(a: Arguments) -> Optional[str]:
    ep = int(a["ep_size"])
    if a.model.extended or ep <= 1:
        return None
    experts = int(a.workload.experts or 0)          # an architecture card's routed experts (0: none given)
    if experts and experts % ep == 0:
        return None
    if not experts and a.workload.active_parameters:     # a mixture of experts whose experts the record does not count
        return None
    if not experts:
        return (f"ep_size {ep}: {a.workload.name} is dense (no routed experts); mlsysim's model splits every weight "
                "over expert parallelism and prices its all-to-all all the same (the extended model, "
                "fidelity=\"extended\", splits none of a dense model's weights over EP)")
    return (f"ep_size {ep}: the {experts} routed experts of {a.workload.name} do not split evenly over {ep} ranks; "
            "mlsysim's model splits every weight over expert parallelism all the same (the extended model, "
            "fidelity=\"extended\", refuses an ep_size that does not divide the routed experts)")


def _kv_whole(a: Arguments) -> Optional[str]:
    if not (a.model.on("context_parallel") and int(a["cp_size"]) > 1 and a.workload.is_transformer):
        return None
    if float(a["kv_fraction"]) != 1 or getattr(a.workload, "kv_fraction", None):     # given, or the card's
        return None
    return (f"cp_size {int(a['cp_size'])}: {a.workload.name} gives no key/value heads, and kv_fraction is 1 (every "
            "attention head its own keys and values); a grouped-query model exchanges less: pass its kv_fraction (its "
            "key/value heads over its heads: 8 of 64 is 0.125) or use its architecture card (modern/...)")


#: The groups whose collectives the extended model puts on NVLink only where the group divides a node's
#: accelerators (mlsysim_sym.terms.extended.group_link): (what the note calls it, the degrees whose product it is,
#: the mechanism that prices it so).
_GROUPS = (("TP group", ("tp_size",), ("sequence_parallel",)),
           ("expert group (EP x ETP)", ("ep_size", "etp_size"), ("moe_layout", "moe_per_layer")),
           ("TP x CP group", ("tp_size", "cp_size"), ("context_parallel",)))


def _straddling(a: Arguments) -> Optional[str]:
    if not (a.model.extended and a.workload.is_transformer):
        return None
    apn = int(a.get("accelerators_per_node", a.fleet.node.accelerators_per_node))
    out = []
    for name, degrees, mechanisms in _GROUPS:
        if not all(a.model.on(m) for m in mechanisms):
            continue
        sizes = [int(a[d]) for d in degrees]
        g = sizes[0] * (sizes[1] if len(sizes) > 1 else 1)
        if 1 < g < apn and apn % g and all(n > 1 for n in sizes[1:2] if "context_parallel" in mechanisms):
            out.append(f"the {name} of {g}")
    if not out:
        return None
    return (f"{' and '.join(out)} {'do' if len(out) > 1 else 'does'} not divide the {apn} accelerators of an "
            "NVLink domain: some groups straddle "
            "two, and the extended model prices these collectives on the fabric; a degree that divides it (or "
            "accelerators_per_node set to one it divides: 64 of a GB200 NVL72's 72) keeps them on NVLink")


def _zero_held(a: Arguments) -> Optional[str]:
    z, pp, m = int(a["zero_stage"]), int(a["pp_size"]), int(a["microbatch_count"])
    if not (a.model.on("fsdp_pipeline") and z >= 2 and pp > 1 and a.workload.is_transformer):
        return None
    held = 1 if m > 1 else 2
    if held >= z:
        return None
    return (f"ZeRO-{z} under a pipeline: a stage keeps its weights gathered through the step"
            + (" and, with several microbatches, its gradients unreduced until the last" if held == 1 else "")
            + f", so its memory is ZeRO-{held}'s (only the optimizer state stays sharded; docs/extended.md, "
            "fsdp_pipeline)")


#: The notes, in the order they are printed.
NOTES: Tuple[Callable[[Arguments], Optional[str]], ...] = (
    _fp8_in_mlsysim, _ep_in_mlsysim, _experts_unsplit, _kv_whole, _straddling, _zero_held)


def model_notes(a: Optional[Arguments]) -> List[str]:
    """The notes that apply to the call's configuration (none without one)."""
    if a is None:
        return []
    out = []
    for note in NOTES:
        try:
            text = note(a)
        except (TypeError, ValueError, OverflowError, KeyError):    # a value that is no plain number: no note
            text = None
        if text:
            out.append(text)
    return out
