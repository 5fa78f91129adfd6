"""The modern catalog (mlsysim_sym/data/modern.json): every field cited, the figures NVIDIA publishes, and the
names that say which catalog they come from."""
import json
from importlib import resources

import pytest

from mlsysim_sym import DistributedModel, catalog, modern

GiB = 2 ** 30


def _raw():
    return json.loads(resources.files("mlsysim_sym").joinpath("data", "modern.json").read_text())


def test_every_field_has_a_source():
    raw = _raw()
    for kind in ("architectures", "accelerators", "nodes", "fabrics"):
        for name, rec in raw[kind].items():
            cited = {f for fields, refs in rec["sources"].items() for f in fields.split(",")
                     if all(r.strip() in raw["citations"] for r in refs.split(";"))}
            # a field the record leaves empty (GB200's host link: Grace over NVLink-C2C) needs no source
            given = set(rec["fields"]) if kind == "architectures" else \
                {k for k, v in rec.items() if v is not None} - {"name", "sources", "accelerator"}
            if kind == "architectures":
                # a card's shape is cited as a whole ("shape") and field by field where another source gives it
                assert "shape" in cited, name
            else:
                assert given <= cited, (name, given - cited)
    for name in modern.architecture_names() + modern.fleet_names():
        assert modern.sources(name), name


@pytest.mark.parametrize("fleet,peak,fp8,hbm_gib,bw,nvlink,per_node,tdp", [
    # dense Tensor Core rates: half of NVIDIA's sparse figures (H100 SXM: 1,979 / 3,958 TFLOPS with sparsity)
    ("H100-SXM-1024", 989.5e12, 1979e12, 80, 3.35e12, 450e9, 8, 700),
    ("H200-1024", 989.5e12, 1979e12, 141, 4.8e12, 450e9, 8, 700),
    ("B200-1024", 2250e12, 4500e12, 180, 7.7e12, 900e9, 8, 1000),
    ("GB200-NVL72-1152", 2500e12, 5000e12, 186, 8.0e12, 900e9, 72, 1200),
])
def test_the_systems_are_nvidias_figures(fleet, peak, fp8, hbm_gib, bw, nvlink, per_node, tdp):
    f = modern.fleet(fleet)
    a = f.node.accelerator
    assert (a.peak_flops, a.flops_for("bf16"), a.flops_for("fp8")) == (peak, peak, fp8)
    assert (a.memory_capacity, a.memory_bandwidth, a.tdp) == (hbm_gib * GiB, bw, tdp)
    assert (f.node.intra_node_bw, f.node.accelerators_per_node) == (nvlink, per_node)
    # 400 Gb/s per GPU: ConnectX-7
    assert f.fabric.bandwidth == 50e9 and f.total_accelerators in (1024, 1152)


def test_names_say_which_catalog():
    assert all(n.startswith("modern/") for n in modern.architecture_names() + modern.fleet_names())
    assert not any(n.startswith("modern/") for n in catalog.workload_names() + catalog.fleet_names())
    with pytest.raises(KeyError, match="unknown modern architecture 'modern/Llama-9'; close names: modern/Llama-3.1-8B"):
        modern.architecture("modern/Llama-9")
    # a name from one catalog is not found in the other
    with pytest.raises(KeyError):
        catalog.workload("DeepSeek-V3")

    # an unknown name's close names carry the prefix a user types (modern/H100-1024 is no fleet: it had
    # "close names: H200-1024, H100-SXM-1024", which failed as typed); a modern name typed without its prefix is
    # named with it, in Python and on the command line
    with pytest.raises(KeyError, match=r"unknown modern fleet 'modern/H100-1024'; close names: modern/H200-1024, "
                                       r"modern/H100-SXM-1024,"):
        DistributedModel().solve("modern/Llama-3.1-70B", "modern/H100-1024")
    with pytest.raises(KeyError, match=r"unknown fleet 'H100-SXM-1024'; known names: .*; in the modern catalog: "
                                       r"modern/H100-SXM-1024,"):
        DistributedModel().solve("modern/Llama-3.1-70B", "H100-SXM-1024")
    with pytest.raises(KeyError, match=r"; close names: Llama3_70B, .*; in the modern catalog: modern/Llama-3\.1-70B,"):
        DistributedModel().solve("Llama-3.1-70B", "Research_256")
    from mlsysim_sym.cli import main
    import contextlib
    import io
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["solve", "--fleet", "H100-SXM-1024"]) == 2
    assert "close names: modern/H100-SXM-1024" in err.getvalue()


def test_fp8_on_blackwell_doubles_the_peak_the_model_reads():
    kw = dict(batch_size=512, tp_size=4, pp_size=2, microbatch_count=16, seq_len=8192)
    bf16 = DistributedModel().solve("modern/Llama-3.1-8B", "modern/B200-1024", precision="bf16", **kw)
    fp8 = DistributedModel().solve("modern/Llama-3.1-8B", "modern/B200-1024", precision="fp8", **kw)
    assert fp8.node_profile.peak_flops_actual == 2 * bf16.node_profile.peak_flops_actual


@pytest.mark.parametrize("fleet,tf32,int8,fp32", [
    # dense TF32 and INT8: half the sparse rows (H100/H200 SXM: 989 TFLOPS and 3,958 TOPS; HGX B200: 2.2 PFLOPS
    # and 9 POPS; GB200 NVL72: 2.5 PFLOPS and 10 POPS); FP32 is the CUDA cores' rate, never halved
    ("H100-SXM-1024", 494.5e12, 1979e12, 67e12),
    ("H200-1024", 494.5e12, 1979e12, 67e12),
    ("B200-1024", 1100e12, 4500e12, 80e12),
    ("GB200-NVL72-1152", 1250e12, 5000e12, 90e12),
])
def test_32_bit_and_int8_rates_are_their_own(fleet, tf32, int8, fp32):
    a = modern.fleet(fleet).node.accelerator
    assert (a.flops_for("tf32"), a.flops_for("int8"), a.flops_for("fp32")) == (tf32, int8, fp32)


def test_fp32_on_h100_is_priced_at_the_cuda_cores_rate_not_the_16_bit_one():
    # the node's peak is 8 x 67 TFLOPS in FP32 (it was 8 x 989.5, the 16-bit rate, before the record had an FP32
    # rate); mlsysim's own H100 record gives the same 67 TFLOPS
    kw = dict(batch_size=1024, seq_len=2048)
    fp32 = DistributedModel().solve("modern/Llama-3.1-8B", "modern/H100-SXM-1024", precision="fp32", **kw)
    bf16 = DistributedModel().solve("modern/Llama-3.1-8B", "modern/H100-SXM-1024", precision="bf16", **kw)
    assert fp32.node_profile.peak_flops_actual / bf16.node_profile.peak_flops_actual == pytest.approx(67 / 989.5)
    assert catalog.fleet("Lab_64_H100").node.accelerator.flops_for("fp32") == 67e12


def test_the_peak_mfu_counts_against_is_named():
    # the modern H100 has an fp8 rate and no int4 one (no datasheet prints it): int4 is priced at peak_flops, as
    # mlsysim prices a key a record lacks, and the text and JSON say so; the JSON gives the HBM too (80 GiB)
    kw = dict(batch_size=1024)
    fp8 = DistributedModel().solve("modern/Llama-3.1-8B", "modern/H100-SXM-1024", precision="fp8", **kw)
    int4 = DistributedModel().solve("modern/Llama-3.1-8B", "modern/H100-SXM-1024", precision="int4", **kw)
    assert (fp8.mfu_peak, int4.mfu_peak) == ("the fp8 peak", "peak_flops, no int4 rate")
    assert "MFU fleet / node (of peak_flops, no int4 rate)" in str(int4)
    d = int4.to_dict()
    assert d["mfu_peak"] == "peak_flops, no int4 rate" and d["memory_capacity"] == 80 * GiB
    # a peak given (the command line's --peak-flops, a record field set through the configuration)
    from mlsysim_sym.arguments import arguments
    from mlsysim_sym.solver import price
    given = price(arguments("modern/Llama-3.1-8B", "modern/H100-SXM-1024",
                            dict(kw, precision="fp8", peak_flops=3e15), caller="sweep"))
    assert given.mfu_peak == "the peak_flops given"


def test_a_cards_configuration_line_names_its_sequence():
    # mlsysim's default sequence, 2048, is a quarter of what Llama 3.1 trains at (8192): a card's line names it
    # at the default too, where mlsysim's own workloads keep their short line
    kw = dict(batch_size=1024, tp_size=8, pp_size=4)
    r = DistributedModel().solve("modern/Llama-3.1-70B", "modern/H100-SXM-1024", **kw)
    assert r.configuration.endswith(": batch 1024, tp 8, pp 4, seq 2048, fp16")
    assert DistributedModel().solve("modern/Llama-3.1-70B", "modern/H100-SXM-1024", seq_len=8192,
                                    **kw).configuration.endswith("seq 8192, fp16")
    assert DistributedModel().solve("Llama3_70B", "Research_256", batch_size=256, tp_size=8,
                                    pp_size=4).configuration.endswith(": batch 256, tp 8, pp 4, fp16")


def test_the_bundled_catalog_is_what_its_tool_writes(tmp_path):
    # tools/write_modern_catalog.py is the catalog's one source: run on its own, it writes the bundled file exactly
    # (a card added to the JSON alone, as Qwen3-235B-A22B once was, would be lost the next time it runs)
    import shutil
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    (tmp_path / "tools").mkdir()
    (tmp_path / "mlsysim_sym" / "data").mkdir(parents=True)
    shutil.copy(root / "tools" / "write_modern_catalog.py", tmp_path / "tools")
    subprocess.run([sys.executable, str(tmp_path / "tools" / "write_modern_catalog.py")], check=True, timeout=120)
    written = (tmp_path / "mlsysim_sym" / "data" / "modern.json").read_text(encoding="utf-8")
    assert written == resources.files("mlsysim_sym").joinpath("data", "modern.json").read_text(encoding="utf-8")
