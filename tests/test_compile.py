"""Compiled evaluation: the shipped generated code is fresh, and every backend gives the same numbers."""
import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest

from mlsysim_sym import catalog
from mlsysim_sym import _shipped
from mlsysim_sym.compile import _lambdify, compile_quantities
from mlsysim_sym.arguments import parameters_of
from mlsysim_sym.model import Variant
from mlsysim_sym.solver import OUTPUTS, solve_quantities

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("generate_code", ROOT / "tools" / "generate_code.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_shipped_generated_code_equals_a_fresh_generation():
    tool = _tool()
    for name, text in tool.expected().items():
        assert (ROOT / "mlsysim_sym" / "_generated" / name).read_text() == text, \
            f"{name} is stale: run python tools/generate_code.py"


def test_solve_uses_the_shipped_code_and_it_matches_lambdify():
    names = solve_quantities(Variant())
    shipped = compile_quantities(Variant(), names, "math")
    assert shipped.fn.__code__.co_filename.endswith("math_transformer.py")
    fresh = _lambdify(Variant(), names, "math")
    variant, values = parameters_of("GPT3", "Training_1K_A100", precision="fp8", batch_size=512, tp_size=16,
                                    pp_size=8, v_stages=2, microbatch_count=4, is_lora=True,
                                    activation_recomputation=True)
    assert shipped.evaluate(values) == fresh.evaluate(values)
    assert len(_shipped.fingerprint()) == 64


@pytest.mark.parametrize("model,fleet", [("Mixtral_8x7B", "Kempner_H100_384"), ("ResNet50", "Lab_64_A100"),
                                         ("Llama3_8B", "Mega_100K")])
def test_numpy_backend_equals_math_backend(model, fleet):
    names = tuple(OUTPUTS.values())
    rng = np.random.default_rng(3)
    w, f = catalog.workload(model), catalog.fleet(fleet)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # batch below dp on Mega_100K, as solve() warns
        variant, values = parameters_of(w, f, precision="bf16", batch_size=1000, tp_size=2, pp_size=4, ep_size=2,
                                        v_stages=2, microbatch_count=8, zero_stage=1, efficiency=0.4,
                                        overlap_comm=True, overlap_efficiency=0.7, congestion_factor=1.3,
                                        straggler_factor=1.1, moe_routing_imbalance_factor=1.3,
                                        gradient_accumulation_steps=3, seq_len=4096)
    scalar = compile_quantities(variant, names, "math").evaluate(values)
    batch = rng.integers(1, 5000, 50)
    arrays = dict(values)
    arrays[next(a for a in values if a.name == "B")] = batch.astype(float)
    vec = compile_quantities(variant, names, "numpy").evaluate(
        {k: (np.asarray(v, dtype=float) if v is not None else None) for k, v in arrays.items()})
    for i, b in enumerate(batch):
        values[next(a for a in values if a.name == "B")] = int(b)
        one = compile_quantities(variant, names, "math").evaluate(values)
        for n in names:
            got = np.broadcast_to(vec[n], batch.shape)[i]
            assert got == pytest.approx(float(one[n]), rel=1e-13, abs=0), n
    assert scalar["T_step"] > 0


def _shipped_copy(tmp_path, edit=None, mode=0o644, name="math_transformer.py"):
    text = _shipped.path(Variant(), "math").read_text()
    path = tmp_path / name
    path.write_text(edit(text) if edit else text)
    path.chmod(mode)
    return path


@pytest.mark.parametrize("case", ["body edited", "header edited", "group-writable", "world-writable", "garbage"])
def test_tampered_shipped_code_is_detected_and_rebuilt(tmp_path, monkeypatch, case):
    edits = {
        "body edited": (lambda t: t.replace("x0 = ", "x0 = 2*", 1), 0o644),
        "header edited": (lambda t: t.replace("BODY_SHA256 = '", "BODY_SHA256 = '0", 1), 0o644),
        "group-writable": (None, 0o664),
        "world-writable": (None, 0o646),
        "garbage": (lambda t: "import os\nos._exit(3)\n", 0o644),
    }
    edit, mode = edits[case]
    path = _shipped_copy(tmp_path, edit, mode)
    clean = _shipped_copy(tmp_path, name="clean.py")
    monkeypatch.setattr(_shipped, "path", lambda variant, backend, kind="outputs": path)
    names = solve_quantities(Variant())
    assert _shipped.load(Variant(), names, "math") is None     # never executed
    # an untouched copy with safe permissions is accepted
    monkeypatch.setattr(_shipped, "path", lambda variant, backend, kind="outputs": clean)
    assert _shipped.load(Variant(), names, "math") is not None
