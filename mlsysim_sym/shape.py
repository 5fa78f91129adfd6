r"""The shape of a transformer and what follows from it: parameter counts and FLOPs per token, as sympy expressions.

An architecture card (:class:`mlsysim_sym.architecture.Architecture`) gives the shape: layers, hidden size,
attention heads and key/value heads, head width, FFN width, gated or not, vocabulary, tied embeddings, causal
attention and a sliding window, and for a mixture of experts the experts, the experts per token, the shared
experts, an expert's FFN width and how many layers are MoE layers. :func:`build_shape` turns it into an ordered
mapping of named quantities, each a sympy expression of the shape's symbols (declared once below, with the book's
notation where the book has a symbol):

* the parameters of one layer (attention, MLP, experts, norms), the embeddings, the model's total and the
  parameters one token meets (``P_active``: the routed experts it is sent to, every shared expert, the router,
  the whole embedding and output layer, as Mistral AI and Qwen count "active");
* the forward FLOPs per token of the weights' matrix multiplications (``F_mm``: two per multiply-add; the
  input embedding is a lookup and counts nothing) and of attention (``F_att``: the scores and the weighted sum
  over the keys a query attends, half the sequence when attention is causal, the window where there is one);
* the training FLOPs per token under each named convention of :data:`CONVENTIONS` (``6N``, PaLM's
  ``6N + 12 L H Q T``, Megatron-LM's ``num_floating_point_operations``, and this package's count).

Multi-head latent attention (DeepSeek-V2/V3) is counted as Megatron-LM's ``MLASelfAttention`` holds it: a
low-rank query (``r_q``; 0 for none) and a low-rank joint key/value projection (``r_kv``) with a shared rotary key
part (``d_rope``), their norms, and the up-projections to ``N_heads`` heads of ``d_head + d_rope`` (query and key)
and ``d_v`` (value). Its attention FLOPs are those of the up-projected heads (the training kernels' form, not the
absorbed inference form). Biases, learned position embeddings, QK-norms and attention sinks are not counted: they
are below 0.1 % of every model in the catalog (GPT-3's biases and position table are 0.03 %).

Examples
--------
>>> from mlsysim_sym.shape import build_shape, ShapeKind
>>> m = build_shape(ShapeKind())
>>> m["P_attn"]
2*H*a_heads*d_head + 2*H*d_head*n_kv
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List

import sympy as sp

from . import notation
from .model import Quantities, Quantity
from .symbols import sym
from .terms.extended import attention_keys, window_keys

T = r"\text"
_COUNT = {"integer": True, "positive": True}
_COUNT0 = {"integer": True, "nonnegative": True}

#: The symbols of an architecture card (besides the step model's ``N_L``, ``d``, ``S`` and ``k_experts``):
#: name -> (LaTeX, book macro, meaning, assumptions, the card field that sets it).
_SYMBOLS = (
    ("a_heads", rf"N_{{{T}{{heads}}}}", r"\AttentionHeadCount", "attention (query) heads per layer", _COUNT, "heads"),
    ("n_kv", rf"H_{{{T}{{KV}}}}", r"\KvHeadCount",
     "key/value heads per layer (N_heads: multi-head; 1: multi-query; between: grouped-query)", _COUNT, "kv_heads"),
    ("d_head", rf"d_{{{T}{{head}}}}", r"\AttentionHeadDimension",
     "width of one attention head (query and key; with latent attention the part without rotary position)",
     _COUNT, "head_dim"),
    ("d_ff", rf"d_{{{T}{{ff}}}}", r"\FeedForwardWidth", "width of a dense layer's MLP", _COUNT0, "ffn"),
    ("n_mlp", rf"n_{{{T}{{MLP}}}}", None, "weight matrices of one MLP: 3 when gated (SwiGLU), else 2", _COUNT,
     "gated"),
    ("n_vocab", rf"N_{{{T}{{vocab}}}}", None, "tokens of the vocabulary", _COUNT, "vocab"),
    ("chi_tie", rf"\chi_{{{T}{{tie}}}}", None, "1 when the output layer shares the input embedding, else 0",
     _COUNT0, "tied"),
    ("n_experts", rf"N_{{{T}{{experts}}}}", r"\ExpertCount", "routed experts of one MoE layer", _COUNT0,
     "experts"),
    ("n_shared", rf"N_{{{T}{{shared}}}}", None, "shared experts of one MoE layer (every token goes through them)",
     _COUNT0, "shared_experts"),
    ("d_ffe", rf"d_{{{T}{{ff,e}}}}", None, "width of one expert's MLP", _COUNT0, "expert_ffn"),
    ("L_moe", rf"N_{{L,{T}{{MoE}}}}", None, "MoE layers of the model (the others are dense)", _COUNT0,
     "moe_layers"),
    ("r_q", rf"r_{{{T}{{lat,Q}}}}", None, "rank of the low-rank query projection of latent attention (0: none)",
     _COUNT0, "q_rank"),
    ("r_kv", rf"r_{{{T}{{lat,KV}}}}", None, "rank of the joint key/value projection of latent attention", _COUNT0,
     "kv_rank"),
    ("d_rope", rf"d_{{{T}{{rope}}}}", None,
     "width of the rotary-position part of a query/key head of latent attention", _COUNT0, "rope_dim"),
    ("d_v", rf"d_{{{T}{{v}}}}", None, "width of one value head", _COUNT, "v_head_dim"),
    ("L_win", rf"N_{{L,{T}{{win}}}}", None, "layers whose attention has the sliding window", _COUNT0,
     "window_layers"),
)
_UNITS = "1"
for _name, _latex, _book, _meaning, _assume, _field in _SYMBOLS:
    notation.declare(_name, _latex, _meaning, _UNITS, "shape", _book)
#: The card's symbols, by name (``shape_sym.n_kv``).
shape_sym = type("ShapeSymbols", (), {})()
for _name, _latex, _book, _meaning, _assume, _field in _SYMBOLS:
    setattr(shape_sym, _name, notation.symbol(_name, **_assume))
# the window and causality are parameters of the extended step model too (mlsysim_sym.symbols): one symbol each
shape_sym.w_att, shape_sym.chi_causal = sym.w_att, sym.chi_causal
#: Card field -> the symbol it sets.
FIELD_SYMBOLS: Dict[str, sp.Symbol] = {**{row[5]: getattr(shape_sym, row[0]) for row in _SYMBOLS},
                                       "window": sym.w_att, "causal": sym.chi_causal}

#: The shape's quantities: name -> (LaTeX, unit, meaning).
_QUANTITIES = (
    ("P_attn_w", rf"P_{{{T}{{attn,W}}}}", "1", "weights of one layer's attention projections"),
    ("P_attn", rf"P_{{{T}{{attn}}}}", "1", "parameters of one layer's attention (projections and their norms)"),
    ("P_mlp", rf"P_{{{T}{{MLP}}}}", "1", "parameters of one dense layer's MLP"),
    ("P_expert", rf"P_{{{T}{{expert}}}}", "1", "parameters of one expert"),
    ("P_router", rf"P_{{{T}{{router}}}}", "1", "parameters of one MoE layer's router"),
    ("P_dense_layer", rf"P_{{{T}{{layer}}}}", "1", "parameters of one dense layer"),
    ("P_moe_layer", rf"P_{{{T}{{layer,MoE}}}}", "1", "parameters of one MoE layer (every expert)"),
    ("P_routed", rf"P_{{{T}{{routed}}}}", "1", "parameters of the routed experts of every MoE layer"),
    ("P_embed", rf"P_{{{T}{{embed}}}}", "1", "parameters of the input embedding and the output layer"),
    ("P_total", rf"P_{{{T}{{tot}}}}", "1", "parameters of the model"),
    ("P_active", rf"P_{{{T}{{token}}}}", "1",
     "parameters one token meets (its routed experts, the shared ones, the router, the embeddings)"),
    ("F_logits", rf"F_{{{T}{{logits}}}}", "flop", "forward FLOPs per token of the output layer (the logits)"),
    ("F_mm", rf"F_{{{T}{{matmul}}}}", "flop", "forward FLOPs per token of the weights' matrix multiplications"),
    ("A_att", rf"A_{{{T}{{att}}}}", "flop", "forward attention FLOPs per token, per key attended, of one layer"),
    ("S_keys", rf"\bar{{S}}_{{{T}{{full}}}}", "1", "keys one query attends, on average, in a layer without a window"),
    ("S_keys_win", rf"\bar{{S}}_{{{T}{{win}}}}", "1", "keys one query attends, on average, in a windowed layer"),
    ("F_att", rf"F_{{{T}{{att}}}}", "flop", "forward FLOPs per token of attention's scores and weighted sums"),
    ("F_shape", rf"F_{{{T}{{shape}}}}", "flop", "forward FLOPs per token of the shape: matrix products and attention"),
    ("K_layer", rf"K_{{{T}{{layer}}}}", "1",
     "activation bytes (two a value) a layer keeps per token and hidden unit (selective recomputation, flash "
     "attention), on average over the layers"),
)
for _name, _latex, _unit, _meaning in _QUANTITIES:
    notation.declare(_name, _latex, _meaning, _unit, "shape quantity")


@dataclass(frozen=True)
class ShapeKind:
    """The structure of a shape, fixed per card (what cannot be an expression): latent attention or not
    (``mla``), a mixture of experts or a dense model (``moe``), a sliding window on some layers (``window``)."""

    mla: bool = False
    moe: bool = False
    window: bool = False


class ShapeModel(Quantities):
    """Ordered mapping ``name -> expression`` of one :class:`ShapeKind`; ``model[name]`` is expanded down to the
    card's symbols, :meth:`definition` is the structured form (in terms of earlier quantities)."""

    def __init__(self, kind: ShapeKind, quantities: List[Quantity]):
        super().__init__(quantities)
        self.kind = kind

    def __repr__(self) -> str:
        return f"ShapeModel({self.kind}, {len(self)} quantities)"


def _build(kind: ShapeKind) -> List[Quantity]:
    c, L, d, S, k = shape_sym, sym.L, sym.H, sym.s, sym.k_e
    out: List[Quantity] = []

    def q(name, definition):
        s = notation.symbol(name, nonnegative=True)
        out.append(Quantity(name, s, sp.sympify(definition, strict=True)))
        return s

    if kind.mla:
        # Megatron-LM's MLASelfAttention: linear_q_down_proj (d r_q) + its norm (r_q) + linear_q_up_proj, or one
        # linear_q_proj without a query rank; linear_kv_down_proj (d (r_kv + d_rope)) + its norm (r_kv) +
        # linear_kv_up_proj (r_kv N_heads (d_head + d_v)); linear_proj (N_heads d_v d)
        q_heads = c.a_heads * (c.d_head + c.d_rope)
        w_q = sp.Piecewise((d * q_heads, sp.Eq(c.r_q, 0)), (c.r_q * (d + q_heads), True))
        w = q("P_attn_w", w_q + d * (c.r_kv + c.d_rope) + c.r_kv * c.a_heads * (c.d_head + c.d_v)
              + c.a_heads * c.d_v * d)
        attn = q("P_attn", w + c.r_q + c.r_kv)
        d_qk, d_v = c.d_head + c.d_rope, c.d_v
    else:
        # query and output projections of N_heads heads, key and value projections of H_KV heads
        w = q("P_attn_w", 2 * d * c.a_heads * c.d_head + 2 * d * c.n_kv * c.d_head)
        attn = q("P_attn", w)
        d_qk = d_v = c.d_head
    mlp = q("P_mlp", c.n_mlp * d * c.d_ff)
    norms = 2 * d                                   # the two norms of a layer
    dense = q("P_dense_layer", attn + mlp + norms)
    n_dense = L - c.L_moe if kind.moe else L
    embed = q("P_embed", c.n_vocab * d * (2 - c.chi_tie))
    if kind.moe:
        expert = q("P_expert", c.n_mlp * d * c.d_ffe)
        router = q("P_router", c.n_experts * d)
        moe = q("P_moe_layer", attn + (c.n_experts + c.n_shared) * expert + router + norms)
        q("P_total", n_dense * dense + c.L_moe * moe + embed + d)
        q("P_routed", c.L_moe * c.n_experts * expert)
        moe_active = attn + (k + c.n_shared) * expert + router + norms
        q("P_active", n_dense * dense + c.L_moe * moe_active + embed + d)
        # the router's product counts; the norms do not (elementwise)
        mm_layers = n_dense * (w + mlp) + c.L_moe * (w + (k + c.n_shared) * expert + router)
    else:
        q("P_total", n_dense * dense + embed + d)
        q("P_active", n_dense * dense + embed + d)
        mm_layers = n_dense * (w + mlp)
    f_mm = q("F_mm", 2 * mm_layers + q("F_logits", 2 * c.n_vocab * d))
    a1 = q("A_att", 2 * c.a_heads * (d_qk + d_v))
    full = q("S_keys", attention_keys(S, c.chi_causal))
    if kind.window:
        win = q("S_keys_win", window_keys(S, c.w_att, c.chi_causal))
        f_att = q("F_att", a1 * ((L - c.L_win) * full + c.L_win * win))
    else:
        f_att = q("F_att", a1 * L * full)
    q("F_shape", f_mm + f_att)
    # Korthikanti et al. (2022), sec. 4.1, with the card's widths and flash attention (no score matrix kept):
    # the two norms' inputs 4d; attention's input 2d, Q, K and V, the output projection's input and a dropout
    # mask d; the MLP's input 2d, its up (and gate) outputs and the down projection's input, 2 n_MLP d_ff, and a
    # mask d. A multi-head layer with a 4d GeLU MLP keeps 34 (their Table 2); a MoE layer, its token's experts'.
    if kind.mla:
        attn_act = 3 * d + 2 * c.r_q + 2 * (c.r_kv + c.d_rope) + 4 * c.a_heads * (c.d_head + c.d_rope) \
            + 4 * c.a_heads * c.d_v
    else:
        attn_act = 3 * d + 2 * c.a_heads * c.d_head + 4 * c.n_kv * c.d_head + 2 * c.a_heads * c.d_head
    mlp_act = (3 * d + 2 * c.n_mlp * c.d_ff) * n_dense
    if kind.moe:
        mlp_act += (3 * d + 2 * c.n_mlp * c.d_ffe * (k + c.n_shared)) * c.L_moe
    q("K_layer", (4 * d + attn_act + mlp_act / L) / d)
    return out


_CACHE: Dict[ShapeKind, ShapeModel] = {}


def build_shape(kind: ShapeKind = ShapeKind()) -> ShapeModel:
    """The shape's quantities for one structure (built once per :class:`ShapeKind`)."""
    if kind not in _CACHE:
        _CACHE[kind] = ShapeModel(kind, _build(kind))
    return _CACHE[kind]


# --------------------------------------------------------------------------------------------
# FLOP conventions: training FLOPs per token (forward and backward, no recomputation)
# --------------------------------------------------------------------------------------------
notation.declare("F_train", rf"O_{{{T}{{tok}}}}", "training FLOPs per token (forward and backward) under a "
                 "named convention", "flop", "shape quantity")


@dataclass(frozen=True)
class Convention:
    """A named way of counting training FLOPs per token, with its source. ``expression(kind)`` is its sympy
    expression in the card's symbols and the sequence length ``S``."""

    name: str
    title: str
    source: str
    expression: Callable[[ShapeKind], sp.Basic]


def _six_n(kind: ShapeKind) -> sp.Basic:
    return 6 * build_shape(kind)["P_active"]


def _palm(kind: ShapeKind) -> sp.Basic:
    c = shape_sym
    return 6 * build_shape(kind)["P_active"] + 12 * sym.L * c.a_heads * c.d_head * sym.s


def _megatron(kind: ShapeKind) -> sp.Basic:
    """Megatron-LM's ``num_floating_point_operations`` (``megatron/training/training.py``) for one sequence of
    ``S`` tokens, divided by ``S``: 3 (forward, two backward GEMMs) x 2 FLOPs per multiply-add over the attention
    projections, the MLPs (the routed experts a token is sent to and the shared ones; the router not counted), the
    logits, and the causal attention core (the score matrix half counted)."""
    c, L, d, S, k = shape_sym, sym.L, sym.H, sym.s, sym.k_e
    if kind.mla:
        q_heads = c.a_heads * (c.d_head + c.d_rope)
        q_term = sp.Piecewise((d * q_heads, sp.Eq(c.r_q, 0)), (c.r_q * (d + q_heads + 1), True))
        attn = 6 * (q_term + c.r_kv * (d + c.a_heads * (c.d_head + c.d_v) + 1) + d * c.d_rope
                    + c.a_heads * c.d_v * d)
        core = 6 * (c.a_heads * (c.d_head + c.d_rope) / 2 + c.a_heads * c.d_v / 2)
    else:
        attn = 6 * (d * (c.a_heads * c.d_head + 2 * c.n_kv * c.d_head) + c.a_heads * c.d_head * d)
        core = 6 * c.a_heads * c.d_head
    if kind.moe:
        mlp = 6 * d * c.n_mlp * (c.d_ff * (L - c.L_moe) + c.d_ffe * (k + c.n_shared) * c.L_moe)
    else:
        mlp = 6 * d * c.n_mlp * c.d_ff * L
    return mlp + L * attn + L * core * S + 6 * d * c.n_vocab


def _package(kind: ShapeKind) -> sp.Basic:
    return 3 * build_shape(kind)["F_shape"]


_C = Convention
#: Convention name -> its definition, in the order the documents list them.
CONVENTIONS: Dict[str, Convention] = {c.name: c for c in (
    _C("6N", "six FLOPs per parameter a token meets, the embeddings counted", "mlsysim's lowering "
       "(inference_flops = 2 P when not given); the C = 6N of Kaplan et al. (2020), Scaling Laws for Neural "
       "Language Models, sec. 2.1, whose N leaves the embeddings out", _six_n),
    _C("palm", "6N + 12 L H Q T: the parameters and the attention over the whole sequence (not causal)",
       "Chowdhery et al. (2022), PaLM, Appendix B", _palm),
    _C("megatron", "Megatron-LM's num_floating_point_operations: the GEMMs, the logits and the causal attention "
       "core (half the score matrix)", "NVIDIA Megatron-LM, megatron/training/training.py, "
       "num_floating_point_operations (and its test, tests/unit_tests/test_training.py)", _megatron),
    _C("shape", "this package's count: every matrix product of the weights (the router included) and attention "
       "as the card has it (causal or not, windowed layers)", "docs/architecture.md", _package),
)}
del _C


def convention(name: str) -> Convention:
    """The convention named ``name`` (a ``ValueError`` lists the names)."""
    try:
        return CONVENTIONS[name]
    except KeyError:
        raise ValueError(f"convention must be one of {', '.join(CONVENTIONS)}, got {name!r}") from None
