"""What several documents share: the worked examples, quantity rows, decision text."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Tuple

import sympy as sp

from mlsysim_sym import notation
from mlsysim_sym.model import build_model
from mlsysim_sym.printing import broken_chain, chain, definition_parts, equation, latex, term_latex
from mlsysim_sym.operating_point import tidy
from mlsysim_sym.simplify import DECOMPOSITION, expand_keeping, floor_depth, shorten_deep, size

RENDER_COMMAND = "python -m derivations"


@dataclass(frozen=True)
class Example:
    """One ``DistributedModel().solve(model, fleet, **kwargs)`` configuration."""

    key: str
    title: str
    model: str
    fleet: str
    kwargs: Tuple[Tuple[str, object], ...]

    @property
    def solve_kwargs(self) -> Dict[str, object]:
        return dict(self.kwargs)

    def call(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs)
        return f'DistributedModel().solve("{self.model}", "{self.fleet}", {args})'


EXAMPLES: Tuple[Example, ...] = (
    Example("llama", "Llama-3.1-70B on the 256-GPU research cluster", "Llama3_70B", "Research_256",
            (("batch_size", 256), ("tp_size", 8), ("pp_size", 4), ("microbatch_count", 8))),
    Example("mixtral", "Mixtral 8x7B with expert parallelism on a 1024-GPU cluster", "Mixtral_8x7B",
            "Training_1K",
            (("batch_size", 1024), ("tp_size", 2), ("ep_size", 4), ("precision", "bf16"), ("zero_stage", 1),
             ("overlap_comm", True), ("gradient_accumulation_steps", 4))),
    Example("gpt3", "GPT-3 on 1024 A100s: interleaved pipeline, FP8, recomputation, LoRA", "GPT3",
            "Training_1K_A100",
            (("batch_size", 512), ("tp_size", 16), ("pp_size", 8), ("microbatch_count", 4), ("v_stages", 2),
             ("precision", "fp8"), ("activation_recomputation", True), ("is_lora", True))),
)


def quantity_tex(name: str, book: bool = False) -> str:
    """The symbol of a quantity or parameter (LaTeX or book macro)."""
    return notation.entry(name).tex(book)


def definition_chain(model, name: str, book: bool = False, alone: bool = False) -> str:
    """``q = definition``; a definition that is one cost term also shows its formula. ``alone``: the
    chain is a display of its own (not a row of an ``aligned`` block), broken over lines to fit a text
    column (:func:`mlsysim_sym.printing.broken_chain`)."""
    parts = definition_parts(model, name)
    return broken_chain(parts, book=book) if alone else chain(parts, book=book)


def small_closed_form(model, name: str, limit: int = 14):
    """The closed form in parameters (and the integer decomposition) when it is short, has at most one
    level of floor division and says more than the definition; else None."""
    d = model.definition(name)
    keep = () if name in DECOMPOSITION else DECOMPOSITION
    raw = expand_keeping(model, name, keep)
    if size(raw)[0] > 4 * limit:
        return None
    c = shorten_deep(raw)
    if c == d or size(c)[0] > limit or floor_depth(c) > 1:
        return None
    return c


def decision_lines(expr) -> List[str]:
    r"""For each two-argument ``Max``/``Min`` of ``expr``: which argument is active when."""
    out = []
    for node in sp.preorder_traversal(expr):
        if isinstance(node, (sp.Max, sp.Min)) and len(node.args) == 2:
            a, b = node.args
            rel = sp.GreaterThan if isinstance(node, sp.Max) else sp.LessThan
            for x, y in ((a, b), (b, a)):
                line = rf"{latex(node)} = {latex(x)} \quad \text{{when }} {latex(tidy(rel(x, y)))}"
                if line not in out:
                    out.append(line)
    return out


def term_chain(term: notation.Term, book: bool = False) -> str:
    """A cost term's definition (:func:`mlsysim_sym.printing.term_latex`)."""
    return term_latex(term, book=book)


def transformer_model():
    return build_model()


__all__ = ["EXAMPLES", "Example", "RENDER_COMMAND", "decision_lines", "definition_chain", "equation",
           "quantity_tex", "small_closed_form", "term_chain", "transformer_model"]
