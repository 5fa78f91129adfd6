"""What a person sees: results print with units and names, fit a terminal, and say which configuration."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

from mlsysim_sym import DistributedModel, operating_point_of, search, sweep
from mlsysim_sym.display import key_values, quantity, text_table
from mlsysim_sym.inputs import SOLVE_DEFAULTS
from mlsysim_sym.symbols import keywords
from mlsysim_sym.solver import OUTPUTS

GOLDEN = dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
WIDTH = 80                      # a terminal's columns


def _fits(text: str) -> bool:
    return all(len(line) <= WIDTH for line in text.splitlines())


def test_values_carry_si_prefixes_and_units():
    assert quantity(3.368626711354994, "s") == "3.369 s" and quantity(0.0006184, "s") == "618.4 us"
    assert quantity(59411380584.0, "B") == "59.41 GB" and quantity(4.945e14, "flop/s") == "494.5 TFLOP/s"
    assert quantity(-0.0, "1") == "0" and quantity(None, "s") == "-" and quantity(float("nan"), "B") == "nan B"
    assert text_table([("a", "1"), ("bbb", "22")], ("x", "y"), align="lr") == ["x     y", "a     1", "bbb  22"]


def test_a_table_too_wide_loses_its_indent_then_puts_a_long_name_on_a_line_of_its_own():
    rows = [("GPT2", "1.5B", "48"), ("MobileNetV2_Alpha0_5FeatureExtractor", "688k", "-")]
    # widths 36 + 4 + 2 and two gaps of 2: 46 columns, 48 with the indent
    assert text_table(rows, ("name", "size", "L"), indent="  ", width=48)[0] == "  name" + " " * 32 + "  size   L"
    # at 46 the indent goes and nothing wraps; at 30 the name column keeps 30 - 4 - 2 - 4 = 20
    assert text_table(rows, ("name", "size", "L"), indent="  ", width=46)[2].startswith("MobileNetV2_Alpha0_5Feat")
    assert text_table(rows, ("name", "size", "L"), indent="  ", width=30) == [
        "name                  size   L",
        "GPT2                  1.5B  48",
        "MobileNetV2_Alpha0_5FeatureExtractor",
        "                      688k   -"]
    # another column narrowed (to 19 - 1 - 5 - 4 = 9): the cells before it stay on the first line
    assert text_table([("1", "a long parameter name", "0.5")], ("#", "parameter", "value"), width=19,
                      narrow=1) == ["#  parameter  value", "1  a long parameter name", " " * 16 + "0.5"]


def test_plain_text_has_no_millibytes_nor_megaseconds():
    # 6.425e6 s would print as "6.425 Ms", which a terminal reader takes for milliseconds; -0.755 B as "-755 mB"
    assert quantity(6425000.5, "s") == "6.425e+06 s" and quantity(6.425e6, "s") == "6425000 s"
    assert quantity(999.4, "s") == "999.4 s"
    assert quantity(-0.755, "B") == "-0.755 B" and quantity(0.0125, "s") == "12.5 ms" and quantity(2e3, "B") == "2 kB"


def test_a_grid_sweep_names_its_unit_once_and_its_headers_carry_theirs():
    r = sweep("Llama3_70B", "Research_256", outputs=("step_latency_total", "node_profile.feasible"),
              batch_size=256, tp_size=8, pp_size=4, microbatch_count=8, fabric_bandwidth=[25e9, 50e9],
              overlap_efficiency=[0.5, 0.85])
    text = r.table("step_latency_total")
    assert " ".join(text.split()).startswith(
        "step_latency_total in s by fabric_bandwidth (rows) and overlap_efficiency (columns)")
    lines = text.splitlines()[2:]
    assert lines[0].split() == ["fabric_bandwidth", "0.5", "0.85"]
    # the bundled example's step (3.369 s) with its DP all-reduce (618.5 ms at the Research cluster's 12.5 GB/s)
    # at twice and four times the bandwidth: 3.369 - 0.6185 / 2 = 3.06 s, 3.369 - 0.6185 * 3 / 4 = 2.905 s
    # (the overlap efficiency moves nothing without overlap_comm)
    assert lines[1].split() == ["25", "GB/s", "3.06", "3.06"] and lines[2].split() == ["50", "GB/s", "2.905", "2.905"]
    assert _fits(text)


def test_labels_and_values_end_on_the_column_the_longest_pair_needs():
    # "parallelism" (11) + 2 + 22 = 35 columns, not 16 + 2 + 22 = 40 as two columns would take
    lines = key_values([("step time T_step", "3.369 s"), ("parallelism", "dp 8, tp 8, pp 4, ep 1")], "  ")
    assert lines == ["  step time T_step" + " " * 12 + "3.369 s", "  parallelism  dp 8, tp 8, pp 4, ep 1"]


def test_a_result_prints_its_configuration_and_its_numbers_with_units():
    r = DistributedModel().solve("Llama3_70B", "Research_256", **GOLDEN)
    text = repr(r)
    head = " ".join(line.strip() for line in text.splitlines()[:2])
    assert head.startswith("DistributedResult of Llama-3.1-70B on Research Cluster (256 GPUs): batch 256, "
                           "tp 8, pp 4, m 8, fp16:")
    # the memory against the H100's 80 GiB of HBM, 85.9 GB in the decimal units it prints in
    for piece in ("step time T_step", "3.369 s", "compute-bound", "59.41 GB of 80 GiB = 85.9 GB HBM (fits)",
                  "MFU fleet / node", "samples/s", "dp 8, tp 8, pp 4, ep 1"):
        assert piece in text, piece
    assert _fits(text)
    assert "<table>" in r._repr_html_() and "3.369 s" in r._repr_html_()
    node = repr(r.node_profile)
    assert node.startswith("NodeProfile (one replica):") and "59.41 GB (fits)" in node and _fits(node)


def test_quantities_report_no_spill_where_the_state_fits():
    fits = DistributedModel().solve("Llama3_70B", "Research_256", **GOLDEN)
    assert fits.node_profile.offload_spill_bytes is None and fits.quantities["node_profile.offload_spill_bytes"] is None
    spills = DistributedModel().solve("Llama3_70B", "Research_256", **dict(GOLDEN, tp_size=1))
    assert spills.quantities["node_profile.offload_spill_bytes"] == spills.node_profile.offload_spill_bytes > 0
    assert set(fits.quantities) == set(OUTPUTS)


def test_a_sweep_prints_a_summary_not_its_arrays():
    r = sweep("Llama3_70B", "Kempner_H100_384", outputs=("mfu", "step_latency_total", "node_profile.feasible"),
              batch_size=[128, 384], tp_size=[1, 2, 3, 5, 8], pp_size=[1, 4, 7])
    text = repr(r)
    head = " ".join(line.strip() for line in text.splitlines()[:2])
    assert head.startswith("SweepResult: shape (2, 5, 3), 16 of 30 configurations valid (6 of them no framework "
                           "runs); axes batch_size (2), tp_size (5), pp_size (3)")
    # the 6: valid configurations whose schedule no framework runs, one by one as solve()'s arguments say
    from mlsysim_sym.arguments import arguments
    off = sum(not arguments("Llama3_70B", "Kempner_H100_384", dict(batch_size=b, tp_size=t, pp_size=p)).runnable
              for (i, j, k), ok in np.ndenumerate(r.valid) if ok
              for b, t, p in [([128, 384][i], [1, 2, 3, 5, 8][j], [1, 4, 7][k])])
    assert off == 6
    assert "Kempner AI Cluster" in text and "batch 128,384, tp 1,2,3,5,8, pp 1,4,7" in " ".join(text.split())
    assert "step_latency_total" in text and " s " in text and "2 of 16 true" in text
    # with nothing masked, a yes/no output is counted over every configuration, not over its own array (feasibility
    # does not read the efficiency: it said "1 of 4 true" of 8 configurations)
    r = sweep("Llama3_70B", "Research_256", batch_size=256, efficiency=[0.1, 0.5], tp_size=[2, 8], pp_size=[1, 4],
              microbatch_count=8)
    fits = np.broadcast_to(r.values["node_profile.feasible"], r.valid.shape)
    assert r.valid.all() and int(fits.sum()) == 2 and "node_profile.feasible 2 of 8 true" in " ".join(repr(r).split())
    # the indicators too (0 or 1: counted, not given as their min, median and max); Llama3_70B at tp 1 holds 1.18 TB
    # an accelerator at batch 64 and 256 (32 replicas: 2 and 8 samples each), so its memory time (2.43 s, the spill
    # over the 64 GB/s host link) passes its compute time (1.75 s): memory-bound; at batch 1024 the compute (7.02 s)
    # passes it (3.09 s), and at tp 8 nothing spills
    shown = " ".join(repr(sweep("Llama3_70B", "Research_256", batch_size=[64, 256, 1024], tp_size=[1, 8])).split())
    assert "node_profile.memory_bound 2 of 6 true" in shown and "node_profile.overhead_dominated 0 of 6 true" in shown
    # per rule: how many configurations it masks, and one of its messages
    assert "masked configurations (how many, and the first one's reason):" in text
    assert "14 x Infeasible 4D Parallelism: TP(1) * PP(7) * EP(1)" in text
    assert _fits(text) and len(text.splitlines()) < 15
    assert r._repr_html_().startswith("<table><caption>SweepResult")


def test_search_results_show_the_split_schedule_and_memory():
    r = search("Llama3_70B", "Research_256", 256, top_k=3)
    text = str(r)
    assert "ranked by mfu" in text and "memory/acc" in text and "GB" in text and "tp x pp x ep x dp" in text
    assert _fits(text) and repr(r) == text


def test_an_operating_point_prints_values_with_units_and_its_forms():
    with pytest.warns(UserWarning, match="some ranks will be idle"):      # as solve() warns
        operating_point_of("Llama3_8B", "Research_256", batch_size=8)
    p = operating_point_of("Llama3_70B", "Research_256", **GOLDEN)
    text = repr(p)
    assert text.splitlines()[0].startswith("OperatingPoint of Llama-3.1-70B on Research Cluster (256 GPUs)")
    assert "T_step" in text and "3.369 s" in text and "T_compute + L_lat" in text
    # the book's symbols, not the code's names: ⌊N_GPU/G_rep⌋ was FloorDiv(N, G), M_total ≤ M_device was M_acc <= CAP
    rows = {line.split()[0]: line for line in text.splitlines()[2:] if line.split()}
    assert rows["N_DP"].split()[-1] == "⌊N_GPU/G_rep⌋" and rows["fits"].endswith("M_total ≤ M_device")
    assert "FloorDiv" not in text and "apn" not in text
    assert _fits(text)
    assert "roofline time of one replica step" in p._repr_html_()


def test_help_of_solve_documents_every_argument_and_the_units_of_the_results():
    doc = inspect.getdoc(DistributedModel.solve)
    for name in SOLVE_DEFAULTS:
        assert name in doc, name
    for piece in ("in s", "in B per accelerator", "samples/s", "in J", "flop/s", "B/s"):
        assert piece in doc, piece
    sig = inspect.signature(DistributedModel.solve)
    # mlsysim's arguments, positional as in mlsysim; then the extended model's, keyword-only (docs/extended.md):
    # the signature is the keyword table, in its order, with its defaults (solve() passes them on by position)
    # a keyword whose default a record gives (kv_fraction: an architecture card's width) defaults to None there
    table = {k: None if k in keywords() and keywords()[k].record_default else d for k, d in SOLVE_DEFAULTS.items()}
    params = [(k, p.default) for k, p in sig.parameters.items()
              if k not in ("self", "model", "fleet") and p.kind is not p.VAR_KEYWORD]
    assert params == list(table.items())
    # then the record fields of the call (count=16, fabric_bandwidth=...), as the sweeps take them
    assert list(sig.parameters)[-1] == "fields" and sig.parameters["fields"].kind is inspect.Parameter.VAR_KEYWORD
    assert [k for k, p in keywords().items() if p.record_default] == ["kv_fraction"]
    only = {k: p.default for k, p in sig.parameters.items() if p.kind is p.KEYWORD_ONLY}
    assert only == {k: table[k] for k, p in keywords().items() if p.fidelity == "extended"}
    for name in only:
        assert name in doc, name


def test_answers_and_plans_show_in_a_notebook_as_their_text():
    # required's answer, a plan and the nodes to finish had no _repr_html_ (a notebook showed their dataclass
    # repr); a result's table kept no indent in HTML (leading spaces collapse)
    import html as html_
    from mlsysim_sym import required
    from mlsysim_sym.planning import accelerators_to_finish
    r = required("mfu", 0.3, "efficiency", "Llama3_70B", "Research_256", **GOLDEN)
    result = DistributedModel().solve("Llama3_70B", "Research_256", **GOLDEN)
    for obj, text in ((r, r.text()), (result.plan(tokens=1e12), str(result.plan(tokens=1e12))),
                      (accelerators_to_finish(1e12, 30, "Llama3_70B", "Research_256", **GOLDEN), None)):
        shown = obj._repr_html_()
        assert shown.startswith("<pre>") and shown.endswith("</pre>")
        assert text is None or html_.unescape(shown[5:-6]) == text
    assert "<td>&nbsp;&nbsp;replica step time T_node</td>" in result._repr_html_()


def test_the_throughput_says_it_counts_every_replica_where_the_batch_is_smaller():
    # batch 4 over 8 replicas (tp 8 x pp 4 of 256): mlsysim gives each replica one sample ("Using
    # local_batch=1"), so the throughput counts 8 samples a step, not the batch's 4
    import warnings
    from mlsysim_sym import DistributedModel
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = DistributedModel().solve("Llama3_70B", "Research_256", batch_size=4, tp_size=8, pp_size=4)
    line = next(x for x in str(r).splitlines() if x.lstrip().startswith("throughput"))
    assert line.endswith(" samples/s (8 a step, not the batch 4)")
    assert r.effective_throughput == pytest.approx(8 / r.step_latency_total, rel=1e-12)


def test_the_throughput_says_it_drops_the_remainder_of_a_batch_that_does_not_split():
    # batch 250 over 8 replicas (tp 8 x pp 4 of 256): mlsysim prices 250 // 8 = 31 samples a replica, 248 a step;
    # the throughput counts those, and the text says so (an even batch of 256 says nothing)
    from mlsysim_sym import DistributedModel
    r = DistributedModel().solve("Llama3_70B", "Research_256", batch_size=250, tp_size=8, pp_size=4,
                                 microbatch_count=8)
    line = next(x for x in str(r).splitlines() if x.lstrip().startswith("throughput"))
    assert line.endswith(" samples/s (248 a step, not the batch 250)")
    assert r.effective_throughput == pytest.approx(248 / r.step_latency_total, rel=1e-12)
    even = DistributedModel().solve("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4,
                                    microbatch_count=8)
    assert next(x for x in str(even).splitlines() if x.lstrip().startswith("throughput")).endswith("samples/s")


def test_the_memory_terms_print_with_their_units():
    # README: print(r.memory) printed the dict of bytes. Llama-3.1-70B (70.6e9 parameters) on Research_256, batch 256,
    # tp 8, pp 4, m 8: weights and gradients 70.6e9 x 2 B / 32 = 4.4125 GB each, Adam 12 B / 32 a parameter 26.475 GB
    # (the activations and buffers as mlsysim gives them, test_parity)
    r = DistributedModel().solve("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4,
                                 microbatch_count=8)
    lines = str(r.memory).splitlines()
    assert [x.split()[-2:] for x in lines] == [["4.412", "GB"], ["4.412", "GB"], ["26.48", "GB"],
                                               ["22.82", "GB"], ["1.294", "GB"]]
    assert lines[1].startswith("gradient memory M_gradients") and len({len(x) for x in lines}) == 1
    assert r.memory["M_grads"] == r.memory["M_gradients"] == 4.4125e9          # 70.6e9 x 2 B / (8 x 4)
    assert all(x in str(r) for x in lines[0].split("  ") if x)


def test_a_quantity_at_two_digits_keeps_its_prefix_and_no_exponent():
    # the uncertainty table printed a standard error as "6e+02 ms" and an energy as "2.7e+02 J" (Python's %.2g of
    # 596 and 270): 2 significant digits of a prefixed quantity read as the number rounded, "600 ms"
    from mlsysim_sym.display import quantity
    assert [quantity(0.596, "s", 2), quantity(270.4, "J", 2), quantity(0.9994, "s", 2), quantity(1.1, "s", 2),
            quantity(0.0911, "s", 4)] == ["600 ms", "270 J", "1 s", "1.1 s", "91.1 ms"]
