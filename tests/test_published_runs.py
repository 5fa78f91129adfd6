"""docs/published_runs.md: the model against published training runs (derivations/published.py).

The data file's rows are cited and measured, the document is the fresh render of its context, its
headline numbers are the context's, one row's prediction is recomputed here by hand, and the calibrated
efficiency reproduces its calibration row.
"""
import math
import re
import statistics
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from derivations import published, render  # noqa: E402

from mlsysim_sym.printing import environment  # noqa: E402

DOC = ROOT / "docs" / "published_runs.md"


@pytest.fixture(scope="module")
def ctx():
    return published.context()


@pytest.fixture(scope="module")
def doc():
    return DOC.read_text(encoding="utf-8")


def test_the_document_is_the_fresh_render_of_its_context(ctx, doc):
    quarto = render.github_math(environment().get_template("published_runs.j2").render(ctx, macros="_md.j2", top=1))
    assert re.sub(r"\n{3,}", "\n\n", render.strip_labels(quarto)) == doc
    assert "published_runs" in render.DOCUMENTS


def test_every_row_cites_its_source_and_has_a_measured_value():
    data = published.load()
    ids = [r["id"] for r in data["runs"]]
    assert len(ids) == len(set(ids)) >= 20
    assert {r["source"] for r in data["runs"]} == {"narayanan", "korthikanti", "mtnlg", "bloom", "llama3"}
    for r in data["runs"]:
        src = data["sources"][r["source"]]
        assert src["citation"] and src["where"] and src["flop_note"], r["id"]
        assert src["convention"] in published.CONVENTIONS
        assert r["row"], r["id"]                     # the table / section / log line inside the source
        m = r["measured"]
        assert m["metric"] in published.METRICS and m["value"] > 0, r["id"]
        if m["metric"] == "mfu":
            assert 0 < m["value"] < 1
        assert r["fleet"] in data["fleets"] and data["fleets"][r["fleet"]]["cite"]
        c = r["config"]
        assert c["gpus"] == c["tp"] * c["pp"] * c.get("cp", 1) * published.dp_published(r), r["id"]


def test_each_convention_turns_a_published_time_into_the_published_metric():
    # where a publication gives both the iteration time and the throughput, its own formula links them
    checked = 0
    for r in published.runs():
        t = r["measured"].get("iteration_time")
        if t:
            ratio = published.metric_of_step(r, t) / r["measured"]["value"]
            assert abs(ratio - 1) < 0.006, (r["id"], ratio)     # the published figures' rounding
            checked += 1
    assert checked == 9


def test_headline_numbers_are_the_contexts(ctx, doc):
    rows = ctx["rows"]
    default = [abs(x["default"]["error"]) for x in rows]
    calibrated = [abs(x["calibrated"]["error"]) for x in rows if x["id"] != published.CALIBRATION_ROW]
    s = ctx["summary"]
    assert s["median_default"] == statistics.median(default) and s["worst_default"] == max(default)
    assert s["median_calibrated"] == statistics.median(calibrated) and s["worst_calibrated"] == max(calibrated)
    h = ctx["headline"]
    assert h["median_calibrated"] == f"{100 * s['median_calibrated']:.1f}%"
    headline = doc.split("## Headline", 1)[1].split("##", 1)[0]
    assert (f"calibrated on `{published.CALIBRATION_ROW}` ($\\eta = {s['calibration_efficiency']:.3f}$)"
            in headline)
    assert f"the median absolute error of the predicted throughput is {h['median_calibrated']} " in headline
    assert f"(worst {h['worst_calibrated']}, over the {len(rows) - 1} other runs)" in headline
    assert f"At the default efficiency of 0.5 the median is {h['median_default']} (worst {h['worst_default']}" \
        in headline
    # every result row of the document is the context's
    for cells in ctx["cells"]["results"]:
        assert "| " + " | ".join(cells) + " |" in doc


def test_one_row_by_hand(ctx, doc):
    # Korthikanti et al.'s 22B run: 8 A100 (one DGX node), TP 8, PP 1, DP 1, batch 4 of 2048 tokens, no
    # recomputation, fp16, efficiency 0.5. Publication FLOPs (Eq. 7):
    #   F = 72 B s l h^2 (1 + s/(6h) + V/(12 h l)),  B = 4, s = 2048, l = 48, h = 6144, V = 51200.
    # The model executes 3 F_fwd B s = F, so
    #   T_compute  = F / (312e12 x 0.5 x 8)
    #   T_memory   = (2 x 22e9 / 8) x (1 + 0.1 x 4) / 2.039e12          (weight shard and activation traffic)
    #   T_overhead = 15 us + 3 x 10 us x 48 layers
    #   T_tp       = 4 all-reduces x 48 layers x ring(M, 8):  M = 4 x 2048 x 6144 x 2 B,
    #                ring = 2 x 7/8 x M / 300e9 B/s + 2 x 7 x 500 ns
    #   T_step     = max(T_compute, T_memory) + T_overhead + T_tp       (no DP, no pipeline)
    #   MFU        = F / (T_step x 8 x 312e12)
    B, s, l, h, V = 4, 2048, 48, 6144, 51200
    F = 72 * B * s * l * h ** 2 * (1 + s / (6 * h) + V / (12 * h * l))
    t_compute = F / (312e12 * 0.5 * 8)
    t_memory = (2 * 22e9 / 8) * (1 + 0.1 * 4) / 2.039e12
    t_overhead = 15e-6 + 3 * 10e-6 * 48
    M = 4 * 2048 * 6144 * 2
    t_tp = 4 * 48 * (2 * 7 / 8 * M / 300e9 + 2 * 7 * 5e-7)
    t_step = max(t_compute, t_memory) + t_overhead + t_tp
    mfu = F / (t_step * 8 * 312e12)
    row = next(x for x in ctx["rows"] if x["id"] == "korthikanti-22b")
    assert math.isclose(row["default"]["step"], t_step, rel_tol=1e-12)
    assert math.isclose(row["default"]["value"], mfu, rel_tol=1e-12)
    assert f"| korthikanti-22b | 41.5% | {100 * mfu:.1f}% | {100 * (mfu / 0.415 - 1):+.1f}% |" in doc


def test_the_calibrated_efficiency_reproduces_its_calibration_row(ctx):
    r = published.run(published.CALIBRATION_ROW)
    eta = ctx["summary"]["calibration_efficiency"]
    assert eta == published.required_efficiency(published.CALIBRATION_ROW)
    p = published.predict(r, eta)
    assert math.isclose(p["value"], r["measured"]["value"], rel_tol=1e-9)
    row = next(x for x in ctx["rows"] if x["id"] == published.CALIBRATION_ROW)
    assert row["calibrated"]["value"] == p["value"] and abs(row["calibrated"]["error"]) < 1e-9


def test_needed_efficiency_matches_each_run_and_lies_in_the_compute_bound_regime(ctx):
    for x in ctx["rows"]:
        eta = x["required"]
        if eta is None:
            continue
        r = x["r"]
        assert 0 < eta <= 1
        res = published.solve(r, eta)
        assert math.isclose(published.metric_of_step(r, res.step_latency_total), r["measured"]["value"],
                            rel_tol=1e-9), x["id"]
        assert res.node_profile.latency_compute >= res.node_profile.latency_memory, x["id"]


def test_predictions_use_the_publications_flops(ctx):
    # the FLOPs the model executes per step are the publication's: (3 + r) F_fwd B s = F_pub
    for x in ctx["rows"]:
        r = x["r"]
        executed = (3 + published.recompute(r)) * published.forward_flops_per_token(r) * published.tokens(r)
        assert math.isclose(executed, published.pub_flops(r), rel_tol=1e-12)
