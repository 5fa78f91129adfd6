"""Mixture of experts: the expert capacity a router may fill.

References
----------
Fedus, Zoph & Shazeer (2022), "Switch Transformers: scaling to trillion parameter
models with simple and efficient sparsity", JMLR 23, eq. (3). Lepikhin et al.
(2021), "GShard" (capacity per expert and dropped tokens).
"""
from __future__ import annotations

from .base import NamedTerm


class ExpertCapacity(NamedTerm):
    r"""Token slots of one expert: ``C_cap * n_tok / N_experts`` (Fedus et al. 2022, eq. 3).

    ``n_tok`` tokens of a batch routed top-1 over ``N_experts`` experts; a capacity
    factor ``C_cap`` above 1 leaves room for imbalance, tokens beyond capacity are
    dropped (they pass the residual connection). Implementations round down to an
    integer; this term is the real-valued capacity. Book: Collective Communication
    chapter, sec. "The six core primitives" (capacity factors cap the tokens an
    expert accepts; the MoE AllToAll example: 4,096 tokens over 64 experts, 64 each);
    notation registry ``\ExpertCapacityFactor``. Arguments: ``(C_cap, n_tok, N_experts)``.

    Examples
    --------
    >>> ExpertCapacity(1.25, 4096, 64).doit()
    80.0000000000000
    """

    nargs = 3

    @staticmethod
    def formula(c_cap, n_tok, n_experts):
        return c_cap * n_tok / n_experts
