"""Random solve() inputs for the fuzz test against mlsysim (not a test module)."""
from __future__ import annotations

import random

MODELS = ("Llama3_70B", "Llama3_8B", "Mixtral_8x7B", "DeepSeek_V3", "GPT3", "BERT_Base", "OPT_13B",
          "ResNet50", "Mamba_130M", "DLRM", "StableDiffusion_v1_5", "LeNet1", "OpenVLA_7B")
FLEETS = ("Research_256", "Lab_64_H100", "Lab_64_A100", "Kempner_H100_384", "Training_1K_B200", "Mega_100K",
          "Training_10K")
ODD = [0, -1, -2.5, float("nan"), float("inf"), float("-inf"), 1e30, 2**70, True, False, None, "2", "1.0",
       [2], 0.5, 1.5, 2.0]
PRECISIONS = ["fp16", "bf16", "fp32", "tf32", "fp8", "int8", "int4", "FP16", "Bf16", "FP8", "fp64", "", "half",
              None, 16, 2.0, True]

VALID = {
    "batch_size": lambda r: r.choice([1, 3, 7, 64, 256, 1000, 1024, 4096, r.randint(1, 10**6)]),
    "efficiency": lambda r: r.choice([0.5, 1.0, 1e-9, r.uniform(0.01, 1)]),
    "tp_size": lambda r: r.choice([1, 2, 3, 4, 5, 8, 16]),
    "pp_size": lambda r: r.choice([1, 2, 4, 5, 8]),
    "ep_size": lambda r: r.choice([1, 1, 2, 4]),
    "v_stages": lambda r: r.choice([1, 2, 4]),
    "microbatch_count": lambda r: r.choice([1, 2, 4, 8, 32]),
    "zero_stage": lambda r: r.randint(0, 3),
    "is_lora": lambda r: r.random() < 0.3,
    "activation_recomputation": lambda r: r.random() < 0.5,
    "overlap_comm": lambda r: r.random() < 0.5,
    "overlap_efficiency": lambda r: r.uniform(0, 1),
    "congestion_factor": lambda r: r.choice([1.0, 1.5, r.uniform(0.5, 3)]),
    "straggler_factor": lambda r: r.choice([1.0, 1.2, 0.8, r.uniform(0.5, 2)]),
    "moe_routing_imbalance_factor": lambda r: r.choice([1.0, 1.3, 2.0]),
    "gradient_accumulation_steps": lambda r: r.choice([1, 2, 4]),
    "seq_len": lambda r: r.choice([128, 2048, 4096, 1000]),
    "topology_override": lambda r: r.choice([None, "ring", "tree"]),
}


def draw(rng: random.Random):
    """One (model, fleet, kwargs): most arguments valid, one to three of them odd."""
    kw = {k: gen(rng) for k, gen in VALID.items() if rng.random() < 0.6}
    kw["precision"] = rng.choice(PRECISIONS[:8]) if rng.random() < 0.8 else rng.choice(PRECISIONS)
    for name in rng.sample(sorted(VALID), rng.choice([0, 1, 1, 2, 3])):
        kw[name] = rng.choice(ODD)
    return rng.choice(MODELS), rng.choice(FLEETS), kw
