"""The checks of an architecture card: each field's allowed values, and what the fields must agree on.

A card that breaks one is a ``ValueError`` naming the card, the field, the allowed values and what was given
(the command line prints it as one line).
"""
from __future__ import annotations

from numbers import Integral


def _name(card) -> str:
    return f"architecture {card.name!r}" if isinstance(card.name, str) and card.name else "architecture"


def _whole(card, field: str, lo: int, hi=None) -> None:
    v = getattr(card, field)
    ok = isinstance(v, Integral) and not isinstance(v, bool) and v >= lo and (hi is None or v <= hi)
    if not ok:
        allowed = f"a whole number >= {lo}" if hi is None else f"a whole number in [{lo}, {hi}]"
        raise ValueError(f"{_name(card)}: {field} must be {allowed}, got {v!r}")


def _switch(card, field: str) -> None:
    v = getattr(card, field)
    if not isinstance(v, bool):
        raise ValueError(f"{_name(card)}: {field} must be true or false, got {v!r}")


def check_card(card) -> None:
    """Raise a ``ValueError`` for the first field of ``card`` outside its allowed values."""
    if not isinstance(card.name, str) or not card.name.strip():
        raise ValueError(f"architecture: name must be a non-empty string, got {card.name!r}")
    for f in ("layers", "hidden", "heads", "vocab"):
        _whole(card, f, 1)
    for f in ("gated", "tied", "causal"):
        _switch(card, f)
    if card.attention not in ("gqa", "mla"):
        raise ValueError(f"{_name(card)}: attention must be 'gqa' (multi-head, grouped-query or multi-query) or "
                         f"'mla' (multi-head latent attention), got {card.attention!r}")
    if card.kv_heads is not None:
        _whole(card, "kv_heads", 1, card.heads)
        if card.heads % card.kv_heads:
            raise ValueError(f"{_name(card)}: kv_heads must divide heads ({card.heads}), got {card.kv_heads}")
    for f in ("head_dim", "v_head_dim"):
        if getattr(card, f) is not None:
            _whole(card, f, 1)
    if card.head_dim is None and card.hidden % card.heads:
        raise ValueError(f"{_name(card)}: head_dim must be given when heads ({card.heads}) does not divide "
                         f"hidden ({card.hidden})")
    _whole(card, "experts", 0)
    for f in ("shared_experts", "first_dense", "q_rank", "kv_rank", "rope_dim"):
        _whole(card, f, 0)
    _whole(card, "top_k", 1)
    _whole(card, "moe_every", 1)
    if card.experts == 0:
        for f, neutral in (("top_k", 1), ("shared_experts", 0), ("expert_ffn", None), ("first_dense", 0),
                           ("moe_every", 1)):
            if getattr(card, f) != neutral:
                raise ValueError(f"{_name(card)}: {f} applies to a mixture of experts; give experts (>= 1) too, "
                                 f"or leave {f} out")
    if card.attention != "mla":
        for f in ("q_rank", "kv_rank", "rope_dim"):
            if getattr(card, f):
                raise ValueError(f"{_name(card)}: {f} applies to latent attention; give attention: mla too, or "
                                 f"leave {f} out")
    _whole(card, "ffn", 0)
    _whole(card, "window", 0)
    if card.window_layers is not None:
        _whole(card, "window_layers", 0, card.layers)
    if card.experts:
        _whole(card, "top_k", 1, card.experts)
        _whole(card, "shared_experts", 0)
        _whole(card, "first_dense", 0, card.layers - 1)
        _whole(card, "moe_every", 1)
        if card.expert_ffn is not None:
            _whole(card, "expert_ffn", 1)
        elif card.ffn == 0:
            raise ValueError(f"{_name(card)}: expert_ffn must be given (a whole number >= 1) when ffn is 0")
    if (card.experts == 0 or card.moe_layers < card.layers) and card.ffn == 0:
        raise ValueError(f"{_name(card)}: ffn must be a whole number >= 1 for the dense layers, got 0")
    if card.attention == "mla":
        _whole(card, "kv_rank", 1)
        _whole(card, "q_rank", 0)
        _whole(card, "rope_dim", 0)
