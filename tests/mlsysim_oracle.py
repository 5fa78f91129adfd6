"""Helpers for comparing ``mlsysim_sym`` with mlsysim 0.3.0 (not a test module).

* :func:`mlsysim_solve` runs ``mlsysim.solvers.DistributedModel().solve`` and converts its
  result to a flat dict of SI floats (every pint Quantity through ``.m_as(<SI unit>)``).
* :func:`flatten` turns our :class:`mlsysim_sym.DistributedResult` into a dict with the
  same keys.
* :func:`compare` diffs two flat dicts (relative error for numbers, exact otherwise).
* :func:`call_both` runs both solvers on one configuration, capturing the exception
  (type and message) and the warnings (category and message) of each side;
  :func:`diff_outcomes` diffs the two outcomes.

``model`` / ``fleet`` may be registry attribute names (``"Llama3_70B"``, ``"ResNet50"``,
``"Research_256"``) or mlsysim objects. Our solver receives exactly what was passed (a
name goes through our bundled catalog, an object through our converter); mlsysim gets
the registry object for a name.

Flat keys (SI units):

====================================  ==========================================
``step_latency_total``                s
``scaling_efficiency``                1
``dp_/tp_/ep_communication_latency``  s
``communication_latency``             s
``pipeline_bubble_latency``           s
``bubble_fraction``                   1
``effective_throughput``              1/s
``mfu``                               fleet MFU (mlsysim: node mfu x se)
``parallelism``                       dict, exact
``node.latency`` ...                  s (latency, latency_compute/_memory/_overhead)
``node.throughput``                   1/s
``node.energy``                       J
``node.memory_footprint``             B (mlsysim: GB on the replica path, B on Engine)
``node.peak_flops_actual``            flop/s (mlsysim: TFLOPs/s or TOPS)
``node.peak_bw_actual``               B/s
``node.mfu``, ``node.hfu``            1
``node.arithmetic_intensity``         flop/B
``node.offload_spill_bytes``          B or None
``node.offload_effective_bw``         B/s or None
``node.feasible``                     bool, exact
``node.bottleneck``                   str, exact
``node.overhead_dominated``           bool, exact
====================================  ==========================================
"""
from __future__ import annotations

import math
import warnings
from functools import lru_cache
from typing import Any, Dict, List, Optional, Tuple

#: mlsysim.Models categories that hold the 42 workloads the catalog mirrors.
CATEGORIES = ("Language", "Vision", "GenerativeVision", "Recommendation", "StateSpace", "Tiny", "Embodied")
OTHER_CATEGORIES = CATEGORIES[1:]

#: flat key -> SI unit for mlsysim's pint Quantities (None: a plain float in mlsysim).
TOP_UNITS = {
    "step_latency_total": "s",
    "scaling_efficiency": None,
    "dp_communication_latency": "s",
    "tp_communication_latency": "s",
    "ep_communication_latency": "s",
    "communication_latency": "s",
    "pipeline_bubble_latency": "s",
    "bubble_fraction": None,
    "effective_throughput": "1/s",
}
NODE_UNITS = {
    "latency": "s",
    "latency_compute": "s",
    "latency_memory": "s",
    "latency_overhead": "s",
    "throughput": "1/s",
    "energy": "J",
    "memory_footprint": "byte",
    "peak_flops_actual": "flop/s",
    "peak_bw_actual": "byte/s",
    "mfu": None,
    "hfu": None,
    "arithmetic_intensity": "flop/byte",
    "offload_spill_bytes": "byte",
    "offload_effective_bw": "byte/s",
}
NODE_EXACT = ("feasible", "bottleneck", "overhead_dominated")

KEYS = tuple(TOP_UNITS) + ("mfu", "parallelism") + tuple(f"node.{k}" for k in NODE_UNITS) \
    + tuple(f"node.{k}" for k in NODE_EXACT)


# --------------------------------------------------------------------------------------
# mlsysim access
# --------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def mlsysim_module():
    """``import mlsysim`` (0.3.0 emits no warning on import; DeprecationWarnings are muted narrowly)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import mlsysim
        import mlsysim.solvers  # noqa: F401
    return mlsysim


def mlsysim_solver():
    return mlsysim_module().solvers.DistributedModel()


def _members(reg, cls) -> Dict[str, Any]:
    out = {}
    for attr in dir(reg):
        if attr.startswith("_") or attr == "list":
            continue
        obj = getattr(reg, attr)
        if isinstance(obj, cls):
            out[attr] = obj
    return out


@lru_cache(maxsize=None)
def workload_names(category: Optional[str] = None) -> Tuple[str, ...]:
    """mlsysim registry workload attribute names, of one category or of all of :data:`CATEGORIES`."""
    ms = mlsysim_module()
    from mlsysim.models.types import Workload as MWorkload

    cats = CATEGORIES if category is None else (category,)
    return tuple(n for c in cats for n in _members(getattr(ms.Models, c), MWorkload))


@lru_cache(maxsize=None)
def cluster_names() -> Tuple[str, ...]:
    ms = mlsysim_module()
    from mlsysim.systems.types import Fleet as MFleet

    return tuple(_members(ms.Systems.Clusters, MFleet))


@lru_cache(maxsize=None)
def registry_workload(name: str):
    """``mlsysim.Models.<Category>.<name>`` for the first category that has it."""
    ms = mlsysim_module()
    for cat in CATEGORIES:
        obj = getattr(getattr(ms.Models, cat), name, None)
        if _is_workload(obj):
            return obj
    raise KeyError(f"no mlsysim workload named {name!r}")


def _is_workload(obj) -> bool:
    from mlsysim.models.types import Workload as MWorkload

    return isinstance(obj, MWorkload)


@lru_cache(maxsize=None)
def registry_cluster(name: str):
    """``mlsysim.Systems.Clusters.<name>``."""
    obj = getattr(mlsysim_module().Systems.Clusters, name, None)
    if obj is None:
        raise KeyError(f"no mlsysim cluster named {name!r}")
    return obj


def as_mlsysim_workload(model):
    return registry_workload(model) if isinstance(model, str) else model


def as_mlsysim_fleet(fleet):
    return registry_cluster(fleet) if isinstance(fleet, str) else fleet


# --------------------------------------------------------------------------------------
# Flattening
# --------------------------------------------------------------------------------------

def _si(q, unit: Optional[str]):
    if q is None:
        return None
    if unit is None:
        return float(q)
    if not hasattr(q, "m_as"):
        raise TypeError(f"expected a pint Quantity convertible to {unit}, got {q!r}")
    return float(q.m_as(unit))


def flatten_mlsysim(r) -> Dict[str, Any]:
    """An mlsysim ``DistributedResult`` as a flat dict of SI floats (keys: :data:`KEYS`)."""
    out: Dict[str, Any] = {k: _si(getattr(r, k), u) for k, u in TOP_UNITS.items()}
    node = r.node_profile
    out["mfu"] = float(node.mfu) * float(r.scaling_efficiency)
    out["parallelism"] = dict(r.parallelism)
    for k, u in NODE_UNITS.items():
        out[f"node.{k}"] = _si(getattr(node, k), u)
    for k in NODE_EXACT:
        out[f"node.{k}"] = getattr(node, k)
    return out


def flatten(result) -> Dict[str, Any]:
    """Our ``DistributedResult`` as a flat dict with the keys of :func:`flatten_mlsysim`."""
    out: Dict[str, Any] = {k: getattr(result, k) for k in TOP_UNITS}
    out["mfu"] = result.mfu
    out["parallelism"] = dict(result.parallelism)
    node = result.node_profile
    for k in NODE_UNITS:
        out[f"node.{k}"] = getattr(node, k)
    for k in NODE_EXACT:
        out[f"node.{k}"] = getattr(node, k)
    return out


def mlsysim_solve(model_name_or_obj, fleet_name_or_obj, **kw) -> Dict[str, Any]:
    """mlsysim's ``DistributedModel().solve`` as a flat dict of SI floats (exceptions propagate)."""
    r = mlsysim_solver().solve(as_mlsysim_workload(model_name_or_obj), as_mlsysim_fleet(fleet_name_or_obj), **kw)
    return flatten_mlsysim(r)


def ours_solve(model, fleet, **kw) -> Dict[str, Any]:
    from mlsysim_sym import DistributedModel

    return flatten(DistributedModel().solve(model, fleet, **kw))


# --------------------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------------------

def rel_err(a: float, b: float) -> float:
    """``|a-b| / max(|a|,|b|)``; 0 when equal (also inf == inf, nan vs nan)."""
    if a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)):
        return 0.0
    d = max(abs(a), abs(b))
    return abs(a - b) / d if d else 0.0


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


#: Outputs that are a difference of two larger rounded quantities. mlsysim's
#: ``offload_spill_bytes`` is ``memory_footprint - capacity`` computed in GB against GiB,
#: so its absolute rounding error is that of the footprint (~1e-16 x 1e11 B), not of the
#: (possibly tiny) spill: its error is measured relative to the footprint.
CANCELLATION_SCALE = {"node.offload_spill_bytes": "node.memory_footprint"}


def _key_err(k, a, b, ours, theirs) -> float:
    e = rel_err(a, b)
    ref = CANCELLATION_SCALE.get(k)
    if e and ref is not None and _is_number(ours.get(ref)) and _is_number(theirs.get(ref)):
        e = abs(a - b) / max(abs(a), abs(b), abs(ours[ref]), abs(theirs[ref]))
    return e


def compare(ours: Dict[str, Any], theirs: Dict[str, Any], rtol: float = 1e-12) -> List[str]:
    """Mismatch descriptions between two flat dicts (empty list: identical within ``rtol``).

    Numbers: relative error ``|a-b|/max(|a|,|b|) <= rtol``, except that a zero must be
    matched by an exact zero (and see :data:`CANCELLATION_SCALE`). bool, str, dict, None:
    exact equality (and the same type for bool/str).
    """
    out: List[str] = []
    for k in sorted(set(ours) | set(theirs)):
        if k not in ours or k not in theirs:
            out.append(f"{k}: missing on {'ours' if k not in ours else 'mlsysim'}")
            continue
        a, b = ours[k], theirs[k]
        if a is None or b is None:
            if not (a is None and b is None):
                out.append(f"{k}: ours={a!r} mlsysim={b!r}")
        elif isinstance(a, (bool, str, dict)) or isinstance(b, (bool, str, dict)):
            if type(a) is not type(b) or a != b:
                out.append(f"{k}: ours={a!r} mlsysim={b!r}")
        elif _is_number(a) and _is_number(b):
            if a == b:
                continue
            if a == 0 or b == 0 or math.isnan(a) or math.isnan(b):
                out.append(f"{k}: ours={a!r} mlsysim={b!r}")
                continue
            e = _key_err(k, a, b, ours, theirs)
            if not e <= rtol:
                out.append(f"{k}: ours={a!r} mlsysim={b!r} rel_err={e:.3g}")
        elif a != b:
            out.append(f"{k}: ours={a!r} mlsysim={b!r}")
    return out


def max_rel_errors(ours: Dict[str, Any], theirs: Dict[str, Any], acc: Dict[str, float]) -> None:
    """Fold the relative error of every numeric key into ``acc`` (key -> max so far)."""
    for k, a in ours.items():
        b = theirs.get(k)
        if _is_number(a) and _is_number(b):
            acc[k] = max(acc.get(k, 0.0), _key_err(k, a, b, ours, theirs))


# --------------------------------------------------------------------------------------
# Running both
# --------------------------------------------------------------------------------------

def _run(fn, *args, **kw) -> Dict[str, Any]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result, exc = fn(*args, **kw), None
        except Exception as e:  # noqa: BLE001 - the exception is the observable
            result, exc = None, (type(e).__name__, str(e))
    return {
        "result": result,
        "exception": exc,
        "warnings": [(w.category.__name__, str(w.message)) for w in caught],
    }


def call_both(model, fleet, **kw) -> Dict[str, Dict[str, Any]]:
    """Run both solvers on one configuration.

    Returns ``{"ours": outcome, "mlsysim": outcome}``; an outcome is ``{"result": flat dict
    or None, "exception": (type name, message) or None, "warnings": [(category, message)]}``.
    """
    return {
        "ours": _run(ours_solve, model, fleet, **kw),
        "mlsysim": _run(mlsysim_solve, model, fleet, **kw),
    }


def diff_outcomes(both: Dict[str, Dict[str, Any]], rtol: float = 1e-12) -> List[str]:
    """Mismatches between the two outcomes of :func:`call_both` (exception, warnings, result)."""
    a, b = both["ours"], both["mlsysim"]
    out: List[str] = []
    if a["exception"] != b["exception"]:
        out.append(f"exception: ours={a['exception']!r} mlsysim={b['exception']!r}")
    if a["warnings"] != b["warnings"]:
        out.append(f"warnings: ours={a['warnings']!r} mlsysim={b['warnings']!r}")
    if a["result"] is not None and b["result"] is not None:
        out.extend(compare(a["result"], b["result"], rtol))
    return out


def describe(model, fleet, kw: Dict[str, Any]) -> str:
    """A copy-pasteable reproducer for a mismatch report."""
    m = model if isinstance(model, str) else f"<{type(model).__name__} {getattr(model, 'name', '?')}>"
    f = fleet if isinstance(fleet, str) else f"<{type(fleet).__name__} {getattr(fleet, 'name', '?')}>"
    args = ", ".join(f"{k}={v!r}" for k, v in kw.items())
    return f"solve({m!r}, {f!r}, {args})"
