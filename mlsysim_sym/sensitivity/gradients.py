"""An output of the model and its exact gradient in one regime, compiled.

In a regime (every ``Max``/``Min``/``Piecewise`` whose side moves with a continuous
parameter replaced by its active side, see :mod:`mlsysim_sym.decisions`) an output
is a smooth expression. :class:`Gradient` differentiates it and compiles the result:

* :func:`smooth` resolves the definitions of a variant's quantities to one regime;
* :func:`_gradient_program` writes the outputs and their gradients as one
  straight-line program: common subexpressions first, then the chain rule in
  reverse over them (reverse mode), so the gradient with respect to every symbol
  costs about one more pass over the program;
* :func:`_compile` lambdifies that program (``math`` for one point, ``numpy``
  for arrays), with the parameters as arguments in :data:`~mlsysim_sym.symbols.PARAMS` order;
* :func:`gradient` builds a :class:`Gradient` once per (variant, outputs, regime,
  relax, wrt) and caches it, so a warm evaluation costs one call of the program.

:func:`at_point` evaluates an output and its gradient at one point and, where two
sides of a decision tie (a kink), the one-sided derivatives from the regimes the
model enters on either side.

Examples
--------
>>> from mlsysim_sym.sensitivity import sensitivities
>>> from mlsysim_sym.sensitivity.gradients import gradient
>>> from mlsysim_sym.symbols import sym
>>> t = sensitivities("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
>>> g = gradient(t.variant, ("mfu",), t.signature, False, (sym.eta, sym.tau_d, sym.TDP))
>>> g.wrt                                   # the symbols the output depends on in this regime
(eta, tau_d)
>>> mfu, grad = g.evaluate(t.values, "mfu")
>>> round(t.values[sym.eta] * grad[sym.eta] / mfu, 6)       # the elasticity of the table's row
0.716093
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import sympy as sp

from .. import notation, wide
from ..compile import cse_real, lambdify_numeric, numeric_form
from ..decisions import ModelDecisions, model_decisions
from ..model import Variant, closed_form
from ..branches import Numbers, near, resolution
from ..symbols import PARAMS


class Gradient:
    """The output in one regime and its derivatives, compiled (``math``; ``numpy`` on demand).

    ``signature`` lists ``(decision index, side)`` for every resolved decision;
    ``relax`` is True for the relaxed form (floors and ceilings as quotients, plus
    their fractional part at the point, ``shift``). :meth:`expr` is the smooth
    sympy expression of one output; the compiled program holds the outputs and their
    gradients (:func:`_gradient_program`).
    """

    def __init__(self, variant: Variant, outputs: Tuple[str, ...], signature: Tuple[Tuple[int, int], ...],
                 relax: bool, wrt: Tuple[sp.Symbol, ...]):
        self.variant, self.outputs, self.signature, self.relax = variant, outputs, signature, relax
        self.md: ModelDecisions = model_decisions(variant)
        self.choices = dict(signature)
        self.shift: Optional[Dict[sp.Basic, sp.Symbol]] = {} if relax else None
        self.exprs, self.subs = smooth(self.md, outputs, self.choices, self._resolves, relax, self.shift)
        self.wrt_all = wrt
        self._program = _gradient_program(self.exprs, wrt)
        self.wrt = self._program[2]
        self.args, self.fn = _compile(self._program, "math")
        self._ties: Dict[tuple, Tuple] = {}
        self._numpy = None

    def _resolves(self, i: int) -> bool:
        return i in self.choices

    def expr(self, output: str) -> sp.Basic:
        """The smooth expression of ``output``."""
        return self.exprs[self.outputs.index(output)]

    def _with_shifts(self, values):
        """The values, plus the fractional corrections of the floors in the relaxed form."""
        return {**values, **shift_values(self.md, self.shift, values)} if self.shift else values

    def evaluate(self, values: Mapping[sp.Symbol, object], output: str) -> Tuple[float, Dict[sp.Symbol, float]]:
        """``(output, {x: d output / d x})`` at one point."""
        values = self._with_shifts(values)
        out = wide.evaluate(self.fn, [values[a] for a in self.args])    # an overflow part-way: again, wide
        k, n = self.outputs.index(output), len(self.wrt)
        first = len(self.outputs) + k * n
        return out[k], dict(zip(self.wrt, out[first:first + n]))

    @property
    def numpy(self):
        """``(args, fn)``: the same, compiled for arrays."""
        if self._numpy is None:
            self._numpy = _compile(self._program, "numpy")
        return self._numpy

    def tie_gradient(self, index: int, parts: Tuple[sp.Basic, ...], values) -> List[Dict[sp.Symbol, float]]:
        """Gradients of the expressions ``parts`` of decision ``index`` in this regime (``{x: d part/dx}``)."""
        key = (index, parts)
        if key not in self._ties:
            d = self.md.decisions[index]
            exprs = [in_regime(self.md, p, d.quantity, self.choices, self._resolves, self.subs, self.relax,
                                  self.shift) for p in parts]
            program = _gradient_program(exprs, self.wrt_all)
            self._ties[key] = (program[2], *_compile(program, "math"))
        xs, args, fn = self._ties[key]
        values = self._with_shifts(values)
        flat = list(fn(*(values[a] for a in args)))[len(parts):]
        n = len(xs)
        return [dict(zip(xs, flat[k * n:(k + 1) * n])) for k in range(len(parts))]


def _gradient_program(exprs: Sequence[sp.Basic], wrt: Sequence[sp.Symbol]):
    """``(assignments, outputs, xs)``: ``exprs`` and their gradients as a straight-line program.

    The chain rule in reverse over the common subexpressions of ``exprs``: each
    assignment ``x_i = e_i`` is differentiated symbolically with respect to what it
    uses, and the adjoints ``a_j`` accumulate backwards. ``outputs`` are the
    expressions, then ``d e_k / d x`` for every ``x`` of ``xs`` (the symbols of
    ``wrt`` that occur), expression by expression.
    """
    reps, reduced = cse_real(list(exprs))
    defined = {x for x, _ in reps}
    used = set().union(*(e.free_symbols for _, e in reps), *(r.free_symbols for r in reduced))
    xs = tuple(x for x in wrt if x in used)
    keep = defined | set(xs)
    adjoints = sp.numbered_symbols("a", real=True)
    program, outputs = list(reps), list(reduced)
    for r in reduced:
        terms: Dict[sp.Symbol, List[sp.Basic]] = {}
        for x in r.free_symbols & keep:
            terms.setdefault(x, []).append(sp.diff(r, x))
        for x, e in reversed(reps):
            a = sp.Add(*terms.pop(x, ()))
            if a == 0:
                continue
            if not a.is_Atom:
                program.append((next(adjoints), a))
                a = program[-1][0]
            for y in e.free_symbols & keep:
                terms.setdefault(y, []).append(a * sp.diff(e, y))
        outputs.extend(sp.Add(*terms.get(x, ())) for x in xs)
    for x, e in program:
        if e.has(sp.Heaviside, sp.Derivative, sp.Subs, sp.DiracDelta):
            raise RuntimeError(f"a derivative is not smooth in this regime: {x} = {e}")
    return program, outputs, xs


def _compile(program, backend):
    """Lambdify a straight-line program ``(assignments, outputs, xs)`` into ``(args, fn)``."""
    assignments = [(x, numeric_form(e)) for x, e in program[0]]
    outputs = [numeric_form(e) for e in program[1]]
    defined = {x for x, _ in assignments}
    free = set().union(*(e.free_symbols for _, e in assignments), *(e.free_symbols for e in outputs)) - defined
    args = tuple(p.symbol for p in PARAMS.values() if p.symbol in free)
    args += tuple(sorted(free - set(args), key=str))      # the floors' corrections of a relaxed form
    fn = lambdify_numeric(args, outputs, backend, cse=lambda _: (assignments, outputs))
    return args, fn


@lru_cache(maxsize=4096)
def gradient(variant: Variant, outputs: Tuple[str, ...], signature: Tuple[Tuple[int, int], ...], relax: bool,
             wrt: Tuple[sp.Symbol, ...]) -> Gradient:
    """The :class:`Gradient` of ``outputs`` in the regime ``signature``, with respect to ``wrt``
    (built once, then cached)."""
    return Gradient(variant, outputs, signature, relax, wrt)


def _side_regimes(md, group, signature, values, data, ties, x, grads, wrt, relax):
    """``(name, left regime, right regime)`` around the kinks for parameter ``x`` (None when smooth in ``x``)."""
    base = dict(signature)
    left, right, names = {}, {}, []
    for (i, tie, parts), g in zip(ties, grads):
        d = md.decisions[i]
        if tie.atom is None:
            slopes = [gi.get(x, 0.0) for gi in g]
            if max(slopes) == min(slopes):
                continue
            hi = [tie.indices[k] for k, s in enumerate(slopes) if s == max(slopes)]
            lo = [tie.indices[k] for k, s in enumerate(slopes) if s == min(slopes)]
            up, down = (hi, lo) if isinstance(d.node, sp.Max) else (lo, hi)
            right[i] = base[i] if base[i] in up else up[0]
            left[i] = base[i] if base[i] in down else down[0]
            names.append(" = ".join(notation.plain_expr(d.node.args[k]) for k in tie.indices))
        else:
            s = g[0].get(x, 0.0)
            if s == 0:
                continue
            grows = isinstance(tie.atom, (sp.StrictGreaterThan, sp.GreaterThan))
            above = (s > 0) == grows     # the relation holds just above x
            right[i] = d.choose_with(data[i], tie.atom, above)
            left[i] = d.choose_with(data[i], tie.atom, not above)
            names.append(notation.tie(tie.atom.lhs, tie.atom.rhs))
    if all(left[i] == base[i] == right[i] for i in left):
        return None
    sides = []
    for forced in (left, right):
        changed = {i: k for i, k in forced.items() if k != base[i]}
        full = side_choices(md, values, forced, tuple(base)) if changed else base
        sides.append(gradient(md.variant, group, tuple((i, full[i]) for i in base), relax, wrt))
    return (", ".join(dict.fromkeys(names)), *sides)


def at_point(md: ModelDecisions, group: Tuple[str, ...], output: str, values, data, resolved: Sequence[int],
             relax: bool, wrt):
    """``(f, {x: derivative}, {x: (kink, left, right, jump)}, signature)`` of ``output`` at one point.

    ``group`` are the outputs compiled together with ``output``; ``data`` the
    decisions' data at the point (:meth:`ModelDecisions.data`); ``resolved`` the
    decisions the regime resolves. At a kink in ``x``, ``left`` and ``right`` are
    ``(output, derivative)`` in the regime the model enters below and above the
    point, and ``jump`` tells whether the output itself is discontinuous there.
    """
    signature = tuple((i, int(md.decisions[i].choose(data[i]))) for i in resolved)
    reg = gradient(md.variant, group, signature, relax, wrt)
    f, grad = reg.evaluate(values, output)
    own = set(md.decisions_of(output))
    ties = []
    for i, k in signature:
        if i not in own:
            continue
        for tie in md.decisions[i].ties(data[i], k):
            d = md.decisions[i]
            parts = tuple(d.node.args[j] for j in tie.indices) if tie.atom is None \
                else (tie.atom.lhs - tie.atom.rhs,)
            ties.append((i, tie, parts))
    kinks = {}
    if ties:
        grads = [reg.tie_gradient(i, parts, values) for i, _, parts in ties]
        moving = {x for g in grads for gi in g for x, v in gi.items() if v != 0}
        for x in (x for x in wrt if x in moving):
            sides = _side_regimes(md, group, signature, values, data, ties, x, grads, wrt, relax)
            if sides is not None:
                name, lo, hi = sides
                (fl, gl), (fr, gr) = lo.evaluate(values, output), hi.evaluate(values, output)
                dl, dr = gl.get(x, 0.0), gr.get(x, 0.0)
                jump = not (near(fl, f) and near(fr, f))
                if jump or not near(dl, dr, 1e-12):         # else both sides agree: no kink in x
                    kinks[x] = (name, (fl, dl), (fr, dr), bool(jump))
    return f, grad, kinks, signature


# --------------------------------------------------------------------------------------
# Quantities in one regime
# --------------------------------------------------------------------------------------

def smooth(md: ModelDecisions, names, choices: Mapping[int, int], resolve: Callable[[int], bool],
           relax: bool = False, shift: Optional[Dict[sp.Basic, sp.Symbol]] = None):
    """Quantities in a regime: each decision ``i`` with ``resolve(i)`` replaced by side ``choices[i]``.

    ``names`` is one quantity name (returns its expression) or a tuple of names
    (returns a tuple); named terms are expanded. Also returns the substitution
    ``quantity symbol -> resolved expansion`` of the closure, for building other
    expressions (tie functions) in the same regime.
    """
    many = not isinstance(names, str)
    need = set().union(*(md.closure(n) for n in (names if many else (names,))))
    subs: Dict[sp.Symbol, sp.Basic] = {}
    for n in (n for n in md.model if n in need):
        own = {md.decisions[i].node: int(choices[i]) for i in md.of_quantity[n] if resolve(i)}
        r = resolution(md.model.definition(n), None, relax, freeze=False, choices=own,
                       only=lambda node, own=own: node in own, conditions=False, shift=shift)
        subs[md.symbol_of[n]] = r.expr.xreplace(subs)
    exprs = tuple(closed_form(subs[md.symbol_of[n]]) for n in (names if many else (names,)))
    return (exprs if many else exprs[0]), subs


def in_regime(md: ModelDecisions, expr: sp.Basic, quantity: str, choices: Mapping[int, int],
              resolve: Callable[[int], bool], subs: Mapping[sp.Symbol, sp.Basic], relax: bool = False,
              shift: Optional[Dict[sp.Basic, sp.Symbol]] = None) -> sp.Basic:
    """A subexpression of ``quantity``'s definition, resolved like :func:`smooth` and expanded."""
    own = {md.decisions[i].node: int(choices[i]) for i in md.of_quantity[quantity] if resolve(i)}
    r = resolution(expr, None, relax, freeze=False, choices=own, only=lambda node: node in own,
                   conditions=False, shift=shift)
    return closed_form(r.expr.xreplace(dict(subs)))


def side_choices(md: ModelDecisions, values: Mapping[sp.Symbol, object], forced: Mapping[int, int],
                 indices: Sequence[int]) -> Dict[int, int]:
    """Choices of the decisions ``indices`` when the decisions ``forced`` take the given sides.

    The quantities are re-evaluated with those sides, so a decision downstream of
    a forced one follows it (one side of a tie at a jump: memory spilling makes
    the step memory-bound).
    """
    env = dict(values)
    need = set().union(*(md.closure(md.decisions[i].quantity) for i in indices))
    for n in (n for n in md.model if n in need):
        own = {md.decisions[i].node: k for i, k in forced.items() if md.decisions[i].quantity == n}
        env[md.symbol_of[n]] = Numbers(env, own)(md.model.definition(n))
    num = Numbers(env)
    out = {}
    for i in indices:
        d = md.decisions[i]
        out[i] = int(forced[i]) if i in forced else int(d.choose([num(x) for x in d.data]))
    return out


def shift_values(md: ModelDecisions, shift: Mapping[sp.Basic, sp.Symbol], values: Mapping[sp.Symbol, object]):
    """``{delta: floor(a/b) - a/b}`` at a point, for the symbols of a relaxed ``shift`` map."""
    num = Numbers(values)
    out = {}
    for node, delta in shift.items():
        a, b = (num(x.xreplace(md.expansion)) for x in node.args)
        out[delta] = num(node.xreplace(md.expansion)) - a / b
    return out
