"""The book companion's entry for the per-layer overlap schedule of the Collective Communication chapter.

CC, sec. "Overlap Limits: When Hiding Fails" (``@sec-communication-overlap-limits``), notebook "Overlap Budget
for a 7B Transformer" (cell ``overlap-budget-calc``), read at commit 08e2f0f37ada9709d442599f463db7072359f87a of
github.com/harvard-edge/cs249r_book, ``book/quarto/contents/vol2/collective_communication/
collective_communication.qmd``. The cell's inputs: 32 layers, 15 ms of backward each, 880 MB of FP32 gradients
per layer all-reduced in 100 MB buckets of 3 ms each (8.8 buckets, 26.4 ms per layer). It computes the
sequential time ``T_backward + N_L T_comm`` = 1,324.8 ms and the pipelined time ``T_backward + T_first_comm +
(N_L - 1) max(0, T_comm - T_backward / N_L)`` = 859.8 ms, where ``T_comm`` and ``T_first_comm`` are both one
layer's AllReduce (26.4 ms) and ``T_backward`` the whole backward pass (480 ms); the text prints them rounded,
1325 ms and 860 ms, and the saving, 35 %.

The package's term is :class:`mlsysim_sym.terms.communication.LayerOverlapTime`; the extended model prices the
schedule with the switch ``layer_overlap`` (mechanism ``layer_overlap``, :mod:`mlsysim_sym.mechanisms`), and
without it hides mlsysim's fixed share ``eta_ov`` of the DP communication.

The chapter's count (:func:`inventory`) is the CC module's; this module adds the entry it points to.
"""
from __future__ import annotations

from typing import Dict, List

import sympy as sp

from mlsysim_sym import notation
from mlsysim_sym.model import Variant, build_model
from mlsysim_sym.symbols import PARAMS, sym
from mlsysim_sym.terms.communication import LayerOverlapTime, exposed_dp, layer_overlap_exposed

from .book import Counted, Entry, Number, _eq, value

T = r"\text"

#: The notebook's inputs (CC, cell overlap-budget-calc), in SI units.
N_LAYERS = 32
BACKWARD = N_LAYERS * 15e-3                 # 480 ms, the whole backward pass
LAYER_COMM = 880 / 100 * 3e-3               # 8.8 buckets of 3 ms: 26.4 ms, one layer's AllReduce


def notebook_inputs() -> Dict[str, float]:
    """The notebook's ``T_backward``, one layer's AllReduce and ``N_L``, and the step's whole AllReduce."""
    return {"T_backward": BACKWARD, "T_layer": LAYER_COMM, "N_L": N_LAYERS, "T_comm": N_LAYERS * LAYER_COMM}


def pipelined(t_backward=BACKWARD, t_layer=LAYER_COMM, n_layers=N_LAYERS) -> float:
    """The package's term at the given inputs (the notebook's by default), in seconds."""
    return value(LayerOverlapTime(t_backward, t_layer, n_layers))


def fixed_share(t_backward=BACKWARD, t_comm=N_LAYERS * LAYER_COMM) -> float:
    """mlsysim's fixed share at the same inputs: ``T_backward`` plus the DP time ``exposed_dp`` leaves under
    overlap, ``(1 - eta_ov) T_comm`` at its default ``eta_ov`` (``overlap_efficiency`` = 0.85)."""
    eta = PARAMS["eta_ov"].default
    return value(t_backward + exposed_dp(t_comm, 1).subs(sym.eta_ov, eta))


def sequential(t_backward=BACKWARD, t_comm=N_LAYERS * LAYER_COMM) -> float:
    """Nothing overlapped: ``T_backward`` plus the whole DP time (``exposed_dp`` without overlap)."""
    return value(t_backward + exposed_dp(t_comm, 0))


def extended_model_pipelined(t_backward=BACKWARD, t_comm=N_LAYERS * LAYER_COMM, n_layers=N_LAYERS) -> float:
    """The extended model's ``T_backward + T_DP,exposed`` with ``layer_overlap`` and ``overlap_comm`` on, at a
    replica step ``T_node`` whose backward share is ``t_backward`` (no recomputation: 3/2 of it), a DP time
    ``t_comm`` and ``n_layers`` layers per stage: the model's own definitions, substituted."""
    m = build_model(Variant(fidelity="extended"))
    q = {n: m.quantity(n).symbol for n in ("T_bwd", "T_dp_layer", "T_node", "T_dp", "L_tp")}
    exposed = m.definition("T_dp_exposed").subs(q["T_dp_layer"], m.definition("T_dp_layer"))
    t_bwd = m.definition("T_bwd")
    at = {q["T_node"]: sp.Rational(3, 2) * sp.nsimplify(t_backward), q["T_dp"]: sp.nsimplify(t_comm),
          q["L_tp"]: n_layers, sym.lov: 1, sym.ov: 1, sym.fov: 0, sym.z: 0, sym.rc: 0}
    t_bwd_value = t_bwd.subs(at)
    return value((t_bwd_value + exposed.subs(q["T_bwd"], t_bwd_value)).subs(at))


def entry() -> Entry:
    t_bwd = notation.symbol("T_bwd", positive=True)
    t_layer = notation.symbol("T_dp_layer", positive=True)
    n_l = PARAMS["L"].symbol
    t_b = sp.Symbol("t_b", positive=True)          # one layer's backward, as the notebook gives it
    term = LayerOverlapTime(t_bwd, t_layer, n_l)
    # the notebook's form: its T_backward is N_L layers of t_b, its T_first_comm and T_comm one layer's AllReduce
    book_form = n_l * t_b + t_layer + (n_l - 1) * sp.Max(0, t_layer - t_b)
    book_tex = (rf"\begin{{aligned}}" "\n"
                rf"T_{{{T}{{pipelined}}}} &= T_{{{T}{{backward}}}} + T_{{{T}{{first comm}}}} \\" "\n"
                rf"&\quad + (N_L - 1)\max\left(0, T_{{{T}{{comm}}}} - \frac{{T_{{{T}{{backward}}}}}}{{N_L}}\right), \\" "\n"
                rf"T_{{{T}{{first comm}}}} &= T_{{{T}{{comm}}}} = {notation.entry('T_dp_layer').latex}" "\n"
                rf"\end{{aligned}}")
    per_layer = (value(layer_overlap_exposed(BACKWARD, LAYER_COMM, N_LAYERS)) - LAYER_COMM) / (N_LAYERS - 1)
    total, seq = pipelined(), sequential()
    numbers = (
        Number("pipelined: 32 layers of 15 ms backward, 26.4 ms AllReduce each (the cell's with_overlap_ms)",
               859.8e-3, total, "s", 1e-9),
        Number("the same, as the text prints it", 860e-3, total, "s", 0.0005),
        Number("sequential, T_backward + 32 x 26.4 ms (the text)", 1325e-3, seq, "s", 0.0005),
        Number("exposed per layer, max(0, 26.4 ms - 15 ms) (the text)", 11e-3, per_layer, "s", 0.05),
        Number("the saving of the overlap, 1 - T_pipelined / T_sequential, in % (the text)", 35,
               100 * (1 - total / seq), "1", 0.015),
        Number("the extended model with layer_overlap at the notebook's inputs: T_backward + T_DP,exposed",
               859.8e-3, extended_model_pipelined(), "s", 1e-9),
    )
    fixed = fixed_share()
    note = ("The notebook writes T_comm for one layer's AllReduce in the pipelined form and, in the sequential "
            "form beside it (T_backward + T_comm = 480 ms + 32 x 26.4 ms), for the whole step's; its T_first_comm "
            "is one layer's AllReduce too. The check writes the notebook's T_backward as N_L layers of t_b. The "
            "schedule is the makespan of N_L equal jobs through two machines in series (Johnson 1954): "
            "t_b + T_layer + (N_L - 1) max(t_b, T_layer); the AllReduce left exposed is the last layer's, which "
            "the book calls the first layer's communication. The extended model prices it with the switch "
            "layer_overlap (under overlap_comm): T_layer is T_DP over the N_L layers of a stage and T_backward "
            "the backward share (m_train - 1)/m_train of the replica's step, so T_DP,exposed = T_pipelined - "
            "T_backward. Without the switch it hides mlsysim's fixed share eta_ov = 0.85 whatever the layers: at "
            f"the notebook's inputs {fixed * 1e3:.1f} ms (480 ms + 0.15 x 844.8 ms), against the schedule's "
            f"{total * 1e3:.1f} ms: each layer's AllReduce outlasts its layer's backward, so overlap hides at "
            "most the backward, 480 ms of the 844.8 ms.")
    return Entry("per-layer-overlap", "Per-layer overlap of the gradient AllReduce with the backward pass",
                 "CC, Overlap Limits: When Hiding Fails, notebook Overlap Budget for a 7B Transformer",
                 book_tex, (term, term.doit()), (book_form, LayerOverlapTime(n_l * t_b, t_layer, n_l)),
                 numbers, note)


def groups() -> Dict[str, List[Entry]]:
    return {"Overlap": [entry()]}


def inventory() -> List[Counted]:
    """Counted by the Collective Communication chapter's module, which points to ``per-layer-overlap``."""
    return []
