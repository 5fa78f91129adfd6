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

from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from typing import Collection, Dict, Iterable, Iterator, List, Mapping, Tuple

import sympy as sp

from . import notation
from ._cache import cached_per_arguments
from .mechanisms import FIDELITIES, MECHANISMS, ModelChoice
from .symbols import PARAMS, sym
from .terms import communication as comm
from .terms import memory, roofline
from .terms import extended as ext_terms
from .terms import frameworks as fw
from .terms.collectives import AllToAll
from .terms.base import CeilDiv, FloorDiv, Iverson, NamedTerm, labelled
from .terms.pipeline import BubbleFraction, BubbleTime, in_flight_divisor

__all__ = ["FIDELITIES", "MECHANISMS", "ModelChoice", "Quantities", "Quantity", "StepTimeModel", "Variant", "build_model",
           "cached_per_arguments", "closed_form", "expand_in_order"]


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
        object.__setattr__(self, "off", ModelChoice(self.fidelity, self.off).off)

    @property
    def choice(self) -> ModelChoice:
        """The model this variant belongs to (fidelity and mechanisms off)."""
        return ModelChoice(self.fidelity, self.off)

    def on(self, mechanism: str) -> bool:
        """Whether the extended model prices ``mechanism`` (:data:`~mlsysim_sym.mechanisms.MECHANISMS`; an
        unknown name is an error)."""
        return self.choice.on(mechanism)

    def of(self, choice: ModelChoice) -> "Variant":
        """This variant's structure in the model ``choice`` (cached: one object per pair)."""
        return _with_choice(self, choice)


@lru_cache(maxsize=None)
def _with_choice(variant: Variant, choice: ModelChoice) -> Variant:
    if (variant.fidelity, variant.off) == (choice.fidelity, choice.off):
        return variant
    return replace(variant, fidelity=choice.fidelity, off=choice.off)


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
        # a notebook display hook: the printer registers itself (mlsysim_sym.printing, which the package imports)
        return notation.DISPLAY["quantity"](self)


class Quantities(Mapping):
    """An ordered mapping ``name -> expression`` of quantities: ``m[name]`` is a definition with every earlier
    quantity substituted; :meth:`definition` is the structured form. The step model and an architecture card's
    shape (:mod:`mlsysim_sym.shape`) are two."""

    def __init__(self, quantities: List[Quantity]):
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


class StepTimeModel(Quantities):
    """Ordered mapping ``name -> expression`` of one :class:`Variant`.

    ``model[name]`` is expanded down to parameters (named cost terms such as
    ``RingAllReduce`` stay as functions; :meth:`closed_form` expands them too).
    """

    def __init__(self, variant: Variant, quantities: List[Quantity], step_terms: Tuple[str, ...] = (),
                 sections: Tuple[Tuple[str, Tuple[str, ...]], ...] = (), memory_terms: Tuple[str, ...] = ()):
        super().__init__(quantities)
        self.variant = variant
        #: The addends of ``M_acc``, the memory per accelerator (weights, gradients, optimizer state, activations,
        #: buffers; none for the generic family, whose state is one expression).
        self.memory_terms = tuple(memory_terms)
        #: ``(title, quantity names)`` of the sections that built the model, in order (:data:`SECTIONS`).
        self.sections = sections
        #: The addends of ``T_sync``, the step before the straggler, in reading order (replica, DP, TP, EP,
        #: then what the variant's mechanisms add, the bubble, the optimizer update).
        self.step_terms = tuple(step_terms)

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
        # a notebook display hook: the printer registers itself (mlsysim_sym.printing, which the package imports)
        return notation.DISPLAY["model"](self)


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


class _Builder:
    """Collects quantities in order; ``q(...)`` returns the quantity's symbol, ``b[name]`` looks it up.

    The sections of :func:`build_model` share it: besides the quantities it holds the few expressions of
    the variant that are not quantities (the context-parallel degree, the tokens a rank holds, ...).
    """

    def __init__(self, variant: Variant):
        self.items: List[Quantity] = []
        self.symbols: Dict[str, sp.Symbol] = {}
        self.variant = variant
        self.on = variant.on
        self.transformer = variant.family == "transformer"
        self.step: Tuple[str, ...] = ()
        self.memory: Tuple[str, ...] = ()

    def q(self, name, definition, **assumptions):
        if name in PARAMS:
            raise RuntimeError(f"quantity {name!r} would shadow a parameter")
        notation.entry(name)    # every quantity has its unit, meaning and LaTeX in the table
        s = notation.symbol(name, **(assumptions or {"real": True}))
        self.items.append(Quantity(name, s, sp.sympify(definition, strict=True)))
        self.symbols[name] = s
        return s

    def __getitem__(self, name: str) -> sp.Symbol:
        return self.symbols[name]

    def __contains__(self, name: str) -> bool:
        return name in self.symbols


#: The reading order of the step's terms and their communication parts: the replica, DP, TP, EP, the
#: extended model's CP exchange and pipeline sends, the bubble, the optimizer update. Each variant's ``T_sync``
#: adds the terms it has in this order (:attr:`StepTimeModel.step_terms`), and sums of them print so.
STEP_ORDER = ("T_node", "T_dp_exposed", "T_dp", "T_tp_exposed", "T_tp", "T_ep_exposed", "T_ep", "T_cp", "T_p2p",
              "T_bubble", "T_opt")
#: The reading order of the memory an accelerator holds (the book's M_total: weights, gradients, optimizer state,
#: activations; the buffers last), which sums of them print in.
MEMORY_ORDER = ("M_weights", "M_grads", "M_optimizer", "M_activations", "M_buffers")
notation.read_in_order(STEP_ORDER + MEMORY_ORDER)

def _section(title: str):
    """Mark a section of :func:`build_model` with its title (the documents read the model's sections)."""
    def mark(fn):
        fn.title = title
        return fn
    return mark


_POS = {"positive": True}
_NONNEG = {"nonnegative": True}
_COUNT = {"integer": True, "positive": True}


@_section('Decomposition of the fleet')
def _decomposition(b: _Builder) -> None:
    """How the fleet splits (docs/contract.md §2.1): replicas, their batch, and the lowered weights (§2.2)."""
    S, q = sym, b.q
    # the extended model's context-parallel degree (1 where context parallelism is folded into DP, as mlsysim)
    b.cp = cp = S.cp if b.on("context_parallel") and b.transformer else 1
    # the extended model's MoE layout: EP carved out of a stage's TP x DP x CP ranks, not beside them
    b.moe = b.on("moe_layout") and b.transformer
    # a recomputed forward runs its collectives and its token permutation again
    b.again = ext_terms.recomputed(S.rc) if b.on("recompute_collectives") else 1
    # FP8 trains with 2-byte weights, gradients, activations and messages (only the GEMMs' inputs are FP8)
    b.s_el = sp.Max(S.bpp, S.s_16) if b.on("fp8_gemms") and b.transformer else S.bpp
    N = q("N", S.n_nodes * S.apn, **_COUNT)
    shard = S.tp * S.pp if b.moe else S.tp * S.pp * S.ep
    if cp == 1:
        G = b.G_mp = q("G", shard, **_COUNT)
    else:
        b.G_mp = q("G_mp", shard, **_COUNT)
        G = q("G", b.G_mp * cp, **_COUNT)
    dp = q("dp", FloorDiv(N, G), **_COUNT)
    q("lb", labelled(sp.Max(1, FloorDiv(S.B, dp)), {1: "batch < dp: one sample per replica"},
                     idle=(S.B >= dp, None)), **_COUNT)
    b.s_loc = S.s / cp              # tokens of each sequence one rank holds
    # ranks that reduce one gradient (and shard ZeRO state): N_DP N_CP, which is N // G_shard once the split
    # divides the fleet (checked); one integer division, as N_DP is
    b.dp_grad = dp if cp == 1 else FloorDiv(N, b.G_mp)
    if b.variant.explicit_weights:
        W_def, b.Wg_def = S.W_lw, S.W_g
    else:
        W_def = b.Wg_def = S.P * b.s_el
    q("W", W_def, **_POS)
    if b.moe:
        b.G_exp = q("G_exp", S.ep * S.etp * S.pp, **_COUNT)
        b.dp_exp = q("dp_exp", FloorDiv(N, b.G_exp), **_COUNT)
        b.share = fw.expert_share(S.P, S.P_exp)


def _routed(b: _Builder, msg):
    """The bytes one rank routes to the experts in each all-to-all of a layer, from the replica's activations
    ``msg``: ``k_e`` copies of its own tokens, 1 / N_TP of them under the MoE layout (1 / N_EP in mlsysim's)."""
    return msg * sym.k_e * sym.iota / (sym.tp if b.moe else sym.ep)


@_section('Compute of one replica')
def _compute(b: _Builder) -> None:
    """The replica's FLOPs and the rate it runs them at (docs/contract.md §2.3a)."""
    S, q = sym, b.q
    tokens = S.s if b.transformer else 1
    F, b.F_att = S.F, 0
    if b.on("attention_flops") and b.transformer:
        # an architecture card's attention: its FLOPs per token grow with the sequence (0 without a card)
        b.F_att = ext_terms.attention_flops(S.A_full, S.A_win, S.s, S.w_att, S.chi_causal)
        F = q("F_tok", S.F + b.F_att, **_NONNEG)
    q("O_model", 3 * F * tokens * b["lb"], **_NONNEG)
    b.mult = roofline.training_flop_multiplier(S.rc)
    O_hw = q("O_hw", b.mult * F * tokens * b["lb"], **_NONNEG)
    b.F = F                         # the forward FLOPs per token (F_tok with a card's attention)
    shape = b.on("gemm_shape") and b.transformer
    if shape:
        f_gemm = q("f_gemm", ext_terms.GemmShapeEfficiency(S.H, S.d_half), **_POS)
    fp8 = b.on("fp8_gemms") and b.transformer
    kernels = b.on("attention_kernels") and b.transformer and b.F_att != 0
    b.R_att = S.R_peak * S.eta      # the rate attention runs at (the GEMMs' unless priced apart)
    if fp8 or kernels:
        # the weights' GEMMs at the precision's rate, attention and the elementwise work at the 16-bit one
        # (FP8), attention at its kernels' own share of the GEMMs' efficiency
        wide = S.bpp >= S.s_16          # 2-byte or wider elements: every rate is the precision's own peak
        R_gemm = q("R_gemm", fw.gemm_rate(S.R_peak, S.R_16, S.eta_8, wide), **_POS) if fp8 else S.R_peak
        R_rest = q("R_rest", fw.rest_rate(S.R_peak, S.R_16, wide), **_POS) if fp8 else S.R_peak
        eta_att = S.eta_att if kernels else 1
        b.R_att = R_rest * eta_att * S.eta
        loss = 1 / f_gemm - 1 if shape else 0
        R_eff = q("R_eff", fw.effective_rate(F, S.F, loss, R_gemm, R_rest, S.eta, eta_att), **_POS)
    elif shape:
        R_eff = q("R_eff", S.R_peak * S.eta * f_gemm, **_POS)
    else:
        R_eff = q("R_eff", S.R_peak * S.eta, **_POS)
    t_comp = roofline.compute_time(O_hw, R_eff, b["G"])
    if b.on("pipeline_balance") and b.transformer:
        # the last stage computes the output layer besides its layers, and the pipeline runs at its pace
        t_comp = t_comp * q("r_stage", fw.slowest_stage(F, S.F_head, S.pp), **_POS)
    q("T_compute", t_comp, **_NONNEG)


@_section('Memory per accelerator')
def _memory(b: _Builder) -> None:
    """Memory per accelerator (docs/contract.md §2.4): the transformer's five parts, or the generic state."""
    S, q = sym, b.q
    if not b.transformer:
        q("M_acc", memory.generic_replica_bytes(b["W"], S.bpp, b["G"], S.lora), **_POS)
        return
    tf = q("f_train", memory.lora_trainable_fraction(S.H, S.L, S.P, S.lora), **_POS)
    # the microbatches a replica runs one after another without a pipeline too: one microbatch's activations held
    held = ext_terms.held_microbatches if b.on("microbatch_memory") else in_flight_divisor
    ifd = q("ifd", held(S.m, S.pp), **_COUNT)
    mb = q("mb", memory.microbatch(b["lb"], S.GA, ifd), **_COUNT)
    Ls = q("L_stage", memory.layers_per_stage(S.L, S.pp), **_COUNT)
    if b.moe:
        # the routed experts split over EP x ETP x PP, their ZeRO state over the expert data-parallel ranks; the
        # rest over TP x PP and the data-parallel ranks (Megatron-Core's expert and dense gradient buffers)
        P_dense, P_exp = S.P * (1 - b.share) / b.G_mp, S.P_exp / b.G_exp
        b.shards = ((P_dense, b.dp_grad), (P_exp, b.dp_exp))
        P_sh = q("P_shard", P_dense + P_exp, **_POS)
    else:
        P_sh = q("P_shard", S.P / b.G_mp, **_POS)
        b.shards = ((P_sh, b.dp_grad),)
    shards = b.shards
    held = S.z
    if b.on("fsdp_pipeline"):
        # FSDP under a pipeline: a stage keeps its weights gathered through the step (as ZeRO-2 holds them) and,
        # with several microbatches, its gradients unreduced until the last one (as ZeRO-1); the optimizer state
        # stays sharded
        held = q("z_held", sp.Piecewise((sp.Min(S.z, 1), sp.And(S.pp > 1, S.m > 1)), (sp.Min(S.z, 2), S.pp > 1),
                                        (S.z, True)), integer=True, nonnegative=True)
    b.held = held
    M_w = q("M_weights", sp.Add(*(memory.weight_bytes(p, b.s_el, n, held) for p, n in shards)), **_POS)
    M_g = q("M_grads", sp.Add(*(memory.gradient_bytes(p, tf, b.s_el, n, held) for p, n in shards)), **_POS)
    M_o = q("M_optimizer", sp.Add(*(memory.optimizer_bytes(p, tf, n, S.z) for p, n in shards)), **_POS)
    # an architecture card's activation values per token and hidden unit (34 for a record without one)
    k_sel = S.K_card if b.on("card_activations") else S.K_sel
    if b.on("sequence_parallel"):
        whole = q("r_sp", ext_terms.unsplit_share(S.tp, S.sp), **_POS)
        K_act = q("K_act", ext_terms.activation_values(S.tp, S.rc, whole, k_sel), **_POS)
        act = Ls * K_act * b.s_loc * mb * S.H * (b.s_el / 2)
    else:
        act = memory.activation_bytes(Ls, b.s_loc, mb, S.H, b.s_el, S.tp, S.rc, k_sel)
    M_a = q("M_activations", act, **_NONNEG)
    if b.on("pipeline_p2p"):
        # a stage's send and receive buffers hold one microbatch's boundary activation, the message it sends (split
        # by N_TP), not the activations of the microbatches it holds in flight
        M_b = memory.buffer_bytes(M_g, memory.microbatch(b["lb"], S.GA, S.m), b.s_loc, S.H / S.tp, b.s_el, S.pp)
    else:
        M_b = memory.buffer_bytes(M_g, mb, b.s_loc, S.H, b.s_el, S.pp)
    if b.on("fsdp_buffers"):
        # ZeRO-3 / FSDP: a layer's weights gathered, the next one's too where the gathers are prefetched, a layer's
        # gradients unsharded before their ReduceScatter (held: not under a pipeline, where fsdp_pipeline keeps them
        # whole; over one rank nothing is gathered)
        prefetch = Iverson(sp.Eq(S.fov, 1)) if b.on("fsdp_overlap") else 0
        P_gather = q("P_gather", ext_terms.gathered_parameters(shards, Ls), **_NONNEG)
        M_b += q("M_gather", ext_terms.gathered_layers(P_gather, b.s_el, held, prefetch, tf), **_NONNEG)
    M_b = q("M_buffers", M_b, **_NONNEG)
    parts = (M_w, M_g, M_o, M_a, M_b)
    b.memory = tuple(t.name for t in parts)
    q("M_acc", sp.Add(*parts), **_POS)


@_section('Roofline of one replica')
def _roofline(b: _Builder) -> None:
    """The replica's roofline step: memory tier, traffic, compute against memory, overhead, utilization
    (docs/contract.md §2.3-§2.5)."""
    S, q = sym, b.q
    M, G, W, lb = b["M_acc"], b["G"], b["W"], b["lb"]
    q("feasible", M <= S.CAP)
    # the quantity symbol cannot stand in a condition, so conditions use the relation itself
    fits = M <= S.CAP
    tiers = []
    if b.variant.sram:
        tiers.append((S.BW_sram, sp.And(sp.Eq(G, 1), W <= S.CAP_sram)))
    if b.variant.flash:
        tiers.append((S.BW_flash, sp.Eq(G, 1)))
    BW = q("BW_eff", roofline.effective_bandwidth(fits, tiers), **_POS)
    # the weights one accelerator streams: its share of them (under the MoE layout, its experts and the rest)
    streamed = (b["P_shard"] * b.s_el, 1) if b.moe else (W, b.G_mp)
    traffic = q("traffic", roofline.memory_traffic(*streamed, lb / b.cp), **_POS)
    t_comp, t_mem = b["T_compute"], q("T_memory", traffic / BW, **_POS)
    if b.on("pass_overhead") and b.transformer:
        # a fixed cost (in framework taxes) of every microbatch's every pass through this accelerator's layers
        n_pass = q("n_pass", ext_terms.pass_overhead(S.k_pass, b["L_stage"], S.m, S.GA, b.mult),
                     **_POS)
        t_over = q("T_overhead", S.tau_d + n_pass * S.TAX, **_POS)
    else:
        t_over = q("T_overhead", roofline.overhead(sp.Max(1, S.L)), **_POS)
    t_node = roofline.node_latency(t_comp, t_mem, t_over)
    if b.on("moe_permutation") and b.transformer:
        # the routed tokens grouped by expert and back, in kernels of their own: each rank's 1 / N_TP of the
        # replica's tokens (1 / N_EP of them in mlsysim's layout), k_e copies of each, around every all-to-all
        routed = q("M_routed", _routed(b, lb * b.s_loc * S.H * b.s_el), **_NONNEG)
        t_node += q("T_perm", fw.only_with_experts(S.P_exp, fw.permutation_time(
            routed, S.b_perm, S.n_a2a, b["L_stage"], b.again, S.BW_hbm, S.fdis)), **_NONNEG)
    T_node = q("T_node", t_node, **_POS)
    q("mfu_node", roofline.utilization(b["O_model"], T_node, S.R_peak, G), **_NONNEG)
    hfu = q("hfu_node", roofline.utilization(b["O_hw"], T_node, S.R_peak, G), **_NONNEG)
    q("energy", roofline.energy(hfu, G, T_node), **_NONNEG)
    q("throughput_node", lb / T_node, **_POS)
    q("intensity", roofline.arithmetic_intensity(b["O_hw"] / G, traffic), **_NONNEG)
    q("memory_bound", roofline.memory_bound(t_comp, t_mem), integer=True, nonnegative=True)
    q("overhead_dominated", Iverson(t_over > sp.Max(t_comp, t_mem)), integer=True, nonnegative=True)
    q("offload_spill", M - S.CAP)


@_section('Data-parallel communication')
def _data_parallel(b: _Builder) -> None:
    """The gradient all-reduce of one DP group by placement (docs/contract.md §2.6), and ZeRO-3's gathers."""
    S, q = sym, b.q
    dense = (1 - b.share) if b.moe else 1          # the share of the weights the data-parallel ranks reduce
    grad = q("M_grad_msg", b.Wg_def * dense / (S.tp * S.pp) * S.f_lora ** S.lora, **_POS)
    BW_inter = q("BW_inter", S.BW_fab / S.osr, **_POS)
    rpn = q("rpn", comm.dp_ranks_per_node(S.apn, b.G_mp), **_COUNT)
    nodes = q("nodes_dp", comm.dp_nodes_spanned(b.dp_grad, rpn), **_COUNT)
    t_expert = 0
    if b.moe:
        # the routed experts' gradients, reduced over the ranks that hold the same experts
        rpn_e = q("rpn_exp", comm.dp_ranks_per_node(S.apn, b.G_exp), **_COUNT)
        nodes_e = q("nodes_exp", comm.dp_nodes_spanned(b.dp_exp, rpn_e), **_COUNT)
        b.expert = lambda msg: comm.dp_allreduce(msg, b.dp_exp, rpn_e, nodes_e, BW_inter, "expert DP",  # noqa: E731
                                                 idle=S.P_exp <= 0)
        g_exp = q("M_grad_exp", b.Wg_def * b.share / b.G_exp * S.f_lora ** S.lora, **_NONNEG)
        t_expert = fw.only_with_experts(S.P_exp, q("T_dp_expert", b.expert(g_exp), **_NONNEG))
    t_dp0 = q("T_dp_allreduce", comm.dp_allreduce(grad, b.dp_grad, rpn, nodes, BW_inter) + t_expert, **_NONNEG)
    if b.on("zero3_gather") and b.transformer:
        # ZeRO-3 / FSDP: the gradients' ReduceScatter (half the all-reduce) once, and the weights' two
        # AllGathers (forward, backward: one all-reduce's time of the whole weights) in every micro-step; under the
        # MoE layout each rank gathers its experts over the expert data-parallel ranks
        W = b["W"]
        own = 0
        if b.moe:
            w_exp = q("M_weight_exp", W * b.share / b.G_exp, **_NONNEG)
            own = fw.only_with_experts(S.P_exp, q("T_dp_gather_exp", b.expert(w_exp), **_NONNEG))
        w_msg = q("M_weight_msg", W * dense / (S.tp * S.pp), **_POS)
        t_gather = q("T_dp_gather", comm.dp_allreduce(w_msg, b.dp_grad, rpn, nodes, BW_inter) + own, **_NONNEG)
        # weights held gathered through a pipelined step (fsdp_pipeline) are gathered once, not in every micro-step:
        # one AllGather of them and one ReduceScatter of the gradients, ZeRO-1's and ZeRO-2's all-reduce
        b.dp_sync = ext_terms.zero3_sync(t_dp0, t_gather, b.held, S.GA, S.m)
    else:
        b.dp_sync = t_dp0


@_section('Tensor-, expert- and context-parallel communication')
def _model_parallel(b: _Builder) -> None:
    """TP collectives and EP all-to-alls of one step (docs/contract.md §2.6), and the extended model's
    context-parallel exchange; ``b.again`` counts a recomputed forward's collectives."""
    S, q = sym, b.q
    msg = q("M_act_msg", b["lb"] * b.s_loc * S.H * b.s_el, **_NONNEG)
    nl = q("L_tp", CeilDiv(sp.Max(1, S.L), S.pp), **_COUNT)
    again = b.again
    if b.on("sequence_parallel"):
        alone = sp.Eq(S.tp, 1)
        beta_tp = q("beta_tp", ext_terms.group_link(S.tp, S.apn, S.BW_intra, b["BW_inter"], "TP", alone), **_POS)
        alpha_tp = q("alpha_tp", ext_terms.group_link(S.tp, S.apn, S.alpha_nv, S.alpha_fab, "TP", alone),
                     **_NONNEG)
        pair = q("T_sp_pair", ext_terms.sp_pair(msg, S.tp, beta_tp, alpha_tp), **_NONNEG)
        t_tp1 = q("T_tp_layer", ext_terms.tp_collective(msg, S.tp, beta_tp, alpha_tp, S.sp, pair), **_NONNEG)
        t_tp_def = again * S.n_ar * nl * t_tp1
    else:
        t_tp_def = again * comm.tp_allreduces(msg, S.tp, nl, S.apn, b["BW_inter"])
    q("T_tp_allreduce", t_tp_def, **_NONNEG)
    if b.on("moe_per_layer") and b.moe:
        # each rank dispatches its 1 / N_TP of the replica's tokens over the EP group's link
        alone = sp.Eq(S.ep, 1)
        g = S.ep * S.etp
        beta_ep = q("beta_ep", ext_terms.group_link(g, S.apn, S.BW_intra, b["BW_inter"], "EP", alone), **_POS)
        alpha_ep = q("alpha_ep", ext_terms.group_link(g, S.apn, S.alpha_nv, S.alpha_fab, "EP", alone), **_NONNEG)
        routed = _routed(b, msg)
        t_ep_def = S.n_a2a * AllToAll(routed, S.ep, beta_ep, alpha_ep)
        # expert tensor parallelism: the N_ETP ranks that split an expert's matrices all-gather the tokens they
        # received before it and reduce-scatter its output after it (each of a layer's two passes, forward and
        # backward: a ReduceScatter and an AllGather of the N_ETP ranks' tokens)
        alone_etp = sp.Eq(S.etp, 1)
        beta_etp = q("beta_etp", ext_terms.group_link(S.etp, S.apn, S.BW_intra, b["BW_inter"], "ETP", alone_etp),
                     **_POS)
        alpha_etp = q("alpha_etp", ext_terms.group_link(S.etp, S.apn, S.alpha_nv, S.alpha_fab, "ETP", alone_etp),
                      **_NONNEG)
        gathered = q("M_etp", S.etp * routed, **_NONNEG)
        t_etp = q("T_etp_layer", ext_terms.sp_pair(gathered, S.etp, beta_etp, alpha_etp), **_NONNEG)
        # (a model without routed-expert weights has no expert matrices to split: no gathers)
        t_ep_def = again * nl * q("T_ep_layer", t_ep_def + fw.only_with_experts(S.P_exp, S.n_a2a / 2 * t_etp),
                                  **_NONNEG)
    elif b.on("moe_per_layer"):
        # each EP rank exchanges its own tokens: 1 / N_EP of the replica's
        t_ep_def = again * S.n_a2a * nl * comm.ep_alltoall(_routed(b, msg), S.ep, b["BW_inter"])
    else:
        t_ep_def = comm.ep_alltoall(msg * S.k_e * S.iota, S.ep, b["BW_inter"])
    q("T_ep_alltoall", t_ep_def, **_NONNEG)
    b.extra = []          # the extended model's communication terms, in step order
    if b.cp != 1:
        _context_parallel(b, msg, nl)


def _context_parallel(b: _Builder, msg, nl) -> None:
    """The extended model's key/value exchange of context parallelism, per layer and per step."""
    S, q, cp = sym, b.q, b.cp
    alone = sp.Eq(cp, 1)
    M_kv = q("M_kv", ext_terms.kv_bytes(msg, S.kvf, S.tp, cp), **_NONNEG)
    beta_cp = q("beta_cp", ext_terms.group_link(S.tp * cp, S.apn, S.BW_intra, b["BW_inter"], "CP", alone), **_POS)
    alpha_cp = q("alpha_cp", ext_terms.group_link(S.tp * cp, S.apn, S.alpha_nv, S.alpha_fab, "CP", alone),
                 **_NONNEG)
    t_cp1 = q("T_cp_layer", ext_terms.cp_layer_exchange(M_kv, cp, beta_cp, alpha_cp, S.rc,
                                                        b.on("recompute_collectives")), **_NONNEG)
    t_cp0 = q("T_cp_exchange", nl * t_cp1, **_NONNEG)
    if b.on("cp_overlap"):
        # ring attention: the exchange runs beside the attention compute of the step, at least one ring step exposed
        t_att = q("T_att", b.mult * (b.F - S.F) * S.s * b["lb"] / (b["G"] * b.R_att), **_NONNEG)
        t_cp0 = sp.Piecewise((fw.overlapped(t_cp0, t_att, t_cp0 / cp), sp.Eq(S.cov, 1)), (t_cp0, True))
    b.extra.append(q("T_cp", S.c * t_cp0, **_NONNEG))


@_section('Pipeline')
def _pipeline(b: _Builder) -> None:
    """The extended model's stage-to-stage sends, then the bubble (docs/contract.md §2.7)."""
    S, q = sym, b.q
    if b.on("pipeline_p2p") and b.transformer:
        N = b["N"]
        beta_pp = q("beta_pp", ext_terms.stage_link(N, S.apn, S.BW_intra, b["BW_inter"], S.pp), **_POS)
        alpha_pp = q("alpha_pp", ext_terms.stage_link(N, S.apn, S.alpha_nv, S.alpha_fab, S.pp), **_NONNEG)
        n_p2p = q("n_p2p", ext_terms.critical_sends(S.pp, S.v, S.m), integer=True, nonnegative=True)
        b.extra.append(q("T_p2p", S.c * n_p2p * ext_terms.pipeline_send(b["lb"], b.s_loc, S.H, b.s_el, S.tp, S.m,
                                                                        beta_pp, alpha_pp), **_NONNEG))
    q("bubble_fraction", BubbleFraction(S.pp, S.v, S.m), **_NONNEG)
    q("T_bubble", BubbleTime(b["T_node"], S.pp, S.v, S.m), **_NONNEG)
    b.optimizer = []
    if b.on("optimizer_step") and b.transformer:
        P_upd = q("P_update", sp.Add(*(memory.zero_sharded(p * b["f_train"], n, S.z, 1) for p, n in b.shards)),
                  **_POS)
        b.optimizer.append(q("T_opt", ext_terms.OptimizerUpdateTime(P_upd, S.b_upd, S.BW_hbm), **_POS))


@_section('Step assembly')
def _step(b: _Builder) -> None:
    """The step: communication with congestion, overlap, the sum of its terms, the straggler, and the
    fleet's figures (docs/contract.md §2.8)."""
    S, q = sym, b.q
    t_dp = q("T_dp", S.c * b.dp_sync if b.on("ga_once") else S.c * b.dp_sync / S.GA)
    t_tp = q("T_tp", S.c * b["T_tp_allreduce"])
    t_ep = q("T_ep", S.c * b["T_ep_alltoall"])
    q("T_comm", t_dp + t_tp + t_ep + sum(b.extra))
    t_dpx_def = comm.exposed_dp(t_dp, S.ov, b["dp"])
    # ---- issue 24: the per-layer overlap schedule ---- begin
    if b.on("layer_overlap") and b.transformer:
        # under overlap, each layer's share of the AllReduce beside the next layer's backward (the book's
        # per-layer schedule) in place of the fixed share eta_ov: what the schedule adds to the backward pass
        t_bwd = q("T_bwd", comm.backward_time(b["T_node"], b.mult), **_POS)
        t_layer = q("T_dp_layer", t_dp / b["L_tp"], **_NONNEG)
        # the term's formula, not the term: its max is then one of the model's decisions (a regime of its own)
        on = sp.And(sp.Eq(S.lov, 1), sp.Eq(S.ov, 1))
        t_dpx_def = sp.Piecewise((comm.layer_overlap_exposed(t_bwd, t_layer, b["L_tp"], idle=sp.Not(on)), on),
                                 (t_dpx_def, True))
    # ---- issue 24: the per-layer overlap schedule ---- end
    if b.on("fsdp_overlap") and b.transformer:
        # prefetched gathers and the reduction beside the backward: what the replica's compute cannot cover, at
        # least one layer's share
        t_dpx_def = sp.Piecewise((fw.overlapped(t_dp, b["T_node"], t_dp / b["L_tp"]),
                                  sp.And(sp.Eq(S.fov, 1), S.z >= 3)), (t_dpx_def, True))
    t_dpx = q("T_dp_exposed", t_dpx_def)
    if b.on("tp_overlap"):
        t_tp = q("T_tp_exposed", ext_terms.exposed_tp(t_tp, S.tov))
    if b.on("ep_overlap") and b.transformer:
        # each microbatch's all-to-alls beside another microbatch's compute: what the share eta_epov of the
        # replica's compute beside which they can run cannot cover, at least one microbatch's share (all of it with
        # one microbatch)
        t_ep = q("T_ep_exposed", sp.Piecewise((fw.overlapped(t_ep, S.eta_epov * b["T_node"], t_ep / (S.m * S.GA)),
                                               sp.Eq(S.epov, 1)), (t_ep, True)), **_NONNEG)
    terms = (b["T_node"], t_dpx, t_tp, t_ep, *b.extra, b["T_bubble"], *b.optimizer)      # as STEP_ORDER reads
    b.step = tuple(t.name for t in terms)
    step = q("T_step", comm.straggled(q("T_sync", sp.Add(*terms)), S.f_s))
    se = q("scaling_efficiency", b["T_node"] / step)
    q("mfu", b["mfu_node"] * se)
    q("effective_throughput", b["dp"] * (b["lb"] / b["T_node"]) * se)


#: The sections of a step, in the order the model defines its quantities.
SECTIONS = (_decomposition, _compute, _memory, _roofline, _data_parallel, _model_parallel, _pipeline, _step)


def _as_variant(variant=Variant(), fidelity=None, family=None, without=None) -> tuple:
    """``build_model``'s arguments as one :class:`Variant`: a Variant, or a fidelity's name, with the choices
    given by name (``fidelity``, ``family``, ``without``: the mechanisms priced as mlsysim prices them)."""
    if isinstance(variant, str):
        if fidelity is not None:
            raise TypeError(f"build_model() got the fidelity twice: {variant!r} and fidelity={fidelity!r}")
        variant, fidelity = Variant(), variant
    elif not isinstance(variant, Variant):
        raise TypeError(f"build_model()'s variant must be a Variant or a fidelity ({', '.join(map(repr, FIDELITIES))})"
                        f", got {variant!r}")
    if fidelity is not None and fidelity not in FIDELITIES:
        raise ValueError(f"fidelity must be one of {', '.join(map(repr, FIDELITIES))}, got {fidelity!r}")
    if isinstance(without, str):
        without = (without,)
    named = dict(fidelity=fidelity, family=family, off=None if without is None else tuple(without))
    named = {k: v for k, v in named.items() if v is not None}
    return (replace(variant, **named) if named else variant), None, None, None


@cached_per_arguments(normalize=_as_variant)
def build_model(variant: Variant = Variant(), fidelity=None, family=None, without=None) -> StepTimeModel:
    """Build (once per variant) the ordered model of one distributed training step, section by section
    (:data:`SECTIONS`: decomposition, compute, memory, roofline, data parallelism, model parallelism, pipeline,
    step).

    ``variant``: a :class:`Variant`, or the name of a fidelity; ``fidelity`` (``"mlsysim"``, ``"extended"``),
    ``family`` (``"transformer"``, ``"generic"``) and ``without`` (mechanisms of the extended model priced as
    mlsysim prices them) choose by name, as ``DistributedModel(fidelity=..., without=...)`` does:

    >>> build_model("extended") is build_model(fidelity="extended") is build_model(Variant(fidelity="extended"))
    True
    >>> "T_cp" in build_model("extended"), "T_cp" in build_model("extended", without=["context_parallel"])
    (True, False)
    """
    b = _Builder(variant)
    sections = []
    for section in SECTIONS:
        before = len(b.items)
        section(b)
        sections.append((section.title, tuple(q.name for q in b.items[before:])))
    return StepTimeModel(variant, b.items, b.step, tuple(sections), b.memory)
