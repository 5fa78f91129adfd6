"""Write the pre-generated scalar code of solve() (its outputs and its checks) into mlsysim_sym/_generated/.

Run after changing an expression: ``python tools/generate_code.py``. A test fails when the
shipped files differ from a fresh generation.
"""
from __future__ import annotations

import sys
from pathlib import Path

from mlsysim_sym._shipped import module_name
from mlsysim_sym.checks import generated_rules_source
from mlsysim_sym.compile import compile_quantities, generated_source
from mlsysim_sym.mechanisms import FIDELITIES, ModelChoice
from mlsysim_sym.model import Variant
from mlsysim_sym.solver import solve_quantities

#: The structures of the bundled catalog (transformers, other workloads, DLRM's explicit weights), in each
#: model (mlsysim's and the extended one, every mechanism on).
STRUCTURES = (Variant("transformer"), Variant("generic"), Variant("generic", explicit_weights=True))
VARIANTS = tuple(v.of(ModelChoice(f)) for f in FIDELITIES for v in STRUCTURES)
OUT = Path(__file__).resolve().parents[1] / "mlsysim_sym" / "_generated"


def expected() -> dict:
    files = {"__init__.py": '"""Pre-generated scalar code of solve(); see tools/generate_code.py."""\n'}
    for v in VARIANTS:
        names = solve_quantities(v)
        files[module_name(v) + ".py"] = generated_source(v, names)
        args = compile_quantities(v, names, "math").args
        files[module_name(v, kind="rules") + ".py"] = generated_rules_source(v, args)
    return files


def main(argv=None) -> int:
    check = "--check" in (argv if argv is not None else sys.argv[1:])
    stale = []
    for name, text in expected().items():
        path = OUT / name
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        print("stale generated code:", ", ".join(stale), "(run python tools/generate_code.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
