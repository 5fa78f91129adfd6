"""Fuzz: random valid and invalid solve() inputs, ours against mlsysim 0.3.0.

Every input lands in one of three outcomes, and nothing else is allowed:

* ``same``: both return equal numbers (rel. 1e-12), or both raise the same exception with the same message.
* ``we_reject_nonfinite``: mlsysim computes with a NaN or inf argument (returning NaN, or finite numbers
  where the value happens to cancel) and we raise ``ValueError("<argument> must be finite, got nan")``.
* ``we_reject_text_switch``: a switch is given as text or several values (``overlap_comm="2"``, ``[2]``), which mlsysim
  reads for its truth, and we raise ``TypeError("<switch> must be a bool (True or False, or 1 or 0), got str '2'")``
  (``got list [2]; ...``).
* ``mlsysim_internal_error``: mlsysim fails inside its own arithmetic (pint, pydantic, ``math.ceil``),
  not in one of its checks, and we raise a clear error that names the argument (or one of mlsysim's
  own check messages, when our checks run in a different order than its arithmetic).

CI runs ``MLSYSIM_SYM_FUZZ`` (default 10,000) inputs with a fixed seed; run 10^5 locally with
``MLSYSIM_SYM_FUZZ=100000 MLSYSIM_SYM_FUZZ_SEED=7 python -m pytest tests/test_fuzz.py``.
"""
import math
import os
import random
import warnings
from collections import Counter

import pytest

pytest.importorskip("mlsysim")
import mlsysim_oracle as oracle  # noqa: E402
from fuzz_inputs import VALID, draw  # noqa: E402

N = int(os.environ.get("MLSYSIM_SYM_FUZZ", "10000"))
SEED = int(os.environ.get("MLSYSIM_SYM_FUZZ_SEED", "2026"))

#: mlsysim's own check messages (docs/contract.md §5); when mlsysim raises one of these we must match it exactly.
MLSYSIM_CHECKS = ("must be >= ", "must be in [", "Infeasible 4D Parallelism", "precision must be a string",
                  "Supported precision values", "zero_stage must be 0, 1, 2, or 3", "must be positive, got",
                  "must be non-negative, got", "Workload must define either")
ARGUMENTS = tuple(VALID) + ("precision",)
SWITCHES = ("is_lora", "activation_recomputation", "overlap_comm")


def classify(both):
    ours, theirs = both["ours"], both["mlsysim"]
    if not oracle.diff_outcomes(both):
        return "same"
    e_ours, e_theirs = ours["exception"], theirs["exception"]
    if e_ours and e_ours[0] == "ValueError" and " must be finite, got " in e_ours[1] and not (
            e_theirs and any(c in e_theirs[1] for c in MLSYSIM_CHECKS)):
        return "we_reject_nonfinite"
    if e_ours and e_ours[0] == "TypeError" and e_ours[1].split()[0] in SWITCHES and \
            " must be a bool (True or False, or 1 or 0), got " in e_ours[1] and \
            (" got str " in e_ours[1] or e_ours[1].endswith("one configuration takes one value (a sweep takes a "
                                                          "list)")):
        return "we_reject_text_switch"
    if e_theirs and e_ours and not any(c in e_theirs[1] for c in MLSYSIM_CHECKS) and (
            any(a in e_ours[1] for a in ARGUMENTS) or any(c in e_ours[1] for c in MLSYSIM_CHECKS)):
        return "mlsysim_internal_error"
    return "mismatch"


def test_fuzz_against_mlsysim():
    rng = random.Random(SEED)
    counts = Counter()
    mismatches = []
    for _ in range(N):
        model, fleet, kw = draw(rng)
        both = oracle.call_both(model, fleet, **kw)
        kind = classify(both)
        counts[kind] += 1
        if kind == "mismatch" and len(mismatches) < 10:
            mismatches.append(oracle.describe(model, fleet, kw) + "\n" + "\n".join(oracle.diff_outcomes(both)))
    print(dict(counts))
    assert not mismatches, "\n\n".join(mismatches)
    assert counts["same"] > 0.7 * N and sum(counts.values()) == N


def test_our_results_are_finite_whenever_we_return_one():
    from mlsysim_sym import DistributedModel

    rng = random.Random(SEED + 1)
    returned = 0
    for _ in range(2000):
        model, fleet, kw = draw(rng)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")          # batch below dp, precision fallback
                r = DistributedModel().solve(model, fleet, **kw)
        except (ValueError, TypeError, ZeroDivisionError, NotImplementedError):
            continue
        returned += 1
        values = [v for v in r.values if isinstance(v, float)]
        assert all(math.isfinite(v) for v in values), (model, fleet, kw)
    assert returned > 300          # most draws carry an odd argument; enough are valid


def _outcome(call):
    """``(result or exception text, warning texts)`` of ``call()``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = call()
        except Exception as exc:  # noqa: BLE001 - the outcome is compared, whatever it is
            out = f"{type(exc).__name__}: {exc}"
    return out, [str(c.message) for c in caught]


def test_the_compiled_checks_agree_with_the_walk_of_the_table(monkeypatch):
    """parameters_of() and sensitivities() check a configuration by one compiled call when every
    argument is a plain number; the walk of the rules in order must say the same (errors, warnings,
    values) on the same random inputs."""
    from mlsysim_sym import checks, parameters_of

    rng = random.Random(SEED + 2)
    draws = [draw(rng) for _ in range(1500)]
    fast = [_outcome(lambda: parameters_of(m, f, **kw)) for m, f, kw in draws]
    monkeypatch.setattr(checks, "_verdict", lambda compiled, values: None)
    walked = [_outcome(lambda: parameters_of(m, f, **kw)) for m, f, kw in draws]
    assert fast == walked
    returned = [o for o, _ in fast if not isinstance(o, str)]
    assert len(returned) > 200 and len(returned) < len(draws)    # both kinds of outcome are covered


def test_numpy_fixed_width_integers_are_priced_as_python_ints_where_mlsysim_wraps_around():
    # docs/contract.md section 9's third exception. 4096 sequences of 8192 tokens: mlsysim multiplies the
    # int32 arguments in int32 (numpy warns that it overflows) and prices a smaller step; we price the call
    # with int arguments
    import numpy as np
    from mlsysim_sym import DistributedModel
    kw = dict(batch_size=4096, tp_size=8, seq_len=8192)
    ours = DistributedModel().solve("Llama3_70B", "Research_256", **kw)
    narrow = DistributedModel().solve("Llama3_70B", "Research_256", **{k: np.int32(v) for k, v in kw.items()})
    assert narrow.step_latency_total == ours.step_latency_total and narrow.mfu == ours.mfu
    theirs = oracle.mlsysim_solve("Llama3_70B", "Research_256", **kw)
    assert oracle.rel_err(ours.step_latency_total, theirs["step_latency_total"]) <= 1e-12
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # numpy's overflow warning, inside mlsysim
        wrapped = oracle.mlsysim_solve("Llama3_70B", "Research_256", batch_size=np.int32(4096), tp_size=8,
                                       seq_len=np.int32(8192))
    assert wrapped["step_latency_total"] < 0.9 * ours.step_latency_total
