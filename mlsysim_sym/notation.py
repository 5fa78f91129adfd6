r"""The textbook's notation for every parameter, model quantity and cost term.

*Machine Learning Systems* never types a symbol: it writes a macro
(``\DataParallelDegree``) whose LaTeX (``N_{\text{DP}}``) comes from the notation
registry that mlsysim ships (``mlsysim.Symbols``, YAML under
``mlsysim/notation/data/``). This module maps each of our names to the book's
macro where the book has a symbol **with the same meaning**, and lists the
notation we chose where it has none (:func:`lacking`).

* Parameters: :mod:`mlsysim_sym.symbols` holds their LaTeX and macro; this table
  reads them from there.
* Model quantities (:func:`mlsysim_sym.model.build_model`): :data:`BOOK_QUANTITIES`
  gives the macro and its LaTeX (copied from the registry, checked against it by
  ``tests/test_printing.py`` when mlsysim is installed); :data:`OUR_QUANTITY_LATEX`
  replaces a quantity's LaTeX where the book uses that glyph for another meaning.
* Cost terms (``RingAllReduce`` ...): :data:`TERMS` gives the LaTeX of the function
  name and, for the equation that defines it, formal arguments in the book's notation.

The LaTeX of every entry is unique, so an equation never shows one glyph for two
meanings.

Examples
--------
>>> from mlsysim_sym.notation import entry, book_macros
>>> entry("dp").book, entry("dp").latex
('\\DataParallelDegree', 'N_{\\text{DP}}')
>>> book_macros()[r"\PipelineBubbleFraction"]
'b_{\\text{pipe}}'
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, Optional, Tuple

import sympy as sp

from .symbols import PARAMS, sym
from .terms.collectives import AllToAll, HierarchicalAllReduce, RingAllReduce
from .terms.pipeline import BubbleFraction, BubbleTime

T = r"\text"


@dataclass(frozen=True)
class Notation:
    """How one symbol prints: our ``name``, the LaTeX readers see, and the book macro (if any).

    ``kind`` is ``"parameter"``, ``"quantity"`` or ``"formal"`` (an argument in the
    definition of a cost term). ``note`` says why we chose the glyph when the book
    has no symbol for the meaning, or has one we could not use.
    """

    name: str
    symbol: sp.Symbol
    latex: str
    book: Optional[str]
    meaning: str
    unit: str
    kind: str
    note: str = ""

    def tex(self, book: bool = False) -> str:
        """The macro in book mode (when the book has one), else the LaTeX."""
        return self.book if (book and self.book) else self.latex


#: Model quantity -> (book macro, its LaTeX in mlsysim's notation registry).
BOOK_QUANTITIES: Dict[str, Tuple[str, str]] = {
    "N": (r"\AcceleratorCount", rf"N_{{{T}{{GPU}}}}"),
    "dp": (r"\DataParallelDegree", rf"N_{{{T}{{DP}}}}"),
    "lb": (r"\LocalBatchSize", rf"B_{{{T}{{local}}}}"),
    "O_model": (r"\ModelStepOperations", rf"O_{{{T}{{model}}}}"),
    "T_compute": (r"\IronLawComputeTime", rf"T_{{{T}{{compute}}}}"),
    "mb": (r"\MicrobatchSize", rf"B_{{{T}{{micro}}}}"),
    "M_weights": (r"\WeightMemory", rf"M_{{{T}{{weights}}}}"),
    "M_grads": (r"\GradientMemory", rf"M_{{{T}{{gradients}}}}"),
    "M_optimizer": (r"\OptimizerStateMemory", rf"M_{{{T}{{optimizer}}}}"),
    "M_activations": (r"\ActivationMemory", rf"M_{{{T}{{activations}}}}"),
    "M_acc": (r"\TotalMemoryFootprint", rf"M_{{{T}{{total}}}}"),
    "BW_eff": (r"\Bandwidth", rf"{T}{{BW}}"),
    "traffic": (r"\DataVolume", rf"D_{{{T}{{vol}}}}"),
    "T_memory": (r"\IronLawMemoryTime", rf"T_{{{T}{{memory}}}}"),
    "T_overhead": (r"\Latency", rf"L_{{{T}{{lat}}}}"),
    "intensity": (r"\ArithmeticIntensity", "I"),
    "M_grad_msg": (r"\GradientPayload", rf"M_{{{T}{{grad}}}}"),
    "M_act_msg": (r"\ActivationPayloadSize", rf"M_{{{T}{{act}}}}"),
    "bubble_fraction": (r"\PipelineBubbleFraction", rf"b_{{{T}{{pipe}}}}"),
    "T_comm": (r"\CommunicationTime", rf"T_{{{T}{{comm}}}}"),
    "T_step": (r"\DistributedStepTime", rf"T_{{{T}{{step}}}}"),
    "scaling_efficiency": (r"\ScalingEfficiency", rf"\eta_{{{T}{{scaling}}}}"),
    "mfu": (r"\ModelFlopsUtilization", rf"{T}{{MFU}}"),
    "effective_throughput": (r"\TrainingSampleThroughput", rf"R_{{{T}{{train}}}}"),
}

#: The book's indicator (the Iverson bracket), written ``\EventIndicator\{c\}``.
INDICATOR: Tuple[str, str] = (r"\EventIndicator", r"\mathbf{1}")

#: Model quantity -> (our LaTeX, why) where the model's own LaTeX is a book glyph of another meaning.
OUR_QUANTITY_LATEX: Dict[str, Tuple[str, str]] = {
    "R_eff": (rf"R_{{{T}{{dev}}}}",
              r"The book's \RealizedDeviceComputeRate is drawn R, the glyph of \OversubscriptionRatio, "
              r"and R_eff is its \EffectiveFleetThroughput"),
    "T_sync": (rf"\tilde{{T}}_{{{T}{{step}}}}",
               r"T_sync is the book's \SynchronizationTime (time lost to barriers), not a step time"),
    "energy": (rf"E_{{{T}{{rep}}}}",
               r"E_step is the book's \TrainingStepEnergy, the energy of the whole fleet"),
}

#: Why a quantity with a near book symbol does not use it.
NOT_THE_BOOKS: Dict[str, str] = {
    "T_dp_exposed": r"The book's \ExposedCommunicationTime counts all communication; this is the DP share only",
    "bubble_fraction": r"With V > 1 this is also the book's \InterleavedPipelineBubbleFraction",
    "T_ep_alltoall": r"The book's \TokenDispatchTime is one dispatch; this is a step's all-to-all on the fabric",
}

#: Parameters whose meaning the book has under another glyph (a change for symbols.py, not made here).
BOOK_CANDIDATES: Dict[str, str] = {
    "c": r"\CommunicationSlowdownFactor",
}


def _formal(name, latex, meaning, unit, book=None, **assumptions):
    s = sp.Symbol(name, **(assumptions or {"positive": True}))
    return Notation(name, s, latex, book, meaning, unit, "formal")


#: Formal arguments of the cost terms' own definitions (not model parameters).
FORMAL: Dict[str, Notation] = {f.name: f for f in (
    _formal("M_coll", "M", "bytes each rank contributes to a collective", "B", r"\CollectivePayloadSize"),
    _formal("N_coll", "N", "ranks taking part in a collective", "1", r"\DeviceCount", integer=True, positive=True),
    _formal("beta", r"\beta", "bandwidth of one link in each direction (alpha-beta model)", "B/s", r"\LinkBandwidth"),
    _formal("alpha", r"\alpha", "startup latency of one message (alpha-beta model)", "s", r"\MessageStartupLatency"),
    _formal("beta_in", rf"\beta_{{{T}{{in}}}}", "link bandwidth inside a node", "B/s"),
    _formal("alpha_in", rf"\alpha_{{{T}{{in}}}}", "message latency inside a node", "s"),
    _formal("beta_out", rf"\beta_{{{T}{{out}}}}", "link bandwidth between nodes", "B/s"),
    _formal("alpha_out", rf"\alpha_{{{T}{{out}}}}", "message latency between nodes", "s"),
    _formal("T_busy", rf"T_{{{T}{{busy}}}}", "busy time of one pipeline stage over the step", "s"),
)}


@dataclass(frozen=True)
class Term:
    """A named cost term: the LaTeX of its name, the book macro (if any) and its formal arguments."""

    cls: type
    latex: str
    book: Optional[str]
    args: Tuple[sp.Symbol, ...]
    meaning: str

    def call(self) -> sp.Basic:
        """The term applied to its formal arguments, e.g. ``RingAllReduce(M, N, beta, alpha)``."""
        return self.cls(*self.args)


def _f(name):
    return FORMAL[name].symbol


#: The cost terms, in the order the documents derive them.
TERMS: Tuple[Term, ...] = (
    Term(RingAllReduce, rf"T_{{{T}{{ring}}}}", r"\RingAllReduceCompletionTime",
         (_f("M_coll"), _f("N_coll"), _f("beta"), _f("alpha")), "ring all-reduce time"),
    Term(HierarchicalAllReduce, rf"T_{{{T}{{hier}}}}", None,
         (_f("M_coll"), sym.n_nodes, sym.apn, _f("beta_in"), _f("alpha_in"), _f("beta_out"), _f("alpha_out")),
         "two-level (hierarchical) all-reduce time"),
    Term(AllToAll, rf"T_{{{T}{{alltoall}}}}", r"\AllToAllCompletionTime",
         (_f("M_coll"), _f("N_coll"), _f("beta"), _f("alpha")), "all-to-all time"),
    Term(BubbleFraction, rf"b_{{{T}{{pipe}}}}", r"\PipelineBubbleFraction", (sym.pp, sym.v, sym.m),
         "idle share of a pipelined step"),
    Term(BubbleTime, rf"T_{{{T}{{bubble}}}}", None, (_f("T_busy"), sym.pp, sym.v, sym.m),
         "pipeline fill-and-drain time added to a busy time"),
)
TERM_OF: Dict[type, Term] = {t.cls: t for t in TERMS}


def _variants():
    from .model import Variant

    return (Variant(), Variant("generic", True, True, True))


@lru_cache(maxsize=None)
def quantity_entries() -> Tuple[Notation, ...]:
    """One entry per model quantity (every variant's), in model order."""
    from .model import build_model

    out: Dict[str, Notation] = {}
    for variant in _variants():
        m = build_model(variant)
        for name in m:
            if name in out:
                continue
            q = m.quantity(name)
            book, latex, note = None, q.latex, NOT_THE_BOOKS.get(name, "")
            if name in BOOK_QUANTITIES:
                book, latex = BOOK_QUANTITIES[name]
            elif name in OUR_QUANTITY_LATEX:
                latex, note = OUR_QUANTITY_LATEX[name]
            out[name] = Notation(name, q.symbol, latex, book, q.meaning, q.unit, "quantity", note)
    return tuple(out.values())


@lru_cache(maxsize=None)
def parameter_entries() -> Tuple[Notation, ...]:
    """One entry per parameter, from :data:`mlsysim_sym.symbols.PARAMS`."""
    return tuple(Notation(p.name, p.symbol, p.latex, p.book, p.meaning, p.unit, "parameter",
                          f"The book's {BOOK_CANDIDATES[p.name]} has this meaning" if p.name in BOOK_CANDIDATES
                          else "") for p in PARAMS.values())


@lru_cache(maxsize=None)
def table() -> Dict[str, Notation]:
    """Every parameter, model quantity and formal argument, by name."""
    out: Dict[str, Notation] = {}
    for e in parameter_entries() + quantity_entries() + tuple(FORMAL.values()):
        if e.name in out:
            raise RuntimeError(f"notation entry {e.name!r} declared twice")
        out[e.name] = e
    return out


def entry(name: str) -> Notation:
    """The notation of one parameter, quantity or formal argument."""
    try:
        return table()[name]
    except KeyError:
        raise KeyError(f"no notation for {name!r}; see mlsysim_sym.notation.table()") from None


@lru_cache(maxsize=None)
def symbol_names(book: bool = False) -> Dict[sp.Symbol, str]:
    """``Symbol -> LaTeX`` (or book macro, with ``book=True``) for ``latex(..., symbol_names=...)``."""
    return {e.symbol: e.tex(book) for e in table().values()}


@lru_cache(maxsize=None)
def quantity_order() -> Dict[sp.Symbol, int]:
    """Position of each quantity symbol in model order (for printing sums in reading order)."""
    return {e.symbol: i for i, e in enumerate(quantity_entries())}


@lru_cache(maxsize=None)
def book_macros() -> Dict[str, str]:
    r"""Every book macro our output can contain -> its LaTeX, sorted by macro (for ``\newcommand``)."""
    pairs = {e.book: e.latex for e in table().values() if e.book}
    pairs.update({t.book: t.latex for t in TERMS if t.book})
    pairs[INDICATOR[0]] = INDICATOR[1]
    return dict(sorted(pairs.items()))


def newcommands() -> str:
    r"""``\newcommand`` lines defining every macro of :func:`book_macros`."""
    return "\n".join(rf"\newcommand{{{m}}}{{{latex}}}" for m, latex in book_macros().items())


def lacking() -> Tuple[Notation, ...]:
    """The entries for which the book has no macro: the notation we chose."""
    return tuple(e for e in table().values() if not e.book)
