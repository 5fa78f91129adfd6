r"""How long and how much a run costs: a token budget (or a number of steps) on one priced step, as sympy
expressions.

A configuration's step (:func:`mlsysim_sym.solve`) trains ``B_step S`` tokens in ``T_step``, ``B_step = min(B,
N_DP b)`` samples: each of the ``N_DP`` replicas prices its local batch ``b = max(1, floor(B / N_DP))``, as mlsysim
does, so a batch that does not split evenly is priced (and trained) rounded down to a multiple of ``N_DP``, and one
smaller than ``N_DP`` leaves replicas idle. A run of ``D`` tokens takes ``K = ceil(D / (B_step S))`` steps, and:

* wall-clock time ``T_train = K T_step``;
* accelerator-hours ``K T_step N / 3600``;
* energy ``E_train = K N_DP E_rep``: the model's own energy per step, mlsysim's replica energy (TDP times the
  idle share plus the dynamic share at the replica's HFU, over its roofline step) times the replicas; the time a
  step spends communicating is not charged beyond it, as mlsysim does not;
* cost ``C_train`` at a price per accelerator-hour;
* tokens a second ``R_tok = B_step S / T_step``, ``R_tok / N`` per accelerator (the figure training frameworks
  publish, tokens per second per GPU).

:data:`PLAN` holds these expressions (printable in the book's notation: ``\TrainingStepCount``,
``\TrainingTime``, ``\TrainingCost``, ``\AcceleratorHourlyPrice``); :func:`plan_of` evaluates them at a
priced step (``DistributedResult.plan``). The entry points that price the step first are
:mod:`mlsysim_sym.planning`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import sympy as sp

from . import notation
from .display import capacity_words, fit_words, html_text, key_values, quantity, wrap
from .model import Variant, build_model
from .schedules import RULES
from .symbols import sym

T = r"\text"
_PLAN_SYMBOLS = (
    ("D_tok", rf"D_{{{T}{{tok}}}}", None, "tokens to train on", "1", {"positive": True}),
    ("K_steps", "K", r"\TrainingStepCount", "optimizer steps of the run", "1", {"integer": True, "positive": True}),
    ("R_hour", rf"R_{{{T}{{GPU/hr}}}}", r"\AcceleratorHourlyPrice", "price of one accelerator for one hour", "$",
     {"nonnegative": True}),
)
for _name, _latex, _book, _meaning, _unit, _assume in _PLAN_SYMBOLS:
    notation.declare(_name, _latex, _meaning, _unit, "plan", _book)
_S = {row[0]: notation.symbol(row[0], **row[5]) for row in _PLAN_SYMBOLS}

_PLAN_QUANTITIES = (
    ("T_train", rf"T_{{{T}{{train}}}}", r"\TrainingTime", "s", "wall-clock time of the run"),
    ("H_acc", rf"H_{{{T}{{GPU}}}}", None, "h", "accelerator-hours of the run"),
    ("E_train", rf"E_{{{T}{{train}}}}", None, "J", "energy of the run (the model's energy per step)"),
    ("C_train", rf"C_{{{T}{{train}}}}", r"\TrainingCost", "$", "cost of the run at the price per accelerator-hour"),
    ("R_tok", rf"R_{{{T}{{tok}}}}", None, "tok/s", "tokens trained per second by the fleet"),
    ("R_tok_acc", rf"R_{{{T}{{tok/GPU}}}}", None, "tok/s", "tokens trained per second per accelerator"),
)
for _name, _latex, _book, _unit, _meaning in _PLAN_QUANTITIES:
    notation.declare(_name, _latex, _meaning, _unit, "plan", _book)


def model_symbols() -> Dict[str, sp.Symbol]:
    m = build_model(Variant())
    return {n: m.quantity(n).symbol for n in ("T_step", "N", "dp", "energy", "lb")}


def samples_per_step() -> sp.Basic:
    """``B_step = min(B, N_DP b)``: the samples a step trains (its replicas' local batches, none beyond ``B``)."""
    q = model_symbols()
    return sp.Min(sym.B, q["dp"] * q["lb"])


def steps_for(tokens) -> sp.Basic:
    """``K = ceil(D / (B_step S))``: the steps that train on ``tokens`` (a number or the symbol ``D``)."""
    return sp.ceiling(tokens / (samples_per_step() * sym.s))


def _plan() -> Dict[str, sp.Basic]:
    q, K, R = model_symbols(), _S["K_steps"], _S["R_hour"]
    t_train = K * q["T_step"]
    hours = t_train * q["N"] / 3600
    tokens = samples_per_step() * sym.s / q["T_step"]
    return {"K_steps": steps_for(_S["D_tok"]), "T_train": t_train, "H_acc": hours,
            "E_train": K * q["dp"] * q["energy"], "C_train": hours * R,
            "R_tok": tokens, "R_tok_acc": tokens / q["N"]}


#: The plan's expressions, by name (in the step model's quantities and parameters, ``K``, ``D`` and the price).
PLAN: Dict[str, sp.Basic] = _plan()


@dataclass(frozen=True)
class TrainingPlan:
    """A run on one configuration: ``tokens`` (None when it was given in steps), ``steps``, ``step_time`` (s),
    ``wall_time`` (s), ``accelerator_hours``, ``energy`` (J), ``cost`` (None without a price), the ``price`` per
    accelerator-hour, the configuration it describes, and its ``memory`` per accelerator (B) with ``fits``, whether
    the training state fits in HBM (a state that does not is priced spilling to host memory, as ``solve()``
    prices it), and ``notes``, what the step's model leaves out (``to_dict()``'s ``notes`` are :meth:`caveats`)."""

    configuration: str
    tokens: Optional[float]
    tokens_per_step: int
    steps: int
    step_time: float
    accelerators: int
    wall_time: float
    accelerator_hours: float
    energy: float
    price: Optional[float]
    cost: Optional[float]
    memory: float = 0.0
    capacity: Optional[float] = None
    fits: bool = True
    runnable: bool = True       # whether a framework runs the layout (mlsysim_sym.schedules.can_run)
    samples_per_step: int = 0   # the samples a step trains (B_step = min(B, N_DP b)), beside the batch given
    batch: int = 0
    replicas: int = 1
    tdp: Optional[float] = None  # W, one accelerator's (the energy's upper bound: every accelerator at TDP)
    notes: Tuple[str, ...] = ()  # what the step's model leaves out (DistributedResult's model notes)
    settings: Optional[Dict[str, object]] = None   # the configuration as solve()'s keywords (Arguments.to_dict())
    why_not_runnable: str = ""  # the can_run() rules the layout breaks, in words (Arguments.why_not_runnable())
    per_node: Tuple[int, int] = (0, 0)   # accelerators a node holds by its record, and those the call uses of each
    tokens_per_second: float = 0.0                  # R_tok, the fleet's
    tokens_per_second_per_accelerator: float = 0.0  # R_tok / N

    @property
    def days(self) -> float:
        return self.wall_time / 86400

    def to_dict(self) -> Dict[str, object]:
        return {"configuration": self.settings if self.settings is not None else self.configuration,
                "configuration_line": self.configuration, "tokens": self.tokens,
                "tokens_per_step": self.tokens_per_step,
                "steps": self.steps, "step_time": self.step_time, "tokens_per_second": self.tokens_per_second,
                "tokens_per_second_per_accelerator": self.tokens_per_second_per_accelerator,
                "accelerators": self.accelerators,
                "wall_time": self.wall_time, "days": self.days, "accelerator_hours": self.accelerator_hours,
                "energy": self.energy, "energy_MWh": self.energy / 3.6e9, "price_per_accelerator_hour": self.price,
                "cost": self.cost, "memory_per_accelerator": self.memory, "memory_capacity": self.capacity,
                "fits": self.fits, "runnable": self.runnable, "samples_per_step": self.samples_per_step,
                "batch_size": self.batch, "data_parallel_replicas": self.replicas, "tdp": self.tdp,
                "idle_accelerators": self.idle, "notes": self.caveats()}

    def _rows(self):
        rows = [("tokens D_tok", f"{self.tokens:.4g} ({self.tokens_per_step:,} per step)" if self.tokens is not None
                 else f"{self.steps * self.tokens_per_step:.4g} ({self.tokens_per_step:,} per step)")]
        rows += [("steps K", _amount(self.steps)),
                 ("step time T_step", quantity(self.step_time, "s")),
                 ("tokens a second R_tok", f"{_amount(self.tokens_per_second)} tokens/s, "
                  f"{_amount(self.tokens_per_second_per_accelerator)} per GPU"),
                 ("wall-clock time T_train", f"{quantity(self.wall_time, 's')} = {_days(self.days)} days"),
                 ("accelerator-hours H_GPU", f"{_amount(self.accelerator_hours)} GPU-h on {self.accelerators:,} GPUs"),
                 ("energy E_train", f"{_amount(self.energy / 3.6e9)} MWh (roofline time only: see below)"
                  if self.energy > 0 else "unknown (no TDP)")]
        if self.cost is not None:
            rows.append(("cost C_train", f"${_amount(self.cost)} at ${self.price:g} per GPU-hour"))
        of = "" if self.capacity is None else f" of {capacity_words(self.capacity)} HBM"
        # whether it fits on a row of its own: beside the capacity it passed 80 columns ("fits, 97 % full")
        rows += [("memory per accelerator M_total", f"{quantity(self.memory, 'B')}{of}"),
                 ("  in HBM", fit_words(self.memory, self.capacity, self.fits))]
        return rows

    def _uneven(self):
        """The sentence that says a step trains fewer samples than the batch given, or fewer than solve() prices
        (none when it trains them all)."""
        if self.batch < self.replicas:      # mlsysim gives every replica one sample: solve() prices N_DP of them
            return [f"the batch of {self.batch:,} is smaller than the {self.replicas:,} data-parallel replicas: "
                    f"solve() prices a step as every replica training one sample ({self.replicas:,} samples; its "
                    f"throughput and MFU count those, as mlsysim's), the run counts the {self.batch:,} the batch "
                    f"holds: {self.replicas - self.batch:,} replicas' work trains nothing"]
        if self.samples_per_step >= self.batch:
            return []
        b = self.samples_per_step // self.replicas
        return [f"the batch of {self.batch:,} does not split evenly over {self.replicas:,} data-parallel "
                f"replicas: a step is priced at {b:,} sample{'s' if b > 1 else ''} a replica, "
                f"{self.samples_per_step:,} in all, and the run counts those (as solve() prices the step)"]

    @property
    def idle(self) -> int:
        """Accelerators the fleet's nodes hold beside those the run uses (the call sets fewer a node than the
        record's): not counted in the accelerator-hours, energy or cost."""
        held, used = self.per_node
        return (held - used) * (self.accelerators // used) if used and held > used else 0

    def caveats(self) -> List[str]:
        """What the run's numbers rest on, one sentence each: a batch that does not split evenly, accelerators
        the nodes hold beside those used, a state that does not fit in HBM, a layout no framework runs (the plan's
        text and an uncertainty's run give them)."""
        out = self._uneven()
        if self.idle:
            held, used = self.per_node
            out += [f"the run uses {used} of each node's {held} accelerators ({self.accelerators:,} of "
                    f"{self.accelerators + self.idle:,}): the accelerator-hours, energy and cost count the "
                    f"{self.accelerators:,} in use, not the {self.idle:,} left idle"]
        out += [] if self.fits else ["the training state does not fit in HBM: each step is priced spilling to "
                                     "host memory, as solve() prices it"]
        out += [] if self.runnable else [f"no framework runs this layout as given: "
                                         f"{self.why_not_runnable or '(' + RULES + ')'}; it is priced as solve() "
                                         "prices it"]
        return out + list(self.notes)

    def __str__(self) -> str:
        spill = wrap("energy: mlsysim's, each replica's roofline step (compute, memory, overhead) at its share "
                     "of TDP; communication and bubble time are not charged (the accelerators at TDP for the whole "
                     f"run: {_amount(self.accelerator_hours * self.tdp / 1e6)} MWh, an upper bound)") \
            if self.energy > 0 and self.tdp else []
        spill += [line for c in self.caveats() for line in wrap(c)]
        return "\n".join(wrap(f"configuration: {self.configuration}", "") + key_values(self._rows(), indent="  ")
                         + spill)

    def _repr_html_(self) -> str:
        return html_text(str(self))

    __repr__ = __str__


def positive(name: str, v, whole: bool = False) -> float:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
    if ok and whole:
        ok = float(v).is_integer()
    if not ok:
        raise ValueError(f"{name} must be {'a whole number >= 1' if whole else 'a finite number > 0'}, got {v!r}")
    return v


def _values(result, tokens=None, steps=None, price_per_gpu_hour=None):
    """``(values, steps, samples a step trains)``: what :data:`PLAN`'s expressions read at the run of ``tokens``
    (or ``steps``) on the configuration ``result`` prices, checked."""
    if (tokens is None) == (steps is None):
        raise ValueError("give tokens (the run's training tokens) or steps (its optimizer steps), one of them")
    if price_per_gpu_hour is not None and not (isinstance(price_per_gpu_hour, (int, float))
                                               and not isinstance(price_per_gpu_hour, bool)
                                               and math.isfinite(price_per_gpu_hour) and price_per_gpu_hour >= 0):
        raise ValueError(f"price_per_gpu_hour must be a finite number >= 0, got {price_per_gpu_hour!r}")
    a = result.arguments
    batch, seq = int(a["batch_size"]), int(a["seq_len"])
    q = model_symbols()
    dp = result.parallelism["dp"]
    values = {q["T_step"]: result.step_latency_total, q["N"]: a.accelerators, q["dp"]: dp,
              q["energy"]: result.node_profile.energy, sym.B: batch, sym.s: seq,
              q["lb"]: build_model(Variant()).definition("lb").xreplace({sym.B: batch, q["dp"]: dp}),
              _S["R_hour"]: price_per_gpu_hour if price_per_gpu_hour is not None else 0}
    samples = int(samples_per_step().xreplace(values))
    if tokens is not None:
        positive("tokens", tokens)
        values[_S["D_tok"]] = sp.Integer(int(tokens)) if float(tokens).is_integer() else sp.Float(tokens)
        k = int(PLAN["K_steps"].xreplace(values))
    else:
        k = int(positive("steps", steps, whole=True))
    values[_S["K_steps"]] = k
    return values, k, samples


def plan_of(result, tokens=None, steps=None, price_per_gpu_hour=None) -> TrainingPlan:
    """The plan of a run of ``tokens`` (or ``steps``) on the configuration ``result`` prices (a
    :class:`~mlsysim_sym.solver.DistributedResult`), at a price per accelerator-hour when given."""
    values, k, samples = _values(result, tokens, steps, price_per_gpu_hour)
    a = result.arguments
    batch, seq = int(a["batch_size"]), int(a["seq_len"])
    num = {n: float(e.xreplace(values)) for n, e in PLAN.items() if n != "K_steps"}     # K: counted above
    words = {"T_train": "wall-clock time", "H_acc": "accelerator-hours", "E_train": "energy", "C_train": "cost"}
    over = [f"{words[n]} {x:g}" for n, x in num.items() if n in words and not math.isfinite(x)
            and (n != "C_train" or price_per_gpu_hour is not None)]
    if over:      # as the JSON refuses them: a person's table would print inf or a 300-digit number
        raise ValueError(f"the run's {', '.join(over)} is not finite at these values (a step of "
                         f"{result.step_latency_total:.4g} s, {k:.4g} steps): an extreme input")
    runs = result.runnable          # None where a count is beyond int64: not said either way
    return TrainingPlan(result.configuration, None if tokens is None else float(tokens), samples * seq, k,
                        result.step_latency_total, a.accelerators, num["T_train"], num["H_acc"], num["E_train"],
                        price_per_gpu_hour, None if price_per_gpu_hour is None else num["C_train"],
                        result.node_profile.memory_footprint, result.memory_capacity,
                        bool(result.node_profile.feasible), runs is not False, samples, batch,
                        result.parallelism["dp"], a.values.get(sym.TDP), tuple(result._model_notes()), a.to_dict(),
                        a.why_not_runnable() if runs is False else "",
                        (int(a.fleet.node.accelerators_per_node), int(a.get("accelerators_per_node",
                                                                             a.fleet.node.accelerators_per_node))),
                        num["R_tok"], num["R_tok_acc"])


#: The run's outputs, each with the quantity of the step model it is linear in through zero (its driver): the
#: time, accelerator-hours and cost are ``K T_step`` times what the step time does not change (the accelerators, the
#: price); the energy ``E_train = K N_DP E_rep`` is the energy per replica step times what that does not change. So
#: each spreads as its driver does, scaled by the exact derivative of :data:`PLAN`'s expression in the driver.
DRIVERS = {"T_train": "T_step", "H_acc": "T_step", "E_train": "energy", "C_train": "T_step"}


def run_slopes(result, tokens=None, steps=None, price_per_gpu_hour=None) -> Dict[str, float]:
    """``d(output)/d(driver)`` of each of the run's outputs at the run (:data:`DRIVERS`; ``C_train`` only with a
    price, ``E_train`` only with an energy, i.e. a TDP): the derivatives of :data:`PLAN`'s expressions, exact,
    constant in the driver."""
    values, _, _ = _values(result, tokens, steps, price_per_gpu_hour)
    q = model_symbols()
    names = [n for n in DRIVERS if (n != "C_train" or price_per_gpu_hour is not None)
             and (n != "E_train" or result.node_profile.energy > 0)]
    return {n: float(sp.diff(PLAN[n], q[DRIVERS[n]]).xreplace(values)) for n in names}


def _days(x: float) -> str:
    """Days for a person: one decimal, thousands separated, from 100 up; 3 significant digits below (2.48, not
    2.5); a power of ten beyond a double's digits. A plan's wall-clock time and the node counts that finish it in
    time say the same days (263.5, where one said 263).

    >>> _days(263.45), _days(2.4849), _days(0.0239), _days(12345.6), _days(2e15)
    ('263.4', '2.48', '0.0239', '12,345.6', '2e+15')
    """
    if abs(x) >= 1e15:
        return f"{x:.4g}"
    return f"{x:,.1f}" if abs(x) >= 100 else f"{x:.3g}"


def _amount(x: float) -> str:
    """A plan's amount for a person: whole, with thousands separators, from 100 up; 3 significant digits below
    (a one-step plan is 0.239 GPU-h, not 0)."""
    if abs(x) >= 1e15:        # digits beyond a double's precision: a power of ten, not 300 columns of them
        return f"{x:.4g}"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"
