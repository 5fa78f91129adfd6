"""mlsysim-sym: mlsysim's distributed-training step model as sympy expressions.

>>> from mlsysim_sym import DistributedModel
>>> r = DistributedModel().solve("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4,
...                              microbatch_count=8)
>>> round(r.step_latency_total, 6)
3.368627

Submodules (``mlsysim_sym.notation``, ``mlsysim_sym.simplify``, ...) are reachable as
attributes after a plain ``import mlsysim_sym``; the ones that bring numpy along are
imported on first use.
"""
from importlib import import_module

from . import printing as _printing  # noqa: F401  (registers the notebook display of the model's objects)
from . import run_costs as _run_costs  # noqa: F401  (declares the plan's notation: one table, whatever is imported)
from .arguments import Arguments, parameters_of
from .mechanisms import ModelChoice
from .model import StepTimeModel, Variant, build_model, closed_form
from .solver import DistributedModel, DistributedResult, NodeProfile
from .symbols import PARAMS, sym
from .types import Accelerator, Fabric, Fleet, Node, Workload

#: Names loaded on first use.
_LAZY = {"sweep": "sweeps", "search": "optimize", "ParallelismOptimizer": "optimize", "resolve": "branches",
         "sensitivities": "sensitivity", "sensitivity_sweep": "sensitivity", "latex": "printing",
         "simplify_model": "simplify", "operating_point_of": "operating_point", "operating_point": "operating_point",
         "uncertainty": "sensitivity", "required": "requirements", "plan": "planning",
         "accelerators_to_finish": "planning", "Architecture": "architecture"}

#: Submodules reachable as attributes (imported on first use).
_SUBMODULES = ("architecture", "arguments", "bounds", "branches", "catalog", "checks", "cli", "compile", "decisions",
               "display", "files", "inputs", "masks", "mechanisms", "model", "modern", "notation", "operating_point",
               "optimize", "outputs", "planning", "plot", "printing", "requirements", "run_costs", "sensitivity",
               "shape", "simplify", "solver", "sweeps", "symbols", "terms", "types", "units")

__all__ = [
    "Accelerator", "Architecture", "Arguments", "DistributedModel", "ModelChoice", "DistributedResult", "Fabric", "Fleet", "Node", "NodeProfile",
    "PARAMS", "ParallelismOptimizer", "StepTimeModel", "Variant", "Workload", "build_model", "closed_form", "latex",
    "accelerators_to_finish", "operating_point", "operating_point_of", "parameters_of", "plan", "required", "resolve",
    "search", "sensitivities",
    "sensitivity_sweep", "simplify_model", "sweep", "sym", "uncertainty",
]
__version__ = "0.1.0"


def __getattr__(name):
    if name in _LAZY:
        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'mlsysim_sym' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))
