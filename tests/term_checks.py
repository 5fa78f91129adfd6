"""One check every cost term passes, shared by the book's test files (tests/test_book_*.py): its notation, its
units, its derivative and its code printers.

The term applied to its formal arguments (``printing.term_call``) is the registered class and prints under its
glyph; its dimension is ``unit``; ``fdiff`` gives the formula's derivative in every argument; lambdify's numpy and
math code give ``doit()``'s number (times 3: the term prints parenthesized), scalar and on arrays.
"""
import numpy as np
import pytest
import sympy as sp

from mlsysim_sym import notation
from mlsysim_sym.printing import TERM_CLASSES, term_call
from mlsysim_sym.units import dimension, parse_unit


def default_values(name, args):
    """7 for a whole-number argument, 3.5, 4.5, ... for the others."""
    return [7 if getattr(x, "is_integer", False) else 3.5 + i for i, x in enumerate(args)]


def check_term(name: str, unit: str, values=default_values) -> float:
    """Assert the check above for the cost term ``name`` (its values at ``values(name, args)``); its number."""
    term = notation.term(name)
    call = term_call(term)
    assert type(call) is TERM_CLASSES[name]
    assert sp.latex(call).startswith(term.latex)
    assert dimension(call, {s: notation.entry(s.name).unit for s in call.free_symbols}) == parse_unit(unit)
    args = list(call.args)
    for x in args:
        assert sp.simplify(sp.diff(call, x) - sp.diff(call.doit(), x)) == 0, (name, x)
    vals = values(name, args)
    exact = float(call.doit().xreplace(dict(zip(args, [sp.nsimplify(v) for v in vals]))))
    for backend in ("numpy", "math"):
        f = sp.lambdify(args, 3 * call, backend)
        assert f(*vals) == pytest.approx(3 * exact, rel=1e-13), (name, backend)
    g = sp.lambdify(args, call, "numpy")
    assert np.allclose(g(*[np.array([v, v]) for v in vals]), exact, rtol=1e-13)
    return exact
