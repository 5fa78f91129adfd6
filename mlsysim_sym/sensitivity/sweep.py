"""Sensitivities over arrays of configurations: every derivative and elasticity, grouped by regime."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Tuple

import numpy as np
import sympy as sp

from .. import notation
from ..branches import near
from ..decisions import model_decisions
from ..arguments import arguments
from ..sweeps import configurations, sweep_arguments
from .point import CONTINUOUS, _continuous_decisions, _group, quantity_name, regime


@dataclass(frozen=True)
class SweepSensitivities:
    """Derivatives and elasticities of one output over arrays of configurations.

    ``elasticity[name]`` / ``derivative[name]`` are arrays of the sweep's shape (NaN
    where the configuration is invalid, see ``valid`` / ``reason``); ``kink`` marks
    points at a tie of two regimes, where the value given is the derivative of the
    regime the point was assigned to (the first of the tied sides). ``ties`` holds one
    mask per tie (``"T_compute = T_memory"``, ``"f_strag = 1"``, ...); ``regimes`` is the
    number of regimes the sweep visits.
    """

    output: str
    value: np.ndarray
    derivative: Dict[str, np.ndarray]
    elasticity: Dict[str, np.ndarray]
    valid: np.ndarray
    reason: np.ndarray
    ties: Dict[str, np.ndarray]
    regimes: int

    @property
    def shape(self) -> Tuple[int, ...]:
        return self.valid.shape

    @property
    def kink(self) -> np.ndarray:
        """True where any tie holds."""
        out = np.zeros(self.shape, dtype=bool)
        for m in self.ties.values():
            out |= m
        return out


def sensitivity_sweep(model, fleet, output: str = "mfu", *, grid: bool = True, **kwargs) -> SweepSensitivities:
    """Every continuous derivative and elasticity of ``output`` over arrays of configurations.

    Arguments as in :func:`mlsysim_sym.sweeps.sweep` (``solve()`` keywords and field
    names, scalars or arrays; ``grid`` makes each array an axis), except that
    ``precision`` must be a single string. Invalid configurations are masked with
    the reason the solver would give.
    """
    if not isinstance(kwargs.get("precision", "fp16"), str):
        raise TypeError("sensitivity_sweep() takes one precision (a string)")
    a = arguments(model, fleet, kwargs, caller="sensitivity_sweep")
    c = configurations(a, grid)
    checked = sweep_arguments(a, grid=grid, outputs=("mfu",))
    variant, shape = c.variant, c.shape
    values = {s: (np.broadcast_to(np.asarray(v, dtype=float), shape) if np.ndim(v) else v)
              for s, v in c.values.items()}
    valid = np.broadcast_to(checked.valid, shape)
    flat = {}
    for s, v in values.items():
        if np.ndim(v) > 0:
            safe = v[valid].flat[0] if valid.any() else 1.0
            flat[s] = np.where(valid, v, safe).astype(float).ravel()
        else:
            flat[s] = v
    out = _sweep_flat(variant, quantity_name(output, variant), flat, int(np.prod(shape)))
    value, der, ela, ties, n = out
    nan = lambda a: np.where(valid, a.reshape(shape), np.nan)  # noqa: E731
    return SweepSensitivities(output, nan(value), {k: nan(v) for k, v in der.items()},
                              {k: nan(v) for k, v in ela.items()}, valid, np.broadcast_to(checked.reason, shape),
                              {k: valid & m.reshape(shape) for k, m in ties.items()}, n)


def _sweep_flat(variant, q, values, size):
    md = model_decisions(variant)
    data = [[np.broadcast_to(np.asarray(x, dtype=float), (size,)) for x in d] for d in md.data(values, "numpy")]
    group = _group(q)
    resolved = _continuous_decisions(md, group)
    sides = np.stack([np.broadcast_to(md.decisions[i].choose(data[i]), (size,)) for i in resolved]) \
        if resolved else np.zeros((0, size), dtype=int)
    ties = {}
    for i in resolved:
        d, x = md.decisions[i], data[i]
        if isinstance(d.node, (sp.Max, sp.Min)):
            for a in range(len(x)):
                for b in range(a + 1, len(x)):
                    ties[notation.tie(d.node.args[a], d.node.args[b])] = near(x[a], x[b])
        else:
            for j, a in enumerate(d.atoms):
                if not isinstance(a, (sp.Eq, sp.Ne)):
                    ties[notation.tie(a.lhs, a.rhs)] = near(x[2 * j], x[2 * j + 1])
    names = {n: x for n, x in CONTINUOUS.items() if x in md.parameters and values.get(x) is not None}
    value = np.full(size, np.nan)
    der = {n: np.zeros(size) for n in names}
    uniq, which = np.unique(sides.T if resolved else np.zeros((size, 1), int), axis=0, return_inverse=True)
    for u, cols in enumerate(uniq):
        sel = np.flatnonzero(which.ravel() == u)
        reg = regime(variant, group, tuple(zip(resolved, map(int, cols[:len(resolved)]))))
        args, fn = reg.numpy
        res = fn(*(values[a][sel] if np.ndim(values[a]) else values[a] for a in args))
        k, nw = group.index(q), len(reg.wrt)
        value[sel] = res[k]
        first = len(group) + k * nw
        for x, r in zip(reg.wrt, res[first:first + nw]):
            for n, y in names.items():
                if y == x:
                    der[n][sel] = r
    ela = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for n, x in names.items():
            ela[n] = np.where(value != 0, np.asarray(values[x], dtype=float) * der[n] / value, np.nan)
    return value, der, ela, ties, len(uniq)
