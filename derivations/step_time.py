"""The step time, term by term: every quantity's meaning, equation, source and regimes."""
from __future__ import annotations

from typing import Dict, List

import sympy as sp

from mlsysim_sym import notation
from mlsysim_sym.model import Variant, build_model
from mlsysim_sym.printing import equation_label, latex
from mlsysim_sym.simplify import DECOMPOSITION

from .common import decision_lines, definition_chain, small_closed_form, term_chain, transformer_model

#: What each section of the model (:attr:`mlsysim_sym.model.StepTimeModel.sections`, by title) rests on.
SOURCES = {
    "Decomposition of the fleet":
        ("mlsysim 0.3.0, DistributedModel.solve: the fleet splits into data-parallel replicas of "
         "tensor x pipeline x expert-parallel accelerators.",),
    "Compute of one replica":
        ("Chowdhery et al. (2022), PaLM, appendix B: model and hardware FLOPs utilization.",),
    "Memory per accelerator":
        ("Rajbhandari et al. (2020), ZeRO: memory optimizations toward training trillion parameter models.",
         "Korthikanti et al. (2022), Reducing activation recomputation in large transformer models.",
         "Hu et al. (2022), LoRA: low-rank adaptation of large language models."),
    "Roofline of one replica":
        ("Williams, Waterman and Patterson (2009), Roofline: an insightful visual performance model.",
         "Chowdhery et al. (2022), PaLM, appendix B: model and hardware FLOPs utilization."),
    "Data-parallel communication":
        ("Patarasuk and Yuan (2009), Bandwidth optimal all-reduce algorithms for clusters of workstations.",
         "Thakur, Rabenseifner and Gropp (2005), Optimization of collective communication operations in MPICH."),
    "Tensor-, expert- and context-parallel communication":
        ("Shoeybi et al. (2019), Megatron-LM: four activation all-reduces per layer and training step.",
         "Fedus, Zoph and Shazeer (2022), Switch Transformers: the expert all-to-all."),
    "Pipeline":
        ("Huang et al. (2019), GPipe.",
         "Narayanan et al. (2021), Efficient large-scale language model training on GPU clusters "
         "using Megatron-LM: the interleaved 1F1B bubble."),
    "Step assembly":
        ("Dean and Barroso (2013), The tail at scale: the slowest worker gates a synchronous step.",),
}

TERM_SOURCES = {
    "RingAllReduce": "Patarasuk and Yuan (2009): a reduce-scatter and an all-gather, N - 1 steps each.",
    "HierarchicalAllReduce": "Thakur, Rabenseifner and Gropp (2005): a reduce-scatter inside each node, G "
                             "concurrent rings across the nodes on 1/G of the data each (one a rank), an "
                             "all-gather inside each node (mlsysim's calc_hierarchical_allreduce_time).",
    "AllToAll": "Thakur, Rabenseifner and Gropp (2005): each rank keeps 1/N of its data.",
    "BubbleFraction": "Huang et al. (2019); Narayanan et al. (2021) for V virtual stages per device.",
    "BubbleTime": "Narayanan et al. (2021): b/(1 - b) of the busy time.",
    # issue 11: the textbook's terms beside the model's (not in the step time)
    "AllGather": "Thakur, Rabenseifner and Gropp (2005): N - 1 ring steps of M/N bytes; "
                 "Communication Foundations appendix, @eq-allgather.",
    "ReduceScatter": "Patarasuk and Yuan (2009): the first half of the ring all-reduce; "
                     "Communication Foundations appendix, @eq-reducescatter.",
    "TreeAllReduce": "Reduce up and broadcast down a binary tree, the full message per level; "
                     "Communication Foundations appendix, @eq-tree-allreduce.",
    "DoubleTreeAllReduce": "Sanders, Speck and Traff (2009): two complementary trees of M/2 each; "
                           "Collective Communication chapter, double binary tree.",
    "PointToPoint": "Hockney (1994): the alpha-beta model; Communication Foundations appendix, @eq-alpha-beta.",
    "PipelineSendTime": "Narayanan et al. (2021): one microbatch's b s h activation between consecutive stages.",
    "CommComputeRatio": "Collective Communication chapter, Llama 70B communication budget.",
    "ExpertCapacity": "Fedus, Zoph and Shazeer (2022), Switch Transformers, eq. (3).",
    "ActivationsNoRecompute": "Korthikanti et al. (2022), sec. 4.2.1: tensor parallelism, no recomputation.",
    "ActivationsSeqParallel": "Korthikanti et al. (2022), sec. 4.2.2: tensor and sequence parallelism.",
    "DataParallelCommVolume": "Rajbhandari et al. (2020), ZeRO, sec. 7.1: a ReduceScatter and an AllGather.",
    "Zero3CommVolume": "Rajbhandari et al. (2020), ZeRO, sec. 7.2.2: two AllGathers and a ReduceScatter, 1.5x.",
    "Zero3CommTime": "Rajbhandari et al. (2020), ZeRO, sec. 7.2.2.",
    # issue 13: the extended model's own terms
    "GemmShapeEfficiency": "The extended model (docs/extended.md): a saturating factor with one fitted constant; "
                           "Narayanan et al. (2021), Table 1, and Korthikanti et al. (2022), sec. 4.1.",
    "OptimizerUpdateTime": "Rajbhandari et al. (2020), ZeRO, sec. 3: the mixed-precision Adam states, read and "
                           "written once per update.",
    "LayerOverlapTime": "Collective Communication chapter, the overlap budget for a 7B transformer: N_L equal "
                        "per-layer AllReduces behind the backward pass, two stages in series.",
}

#: The families of cost terms this document lists: those of a training step. The book's other relations (training
#: dynamics, networks beyond the ring, the fleet, reliability: ``mlsysim_sym.terms.training`` ...) are in the book
#: companion, each with its chapter (docs/book.md).
STEP_FAMILIES = ("collectives", "pipeline", "memory", "roofline", "communication", "moe", "extended", "frameworks")


def step_terms():
    """The cost terms of a training step (:data:`STEP_FAMILIES`), in the notation's order."""
    from mlsysim_sym.terms.base import TERM_CLASSES
    return [t for t in notation.TERMS if TERM_CLASSES[t.name].__module__.rsplit(".", 1)[-1] in STEP_FAMILIES]

def _quantity(model, name: str, extended: bool = False) -> Dict[str, object]:
    e = notation.entry(name)
    closed = small_closed_form(model, name)
    if extended and closed is not None and closed.has(sp.Piecewise):
        closed = None       # the extended model's link choices inside a closed form make it too wide to print
    return {
        "name": name, "symbol": e.latex, "book": e.book, "meaning": e.meaning, "unit": e.unit,
        "equation": definition_chain(model, name, alone=True),
        "book_equation": definition_chain(model, name, book=True),
        "closed": None if closed is None else f"{e.latex} = {latex(closed)}",
        # the quantities of the integer decomposition the form keeps (B_local, G_rep): not cells' closed form, which
        # expands them too, so the document labels it apart (eq-t-compute-in-parameters, not eq-t-compute-closed)
        "kept": [] if closed is None else [notation.entry(k).latex for k in DECOMPOSITION
                                           if k in {str(x) for x in closed.free_symbols}],
        "regimes": decision_lines(model.definition(name)),
    }


def extended_context() -> Dict[str, object]:
    """The extended model's edition of the step-time document."""
    return context(extended=True)


def _term_label(term: notation.Term, taken, prefix: str = "") -> str:
    """``eq-t-ring`` from the term's symbol; ``eq-t-bubble-term`` where a quantity has the symbol's name."""
    label = equation_label(prefix + term.latex)
    return label + "-term" if label in taken else label


def context(extended: bool = False) -> Dict[str, object]:
    """The step-time document's context: mlsysim's model, or (``extended``) the extended model's edition."""
    model = build_model(Variant(fidelity="extended")) if extended else transformer_model()
    listed = [n for _, names in model.sections for n in names]
    sections: List[Dict[str, object]] = [
        {"title": title, "sources": list(SOURCES[title]), "quantities": [_quantity(model, n, extended) for n in names]}
        for title, names in model.sections]
    prefix = "extended " if extended else ""
    taken = {equation_label(prefix + n) for n in listed}
    terms = [{"name": t.name, "latex": t.latex, "book": t.book, "meaning": t.meaning,
              "equation": term_chain(t), "book_equation": term_chain(t, book=True),
              "source": TERM_SOURCES[t.name], "label": _term_label(t, taken, prefix)} for t in step_terms()]
    return {"sections": sections, "terms": terms, "extended": extended, "prefix": prefix,
            "step": definition_chain(model, "T_sync", alone=True), "step_book": definition_chain(model, "T_sync", book=True)}
