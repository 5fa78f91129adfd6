"""Numbers from the expressions: lambdify once per model and output set.

The only numeric code in the package is what sympy prints from the model's
expressions. ``FloorDiv`` / ``CeilDiv`` print as exact integer division and
``Iverson`` as a 0/1 switch, so common-subexpression elimination cannot round a
``floor`` (sympy-notes §3).

Backends:

* ``"math"``: one configuration of Python numbers; ``Piecewise`` runs as lazy
  ``if``/``else``. This is what :meth:`mlsysim_sym.DistributedModel.solve` uses.
* ``"numpy"``: arrays that broadcast against each other.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Dict, Mapping, Sequence, Tuple

import sympy as sp

from .model import StepTimeModel, Variant, build_model

BACKENDS = ("math", "numpy")


@dataclass(frozen=True)
class Compiled:
    """A compiled set of named quantities of one model variant.

    Call it with one value per parameter, in the order of ``args``;
    it returns a tuple of values in the order of ``names``.
    """

    variant: Variant
    names: Tuple[str, ...]
    args: Tuple[sp.Symbol, ...]
    fn: Callable
    backend: str

    def __call__(self, *values):
        return self.fn(*values)

    def evaluate(self, values: Mapping[sp.Symbol, object]) -> Dict[str, object]:
        """Evaluate from a ``Symbol -> value`` mapping; names the first missing parameter."""
        try:
            vector = [values[a] for a in self.args]
        except KeyError as exc:
            raise KeyError(f"no value given for parameter {exc.args[0]}") from None
        return dict(zip(self.names, self.fn(*vector)))


@lru_cache(maxsize=None)
def compile_quantities(variant: Variant, names: Tuple[str, ...], backend: str = "math") -> Compiled:
    """Lambdify the closed forms of ``names`` of ``build_model(variant)`` (cached)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    model: StepTimeModel = build_model(variant)
    exprs = [model.closed_form(n) for n in names]
    free = set().union(*(e.free_symbols for e in exprs))
    args = tuple(p for p in model.parameters if p in free)
    fn = sp.lambdify(args, exprs, modules=backend, cse=True, docstring_limit=0)
    return Compiled(variant, tuple(names), args, fn, backend)


def compiled_source(c: Compiled) -> str:
    """The generated Python source of a compiled function (for inspection)."""
    import inspect

    return inspect.getsource(c.fn)


def evaluate(variant: Variant, names: Sequence[str], values: Mapping[sp.Symbol, object],
             backend: str = "math") -> Dict[str, object]:
    """One-shot helper: compile (cached) and evaluate ``names`` at ``values``."""
    return compile_quantities(variant, tuple(names), backend).evaluate(values)


def model_for(variant: Variant) -> StepTimeModel:
    return build_model(variant)
