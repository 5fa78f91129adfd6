"""An architecture card: a transformer described as its model card describes it, and the record it prices as.

:class:`Architecture` holds the shape (layers, hidden size, heads, key/value heads, head width, FFN width, gated
or not, vocabulary, tied embeddings, causal attention, a sliding window, and the experts of a mixture of experts).
Its counts and FLOPs are the expressions of :mod:`mlsysim_sym.shape` at the card's values: nothing is computed
twice. :meth:`Architecture.workload` is the record the models price:

* mlsysim's model reads it as mlsysim reads a ``TransformerWorkload`` (``SparseTransformerWorkload`` for a
  mixture of experts): ``parameters`` = the total, ``active_parameters`` = those a token meets,
  ``inference_flops`` = the forward FLOPs of the weights' matrix products per token (:data:`F_mm`), ``layers``,
  ``hidden_dim``, ``active_experts_per_token``;
* the extended model also reads the attention FLOPs per key (the step adds ``F_att``, which grows with the
  sequence), the window, causality and the keys' and values' width (the CP exchange).

Examples
--------
>>> from mlsysim_sym.architecture import Architecture
>>> llama8b = Architecture("Llama 3.1 8B", layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336,
...                        vocab=128256)
>>> llama8b.parameters
8030261248
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from functools import cached_property
from typing import Dict, Optional

import sympy as sp

from .shape import FIELD_SYMBOLS, ShapeKind, build_shape, convention
from .symbols import sym
from .types import Workload, kv_width_fraction

__all__ = ["Architecture", "CARD_FIELDS"]


@dataclass(frozen=True)
class Architecture:
    """One transformer's shape, as its card gives it (see the module docstring).

    ``heads``, ``kv_heads`` (default: ``heads``, multi-head attention) and ``head_dim`` (default:
    ``hidden // heads``); ``ffn`` is a dense layer's MLP width, ``gated`` a SwiGLU MLP (three matrices);
    ``vocab`` and ``tied`` (the output layer shares the input embedding); ``causal`` and ``window`` (tokens, on
    ``window_layers`` of the layers, default all). A mixture of experts has ``experts`` > 0 routed experts of
    width ``expert_ffn`` (default ``ffn``), ``top_k`` of them per token, ``shared_experts`` that every token
    meets; its layers from ``first_dense`` on, every ``moe_every``-th, are MoE layers (Megatron-LM's
    ``--moe-layer-freq``). Latent attention (``attention="mla"``) takes ``q_rank`` (0: no low-rank query),
    ``kv_rank``, ``rope_dim`` and ``v_head_dim`` (default ``head_dim``).
    """

    name: str
    layers: int
    hidden: int
    heads: int
    vocab: int
    ffn: int = 0
    kv_heads: Optional[int] = None
    head_dim: Optional[int] = None
    gated: bool = True
    tied: bool = False
    causal: bool = True
    window: int = 0
    window_layers: Optional[int] = None
    experts: int = 0
    top_k: int = 1
    shared_experts: int = 0
    expert_ffn: Optional[int] = None
    first_dense: int = 0
    moe_every: int = 1
    attention: str = "gqa"
    q_rank: int = 0
    kv_rank: int = 0
    rope_dim: int = 0
    v_head_dim: Optional[int] = None

    def __post_init__(self):
        from .card_checks import check_card
        check_card(self)

    # ---- the structure and the values of the shape's symbols -------------------------------------------
    @property
    def kind(self) -> ShapeKind:
        return ShapeKind(mla=self.attention == "mla", moe=self.experts > 0, window=self.window > 0)

    @property
    def moe_layers(self) -> int:
        """MoE layers: from ``first_dense`` on, every ``moe_every``-th (0 for a dense model)."""
        if self.experts == 0:
            return 0
        return len(range(self.first_dense, self.layers, self.moe_every))

    @cached_property
    def values(self) -> Dict[sp.Symbol, int]:
        """The card's value of every symbol of its shape (``S`` aside), by symbol."""
        head_dim = self.head_dim or self.hidden // self.heads
        given = {"heads": self.heads, "kv_heads": self.kv_heads or self.heads, "head_dim": head_dim,
                 "ffn": self.ffn, "gated": 3 if self.gated else 2, "vocab": self.vocab, "tied": int(self.tied),
                 "experts": self.experts, "shared_experts": self.shared_experts,
                 "expert_ffn": self.expert_ffn if self.expert_ffn is not None else self.ffn,
                 "moe_layers": self.moe_layers, "q_rank": self.q_rank, "kv_rank": self.kv_rank,
                 "rope_dim": self.rope_dim, "v_head_dim": self.v_head_dim or head_dim, "window": self.window,
                 "window_layers": self.layers if self.window_layers is None else self.window_layers,
                 "causal": int(self.causal)}
        out = {FIELD_SYMBOLS[k]: v for k, v in given.items()}
        out.update({sym.L: self.layers, sym.H: self.hidden, sym.k_e: self.top_k if self.experts else 1})
        return out

    def evaluate(self, expr: sp.Basic, seq_len: Optional[int] = None):
        """``expr`` at the card's values (and ``S = seq_len``): an exact integer or rational where it is one."""
        subs = dict(self.values)
        if seq_len is not None:
            subs[sym.s] = seq_len
        v = sp.sympify(expr, strict=True).xreplace(subs)
        if v.free_symbols:
            raise ValueError(f"{self.name}: the expression still has {sorted(map(str, v.free_symbols))}; "
                             "pass seq_len")
        return int(v) if v.is_Integer else (sp.Rational(v) if v.is_Rational else float(v))

    def quantity(self, name: str, seq_len: Optional[int] = None):
        """One quantity of the shape (:func:`~mlsysim_sym.shape.build_shape`) at the card's values."""
        return self.evaluate(build_shape(self.kind)[name], seq_len)

    @property
    def parameters(self) -> int:
        """Parameters of the model, every expert counted."""
        return self.quantity("P_total")

    @property
    def active_parameters(self) -> int:
        """Parameters one token meets (its routed experts, the shared ones, the router, the embeddings)."""
        return self.quantity("P_active")

    @property
    def input_embedding(self) -> int:
        """Parameters of the input embedding (some publishers leave them out of the active count)."""
        return self.vocab * self.hidden

    def flops_per_token(self, seq_len: int, convention_name: str = "shape", recompute: bool = False):
        """Training FLOPs per token at ``seq_len`` under a named convention (:data:`~mlsysim_sym.shape.CONVENTIONS`),
        forward and backward; with ``recompute`` (full activation recomputation) one more forward pass, the
        FLOPs the hardware executes: ``(3 + 1) / 3`` of them."""
        if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len < 1:
            raise ValueError(f"seq_len must be a whole number >= 1, got {seq_len!r}")
        c = convention(convention_name)
        model = self.evaluate(c.expression(self.kind), seq_len)
        return model * sp.Rational(4, 3) if recompute else model

    @property
    def kv_fraction(self) -> float:
        """The keys' and values' width as a fraction of the hidden size, as context parallelism exchanges them:
        ``H_KV d_head / d``; with latent attention the up-projected heads, ``N_heads (d_head + d_rope + d_v) / (2d)``."""
        v = self.values
        if self.attention == "mla":
            width = self.heads * (v[FIELD_SYMBOLS["head_dim"]] + self.rope_dim + v[FIELD_SYMBOLS["v_head_dim"]]) / 2
            return width / self.hidden
        return kv_width_fraction(v[FIELD_SYMBOLS["kv_heads"]], v[FIELD_SYMBOLS["head_dim"]], self.hidden)

    # ---- the record the models price ---------------------------------------------------------------------
    def workload(self) -> Workload:
        """The record :func:`~mlsysim_sym.solve` prices (see the module docstring); built once per card (a card
        and its record are immutable: ``solve("modern/...")`` took 170 us a call to build it again)."""
        return self._workload

    @cached_property
    def _workload(self) -> Workload:
        m = build_shape(self.kind)
        moe = self.experts > 0
        win = self.values[FIELD_SYMBOLS["window_layers"]] if self.window else 0
        a1 = self.quantity("A_att")
        return Workload(
            name=self.name, kind="sparse_transformer" if moe else "transformer",
            parameters=self.parameters, active_parameters=self.active_parameters if moe else None,
            inference_flops=self.evaluate(m["F_mm"]), layers=self.layers, hidden_dim=self.hidden,
            active_experts_per_token=self.top_k if moe else None,
            attention_flops=a1 * (self.layers - win), window_attention_flops=a1 * win,
            attention_window=self.window, causal=int(self.causal), kv_fraction=self.kv_fraction,
            activation_values=float(self.evaluate(m["K_layer"])),
            expert_parameters=self.quantity("P_routed") if moe else None,
            output_flops=self.evaluate(m["F_logits"]), experts=self.experts if moe else None,
            attention_heads=self.heads,
            kv_heads=self.heads if self.attention == "mla" else (self.kv_heads or self.heads),
            expert_ffn=self.values[FIELD_SYMBOLS["expert_ffn"]] if moe else None, architecture=self)

    def replace(self, **changes) -> "Architecture":
        return replace(self, **changes)

    def to_dict(self) -> Dict[str, object]:
        """The card's fields (those away from their defaults, ``name`` and the required ones always)."""
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in CARD_REQUIRED or v != f.default:
                out[f.name] = v
        return out


#: The card's fields, in order, with their types (the files read them).
CARD_FIELDS = {f.name: f for f in fields(Architecture)}
#: The fields a card must give.
CARD_REQUIRED = ("name", "layers", "hidden", "heads", "vocab")
