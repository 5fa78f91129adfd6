"""Command line: price one training step and print its breakdown.

    mlsysim-sym                                  # Llama-3.1-70B on Research_256, b256 tp8 pp4 m8
    mlsysim-sym --model Mixtral_8x7B --fleet Training_1K --batch-size 1024 --tp 2 --pp 1 --ep 4 --microbatches 1
"""
from __future__ import annotations

import argparse
import math
import sys
from typing import List, Optional

from . import catalog
from .solver import DistributedModel

DEFAULTS = dict(model="Llama3_70B", fleet="Research_256", batch_size=256, tp=8, pp=4, ep=1, microbatches=8)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mlsysim-sym", description=__doc__.split("\n\n")[0],
        epilog="The defaults are the bundled example (Llama3_70B on Research_256, batch 256, tp 8, pp 4, "
               "8 microbatches); with another --model or --fleet, set --tp/--pp/--ep/--microbatches too "
               "(1/1/1/1 are solve()'s own defaults).")
    p.add_argument("--model", default=DEFAULTS["model"], help="catalog workload (default %(default)s)")
    p.add_argument("--fleet", default=DEFAULTS["fleet"], help="catalog cluster (default %(default)s)")
    p.add_argument("--batch-size", type=int, default=DEFAULTS["batch_size"])
    p.add_argument("--precision", default="fp16")
    p.add_argument("--efficiency", type=_finite_float, default=0.5)
    p.add_argument("--tp", type=int, default=DEFAULTS["tp"], help="tensor-parallel degree")
    p.add_argument("--pp", type=int, default=DEFAULTS["pp"], help="pipeline-parallel degree")
    p.add_argument("--ep", type=int, default=DEFAULTS["ep"], help="expert-parallel degree")
    p.add_argument("--microbatches", type=int, default=DEFAULTS["microbatches"])
    p.add_argument("--v-stages", type=int, default=1)
    p.add_argument("--zero-stage", type=int, default=0)
    p.add_argument("--lora", action="store_true")
    p.add_argument("--recompute", action="store_true")
    p.add_argument("--overlap", action="store_true")
    p.add_argument("--gradient-accumulation", type=int, default=1)
    p.add_argument("--seq-len", type=int, default=2048)
    p.add_argument("--list", action="store_true", help="list the catalog's workloads and fleets")
    return p


def breakdown(r) -> List[str]:
    """Readable lines of a :class:`~mlsysim_sym.solver.DistributedResult`."""
    n = r.node_profile
    ms = lambda t: f"{t * 1e3:12.3f} ms"  # noqa: E731
    lines = [
        f"parallelism            {r.parallelism}",
        f"replica compute        {ms(n.latency_compute)}",
        f"replica memory         {ms(n.latency_memory)}",
        f"replica overhead       {ms(n.latency_overhead)}",
        f"replica step T_node    {ms(n.latency)}   ({n.bottleneck}-bound)",
        f"DP communication       {ms(r.dp_communication_latency)}",
        f"TP communication       {ms(r.tp_communication_latency)}",
        f"EP communication       {ms(r.ep_communication_latency)}",
        f"pipeline bubble        {ms(r.pipeline_bubble_latency)}   (fraction {r.bubble_fraction:.4f})",
        f"step time T_step       {ms(r.step_latency_total)}",
        f"scaling efficiency     {r.scaling_efficiency:12.4f}",
        f"MFU node / fleet       {n.mfu:12.4f} / {r.mfu:.4f}",
        f"memory / accelerator   {n.memory_footprint / 1e9:12.3f} GB   ({'fits' if n.feasible else 'DOES NOT FIT'})",
        f"throughput             {r.effective_throughput:12.3f} samples/s",
        f"energy per replica     {n.energy:12.1f} J",
    ]
    return lines


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    if args.list:
        print("workloads:", ", ".join(catalog.workload_names()))
        print("fleets:   ", ", ".join(catalog.fleet_names()))
        return 0
    try:
        r = DistributedModel().solve(
            args.model, args.fleet, batch_size=args.batch_size, precision=args.precision,
            efficiency=args.efficiency, tp_size=args.tp, pp_size=args.pp, ep_size=args.ep,
            v_stages=args.v_stages, microbatch_count=args.microbatches, zero_stage=args.zero_stage,
            is_lora=args.lora, activation_recomputation=args.recompute, overlap_comm=args.overlap,
            gradient_accumulation_steps=args.gradient_accumulation, seq_len=args.seq_len)
    except (ValueError, TypeError, KeyError) as exc:
        print(f"mlsysim-sym: error: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    split = f"tp {args.tp}, pp {args.pp}, ep {args.ep}, {args.microbatches} microbatches"
    print(f"{args.model} on {args.fleet}: batch {args.batch_size}, {split}, {args.precision}")
    print("\n".join(breakdown(r)))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
