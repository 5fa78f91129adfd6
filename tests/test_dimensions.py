"""Every quantity has its declared dimension: time in seconds, memory in bytes, ...

Two independent checks:
* a static walk of every expression (every Piecewise branch, every Max/Min
  argument, both sides of every comparison), for every model variant;
* substitution of each parameter by ``value * unit`` (counts 7, never 1, so a
  ``(n - 1)`` cannot vanish) in the closed form, which must reduce to
  ``number * unit`` of the quantity.
"""

import pytest
import sympy as sp

from mlsysim_sym.model import Variant, build_model
from mlsysim_sym.symbols import PARAMS
from mlsysim_sym.units import BASE, DimensionError, dimension, parse_unit

VARIANTS = [Variant(f, e, s, fl) for f in ("transformer", "generic") for e in (False, True)
            for s, fl in ((False, False), (True, True)) if f == "generic" or not (s or fl)]
# the extended model (docs/extended.md), every mechanism on
VARIANTS += [Variant(v.family, v.explicit_weights, v.sram, v.flash, "extended") for v in list(VARIANTS)]


@pytest.mark.parametrize("variant", VARIANTS, ids=str)
def test_every_quantity_has_its_declared_dimension(variant):
    model = build_model(variant)
    for name in model:
        q = model.quantity(name)
        assert dimension(model[name]) == parse_unit(q.unit), name


def test_time_and_memory_quantities_are_declared_as_such():
    model = build_model()
    times = [n for n in model if model.quantity(n).unit == "s"]
    memory = [n for n in model if n.startswith("M_") or n in ("traffic", "offload_spill", "W")]
    assert {"T_step", "T_node", "T_dp", "T_tp", "T_ep", "T_bubble", "T_compute", "T_memory"} <= set(times)
    assert all(model.quantity(n).unit == "B" for n in memory)


def test_mixed_dimensions_are_caught():
    S = PARAMS
    with pytest.raises(DimensionError):
        dimension(S["BW_fab"].symbol + S["alpha_fab"].symbol)
    with pytest.raises(DimensionError):
        dimension(sp.Piecewise((S["CAP"].symbol, S["tp"].symbol > 1), (S["tau_d"].symbol, True)))


UNITS = {b: sp.Symbol(f"u_{b}", positive=True) for b in BASE}
# values: counts 7 (or 2..13 where a structure needs it), flags 1, reals 3.0
# a consistent layout: N = 165 * 7 = 1155 = 11 * (7 * 3 * 5), so dp = 11, and B = 143 gives 13 per replica
SPECIAL = {"z": 2, "lora": 1, "rc": 1, "ov": 1, "f_s": 1.5, "c": 1.25, "eta_ov": 0.85, "eta": 0.5,
           "B": 143, "n_nodes": 165, "apn": 7, "tp": 7, "pp": 3, "ep": 5, "m": 3, "v": 2,
           # the extended model: N = 1155 = 11 * (7 * 3 * 5) with cp 1 keeps that layout; flags on
           "cp": 1, "sp": 1, "tov": 1, "kvf": 0.5,
           # an architecture card's attention: causal (a 0/1 count), a window shorter than the sequence
           "chi_causal": 1, "w_att": 2}


def _unit_expr(unit):
    return sp.Mul(*(UNITS[b] ** e for b, e in zip(BASE, parse_unit(unit))))


@pytest.mark.parametrize("fidelity", ["mlsysim", "extended"])
@pytest.mark.parametrize("name", ["T_step", "T_node", "T_dp", "T_tp", "T_ep", "T_bubble", "M_acc",
                                  "effective_throughput", "energy", "mfu", "scaling_efficiency"])
def test_substituting_values_times_units_leaves_the_quantitys_unit(name, fidelity):
    model = build_model(Variant(fidelity=fidelity))
    values = {}
    for p in PARAMS.values():
        v = SPECIAL.get(p.name, 7 if p.kind == "count" else (p.value if p.kind == "constant" else 3))
        values[p.symbol] = sp.nsimplify(v) * _unit_expr(p.unit)
    got = model.closed_form(name).xreplace(values)
    ratio = sp.simplify(got / _unit_expr(model.quantity(name).unit))
    assert ratio.free_symbols == set(), (name, ratio)
    assert ratio.is_positive
