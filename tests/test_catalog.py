"""The bundled catalog (mlsysim_sym/data/catalog.json) and from_mlsysim.

The tests marked by the ``registry`` fixture compare the catalog with the installed
mlsysim's registry ("the catalog still matches mlsysim's registry"); they are skipped
when mlsysim is not installed. Regenerate the file with ``python tools/export_catalog.py``.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import warnings
from dataclasses import fields, is_dataclass
from importlib import resources
from pathlib import Path

import pytest

from mlsysim_sym import catalog
from mlsysim_sym.types import WORKLOAD_KINDS, Accelerator, Fabric, Fleet, Node, Workload

ROOT = Path(__file__).resolve().parents[1]
OTHER_CATEGORIES = ("Vision", "GenerativeVision", "Recommendation", "StateSpace", "Tiny", "Embodied")


@pytest.fixture(scope="module")
def registry():
    pytest.importorskip("mlsysim")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return catalog.mlsysim_registry()


def assert_same(got, want, path="") -> None:
    """Field-by-field equality of two records (recursing into nested records), with exact floats."""
    assert type(got) is type(want), f"{path}: {type(got).__name__} != {type(want).__name__}"
    for f in fields(want):
        a, b = getattr(got, f.name), getattr(want, f.name)
        where = f"{path}.{f.name}" if path else f.name
        if is_dataclass(b):
            assert_same(a, b, where)
        else:
            assert a == b and type(a) is type(b), f"{where}: {a!r} != {b!r}"


# --- shape of the catalog ---------------------------------------------------------------

def test_counts():
    assert len(catalog.workload_names("Language")) == 16
    others = [n for c in OTHER_CATEGORIES for n in catalog.workload_names(c)]
    assert len(others) == 26
    assert len(catalog.workload_names()) == 42
    assert len(catalog.fleet_names()) == 18
    assert {catalog.fleet(n).node.accelerator.name for n in catalog.fleet_names()} == {"NVIDIA H100", "NVIDIA A100",
                                                                                        "NVIDIA B200"}
    # mlsysim's Hardware registry, flat, as a plan names it (mlsysim eval's _find_flat: the first of a name)
    assert len(catalog.hardware_names()) == 52 and len(catalog.accelerator_names()) == 52
    acc, count, nvlink, host = catalog.hardware("GB200_NVL72")
    assert count == 72 and catalog.hardware("H100")[0].name == "NVIDIA H100"


def test_every_entry_loads():
    for name in catalog.workload_names():
        w = catalog.workload(name)
        assert isinstance(w, Workload) and w.kind in WORKLOAD_KINDS
        assert catalog.workload_category(name) in catalog.WORKLOAD_CATEGORIES
    for name in catalog.fleet_names():
        f = catalog.fleet(name)
        assert isinstance(f, Fleet) and isinstance(f.node, Node) and isinstance(f.fabric, Fabric)
        assert isinstance(f.node.accelerator, Accelerator)
        assert isinstance(f.count, int) and isinstance(f.node.accelerators_per_node, int)
        assert f.node.accelerator == catalog.accelerator(f.node.accelerator.name)


def test_cached():
    assert catalog.workload("Llama3_70B") is catalog.workload("Llama3_70B")
    assert catalog.fleet("Research_256") is catalog.fleet("Research_256")


def test_json_floats_round_trip():
    text = resources.files("mlsysim_sym").joinpath("data").joinpath("catalog.json").read_text("utf-8")
    data = json.loads(text)
    assert data["format"] == catalog.CATALOG_FORMAT
    assert data["source"] == {"package": "mlsysim", "version": "0.3.0"}

    def walk(x):
        if isinstance(x, float):
            assert math.isfinite(x) and float(repr(x)) == x
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(data)


def test_no_mlsysim_import_at_run_time():
    code = (
        "import sys; from mlsysim_sym import catalog as c; "
        "c.workload('Llama3_70B'); c.fleet('Research_256'); c.accelerator('NVIDIA H100'); "
        "assert 'mlsysim' not in sys.modules, 'mlsysim was imported'"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=str(ROOT))


# --- hand-checked values ----------------------------------------------------------------

def test_research_256():
    f = catalog.fleet("Research_256")
    assert f.name == "Research Cluster (256 GPUs)"
    assert (f.count, f.node.accelerators_per_node, f.total_accelerators) == (32, 8, 256)
    assert f.node.name == "DGX H100"
    assert f.node.intra_node_bw == 4.5e11
    assert f.fabric.bandwidth == 1.25e10  # 100 Gbps
    assert f.fabric.latency == 5e-05  # 50 µs, not pint's 4.9999999999999996e-05
    assert f.fabric.oversubscription_ratio == 1.0
    assert f.node.accelerator.name == "NVIDIA H100"


def test_other_fleets():
    k = catalog.fleet("Kempner_H100_384")
    assert (k.count, k.node.accelerators_per_node) == (96, 4)
    b = catalog.fleet("Training_1K_B200")
    assert b.node.accelerator.name == "NVIDIA B200" and b.node.intra_node_bw == 9e11
    assert (b.fabric.bandwidth, b.fabric.latency) == (1e11, 5e-06)
    r = catalog.fleet("Meta_GenAI_H100_24K_RoCE")
    assert (r.fabric.bandwidth, r.fabric.latency, r.total_accelerators) == (5e10, 1e-05, 24576)
    a = catalog.fleet("Lab_64_A100")
    assert (a.fabric.bandwidth, a.fabric.latency, a.node.intra_node_bw) == (2.5e10, 7e-06, 3e11)


def test_accelerators():
    h = catalog.accelerator("NVIDIA H100")
    assert h.memory_capacity == 85899345920.0  # 80 GiB
    assert h.peak_flops == 9.89e14
    assert h.memory_bandwidth == 3.35e12
    assert h.dispatch_tax == 1e-05 and h.tdp == 700.0
    assert h.pcie_bandwidth == 6.4e10 and h.nvlink_latency == 5e-07
    assert (h.sram_capacity, h.sram_bandwidth, h.flash_bandwidth) == (None, None, None)
    assert [k for k, _ in h.precision_flops] == [
        "tf32", "fp16_dense", "fp16_sparse", "fp8", "int8", "tf32_sparse", "int8_sparse", "fp32",
    ]
    assert h.flops_for("fp8") == 1.979e15 and h.flops_for("int8") == 1.979e15
    assert h.flops_for("fp16") is None and h.flops_for("int4") is None

    a = catalog.accelerator("NVIDIA A100")
    assert (a.peak_flops, a.memory_bandwidth, a.dispatch_tax, a.pcie_bandwidth) == (3.12e14, 2.039e12, 1.5e-05, 3.2e10)
    assert [k for k, _ in a.precision_flops] == ["fp32", "tf32", "int8", "fp16_dense", "fp16_sparse"]
    assert a.flops_for("fp32") == 1.95e13

    b = catalog.accelerator("NVIDIA B200")
    assert (b.memory_capacity, b.peak_flops, b.dispatch_tax, b.tdp) == (193273528320.0, 2.25e15, 8e-06, 1000.0)
    assert [k for k, _ in b.precision_flops] == ["fp32", "tf32", "fp16_dense", "fp16_sparse", "fp8", "fp4", "int4"]
    assert b.flops_for("int8") is None and b.flops_for("int4") == 9e15


def test_workloads():
    w = catalog.workload("Llama3_70B")
    assert (w.kind, w.parameters, w.layers, w.hidden_dim) == ("transformer", 7.06e10, 80, 8192)
    assert w.inference_flops == 1.412e11 and w.model_size is None
    assert catalog.workload_category("Llama3_70B") == "Language"

    d = catalog.workload("DeepSeek_V3")
    assert (d.kind, d.active_experts_per_token, d.active_parameters) == ("sparse_transformer", 8, 3.7e10)
    assert (d.parameters, d.layers, d.hidden_dim) == (6.71e11, 61, 7168)

    r = catalog.workload("DLRM")
    assert (r.kind, r.parameters, r.model_size, r.inference_flops) == ("workload", None, 1e11, None)
    assert catalog.workload_category("DLRM") == "Recommendation"

    assert catalog.workload("OPT_13B").inference_flops is None
    assert catalog.workload("Mixtral_8x7B").active_experts_per_token == 2
    assert catalog.workload("GPT4").kind == "sparse_transformer"
    assert catalog.workload("BERT_Base").kind == "transformer"

    rn = catalog.workload("ResNet50")
    assert (rn.kind, rn.parameters, rn.layers, rn.hidden_dim) == ("cnn", 25557032.0, 50, None)
    assert catalog.workload_category("ResNet50") == "Vision"
    sd = catalog.workload("StableDiffusion_v1_5")
    assert (sd.kind, sd.denoising_steps, sd.inference_flops, sd.layers) == ("diffusion", 50, 2e10, None)
    m = catalog.workload("Mamba_2_8B")
    assert (m.kind, m.layers, m.hidden_dim) == ("ssm", 64, 2560)
    e = catalog.workload("OpenVLA_7B")
    assert (e.kind, e.layers, e.hidden_dim, e.inference_flops) == ("embodied", 32, 4096, None)
    assert catalog.workload("ViT_Large").kind == "workload"
    assert catalog.workload("EfficientNetB0").layers is None


def test_kinds_per_category():
    kinds = {n: catalog.workload(n).kind for n in catalog.workload_names()}
    assert sum(k == "sparse_transformer" for k in kinds.values()) == 3
    assert {kinds[n] for n in catalog.workload_names("Language")} == {"transformer", "sparse_transformer"}
    assert {kinds[n] for n in catalog.workload_names("StateSpace")} == {"ssm"}
    assert {kinds[n] for n in catalog.workload_names("Embodied")} == {"embodied"}


# --- unknown names ----------------------------------------------------------------------

@pytest.mark.parametrize(
    "fn, name, close",
    [
        (catalog.workload, "Llama3_7B", "Llama3_70B"),
        (catalog.workload, "resnet50", "ResNet50"),
        (catalog.fleet, "Research_512", "Research_256"),
        (catalog.accelerator, "H100", "NVIDIA H100"),
        (catalog.workload_category, "NoSuchModel", None),
    ],
)
def test_unknown_name(fn, name, close):
    with pytest.raises(KeyError) as exc:
        fn(name)
    msg = str(exc.value)
    assert repr(name) in msg
    if close:
        assert close in msg


def test_unknown_category():
    with pytest.raises(KeyError, match="Langauge"):
        catalog.workload_names("Langauge")


# --- the catalog still matches mlsysim's registry ---------------------------------------

def test_registry_names(registry):
    import mlsysim

    wl = registry["workloads"]
    assert set(wl) == set(catalog.workload_names())
    assert set(registry["fleets"]) == set(catalog.fleet_names())
    assert sum(cat == "Language" for cat, _ in wl.values()) == 16
    assert sum(cat in OTHER_CATEGORIES for cat, _ in wl.values()) == 26
    assert len(registry["fleets"]) == 18
    cats = {a for a in dir(mlsysim.Models) if not a.startswith("_") and isinstance(getattr(mlsysim.Models, a), type)}
    assert cats == set(catalog.WORKLOAD_CATEGORIES)
    for name, (cat, obj) in wl.items():
        assert getattr(getattr(mlsysim.Models, cat), name) is obj
        assert catalog.workload_category(name) == cat


@pytest.mark.parametrize("name", catalog.workload_names())
def test_workload_matches_registry(registry, name):
    _, obj = registry["workloads"][name]
    assert_same(catalog.from_mlsysim(obj), catalog.workload(name), name)


@pytest.mark.parametrize("name", catalog.fleet_names())
def test_fleet_matches_registry(registry, name):
    obj = registry["fleets"][name]
    got = catalog.from_mlsysim(obj)
    assert_same(got, catalog.fleet(name), name)
    assert got.total_accelerators == obj.total_accelerators
    # the parts convert on their own the same way
    assert catalog.from_mlsysim(obj.node) == got.node
    assert catalog.from_mlsysim(obj.fabric) == got.fabric
    assert catalog.from_mlsysim(obj.node.accelerator) == got.node.accelerator


def test_export_script_is_up_to_date(registry):
    r = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "export_catalog.py"), "--check"],
        capture_output=True, text=True, cwd=str(ROOT),
    )
    assert r.returncode == 0, r.stderr


def test_kind_isinstance_order(registry):
    from mlsysim.models import types as mt

    for name, (_, obj) in registry["workloads"].items():
        kind = catalog.workload(name).kind
        assert (kind == "sparse_transformer") == isinstance(obj, mt.SparseTransformerWorkload)
        assert (kind in ("transformer", "sparse_transformer")) == isinstance(obj, mt.TransformerWorkload)


# --- from_mlsysim on custom objects -----------------------------------------------------

def test_from_mlsysim_custom_objects(registry):
    from mlsysim.core.units import Q_
    from mlsysim.models.types import SparseTransformerWorkload, TransformerWorkload
    from mlsysim.models.types import Workload as MWorkload
    from mlsysim.systems.types import Fleet as MFleet
    from mlsysim.systems.types import NetworkFabric

    w = catalog.from_mlsysim(MWorkload(name="tiny", architecture="mlp", parameters=Q_(1000, "param")))
    assert w == Workload(name="tiny", kind="workload", parameters=1000.0)

    w = catalog.from_mlsysim(MWorkload(name="blob", architecture="x", model_size=Q_(3, "GB")))
    assert (w.parameters, w.model_size, w.layers, w.hidden_dim) == (None, 3e9, None, None)

    t = catalog.from_mlsysim(TransformerWorkload(name="t", architecture="Transformer", parameters=Q_(1e9, "param"), layers=24))
    assert (t.kind, t.layers, t.hidden_dim, t.inference_flops, t.active_experts_per_token) == ("transformer", 24, None, None, None)

    s = catalog.from_mlsysim(SparseTransformerWorkload(
        name="moe", architecture="MoE", parameters=Q_(8e9, "param"), layers=8,
        active_parameters=Q_(2e9, "param"), experts=8))
    assert (s.kind, s.active_parameters, s.active_experts_per_token) == ("sparse_transformer", 2e9, 1)

    h100 = registry["fleets"]["Research_256"].node.accelerator
    bare = h100.model_copy(update={"interconnect": None, "nvlink": None, "tdp": None})
    a = catalog.from_mlsysim(bare)
    assert (a.pcie_bandwidth, a.nvlink_latency, a.tdp) == (None, None, None)
    assert a.memory_capacity == 85899345920.0

    nolat = h100.model_copy(update={"nvlink": h100.nvlink.model_copy(update={"latency": None})})
    assert catalog.from_mlsysim(nolat).nvlink_latency is None
    zero = h100.model_copy(update={"nvlink": h100.nvlink.model_copy(update={"latency": Q_(0, "ns")})})
    assert catalog.from_mlsysim(zero).nvlink_latency == 0.0  # mlsysim tests `is not None`
    bidir = h100.model_copy(update={"interconnect": h100.nvlink})  # 900 GB/s bidirectional_total
    assert catalog.from_mlsysim(bidir).pcie_bandwidth == 4.5e11

    src = registry["fleets"]["Research_256"]
    fab = NetworkFabric(name="slow", bandwidth=Q_(10, "Gbps"), oversubscription_ratio=4)
    f = catalog.from_mlsysim(MFleet(name="custom", node=src.node, count=3, fabric=fab))
    assert (f.count, f.fabric.bandwidth, f.fabric.latency, f.fabric.oversubscription_ratio) == (3, 1.25e9, None, 4.0)
    assert f.node == catalog.fleet("Research_256").node

    ours = catalog.fleet("Research_256")
    assert catalog.from_mlsysim(ours) is ours
    with pytest.raises(TypeError):
        catalog.from_mlsysim("Research_256")


def test_records_carry_the_heads_they_list_as_mlsysim_reads_them():
    # mlsysim's conventions (TransformerWorkload.kv_cache_size): no kv_heads is one per head, no head_dim is
    # hidden_dim // heads. Llama 3 70B: 8 key/value heads of 8192 / 64 = 128 are 0.125 of the hidden size;
    # PaLM 540B: 1 of head_dim 256 over 18432; GPT-3: multi-head, 1
    for name, heads, kv, fraction in (("Llama3_70B", 64, 8, 0.125), ("Mixtral_8x7B", 32, 8, 0.25),
                                      ("PaLM_540B", 48, 1, 256 / 18432), ("GPT3", 96, 96, 1.0)):
        w = catalog.workload(name)
        assert (w.attention_heads, w.kv_heads, w.kv_fraction) == (heads, kv, fraction), name
    # latent attention (DeepSeek_V3 lists kv_lora_rank 512 and 56 heads, where the model has 128) and records
    # without heads carry none
    for name in ("DeepSeek_V3", "ResNet50", "Mamba_2_8B"):
        w = catalog.workload(name)
        assert (w.attention_heads, w.kv_heads, w.kv_fraction) == (None, None, None), name
    # what mlsysim reads but gives no width or no model has
    from mlsysim_sym.types import record_heads
    assert record_heads(9000, None, None, 8192) == dict.fromkeys(("kv_fraction", "attention_heads", "kv_heads"))
    assert record_heads(-8, None, None, 8192)["attention_heads"] is None
    assert record_heads(40, 6, None, 5120) == {"kv_fraction": 0.15, "attention_heads": 40, "kv_heads": 6}
