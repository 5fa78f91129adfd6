"""Workloads and fleets: small frozen records in SI units.

These mirror the fields of mlsysim's pydantic objects that ``DistributedModel``
reads (docs/contract.md §1.2-§1.4), and nothing else. Every magnitude is a plain float
in SI base units (B, s, flop, flop/s, B/s, W), so a record can be written to and
read from the bundled JSON catalog without a unit library.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Tuple

#: Workload classes of mlsysim that change the computation (docs/contract.md §2.2).
WORKLOAD_KINDS = (
    "transformer",         # TransformerWorkload
    "sparse_transformer",  # SparseTransformerWorkload (MoE)
    "cnn",                 # CNNWorkload
    "ssm",                 # SSMWorkload
    "embodied",            # EmbodiedWorkload
    "diffusion",           # DiffusionWorkload
    "workload",            # plain Workload
)


@dataclass(frozen=True)
class Workload:
    """A model to train. Counts are plain numbers, sizes in bytes, FLOPs in flop.

    ``inference_flops`` is per token for the transformer kinds and per sample
    (per denoising step for diffusion) otherwise, as in mlsysim's registry.
    """

    name: str
    kind: str
    parameters: Optional[float] = None
    model_size: Optional[float] = None
    inference_flops: Optional[float] = None
    active_parameters: Optional[float] = None
    layers: Optional[int] = None
    hidden_dim: Optional[int] = None
    active_experts_per_token: Optional[int] = None
    denoising_steps: Optional[int] = None
    # What an architecture card adds (mlsysim_sym.architecture.Architecture.workload); only the extended
    # model reads them: attention FLOPs per token per key attended, summed over the layers without and with a
    # sliding window (flop), the window (tokens), 1 for causal attention, the keys' and values' width as a
    # fraction of hidden_dim, the activation bytes (two a value) a layer keeps per token and hidden unit, the parameters
    # of the routed experts (every MoE layer), the output layer's forward FLOPs per token, the routed experts of a
    # MoE layer, and the card.
    attention_flops: Optional[float] = None
    window_attention_flops: Optional[float] = None
    attention_window: Optional[int] = None
    causal: Optional[int] = None
    kv_fraction: Optional[float] = None
    activation_values: Optional[float] = None
    expert_parameters: Optional[float] = None
    output_flops: Optional[float] = None
    experts: Optional[int] = None
    attention_heads: Optional[int] = None
    kv_heads: Optional[int] = None
    expert_ffn: Optional[int] = None
    architecture: Optional[object] = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.kind not in WORKLOAD_KINDS:
            raise ValueError(f"kind must be one of {', '.join(WORKLOAD_KINDS)}, got {self.kind!r}")

    @property
    def is_transformer(self) -> bool:
        return self.kind in ("transformer", "sparse_transformer")


@dataclass(frozen=True)
class Accelerator:
    """One accelerator (mlsysim ``HardwareNode``): rates in flop/s, B/s; sizes in B; times in s.

    ``precision_flops`` is a tuple of ``(key, flop/s)`` pairs (hashable); use
    :meth:`flops_for` to look a key up. ``pcie_bandwidth`` is the host link's
    bandwidth *per direction* (None: mlsysim's 64 GB/s fallback applies).
    ``nvlink_latency`` None means the 500 ns fallback applies.
    """

    name: str
    peak_flops: float
    memory_capacity: float
    memory_bandwidth: float
    precision_flops: Tuple[Tuple[str, float], ...] = ()
    dispatch_tax: float = 1e-5
    tdp: Optional[float] = None
    pcie_bandwidth: Optional[float] = None
    nvlink_latency: Optional[float] = None
    sram_capacity: Optional[float] = None
    sram_bandwidth: Optional[float] = None
    flash_bandwidth: Optional[float] = None

    def flops_for(self, key: str) -> Optional[float]:
        """Peak flop/s under the exact precision key, or None when absent."""
        for k, v in self.precision_flops:
            if k == key:
                return v
        return None


@dataclass(frozen=True)
class Node:
    """A server: ``accelerators_per_node`` copies of one accelerator on an intra-node link (B/s per direction)."""

    name: str
    accelerator: Accelerator
    accelerators_per_node: int
    intra_node_bw: float


@dataclass(frozen=True)
class Fabric:
    """The scale-out network: per-NIC bandwidth in B/s, latency in s (None: 5 µs fallback)."""

    name: str
    bandwidth: float
    oversubscription_ratio: float = 1.0
    latency: Optional[float] = None


@dataclass(frozen=True)
class Fleet:
    """``count`` identical nodes on one fabric."""

    name: str
    node: Node
    count: int
    fabric: Fabric

    @property
    def total_accelerators(self) -> int:
        return self.count * self.node.accelerators_per_node


#: The workload fields an architecture card adds; of these, mlsysim's records give only their heads
#: (:data:`HEAD_FIELDS`).
CARD_FIELDS = ("attention_flops", "window_attention_flops", "attention_window", "causal", "kv_fraction",
               "activation_values", "expert_parameters", "output_flops", "experts", "attention_heads",
               "kv_heads", "expert_ffn", "architecture")
#: The card fields a record of mlsysim's (registry or model file) gives when it lists its heads
#: (:func:`record_heads`).
HEAD_FIELDS = ("kv_fraction", "attention_heads", "kv_heads")


def kv_width_fraction(kv_heads, head_dim, hidden):
    """The keys' and values' width as a fraction of the hidden size, as context parallelism exchanges them:
    ``H_KV d_head / d`` (1 for multi-head attention whose heads split the hidden size)."""
    return kv_heads * head_dim / hidden


def record_heads(heads, kv_heads, head_dim, hidden, kv_lora_rank=None) -> dict:
    """The :data:`HEAD_FIELDS` of a record of mlsysim's (``TransformerWorkload``'s ``heads``, ``kv_heads``,
    ``head_dim``, ``hidden_dim`` and ``kv_lora_rank``, None where not given), read with mlsysim's conventions
    (``TransformerWorkload.kv_cache_size``): no ``kv_heads`` is multi-head attention (as many as the heads), no
    ``head_dim`` is ``hidden_dim // heads``. A record without heads gives none of them (None: the extended model
    then exchanges every head's keys and values under context parallelism, and checks no head split); so does
    latent attention (a ``kv_lora_rank``: its keys and values are no ``H_KV d_head``, and mlsysim's DeepSeek_V3
    lists 56 heads where the model has 128; the modern catalog's card describes it), fewer than one head, and a
    head width below one (more heads than ``hidden_dim``). Key/value heads mlsysim reads but no model has (more
    than the heads, or not dividing them) are kept as given: the extended model's checks refuse them by name."""
    if not heads or heads < 1 or kv_lora_rank:
        return dict.fromkeys(HEAD_FIELDS)
    kv = kv_heads if kv_heads and kv_heads >= 1 else heads
    width = head_dim if head_dim and head_dim >= 1 else (hidden // heads if hidden else None)
    if width is not None and width < 1:
        return dict.fromkeys(HEAD_FIELDS)
    kvf = float(kv_width_fraction(kv, width, hidden)) if width and hidden else None
    return {"kv_fraction": kvf, "attention_heads": int(heads), "kv_heads": int(kv)}