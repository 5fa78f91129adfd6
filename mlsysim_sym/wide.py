"""Numbers of a float's precision and an unbounded exponent, for the configurations whose float arithmetic
overflows part-way.

The compiled code evaluates the model's expressions in float64, in the order sympy writes them, and mlsysim
evaluates its own in another order (pint quantities, one term at a time). Where a value is extreme (an imbalance
factor of ``1e300``, an oversubscription of ``1e300``, a batch of ``10**300``) an intermediate product can
overflow in one order and not in the other: ``iota * M * (N_EP - 1)`` with ``N_EP = 1`` is ``inf * 0 = nan`` in
float64 where mlsysim, which never prices the all-to-all of one rank, returns a finite step. The model's value is
finite there; only the float's exponent is too small to carry the intermediate.

:func:`evaluate` runs a compiled function as it is and, only when an output is not finite (or the float
arithmetic raises ``OverflowError``), again on :class:`Wide` numbers: each operation rounded to 53 bits, as a
float's, with an exponent that cannot overflow (mpmath's binary floating point, which sympy ships). An output
whose value is beyond a float's range comes back as ``inf``, as it should; one that is finite comes back finite.
"""
from __future__ import annotations

from typing import Callable, Sequence

import mpmath

_CTX = mpmath.MPContext()
_CTX.prec = 53                       # a float64's significand; the exponent is unbounded
_MPF = _CTX.mpf


def _v(x):
    return x.v if isinstance(x, Wide) else _MPF(x)


class Wide:
    """A real number with a float's precision and an unbounded exponent, with the operations the compiled
    code uses (arithmetic, ``//``, ``%``, ``**``, comparisons, ``math.floor``/``math.ceil``, ``min``/``max``).

    >>> big = Wide(1e300)
    >>> float(big * 1e300 * 0), float(big * 1e300 / 1e300), float(big * 1e300)
    (0.0, 1e+300, inf)
    >>> float(Wide(7) % 3), float(Wide(-7) % 3), float(8 % Wide(3)), float(Wide(1e20) % 3)  # as Python's floats
    (1.0, 2.0, 2.0, 1.0)
    """

    __slots__ = ("v",)

    def __init__(self, x):
        self.v = _v(x)

    def __add__(self, o): return Wide(self.v + _v(o))
    def __radd__(self, o): return Wide(_v(o) + self.v)
    def __sub__(self, o): return Wide(self.v - _v(o))
    def __rsub__(self, o): return Wide(_v(o) - self.v)
    def __mul__(self, o): return Wide(self.v * _v(o))
    def __rmul__(self, o): return Wide(_v(o) * self.v)
    def __truediv__(self, o): return Wide(self.v / _v(o))
    def __rtruediv__(self, o): return Wide(_v(o) / self.v)
    def __floordiv__(self, o): return Wide(_CTX.floor(self.v / _v(o)))
    def __rfloordiv__(self, o): return Wide(_CTX.floor(_v(o) / self.v))
    def __mod__(self, o): return Wide(_mod(self.v, _v(o)))
    def __rmod__(self, o): return Wide(_mod(_v(o), self.v))
    def __pow__(self, o): return Wide(self.v ** _v(o))
    def __rpow__(self, o): return Wide(_v(o) ** self.v)
    def __neg__(self): return Wide(-self.v)
    def __pos__(self): return self
    def __abs__(self): return Wide(abs(self.v))
    def __lt__(self, o): return self.v < _v(o)
    def __le__(self, o): return self.v <= _v(o)
    def __gt__(self, o): return self.v > _v(o)
    def __ge__(self, o): return self.v >= _v(o)
    def __eq__(self, o): return self.v == _v(o)
    def __ne__(self, o): return self.v != _v(o)
    def __hash__(self): return hash(float(self))
    def __bool__(self): return bool(self.v)
    def __float__(self): return float(self.v)           # beyond a float's range: +-inf, or 0.0
    def __int__(self): return int(self.v)
    def __floor__(self): return Wide(_CTX.floor(self.v))
    def __ceil__(self): return Wide(_CTX.ceil(self.v))
    def __repr__(self): return f"Wide({_CTX.nstr(self.v, 17)})"


def _mod(a, b):
    """``a % b`` as Python's floats take it: the remainder of the division, exact (``fmod``), with the sign of
    the divisor."""
    if b == 0:
        raise ZeroDivisionError("float modulo")
    r = _CTX.fmod(a, b)
    if r and (r < 0) != (b < 0):
        r += b
    return r


def _plain(x):
    return float(x) if isinstance(x, Wide) else x


def _wide(x):
    return x if isinstance(x, bool) or not isinstance(x, (int, float)) else Wide(x)


def finite(values: Sequence) -> bool:
    """Whether every number of ``values`` is finite (a sum is: ``s - s`` is 0 unless a term is inf or NaN, or
    the sum itself overflows, which only sends a finite result the careful way)."""
    s = sum(values)
    return s - s == 0


def evaluate(fn: Callable, args: Sequence) -> list:
    """``fn(*args)``, and where an output is not finite (or float arithmetic overflows), ``fn`` again on
    :class:`Wide` numbers, its outputs back as floats (module docstring)."""
    try:
        out = fn(*args)
        if finite(out):
            return out
    except OverflowError:
        pass
    return [_plain(x) for x in fn(*map(_wide, args))]
