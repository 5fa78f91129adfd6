"""The assembled model: an ordered mapping whose expressions depend on parameters only."""
import pytest
import sympy as sp

from mlsysim_sym.model import Variant, build_model
from mlsysim_sym.symbols import PARAMS, sym
from mlsysim_sym.terms.base import FloorDiv

REQUIRED = ["dp", "lb", "T_compute", "T_memory", "T_node", "T_dp", "T_tp", "T_ep", "bubble_fraction",
            "T_bubble", "T_step", "scaling_efficiency", "mfu_node", "hfu_node", "mfu", "M_acc", "feasible",
            "effective_throughput", "energy"]


@pytest.mark.parametrize("variant", [Variant(), Variant("generic"), Variant("generic", True, True, True)], ids=str)
def test_quantities_depend_on_parameters_only(variant):
    m = build_model(variant)
    params = {p.symbol for p in PARAMS.values()}
    assert set(REQUIRED) <= set(m)
    for name in m:
        assert m[name].free_symbols <= params, name


def test_definitions_refer_only_to_earlier_quantities():
    m = build_model()
    seen = set()
    params = {p.symbol for p in PARAMS.values()}
    for name in m:
        q = m.quantity(name)
        assert q.definition.free_symbols <= params | seen, name
        seen.add(q.symbol)


def test_structure_stays_inside_the_expressions():
    m = build_model()
    assert m.definition("dp") == FloorDiv(m.quantity("N").symbol, m.quantity("G").symbol)
    assert m["N"] == sym.n_nodes * sym.apn
    # every regime is present: three DP placements, two TP links, spill or not, straggler or not
    dp_ar = m.definition("T_dp_allreduce")
    assert isinstance(dp_ar, sp.Piecewise) and len(dp_ar.args) == 3
    assert isinstance(m.definition("BW_eff"), sp.Piecewise)
    assert isinstance(m.definition("T_node").args[1], sp.Max) or m.definition("T_node").has(sp.Max)
    assert m["T_step"].has(sp.Piecewise) and m["T_step"].has(sp.Max) and m["T_step"].has(FloorDiv)


def test_model_is_built_once_per_variant():
    assert build_model(Variant()) is build_model(Variant())
    with pytest.raises(ValueError, match="family"):
        Variant("cnn")


def test_unknown_quantity_names_the_choices():
    with pytest.raises(KeyError, match="no quantity named 'T_stpe'"):
        build_model()["T_stpe"]


def test_symbols_are_declared_once_with_assumptions():
    assert sym.tp.is_integer and sym.tp.is_positive
    assert sym.BW_fab.is_positive and not sym.BW_fab.is_integer
    assert sym.c.is_real and sym.c.is_positive is None          # congestion is not validated by mlsysim
    assert all(p.unit and p.meaning and p.latex for p in PARAMS.values())
    assert PARAMS["tp"].book == r"\TensorParallelDegree"


def test_build_model_takes_the_fidelity_by_name_and_refuses_what_is_not_a_model():
    # build_model("extended") raised "'str' object has no attribute 'on'" from inside the builder
    from mlsysim_sym.model import Variant
    assert build_model("extended") is build_model(Variant(fidelity="extended"))
    assert build_model(family="generic").variant.family == "generic"
    with pytest.raises(TypeError, match=r"variant must be a Variant or a fidelity \('mlsysim', 'extended'\), got 3"):
        build_model(3)
    with pytest.raises(ValueError, match="fidelity must be one of 'mlsysim', 'extended', got 'exact'"):
        build_model(fidelity="exact")
