"""mlsysim-sym: mlsysim's distributed-training step model as sympy expressions.

>>> from mlsysim_sym import DistributedModel
>>> r = DistributedModel().solve("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4,
...                              microbatch_count=8)
>>> round(r.step_latency_total, 6)
3.368627
"""
from .model import StepTimeModel, Variant, build_model
from .search import ParallelismOptimizer, search
from .solver import DistributedModel, DistributedResult, NodeProfile
from .sweep import sweep
from .symbols import PARAMS, sym
from .types import Accelerator, Fabric, Fleet, Node, Workload

__all__ = [
    "Accelerator", "DistributedModel", "DistributedResult", "Fabric", "Fleet", "Node", "NodeProfile",
    "PARAMS", "ParallelismOptimizer", "StepTimeModel", "Variant", "Workload", "build_model", "search", "sweep",
    "sym",
]
__version__ = "0.1.0"
