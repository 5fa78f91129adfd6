"""mlsysim-sym: mlsysim's distributed-training step model as sympy expressions.

>>> from mlsysim_sym import DistributedModel
>>> r = DistributedModel().solve("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4,
...                              microbatch_count=8)
>>> round(r.step_latency_total, 6)
3.368627
"""
from importlib import import_module

from .model import StepTimeModel, Variant, build_model
from .solver import DistributedModel, DistributedResult, NodeProfile
from .symbols import PARAMS, sym
from .types import Accelerator, Fabric, Fleet, Node, Workload

#: Names loaded on first use (they bring numpy along; a plain ``solve()`` does not need it).
_LAZY = {"sweep": "sweeps", "search": "optimize", "ParallelismOptimizer": "optimize", "resolve": "regime",
         "sensitivities": "sensitivity", "sensitivity_sweep": "sensitivity", "latex": "printing",
         "simplify_model": "simplify", "operating_point_of": "simplify"}

__all__ = [
    "Accelerator", "DistributedModel", "DistributedResult", "Fabric", "Fleet", "Node", "NodeProfile",
    "PARAMS", "ParallelismOptimizer", "StepTimeModel", "Variant", "Workload", "build_model", "latex",
    "operating_point_of", "resolve", "search", "sensitivities", "sensitivity_sweep", "simplify_model", "sweep", "sym",
]
__version__ = "0.1.0"


def __getattr__(name):
    if name in _LAZY:
        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'mlsysim_sym' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
