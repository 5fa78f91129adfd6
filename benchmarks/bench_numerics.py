"""Speed of mlsysim-sym's numerics against mlsysim 0.3.0, measured in the same run.

    python benchmarks/bench_numerics.py            # full run (~1-2 minutes)
    python benchmarks/bench_numerics.py --quick    # fewer repetitions

Prints one table: what was timed, per-configuration time of each side, and the ratio.
Needs mlsysim==0.3.0 installed (pip install -e '.[test]').
"""
from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np


def per_call(fn, n, repeat=3):
    best = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best.append((time.perf_counter() - t) / n)
    return min(best)


def cold(code, repeat=3):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def machine() -> str:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    import os

    import sympy

    return (f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}, "
            f"sympy {sympy.__version__}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, no 10^6 rows")
    quick = parser.parse_args(argv).quick
    warnings.simplefilter("ignore")
    import mlsysim

    from mlsysim_sym import DistributedModel, ParallelismOptimizer, catalog, search, sweep

    rows = []
    M, F = mlsysim.Models.Language.Llama3_70B, mlsysim.Systems.Clusters.Research_256
    kw = dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
    theirs = mlsysim.solvers.DistributedModel()
    t_ml = per_call(lambda: theirs.solve(M, F, **kw), 100 if quick else 300)
    ours = DistributedModel()
    w, f = catalog.workload("Llama3_70B"), catalog.fleet("Research_256")
    ours.solve(w, f, **kw)
    t_sc = per_call(lambda: ours.solve(w, f, **kw), 5000 if quick else 20000)
    rows.append(("DistributedModel().solve, one configuration", t_ml, t_sc))
    extended = DistributedModel(fidelity="extended")
    ext_kw = dict(kw, cp_size=2, sequence_parallel=True)
    extended.solve(w, f, **ext_kw)
    t_ext = per_call(lambda: extended.solve(w, f, **ext_kw), 5000 if quick else 20000)
    rows.append(("DistributedModel(fidelity='extended').solve, cp 2 + SP (mlsysim: its own model)", t_ml, t_ext))

    rng = np.random.default_rng(0)
    for n in ((10**5,) if quick else (10**5, 10**6)):
        cols = dict(tp_size=rng.choice([1, 2, 4, 8], n), pp_size=rng.choice([1, 2, 4, 8], n),
                    batch_size=rng.integers(1, 4096, n), microbatch_count=rng.choice([1, 2, 4, 8, 16], n),
                    efficiency=rng.uniform(0.2, 0.9, n), zero_stage=rng.integers(0, 4, n),
                    overlap_comm=rng.random(n) < 0.5, seq_len=rng.choice([1024, 2048, 4096], n))
        for outputs, label in ((None, "all 27 outputs"), (("mfu",), "fleet MFU")):
            sweep(w, f, grid=False, outputs=outputs, **cols)
            t = per_call(lambda: sweep(w, f, grid=False, outputs=outputs, **cols), 1, 3) / n
            rows.append((f"flattened sweep of {n:,} random configurations, {label}", t_ml, t))
        # the same, with mlsysim's own objects as model and fleet (converted on every call)
        both = ("mfu", "step_latency_total")
        sweep(M, F, grid=False, outputs=both, **cols)
        t = per_call(lambda: sweep(M, F, grid=False, outputs=both, **cols), 1, 3) / n
        rows.append((f"flattened sweep of {n:,} random configurations, MFU + step time, mlsysim objects", t_ml, t))

    grid = dict(batch_size=np.arange(1, 513), tp_size=[1, 2, 4, 8], pp_size=[1, 2, 4, 8],
                microbatch_count=[1, 2, 4, 8, 16, 32], efficiency=np.linspace(0.1, 1, 50))
    size = 512 * 4 * 4 * 6 * 50
    for outputs, label in ((None, "all 27 outputs"), (("mfu",), "fleet MFU")):
        sweep(w, f, outputs=outputs, **grid)
        t = per_call(lambda: sweep(w, f, outputs=outputs, **grid), 1, 3) / size
        rows.append((f"broadcast grid of {size:,} configurations, {label}", t_ml, t))

    po = mlsysim.solvers.ParallelismOptimizer()
    t_po = per_call(lambda: po.solve(M, F, batch_size=256), 2 if quick else 5)
    n_po = sum(1 for tp in (1, 2, 4, 8) for pp in (1, 2, 4, 8, 16, 32, 64, 128, 256) if tp * pp <= 256)
    search(w, f, 256)
    t_s = per_call(lambda: search(w, f, 256), 10, 5)
    n_s = search(w, f, 256).searched
    rows.append((f"search per candidate (ParallelismOptimizer: {n_po} splits; ours: {n_s:,} configurations)",
                 t_po / n_po, t_s / n_s))
    for cp, label in ((2, "cp 2"), ([1, 2, 4, 8], "cp 1-8 an axis")):
        ext = dict(fidelity="extended", cp_size=cp)
        try:
            n_se = search(w, f, 256, **ext).searched
        except (TypeError, ValueError) as exc:     # an older tree refuses a list of cp_size
            print(f"extended search, {label}: {exc}")
            continue
        t_se = per_call(lambda: search(w, f, 256, **ext), 10, 5)
        rows.append((f"extended search per candidate, {label} ({n_se:,} configurations)", t_po / n_po,
                     t_se / n_se))
    t_po_mirror = per_call(lambda: ParallelismOptimizer().solve(w, f, batch_size=256), 20)
    rows.append(("ParallelismOptimizer().solve, whole call (our mirror)", t_po, t_po_mirror))
    big = catalog.fleet("Meta_Llama3_16K_H100")
    search(w, big, 4096)
    t_big = per_call(lambda: search(w, big, 4096), 5, 5)
    n_big = search(w, big, 4096).searched

    code_ours = ("import mlsysim_sym; mlsysim_sym.DistributedModel().solve('Llama3_70B', 'Research_256', "
                 "batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)")
    rows.append(("cold process: import + first answer", cold("import mlsysim"), cold(code_ours)))

    print(f"machine: {machine()}")
    print(f"{'what':<82} {'mlsysim':>12} {'mlsysim-sym':>12} {'ratio':>9}")
    for what, a, b in rows:
        print(f"{what:<82} {fmt(a):>12} {fmt(b):>12} {a / b:>8.0f}x")
    print(f"full search on Meta_Llama3_16K_H100 (16,384 GPUs, {n_big:,} configurations): {fmt(t_big)}")
    print(f"extended solve / mlsysim-model solve, both ours: {t_ext / t_sc:.2f}")
    if not quick:
        print(big_grid())
    print("(mlsysim column of the cold-process row: `python -c 'import mlsysim'` alone)")
    return 0


def big_grid() -> str:
    """A broadcast grid of 9.6 x 10^7 configurations (fleet MFU), in a fresh process: time and peak memory."""
    code = ("import time, resource, numpy as np; from mlsysim_sym import sweep; t = time.perf_counter(); "
            "r = sweep('Llama3_70B', 'Research_256', outputs=('mfu',), batch_size=np.arange(1, 1001), "
            "tp_size=[1, 2, 4, 8], pp_size=[1, 2, 4, 8], microbatch_count=[1, 2, 4, 8, 16, 32], "
            "efficiency=np.linspace(0.1, 1, 1000)); dt = time.perf_counter() - t; "
            "print(f'{dt:.2f} s, peak memory {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f} GB')")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.strip()
    return f"broadcast grid of 96,000,000 configurations, fleet MFU (fresh process, one call): {out}"


def fmt(t: float) -> str:
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


if __name__ == "__main__":
    sys.exit(main())
