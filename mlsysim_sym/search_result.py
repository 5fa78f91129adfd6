"""What :func:`mlsysim_sym.search` returns: :class:`Candidate` rows, best first, in a :class:`SearchResult` that
prints as a table for a terminal (the split as ``tp x pp x ep x dp``, in the extended model ``tp x pp x cp x dp``
and, for a mixture of experts laid out as frameworks lay it out, ``tp x pp x cp x dp, ep``; the schedule, a column
for each argument given as a list), as HTML in a notebook and as JSON (:meth:`SearchResult.to_dict`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Sequence, Tuple

from .display import WIDTH, html_table, key_values, number, quantity, si_prefix, text_table, wrap
from .solver import DistributedResult
from .symbols import Kind, by_argument


@dataclass(frozen=True)
class Candidate:
    """One ranked row: its ``solve()`` keywords, dp, the objective value and the full result.

    ``config`` holds every argument the search chose (the split's degrees, the schedule, and each other argument
    given as a list). ``config["zero_stage"]`` is the smallest ZeRO stage that fits among those that tie on the
    objective for this schedule; ``memory_by_zero`` maps each of those stages (ascending) to the memory per
    accelerator, in B, at it (``result`` is the solve at the kept stage).
    """

    config: Dict[str, Any]
    dp: int
    objective: float
    result: DistributedResult
    memory_by_zero: Dict[int, float] = field(default_factory=dict)

    @property
    def zero_stages(self) -> Tuple[int, ...]:
        """The ZeRO stages this row stands for (they tie on the objective and fit), ascending."""
        return tuple(sorted(self.memory_by_zero)) or (self.config["zero_stage"],)

    def to_dict(self) -> Dict[str, Any]:
        """The row as plain JSON-ready values (see :meth:`SearchResult.to_dict`)."""
        r = self.result
        row = {k: chosen_value(k, v) for k, v in self.config.items()}
        row.update(dp=int(self.dp), mfu=float(r.mfu), step_latency_total=float(r.step_latency_total),
                   effective_throughput=float(r.effective_throughput),
                   memory_per_accelerator=float(r.node_profile.memory_footprint),
                   memory_per_accelerator_by_zero_stage={str(z): float(b) for z, b in
                                                         sorted(self.memory_by_zero.items())},
                   notes=r._model_notes())
        return row


def _short(name: str) -> str:
    """An argument's short name in a table header (the parameter table's)."""
    return "precision" if name == "precision" else by_argument()[name].short


def chosen_value(name: str, v):
    """A chosen value as JSON takes it: a switch as a bool, a count as an int, anything else as a float (the
    precision as its name)."""
    if name == "precision":
        return str(v)
    p = by_argument()[name]
    if p.kind is Kind.FLAG and name != "zero_stage":
        return bool(v)
    if p.kind in (Kind.COUNT, Kind.FLAG):
        return int(v)
    return float(v)


def _stages(stages: Sequence[int]) -> str:
    """``0-3`` for a run of consecutive ZeRO stages, ``0,2`` otherwise."""
    s = list(stages)
    if len(s) > 2 and s == list(range(s[0], s[-1] + 1)):
        return f"{s[0]}-{s[-1]}"
    return ",".join(map(str, s))


def _memories(values: Sequence[float]) -> str:
    """Bytes per ZeRO stage under one SI prefix: ``41.5/18.3/14.3/10.4 GB``."""
    scale, prefix = si_prefix(max(values), "B")
    return "/".join(number(v / scale, 3) for v in values) + f" {prefix}B"


@dataclass(frozen=True)
class SearchResult:
    """Top rows of a search, best first, with the size of what was searched.

    ``searched`` counts the configurations the model can tell apart; ``unrunnable`` how many of
    them were left out by the schedule rules of :func:`can_run` (0 with ``runnable=False``);
    ``feasible`` how many of the rest fit in memory and were ranked (each ZeRO stage counted; tying
    stages then share one row in ``candidates``). ``split`` names the degrees of the split column that split the
    fleet (``tp x pp x ep x dp``; ``tp x pp x cp x dp`` in the extended model), ``extra`` the other arguments given
    as lists (a column each) and ``experts`` the expert degrees the split column shows after the replicas where
    expert parallelism is carved out of them (the extended model's ``moe_layout``: ``tp x pp x cp x dp, ep``, and
    ``x etp`` where it is not 1).
    """

    objective: str
    candidates: Tuple[Candidate, ...]
    searched: int
    feasible: int
    configuration: str = ""
    unrunnable: int = 0
    runnable: bool = True
    split: Tuple[str, ...] = ("tp_size", "pp_size", "ep_size")
    extra: Tuple[str, ...] = ()
    experts: Tuple[str, ...] = ()
    unpiped: bool = False           # the model reads m without a pipeline too (the extended model's transformers)

    @property
    def best(self) -> Candidate:
        return self.candidates[0]

    def notes(self) -> List[str]:
        """What the numbers of every row do not say (:mod:`mlsysim_sym.model_notes`, the notes all rows share: FP8
        priced at its peak in mlsysim's model, ...), as ``solve()``'s result says them below one configuration; a
        row's own are in its ``to_dict()`` (``notes``)."""
        per = [c.result._model_notes() for c in self.candidates]
        return [n for n in per[0] if all(n in p for p in per[1:])] if per else []

    def to_dict(self) -> Dict[str, Any]:
        """Plain values for JSON (``json.dumps`` takes it as is): ``objective``, ``configuration_line``,
        the counts ``searched``, ``feasible``, ``unrunnable``, whether the schedule rules were on
        (``runnable``), and ``results``, one dict per row, best first.

        Each row has its ``solve()`` keywords (``tp_size``, ``pp_size``, ``ep_size``, ``cp_size`` where the model
        prices context parallelism, ``etp_size`` where it lays a mixture of experts out as frameworks do,
        ``microbatch_count``, ``v_stages``, ``zero_stage``,
        ``activation_recomputation``, ``overlap_comm``, and each other argument the search varied), ``dp``,
        ``mfu``, ``step_latency_total`` (s), ``effective_throughput`` (samples/s), ``memory_per_accelerator``
        (B per accelerator at ``zero_stage``) and ``memory_per_accelerator_by_zero_stage`` (``{"0": B, ...}``:
        every stage that ties with it), and its ``notes`` (what its numbers do not say). ``searched_keywords`` names
        the keywords the rows choose; ``notes`` the notes every row has (:meth:`notes`).
        """
        return {"objective": self.objective, "configuration_line": self.configuration,
                "searched": int(self.searched), "feasible": int(self.feasible),
                "unrunnable": int(self.unrunnable), "runnable": bool(self.runnable),
                "searched_keywords": list(self.candidates[0].config) if self.candidates else [],
                "notes": self.notes(), "results": [c.to_dict() for c in self.candidates]}

    def _rows(self, stages: bool = True):
        """The table's rows; ``stages``: the memory at every tying ZeRO stage (else at the kept one only)."""
        rows = []
        for i, c in enumerate(self.candidates, 1):
            cfg, r = c.config, c.result
            piped = cfg["pp_size"] > 1
            mem = c.memory_by_zero or {cfg["zero_stage"]: r.node_profile.memory_footprint}
            split = " x ".join(str(cfg[k]) for k in self.split) + f" x {c.dp}"
            if self.experts:
                split += ", " + " x ".join(str(cfg[k]) for k in self.experts)
            extra = tuple(_cell(k, cfg[k]) for k in self.extra)
            rows.append((str(i), split, str(cfg["microbatch_count"]) if piped or self.unpiped else "-",
                         str(cfg["v_stages"]) if piped else "-", _stages(c.zero_stages),
                         number(cfg["activation_recomputation"]), number(cfg["overlap_comm"]), *extra,
                         f"{r.mfu:.4f}", quantity(r.step_latency_total, "s"), number(r.effective_throughput),
                         _memories([mem[z] for z in sorted(mem)] if stages else [mem[min(mem)]])))
        return rows

    def _header(self, html: bool = False):
        split = " x ".join(_short(k) for k in self.split) + " x dp"
        if self.experts:
            split += ", " + " x ".join(_short(k) for k in self.experts)
        words = ("microbatches", "virtual stages", "ZeRO stages", "recomputation", "overlap") if html else \
            ("m", "v", "ZeRO", "rec", "ovl")
        extra = tuple(_short(k) for k in self.extra)
        tail = ("MFU", "step", "samples/s", "memory/accelerator by ZeRO stage" if html else "memory/acc")
        return ("#", split, *words, *extra, *tail)

    def _head(self) -> str:
        left = (f"{self.unrunnable:,} left out as not runnable" if self.runnable
                else "schedule rules off: runnable=False")
        return (f"search of {self.configuration}: {self.feasible:,} feasible of {self.searched:,} "
                f"configurations ({left}), ranked by {self.objective}"
                + (" (each precision's MFU against its own peak)" if self.objective == "mfu" and "precision" in
                   self.extra else ""))

    def _legend(self) -> str:
        experts = ""
        if self.experts:
            ranks = "tp x dp x cp" if "cp_size" in self.split else "tp x dp"
            experts = (f"ep: expert-parallel degree, carved out of a stage's {ranks} ranks"
                       + ("; etp: expert tensor-parallel degree" if "etp_size" in self.experts else "") + "; ")
        m = "m: microbatches (a step's passes, with or without a pipeline), " if self.unpiped else "m: microbatches, "
        return (experts + m + "v: virtual stages ('-': no pipeline); rec: activation recomputation; "
                "ovl: DP all-reduce overlapped; ZeRO: the stages that fit and tie on "
                f"{self.objective} (zero_stage is the first), memory/acc at each")

    def __str__(self) -> str:
        """The table within :data:`~mlsysim_sym.display.WIDTH` columns where it can be: a wide table first moves
        a column with one value in every row to the legend, then loses its indent, then the samples/s column
        (batch / step time; the step column where the search ranks by throughput), then the memory at every ZeRO
        stage but the kept one, then the step column too (the legend says which it left out); before those it
        heads a swept argument's column with its symbol (``η_ov``, named in the legend); one row still too wide prints
        a column a line."""
        rows, header, legend = self._rows(), self._header(), self._legend()
        wide = lambda indent="  ": max(map(len, text_table(rows, header, indent))) > WIDTH  # noqa: E731
        # the results' own columns stay, and one row is no pattern
        same = [i for i in range(1, len(header)) if len({r[i] for r in rows}) == 1 and header[i] not in
                ("MFU", "step", "samples/s", "memory/acc")] if len(rows) > 1 and wide() else []
        if same:
            legend += "; in every row: " + ", ".join(f"{header[i]} {rows[0][i]}" for i in same)
            rows = [tuple(c for i, c in enumerate(r) if i not in same) for r in rows]
            header = tuple(h for i, h in enumerate(header) if i not in same)
        if len(rows) > 1 and wide(""):   # still too wide: the swept arguments' columns by their symbols, named below
            renamed = {}             # column head -> (its symbol, its words)
            for k in (k for k in self.extra if k != "precision"):
                p = by_argument()[k]
                if _short(k) in header and len(p.text) < len(_short(k)):
                    renamed[_short(k)] = (p.text, p.words)
            if renamed:
                header = tuple(renamed[h][0] if h in renamed else h for h in header)
                legend += "; " + "; ".join(f"{s}: {w}" for s, w in renamed.values())
        dropped = []
        drop = "step" if "throughput" in self.objective else "samples/s"      # never the ranking's own column
        if wide("") and drop in header:
            rows, header = _without(rows, header, drop)
            dropped.append(drop)
        if wide("") and rows and "memory/acc" in header:       # the memory at the kept ZeRO stage only
            at = header.index("memory/acc")
            kept = [r[-1] for r in self._rows(stages=False)]
            rows = [r[:at] + (m,) + r[at + 1:] for r, m in zip(rows, kept)]
            legend = legend.replace("memory/acc at each", "memory/acc at zero_stage")
        for drop in ("step", "samples/s"):     # still too wide: the times go, unless the search ranks by one
            if wide("") and drop in header and not (drop == "samples/s" and "throughput" in self.objective):
                rows, header = _without(rows, header, drop)
                dropped.append(drop)
        if dropped:                  # said, not dropped silently: the JSON has every column
            legend += f"; left out for the width: {' and '.join(dropped)} (to_dict() and --json give every column)"
        if len(rows) == 1 and wide(""):      # one row too wide for a line: its columns one under another
            table = key_values(list(zip(header, rows[0])), "  ")
        else:
            table = text_table(rows, header, "" if wide() else "  ")
        return "\n".join(wrap(self._head(), "") + table + wrap(legend, "  ")
                         + [line for n in self.notes() for line in wrap("note: " + n, "")])

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return html_table(self._rows(), self._header(html=True), caption=self._head())


def _without(rows, header, column: str):
    """The table's rows and header without the column named ``column``."""
    at = header.index(column)
    return [r[:at] + r[at + 1:] for r in rows], header[:at] + header[at + 1:]


def _cell(name: str, v) -> str:
    """A value an extra axis chose, for the table (a switch as yes/no, a magnitude with its unit)."""
    if name == "precision":
        return str(v)
    p = by_argument()[name]
    if p.kind is Kind.FLAG and name != "zero_stage":
        return number(bool(v))
    return number(v) if p.unit == "1" else quantity(float(v), p.unit, 3)
