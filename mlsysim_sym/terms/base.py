"""Two building blocks shared by every cost family.

* :class:`NamedTerm`: a headline formula (ring all-reduce, bubble, ...) that
  prints under its own name, evaluates through :meth:`~NamedTerm.doit`, and is
  differentiable through ``fdiff`` — one ``formula`` serves all three.
* :class:`FloorDiv` / :class:`CeilDiv`: exact integer division. mlsysim computes
  ``N // G``, ``B // dp``, ``ceil(L / pp)`` on integers; written as
  ``floor(a/b)`` a CSE pass turns them into ``floor(a * (1/b))`` and a rounded
  ``1.9999999999999998`` halves the local batch (``tests/test_terms.py`` has the case). These stay
  atomic: Python ``//`` in scalar code, and in numpy ``floor(a / b)`` with one
  correctly rounded division, which is exact for integers ``0 <= a < 2**53``,
  ``b >= 1``: a non-integer quotient ``q`` lies at least ``1/b`` below the next
  integer, while the rounding error is at most ``q * 2**-53 < 1/b``.
  (``numpy.floor_divide`` on floats is exact too, but 6x slower.)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Tuple, Union

import sympy as sp

from .. import notation

#: Every cost-term class, by name: :class:`NamedTerm` registers its subclasses as they are defined, and
#: ``mlsysim_sym.terms`` imports every family, so importing the package's terms fills it.
TERM_CLASSES: Dict[str, type] = {}


class NamedTerm(sp.Function):
    """A named formula that stays unevaluated until ``doit()``.

    Subclasses set ``nargs`` and ``formula``; the LaTeX of the name is the class's
    entry in :data:`mlsysim_sym.notation.TERMS`. Each subclass registers itself in :data:`TERM_CLASSES`.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        TERM_CLASSES[cls.__name__] = cls

    @classmethod
    def eval(cls, *args):
        return None

    @staticmethod
    def formula(*args):  # pragma: no cover - abstract
        raise NotImplementedError

    def doit(self, deep=True, **hints):
        args = [a.doit(deep=deep, **hints) for a in self.args] if deep else list(self.args)
        return self.formula(*args)

    def _eval_evalf(self, prec):
        # numbers in, a number out: sympy.N(), float() and comparisons read a term of numbers as its formula's
        # value (a Max or Piecewise of it compares, so ``subs(values)`` of a whole output evaluates)
        if all(a.is_number for a in self.args):
            return self.formula(*self.args).evalf(prec)
        return None

    def fdiff(self, argindex=1):
        dummies = [sp.Dummy(f"a{i}") for i in range(len(self.args))]
        d = sp.diff(self.formula(*dummies), dummies[argindex - 1])
        return d.xreplace(dict(zip(dummies, self.args)))

    def _latex(self, printer, exp=None):
        name = notation.term(type(self).__name__).tex(notation.book_mode(printer))
        body = r"%s\left(%s\right)" % (name, ", ".join(printer._print(a) for a in self.args))
        return body if exp is None else r"\left(%s\right)^{%s}" % (body, exp)

    def _code(self, printer):
        # Parenthesized: the formula is a sum, and ``3*T(...)`` must not print as ``3*a + b``.
        return "(%s)" % printer._print(self.formula(*self.args))

    # every code printer lambdify can pick (each looks up its own method name)
    _pythoncode = _lambdacode = _mpmathcode = _numpycode = _scipycode = _cupycode = _jaxcode = _code


class _IntDiv(sp.Function):
    nargs = 2
    is_integer = True

    def fdiff(self, argindex=1):
        # Piecewise constant: zero wherever the derivative exists.
        return sp.S.Zero

    def _eval_is_nonnegative(self):
        a, b = self.args
        if a.is_nonnegative and b.is_positive:
            return True
        return None

    def _args_code(self, printer):
        return tuple(printer._print(a) for a in self.args)


class FloorDiv(_IntDiv):
    r"""``floor(a / b)`` computed exactly: Python ``//``, or ``floor(a / b)`` in numpy (see the module docstring).

    Examples
    --------
    >>> FloorDiv(7, 2)
    3
    """

    @classmethod
    def eval(cls, a, b):
        if a.is_Number and b.is_Number:
            return sp.floor(a / b)
        if b == 1 and a.is_integer:
            return a
        return None

    def _eval_rewrite_as_floor(self, a, b, **kwargs):
        return sp.floor(a / b)

    def _numpycode(self, printer):
        a, b = self._args_code(printer)
        return f"{printer._module_format(printer._module + '.floor')}(({a})/({b}))"

    def _mpmathcode(self, printer):
        a, b = self._args_code(printer)
        return f"{printer._module_format('mpmath.floor')}(({a})/({b}))"

    def _pythoncode(self, printer):
        a, b = self._args_code(printer)
        return f"(({a}) // ({b}))"

    _lambdacode = _pythoncode
    _scipycode = _cupycode = _jaxcode = _numpycode

    def _latex(self, printer, exp=None):
        a, b = (printer._print(x) for x in self.args)
        body = r"\left\lfloor \frac{%s}{%s} \right\rfloor" % (a, b)
        return body if exp is None else r"%s^{%s}" % (body, exp)


class CeilDiv(_IntDiv):
    r"""``ceil(a / b)`` as mlsysim computes it, ``math.ceil(a / b)`` (numpy: ``ceil(a / b)``): one correctly rounded
    division, exact for integers (see the module docstring).

    Examples
    --------
    >>> CeilDiv(7, 2)
    4
    """

    @classmethod
    def eval(cls, a, b):
        if a.is_Number and b.is_Number:
            return sp.ceiling(a / b)
        if b == 1 and a.is_integer:
            return a
        return None

    def _eval_rewrite_as_ceiling(self, a, b, **kwargs):
        return sp.ceiling(a / b)

    def _numpycode(self, printer):
        a, b = self._args_code(printer)
        return f"{printer._module_format(printer._module + '.ceil')}(({a})/({b}))"

    def _mpmathcode(self, printer):
        a, b = self._args_code(printer)
        return f"{printer._module_format('mpmath.ceil')}(({a})/({b}))"

    def _pythoncode(self, printer):
        # mlsysim's own ``math.ceil(a / b)``: exact for integers below 2**53 (module docstring), and for a
        # fractional divisor (gradient_accumulation_steps=1.4) the same float as mlsysim's
        a, b = self._args_code(printer)
        return f"{printer._module_format('math.ceil')}(({a})/({b}))"

    _lambdacode = _pythoncode
    _scipycode = _cupycode = _jaxcode = _numpycode

    def _latex(self, printer, exp=None):
        a, b = (printer._print(x) for x in self.args)
        body = r"\left\lceil \frac{%s}{%s} \right\rceil" % (a, b)
        return body if exp is None else r"%s^{%s}" % (body, exp)


class Iverson(sp.Function):
    r"""The Iverson bracket ``[c]``: 1 when the condition ``c`` holds, else 0.

    sympy refuses a ``Piecewise`` inside the condition of another ``Piecewise``
    (it folds them into logic and crashes on ``Max``, sympy#17354). A switch on
    a flag or on the pipeline degree that feeds such a condition (memory per
    accelerator feeds "memory fits") is therefore written with ``[c]``, exactly:
    ``x / N_DP^{[z >= 1]}`` is ``x / N_DP`` or ``x``, and
    ``[c] a + (1 - [c]) b`` is ``a`` or ``b`` (one product is an exact 0).

    Examples
    --------
    >>> from sympy import Symbol
    >>> Iverson(Symbol("p", positive=True, integer=True) > 0)
    1
    """

    nargs = 1
    is_integer = True
    is_nonnegative = True

    @classmethod
    def eval(cls, c):
        if c is sp.true:
            return sp.S.One
        if c is sp.false:
            return sp.S.Zero
        return None

    def fdiff(self, argindex=1):
        return sp.S.Zero

    def _eval_derivative(self, s):
        # 0 wherever it is differentiable (away from the condition's edge); sympy's default would differentiate
        # the condition itself, which a relation cannot be
        return sp.S.Zero

    def _numpycode(self, printer):
        return f"{printer._module_format(printer._module + '.where')}({printer._print(self.args[0])}, 1.0, 0.0)"

    def _pythoncode(self, printer):
        return f"(1 if {printer._print(self.args[0])} else 0)"

    _lambdacode = _mpmathcode = _pythoncode
    _scipycode = _cupycode = _jaxcode = _numpycode

    def _latex(self, printer, exp=None):
        name = notation.indicator(notation.book_mode(printer))
        body = r"%s\left\{%s\right\}" % (name, printer._print(self.args[0]))
        return body if exp is None else r"%s^{%s}" % (body, exp)


def select(cond, a, b):
    """``a`` where ``cond`` holds, else ``b``, as ``[c] a + (1 - [c]) b`` (exact: one term is 0)."""
    i = Iverson(cond)
    return i * a + (1 - i) * b


class Log2(sp.Function):
    r"""``log2(n)``, printed ``\log_{2} n`` (sympy's ``log(n, 2)`` prints ``log(n)/log(2)``).

    Exact on powers of two, ``log(n)/log(2)`` otherwise; ``numpy.log2`` and ``math.log2`` in code.

    Examples
    --------
    >>> Log2(64), Log2(6)
    (6, 1 + log(3)/log(2))
    """

    nargs = 1

    @classmethod
    def eval(cls, n):
        if n.is_Number:
            return sp.log(n, 2)
        return None

    def fdiff(self, argindex=1):
        return 1 / (self.args[0] * sp.log(2))

    def _eval_rewrite_as_log(self, n, **kwargs):
        return sp.log(n) / sp.log(2)

    def _eval_is_real(self):
        return True if self.args[0].is_positive else None

    def _numpycode(self, printer):
        return f"{printer._module_format(printer._module + '.log2')}({printer._print(self.args[0])})"

    def _pythoncode(self, printer):
        return f"{printer._module_format('math.log2')}({printer._print(self.args[0])})"

    def _mpmathcode(self, printer):
        return f"({printer._module_format('mpmath.log')}({printer._print(self.args[0])}, 2))"

    _lambdacode = _pythoncode
    _scipycode = _cupycode = _jaxcode = _numpycode

    def _latex(self, printer, exp=None):
        n = self.args[0]
        arg = printer._print(n) if n.is_Symbol or n.is_Number else r"\left(%s\right)" % printer._print(n)
        body = r"\log_{2} %s" % arg
        return body if exp is None else r"\left(%s\right)^{%s}" % (body, exp)


# issue 24: the fleet appendix's failure probability
class Exp(sp.Function):
    r"""``exp(x)``, printed ``\exp\left(x\right)`` in both notations: the registry's rules allow no bare letter
    ``e`` in a book-mode equation, and book mode must expand to the plain form. ``rewrite(sp.exp)`` is sympy's
    ``exp``; ``math.exp`` / ``numpy.exp`` in code.

    Examples
    --------
    >>> Exp(0), Exp(sp.Symbol("x")).rewrite(sp.exp)
    (1, exp(x))
    """

    nargs = 1

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return sp.exp(x)
        return None

    def fdiff(self, argindex=1):
        return self

    def _eval_rewrite_as_exp(self, x, **kwargs):
        return sp.exp(x)

    def _eval_is_positive(self):
        return True if self.args[0].is_real else None

    def _numpycode(self, printer):
        return f"{printer._module_format(printer._module + '.exp')}({printer._print(self.args[0])})"

    def _pythoncode(self, printer):
        return f"{printer._module_format('math.exp')}({printer._print(self.args[0])})"

    def _mpmathcode(self, printer):
        return f"{printer._module_format('mpmath.exp')}({printer._print(self.args[0])})"

    _lambdacode = _pythoncode
    _scipycode = _cupycode = _jaxcode = _numpycode

    def _latex(self, printer, exp=None):
        body = r"\exp\left(%s\right)" % printer._print(self.args[0])
        return body if exp is None else r"%s^{%s}" % (body, exp)


# --------------------------------------------------------------------------------------------
# Words for the sides of a decision, attached where the decision is built
# --------------------------------------------------------------------------------------------
Side = Optional[str]


@dataclass(frozen=True)
class Labels:
    """The words for the active side of one decision (a ``Piecewise``, ``Max``/``Min`` or Iverson bracket).

    ``sides``: per branch of a ``Piecewise`` in order, per argument of a ``Max``/``Min`` keyed by the argument
    (sympy orders the arguments: a side is found by what it is, not where it stands), or ``(false, true)`` of a
    bracket; ``None`` for a side not worth naming. ``idle``: ``(condition, words)``: where the condition holds
    at the point (a relation of parameters and quantities, ``N_TP = 1``) the decision does not act and the
    label is ``words`` (``None``: nothing to say).
    """

    sides: Union[Tuple[Side, ...], Mapping[sp.Basic, Side]]
    idle: Optional[Tuple[sp.Basic, Side]] = None

    def side(self, node: sp.Basic, choice: int) -> Side:
        if isinstance(self.sides, tuple):
            return self.sides[choice] if choice < len(self.sides) else None
        return self.sides.get(node.args[choice])


_LABELS: Dict[sp.Basic, Labels] = {}


def labelled(node: sp.Basic, sides, idle: Optional[Tuple[sp.Basic, Side]] = None) -> sp.Basic:
    """``node``, with the words for its sides recorded (:class:`Labels`); returns the node unchanged."""
    _LABELS[node] = Labels(tuple(sides) if isinstance(sides, (list, tuple)) else dict(sides), idle)
    return node


def labels_of(node: sp.Basic) -> Optional[Labels]:
    """The :class:`Labels` recorded for a decision node where it was built (None: unnamed)."""
    return _LABELS.get(node)
