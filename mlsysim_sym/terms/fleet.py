"""What the book's two foundation appendices price beside the step-time model: the iron law as a sum, fleet
the probability of a failure within a window (the fleet's MTBF is :class:`~.reliability.SystemMTBF`, Amdahl's
speedup :class:`~.training.AmdahlSpeedup`), goodput, checkpoint size, facility power,
the roofline's ridge point and ceiling, Little's law, tree broadcast and the compression break-even.

None of these is in mlsysim's ``DistributedModel``; each is the formula the book prints, and where mlsysim
has a function for it (``mlsysim.physics``) the term is that function's formula.

References
----------
*Machine Learning Systems* vol. 2 (github.com/harvard-edge/cs249r_book), ``backmatter/appendix_fleet.qmd``
(Fleet Foundations: foundations recap, @eq-fleet-mtbf-system, @tbl-fleet-mtbf, @eq-fleet-roofline,
@eq-fleet-ridge-point, Amdahl's law at fleet scale, power numbers) and ``backmatter/appendix_communication.qmd``
(Communication Foundations: @eq-broadcast, @eq-compression-breakeven). Amdahl (1967); Williams, Waterman &
Patterson (2009), "Roofline"; Little (1961). mlsysim 0.3.0 ``calc_failure_probability``, ``calc_checkpoint_size``, ``calc_effective_flops``.
"""
from __future__ import annotations

import sympy as sp

from .base import Exp, Log2, NamedTerm


# --------------------------------------------------------------------------------------------------
# The iron law, as the fleet appendix's recap writes it
# --------------------------------------------------------------------------------------------------
class IronLawTime(NamedTerm):
    r"""``D_vol / BW + O / (R_peak eta_hw) + L_lat``: data movement, compute and fixed latency added, none hidden
    behind another (the fleet appendix's foundations recap). The step-time model takes the larger of the first
    two instead (a roofline); ``derivations/book_acfa.py`` checks the difference is the smaller one."""

    nargs = 6

    @staticmethod
    def formula(D_vol, BW, O, R_peak, eta, L_lat):
        return D_vol / BW + O / (R_peak * eta) + L_lat


# --------------------------------------------------------------------------------------------------
# Reliability
# --------------------------------------------------------------------------------------------------
class FailureProbability(NamedTerm):
    r"""``1 - exp(-T / MTBF)``: the probability of at least one failure within ``T`` for exponentially
    distributed failures (caption of @tbl-fleet-mtbf; mlsysim's ``calc_failure_probability``)."""

    nargs = 2

    @staticmethod
    def formula(T, mtbf):
        return 1 - Exp(-T / mtbf)


# --------------------------------------------------------------------------------------------------
# Scaling and utilization
# --------------------------------------------------------------------------------------------------
class GoodputRatio(NamedTerm):
    r"""``1 - (f_bubble + f_ckpt + f_recovery + f_maint)``: the share of wall-clock time left after the fleet
    appendix's four overhead categories, added (caption of @tbl-fleet-overhead-budgets)."""

    nargs = 4

    @staticmethod
    def formula(f_bubble, f_ckpt, f_recovery, f_maint):
        return 1 - (f_bubble + f_ckpt + f_recovery + f_maint)


class CheckpointSize(NamedTerm):
    r"""``P b_ckpt``: bytes of a training checkpoint of ``P`` parameters at ``b_ckpt`` bytes each (the fleet
    appendix's training state rule, 14: BF16 weights plus FP32 master weights and Adam moments; mlsysim's
    ``calc_checkpoint_size``)."""

    nargs = 2

    @staticmethod
    def formula(P, b_ckpt):
        return P * b_ckpt


# --------------------------------------------------------------------------------------------------
# Power
# --------------------------------------------------------------------------------------------------
class ITPower(NamedTerm):
    r"""``N TDP``: the IT load of ``N`` accelerators at their thermal design power (the fleet appendix's rule of
    thumb, which divides by 10^6 to print megawatts)."""

    nargs = 2

    @staticmethod
    def formula(N, tdp):
        return N * tdp


class FacilityPower(NamedTerm):
    r"""``N TDP PUE``: the facility load, the IT load times the power usage effectiveness."""

    nargs = 3

    @staticmethod
    def formula(N, tdp, pue):
        return ITPower.formula(N, tdp) * pue


# --------------------------------------------------------------------------------------------------
# The single-accelerator roofline
# --------------------------------------------------------------------------------------------------
class RidgePoint(NamedTerm):
    r"""``R_peak / BW``: the arithmetic intensity at which the bandwidth slope meets the compute ceiling
    (@eq-fleet-ridge-point)."""

    nargs = 2

    @staticmethod
    def formula(R_peak, BW):
        return R_peak / BW


class AttainableRate(NamedTerm):
    r"""``min(R_peak, I BW)``: the roofline's attainable operation rate at arithmetic intensity ``I``
    (@eq-fleet-roofline, Williams et al. 2009)."""

    nargs = 3

    @staticmethod
    def formula(I, R_peak, BW):
        return sp.Min(R_peak, I * BW)


# --------------------------------------------------------------------------------------------------
# Serving
# --------------------------------------------------------------------------------------------------
class RequestConcurrency(NamedTerm):
    r"""``lambda T``: Little's law, the mean number of requests in a stable system that ``lambda`` requests per
    second enter and each stays ``T`` in (the fleet appendix's foundations recap)."""

    nargs = 2

    @staticmethod
    def formula(lam, T):
        return lam * T


# --------------------------------------------------------------------------------------------------
# Collectives and compression (the communication appendix)
# --------------------------------------------------------------------------------------------------
class TreeBroadcast(NamedTerm):
    r"""``log2(N) (alpha + M / beta)``: an unsegmented binary-tree broadcast, the whole payload forwarded at each
    of the ``log2 N`` levels (@eq-broadcast)."""

    nargs = 4

    @staticmethod
    def formula(M, n, beta, alpha):
        return Log2(n) * (alpha + M / beta)


class CompressionBreakEven(NamedTerm):
    r"""``T_transfer (1 - 1/C)``: the largest encode-plus-decode time for which compressing a payload ``C``-fold
    still saves time, bandwidth-dominated (@eq-compression-breakeven with ``T_transfer(M/C) = T_transfer(M)/C``;
    @tbl-compression-breakeven)."""

    nargs = 2

    @staticmethod
    def formula(T, C):
        return T * (1 - 1 / C)


# ---- issue 24: priced rows ---- begin
class FabricBandwidthRatio(NamedTerm):
    r"""``BW_intra / BW_inter``: how many times faster the link inside a node (NVLink) is than the fabric between
    nodes (InfiniBand), both per direction (the fleet appendix's "bandwidth gap", @tbl-fleet-numbers-quick-ref; the
    communication appendix's hierarchical AllReduce). The book's 18x sets NVLink's 900 GB/s, both directions added,
    against InfiniBand NDR's 50 GB/s per direction; per direction (the catalog's 450 GB/s) the ratio is 9.
    Arguments: ``(beta_in, beta_out)``.

    Examples
    --------
    >>> FabricBandwidthRatio(450e9, 50e9).doit()
    9.00000000000000
    """

    nargs = 2

    @staticmethod
    def formula(bw_intra, bw_inter):
        return bw_intra / bw_inter
# ---- issue 24: priced rows ---- end
