"""Which schedules a training framework can run: the rules :func:`mlsysim_sym.search` applies by default, and
:func:`mlsysim_sym.required` holds its whole-number answers to.

mlsysim's formula prices any ``(pp, dp, m, v)``; a framework runs only some (:func:`can_run`).
"""
from __future__ import annotations

from typing import List, Optional


#: The rules of :func:`can_run` in a sentence, as the messages that say a schedule does not run give them (all of
#: them: a note that named two sent a reader to the batch where the layers per virtual stage failed).
RULES = ("see can_run(): the batch splits evenly over the replicas, a replica's samples over the microbatches and "
         "gradient-accumulation steps, every stage holds a layer and, interleaved, every virtual stage as many (the "
         "embedding and the loss may count as a layer each) and the microbatches come in whole rounds of the "
         "pipeline")


def can_run(pp, dp, m, v, batch_size, *, gradient_accumulation_steps=1,
            layers: Optional[int] = None, unpiped_microbatches: bool = False):
    """Whether a training framework can run the schedule: the rules :func:`search` applies by default.

    mlsysim's formula prices any ``(pp, dp, m, v)``; a framework runs only some. Arrays broadcast
    (one boolean per configuration); scalars give a ``bool``. With ``B = batch_size``,
    ``GA = gradient_accumulation_steps`` and ``q = B / (dp * GA)`` the samples one replica takes
    in one accumulation step (mlsysim gives each replica ``floor(B / dp)`` samples, spreads them
    over the ``GA`` steps and, in 1F1B memory, over the ``m`` microbatches of a step;
    docs/contract.md §2.1, §2.4):

    1. **The batch splits evenly** over the replicas and the accumulation steps:
       ``B % (dp * GA) == 0``. (mlsysim silently drops the remainder of ``B / dp``, so it would
       price ``dp * floor(B / dp)`` samples, not the batch asked for.)
    2. **Equal microbatches** (pipelined splits, ``pp > 1``): the ``q`` samples of a step are cut
       into ``m`` equal microbatches of at least one sample: ``m <= q`` and ``q % m == 0``.
    3. **A layer per stage** (``pp > 1``): ``layers >= pp``. Stages may hold unequal layer counts
       (mlsysim charges ``ceil(layers / pp)``).
    4. **Interleaved 1F1B** (``pp > 1`` and ``v > 1``): each of the ``pp * v`` model chunks holds
       the same whole number of layers, where the embedding and the loss may each count as one
       (Megatron-Core's ``account_for_embedding_in_pipeline_split`` and
       ``account_for_loss_in_pipeline_split``, which NVIDIA's Llama 3.1 405B runs in
       docs/modern_runs.md set: 126 + 2 = 128 layers over 8 x 8 chunks, and over 16 x 8, the first chunk
       holding the embedding alone and the last the loss), ``(layers + e) % (pp * v) == 0`` for ``e``
       in 0, 1, 2; the microbatches come in whole rounds of the pipeline, ``m % pp == 0`` ("this
       schedule requires the number of microbatches in a batch to be an integer multiple of the degree
       of pipeline parallelism"; Narayanan et al. 2021, "Efficient Large-Scale Language Model Training
       on GPU Clusters Using Megatron-LM", SC'21, §2.2.2). A split
       by a layout of the user's own (Megatron-Core's ``pipeline_model_parallel_layout``, DeepSeek-V3's
       61 layers) is not among these rules.

    Without a pipeline (``pp == 1``) ``m`` and ``v`` change nothing in mlsysim's model (no bubble, one
    microbatch in flight) and rules 2 to 4 do not apply; ``unpiped_microbatches``: the model reads ``m`` without
    a pipeline too (the extended model's transformers, which pay a step's layer passes per microbatch), and rule 2
    holds there as well, as the extended model's warning says (``microbatch_count x gradient_accumulation_steps >
    the samples a replica trains``). ``layers=None`` (workloads without a
    layer count: diffusion, plain ``Workload``, CNN or embodied records that leave it unset)
    skips rule 3 and the layer half of rule 4; ``m % pp == 0`` still holds. The records carry no
    attention-head or expert counts, so whether ``tp`` divides the heads or ``ep`` the experts is
    not checked.

    >>> can_run(pp=16, dp=8, m=128, v=4, batch_size=256, layers=80)   # 32 samples, 128 microbatches
    False
    >>> can_run(pp=16, dp=8, m=32, v=4, batch_size=256, layers=80)    # 80 layers over 64 chunks
    False
    >>> can_run(pp=16, dp=8, m=32, v=5, batch_size=256, layers=80)
    True
    >>> can_run(pp=8, dp=2, m=16, v=[8, 4, 3, 16], batch_size=256, layers=126).tolist()  # 128 over 64, 32, 24, 128
    [True, True, False, True]
    >>> can_run(pp=[1, 4, 4], dp=8, m=[64, 16, 6], v=1, batch_size=256, layers=80).tolist()
    [True, True, False]
    >>> can_run(pp=8, dp=8, m=[8, 4], v=2, batch_size=64).tolist()   # no layer count: m % pp only
    [True, False]
    >>> can_run(pp=1, dp=48, m=1, v=1, batch_size=256)                 # 256 samples over 48 replicas
    False
    >>> can_run(pp=1, dp=512, m=16, v=1, batch_size=1024, unpiped_microbatches=True)   # 16 microbatches of 2
    False
    """
    ok = None
    for holds, _ in _rules(pp, dp, m, v, batch_size, gradient_accumulation_steps, layers, unpiped_microbatches):
        ok = holds if ok is None else ok & holds
    return bool(ok) if ok.ndim == 0 else ok


def broken_schedule_rules(pp, dp, m, v, batch_size, *, gradient_accumulation_steps=1,
                          layers: Optional[int] = None, unpiped_microbatches: bool = False) -> List[str]:
    """The rules of :func:`can_run` one schedule (scalars) breaks, each as a clause that follows "can_run() asks
    that", with its numbers (empty when it runs): the note below a result names them.

    >>> broken_schedule_rules(pp=8, dp=4, m=4, v=4, batch_size=256, layers=126)
    ['the microbatches of an interleaved schedule come in whole rounds of the pipeline (m 4, pp 8)']
    >>> for rule in broken_schedule_rules(pp=16, dp=8, m=3, v=3, batch_size=256, layers=126):
    ...     print(rule)
    the microbatches split the 32 samples of a replica evenly (m 3)
    the microbatches of an interleaved schedule come in whole rounds of the pipeline (m 3, pp 16)
    the 48 virtual stages hold equal layers (126 layers, 127 or 128 with the embedding and the loss)
    >>> broken_schedule_rules(pp=8, dp=4, m=8, v=32, batch_size=256, layers=126)
    ['the 256 virtual stages hold equal layers (126 layers, 127 or 128 with the embedding and the loss)']
    >>> broken_schedule_rules(pp=2, dp=8, m=2, v=1, batch_size=8)
    ['the microbatches split the 1 sample of a replica evenly (m 2)']
    >>> broken_schedule_rules(pp=2, dp=16, m=1, v=1, batch_size=8)[1]
    'the microbatches get a sample each (m 1; a replica gets none of the batch 8)'
    """
    args = (pp, dp, m, v, batch_size, gradient_accumulation_steps, layers)
    if any(x is not None and getattr(x, "ndim", 0) != 0 or isinstance(x, (list, tuple)) for x in args):
        raise TypeError("broken_schedule_rules() takes one schedule (scalars); can_run() takes arrays")
    return [words for holds, words in _rules(pp, dp, m, v, batch_size, gradient_accumulation_steps, layers,
                                             unpiped_microbatches, True) if not bool(holds)]


def _rules(pp, dp, m, v, batch_size, gradient_accumulation_steps, layers, unpiped_microbatches, words=False):
    """:func:`can_run`'s rules in order: (whether it holds, elementwise; with ``words``, a scalar schedule's
    clause for the note, else "")."""
    import numpy as np      # here: the package imports this module, and numpy is imported on first use

    pp, dp, m, v = (np.asarray(x, dtype=np.int64) for x in (pp, dp, m, v))
    B = np.asarray(batch_size).astype(np.int64)         # one batch, or a sweep's
    ga = np.maximum(1, np.asarray(gradient_accumulation_steps).astype(np.int64))
    share = np.maximum(dp * ga, 1)
    q = B // share
    piped = pp > 1
    split = piped | bool(unpiped_microbatches)
    interleaved = piped & (v > 1)
    say = (lambda f: f()) if words else (lambda f: "")
    per = "a replica's accumulation step" if words and ga > 1 else "a replica"
    yield ((dp >= 1) & (B % share == 0),
           say(lambda: f"the batch {B} split evenly over the {dp} replicas"
                       + (f" and {ga} accumulation steps" if ga > 1 else "")))
    yield (~split | ((m >= 1) & (m <= q) & (q % np.maximum(m, 1) == 0)),
           say(lambda: f"the microbatches split the {q} {'sample' if q == 1 else 'samples'} of {per} evenly (m {m})"
               if q > 0 else f"the microbatches get a sample each (m {m}; {per} gets none of the batch {B})"))
    yield (~interleaved | (m % np.maximum(pp, 1) == 0),
           say(lambda: f"the microbatches of an interleaved schedule come in whole rounds of the pipeline "
                       f"(m {m}, pp {pp})"))
    if layers is not None:
        layers = np.asarray(layers).astype(np.int64)
        yield (~piped | (layers >= pp), say(lambda: f"the {pp} stages hold a layer each ({layers} layers)"))
        chunks = np.maximum(pp * v, 1)
        even = (layers % chunks == 0) | ((layers + 1) % chunks == 0) | ((layers + 2) % chunks == 0)
        yield (~interleaved | even,
               say(lambda: f"the {chunks} virtual stages hold equal layers ({layers} layers, {layers + 1} or "
                           f"{layers + 2} with the embedding and the loss)"))


def largest_runnable(name: str, batch_size: int, accelerators: int, accelerators_per_node: int, replica: int,
                     gradient_accumulation_steps: int = 1) -> float:
    """The largest value of the whole-number input ``name`` at which a schedule can still run (:func:`can_run`),
    the rest of the configuration held: microbatches and accumulation steps at most the batch, degrees that
    split the fleet at most its accelerators, nodes at most as many as give one replica per sample
    (``replica``: the accelerators of one replica). Unbounded (``inf``) for the other inputs.

    >>> largest_runnable("microbatch_count", 256, 256, 8, 32), largest_runnable("count", 256, 256, 8, 32)
    (256, 1024)
    """
    if name in ("microbatch_count", "gradient_accumulation_steps"):
        return batch_size
    if name in ("tp_size", "pp_size", "ep_size", "cp_size"):
        return accelerators
    if name == "count":
        # dp * GA <= B: nodes * accelerators_per_node <= B * replica / GA
        return -(-batch_size * replica // (max(1, gradient_accumulation_steps) * accelerators_per_node))
    return float("inf")
