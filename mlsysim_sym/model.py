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

import inspect
from dataclasses import dataclass
from functools import cached_property, lru_cache, update_wrapper
from typing import Callable, Collection, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

import sympy as sp

from . import notation
from .mechanisms import normalize
from .symbols import PARAMS, sym
from .terms import communication as comm
from .terms import memory, roofline
from .terms import extended as ext_terms
from .terms.base import CeilDiv, FloorDiv, Iverson, NamedTerm
from .terms.pipeline import BubbleFraction, BubbleTime, in_flight_divisor

#: The models: mlsysim 0.3.0's, exactly, and the extended one (``docs/extended.md``).
FIDELITIES = ("mlsysim", "extended")



@dataclass(frozen=True)
class Variant:
    """The structural choices that select one model (see module docstring).

    ``family``: ``"transformer"`` (mlsysim's TrainingMemoryModel) or
    ``"generic"`` (every other workload). ``explicit_weights``: weight bytes
    come from the free symbols ``W_lw`` and ``W_g`` instead of ``P * s_elem``.
    ``sram`` / ``flash``: the accelerator reports these tiers (generic family).
    ``fidelity``: ``"mlsysim"`` (mlsysim 0.3.0's model, exactly) or ``"extended"`` (its mechanisms added,
    :mod:`mlsysim_sym.mechanisms`); ``off``: the extended model's mechanisms priced as mlsysim prices them.
    """

    family: str = "transformer"
    explicit_weights: bool = False
    sram: bool = False
    flash: bool = False
    fidelity: str = "mlsysim"
    off: Tuple[str, ...] = ()

    def __post_init__(self):
        if self.family not in ("transformer", "generic"):
            raise ValueError(f"family must be 'transformer' or 'generic', got {self.family!r}")
        if self.fidelity not in FIDELITIES:
            raise ValueError(f"fidelity must be one of {', '.join(map(repr, FIDELITIES))}, got {self.fidelity!r}")
        object.__setattr__(self, "off", normalize(self.off))
        if self.off and self.fidelity != "extended":
            raise ValueError("mechanisms can be switched off only in the extended model (fidelity='extended')")

    def on(self, mechanism: str) -> bool:
        """Whether the extended model prices ``mechanism`` (:data:`~mlsysim_sym.mechanisms.MECHANISMS`)."""
        return self.fidelity == "extended" and mechanism not in self.off


@dataclass(frozen=True)
class Quantity:
    """One named quantity of the model: its symbol and definition; unit, meaning and LaTeX from
    :mod:`mlsysim_sym.notation` (the one table of names)."""

    name: str
    symbol: sp.Symbol
    definition: sp.Basic

    @property
    def unit(self) -> str:
        return notation.entry(self.name).unit

    @property
    def meaning(self) -> str:
        return notation.entry(self.name).meaning

    @property
    def latex(self) -> str:
        return notation.entry(self.name).latex

    def _repr_latex_(self) -> str:
        # a notebook display hook: the one import here that points up the package's layers
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
        self[name]
        return self._closed[name]

    @cached_property
    def closed_expansion(self) -> Dict[sp.Symbol, sp.Basic]:
        """Quantity symbol -> its closed form (:meth:`closed_form`)."""
        return {self._q[n].symbol: e for n, e in self._closed.items()}

    @cached_property
    def _closed(self) -> Dict[str, sp.Basic]:
        closed = expand_in_order((q.symbol, q.definition) for q in self._q.values())
        return {name: closed[q.symbol] for name, q in self._q.items()}

    @cached_property
    def parameters(self) -> Tuple[sp.Symbol, ...]:
        """Free parameter symbols of the whole model, in declaration order (worked out once)."""
        free = set()
        for e in self._expanded.values():
            free |= e.free_symbols
        return tuple(p.symbol for p in PARAMS.values() if p.symbol in free)

    def __repr__(self) -> str:
        return f"StepTimeModel({self.variant}, {len(self)} quantities)"

    def _repr_latex_(self) -> str:
        # a notebook display hook (a lazy import that points up the package's layers)
        from .printing import model_repr_latex

        return model_repr_latex(self)


def closed_form(expr: sp.Basic) -> sp.Basic:
    """``expr`` with every named cost term (``RingAllReduce`` ...) expanded to its formula."""
    # ``replace`` rebuilds bottom-up, so a term's arguments are expanded already when it is reached:
    # its formula is applied to them as they are (``doit()`` would walk them all again)
    return expr.replace(lambda e: isinstance(e, NamedTerm), lambda e: e.formula(*e.args))


def expand_in_order(pairs: Iterable[Tuple[sp.Symbol, sp.Basic]],
                    skip: Collection[sp.Symbol] = ()) -> Dict[sp.Symbol, sp.Basic]:
    """Closed forms of quantities given in order as ``(symbol, definition)``: each definition over the
    closed forms before it, cost terms expanded (:func:`closed_form`), so every term is expanded once.
    The symbols ``skip`` are left as symbols (and get no entry)."""
    out: Dict[sp.Symbol, sp.Basic] = {}
    for s, definition in pairs:
        if s not in skip:
            out[s] = closed_form(definition.xreplace(out))
    return out


def cached_per_arguments(normalize: Optional[Callable[..., tuple]] = None):
    """Cache a function once per set of arguments, however they are passed (``lru_cache`` alone keys on
    the call: ``f(v)``, ``f(variant=v)`` and ``f()`` would be three entries).

    The arguments are bound with their defaults applied, then ``normalize(*arguments)`` (if given)
    returns the tuple of arguments to key on and call with. A positional call skips the binding.
    """
    def decorate(fn):
        sig = inspect.signature(fn)
        if any(p.kind is not p.POSITIONAL_OR_KEYWORD for p in sig.parameters.values()):
            raise TypeError(f"{fn.__name__}: only plain parameters (no *args, **kwargs or keyword-only)")
        defaults = tuple(p.default for p in sig.parameters.values())
        required = sum(p.default is p.empty for p in sig.parameters.values())
        cached = lru_cache(maxsize=None)(fn)

        def wrapper(*args, **kwargs):
            if kwargs or not required <= len(args) <= len(defaults):
                try:
                    bound = sig.bind(*args, **kwargs)
                except TypeError:
                    return fn(*args, **kwargs)      # raises Python's own error for the call
                bound.apply_defaults()
                args = bound.args
            elif len(args) < len(defaults):
                args += defaults[len(args):]
            return cached(*normalize(*args)) if normalize else cached(*args)

        return update_wrapper(wrapper, fn)

    return decorate


class _Builder:
    """Collects quantities in order; each ``q(...)`` returns the quantity's symbol."""

    def __init__(self):
        self.items: List[Quantity] = []

    def q(self, name, definition, **assumptions):
        if name in PARAMS:
            raise RuntimeError(f"quantity {name!r} would shadow a parameter")
        notation.entry(name)    # every quantity has its unit, meaning and LaTeX in the table
        s = notation.symbol(name, **(assumptions or {"real": True}))
        self.items.append(Quantity(name, s, sp.sympify(definition, strict=True)))
        return s


@cached_per_arguments()
def build_model(variant: Variant = Variant()) -> StepTimeModel:
    """Build (once per variant) the ordered model of one distributed training step."""
    S = sym
    b = _Builder()
    q = b.q
    pos = {"positive": True}
    nonneg = {"nonnegative": True}
    transformer = variant.family == "transformer"
    on = variant.on
    # the extended model's context-parallel degree (1 where context parallelism is folded into DP, as mlsysim)
    cp = S.cp if on("context_parallel") and transformer else 1

    # -- decomposition (docs/contract.md §2.1) ------------------------------------------------
    N = q("N", S.n_nodes * S.apn, integer=True, positive=True)
    if cp == 1:
        G = G_mp = q("G", S.tp * S.pp * S.ep, integer=True, positive=True)
    else:
        G_mp = q("G_mp", S.tp * S.pp * S.ep, integer=True, positive=True)
        G = q("G", G_mp * cp, integer=True, positive=True)
    dp = q("dp", FloorDiv(N, G), integer=True, positive=True)
    lb = q("lb", sp.Max(1, FloorDiv(S.B, dp)), integer=True, positive=True)
    s_loc = S.s / cp                # tokens of each sequence one rank holds
    # ranks that reduce one gradient (and shard ZeRO state): N_DP N_CP, which is N // G_shard once the split
    # divides the fleet (checked); one integer division, as N_DP is
    dp_grad = dp if cp == 1 else FloorDiv(N, G_mp)

    # -- lowering (docs/contract.md §2.2) -------------------------------------------------------
    if variant.explicit_weights:
        W_def, Wg_def = S.W_lw, S.W_g
    else:
        W_def = Wg_def = S.P * S.bpp
    W = q("W", W_def, **pos)
    tokens = S.s if transformer else 1

    # -- compute (docs/contract.md §2.3a) -------------------------------------------------------
    O_model = q("O_model", 3 * S.F * tokens * lb, **nonneg)
    O_hw = q("O_hw", roofline.training_flop_multiplier(S.rc) * S.F * tokens * lb, **nonneg)
    if on("gemm_shape") and transformer:
        f_gemm = q("f_gemm", ext_terms.GemmShapeEfficiency(S.H, S.d_half), **pos)
        R_eff = q("R_eff", S.R_peak * S.eta * f_gemm, **pos)
    else:
        R_eff = q("R_eff", S.R_peak * S.eta, **pos)
    t_comp = q("T_compute", roofline.compute_time(O_hw, R_eff, G), **nonneg)

    # -- memory per accelerator (docs/contract.md §2.4) -------------------------------------------
    if transformer:
        tf = q("f_train", memory.lora_trainable_fraction(S.H, S.L, S.P, S.lora), **pos)
        ifd = q("ifd", in_flight_divisor(S.m, S.pp), integer=True, positive=True)
        mb = q("mb", memory.microbatch(lb, S.GA, ifd), integer=True, positive=True)
        Ls = q("L_stage", memory.layers_per_stage(S.L, S.pp), integer=True, positive=True)
        P_sh = q("P_shard", S.P / G_mp, **pos)
        M_w = q("M_weights", memory.weight_bytes(P_sh, S.bpp, dp_grad, S.z), **pos)
        M_g = q("M_grads", memory.gradient_bytes(P_sh, tf, S.bpp, dp_grad, S.z), **pos)
        M_o = q("M_optimizer", memory.optimizer_bytes(P_sh, tf, dp_grad, S.z), **pos)
        if on("sequence_parallel"):
            whole = q("r_sp", ext_terms.unsplit_share(S.tp, S.sp), **pos)
            K_act = q("K_act", ext_terms.activation_values(S.tp, S.rc, whole), **pos)
            act = Ls * K_act * s_loc * mb * S.H * (S.bpp / 2)
        else:
            act = memory.activation_bytes(Ls, s_loc, mb, S.H, S.bpp, S.tp, S.rc)
        M_a = q("M_activations", act, **nonneg)
        M_b = q("M_buffers", memory.buffer_bytes(M_g, mb, s_loc, S.H, S.bpp, S.pp), **nonneg)
        M_def = M_w + M_g + M_o + M_a + M_b
    else:
        M_def = memory.generic_replica_bytes(W, S.bpp, G, S.lora)
    M = q("M_acc", M_def, **pos)
    q("feasible", M <= S.CAP)
    # the quantity symbol cannot stand in a condition, so conditions use the relation itself
    fits = M <= S.CAP
    tiers = []
    if variant.sram:
        tiers.append((S.BW_sram, sp.And(sp.Eq(G, 1), W <= S.CAP_sram)))
    if variant.flash:
        tiers.append((S.BW_flash, sp.Eq(G, 1)))
    BW = q("BW_eff", roofline.effective_bandwidth(fits, tiers), **pos)
    traffic = q("traffic", roofline.memory_traffic(W, G_mp, lb / cp), **pos)
    t_mem = q("T_memory", traffic / BW, **pos)
    t_over = q("T_overhead", roofline.overhead(sp.Max(1, S.L)), **pos)
    T_node = q("T_node", roofline.node_latency(t_comp, t_mem, t_over), **pos)
    mfu = q("mfu_node", roofline.utilization(O_model, T_node, S.R_peak, G), **nonneg)
    hfu = q("hfu_node", roofline.utilization(O_hw, T_node, S.R_peak, G), **nonneg)
    q("energy", roofline.energy(hfu, G, T_node), **nonneg)
    q("throughput_node", lb / T_node, **pos)
    q("intensity", (O_hw / G) / traffic, **nonneg)
    q("memory_bound", roofline.memory_bound(t_comp, t_mem), integer=True, nonnegative=True)
    q("overhead_dominated", Iverson(t_over > sp.Max(t_comp, t_mem)), integer=True, nonnegative=True)
    q("offload_spill", M - S.CAP)

    # -- communication (docs/contract.md §2.6) ----------------------------------------------------
    grad = q("M_grad_msg", Wg_def / (S.tp * S.pp) * S.f_lora ** S.lora, **pos)
    BW_inter = q("BW_inter", S.BW_fab / S.osr, **pos)
    rpn = q("rpn", comm.dp_ranks_per_node(S.apn, G_mp), integer=True, positive=True)
    nodes = q("nodes_dp", comm.dp_nodes_spanned(dp_grad, rpn), integer=True, positive=True)
    t_dp0 = q("T_dp_allreduce", comm.dp_allreduce(grad, dp_grad, rpn, nodes, BW_inter), **nonneg)
    if on("zero3_gather") and transformer:
        # ZeRO-3 / FSDP: the gradients' ReduceScatter (half the all-reduce) once, and the weights' two
        # AllGathers (forward, backward: one all-reduce's time of the whole weights) in every micro-step
        t_gather = q("T_dp_gather", comm.dp_allreduce(W / (S.tp * S.pp), dp_grad, rpn, nodes, BW_inter),
                     **nonneg)
        dp_def = ext_terms.zero3_sync(t_dp0, t_gather, S.z, S.GA)
    else:
        dp_def = t_dp0
    msg = q("M_act_msg", lb * s_loc * S.H * S.bpp, **nonneg)
    nl = q("L_tp", CeilDiv(sp.Max(1, S.L), S.pp), integer=True, positive=True)
    again = ext_terms.recomputed(S.rc) if on("recompute_collectives") else 1
    if on("sequence_parallel"):
        beta_tp = q("beta_tp", ext_terms.group_link(S.tp, S.apn, S.BW_intra, BW_inter), **pos)
        alpha_tp = q("alpha_tp", ext_terms.group_link(S.tp, S.apn, S.alpha_nv, S.alpha_fab), **nonneg)
        pair = q("T_sp_pair", ext_terms.sp_pair(msg, S.tp, beta_tp, alpha_tp), **nonneg)
        t_tp1 = q("T_tp_layer", ext_terms.tp_collective(msg, S.tp, beta_tp, alpha_tp, S.sp, pair), **nonneg)
        t_tp_def = again * S.n_ar * nl * t_tp1
    else:
        t_tp_def = again * comm.tp_allreduces(msg, S.tp, nl, S.apn, BW_inter)
    t_tp0 = q("T_tp_allreduce", t_tp_def, **nonneg)
    if on("moe_per_layer"):
        # each EP rank exchanges its own tokens: 1 / N_EP of the replica's
        t_ep_def = again * S.n_a2a * nl * comm.ep_alltoall(msg * S.k_e * S.iota / S.ep, S.ep, BW_inter)
    else:
        t_ep_def = comm.ep_alltoall(msg * S.k_e * S.iota, S.ep, BW_inter)
    t_ep0 = q("T_ep_alltoall", t_ep_def, **nonneg)
    extra = []          # the extended model's communication terms, in step order
    if cp != 1:
        M_kv = q("M_kv", ext_terms.kv_bytes(msg, S.kvf, S.tp, cp), **nonneg)
        beta_cp = q("beta_cp", ext_terms.group_link(S.tp * cp, S.apn, S.BW_intra, BW_inter), **pos)
        alpha_cp = q("alpha_cp", ext_terms.group_link(S.tp * cp, S.apn, S.alpha_nv, S.alpha_fab), **nonneg)
        t_cp1 = q("T_cp_layer", ext_terms.cp_layer_exchange(M_kv, cp, beta_cp, alpha_cp, S.rc,
                                                            on("recompute_collectives")),
                  **nonneg)
        t_cp0 = q("T_cp_exchange", nl * t_cp1, **nonneg)
        extra.append(q("T_cp", S.c * t_cp0, **nonneg))
    if on("pipeline_p2p") and transformer:
        beta_pp = q("beta_pp", ext_terms.stage_link(N, S.apn, S.BW_intra, BW_inter), **pos)
        alpha_pp = q("alpha_pp", ext_terms.stage_link(N, S.apn, S.alpha_nv, S.alpha_fab), **nonneg)
        n_p2p = q("n_p2p", ext_terms.critical_sends(S.pp, S.v, S.m), integer=True, nonnegative=True)
        extra.append(q("T_p2p", S.c * n_p2p * ext_terms.pipeline_send(lb, s_loc, S.H, S.bpp, S.tp, S.m, beta_pp,
                                                                      alpha_pp), **nonneg))

    # -- pipeline (docs/contract.md §2.7) -------------------------------------------------------
    q("bubble_fraction", BubbleFraction(S.pp, S.v, S.m), **nonneg)
    t_bub = q("T_bubble", BubbleTime(T_node, S.pp, S.v, S.m), **nonneg)

    # -- optimizer (extended model) ---------------------------------------------------------------
    if on("optimizer_step") and transformer:
        P_upd = q("P_update", memory.zero_sharded(P_sh * tf, dp_grad, S.z, 1), **pos)
        t_opt = [q("T_opt", ext_terms.OptimizerUpdateTime(P_upd, S.b_upd, S.BW_hbm), **pos)]
    else:
        t_opt = []

    # -- step assembly (docs/contract.md §2.8) --------------------------------------------------
    t_dp = q("T_dp", S.c * dp_def if on("ga_once") else S.c * dp_def / S.GA)
    t_tp = q("T_tp", S.c * t_tp0)
    t_ep = q("T_ep", S.c * t_ep0)
    q("T_comm", t_dp + t_tp + t_ep + sum(extra))
    t_dpx = q("T_dp_exposed", comm.exposed_dp(t_dp, S.ov))
    if on("tp_overlap"):
        t_tp = q("T_tp_exposed", ext_terms.exposed_tp(t_tp, S.tov))
    t_sync = q("T_sync", T_node + t_dpx + t_tp + t_ep + sum(extra) + t_bub + sum(t_opt))
    step = q("T_step", comm.straggled(t_sync, S.f_s))
    se = q("scaling_efficiency", T_node / step)
    q("mfu", mfu * se)
    q("effective_throughput", dp * (lb / T_node) * se)
    return StepTimeModel(variant, b.items)
