"""The checks of a configuration, as one declarative table: mlsysim's in mlsysim's order, then ours.

:func:`rules` lists every check once (``docs/contract.md`` §5). Each :class:`Rule` is a sympy condition on
the raw arguments and the model's quantities, so the same rule is compiled for one configuration
(:func:`check`: ``solve()`` raises the first broken rule, with mlsysim's exception type and message, and warns
as mlsysim warns) and for arrays (a sweep masks each configuration with the same message:
:mod:`mlsysim_sym.masks`). The ranges a check enforces are the parameter table's
(:attr:`mlsysim_sym.symbols.Param.range`); the extended model's own checks exist in the extended model only.

Examples
--------
>>> from mlsysim_sym.checks import rules
>>> rules()[0].message
'tp_size must be >= 1, got {tp_size}'
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import sympy as sp

from . import _shipped, notation
from .compile import Fractional, NonFinite, lambdify_numeric, numeric_form
from .inputs import FLAG_KEYWORDS, PRECISION_BYTES, _SUPPORTED, field_values, static_values
from .model import Variant, build_model
from .symbols import PARAMS, Kind, Origin, Param, keywords
from .terms.collectives import AllToAll, HierarchicalAllReduce, RingAllReduce
from .types import Fleet, Workload

if TYPE_CHECKING:         # annotations only: the arguments carry the checks' inputs
    from .arguments import Arguments


# --------------------------------------------------------------------------------------------
# The raw arguments the checks speak about
# --------------------------------------------------------------------------------------------
def _raw_name(p: Param) -> str:
    return p.argument or p.name


#: Parameter symbol -> the raw symbol of its argument. The checks speak about raw arguments
#: (any real number, as a user may pass), not the model's symbols, whose assumptions (a
#: positive integer ``tp``) would decide ``tp < 1`` before it is ever checked.
RAW: Dict[sp.Symbol, sp.Symbol] = {p.symbol: sp.Symbol(_raw_name(p), real=True) for p in PARAMS.values()}
A = type("Arguments", (), {_raw_name(p): RAW[p.symbol] for p in PARAMS.values()})
#: Facts the checks read that are not numbers: whether the precision is a string, is supported,
#: and falls back to the FP16 peak on mlsysim's Engine path.
NOT_A_STRING, UNSUPPORTED, PEAK_FALLBACK = sp.symbols("precision_not_a_string precision_unsupported "
                                                      "precision_peak_fallback")
FACTS = (NOT_A_STRING, UNSUPPORTED, PEAK_FALLBACK)
FACT_NAMES = tuple(x.name for x in FACTS)
#: mlsysim's message for a precision it does not know (``resolve_precision``), formatted with ``precision``.
UNSUPPORTED_PRECISION = "precision '{precision}' is not supported. Supported precision values: " + _SUPPORTED


def _q(name: str) -> sp.Symbol:
    """A model quantity inside a rule (replaced by its expression when the rule is compiled)."""
    return sp.Symbol(name, real=True)


@dataclass(frozen=True)
class Rule:
    """One check: ``broken`` (true where the check fails) when ``when`` holds.

    ``broken`` and ``when`` are sympy conditions on the raw arguments (:data:`A`),
    model quantities (``_q("dp")``) and :data:`FACTS`. ``message`` is formatted with
    the arguments as given, the quantities' values, and the ``shows`` expressions.

    ``scope``: ``"solve"`` (``solve()`` raises it, sweeps mask it) or ``"sweep"``
    (sweeps only: values ``solve()`` computes with, as mlsysim does, but a sweep
    should not). ``warning``: warn, do not raise (``solve()`` only).
    ``transformer``: the check exists for transformers only. ``numeric``: the
    arguments it reads must be real numbers (a ``TypeError`` names a non-number);
    ``bools``: a bool counts as a number here (mlsysim computes with ``True`` as 1
    except where it multiplies a quantity with units). ``caller``: a warning points at
    the caller's line (else at the package's, as mlsysim's own warning does).
    ``lowered``: the first check mlsysim makes after lowering the workload (the
    lowering's own errors come just before it). ``extended``: the check exists in the
    extended model only; ``generic_only``: for workloads other than transformers only;
    ``mechanism`` / ``unless``: only where that mechanism is / is not priced.
    """

    broken: sp.Basic
    message: str
    when: sp.Basic = sp.true
    error: type = ValueError
    scope: str = "solve"
    warning: bool = False
    transformer: bool = False
    numeric: bool = True
    bools: bool = True
    shows: Tuple[Tuple[str, sp.Basic], ...] = ()
    caller: bool = True
    lowered: bool = False
    extended: bool = False
    generic_only: bool = False
    mechanism: Union[None, str, Tuple[str, ...]] = None
    unless: Union[None, str, Tuple[str, ...]] = None

    def applies(self, variant: Variant) -> bool:
        """Whether the check exists in ``variant``'s model: ``mechanism`` (a name or a tuple of names), when
        given, must be priced there, ``unless`` (the same) must not (the MoE layout replaces the split checks;
        with context parallelism off, ``cp_size`` is folded into data parallelism and checked as mlsysim's
        model checks it)."""
        def priced(name):       # these mechanisms price transformers only (the generic-only checks say so)
            return variant.on(name) and (variant.family == "transformer" or self.generic_only)
        need = (self.mechanism,) if isinstance(self.mechanism, str) else (self.mechanism or ())
        bar = (self.unless,) if isinstance(self.unless, str) else (self.unless or ())
        return all(priced(n) for n in need) and not any(priced(n) for n in bar)

    @property
    def condition(self) -> sp.Basic:
        return self.broken if self.when is sp.true else sp.ITE(self.when, self.broken, sp.false)

_ARGUMENTS = frozenset(_raw_name(p) for p in PARAMS.values())


def _outside(x: sp.Symbol, r) -> sp.Basic:
    """True where ``x`` lies outside the range ``r`` (NaN is not outside: it has its own check)."""
    below = (x <= r.lo) if r.lo_open else (x < r.lo)
    above = (x >= r.hi) if r.hi_open else (x > r.hi)
    if r.hi == math.inf:
        return below
    return sp.Or(below, above) if r.lo != -math.inf else above


def _range_rule(name: str, label: Optional[str] = None, **kw) -> Rule:
    """The check of the parameter table's range of ``name`` (:attr:`~mlsysim_sym.symbols.Param.range`), in
    mlsysim's words: ``tp_size must be >= 1, got 0``, ``efficiency must be in [1e-09, 1.0], got 2``."""
    p = keywords()[name]
    return Rule(_outside(getattr(A, name), p.range), f"{label or name} must be {p.range.text}, got {{{name}}}", **kw)


def _ring(msg, bw, lat, when) -> Tuple[Rule, ...]:
    """The argument checks of mlsysim's ``calc_ring_allreduce_time`` / ``calc_all_to_all_time``."""
    return (Rule(msg < 0, "message_bytes must be non-negative, got {msg} B", when, shows=(("msg", msg),)),
            Rule(bw <= 0, "bandwidth_bytes_s must be positive, got {bw} B/s", when, shows=(("bw", bw),)),
            Rule(lat < 0, "latency_s must be non-negative, got {lat} s", when, shows=(("lat", lat),)))


def _calls(expr, cond=sp.true):
    """``(cost term, condition)`` of every collective term of a definition, in order, with the
    condition under which its branch is taken."""
    if isinstance(expr, sp.Piecewise):
        earlier = []
        for e, c in expr.args:
            yield from _calls(e, sp.And(cond, c, *(sp.Not(x) for x in earlier)))
            earlier.append(c)
    elif isinstance(expr, (RingAllReduce, AllToAll, HierarchicalAllReduce)):
        yield expr, cond
    else:
        for a in expr.args:
            yield from _calls(a, cond)


def _collective_rules() -> Tuple[Rule, ...]:
    """mlsysim's collective helpers reject a negative message, a bandwidth <= 0 and a negative latency,
    in the order ``DistributedModel.solve`` calls them: DP (when dp > 1; the fabric's bandwidth over its
    oversubscription is computed first), then TP, then EP. The calls are the cost terms of the model's
    own definitions, each under the condition of its branch."""
    m = build_model()       # the communication definitions are the same in every variant
    placeholders = {m.quantity(n).symbol: _q(n) for n in m}
    out = [Rule(sp.Eq(A.oversubscription_ratio, 0), "float division by zero", _q("dp") > 1,
                error=ZeroDivisionError)]
    for name, gate in (("T_dp_allreduce", _q("dp") > 1), ("T_tp_allreduce", A.tp_size > 1),
                       ("T_ep_alltoall", A.ep_size > 1)):
        definition = m.definition(name).xreplace(placeholders).xreplace(RAW)
        for term, cond in _calls(definition):
            when = sp.And(gate, cond)
            if isinstance(term, HierarchicalAllReduce):
                msg, nodes, ranks, bw_in, _, bw_out, lat_out = term.args
                out.append(Rule(bw_in <= 0, "intra_node_bw must be positive, got {bw} B/s", when,
                                shows=(("bw", bw_in),)))
                ring_msg, _, ring_bw, ring_lat = HierarchicalAllReduce.inter_ring(msg, nodes, ranks, bw_out, lat_out)
                out += _ring(ring_msg, ring_bw, ring_lat, when)
            else:
                msg, _, bw, lat = term.args
                out += _ring(msg, bw, lat, when)
    return tuple(out)


#: What the five-way split means: it holds only without ``moe_layout``, where expert parallelism multiplies the
#: accelerators as in mlsysim's model (a layout the degrees of a framework's run need not fit).
_BESIDE = (" (without moe_layout, expert parallelism multiplies the accelerators beside the other degrees, as in "
           "mlsysim's model)")


def _extended_rules(N) -> Tuple[Rule, ...]:
    """The extended model's checks, after mlsysim's argument checks and before its split checks: its
    keywords (finite, whole where they count, in their range: the parameter table's), then the five-way split
    (``G = N_TP N_PP N_EP N_CP`` there)."""
    own: List[Rule] = []
    for name, p in keywords().items():
        if p.fidelity != "extended" or p.kind is Kind.FLAG:     # the switches are read for their truth
            continue
        x, r = getattr(A, name), p.range
        if p.kind is Kind.COUNT:          # mlsysim has no such count: a bool is not one
            own += [Rule(NonFinite(x), f"{name} must be finite, got {{{name}}}", extended=True, bools=False),
                    Rule(Fractional(x), f"{name} must be a whole number, got {{{name}}}", extended=True,
                         bools=False),
                    _range_rule(name, extended=True, bools=False)]
        else:
            own.append(Rule(sp.Or(NonFinite(x), _outside(x, r)), f"{name} must be {r.text}, got {{{name}}}",
                            extended=True, bools=False))
    # mlsysim's factors in their ranges too, which mlsysim does not check (a congestion factor of -1 gave an MFU
    # of 2.5 and a negative communication time; the command line refuses it by the same range)
    for name, p in keywords().items():
        if p.fidelity == "mlsysim" and p.kind is Kind.REAL:
            x = getattr(A, name)
            own += [Rule(NonFinite(x), f"{name} must be finite, got {{{name}}}", extended=True),
                    Rule(_outside(x, p.range), f"{name} must be {p.range.text}, got {{{name}}}", extended=True)]
    # mlsysim's parallel degrees: it multiplies a fractional one into its split check ("TP(2.5) * PP(1) must
    # divide ..."); the extended model names it first
    # (a NaN or an infinity is left to the split check, as mlsysim's model leaves it)
    degrees = [Rule(Fractional(getattr(A, name)), f"{name} must be a whole number, got {{{name}}}",
                    sp.Not(NonFinite(getattr(A, name))), extended=True)       # (True is 1, as mlsysim reads it)
               for name in ("tp_size", "pp_size", "ep_size")]
    cp = A.cp_size
    # the five-way product of the arguments (not the quantity G, which excludes N_CP where context
    # parallelism is priced as mlsysim prices it: folded into data parallelism)
    G = A.tp_size * A.pp_size * A.ep_size * cp
    return (
        *degrees,
        *own[:3],
        Rule(cp > 1, "cp_size ({cp_size}) > 1 needs a transformer workload: context parallelism splits sequences",
             extended=True, generic_only=True, mechanism="context_parallel"),
        *own[3:],
        Rule(A.seq_len < cp, "seq_len ({seq_len}) must be >= cp_size ({cp_size}): context parallelism gives each "
             "rank a part of every sequence", cp > 1, extended=True, transformer=True, mechanism="context_parallel"),
        Rule(sp.Ne(sp.Mod(A.seq_len, cp), 0), "seq_len ({seq_len}) must be a multiple of cp_size ({cp_size}): "
             "context parallelism gives each rank an equal part of every sequence", sp.And(cp > 1, A.seq_len >= cp),
             extended=True, transformer=True, mechanism="context_parallel"),
        # (only without moe_layout: EP beside the other degrees, which a layout of frameworks' does not read so)
        Rule(G > N, "Infeasible 5D Parallelism: TP({tp_size}) * PP({pp_size}) * EP({ep_size}) * CP({cp_size}) > "
             "Total({N})" + _BESIDE, extended=True, mechanism="context_parallel", unless="moe_layout"),
        Rule(sp.Ne(sp.Mod(N, G), 0), "Infeasible 5D Parallelism: TP({tp_size}) * PP({pp_size}) * EP({ep_size}) * "
             "CP({cp_size}) must divide total accelerators ({N}) exactly" + _BESIDE, extended=True,
             mechanism="context_parallel", unless="moe_layout"),
        *_moe_layout_rules(N),
        # the GEMM and attention rates and the slowest stage are shares of a token's forward FLOPs: none, no share
        Rule(sp.And(A.inference_flops <= 0, sp.Eq(A.attention_flops, 0), sp.Eq(A.window_attention_flops, 0)),
             "inference_flops must be > 0 for a transformer without an architecture card in the extended model (it "
             "prices a token's FLOPs at its GEMMs' and attention's rates), got {F}",
             shows=(("F", A.inference_flops),), extended=True, transformer=True),
        *_schedule_rules(),
        *_head_rules(),
    )


def _schedule_rules() -> Tuple[Rule, ...]:
    """Gradient accumulation splits a replica's samples into micro-steps and each micro-step into microbatches (a
    pipeline's, and the model multiplies a step's passes by the microbatch count without one too): fewer samples
    than microbatches times micro-steps is no schedule a framework runs. mlsysim prices a fraction of a sample, and
    so does the model: a warning (in the extended model; the twin keeps mlsysim's silence)."""
    lb = _q("lb")
    return (
        Rule(A.microbatch_count * A.gradient_accumulation_steps > lb, "microbatch_count ({microbatch_count}) x "
             "gradient_accumulation_steps ({gradient_accumulation_steps}) > the {lb} samples a replica trains per "
             "step: microbatches of less than one sample, which no framework runs (priced as mlsysim prices them)",
             warning=True, shows=(("lb", lb),), extended=True, transformer=True),
        Rule(sp.And(A.layers > 0, A.pp_size * A.v_stages > A.layers), "pp_size ({pp_size}) x v_stages "
             "({v_stages}) > the {layers} layers: pipeline stages without a layer, which no framework runs (priced "
             "as mlsysim prices them)", warning=True, shows=(("layers", A.layers),), extended=True,
             transformer=True),
    )


def _head_rules() -> Tuple[Rule, ...]:
    """Tensor parallelism splits an architecture card's attention by heads, as Megatron-Core requires
    (megatron/core/transformer/transformer_config.py, ``TransformerConfig.__post_init__``): ``tp_size`` divides the
    attention heads, and is a multiple or a divisor of the key/value heads (the query groups). A multiple
    replicates them, which Megatron-LM accepts since f7dfb99795 (2025-12-07, "Support TP greater than
    num_kv_heads"; earlier releases required TP to divide them). A record that lists no heads has none (0): not
    checked."""
    tp, Hq, Hkv = A.tp_size, A.attention_heads, A.kv_heads
    kw = dict(extended=True, transformer=True)
    return (
        # the heads a record lists as mlsysim reads them (types.record_heads), or set by a field: a key/value head
        # serves a whole group of query heads (Max: no division by a record's 0)
        Rule(sp.Ne(sp.Mod(Hq, sp.Max(Hkv, 1)), 0), "kv_heads ({kv_heads}) must divide the attention heads of "
             "each layer ({attention_heads}): each key/value head serves a group of query heads",
             sp.And(Hq > 0, Hkv > 0), shows=(("kv_heads", Hkv), ("attention_heads", Hq)), **kw),
        Rule(sp.And(Hq > 0, sp.Ne(sp.Mod(Hq, tp), 0)), "tp_size ({tp_size}) must divide the attention heads of "
             "each layer ({attention_heads}): each rank computes whole heads", tp > 1,
             shows=(("attention_heads", Hq),), **kw),
        Rule(sp.And(Hkv > 0, sp.Ne(sp.Mod(Hkv, tp), 0), sp.Ne(sp.Mod(tp, Hkv), 0)), "tp_size ({tp_size}) must be "
             "a multiple or a divisor of the key/value heads of each layer ({kv_heads}): each rank holds whole "
             "key/value heads, or one of them replicated", tp > 1, shows=(("kv_heads", Hkv),), **kw),
    )


def _moe_layout_rules(N) -> Tuple[Rule, ...]:
    """The splits of the MoE layout (Megatron-Core's): the attention's TP x PP x CP and the experts' EP x ETP x PP
    must each divide the accelerators (EP is carved out of a stage's tensor-, data- and context-parallel ranks:
    Megatron-Core's MoE parallel folding)."""
    dense = A.tp_size * A.pp_size * A.cp_size
    split = A.tp_size * A.pp_size
    experts = A.ep_size * A.etp_size * A.pp_size
    kw = dict(extended=True, mechanism="moe_layout")
    E = A.experts
    return (
        # an architecture card says how many routed experts a layer has (a record without one: 0, not checked)
        Rule(sp.And(sp.Eq(E, 0), A.output_flops > 0), "ep_size ({ep_size}) > 1 needs a mixture of experts: the "
             "architecture card has no routed experts", A.ep_size > 1, transformer=True, **kw),
        # a card's experts, as its overrides may set them: a token meets at most every expert, and the routed
        # experts are part of the parameters
        Rule(sp.And(E > 0, A.active_experts_per_token > E), "active_experts_per_token ({k_e}) must be <= the "
             "routed experts of each MoE layer ({experts})", transformer=True,
             shows=(("k_e", A.active_experts_per_token), ("experts", E)), **kw),
        Rule(A.expert_parameters > A.parameters, "expert_parameters ({P_exp:.6g}) must be <= parameters ({P:.6g}): "
             "the routed experts are part of the model", transformer=True,
             shows=(("P_exp", A.expert_parameters), ("P", A.parameters)), **kw),
        Rule(sp.And(sp.Eq(E, 0), A.output_flops > 0), "etp_size ({etp_size}) > 1 needs a mixture of experts: the "
             "architecture card has no routed experts whose matrices it would split", A.etp_size > 1,
             transformer=True, **kw),
        # Megatron-Core's grouped experts split each expert's MLP width over the expert-TP ranks (a record without a
        # card has no width: 0, not checked)
        Rule(sp.And(A.expert_ffn > 0, sp.Ne(sp.Mod(A.expert_ffn, A.etp_size), 0)), "etp_size ({etp_size}) must "
             "divide the width of each routed expert's MLP ({d_ffe}): each rank holds a whole share of every "
             "expert's matrices", A.etp_size > 1, transformer=True, shows=(("d_ffe", A.expert_ffn),), **kw),
        Rule(sp.And(E > 0, sp.Ne(sp.Mod(E, A.ep_size), 0)), "ep_size ({ep_size}) must divide the routed experts "
             "of each MoE layer ({experts}): each rank holds whole experts", A.ep_size > 1, transformer=True,
             shows=(("experts", E),), **kw),
        Rule(dense > N, "Infeasible parallelism: TP({tp_size}) * PP({pp_size}) * CP({cp_size}) > Total({N})",
             **dict(kw, mechanism=("moe_layout", "context_parallel"))),
        Rule(sp.Ne(sp.Mod(N, dense), 0), "Infeasible parallelism: TP({tp_size}) * PP({pp_size}) * CP({cp_size}) "
             "must divide total accelerators ({N}) exactly.", **dict(kw, mechanism=("moe_layout", "context_parallel"))),
        # context parallelism off: CP folded into data parallelism, the attention's replica is TP x PP
        Rule(split > N, "Infeasible parallelism: TP({tp_size}) * PP({pp_size}) > Total({N})",
             unless="context_parallel", **kw),
        Rule(sp.Ne(sp.Mod(N, split), 0), "Infeasible parallelism: TP({tp_size}) * PP({pp_size}) must divide total "
             "accelerators ({N}) exactly.", unless="context_parallel", **kw),
        Rule(experts > N, "Infeasible expert parallelism: EP({ep_size}) * ETP({etp_size}) * PP({pp_size}) > "
             "Total({N})", **kw),
        Rule(sp.Ne(sp.Mod(N, experts), 0), "Infeasible expert parallelism: EP({ep_size}) * ETP({etp_size}) * "
             "PP({pp_size}) must divide total accelerators ({N}) exactly: expert parallelism is carved out of each "
             "stage's tensor-, data- and context-parallel ranks", **kw),
    )


@lru_cache(maxsize=1)
def rules() -> Tuple[Rule, ...]:
    """Every check, in order: mlsysim's (``docs/contract.md`` §5), then ours, then the sweeps' own."""
    N, G, dp, f_train = _q("N"), _q("G"), _q("dp"), _q("f_train")
    mlsysim = (
        # V1-V8: DistributedModel.solve's argument checks, in its order (the ranges: the parameter table's)
        *(_range_rule(n) for n in ("tp_size", "pp_size", "ep_size", "batch_size", "gradient_accumulation_steps",
                                   "efficiency", "overlap_efficiency", "moe_routing_imbalance_factor")),
        # V9-V10: the split must fit the fleet exactly
        # the extended model's own keywords, and its split (G includes N_CP there)
        *_extended_rules(N),
        Rule(G > N, "Infeasible 4D Parallelism: TP({tp_size}) * PP({pp_size}) * EP({ep_size}) > Total({N})",
             unless="moe_layout"),
        Rule(sp.Ne(sp.Mod(N, G), 0), "Infeasible 4D Parallelism: TP({tp_size}) * PP({pp_size}) * EP({ep_size}) "
                                     "must divide total accelerators ({N}) exactly.", unless="moe_layout"),
        Rule(A.batch_size < dp, "batch_size ({batch_size}) < dp_size ({dp}): some ranks will be idle. "
                                "Using local_batch=1.", warning=True),
        # V11: the precision (resolve_precision), and the Engine path's warning when it has no peak for it
        # (mlsysim warns from inside its solver: a warning of the package, not of the caller's line)
        Rule(NOT_A_STRING, "precision must be a string, got {precision_type}", error=TypeError, numeric=False),
        Rule(UNSUPPORTED, UNSUPPORTED_PRECISION, numeric=False),
        Rule(sp.And(PEAK_FALLBACK, sp.Eq(G, 1)), "Precision '{precision_key}' not in {accelerator} precision_flops "
             "(available: {available}); using default peak_flops (FP16). Results may be inaccurate.",
             warning=True, numeric=False, caller=False),
        # here mlsysim lowers the workload: its errors are raised in this place (see check())
        # V12: TrainingMemoryModel's checks (transformers)
        _range_rule("seq_len", transformer=True, lowered=True),
        Rule(f_train < 0, "trainable_fraction must be in [0.0, 1.0], got {f_train}", sp.Ne(A.is_lora, 0),
             transformer=True),
        Rule(sp.Not(sp.Or(*(sp.Eq(A.zero_stage, k) for k in range(4)))), "zero_stage must be 0, 1, 2, or 3",
             transformer=True, numeric=False),
        # the collective helpers' own checks (non-physical hardware, or seq_len < 0)
        *_collective_rules(),
        # V13: calc_pipeline_bubble's checks (always called)
        _range_rule("microbatch_count", "n_microbatches"), _range_rule("v_stages"),
    )
    # ours: where mlsysim computes with NaN or inf (or fails inside pint or pydantic), name the argument
    ours: List[Rule] = []
    for name, p in keywords().items():
        if name in FLAG_KEYWORDS or p.fidelity != "mlsysim":     # the extended model's: checked above
            continue
        x = getattr(A, name)
        bools = name not in ("efficiency", "congestion_factor", "seq_len")   # mlsysim multiplies units by these
        ours.append(Rule(NonFinite(x), f"{name} must be finite, got {{{name}}}", transformer=name == "zero_stage",
                         bools=bools))
        if name in ("tp_size", "pp_size", "ep_size"):                        # mlsysim's result needs whole splits
            ours.append(Rule(Fractional(x), f"{name} must be a whole number, got {{{name}}}"))
    # sweeps only: non-physical record values and fractional counts (solve() computes with them, as mlsysim)
    sweep: List[Rule] = []
    for p in PARAMS.values():
        if p.kind is Kind.CONSTANT or p.argument is None or p.fidelity != "mlsysim":
            continue
        x = RAW[p.symbol]
        if p.origin is not Origin.SOLVE:
            sweep.append(Rule(NonFinite(x), f"{p.argument} must be finite, got {{{p.argument}}}", scope="sweep"))
            if p.symbol.is_positive:
                sweep.append(Rule(x <= 0, f"{p.argument} must be positive, got {{{p.argument}}}", scope="sweep"))
            elif p.symbol.is_nonnegative:
                sweep.append(Rule(x < 0, f"{p.argument} must be non-negative, got {{{p.argument}}}", scope="sweep"))
        if p.kind is Kind.COUNT and p.argument not in ("tp_size", "pp_size", "ep_size", "seq_len"):
            sweep.append(Rule(Fractional(x), f"{p.argument} must be a whole number, got {{{p.argument}}}",
                              scope="sweep"))
    return mlsysim + tuple(ours) + tuple(sweep)


@lru_cache(maxsize=1)
def _quantity_names() -> Tuple[str, ...]:
    """The model quantities the rules read (their placeholders' names), in model order."""
    used = set()
    for r in rules():
        used |= {s.name for s in r.broken.free_symbols | r.when.free_symbols}
        used |= {s.name for _, e in r.shows for s in e.free_symbols}
    return tuple(n for n in notation.QUANTITY_NAMES if n in used)


def _raw_expression(expr: sp.Basic, variant: Variant) -> sp.Basic:
    """A rule's expression with its quantities expanded, every parameter as its raw argument.

    The quantities are translated to raw arguments *before* they enter the rule: written
    in the model's symbols, ``BW_fab / osr <= 0`` would be decided False by sympy
    (both are declared positive) before a negative bandwidth could ever be checked.
    """
    return numeric_form(expr.xreplace(_raw_quantities(variant)))


@lru_cache(maxsize=None)
def _raw_quantities(variant: Variant) -> Dict[sp.Symbol, sp.Basic]:
    m = build_model(variant)
    return {_q(n): m.closed_form(n).xreplace(RAW) for n in _quantity_names() if n in m}


class CompiledRules:
    """The rules that apply to one variant and scope, compiled.

    * :attr:`first` (``math``, one configuration): ``(index of the first broken error
      rule or -1, then one flag per warning rule)``, all in one call, over the raw
      arguments in the order of ``args`` (plus the :data:`FACTS`). ``solve()``'s is
      shipped pre-generated (:mod:`mlsysim_sym._shipped`).
    * :meth:`broken` (``math``): one rule's condition, evaluated lazily (its
      ``when`` guards its ``broken``), for walking the table in order.
    * :meth:`array` (``numpy``): one rule's condition over arrays.
    """

    def __init__(self, variant: Variant, scope: str, args: Tuple[sp.Symbol, ...]):
        self.variant, self.scope = variant, scope
        transformer = variant.family == "transformer"
        keep = ("solve",) if scope == "solve" else ("solve", "sweep")
        extended = variant.fidelity == "extended"
        self.rules: Tuple[Rule, ...] = tuple(r for r in rules()
                                             if r.scope in keep and (transformer or not r.transformer)
                                             and (extended or not r.extended)
                                             and not (transformer and r.generic_only)
                                             and r.applies(variant))
        self._given_args = tuple(RAW[a] for a in args)
        self._one: Dict[int, tuple] = {}
        self._shows: Dict[tuple, tuple] = {}
        self._arrays: Dict[int, tuple] = {}

    @cached_property
    def conditions(self) -> Tuple[sp.Basic, ...]:
        """Each rule's condition, its quantities expanded, over raw arguments and the facts."""
        return tuple(_raw_expression(r.condition, self.variant) for r in self.rules)

    @cached_property
    def free(self) -> Tuple[Tuple[sp.Symbol, ...], ...]:
        """Per rule, every symbol its condition reads (raw arguments and facts), in :attr:`args` order."""
        return tuple(tuple(a for a in self.args if a in c.free_symbols) for c in self.conditions)

    @cached_property
    def free_positions(self) -> Tuple[Tuple[int, ...], ...]:
        """:attr:`free` as positions in :attr:`args`."""
        index = {a: k for k, a in enumerate(self.args)}
        return tuple(tuple(index[a] for a in free) for free in self.free)

    @cached_property
    def reads(self) -> Tuple[Tuple[str, ...], ...]:
        """Per rule, the raw arguments it reads (its quantities expanded), sorted."""
        return tuple(tuple(sorted({s.name for s in c.free_symbols} & _ARGUMENTS)) for c in self.conditions)

    @cached_property
    def args(self) -> Tuple[sp.Symbol, ...]:
        free = set().union(*(c.free_symbols for c in self.conditions))
        missing = free - set(self._given_args) - set(FACTS)
        return self._given_args + tuple(sorted(missing, key=str)) + FACTS

    @cached_property
    def errors(self) -> Tuple[int, ...]:
        return tuple(i for i, r in enumerate(self.rules) if not r.warning)

    @cached_property
    def warnings(self) -> Tuple[int, ...]:
        """The warning rules, in the order of the flags :attr:`first` returns after the error index."""
        return tuple(i for i, r in enumerate(self.rules) if r.warning)

    @property
    def first(self) -> Callable:
        """The compiled checks over :attr:`args` (shipped when the shipped ones take exactly these)."""
        return self.first_named[1]

    @cached_property
    def first_named(self) -> Tuple[Tuple[str, ...], Callable]:
        """``(argument names, function)`` of the compiled checks: the shipped ones of the variant when
        they take the given arguments first and the facts last (or when no order was asked for), else compiled
        over :attr:`args` (the given arguments, those only the checks read, the facts)."""
        shipped = _shipped.load(self.variant, (f"rules:{self.scope}",), kind="rules")
        given = tuple(a.name for a in self._given_args)
        if shipped is not None and (not given or (shipped[0][:len(given)] == given
                                                  and shipped[0][-len(FACT_NAMES):] == FACT_NAMES)):
            return shipped
        return tuple(a.name for a in self.args), lambdify_numeric(self.args, self.first_program(), "math")

    def first_program(self) -> List[sp.Basic]:
        """The expressions of :attr:`first`: the index of the first broken error rule, then the warnings."""
        pw = sp.Piecewise(*((i, self.conditions[i]) for i in self.errors), (-1, True))
        return [pw, *(self.conditions[i] for i in self.warnings)]

    def broken(self, i: int, named: Mapping[str, object]) -> bool:
        """Rule ``i`` at one point given as raw argument *name* -> number (absent: NaN; lazy: ``when``
        first)."""
        fn = self._one.get(i)
        if fn is None:
            args = self.free[i]
            fn = self._one[i] = (args, lambdify_numeric(args, [self.conditions[i]], "math", cse=False))
        args, f = fn
        return bool(f(*(named.get(a.name, math.nan) for a in args))[0])

    def _fields(self, i: int, backend: str):
        key = (i, backend)
        if key not in self._shows:
            r = self.rules[i]
            names = [n for n in _quantity_names() if "{" + n + "}" in r.message]
            exprs = [_raw_expression(_q(n), self.variant) for n in names] + \
                    [_raw_expression(e, self.variant) for _, e in r.shows]
            args = tuple(a for a in self.args if any(a in e.free_symbols for e in exprs))
            fn = lambdify_numeric(args, exprs, backend, cse=False) if exprs else None
            self._shows[key] = (names + [k for k, _ in r.shows], exprs, args, fn)
        return self._shows[key]

    def fields(self, i: int, values: Mapping[sp.Symbol, object], backend: str = "math") -> Dict[str, object]:
        """The message fields of rule ``i`` that are computed: quantities and ``shows`` (``values``
        maps raw symbols to numbers, or to arrays with ``backend="numpy"``)."""
        labels, _, args, fn = self._fields(i, backend)
        if not labels:
            return {}
        return dict(zip(labels, fn(*(values[a] for a in args))))

    def fields_named(self, i: int, named: Mapping[str, object]) -> Dict[str, object]:
        """:meth:`fields` at one configuration given as raw argument *name* -> number (absent: NaN)."""
        labels, _, args, fn = self._fields(i, "math")
        if not labels:
            return {}
        return dict(zip(labels, fn(*(named.get(a.name, math.nan) for a in args))))

    def field_arguments(self, i: int) -> Dict[str, frozenset]:
        """Per computed message field of rule ``i``, the raw arguments its value reads."""
        labels, exprs, _, _ = self._fields(i, "numpy")
        return {n: frozenset(e.free_symbols) for n, e in zip(labels, exprs)}

    def array(self, i: int) -> Tuple[Tuple[sp.Symbol, ...], Callable]:
        """``(args, fn)``: ``fn(*arrays)`` is rule ``i``'s broken mask over arrays (numpy, broadcasting)."""
        fn = self._arrays.get(i)
        if fn is None:
            args = self.free[i]
            fn = self._arrays[i] = (args, lambdify_numeric(args, [self.conditions[i]], "numpy"))
        return fn


def generated_rules_source(variant: Variant, args: Tuple[sp.Symbol, ...]) -> str:
    """The text of the pre-generated checks of ``solve()`` for one variant (``tools/generate_code.py``)."""
    r = compiled_rules(variant, "solve", args)
    fn = lambdify_numeric(r.args, r.first_program(), "math")
    return _shipped.source(variant, ("rules:solve",), tuple(a.name for a in r.args), fn)


def is_count(name: str) -> bool:
    """True for the quantities a message shows as a whole number (declared integer in the model)."""
    return bool(build_model().quantity(name).symbol.is_integer) if name in build_model() else False


@lru_cache(maxsize=None)
def compiled_rules(variant: Variant, scope: str, args: Tuple[sp.Symbol, ...]) -> CompiledRules:
    """The :class:`CompiledRules` of a variant and scope, with arguments in the order ``args``
    (model parameter symbols; cached)."""
    return CompiledRules(variant, scope, args)


def message(rule: Rule, given: Mapping[str, object], fields: Mapping[str, object]) -> str:
    """A rule's message: ``given`` are the arguments as the user passed them."""
    return rule.message.format(**{**given, **fields})


def facts(w: Workload, f: Fleet, precision) -> Dict[str, object]:
    """The precision facts of :data:`FACTS` and the strings its messages show."""
    acc = f.node.accelerator
    out = {"precision": precision, "precision_type": type(precision).__name__, "precision_key": None,
           "accelerator": acc.name, "available": str([k for k, _ in acc.precision_flops])}
    if not isinstance(precision, str):
        return {**out, "flags": (True, False, False)}
    key = precision.lower()
    if key not in PRECISION_BYTES:
        return {**out, "flags": (False, True, False)}
    fallback = (not w.is_transformer and acc.flops_for(key) is None and key not in ("fp16", "bf16")
                and bool(acc.precision_flops))
    return {**out, "precision_key": key, "flags": (False, False, fallback)}


def _real(v) -> bool:
    """A real number as mlsysim computes with it: Python's, or numpy's (a numpy bool is one, as ``True`` is)."""
    import numpy as np      # here: numpy is imported on first use
    return isinstance(v, (int, float, np.bool_, np.integer, np.floating))


def check(a: "Arguments", stacklevel: int = 3, verdict: Optional[tuple] = None) -> None:
    """Every rule of ``solve()`` in order at one configuration (:class:`~mlsysim_sym.arguments.Arguments` of
    scalars): warn, or raise the first broken one.

    With plain numbers the compiled :attr:`CompiledRules.first` says in one call which error rule breaks first
    and which warnings fire before it; otherwise (a numpy bool, a string, arithmetic that fails) the rules are
    walked in order, each argument's type checked where mlsysim would trip on it. The workload is lowered where
    mlsysim lowers it (after the precision), so its errors come in that place. ``verdict``: the compiled call's
    answer (:func:`verdict`), when the caller has it already.
    """
    w, f, args = a.workload, a.fleet, a.lowered
    fx = facts(w, f, a.precision)
    try:
        variant, static = a.static
        deferred = None
    except (ArithmeticError, NotImplementedError, TypeError, ValueError) as exc:
        deferred = exc                            # raised where mlsysim lowers the workload
        variant = Variant("transformer" if w.is_transformer else "generic", explicit_weights=True).of(a.model)
        static = field_values(w, f)
    compiled = compiled_rules(variant, "solve", ())
    # raw argument name -> value (names, not symbols: this runs on every call and sympy hashes slowly)
    # (keys of ``args`` that are not raw arguments, such as ``precision``, are names no rule reads)
    named = {**_static_named(static), **a.named_fields, **args, **dict(zip(FACT_NAMES, fx["flags"]))}
    if deferred is not None:
        verdict = None
    elif verdict is None:
        verdict = _verdict(compiled, named)
    if verdict is not None:                       # the warnings and the first error, without walking the table
        error, fired = verdict
        said = [i for i in fired if error is None or i < error] + ([] if error is None else [error])
        for i in said:
            _say(compiled, i, args, fx, compiled.fields_named(i, named), stacklevel)
        return
    for i, r in enumerate(compiled.rules):
        if deferred is not None and r.lowered:
            raise deferred
        if r.numeric:
            for name in compiled.reads[i]:
                if name in args:
                    _number(name, args[name], r.bools or (not w.is_transformer and name == "seq_len"))
        try:
            broken = compiled.broken(i, named)
        except OverflowError:                     # an integer beyond the float range, in a product
            raise _beyond(args, compiled.reads[i]) from None
        if broken:
            _say(compiled, i, args, fx, compiled.fields_named(i, named), stacklevel)
    if deferred is not None:
        raise deferred


def check_given(a: "Arguments", fields_only: bool = False) -> None:
    """The rules a sweep adds (:func:`rules`' ``scope="sweep"``: finite, positive record fields, whole counts), raised
    for the values a call gives (record fields as keywords, ``peak_flops=0``, and ``solve()``'s keywords), as
    :func:`check` raises ``solve()``'s: the sweep-like entry points (sensitivities, ``required``, ...) refuse
    what a sweep masks. A record's own values are not checked here (mlsysim computes with them). ``fields_only``:
    the record fields alone (``solve()``'s: its keywords are computed with as mlsysim computes with them)."""
    import numpy as np      # here: numpy is imported on first use
    variant, static = a.static
    compiled = compiled_rules(variant, "sweep", ())
    # numpy's scalars as Python's (a loop over np.arange gives them; a sweep takes them)
    given = {k: v.item() if isinstance(v, (np.integer, np.floating, np.bool_)) else v
             for k, v in {**a.named_fields, **({} if fields_only else a.lowered)}.items()}
    named = {**_static_named(static), **given}
    for i, r in enumerate(compiled.rules):
        reads = compiled.reads[i]
        if r.scope != "sweep" or not reads or not set(reads) <= set(given):
            continue
        for name in reads:
            _number(name, given[name], True)
        try:
            broken = compiled.broken(i, named)
        except OverflowError:                     # an integer beyond the float range, in a product
            raise _beyond(given, reads) from None
        if broken:
            raise r.error(message(r, named, compiled.fields_named(i, named)))


def _static_named(static: Mapping[sp.Symbol, object]) -> Dict[str, object]:
    """``static`` (parameter symbol -> value, or None) as raw name -> value (NaN for None); memoized on
    the identity of ``static`` (:func:`static_values` returns the same dict for the same records)."""
    entry = _NAMED.get(id(static))
    if entry is None or entry[0] is not static:
        if len(_NAMED) > 4096:
            _NAMED.clear()
        entry = _NAMED[id(static)] = (static, {_RAW_NAME[s.name]: (math.nan if v is None else v)
                                               for s, v in static.items()})
    return entry[1]


_NAMED: Dict[int, tuple] = {}


def _say(compiled: CompiledRules, i: int, args, fx, fields, stacklevel: int) -> None:
    """Rule ``i`` is broken: warn, or raise its error, with its message (``fields``: its computed ones)."""
    r = compiled.rules[i]
    text = message(r, {**args, **fx}, fields)
    if not r.warning:
        raise r.error(text)
    warnings.warn(text, UserWarning, stacklevel=stacklevel + 1 if r.caller else 1)


def _verdict(compiled: CompiledRules, named: Mapping[str, object]) -> Optional[tuple]:
    """``(index of the first broken error rule or None, indices of the warning rules that fire)`` by the
    compiled checks in one call (``named``: raw argument name -> value); None when an argument is
    not a plain number (flags are 0/1 by then) or the arithmetic fails, so that :func:`check`
    walks the table in order."""
    names, first = compiled.first_named
    facts_ = {n: int(named[n]) for n in FACT_NAMES}            # the facts are bools; no argument may be
    vector = [facts_[n] if n in facts_ else named.get(n, math.nan) for n in names]
    if not PLAIN_NUMBERS.issuperset(map(type, vector)):
        return None
    try:
        broken, *warned = first(*vector)
    except (ArithmeticError, ValueError, TypeError):
        return None
    return verdict(compiled, broken, warned)


def verdict(compiled: CompiledRules, broken: int, warned: Sequence[bool]) -> tuple:
    """The answer of :attr:`CompiledRules.first` (``broken``, then the warning flags) as :func:`check`
    takes it: ``(index of the first broken error rule or None, indices of the warnings that fire)``."""
    return (None if broken == -1 else int(broken)), tuple(i for i, on in zip(compiled.warnings, warned) if on)


#: The types the compiled checks take as they are (anything else is checked rule by rule).
PLAIN_NUMBERS = frozenset((int, float))
_RAW_NAME = {s.name: r.name for s, r in RAW.items()}


def _beyond(args: Mapping[str, object], names: Sequence[str]) -> ValueError:
    """The error for an integer argument beyond the float range (named)."""
    for name in names:
        v = args.get(name)
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 1e308:
            return ValueError(f"{name} is beyond the float range, got an integer of {len(str(abs(v)))} digits")
    return ValueError(f"one of {', '.join(names)} is beyond the float range")


def _number(name: str, value, bools: bool) -> None:
    """A ``TypeError`` naming the argument when it is not a real number (or a bool where none may be)."""
    if not _real(value):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    import numpy as np      # here: numpy is imported on first use
    if isinstance(value, (bool, np.bool_)) and not bools:         # Python's or numpy's
        raise TypeError(f"{name} must be a number, got bool")

