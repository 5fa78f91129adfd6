"""The outputs of a step, as one table: result field, model quantity, short alias, words, unit, which way is better.

``solve()``'s result fields (mlsysim's names, ``node_profile.`` for the replica's), sweeps' outputs, the
sensitivities' and ``required``'s output names, the search's objectives and every label read this table; the
unit and the meaning come from the quantity's entry in :mod:`mlsysim_sym.notation`.

Examples
--------
>>> from mlsysim_sym.outputs import output
>>> o = output("step_time")
>>> o.field, o.quantity, o.unit, o.better
('step_latency_total', 'T_step', 's', -1)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from . import notation


@dataclass(frozen=True)
class Output:
    """One output: its result ``field``, model ``quantity``, short ``alias``, name in ``words`` (else the
    quantity's meaning), ``better`` (+1: more is better, -1: less, 0: neither), whether a search may rank by it
    (``objective``), the model it belongs to (``fidelity``: the extended model's own outputs are
    ``DistributedResult.extended``), the largest value it can take (``at_most``: 1 for a share) and whether it is a
    yes/no value (``yes_no``: a sweep's summary counts where it holds)."""

    field: str
    quantity: str
    alias: Optional[str] = None
    label: Optional[str] = None
    better: int = 0
    objective: bool = False
    fidelity: str = "mlsysim"
    at_most: Optional[float] = None     # the largest value it can take (1: a share of the peak or of the step)
    yes_no: bool = False                # a yes/no value (feasible: a bool; the indicators: 0 or 1)

    @property
    def unit(self) -> str:
        return notation.entry(self.quantity).unit

    @property
    def words(self) -> str:
        return self.label or notation.entry(self.quantity).meaning


_O = Output
#: Every output, in the order of mlsysim's ``DistributedResult`` (then its ``PerformanceProfile``), then the
#: extended model's own.
OUTPUT_TABLE: Tuple[Output, ...] = (
    _O("dp_communication_latency", "T_dp", label="DP communication"),
    _O("tp_communication_latency", "T_tp", label="TP communication"),
    _O("ep_communication_latency", "T_ep", label="EP communication"),
    _O("communication_latency", "T_comm", "communication", "communication time", -1),
    _O("pipeline_bubble_latency", "T_bubble", "bubble", "pipeline bubble", -1),
    _O("bubble_fraction", "bubble_fraction", at_most=1),
    _O("step_latency_total", "T_step", "step_time", "step time", -1, objective=True),
    _O("scaling_efficiency", "scaling_efficiency", "scaling_efficiency", "scaling efficiency", 1, at_most=1),
    _O("effective_throughput", "effective_throughput", "throughput", "throughput", 1, objective=True),
    _O("mfu", "mfu", "mfu", "fleet MFU", 1, objective=True, at_most=1),
    _O("dp", "dp"),
    _O("node_profile.latency", "T_node", "node_latency", "replica step time", -1),
    _O("node_profile.latency_compute", "T_compute"),
    _O("node_profile.latency_memory", "T_memory"),
    _O("node_profile.latency_overhead", "T_overhead"),
    _O("node_profile.throughput", "throughput_node"),
    _O("node_profile.arithmetic_intensity", "intensity"),
    _O("node_profile.energy", "energy", "energy", "energy per replica step", -1),
    _O("node_profile.memory_footprint", "M_acc", "memory", "memory per accelerator", -1),
    _O("node_profile.peak_flops_actual", "R_eff"),
    _O("node_profile.peak_bw_actual", "BW_eff"),
    _O("node_profile.mfu", "mfu_node", "node_mfu", "replica MFU", 1, at_most=1),
    _O("node_profile.hfu", "hfu_node"),
    _O("node_profile.feasible", "feasible", yes_no=True),
    _O("node_profile.memory_bound", "memory_bound", yes_no=True),
    _O("node_profile.overhead_dominated", "overhead_dominated", yes_no=True),
    _O("node_profile.offload_spill_bytes", "offload_spill"),
    # the extended model's own (a field is absent where its mechanism is off or does not apply)
    _O("cp_communication_latency", "T_cp", label="CP key/value exchange", fidelity="extended"),
    _O("pipeline_p2p_latency", "T_p2p", label="pipeline stage-to-stage sends", fidelity="extended"),
    _O("optimizer_step_latency", "T_opt", label="optimizer update", fidelity="extended"),
    _O("tp_exposed_latency", "T_tp_exposed", label="TP communication left after overlap", fidelity="extended"),
    _O("ep_exposed_latency", "T_ep_exposed", label="EP all-to-all left after overlap", fidelity="extended"),
    _O("permutation_latency", "T_perm", label="MoE token permutation", fidelity="extended"),
    _O("gemm_shape_factor", "f_gemm", fidelity="extended", at_most=1),
    _O("gathered_layer_memory", "M_gather", label="ZeRO-3 layers held gathered", fidelity="extended"),
    _O("forward_flops_per_token", "F_tok", label="forward FLOPs per token with attention", fidelity="extended"),
)
del _O

#: Result field -> model quantity, mlsysim's fields (node-profile fields prefixed ``node_profile.``).
OUTPUTS: Dict[str, str] = {o.field: o.quantity for o in OUTPUT_TABLE if o.fidelity == "mlsysim"}
#: The extended model's own result fields (``DistributedResult.extended``) -> model quantity.
EXTENDED_OUTPUTS: Dict[str, str] = {o.field: o.quantity for o in OUTPUT_TABLE if o.fidelity == "extended"}
OUTPUT_NAMES: Tuple[str, ...] = tuple(OUTPUTS)
#: Alias -> model quantity (the names a sensitivity, ``required`` or a plot takes besides fields and quantities).
ALIASES: Dict[str, str] = {o.alias: o.quantity for o in OUTPUT_TABLE if o.alias}
#: The outputs a search ranks by, by alias.
OBJECTIVES: Dict[str, Output] = {o.alias: o for o in OUTPUT_TABLE if o.objective}

_BY_NAME: Dict[str, Output] = {}
for _o in OUTPUT_TABLE:
    _BY_NAME.setdefault(_o.quantity, _o)
    _BY_NAME[_o.field] = _o
    if _o.alias:
        _BY_NAME[_o.alias] = _o
del _o


def output(name: str) -> Optional[Output]:
    """The output of a result field, alias or model quantity name (None when the table has none)."""
    return _BY_NAME.get(name)


def field_named(name: str) -> str:
    """The result field a person may name: the field itself, a replica's field without its ``node_profile.``
    (``memory_footprint``, as ``solve()``'s ``r.node_profile.memory_footprint`` reads), an alias (``memory``), its
    model quantity (``M_acc``) or the symbol a table prints for it (``M_total``); any other name as it is.

    >>> field_named("memory"), field_named("M_acc"), field_named("T_step"), field_named("nope")
    ('node_profile.memory_footprint', 'node_profile.memory_footprint', 'step_latency_total', 'nope')
    >>> field_named("memory_footprint"), field_named("b_pipe"), field_named(r"\\DistributedStepTime")
    ('node_profile.memory_footprint', 'bubble_fraction', 'step_latency_total')
    """
    quantities = [o.quantity for o in OUTPUT_TABLE]
    o = (_BY_NAME.get(name) or _BY_NAME.get("node_profile." + str(name))
         or _BY_NAME.get(notation.printed_as(name, quantities) or notation.named_by_macro(name, quantities) or ""))
    return o.field if o is not None else name


def largest(quantity: str) -> Optional[float]:
    """The largest value an output can take (1 for a share: MFU, scaling efficiency, bubble fraction), else None."""
    o = _BY_NAME.get(quantity)
    return o.at_most if o is not None else None


def quantity_of(name: str) -> str:
    """The model quantity of an alias or result field, or of the symbol a table prints for a quantity
    (``M_gradients``); any other name as it is (a quantity's own name)."""
    o = _BY_NAME.get(name)
    if o is not None:
        return o.quantity
    if name in notation.table():
        return name
    return notation.printed_as(name, notation.table()) or notation.named_by_macro(name, notation.table()) or name


def unit_of(name: str) -> str:
    """The SI unit of a result field, alias or quantity (``"s"``, ``"B"``, ``"1"``, ...)."""
    return notation.entry(quantity_of(name)).unit


def better(quantity: str) -> int:
    """+1 where more of the quantity is better (MFU), -1 where less is (step time), 0 otherwise."""
    o = _BY_NAME.get(quantity)
    return o.better if o is not None else 0


def words(quantity: str) -> str:
    """The quantity in words (``"fleet MFU"``, ``"step time"``), else its meaning."""
    o = _BY_NAME.get(quantity)
    return o.words if o is not None and o.quantity == quantity else notation.entry(quantity).meaning
