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
meanings. This module sits at the bottom of the package (it imports only sympy).

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
from typing import Dict, Optional, Tuple

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

    def tex(self, book: bool = False) -> str:
        """The macro in book mode (when the book has one), else the LaTeX."""
        return pick(self.latex, self.book, book)


_TABLE: Dict[str, Notation] = {}

_GREEK = {"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "eta": "η", "iota": "ι",
          "ell": "ℓ", "lambda": "λ", "mu": "μ", "rho": "ρ", "sigma": "σ", "tau": "τ", "phi": "φ"}


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
    """Add one entry to the table (each name once)."""
    if name in _TABLE:
        raise RuntimeError(f"notation entry {name!r} declared twice")
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
    ("G", rf"G_{{{T}{{rep}}}}", None, "1", "accelerators of one model replica (TP x PP x EP)"),
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
    ("ifd", rf"d_{{{T}{{flight}}}}", None, "1", "in-flight divisor of the 1F1B schedule"),
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
    ("mfu_node", rf"{T}{{MFU}}_{{{T}{{node}}}}", None, "1", "model FLOPs utilization of one replica"),
    ("hfu_node", rf"{T}{{HFU}}_{{{T}{{node}}}}", None, "1", "hardware FLOPs utilization of one replica"),
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
    ("nodes_dp", rf"n_{{{T}{{DP}}}}", None, "1", "nodes one DP group spans"),
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
    ("scaling_efficiency", rf"\eta_{{{T}{{scaling}}}}", r"\ScalingEfficiency", "1", "replica time over step time"),
    ("mfu", rf"{T}{{MFU}}", r"\ModelFlopsUtilization", "1", "fleet model FLOPs utilization"),
    ("effective_throughput", rf"R_{{{T}{{train}}}}", r"\TrainingSampleThroughput", "1/s",
     "samples per second of the fleet"),
)
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
    ("beta_in", rf"\beta_{{{T}{{in}}}}", None, "B/s", "link bandwidth inside a node", {}),
    ("alpha_in", rf"\alpha_{{{T}{{in}}}}", None, "s", "message latency inside a node", {}),
    ("beta_out", rf"\beta_{{{T}{{out}}}}", None, "B/s", "link bandwidth between nodes", {}),
    ("alpha_out", rf"\alpha_{{{T}{{out}}}}", None, "s", "message latency between nodes", {}),
    ("T_busy", rf"T_{{{T}{{busy}}}}", None, "s", "busy time of one pipeline stage over the step", {}),
)
#: name -> symbol of the formal arguments.
FORMAL: Dict[str, BookSymbol] = {}
for _name, _tex, _book, _unit, _meaning, _assume in _FORMAL:
    declare(_name, _tex, _meaning, _unit, "formal", _book)
    FORMAL[_name] = symbol(_name, positive=True, **_assume)

# ---- issue 11: formal arguments of the textbook's terms (AllGather ... ExpertCapacity) -------- begin
_FORMAL_BOOK_TERMS = (
    ("n_msg", "n", r"\PointToPointMessageSize", "B", "size of one point-to-point message (alpha-beta model)", {}),
    ("M_param", rf"M_{{{T}{{param}}}}", r"\ParameterPayload", "B",
     "bytes of the full parameter set at the communication precision", {}),
    ("n_heads", rf"N_{{{T}{{heads}}}}", r"\AttentionHeadCount", "1", "attention heads of one layer", {"integer": True}),
    ("C_cap", rf"C_{{{T}{{cap}}}}", r"\ExpertCapacityFactor", "1",
     "capacity factor: multiple of an expert's uniform share of tokens it accepts", {}),
    ("n_tok", rf"n_{{{T}{{tok}}}}", None, "1", "tokens of one batch entering a mixture-of-experts layer",
     {"integer": True}),
    ("N_experts", rf"N_{{{T}{{experts}}}}", r"\ExpertCount", "1", "experts of one mixture-of-experts layer",
     {"integer": True}),
)
for _name, _tex, _book, _unit, _meaning, _assume in _FORMAL_BOOK_TERMS:
    declare(_name, _tex, _meaning, _unit, "formal", _book)
    FORMAL[_name] = symbol(_name, positive=True, **_assume)
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

    def tex(self, book: bool = False) -> str:
        return pick(self.latex, self.book, book)


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


#: Parameters whose meaning the book has under another glyph (a change for symbols.py, not made here).
BOOK_CANDIDATES: Dict[str, str] = {
    "c": r"\CommunicationSlowdownFactor",
}


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
    r"""Every book macro our output can contain -> its LaTeX, sorted by macro (for ``\newcommand``)."""
    pairs = {e.book: e.latex for e in _TABLE.values() if e.book}
    pairs.update({t.book: t.latex for t in TERMS if t.book})
    pairs[INDICATOR[0]] = INDICATOR[1]
    return dict(sorted(pairs.items()))


def newcommands() -> str:
    r"""``\newcommand`` lines defining every macro of :func:`book_macros`."""
    return "\n".join(rf"\newcommand{{{m}}}{{{latex}}}" for m, latex in book_macros().items())


def lacking() -> Tuple[Notation, ...]:
    """The entries for which the book has no macro: the notation we chose."""
    return tuple(e for e in _TABLE.values() if not e.book)
