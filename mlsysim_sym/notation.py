r"""The one notation table: how every parameter, model quantity and cost term prints.

*Machine Learning Systems* never types a symbol: it writes a macro
(``\DataParallelDegree``) whose LaTeX (``N_{\text{DP}}``) comes from the notation
registry that mlsysim ships (``mlsysim.Symbols``, YAML under
``mlsysim/notation/data/``). This table gives each of our names its LaTeX, and
the book's macro where the book has a symbol **with the same meaning**; where
it has none, the notation we chose (:func:`lacking`).

Everything that prints reads this table, and nothing else does:

* :class:`BookSymbol` is the sympy ``Symbol`` of every parameter and quantity. Its
  ``_latex`` hook looks its name up here, so plain ``sympy.latex(expr)`` and a
  notebook's display print the book's notation, and
  ``mlsysim_sym.latex(expr, book=True)`` prints the macros.
* The cost terms (``RingAllReduce`` ...) and the Iverson bracket print their
  names from :data:`TERMS` and :data:`INDICATOR` through their own ``_latex`` hooks.
* Parameters are declared in :mod:`mlsysim_sym.symbols` (with their unit and
  meaning), which registers them here; model quantities, the formal arguments of
  the cost terms and the terms are listed in this module.

The LaTeX of every entry is unique, so an equation never shows one glyph for two
meanings (:func:`glyph_clashes` checks the subtler confusions: ``n_DP`` beside ``N_DP``).

Book mode prints a macro for every symbol: the registry's where it has the meaning,
else the macro we propose (:data:`EXTENSION`). :func:`registry_extension_yaml` writes the
proposals in the registry's own format (``docs/registry/*.yaml``, to append to the files
of ``mlsysim/notation/data/``), and :func:`book_problems` applies the registry's rules for
what a book-mode equation may contain. This module sits at the bottom of the package (it
imports only sympy).

Examples
--------
>>> from mlsysim_sym import notation
>>> import mlsysim_sym.symbols
>>> notation.entry("dp").book, notation.entry("dp").latex
('\\DataParallelDegree', 'N_{\\text{DP}}')
>>> notation.book_macros()[r"\PipelineBubbleFraction"]
'b_{\\text{pipe}}'
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import sympy as sp

T = r"\text"


def pick(latex: str, macro: Optional[str], book: bool = False) -> str:
    """The book's ``macro`` in book mode (when there is one), else ``latex``."""
    return macro if (book and macro) else latex


def book_mode(printer) -> bool:
    """Whether a LaTeX printer prints the book's macros (its ``book`` setting)."""
    return bool(printer._settings.get("book", False))


@dataclass(frozen=True)
class Notation:
    """How one name prints: the LaTeX readers see and the book's macro (if any).

    ``kind`` is ``"parameter"``, ``"quantity"`` or ``"formal"`` (an argument in the
    definition of a cost term). ``note`` says why we chose the glyph when the book
    has no symbol for the meaning, or has one we could not use.
    """

    name: str
    latex: str
    book: Optional[str]
    meaning: str
    unit: str
    kind: str
    note: str = ""

    @property
    def extension(self) -> Optional[str]:
        """The macro we propose for the book's registry when it has none for this meaning
        (:data:`EXTENSION`; :func:`registry_extension` writes them in the registry's format)."""
        return None if self.book else _proposal(self.name).macro

    @property
    def macro(self) -> str:
        """The macro book mode prints: the registry's, else the proposed one."""
        return self.book or self.extension

    def tex(self, book: bool = False) -> str:
        """The macro in book mode (the registry's or the proposed one), else the LaTeX."""
        return pick(self.latex, self.macro, book)



# --------------------------------------------------------------------------------------------
# The registry extension: a macro for every name the registry has no entry for
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Proposal:
    """A macro we propose to the book's registry, with the fields its entries carry.

    ``kind`` is the registry's kind (``count`` or ``scalar``); ``definition`` is a plain
    noun phrase (no LaTeX), as the registry's rules ask; ``domain`` is the registry file
    the entry belongs in.
    """

    macro: str
    kind: str
    definition: str
    domain: str = "distributed"
    unit: str = ""      # a cost term's unit (ours), which its notation does not record
    notes: str = ""     # for the registry's notes: what the entry must not be confused with


_P = Proposal
#: name (parameter, quantity, formal argument or cost term) -> the proposed macro.
EXTENSION: Dict[str, Proposal] = {
    # model quantities
    "G": _P(r"\ReplicaAcceleratorCount", "count",
            "number of accelerators one model replica spans, its tensor, pipeline and expert parallel degrees "
            "multiplied"),
    "W": _P(r"\ModelWeightSize", "scalar", "bytes of a model's weights at the training precision", "performance"),
    "O_hw": _P(r"\HardwareStepOperations", "scalar",
               "floating-point operations one replica executes per training step, recomputation included"),
    "R_eff": _P(r"\DeviceAchievedComputeRate", "scalar",
                "operation rate one accelerator sustains on a replica's step, its peak rate times the hardware "
                "efficiency", "performance"),
    "f_train": _P(r"\TrainableParameterFraction", "scalar",
                  "share of a model's parameters that training updates, below one under LoRA", "learning"),
    "ifd": _P(r"\InFlightGroupCount", "count",
              "number of microbatch groups one stage of a one-forward-one-backward pipeline schedule cycles through"),
    "L_stage": _P(r"\StageLayerCount", "count", "number of layers one pipeline stage holds"),
    "P_shard": _P(r"\ShardParameterCount", "count",
                  "number of parameters one accelerator holds after tensor, pipeline and expert sharding, before ZeRO"),
    "M_buffers": _P(r"\CommunicationBufferMemory", "scalar",
                    "memory one accelerator holds for gradient buckets and pipeline send and receive buffers"),
    "feasible": _P(r"\MemoryFitIndicator", "scalar",
                   "one when a training state fits in device memory, zero when it does not", "performance"),
    "T_node": _P(r"\ReplicaRooflineTime", "scalar",
                 "roofline time of one replica's training step, the larger of compute and memory time plus overhead"),
    "hfu_node": _P(r"\HardwareFlopsUtilization", "scalar",
                   "operations a device executes per second, recomputation included, divided by its peak operation "
                   "rate", "performance"),
    "energy": _P(r"\ReplicaStepEnergy", "scalar", "energy one replica's accelerators draw over one training step"),
    "throughput_node": _P(r"\ReplicaSampleThroughput", "scalar",
                          "samples per second one replica processes when it communicates with no other replica"),
    "memory_bound": _P(r"\MemoryBoundIndicator", "scalar",
                       "one when the memory roofline binds a replica's step, zero when compute does", "performance"),
    "overhead_dominated": _P(r"\OverheadDominanceIndicator", "scalar",
                             "one when fixed overhead exceeds a replica's roofline time, zero when it does not",
                             "performance"),
    "offload_spill": _P(r"\HostSpillMemory", "scalar",
                        "bytes of training state beyond device memory capacity, which must spill to host memory",
                        "performance"),
    "BW_inter": _P(r"\EffectiveFabricBandwidth", "scalar",
                   "fabric bandwidth per accelerator after division by the oversubscription ratio"),
    "rpn": _P(r"\NodeDataParallelRankCount", "count", "number of ranks of one data-parallel group on one node"),
    "nodes_dp": _P(r"\DataParallelNodeCount", "count", "number of nodes one data-parallel group spans"),
    "T_dp_allreduce": _P(r"\GradientAllReduceTime", "scalar",
                         "time of one gradient AllReduce of a data-parallel group, before congestion"),
    "L_tp": _P(r"\TensorParallelLayerCount", "count",
               "number of layers whose tensor-parallel AllReduces one pipeline stage pays",
               notes=r"Equal to \StageLayerCount for every layer count; mlsysim computes the two apart (its "
                     "memory model and its tensor-parallel communication)."),
    "T_tp_allreduce": _P(r"\TensorParallelAllReduceTime", "scalar",
                         "time of a step's tensor-parallel activation AllReduces, before congestion"),
    "T_ep_alltoall": _P(r"\ExpertAllToAllTime", "scalar",
                        "time of a step's expert-parallel token AllToAll, before congestion"),
    "T_bubble": _P(r"\PipelineBubbleTime", "scalar", "idle time that a pipeline's fill and drain add to a step"),
    "T_dp": _P(r"\DataParallelCommunicationTime", "scalar",
               "data-parallel communication time per step with congestion, amortized over gradient accumulation"),
    "T_tp": _P(r"\TensorParallelCommunicationTime", "scalar",
               "tensor-parallel communication time per step with congestion"),
    "T_ep": _P(r"\ExpertParallelCommunicationTime", "scalar",
               "expert-parallel communication time per step with congestion"),
    "T_dp_exposed": _P(r"\ExposedGradientSyncTime", "scalar",
                       "data-parallel communication time per step left on the critical path after overlap"),
    "T_sync": _P(r"\UnstraggledStepTime", "scalar", "time of one training step before the straggler multiplier"),
    "mfu": _P(r"\FleetModelFlopsUtilization", "scalar",
              "useful model operations per second of a whole fleet divided by its accelerators' combined peak "
              "operation rate", "performance"),
    # formal arguments of the cost terms
    "T_busy": _P(r"\StageBusyTime", "scalar", "busy time of one pipeline stage over a training step"),
    # cost terms
    "HierarchicalAllReduce": _P(r"\HierarchicalAllReduceTime", "scalar",
                                "time to complete an AllReduce in two levels, inside each node and then across "
                                "nodes", unit="s"),
    "BubbleTime": _P(r"\PipelineBubbleTime", "scalar", "idle time that a pipeline's fill and drain add to a step",
                     unit="s"),
    "PipelineSendTime": _P(r"\PipelineStageSendTime", "scalar",
                           "time to send one microbatch's activations across one pipeline stage boundary", unit="s"),
    "ExpertCapacity": _P(r"\ExpertTokenCapacity", "count",
                         "number of token slots one expert accepts per batch, the capacity factor times its uniform "
                         "share"),
    "ActivationsNoRecompute": _P(r"\TensorParallelLayerActivationMemory", "scalar",
                                 "activation bytes one transformer layer keeps per device without recomputation under "
                                 "tensor parallelism", "learning", unit="B"),
    "ActivationsSeqParallel": _P(r"\SequenceParallelLayerActivationMemory", "scalar",
                                 "activation bytes one transformer layer keeps per device without recomputation under "
                                 "tensor and sequence parallelism", "learning", unit="B"),
    "DataParallelCommVolume": _P(r"\GradientSyncVolume", "scalar",
                                 "bytes one rank sends per step for the data-parallel gradient AllReduce", unit="B"),
    "Zero3CommVolume": _P(r"\FullyShardedSyncVolume", "scalar",
                          "bytes one rank sends per step under ZeRO-3 or FSDP, two AllGathers and one ReduceScatter",
                          unit="B"),
    "Zero3CommTime": _P(r"\FullyShardedCommunicationTime", "scalar",
                        "communication time per step under ZeRO-3 or FSDP, two AllGathers and one ReduceScatter",
                        unit="s"),
    # parameters
    "ep": _P(r"\ExpertParallelDegree", "count",
             "number of devices over which the experts of a mixture-of-experts layer are spread"),
    "z": _P(r"\ZeroShardingStage", "index",
            "ZeRO stage, from zero for no sharding to three for optimizer state, gradients and weights", "learning"),
    "lora": _P(r"\LoraFineTuningSwitch", "scalar",
               "one when training updates low-rank adapters only, zero for full training", "learning"),
    "rc": _P(r"\FullRecomputationSwitch", "scalar",
             "one when the backward pass recomputes every activation, zero when it keeps them", "learning"),
    "ov": _P(r"\GradientOverlapSwitch", "scalar",
             "one when data-parallel communication overlaps the backward pass, zero when it follows it"),
    "eta_ov": _P(r"\CommunicationOverlapFraction", "scalar",
                 "share of data-parallel communication time hidden behind the backward pass when overlap is on"),
    "c": _P(r"\CongestionSlowdownFactor", "scalar",
            "multiplier on data, tensor and expert parallel communication time for fabric congestion"),
    "f_s": _P(r"\StragglerSlowdownFactor", "scalar",
              "multiplier on the step time set by the slowest worker, applied only above one"),
    "iota": _P(r"\RoutingImbalanceFactor", "scalar",
               "multiplier on the expert-parallel AllToAll volume for uneven routing of tokens to experts"),
    "F": _P(r"\ForwardTokenOperations", "scalar",
            "floating-point operations of one forward pass per token, or per sample for workloads without tokens",
            "performance"),
    "W_lw": _P(r"\LoweredWeightSize", "scalar",
               "weight bytes of a lowered compute graph, where they differ from parameters times element size",
               "performance"),
    "W_g": _P(r"\GradientWeightSize", "scalar",
              "bytes of a whole model's weights from which the data-parallel gradient payload is sized",
              notes=r"Not \GradientPayload, the bytes one data-parallel group all-reduces (this over the "
                    "tensor and pipeline degrees)."),
    "BW_intra": _P(r"\IntraNodeBandwidth", "scalar",
                   "bandwidth per direction between accelerators of one node, such as NVLink"),
    "alpha_nv": _P(r"\IntraNodeLatency", "scalar", "startup latency of one message between accelerators of one node"),
    "alpha_fab": _P(r"\FabricMessageLatency", "scalar", "startup latency of one message across the network fabric"),
    "BW_pcie": _P(r"\HostOffloadBandwidth", "scalar",
                  "bandwidth per direction of the host link over which one accelerator offloads state", "performance",
                  notes=r"Not \HostLinkBandwidth, the aggregate host bandwidth of a serving node."),
    "CAP_sram": _P(r"\OnChipSramCapacity", "scalar", "bytes of on-chip SRAM one accelerator provides", "performance",
                   notes=r"Not \SramCapacity, the words of SRAM one kernel can use."),
    "BW_sram": _P(r"\OnChipSramBandwidth", "scalar", "bandwidth of one accelerator's on-chip SRAM", "performance"),
    "BW_flash": _P(r"\FlashStorageBandwidth", "scalar", "bandwidth of a device's flash storage", "performance"),
    "ADAM": _P(r"\OptimizerStateBytesPerParameter", "scalar",
               "bytes of optimizer state held for each trainable parameter, twelve for Adam in mixed precision",
               "learning"),
    "TAX": _P(r"\LayerLaunchOverhead", "scalar", "framework time per layer per kernel launch", "performance"),
    "E_idle": _P(r"\IdlePowerFraction", "scalar",
                 "share of its thermal power limit an accelerator draws while idle during a step", "performance"),
    "E_dyn": _P(r"\DynamicPowerFraction", "scalar",
                "share of its thermal power limit an accelerator draws in proportion to its hardware utilization",
                "performance"),
    "alpha_h": _P(r"\HierarchicalIntraNodeLatency", "scalar",
                  "message latency inside a node that mlsysim's hierarchical AllReduce takes as a fixed constant",
                  notes=r"The meaning of \IntraNodeLatency; mlsysim fixes it (500 ns) for this one algorithm "
                        r"instead of reading the accelerator's value. A book needs only \IntraNodeLatency."),
    "n_ar": _P(r"\TensorParallelAllReduceCount", "count",
               "number of tensor-parallel AllReduces per layer per training step, forward and backward"),
    "K_sel": _P(r"\SelectiveRecomputeFactor", "scalar",
                "number of two-byte activation values one layer keeps per token and hidden unit with selective "
                "recomputation", "learning"),
    "K_full": _P(r"\FullRecomputeFactor", "scalar",
                 "number of two-byte activation values one layer keeps per token and hidden unit with full "
                 "recomputation", "learning"),
    "f_buf": _P(r"\GradientBucketFraction", "scalar", "size of the gradient bucket buffer as a share of gradient memory"),
    "f_lora": _P(r"\LoraGradientVolumeFraction", "scalar",
                 "share of the full gradient volume that a LoRA run all-reduces", "learning"),
    "f_act": _P(r"\ActivationTrafficFraction", "scalar",
                "activation bytes one sample streams as a share of the weight bytes", "performance"),
    "f_lora_mem": _P(r"\LoraMemoryMultiplier", "scalar",
                     "memory of a LoRA run on one accelerator as a multiple of its weight bytes", "learning"),
    "eps_t": _P(r"\RooflineTieTolerance", "scalar", "time below which a roofline time counts as zero",
                "performance"),
}
# ---- issue 13: the extended model's names (DistributedModel(fidelity="extended")) ------------ begin
EXTENSION.update({
    "sp": _P(r"\SequenceParallelSwitch", "scalar",
             "one when tensor-parallel ranks also split the sequence outside the tensor-parallel blocks, zero when "
             "they do not"),
    "tov": _P(r"\TensorParallelOverlapSwitch", "scalar",
              "one when tensor-parallel communication overlaps the matrix multiplications, zero when it does not"),
    "kvf": _P(r"\KvHeadFraction", "scalar",
              "width of the attention keys and values as a share of the hidden dimension, key-value heads over "
              "query heads"),
    "d_half": _P(r"\GemmHalfEfficiencyWidth", "scalar",
                 "hidden dimension at which the shape factor of a layer's matrix multiplications is one half",
                 "performance"),
    "n_a2a": _P(r"\ExpertAllToAllCount", "count",
                "number of expert-parallel AllToAlls per mixture-of-experts layer per training step, dispatch and "
                "combine in the forward and the backward pass"),
    "b_upd": _P(r"\OptimizerUpdateBytesPerParameter", "scalar",
                "bytes of memory traffic the optimizer update moves for each trainable parameter", "learning"),
    "G_mp": _P(r"\ModelShardAcceleratorCount", "count",
               "number of accelerators over which one copy of the weights is split, the tensor, pipeline and "
               "expert parallel degrees multiplied"),
    "r_sp": _P(r"\UnsplitActivationShare", "scalar",
               "share of the activations that tensor parallelism leaves whole which one tensor-parallel rank keeps",
               "learning"),
    "beta_tp": _P(r"\TensorParallelLinkBandwidth", "scalar", "link bandwidth of a tensor-parallel group"),
    "alpha_tp": _P(r"\TensorParallelLinkLatency", "scalar", "message latency of a tensor-parallel group"),
    "beta_cp": _P(r"\ContextParallelLinkBandwidth", "scalar",
                  "link bandwidth of a group of tensor and context parallel ranks"),
    "alpha_cp": _P(r"\ContextParallelLinkLatency", "scalar",
                   "message latency of a group of tensor and context parallel ranks"),
    "T_sp_pair": _P(r"\SequenceParallelPairTime", "scalar",
                    "time of the ReduceScatter and AllGather pair that replaces one tensor-parallel AllReduce "
                    "under sequence parallelism"),
    "n_p2p": _P(r"\PipelineCriticalSendCount", "count",
                "number of stage-to-stage sends on the critical path of one pipelined training step"),
    "T_dp_gather": _P(r"\FullyShardedGatherTime", "scalar",
                      "time of the two weight AllGathers of one micro-step under ZeRO-3 or FSDP, before congestion"),
    "K_act": _P(r"\LayerActivationFactor", "scalar",
                "number of two-byte activation values one layer keeps per token and hidden unit on one "
                "tensor-parallel rank", "learning"),
    "T_tp_layer": _P(r"\TensorParallelLayerCollectiveTime", "scalar",
                     "time of one tensor-parallel collective of one layer, before congestion"),
    "M_kv": _P(r"\SequenceKvPayload", "scalar",
               "bytes of the keys and values of a whole sequence held by one tensor-parallel rank"),
    "T_cp_layer": _P(r"\ContextParallelLayerExchangeTime", "scalar",
                     "time of one layer's context-parallel key and value exchange, before congestion"),
    "alpha_pp": _P(r"\PipelineLinkLatency", "scalar", "message latency between consecutive pipeline stages"),
    "f_gemm": _P(r"\GemmShapeEfficiencyFactor", "scalar",
                 "share of the large-matrix efficiency that a layer's matrix multiplications reach at their shape",
                 "performance"),
    "T_cp_exchange": _P(r"\ContextParallelExchangeTime", "scalar",
                        "time of a step's context-parallel key and value exchange, before congestion"),
    "T_cp": _P(r"\ContextParallelCommunicationTime", "scalar",
               "context-parallel communication time per step with congestion"),
    "beta_pp": _P(r"\PipelineLinkBandwidth", "scalar",
                  "bandwidth of the link between consecutive pipeline stages"),
    "T_p2p": _P(r"\PipelineSendTimePerStep", "scalar",
                "time of a step's point-to-point sends between pipeline stages, forward and backward"),
    "P_update": _P(r"\UpdatedParameterCount", "count",
                   "number of parameters whose optimizer update one accelerator computes"),
    "T_tp_exposed": _P(r"\ExposedTensorParallelTime", "scalar",
                       "tensor-parallel communication time per step left on the critical path after overlap"),
    "GemmShapeEfficiency": _P(r"\GemmShapeEfficiency", "scalar",
                              "share of the large-matrix efficiency a matrix multiplication of a given width "
                              "reaches", "performance", unit="1"),
    "OptimizerUpdateTime": _P(r"\MemoryBoundUpdateTime", "scalar",
                              "time of one optimizer update over a set of parameters, bounded by memory bandwidth",
                              "learning", unit="s",
                              notes=r"A step's update is the book's \OptimizerStepTime, which this term prices."),
    "x_gemm": _P(r"\GemmSharedWidth", "scalar",
                 "width of the shared dimension of a layer's matrix multiplications", "performance"),
    "n_param": _P(r"\UpdateParameterCount", "count", "number of parameters an update reads and writes",
                  "learning"),
})
# ---- issue 13 --------------------------------------------------------------------------------- end
del _P
#: Formal arguments of the cost terms whose meaning is a parameter's or a quantity's: they print as it does.
SAME_MEANING: Dict[str, str] = {"beta_in": "BW_intra", "alpha_in": "alpha_nv", "beta_out": "BW_inter",
                                "alpha_out": "alpha_fab"}
for _formal, _name in SAME_MEANING.items():
    EXTENSION[_formal] = EXTENSION[_name]


def _proposal(name: str) -> Proposal:
    try:
        return EXTENSION[name]
    except KeyError:
        raise KeyError(f"{name!r} has no registry macro: add the macro we propose to mlsysim_sym.notation.EXTENSION"
                       ) from None


_TABLE: Dict[str, Notation] = {}

_GREEK = {"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "eta": "η", "iota": "ι",
          "ell": "ℓ", "chi": "χ", "lambda": "λ", "mu": "μ", "rho": "ρ", "sigma": "σ", "tau": "τ", "phi": "φ"}


def plain(latex: str) -> str:
    r"""A symbol's LaTeX as plain text for a terminal: ``\beta_{\text{fab}}`` -> ``β_fab``,
    ``N_{\text{TP}}`` -> ``N_TP``, ``\text{BW}_{\text{PCIe}}`` -> ``BW_PCIe``.

    >>> plain(r"\eta_{\text{hw}}"), plain(r"N_{L,\text{TP}}"), plain(r"\text{MFU}")
    ('η_hw', 'N_L,TP', 'MFU')
    """
    out = re.sub(r"\\(?:text|mathrm|operatorname)\{([^{}]*)\}", r"\1", latex)
    out = re.sub(r"\\([A-Za-z]+)", lambda m: _GREEK.get(m.group(1), m.group(1)), out)
    return out.replace("{", "").replace("}", "").replace(" ", "")



def declare(name: str, latex: str, meaning: str, unit: str, kind: str, book: Optional[str] = None,
            note: str = "") -> Notation:
    """Add one entry to the table (each name once); one the registry lacks needs its :data:`EXTENSION` row."""
    if name in _TABLE:
        raise RuntimeError(f"notation entry {name!r} declared twice")
    if book is None:
        _proposal(name)
    e = _TABLE[name] = Notation(name, latex, book, meaning, unit, kind, note)
    return e


class BookSymbol(sp.Symbol):
    """A sympy ``Symbol`` that prints in the book's notation.

    It carries nothing but sympy's assumptions; its LaTeX is looked up in this
    module's table by name when printed. ``symbol_names`` given to the printer
    still win. Model quantities sort in reading order (node time, then DP, TP,
    EP, bubble) so that sums print as the book writes them; everything else sorts by
    name, as any sympy Symbol.
    """

    def _latex(self, printer, **kwargs) -> str:
        names = printer._settings.get("symbol_names") or {}
        if self in names:
            return names[self]
        e = _TABLE.get(self.name)
        if e is None:
            return printer._print_Symbol(self, **kwargs)
        return e.tex(book_mode(printer))

    def sort_key(self, order=None):
        key = _READING.get(self.name)
        if key is None:
            return super().sort_key(order)
        return self.class_key(), (1, (key,)), sp.S.One.sort_key(), sp.S.One


def symbol(name: str, **assumptions) -> BookSymbol:
    """The :class:`BookSymbol` of a name (sympy caches it: one object per name and assumptions)."""
    return BookSymbol(name, **assumptions)


# --------------------------------------------------------------------------------------------
# Model quantities, in model order: name, LaTeX, book macro, unit, meaning, note
# --------------------------------------------------------------------------------------------
_QUANTITIES = (
    ("N", rf"N_{{{T}{{GPU}}}}", r"\AcceleratorCount", "1", "accelerators in the fleet"),
    ("G", rf"G_{{{T}{{rep}}}}", None, "1", "accelerators of one model replica (TP x PP x EP; x CP in the extended "
                                           "model)"),
    ("dp", rf"N_{{{T}{{DP}}}}", r"\DataParallelDegree", "1", "data-parallel replicas"),
    ("lb", rf"B_{{{T}{{local}}}}", r"\LocalBatchSize", "1", "samples per replica per step"),
    ("W", "W", None, "B", "weight bytes of the model at the training precision"),
    ("O_model", rf"O_{{{T}{{model}}}}", r"\ModelStepOperations", "flop",
     "model FLOPs of one replica step (3 x forward)"),
    ("O_hw", rf"O_{{{T}{{hw}}}}", None, "flop", "executed FLOPs of one replica step (4 x forward with recompute)"),
    ("R_eff", rf"R_{{{T}{{dev}}}}", None, "flop/s", "achieved FLOP/s of one accelerator",
     r"The book's \RealizedDeviceComputeRate is drawn R, the glyph of \OversubscriptionRatio, "
     r"and R_eff is its \EffectiveFleetThroughput"),
    ("T_compute", rf"T_{{{T}{{compute}}}}", r"\IronLawComputeTime", "s", "compute time of the replica step"),
    ("f_train", rf"f_{{{T}{{train}}}}", None, "1", "trainable share of the parameters (LoRA)"),
    ("ifd", rf"m_{{{T}{{flight}}}}", None, "1", "in-flight divisor of the 1F1B schedule"),
    ("mb", rf"B_{{{T}{{micro}}}}", r"\MicrobatchSize", "1", "samples of one microbatch held by a stage"),
    ("L_stage", rf"N_{{L,{T}{{stage}}}}", None, "1", "layers of one pipeline stage"),
    ("P_shard", rf"P_{{{T}{{shard}}}}", None, "1", "parameters held by one accelerator before ZeRO"),
    ("M_weights", rf"M_{{{T}{{weights}}}}", r"\WeightMemory", "B", "weight memory per accelerator"),
    ("M_grads", rf"M_{{{T}{{gradients}}}}", r"\GradientMemory", "B", "gradient memory per accelerator"),
    ("M_optimizer", rf"M_{{{T}{{optimizer}}}}", r"\OptimizerStateMemory", "B",
     "optimizer-state memory per accelerator"),
    ("M_activations", rf"M_{{{T}{{activations}}}}", r"\ActivationMemory", "B", "activation memory per accelerator"),
    ("M_buffers", rf"M_{{{T}{{buffers}}}}", None, "B", "communication buffers per accelerator"),
    ("M_acc", rf"M_{{{T}{{total}}}}", r"\TotalMemoryFootprint", "B", "training memory per accelerator"),
    ("feasible", rf"{T}{{fits}}", None, "1", "the training state fits in HBM"),
    ("BW_eff", rf"{T}{{BW}}", r"\Bandwidth", "B/s", "bandwidth of the memory roofline"),
    ("traffic", rf"D_{{{T}{{vol}}}}", r"\DataVolume", "B", "bytes one accelerator streams per step"),
    ("T_memory", rf"T_{{{T}{{memory}}}}", r"\IronLawMemoryTime", "s", "memory time of the replica step"),
    ("T_overhead", rf"L_{{{T}{{lat}}}}", r"\Latency", "s", "dispatch and framework overhead per step"),
    ("T_node", rf"T_{{{T}{{node}}}}", None, "s", "roofline time of one replica step"),
    ("mfu_node", rf"{T}{{MFU}}", r"\ModelFlopsUtilization", "1",
     "model FLOPs utilization of one replica's accelerators over their roofline time"),
    ("hfu_node", rf"{T}{{HFU}}", None, "1", "hardware FLOPs utilization of one replica's accelerators"),
    ("energy", rf"E_{{{T}{{rep}}}}", None, "J", "energy of one replica step",
     r"E_step is the book's \TrainingStepEnergy, the energy of the whole fleet"),
    ("throughput_node", rf"R_{{{T}{{node}}}}", None, "1/s", "samples per second of one replica"),
    ("intensity", "I", r"\ArithmeticIntensity", "flop/B", "arithmetic intensity of the replica step"),
    ("memory_bound", rf"{T}{{mem}}_{{{T}{{bound}}}}", None, "1",
     "1 when the memory roofline binds (bottleneck Memory)"),
    ("overhead_dominated", rf"{T}{{ovh}}_{{{T}{{dom}}}}", None, "1", "1 when the overhead exceeds the roofline time"),
    ("offload_spill", rf"M_{{{T}{{spill}}}}", None, "B", "bytes over HBM capacity (meaningful when infeasible)"),
    ("M_grad_msg", rf"M_{{{T}{{grad}}}}", r"\GradientPayload", "B", "gradient bytes one DP group all-reduces"),
    ("BW_inter", rf"\beta_{{{T}{{inter}}}}", None, "B/s", "fabric bandwidth after oversubscription"),
    ("rpn", rf"g_{{{T}{{DP}}}}", None, "1", "ranks of one DP group per node"),
    ("nodes_dp", rf"N_{{{T}{{nodes,DP}}}}", None, "1", "nodes one DP group spans"),
    ("T_dp_allreduce", rf"T_{{{T}{{AR,DP}}}}", None, "s", "one gradient all-reduce, before congestion"),
    ("M_act_msg", rf"M_{{{T}{{act}}}}", r"\ActivationPayloadSize", "B", "activation bytes of one TP all-reduce"),
    ("L_tp", rf"N_{{L,{T}{{TP}}}}", None, "1", "layers whose TP all-reduces one stage pays"),
    ("T_tp_allreduce", rf"T_{{{T}{{AR,TP}}}}", None, "s", "TP all-reduces of one step, before congestion"),
    ("T_ep_alltoall", rf"T_{{{T}{{A2A,EP}}}}", None, "s", "EP all-to-all of one step, before congestion",
     r"The book's \TokenDispatchTime is one dispatch; this is a step's all-to-all on the fabric"),
    ("bubble_fraction", rf"b_{{{T}{{pipe}}}}", r"\PipelineBubbleFraction", "1", "idle share of the pipelined step",
     r"With V > 1 this is also the book's \InterleavedPipelineBubbleFraction"),
    ("T_bubble", rf"T_{{{T}{{bubble}}}}", None, "s", "pipeline fill-and-drain time"),
    ("T_dp", rf"T_{{{T}{{DP}}}}", None, "s", "DP communication per step (congestion, amortized over accumulation)"),
    ("T_tp", rf"T_{{{T}{{TP}}}}", None, "s", "TP communication per step (with congestion)"),
    ("T_ep", rf"T_{{{T}{{EP}}}}", None, "s", "EP communication per step (with congestion)"),
    ("T_comm", rf"T_{{{T}{{comm}}}}", r"\CommunicationTime", "s", "communication per step, before overlap"),
    ("T_dp_exposed", rf"T_{{{T}{{DP,exposed}}}}", None, "s", "DP communication left after overlap",
     r"The book's \ExposedCommunicationTime counts all communication; this is the DP share only"),
    ("T_sync", rf"\tilde{{T}}_{{{T}{{step}}}}", None, "s", "step time before the straggler",
     r"T_sync is the book's \SynchronizationTime (time lost to barriers), not a step time"),
    ("T_step", rf"T_{{{T}{{step}}}}", r"\DistributedStepTime", "s", "wall-clock time of one training step"),
    ("scaling_efficiency", rf"f_{{{T}{{compute}}}}", r"\UsefulComputeFraction", "1", "replica time over step time",
     r"mlsysim calls this field scaling_efficiency; the book's \ScalingEfficiency is a measured speedup over N"),
    ("mfu", rf"{T}{{MFU}}_{{{T}{{fleet}}}}", None, "1", "fleet model FLOPs utilization",
     r"The book's \ModelFlopsUtilization is one device's (here the replica's); this is the fleet's"),
    ("effective_throughput", rf"R_{{{T}{{train}}}}", r"\TrainingSampleThroughput", "1/s",
     "samples per second of the fleet"),
)
# ---- issue 13: quantities of the extended model only ------------------------------------------ begin
_QUANTITIES += (
    ("G_mp", rf"G_{{{T}{{shard}}}}", None, "1", "accelerators sharing one copy of the weights (TP x PP x EP)"),
    ("r_sp", rf"r_{{{T}{{whole}}}}", None, "1",
     "share of the activations TP leaves whole that one TP rank keeps (1 / N_TP with SP, else 1)"),
    ("beta_tp", rf"\beta_{{{T}{{TP}}}}", None, "B/s", "link bandwidth of the TP group"),
    ("alpha_tp", rf"\alpha_{{{T}{{TP}}}}", None, "s", "message latency of the TP group"),
    ("beta_cp", rf"\beta_{{{T}{{CP}}}}", None, "B/s", "link bandwidth of the TP x CP group"),
    ("alpha_cp", rf"\alpha_{{{T}{{CP}}}}", None, "s", "message latency of the TP x CP group"),
    ("n_p2p", rf"n_{{{T}{{P2P}}}}", None, "1", "stage-to-stage sends on a step's critical path"),
    ("T_sp_pair", rf"T_{{{T}{{RS+AG}}}}", None, "s",
     "a ReduceScatter and an AllGather of one layer's TP message (sequence parallelism)"),
    ("T_dp_gather", rf"T_{{{T}{{AG,ZeRO-3}}}}", None, "s",
     "ZeRO-3's two weight AllGathers of one micro-step, before congestion"),
    ("K_act", rf"K_{{{T}{{act}}}}", None, "1",
     "two-byte activation values one layer keeps per token and hidden unit on one TP rank"),
    ("T_tp_layer", rf"T_{{{T}{{TP,layer}}}}", None, "s", "one TP collective of one layer, before congestion"),
    ("M_kv", rf"M_{{{T}{{KV}}}}", None, "B", "keys and values of the whole sequence on one TP rank"),
    ("T_cp_layer", rf"T_{{{T}{{KV,layer}}}}", None, "s", "CP key/value exchange of one layer, before congestion"),
    ("alpha_pp", rf"\alpha_{{{T}{{PP}}}}", None, "s", "message latency between consecutive pipeline stages"),
    ("f_gemm", rf"f_{{{T}{{GEMM}}}}", None, "1", "GEMM-shape efficiency factor of the layers"),
    ("P_update", rf"P_{{{T}{{update}}}}", None, "1", "parameters whose optimizer update one accelerator computes"),
    ("T_cp_exchange", rf"T_{{{T}{{KV,CP}}}}", None, "s", "CP key/value exchange of one step, before congestion"),
    ("T_cp", rf"T_{{{T}{{CP}}}}", None, "s", "CP communication per step (with congestion)"),
    ("beta_pp", rf"\beta_{{{T}{{PP}}}}", None, "B/s", "bandwidth between consecutive pipeline stages"),
    ("T_p2p", rf"T_{{{T}{{P2P}}}}", None, "s", "pipeline stage-to-stage sends of one step"),
    ("T_opt", rf"T_{{{T}{{update}}}}", r"\OptimizerStepTime", "s", "optimizer update of one step"),
    ("T_tp_exposed", rf"T_{{{T}{{TP,exposed}}}}", None, "s", "TP communication left after overlap"),
)
# ---- issue 13 --------------------------------------------------------------------------------- end
for _row in _QUANTITIES:
    declare(_row[0], _row[1], _row[4], _row[3], "quantity", _row[2], _row[5] if len(_row) > 5 else "")

#: Quantity names in model order (every variant's quantities, each once).
QUANTITY_NAMES: Tuple[str, ...] = tuple(r[0] for r in _QUANTITIES)

#: The sort names of the quantities the step adds up, in reading order (node, DP, TP, EP, bubble): sympy
#: orders a sum by its symbols' sort keys, and these sort before every other ``T_...``.
_READING: Dict[str, str] = {"T_node": "T_0", "T_dp_exposed": "T_1", "T_dp": "T_1", "T_tp": "T_2", "T_ep": "T_3",
                            "T_bubble": "T_4"}


# --------------------------------------------------------------------------------------------
# Formal arguments of the cost terms' own definitions (not model parameters)
# --------------------------------------------------------------------------------------------
#: name -> (LaTeX, book macro, unit, meaning, sympy assumptions)
_FORMAL = (
    ("M_coll", "M", r"\CollectivePayloadSize", "B", "bytes each rank contributes to a collective", {}),
    ("N_coll", "N", r"\DeviceCount", "1", "ranks taking part in a collective", {"integer": True}),
    ("beta", r"\beta", r"\LinkBandwidth", "B/s", "bandwidth of one link in each direction (alpha-beta model)", {}),
    ("alpha", r"\alpha", r"\MessageStartupLatency", "s", "startup latency of one message (alpha-beta model)", {}),
    # the notation of the parameter or quantity of the same meaning (SAME_MEANING)
    ("beta_in", rf"\beta_{{{T}{{intra}}}}", None, "B/s", "link bandwidth inside a node, per direction", {}),
    ("alpha_in", rf"\alpha_{{{T}{{intra}}}}", None, "s", "message latency inside a node", {}),
    ("beta_out", rf"\beta_{{{T}{{inter}}}}", None, "B/s", "link bandwidth between nodes, per accelerator", {}),
    ("alpha_out", rf"\alpha_{{{T}{{fab}}}}", None, "s", "message latency between nodes", {}),
    ("T_busy", rf"T_{{{T}{{busy}}}}", None, "s", "busy time of one pipeline stage over the step", {}),
)
#: name -> symbol of the formal arguments.
FORMAL: Dict[str, BookSymbol] = {}


def _declare_formal(rows) -> None:
    """Declare formal arguments given as ``(name, LaTeX, book macro, unit, meaning, sympy assumptions)``."""
    for name, tex, book, unit, meaning, assume in rows:
        declare(name, tex, meaning, unit, "formal", book)
        FORMAL[name] = symbol(name, positive=True, **assume)


_declare_formal(_FORMAL)

# ---- issue 11: formal arguments of the textbook's terms (AllGather ... ExpertCapacity) -------- begin
_FORMAL_BOOK_TERMS = (
    ("n_msg", "n", r"\PointToPointMessageSize", "B", "size of one point-to-point message (alpha-beta model)", {}),
    ("M_param", rf"M_{{{T}{{param}}}}", r"\ParameterPayload", "B",
     "bytes of the full parameter set at the communication precision", {}),
    ("n_heads", rf"N_{{{T}{{heads}}}}", r"\AttentionHeadCount", "1", "attention heads of one layer", {"integer": True}),
    ("C_cap", rf"C_{{{T}{{cap}}}}", r"\ExpertCapacityFactor", "1",
     "capacity factor: multiple of an expert's uniform share of tokens it accepts", {}),
    ("n_tok", rf"B_{{{T}{{tok}}}}", r"\LocalTokenCount", "1", "tokens of one batch entering a mixture-of-experts layer",
     {"integer": True}),
    ("N_experts", rf"N_{{{T}{{experts}}}}", r"\ExpertCount", "1", "experts of one mixture-of-experts layer",
     {"integer": True}),
)
_declare_formal(_FORMAL_BOOK_TERMS)
# issue 13: formal arguments of the extended model's terms
_declare_formal((
    ("x_gemm", "x", None, "1", "width of the shared dimension of a layer's GEMMs", {}),
    ("n_param", rf"n_{{{T}{{param}}}}", None, "1", "parameters an update reads and writes", {}),
))
# ---- issue 11 -------------------------------------------------------------------------------- end


# --------------------------------------------------------------------------------------------
# Cost terms and the indicator
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Term:
    """A named cost term: the LaTeX of its name, the book macro (if any), its formal arguments.

    ``name`` is the class name in :mod:`mlsysim_sym.terms`; ``args`` name the formal
    arguments (:data:`FORMAL`) or model parameters its defining equation is written on.
    """

    name: str
    latex: str
    book: Optional[str]
    args: Tuple[str, ...]
    meaning: str

    @property
    def extension(self) -> Optional[str]:
        return None if self.book else _proposal(self.name).macro

    @property
    def macro(self) -> str:
        return self.book or self.extension

    def tex(self, book: bool = False) -> str:
        return pick(self.latex, self.macro, book)


#: The cost terms, in the order the documents derive them.
TERMS: Tuple[Term, ...] = (
    Term("RingAllReduce", rf"T_{{{T}{{ring}}}}", r"\RingAllReduceCompletionTime",
         ("M_coll", "N_coll", "beta", "alpha"), "ring all-reduce time"),
    Term("HierarchicalAllReduce", rf"T_{{{T}{{hier}}}}", None,
         ("M_coll", "n_nodes", "apn", "beta_in", "alpha_in", "beta_out", "alpha_out"),
         "two-level (hierarchical) all-reduce time"),
    Term("AllToAll", rf"T_{{{T}{{alltoall}}}}", r"\AllToAllCompletionTime",
         ("M_coll", "N_coll", "beta", "alpha"), "all-to-all time"),
    Term("BubbleFraction", rf"b_{{{T}{{pipe}}}}", r"\PipelineBubbleFraction", ("pp", "v", "m"),
         "idle share of a pipelined step"),
    Term("BubbleTime", rf"T_{{{T}{{bubble}}}}", None, ("T_busy", "pp", "v", "m"),
         "pipeline fill-and-drain time added to a busy time"),
)
# ---- issue 11: terms the textbook uses beside the model's (not in the step-time model) ------- begin
_COLL = ("M_coll", "N_coll", "beta", "alpha")
_KORTHIKANTI = ("s", "mb", "H", "n_heads", "tp", "bpp")
TERMS += (
    Term("AllGather", rf"T_{{{T}{{allgather}}}}", r"\AllGatherCompletionTime", _COLL, "ring AllGather time"),
    Term("ReduceScatter", rf"T_{{{T}{{reducescatter}}}}", r"\ReduceScatterCompletionTime", _COLL,
         "ring ReduceScatter time"),
    Term("TreeAllReduce", rf"T_{{{T}{{tree}}}}", r"\TreeAllReduceCompletionTime", _COLL,
         "binary-tree AllReduce time (reduce up, broadcast down)"),
    Term("DoubleTreeAllReduce", rf"T_{{{T}{{double-tree}}}}", r"\DoubleTreeAllReduceTime", _COLL,
         "double binary tree AllReduce time"),
    Term("PointToPoint", "T", r"\PointToPointTransferTime", ("n_msg", "beta", "alpha"),
         "point-to-point transfer time (alpha-beta model)"),
    Term("PipelineSendTime", rf"T_{{{T}{{send}}}}", None, ("mb", "s", "H", "bpp", "beta", "alpha"),
         "send of one microbatch's activation across one pipeline stage boundary"),
    Term("CommComputeRatio", r"\rho", r"\CommunicationComputeRatio", ("T_comm", "T_compute"),
         "communication-to-computation ratio of a step"),
    Term("ExpertCapacity", rf"C_{{{T}{{expert}}}}", None, ("C_cap", "n_tok", "N_experts"),
         "token slots of one expert (Switch Transformer capacity)"),
    Term("ActivationsNoRecompute", rf"M_{{{T}{{act,TP}}}}", None, _KORTHIKANTI,
         "activation bytes of one layer without recomputation, tensor parallel"),
    Term("ActivationsSeqParallel", rf"M_{{{T}{{act,SP}}}}", None, _KORTHIKANTI,
         "activation bytes of one layer without recomputation, tensor and sequence parallel"),
    Term("DataParallelCommVolume", rf"V_{{{T}{{DP}}}}", None, ("M_param", "N_coll"),
         "bytes one rank sends per step for the data-parallel gradient all-reduce"),
    Term("Zero3CommVolume", rf"V_{{{T}{{ZeRO-3}}}}", None, ("M_param", "N_coll"),
         "bytes one rank sends per step under ZeRO-3 / FSDP"),
    Term("Zero3CommTime", rf"T_{{{T}{{ZeRO-3}}}}", None, ("M_param", "N_coll", "beta", "alpha"),
         "ZeRO-3 / FSDP communication time per step (two AllGathers and a ReduceScatter)"),
)
# ---- issue 11 -------------------------------------------------------------------------------- end
# ---- issue 13: the extended model's own terms ----------------------------------------------- begin
TERMS += (
    Term("GemmShapeEfficiency", rf"f_{{{T}{{shape}}}}", None, ("x_gemm", "d_half"),
         "share of the large-GEMM efficiency reached at width x (saturating: x / (x + x_1/2))"),
    Term("OptimizerUpdateTime", rf"T_{{{T}{{opt}}}}", None, ("n_param", "b_upd", "BW_hbm"),
         "memory-bound optimizer update of n parameters"),
)
# ---- issue 13 --------------------------------------------------------------------------------- end
_TERM_BY_NAME: Dict[str, Term] = {t.name: t for t in TERMS}

#: The book's indicator (the Iverson bracket): its macro and its LaTeX, written ``\EventIndicator\{c\}``.
INDICATOR: Tuple[str, str] = (r"\EventIndicator", r"\mathbf{1}")


def term(name: str) -> Term:
    """The notation of the cost term whose class is called ``name``."""
    try:
        return _TERM_BY_NAME[name]
    except KeyError:
        raise KeyError(f"no notation for the cost term {name!r}; add it to mlsysim_sym.notation.TERMS") from None


def indicator(book: bool = False) -> str:
    return pick(INDICATOR[1], INDICATOR[0], book)


# --------------------------------------------------------------------------------------------
# Lookups
# --------------------------------------------------------------------------------------------
def table() -> Dict[str, Notation]:
    """Every parameter, model quantity and formal argument, by name (parameters need
    :mod:`mlsysim_sym.symbols` imported, which any use of the package does)."""
    return dict(_TABLE)


def entry(name: str) -> Notation:
    """The notation of one parameter, quantity or formal argument."""
    try:
        return _TABLE[name]
    except KeyError:
        raise KeyError(f"no notation for {name!r}; see mlsysim_sym.notation.table()") from None


def entries(kind: str) -> Tuple[Notation, ...]:
    """The entries of one kind (``"parameter"``, ``"quantity"``, ``"formal"``), in declaration order."""
    return tuple(e for e in _TABLE.values() if e.kind == kind)


def book_macros() -> Dict[str, str]:
    r"""Every macro our book-mode output can contain (the registry's and the proposed ones) -> its LaTeX,
    sorted by macro (for ``\newcommand``)."""
    pairs = {e.macro: e.latex for e in _TABLE.values()}
    pairs.update({t.macro: t.latex for t in TERMS})
    pairs[INDICATOR[0]] = INDICATOR[1]
    return dict(sorted(pairs.items()))


def newcommands() -> str:
    r"""``\newcommand`` lines defining every macro of :func:`book_macros`."""
    return "\n".join(rf"\newcommand{{{m}}}{{{latex}}}" for m, latex in book_macros().items())


def lacking() -> Tuple[Notation, ...]:
    """The entries for which the book has no macro: the notation we chose (and the macro we propose)."""
    return tuple(e for e in _TABLE.values() if not e.book)


# --------------------------------------------------------------------------------------------
# The registry's rules: the extension in its format, glyph clashes, book-mode equations
# --------------------------------------------------------------------------------------------
#: our unit -> the unit as the registry's vocabulary writes it
_REGISTRY_UNITS = {"1": "dimensionless", "B": "bytes", "s": "s", "flop": "FLOP", "flop/s": "FLOP/s",
                   "B/s": "bytes/s", "1/s": "samples/s", "flop/B": "FLOP/byte", "J": "J", "W": "W"}


def _registry_entry(name: str, latex: str, unit: str, meaning: str, note: str) -> Dict[str, str]:
    p = _proposal(name)
    entry = {"macro": p.macro, "latex": latex, "definition": p.definition, "kind": p.kind}
    if p.kind == "scalar":
        entry["unit"] = _REGISTRY_UNITS[unit]
    notes = f"mlsysim-sym: {meaning}." + (f" {note}." if note else "") + (f" {p.notes}" if p.notes else "")
    entry["notes"] = notes
    return entry


def registry_extension() -> Dict[str, List[Dict[str, str]]]:
    """The entries we propose to the book's notation registry, by registry file (``distributed``,
    ``performance``, ``learning``), each a dict with the registry's fields, sorted by macro.

    One entry per macro: a cost term and the quantity it computes share one (``\\PipelineBubbleTime``).
    """
    seen: Dict[str, Dict[str, str]] = {}
    files: Dict[str, List[Dict[str, str]]] = {}
    rows = [(e.name, e.latex, e.unit, e.meaning, e.note) for e in lacking()]
    rows += [(t.name, t.latex, _proposal(t.name).unit, t.meaning, "") for t in TERMS if not t.book]
    for name, latex, unit, meaning, note in rows:
        entry = _registry_entry(name, latex, unit, meaning, note)
        if entry["macro"] in seen:
            if seen[entry["macro"]]["latex"] != latex:
                raise RuntimeError(f"{entry['macro']} proposed with two LaTeX forms")
            continue
        seen[entry["macro"]] = entry
        files.setdefault(_proposal(name).domain, []).append(entry)
    return {domain: sorted(entries, key=lambda e: e["macro"]) for domain, entries in sorted(files.items())}


def _yaml_scalar(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def registry_extension_yaml(domain: str) -> str:
    """The entries for one registry file, as YAML in the registry's own layout: the ``symbols:``
    list to append to ``mlsysim/notation/data/<domain>.yaml``."""
    lines = [f"# Notation registry entries proposed by mlsysim-sym for {domain}.yaml.",
             "# Append the list below to the `symbols:` list of that file (generated by `python -m derivations`).",
             "symbols:"]
    for entry in registry_extension()[domain]:
        first = True
        for key in ("macro", "latex", "definition", "kind", "unit", "notes"):
            if key in entry:
                lines.append(f"{'- ' if first else '  '}{key}: {_yaml_scalar(entry[key])}")
                first = False
    return "\n".join(lines) + "\n"


_BASE = re.compile(r"^(\\[A-Za-z]+|\\text\{[A-Za-z]+\}|[A-Za-z])(?:_\{(.*)\})?$")


def glyph(latex: str) -> Tuple[str, str]:
    r"""``(base, subscript)`` of a symbol's LaTeX: ``N_{\text{DP}}`` -> ``("N", "\text{DP}")``,
    ``\tilde{T}_{\text{step}}`` -> ``("T", "\text{step}")``; the subscript is ``""`` when bare."""
    stripped = re.sub(r"^\\(?:tilde|hat|bar)\{(.*?)\}", r"\1", latex)
    m = _BASE.match(stripped)
    return (m.group(1), m.group(2) or "") if m else (stripped, "")


#: Letters whose subscripted forms name one family of things (so ``\text{BW}`` and ``\text{BW}_{\text{PCIe}}``
#: may share a letter).
GLYPH_FAMILIES: Dict[str, str] = {
    "W": "weight bytes",
    "T": "times in seconds",
    "M": "memory and message sizes in bytes",
    "N": "counts of devices, ranks, nodes and layers",
    "m": "microbatch counts",
    r"\text{BW}": "bandwidths",
    r"\text{MFU}": "model FLOPs utilizations",
}
#: Bare glyphs of the registry that the registry itself also uses, subscripted, for other meanings; we print
#: them as the registry writes them (notes for the authors).
REGISTRY_CLASHES: Dict[str, str] = {
    r"\AccumulationStepCount": "k is the gradient-accumulation step count, k_experts the routed expert count (top-k)",
    r"\Parameters": r"P is the parameter count; the registry's P_model is a count too, while its note on "
                    r"\Parameters says power carries a subscript (P_thermal)",
    r"\OversubscriptionRatio": r"R is the oversubscription ratio, while R_peak and R_train are rates and "
                               r"\RealizedDeviceComputeRate is drawn R as well",
    r"\AdapterRank": r"r is the LoRA adapter rank; \CommunicationSlowdownFactor is drawn r as well",
    r"\ContextParallelDegree": r"c is the context-parallel degree, while the registry's c_decode, c_start and c_end "
                                r"are other counts (and the congestion factor here is c_cong)",
}


def glyph_clashes(entries: Optional[List[Notation]] = None) -> List[str]:
    """Pairs of parameters and model quantities whose glyphs a reader could confuse.

    Two rules beyond unique LaTeX: (1) two glyphs with the same subscript whose letters differ only by
    case (``n_DP`` and ``N_DP``); (2) a bare glyph and a subscripted glyph of the same letter with
    different meanings (``d`` the hidden size and ``d_flight``), unless the letter's subscripts name one
    family (:data:`GLYPH_FAMILIES`) or the pair is the registry's own (:data:`REGISTRY_CLASHES`).
    Formal arguments are left out: they appear only in the definitions of the cost terms.
    """
    pool = [e for e in (entries or list(_TABLE.values())) if e.kind != "formal"]
    out = []
    for i, a in enumerate(pool):
        for b in pool[i + 1:]:
            (ba, sa), (bb, sb) = glyph(a.latex), glyph(b.latex)
            if a.macro in REGISTRY_CLASHES or b.macro in REGISTRY_CLASHES:
                if not (sa and sb):
                    continue
            if ba != bb and ba.lower() == bb.lower() and sa == sb:
                out.append(f"{a.name} ({a.latex}) and {b.name} ({b.latex}) differ only by letter case")
            elif ba == bb and (sa == "") != (sb == "") and ba not in GLYPH_FAMILIES:
                out.append(f"{a.name} ({a.latex}) and {b.name} ({b.latex}) share the letter {ba}")
    return out


#: LaTeX commands that are not symbols (the registry's exempt list: constants, operators, spacing, layout).
_NOT_SYMBOLS = frozenset("""
frac dfrac tfrac left right cdot times div pm mp lfloor rfloor lceil rceil max min log ln exp sqrt sum prod
quad qquad geq leq neq ge le ne gt lt wedge vee land lor neg lnot infty approx equiv to mapsto in notin
begin end ldots cdots dots vdots lbrace rbrace langle rangle lvert rvert mid colon limits displaystyle
textstyle big Big bigg Bigg bigl bigr Bigl Bigr biggl biggr thinspace pi ell
""".split())


def book_problems(tex: str, macros) -> List[str]:
    r"""What the registry's strict notation rules reject in a book-mode equation.

    ``macros`` is the set of macros the book defines (the registry's and :data:`EXTENSION`'s).
    A problem is: a macro neither defined nor a LaTeX operator; a letter outside ``\text{}``
    (the registry allows index letters only in subscripts, and our equations have none); a
    registered macro decorated with a text label (``\Bandwidth_{\text{bisect}}`` is a new symbol).

    >>> book_problems(r"\DataParallelDegree^{2} + \frac{1}{\text{fits}}", {r"\DataParallelDegree"})
    []
    >>> book_problems(r"x + \Foo_{\text{new}}", {r"\Foo"})
    ['\\Foo decorated with a text label', 'letter x outside \\text{}']
    """
    problems = []
    body = re.sub(r"\\(?:begin|end)\{[A-Za-z*]+\}", " ", tex)
    for m in re.finditer(r"(\\[A-Za-z]+)_\{\\(?:text|mathrm)\{", body):
        if m.group(1) in macros:
            problems.append(f"{m.group(1)} decorated with a text label")
    body = re.sub(r"\\(?:text|mathrm|operatorname)\{[^{}]*\}", " ", body)
    for m in re.finditer(r"\\([A-Za-z]+)", body):
        name = "\\" + m.group(1)
        if name not in macros and m.group(1) not in _NOT_SYMBOLS:
            problems.append(f"{name} is neither a registered macro nor a LaTeX operator")
    letters = re.sub(r"\\[A-Za-z]+", " ", body)
    for ch in sorted(set(re.findall(r"[A-Za-z]", letters)), key=letters.index):
        problems.append(f"letter {ch} outside \\text{{}}")
    return problems
