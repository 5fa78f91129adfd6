"""uncertainty(): first-order spread from the exact sensitivities, checked against Monte Carlo.

Statistical tolerance: a sample standard deviation of n draws has a standard error
``se = sqrt((m4 - s^4 (n-3)/(n-1)) / n) / (2 s)`` (m4: the draws' fourth central moment),
about ``s / sqrt(2 n)`` for a normal output: 0.35 % of s at n = 40,000. With 1-2 % sigmas the
curvature of the model moves the standard deviation by well under that, so first order and
Monte Carlo must agree within 3 standard errors (a 0.3 % chance of a false alarm per case
for a linear output; the seed is fixed, so the test is deterministic).
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mlsysim_sym import sensitivities, uncertainty
from mlsysim_sym.sensitivity.uncertainty import UNCERTAIN

EXAMPLE = ("Llama3_70B", "Research_256")
KW = dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)

CASES = {
    # the bundled example: compute-bound, DP ring on the fabric, not overlapped
    "dense": (*EXAMPLE, KW, {"efficiency": 0.02, "fabric_bandwidth": 0.02, "congestion_factor": 0.01,
                             "peak_flops": 0.01}),
    # a mixture of experts with expert parallelism (the all-to-all on NVLink and the fabric)
    "moe": ("Mixtral_8x7B", "Training_1K", dict(batch_size=1024, tp_size=8, ep_size=8,
                                                 moe_routing_imbalance_factor=1.3),
            {"efficiency": 0.02, "fabric_bandwidth": 0.02, "moe_routing_imbalance_factor": 0.01,
             "intra_node_bw": 0.02}),
    # memory-bound, spilling to host memory over PCIe
    "memory-bound": ("Llama3_8B", "Lab_64_H100", dict(batch_size=64, seq_len=512, efficiency=0.6),
                     {"pcie_bandwidth": 0.01, "memory_bandwidth": 0.02, "fabric_bandwidth": 0.02,
                      "parameters": 0.01}),
    # the DP all-reduce overlapped with the backward pass
    "overlap": (*EXAMPLE, dict(KW, overlap_comm=True), {"efficiency": 0.02, "overlap_efficiency": 0.02,
                                                         "fabric_bandwidth": 0.02}),
}


def _flat(u) -> str:
    """The printed result on one line (the text wraps at 80 columns)."""
    return " ".join(str(u).split())


@pytest.mark.parametrize("case", list(CASES))
def test_first_order_matches_monte_carlo_for_small_sigmas(case):
    model, fleet, kw, sigma = CASES[case]
    u = uncertainty(model, fleet, sigma, samples=40000, seed=0, **kw)
    mc = u.monte_carlo
    assert mc.valid == mc.samples == 40000
    assert mc.std_error < 0.005 * mc.std                       # about s / sqrt(2n)
    assert abs(mc.std - u.std) <= 3 * mc.std_error, (case, u.std, mc.std, mc.std_error)
    assert u.agrees and "first order holds" in _flat(u)
    assert abs(mc.mean - u.value) <= 4 * mc.mean_error + 1e-3 * u.std   # no shift of the mean either
    assert mc.percentiles[5] < mc.percentiles[50] < mc.percentiles[95]
    assert math.isclose(mc.percentiles[50], u.value, rel_tol=0.01)


def test_shares_sum_to_one_and_a_zero_sigma_has_no_share():
    u = uncertainty(*EXAMPLE, {"efficiency": 0.05, "fabric_bandwidth": 0.1, "peak_flops": 0.0}, **KW)
    assert math.isclose(sum(t.share for t in u), 1.0, rel_tol=1e-12)
    assert u["peak_flops"].share == 0 and u["peak_flops"].contribution == 0
    assert [t.parameter for t in u] == ["efficiency", "fabric_bandwidth", "peak_flops"]   # largest first
    assert u.monte_carlo is None and u.agrees is None and u.discrepancy is None


def test_first_order_is_the_hand_computation_from_the_sensitivity_rows():
    t = sensitivities(*EXAMPLE, **KW)
    u = uncertainty(*EXAMPLE, {"efficiency": 0.02}, **KW)
    # d MFU / d eta = +0.3729 at eta = 0.5 (the table's row), sigma 2 %:
    # sd = |0.3729| x 0.02 x 0.5 = 0.003729, i.e. elasticity x sigma x MFU = 0.716 x 0.02 x 0.2604
    row = t["efficiency"]
    assert math.isclose(u.std, abs(row.derivative) * 0.02 * 0.5, rel_tol=1e-12)
    assert math.isclose(u.std, abs(row.elasticity) * 0.02 * t.value, rel_tol=1e-12)
    assert round(u.std, 6) == 0.003729
    # two parameters add in quadrature
    both = uncertainty(*EXAMPLE, {"efficiency": 0.02, "fabric_bandwidth": 0.02}, **KW)
    fab = t["fabric_bandwidth"]
    assert math.isclose(both.std, math.hypot(row.derivative * 0.01, fab.derivative * 0.02 * 12.5e9), rel_tol=1e-12)


def test_at_a_kink_first_order_uses_the_larger_side_and_monte_carlo_disagrees():
    # the straggler factor at 1: below it nothing changes, above it MFU falls 1 % per 1 %
    u = uncertainty(*EXAMPLE, {"straggler_factor": 0.05}, samples=40000, **KW)
    t = u["straggler_factor"]
    assert t.kink == "f_strag = 1" and t.below == 0 and t.above > 0
    assert u.std == t.above and u.std_smaller == 0
    # the output is MFU x min(1, 1/f_s) with f_strag = 1 + 0.05 Z: linearised, a half-normal, whose sd is
    # sqrt(1/2 - 1/(2 pi)) = 0.584 of the first-order one; with 1/(1 + 0.05 Z) exact, 0.538 (quadrature
    # over Z below). Monte Carlo must find that ratio, not 1.
    z = np.linspace(-8, 8, 160001)
    w = np.exp(-z * z / 2)
    w /= w.sum()
    y = np.minimum(1, 1 / (1 + 0.05 * np.maximum(z, 0)))
    ratio = math.sqrt(np.sum(w * y * y) - np.sum(w * y) ** 2) / 0.05
    assert 0.53 < ratio < 0.545
    mc = u.monte_carlo
    assert abs(mc.std - ratio * u.std) <= 3 * mc.std_error
    assert mc.mean < u.value - 10 * mc.mean_error
    assert u.agrees is False
    text = str(u)
    assert "sits at a kink (f_strag = 1)" in _flat(u) and "larger one-sided derivative" in _flat(u)
    assert "first order breaks down here" in _flat(u)
    # without Monte Carlo the result says the first order is one-sided
    assert "a Monte Carlo (samples=, on the command line --samples) gives the spread" in _flat(
        uncertainty(*EXAMPLE, {"straggler_factor": 0.05}, **KW))


def test_a_large_sigma_or_a_domain_edge_breaks_first_order():
    # 30 % on the achieved efficiency: MFU is not linear over that range (its sd 3 % above first order's;
    # at 10 % the two still agree within 0.5 %); hardly any draw leaves [1e-9, 1] (|Z| > 3.3)
    u = uncertainty(*EXAMPLE, {"efficiency": 0.3}, samples=40000, **KW)
    assert u["efficiency"].clipped < 0.002 and u.discrepancy > 0.02
    assert not u.agrees and "breaks down" in _flat(u)
    # efficiency 0.95 +- 10 %: draws above 1 are clipped to 1 (about a third of them)
    u = uncertainty(*EXAMPLE, {"efficiency": 0.1}, samples=40000, **dict(KW, efficiency=0.95))
    assert 0.25 < u["efficiency"].clipped < 0.4
    assert "draws clipped to the domain: achieved efficiency η_hw" in _flat(u) and not u.agrees


def test_bad_sigma_is_refused_with_the_allowed_names():
    with pytest.raises(ValueError, match=r"unknown parameter 'eficiency' in sigma; sigma takes: efficiency, "):
        uncertainty(*EXAMPLE, {"eficiency": 0.1}, **KW)
    with pytest.raises(ValueError, match=r"'tp_size' is an integer knob .*sigma takes: efficiency"):
        uncertainty(*EXAMPLE, {"tp_size": 0.1}, **KW)
    with pytest.raises(ValueError, match=r"'seq_len' is an integer knob"):
        uncertainty(*EXAMPLE, {"seq_len": 0.1}, **KW)
    for bad in (-0.1, float("nan"), float("inf"), "0.1", True, None):
        with pytest.raises(ValueError, match=r"sigma\['efficiency'\] must be a finite number >= 0"):
            uncertainty(*EXAMPLE, {"efficiency": bad}, **KW)
    with pytest.raises(TypeError, match="sigma must be a mapping"):
        uncertainty(*EXAMPLE, [("efficiency", 0.1)], **KW)
    with pytest.raises(ValueError, match="samples must be a whole number >= 2"):
        uncertainty(*EXAMPLE, {"efficiency": 0.1}, samples=1, **KW)
    assert "tp_size" not in UNCERTAIN and "efficiency" in UNCERTAIN and "fabric_bandwidth" in UNCERTAIN


def test_text_fits_80_columns_and_json_round_trips():
    u = uncertainty(*EXAMPLE, {"efficiency": 0.1, "fabric_bandwidth": 0.2, "straggler_factor": 0.05},
                    samples=5000, **KW)
    text = str(u)
    assert max(map(len, text.splitlines())) <= 80
    for piece in ("uncertainty of fleet MFU = 0.2604", "batch 256, tp 8, pp 4, m 8, fp16", "achieved efficiency η_hw",
                  "fabric bandwidth BW_inject", "12.5 GB/s", "10 %", "percentiles 5 / 50 / 95 %"):
        assert piece in text, piece
    d = json.loads(json.dumps(u.to_dict()))
    assert d["configuration_line"] == u.configuration and d["first_order"]["std"] == u.std and d["monte_carlo"]["std"] == u.monte_carlo.std
    assert d["terms"][0]["parameter"] == "efficiency" and d["terms"][0]["symbol"] == "η_hw"
    kink = next(t for t in d["terms"] if t["parameter"] == "straggler_factor")
    assert kink["kink"] == "f_strag = 1" and kink["below"] == 0
    assert "<table>" in u._repr_html_()


def test_other_outputs_and_record_fields():
    u = uncertainty(*EXAMPLE, {"memory_bandwidth": 0.05, "fabric_bandwidth": 0.02}, output="step_time",
                    samples=20000, **KW)
    assert u.quantity == "T_step" and u.unit == "s" and "step time T_step" in str(u)
    assert u.agrees


def test_a_monte_carlo_in_blocks_draws_and_sums_what_one_pass_does(monkeypatch):
    # beyond BLOCK draws the Monte Carlo is drawn and evaluated a block at a time (issue 23: 10**8 draws took
    # 4.7 GB at once): each parameter's normals continue its own stretch of default_rng(seed)'s stream, so the
    # draws, the masked count, the clipped fractions and the percentiles are those of one pass, and the moments
    # equal to rounding. 30,011 draws in blocks of 4,096 (the last one partial). A 30 % sigma on the fabric
    # clips the draws below a thousandth of its value, Z < -0.999 / 0.3 = -3.33: P = 0.043 %, about 13 draws;
    # 2 % on an efficiency of 0.5 clips none (it would take Z > 50)
    import importlib

    u_module = importlib.import_module("mlsysim_sym.sensitivity.uncertainty")    # the module (the package
                                                                                   # exports the function)
    sigma = {"efficiency": 0.02, "fabric_bandwidth": 0.3}
    whole = uncertainty(*EXAMPLE, sigma, samples=30011, seed=3, **KW)
    monkeypatch.setattr(u_module, "BLOCK", 4096)
    blocks = uncertainty(*EXAMPLE, sigma, samples=30011, seed=3, **KW)
    a, b = whole.monte_carlo, blocks.monte_carlo
    assert a.valid == b.valid == 30011 and a.percentiles == b.percentiles
    for x, y in ((a.mean, b.mean), (a.std, b.std), (a.std_error, b.std_error), (a.mean_error, b.mean_error)):
        assert math.isclose(x, y, rel_tol=1e-12)
    assert [t.clipped for t in whole.terms] == [t.clipped for t in blocks.terms]
    assert whole["efficiency"].clipped == 0 and 0 < whole["fabric_bandwidth"].clipped < 0.001


def test_with_two_kinks_each_note_takes_its_own_smaller_side_alone():
    # fp8 on an A100 (its record has no fp8 rate: priced at the 16-bit peak) puts R_peak at the kink
    # R_peak,16 = R_peak of the extended model's GEMM rate, beside the straggler's at f_strag = 1
    u = uncertainty("Llama3_70B", "Lab_64_A100", {"efficiency": 0.1, "peak_flops": 0.05, "congestion_factor": 0.3,
                                                    "straggler_factor": 0.1},
                    fidelity="extended", output="effective_throughput", precision="fp8", **KW)
    by = {t.parameter: t for t in u.terms}
    assert by["straggler_factor"].kink == "f_strag = 1" and by["peak_flops"].kink == "R_peak,16 = R_peak"
    # the terms in samples/s: straggler 0.6804 (0 below), efficiency 0.6310, peak 0.3155 (0 above), congestion 0.1216
    # straggler alone at its smaller side: sqrt(0.6310^2 + 0.3155^2 + 0.1216^2) = sqrt(0.5125) = 0.7159
    # peak alone at its smaller side:      sqrt(0.6804^2 + 0.6310^2 + 0.1216^2) = sqrt(0.8759) = 0.9359
    # (both at once, std_smaller: sqrt(0.6310^2 + 0.1216^2) = 0.6426, which neither note may claim)
    notes = " ".join(u.notes())
    assert "f_strag sits at a kink (f_strag = 1)" in notes
    assert "with its smaller side the first-order sd is 0.7159" in notes
    assert "R_peak sits at a kink (R_peak,16 = R_peak)" in notes and "the first-order sd is 0.9359 samples/s" in notes
    assert round(u.std_smaller, 4) == 0.6426 and "0.6426" not in notes
    # the text gives the sds as bare numbers under one unit, within 80 columns
    text = str(u)
    assert "sd (samples/s)" in text and max(map(len, text.splitlines())) <= 80


def test_a_run_spreads_as_its_step_time_scaled_by_the_steps():
    # The bundled example trains 256 x 2048 = 524,288 tokens a step, so 1e12 tokens take
    # K = ceil(1e12 / 524,288) = 1,907,349 steps (1e12 / 524,288 = 1,907,348.6). The run's time is K T_step, its
    # GPU-hours K T_step 256 / 3600, its cost those at $2.5: each K T_step times what the step time does not change,
    # so each spreads as the step time does, by the same draws (the same seed and sigmas).
    from mlsysim_sym import plan
    sigma = {"efficiency": 0.05, "fabric_bandwidth": 0.1}
    u = uncertainty(*EXAMPLE, sigma, samples=20000, tokens=1e12, price_per_gpu_hour=2.5, **KW)
    step = uncertainty(*EXAMPLE, sigma, "step_time", samples=20000, **KW)
    p = plan(*EXAMPLE, tokens=1e12, price_per_gpu_hour=2.5, **KW)
    K = 1_907_349
    assert u.run.plan.steps == p.steps == K
    assert u.run.value("T_train") == pytest.approx(K * step.value, rel=1e-12) == p.wall_time
    assert u.run.value("H_acc") == pytest.approx(K * step.value * 256 / 3600, rel=1e-12)
    assert u.run.value("H_acc") == pytest.approx(p.accelerator_hours, rel=1e-12)
    assert u.run.value("C_train") == pytest.approx(2.5 * p.accelerator_hours, rel=1e-12) == p.cost
    assert u.run.std("T_train") == pytest.approx(K * step.std, rel=1e-12)
    mc = u.run.monte_carlo("T_train")
    assert mc["percentiles"][50] == pytest.approx(K * step.monte_carlo.percentiles[50], rel=1e-12)
    assert mc["std"] == pytest.approx(K * step.monte_carlo.std, rel=1e-12)
    # MFU is F / (T_step N R_peak) with nothing uncertain but T_step: to first order its relative spread is the
    # step time's, and so the run's (4.02 % here)
    assert u.run.std("T_train") / u.run.value("T_train") == pytest.approx(u.relative, rel=1e-9)
    assert round(u.relative, 4) == 0.0402
    d = json.loads(json.dumps(u.to_dict()))["run"]
    assert d["steps"] == K and d["wall_time"]["unit"] == "s" and d["cost"]["value"] == u.run.value("C_train")
    assert d["days"]["value"] == pytest.approx(p.days) and d["days"]["unit"] == "d"
    # the energy E_train = K N_DP E_rep: the plan's, K x 8 replicas x the 25.56 kJ of a replica step, spread as the
    # energy per replica step spreads under the same sigmas and draws: 0.4612 x 5 % = 2.31 % from the efficiency,
    # none from the fabric (mlsysim's energy charges no communication time)
    energy = uncertainty(*EXAMPLE, sigma, "energy", samples=20000, **KW)
    assert u.run.value("E_train") == pytest.approx(p.energy, rel=1e-12)
    assert u.run.value("E_train") == pytest.approx(K * 8 * energy.value, rel=1e-12)
    assert round(energy.value) == 25560 and round(abs(energy["efficiency"].elasticity), 4) == 0.4612
    assert u.run.std("E_train") == pytest.approx(K * 8 * energy.std, rel=1e-12)
    assert round(u.run.std("E_train") / u.run.value("E_train"), 4) == 0.0231 and energy["fabric_bandwidth"].contribution == 0
    assert u.run.monte_carlo("energy")["percentiles"][95] == pytest.approx(K * 8 * energy.monte_carlo.percentiles[95],
                                                                          rel=1e-12)
    assert d["energy"]["unit"] == "J" and d["energy"]["std"] == u.run.std("E_train")
    assert d["energy_per_replica_step"]["value"] == energy.value
    assert "communication and bubble time are not charged" in d["notes"][-1]
    text = str(u)
    assert max(map(len, text.splitlines())) <= 80
    for piece in ("the run: 1e+12 tokens in 1,907,349 steps K", "time T_train (days)", "GPU-hours H_GPU",
                  "cost C_train ($)", "MC 5 / 50 / 95 %", "MC mean", "energy E_train (MWh)      108        2.5"):
        assert piece in text, piece
    assert "time T_train (days)" in u._repr_html_()
    # output step_time spreads the run by its own draws; steps= instead of tokens=, no price: no cost
    flat = " ".join(text.split())
    assert "of T_step = 3.369 s, at $2.5 per GPU-hour" in flat and "under the same sigmas and draws" in flat
    # the run's outputs by the names the text prints and the JSON's keys too, and in days
    assert u.run.std("H_GPU") == u.run.std("accelerator_hours") == u.run.std("H_acc")
    assert u.run.value("days") == pytest.approx(p.days, rel=1e-12) and u.run.value("cost") == u.run.value("C_train")
    with pytest.raises(KeyError, match="no run output 'x'; the run's: T_train, wall_time, H_acc, H_GPU"):
        u.run.value("x")
    # where the step time's first order and Monte Carlo disagree (the straggler factor's kink), the run says which to read
    k = uncertainty(*EXAMPLE, dict(sigma, straggler_factor=0.05), samples=20000, tokens=1e12, **KW)
    assert k.run.separate and k.run.step.agrees is False
    assert "for the step time, the first order and the Monte Carlo disagree (sd " in " ".join(str(k.run).split())
    assert "standard errors apart), whatever they do for the output above: read the run's Monte Carlo " \
        "percentiles" in " ".join(str(k.run).split())
    s = uncertainty(*EXAMPLE, sigma, "step_time", steps=1000, **KW)
    assert not s.run.separate and "same sigmas" not in str(s.run)
    assert (s.run.step.value, s.run.step.std) == (s.value, s.std) and s.run.value("T_train") == pytest.approx(1000 * s.value) and "C_train" not in s.run.slopes


def test_a_run_spread_refuses_what_plan_refuses():
    sigma = {"efficiency": 0.05}
    with pytest.raises(ValueError, match="price_per_gpu_hour needs tokens or steps"):
        uncertainty(*EXAMPLE, sigma, price_per_gpu_hour=2.0, **KW)
    with pytest.raises(ValueError, match="give tokens .* or steps .*, one of them"):
        uncertainty(*EXAMPLE, sigma, tokens=1e12, steps=10, **KW)
    with pytest.raises(ValueError, match="tokens must be a finite number > 0, got -1"):
        uncertainty(*EXAMPLE, sigma, tokens=-1, samples=10, **KW)
    with pytest.raises(ValueError, match="price_per_gpu_hour must be a finite number >= 0"):
        uncertainty(*EXAMPLE, sigma, tokens=1e12, price_per_gpu_hour=float("nan"), **KW)


def test_a_run_spread_warns_about_its_configuration_once():
    # the step time's uncertainty is a second pass over the same configuration: its warnings were given by the first
    import warnings
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        u = uncertainty(*EXAMPLE, {"efficiency": 0.05}, tokens=1e9, **dict(KW, batch_size=4))
    assert [str(x.message) for x in w] == [
        "batch_size (4) < dp_size (8): some ranks will be idle. Using local_batch=1."]
    # a step trains min(B, N_DP b) = min(4, 8 x 1) = 4 samples of 2048 tokens: 1e9 tokens take
    # ceil(1e9 / 8,192) = ceil(122,070.3) = 122,071 steps; the run says what the plan says of the layout
    assert u.run.plan.steps == 122_071
    assert "no framework runs this layout as given" in " ".join(str(u.run).split())


def test_a_mean_that_a_few_clipped_draws_set_is_said_and_left_out_of_the_run():
    # efficiency 0.5 with a 30 % sigma: a normal draw falls below 0 with probability P(z < -1/0.3) = 0.043 %; those
    # draws are clipped to 1e-9, where the step time is 5e8 times the point's (T ~ 1/efficiency; the mean of 1/x
    # over a normal x does not exist). Their handful sets the mean far beyond the 95th percentile: the text says
    # so, the run's table leaves the mean out ("-"), and the JSON marks it; the percentiles hold.
    u = uncertainty(*EXAMPLE, {"efficiency": 0.3}, "step_time", samples=20000, tokens=1e12, **KW)
    mc = u.monte_carlo
    assert mc.unsteady and mc.mean > 1000 * mc.percentiles[95] and 5 < mc.percentiles[95] < 6     # 5.653 s
    assert 0 < u["efficiency"].clipped < 0.002
    flat = " ".join(str(u).split())
    assert "the Monte Carlo's mean (" in flat and "rest on a few extreme draws" in flat
    row = [x for x in str(u.run).splitlines() if x.startswith("  GPU-hours H_GPU")][0].split()
    # GPU-hours H_GPU, its value (K T_step 256 / 3600 = 456,899), first-order sd, the mean left out, then the
    # percentiles: K x 256 / 3600 times the step time's
    assert row[2] == "456,899" and row[4] == "-"
    assert row[5] == f"{mc.percentiles[5] * 1_907_349 * 256 / 3600:,.0f}"
    assert "MC mean -: the Monte Carlo mean of the step time and of the energy per replica step" in \
        " ".join(str(u.run).split())
    d = json.loads(json.dumps(u.to_dict()))
    assert d["monte_carlo"]["unsteady"] is True and d["run"]["step_time"]["monte_carlo"]["unsteady"] is True
    assert max(map(len, str(u).splitlines())) <= 80
    # at a 5 % sigma nothing is clipped: the mean stands
    calm = uncertainty(*EXAMPLE, {"efficiency": 0.05}, "step_time", samples=20000, tokens=1e12, **KW)
    assert not calm.monte_carlo.unsteady and "-" not in str(calm.run).split()


def test_clipped_draws_that_set_the_monte_carlo_sd_are_named_as_its_cause():
    # Llama-3.1-70B in FP8 on 128 DGX H200, the fabric bandwidth (50 GB/s) at a 30 % sigma: 0.045 % of the
    # draws fall below 0 and are clipped to a thousandth of it (50 MB/s), where the step time is minutes. They
    # set the Monte Carlo's sd (6.4 s against first order's 91 ms) while the percentiles stay within 0.4 s; the
    # verdict blamed "a kink within the spread or large sigmas". It now names the clipped draws and gives the sd
    # without them (the rest of the gap is 1/x's curvature at a 30 % sigma).
    kw = dict(fidelity="extended", precision="fp8", efficiency=0.4, tp_size=8, pp_size=4, cp_size=2,
              microbatch_count=16, batch_size=1024, seq_len=8192)
    u = uncertainty("modern/Llama-3.1-70B", "modern/H200-1024", {"fabric_bandwidth": 0.3}, "step_time",
                    samples=20000, **kw)
    mc = u.monte_carlo
    assert 0 < u["fabric_bandwidth"].clipped < 0.001 and not u.agrees and u.clipping_sets_sd
    assert mc.std > 20 * mc.std_unclipped > 20 * u.std
    flat = " ".join(str(u).split())
    assert ("first order breaks down here (the draws clipped to the domain edge of fabric_bandwidth set it, where "
            "the output diverges toward that edge: without them the sd is ") in flat
    d = json.loads(json.dumps(u.to_dict()))
    assert d["monte_carlo"]["std_unclipped"] == mc.std_unclipped
    # nothing clipped: no sd without clipped draws to give
    calm = uncertainty("modern/Llama-3.1-70B", "modern/H200-1024", {"fabric_bandwidth": 0.05}, "step_time",
                       samples=2000, **kw)
    assert calm.monte_carlo.std_unclipped is None and not calm.clipping_sets_sd
