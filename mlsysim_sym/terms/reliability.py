"""Reliability and checkpointing: fleet MTBF, the Young-Daly interval, the checkpoint tax,
recovery time and availability (issue 24, the Fault Tolerance chapter).

References
----------
Young (1974), "A first order approximation to the optimum checkpoint interval", CACM 17(9).
Daly (2006), "A higher order estimate of the optimum checkpoint interval for restart dumps", FGCS 22(3).
Book: *Machine Learning Systems* vol. 2, book/quarto/contents/vol2/fault_tolerance/fault_tolerance.qmd
(@eq-system-mtbf, @eq-checkpoint-overhead, @eq-recovery-time,
@eq-availability-redundancy; the Young-Daly law of sec-fault-tolerance-young-daly). mlsysim:
``mlsysim.physics.reliability`` (calc_mtbf_cluster, calc_young_daly_interval, calc_checkpoint_waste,
calc_all_up_availability, calc_availability_stacked).
"""
from __future__ import annotations

import sympy as sp

from .base import NamedTerm


class SystemMTBF(NamedTerm):
    r"""MTBF of N identical components in series: ``MTBF_component / N`` (@eq-system-mtbf; mlsysim's
    calc_mtbf_cluster). Arguments: ``(MTBF_comp, N_coll)``.

    Examples
    --------
    >>> SystemMTBF(50000, 10000).doit()
    5
    """

    nargs = 2

    @staticmethod
    def formula(mtbf_comp, n):
        return mtbf_comp / n


class YoungDalyInterval(NamedTerm):
    r"""Young's optimal checkpoint interval ``sqrt(2 T_write MTBF_system)`` (Young 1974; the book's Young-Daly
    law; mlsysim's calc_young_daly_interval): where :class:`CheckpointWaste` is least. Arguments:
    ``(T_write, MTBF_sys)``.

    Examples
    --------
    >>> YoungDalyInterval(2, 180).doit()
    12*sqrt(5)
    """

    nargs = 2

    @staticmethod
    def formula(t_write, mtbf):
        return sp.sqrt(2 * t_write * mtbf)


class CheckpointWaste(NamedTerm):
    r"""First-order share of wall time lost at checkpoint interval tau: ``T_write / tau + tau / (2 MTBF)``
    (Young 1974; the book's checkpoint-tax figures; mlsysim's calc_checkpoint_waste): one write per interval,
    and half an interval of work lost per failure. Arguments: ``(T_write, tau_ckpt, MTBF_sys)``."""

    nargs = 3

    @staticmethod
    def formula(t_write, tau, mtbf):
        return t_write / tau + tau / (2 * mtbf)


class CheckpointOverhead(NamedTerm):
    r"""Share of training time spent saving: ``T_write / tau + T_pause / tau`` (@eq-checkpoint-overhead).
    Arguments: ``(T_write, T_pause, tau_ckpt)``."""

    nargs = 3

    @staticmethod
    def formula(t_write, t_pause, tau):
        return t_write / tau + t_pause / tau


class CheckpointWriteTime(NamedTerm):
    r"""Time to write a checkpoint of S bytes at bandwidth BW: ``S / BW`` (the chapter's
    @tbl-checkpoint-overhead-by-model and its checkpoint-debugging example). Arguments: ``(S_ckpt, BW_ckpt)``."""

    nargs = 2

    @staticmethod
    def formula(size, bw):
        return size / bw


class RecoveryTime(NamedTerm):
    r"""Time from a failure to useful work: ``T_detect + T_restart + T_load + T_warmup`` (@eq-recovery-time).
    Arguments: ``(T_detect, T_restart, T_load, T_warmup)``."""

    nargs = 4

    @staticmethod
    def formula(t_detect, t_restart, t_load, t_warmup):
        return t_detect + t_restart + t_load + t_warmup


class AllUpAvailability(NamedTerm):
    r"""Probability that N independent components, each up with probability A, are all up: ``A**N`` (the
    chapter's "9s of reliability" notebook; mlsysim's calc_all_up_availability). Arguments: ``(A_comp, N_coll)``."""

    nargs = 2

    @staticmethod
    def formula(a, n):
        return a ** n


class ReplicatedAvailability(NamedTerm):
    r"""Availability of k independent replicas, one of which suffices: ``1 - (1 - A)**k``
    (@eq-availability-redundancy; mlsysim's calc_availability_stacked). Arguments: ``(A_comp, k_rep)``."""

    nargs = 2

    @staticmethod
    def formula(a, k):
        return 1 - (1 - a) ** k


# ---- issue 24: the FT chapter's remaining equations (timeout, straggler step, SDC per step, FIT) ---- begin
class StepEventProbability(NamedTerm):
    r"""Probability that at least one of N devices meets an event (a silent data corruption) during one step:
    ``1 - (1 - p)**(N T_step / T_ref)``, where each device meets it with probability ``p`` per window ``T_ref``
    (mlsysim's calc_step_event_probability, whose window is one hour; the FT chapter's notebook "The SDC
    certainty", cell SDCCollective). Arguments: ``(p_event, N_coll, T_step, T_ref)``.

    Examples
    --------
    >>> round(float(StepEventProbability(1e-6, 100000, 2, 3600).doit()), 9)
    5.5554e-05
    """

    nargs = 4

    @staticmethod
    def formula(p, n, t_step, t_ref):
        return 1 - (1 - p) ** (n * t_step / t_ref)


class HeartbeatTimeout(NamedTerm):
    r"""Heartbeat timeout after which a silent worker is declared failed: ``H + k sigma_d``, the heartbeat interval
    plus k standard deviations of the network delay (the FT chapter's @eq-timeout-calculation, k from 3 to 5).
    Arguments: ``(H_hb, k_timeout, sigma_d)``."""

    nargs = 3

    @staticmethod
    def formula(h, k, sigma):
        return h + k * sigma


class StragglerStepTime(NamedTerm):
    r"""Synchronous step with one straggler, no overlap: ``max(T_rank, T_rank,slow) + T_comm``: the ranks wait for
    the slowest before communicating (the FT chapter's display in sec. "Distinguishing stragglers from failures",
    ``max_i T_rank_i + T_comm``, with N - 1 ranks at ``T_rank`` and one at ``T_rank,slow``). mlsysim's step model
    prices a straggler differently: a factor ``f_strag`` on the whole step, communication included.
    Arguments: ``(T_rank, T_rank_slow, T_comm)``."""

    nargs = 3

    @staticmethod
    def formula(t_rank, t_slow, t_comm):
        return sp.Max(t_rank, t_slow) + t_comm


class MtbfFromFit(NamedTerm):
    r"""MTBF of a component rated at FIT failures per ``T_FIT`` = 10^9 device-hours: ``T_FIT / FIT`` (the FT
    chapter's display ``FIT = 10^9 / MTBF`` solved for the MTBF; failure rates in FIT add over components, so N
    components are :class:`SystemMTBF` of it). Arguments: ``(FIT, T_FIT)``."""

    nargs = 2

    @staticmethod
    def formula(fit, t_fit):
        return t_fit / fit
# ---- issue 24: the FT chapter's remaining equations ---- end


# ---- issue 24: priced rows ---- begin
class EccEffectiveBandwidth(NamedTerm):
    r"""Memory bandwidth left for data when ECC's check bits take a share ``f_ECC`` of it: ``BW (1 - f_ECC)``
    (the FT chapter's @tbl-memory-bandwidth-protection, cell MemBandwidthProtection: 12.5 % for DDR4, HBM2 and
    HBM3, none for GDDR6X). mlsysim's step model deducts no ECC share from the accelerator's memory bandwidth.
    Arguments: ``(BW_hbm, f_ecc)``.

    Examples
    --------
    >>> EccEffectiveBandwidth(900, sp.Rational(1, 8)).doit()
    1575/2
    """

    nargs = 2

    @staticmethod
    def formula(bw, f_ecc):
        return bw * (1 - f_ecc)


class ObservedMTBF(NamedTerm):
    r"""MTBF measured on a run: the time observed over the failures counted in it, ``T / N_failures`` (the FT
    chapter's published failure rates: Llama 3's 419 failures in 54 days, about 3.1 h). It is the estimate of
    :class:`SystemMTBF` for the run's N components. Arguments: ``(T_job, N_fail)``.

    Examples
    --------
    >>> ObservedMTBF(54 * 24, 419).doit()
    1296/419
    """

    nargs = 2

    @staticmethod
    def formula(t_obs, n_fail):
        return t_obs / n_fail
# ---- issue 24: priced rows ---- end
