#!/usr/bin/env python
"""Write mlsysim_sym/data/catalog.json from the installed mlsysim (0.3.0).

    python tools/export_catalog.py [--output PATH] [--check]

Exports every registry object DistributedModel can use: all ``mlsysim.Models``
workloads (Language, Vision, GenerativeVision, Recommendation, StateSpace, Tiny,
Embodied) and all ``mlsysim.Systems.Clusters`` fleets, with their nodes, fabrics and
accelerators. The conversion is :func:`mlsysim_sym.catalog.from_mlsysim`; the JSON
layout is :func:`mlsysim_sym.catalog.build_catalog`. ``--check`` compares with the
existing file instead of writing it (exit status 1 on a difference).
"""
from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mlsysim_sym.catalog import build_catalog, convert_hardware, from_mlsysim, mlsysim_registry  # noqa: E402

DEFAULT_OUTPUT = ROOT / "mlsysim_sym" / "data" / "catalog.json"


def export() -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # mlsysim warns on import about optional extras
        import mlsysim

        reg = mlsysim_registry()
        workloads = {k: (cat, from_mlsysim(obj)) for k, (cat, obj) in reg["workloads"].items()}
        fleets = {k: from_mlsysim(obj) for k, obj in reg["fleets"].items()}
        hardware = {k: convert_hardware(obj) for k, obj in reg["hardware"].items()}
    source = {"package": "mlsysim", "version": getattr(mlsysim, "__version__", "unknown")}
    return build_catalog(workloads, fleets, source=source, hardware=hardware)


def dumps(catalog: dict) -> str:
    # json writes floats with repr(): the shortest string that reads back to the same float.
    return json.dumps(catalog, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    ap.add_argument("--check", action="store_true", help="compare with the existing file, do not write")
    args = ap.parse_args(argv)

    text = dumps(export())
    if args.check:
        old = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if old != text:
            print(f"{args.output} differs from the installed mlsysim registry", file=sys.stderr)
            return 1
        print(f"{args.output} is up to date")
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    cat = json.loads(text)
    print(
        f"wrote {args.output}: {len(cat['workloads'])} workloads, {len(cat['fleets'])} fleets, "
        f"{len(cat['accelerators'])} accelerators, {len(cat['nodes'])} nodes, {len(cat['fabrics'])} fabrics"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
