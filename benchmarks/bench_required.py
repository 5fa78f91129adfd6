"""Timings of ``required()`` on random questions (a script that prints, not a test).

    python benchmarks/bench_required.py                  # 125 questions, seed 0
    python benchmarks/bench_required.py -n 40 --seed 3   # another draw
    python benchmarks/bench_required.py --save out.json  # also the answers, to compare two trees

A question is drawn by :func:`questions` (seeded, reproducible): a catalog model and fleet, a configuration
``solve()`` accepts, an output ``required()`` reads (an alias or a ``solve()`` result field), an input it
solves for (a ``solve()`` argument or record field with a value, one that enters this model) and a target,
the output now times a factor (0 among them, and factors no input reaches).

Three passes in one process: *cold*, each question the first time it is asked; *warm*, the same questions
again; *moved*, each question with its target moved by 0.1 % (other numbers, same regime: what a user
iterating on one question pays). Each is printed as median, p90, max and how many take over 5 s (wall clock,
and this process's CPU time, which a busy machine inflates less), with one
mlsysim 0.3.0 ``DistributedModel().solve`` timed in the same run for scale. The goal (issue 23): warm
median under 50 ms, no question over 2 s. A question is given up after ``--limit`` seconds (counted as that).
"""
from __future__ import annotations

import argparse
import json
import math
import random
import signal
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MODELS = ("Llama3_70B", "Llama3_8B", "Mixtral_8x7B", "GPT3", "BERT_Base", "OPT_13B", "DeepSeek_V3",
          "ResNet50", "Mamba_130M", "DLRM", "ViT_Large", "Llama2_13B")
FLEETS = ("Research_256", "Lab_64_H100", "Lab_64_A100", "Training_1K", "Training_1K_A100", "Kempner_H100_384",
          "Mega_100K", "Production_2K")
#: Target = the output now times one of these (1 is dropped: it is met where it stands).
FACTORS = (0.0, 0.25, 0.5, 0.8, 0.95, 0.99, 1.01, 1.05, 1.25, 2.0, 10.0)


def _outputs():
    from mlsysim_sym.outputs import ALIASES, OUTPUTS
    # the booleans of the node profile are no target a number reaches
    flags = ("node_profile.feasible", "node_profile.memory_bound", "node_profile.overhead_dominated")
    return tuple(ALIASES) + tuple(f for f in OUTPUTS if f not in flags)


def _inputs():
    from mlsysim_sym.symbols import Kind, by_argument
    return {k: p.symbol for k, p in by_argument().items() if p.kind in (Kind.COUNT, Kind.REAL)}


def _configuration(rng: random.Random):
    kw = dict(batch_size=rng.choice([32, 64, 256, 512, 1024, 2048]), tp_size=rng.choice([1, 1, 2, 4, 8]),
              pp_size=rng.choice([1, 1, 2, 4]), precision=rng.choice(["fp16", "bf16", "fp8"]))
    if kw["pp_size"] > 1:
        kw["microbatch_count"] = rng.choice([1, 2, 4, 8, 16])
    for name, values in (("zero_stage", [0, 1, 2, 3]), ("overlap_comm", [False, True]),
                         ("activation_recomputation", [False, True]), ("ep_size", [1, 2, 4]),
                         ("efficiency", [0.3, 0.5, 0.7]), ("gradient_accumulation_steps", [1, 2, 4]),
                         ("seq_len", [1024, 2048, 8192])):
        if rng.random() < 0.3:
            kw[name] = rng.choice(values)
    return kw


def questions(n: int = 125, seed: int = 0):
    """``n`` random questions ``(output, target, solve_for, model, fleet, kwargs)`` (seeded): the configuration
    is one ``solve()`` accepts (redrawn until it does), the target the output now times a factor of
    :data:`FACTORS`."""
    from mlsysim_sym.operating_point import operating_point_of
    from mlsysim_sym.sensitivity.point import quantity_name
    outputs, inputs = _outputs(), _inputs()
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        model, fleet, kw = rng.choice(MODELS), rng.choice(FLEETS), _configuration(rng)
        output, factor = rng.choice(outputs), rng.choice(FACTORS)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                point = operating_point_of(model, fleet, **kw)
            now = float(point.value(quantity_name(output, point.model.variant)))
        except (ValueError, TypeError, ZeroDivisionError, KeyError):
            continue
        # an input of this model (one it lacks is refused at once: no question to time)
        solve_for = rng.choice([x for x in inputs if inputs[x] in point.params])
        if not math.isfinite(now):
            continue
        out.append((output, float(f"{now * factor:.6g}"), solve_for, model, fleet, kw))
    return out


class _Late(Exception):
    pass


def _alarm(signum, frame):
    raise _Late()


def ask(q, limit: float):
    """``(seconds, CPU seconds, answer as a dict or the error's words)``; a question past ``limit`` seconds (wall
    clock) is given up."""
    from mlsysim_sym import required
    output, target, solve_for, model, fleet, kw = q
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    t, c = time.perf_counter(), time.process_time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = required(output, target, solve_for, model, fleet, **kw)
        got = {k: r.to_dict()[k] for k in ("value", "integer", "achieved", "reason")}
    except _Late:
        return limit, time.process_time() - c, {"error": f"given up after {limit:g} s"}
    except (ValueError, TypeError) as exc:
        got = {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return time.perf_counter() - t, time.process_time() - c, got


def summary(ts) -> str:
    ts = sorted(ts)
    p90 = ts[min(len(ts) - 1, math.ceil(0.9 * len(ts)) - 1)]
    return (f"median {_fmt(statistics.median(ts))}, p90 {_fmt(p90)}, max {_fmt(ts[-1])}, "
            f"over 5 s: {sum(t > 5 for t in ts)}, over 2 s: {sum(t > 2 for t in ts)} of {len(ts)}")


def _fmt(t: float) -> str:
    return f"{t * 1e3:.1f} ms" if t < 1 else f"{t:.2f} s"


def mlsysim_solve() -> float:
    """One mlsysim 0.3.0 ``DistributedModel().solve`` (Llama3_70B on Research_256), best of 3 x 100."""
    import mlsysim
    M, F = mlsysim.Models.Language.Llama3_70B, mlsysim.Systems.Clusters.Research_256
    theirs = mlsysim.solvers.DistributedModel()
    kw = dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
    best = math.inf
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(100):
            theirs.solve(M, F, **kw)
        best = min(best, (time.perf_counter() - t) / 100)
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=125, help="how many questions (default 125)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=float, default=60.0, help="seconds before a question is given up")
    parser.add_argument("--save", help="write every question and its answers (JSON) to this file")
    parser.add_argument("--cold-only", action="store_true", help="the cold pass only")
    parser.add_argument("-v", "--verbose", action="store_true", help="a line per question as it is answered")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    import mlsysim_sym  # noqa: F401
    print(f"import mlsysim_sym: {_fmt(time.perf_counter() - t0)}", flush=True)
    qs = questions(args.n, args.seed)
    t_ml = mlsysim_solve()
    print(f"one mlsysim DistributedModel().solve: {_fmt(t_ml)}")
    first = ("bubble_fraction", 0.05, "microbatch_count", "Llama3_70B", "Research_256",
             dict(batch_size=512, tp_size=8, pp_size=4, microbatch_count=8))
    dt, _, _ = ask(first, args.limit)
    print(f"first question in the process (builds the model and its compiled code; not counted below): "
          f"{_fmt(dt)}")
    passes = [("cold", qs)]
    if not args.cold_only:
        moved = [(o, t * 1.001 if t else 1e-9, x, m, f, kw) for o, t, x, m, f, kw in qs]
        passes += [("warm", qs), ("moved", moved)]
    record = []
    for name, batch in passes:
        times, cpu = [], []
        for i, q in enumerate(batch):
            dt, dc, got = ask(q, args.limit)
            times.append(dt)
            cpu.append(dc)
            record.append({"pass": name, "i": i, "question": list(q[:5]) + [q[5]], "seconds": dt, "cpu": dc,
                           "answer": got})
            if args.verbose:
                print(f"  {name} {i:3d} {_fmt(dt):>9} (CPU {_fmt(dc)})  {q[:5]}", flush=True)
        print(f"{name:5s} ({len(times)} questions): {summary(times)}; median / one mlsysim solve: "
              f"{statistics.median(times) / t_ml:.0f}x")
        print(f"      CPU time of this process: {summary(cpu)}")
        slow = sorted(range(len(times)), key=lambda i: -times[i])[:3]
        for i in slow:
            o, t, x, m, f, kw = batch[i]
            print(f"   {_fmt(times[i]):>9}  required({o!r}, {t:g}, {x!r}, {m!r}, {f!r}, **{kw})")
    if args.save:
        Path(args.save).write_text(json.dumps(record, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
