"""From a call's arguments to parameter values: records, defaults, lowering.

The one path below the entry points (``solve()``, sweeps, search, sensitivities, ...):

1. **records**: :func:`as_workload` / :func:`as_fleet` take a catalog name, a record of
   :mod:`mlsysim_sym.types` or an mlsysim object;
2. **defaults**: :data:`SOLVE_DEFAULTS`, ``solve()``'s, for the keywords not given (every keyword of the
   parameter table, :func:`mlsysim_sym.symbols.keywords`: the extended model's at their neutral values);
3. **lowering**: the precision's bytes and peak rate, the workload's FLOPs and weight bytes, mlsysim's
   fallbacks for absent fields (``docs/contract.md`` §1-§2.2), and the structure of the
   :class:`~mlsysim_sym.model.Variant` they select.

The checks are :mod:`mlsysim_sym.checks`; one call's configuration, built once and carried to the number, is
:class:`mlsysim_sym.arguments.Arguments`. This is input preparation, not physics: every formula of the step
lives in the model's expressions.

Examples
--------
>>> from mlsysim_sym.inputs import static_values, as_workload, as_fleet
>>> variant, values = static_values(as_workload("Llama3_70B"), as_fleet("Research_256"), "fp16")
>>> variant.family, values[PARAMS["n_nodes"].symbol]
('transformer', 32)
"""
from __future__ import annotations

import numbers
from dataclasses import replace
from functools import lru_cache
from typing import Dict, Tuple, Union

import sympy as sp

from . import catalog, files, modern
from .architecture import Architecture
from .model import Variant
from .symbols import CONSTANT_VALUES, PARAMS, Kind, Origin, Param, keywords, sym
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
    if isinstance(value, Architecture):
        if record_type is Workload:
            return value.workload()
        raise TypeError(f"{what} must be a fleet (a catalog name, a plan file, a Fleet record or an mlsysim Fleet), "
                        f"got the architecture card {value.name!r}")
    if isinstance(value, str) and not value.startswith(modern.PREFIX) and not files.is_file_name(value):
        try:
            return lookup(value)        # a name of mlsysim's registry: the common case, first
        except KeyError as e:           # or the modern catalog's, typed without its prefix: named with it
            names = modern.architecture_names() if record_type is Workload else modern.fleet_names()
            close = catalog.close_names(modern.PREFIX + value, names)
            if not close:
                raise
            raise KeyError(f"{e.args[0]}; in the modern catalog: {', '.join(close)}") from None
    if isinstance(value, str) and value.startswith(modern.PREFIX):
        return (modern.workload if record_type is Workload else modern.fleet)(value)
    if files.is_file_name(value):
        return (files.workload if record_type is Workload else files.fleet)(value)
    if isinstance(value, (list, tuple, set, dict)):      # a sweep's list of models: one at a time
        raise TypeError(f"{what} must be one {'workload' if record_type is Workload else 'fleet'} (a catalog name, "
                        f"a plan file, a record or an mlsysim object), got a {type(value).__name__}; to compare "
                        f"several, price each in turn")
    if value is None or isinstance(value, (bool, int, float)):         # no name, record or object at all
        raise TypeError(f"{what} must be a {'workload' if record_type is Workload else 'fleet'} (a catalog name, a "
                        f"plan file, a record or an mlsysim object), got {type(value).__name__}")
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
#: The numeric keywords of ``solve()`` (all but ``precision`` and ``topology_override``), in its order: mlsysim's,
#: then the extended model's (keyword-only; :attr:`mlsysim_sym.symbols.Param.fidelity`).
KEYWORDS: Tuple[str, ...] = tuple(keywords())


def _solve_defaults() -> Dict[str, object]:
    out: Dict[str, object] = {}
    for name, p in keywords().items():
        out[name] = p.default
        if name == "batch_size":
            out["precision"] = "fp16"
        if name == "microbatch_count":
            out["topology_override"] = None
    return out


#: ``solve()``'s keyword arguments and defaults (mlsysim 0.3.0's; the extended model's neutral), in its order.
SOLVE_DEFAULTS: Dict[str, object] = _solve_defaults()

#: The keywords that enter the model as 0/1 (read for their truth, as mlsysim reads its switches).
FLAG_KEYWORDS: Tuple[str, ...] = tuple(n for n, p in keywords().items() if p.kind is Kind.FLAG and n != "zero_stage")


# --------------------------------------------------------------------------------------------
# 3. Lowering
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
    if weights == 0:
        # its ComputationGraph's arithmetic intensity divides the FLOPs by the weight bytes
        raise ZeroDivisionError("float division by zero")
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
    r16 = acc.flops_for("bf16")
    values.update({sym.bpp: bpp, sym.R_peak: acc.peak_flops if peak is None else peak,
                   sym.R_16: acc.peak_flops if r16 is None else r16,
                   sym.F: ops, sym.W_lw: W, sym.W_g: W_grad})
    return variant, values


def lower_arguments(w: Workload, args: Dict[str, object]) -> Dict[str, object]:
    """mlsysim's reading of the keywords: flags as 0/1; numpy numbers as Python numbers; ``seq_len`` 0
    for a non-transformer without TP or EP (mlsysim never reads it there, so any value goes)."""
    out = {k: (v if type(v) in _AS_IS or not isinstance(v, numbers.Real) or isinstance(v, (int, float))
               or not hasattr(v, "item") else v.item()) for k, v in args.items()}
    for k in FLAG_KEYWORDS:
        out[k] = 1 if out[k] else 0
    if seq_len_unread(w.is_transformer, out["tp_size"], out["ep_size"]):
        out["seq_len"] = 0
    return out


_AS_IS = frozenset((int, float, bool, str, type(None)))


def seq_len_unread(transformer: bool, tp, ep):
    """Where mlsysim never reads ``seq_len`` (so any value goes, and it enters as 0): a non-transformer
    without TP or EP, whose messages it alone sizes. Scalars or arrays."""
    return (not transformer) & (tp == 1) & (ep == 1)

