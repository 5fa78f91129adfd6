"""Architecture cards: the parameter counts and FLOPs per token of a transformer's shape, the named FLOP
conventions, and the modern catalog's counts against the published ones (``docs/architecture.md``)."""
from __future__ import annotations

from typing import Dict, List

from mlsysim_sym import modern, notation
from mlsysim_sym.architecture import Architecture
from mlsysim_sym.model import Variant, build_model
from mlsysim_sym.printing import broken_chain, latex
from mlsysim_sym.shape import CONVENTIONS, FIELD_SYMBOLS, ShapeKind, build_shape

from .common import definition_chain

DENSE = ("P_attn_w", "P_attn", "P_mlp", "P_dense_layer", "P_embed", "P_total", "P_active")
MOE = ("P_expert", "P_router", "P_moe_layer", "P_total", "P_active")
MLA = ("P_attn_w", "P_attn")
FLOPS = ("F_mm", "A_att", "S_keys", "F_att", "F_shape")
WINDOW = ("S_keys_win", "F_att")

#: What each catalog card's publisher prints (total, active), where, and whether its active count has the input
#: embedding; the tests hold the cards to these (tests/test_architecture.py).
PUBLISHED = {
    "Llama-3.1-8B": ("8.03B", "", "Hugging Face model page (safetensors count)"),
    "Llama-3.1-70B": ("70.6B", "", "Hugging Face model page (safetensors count)"),
    "Llama-3.1-405B": ("406B", "", "Hugging Face model page (safetensors count)"),
    "Mistral-NeMo-12B": ("12B", "", "Mistral AI, Mistral NeMo announcement (2024-07-18)"),
    "Mixtral-8x7B": ("46.7B", "12.9B", "Mistral AI, Mixtral of experts (2023-12-11)"),
    "Mixtral-8x22B": ("141B", "39B", "Mistral AI, Mixtral 8x22B announcement (2024-04-17)"),
    "DeepSeek-V3": ("671B", "37B (36.6B w/o input emb.)",
                    "DeepSeek-V3 Technical Report, abstract; README_WEIGHTS"),
    "Qwen3-30B-A3B": ("30.5B", "3.3B", "Qwen3-30B-A3B model card"),
    "Qwen3-235B-A22B": ("235B", "22B", "Qwen3-235B-A22B model card"),
    "GPT-OSS-120B": ("116.83B", "5.13B (w/o input emb.)", "gpt-oss model card, Table 1"),
    "GPT-3-175B": ("175B", "", "Brown et al. (2020), Table 2.1"),
}


def _b(x: float) -> str:
    return f"{x / 1e9:,.2f}B"


#: How a card sets the symbols that are not one field each.
_FROM = {"moe_layers": "first_dense, moe_every", "gated": "gated"}


def _symbol_rows() -> List[List[str]]:
    """(card field, LaTeX, meaning) of each symbol a card sets; the experts per token (the step model's) too."""
    rows = [[_FROM.get(field, field), notation.entry(str(s)).latex, notation.entry(str(s)).meaning]
            for field, s in FIELD_SYMBOLS.items()]
    rows.insert(8, ["top_k", notation.entry("k_e").latex, notation.entry("k_e").meaning])
    return rows


def _catalog_rows() -> List[List[str]]:
    """(card, parameters, active, active without the input embedding, published, published active)."""
    rows = []
    for name in modern.architecture_names():
        c = modern.architecture(name)
        total, active, _ = PUBLISHED[name.split("/", 1)[1]]
        rows.append([name, _b(c.parameters), _b(c.active_parameters) if c.experts else "",
                     _b(c.active_parameters - c.input_embedding) if c.experts else "", total, active])
    return rows


def _sources() -> List[str]:
    return [f"{name}: {where}" for name, (_, _, where) in PUBLISHED.items()]


def _flop_rows(seq_len: int = 8192) -> List[List[str]]:
    rows = []
    for name in ("Llama-3.1-70B", "Mixtral-8x22B", "DeepSeek-V3", "GPT-OSS-120B"):
        c = modern.architecture(name)
        rows.append([f"modern/{name}"] + [f"{float(c.flops_per_token(seq_len, k)) / 1e9:,.1f}" for k in CONVENTIONS])
    return rows


def _block(model, names) -> str:
    """The definitions of ``names`` in one ``aligned`` display, each broken over lines to fit a text column."""
    rows = []
    for n in names:
        tex = definition_chain(model, n, alone=True)
        if tex.startswith("\\begin{aligned}"):
            rows += tex.split("\n")[1:-1]
            rows[-1] = rows[-1].rstrip(" \\")
        else:
            lhs, rhs = tex.split(" = ", 1)
            rows.append(f"{lhs} &= {rhs}")
    body = " \\\\\n".join(r.rstrip(" \\") for r in rows)
    return "\\begin{aligned}\n" + body + "\n\\end{aligned}"


def context() -> Dict[str, object]:
    dense, moe = build_shape(ShapeKind()), build_shape(ShapeKind(moe=True))
    mla, window = build_shape(ShapeKind(mla=True)), build_shape(ShapeKind(window=True))
    conventions = [{"name": c.name, "title": c.title, "source": c.source,
                    "tex": broken_chain([notation.symbol("F_train"), c.expression(ShapeKind())])}
                   for c in CONVENTIONS.values()]
    ext = build_model(Variant(fidelity="extended"))
    return {
        "symbols": _symbol_rows(),
        "dense": _block(dense, DENSE),
        "moe": _block(moe, MOE),
        "mla": _block(mla, MLA),
        "flops": _block(dense, FLOPS),
        "window": _block(window, WINDOW),
        "conventions": conventions,
        "convention_names": list(CONVENTIONS),
        "flop_rows": _flop_rows(),
        "catalog": _catalog_rows(),
        "sources": _sources(),
        "extended": definition_chain(ext, "F_tok", alone=True),
        "example": Architecture("Mistral NeMo 12B", layers=40, hidden=5120, heads=32, kv_heads=8, head_dim=128,
                                ffn=14336, vocab=131072),
        "latex": latex,
    }
