"""Sensitivities: exact derivatives of MFU, step time, ... with respect to every parameter.

``sensitivities(model, fleet, output="mfu", **solve_kwargs)`` answers "which knob
moves my MFU most?" at one configuration: a ranked table with, per parameter, its
value, the derivative of the output, the **elasticity** ``d ln(output) / d ln(x)``
(the % change of the output per % change of the parameter) and the regime the
derivative holds in.

How: at the operating point the model is resolved to its regime
(:mod:`mlsysim_sym.decisions`): every ``Max``/``Min``/``Piecewise`` whose side moves
with a continuous parameter (compute- or memory-bound, fits or spills, straggler or
not, ...) is replaced by its active side; the integer structure (``dp = N // G``,
placement of the DP all-reduce, TP on NVLink or the fabric, ZeRO stage, ...) stays
in the expression, where it is locally constant. sympy differentiates that smooth
expression; the derivatives are compiled once per (variant, output, regime) and
cached (:mod:`mlsysim_sym.sensitivity.gradients`), so a warm call costs about a millisecond.
**Kinks**: where two sides of a decision are within a relative 1e-9
(``T_compute = T_memory``, ``f_strag = 1``, memory exactly at capacity), the
derivative is one-sided: the row reports the derivative from below (``left``) and
from above (``right``), each from the regime the model enters on that side, and
``jump`` when the output itself is discontinuous there (memory spilling switches
the bandwidth).

Each row is a partial derivative with respect to one model symbol, the others held
fixed; the row is named after the ``solve()`` keyword or the record field that
sets the symbol (:data:`CONTINUOUS`, read off :data:`mlsysim_sym.symbols.PARAMS`):

================================  =============  ======================================================================
row                               symbol         set by
================================  =============  ======================================================================
``efficiency``                    ``eta``        ``solve(efficiency=)``
``overlap_efficiency``            ``eta_ov``     ``solve(overlap_efficiency=)``
``congestion_factor``             ``c``          ``solve(congestion_factor=)``
``straggler_factor``              ``f_s``        ``solve(straggler_factor=)``
``moe_routing_imbalance_factor``  ``iota``       ``solve(moe_routing_imbalance_factor=)``
``seq_len``                       ``s``          ``solve(seq_len=)`` (smooth in the model: no floor acts on it)
``peak_flops``                    ``R_peak``     peak at the precision: ``precision_flops[key]``, else ``peak_flops``
``memory_bandwidth``              ``BW_hbm``     ``accelerator.memory.bandwidth``
``memory_capacity``               ``CAP``        ``accelerator.memory.capacity``
``pcie_bandwidth``                ``BW_pcie``    ``accelerator.interconnect``, per direction (64 GB/s when absent)
``dispatch_tax``                  ``tau_d``      ``accelerator.dispatch_tax``
``tdp``                           ``TDP``        ``accelerator.tdp`` (moves the energy only)
``intra_node_bw``                 ``BW_intra``   ``fleet.node.intra_node_bw``
``nvlink_latency``                ``alpha_nv``   ``accelerator.nvlink.latency`` (500 ns when absent)
``fabric_bandwidth``              ``BW_fab``     ``fleet.fabric.bandwidth``
``fabric_latency``                ``alpha_fab``  ``fleet.fabric.latency`` (5 us when absent)
``oversubscription_ratio``        ``osr``        ``fleet.fabric.oversubscription_ratio``
``parameters``                    ``P``          ``workload.parameters`` (F held fixed, even where mlsysim sets F = 2P)
``inference_flops``               ``F``          lowered ``inference_flops``: per token (per sample off transformers)
``hidden_dim``                    ``H``          ``workload.hidden_dim`` (4096 when absent)
``weight_bytes``                  ``W_lw``       weight bytes where they are not P x element size (``model_size``)
``gradient_bytes``                ``W_g``        DP gradient bytes, idem
``sram_capacity``                 ``CAP_sram``   ``memory.sram_capacity`` (Engine path); also ``sram_bandwidth``
                                                 and ``flash_bandwidth`` (``BW_sram``, ``BW_flash``)
``kv_fraction``                   ``kvf``        ``solve(kv_fraction=)``, the extended model only
``attention_efficiency``          ``eta_att``    ``solve(attention_efficiency=)``, the extended model only
``expert_parameters``             ``P_exp``      an architecture card's routed-expert parameters, the extended model only
================================  =============  ======================================================================

``include_constants=True`` adds rows for mlsysim's constants (``TAX``, ``alpha_h``,
``ADAM``, ``f_act`` ...), named by symbol.

**Integer knobs** (:data:`INTEGER_KNOBS`: ``tp_size``, ``pp_size``, ``ep_size``,
``count`` (fleet nodes, i.e. data parallelism), ``microbatch_count``, ``v_stages``,
``batch_size``, ``gradient_accumulation_steps``, ``layers``, ``zero_stage``,
``seq_len``; and, in the extended model, ``cp_size`` and ``etp_size``) get the exact change of the output when the knob moves to its next
and previous valid value, re-evaluated through :meth:`DistributedModel.solve`
(an invalid neighbour is skipped with the solver's reason), and a **relaxed**
derivative: every floor and ceiling replaced by its real quotient, in the regime
of the point, holding the fleet fixed (a smooth interpolation, not the model).

**Sweeps**: :func:`sensitivity_sweep` evaluates every derivative and elasticity
over arrays of configurations (numpy), grouping the points by regime.

**Uncertainty**: :func:`uncertainty` propagates relative standard deviations of the
continuous parameters to an output, to first order (these derivatives) and by Monte
Carlo (:func:`mlsysim_sym.sweep`), and says where the two part
(:mod:`mlsysim_sym.sensitivity.uncertainty`).

Examples
--------
>>> from mlsysim_sym.sensitivity import sensitivities
>>> t = sensitivities("Llama3_70B", "Research_256", batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
>>> print(", ".join(t.regime))
fits in HBM, compute-bound, DP ring on the fabric, TP on NVLink, DP not overlapped, no straggler (f_strag ≤ 1)
>>> round(t["efficiency"].elasticity, 6), t["peak_flops"].elasticity + t["inference_flops"].elasticity
(0.716093, 0.0)
>>> t["straggler_factor"].kink, t["straggler_factor"].left.elasticity, round(t["straggler_factor"].right.elasticity, 12)
('f_strag = 1', 0.0, -1.0)
>>> t.discrete["tp_size"].up.value, t.discrete["tp_size"].skipped[-1]
(16, (9, 'Infeasible 4D Parallelism: TP(9) * PP(4) * EP(1) must divide total accelerators (256) exactly.'))
"""
from __future__ import annotations

from .gradients import Gradient, at_point, gradient
from .point import (CONSTANT_ROWS, CONTINUOUS, HEADLINE, INTEGER_KNOBS, DiscreteRow, OneSided, Row, Sensitivities,
                    Step, discrete_sensitivities, quantity_name, regime, regime_signature, relaxed_sensitivities,
                    sensitivities, sensitivities_at)
from .sweep import SweepSensitivities, sensitivity_sweep
from .uncertainty import UNCERTAIN, MonteCarlo, Term, Uncertainty, uncertainty

__all__ = [
    "CONSTANT_ROWS", "CONTINUOUS", "DiscreteRow", "Gradient", "HEADLINE", "INTEGER_KNOBS", "OneSided", "Row",
    "Sensitivities", "Step", "SweepSensitivities", "at_point", "discrete_sensitivities", "gradient", "quantity_name",
    "regime", "regime_signature", "relaxed_sensitivities", "sensitivities", "sensitivities_at", "sensitivity_sweep",
    "MonteCarlo", "Term", "UNCERTAIN", "Uncertainty", "uncertainty",
]
