"""Requirements in closed form: the inverse questions of the textbook, answered by :func:`mlsysim_sym.required`.

Each example states a question, the call, the closed form of the answer (in the target ``y`` and the
quantities that do not depend on the input), its value, the regime it holds in, and the check: the
answer plugged back into ``solve()`` (a whole-number answer meets the target, the next value misses it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Tuple

import sympy as sp

from mlsysim_sym import build_model, required
from mlsysim_sym.display import quantity as shown
from mlsysim_sym.printing import LINE, broken_chain, latex, value_latex, visible_length
from mlsysim_sym.requirements import Requirement
from mlsysim_sym.symbols import by_argument

from .common import EXAMPLES

LLAMA = EXAMPLES[0]


@dataclass(frozen=True)
class Question:
    key: str
    title: str
    text: str
    output: object
    target: float
    solve_for: str
    extra: Tuple[Tuple[str, object], ...] = ()
    side: str = "auto"
    target_text: str = ""

    @property
    def kwargs(self) -> Dict[str, object]:
        return dict(LLAMA.solve_kwargs, **dict(self.extra))

    def call(self) -> str:
        pre = ""
        out = repr(self.output)
        if not isinstance(self.output, str):
            names = sorted(str(s) for s in self.output.free_symbols)
            pre = (f"m = build_model()\n{', '.join(names)} = (m.quantity(n).symbol for n in "
                   f"{tuple(names)!r})\n")
            out = str(self.output)
        side = "" if self.side == "auto" else f", side={self.side!r}"
        kw = "**kw" if not self.extra else \
            "**dict(kw, " + ", ".join(f"{k}={v!r}" for k, v in self.extra) + ")"
        return (f'{pre}required({out}, {self.target_text or repr(self.target)}, {self.solve_for!r}, '
                f'"{LLAMA.model}", "{LLAMA.fleet}"{side}, {kw})')


def _quantities(*names):
    m = build_model()
    return [m.quantity(n).symbol for n in names]


T_DP, T_COMPUTE = _quantities("T_dp", "T_compute")

QUESTIONS = (
    Question("microbatches", "Microbatches for a bubble under 5 %",
             "How many microbatches keep the pipeline bubble under 5 % of the step? The bubble's formula says 57; "
             "but a batch of 256 over 8 replicas gives each 32 samples a step, and a framework cuts them into at "
             "most 32 equal microbatches (the schedules a search runs): no runnable count reaches 5 %, and the "
             "answer gives the best one.",
             "bubble_fraction", 0.05, "microbatch_count"),
    Question("microbatches-512", "The same with a batch of 512",
             "With 512 samples (64 per replica and step), 57 microbatches do not split them evenly either; 64 do.",
             "bubble_fraction", 0.05, "microbatch_count", (("batch_size", 512),)),
    Question("bandwidth", "Fabric bandwidth for a scaling efficiency of 60 %",
             "What fabric bandwidth per accelerator gives a useful-compute fraction (mlsysim's scaling_efficiency) "
             "of 0.6?", "scaling_efficiency", 0.6, "fabric_bandwidth"),
    Question("bandwidth-limit", "No bandwidth gives 80 %",
             "And 0.8? No bandwidth is enough: the answer is the limit as the bandwidth grows.",
             "scaling_efficiency", 0.8, "fabric_bandwidth"),
    Question("overlap-batch", "The global batch at which the DP all-reduce fits in the backward pass",
             "Overlap can hide the gradient all-reduce only while it takes no longer than the backward pass, "
             "two thirds of the compute time. From which global batch does it fit?",
             T_DP / T_COMPUTE, 2 / 3, "batch_size", (("overlap_comm", True),), "at most", "2 / 3"),
)

#: The largest model per accelerator: parameters at which the training state fills the accelerator's memory.
ZERO_STAGES = (0, 1, 2, 3)


def compact(expr: sp.Basic) -> sp.Basic:
    """The shortest of the closed form and its common factors pulled out."""
    forms = [expr]
    if sp.count_ops(expr) < 400:
        forms.append(sp.factor_terms(expr))
    return min(forms, key=lambda e: (sp.count_ops(e), len(str(e))))


def solution(lhs, expr: sp.Basic) -> str:
    """``lhs = expr`` within a text column: a fraction too wide for one line is written
    ``lhs = num / den`` with its numerator and denominator on lines of their own (sums broken at terms)."""
    expr = compact(expr)
    tex = broken_chain([lhs, expr])
    if all(visible_length(line) <= LINE for line in tex.splitlines()):
        return tex
    num, den = sp.fraction(sp.factor_terms(sp.together(expr)))
    if den == 1:
        return tex
    name = lhs if isinstance(lhs, str) else latex(lhs)
    rows = [rf"{name} &= \frac{{\text{{num}}}}{{\text{{den}}}}"]
    for label, part in (("num", num), ("den", den)):
        block = broken_chain([rf"\text{{{label}}}", sp.expand(part)], width=LINE - 8)
        if block.startswith("\\begin{aligned}"):
            inner = block.splitlines()[1:-1]
            inner = [line.rstrip(" \\") for line in inner]
            if inner[0].startswith("&\\text"):           # the label alone on its first line
                inner = [inner[0][1:] + " " + inner[1]] + inner[2:]
            rows += inner
        else:
            rows.append(block.replace(" = ", " &= ", 1))
    return "\\begin{aligned}\n" + " \\\\\n".join(rows) + "\n\\end{aligned}"


def _answer_rows(r: Requirement) -> List[List[str]]:
    p = by_argument()[r.solve_for]
    rows = [["now", shown(r.current, p.unit), f"{r.current_output:.4g}"]]
    if r.reachable:
        rows.append(["root of the closed form", shown(r.value, p.unit), f"{r.target:.4g}"])
        if r.integer is not None:
            rows.append(["whole number, through solve()", str(r.integer), f"{r.achieved:.4g}"])
    return rows


def context() -> Dict[str, object]:
    answers = []
    for q in QUESTIONS:
        r = required(q.output, q.target, q.solve_for, LLAMA.model, LLAMA.fleet, side=q.side, **q.kwargs)
        symbol = by_argument()[q.solve_for].symbol
        if r.reachable:
            display = solution(symbol, r.expression)
        else:                       # a limit at an end of the input's range, or the best value a valid input gives
            display = solution(*r.limit_sides())
        answers.append({"q": q, "r": r, "display": display, "rows": _answer_rows(r),
                        "conditions": [latex(c) for c in r.conditions]})
    capacity = None
    zero = []
    for z in ZERO_STAGES:
        r = required("memory", 80e9, "parameters", LLAMA.model, LLAMA.fleet, side="at most",
                     **dict(LLAMA.solve_kwargs, zero_stage=z))
        capacity = capacity or r
        zero.append({"z": z, "display": solution(r.symbol, r.expression), "value": r.value,
                     "text": f"{r.value / 1e9:.1f} billion", "achieved": value_latex(r.achieved, "B")})
    return {"example": LLAMA, "answers": answers, "zero": zero}
