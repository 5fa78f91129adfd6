"""The decisions of a model variant: every ``Max`` / ``Min`` / ``Piecewise`` / Iverson bracket of its definitions.

At one operating point the step-time model is a *smooth* function once every
decision takes its active side (:mod:`mlsysim_sym.branches`). Here the decisions of
the *definitions* of a variant (``T_node = Max(T_compute, T_memory) + T_overhead``,
the DP all-reduce placement, memory fits or spills, ...) get a name (the quantity
that holds them) and a readable label ("compute-bound"), and their data (the sides
of a ``Max``, the two sides of every relation) are evaluated together from compiled
code, for one point or for arrays of points.

A **regime** is the set of sides the decisions take at a point.

Examples
--------
>>> from mlsysim_sym.decisions import model_decisions
>>> md = model_decisions()
>>> [d.quantity for d in md.decisions][:3]
['lb', 'O_hw', 'f_train']
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import sympy as sp

from .compile import lambdify_numeric, numeric_form
from ._cache import cached_per_arguments
from .model import StepTimeModel, Variant, build_model, closed_form
from .branches import COMPARE, DECISIONS, KINK_RTOL, ORDERED, Tie, atoms_of, extreme, first_true, near, truth
from .terms.base import Iverson, labels_of


# --------------------------------------------------------------------------------------
# The decisions of a model variant, named after the quantity that holds them
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Decision:
    """One decision of a quantity's definition.

    ``data`` are the expressions whose values decide it: the arguments of a
    ``Max``/``Min``, or the two sides of every relation of its conditions.
    ``moves_with`` are the parameters those depend on; ``branch_params`` the
    parameters of each side (all expanded down to parameters).
    """

    quantity: str
    node: sp.Basic
    atoms: Tuple[sp.Basic, ...]
    data: Tuple[sp.Basic, ...]
    moves_with: FrozenSet[sp.Symbol]
    branch_params: Tuple[FrozenSet[sp.Symbol], ...]

    def choose(self, data: Sequence[object]):
        """The active side from this decision's data (scalars or arrays)."""
        scalar = not any(isinstance(x, np.ndarray) for x in data)
        if isinstance(self.node, (sp.Max, sp.Min)):
            if scalar:
                best = (max if isinstance(self.node, sp.Max) else min)(data)
                return list(data).index(best)
            return extreme(data, isinstance(self.node, sp.Max))
        at = self.atom_truth(data)
        if scalar:
            if isinstance(self.node, Iverson):
                return int(bool(truth(self.node.args[0], at)))
            conds = [c for _, c in self.node.args]
            return next((i for i, c in enumerate(conds) if truth(c, at)), len(conds) - 1)
        if isinstance(self.node, Iverson):
            return np.where(truth(self.node.args[0], at), 1, 0)
        conds = [c for _, c in self.node.args]
        return first_true([truth(c, at) for c in conds], len(conds) - 1)

    def atom_truth(self, data: Sequence[object]) -> Dict[sp.Basic, object]:
        return {a: COMPARE[type(a)](data[2 * i], data[2 * i + 1]) for i, a in enumerate(self.atoms)}

    def ties(self, data: Sequence[object], choice: int, rtol: float = KINK_RTOL) -> Tuple[Tie, ...]:
        """The ties of this decision at a scalar point."""
        if isinstance(self.node, (sp.Max, sp.Min)):
            tied = tuple(i for i, v in enumerate(data) if near(v, data[choice], rtol))
            return (Tie(self.node, None, tied),) if len(tied) > 1 else ()
        return tuple(Tie(self.node, a) for i, a in enumerate(self.atoms)
                     if isinstance(a, ORDERED) and near(data[2 * i], data[2 * i + 1], rtol))

    def choose_with(self, data: Sequence[object], atom: sp.Basic, value: bool) -> int:
        """The active side when the relation ``atom`` is forced to ``value`` (one side of a tie)."""
        at = self.atom_truth(data)
        at[atom] = value
        if isinstance(self.node, Iverson):
            return int(bool(truth(self.node.args[0], at)))
        conds = [c for _, c in self.node.args]
        return int(first_true([truth(c, at) for c in conds], len(conds) - 1))


class ModelDecisions:
    """Every decision of the definitions of one model variant, evaluated from compiled code.

    Get one with :func:`model_decisions` (cached per variant). Decisions are
    listed in model order; ``data(values)`` returns their data for one point
    (``backend="math"``) or for arrays of points (``"numpy"``).
    """

    def __init__(self, variant: Variant):
        self.variant = variant
        self.model: StepTimeModel = build_model(variant)
        m = self.model
        self.symbol_of = {n: m.quantity(n).symbol for n in m}
        self.name_of = {s: n for n, s in self.symbol_of.items()}
        self.expansion = {s: m[n] for n, s in self.symbol_of.items()}
        decisions: List[Decision] = []
        for n in m:
            seen = []
            for node in sp.preorder_traversal(m.definition(n)):
                if isinstance(node, DECISIONS) and node not in seen:
                    seen.append(node)
                    decisions.append(self._decision(n, node))
        self.decisions: Tuple[Decision, ...] = tuple(decisions)
        self.of_quantity: Dict[str, Tuple[int, ...]] = {
            n: tuple(i for i, d in enumerate(self.decisions) if d.quantity == n) for n in m}
        offsets, k = [], 0
        for d in self.decisions:
            offsets.append(k)
            k += len(d.data)
        self._slices = tuple(slice(o, o + len(d.data)) for o, d in zip(offsets, self.decisions))
        self.parameters: FrozenSet[sp.Symbol] = frozenset(m.parameters)
        self._closure: Dict[str, Tuple[str, ...]] = {}

    def _params(self, e) -> FrozenSet[sp.Symbol]:
        out = set()
        for s in e.free_symbols:
            out |= self.expansion[s].free_symbols if s in self.expansion else {s}
        return frozenset(out)

    def _decision(self, quantity, node) -> Decision:
        if isinstance(node, (sp.Max, sp.Min)):
            atoms, data, branches = (), tuple(node.args), tuple(node.args)
        else:
            conds = [node.args[0]] if isinstance(node, Iverson) else [c for _, c in node.args]
            atoms = []
            for c in conds:
                atoms.extend(a for a in atoms_of(c) if a not in atoms)
            atoms = tuple(atoms)
            data = tuple(x for a in atoms for x in (a.lhs, a.rhs))
            branches = (sp.S.Zero, sp.S.One) if isinstance(node, Iverson) else tuple(b for b, _ in node.args)
        moves = frozenset().union(*(self._params(x) for x in data)) if data else frozenset()
        return Decision(quantity, node, atoms, data, moves, tuple(self._params(b) for b in branches))

    def closure(self, name: str) -> Tuple[str, ...]:
        """The quantities ``name`` depends on (itself included), in model order."""
        if name in self._closure:
            return self._closure[name]
        need, todo = set(), [name]
        while todo:
            n = todo.pop()
            if n in need:
                continue
            need.add(n)
            todo.extend(self.name_of[s] for s in self.model.definition(n).free_symbols if s in self.name_of)
        out = self._closure[name] = tuple(n for n in self.model if n in need)
        return out

    def decisions_of(self, names) -> Tuple[int, ...]:
        """Indices of the decisions in the closure of a quantity (or of several)."""
        names = (names,) if isinstance(names, str) else names
        need = set().union(*(self.closure(n) for n in names))
        return tuple(i for n in self.model if n in need for i in self.of_quantity[n])

    @lru_cache(maxsize=None)
    def _compiled(self, backend: str):
        closed = self.model.closed_expansion
        exprs = [numeric_form(closed_form(x.xreplace(closed))) for d in self.decisions for x in d.data]
        args = tuple(p for p in self.model.parameters if any(p in e.free_symbols for e in exprs))
        fn = lambdify_numeric(args, exprs, backend)
        return args, fn

    def data(self, values: Mapping[sp.Symbol, object], backend: str = "math") -> Tuple[Sequence[object], ...]:
        """Per decision, the values of its ``data`` at ``values`` (numbers, or arrays with ``"numpy"``)."""
        args, fn = self._compiled(backend)
        try:
            flat = fn(*(values[a] for a in args))
        except KeyError as exc:
            raise KeyError(f"no value given for parameter {exc.args[0]}") from None
        return tuple(flat[s] for s in self._slices)

    def choices(self, data, indices: Optional[Sequence[int]] = None) -> Dict[int, object]:
        """``decision index -> active side`` for the decisions ``indices`` (default: all)."""
        idx = range(len(self.decisions)) if indices is None else indices
        return {i: self.decisions[i].choose(data[i]) for i in idx}


@cached_per_arguments()
def model_decisions(variant: Variant = Variant()) -> ModelDecisions:
    """The :class:`ModelDecisions` of one variant (built once)."""
    return ModelDecisions(variant)


# --------------------------------------------------------------------------------------
# Labels: the words attached to each decision where it was built (mlsysim_sym.terms.base.labelled)
# --------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _idle(md: ModelDecisions):
    """``(decision indices, compiled conditions)``: the condition under which each labelled decision does not act
    (``N_TP = 1``: no TP), in parameters."""
    closed = md.model.closed_expansion
    which, exprs = [], []
    for i, d in enumerate(md.decisions):
        words = labels_of(d.node)
        if words is not None and words.idle is not None:
            which.append(i)
            exprs.append(numeric_form(closed_form(sp.sympify(words.idle[0], strict=True).xreplace(closed))))
    args = tuple(p for p in md.model.parameters if any(p in e.free_symbols for e in exprs))
    return tuple(which), args, (lambdify_numeric(args, exprs, "math", cse=False) if exprs else None)


def labels(md: ModelDecisions, choices: Mapping[int, object], values: Mapping[sp.Symbol, object]) -> Dict[int, str]:
    """A readable name for the active side of each decision of ``choices`` (``index -> side``) at the point
    ``values``: the words attached where the decision was built, or, where it does not act at the point, what
    its builder said then (``"no TP (tp = 1)"``); decisions without words get ``None``."""
    which, args, fn = _idle(md)
    idle = dict(zip(which, fn(*(values[a] for a in args)))) if fn is not None else {}
    out: Dict[int, Optional[str]] = {}
    for i, choice in choices.items():
        d = md.decisions[i]
        words = labels_of(d.node)
        if words is None:
            out[i] = None
        elif idle.get(i):
            out[i] = words.idle[1]
        else:
            out[i] = words.side(d.node, int(choice))
    return out
