"""Training dynamics the Distributed Training chapter prices beside the step time: Amdahl's speedup, the
learning-rate scaling rules and warmup, the staleness-adjusted rate, the critical batch size (gradient noise
scale), LARS's layer-wise rate, and the synchronization overhead left under gradient accumulation.

References
----------
Amdahl (1967); Goyal et al. (2017), "Accurate, large minibatch SGD: training ImageNet in 1 hour" (linear
scaling rule and gradual warmup, sec. 2); Krizhevsky (2014), "One weird trick ..." (square-root scaling);
McCandlish et al. (2018), "An empirical model of large-batch training" (B_simple = tr(Sigma) / |G|^2, eq. 2.8);
You et al. (2017), "Large batch training of convolutional networks" (LARS, trust ratio); Ho et al. (2013),
"More effective distributed ML via a stale synchronous parallel parameter server". Book: *Machine Learning
Systems* vol. 2 (harvard-edge/cs249r_book), book/quarto/contents/vol2/distributed_training/
distributed_training.qmd, sections "The physics of scaling: Amdahl's Law with communication" (fig-scaling-tax),
"Learning rate scaling rules", "Critical batch size and diminishing returns", "Staleness impact" and the
notebook "Gradient accumulation speedup".
"""
from __future__ import annotations

import sympy as sp

from .base import NamedTerm


class AmdahlSpeedup(NamedTerm):
    r"""Speedup on ``N`` devices when a share ``r`` of the single-device time does not shrink:
    ``N / (1 + (N - 1) r)`` (Amdahl's law; its limit as ``N`` grows is ``1/r``)."""

    nargs = 2

    @staticmethod
    def formula(N, r):
        return N / (1 + (N - 1) * r)


class LinearScaledLearningRate(NamedTerm):
    r"""Goyal et al.'s linear scaling rule: the batch multiplied by ``k``, the rate too: ``k eta_base``."""

    nargs = 2

    @staticmethod
    def formula(eta, k):
        return k * eta


class SqrtScaledLearningRate(NamedTerm):
    r"""The square-root scaling rule: the batch multiplied by ``k``, the rate by ``sqrt(k)``."""

    nargs = 2

    @staticmethod
    def formula(eta, k):
        return sp.sqrt(k) * eta


class WarmupLearningRate(NamedTerm):
    r"""Gradual warmup (Goyal et al. 2017, sec. 2.2): from ``eta_base`` at step 0 to ``k eta_base`` at step ``W``,
    linearly: ``eta_base + (t/W)(k eta_base - eta_base)`` for ``t < W``. Arguments ``(eta_base, k, t, W)``."""

    nargs = 4

    @staticmethod
    def formula(eta, k, t, W):
        return eta + t / W * (k * eta - eta)


class StalenessAdjustedLearningRate(NamedTerm):
    r"""The rate a stale-synchronous run with staleness bound ``s`` uses in place of the bulk-synchronous
    ``eta``: ``eta / sqrt(1 + s)``."""

    nargs = 2

    @staticmethod
    def formula(eta, s):
        return eta / sp.sqrt(1 + s)


class CriticalBatchSize(NamedTerm):
    r"""The gradient noise scale (McCandlish et al. 2018): ``tr(Sigma) / |grad L|^2``, the batch at which
    averaging brings the gradient's variance down to its squared norm. Arguments ``(tr Sigma, |grad L|^2)``."""

    nargs = 2

    @staticmethod
    def formula(tr_cov, g2):
        return tr_cov / g2


class LarsLearningRate(NamedTerm):
    r"""LARS's rate for layer ``l`` (You et al. 2017): ``eta_global |w_l| / (|g_l| + lambda |w_l|)``.
    Arguments ``(eta_global, |w_l|, |g_l|, lambda)``."""

    nargs = 4

    @staticmethod
    def formula(eta, w, g, lam):
        return eta * w / (g + lam * w)


class AccumulationSyncOverhead(NamedTerm):
    r"""Synchronization time over compute time when one all-reduce of time ``T_AR`` serves ``k`` accumulated
    micro-steps of compute time ``T_mu`` each: ``T_AR / (k T_mu)``. Arguments ``(T_AR, k, T_mu)``."""

    nargs = 3

    @staticmethod
    def formula(t_ar, k, t_mu):
        return t_ar / (k * t_mu)


class ExpectedStragglers(NamedTerm):
    r"""Devices expected to straggle in one synchronous step when each of ``N`` does so independently with
    probability ``p``: ``N p`` (the mean of a binomial count). The book's barrier-semantics section and its
    BSP footnote: 1,000 GPUs at 1 % give about 10 a step. Arguments ``(N, p_straggle)``."""

    nargs = 2

    @staticmethod
    def formula(n, p):
        return n * p


class PaddingWaste(NamedTerm):
    r"""Share of a padded batch's token slots that hold padding when every sequence is padded to the longest:
    ``1 - S_mean / S_max`` (the book's RLHF batching section: one 2,048-token sequence among fifteen of 128
    tokens wastes 88 %). Arguments ``(S_mean, S_max)``: the batch's mean and longest sequence lengths."""

    nargs = 2

    @staticmethod
    def formula(s_mean, s_max):
        return 1 - s_mean / s_max
