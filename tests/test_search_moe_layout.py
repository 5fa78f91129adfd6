"""The search under the extended model's MoE layout (the mechanism ``moe_layout``): expert parallelism is carved
out of the data- and context-parallel ranks, so it splits no replica (``dp = N / (tp pp cp)``), yet the search
still varies it (and the expert tensor-parallel degree) for a mixture of experts, keeps only the splits where
``tp pp cp`` and ``ep etp pp`` divide the accelerators, prices every row as ``solve()`` does, and shows the degrees
after the replicas (``tp x pp x cp x dp, ep``). The command line takes ``--etp``, ``--fsdp-overlap`` and
``--cp-overlap``, and answers a bad value with one line naming the option and exit status 2."""
import itertools
import json
import os
import subprocess
import sys
import warnings
from dataclasses import replace

import pytest

from mlsysim_sym import DistributedModel, catalog, modern, search

EXT = DistributedModel(fidelity="extended")
MIXTRAL = dict(model="Mixtral_8x7B", fleet="Training_1K", batch_size=1024)


def _solve(model, fleet, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return EXT.solve(model, fleet, **kw)


def run(*args):
    """``python -m mlsysim_sym ARGS``: (exit status, stdout, stderr), as tests/test_cli.py calls it."""
    p = subprocess.run([sys.executable, "-m", "mlsysim_sym", *args], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONWARNINGS": ""})
    return p.returncode, p.stdout, p.stderr


# ------------------------------------------------------------------------------------------------
# the Python search
# ------------------------------------------------------------------------------------------------
def test_a_small_moe_search_varies_ep_and_its_rows_equal_solve():
    eps = (1, 2, 4, 8)
    r = search("Mixtral_8x7B", "Training_1K", 1024, fidelity="extended", tp_size=[2, 4], pp_size=[1, 2],
               ep_size=list(eps), top_k=1000)
    # ep is no splitting degree (the replica is tp x pp x cp) but an axis of the split all the same
    assert r.split == ("tp_size", "pp_size", "cp_size") and r.experts == ("ep_size",)
    assert {c.config["ep_size"] for c in r.candidates} == set(eps)          # every ep searched is ranked
    assert {c.config["etp_size"] for c in r.candidates} == {1}
    # with the values each was searched at (the search's own microbatches and virtual stages too)
    assert ("searched: tp 2,4, pp 1,2, ep 1,2,4,8, m 1,2,4,...,128, v 1,2,3,4,5,6,8,10,12,16,20,24,"
            in " ".join(r.configuration.split()))
    for c in r.candidates:
        cfg = c.config
        assert c.dp == 1024 // (cfg["tp_size"] * cfg["pp_size"] * cfg["cp_size"])     # ep carved out of dp
        assert c.result.mfu == _solve("Mixtral_8x7B", "Training_1K", batch_size=1024, **cfg).mfu
    best = r.best
    assert best.objective == best.result.mfu == _solve("Mixtral_8x7B", "Training_1K", batch_size=1024,
                                                       **best.config).mfu
    assert best.objective == max(c.objective for c in r.candidates)
    # the JSON rows carry the expert degrees
    rows = r.to_dict()["results"]
    assert all(isinstance(row["ep_size"], int) and row["etp_size"] == 1 for row in rows)
    assert rows[0]["mfu"] == best.result.mfu and rows[0]["ep_size"] == best.config["ep_size"]
    # the table says what its split column shows, within 80 columns
    text = str(r)
    assert "tp x pp x cp x dp, ep" in text and "tp x pp x cp x dp, ep x etp" not in text
    assert max(map(len, text.splitlines())) <= 80
    assert "ep: expert-parallel degree, carved out of a stage's tp x dp x cp ranks" in " ".join(text.split())
    c = r.candidates[0].config
    assert f"{c['tp_size']} x {c['pp_size']} x 1 x {r.best.dp}, {c['ep_size']}" in text


def test_the_default_ep_choices_of_an_moe_search_are_the_divisors_and_ep_wins_on_the_modern_fleet():
    w, f = modern.workload("modern/Mixtral-8x7B"), modern.fleet("modern/H100-SXM-1024")
    r = search(w, f, 1024, fidelity="extended", top_k=50)
    eps = {c.config["ep_size"] for c in r.candidates}
    assert any(ep > 1 for ep in eps)                  # before: ep was never enumerated (always 1)
    best = r.best
    assert best.result.mfu == _solve(w, f, batch_size=1024, **best.config).mfu
    for c in r.candidates:
        cfg = c.config
        assert 1024 % (cfg["ep_size"] * cfg["etp_size"] * cfg["pp_size"]) == 0
        assert c.dp * cfg["tp_size"] * cfg["pp_size"] * cfg["cp_size"] == 1024


def test_the_split_keeps_only_rows_where_both_groups_divide_the_fleet_as_the_checks_do():
    # Kempner_H100_384: 384 = 2^7 x 3 accelerators. ep 5 divides nothing; ep 128 only with etp pp = 1 (or 3);
    # every schedule choice single, so the configurations searched are the valid splits, one each
    w, f, batch = "modern/Qwen3-30B-A3B", "Kempner_H100_384", 384
    tps, pps, eps, etps = (1, 2, 4, 8), (1, 2, 4), (1, 8, 16, 128), (1, 2)
    sched = dict(microbatch_count=1, v_stages=1, zero_stage=0, activation_recomputation=False, overlap_comm=True)
    r = search(w, f, batch, fidelity="extended", tp_size=list(tps), pp_size=list(pps), ep_size=list(eps),
               etp_size=list(etps), runnable=False, top_k=10_000, **sched)
    assert r.experts == ("ep_size", "etp_size")
    valid, fits = [], []
    for tp, pp, ep, etp in itertools.product(tps, pps, eps, etps):
        cfg = dict(tp_size=tp, pp_size=pp, ep_size=ep, etp_size=etp, **sched)
        try:
            res = _solve(w, f, batch_size=batch, **cfg)
        except ValueError as e:
            # the split does not fit the fleet (ep 128 x etp 2 x pp 4 = 1,024 ranks do not divide 384)
            assert "Infeasible expert parallelism" in str(e) or "must divide the routed experts" in str(e), e
            continue
        valid.append((tp, pp, ep, etp))
        if res.node_profile.feasible:
            fits.append((res.mfu, (tp, pp, ep, etp)))
    assert {3, 5} & {v[2] for v in valid} == set() and (128, 2) not in {(v[2], v[3]) for v in valid}
    assert (1, 1, 128, 1) in valid and (1, 2, 128, 1) not in valid and (1, 1, 128, 2) not in valid
    assert r.searched == len(valid) and r.feasible == len(fits) == len(r.candidates)
    got = sorted((c.config["tp_size"], c.config["pp_size"], c.config["ep_size"], c.config["etp_size"])
                 for c in r.candidates)
    assert got == sorted(k for _, k in fits)
    assert r.best.objective == max(m for m, _ in fits)
    assert {row["etp_size"] for row in r.to_dict()["results"]} == {1, 2}
    assert "tp x pp x cp x dp, ep x etp" in str(r)
    # a split choice outside the parameter table's range is refused as solve() refuses it
    with pytest.raises(ValueError, match=r"^etp_size must be >= 1, got 0$"):
        search(w, f, batch, fidelity="extended", etp_size=[1, 0])
    # EP degrees that divide neither the experts nor the fleet: the experts are checked first, as solve() does
    with pytest.raises(ValueError, match=r"^ep_size \(5, 7\) must divide the routed experts of each MoE layer"):
        search(w, f, batch, fidelity="extended", ep_size=[5, 7])
    # one listed degree no layout takes is named too (it was left out without a word, the others searched)
    with pytest.raises(ValueError, match=r"^ep_size \(7\) must divide the routed experts of each MoE layer"):
        search(w, f, batch, fidelity="extended", ep_size=[8, 7])


def test_expert_data_parallel_ranks_keep_zero_and_overlap_apart_without_data_parallelism():
    # one node of 8: tp 8 leaves one replica (dp 1), yet at ep 1 the experts' gradients are reduced over 8 expert
    # data-parallel ranks, so the overlap and ZeRO change the step; at ep 8 (dp_exp 1) they change nothing
    w, f = "modern/Qwen3-30B-A3B", replace(catalog.fleet("Lab_64_H100"), count=1)
    kw = dict(tp_size=8, pp_size=1, microbatch_count=1, v_stages=1, activation_recomputation=False)
    t = {(ep, z, ov): _solve(w, f, batch_size=8, ep_size=ep, zero_stage=z, overlap_comm=ov, **kw).step_latency_total
         for ep in (1, 8) for z in (0, 3) for ov in (False, True)}
    assert t[1, 0, True] < t[1, 0, False] and t[1, 3, False] != t[1, 0, False]
    assert len({t[8, z, ov] for z in (0, 3) for ov in (False, True)}) == 1
    r = search(w, f, 8, fidelity="extended", ep_size=[1, 8], zero_stage=[0, 1, 2, 3], overlap_comm=[False, True],
               runnable=False, top_k=100, **{k: [v] for k, v in kw.items()})
    assert r.searched == 4 * 2 + 1            # every ZeRO stage and overlap at ep 1, one configuration at ep 8


def test_a_dense_extended_search_is_unchanged_in_form():
    ext = search("Llama3_70B", "Research_256", 256, fidelity="extended", top_k=3, v_stages=(1, 2, 4))
    plain = search("Llama3_70B", "Research_256", 256, top_k=3, v_stages=(1, 2, 4))
    assert ext.split == ("tp_size", "pp_size", "cp_size") and ext.experts == ()
    # the same configurations but at pp 1, where the extended model reads m (a step's layer passes per microbatch)
    # and mlsysim's does not: by hand, the 9 splits tp = 1 ... 256 (dp = 256 / tp) hold 8 x 16 + 2 = 130
    # (ZeRO x recompute x overlap; at dp 1 recompute only) configurations, each now at all 8 microbatch counts
    # (+7 x 130 = 910); a replica's q = 256 / dp = tp samples take m <= tp: 7 + 6 + ... + 0 = 28 counts x 16 fail
    assert (plain.searched, plain.unrunnable) == (11266, 6610)
    assert (ext.searched, ext.unrunnable) == (11266 + 910, 6610 + 448)
    text = str(ext)
    header = next(line for line in text.splitlines() if line.lstrip().startswith("#"))
    assert header.split()[1:8] == ["tp", "x", "pp", "x", "cp", "x", "dp"] and "ep" not in header.split()
    assert "expert-parallel" not in text
    for c in ext.candidates:
        assert set(c.config) == {"tp_size", "pp_size", "cp_size", "microbatch_count", "v_stages", "zero_stage",
                                 "activation_recomputation", "overlap_comm"}
        assert c.result.mfu == _solve("Llama3_70B", "Research_256", batch_size=256, **c.config).mfu


def test_an_extended_search_without_a_pipeline_searches_the_microbatch_count_and_shows_it():
    # the extended model pays a step's layer passes per microbatch at pp 1 too (a longer step at m 2 than at m 1,
    # the same memory): the search keeps every m that splits a replica's samples, ranks them, and shows m
    r = search("Llama3_8B", "Lab_64_H100", 512, fidelity="extended", pp_size=[1], tp_size=[1],
               microbatch_count=[4, 8, 1, 2, 3], zero_stage=3, activation_recomputation=False,
               overlap_comm=True, top_k=10)
    # 8 samples a replica (512 / 64): m 1, 2, 4 and 8 run, m 3 does not
    assert (r.searched, r.unrunnable) == (5, 1)
    assert [c.config["microbatch_count"] for c in r.candidates] == [1, 2, 4, 8]
    steps = [c.result.step_latency_total for c in r.candidates]
    assert steps == sorted(steps) and steps[1] > steps[0]
    for c in r.candidates:
        assert c.result.mfu == _solve("Llama3_8B", "Lab_64_H100", batch_size=512, **c.config).mfu
    rows = [line.split() for line in str(r).splitlines() if line.strip()[:1].isdigit() and "feasible" not in line]
    assert [row[1] for row in rows] == ["1", "2", "4", "8"]      # the m column, where mlsysim's search shows "-"
    assert "m: microbatches (a step's passes, with or without a pipeline)" in " ".join(str(r).split())
    plain = search("Llama3_8B", "Lab_64_H100", 512, pp_size=[1], tp_size=[1], microbatch_count=[4, 8, 1, 2, 3],
                   zero_stage=3, activation_recomputation=False, overlap_comm=True)
    assert (plain.searched, len(plain.candidates), plain.candidates[0].config["microbatch_count"]) == (1, 1, 4)


def test_the_mlsysim_model_and_the_layout_switched_off_keep_ep_among_the_splitting_degrees():
    r = search("Mixtral_8x7B", "Training_1K", 1024, top_k=3)
    assert r.split == ("tp_size", "pp_size", "ep_size") and r.experts == ()
    header = next(line for line in str(r).splitlines() if line.lstrip().startswith("#"))
    assert "tp x pp x ep x dp " in header and "," not in header
    assert all("etp_size" not in row for row in r.to_dict()["results"])
    off = search("Mixtral_8x7B", "Training_1K", 1024, fidelity="extended", without="moe_layout", top_k=3,
                 tp_size=[2, 4], pp_size=[1, 2], ep_size=[1, 4])
    assert off.split == ("tp_size", "pp_size", "ep_size", "cp_size") and off.experts == ()
    for c in off.candidates:       # ep multiplies the replica's accelerators, as in mlsysim
        cfg = c.config
        assert c.dp * cfg["tp_size"] * cfg["pp_size"] * cfg["ep_size"] == 1024
        assert c.result.mfu == DistributedModel(fidelity="extended", without="moe_layout").solve(
            "Mixtral_8x7B", "Training_1K", batch_size=1024, **cfg).mfu


# ------------------------------------------------------------------------------------------------
# the command line
# ------------------------------------------------------------------------------------------------
def _moe(*args):
    return ("--fidelity", "extended", "--model", MIXTRAL["model"], "--fleet", MIXTRAL["fleet"], "--batch-size",
            str(MIXTRAL["batch_size"]), *args)


def test_cli_search_varies_ep_and_etp_and_its_rows_equal_solve():
    status, out, err = run("search", *_moe("--tp", "2,4", "--pp", "1,2", "--ep", "4,8", "--etp", "1,2",
                                           "--top", "4", "--json"))
    assert status == 0, err
    got = json.loads(out)
    assert got["configuration"]["etp_size"] == [1, 2] and got["configuration"]["ep_size"] == [4, 8]
    rows = got["results"]
    assert len(rows) == 4
    keys = ("tp_size", "pp_size", "cp_size", "ep_size", "etp_size", "microbatch_count", "v_stages", "zero_stage",
            "activation_recomputation", "overlap_comm")
    for row in rows:
        assert row["ep_size"] in (4, 8) and row["etp_size"] in (1, 2)
        assert row["dp"] == 1024 // (row["tp_size"] * row["pp_size"] * row["cp_size"])
        res = _solve(MIXTRAL["model"], MIXTRAL["fleet"], batch_size=1024, **{k: row[k] for k in keys})
        assert row["mfu"] == res.mfu
    status, out, err = run("search", *_moe("--tp", "2,4", "--pp", "1,2", "--ep", "4,8", "--etp", "1,2",
                                           "--top", "4"))
    assert status == 0, err
    assert "tp x pp x cp x dp, ep x etp" in out and max(map(len, out.splitlines())) <= 80
    first = rows[0]
    assert (f"{first['tp_size']} x {first['pp_size']} x 1 x {first['dp']}, {first['ep_size']} x "
            f"{first['etp_size']}") in out


@pytest.mark.parametrize("extra, kw", [
    (("--ep", "8", "--etp", "2"), dict(ep_size=8, etp_size=2)),      # 16 ranks of an expert group: beyond a node
    (("--zero-stage", "3", "--fsdp-overlap", "yes"), dict(zero_stage=3, fsdp_overlap=True)),
    (("--cp", "2", "--cp-overlap"), dict(cp_size=2, cp_overlap=True)),
])
def test_cli_solve_takes_the_new_keywords(extra, kw):
    # the modern catalog's Mixtral: an architecture card, so attention has its FLOPs to hide the CP ring behind
    model = "modern/Mixtral-8x7B"
    ep = () if "--ep" in extra else ("--ep", "4")        # an option is given once
    status, out, err = run("solve", "--fidelity", "extended", "--model", model, "--fleet", "Training_1K",
                           "--batch-size", "1024", "--tp", "2", *ep, *extra, "--json")
    assert status == 0, err
    got = json.loads(out)
    kw = dict(dict(ep_size=4), **kw)
    for k, v in kw.items():
        assert got["configuration"][k] == v
    want = _solve(model, "Training_1K", batch_size=1024, tp_size=2, **kw)
    assert got["mfu"] == want.mfu
    # each changes the step: the option reaches the model
    plain = {k: False if k.endswith("overlap") else 1 if k == "etp_size" else v for k, v in kw.items()}
    assert want.mfu != _solve(model, "Training_1K", batch_size=1024, tp_size=2, **plain).mfu


def test_cli_sweep_takes_a_list_of_etp():
    status, out, err = run("sweep", *_moe("--tp", "2", "--ep", "4", "--etp", "1,2,4", "--json"))
    assert status == 0, err
    got = json.loads(out)
    assert got["configuration"]["etp_size"] == [1, 2, 4]
    want = [_solve(MIXTRAL["model"], MIXTRAL["fleet"], batch_size=1024, tp_size=2, ep_size=4, etp_size=e).mfu
            for e in (1, 2, 4)]
    assert got["swept"] == {"etp_size": [1, 2, 4]} and got["valid"] == [True, True, True]
    # (the sweep's vectorized code and solve()'s scalar code may round the last bit apart: 2e-17 here)
    assert got["outputs"]["mfu"] == pytest.approx(want, rel=1e-14)


def test_cli_help_lists_the_new_options():
    status, out, _ = run("search", "--help")
    text = " ".join(out.split()).split("options:", 1)[1]          # past the usage line
    assert status == 0
    for flag, meaning in (("--etp LIST", "expert tensor-parallel degree"), ("--fsdp-overlap [yes|no|both]", "ZeRO-3"),
                          ("--cp-overlap [yes|no|both]", "ring")):
        assert flag in text
        part = text.split(flag, 1)[1].split(" --", 1)[0]
        assert meaning in part and "extended model only" in part


@pytest.mark.parametrize("args, message", [
    (("solve", *_moe("--etp", "0")), "--etp: etp_size must be >= 1, got 0"),
    (("search", *_moe("--tp", "2", "--etp", "1,0")), "--etp: etp_size must be >= 1, got 0"),
    (("sweep", *_moe("--etp", "two")), "--etp: expected a whole number, got 'two'"),
    (("solve", *_moe("--etp", "1.5")), "--etp: expected a whole number, got '1.5'"),
    (("solve", *_moe("--fsdp-overlap", "maybe")), "--fsdp-overlap: expected yes or no, got 'maybe'"),
    (("search", *_moe("--cp-overlap", "sometimes")), "--cp-overlap: expected yes or no, got 'sometimes'"),
    (("solve", *_moe("--ep", "3")), "--ep/--etp/--pp: Infeasible expert parallelism: EP(3) * ETP(1) * PP(1)"),
    (("solve", *_moe("--tp", "3")), "--tp/--pp/--cp: Infeasible parallelism: TP(3) * PP(1) * CP(1)"),
    (("solve", "--model", "Mixtral_8x7B", "--etp", "2"), "--etp: etp_size=2 is an argument of the extended model"),
    (("search", "--tp", "0"), "--tp: tp_size must be >= 1, got 0"),
])
def test_cli_bad_values_answer_one_line_naming_the_option(args, message):
    status, out, err = run(*args)
    assert status == 2 and out == ""
    assert err.startswith("mlsysim-sym: error: " + message), err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_search_whose_every_choice_breaks_a_check_says_which():
    # ep 3 and 5 divide neither Qwen3-30B-A3B's 128 experts (the message blamed the fleet's 1152 accelerators);
    # ep 2 and 4 on a dense card: solve()'s own message, naming every listed degree it refuses (it said "every
    # configuration breaks one of solve()'s checks (the first: ep_size (2) ...)")
    with pytest.raises(ValueError) as e:
        search("modern/Qwen3-30B-A3B", "modern/GB200-NVL72-1152", 1152, fidelity="extended", ep_size=[3, 5])
    assert str(e.value) == ("ep_size (3, 5) must divide the routed experts of each MoE layer (128): each rank holds "
                            "whole experts")
    with pytest.raises(ValueError) as e:
        search("modern/Llama-3.1-70B", "modern/H100-SXM-1024", 1024, fidelity="extended", ep_size=[2, 4])
    assert str(e.value) == "ep_size (2, 4) > 1 needs a mixture of experts: the architecture card has no routed experts"


def test_a_listed_ep_degree_on_a_dense_card_is_refused_as_solve_refuses_it():
    # modern/Llama-3.1-70B is dense: solve() refuses ep 8 in the extended model; search --ep 1,8 ranked the ep 1
    # rows and counted the ep 8 ones among those searched, without a word
    kw = dict(fidelity="extended", precision="bf16", seq_len=8192)
    with pytest.raises(ValueError, match=r"^ep_size \(8\) > 1 needs a mixture of experts: the architecture card has no "
                                         r"routed experts$"):
        DistributedModel(fidelity="extended").solve("modern/Llama-3.1-70B", "modern/H100-SXM-1024", batch_size=1024,
                                                    tp_size=8, ep_size=8, precision="bf16", seq_len=8192)
    with pytest.raises(ValueError, match=r"^ep_size \(2, 8\) > 1 needs a mixture of experts"):
        search("modern/Llama-3.1-70B", "modern/H100-SXM-1024", 1024, ep_size=[1, 2, 8], **kw)
    # ep 1 alone is a dense search as any other
    r = search("modern/Llama-3.1-70B", "modern/H100-SXM-1024", 1024, ep_size=[1], top_k=1, tp_size=[8], **kw)
    assert r.best.config["ep_size"] == 1
