"""The split of the modern measured runs (``derivations/data/modern_runs.json``) into a training subset and
held-out runs, fixed before any constant of the extended model is fitted to them.

Rule: a run is in the training subset when the SHA-256 digest of its ``id`` (UTF-8), read as a big-endian
integer, is divisible by 3; every other run is held out. The rule reads nothing but the run's name, so adding or
removing runs never moves another run across the split, and no measured value or prediction can steer it.

>>> training("mb-2509-llama31-70b-h100-fp8-64"), training("tt-llama3-8b-h100-bf16-fsdp-8")
(False, True)
"""
from __future__ import annotations

import hashlib


def training(run_id: str) -> bool:
    """Whether the run named ``run_id`` is in the training subset (see the module docstring)."""
    return int.from_bytes(hashlib.sha256(run_id.encode("utf-8")).digest(), "big") % 3 == 0
