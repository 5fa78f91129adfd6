"""Write mlsysim_sym/data/modern.json: the modern catalog (architecture cards and NVIDIA training systems), each
field with the source it comes from. Run after editing this file; tests/test_modern_catalog.py checks the data."""
import json
from pathlib import Path

GiB = 2 ** 30
SRC = {
    "llama31-card": "Meta, Llama 3.1 model card and models/llama3_1/api/sku_list.py (github.com/meta-llama/llama-models); "
                    "Dubey et al. (2024), The Llama 3 Herd of Models, Table 3",
    "llama31-config": "config.json of meta-llama/Llama-3.1-{8B,70B,405B} on Hugging Face (head_dim 128, "
                      "tie_word_embeddings false, vocab_size 128256)",
    "nemo-config": "config.json of mistralai/Mistral-Nemo-Base-2407 on Hugging Face (head_dim 128, "
                   "sliding_window null)",
    "mixtral-paper": "Jiang et al. (2024), Mixtral of Experts, arXiv:2401.04088, Table 1",
    "mixtral22-config": "config.json of mistral-community/Mixtral-8x22B-v0.1 on Hugging Face",
    "dsv3-paper": "DeepSeek-AI (2024), DeepSeek-V3 Technical Report, arXiv:2412.19437, sec. 4.2",
    "dsv3-config": "config.json of deepseek-ai/DeepSeek-V3 on Hugging Face (first_k_dense_replace 3, "
                   "moe_intermediate_size 2048, q_lora_rank 1536, kv_lora_rank 512, qk_rope_head_dim 64)",
    "qwen3-card": "Qwen team, Qwen3-30B-A3B model card and config.json on Hugging Face (head_dim 128, "
                  "moe_intermediate_size 768, decoder_sparse_step 1)",
    "gpt3-paper": "Brown et al. (2020), Language Models are Few-Shot Learners, Table 2.1 and sec. 2.1 (GPT-2's "
                  "vocabulary of 50257, tied embeddings)",
    "gptoss-card": "OpenAI (2025), gpt-oss-120b & gpt-oss-20b Model Card, arXiv:2508.10925, sec. 2; "
                   "gpt_oss/torch/model.py (github.com/openai/gpt-oss): sliding window 128 on every other layer",
    "h100": "NVIDIA H100 Tensor Core GPU product page (nvidia.com/en-us/data-center/h100), H100 SXM column; "
            "Tensor Core rows (TF32, BF16, FP16, FP8, INT8) are with 2:4 sparsity, dense is half; FP32 (67 TFLOPS) "
            "is the CUDA cores' rate, taken as printed",
    "h200": "NVIDIA H200 Tensor Core GPU product page (nvidia.com/en-us/data-center/h200), H200 SXM column; "
            "dense is half the sparse Tensor Core rows (TF32, BF16, FP16, FP8, INT8); FP32 (67 TFLOPS) as printed",
    "blackwell": "NVIDIA Blackwell datasheet (GB200 NVL72 and HGX B200 columns of 'Individual Blackwell GPU "
                 "Specifications'; 'All Tensor Core numbers except FP64 with sparsity': dense is half; its TF32, "
                 "FP16/BF16, FP8 and INT8 Tensor Core rows)",
    "blackwell-fp32": "the Blackwell datasheet prints no FP32 rate; Glenn K. Lockwood, B200 notes "
                      "(glennklockwood.com/garden/processors/B200), FP32 column: 80 TFLOPS (HGX B200 at 1,000 W), "
                      "90 TFLOPS (GB200 at 1,200 W)",
    "nvlink": "NVIDIA NVLink and NVLink Switch page (nvidia.com/en-us/data-center/nvlink): 900 GB/s (Hopper) and "
              "1.8 TB/s (Blackwell) per GPU, both directions; per direction is half",
    "dgx-basepod": "NVIDIA DGX BasePOD reference architecture, Core Components (docs.nvidia.com/dgx-basepod): DGX "
                   "H100/H200/B200, eight GPUs, eight single-port ConnectX-7 at up to 400 Gb/s",
    "dgx-b200": "NVIDIA DGX B200 User Guide, Introduction (docs.nvidia.com/dgx/dgxb200-user-guide): 8 B200, "
                "8 ConnectX-7 up to 400 Gb/s, PCIe Gen5",
    "dgx-gb200": "NVIDIA DGX GB200 User Guide (docs.nvidia.com/dgx/dgxgb200-user-guide): 18 compute trays of 4 GPUs "
                 "in one NVLink domain, 4 single-port ConnectX-7 400G per tray",
    "pcie5": "PCIe Gen5 x16: 128 GB/s both directions on the product pages, 64 GB/s per direction",
    "gib": "memory as NVIDIA labels it, read as GiB (mlsysim's reading of its own H100 record, 80 GiB)",
    "mlsysim": "mlsysim 0.3.0's defaults (dispatch_tax 10 us, nvlink_latency 500 ns, fabric latency 5 us)",
    "superpod": "NVIDIA DGX SuperPOD reference architecture (docs.nvidia.com/dgx-superpod): the compute fabric is "
                "a rail-optimized, non-blocking fat tree (oversubscription 1)",
    "qwen3-235b-config": "Qwen team, Qwen3-235B-A22B model card and config.json on Hugging Face (num_hidden_layers 94, "
                         "hidden_size 4096, num_attention_heads 64, num_key_value_heads 4, head_dim 128, "
                         "intermediate_size 12288, moe_intermediate_size 1536, num_experts 128, num_experts_per_tok 8, "
                         "decoder_sparse_step 1, vocab_size 151936; 235B parameters, 22B activated)",
}


def card(name, sources, **fields):
    return name, {"fields": fields, "sources": sources}


ARCHS = dict([
    card("Llama-3.1-8B", {"shape": "llama31-card", "head_dim,vocab,tied": "llama31-config"},
         layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256),
    card("Llama-3.1-70B", {"shape": "llama31-card", "head_dim,vocab,tied": "llama31-config"},
         layers=80, hidden=8192, heads=64, kv_heads=8, ffn=28672, vocab=128256),
    card("Llama-3.1-405B", {"shape": "llama31-card", "head_dim,vocab,tied": "llama31-config"},
         layers=126, hidden=16384, heads=128, kv_heads=8, ffn=53248, vocab=128256),
    card("Mistral-NeMo-12B", {"shape": "nemo-config"},
         layers=40, hidden=5120, heads=32, kv_heads=8, head_dim=128, ffn=14336, vocab=131072),
    card("Mixtral-8x7B", {"shape": "mixtral-paper"},
         layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=32000, experts=8, top_k=2),
    card("Mixtral-8x22B", {"shape": "mixtral22-config"},
         layers=56, hidden=6144, heads=48, kv_heads=8, ffn=16384, vocab=32000, experts=8, top_k=2),
    card("DeepSeek-V3", {"shape": "dsv3-paper", "ffn,first_dense,q_rank,kv_rank,rope_dim,vocab": "dsv3-config"},
         layers=61, hidden=7168, heads=128, head_dim=128, ffn=18432, vocab=129280, experts=256, top_k=8,
         shared_experts=1, expert_ffn=2048, first_dense=3, attention="mla", q_rank=1536, kv_rank=512, rope_dim=64,
         v_head_dim=128),
    card("Qwen3-30B-A3B", {"shape": "qwen3-card"},
         layers=48, hidden=2048, heads=32, kv_heads=4, head_dim=128, ffn=6144, expert_ffn=768, vocab=151936,
         experts=128, top_k=8),
    card("Qwen3-235B-A22B", {"shape": "qwen3-235b-config"},
         layers=94, hidden=4096, heads=64, kv_heads=4, head_dim=128, ffn=12288, expert_ffn=1536, vocab=151936,
         experts=128, top_k=8),
    card("GPT-OSS-120B", {"shape": "gptoss-card"},
         layers=36, hidden=2880, heads=64, kv_heads=8, head_dim=64, ffn=2880, vocab=201088, experts=128, top_k=4,
         window=128, window_layers=18),
    card("GPT-3-175B", {"shape": "gpt3-paper"},
         layers=96, hidden=12288, heads=96, ffn=49152, gated=False, vocab=50257, tied=True),
])


def acc(name, cite, peak, mem_gib, bw, tdp, pcie, fp8, tf32, int8, fp32, fp32_cite):
    """``peak`` is the dense 16-bit Tensor Core rate; ``tf32``, ``fp8`` and ``int8`` the dense rates of those rows;
    ``fp32`` the CUDA cores' rate (no Tensor Core, no sparsity). No record has an INT4 rate: neither product page
    nor datasheet prints one, and a key a record lacks is priced at ``peak_flops``, as mlsysim prices it."""
    return name, {"name": name, "peak_flops": peak, "memory_capacity": mem_gib * GiB, "memory_bandwidth": bw,
                  "precision_flops": [["bf16", peak], ["fp16", peak], ["fp8", fp8], ["tf32", tf32], ["int8", int8],
                                      ["fp32", fp32]],
                  "dispatch_tax": 1e-5, "tdp": tdp, "pcie_bandwidth": pcie, "nvlink_latency": 5e-7,
                  "sources": {"peak_flops,memory_bandwidth,tdp": cite, "memory_capacity": cite + "; gib",
                              "precision_flops": cite if fp32_cite == cite else cite + "; " + fp32_cite,
                              "dispatch_tax,nvlink_latency": "mlsysim",
                              **({"pcie_bandwidth": "pcie5"} if pcie else {})}}


ACCS = dict([
    # name, cite, 16-bit, HBM GiB, HBM B/s, W, host link, then FP8, TF32, INT8 (dense: half the sparse rows) and FP32
    acc("NVIDIA H100 SXM", "h100", 989.5e12, 80, 3.35e12, 700.0, 64e9, 1979e12, 494.5e12, 1979e12, 67e12, "h100"),
    acc("NVIDIA H200 SXM", "h200", 989.5e12, 141, 4.8e12, 700.0, 64e9, 1979e12, 494.5e12, 1979e12, 67e12, "h200"),
    acc("NVIDIA B200", "blackwell", 2250e12, 180, 7.7e12, 1000.0, 64e9, 4500e12, 1100e12, 4500e12, 80e12,
        "blackwell-fp32"),
    acc("NVIDIA GB200", "blackwell", 2500e12, 186, 8.0e12, 1200.0, None, 5000e12, 1250e12, 5000e12, 90e12,
        "blackwell-fp32"),
])
NODES = {
    "DGX H100 (8 H100 SXM)": {"accelerator": "NVIDIA H100 SXM", "accelerators_per_node": 8, "intra_node_bw": 450e9,
                              "sources": {"accelerators_per_node": "dgx-basepod", "intra_node_bw": "nvlink"}},
    "DGX H200 (8 H200 SXM)": {"accelerator": "NVIDIA H200 SXM", "accelerators_per_node": 8, "intra_node_bw": 450e9,
                              "sources": {"accelerators_per_node": "dgx-basepod", "intra_node_bw": "nvlink"}},
    "DGX B200 (8 B200)": {"accelerator": "NVIDIA B200", "accelerators_per_node": 8, "intra_node_bw": 900e9,
                          "sources": {"accelerators_per_node": "dgx-b200", "intra_node_bw": "nvlink"}},
    "GB200 NVL72 (72 GB200, one NVLink domain)": {
        "accelerator": "NVIDIA GB200", "accelerators_per_node": 72, "intra_node_bw": 900e9,
        "sources": {"accelerators_per_node": "dgx-gb200", "intra_node_bw": "nvlink"}},
}
FABRICS = {
    "ConnectX-7 400G per GPU": {"bandwidth": 50e9, "oversubscription_ratio": 1.0, "latency": 5e-6,
                                "sources": {"bandwidth": "dgx-basepod; dgx-gb200", "latency": "mlsysim",
                                            "oversubscription_ratio": "superpod"}},
}
FLEETS = {
    "H100-SXM-1024": ("128 DGX H100 on 400G InfiniBand (1024 H100 SXM)", "DGX H100 (8 H100 SXM)", 128),
    "H200-1024": ("128 DGX H200 on 400G InfiniBand (1024 H200 SXM)", "DGX H200 (8 H200 SXM)", 128),
    "B200-1024": ("128 DGX B200 on 400G InfiniBand (1024 B200)", "DGX B200 (8 B200)", 128),
    "GB200-NVL72-1152": ("16 GB200 NVL72 racks on 400G InfiniBand (1152 GB200)",
                         "GB200 NVL72 (72 GB200, one NVLink domain)", 16),
}

out = {"format": 1, "about": "The modern catalog of mlsysim-sym: architecture cards of today's models and NVIDIA "
       "training systems, each field with its source (written by tools/write_modern_catalog.py). SI units.",
       "citations": SRC, "architectures": ARCHS, "accelerators": ACCS,
       "nodes": {k: {"name": k, **v} for k, v in NODES.items()},
       "fabrics": {k: {"name": k, **v} for k, v in FABRICS.items()},
       "fleets": {k: {"name": n, "node": node, "count": c, "fabric": "ConnectX-7 400G per GPU"}
                  for k, (n, node, c) in FLEETS.items()}}
Path(__file__).resolve().parent.parent.joinpath("mlsysim_sym", "data", "modern.json").write_text(
    json.dumps(out, indent=1) + "\n", encoding="utf-8")
