"""Pictures (mlsysim_sym.plot): each writes a readable PNG, and what it draws is the result's own numbers."""
from __future__ import annotations

import math
import subprocess
import sys

import matplotlib.figure
import matplotlib.image
import numpy as np
import pytest

from mlsysim_sym import DistributedModel, plot, sensitivities, sweep

GOLDEN = dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
PNG = b"\x89PNG\r\n\x1a\n"


def _png(path):
    """The file is a PNG about 8 in wide at 150 dpi."""
    assert path.read_bytes()[:8] == PNG
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and 900 <= image.shape[1] <= 1500 and 300 <= image.shape[0] <= 1600, image.shape
    return image


@pytest.fixture(scope="module")
def result():
    return DistributedModel().solve("Llama3_70B", "Research_256", **GOLDEN)


@pytest.fixture(scope="module")
def table():
    return sensitivities("Llama3_70B", "Research_256", **GOLDEN)


@pytest.fixture(scope="module")
def grid():
    return sweep("Llama3_70B", "Research_256", batch_size=256, tp_size=[1, 2, 4, 8], pp_size=[1, 2, 3, 4, 8])


def _widths(fig):
    ax = fig.axes[0]
    return [p.get_width() for p in ax.patches]


def test_importing_the_module_does_not_import_matplotlib():
    code = "import sys, mlsysim_sym.plot; assert 'matplotlib' not in sys.modules, 'matplotlib imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_without_matplotlib_the_error_says_how_to_get_it(monkeypatch, result):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"pip install matplotlib \(the package's \[plot\] extra\)"):
        plot.breakdown_chart(result)


def test_breakdown_segments_sum_to_the_step_time(result, tmp_path):
    fig = plot.breakdown_chart(result, tmp_path / "b.png")
    _png(tmp_path / "b.png")
    ax = fig.axes[0]
    assert isinstance(fig, matplotlib.figure.Figure) and ax.get_xlabel() == "time (s)"
    assert math.isclose(sum(_widths(fig)), result.step_latency_total, rel_tol=1e-12)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[0].startswith("replica compute (compute-bound): 1.754 s")
    assert any(t.startswith("pipeline bubble: 658.8 ms") for t in labels)
    assert not any("straggler" in t for t in labels)     # nothing left over at f_strag = 1
    assert fig.legends[0].get_title().get_text() == "zero: EP communication"
    assert "Llama-3.1-70B on Research Cluster" in ax.get_title() and "MFU 0.260" in ax.get_title()
    shares = {t.get_text() for t in ax.texts}
    assert {"52%", "18%", "10%", "20%"} <= shares


def test_breakdown_shows_overlap_and_straggler_and_picks_the_unit(tmp_path):
    r = DistributedModel().solve("Llama3_70B", "Research_256", **GOLDEN, overlap_comm=True, straggler_factor=1.2)
    fig = plot.breakdown_chart(r)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(t.startswith("DP communication left after overlap: 92.77 ms") for t in labels)    # 15 % of 618.5
    assert any(t.startswith("straggler (x1.2)") for t in labels)
    assert math.isclose(sum(_widths(fig)), r.step_latency_total, rel_tol=1e-12)
    small = DistributedModel().solve("Llama3_8B", "Research_256", batch_size=512, tp_size=2)
    fig = plot.breakdown_chart(small)
    assert fig.axes[0].get_xlabel() == "time (ms)"
    assert math.isclose(sum(_widths(fig)) * 1e-3, small.step_latency_total, rel_tol=1e-12)


def test_tornado_bars_are_the_elasticities_largest_on_top(table, tmp_path):
    fig = plot.tornado(table, tmp_path / "t.png")
    _png(tmp_path / "t.png")
    ax = fig.axes[0]
    bars = {p.get_gid(): p for p in ax.patches}
    nonzero = [r for r in table.rows if r.magnitude > 1e-12]
    shown = nonzero[:12]        # in the table's rank: the straggler floor (a one-sided kink) comes last
    assert shown[0].parameter == "efficiency" and "straggler_factor" not in [r.parameter for r in shown]  # 14th
    for r in shown:
        if r.kink:
            assert bars[f"{r.parameter}:left"].get_width() == r.left.elasticity
            assert bars[f"{r.parameter}:right"].get_width() == r.right.elasticity
        else:
            assert bars[r.parameter].get_width() == r.elasticity
    assert {g.split(":")[0] for g in bars} == {r.parameter for r in shown}
    # top to bottom in the table's rank: the y axis is inverted, row i at y = i
    centre = lambda p: p.get_y() + p.get_height() / 2  # noqa: E731
    order = sorted({g.split(":")[0]: centre(p) for g, p in bars.items() if not g.endswith(":left")}.items(),
                   key=lambda kv: round(kv[1]))
    assert [name for name, _ in order] == [r.parameter for r in shown]
    assert ax.get_ylim()[0] > ax.get_ylim()[1]
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    assert ticks[0] == "achieved efficiency  $\\eta_{\\text{hw}}$ = 0.5"
    ticks = [t.get_text() for t in plot.tornado(table, top=20).axes[0].get_yticklabels()]
    assert ticks[-1].startswith("straggler factor  $f_{\\text{strag}}$ = 1") and "kink at f_strag = 1" in ticks[-1]
    assert ax.get_xlabel() == "elasticity (% change of mfu per 1 % change)"
    assert ax.get_title().startswith("elasticity of mfu at\nLlama-3.1-70B on Research Cluster (256 GPUs)")
    assert ax.get_title().endswith("\nmfu = 0.2604")
    legend = fig.legends[0]
    assert "at a kink: x just below" not in [t.get_text() for t in legend.get_texts()]   # no kink shown
    kinked = plot.tornado(table, top=20)
    assert "at a kink: x just below" in [t.get_text() for t in kinked.legends[0].get_texts()]
    assert "HBM capacity" in legend.get_title().get_text()      # zero rows are left out, and named


def test_tornado_labels_fall_back_when_mathtext_cannot_draw_a_symbol():
    assert plot._math(r"\eta_{\text{hw}}") in ("$\\eta_{\\text{hw}}$", "$\\eta_{\\mathrm{hw}}$")
    assert plot._math(r"\frac{") is None and plot._math(r"\nosuchcommand{x}") is None


def test_heatmap_is_the_sweep_with_masked_cells_marked(grid, tmp_path):
    fig = plot.sweep_chart(grid, "mfu", tmp_path / "h.png")
    _png(tmp_path / "h.png")
    ax = fig.axes[0]
    expected = np.where(grid.valid, grid["mfu"], np.nan)
    np.testing.assert_array_equal(np.ma.filled(ax.images[0].get_array().astype(float), np.nan), expected)
    marks = [t for t in ax.texts if t.get_text() == "x"]
    assert len(marks) == np.count_nonzero(~grid.valid) == 4
    values = [t.get_text() for t in ax.texts if t.get_text() != "x"]
    assert len(values) == np.count_nonzero(grid.valid) and "0.186 *" in values
    # a cell whose training state does not fit is starred (13 of 16 valid cells spill to the host), and said
    spill = np.count_nonzero(grid.valid & ~grid["node_profile.feasible"])
    assert sum(v.endswith(" *") for v in values) == spill == 13 and "0.0599" in values
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "3", "4", "8"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1", "2", "4", "8"]
    assert ax.get_ylabel() == "tp_size"
    assert ax.get_xlabel().startswith("pp_size\n* does not fit in accelerator memory (13 of 20)\ngrey x: 4 of 20")
    assert fig.axes[1].get_ylabel() == "fleet model FLOPs utilization"


def test_heatmap_of_a_time_keeps_si_values_and_labels_units(tmp_path):
    r = sweep("Llama3_70B", "Research_256", batch_size=[64, 256], fabric_bandwidth=[12.5e9, 50e9], tp_size=8,
              pp_size=4, microbatch_count=8)
    fig = plot.sweep_chart(r, "step_latency_total")
    ax = fig.axes[0]
    np.testing.assert_array_equal(ax.images[0].get_array(), r["step_latency_total"])
    assert ax.get_xlabel() == "fabric_bandwidth (GB/s)" and ax.get_ylabel() == "batch_size (samples)"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["12.5", "50"]
    assert fig.axes[1].get_ylabel() == "wall-clock time of one training step (s)"


def test_line_leaves_masked_points_out(tmp_path):
    r = sweep("Llama3_70B", "Research_256", batch_size=256, tp_size=[1, 2, 3, 4, 8], pp_size=4, microbatch_count=8)
    fig = plot.sweep_chart(r, "mfu", tmp_path / "l.png")
    _png(tmp_path / "l.png")
    ax = fig.axes[0]
    line = ax.lines[0]          # then the hollow markers of the configurations that do not fit
    np.testing.assert_array_equal(line.get_xdata(), [1, 2, 3, 4, 8])
    np.testing.assert_array_equal(line.get_ydata(), np.where(r.valid, r["mfu"], np.nan))
    assert "(4 of 5); 1 masked, left out" in ax.get_legend().get_texts()[0].get_text()
    assert ax.get_xlabel().startswith("tp_size\n1 of 5 masked, left out: Infeasible 4D Parallelism: TP(3)")


def test_line_over_a_wide_numeric_axis_is_logarithmic():
    r = sweep("Llama3_70B", "Research_256", batch_size=[32, 64, 128, 256, 512, 1024], tp_size=8, pp_size=4,
              microbatch_count=8)
    ax = plot.sweep_chart(r, "step_latency_total").axes[0]
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "batch_size (samples, log scale)"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["32", "64", "128", "256", "512", "1024"]
    assert ax.get_ylabel() == "wall-clock time of one training step (s)"


def test_sweep_chart_draws_one_or_two_axes_only(grid):
    three = sweep("Llama3_70B", "Research_256", batch_size=[128, 256], tp_size=[4, 8], pp_size=[2, 4])
    with pytest.raises(ValueError, match=r"3 \(batch_size, tp_size, pp_size\).*fix all but one or two"):
        plot.sweep_chart(three)
    with pytest.raises(ValueError, match=r"has 0 \(none\)"):
        plot.sweep_chart(sweep("Llama3_70B", "Research_256", **GOLDEN))


def test_charts_draw_on_a_given_axes(result, table, grid, tmp_path):
    fig = matplotlib.figure.Figure(figsize=(8, 12), layout="constrained")
    a, b, c = fig.subplots(3)
    assert plot.breakdown_chart(result, ax=a) is fig and a.patches
    assert plot.tornado(table, ax=b, top=3) is fig and len(b.get_yticklabels()) == 3
    assert plot.sweep_chart(grid, ax=c) is fig and c.images
    fig.savefig(tmp_path / "all.png", dpi=100)        # no layout warning (warnings are errors here)
    assert (tmp_path / "all.png").read_bytes()[:8] == PNG
