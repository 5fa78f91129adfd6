"""From ``solve()``'s arguments to parameter values: records, defaults, checks, lowering.

One path, below the solver, that every entry point takes (``solve()``, sweeps,
search, sensitivities, operating points, :func:`parameters_of`):

1. **records**: :func:`as_workload` / :func:`as_fleet` take a catalog name, a
   record of :mod:`mlsysim_sym.types` or an mlsysim object;
2. **defaults**: :data:`SOLVE_DEFAULTS`, mlsysim's, for the keywords not given;
3. **checks**: :func:`rules`, one declarative table: mlsysim's checks in mlsysim's
   order (``docs/contract.md`` §5), then ours. Each rule is a sympy condition on
   the raw arguments and the model's quantities, so the same rule is compiled for
   one configuration (``solve()`` raises the first broken rule) and for arrays (a
   sweep masks each configuration with the same message);
4. **lowering**: the precision's bytes and peak rate, the workload's FLOPs and
   weight bytes, mlsysim's fallbacks for absent fields (``docs/contract.md``
   §1-§2.2), and the :class:`~mlsysim_sym.model.Variant` they select.

This is input preparation, not physics: every formula of the step lives in the
model's expressions, and the checks read model quantities (``N``, ``G``, ``dp``,
message sizes) from the same expressions.

Examples
--------
>>> from mlsysim_sym.inputs import parameters_of
>>> from mlsysim_sym.symbols import sym
>>> variant, values = parameters_of("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4)
>>> variant.family, values[sym.tp], values[sym.B], values[sym.n_nodes]
('transformer', 8, 256, 32)
"""
from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import sympy as sp

from . import _shipped, catalog, notation
from .compile import lambdify_numeric, numeric_form
from .mechanisms import normalize
from .model import FIDELITIES, Variant, build_model
from .symbols import CONSTANT_VALUES, PARAMS, Kind, Origin, Param, extended_keywords, keywords, sym
from .terms.collectives import AllToAll, HierarchicalAllReduce, RingAllReduce
from .types import Fleet, Workload

WorkloadLike = Union[str, Workload, object]
FleetLike = Union[str, Fleet, object]


# --------------------------------------------------------------------------------------------
# 1. Records
# --------------------------------------------------------------------------------------------
def _record(value, record_type, lookup, what):
    """A record of ``record_type``: itself, a catalog name looked up, or a converted mlsysim object."""
    if isinstance(value, record_type):
        return value
    if isinstance(value, str):
        return lookup(value)
    converted = catalog.from_mlsysim(value)
    if not isinstance(converted, record_type):
        raise TypeError(f"{what} must be a {what} (a catalog name, a record or an mlsysim object), "
                        f"got {type(value).__name__}")
    return converted


def as_workload(model: WorkloadLike) -> Workload:
    """A catalog name, a :class:`~mlsysim_sym.types.Workload`, or an mlsysim workload object."""
    return _record(model, Workload, catalog.workload, "model")


def as_fleet(fleet: FleetLike) -> Fleet:
    """A catalog name, a :class:`~mlsysim_sym.types.Fleet`, or an mlsysim ``Fleet``."""
    return _record(fleet, Fleet, catalog.fleet, "fleet")


# --------------------------------------------------------------------------------------------
# 2. Defaults
# --------------------------------------------------------------------------------------------
def _solve_defaults() -> Dict[str, object]:
    out: Dict[str, object] = {}
    for name, p in keywords().items():
        out[name] = p.default
        if name == "batch_size":
            out["precision"] = "fp16"
        if name == "microbatch_count":
            out["topology_override"] = None
    return out


#: ``solve()``'s keyword arguments and defaults (mlsysim 0.3.0's), in its signature's order.
SOLVE_DEFAULTS: Dict[str, object] = _solve_defaults()

#: The numeric keywords of ``solve()`` (all but ``precision`` and ``topology_override``), in its order.
KEYWORDS: Tuple[str, ...] = tuple(keywords())

#: The keywords that enter the model as 0/1 (mlsysim tests them for truthiness).
FLAG_KEYWORDS: Tuple[str, ...] = tuple(n for n, p in keywords().items() if p.kind is Kind.FLAG and n != "zero_stage")


#: The extended model's arguments beside ``solve()``'s: which model, its mechanisms priced as mlsysim prices
#: them (``without``), and its own keywords (``cp_size``, ...), with their defaults (neutral values).
EXTENDED_DEFAULTS: Dict[str, object] = {"fidelity": "mlsysim", "without": (),
                                        **{k: p.default for k, p in extended_keywords().items()}}
#: The extended model's 0/1 keywords.
EXTENDED_FLAGS: Tuple[str, ...] = tuple(n for n, p in extended_keywords().items() if p.kind is Kind.FLAG)


def solve_arguments(kwargs: Mapping[str, object], caller: str = "solve") -> Dict[str, object]:
    """``kwargs`` completed with :data:`SOLVE_DEFAULTS`; an unknown keyword is a ``TypeError``. The extended
    model's arguments (:data:`EXTENDED_DEFAULTS`) stay only when given, and are checked here: ``fidelity`` one
    of :data:`~mlsysim_sym.model.FIDELITIES`, ``without`` names of mechanisms, and the extended keywords at
    their neutral values unless ``fidelity="extended"``."""
    unknown = [k for k in kwargs if k not in SOLVE_DEFAULTS and k not in EXTENDED_DEFAULTS]
    if unknown:
        raise TypeError(f"{caller}() got an unexpected keyword argument {unknown[0]!r}; "
                        f"allowed: {', '.join([*SOLVE_DEFAULTS, *EXTENDED_DEFAULTS])}")
    out = {**SOLVE_DEFAULTS, **kwargs}
    check_fidelity(out)
    if out.get("fidelity") == "extended":
        out = {**SOLVE_DEFAULTS, **EXTENDED_DEFAULTS, **kwargs}
    if "without" in out:
        out["without"] = normalize(out["without"])
    return out


def check_fidelity(args: Mapping[str, object]) -> None:
    """``fidelity`` is a known model; ``without`` and the extended keywords are used only with
    ``fidelity="extended"`` (a ``ValueError`` names the argument)."""
    fidelity = args.get("fidelity", "mlsysim")
    if not isinstance(fidelity, str) or fidelity not in FIDELITIES:
        raise ValueError(f"fidelity must be one of {', '.join(map(repr, FIDELITIES))}, got {fidelity!r}")
    if fidelity == "extended":
        normalize(args.get("without", ()))
        return
    if args.get("without"):
        raise ValueError("without: mechanisms can be switched off only in the extended model; pass "
                         "fidelity='extended'")
    for k, p in extended_keywords().items():
        v = args.get(k, p.default)
        if k in EXTENDED_FLAGS:
            neutral = _one_truth_value(v) and bool(v) == bool(p.default)
        else:
            neutral = _same_number(v, p.default)
        if not neutral:
            raise ValueError(f"{k}={v!r} is an argument of the extended model (mlsysim 0.3.0 has no "
                             f"{p.label}); pass fidelity='extended'")


def _one_truth_value(v) -> bool:
    """True for a value with one truth value (not an array of several)."""
    try:
        bool(v)
        return True
    except Exception:
        return False


def _same_number(v, default) -> bool:
    try:
        return not isinstance(v, bool) and bool(v == default)
    except Exception:       # an array or an object that does not compare: not the neutral value
        return False


def model_variant(variant: Variant, args: Mapping[str, object]) -> Variant:
    """The variant of the model ``args`` ask for (``fidelity``, ``without``) with ``variant``'s structure."""
    fidelity = args.get("fidelity", "mlsysim")
    if fidelity == variant.fidelity and not args.get("without"):
        return variant
    return replace(variant, fidelity=fidelity, off=tuple(args.get("without", ())))


# --------------------------------------------------------------------------------------------
# 4. Lowering (before the checks in this file: they need it)
# --------------------------------------------------------------------------------------------
#: Storage bytes per element (``mlsysim.core.units.PRECISION_MAP``).
PRECISION_BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5}


_SUPPORTED = ", ".join(sorted(PRECISION_BYTES))


def size_in_bytes(w: Workload, bpp) -> float:
    """``Workload.size_in_bytes``: ``model_size`` at 2-byte precisions when set, else ``P * bpp``."""
    if w.model_size is not None and bpp == 2:
        return w.model_size
    if w.parameters is not None:
        return w.parameters * bpp
    if w.model_size is not None:
        return w.model_size
    raise NotImplementedError("Workload must define either parameters or model_size to calculate size in bytes.")


def lowered(w: Workload, bpp) -> Tuple[float, float]:
    """``(forward flop per token or sample, weight bytes)`` of ``Workload.lower`` (``docs/contract.md`` §2.2)."""
    P = w.parameters
    if w.is_transformer and P is None:
        size_in_bytes(w, bpp)       # mlsysim's error for a workload without parameters or size
    if w.kind == "workload" and P is None and w.model_size is not None:
        return (w.inference_flops or 0), w.model_size
    if P is None:
        raise NotImplementedError(f"{_CLASS_NAMES[w.kind]} has no 'parameters'; override lower() or set parameters.")
    if w.kind == "sparse_transformer":
        ops = w.inference_flops or 2 * w.active_parameters
    elif w.kind == "cnn":
        ops = w.inference_flops
        if ops is None:
            raise NotImplementedError(f"workload {w.name!r}: a CNN workload needs inference_flops (it is None)")
    elif w.kind == "diffusion":
        ops = (w.inference_flops or 2 * P) * w.denoising_steps
    else:
        ops = w.inference_flops or 2 * P
    weights = P * bpp if w.kind == "workload" else size_in_bytes(w, bpp)
    return ops, weights


_CLASS_NAMES = {"transformer": "TransformerWorkload", "sparse_transformer": "SparseTransformerWorkload",
                "cnn": "CNNWorkload", "ssm": "SSMWorkload", "embodied": "EmbodiedWorkload",
                "diffusion": "DiffusionWorkload", "workload": "Workload"}


def record_of(p: Param, w: Workload, f: Fleet):
    """The record that holds ``p``'s field."""
    return {Origin.WORKLOAD: w, Origin.FLEET: f, Origin.NODE: f.node, Origin.FABRIC: f.fabric,
            Origin.ACCELERATOR: f.node.accelerator}[p.origin]


def field_value(p: Param, w: Workload, f: Fleet):
    """The value of a record field parameter, with mlsysim's fallback when the field is absent."""
    v = getattr(record_of(p, w, f), p.field)
    if (not v if p.falsy else v is None) and p.fallback is not None:
        return p.fallback
    return v


def with_field(w: Workload, f: Fleet, p: Param, value) -> Tuple[Workload, Fleet]:
    """Copies of the records with the field of ``p`` set to ``value``."""
    if p.origin is Origin.WORKLOAD:
        return replace(w, **{p.field: value}), f
    if p.origin is Origin.FLEET:
        return w, replace(f, **{p.field: value})
    node = f.node
    if p.origin is Origin.NODE:
        return w, replace(f, node=replace(node, **{p.field: value}))
    if p.origin is Origin.FABRIC:
        return w, replace(f, fabric=replace(f.fabric, **{p.field: value}))
    return w, replace(f, node=replace(node, accelerator=replace(node.accelerator, **{p.field: value})))


_FIELDS = tuple(p for p in PARAMS.values() if p.field is not None and p.origin is not Origin.SOLVE)


def field_values(w: Workload, f: Fleet) -> Dict[sp.Symbol, object]:
    """Every parameter read from a record field (:func:`field_value`), by symbol."""
    return {p.symbol: field_value(p, w, f) for p in _FIELDS}


@lru_cache(maxsize=512)
def static_values(w: Workload, f: Fleet, key: str) -> Tuple[Variant, Dict[sp.Symbol, object]]:
    """The variant, and the values of every parameter fixed by workload, fleet and precision
    (constants included; ``None`` where a record has no value and mlsysim no fallback)."""
    bpp = PRECISION_BYTES[key]
    acc = f.node.accelerator
    ops, W = lowered(w, bpp)
    W_grad = size_in_bytes(w, bpp)
    P = w.parameters
    generic = not w.is_transformer
    variant = Variant(
        family="generic" if generic else "transformer",
        explicit_weights=P is None or W != P * bpp or W_grad != P * bpp,
        sram=generic and acc.sram_capacity is not None and acc.sram_bandwidth is not None,
        flash=generic and acc.flash_bandwidth is not None,
    )
    values: Dict[sp.Symbol, object] = dict(CONSTANT_VALUES)
    values.update(field_values(w, f))
    peak = acc.flops_for(key)
    values.update({sym.bpp: bpp, sym.R_peak: acc.peak_flops if peak is None else peak,
                   sym.F: ops, sym.W_lw: W, sym.W_g: W_grad})
    return variant, values


def lower_arguments(w: Workload, args: Dict[str, object]) -> Dict[str, object]:
    """mlsysim's reading of the keywords: flags as 0/1; numpy numbers as Python numbers; ``seq_len`` 0
    for a non-transformer without TP or EP (mlsysim never reads it there, so any value goes)."""
    out = {k: (v if type(v) in _AS_IS or not isinstance(v, numbers.Real) or isinstance(v, (int, float))
               or not hasattr(v, "item") else v.item()) for k, v in args.items()}
    for k in FLAG_KEYWORDS:
        out[k] = 1 if out[k] else 0
    for k in EXTENDED_FLAGS:
        if k in out:
            out[k] = 1 if out[k] else 0
    if seq_len_unread(w.is_transformer, out["tp_size"], out["ep_size"]):
        out["seq_len"] = 0
    return out


_AS_IS = frozenset((int, float, bool, str, type(None)))


def seq_len_unread(transformer: bool, tp, ep):
    """Where mlsysim never reads ``seq_len`` (so any value goes, and it enters as 0): a non-transformer
    without TP or EP, whose messages it alone sizes. Scalars or arrays."""
    return (not transformer) & (tp == 1) & (ep == 1)


# --------------------------------------------------------------------------------------------
# 3. Checks
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
    extended model only; ``generic_only``: for workloads other than transformers only.
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

    @property
    def condition(self) -> sp.Basic:
        return self.broken if self.when is sp.true else sp.ITE(self.when, self.broken, sp.false)

_ARGUMENTS = frozenset(_raw_name(p) for p in PARAMS.values())


class NonFinite(sp.logic.boolalg.BooleanFunction):
    """True where a number is NaN or infinite (``not math.isfinite(x)``)."""

    nargs = 1

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return sp.true if x in (sp.nan, sp.oo, -sp.oo, sp.zoo) else sp.false
        return None

    def _numpycode(self, printer):
        return f"numpy.logical_not({printer._module_format('numpy.isfinite')}({printer._print(self.args[0])}))"

    def _pythoncode(self, printer):
        return f"(not {printer._module_format('math.isfinite')}({printer._print(self.args[0])}))"

    _lambdacode = _pythoncode


class Fractional(sp.logic.boolalg.BooleanFunction):
    """True where a number is not a whole number."""

    nargs = 1

    def _numpycode(self, printer):
        x = printer._print(self.args[0])
        return f"({printer._module_format('numpy.floor')}({x}) != ({x}))"

    def _pythoncode(self, printer):
        x = printer._print(self.args[0])
        return f"({x} != int({x}))"

    _lambdacode = _pythoncode


def _at_least(name: str, minimum, label: Optional[str] = None, **kw) -> Rule:
    return Rule(getattr(A, name) < minimum, f"{label or name} must be >= {minimum}, got {{{name}}}", **kw)


def _in_range(name: str, lo, hi) -> Rule:
    x = getattr(A, name)
    return Rule(sp.Or(x < lo, x > hi), f"{name} must be in [{lo}, {hi}], got {{{name}}}")


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


def _extended_rules(N) -> Tuple[Rule, ...]:
    """The extended model's checks, after mlsysim's argument checks and before its split checks: its
    keywords, then the five-way split (``G = N_TP N_PP N_EP N_CP`` there)."""
    cp, kv = A.cp_size, A.kv_fraction
    # the five-way product of the arguments (not the quantity G, which excludes N_CP where context
    # parallelism is priced as mlsysim prices it: folded into data parallelism)
    G = A.tp_size * A.pp_size * A.ep_size * cp
    return (
        Rule(NonFinite(cp), "cp_size must be finite, got {cp_size}", extended=True),
        Rule(Fractional(cp), "cp_size must be a whole number, got {cp_size}", extended=True),
        Rule(cp < 1, "cp_size must be >= 1, got {cp_size}", extended=True),
        Rule(cp > 1, "cp_size ({cp_size}) > 1 needs a transformer workload: context parallelism splits sequences",
             extended=True, generic_only=True),
        Rule(sp.Or(NonFinite(kv), kv <= 0, kv > 1), "kv_fraction must be in (0, 1], got {kv_fraction}",
             extended=True),
        Rule(A.seq_len < cp, "seq_len ({seq_len}) must be >= cp_size ({cp_size}): context parallelism gives each "
             "rank a part of every sequence", cp > 1, extended=True, transformer=True),
        Rule(G > N, "Infeasible 5D Parallelism: TP({tp_size}) * PP({pp_size}) * EP({ep_size}) * CP({cp_size}) > "
             "Total({N})", extended=True),
        Rule(sp.Ne(sp.Mod(N, G), 0), "Infeasible 5D Parallelism: TP({tp_size}) * PP({pp_size}) * EP({ep_size}) * "
             "CP({cp_size}) must divide total accelerators ({N}) exactly.", extended=True),
    )


@lru_cache(maxsize=1)
def rules() -> Tuple[Rule, ...]:
    """Every check, in order: mlsysim's (``docs/contract.md`` §5), then ours, then the sweeps' own."""
    N, G, dp, f_train = _q("N"), _q("G"), _q("dp"), _q("f_train")
    mlsysim = (
        # V1-V8: DistributedModel.solve's argument checks
        _at_least("tp_size", 1), _at_least("pp_size", 1), _at_least("ep_size", 1), _at_least("batch_size", 1),
        _at_least("gradient_accumulation_steps", 1), _in_range("efficiency", 1e-9, 1.0),
        _in_range("overlap_efficiency", 0.0, 1.0), _at_least("moe_routing_imbalance_factor", 1.0),
        # V9-V10: the split must fit the fleet exactly
        # the extended model's own keywords, and its split (G includes N_CP there)
        *_extended_rules(N),
        Rule(G > N, "Infeasible 4D Parallelism: TP({tp_size}) * PP({pp_size}) * EP({ep_size}) > Total({N})"),
        Rule(sp.Ne(sp.Mod(N, G), 0), "Infeasible 4D Parallelism: TP({tp_size}) * PP({pp_size}) * EP({ep_size}) "
                                     "must divide total accelerators ({N}) exactly."),
        Rule(A.batch_size < dp, "batch_size ({batch_size}) < dp_size ({dp}): some ranks will be idle. "
                                "Using local_batch=1.", warning=True),
        # V11: the precision (resolve_precision), and the Engine path's warning when it has no peak for it
        # (mlsysim warns from inside its solver: a warning of the package, not of the caller's line)
        Rule(NOT_A_STRING, "precision must be a string, got {precision_type}", error=TypeError, numeric=False),
        Rule(UNSUPPORTED, "precision '{precision}' is not supported. Supported precision values: " + _SUPPORTED,
             numeric=False),
        Rule(sp.And(PEAK_FALLBACK, sp.Eq(G, 1)), "Precision '{precision_key}' not in {accelerator} precision_flops "
             "(available: {available}); using default peak_flops (FP16). Results may be inaccurate.",
             warning=True, numeric=False, caller=False),
        # here mlsysim lowers the workload: its errors are raised in this place (see check())
        # V12: TrainingMemoryModel's checks (transformers)
        _at_least("seq_len", 1, transformer=True, lowered=True),
        Rule(f_train < 0, "trainable_fraction must be in [0.0, 1.0], got {f_train}", sp.Ne(A.is_lora, 0),
             transformer=True),
        Rule(sp.Not(sp.Or(*(sp.Eq(A.zero_stage, k) for k in range(4)))), "zero_stage must be 0, 1, 2, or 3",
             transformer=True, numeric=False),
        # the collective helpers' own checks (non-physical hardware, or seq_len < 0)
        *_collective_rules(),
        # V13: calc_pipeline_bubble's checks (always called)
        _at_least("microbatch_count", 1, "n_microbatches"), _at_least("v_stages", 1),
    )
    # ours: where mlsysim computes with NaN or inf (or fails inside pint or pydantic), name the argument
    ours: List[Rule] = []
    for name in keywords():
        if name in FLAG_KEYWORDS:
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
                                             and not (transformer and r.generic_only))
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
        they take the given arguments and the facts (or when no order was asked for), else compiled
        over :attr:`args`."""
        shipped = _shipped.load(self.variant, (f"rules:{self.scope}",), kind="rules")
        given = tuple(a.name for a in self._given_args) + FACT_NAMES
        if shipped is not None and (not self._given_args or shipped[0] == given):
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
    return isinstance(v, (int, float))


def check(w: Workload, f: Fleet, args: Mapping[str, object], stacklevel: int = 3,
          verdict: Optional[tuple] = None) -> str:
    """Every rule of ``solve()`` in order at one configuration: warn, or raise the first broken one.

    ``args`` are ``solve()``'s keywords, completed and lowered (:func:`lower_arguments`).
    Returns the precision key. With plain numbers the compiled :attr:`CompiledRules.first`
    says in one call which error rule breaks first and which warnings fire before it;
    otherwise (a numpy bool, a string, arithmetic that fails) the rules are walked in
    order, each argument's type checked where mlsysim would trip on it. The workload is
    lowered where mlsysim lowers it (after the precision), so its errors come in that place.
    ``verdict``: the compiled call's answer (:func:`verdict`), when the caller has it already.
    """
    fx = facts(w, f, args["precision"])
    key = fx["precision_key"] or "fp16"          # no rule before the precision reads what it sets
    try:
        variant, static = static_values(w, f, key)
        variant = model_variant(variant, args)
        deferred = None
    except (ArithmeticError, NotImplementedError, TypeError, ValueError) as exc:
        deferred = exc                            # raised where mlsysim lowers the workload
        variant = model_variant(Variant("transformer" if w.is_transformer else "generic", explicit_weights=True),
                                args)
        static = field_values(w, f)
    compiled = compiled_rules(variant, "solve", ())
    # raw argument name -> value (names, not symbols: this runs on every call and sympy hashes slowly)
    # (keys of ``args`` that are not raw arguments, such as ``precision``, are names no rule reads)
    named = {**_static_named(static), **args, **dict(zip(FACT_NAMES, fx["flags"]))}
    if deferred is not None:
        verdict = None
    elif verdict is None:
        verdict = _verdict(compiled, named)
    if verdict is not None:                       # the warnings and the first error, without walking the table
        error, fired = verdict
        said = [i for i in fired if error is None or i < error] + ([] if error is None else [error])
        for i in said:
            _say(compiled, i, args, fx, compiled.fields_named(i, named), stacklevel)
        return key
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
    return key


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
    if isinstance(value, bool) and not bools:
        raise TypeError(f"{name} must be a number, got bool")


# --------------------------------------------------------------------------------------------
# All four steps: parameters_of
# --------------------------------------------------------------------------------------------
def configure(model: WorkloadLike, fleet: FleetLike, kwargs: Mapping[str, object], caller: str = "solve",
              stacklevel: int = 4, verdict: Optional[tuple] = None) -> Tuple[Workload, Fleet, str, Dict[str, object]]:
    """Records, defaults, checks and lowered keywords of one ``solve()`` call:
    ``(workload, fleet, precision key, lowered keywords)`` (``verdict``: see :func:`check`)."""
    w, f = as_workload(model), as_fleet(fleet)
    args = lower_arguments(w, solve_arguments(kwargs, caller))
    key = check(w, f, args, stacklevel=stacklevel, verdict=verdict)
    return w, f, key, args


def values_of(w: Workload, f: Fleet, key: str, args: Mapping[str, object]) -> Tuple[Variant, Dict[sp.Symbol, object]]:
    """The variant and every parameter's value, from checked, lowered keywords."""
    variant, static = static_values(w, f, key)
    variant = model_variant(variant, args)
    values = dict(static)
    kw = {**keywords(), **extended_keywords()}
    values.update({p.symbol: p.default for p in extended_keywords().values()})
    values.update({kw[k].symbol: v for k, v in args.items() if k in kw})
    for k in EXTENDED_FLAGS:
        values[kw[k].symbol] = 1 if values[kw[k].symbol] else 0
    free = set(build_model(variant).parameters)
    return variant, {s: v for s, v in values.items() if s in free}


def parameters_of(model: WorkloadLike, fleet: FleetLike, **solve_kwargs) -> Tuple[Variant, Dict[sp.Symbol, object]]:
    """``(variant, values)`` of one ``DistributedModel().solve(model, fleet, **solve_kwargs)`` call.

    ``values`` maps every free symbol of ``build_model(variant)`` to its number, after
    exactly the checks (same errors, same warnings) and lowering of ``solve()``, so
    that ``build_model(variant)[q].subs(values)`` and ``sympy.lambdify`` of any
    quantity give ``solve()``'s numbers.
    """
    w, f, key, args = configure(model, fleet, solve_kwargs, "parameters_of")
    return values_of(w, f, key, args)
