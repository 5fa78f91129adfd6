"""Timings of the sensitivities (a script that prints, not a test).

    python benchmarks/bench_sensitivity.py

Cold: the first table in a fresh process (the model, its decisions and one regime
are built and compiled). Warm: the same call again, which is what a user
iterating on one configuration pays: every continuous sensitivity of one output,
with ``solve()``'s checks, ranked. The goal is <= 5 ms warm.
"""
from __future__ import annotations

import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CASES = [
    ("Llama3_70B", "Research_256", dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)),
    ("Mixtral_8x7B", "Training_1K", dict(batch_size=1024, tp_size=2, ep_size=4, precision="bf16", zero_stage=1,
                                         overlap_comm=True, gradient_accumulation_steps=4)),
    ("Llama3_8B", "Lab_64_H100", dict(batch_size=32, zero_stage=3, straggler_factor=1.2, congestion_factor=1.5,
                                      seq_len=4096)),
]
OUTPUTS = ("mfu", "step_time", "scaling_efficiency", "effective_throughput", "memory")


def timed(fn, repeat):
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def ms(ts):
    return f"median {statistics.median(ts) * 1e3:7.3f} ms  (min {min(ts) * 1e3:.3f}, max {max(ts) * 1e3:.3f})"


def main():
    warnings.simplefilter("ignore", UserWarning)   # the third case has batch < dp, which solve() warns about
    t0 = time.perf_counter()
    from mlsysim_sym.sensitivity import sensitivities, sensitivities_at, sensitivity_sweep
    print(f"import mlsysim_sym.sensitivity: {(time.perf_counter() - t0) * 1e3:.0f} ms")
    model, fleet, kw = CASES[0]
    t0 = time.perf_counter()
    sensitivities(model, fleet, **kw)
    print(f"cold first table ({model}, {fleet}, mfu): {(time.perf_counter() - t0) * 1e3:.0f} ms\n")

    print("warm, all continuous sensitivities of one output (sensitivities(), 200 calls):")
    for model, fleet, kw in CASES:
        for out in OUTPUTS:
            t = sensitivities(model, fleet, out, **kw)           # warm-up: builds this regime once
            ts = timed(lambda: sensitivities(model, fleet, out, **kw), 200)
            print(f"  {model:13s} {fleet:13s} {out:21s} {len(t.rows):2d} rows  {ms(ts)}")
    model, fleet, kw = CASES[0]
    t = sensitivities(model, fleet, **kw)
    print("\nwarm, from parameter values (sensitivities_at, no solve() checks, 200 calls):")
    print("  " + ms(timed(lambda: sensitivities_at(t.variant, t.values), 200)))

    def with_knobs():
        s = sensitivities(model, fleet, **kw)
        return s.discrete, s.relaxed
    with_knobs()
    print("\nwarm, plus the integer knobs (22 neighbour solves) and their relaxed derivatives (100 calls):")
    print("  " + ms(timed(with_knobs, 100)))

    import numpy as np
    etas = np.linspace(0.2, 0.95, 100)
    bws = np.geomspace(1e11, 1e13, 100)
    kw_sweep = dict(batch_size=256, tp_size=[1, 2, 4, 8, 16], pp_size=4, microbatch_count=8)
    sensitivity_sweep(model, fleet, efficiency=etas, memory_bandwidth=bws, **kw_sweep)
    ts = timed(lambda: sensitivity_sweep(model, fleet, efficiency=etas, memory_bandwidth=bws, **kw_sweep), 5)
    n = 5 * 100 * 100
    print(f"\nsweep: every elasticity of mfu over {n} configurations (5 x 100 x 100 grid), warm:")
    print(f"  {ms(ts)}  = {statistics.median(ts) / n * 1e9:.0f} ns per configuration")


if __name__ == "__main__":
    main()
