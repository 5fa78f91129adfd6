"""Pictures of results: a step-time breakdown, a tornado of elasticities, a sweep as a line or heatmap.

matplotlib is an optional extra (``pip install 'mlsysim-sym[plot]'``): it is imported
inside the functions, never when this module is imported. Each function draws on
``ax`` when one is given (its figure is left as it is), else on a new
``matplotlib.figure.Figure`` about 8 in wide (no pyplot, no global state); with
``path`` the figure is saved there as a PNG (150 dpi, tight bounding box). Each
returns the Figure.

* :func:`breakdown_chart`: ``DistributedResult`` -> one stacked bar of ``T_step`` split
  into the step's terms as the model adds them up (``docs/contract.md`` §2.8: ``T_sync = T_node +
  T_DP,exposed + T_TP + T_EP + T_bubble`` in mlsysim's model, with the extended model's CP exchange, pipeline
  sends and optimizer update where it has them), then the straggler.
* :func:`tornado`: ``Sensitivities`` -> horizontal bars of the elasticities, in the table's rank (the move that can improve the output most on top).
* :func:`sweep_chart`: ``SweepResult`` of one swept axis -> a line; of two -> a heatmap.

Numbers are printed with :mod:`mlsysim_sym.display`; outputs are named by their
meaning in :mod:`mlsysim_sym.notation`, swept arguments by their
:class:`~mlsysim_sym.symbols.Param`.
"""
from __future__ import annotations

import math
import textwrap
import warnings
from functools import lru_cache
from pathlib import Path
from typing import List, Optional, Tuple, Union

import numpy as np

from . import notation
from .display import number, quantity, si_prefix, written
from .outputs import field_named, quantity_of, words
from .symbols import BY_SYMBOL, by_argument

PathLike = Union[str, Path]
WIDTH = 8.0                 # in
FONT = 10                   # pt; nothing is drawn smaller than SMALL
SMALL = 9
#: At most this many labelled ticks on a line chart's x axis.
MAX_TICKS = 10
#: a heatmap writes its values in the cells up to this many columns
WRITTEN_COLUMNS = 14
POSITIVE, NEGATIVE = "#2b6ca3", "#c8553d"
#: counts whose unit ``"1"`` has a name
_COUNTED = {"batch_size": "samples", "seq_len": "tokens"}


def _mpl():
    """``(matplotlib.figure, matplotlib.patches)``, or the ImportError that says how to get them."""
    try:
        import matplotlib.figure
        import matplotlib.patches
    except ImportError:
        raise ImportError("pictures need matplotlib: pip install matplotlib (the package's [plot] extra)") from None
    return matplotlib.figure, matplotlib.patches


def _canvas(ax, height: float):
    """``(figure, axes)``: the caller's, or a new figure with constrained layout."""
    figure, _ = _mpl()
    if ax is not None:
        return ax.figure, ax
    fig = figure.Figure(figsize=(WIDTH, height), layout="constrained")
    return fig, fig.add_subplot()


def _legend(fig, ax, own: bool, note: str = "", **kw):
    """The legend outside the axes, so that it hides nothing: under the picture on a figure of our own
    (placed by constrained layout), right of the caller's axes in one column."""
    if own:
        return fig.legend(loc="outside lower center", ncol=2, frameon=False, fontsize=SMALL, title_fontsize=SMALL,
                          title=_wrap(note, 100) or None, **kw)
    return ax.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False, fontsize=SMALL,
                     title_fontsize=SMALL, title=_wrap(note, 40) or None, **kw)


def _finish(fig, path: Optional[PathLike]):
    if path is not None:
        fig.savefig(Path(path), dpi=150, bbox_inches="tight")
    return fig


def _wrap(text: str, width: int = 90) -> str:
    return "\n".join(textwrap.wrap(text, width, break_on_hyphens=False)) or text


def _scaled_unit(value: float, unit: str) -> Tuple[float, str]:
    """``(scale, written unit)`` for numbers of about ``value`` in ``unit`` (``1e-3, "ms"``)."""
    scale, prefix = si_prefix(value, unit)
    return scale, (prefix.replace("u", "\u00b5") + written(unit))


# ----------------------------------------------------------------------------------------------
# The step-time breakdown
# ----------------------------------------------------------------------------------------------

#: Colours of the step's terms, in reading order (the model says which terms a step has).
_PALETTE = ("#3a6fb0", "#e08a3c", "#c0392b", "#8e6bb8", "#d4a017", "#2a9d8f", "#8c8c8c", "#6b4226", "#b5838d")


def _segments(result) -> List[Tuple[str, float, str]]:
    """``(label, seconds, colour)`` of each term of ``T_step``: the step's terms as the model adds them up
    (:attr:`~mlsysim_sym.solver.DistributedResult.terms`, the addends of ``T_sync`` in reading order), the
    replica's roofline time split into its binding side and its overhead, then the straggler's stretch
    ``T_step - T_sync`` where ``f_s > 1``."""
    n = result.node_profile
    parts = []
    for i, (name, t) in enumerate(result.terms.items()):
        label = words(name)
        colour = _PALETTE[i % len(_PALETTE)]
        if name == "T_node":
            active = max(n.latency_compute, n.latency_memory)
            side = "compute (compute-bound)" if n.bottleneck == "Compute" else "memory traffic (memory-bound)"
            parts += [(f"replica {side}", active, colour),
                      ("replica overhead (dispatch, framework)", n.latency_overhead, "#9db8dc")]
            # the rest of T_node: an MoE card's token permutation in the extended model (T_perm)
            rest = t - active - n.latency_overhead
            if abs(rest) > 1e-12 * abs(t):
                perm = (result.extended or {}).get("permutation_latency")
                parts.append((f"replica {words('T_perm')}" if perm else "replica, other", rest, "#c6a4d9"))
        else:
            parts.append((label, t, colour))
    if result.straggler_latency:
        factor = result.arguments["straggler_factor"] if result.arguments is not None else None
        parts.append((f"straggler (x{factor:g})" if factor is not None else "straggler", result.straggler_latency,
                      "#4c9a5b"))
    return parts


def breakdown_chart(result, path: Optional[PathLike] = None, ax=None):
    """One horizontal bar of the step time ``T_step`` of a :class:`~mlsysim_sym.solver.DistributedResult`,
    stacked from the step's terms as the model adds them up (``result.terms``, ``docs/contract.md`` §2.8): the
    replica's roofline side (compute or memory, whichever binds) and its overhead (together ``T_node``), the DP
    communication left exposed after overlap, TP and EP communication, in the extended model the CP exchange,
    the pipeline sends and the optimizer update, the pipeline bubble, and the straggler's stretch
    ``T_step - T_sync`` (shown only when ``f_s > 1``). The widths sum to
    ``step_latency_total`` in the axis unit (s, ms, ...). Segments of at least 6 % carry their share;
    the legend gives every term's time and share; zero terms are named in a note.
    """
    own = ax is None
    fig, ax = _canvas(ax, 3.2)
    total = result.step_latency_total
    scale, unit = _scaled_unit(total, "s")
    left, zero = 0.0, []
    for label, t, colour in _segments(result):
        if t == 0:
            zero.append(label)
            continue
        share = t / total
        bar = ax.barh(0, t / scale, left=left / scale, height=0.6, color=colour, edgecolor="white", linewidth=1,
                      label=f"{label}: {quantity(t, 's')} ({share:.1%})")
        if share >= 0.06:
            rgb = np.asarray(bar.patches[0].get_facecolor()[:3])
            ink = "black" if rgb @ (0.299, 0.587, 0.114) > 0.6 else "white"
            ax.text((left + t / 2) / scale, 0, f"{share:.0%}", ha="center", va="center", color=ink,
                    fontsize=FONT, fontweight="bold")
        left += t
    ax.set_xlim(0, max(left, total) / scale * 1.01)
    ax.set_ylim(-0.5, 0.5)
    ax.set_yticks([])
    ax.set_xlabel(f"time ({unit})", fontsize=FONT)
    ax.tick_params(labelsize=SMALL)
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    head = result.configuration or "DistributedResult"
    ax.set_title(_wrap(head) + f"\nstep time {quantity(total, 's')}, fleet MFU {result.mfu:.3f}, "
                 f"scaling efficiency {result.scaling_efficiency:.3f}", fontsize=FONT)
    note = f"zero: {', '.join(zero)}" if zero else ""
    _legend(fig, ax, own, note)
    return _finish(fig, path)


# ----------------------------------------------------------------------------------------------
# The tornado of elasticities
# ----------------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _math(tex: str) -> Optional[str]:
    """``$tex$`` if matplotlib's mathtext renders it (``\\text`` retried as ``\\mathrm``), else None."""
    from matplotlib.mathtext import MathTextParser

    parser = MathTextParser("agg")
    for s in dict.fromkeys((tex, tex.replace(r"\text{", r"\mathrm{"))):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                parser.parse(f"${s}$")
            return f"${s}$"
        except Exception:       # noqa: BLE001 - mathtext raises ValueError, a font lookup may raise others
            continue
    return None


def _words(row) -> str:
    """The parameter's short name in words (``Param.words``), else its row name with spaces."""
    p = BY_SYMBOL.get(row.symbol)
    return getattr(p, "words", None) or row.parameter.replace("_", " ")


def _row_label(row) -> str:
    from .printing import latex

    words = _words(row)
    p = BY_SYMBOL.get(row.symbol)
    value = quantity(float(row.value), p.unit if p else "1", 3)
    glyph = _math(latex(row.symbol))
    text = f"{words}  {glyph} = {value}" if glyph else f"{words} = {value}"
    return text + (f"\n(kink at {row.kink})" if row.kink else "")


def _context_text(table) -> str:
    return table.configuration


def tornado(table, path: Optional[PathLike] = None, ax=None, top: int = 12):
    """Horizontal bars of the elasticities ``d ln y / d ln x`` of a
    :class:`~mlsysim_sym.sensitivity.point.Sensitivities` table (the % change of the output per 1 %
    change of each parameter): the ``top`` largest ``|elasticity|`` from the top down, raising in blue,
    lowering in red. Rows whose elasticity is zero (``|e| <= 1e-12``) or undefined are left out (the
    zero ones are named in a note, and so is the count of rows beyond ``top``). At a kink the row
    gets two thin hatched bars, the one-sided elasticities ``row.left`` (x just below) and
    ``row.right`` (x just above). Each bar carries its value; each
    label is the parameter in words (``Param.words``), its symbol (mathtext, or the words alone when mathtext cannot
    draw it) and its value. Every bar's ``gid`` is the parameter (``"<parameter>:left"`` /
    ``":right"`` at a kink).
    """
    _, patches = _mpl()

    def sides(r):
        return [r.elasticity] if r.kink is None else [r.left.elasticity, r.right.elasticity]

    nonzero = [r for r in table.rows if any(e is not None and not math.isnan(e) and abs(e) > 1e-12
                                            for e in sides(r))]
    shown = nonzero[:top]       # the table's rank (a one-sided kink by the move that improves the output)
    more = len(nonzero) - len(shown)
    own = ax is None
    fig, ax = _canvas(ax, 1.6 + 0.42 * max(len(shown), 3))
    colour = lambda e: POSITIVE if e >= 0 else NEGATIVE  # noqa: E731
    values = [0.0]
    for y, r in enumerate(shown):
        if r.kink is None:
            bars = [(r.parameter, r.elasticity, y, 0.7, None, "")]
        else:
            bars = [(f"{r.parameter}:left", r.left.elasticity, y - 0.2, 0.38, "////", " below"),
                    (f"{r.parameter}:right", r.right.elasticity, y + 0.2, 0.38, "....", " above")]
        for gid, e, yy, h, hatch, side in bars:
            ax.barh(yy, e, height=h, color=colour(e), hatch=hatch, edgecolor="white" if hatch else None,
                    linewidth=0)[0].set_gid(gid)
            ax.annotate(f"{e:+.3g}{side}" if e else f"0{side}", (e, yy), xytext=(4 if e >= 0 else -4, 0),
                        textcoords="offset points", ha="left" if e >= 0 else "right", va="center", fontsize=SMALL)
            values.append(e)
    lo, hi = min(values), max(values)
    span = (hi - lo) or 1.0
    ax.set_xlim(lo - (0.45 * span if lo < 0 else 0.05 * span), hi + (0.45 * span if hi > 0 else 0.05 * span))
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(shown)), [_row_label(r) for r in shown], fontsize=SMALL)
    ax.set_ylim(len(shown) - 0.5, -0.5)         # the first-ranked on top
    ax.tick_params(axis="x", labelsize=SMALL)
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    out = table.output
    ax.set_xlabel(f"elasticity (% change of {out} per 1 % change)", fontsize=FONT)
    context = _context_text(table)
    head = f"elasticity of {out} at\n{_wrap(context)}" if context else f"elasticity of {out}"
    ax.set_title(f"{head}\n{out} = {quantity(table.value, notation.entry(table.quantity).unit, 4)}",
                 fontsize=FONT)
    drawn = set(values[1:])
    legend = [patches.Patch(color=c, label=f"{verb} {out}") for c, verb, yes in (
        (POSITIVE, "raises", any(e > 0 for e in drawn)), (NEGATIVE, "lowers", any(e < 0 for e in drawn))) if yes]
    if any(r.kink for r in shown):
        legend += [patches.Patch(facecolor="white", edgecolor="#555555", hatch="////",
                                 label="at a kink: x just below"),
                   patches.Patch(facecolor="white", edgecolor="#555555", hatch="....",
                                 label="at a kink: x just above")]
    zero = [_words(r) for r in table.rows if 0 <= r.magnitude <= 1e-12]
    notes = [f"zero elasticity, not shown: {', '.join(zero)}"] if zero else []
    notes += [f"{more} smaller not shown (top={top})"] if more > 0 else []
    _legend(fig, ax, own, "; ".join(notes), handles=legend)
    return _finish(fig, path)


# ----------------------------------------------------------------------------------------------
# Sweeps
# ----------------------------------------------------------------------------------------------

def _output_label(output: str, unit: str) -> str:
    q = quantity_of(field_named(output))
    meaning = notation.entry(q).meaning if q in notation.table() else output
    return f"{meaning} ({unit})" if unit else meaning


def _axis(name: str, values) -> Tuple[str, List[str], Optional[np.ndarray]]:
    """``(label, tick labels, positions)`` of a swept argument; positions are None for categories."""
    values = np.asarray(values)
    p = by_argument().get(name)
    numeric = values.dtype.kind in "iuf" and np.all(np.isfinite(values))
    if not numeric:
        return name, [str(v) for v in values], None
    unit = p.unit if p is not None else "1"
    scale, written = _scaled_unit(float(np.max(np.abs(values))), unit)
    written = _COUNTED.get(name, written)
    label = f"{name} ({written})" if written else name
    return label, [number(float(v) / scale, 4) for v in values], values / scale


def sweep_chart(sweep_result, output: str = "mfu", path: Optional[PathLike] = None, ax=None):
    """``output`` of a :class:`~mlsysim_sym.sweeps.SweepResult` against its swept arguments.

    One swept axis: a line with a marker at each valid configuration (masked ones are left out,
    breaking the line, and counted in the legend; a numeric axis spanning 16x or more is drawn on a
    log scale). Two axes: a heatmap, the first axis on y and the second on x, each valid cell
    annotated with the output (3 significant digits; up to :data:`WRITTEN_COLUMNS` columns, beyond
    that the colour alone); masked cells are grey and marked "x". The
    image holds the output in SI units (NaN where masked); labels and the colour bar show it with
    an SI prefix. Any other number of axes raises ValueError.
    """
    axes = dict(sweep_result.axes)
    if len(axes) not in (1, 2):
        names = ", ".join(axes) or "none"
        raise ValueError(f"sweep_chart draws one or two swept axes; this sweep has {len(axes)} ({names}): "
                         f"fix all but one or two of them to a single value")
    valid = np.asarray(sweep_result.valid, dtype=bool)
    y = np.broadcast_to(np.asarray(sweep_result[output], dtype=float), valid.shape)
    y = np.where(valid, y, np.nan)
    q = quantity_of(field_named(output))        # a result field's quantity, or a quantity of the model itself
    unit = notation.entry(q).unit if q in notation.table() else "1"
    finite = np.abs(y[np.isfinite(y)])
    scale, written = _scaled_unit(float(finite.max()) if finite.size else 0.0, unit)
    label = _output_label(output, written)
    masked = int(valid.size - np.count_nonzero(valid))
    reasons = [r for r in sweep_result.reasons if r] if masked else []
    why = "" if not reasons else ("e.g. " if len(reasons) > 1 else "") + reasons[0]
    fits = np.broadcast_to(np.asarray(sweep_result.values.get("node_profile.feasible", True), dtype=bool),
                           valid.shape)
    runs = np.broadcast_to(np.asarray(True if sweep_result.runnable is None else sweep_result.runnable, dtype=bool),
                           valid.shape)
    draw = _line if len(axes) == 1 else _heatmap
    fig, ax = draw(axes, y, scale, label, masked, why, ax, fits | ~valid, runs | ~valid)
    ax.set_title(_wrap(f"{output}: {sweep_result.configuration or 'a sweep'}"), fontsize=FONT)
    return _finish(fig, path)


def _line(axes, y, scale, label, masked, why, ax, fits, runs):
    (name, values), = axes.items()
    fig, ax = _canvas(ax, 4.6)
    xlabel, ticks, x = _axis(name, values)
    categories = x is None          # no line between categories (precisions, switches): markers and values
    if categories:
        x = np.arange(len(ticks), dtype=float)
        for xi, yi in zip(x, y / scale):
            if np.isfinite(yi):
                ax.annotate(f"{yi:.3g}", (xi, yi), xytext=(0, 6), textcoords="offset points", ha="center",
                            fontsize=SMALL)
        ax.set_xlim(-0.5, len(ticks) - 0.5)
        ax.margins(y=0.12)
    ok = np.isfinite(y)
    ax.plot(x, y / scale, "o" if categories else "-o", color=POSITIVE, markersize=6,
            label=f"valid configurations ({int(ok.sum())} of {y.size})" + (f"; {masked} masked, left out"
                                                                           if masked else ""))
    spill = ok & ~fits
    if spill.any():
        ax.plot(x[spill], y[spill] / scale, "o", markersize=9, markerfacecolor="white", color=NEGATIVE,
                label=f"does not fit in accelerator memory ({int(spill.sum())})")
    off = ok & ~runs
    if off.any():
        ax.plot(x[off], y[off] / scale, "s", markersize=11, markerfacecolor="none", color="#555555",
                label=f"no framework runs this schedule ({int(off.sum())}; see can_run())")
    if not categories and x.min() > 0 and x.max() / x.min() >= 16:
        ax.set_xscale("log")
        ax.minorticks_off()
        xlabel = xlabel[:-1] + ", log scale)" if xlabel.endswith(")") else xlabel + " (log scale)"
    shown = _thin(np.log(x) if ax.get_xscale() == "log" else x)
    ax.set_xticks(x[shown], [ticks[i] for i in shown], fontsize=SMALL)
    if why:
        xlabel += "\n" + _wrap(f"{masked} of {y.size} masked, left out: {why}")
    ax.set_xlabel(xlabel, fontsize=FONT)
    ax.set_ylabel(_wrap(label, 50), fontsize=FONT)
    ax.tick_params(axis="y", labelsize=SMALL)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=SMALL, loc="best")
    return fig, ax


def _thin(position: np.ndarray) -> List[int]:
    """Indices of at most about :data:`MAX_TICKS` tick labels, spaced evenly where they are drawn
    (the first and the last always kept), so that labels never overlap."""
    gap = (position[-1] - position[0]) / (MAX_TICKS - 1) * 0.8 if len(position) > 1 else 0.0
    keep = [0]
    for i in range(1, len(position)):
        if position[i] - position[keep[-1]] >= gap:
            keep.append(i)
    last = len(position) - 1
    if keep[-1] != last:
        if len(keep) > 1:
            keep[-1] = last          # the end replaces the label too close to it
        else:
            keep.append(last)
    return keep


def _heatmap(axes, y, scale, label, masked, why, ax, fits, runs):
    (ny, vy), (nx, vx) = axes.items()
    fig, ax = _canvas(ax, min(1.9 + 0.55 * max(len(vy), 4), 10.0))
    import matplotlib
    import matplotlib.ticker

    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#d9d9d9")
    image = ax.imshow(y, cmap=cmap, aspect="auto", origin="lower", interpolation="nearest")
    ylabel, yt, _ = _axis(ny, vy)
    xlabel, xt, _ = _axis(nx, vx)
    ax.set_xticks(range(len(xt)), xt, fontsize=SMALL)
    ax.set_yticks(range(len(yt)), yt, fontsize=SMALL)
    ax.set_xlabel(xlabel, fontsize=FONT)
    ax.set_ylabel(ylabel, fontsize=FONT)
    size = FONT if len(xt) <= 8 else SMALL
    write = len(xt) <= WRITTEN_COLUMNS          # wider grids: the colour alone (values would overlap)
    for (i, j), v in np.ndenumerate(y):
        if np.isnan(v):
            ax.text(j, i, "x", ha="center", va="center", color="#555555", fontsize=FONT + 2)
        elif write:
            rgb = np.asarray(image.cmap(image.norm(v))[:3])
            ink = "black" if rgb @ (0.299, 0.587, 0.114) > 0.5 else "white"
            ax.text(j, i, f"{v / scale:.3g}" + ("" if fits[i, j] else " *") + ("" if runs[i, j] else " †"),
                    ha="center", va="center", color=ink, fontsize=size)
    bar = fig.colorbar(image, ax=ax)
    bar.formatter = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v / scale:.3g}")
    bar.update_ticks()
    bar.set_label(_wrap(label, 45), fontsize=FONT)
    bar.ax.tick_params(labelsize=SMALL)
    notes = [f"* does not fit in accelerator memory ({int((~fits).sum())} of {y.size})"] if not fits.all() else []
    notes += [f"† no framework runs this schedule ({int((~runs).sum())} of {y.size}; see can_run())"] \
        if not runs.all() and write else []
    if masked:
        notes.append(f"grey x: {masked} of {y.size} configurations masked" + (f": {why}" if why else ""))
    if notes:
        ax.set_xlabel(xlabel + "\n" + "\n".join(_wrap(n) for n in notes), fontsize=FONT)
    return fig, ax
