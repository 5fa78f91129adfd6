"""The assembled step-time model: an ordered mapping of named quantities.

Each quantity has a *definition* in terms of parameters and earlier quantities
(the structured form, for equations), and ``model[name]`` is that definition
with every earlier quantity substituted: one sympy expression whose free
symbols are model parameters (:mod:`mlsysim_sym.symbols`). The integer structure
of mlsysim (``N // G``, ``max(1, B // dp)``, ``ceil(L / pp)``, ranks per node,
nodes spanned, the three DP all-reduce placements, TP on NVLink or the fabric,
memory fits or spills) lives inside the expressions as exact
:class:`~mlsysim_sym.terms.base.FloorDiv` / ``CeilDiv`` / ``Max`` / ``Piecewise``.

What cannot be an expression is the *shape* of the computation, fixed per
:class:`Variant`: the workload family (transformer memory model or the generic
one), whether weight bytes are ``P * s_elem`` or given explicitly, and whether the
accelerator has SRAM / flash tiers (mlsysim's Engine path only).

Examples
--------
>>> from mlsysim_sym.model import build_model
>>> m = build_model()
>>> list(m)[:4]
['N', 'G', 'dp', 'lb']
>>> m.definition("dp")
FloorDiv(N, G)
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, Iterator, List, Mapping, Tuple

import sympy as sp

from .symbols import PARAMS, sym
from .terms import communication as comm
from .terms import compute, memory
from .terms.base import CeilDiv, FloorDiv, Iverson
from .terms.pipeline import BubbleFraction, BubbleTime, in_flight_divisor

T = r"\text"


@dataclass(frozen=True)
class Variant:
    """The structural choices that select one model (see module docstring).

    ``family``: ``"transformer"`` (mlsysim's TrainingMemoryModel) or
    ``"generic"`` (every other workload). ``explicit_weights``: weight bytes
    come from the free symbols ``W_lw`` and ``W_g`` instead of ``P * s_elem``.
    ``sram`` / ``flash``: the accelerator reports these tiers (generic family).
    """

    family: str = "transformer"
    explicit_weights: bool = False
    sram: bool = False
    flash: bool = False

    def __post_init__(self):
        if self.family not in ("transformer", "generic"):
            raise ValueError(f"family must be 'transformer' or 'generic', got {self.family!r}")


@dataclass(frozen=True)
class Quantity:
    """One named quantity of the model: symbol, unit, meaning, LaTeX and definition."""

    name: str
    symbol: sp.Symbol
    definition: sp.Basic
    unit: str
    meaning: str
    latex: str

    def _repr_latex_(self) -> str:
        from .printing import quantity_repr_latex

        return quantity_repr_latex(self)


class StepTimeModel(Mapping):
    """Ordered mapping ``name -> expression`` of one :class:`Variant`.

    ``model[name]`` is expanded down to parameters (named cost terms such as
    ``RingAllReduce`` stay as functions; :meth:`closed_form` expands them too).
    """

    def __init__(self, variant: Variant, quantities: List[Quantity]):
        self.variant = variant
        self._q: Dict[str, Quantity] = {q.name: q for q in quantities}
        self._expanded: Dict[str, sp.Basic] = {}
        subs: Dict[sp.Symbol, sp.Basic] = {}
        for q in quantities:  # definitions only refer to earlier quantities
            e = q.definition.xreplace(subs)
            self._expanded[q.name] = e
            subs[q.symbol] = e

    def __getitem__(self, name: str) -> sp.Basic:
        try:
            return self._expanded[name]
        except KeyError:
            raise KeyError(f"no quantity named {name!r}; the model has: {', '.join(self._q)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._q)

    def __len__(self) -> int:
        return len(self._q)

    def quantity(self, name: str) -> Quantity:
        self[name]
        return self._q[name]

    def definition(self, name: str) -> sp.Basic:
        """The structured definition, in terms of parameters and earlier quantities."""
        return self.quantity(name).definition

    def closed_form(self, name: str) -> sp.Basic:
        """``model[name]`` with every named cost term expanded to its formula."""
        return _closed_form(self[name])

    @property
    def parameters(self) -> Tuple[sp.Symbol, ...]:
        """Free parameter symbols of the whole model, in declaration order."""
        free = set()
        for e in self._expanded.values():
            free |= e.free_symbols
        return tuple(p.symbol for p in PARAMS.values() if p.symbol in free)

    def __repr__(self) -> str:
        return f"StepTimeModel({self.variant}, {len(self)} quantities)"

    def _repr_latex_(self) -> str:
        from .printing import model_repr_latex

        return model_repr_latex(self)


def _closed_form(expr: sp.Basic) -> sp.Basic:
    from .terms.base import NamedTerm

    return expr.replace(lambda e: isinstance(e, NamedTerm), lambda e: e.doit())


class _Builder:
    """Collects quantities in order; each ``q(...)`` returns the quantity's symbol."""

    def __init__(self):
        self.items: List[Quantity] = []

    def q(self, name, latex, unit, meaning, definition, **assumptions):
        if name in PARAMS:
            raise RuntimeError(f"quantity {name!r} would shadow a parameter")
        s = sp.Symbol(name, **(assumptions or {"real": True}))
        self.items.append(Quantity(name, s, sp.sympify(definition, strict=True), unit, meaning, latex))
        return s


@lru_cache(maxsize=None)
def build_model(variant: Variant = Variant()) -> StepTimeModel:
    """Build (once per variant) the ordered model of one distributed training step."""
    S = sym
    b = _Builder()
    q = b.q
    pos = {"positive": True}
    nonneg = {"nonnegative": True}
    transformer = variant.family == "transformer"

    # -- decomposition (contract §2.1) ------------------------------------------------
    N = q("N", rf"N_{{{T}{{GPU}}}}", "1", "accelerators in the fleet", S.n_nodes * S.apn, integer=True, positive=True)
    G = q("G", rf"G_{{{T}{{rep}}}}", "1", "accelerators of one model replica (TP x PP x EP)",
          S.tp * S.pp * S.ep, integer=True, positive=True)
    dp = q("dp", rf"N_{{{T}{{DP}}}}", "1", "data-parallel replicas", FloorDiv(N, G), integer=True, positive=True)
    lb = q("lb", rf"B_{{{T}{{local}}}}", "1", "samples per replica per step",
           sp.Max(1, FloorDiv(S.B, dp)), integer=True, positive=True)

    # -- lowering (contract §2.2) -------------------------------------------------------
    if variant.explicit_weights:
        W_def, Wg_def = S.W_lw, S.W_g
    else:
        W_def = Wg_def = S.P * S.bpp
    W = q("W", "W", "B", "weight bytes of the model at the training precision", W_def, **pos)
    tokens = S.s if transformer else 1

    # -- compute (contract §2.3a) -------------------------------------------------------
    O_model = q("O_model", rf"O_{{{T}{{model}}}}", "flop", "model FLOPs of one replica step (3 x forward)",
                3 * S.F * tokens * lb, **nonneg)
    O_hw = q("O_hw", rf"O_{{{T}{{hw}}}}", "flop", "executed FLOPs of one replica step (4 x forward with recompute)",
             compute.training_flop_multiplier(S.rc) * S.F * tokens * lb, **nonneg)
    R_eff = q("R_eff", rf"R_{{{T}{{dev}}}}", "flop/s", "achieved FLOP/s of one accelerator", S.R * S.eta, **pos)
    t_comp = q("T_compute", rf"T_{{{T}{{compute}}}}", "s", "compute time of the replica step",
               compute.compute_time(O_hw, R_eff, G), **nonneg)

    # -- memory per accelerator (contract §2.4) -------------------------------------------
    if transformer:
        tf = q("f_train", rf"f_{{{T}{{train}}}}", "1", "trainable share of the parameters (LoRA)",
               memory.lora_trainable_fraction(S.H, S.L, S.P, S.lora), **pos)
        ifd = q("ifd", rf"d_{{{T}{{flight}}}}", "1", "in-flight divisor of the 1F1B schedule",
                in_flight_divisor(S.m, S.pp), integer=True, positive=True)
        mb = q("mb", rf"B_{{{T}{{micro}}}}", "1", "samples of one microbatch held by a stage",
               memory.microbatch(lb, S.GA, ifd), integer=True, positive=True)
        Ls = q("L_stage", rf"N_{{L,{T}{{stage}}}}", "1", "layers of one pipeline stage",
               memory.layers_per_stage(S.L, S.pp), integer=True, positive=True)
        P_sh = q("P_shard", rf"P_{{{T}{{shard}}}}", "1", "parameters held by one accelerator before ZeRO",
                 S.P / G, **pos)
        M_w = q("M_weights", rf"M_{{{T}{{weights}}}}", "B", "weight memory per accelerator",
                memory.weight_bytes(P_sh, S.bpp, dp, S.z), **pos)
        M_g = q("M_grads", rf"M_{{{T}{{gradients}}}}", "B", "gradient memory per accelerator",
                memory.gradient_bytes(P_sh, tf, S.bpp, dp, S.z), **pos)
        M_o = q("M_optimizer", rf"M_{{{T}{{optimizer}}}}", "B", "optimizer-state memory per accelerator",
                memory.optimizer_bytes(P_sh, tf, dp, S.z), **pos)
        M_a = q("M_activations", rf"M_{{{T}{{activations}}}}", "B", "activation memory per accelerator",
                memory.activation_bytes(Ls, S.s, mb, S.H, S.bpp, S.tp, S.rc), **nonneg)
        M_b = q("M_buffers", rf"M_{{{T}{{buffers}}}}", "B", "communication buffers per accelerator",
                memory.buffer_bytes(M_g, mb, S.s, S.H, S.bpp, S.pp), **nonneg)
        M_def = M_w + M_g + M_o + M_a + M_b
    else:
        M_def = memory.generic_replica_bytes(W, S.bpp, G, S.lora)
    M = q("M_acc", rf"M_{{{T}{{acc}}}}", "B", "training memory per accelerator", M_def, **pos)
    feasible = q("feasible", rf"{T}{{fits}}", "1", "the training state fits in HBM", M <= S.CAP)
    # the quantity symbol cannot stand in a condition, so conditions use the relation itself
    fits = M <= S.CAP
    tiers = []
    if variant.sram:
        tiers.append((S.BW_sram, sp.And(sp.Eq(G, 1), W <= S.CAP_sram)))
    if variant.flash:
        tiers.append((S.BW_flash, sp.Eq(G, 1)))
    BW = q("BW_eff", rf"{T}{{BW}}_{{{T}{{eff}}}}", "B/s", "bandwidth of the memory roofline",
           compute.effective_bandwidth(fits, tiers), **pos)
    traffic = q("traffic", rf"Q_{{{T}{{mem}}}}", "B", "bytes one accelerator streams per step",
                compute.memory_traffic(W, G, lb), **pos)
    t_mem = q("T_memory", rf"T_{{{T}{{memory}}}}", "s", "memory time of the replica step", traffic / BW, **pos)
    t_over = q("T_overhead", rf"T_{{{T}{{overhead}}}}", "s", "dispatch and framework overhead per step",
               compute.overhead(sp.Max(1, S.L)), **pos)
    T_node = q("T_node", rf"T_{{{T}{{node}}}}", "s", "roofline time of one replica step",
               compute.node_latency(t_comp, t_mem, t_over), **pos)
    mfu = q("mfu_node", rf"{T}{{MFU}}_{{{T}{{node}}}}", "1", "model FLOPs utilization of one replica",
            compute.utilization(O_model, T_node, S.R, G), **nonneg)
    hfu = q("hfu_node", rf"{T}{{HFU}}_{{{T}{{node}}}}", "1", "hardware FLOPs utilization of one replica",
            compute.utilization(O_hw, T_node, S.R, G), **nonneg)
    q("energy", rf"E_{{{T}{{step}}}}", "J", "energy of one replica step", compute.energy(hfu, G, T_node), **nonneg)
    q("throughput_node", rf"R_{{{T}{{node}}}}", "1/s", "samples per second of one replica", lb / T_node, **pos)
    q("intensity", rf"I_{{{T}{{op}}}}", "flop/B", "arithmetic intensity of the replica step",
      (O_hw / G) / traffic, **nonneg)
    q("memory_bound", rf"{T}{{mem}}_{{{T}{{bound}}}}", "1", "1 when the memory roofline binds (bottleneck Memory)",
      compute.memory_bound(t_comp, t_mem), integer=True, nonnegative=True)
    q("overhead_dominated", rf"{T}{{ovh}}_{{{T}{{dom}}}}", "1", "1 when the overhead exceeds the roofline time",
      Iverson(t_over > sp.Max(t_comp, t_mem)), integer=True, nonnegative=True)
    q("offload_spill", rf"M_{{{T}{{spill}}}}", "B", "bytes over HBM capacity (meaningful when infeasible)",
      M - S.CAP)

    # -- communication (contract §2.6) ----------------------------------------------------
    grad = q("M_grad_msg", rf"M_{{{T}{{grad}}}}", "B", "gradient bytes one DP group all-reduces",
             Wg_def / (S.tp * S.pp) * S.f_lora ** S.lora, **pos)
    BW_inter = q("BW_inter", rf"\beta_{{{T}{{inter}}}}", "B/s", "fabric bandwidth after oversubscription",
                 S.BW_fab / S.osr, **pos)
    rpn = q("rpn", rf"g_{{{T}{{DP}}}}", "1", "ranks of one DP group per node",
            comm.dp_ranks_per_node(S.apn, G), integer=True, positive=True)
    nodes = q("nodes_dp", rf"n_{{{T}{{DP}}}}", "1", "nodes one DP group spans",
              comm.dp_nodes_spanned(dp, rpn), integer=True, positive=True)
    t_dp0 = q("T_dp_allreduce", rf"T_{{{T}{{AR,DP}}}}", "s", "one gradient all-reduce, before congestion",
              comm.dp_allreduce(grad, dp, rpn, nodes, BW_inter), **nonneg)
    msg = q("M_act_msg", rf"M_{{{T}{{act}}}}", "B", "activation bytes of one TP all-reduce",
            lb * S.s * S.H * S.bpp, **nonneg)
    nl = q("L_tp", rf"N_{{L,{T}{{TP}}}}", "1", "layers whose TP all-reduces one stage pays",
           CeilDiv(sp.Max(1, S.L), S.pp), integer=True, positive=True)
    t_tp0 = q("T_tp_allreduce", rf"T_{{{T}{{AR,TP}}}}", "s", "TP all-reduces of one step, before congestion",
              comm.tp_allreduces(msg, S.tp, nl, S.apn, BW_inter), **nonneg)
    t_ep0 = q("T_ep_alltoall", rf"T_{{{T}{{A2A,EP}}}}", "s", "EP all-to-all of one step, before congestion",
              comm.ep_alltoall(msg * S.k_e * S.iota, S.ep, BW_inter), **nonneg)

    # -- pipeline (contract §2.7) -------------------------------------------------------
    q("bubble_fraction", rf"b_{{{T}{{pipe}}}}", "1", "idle share of the pipelined step",
      BubbleFraction(S.pp, S.v, S.m), **nonneg)
    t_bub = q("T_bubble", rf"T_{{{T}{{bubble}}}}", "s", "pipeline fill-and-drain time",
              BubbleTime(T_node, S.pp, S.v, S.m), **nonneg)

    # -- step assembly (contract §2.8) --------------------------------------------------
    t_dp = q("T_dp", rf"T_{{{T}{{DP}}}}", "s", "DP communication per step (congestion, amortized over accumulation)",
             S.c * t_dp0 / S.GA)
    t_tp = q("T_tp", rf"T_{{{T}{{TP}}}}", "s", "TP communication per step (with congestion)", S.c * t_tp0)
    t_ep = q("T_ep", rf"T_{{{T}{{EP}}}}", "s", "EP communication per step (with congestion)", S.c * t_ep0)
    q("T_comm", rf"T_{{{T}{{comm}}}}", "s", "communication per step, before overlap", t_dp + t_tp + t_ep)
    t_dpx = q("T_dp_exposed", rf"T_{{{T}{{DP,exposed}}}}", "s", "DP communication left after overlap",
              comm.exposed_dp(t_dp, S.ov))
    t_sync = q("T_sync", rf"T_{{{T}{{sync}}}}", "s", "step time before the straggler",
               T_node + t_dpx + t_tp + t_ep + t_bub)
    step = q("T_step", rf"T_{{{T}{{step}}}}", "s", "wall-clock time of one training step",
             comm.straggled(t_sync, S.f_s))
    se = q("scaling_efficiency", rf"\eta_{{{T}{{scaling}}}}", "1", "replica time over step time", T_node / step)
    q("mfu", rf"{T}{{MFU}}", "1", "fleet model FLOPs utilization", mfu * se)
    q("effective_throughput", rf"R_{{{T}{{eff}}}}", "1/s", "samples per second of the fleet",
      dp * (lb / T_node) * se)
    return StepTimeModel(variant, b.items)
