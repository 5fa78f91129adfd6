"""Uncertainty: how far the output spreads when the parameters are known only to a few per cent.

``uncertainty(model, fleet, {"efficiency": 0.1, "fabric_bandwidth": 0.2}, samples=20000)``
propagates **relative standard deviations** of continuous parameters (10 % on the
achieved efficiency, 20 % on the fabric bandwidth) to an output (fleet MFU by default),
two ways:

* **First order** (always): the parameters independent, the output linear around the
  point, ``sd(y) = sqrt(sum_i (dy/dx_i * sigma_i * x_i)^2)`` with the package's exact
  derivatives (:func:`mlsysim_sym.sensitivity.sensitivities`, in the regime of the
  point). Each parameter's **share** is its term's part of that variance
  (``(dy/dx_i sigma_i x_i)^2 / sd(y)^2``; the shares sum to 1).
* **Monte Carlo** (``samples=N``): ``N`` independent draws of every parameter,
  ``x_i = x_i0 (1 + sigma_i Z_i)`` with ``Z_i`` standard normal (numpy's
  ``default_rng(seed)``), **clipped** to the values the parameter may take
  (:data:`DOMAINS`: efficiency in [1e-9, 1], overlap efficiency in [0, 1], MoE
  imbalance >= 1, latencies, TDP and FLOPs >= 0, other positive magnitudes at least a
  thousandth of their value); the fraction of clipped draws is reported. The output is
  evaluated by the vectorized :func:`mlsysim_sym.sweep` (``grid=False``); a draw the sweep
  masks (an invalid configuration) is counted and left out. Reported: mean, standard
  deviation with its standard error, and the 5/50/95 % percentiles.

**Where first order breaks down.** First order agrees with Monte Carlo when their standard
deviations differ by at most 3 standard errors of the Monte Carlo estimate (the standard
error of a sample standard deviation, ``sqrt((m4 - s^4 (n - 3)/(n - 1)) / n) / (2 s)``,
from the draws' fourth central moment ``m4``); :attr:`Uncertainty.agrees` and the printed
verdict say so. They part near a kink (a bound switches within the spread: compute- to
memory-bound, the straggler factor at 1, memory at capacity), at a domain edge (clipped
draws) and for large sigmas (curvature).

**At a kink** (the point itself sits on one: the derivative is one-sided), the rule is: the
term uses the **larger** of the two one-sided derivatives (:attr:`Uncertainty.std`, an
upper bound of the linear spread), and :attr:`Uncertainty.std_smaller` the smaller; both
are printed and the row says which side is which. Never an average of the two. Where the
output itself jumps (memory spilling to the host), first order says nothing: the result
says so.

Examples
--------
>>> from mlsysim_sym import uncertainty
>>> u = uncertainty("Llama3_70B", "Research_256", {"efficiency": 0.02, "fabric_bandwidth": 0.02},
...                 samples=20000, batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
>>> round(u.std, 6), round(u["efficiency"].share, 4), u.agrees
(0.00385, 0.9385, True)
"""
from __future__ import annotations

import dataclasses
import html
import math
import warnings
from dataclasses import dataclass
from numbers import Real
from typing import Dict, Mapping, Optional, Tuple

import numpy as np
import sympy as sp

from .. import _chunks, notation
from ..display import PREFIXED, WIDTH, html_table, number, quantity, text_prefix, text_table, wrap, written
from ..outputs import OUTPUTS
from ..run_costs import DRIVERS, TrainingPlan, _amount, plan_of, run_slopes
from ..sweeps import sweep_arguments
from ..symbols import BY_SYMBOL, Kind, by_argument
from .point import CONTINUOUS, INTEGER_KNOBS, OUTPUT_ALIASES, sensitivities
from .table import output_name, parameter_name

#: The parameters a sigma may be given for: the continuous sensitivity rows that take real values
#: (``seq_len`` and ``hidden_dim`` are whole numbers: vary them with :func:`mlsysim_sym.sweep`).
UNCERTAIN: Tuple[str, ...] = tuple(n for n in CONTINUOUS if by_argument()[n].kind is Kind.REAL)

#: A positive magnitude is clipped at this fraction of its value (the model divides by bandwidths).
POSITIVE_FLOOR = 1e-3
#: First order and Monte Carlo agree when their standard deviations differ by at most this many
#: standard errors of the Monte Carlo estimate.
AGREEMENT = 3.0
#: A Monte Carlo standard deviation below this fraction of the mean is rounding noise, not spread.
NOISE = 1e-12
#: Clipped draws are named as the cause of a disagreement only when at least this share was clipped.
CLIPPED_BLAME = 0.01
PERCENTILES = (5, 50, 95)


def domain(name: str, value: float) -> Tuple[float, float]:
    """The closed range Monte Carlo draws of parameter ``name`` (at ``value``) are clipped to: its range in the
    parameter table (:attr:`mlsysim_sym.symbols.Param.range`: what ``solve()`` accepts, or what means something
    for the factors mlsysim does not check), a positive magnitude at least :data:`POSITIVE_FLOOR` of its value."""
    r = by_argument()[name].range
    lo, hi = r.bounds
    if lo == 0 and r.lo_open:
        lo = POSITIVE_FLOOR * value
    return lo, hi


def _domains() -> str:
    """The ``domain`` rule in words, for the parameters a sigma may be given for (the printed note)."""
    by_text: Dict[str, list] = {}
    for name in UNCERTAIN:
        p = by_argument()[name]
        if not (p.range.lo == 0 and p.range.lo_open):
            by_text.setdefault(p.range.text, []).append(p.words)
    said = "; ".join(f"{', '.join(words)} {text}" for text, words in by_text.items())
    return f"{said}; other magnitudes >= {POSITIVE_FLOOR:g} x their value"


#: The ``domain`` rule in words (the printed note).
DOMAINS = _domains()


def _check_sigma(sigma) -> Dict[str, float]:
    if not isinstance(sigma, Mapping):
        raise TypeError(f"uncertainty(): sigma must be a mapping of parameter name -> relative standard "
                        f"deviation, e.g. {{'efficiency': 0.1}}; got {type(sigma).__name__}")
    allowed = ", ".join(UNCERTAIN)
    out = {}
    for name, s in sigma.items():
        if name not in UNCERTAIN:
            if name in INTEGER_KNOBS or name in CONTINUOUS:
                raise ValueError(f"uncertainty(): {name!r} is an integer knob (whole numbers only), not a "
                                 f"continuous parameter with a relative standard deviation; vary it with sweep() "
                                 f"or read sensitivities(...).discrete. sigma takes: {allowed}")
            raise ValueError(f"uncertainty(): unknown parameter {name!r} in sigma; sigma takes: {allowed}")
        if isinstance(s, bool) or not isinstance(s, Real) or not math.isfinite(s) or s < 0:
            raise ValueError(f"uncertainty(): sigma[{name!r}] must be a finite number >= 0 (a relative standard "
                             f"deviation: 0.1 for 10 %), got {s!r}")
        out[name] = float(s)
    return out


# --------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Term:
    """One uncertain parameter: its first-order part of the output's spread.

    ``contribution`` = ``|dy/dx| * sigma * x``, the output's standard deviation from this
    parameter alone (first order; at a kink with the larger one-sided derivative, and
    ``below``/``above`` the contributions from each side). ``clipped``: the fraction of
    Monte Carlo draws clipped to :attr:`domain` (``None`` without Monte Carlo).
    """

    parameter: str
    symbol: sp.Symbol
    value: float
    sigma: float
    derivative: float
    elasticity: float
    contribution: float
    share: float
    domain: Tuple[float, float]
    kink: Optional[str] = None
    below: Optional[float] = None
    above: Optional[float] = None
    jump: bool = False
    clipped: Optional[float] = None
    sides: Optional[Tuple[float, float]] = None     # elasticities below | above a kink

    @property
    def smaller(self) -> float:
        """The contribution with the smaller one-sided derivative at a kink (``contribution`` elsewhere)."""
        return self.contribution if self.kink is None else min(self.below, self.above)


@dataclass(frozen=True)
class MonteCarlo:
    """Monte Carlo statistics of the output over ``valid`` of ``samples`` draws."""

    samples: int
    valid: int
    seed: int
    mean: float
    std: float
    std_error: float       # standard error of ``std``
    mean_error: float      # standard error of ``mean``
    percentiles: Dict[int, float]
    # the standard deviation over the draws no parameter's domain clipped (None where none was clipped, or fewer
    # than 2 are left): a few clipped draws where the output diverges (a bandwidth at its floor) can set the sd
    std_unclipped: Optional[float] = None

    @property
    def unsteady(self) -> bool:
        """Whether a few extreme draws set the mean and sd: the mean lies beyond the 5-95 % range by more than that
        range's width again (the output diverges where a draw nears the edge of a parameter's range, the step time
        at an efficiency clipped to 1e-9; the mean of 1/x over a normal x does not exist). The percentiles hold."""
        lo, hi = self.percentiles[PERCENTILES[0]], self.percentiles[PERCENTILES[-1]]
        w = max(hi - lo, 1e-9 * abs(self.percentiles[50]))
        return not (lo - w <= self.mean <= hi + w)


@dataclass(frozen=True)
class Uncertainty:
    """The spread of one output under relative parameter uncertainties (see the module docstring).

    ``u.std`` first order, ``u.monte_carlo`` the draws' statistics (``None`` without
    ``samples``), ``u["efficiency"]`` a :class:`Term`, ``u.agrees`` whether the two agree
    within the Monte Carlo error; ``print(u)``, ``u.to_dict()`` (JSON), notebooks show it.
    """

    output: str
    quantity: str
    value: float
    terms: Tuple[Term, ...]
    configuration: str = ""
    regime: Tuple[str, ...] = ()
    monte_carlo: Optional[MonteCarlo] = None
    run: Optional["RunSpread"] = None

    def __getitem__(self, name: str) -> Term:
        for t in self.terms:
            if t.parameter == name:
                return t
        raise KeyError(f"no term {name!r}; terms: {', '.join(t.parameter for t in self.terms)}")

    def __iter__(self):
        return iter(self.terms)

    def __len__(self) -> int:
        return len(self.terms)

    @property
    def unit(self) -> str:
        return notation.entry(self.quantity).unit

    @property
    def std(self) -> float:
        """First-order standard deviation (at a kink: each kinked term with its larger side)."""
        return math.sqrt(sum(t.contribution ** 2 for t in self.terms))

    @property
    def std_smaller(self) -> float:
        """First-order standard deviation with each kinked term at its smaller side (= ``std`` off kinks)."""
        return math.sqrt(sum(t.smaller ** 2 for t in self.terms))

    def _one_smaller(self, term) -> float:
        """The first-order sd with ``term`` alone at its smaller side (every other kinked term at its larger)."""
        return math.sqrt(max(self.std ** 2 - term.contribution ** 2 + term.smaller ** 2, 0.0))

    @property
    def relative(self) -> float:
        """``std / |value|`` (NaN when the value is 0)."""
        return self.std / abs(self.value) if self.value else float("nan")

    @property
    def kinks(self) -> Tuple[Term, ...]:
        """Terms whose parameter sits at a kink (one-sided derivatives)."""
        return tuple(t for t in self.terms if t.kink is not None)

    @property
    def discrepancy(self) -> Optional[float]:
        """``(Monte Carlo std - first-order std) / first-order std`` (``None`` without Monte Carlo)."""
        mc = self.monte_carlo
        if mc is None:
            return None
        if self.std == 0:
            return 0.0 if mc.std == 0 else math.inf
        return (mc.std - self.std) / self.std

    @property
    def agrees(self) -> Optional[bool]:
        """Whether first order and Monte Carlo standard deviations differ by at most :data:`AGREEMENT`
        standard errors of the Monte Carlo estimate (``None`` without Monte Carlo)."""
        mc = self.monte_carlo
        if mc is None:
            return None
        if math.isnan(mc.std):
            return False
        noise = NOISE * abs(mc.mean)      # a spread of rounding errors is no spread
        return abs(mc.std - self.std) <= AGREEMENT * mc.std_error + noise or mc.std == self.std

    def notes(self) -> Tuple[str, ...]:
        """What to keep in mind reading the numbers: kinks, jumps, clipped draws, masked draws, the verdict."""
        out = []
        for t in self.kinks:
            name = parameter_name(t.symbol)
            if t.jump:
                out.append(f"{name} sits where the output jumps ({t.kink}): first order does not describe "
                           f"the spread; see the Monte Carlo.")
            else:
                out.append(f"{name} sits at a kink ({t.kink}): its term uses the larger one-sided derivative "
                           f"(below {_q(t.below, self.unit)} | above {_q(t.above, self.unit)}); with its smaller "
                           f"side the first-order sd is {_q(self._one_smaller(t), self.unit)}.")
        mc = self.monte_carlo
        if mc is None:
            if self.kinks:
                out.append("first order is one-sided here: a Monte Carlo (samples=, on the command line "
                           "--samples) gives the spread across the kink.")
            return tuple(out)
        clipped = [t for t in self.terms if t.clipped]
        if clipped:
            out.append("draws clipped to the domain: " + ", ".join(
                f"{parameter_name(t.symbol)} {100 * t.clipped:.3g} %" for t in clipped) + " (the Monte Carlo is of the "
                "clipped distribution).")
        if mc.unsteady:
            out.append(f"the Monte Carlo's mean ({quantity(mc.mean, self.unit)}) and sd rest on a few extreme draws: "
                       f"the mean lies far beyond the 95th percentile ({quantity(mc.percentiles[95], self.unit)}) or "
                       f"below the 5th, where the output diverges as a draw nears the edge of a parameter's range: "
                       f"read the percentiles.")
        if mc.valid < mc.samples:
            out.append(f"{mc.samples - mc.valid:,} of {mc.samples:,} draws are invalid configurations (masked by "
                       f"the sweep) and left out.")
        d = self.discrepancy
        tol = AGREEMENT * mc.std_error / self.std if self.std else math.nan
        digits = 3      # as many digits as it takes to tell the difference from the tolerance
        while digits < 8 and _pct(abs(d), False, digits) == _pct(tol, False, digits) and abs(d) != tol:
            digits += 1
        if self.std == 0:       # no relative difference to give: the Monte Carlo's sd, noise or not
            out.append(f"first order vs Monte Carlo: the first-order sd is 0 and the Monte Carlo's "
                       f"({_q(mc.std, self.unit)}) is rounding noise: first order holds." if self.agrees else
                       f"first order vs Monte Carlo: the first-order sd is 0 but the Monte Carlo's is "
                       f"{_q(mc.std, self.unit)}: first order breaks down here (the derivatives vanish where the "
                       f"draws still move the output).")
        elif self.agrees:
            out.append(f"first order vs Monte Carlo: sd differs by {_pct(d, True, digits)} (within {AGREEMENT:g} "
                       f"standard errors, {_pct(tol, False, digits)}): first order holds.")
        else:
            if self.kinks:
                why = "the kink at " + ", ".join(t.kink for t in self.kinks)
            elif clipped and self.clipping_sets_sd:
                # a few draws at a domain's floor, where the output diverges, set the sd (0.045 % of a fabric
                # bandwidth's draws at a thousandth of its value: sd 6.4 s where the others give 0.1 s)
                why = (f"the draws clipped to the domain edge of {', '.join(t.parameter for t in clipped)} set it, "
                       f"where the output diverges toward that edge: without them the sd is "
                       f"{_q(mc.std_unclipped, self.unit)}; the percentiles hold")
            elif [t for t in clipped if t.clipped >= CLIPPED_BLAME]:
                why = "the domain edge of " + ", ".join(t.parameter for t in clipped if t.clipped >= CLIPPED_BLAME)
            else:
                why = "a kink within the spread or large sigmas"
            out.append(f"first order vs Monte Carlo: sd differs by {_pct(d, True, digits)} (more than "
                       f"{AGREEMENT:g} standard errors, {_pct(tol, False, digits)}): first order breaks down here "
                       f"({why}).")
        return tuple(out)

    @property
    def clipping_sets_sd(self) -> bool:
        """Whether the Monte Carlo draws clipped to a parameter's domain move its standard deviation by more than
        :data:`AGREEMENT` standard errors (the sd over the other draws, :attr:`MonteCarlo.std_unclipped`)."""
        mc = self.monte_carlo
        if mc is None or mc.std_unclipped is None or math.isnan(mc.std):
            return False
        return abs(mc.std - mc.std_unclipped) > AGREEMENT * mc.std_error

    def to_dict(self) -> Dict[str, object]:
        """Plain Python values (``json.dumps`` takes them): the output, both estimates, every term."""
        terms = []
        for t in self.terms:
            p = BY_SYMBOL[t.symbol]
            row = {"parameter": t.parameter, "symbol": p.text, "words": p.words, "unit": p.unit,
                   "value": t.value, "sigma": t.sigma, "derivative": t.derivative, "elasticity": t.elasticity,
                   "contribution": t.contribution, "share": t.share, "domain": [_plain(x) for x in t.domain],
                   "clipped": t.clipped}
            if t.kink is not None:
                row.update(kink=t.kink, jump=t.jump, below=t.below, above=t.above)
            terms.append(row)
        mc = self.monte_carlo
        return {"output": self.output, "quantity": self.quantity, "value": self.value, "unit": self.unit,
                "configuration_line": self.configuration, "regime": list(self.regime),
                "first_order": {"std": self.std, "std_smaller": self.std_smaller, "relative": _plain(self.relative)},
                "monte_carlo": None if mc is None else {
                    "samples": mc.samples, "valid": mc.valid, "seed": mc.seed, "distribution": "normal, clipped",
                    "mean": _plain(mc.mean), "std": _plain(mc.std), "std_error": _plain(mc.std_error),
                    "std_unclipped": _plain(mc.std_unclipped),
                    "mean_error": _plain(mc.mean_error), "unsteady": mc.unsteady,
                    "percentiles": {str(k): _plain(v) for k, v in mc.percentiles.items()}},
                "discrepancy": _plain(self.discrepancy), "agrees": self.agrees, "terms": terms,
                "notes": list(self.notes()), "run": None if self.run is None else self.run.to_dict()}

    # ----------------------------------------------------------------------------------
    def _scale(self) -> Tuple[float, str]:
        """One scale and unit for the column of sds (``(1e-3, "ms")``): the text's cells are bare numbers."""
        sds = [abs(x) for t in self.terms for x in ((t.contribution,) if t.kink is None else (t.below, t.above))
               if x is not None and math.isfinite(x)]
        scale, prefix = text_prefix(max(sds, default=0.0), self.unit)
        return scale, (prefix + PREFIXED[self.unit]) if self.unit in PREFIXED else written(self.unit)

    def _rows(self, bare: bool = False):
        """The table's rows; ``bare``: each sd as a number in the column's unit (:meth:`_scale`)."""
        out_unit = self.unit
        scale = self._scale()[0]
        sd = (lambda x: number(x / scale)) if bare else (lambda x: _q(x, out_unit))  # noqa: E731
        rows = []
        for i, t in enumerate(self.terms):
            p = BY_SYMBOL[t.symbol]
            if t.kink is None:
                el, part = _elastic(t.elasticity), sd(t.contribution)
            else:
                el = f"{_elastic(t.sides[0])} | {_elastic(t.sides[1])} *"
                part = f"{sd(t.below)} | {sd(t.above)} *"
            rows.append((str(i + 1), parameter_name(t.symbol), quantity(t.value, p.unit), f"{number(100 * t.sigma, 3)} %",
                         el, part, f"{100 * t.share:.1f} %"))
        return rows

    def _header(self):
        out, unit = output_name(self), self.unit
        rel = "" if math.isnan(self.relative) else f" ({_pct(self.relative, sign=False)})"
        lines = [f"uncertainty of {out} = {quantity(self.value, unit)}"]
        if self.configuration:
            lines += wrap(self.configuration, "  ")
        if self.regime:
            lines += wrap("regime: " + ", ".join(self.regime), "  ")
        lines += wrap(f"first order: sd = {_q(self.std, unit)}{rel}, sqrt(sum of (dy/dx * sigma * x)^2) with the "
                      f"exact derivatives in this regime", "  ")
        mc = self.monte_carlo
        if mc is not None:
            pct = " / ".join(quantity(mc.percentiles[k], unit) for k in PERCENTILES)
            lines += wrap(f"Monte Carlo: {mc.valid:,} draws (seed {mc.seed}), each parameter normal with its "
                          f"relative sigma, clipped to its domain: mean {quantity(mc.mean, unit)}, sd "
                          f"{_q(mc.std, unit)} (standard error {_q(mc.std_error, unit, 2)}), percentiles "
                          f"{' / '.join(map(str, PERCENTILES))} %: {pct}", "  ")
        return lines

    _HEADER = ("#", "parameter", "value", "sigma", "elasticity", "sd from it", "share")

    def __str__(self) -> str:
        lines = self._header() + [""]
        unit = self._scale()[1]
        header = self._HEADER[:5] + (f"sd ({unit})" if unit else self._HEADER[5],) + self._HEADER[6:]
        lines += text_table(self._rows(bare=True), header, indent="  ", align="lllrrrr", width=WIDTH, narrow=1)
        for n in self.notes():
            lines += wrap(n, "  ")
        if self.run is not None:
            lines += [""] + self.run.lines()
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        e = html.escape
        head = "".join(f"<p>{e(x.strip())}</p>" for x in self._header())
        tail = "".join(f"<p>{e(n)}</p>" for n in self.notes())
        run = "" if self.run is None else self.run._repr_html_()
        return head + html_table(self._rows(), self._HEADER) + tail + run

#: A run output: its words and symbol, the unit a person reads it in, and that unit in the output's own (s, h, J, $).
_RUN = {"T_train": ("time T_train (days)", 86400.0), "H_acc": ("GPU-hours H_GPU", 1.0),
        "E_train": ("energy E_train (MWh)", 3.6e9), "C_train": ("cost C_train ($)", 1.0)}
#: The JSON's names of the run outputs (:meth:`mlsysim_sym.run_costs.TrainingPlan.to_dict`'s).
_RUN_KEYS = {"T_train": "wall_time", "H_acc": "accelerator_hours", "E_train": "energy", "C_train": "cost"}


@dataclass(frozen=True)
class RunSpread:
    """How far a run's time, cost and energy spread (:func:`uncertainty` with ``tokens=`` or ``steps=``).

    Each run output is linear through zero in one quantity of the step model, its driver
    (:data:`~mlsysim_sym.run_costs.DRIVERS`): the time, accelerator-hours and cost are ``K T_step`` times what the
    step time does not change, the energy ``K N_DP E_rep`` times what the energy per replica step does not. So
    each is its derivative in its driver (``slopes``, exact) times the driver: its value, first-order sd, Monte
    Carlo mean, sd and percentiles are the driver's (``step``: the uncertainty of ``T_step``; ``energy``: of
    ``E_rep``, ``None`` without a TDP; both under the same sigmas, and the same draws) times that slope.
    ``plan`` is the run at the point (:func:`mlsysim_sym.plan`'s)."""

    plan: TrainingPlan
    step: "Uncertainty"
    slopes: Dict[str, float]
    energy: Optional["Uncertainty"] = None
    own: str = ""               # the quantity of the uncertainty itself (its ``step`` when it is ``T_step``)

    @property
    def separate(self) -> bool:
        """Whether ``step`` is a pass of its own (the uncertainty's output is not the step time)."""
        return self.own != "T_step"

    def _driver(self, name: str) -> "Uncertainty":
        return self.energy if DRIVERS[name] == "energy" else self.step

    def _slope(self, name: str) -> Tuple[str, float]:
        """The run output ``name`` means and its slope in its driver: ``name`` the quantity's (``"H_acc"``), the
        symbol the text prints (``"H_GPU"``), the JSON's key (``"accelerator_hours"``), or ``"days"``
        (``T_train`` in days)."""
        if name == "days":
            return "T_train", self.slopes["T_train"] / 86400
        for n, k in self.slopes.items():
            if name in (n, _RUN_KEYS[n], notation.plain(notation.entry(n).latex)):
                return n, k
        names = [x for n in self.slopes for x in (n, notation.plain(notation.entry(n).latex), _RUN_KEYS[n])]
        raise KeyError(f"no run output {name!r}; the run's: {', '.join(dict.fromkeys(names + ['days']))}"
                       + ("" if "C_train" in self.slopes else " (a cost needs price_per_gpu_hour)")
                       + ("" if "E_train" in self.slopes else " (an energy needs the accelerator's TDP)"))

    def value(self, name: str) -> float:
        """Run output ``name`` at the point (``"T_train"`` in s, ``"days"``, ``"H_acc"`` in GPU-hours,
        ``"E_train"`` in J, ...)."""
        n, k = self._slope(name)
        return k * self._driver(n).value

    def std(self, name: str) -> float:
        """First-order standard deviation of run output ``name`` (``"T_train"``, ``"days"``, ``"H_acc"``,
        ``"E_train"``, ``"C_train"``; or the symbols the text prints and the JSON's keys)."""
        n, k = self._slope(name)
        return k * self._driver(n).std

    def monte_carlo(self, name: str) -> Optional[Dict[str, object]]:
        """The Monte Carlo's mean, sd and percentiles of run output ``name`` (``None`` without Monte Carlo)."""
        n, k = self._slope(name)
        mc = self._driver(n).monte_carlo
        if mc is None:
            return None
        return {"mean": k * mc.mean, "std": k * mc.std, "percentiles": {p: k * v for p, v in mc.percentiles.items()}}

    def _head(self) -> str:
        p, step = self.plan, self.step
        steps = f"{_amount(p.steps)} step{'s' if p.steps != 1 else ''} K"
        run = f"{p.tokens:.4g} tokens in {steps}" if p.tokens is not None else steps
        price = "" if p.price is None else f", at ${p.price:g} per GPU-hour"
        mc = step.monte_carlo is not None
        same = (" under the same sigmas" + (" and draws" if mc else "")) if self.separate else ""
        text = (f"the run: {run} of T_step = {quantity(step.value, 's')}{price}; each output is K T_step times what "
                f"the step time does not change, so it spreads as the step time does{same} (first-order sd "
                f"{_q(step.std, 's')})")
        if self.energy is not None:
            e = self.energy
            text += (f"; the energy K N_DP E_rep spreads as the energy per replica step E_rep = "
                     f"{quantity(e.value, 'J')} does (first-order sd {_q(e.std, 'J')})")
        return text + ("; sd: first order, MC: Monte Carlo" if mc else "")

    def _rows(self):
        """``(output, value, first-order sd, Monte Carlo mean, Monte Carlo percentiles)`` per run output, in its
        unit, each row at one scale (:func:`_scale_of`)."""
        rows = []
        for name in self.slopes:
            words, per = _RUN[name]
            mc = self.monte_carlo(name)
            value, sd = self.value(name) / per, self.std(name) / per
            pct = [] if mc is None else [mc["percentiles"][k] / per for k in PERCENTILES]
            scale = _scale_of([value, *pct])
            steady = mc is not None and not self._driver(self._slope(name)[0]).monte_carlo.unsteady
            rows.append((words, _amounts([value], scale), _amounts([sd], scale),
                         _amounts([mc["mean"] / per], scale) if steady else "-" if mc else "",
                         _amounts(pct, scale) if pct else ""))
        return rows

    def _notes(self) -> Tuple[str, ...]:
        out = list(self.plan.caveats())
        drivers = [(w, d, u) for w, d, u in (("the step time", self.step, "s"),
                                             ("the energy per replica step", self.energy, "J")) if d is not None]
        unsteady = [w for w, d, _ in drivers if d.monte_carlo is not None and d.monte_carlo.unsteady]
        if unsteady:
            out.append(f"MC mean -: the Monte Carlo mean of {' and of '.join(unsteady)} rests on a few extreme draws "
                       f"(where {'they diverge' if len(unsteady) > 1 else 'it diverges'} as a draw nears the edge of a "
                       f"parameter's range): read the percentiles")
        for words, driver, unit in drivers:
            # (the uncertainty's own output says it above; an unsteady Monte Carlo, just now)
            if driver.quantity != self.own and driver.agrees is False and words not in unsteady:
                # the output above may agree where the run's driver does not (a kink only the step time has)
                out.append(f"for {words}, the first order and the Monte Carlo disagree (sd {_q(driver.std, unit)} "
                           f"against {_q(driver.monte_carlo.std, unit)}, more than {AGREEMENT:g} standard errors "
                           f"apart), whatever they do for the output above: read the run's Monte Carlo percentiles")
        out.append("energy E_train: mlsysim's, each replica's roofline step (compute, memory, overhead) at its share "
                   "of TDP; communication and bubble time are not charged" if self.energy is not None else
                   "energy E_train: unknown (the accelerator has no TDP)")
        return tuple(out)

    _HEADER = ("run output", "value", "sd", "MC mean", "MC " + " / ".join(map(str, PERCENTILES)) + " %")

    def lines(self) -> list:
        mc = self.step.monte_carlo is not None
        header = self._HEADER if mc else self._HEADER[:3]
        rows = [r if mc else r[:3] for r in self._rows()]
        return (wrap(self._head(), "  ") + text_table(rows, header, indent="  ", align="lrrrr", width=WIDTH)
                + [x for n in self._notes() for x in wrap(n, "  ")])

    def __str__(self) -> str:
        return "\n".join(self.lines())

    __repr__ = __str__

    def _repr_html_(self) -> str:
        e = html.escape
        mc = self.step.monte_carlo is not None
        header = self._HEADER if mc else self._HEADER[:3]
        return (f"<p>{e(self._head())}</p>" + html_table([r if mc else r[:3] for r in self._rows()], header)
                + "".join(f"<p>{e(n)}</p>" for n in self._notes()))

    def to_dict(self) -> Dict[str, object]:
        """Plain Python values: the run, the spread of the step time and of the energy per replica step (None
        without a TDP), and each run output's (SI units; ``cost`` None without a price, ``energy`` without a TDP)."""
        def spread(value, std, mc, **unit):
            return {**unit, "value": value, "std": std, "monte_carlo": None if mc is None else {
                "mean": _plain(mc["mean"]), "std": _plain(mc["std"]),
                "percentiles": {str(k): _plain(v) for k, v in mc["percentiles"].items()}}}

        def driver(u):
            mc = u.monte_carlo
            out = spread(u.value, u.std, None if mc is None else
                         {"mean": mc.mean, "std": mc.std, "percentiles": mc.percentiles})
            if mc is not None:      # a few extreme draws set its mean and sd (MonteCarlo.unsteady)
                out["monte_carlo"]["unsteady"] = mc.unsteady
            return out
        out = {"tokens": self.plan.tokens, "steps": self.plan.steps, "price_per_accelerator_hour": self.plan.price,
               "step_time": driver(self.step),
               "energy_per_replica_step": None if self.energy is None else driver(self.energy),
               "cost": None, "energy": None}
        for name in self.slopes:
            out[_RUN_KEYS[name]] = spread(self.value(name), self.std(name), self.monte_carlo(name),
                                          unit=notation.entry(name).unit)
        out["days"] = spread(self.value("days"), self.std("days"), self.monte_carlo("days"), unit="d")
        out["notes"] = list(self._notes())
        return out


def _scale_of(xs) -> float:
    """The scale a row of a run's amounts is written at: millions from a million up (a cell of three costs of ten
    digits would not fit a terminal), none beyond 1e15 (written as powers of ten, as the plan writes them); the
    row's first amount, its value, sets it (a percentile far above it would write the value as 7.437e-05 M)."""
    top = abs(xs[0]) if xs else 0.0
    return 1e6 if 1e6 <= top < 1e15 else 1.0


def _amounts(xs, scale: float = 1.0) -> str:
    """A run's amounts for a person, ``/``-separated, as the plan prints them, at ``scale`` (``M``: millions); an
    amount a thousand times beyond its row's scale (a percentile of a spread that reaches the edge of a parameter's
    range) as a power of ten, which fits a terminal."""
    def one(x):
        if abs(x) >= 1e9 * scale:
            return f"{x / scale:.4g}"
        return f"{x / 1e6:.4g}" if scale == 1e6 else _amount(x)
    return " / ".join(map(one, xs)) + (" M" if scale == 1e6 else "")


def _plain(x):
    if x is None:
        return None
    return None if math.isnan(x) or math.isinf(x) else float(x)


def _q(x, unit: str, digits: int = 4) -> str:
    return quantity(x, unit, digits)


def _elastic(e) -> str:
    if e is None or (isinstance(e, float) and math.isnan(e)):
        return "-"
    return "0" if e == 0 else f"{e:+.3g}"


def _pct(x, sign: bool = True, digits: int = 3) -> str:
    if x is None or math.isnan(x):
        return "-"
    if math.isinf(x):
        return "inf"
    return f"{100 * x:+.{digits}g} %" if sign else f"{100 * x:.{digits}g} %"


# --------------------------------------------------------------------------------------
# The computation
# --------------------------------------------------------------------------------------

def _first_order(table, sig: Dict[str, float]):
    """Per parameter: ``(name, symbol, value, sigma, derivative, elasticity, contribution, kink, below, above,
    jump, one-sided elasticities)``."""
    rows = {r.parameter: r for r in table.rows}
    out = []
    for name, s in sig.items():
        x = by_argument()[name].symbol
        v = table.values.get(x)
        if v is None and by_argument()[name].fidelity == "extended" and table.variant.fidelity != "extended":
            raise ValueError(f"uncertainty(): sigma[{name!r}]: an argument of the extended model: pass "
                             f"fidelity='extended'")
        if v is None:
            raise ValueError(f"uncertainty(): sigma[{name!r}]: no value for "
                             f"{table.configuration.split(':')[0]} (the workload or fleet does not set it): "
                             "nothing to vary")
        v = float(v)
        r = rows.get(name)
        if r is None:                                   # the output does not read it: no effect
            out.append((name, x, v, s, 0.0, 0.0, 0.0, None, None, None, False, None))
        elif r.kink is None:
            out.append((name, x, v, s, r.derivative, r.elasticity, abs(r.derivative * s * v), None, None, None,
                        False, None))
        else:
            below, above = abs(r.left.derivative * s * v), abs(r.right.derivative * s * v)
            side = r.left if below >= above else r.right           # the larger one-sided derivative
            out.append((name, x, v, s, side.derivative, side.elasticity, max(below, above), r.kink, below, above,
                        r.jump, (r.left.elasticity, r.right.elasticity)))
    return out


def _field_of(quantity: str) -> Optional[str]:
    for f, q in OUTPUTS.items():
        if q == quantity:
            return f
    return None


#: Monte Carlo draws evaluated at once; more are drawn and evaluated in blocks of this many (the same draws:
#: each parameter's normals continue one stream, whatever the block), keeping only the outputs.
BLOCK = 1 << 20
#: Bytes per draw of a block in flight besides the parameters' draws: the normals, the sweep's output, its masks
#: and its evaluation's temporaries (:data:`mlsysim_sym._chunks.TEMPORARIES` arrays of one chunk aside).
BLOCK_BYTES_PER_DRAW = 8 * 6


def memory_needed(samples: int, parameters: int) -> int:
    """Bytes a Monte Carlo of ``samples`` draws of ``parameters`` parameters takes at its peak: the outputs kept
    for the statistics and the percentiles (8 B per draw) and one block of draws in flight."""
    block = min(samples, BLOCK)
    return 8 * samples + (8 * parameters + BLOCK_BYTES_PER_DRAW) * block


def _refuse(samples: int, parameters: int, max_memory) -> None:
    """:class:`~mlsysim_sym.sweeps.SweepTooLarge` when :func:`memory_needed` exceeds the memory budget."""
    _chunks.refuse(memory_needed(samples, parameters), f"uncertainty(samples={samples:,})",
                   "lower samples= or pass max_memory=", max_memory,
                   cli=(f"--samples {samples:,}", "give fewer samples"))


def _streams(seed: int, parameters: int, samples: int, blocks: bool):
    """One generator per parameter, each where parameter ``i``'s normals begin in the single stream of
    ``default_rng(seed)`` that draws ``samples`` normals per parameter in turn (found by drawing through the
    earlier parameters' normals, a block at a time, when ``blocks``; else the one generator, drawn in turn)."""
    rng = np.random.default_rng(seed)
    if not blocks:
        return [rng] * parameters
    out = []
    for i in range(parameters):
        g = np.random.Generator(type(rng.bit_generator)())
        g.bit_generator.state = rng.bit_generator.state
        out.append(g)
        if i < parameters - 1:
            for start in range(0, samples, BLOCK):
                rng.standard_normal(min(BLOCK, samples - start))
    return out


def _monte_carlo(arguments, quantity, first, samples: int, seed: int, max_memory=None):
    """``(MonteCarlo, clipped fraction per parameter)``: refused before any draw (:class:`SweepTooLarge`) when
    :func:`memory_needed` exceeds the memory budget; evaluated whole up to :data:`BLOCK` draws, in blocks
    beyond (the same draws, the statistics summed block by block)."""
    name = _field_of(quantity)
    if name is None:
        raise ValueError(f"uncertainty(): Monte Carlo evaluates the output with sweep(), which has no result "
                         f"field for {quantity!r}; use one of {', '.join(OUTPUT_ALIASES)} or a sweep output")
    _refuse(samples, len(first), max_memory)
    blocks = samples > BLOCK
    streams = _streams(seed, len(first), samples, blocks)
    y = np.empty(samples) if blocks else None
    hit = np.zeros(samples, dtype=bool)         # the kept draws some parameter's domain clipped
    filled, clipped_count = 0, {p: 0 for (p, *_rest) in first}
    for start in range(0, samples, BLOCK) if blocks else (0,):
        n = min(BLOCK, samples - start) if blocks else samples
        draws, was = {}, np.zeros(n, dtype=bool)
        for g, (p, _, v, s, *_rest) in zip(streams, first):
            x = v * (1.0 + s * g.standard_normal(n))
            lo, hi = domain(p, v)
            out_of = (x < lo) | (x > hi)
            clipped_count[p] += int(np.count_nonzero(out_of))
            was |= out_of
            draws[p] = np.clip(x, lo, hi, out=x)
        r = sweep_arguments(arguments.replace(**draws), grid=False, outputs=[name])
        out = np.asarray(r[name], dtype=float)
        keep = np.asarray(np.broadcast_to(r.valid, out.shape)) & np.isfinite(out)
        out = out[keep]
        hit[filled:filled + out.size] = was[keep]
        if not blocks:
            y = out
            filled = out.size
        else:
            y[filled:filled + out.size] = out
            filled += out.size
        del draws, r, out
    clipped = {p: c / samples for p, c in clipped_count.items()}
    y = y[:filled]
    hit = hit[:filled]
    n = filled
    unclipped = y[~hit] if hit.any() else None
    sd_unclipped = float(unclipped.std(ddof=1)) if unclipped is not None and unclipped.size >= 2 else None
    if n < 2:
        nan = float("nan")
        return MonteCarlo(samples, n, seed, nan, nan, nan, nan, {k: nan for k in PERCENTILES}), clipped
    if not blocks:
        mean, sd = float(y.mean()), float(y.std(ddof=1))
        m4 = float(np.mean((y - mean) ** 4))
        pct = dict(zip(PERCENTILES, map(float, np.percentile(y, PERCENTILES))))
    else:       # block by block (no temporary the size of the draws), the percentiles in place
        mean = math.fsum(float(y[i:i + BLOCK].sum()) for i in range(0, n, BLOCK)) / n
        m2 = math.fsum(float(np.sum((y[i:i + BLOCK] - mean) ** 2)) for i in range(0, n, BLOCK))
        m4 = math.fsum(float(np.sum((y[i:i + BLOCK] - mean) ** 4)) for i in range(0, n, BLOCK)) / n
        sd = math.sqrt(m2 / (n - 1))
        pct = dict(zip(PERCENTILES, map(float, np.percentile(y, PERCENTILES, overwrite_input=True))))
    se = math.sqrt(max(m4 - sd ** 4 * (n - 3) / (n - 1), 0.0) / n) / (2 * sd) if sd > 0 else 0.0
    return MonteCarlo(samples, n, seed, mean, sd, se, sd / math.sqrt(n), pct, sd_unclipped), clipped


def uncertainty(model, fleet, sigma: Mapping[str, float], output: str = "mfu", *, samples: Optional[int] = None,
                seed: int = 0, max_memory=None, tokens=None, steps=None, price_per_gpu_hour=None,
                **solve_kwargs) -> Uncertainty:
    """The spread of ``output`` when each parameter of ``sigma`` has that relative standard deviation.

    Parameters
    ----------
    model, fleet
        As in :meth:`mlsysim_sym.DistributedModel.solve`.
    sigma
        Parameter name (a continuous sensitivity row: ``solve()`` keyword or record field, see
        :data:`UNCERTAIN`) -> relative standard deviation (0.1 for 10 %), finite and >= 0.
    output
        As in :func:`mlsysim_sym.sensitivities` (``"mfu"``, ``"step_time"``, ...).
    samples
        Monte Carlo draws (``None``: first order only); ``seed`` seeds numpy's ``default_rng``. Beyond
        :data:`BLOCK` draws they are drawn and evaluated in blocks (the same draws); a Monte Carlo whose
        outputs (8 B a draw) and one block would not fit the memory budget is refused before any draw
        (:class:`~mlsysim_sym.sweeps.SweepTooLarge`, a ``MemoryError`` with a one-line message).
    max_memory
        Bytes the Monte Carlo may take (default: :func:`mlsysim_sym._chunks.memory_budget`, the tightest of the
        cgroup limit, ``ulimit -v`` and the memory available).
    tokens, steps, price_per_gpu_hour
        A run of ``tokens`` (or ``steps``) on the configuration, as :func:`mlsysim_sym.plan` takes them: the
        result's :attr:`Uncertainty.run` (a :class:`RunSpread`) then gives how far its wall-clock time,
        accelerator-hours, energy and (with a price) cost spread, from the uncertainty of the step time (and of
        the energy per replica step) under the same sigmas (and draws).
    **solve_kwargs
        ``solve()``'s keyword arguments (checked and warned about as ``solve()`` does).
    """
    sig = _check_sigma(sigma)
    if max_memory is not None:
        _chunks.check_max_memory(max_memory)
    if samples is not None and (isinstance(samples, bool) or not isinstance(samples, (int, np.integer))
                                or samples < 2):
        raise ValueError(f"uncertainty(): samples must be a whole number >= 2 (or None), got {samples!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"uncertainty(): seed must be a whole number >= 0, got {seed!r}")
    if samples is not None:                 # refused before the derivatives too
        _refuse(int(samples), len(sig), max_memory)
    if price_per_gpu_hour is not None and tokens is None and steps is None:
        raise ValueError("uncertainty(): price_per_gpu_hour needs tokens or steps (the run to price)")
    try:
        table = sensitivities(model, fleet, output, **solve_kwargs)
    except TypeError as e:              # an unknown keyword: named as the call the user made
        if not str(e).startswith("sensitivities() got an unexpected keyword"):
            raise
        raise TypeError(str(e).replace("sensitivities()", "uncertainty()", 1).replace(
            "; allowed: ", "; allowed: samples, seed, max_memory, tokens, steps, price_per_gpu_hour, ", 1)) from None
    plan = None
    if tokens is not None or steps is not None:         # checked before any draw
        from ..solver import price
        with warnings.catch_warnings():                 # sensitivities() warned already
            warnings.simplefilter("ignore")
            point = price(table.context)
        plan = plan_of(point, tokens, steps, price_per_gpu_hour)
    first = _first_order(table, sig)
    mc, clipped = (None, {}) if samples is None else _monte_carlo(table.context, table.quantity, first, int(samples),
                                                                  seed, max_memory)
    total = sum(c[6] ** 2 for c in first)
    terms = tuple(Term(p, x, v, s, d, e, c, c * c / total if total else 0.0, domain(p, v), kink, below, above, jump,
                       clipped.get(p), sides)
                  for (p, x, v, s, d, e, c, kink, below, above, jump, sides) in first)
    terms = tuple(sorted(terms, key=lambda t: -t.contribution))
    u = Uncertainty(output, table.quantity, float(table.value), terms, table.configuration, table.regime, mc)
    if plan is None:
        return u
    slopes = run_slopes(point, tokens, steps, price_per_gpu_hour)

    def of(quantity: str, output: str) -> Uncertainty:
        """The uncertainty of a run output's driver under the same sigmas and draws (``u`` itself when it is)."""
        if table.quantity == quantity:
            return u
        with warnings.catch_warnings():                 # the same configuration: warned about once, above
            warnings.simplefilter("ignore")
            return uncertainty(model, fleet, sigma, output, samples=samples, seed=seed, max_memory=max_memory,
                               **solve_kwargs)
    energy = of("energy", "energy") if "E_train" in slopes else None
    return dataclasses.replace(u, run=RunSpread(plan, of("T_step", "step_time"), slopes, energy, table.quantity))
