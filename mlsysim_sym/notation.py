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
meanings (``derivations/registry.py:glyph_clashes`` checks the subtler confusions: ``n_DP`` beside ``N_DP``).

Book mode prints a macro for every symbol: the registry's where it has the meaning,
else the macro we propose (:data:`mlsysim_sym.proposals.EXTENSION`). ``derivations/registry.py`` writes the
proposals in the registry's own format (``docs/registry/*.yaml``, to append to the files
of ``mlsysim/notation/data/``), and its ``book_problems`` applies the registry's rules for
what a book-mode equation may contain. This module sits at the bottom of the package (it
imports only sympy and the proposals' table).

Examples
--------
>>> from mlsysim_sym import notation
>>> import mlsysim_sym.symbols
>>> notation.entry("dp").book, notation.entry("dp").latex
('\\DataParallelDegree', 'N_{\\text{DP}}')
>>> notation.book_macros()[r"\InterleavedPipelineBubbleFraction"]
'b_{\\text{interleaved}}'
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, Optional, Sequence, Tuple

import sympy as sp
from sympy.printing.str import StrPrinter

from .proposals import SAME_MEANING, proposal  # noqa: F401  (SAME_MEANING: read through this module too)

T = r"\text"


#: How the model's objects show as LaTeX in a notebook (``"quantity"``, ``"model"``): :mod:`mlsysim_sym.printing`
#: registers its functions here when it is imported (the package imports it), so that the model, below the
#: printer, needs no import of it.
DISPLAY: Dict[str, Callable] = {}


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
        (:data:`mlsysim_sym.proposals.EXTENSION`; ``derivations/registry.py`` writes them in the registry's
        format)."""
        return None if self.book else proposal(self.name).macro

    @property
    def macro(self) -> str:
        """The macro book mode prints: the registry's, else the proposed one."""
        return self.book or self.extension

    def tex(self, book: bool = False) -> str:
        """The macro in book mode (the registry's or the proposed one), else the LaTeX."""
        return pick(self.latex, self.macro, book)



_TABLE: Dict[str, Notation] = {}

_GREEK = {"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "eta": "η", "iota": "ι",
          "ell": "ℓ", "chi": "χ", "lambda": "λ", "mu": "μ", "rho": "ρ", "sigma": "σ", "tau": "τ", "phi": "φ"}


_ACCENT = {"tilde": "\u0303", "bar": "\u0304", "hat": "\u0302"}
#: The other commands our symbols use, as a terminal shows them (T^*_ckpt, ‖∇L‖^2).
_SIGNS = {"ast": "*", "lVert": "‖", "rVert": "‖", "nabla": "∇"}


def plain(latex: str) -> str:
    r"""A symbol's LaTeX as plain text for a terminal: ``\beta_{\text{fab}}`` -> ``β_fab``,
    ``N_{\text{TP}}`` -> ``N_TP``, ``\text{BW}_{\text{PCIe}}`` -> ``BW_PCIe``.

    >>> plain(r"\eta_{\text{hw}}"), plain(r"N_{L,\text{TP}}"), plain(r"\text{MFU}")
    ('η_hw', 'N_L,TP', 'MFU')
    >>> plain(r"T^{\ast}_{\text{ckpt}}"), plain(r"\lVert \nabla \mathcal{L} \rVert^{2}")
    ('T^*_ckpt', '‖∇L‖^2')
    """
    out = re.sub(r"\\(?:text|mathrm|operatorname|mathcal)\{([^{}]*)\}", r"\1", latex)
    # an accent over one letter: the letter and the combining accent (T̃, S̄)
    out = re.sub(r"\\(tilde|bar|hat)\{([^{}])\}", lambda m: m.group(2) + _ACCENT[m.group(1)], out)
    out = re.sub(r"\\([A-Za-z]+)", lambda m: _GREEK.get(m.group(1), _SIGNS.get(m.group(1), m.group(1))), out)
    return out.replace("{", "").replace("}", "").replace(" ", "")


_RELATION = {"==": "=", "!=": "≠", ">=": "≥", "<=": "≤", ">": ">", "<": "<"}


class _PlainPrinter(StrPrinter):
    """sympy's text printer in the book's symbols, with conditions written as a student writes them."""

    def _print_Symbol(self, s):
        e = _TABLE.get(s.name)
        return s.name if e is None else plain(e.latex)

    def _print_Relational(self, r):
        return f"{self._print(r.lhs)} {_RELATION[r.rel_op]} {self._print(r.rhs)}"

    def _print_And(self, e):
        return " and ".join(f"({self._print(a)})" if isinstance(a, sp.Or) else self._print(a) for a in e.args)

    def _print_Or(self, e):
        return " or ".join(f"({self._print(a)})" if isinstance(a, sp.And) else self._print(a) for a in e.args)

    def _print_Not(self, e):
        return f"not ({self._print(e.args[0])})"

    def _print_FloorDiv(self, e):       # mlsysim_sym.terms.base.FloorDiv: ⌊a/b⌋
        return f"⌊{self.parenthesize(e.args[0], 50)}/{self.parenthesize(e.args[1], 50)}⌋"

    def _print_CeilDiv(self, e):
        return f"⌈{self.parenthesize(e.args[0], 50)}/{self.parenthesize(e.args[1], 50)}⌉"


def plain_expr(expr: sp.Basic) -> str:
    """An expression or a condition for a terminal, in the symbols a student reads (``N_PP``, ``β_intra``), not
    the package's names (``pp``, ``BW_intra``): ``Eq(chi_rc, 0)`` -> ``χ_rc = 0``, ``FloorDiv(B, dp) >= 1``
    -> ``⌊B_global/N_DP⌋ ≥ 1`` (tests/test_notation.py has examples)."""
    return _PlainPrinter().doprint(expr)


def tie(a: sp.Basic, b: sp.Basic) -> str:
    """Where two branches of the model meet, for a person: ``G_node = N_TP``, ``f_strag = 1``."""
    return f"{plain_expr(a)} = {plain_expr(b)}"


def declare(name: str, latex: str, meaning: str, unit: str, kind: str, book: Optional[str] = None,
            note: str = "") -> Notation:
    """Add one entry to the table (each name once); one the registry lacks needs its row in
    :data:`mlsysim_sym.proposals.EXTENSION`."""
    if name in _TABLE:
        raise RuntimeError(f"notation entry {name!r} declared twice")
    if book is None:
        proposal(name)
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
    ("G", rf"G_{{{T}{{rep}}}}", None, "1", "accelerators of one model replica (TP x PP x EP; TP x PP x CP in the "
                                           "extended model, which carves EP out of the data-parallel ranks)"),
    ("dp", rf"N_{{{T}{{DP}}}}", r"\DataParallelDegree", "1", "data-parallel replicas"),
    ("lb", rf"B_{{{T}{{local}}}}", r"\LocalBatchSize", "1", "samples per replica per step"),
    ("W", rf"W_{{{T}{{model}}}}", None, "B", "weight bytes of the model at the training precision"),
    ("O_model", rf"O_{{{T}{{model}}}}", r"\ModelStepOperations", "flop",
     "model FLOPs of one replica step (3 x forward)"),
    ("O_hw", rf"O_{{{T}{{hw}}}}", None, "flop", "executed FLOPs of one replica step (4 x forward with recompute)"),
    ("R_eff", rf"R_{{{T}{{dev}}}}", None, "flop/s", "achieved FLOP/s of one accelerator",
     r"The book draws its \RealizedDeviceComputeRate R, which is also the glyph of its "
     r"\OversubscriptionRatio, and R_eff is its \EffectiveFleetThroughput"),
    ("T_compute", rf"T_{{{T}{{compute}}}}", r"\IronLawComputeTime", "s", "compute time of the replica step"),
    ("f_train", rf"f_{{{T}{{tune}}}}", None, "1", "trainable share of the parameters (LoRA)"),
    ("ifd", rf"m_{{{T}{{flight}}}}", None, "1", "in-flight divisor of the 1F1B schedule"),
    ("mb", rf"B_{{{T}{{held}}}}", None, "1",
     "samples whose activations a stage holds at once, B_local / (k m_flight) (mlsysim's microbatch): with a "
     "pipeline, the microbatches in flight; without one, an accumulation step's (the extended model's: one "
     "microbatch's)"),
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
    ("T_ep_alltoall", rf"T_{{{T}{{A2A,EP}}}}", None, "s",
     "EP all-to-all of one step (the extended model's with the expert tensor-parallel gathers), before congestion",
     r"The book's \TokenDispatchTime is one dispatch; this is a step's all-to-all on the fabric"),
    ("bubble_fraction", rf"b_{{{T}{{interleaved}}}}", r"\InterleavedPipelineBubbleFraction", "1",
     "idle share of the pipelined step",
     r"The registry's form with V, (N_PP - 1) / (N_PP - 1 + m V); with V = 1 it is the book's \PipelineBubbleFraction"),
    ("T_bubble", rf"T_{{{T}{{bubble}}}}", None, "s", "pipeline fill-and-drain time"),
    ("T_dp", rf"T_{{{T}{{DP}}}}", None, "s", "DP communication per step, with congestion (mlsysim's amortized over "
                                            "accumulation; the extended model's once per optimizer step)"),
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
    ("G_mp", rf"G_{{{T}{{shard}}}}", None, "1", "accelerators sharing one copy of the dense weights (TP x PP; EP is "
                                                "carved out of a stage's TP x DP x CP ranks)"),
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
     "activation bytes (two a value) one layer keeps per token and hidden unit on one TP rank"),
    ("T_tp_layer", rf"T_{{{T}{{TP,layer}}}}", None, "s", "one TP collective of one layer, before congestion"),
    ("M_kv", rf"M_{{{T}{{KV,seq}}}}", None, "B", "keys and values of the whole sequence on one TP rank"),
    ("T_cp_layer", rf"T_{{{T}{{KV,layer}}}}", None, "s", "CP key/value exchange of one layer, before congestion"),
    ("alpha_pp", rf"\alpha_{{{T}{{PP}}}}", None, "s", "message latency between consecutive pipeline stages"),
    ("f_gemm", rf"f_{{{T}{{GEMM}}}}", None, "1", "GEMM-shape efficiency factor of the layers"),
    ("P_update", rf"P_{{{T}{{upd}}}}", None, "1", "parameters whose optimizer update one accelerator computes"),
    ("T_cp_exchange", rf"T_{{{T}{{KV,CP}}}}", None, "s", "CP key/value exchange of one step, before congestion"),
    ("T_cp", rf"T_{{{T}{{CP}}}}", None, "s", "CP communication per step (with congestion)"),
    ("beta_pp", rf"\beta_{{{T}{{PP}}}}", None, "B/s", "bandwidth between consecutive pipeline stages"),
    ("T_p2p", rf"T_{{{T}{{P2P}}}}", None, "s", "pipeline stage-to-stage sends of one step"),
    ("T_opt", rf"T_{{{T}{{update}}}}", r"\OptimizerStepTime", "s", "optimizer update of one step"),
    ("T_tp_exposed", rf"T_{{{T}{{TP,exposed}}}}", None, "s", "TP communication left after overlap"),
    ("T_ep_exposed", rf"T_{{{T}{{EP,exposed}}}}", None, "s", "EP all-to-all left after overlap"),
    ("M_routed", rf"M_{{{T}{{routed}}}}", None, "B", "bytes one rank routes to the experts in an all-to-all"),
    ("P_gather", rf"P_{{{T}{{gather}}}}", None, "1",
     "parameters of one layer an accelerator gathers under ZeRO-3 / FSDP (of the shards split over several ranks)"),
    ("M_gather", rf"M_{{{T}{{gather}}}}", None, "B",
     "ZeRO-3 / FSDP layers held gathered per accelerator (a layer's weights, the next one's when prefetched, "
     "a layer's gradients)"),
    ("T_perm", rf"T_{{{T}{{perm}}}}", None, "s", "MoE token permutation of one step"),
    ("F_tok", rf"F_{{{T}{{tok}}}}", None, "flop",
     "forward FLOPs per token with an architecture card's attention (the weights' products and the attention over "
     "the keys attended)"),
)
# ---- issue 13 --------------------------------------------------------------------------------- end
# ---- issue 22: today's runs ------------------------------------------------------------------- begin
_QUANTITIES += (
    ("R_gemm", rf"R_{{{T}{{GEMM}}}}", None, "flop/s",
     "peak FLOP/s the weights' GEMMs reach at the precision (FP8: eta_FP8 of the FP8 peak)"),
    ("R_rest", rf"R_{{{T}{{other}}}}", None, "flop/s",
     "peak FLOP/s of the work outside the weights' GEMMs (the 16-bit peak, or the precision's when lower)"),
    ("G_exp", rf"G_{{{T}{{exp}}}}", None, "1", "accelerators sharing one copy of the routed experts (EP x ETP x PP)"),
    ("dp_exp", rf"N_{{{T}{{EDP}}}}", None, "1", "expert data-parallel degree: ranks holding the same experts"),
    ("M_grad_exp", rf"M_{{{T}{{grad,exp}}}}", None, "B", "routed experts' gradient bytes one rank reduces"),
    ("rpn_exp", rf"r_{{{T}{{EDP}}}}", None, "1", "expert data-parallel ranks of one group on a node"),
    ("nodes_exp", rf"n_{{{T}{{E}}}}", None, "1", "nodes one expert data-parallel group spans"),
    ("T_dp_expert", rf"T_{{{T}{{EDP}}}}", None, "s",
     "AllReduce of the routed experts' gradients over the expert data-parallel ranks"),
    ("M_weight_exp", rf"M_{{{T}{{W,exp}}}}", None, "B", "bytes of one rank's routed experts' weights"),
    ("M_weight_msg", rf"M_{{{T}{{W}}}}", None, "B",
     "bytes of the weights one rank gathers over the data-parallel ranks (ZeRO-3), its experts apart"),
    ("T_dp_gather_exp", rf"T_{{{T}{{AG,exp}}}}", None, "s",
     "ZeRO-3's weight AllGathers of one rank's routed experts, over the expert data-parallel ranks"),
    ("beta_ep", rf"\beta_{{{T}{{EP}}}}", None, "B/s", "link bandwidth of the EP group"),
    ("alpha_ep", rf"\alpha_{{{T}{{EP}}}}", None, "s", "message latency of the EP group"),
    ("beta_etp", rf"\beta_{{{T}{{ETP}}}}", None, "B/s", "link bandwidth of the expert tensor-parallel group"),
    ("alpha_etp", rf"\alpha_{{{T}{{ETP}}}}", None, "s", "message latency of the expert tensor-parallel group"),
    ("T_etp_layer", rf"T_{{{T}{{ETP}}}}", None, "s",
     "one MoE layer's expert tensor-parallel token AllGather and ReduceScatter of one pass"),
    ("z_held", rf"z_{{{T}{{held}}}}", None, "1",
     "ZeRO stage at which an accelerator holds its weights and gradients during a step: under a pipeline at most "
     "2 (each stage keeps its weights gathered), at most 1 with several microbatches (and its gradients "
     "unreduced), else the ZeRO stage"),
    ("M_etp", rf"M_{{{T}{{ETP}}}}", None, "B",
     "bytes of routed tokens one rank's expert tensor-parallel group gathers (the routed tokens of all its ranks)"),
    ("T_ep_layer", rf"T_{{{T}{{EP,layer}}}}", None, "s",
     "one MoE layer's all-to-alls and expert tensor-parallel gathers of one step, before congestion"),
    ("T_att", rf"T_{{{T}{{attn}}}}", None, "s", "attention compute of one step on one accelerator"),
    ("r_stage", rf"r_{{{T}{{stage}}}}", None, "1", "the slowest pipeline stage's work over the mean stage's"),
    ("n_pass", rf"n_{{{T}{{pass}}}}", None, "1",
     "framework taxes of one step on one accelerator: the fixed cost of every microbatch's passes through its layers"),
)
# ---- issue 22 --------------------------------------------------------------------------------- end
# ---- issue 24: the per-layer overlap schedule ---- begin
_QUANTITIES += (
    ("T_bwd", rf"T_{{{T}{{backward}}}}", r"\BackwardPassTime", "s",
     "backward pass of the replica's step, its recomputed forward included (the share 1 - 1/m_train of T_node, "
     "where m_train = 3 forward-pass equivalents make a training pass, 4 with recomputation)"),
    ("T_dp_layer", rf"T_{{{T}{{layer comm}}}}", r"\LayerAllReduceTime", "s",
     "one layer's share of the step's DP communication (T_DP over the layers of a stage)"),
)
# ---- issue 24: the per-layer overlap schedule ---- end
for _row in _QUANTITIES:
    declare(_row[0], _row[1], _row[4], _row[3], "quantity", _row[2], _row[5] if len(_row) > 5 else "")

#: required()'s target: the value an output must reach, in the output's unit (here, not where required() is, so
#: that the table, the documents and the registry's extension hold it whatever is imported).
declare("y", "y", "target value of the output (required())", "", "required")

#: Quantity names in model order (every variant's quantities, each once).
QUANTITY_NAMES: Tuple[str, ...] = tuple(r[0] for r in _QUANTITIES)

#: Quantity name -> its sort name: sympy orders a sum by its symbols' sort keys, and these sort before every
#: other symbol of their letter (``T_...``, ``M_...``) in the order :func:`read_in_order` was given (the step's
#: terms, the memory's parts in reading order).
_READING: Dict[str, str] = {}


def read_in_order(names: Sequence[str]) -> None:
    """Sums of these quantities print in this order (one caller: :mod:`mlsysim_sym.model`, with its
    ``STEP_ORDER`` and ``MEMORY_ORDER``)."""
    _READING.clear()
    _READING.update({n: f"{n.split('_')[0]}_{i:02d}" for i, n in enumerate(names)})


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
    ("b_micro", rf"B_{{{T}{{micro}}}}", r"\MicrobatchSize", "1", "samples of one microbatch", {"integer": True}),
)
_declare_formal(_FORMAL_BOOK_TERMS)
# issue 13: formal arguments of the extended model's terms
_declare_formal((
    ("x_gemm", "x", None, "1", "width of the shared dimension of a layer's GEMMs", {}),
    ("n_param", rf"n_{{{T}{{param}}}}", None, "1", "parameters an update reads and writes", {}),
))
# ---- issue 11 -------------------------------------------------------------------------------- end
# ---- issue 24: the Fault Tolerance chapter's reliability and checkpoint terms ---------------- begin
_declare_formal((
    ("MTBF_comp", r"\text{MTBF}", r"\MeanTimeBetweenFailures", "s", "mean time between failures of one component", {}),
    ("MTBF_sys", rf"\text{{MTBF}}_{{{T}{{system}}}}", r"\SystemMtbf", "s",
     "mean time between failures that interrupt the whole job", {}),
    ("lambda_f", r"\lambda", r"\ComponentFailureRate", "1/s", "failure rate of one component", {}),
    ("t_run", rf"t_{{{T}{{run}}}}", None, "s", "time a system has run since it was last known to be up", {}),
    ("T_write", rf"T_{{{T}{{write}}}}", r"\CheckpointWriteTime", "s", "time training pauses to write one checkpoint", {}),
    ("tau_ckpt", rf"T_{{{T}{{ckpt}}}}", r"\CheckpointInterval", "s", "useful compute time between two checkpoints", {}),
    ("T_pause", rf"T_{{{T}{{pause}}}}", r"\CheckpointExtraPauseTime", "s",
     "training pause per checkpoint beyond the write itself", {}),
    ("S_ckpt", rf"S_{{{T}{{ckpt}}}}", None, "B", "bytes of one checkpoint", {}),
    ("BW_ckpt", rf"\text{{BW}}_{{{T}{{ckpt}}}}", None, "B/s", "aggregate bandwidth a checkpoint is written at", {}),
    ("T_detect", rf"T_{{{T}{{detect}}}}", r"\FailureDetectionTime", "s", "time from a fault to its detection", {}),
    ("T_restart", rf"T_{{{T}{{restart}}}}", r"\JobRestartTime", "s", "time to relaunch the job's processes", {}),
    ("T_load", rf"T_{{{T}{{load}}}}", r"\CheckpointLoadTime", "s", "time to read the checkpoint back", {}),
    ("T_warmup", rf"T_{{{T}{{warmup}}}}", r"\RecoveryWarmupTime", "s", "time to return to full throughput", {}),
    ("A_comp", rf"A_{{{T}{{component}}}}", r"\ComponentAvailability", "1",
     "probability that one component is up at a given instant", {}),
    ("k_rep", rf"k_{{{T}{{rep}}}}", None, "1", "independent replicas of a service", {"integer": True}),
))
# ---- issue 24 -------------------------------------------------------------------------------- end

# ---- issue 24: the Distributed Training chapter's training dynamics (terms/training.py) ------- begin
_declare_formal((
    ("r_serial", rf"r_{{{T}{{serial}}}}", None, "1",
     "share of a fixed workload's single-device time that does not shrink with more devices", {}),
    ("eta_base", rf"\eta_{{{T}{{base}}}}", r"\BaseLearningRate", "1",
     "learning rate tuned at the reference batch size", {}),
    ("k_batch", rf"k_{{{T}{{batch}}}}", None, "1", "factor by which the batch size is multiplied", {}),
    ("t_opt", "t", r"\OptimizerStepIndex", "1", "position of one optimizer update in the run", {}),
    ("W_warm", rf"W_{{{T}{{warmup}}}}", None, "1", "optimizer steps over which warmup ramps the learning rate", {}),
    ("eta_bsp", rf"\eta_{{{T}{{BSP}}}}", r"\BspLearningRate", "1",
     "learning rate of the bulk-synchronous run at the same effective batch", {}),
    ("s_stale", "s", r"\StalenessBound", "1",
     "iterations a stale-synchronous worker may run ahead of the slowest", {}),
    ("tr_cov", rf"\operatorname{{tr}} \Sigma", None, "1",
     "total variance of the per-example gradients, the trace of their covariance", {}),
    ("g_norm2", r"\lVert \nabla \mathcal{L} \rVert^{2}", None, "1", "squared norm of the true gradient", {}),
    ("eta_global", rf"\eta_{{{T}{{global}}}}", r"\LarsGlobalLearningRate", "1",
     "global learning rate LARS multiplies by each layer's trust ratio", {}),
    ("w_norm", r"\lVert w_{l} \rVert", None, "1", "norm of one layer's weights", {}),
    ("g_norm_l", r"\lVert g_{l} \rVert", None, "1", "norm of one layer's gradient", {}),
    ("lambda_wd", rf"\lambda_{{{T}{{wd}}}}", None, "1", "weight-decay coefficient of the LARS / LAMB update", {}),
    ("T_sync_acc", rf"T_{{{T}{{sync}}}}", r"\AccumulatedSyncTime", "s",
     "gradient synchronization paid once per accumulated update", {}),
    ("T_mu", rf"T_{{\mu}}", None, "s", "compute time of one accumulation micro-step", {}),
    ("p_strag", rf"p_{{{T}{{straggle}}}}", r"\NodeStragglerProbability", "1",
     "probability that one device straggles in a given step", {}),
    ("S_mean", rf"\bar{{S}}_{{{T}{{batch}}}}", None, "1", "mean sequence length of the sequences of one batch", {}),
    ("S_longest", rf"S_{{{T}{{longest}}}}", None, "1", "length of the longest sequence of one batch", {}),
))
# ---- issue 24: training dynamics -------------------------------------------------------------- end
# ---- issue 24: the Collective Communication chapter's terms (terms/networks.py) ------------- begin
_declare_formal((
    ("o_logp", "o", r"\SymmetricMessageOverhead", "s",
     "processor time to initiate or complete one message, which cannot overlap compute (LogP)", {}),
    ("L_logp", rf"L_{{{T}{{LogGP}}}}", r"\LogpNetworkLatency", "s", "time a message spends in flight (LogP)", {}),
    ("T_layer_bwd", rf"T_{{{T}{{layer backward}}}}", r"\LayerBackwardTime", "s",
     "backward compute time of one layer, the window a transfer can hide in", {}),
    ("K_srv", rf"K_{{{T}{{srv}}}}", r"\ParameterServerCount", "1", "parameter servers the model state is sharded over",
     {"integer": True}),
    ("X_torus", "X", r"\TorusFirstAxisChipCount", "1", "chips along the first axis of a torus", {"integer": True}),
    ("Y_torus", "Y", r"\TorusSecondAxisChipCount", "1", "chips along the second axis of a torus", {"integer": True}),
    ("Z_torus", "Z", r"\TorusThirdAxisChipCount", "1", "chips along the third axis of a torus", {"integer": True}),
    ("E_byte", rf"E_{{{T}{{net}}}}", None, "J/B", "network energy to move one byte from one rank to another", {}),
    ("d_grad", rf"d_{{{T}{{grad}}}}", r"\GradientElementCount", "1", "elements of the gradient vector",
     {"integer": True}),
    ("K_top", rf"K_{{{T}{{top}}}}", r"\RetainedGradientElementCount", "1",
     "gradient elements top-k sparsification keeps", {"integer": True}),
    ("b_block", rf"b_{{{T}{{block}}}}", r"\QuantizationBlockSize", "1", "elements of one block sharing one scale",
     {"integer": True}),
    ("s_grad", rf"s_{{{T}{{grad}}}}", None, "B", "bytes of one uncompressed gradient element", {}),
    ("M_cross", rf"M_{{{T}{{crossover}}}}", r"\RingTreeCrossoverPayload", "B",
     "payload at which the ring and tree AllReduce take the same time", {}),
    ("T_seq", rf"T_{{{T}{{sequential}}}}", r"\SequentialBackwardCommunicationTime", "s",
     "backward pass followed by every layer's gradient AllReduce, none overlapped", {}),
    ("s_code", rf"s_{{{T}{{code}}}}", None, "B", "bytes of one compressed value sent", {}),
    ("s_meta", rf"s_{{{T}{{meta}}}}", None, "B", "bytes of one block scale or one sparse index sent", {}),
    ("r_comp", rf"r_{{{T}{{comp}}}}", r"\CompressionRatio", "1", "uncompressed payload over compressed payload", {}),
    ("T_codec", rf"T_{{{T}{{overhead}}}}", r"\CodecOverheadTime", "s", "time to encode and decode a compressed payload",
     {}),
    ("p_steps", rf"p_{{{T}{{steps}}}}", None, "1", "extra training steps compression costs, as a share of the steps",
     {}),
))
# ---- issue 24 --------------------------------------------------------------------------------- end


# ---- issue 24: the communication and fleet appendices (AC, FA) ---------------------------- begin
_declare_formal((
    ("O_ops", "O", r"\Operations", "flop", "operations a workload performs (iron law)", {}),
    ("T_job", rf"T_{{{T}{{job}}}}", r"\JobDuration", "s", "wall-clock time of one job or window", {}),
    ("f_oh_bubble", rf"f_{{{T}{{bubble}}}}", None, "1", "share of wall-clock time lost to pipeline bubbles", {}),
    ("f_oh_ckpt", rf"f_{{{T}{{ckpt}}}}", r"\CheckpointOverheadFraction", "1",
     "share of wall-clock time lost to saving checkpoints", {}),
    ("f_oh_recovery", rf"f_{{{T}{{recovery}}}}", None, "1",
     "share of wall-clock time lost to failure detection and recovery", {}),
    ("f_oh_maint", rf"f_{{{T}{{maint}}}}", None, "1", "share of wall-clock time lost to maintenance windows", {}),
    ("b_ckpt", rf"b_{{{T}{{ckpt}}}}", None, "B", "bytes a checkpoint stores per parameter", {}),
    ("PUE", r"\text{PUE}", None, "1", "power usage effectiveness: facility power over IT power", {}),
    ("lambda_arr", rf"\lambda_{{{T}{{arr}}}}", r"\ArrivalRate", "1/s", "mean rate at which requests arrive", {}),
    ("T_lat", rf"T_{{{T}{{lat}}}}", r"\RequestTimeInSystem", "s", "mean time a request spends in the system", {}),
    ("T_xfer", rf"T_{{{T}{{transfer}}}}", r"\TransferTimeForPayload", "s",
     "time to communicate the uncompressed payload", {}),
))
# ---- issue 24: AC, FA ------------------------------------------------------------------------ end


# ---- issue 24: the FT chapter's remaining equations and AC's LogGP time (fix2) --------------- begin
_declare_formal((
    ("p_event", rf"p_{{{T}{{event}}}}", None, "1",
     "probability that one device meets an event (a silent data corruption) within the window T_ref", {}),
    ("T_ref", rf"T_{{{T}{{ref}}}}", None, "s", "window a per-device event probability is quoted for", {}),
    ("H_hb", "H", r"\HeartbeatInterval", "s", "interval between two heartbeats of one worker", {}),
    ("k_timeout", rf"k_{{{T}{{timeout}}}}", None, "1",
     "standard deviations of the network delay a heartbeat timeout allows", {}),
    ("sigma_d", r"\sigma_d", r"\NetworkDelayStandardDeviation", "s", "standard deviation of the network delay", {}),
    ("T_rank", rf"T_{{{T}{{rank}}}}", None, "s", "compute time of one healthy rank's step", {}),
    ("T_rank_slow", rf"T_{{{T}{{rank,slow}}}}", None, "s", "compute time of the slowest rank's step", {}),
    ("FIT", rf"{T}{{FIT}}", None, "1", "failures of one component per 10^9 device-hours", {}),
    ("T_FIT", rf"T_{{{T}{{FIT}}}}", None, "s", "the 10^9 device-hours a FIT rate counts failures over", {}),
    ("N_new", rf"N_{{{T}{{new}}}}", None, "1", "workers after an elastic resize", {"integer": True}),
    ("N_base", rf"N_{{{T}{{base}}}}", None, "1", "workers the learning rate was tuned for", {"integer": True}),
    ("o_send", rf"o_{{{T}{{send}}}}", r"\SenderOverhead", "s", "processor time to initiate one message (LogGP)", {}),
    ("o_recv", rf"o_{{{T}{{recv}}}}", r"\ReceiverOverhead", "s", "processor time to complete the receipt of one "
     "message (LogGP)", {}),
    ("k_bytes", rf"k_{{{T}{{bytes}}}}", None, "1", "bytes of one long message, as a count (LogGP)",
     {"integer": True}),
    ("G_byte", rf"G_{{{T}{{byte}}}}", None, "s", "time per byte of a long message after its first (LogGP)", {}),
))
# ---- issue 24: FT remaining equations, AC LogGP (fix2) ---------------------------------------- end
# ---- issue 24: priced rows ---- begin
_declare_formal((
    ("f_ecc", rf"f_{{{T}{{ECC}}}}", None, "1", "share of a memory's raw bandwidth that its ECC check bits take", {}),
    ("N_fail", rf"N_{{{T}{{failures}}}}", r"\TrainingFailureCount", "1", "failures counted during one training run",
     {"integer": True}),
))
# ---- issue 24: priced rows ---- end


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
        return None if self.book else proposal(self.name).macro

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
    Term("BubbleFraction", rf"b_{{{T}{{interleaved}}}}", r"\InterleavedPipelineBubbleFraction", ("pp", "v", "m"),
         "idle share of a pipelined step"),
    Term("BubbleTime", rf"T_{{{T}{{bubble}}}}", None, ("T_busy", "pp", "v", "m"),
         "pipeline fill-and-drain time added to a busy time"),
)
# ---- issue 11: terms the textbook uses beside the model's (not in the step-time model) ------- begin
_COLL = ("M_coll", "N_coll", "beta", "alpha")
_KORTHIKANTI = ("s", "b_micro", "H", "n_heads", "tp", "bpp")
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
    Term("PipelineSendTime", rf"T_{{{T}{{send}}}}", None, ("b_micro", "s", "H", "bpp", "beta", "alpha"),
         "send of one microbatch's activation across one pipeline stage boundary"),
    Term("CommComputeRatio", r"\rho", r"\CommunicationComputeRatio", ("T_comm", "T_compute"),
         "communication-to-computation ratio of a step"),
    Term("ExpertCapacity", rf"C_{{{T}{{expert}}}}", None, ("C_cap", "n_tok", "N_experts"),
         "token slots of one expert (Switch Transformer capacity)"),
    Term("ActivationsNoRecompute", rf"M_{{{T}{{act,TP}}}}", None, _KORTHIKANTI,
         "activation bytes of one layer without recomputation, tensor parallel"),
    Term("ActivationsSeqParallel", rf"M_{{{T}{{act,SP}}}}", None, _KORTHIKANTI,
         "activation bytes of one layer without recomputation, tensor and sequence parallel"),
    Term("DataParallelCommVolume", rf"M_{{{T}{{DP}}}}", None, ("M_param", "N_coll"),
         "bytes one rank sends per step for the data-parallel gradient all-reduce"),
    Term("Zero3CommVolume", rf"M_{{{T}{{ZeRO-3}}}}", None, ("M_param", "N_coll"),
         "bytes one rank sends per step under ZeRO-3 / FSDP"),
    Term("Zero3CommTime", rf"T_{{{T}{{ZeRO-3}}}}", None, ("M_param", "N_coll", "beta", "alpha"),
         "ZeRO-3 / FSDP communication time per step (two AllGathers and a ReduceScatter)"),
)
# ---- issue 11 -------------------------------------------------------------------------------- end
# ---- issue 13: the extended model's own terms ----------------------------------------------- begin
TERMS += (
    Term("GemmShapeEfficiency", rf"f_{{{T}{{GEMM}}}}", None, ("x_gemm", "d_half"),
         "share of the large-GEMM efficiency reached at width x (saturating: x / (x + x_1/2))"),
    Term("OptimizerUpdateTime", rf"T_{{{T}{{opt}}}}", None, ("n_param", "b_upd", "BW_hbm"),
         "memory-bound optimizer update of n parameters"),
)
# ---- issue 13 --------------------------------------------------------------------------------- end
# ---- issue 24: the Fault Tolerance chapter's reliability and checkpoint terms ---------------- begin
TERMS += (
    Term("SystemMTBF", rf"\text{{MTBF}}_{{{T}{{system}}}}", r"\SystemMtbf", ("MTBF_comp", "N_coll"),
         "MTBF of N identical components in series"),
    Term("YoungDalyInterval", rf"T^\ast_{{{T}{{ckpt}}}}", r"\OptimalCheckpointInterval", ("T_write", "MTBF_sys"),
         "Young's optimal checkpoint interval"),
    Term("CheckpointWaste", "W", r"\CheckpointWasteFraction", ("T_write", "tau_ckpt", "MTBF_sys"),
         "first-order share of time lost to checkpoint writes and to rework after failures"),
    Term("CheckpointOverhead", rf"f_{{{T}{{ckpt}}}}", r"\CheckpointOverheadFraction", ("T_write", "T_pause", "tau_ckpt"),
         "share of training time spent saving checkpoints"),
    Term("CheckpointWriteTime", rf"T_{{{T}{{write}}}}", r"\CheckpointWriteTime", ("S_ckpt", "BW_ckpt"),
         "time to write one checkpoint"),
    Term("RecoveryTime", rf"T_{{{T}{{recovery}}}}", r"\FailureRecoveryTime",
         ("T_detect", "T_restart", "T_load", "T_warmup"), "time from a failure until useful work resumes"),
    Term("AllUpAvailability", rf"A_{{{T}{{all-up}}}}", None, ("A_comp", "N_coll"),
         "probability that N independent components are all up at once"),
    Term("ReplicatedAvailability", rf"A_{{{T}{{system}}}}", r"\RedundantServiceAvailability", ("A_comp", "k_rep"),
         "availability of k independent replicas of which one suffices"),
)
# ---- issue 24 --------------------------------------------------------------------------------- end
# ---- issue 24: the Distributed Training chapter's training dynamics (terms/training.py) ------- begin
TERMS += (
    Term("AmdahlSpeedup", rf"S_{{{T}{{Amdahl}}}}", None, ("N_coll", "r_serial"),
         "speedup on N devices with a serial share r (Amdahl's law)"),
    Term("LinearScaledLearningRate", rf"\eta_{{{T}{{new}}}}", r"\ScaledLearningRate", ("eta_base", "k_batch"),
         "learning rate after the linear scaling rule"),
    Term("SqrtScaledLearningRate", rf"\eta_{{{T}{{sqrt}}}}", None, ("eta_base", "k_batch"),
         "learning rate after the square-root scaling rule"),
    Term("WarmupLearningRate", r"\eta_{t}", None, ("eta_base", "k_batch", "t_opt", "W_warm"),
         "learning rate at step t of a linear warmup"),
    Term("StalenessAdjustedLearningRate", "\\eta'", r"\StalenessAdjustedLearningRate", ("eta_bsp", "s_stale"),
         "learning rate of a stale-synchronous run"),
    Term("CriticalBatchSize", "B^{*}", r"\CriticalBatchSize", ("tr_cov", "g_norm2"),
         "critical batch size estimated by the gradient noise scale"),
    Term("LarsLearningRate", r"\eta_{l}", None, ("eta_global", "w_norm", "g_norm_l", "lambda_wd"),
         "layer-wise learning rate of LARS"),
    Term("AccumulationSyncOverhead", rf"f_{{{T}{{sync}}}}", None, ("T_sync_acc", "GA", "T_mu"),
         "synchronization time over compute time under gradient accumulation"),
    Term("ExpectedStragglers", rf"n_{{{T}{{straggle}}}}", None, ("N_coll", "p_strag"),
         "devices expected to straggle in one synchronous step"),
    Term("PaddingWaste", rf"f_{{{T}{{pad}}}}", None, ("S_mean", "S_longest"),
         "share of a padded batch's token slots that hold padding"),
)
# ---- issue 24: training dynamics -------------------------------------------------------------- end
# ---- issue 24: the Collective Communication chapter's terms (terms/networks.py) ------------- begin
TERMS += (
    Term("ButterflyAllReduce", rf"T_{{{T}{{butterfly}}}}", r"\ButterflyAllReduceTime", _COLL,
         "recursive halving-doubling (butterfly) AllReduce time"),
    Term("TorusAllReduce", rf"T_{{{T}{{torus}}}}", None, ("M_coll", "X_torus", "Y_torus", "Z_torus", "beta", "alpha"),
         "dimension-ordered AllReduce time on a three-dimensional torus"),
    Term("ParameterServerTime", rf"T_{{{T}{{PS}}}}", None, ("M_coll", "N_coll", "K_srv", "beta"),
         "parameter-server aggregation time of one step"),
    Term("LogPOverlapTime", rf"T_{{{T}{{LogP}}}}", None, ("o_logp", "L_logp", "T_layer_bwd"),
         "time of a transfer overlapped with a layer's compute under LogP"),
    Term("AllReduceEnergy", rf"E_{{{T}{{AR}}}}", None, ("M_coll", "N_coll", "E_byte"),
         "network energy of one ring AllReduce over all ranks"),
    Term("BlockQuantRatio", rf"r_{{{T}{{block}}}}", None, ("s_grad", "s_code", "b_block", "s_meta"),
         "compression ratio of block quantization"),
    Term("TopKRatio", rf"r_{{{T}{{top-}}k}}", None, ("d_grad", "K_top", "s_grad", "s_code", "s_meta"),
         "compression ratio of top-k sparsification with indices"),
    Term("CompressedCommTime", rf"T_{{{T}{{compressed}}}}", r"\CompressedCommunicationTime",
         ("T_comm", "r_comp", "T_codec"), "communication time with compression and its codec overhead"),
    Term("CompressedTrainingTime", rf"T_{{{T}{{train,comp}}}}", None,
         ("K_steps", "p_steps", "T_compute", "T_comm", "r_comp"), "training time with gradient compression"),
    Term("FsdpStartupTime", rf"T_{{{T}{{FSDP}},\alpha}}", None, ("L", "alpha"),
         "startup latency of FSDP's per-layer AllGather and ReduceScatter over a step"),
)
# ---- issue 24 --------------------------------------------------------------------------------- end
# ---- issue 24: the communication and fleet appendices (AC, FA) ---------------------------- begin
TERMS += (
    Term("IronLawTime", rf"T_{{{T}{{IronLaw}}}}", None, ("traffic", "BW_eff", "O_ops", "R_peak", "eta", "T_overhead"),
         "iron-law time: data movement, compute and fixed latency added"),
    Term("FailureProbability", rf"P_{{{T}{{fail}}}}", None, ("T_job", "MTBF_comp"),
         "probability of at least one failure within a window (exponential failures)"),
    Term("GoodputRatio", rf"\eta_{{{T}{{goodput}}}}", None, ("f_oh_bubble", "f_oh_ckpt", "f_oh_recovery", "f_oh_maint"),
         "share of wall-clock time left for useful training after the fleet overheads"),
    Term("CheckpointSize", rf"S_{{{T}{{ckpt}}}}", None, ("P", "b_ckpt"), "bytes of one training checkpoint"),
    Term("ITPower", rf"P_{{{T}{{IT}}}}", r"\InformationTechnologyPower", ("N", "TDP"),
         "IT load of the accelerators at their thermal design power"),
    Term("FacilityPower", rf"P_{{{T}{{facility}}}}", r"\FacilityPower", ("N", "TDP", "PUE"),
         "facility load: IT load times PUE"),
    Term("RidgePoint", rf"I_{{{T}{{ridge}}}}", r"\RooflineRidgePoint", ("R_peak", "BW_hbm"),
         "roofline ridge point: the intensity where bandwidth meets compute"),
    Term("AttainableRate", rf"R_{{{T}{{attain}}}}", r"\AttainableComputeRate", ("intensity", "R_peak", "BW_hbm"),
         "roofline attainable operation rate"),
    Term("RequestConcurrency", rf"Q_{{{T}{{req}}}}", r"\RequestConcurrency", ("lambda_arr", "T_lat"),
         "Little's law: mean requests in flight"),
    Term("TreeBroadcast", rf"T_{{{T}{{broadcast}}}}", r"\BroadcastCompletionTime", _COLL,
         "unsegmented binary-tree broadcast time"),
    Term("CompressionBreakEven", rf"T_{{{T}{{codec,max}}}}", None, ("T_xfer", "r_comp"),
         "largest codec time at which compression still pays, bandwidth-dominated"),
)
# ---- issue 24: AC, FA ------------------------------------------------------------------------ end
# ---- issue 24: the per-layer overlap schedule ---- begin
TERMS += (
    Term("LayerOverlapTime", rf"T_{{{T}{{pipelined}}}}", r"\OverlappedBackwardCommunicationTime",
         ("T_bwd", "T_dp_layer", "L"),
         "backward pass and gradient AllReduce, each layer's AllReduce overlapped with the next layer's backward"),
)
# ---- issue 24: the per-layer overlap schedule ---- end
# ---- issue 24: the FT chapter's remaining equations and AC's LogGP time (fix2) --------------- begin
TERMS += (
    Term("StepEventProbability", rf"P_{{{T}{{step}}}}", None, ("p_event", "N_coll", "T_step", "T_ref"),
         "probability that at least one of N devices meets an event within one step"),
    Term("HeartbeatTimeout", rf"T_{{{T}{{heartbeat}}}}", None, ("H_hb", "k_timeout", "sigma_d"),
         "heartbeat timeout: the interval plus k standard deviations of the network delay"),
    Term("StragglerStepTime", rf"T_{{{T}{{step,straggler}}}}", r"\StragglerStepTime",
         ("T_rank", "T_rank_slow", "T_comm"), "synchronous step gated by its slowest rank, no overlap"),
    Term("MtbfFromFit", rf"{T}{{MTBF}}_{{{T}{{FIT}}}}", None, ("FIT", "T_FIT"),
         "MTBF of a component from its FIT rate"),
    Term("LogGPLongMessageTime", rf"T_{{{T}{{long}}}}", r"\LoggpLongMessageTime",
         ("o_send", "L_logp", "k_bytes", "G_byte", "o_recv"), "time of one long message under LogGP"),
)
# ---- issue 24: FT remaining equations, AC LogGP (fix2) ---------------------------------------- end
# ---- issue 24: priced rows ---- begin
TERMS += (
    Term("EccEffectiveBandwidth", rf"{T}{{BW}}_{{{T}{{ECC}}}}", None, ("BW_hbm", "f_ecc"),
         "memory bandwidth left for data after ECC's check bits"),
    Term("ObservedMTBF", rf"{T}{{MTBF}}_{{{T}{{obs}}}}", None, ("T_job", "N_fail"),
         "MTBF measured on a run: the time observed over the failures counted"),
    Term("FabricBandwidthRatio", rf"r_{{{T}{{intra/inter}}}}", None, ("beta_in", "beta_out"),
         "intra-node link bandwidth over inter-node bandwidth, per direction"),
)
# ---- issue 24: priced rows ---- end
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


#: The book's macros one of our quantities holds as a special case: macro -> (the quantity's name, the macro's
#: LaTeX in the registry, the case). A reader who types the book's symbol (``b_pipe``) finds the quantity.
SPECIAL_CASES: Dict[str, Tuple[str, str, str]] = {
    r"\PipelineBubbleFraction": ("bubble_fraction", rf"b_{{{T}{{pipe}}}}", "V = 1"),
}


def named_by_macro(name: str, names: Iterable[str]) -> Optional[str]:
    r"""The first of ``names`` (quantities, parameters or cost terms) whose book macro (the registry's or the one
    we propose) is ``name``, typed with or without its backslash (``\DataParallelDegree``,
    ``PipelineBubbleFraction``); a macro of :data:`SPECIAL_CASES`, or its registry glyph (``b_pipe``), names the
    quantity that holds it. None when nothing is.

    >>> import mlsysim_sym.symbols
    >>> named_by_macro("DataParallelDegree", ["pp", "dp"]), named_by_macro("b_pipe", ["bubble_fraction"])
    ('dp', 'bubble_fraction')
    """
    if not isinstance(name, str):
        return None
    macro = "\\" + name.lstrip("\\")
    names = list(names)
    terms = {t.name: t.macro for t in TERMS}
    for n in names:
        own = _TABLE[n].macro if n in _TABLE else terms.get(n)
        if own == macro:
            return n
    for m, (n, latex, _) in SPECIAL_CASES.items():
        if n in names and name in (m, m[1:], plain(latex)):
            return n
    return None


def special_case(name: str) -> str:
    r"""What a name of :data:`SPECIAL_CASES` (a macro, with or without its backslash, or its glyph) is, for a
    reader who typed it; "" for any other name.

    >>> special_case("b_pipe")
    "the book's b_pipe (\\PipelineBubbleFraction) is this quantity at V = 1"
    """
    for m, (_, latex, case) in SPECIAL_CASES.items():
        if isinstance(name, str) and name in (m, m[1:], plain(latex)):
            return f"the book's {plain(latex)} ({m}) is this quantity at {case}"
    return ""


def printed_as(symbol: str, names: Iterable[str]) -> Optional[str]:
    """The first of ``names`` whose symbol a table prints as ``symbol`` (``M_total`` -> ``M_acc``); None when
    none is (a name without notation is passed over; tests/test_notation.py has examples)."""
    return next((n for n in names if n in _TABLE and plain(_TABLE[n].latex) == symbol), None)


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
