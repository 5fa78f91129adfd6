"""What :func:`mlsysim_sym.required` returns: :class:`Requirement`, the value of one input at which an output
reaches a target, with its closed form in the target :data:`TARGET`, and how it prints."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

import sympy as sp

from .. import notation
from ..display import html_text, quantity as show_quantity, wrap
from ..outputs import better, unit_of
from ..printing import latex
from ..symbols import by_argument

#: The target, as a symbol in the closed form: the value the output must reach, in the output's unit: ``y`` (the book's macro is a proposal,
#: ``\RequiredOutputTarget``).
TARGET = notation.symbol("y", real=True)


@dataclass(frozen=True)
class Requirement:
    """The value of ``solve_for`` at which ``output`` reaches ``target``.

    ``expression`` is the closed form of the root in the target ``TARGET`` (printed ``y``), the other
    parameters and the quantities that do not depend on ``solve_for``; ``value`` its value at the
    configuration (None when no value reaches the target). ``integer`` is, for a whole-number input,
    the valid integer nearest the root that meets the target. ``conditions`` are the relations that keep
    the regime of the answer; ``regimes`` counts the regimes the search passed through. ``limit`` is,
    when no value reaches the target, the output's limit on the side of the target (a closed form and
    its value), and ``reason`` says why in words; ``best`` the input's value there when it is a value the search
    found (``limit`` then holds the output at it), and ``notes`` what the answer rests on.
    """

    output: str
    quantity: str
    target: float
    solve_for: str
    symbol: sp.Symbol
    current: float
    current_output: float
    expression: Optional[sp.Basic]
    value: Optional[float]
    integer: Optional[int]
    achieved: Optional[float]
    conditions: Tuple[sp.Basic, ...]
    regimes: int
    limit: Optional[Tuple[sp.Basic, float]] = None
    reason: str = ""
    configuration: str = ""
    direction: int = 1                      # +1: the output must reach at least the target; -1: at most
    unit: str = "1"
    notes: Tuple[str, ...] = field(default_factory=tuple)
    meets_toward: int = 0                   # whole numbers: +1 if larger values meet the target, -1 smaller
    output_expr: Optional[sp.Basic] = None  # the output as a symbol or expression of model quantities
    toward: str = ""                        # with a limit: where the input goes, "oo" or "0"
    best: Optional[float] = None            # with a limit that is a value found: the input's value there

    @property
    def reachable(self) -> bool:
        return self.value is not None

    @property
    def form_too_long(self) -> bool:
        """Whether the closed form is too long for a terminal even as the LaTeX the command line prints below the
        text (over :data:`LATEX_FORM` characters): ``latex()`` and the JSON give it."""
        return self.expression is not None and len(plain(self.expression)) > LATEX_FORM

    def latex(self, book: bool = False) -> str:
        """``x = expression`` in the target ``y`` (LaTeX); without a closed form, ``x = value``; when nothing
        reaches the target, the output's limit. ``book=True`` prints the book's macros, the same equation: the
        target stays ``y`` (the book has no macro for "the target"), so expanding the macros gives the plain form."""
        x = latex(self.symbol, book=book)
        if self.expression is not None:
            return f"{x} = {latex(self.expression, book=book)}"
        if self.value is not None:
            v = sp.Integer(self.integer) if self.integer is not None else sp.Float(self.value, 6)
            return f"{x} = {latex(v, book=book)}"
        lhs, lim = self.limit_sides(book)
        return f"{lhs} = {latex(lim, book=book)}"

    def limit_sides(self, book: bool = False) -> Tuple[str, sp.Basic]:
        r"""Where no value reaches the target: the left side of :meth:`latex` (``\lim_{m \to \infty} ...`` or, the
        best value the valid inputs give, ``\min_{m} ...``) as LaTeX, and the limit (a number to the 6 digits
        the text prints)."""
        x = latex(self.symbol, book=book)
        out = latex(self.output_expr, book=book) if self.output_expr is not None else self.output
        lim = sp.Float(self.limit[0], 6) if self.limit[0].is_Number else self.limit[0]
        if not self.toward:     # the best value the valid inputs give (no limit): the least or the most
            return rf"\{'max' if self.direction > 0 else 'min'}_{{{x}}} {out}", lim
        end = {"oo": r"\infty"}.get(self.toward, self.toward)
        return rf"\lim_{{{x} \to {end}}} {out}", lim

    def to_dict(self) -> Dict[str, object]:
        return {"output": self.output, "quantity": self.quantity, "target": self.target,
                "solve_for": self.solve_for, "current": self.current, "current_output": self.current_output,
                "value": self.value, "integer": self.integer, "achieved": self.achieved,
                "expression": None if self.expression is None else str(self.expression),
                "latex": self.latex(), "conditions": [str(c) for c in self.conditions], "regimes": self.regimes,
                "limit": None if self.limit is None else {"expression": str(self.limit[0]), "value": self.limit[1]},
                "best": self.best, "reason": self.reason, "notes": list(self.notes),
                "configuration_line": self.configuration, "direction": "at least" if self.direction > 0 else "at most"}

    def __str__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        return html_text(self.text())

    def text(self, configuration: bool = True, latex_below: bool = False) -> str:
        """The answer for a terminal (``configuration``: with the configuration's line; ``latex_below``: the caller
        prints the closed form's LaTeX below, as the command line does where it is not :attr:`form_too_long`)."""
        p = by_argument()[self.solve_for]
        side = "at least" if self.direction > 0 else "at most"
        def out(v) -> str:      # a value of the output, with its unit
            return show_quantity(v, output_unit(self.output), 6)
        head = [f"{self.solve_for} ({p.text}) for {self.output} {side} {out(self.target)}"]
        own = better(self.quantity) if isinstance(self.quantity, str) else 0
        if own and own != self.direction and self.reachable:    # MFU at most a target: where it comes down to it
            head += wrap(f"({self.output} is better {'higher' if own > 0 else 'lower'}: this is where it comes "
                         f"{'down' if own > 0 else 'up'} to the target; --side '{'at least' if own > 0 else 'at most'}'"
                         f" keeps it {'at or above' if own > 0 else 'at or below'} it)", "  ")
        head += wrap(self.configuration, "  ") if configuration and self.configuration else []
        head += [f"  now: {self.solve_for} = {show_quantity(self.current, p.unit)}, "
                 f"{self.output} = {out(self.current_output)}"]
        if not self.reachable:
            lim, val = self.limit
            # a limit as the input goes to an end of its range, else the best value found (the reason says where)
            limit = wrap(f"limit: {out(val)}" + ("" if lim.is_Number else f" = {plain(lim)}"), "  ") \
                if self.toward or not lim.is_Number else []
            return "\n".join(head + wrap(f"no value reaches it: {self.reason}", "  ") + limit
                             + [line for n in self.notes for line in wrap(f"note: {n}", "  ")])
        lines = head + wrap(f"answer: {self.solve_for} = {show_quantity(self.value, p.unit)}"
                            + (f"; whole number {self.integer}" if self.integer is not None else "")
                            + (f" gives {self.output} = {out(self.achieved)}" if self.achieved is not None else ""),
                            "  ")
        # (an answer that keeps the configuration's value needs none: its note says why)
        form = "" if self.expression is None else plain(self.expression)
        # a closed form of more than a line and a half is in to_dict()'s expression and latex(), not on the screen
        lines += wrap(f"closed form (y = target): {p.text} = {form}" if len(form) <= SHOWN_FORM else
                      f"closed form (y = target): {len(form):,} characters, in LaTeX below" if latex_below else
                      f"closed form (y = target): {len(form):,} characters, not shown (to_dict()['expression'], "
                      "latex(), or --json)", "  ") \
            if self.expression is not None else [] if self.value == self.current else ["  (no closed form)"]
        if self.regimes > 1:
            lines.append(f"  (the root lies {self.regimes - 1} regime change(s) away from the configuration)")
        if self.conditions:
            lines += wrap("holds while " + ", ".join(plain(c) for c in self.conditions), "  ")
        lines += [line for n in self.notes for line in wrap(f"note: {n}", "  ")]
        return "\n".join(lines)


#: The longest closed form the text prints (a line and a half of a terminal); a longer one is counted, not shown.
SHOWN_FORM = 120
#: The longest closed form whose LaTeX the command line prints below the text (about ten lines of a terminal).
LATEX_FORM = 4 * SHOWN_FORM


def output_unit(output) -> str:
    """The unit of an output named by a result field, alias or quantity; ``"1"`` for an expression of them."""
    try:
        return unit_of(str(output))
    except KeyError:
        return "1"


#: an expression or condition for a terminal in the book's symbols (``N_PP``, ``χ_rc = 0``)
plain = notation.plain_expr


