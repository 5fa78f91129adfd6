"""Vectorized sweeps: any ``solve()`` argument or hardware/workload field as an array.

``sweep(model, fleet, tp_size=[1, 2, 4, 8], batch_size=[256, 512], ...)`` evaluates
the compiled numpy form of the model (:mod:`mlsysim_sym.compile`). With
``grid=True`` (the default) each swept argument gets an axis of its own and the
result has the outer-product shape; subexpressions that depend on few axes are
computed on small arrays (broadcasting), which is what makes grids cheap. With
``grid=False`` the arrays are broadcast against each other as given (for
lists of random configurations).

Invalid combinations are masked, never raised: ``result.valid`` is False and
``result.reason`` holds the message ``solve()`` would raise (mlsysim's check
order), numeric outputs are NaN there. A sweep also masks what ``solve()``
accepts but cannot be meant: non-finite values, non-positive bandwidths,
capacities and sizes, negative latencies, fractional counts, and any
configuration whose result overflows. Warnings ``solve()`` would emit (batch below dp, precision fallback) are
not emitted in a sweep.
"""
from __future__ import annotations

import inspect

from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import sympy as sp

from .compile import compile_quantities
from .inputs import FIELD_SYMBOLS, FLAGS, PRECISION_BYTES, RUN_SYMBOLS, static_values
from .model import Variant
from .solver import OUTPUTS, DistributedModel, as_fleet, as_workload
from .symbols import PARAMS, sym
from .types import Fleet, Workload

CHUNK = 16384

#: symbol -> the argument name a user passes for it
ARGUMENT_NAMES = {**{v: k for k, v in FIELD_SYMBOLS.items()}, **{v: k for k, v in RUN_SYMBOLS.items()}}

#: ``solve()`` defaults (mlsysim 0.3.0's), read off its signature.
DEFAULTS = {k: p.default for k, p in inspect.signature(DistributedModel.solve).parameters.items()
            if p.default is not inspect.Parameter.empty and k != "topology_override"}

#: A valid stand-in for every swept symbol, used where a configuration is masked so that no
#: division by zero is ever evaluated.
_SAFE = {sym.tp: 1.0, sym.pp: 1.0, sym.ep: 1.0, sym.B: 1.0, sym.GA: 1.0, sym.m: 1.0, sym.v: 1.0,
         sym.s: 1.0, sym.z: 0.0, sym.eta: 0.5, sym.eta_ov: 0.0, sym.iota: 1.0, sym.c: 1.0, sym.f_s: 1.0}


@dataclass
class SweepResult:
    """Named arrays of a sweep, all of one ``shape``.

    ``result["step_latency_total"]`` or ``result.step_latency_total``; node-profile
    outputs as ``result["node_profile.memory_footprint"]``. ``axes`` maps each
    swept argument to its values (grid sweeps).
    """

    values: Dict[str, np.ndarray]
    valid: np.ndarray
    reason_code: np.ndarray
    reasons: Tuple[str, ...]
    axes: Dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def shape(self) -> Tuple[int, ...]:
        return self.valid.shape

    @property
    def reason(self) -> np.ndarray:
        """Why each configuration is masked ('' where valid)."""
        return np.asarray(self.reasons, dtype=object)[self.reason_code]

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self.values[name]
        except KeyError:
            raise KeyError(f"no output {name!r}; outputs: {', '.join(self.values)}") from None

    def __getattr__(self, name: str) -> np.ndarray:
        if name.startswith("_") or name not in self.__dict__.get("values", {}):
            raise AttributeError(name)
        return self.values[name]

    def __len__(self) -> int:
        return int(self.valid.size)


def _is_swept(v) -> bool:
    if isinstance(v, np.ndarray):
        return v.ndim > 0
    return isinstance(v, (list, tuple, range))


def resolve_name(name: str, caller: str = "sweep") -> sp.Symbol:
    """A ``solve()`` keyword, a field name or a parameter symbol name -> its symbol."""
    if name in RUN_SYMBOLS:
        return RUN_SYMBOLS[name]
    if name in FIELD_SYMBOLS:
        return FIELD_SYMBOLS[name]
    if name in PARAMS and PARAMS[name].kind != "constant":
        return PARAMS[name].symbol
    allowed = sorted(set(RUN_SYMBOLS) | set(FIELD_SYMBOLS) | {"precision"})
    raise TypeError(f"{caller}() got an unexpected argument {name!r}; allowed: {', '.join(allowed)}")


class _Mask:
    """First failing check per configuration, in mlsysim's order."""

    def __init__(self, shape):
        self.code = np.zeros(shape, dtype=np.int16)
        self.reasons: List[str] = [""]

    def check(self, bad, reason: str):
        bad = np.asarray(bad, dtype=bool)     # in its own (broadcastable, often small) shape
        if bad.any():
            self.reasons.append(reason)
            first = (self.code == 0) & np.broadcast_to(bad, self.code.shape)
            self.code[first] = len(self.reasons) - 1


def sweep(model, fleet, *, grid: bool = True, outputs: Optional[Sequence[str]] = None, **kwargs) -> SweepResult:
    """Evaluate the model over arrays of arguments (see the module docstring).

    Parameters
    ----------
    model, fleet
        As in :meth:`mlsysim_sym.DistributedModel.solve` (catalog names, records, mlsysim objects).
    grid
        True: each array argument is an axis of its own (outer product). False: arrays broadcast together.
    outputs
        Result names to compute (default: all of :data:`mlsysim_sym.solver.OUTPUTS`).
    **kwargs
        Any ``solve()`` keyword, workload/hardware field (``fabric_bandwidth``, ``memory_capacity``, ...)
        or parameter name (``BW_fab``), scalar or array-like. ``precision`` may be a list of strings.
    """
    w, f = as_workload(model), as_fleet(fleet)
    if isinstance(outputs, str):
        outputs = (outputs,)
    names = tuple(outputs) if outputs is not None else tuple(OUTPUTS)
    unknown = [n for n in names if n not in OUTPUTS]
    if unknown:
        raise KeyError(f"unknown outputs {unknown}; outputs: {', '.join(OUTPUTS)}")
    args = dict(DEFAULTS)
    for k in kwargs:
        if k != "precision":
            resolve_name(k)
    args.update(kwargs)

    swept = [k for k, v in kwargs.items() if _is_swept(v)]  # axes in the caller's order
    axes = {k: np.asarray(args[k]) for k in swept}
    if grid:
        shape = tuple(len(axes[k]) for k in swept)
        placed = {k: np.asarray(args[k]).reshape([-1 if i == j else 1 for j in range(len(swept))])
                  for i, k in enumerate(swept)}
    else:
        shape = np.broadcast_shapes(*(np.shape(args[k]) for k in swept)) if swept else ()
        placed = {k: np.asarray(args[k]) for k in swept}
    value = {k: placed.get(k, v) for k, v in args.items()}

    mask = _Mask(shape)
    precisions = np.asarray(value.pop("precision"), dtype=object)
    keys = np.asarray(np.vectorize(lambda p: p.lower() if isinstance(p, str) else "", otypes=[object])(precisions))
    mask.check(~np.isin(keys, list(PRECISION_BYTES)), "precision is not supported")
    distinct = sorted({k for k in np.ravel(keys) if k in PRECISION_BYTES}) or ["fp16"]
    statics = {k: static_values(w, f, k) for k in distinct}
    explicit = any(v.explicit_weights for v, _ in statics.values())
    variant = next(iter(statics.values()))[0]
    variant = Variant(variant.family, explicit, variant.sram, variant.flash)

    compiled = compile_quantities(variant, tuple(OUTPUTS[n] for n in names), "numpy")
    base = statics[distinct[0]][1]
    inputs: Dict[sp.Symbol, object] = dict(base)     # every parameter: the checks need them all
    # precision-dependent parameters
    for s_ in (sym.bpp, sym.R, sym.F, sym.W_lw, sym.W_g):
        if len(distinct) > 1 and inputs.get(s_) is not None:
            table = {k: statics[k][1][s_] for k in distinct}
            inputs[s_] = np.vectorize(lambda k: float(table.get(k, table[distinct[0]])), otypes=[float])(keys)
    # run arguments and field overrides
    for k, v in value.items():
        s_ = resolve_name(k)
        if k in FLAGS:
            v = np.asarray(v).astype(bool).astype(float) if np.ndim(v) else (1.0 if v else 0.0)
        inputs[s_] = v
    for a in compiled.args:
        if inputs.get(a) is None:
            raise ValueError(f"{ARGUMENT_NAMES.get(a, a.name)} has no value for this workload or fleet (None); "
                             f"pass it explicitly")
    floats = {a: np.asarray(x, dtype=float) for a, x in inputs.items() if x is not None}
    _validate(floats, w, f, mask)

    bad = mask.code != 0
    if bad.any():
        for a in compiled.args:
            if np.ndim(floats[a]):
                safe = _SAFE.get(a, base.get(a)) if base.get(a) is not None or a in _SAFE else 1.0
                floats[a] = np.where(bad, safe, floats[a])
    vector = [floats[a] for a in compiled.args]
    try:
        out = _evaluate(compiled, vector, names, shape, grid)
    except FloatingPointError:
        # a value the checks let through still overflows or divides by zero somewhere (an extreme
        # magnitude): evaluate quietly and mask every configuration whose outputs are not finite
        out = _evaluate(compiled, vector, names, shape, grid, checked=False)
        finite = np.ones(shape, dtype=bool)
        for x in out:
            finite &= np.broadcast_to(np.isfinite(np.asarray(x, dtype=float)), shape)
        mask.check(~finite, "the result overflows or divides by zero (an extreme input)")
        bad = mask.code != 0
    values = {}
    any_bad = bad.any()
    for n, x in zip(names, out):
        x = np.asarray(x, dtype=bool if n == "node_profile.feasible" else float)
        if any_bad:
            x = np.where(bad, False if x.dtype == bool else np.nan, x)
        values[n] = np.broadcast_to(x, shape)    # a read-only view where an output depends on few axes
    return SweepResult(values, ~bad, mask.code, tuple(mask.reasons), axes)


def _evaluate(compiled, vector, names, shape, grid, checked=True):
    """Run the compiled outputs; with ``checked`` a division by zero, an overflow or an invalid
    operation raises ``FloatingPointError`` instead of leaking inf or NaN."""
    state = dict(divide="raise", invalid="raise", over="raise") if checked else dict(all="ignore")
    with np.errstate(**state):
        if grid or len(shape) != 1 or shape[0] <= 2 * CHUNK:
            return compiled.fn(*vector)
        # flattened: cache-sized chunks are ~20 % faster than one pass over 10^6 elements
        out = [np.empty(shape) for _ in names]
        for i in range(0, shape[0], CHUNK):
            part = compiled.fn(*(x[i:i + CHUNK] if x.ndim else x for x in vector))
            for o, p in zip(out, part):
                o[i:i + CHUNK] = p
        return out


def _validate(x: Mapping[sp.Symbol, np.ndarray], w: Workload, f: Fleet, mask: _Mask) -> None:
    """``solve()``'s checks (in mlsysim's order) as masks, plus sweep-only checks: non-finite and
    non-physical values, and fractional counts (which ``solve()`` accepts, as mlsysim does)."""
    for a, arr in x.items():
        if not np.all(np.isfinite(arr)):
            mask.check(~np.isfinite(arr), f"{ARGUMENT_NAMES.get(a, a.name)} must be finite")
    for a, name in ((sym.tp, "tp_size"), (sym.pp, "pp_size"), (sym.ep, "ep_size"), (sym.B, "batch_size"),
                    (sym.GA, "gradient_accumulation_steps")):
        mask.check(x[a] < 1, f"{name} must be >= 1")
    mask.check((x[sym.eta] < 1e-9) | (x[sym.eta] > 1.0), "efficiency must be in [1e-09, 1.0]")
    if sym.eta_ov in x:
        mask.check((x[sym.eta_ov] < 0) | (x[sym.eta_ov] > 1.0), "overlap_efficiency must be in [0.0, 1.0]")
    if sym.iota in x:
        mask.check(x[sym.iota] < 1.0, "moe_routing_imbalance_factor must be >= 1.0")
    N = x[sym.n_nodes] * x[sym.apn]
    G = x[sym.tp] * x[sym.pp] * x[sym.ep]
    mask.check(G > N, "Infeasible 4D Parallelism: TP * PP * EP > total accelerators")
    mask.check(np.fmod(N, np.where(G > 0, G, 1)) != 0,
               "Infeasible 4D Parallelism: TP * PP * EP must divide total accelerators exactly")
    for a in (sym.tp, sym.pp, sym.ep, sym.B, sym.GA, sym.m, sym.v, sym.n_nodes, sym.apn):
        if a in x:
            mask.check(np.floor(x[a]) != x[a], f"{ARGUMENT_NAMES.get(a, a.name)} must be a whole number")
    if w.is_transformer:
        mask.check(x[sym.s] < 1, "seq_len must be >= 1")
        mask.check(~np.isin(x[sym.z], (0, 1, 2, 3)), "zero_stage must be 0, 1, 2, or 3")
    mask.check(x[sym.m] < 1, "n_microbatches must be >= 1")
    mask.check(x[sym.v] < 1, "v_stages must be >= 1")
    for a in (sym.BW_intra, sym.BW_fab, sym.BW_hbm, sym.BW_pcie, sym.R, sym.CAP, sym.osr, sym.P, sym.H, sym.k_e,
              sym.W_lw, sym.W_g, sym.bpp):
        if a in x:
            mask.check(x[a] <= 0, f"{ARGUMENT_NAMES.get(a, a.name)} must be positive")
    for a in (sym.alpha_nv, sym.alpha_fab, sym.tau_d, sym.TDP, sym.F, sym.L):
        if a in x:
            mask.check(x[a] < 0, f"{ARGUMENT_NAMES.get(a, a.name)} must be non-negative")
