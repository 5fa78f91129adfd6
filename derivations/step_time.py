"""The step time, term by term: every quantity's meaning, equation, source and regimes."""
from __future__ import annotations

from typing import Dict, List

import sympy as sp

from mlsysim_sym import notation
from mlsysim_sym.model import Variant, build_model
from mlsysim_sym.printing import equation_label, latex

from .common import decision_lines, definition_chain, small_closed_form, term_chain, transformer_model

#: Sections of the derivation: title, the quantities in it (model order), what it rests on.
SECTIONS = (
    ("Decomposition of the fleet", ("N", "G", "dp", "lb"),
     ("mlsysim 0.3.0, DistributedModel.solve: the fleet splits into data-parallel replicas of "
      "tensor x pipeline x expert-parallel accelerators.",)),
    ("Roofline of one replica", ("W", "O_model", "O_hw", "R_eff", "T_compute", "BW_eff", "traffic", "T_memory",
                                 "T_overhead", "T_node", "mfu_node", "hfu_node", "energy", "throughput_node",
                                 "intensity", "memory_bound", "overhead_dominated"),
     ("Williams, Waterman and Patterson (2009), Roofline: an insightful visual performance model.",
      "Chowdhery et al. (2022), PaLM, appendix B: model and hardware FLOPs utilization.")),
    ("Memory per accelerator", ("f_train", "ifd", "mb", "L_stage", "P_shard", "M_weights", "M_grads",
                                "M_optimizer", "M_activations", "M_buffers", "M_acc", "feasible", "offload_spill"),
     ("Rajbhandari et al. (2020), ZeRO: memory optimizations toward training trillion parameter models.",
      "Korthikanti et al. (2023), Reducing activation recomputation in large transformer models.",
      "Hu et al. (2022), LoRA: low-rank adaptation of large language models.")),
    ("Communication", ("M_grad_msg", "BW_inter", "rpn", "nodes_dp", "T_dp_allreduce", "M_act_msg", "L_tp",
                       "T_tp_allreduce", "T_ep_alltoall"),
     ("Patarasuk and Yuan (2009), Bandwidth optimal all-reduce algorithms for clusters of workstations.",
      "Thakur, Rabenseifner and Gropp (2005), Optimization of collective communication operations in MPICH.",
      "Shoeybi et al. (2019), Megatron-LM: four activation all-reduces per layer and training step.",
      "Fedus, Zoph and Shazeer (2022), Switch Transformers: the expert all-to-all.")),
    ("Pipeline", ("bubble_fraction", "T_bubble"),
     ("Huang et al. (2019), GPipe.",
      "Narayanan et al. (2021), Efficient large-scale language model training on GPU clusters "
      "using Megatron-LM: the interleaved 1F1B bubble.")),
    ("Step assembly", ("T_dp", "T_tp", "T_ep", "T_comm", "T_dp_exposed", "T_sync", "T_step",
                       "scaling_efficiency", "mfu", "effective_throughput"),
     ("Dean and Barroso (2013), The tail at scale: the slowest worker gates a synchronous step.",)),
)

TERM_SOURCES = {
    "RingAllReduce": "Patarasuk and Yuan (2009): a reduce-scatter and an all-gather, N - 1 steps each.",
    "HierarchicalAllReduce": "Thakur, Rabenseifner and Gropp (2005): reduce inside each node, "
                             "a ring across nodes on 1/G of the data per rank, broadcast inside each node.",
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
}

#: The extended model's quantities, by the section they join (after the named quantity).
EXTENDED_PLACES = {"G": ("G_mp",), "T_dp_allreduce": ("T_dp_gather",), "R_eff": ("f_gemm",), "M_optimizer": ("P_update", "r_sp", "K_act"),
                   "L_tp": ("beta_tp", "alpha_tp", "T_sp_pair", "T_tp_layer"),
                   "T_ep_alltoall": ("M_kv", "beta_cp", "alpha_cp", "T_cp_layer", "T_cp_exchange", "T_cp", "beta_pp",
                                     "alpha_pp", "n_p2p", "T_p2p"),
                   "T_bubble": ("T_opt",), "T_dp_exposed": ("T_tp_exposed",)}


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
        "regimes": decision_lines(model.definition(name)),
    }


def extended_context() -> Dict[str, object]:
    """The extended model's edition of the step-time document."""
    return context(extended=True)


def _term_label(term: notation.Term, taken, prefix: str = "") -> str:
    """``eq-t-ring`` from the term's symbol; ``eq-t-bubble-term`` where a quantity has the symbol's name."""
    label = equation_label(prefix + term.latex)
    return label + "-term" if label in taken else label


def _sections(extended: bool):
    if not extended:
        return SECTIONS
    out = []
    for title, names, sources in SECTIONS:
        grown = []
        for n in names:
            grown.append(n)
            grown += EXTENDED_PLACES.get(n, ())
        out.append((title, tuple(grown), sources))
    return tuple(out)


def context(extended: bool = False) -> Dict[str, object]:
    """The step-time document's context: mlsysim's model, or (``extended``) the extended model's edition."""
    model = build_model(Variant(fidelity="extended")) if extended else transformer_model()
    sections_ = _sections(extended)
    listed = [n for _, names, _ in sections_ for n in names if n in model]
    missing = [n for n in model if n not in listed]
    if missing:
        raise RuntimeError(f"quantities not placed in a section of the step-time document: {missing}")
    sections: List[Dict[str, object]] = [
        {"title": title, "sources": list(sources),
         "quantities": [_quantity(model, n, extended) for n in names if n in model]}
        for title, names, sources in sections_]
    prefix = "extended " if extended else ""
    taken = {equation_label(prefix + n) for n in listed}
    terms = [{"name": t.name, "latex": t.latex, "book": t.book, "meaning": t.meaning,
              "equation": term_chain(t), "book_equation": term_chain(t, book=True),
              "source": TERM_SOURCES[t.name], "label": _term_label(t, taken, prefix)} for t in notation.TERMS]
    return {"sections": sections, "terms": terms, "extended": extended, "prefix": prefix,
            "step": definition_chain(model, "T_sync", alone=True), "step_book": definition_chain(model, "T_sync", book=True)}
