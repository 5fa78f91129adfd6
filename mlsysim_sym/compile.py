"""Numbers from the expressions: lambdify once per model and output set.

The only numeric code in the package is what sympy prints from the model's
expressions. ``FloorDiv`` / ``CeilDiv`` print as exact integer division and
``Iverson`` as a 0/1 switch, so common-subexpression elimination cannot round a
``floor`` (the exactness argument is in :mod:`mlsysim_sym.terms.base`).

Backends:

* ``"math"``: one configuration of Python numbers; ``Piecewise`` runs as lazy
  ``if``/``else``. This is what :meth:`mlsysim_sym.DistributedModel.solve` uses.
* ``"numpy"``: arrays that broadcast against each other.
"""
from __future__ import annotations

from contextlib import contextmanager

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Dict, Mapping, Sequence, Tuple

import sympy as sp
from sympy.core.logic import fuzzy_and
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.pycode import PythonCodePrinter

from . import _shipped, wide
from ._cache import cached_per_arguments
from .model import StepTimeModel, Variant, build_model
from .outputs import EXTENDED_OUTPUTS, OUTPUTS
from .symbols import FLAGS, PARAMS
from .terms.base import Iverson


BACKENDS = ("math", "numpy")


# --------------------------------------------------------------------------------------------
# Functions of compiled code only (never in the model's expressions): a select, and the checks' predicates
# --------------------------------------------------------------------------------------------
class Where(sp.Function):
    """``a if c else b``, for compiled code only (never in the model's expressions).

    The model writes a switch that feeds a ``Piecewise`` condition as a power of an
    Iverson bracket or of a 0/1 flag (``x / N_DP^{[z >= 1]}``, ``min(...)^{lora}``);
    a float power costs ~15 ns per element in numpy, a select ~1. It is not a
    ``Piecewise``, so it can sit inside a condition.
    """

    nargs = 3

    def _branches(self, attr):
        return fuzzy_and(getattr(x, attr) for x in self.args[1:])

    def _eval_is_extended_real(self):
        return self._branches("is_extended_real")

    def _eval_is_positive(self):
        return self._branches("is_positive")

    def _eval_is_nonnegative(self):
        return self._branches("is_nonnegative")

    def _eval_is_integer(self):
        return self._branches("is_integer")

    def _numpycode(self, printer):
        c, a, b = (printer._print(x) for x in self.args)
        return f"pick({c}, lambda: {a}, lambda: {b})"

    def _pythoncode(self, printer):
        c, a, b = (printer._print(x) for x in self.args)
        return f"(({a}) if ({c}) else ({b}))"

    _lambdacode = _pythoncode


class NonFinite(sp.logic.boolalg.BooleanFunction):
    """True where a number is NaN or infinite (``not math.isfinite(x)``)."""

    nargs = 1

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return sp.true if x in (sp.nan, sp.oo, -sp.oo, sp.zoo) else sp.false
        return None

    def _numpycode(self, printer):
        return f"numpy.logical_not({printer._module_format('numpy.isfinite')}({printer._print(self.args[0])}))"

    def _pythoncode(self, printer):
        return f"(not {printer._module_format('math.isfinite')}({printer._print(self.args[0])}))"

    _lambdacode = _pythoncode


class Fractional(sp.logic.boolalg.BooleanFunction):
    """True where a number is not a whole number."""

    nargs = 1

    def _numpycode(self, printer):
        x = printer._print(self.args[0])
        return f"({printer._module_format('numpy.floor')}({x}) != ({x}))"

    def _pythoncode(self, printer):
        x = printer._print(self.args[0])
        return f"({x} != int({x}))"

    _lambdacode = _pythoncode


def numeric_form(expr: sp.Basic) -> sp.Basic:
    """Rewrite switch powers ``b**[c]``, ``b**-[c]``, ``b**flag`` as :class:`Where` (same values)."""
    def switch(e):
        ex = e.exp
        if isinstance(ex, Iverson):
            return Where(ex.args[0], e.base, 1)
        if isinstance(ex, sp.Mul) and ex.args[0] == -1 and len(ex.args) == 2 and isinstance(ex.args[1], Iverson):
            return Where(ex.args[1].args[0], 1 / e.base, 1)
        if ex in FLAGS:
            return Where(sp.Eq(ex, 1), e.base, 1)
        return e

    # unevaluated rebuild: sympy would otherwise re-check every comparison it rebuilds and give up on
    # ``1/FloorDiv(...)`` (it cannot know the floor is not 0)
    with sp.evaluate(False), _undecided_sign_on_error():
        return expr.replace(lambda e: isinstance(e, sp.Pow) and (
            isinstance(e.exp, Iverson) or e.exp in FLAGS or (isinstance(e.exp, sp.Mul) and e.exp.has(Iverson))),
            switch)


@contextmanager
def _undecided_sign_on_error():
    """While rebuilding unevaluated, sympy's sign heuristic ``exprtools._monotonic_sign`` may ask for the
    roots of ``N_EP - 1`` and raise ``PolynomialError`` (sympy 1.12-1.13: ``Poly`` of an unevaluated
    derivative) where it means "cannot tell"; it answers None ("cannot tell") instead, for this rebuild only.
    The extended model's step (a sum with the optimizer update) reaches that query; mlsysim's does not."""
    from sympy.core import exprtools

    original = exprtools._monotonic_sign

    def tolerant(e):
        try:
            return original(e)
        except sp.PolynomialError:
            return None

    exprtools._monotonic_sign = tolerant
    try:
        yield
    finally:
        exprtools._monotonic_sign = original


class _NumPyPrinter(NumPyPrinter):
    """NumPy printer for float64 arrays that broadcast.

    * ``And``/``Or``: sympy prints ``logical_and.reduce((a, b))``, which stacks its
      operands into one array and fails when their shapes differ (a grid sweep).
    * ``1/x``: sympy prints ``x**(-1.0)`` (for integer arrays), 4x slower on floats.
    * a two-branch ``Piecewise`` as ``where`` rather than ``select``.
    """

    def _print_Pow(self, expr, rational=False):
        if expr.exp == -1:
            return f"(1/{self.parenthesize(expr.base, 1000)})"
        return super()._print_Pow(expr, rational=rational)

    def _print_Piecewise(self, expr):
        *head, (last, cond) = expr.args
        if cond != sp.true:
            return super()._print_Piecewise(expr)
        out = self._print(last)
        for e, c in reversed(head):
            out = f"pick({self._print(c)}, lambda: {self._print(e)}, lambda: {out})"
        return out

    def _nest(self, fn, expr):
        args = [self._print(a) for a in expr.args]
        out = args[0]
        for a in args[1:]:
            out = f"{self._module_format('numpy.' + fn)}({out}, {a})"
        return out

    def _print_And(self, expr):
        return self._nest("logical_and", expr)

    def _print_Heaviside(self, expr):
        # the derivative of a Max or Min: sympy's printer has no rule and rewrites it to a Piecewise, simplifying
        # each one (minutes for a whole output's derivative)
        x, h0 = _heaviside_args(self, expr)
        return f"{self._module_format('numpy.heaviside')}({x}, {h0})"

    def _print_Or(self, expr):
        return self._nest("logical_or", expr)


def cse_real(exprs):
    """sympy's cse with real-valued replacement symbols.

    With assumption-free ``x0, x1, ...`` sympy can conclude that a sum of them is not
    real and then refuses to rebuild a comparison of it (observed with sympy 1.14).
    """
    return sp.cse(exprs, symbols=sp.numbered_symbols("x", real=True))


def pick(condition, a, b):
    """``a()`` where ``condition`` holds, else ``b()``: the numpy code's select of a ``Piecewise`` or
    :class:`Where`. A condition of one value (a switch or a factor no sweep varies) evaluates only the side it
    takes; an array of them selects element by element, both sides evaluated (as ``numpy.where``)."""
    if getattr(condition, "ndim", 0) == 0:
        return a() if condition else b()
    import numpy
    return numpy.where(condition, a(), b())


def lambdify_numeric(args, exprs, backend: str, cse=cse_real):
    """The package's one way from expressions to code: lambdify with :func:`cse_real` (or a given
    ``cse``) and the printers above. ``exprs`` should already be in :func:`numeric_form`."""
    modules = [{"pick": pick}, "numpy"] if backend == "numpy" else backend
    return sp.lambdify(args, list(exprs), modules=modules, cse=cse, docstring_limit=0,
                       printer=numeric_printer(backend))


def lambdify(args, expr: sp.Basic, backend: str = "numpy"):
    """``sympy.lambdify(args, expr)`` through the package's printers: a function of ``args`` (symbols) giving the
    value of ``expr`` (``backend`` ``"numpy"``, arrays broadcast, or ``"math"``, plain numbers).

    Differentiating a whole output (``sympy.diff(m["mfu"], sym.eta)``) gives a ``Heaviside`` for every ``Max``
    on the way; sympy's own printer rewrites each one to a ``Piecewise`` and simplifies it, which takes minutes,
    where this takes a fraction of a second. The numbers are those of the expression: the guide's
    "Derivatives" section checks one against a finite difference."""
    if not isinstance(expr, sp.Basic):
        raise TypeError(f"expr must be a sympy expression (a model quantity or its derivative), got "
                        f"{type(expr).__name__}")
    if backend not in ("numpy", "math"):
        raise ValueError(f"backend must be 'numpy' or 'math', got {backend!r}")
    f = lambdify_numeric(list(args), [numeric_form(expr)], backend)
    return lambda *values: f(*values)[0]


class _PythonPrinter(PythonCodePrinter):
    """Python printer for one configuration of plain numbers.

    * ``Max``/``Min`` as Python's ``max``/``min`` with numbers first, as mlsysim writes
      ``max(1, batch // dp)``: with a NaN argument the constant wins, as it does there.
    * ``ITE(a, b, c)`` as ``b if a else c``, lazily, with its arguments as they are (sympy
      rewrites it, and every ``Max`` inside it, to ``Piecewise``).
    """

    def _minmax(self, fn, expr):
        args = sorted(expr.args, key=lambda a: not a.is_Number)
        return f"{fn}({', '.join(self._print(a) for a in args)})"

    def _print_Max(self, expr):
        return self._minmax("max", expr)

    def _print_Min(self, expr):
        return self._minmax("min", expr)

    def _print_ITE(self, expr):
        a, b, c = (self._print(x) for x in expr.args)
        return f"(({b}) if ({a}) else ({c}))"

    def _print_Heaviside(self, expr):
        x, h0 = _heaviside_args(self, expr)
        return f"(lambda x: 1.0 if x > 0 else ({h0} if x == 0 else (0.0 if x < 0 else x)))({x})"


def _heaviside_args(printer, expr):
    """The printed argument of a ``Heaviside`` and its value at 0 (sympy's default one half)."""
    h0 = expr.args[1] if len(expr.args) > 1 else sp.S.Half
    return printer._print(expr.args[0]), printer._print(sp.Float(h0))


_SETTINGS = {"fully_qualified_modules": False, "inline": True, "allow_unknown_functions": True, "user_functions": {}}


def numeric_printer(backend):
    """The printer of :func:`lambdify_numeric` for ``backend``."""
    return (_NumPyPrinter if backend == "numpy" else _PythonPrinter)(dict(_SETTINGS))


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
        if self.backend == "math":      # an output not finite in float64: again, wide (mlsysim_sym.wide)
            return dict(zip(self.names, wide.evaluate(self.fn, vector)))
        return dict(zip(self.names, self.fn(*vector)))


@lru_cache(maxsize=None)
def solve_quantities(variant: Variant) -> Tuple[str, ...]:
    """The quantities ``solve()`` computes for a variant: its result fields' (:data:`OUTPUTS`, in order), the
    step's terms (:attr:`~mlsysim_sym.model.StepTimeModel.step_terms`) not among them, and the extended model's
    own outputs that the variant has."""
    m = build_model(variant)
    names = list(OUTPUTS.values())
    names += [n for n in m.step_terms if n not in names]
    names += [n for n in m.memory_terms if n not in names]
    names += [n for n in EXTENDED_OUTPUTS.values() if n in m and n not in names]
    return tuple(names)


# ``names`` may be any sequence (a list too): the cache keys on it as a tuple
@cached_per_arguments(lambda variant, names, backend: (variant, tuple(names), backend))
def compile_quantities(variant: Variant, names: Tuple[str, ...], backend: str = "math") -> Compiled:
    """Lambdify the closed forms of ``names`` of ``build_model(variant)`` (cached).

    The scalar code of ``solve()`` is also shipped pre-generated in
    ``mlsysim_sym/_generated`` (``tools/generate_code.py``, :mod:`mlsysim_sym._shipped`);
    it is used when its fingerprint equals the fingerprint of the package sources that
    define the expressions, which saves the ~0.5 s of building and lambdifying in a new process.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "math":
        shipped = _shipped.load(variant, tuple(names))
        if shipped is not None:
            args, fn = shipped
            return Compiled(variant, tuple(names), tuple(PARAMS[n].symbol for n in args), fn, backend)
    return _lambdify(variant, tuple(names), backend)


def _lambdify(variant: Variant, names: Tuple[str, ...], backend: str) -> Compiled:
    model: StepTimeModel = build_model(variant)
    exprs = [numeric_form(model.closed_form(n)) for n in names]
    free = set().union(*(e.free_symbols for e in exprs))
    args = tuple(p for p in model.parameters if p in free)
    fn = lambdify_numeric(args, exprs, backend)
    return Compiled(variant, tuple(names), args, fn, backend)


def evaluate(variant: Variant, names: Sequence[str], values: Mapping[sp.Symbol, object],
             backend: str = "math") -> Dict[str, object]:
    """One-shot helper: compile (cached) and evaluate ``names`` at ``values``."""
    return compile_quantities(variant, tuple(names), backend).evaluate(values)


def generated_source(variant: Variant, names: Tuple[str, ...], backend: str = "math") -> str:
    """The text of a pre-generated module for ``(variant, names)`` (see :mod:`mlsysim_sym._shipped`)."""
    c = _lambdify(variant, tuple(names), backend)
    return _shipped.source(variant, names, tuple(a.name for a in c.args), c.fn)
