"""The mechanisms of the extended model (``DistributedModel(fidelity="extended")``), by name.

Each is a named change to mlsysim 0.3.0's pricing of a step, with its source. Some are switched on by a
keyword of ``solve()`` (``Mechanism.switch``: ``cp_size``, ``tp_comm_overlap``, ...); the others are always on
in the extended model and act where their condition holds. ``DistributedModel(fidelity="extended",
without=("pipeline_p2p",))`` prices a step with the named mechanisms priced as mlsysim prices them; with
every mechanism named there, the extended model is mlsysim's (``tests/test_extended.py``).

Examples
--------
>>> from mlsysim_sym.mechanisms import MECHANISMS, always_on
>>> list(MECHANISMS)[:3]
['context_parallel', 'sequence_parallel', 'tp_overlap']
>>> always_on()[:2]
('gemm_shape', 'pipeline_p2p')
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, Optional, Tuple


@dataclass(frozen=True)
class Mechanism:
    """One mechanism: what it prices, where (``acts``), its switch keyword (None: always on), its source,
    and what mlsysim 0.3.0 does instead (what ``without=`` restores)."""

    name: str
    title: str
    acts: str
    switch: Optional[str]
    source: str
    mlsysim: str
    quantities: Tuple[str, ...] = ()     # the model quantities it adds (none: it changes existing ones)
    short: str = ""                      # its name in a table's column head ("CP", "P2P")
    needs: Tuple[str, ...] = ()          # the mechanisms it acts inside (off with them)


_M = Mechanism
#: Mechanism name -> its description, in the order the documents list them.
MECHANISMS: Dict[str, Mechanism] = {m.name: m for m in (
    _M("context_parallel", "context parallelism",
       "cp_size > 1: the step's work split over N_CP more ranks per replica (N_DP = N / (N_TP N_PP N_EP N_CP)), "
       "the sequence split for activations, and a key/value AllGather per layer per forward pass (again when "
       "recomputed) and a ReduceScatter of their gradients per layer in the backward pass; the gradient "
       "AllReduce and ZeRO sharding span N_DP N_CP ranks",
       "cp_size", "Liu et al. (2023), Ring Attention, sec. 3; Dubey et al. (2024), The Llama 3 Herd of Models, "
       "sec. 3.3.2 (all-gather based context parallelism)",
       "no context parallelism: cp_size folded into data parallelism", ('G_mp', 'M_kv', 'beta_cp', 'alpha_cp', 'T_cp_layer', 'T_cp_exchange', 'T_cp'), short="CP"),
    _M("sequence_parallel", "sequence parallelism",
       "tp_size > 1: with the switch on, each TP AllReduce is a ReduceScatter and an AllGather (the same time) "
       "and every activation is split by N_TP; with it off, the LayerNorm, dropout and residual activations "
       "(10 s b d of the selective 34, all of the full-recompute 2) are held whole on every TP rank",
       "sequence_parallel", "Korthikanti et al. (2022), Reducing Activation Recomputation in Large Transformer "
       "Models, sec. 4.2.2 and Table 2",
       "activation memory always split by N_TP (the sequence-parallel formula)", ('r_sp', 'K_act', 'beta_tp', 'alpha_tp', 'T_sp_pair', 'T_tp_layer'), short="SP"),
    _M("tp_overlap", "TP communication overlap",
       "tp_comm_overlap with tp_size > 1: the share eta_ov (overlap_efficiency) of the TP communication hidden "
       "behind the GEMMs",
       "tp_comm_overlap", "Wang et al. (2023), Overlap Communication with Dependent Computation via Decomposition "
       "(ASPLOS); NVIDIA Transformer Engine userbuffers (tp_comm_overlap in Megatron-Core)",
       "TP communication never overlapped", ('T_tp_exposed',), short="TP ov."),
    _M("gemm_shape", "GEMM-shape efficiency",
       "transformers, always: the achieved FLOP/s are R_peak eta f_GEMM with f_GEMM = d / (d + x_1/2), one fitted "
       "constant",
       None, "Narayanan et al. (2021), Table 1 (throughput per GPU rising with the hidden size); Korthikanti et al. "
       "(2022), sec. 4.1 (the elementwise work per layer, O(s b d) against the GEMMs' O(s b d^2))",
       "one efficiency for every GEMM shape", ('f_gemm',), short="GEMM"),
    _M("pipeline_p2p", "pipeline stage-to-stage sends",
       "transformers with pp_size > 1: two point-to-point sends (activation forward, gradient backward) of "
       "b s d s_elem / (N_CP N_TP) bytes per microbatch per virtual stage and per fill step, 2 (V m + N_PP - 1) on "
       "the critical path, on NVLink only when the whole job is in one node (beyond, some stage boundary crosses "
       "a node and gates the pipeline); a stage's send and receive buffers hold one such message each (split "
       "by N_TP as the send is), 2 b s d s_elem / (N_CP N_TP) with b = ceil(B_local / (k m)) samples",
       None, "Narayanan et al. (2021), sec. 3.2 and 4.1 (b s h per microbatch between stages; the scatter/gather "
       "optimization divides it by t); NVIDIA Megatron-LM, megatron/core/pipeline_parallel/p2p_communication.py "
       "(a send or receive tensor of one microbatch's shape; split by TP there only under sequence parallelism)",
       "no stage-to-stage sends; the send and receive buffers hold the activations of the microbatches in flight, "
       "2 B_held s d s_elem / N_CP", ('beta_pp', 'alpha_pp', 'n_p2p', 'T_p2p'), short="P2P"),
    _M("optimizer_step", "optimizer update",
       "transformers: the memory-bound Adam update of the parameters this accelerator updates (sharded over "
       "N_DP N_CP from ZeRO-1), b_update = 30 bytes per parameter",
       None, "Rajbhandari et al. (2020), ZeRO, sec. 3 (mixed-precision Adam states)", "no optimizer step", ('P_update', 'T_opt'), short="Opt."),
    _M("ga_once", "one gradient AllReduce per optimizer step",
       "gradient_accumulation_steps > 1: the step already prices the whole batch, so its one AllReduce is paid "
       "once, not divided by the accumulation steps",
       None, "Shoeybi et al. (2019), Megatron-LM; PyTorch DistributedDataParallel no_sync (gradients reduced "
       "once per accumulated batch)", "the AllReduce divided by the accumulation steps", short="GA"),
    _M("zero3_gather", "ZeRO-3 / FSDP gathers",
       "transformers with zero_stage 3: the gradients' ReduceScatter (half their AllReduce) once per step, and "
       "the whole weights' two AllGathers (forward, backward; one AllReduce's time of them) in every micro-step "
       "(each microbatch of each accumulation step): "
       "3/2 of the AllReduce without LoRA or accumulation, and the weights' full size under LoRA",
       None, "Rajbhandari et al. (2020), ZeRO, sec. 7.2.2 (1.5x the data-parallel volume); Zhao et al. (2023), "
       "PyTorch FSDP (parameters gathered again in every micro-step)", "ZeRO-3 communicates as plain data "
       "parallelism", ('M_weight_msg', 'T_dp_gather'), short="ZeRO-3"),
    _M("fsdp_pipeline", "ZeRO-3 / FSDP held gathered through a pipeline",
       "transformers with zero_stage 2 or 3 and pp_size > 1: each stage keeps its weights gathered through the "
       "step (gathered once), and with more than one microbatch its gradients unreduced until the last one, so "
       "its weight memory is ZeRO-2's and, with several microbatches, its gradient memory ZeRO-1's, unsharded "
       "over N_DP; the optimizer state stays sharded; and its data-parallel communication is ZeRO-1's and ZeRO-2's "
       "(one AllGather of the weights and one ReduceScatter of the gradients a step, an all-reduce's time), not "
       "ZeRO-3's gathers in every micro-step",
       None, "torchtitan, torchtitan/distributed/fsdp.py get_fsdp_reshard_after_forward_policy (under pipeline "
       "parallelism reshard_after_forward is off by default, 'to avoid per-microbatch all-gathers'); PyTorch "
       "torch.distributed.pipelining stage backward (set_reshard_after_backward(False) and "
       "set_requires_gradient_sync(False) until the last microbatch)",
       "the weights and gradients held sharded over N_DP through the step and gathered in every micro-step",
       ('z_held',), short="FSDP+PP"),
    _M("moe_per_layer", "MoE all-to-all per layer",
       "ep_size > 1: n_A2A = 4 AllToAlls (dispatch and combine, forward and backward) per MoE layer of the stage, "
       "each of the rank's own tokens (1 / N_EP of the replica's)",
       None, "Lepikhin et al. (2021), GShard, sec. 3; Fedus et al. (2022), Switch Transformer, sec. 2.2",
       "one AllToAll of the local batch per step", short="MoE"),
    _M("recompute_collectives", "collectives of the recomputed forward",
       "activation_recomputation: the recomputed forward pass repeats its TP AllReduces, MoE AllToAlls and CP "
       "gathers, half the per-step count again",
       None, "Korthikanti et al. (2022), sec. 5 (full recomputation re-runs the forward, its communication "
       "included)", "no communication in the recomputed forward", short="Rc. coll."),
    _M("attention_flops", "attention FLOPs of an architecture card",
       "workloads described by an architecture card (mlsysim_sym.architecture): the forward FLOPs per token add "
       "attention's scores and weighted sums, 2 N_heads (d_qk + d_v) per layer per key attended, S/2 keys when "
       "attention is causal, the window's on windowed layers, so they grow with the sequence; a record without a "
       "card has none",
       None, "Narayanan et al. (2021), Appendix (the 1 + s/(6h) attention term); Dao et al. (2022), "
       "FlashAttention (causal masking skips the upper triangle); NVIDIA Megatron-LM num_floating_point_operations",
       "forward FLOPs per token as the record gives them (the weights' products)", ("F_tok",), short="Att."),
    _M("card_activations", "activation memory of an architecture card",
       "workloads described by an architecture card: the activation values a layer keeps per token and hidden unit "
       "with selective recomputation are the card's (its heads, key/value heads, FFN width, gating and experts: "
       "K_layer of mlsysim_sym.shape), not 34; a record without a card keeps 34",
       None, "Korthikanti et al. (2022), sec. 4.1 (the 34 s b h of a multi-head layer with a 4h MLP, term by "
       "term); Dao et al. (2022), FlashAttention (no score matrix kept)", "34 values per token and hidden unit",
       (), short="Act."),
    _M("attention_kernels", "attention at its kernels' efficiency",
       "workloads described by an architecture card: attention's FLOPs (the scores and the weighted sums) run at "
       "eta_att (attention_efficiency) of the efficiency the weights' GEMMs reach: FlashAttention's kernels reach "
       "less of the peak than large GEMMs (their softmax, masking and the backward's recomputation of the scores), "
       "and each training stack runs its own kernels, so the share is its stack's (fitted per framework; the "
       "default is Megatron-Core's)",
       None, "Dao (2023), FlashAttention-2, sec. 4 (forward and backward throughput against the GEMM peak); Shah et "
       "al. (2024), FlashAttention-3, sec. 4.1 (H100); docs/modern_runs.md (the share fitted per framework)", "attention at the GEMMs' efficiency", (), short="Att. eff.",
       needs=("attention_flops",)),
    _M("pipeline_balance", "the output layer on the last stage",
       "workloads described by an architecture card, pp_size > 1: the last pipeline stage computes the output "
       "layer (2 V d FLOPs per token) besides its 1 / N_PP of the layers, and the pipeline runs at the pace of its "
       "slowest stage: the replica's compute times r_stage = 1 + (N_PP - 1) F_head / F_tok",
       None, "Narayanan et al. (2021), sec. 3.2 (the pipeline's throughput is its slowest stage's); NVIDIA "
       "Megatron-LM account_for_loss_in_pipeline_split (a layer moved off the last stage to balance the output "
       "layer)", "every stage the same work", ("r_stage",), short="PP bal."),
    _M("pass_overhead", "the fixed cost of every layer pass",
       "transformers, always: every pass of every microbatch through the accelerator's layers costs a fixed time "
       "besides its FLOPs, k_pass framework taxes t_layer per layer and forward-pass equivalent (n_pass = k_pass "
       "L_stage 3 m GA, 4 recomputed; k_pass fitted): the kernel launches and the gaps between kernels, and what "
       "else a pass costs whatever its microbatch's size (its collectives' latencies, FP8 scaling bookkeeping), "
       "where mlsysim charges 3 launches per layer once per step",
       None, "mlsysim DistributedModel (T_overhead: the dispatch tax and 3 kernel launches per layer per step); "
       "Nguyen et al. (2021), Accelerating PyTorch with CUDA Graphs, PyTorch blog (the launch overhead per kernel "
       "that idles the GPU between small kernels); docs/modern_runs.md (one layout measured at microbatches of 1 "
       "and 2)", "3 launches per layer, once per step", ("n_pass",), short="Pass"),
    _M("fp8_gemms", "FP8 GEMMs, the rest in 16-bit",
       "precision fp8 (elements narrower than 2 bytes): only the weights' matrix multiplications run at the FP8 "
       "rate, reaching eta_FP8 of the share of their peak that 16-bit GEMMs reach of theirs (R_GEMM = "
       "max(min(R_peak, R_16), eta_FP8 R_peak)); attention and the elementwise work of the GEMM-shape factor run "
       "at the 16-bit rate; weights, gradients, activations and messages keep 2-byte elements. At 2-byte or wider "
       "elements every rate is the precision's own peak (R_GEMM = R_peak, a peak_flops given included)",
       None, "Micikevicius et al. (2022), FP8 Formats for Deep Learning, sec. 4 (GEMM inputs in FP8; accumulation, "
       "master weights and the other operations in higher precision); NVIDIA Transformer Engine (fp8_autocast "
       "casts the inputs of its Linear layers; attention stays 16-bit unless asked)",
       "every FLOP at the precision's peak and every element at its bytes (1 for FP8)", ("R_gemm", "R_rest"),
       short="FP8"),
    _M("moe_layout", "MoE laid out as frameworks lay it out",
       "ep_size > 1: expert parallelism is carved out of a stage's tensor-, data- and context-parallel ranks "
       "(Megatron-Core's MoE parallel folding: a replica spans "
       "N_TP N_PP N_CP accelerators; N_EP N_ETP N_PP must divide N), the routed experts' weights are split over "
       "N_EP N_ETP N_PP ranks and their gradients reduced over the N / (N_EP N_ETP N_PP) expert-data-parallel "
       "ranks, the other weights over N_TP N_PP and the data-parallel ranks; each rank dispatches its 1 / N_TP of "
       "the replica's tokens, on NVLink when the N_EP N_ETP ranks of an expert group fit in a node (one NVLink "
       "domain: 72 accelerators on a GB200 NVL72); with N_ETP > 1 the ranks that split an expert's matrices "
       "all-gather its tokens before it and reduce-scatter its output after it, in each pass",
       None, "NVIDIA Megatron-LM, megatron/core/parallel_state.py initialize_model_parallel (expert groups "
       "etp-ep-dp-pp beside tp-cp-dp-pp) and megatron/core/transformer/moe/token_dispatcher.py "
       "(MoEAlltoAllTokenDispatcher: gather_from_sequence_parallel_region over the expert tensor-parallel group "
       "before the experts, reduce_scatter_to_sequence_parallel_region after them); Rajbhandari et al. (2022), "
       "DeepSpeed-MoE, sec. 5 (expert parallelism inside data parallelism, expert data parallelism); PyTorch "
       "torchtitan (EP borrowed from the data-parallel shard dimension)",
       "EP multiplies the accelerators beside data parallelism (a replica spans N_TP N_PP N_EP), every weight is "
       "split over N_TP N_PP N_EP, and the all-to-all crosses the fabric",
       ("G_exp", "dp_exp", "rpn_exp", "nodes_exp", "M_grad_exp", "T_dp_expert", "M_weight_exp", "T_dp_gather_exp",
        "beta_ep", "alpha_ep", "beta_etp", "alpha_etp", "M_etp", "T_etp_layer", "T_ep_layer"),
       short="MoE lay."),
    _M("fsdp_overlap", "ZeRO-3 / FSDP overlapped",
       "fsdp_overlap with zero_stage 3: the weights' AllGathers are prefetched during the compute of the layer "
       "before and the gradients' ReduceScatter overlaps the backward pass; exposed is what the replica's compute "
       "cannot cover, and at least one layer's share (the first gather, the last reduction)",
       "fsdp_overlap", "Zhao et al. (2023), PyTorch FSDP, sec. 3.3 (backward and forward prefetching); PyTorch "
       "FSDP2 fully_shard (the next module's AllGather issued ahead); Megatron-Core overlap_param_gather",
       "the ZeRO-3 communication exposed (or overlap_efficiency of it hidden, with overlap_comm)", (),
       short="FSDP ov."),
    _M("cp_overlap", "CP ring overlapped with attention",
       "cp_overlap with cp_size > 1: the keys and values travel around the ring of N_CP ranks while each rank "
       "computes attention on the block it holds, so only what the attention compute cannot cover is exposed, and "
       "at least one ring step (1 / N_CP of the exchange)",
       "cp_overlap", "Liu et al. (2023), Ring Attention, sec. 3 (each block's transfer overlapped with the "
       "blockwise attention); NVIDIA Transformer Engine context parallelism, cp_comm_type 'p2p'",
       "the key/value exchange exposed (the all-gather form)", ("T_att",), short="CP ov.",
       needs=("context_parallel",)),
    _M("ep_overlap", "EP all-to-all overlapped with another microbatch",
       "ep_overlap with ep_size > 1: each microbatch's MoE all-to-alls run beside the compute of another "
       "microbatch (the forward of one beside the backward of another), each beside one chunk of it, so only "
       "what the share eta_EP-ov of the replica's compute they can run beside cannot cover is exposed, and at "
       "least one microbatch's all-to-alls (1 / (m k) of them: the first and the last have no partner; all of "
       "them with one microbatch)",
       "ep_overlap", "NVIDIA Megatron-Core overlap_moe_expert_parallel_comm (megatron/core/model_parallel_config.py: "
       "the EP all-to-all of one microbatch overlapped with the computation of another in the 1F1B schedule; "
       "megatron/core/pipeline_parallel/combined_1f1b.py pairs each all-to-all with one compute chunk); "
       "DeepSeek-AI (2024), DeepSeek-V3 Technical Report, sec. 3.2.1 (DualPipe: a forward and a backward chunk "
       "paired so their all-to-alls hide behind each other's compute)",
       "the all-to-all exposed", ("T_ep_exposed",), short="EP ov."),
    _M("moe_permutation", "MoE token permutation",
       "models with routed experts, unless fused_dispatch: each rank's routed tokens are grouped by expert before "
       "each dispatch all-to-all and restored after each combine, in memory-bound kernels of their own: b_perm "
       "HBM bytes per byte of the tokens it routes (k_e copies of its 1 / N_TP of the replica's tokens), around "
       "each of the n_a2a all-to-alls of each of its layers, added to the replica's step",
       None, "NVIDIA Megatron-LM, megatron/core/transformer/moe/token_dispatcher.py (MoEAlltoAllTokenDispatcher: "
       "permute, sort_chunks_by_idxs, unpermute around the all-to-alls; MoEFlexTokenDispatcher: DeepEP and "
       "HybridEP permute inside their transfers); megatron/core/transformer/moe/moe_utils.py (permute, unpermute)",
       "no permutation", ("M_routed", "T_perm"), short="Perm."),
    _M("fsdp_buffers", "ZeRO-3 / FSDP layers held gathered",
       "transformers with zero_stage 3 (held so: not under a pipeline, see fsdp_pipeline) over more than one "
       "rank: beside its shards an accelerator holds the gathered weights of the layer it computes and, with "
       "fsdp_overlap, of the next, whose AllGather is prefetched meanwhile, and one layer's unsharded gradients "
       "(their trainable share) before their ReduceScatter, (1 + chi_FSDP-ov + f_train) P_layer s_elem in its "
       "communication buffers (P_layer: one layer's parameters on it before the data-parallel shard, P_gather)",
       None, "PyTorch, torch.distributed.fsdp.FullyShardedDataParallel (limit_all_gathers: memory 'from only two "
       "consecutive FSDP instances', the current one and the one whose all-gather is prefetched); Zhao et al. "
       "(2023), PyTorch FSDP, sec. 3 (each unit's gradients reduce-scattered after its backward)",
       "ZeRO-3 holds its weights and gradients sharded, none gathered", ("P_gather", "M_gather"), short="Gath."),
    _M("microbatch_memory", "microbatches without a pipeline hold one microbatch",
       "transformers, pp_size 1 with microbatch_count > 1: the m microbatches the model reads without a pipeline "
       "(pass_overhead pays their passes) run one after another, each forward and backward before the next, so a "
       "replica holds the activations of one microbatch, lb / (GA m) samples, as it holds those of lb / GA with "
       "GA accumulation steps",
       None, "NVIDIA Megatron-LM, megatron/core/pipeline_parallel/schedules.py forward_backward_no_pipelining "
       "(num_microbatches without a pipeline: the gradients accumulated over the microbatches, one at a time)",
       "microbatch_count read only with a pipeline: the activations of lb / GA samples at pp_size 1", (),
       short="Mb. mem."),
    # ---- issue 24: the per-layer overlap schedule ---- begin
    _M("layer_overlap", "DP AllReduce overlapped layer by layer",
       "layer_overlap with overlap_comm, transformers: the gradient AllReduce split evenly over the N_L layers of "
       "a stage (T_layer = T_DP / N_L, a share of its latency terms too, as buckets fuse them), each layer's "
       "AllReduce run beside the backward pass of the layer after it; exposed is the last layer's AllReduce and "
       "what each other one takes beyond one layer's backward, T_pipelined - T_backward, where T_backward is the "
       "backward share (m_train - 1) / m_train of the replica's step (m_train = 3 forward-pass equivalents a "
       "training pass, 4 recomputed); the whole step's backward covers it, as "
       "overlap_efficiency assumes (with pipelining or accumulation only the last microbatch's backward does)",
       "layer_overlap", "The book's Collective Communication chapter, sec. Overlap Limits: When Hiding Fails, "
       "notebook Overlap Budget for a 7B Transformer; Li et al. (2020), PyTorch Distributed (VLDB), sec. 3.2 "
       "(gradient buckets all-reduced during the backward pass)",
       "the fixed share overlap_efficiency of the DP communication hidden (with overlap_comm)",
       ("T_bwd", "T_dp_layer"), short="Layer ov."),
    # ---- issue 24: the per-layer overlap schedule ---- end
)}
del _M


#: The models: mlsysim 0.3.0's, exactly, and the extended one (``docs/extended.md``).
FIDELITIES = ("mlsysim", "extended")

#: The degrees that split a fleet's accelerators (one data-parallel replica spans their product):
#: ``(degree, the mechanism that makes it split the fleet where mlsysim 0.3.0 does not, the mechanism that makes it
#: not)``. CP splits where context parallelism is priced; EP does not where the MoE layout carves it out of the
#: data-parallel ranks.
SPLIT_DEGREES: Tuple[Tuple[str, Optional[str], Optional[str]], ...] = (
    ("tp_size", None, None), ("pp_size", None, None), ("ep_size", None, "moe_layout"),
    ("cp_size", "context_parallel", None))


@dataclass(frozen=True)
class ModelChoice:
    """Which model prices a step: ``fidelity`` (``"mlsysim"``, mlsysim 0.3.0's, or ``"extended"``) and, in the
    extended model, the mechanisms priced as mlsysim prices them (``off``, from ``without=``).

    Built and checked once per call, where the choice is made (``DistributedModel(fidelity=..., without=...)``,
    or the ``fidelity=``/``without=`` of a sweep, a search, ...); everything below reads it.

    >>> ModelChoice("extended", ("pipeline_p2p",)).on("pipeline_p2p"), ModelChoice("extended").on("gemm_shape")
    (False, True)
    >>> ModelChoice("extended").on("gemm_shap")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown mechanism 'gemm_shap'; the extended model's mechanisms are: context_parallel, ..., layer_overlap
    """

    fidelity: str = "mlsysim"
    off: Tuple[str, ...] = ()

    def __post_init__(self):
        if not isinstance(self.fidelity, str) or self.fidelity not in FIDELITIES:
            raise ValueError(f"fidelity must be one of {', '.join(map(repr, FIDELITIES))}, got {self.fidelity!r}")
        object.__setattr__(self, "off", normalize(self.off))
        if self.off and self.fidelity != "extended":
            raise ValueError("without: mechanisms can be switched off only in the extended model; pass "
                             "fidelity='extended'")

    @property
    def extended(self) -> bool:
        return self.fidelity == "extended"

    def on(self, mechanism: str) -> bool:
        """Whether the model prices ``mechanism`` (:data:`MECHANISMS`; an unknown name is an error)."""
        if mechanism not in MECHANISMS:
            raise ValueError(f"unknown mechanism {mechanism!r}; the extended model's mechanisms are: "
                             f"{', '.join(MECHANISMS)}")
        return self.fidelity == "extended" and mechanism not in self.off

    @property
    def splits(self) -> Tuple[str, ...]:
        """The degrees that split the fleet in this model (:data:`SPLIT_DEGREES`; ``cp_size`` where it prices
        context parallelism, ``ep_size`` where expert parallelism is not carved out of a stage's ranks)."""
        return tuple(k for k, m, unless in SPLIT_DEGREES
                     if (m is None or self.on(m)) and (unless is None or not self.on(unless)))

    def __str__(self) -> str:
        """``"extended model, without pipeline_p2p"``, ``"mlsysim's model"``."""
        if not self.extended:
            return "mlsysim's model"
        return "extended model" + (f", without {', '.join(self.off)}" if self.off else "")


def always_on() -> Tuple[str, ...]:
    """The mechanisms without a switch, in order."""
    return tuple(n for n, m in MECHANISMS.items() if m.switch is None)


def normalize(names: Iterable[str], argument: str = "without") -> Tuple[str, ...]:
    """``names`` as a sorted tuple of known mechanism names (a clear error names the unknown one)."""
    if names is None:
        return ()
    if isinstance(names, str):
        names = (names,)
    try:
        names = list(names)
    except TypeError:
        raise TypeError(f"{argument} must be mechanism names (a string or a sequence of them), "
                        f"got {type(names).__name__}") from None
    out = []
    for n in names:
        if not isinstance(n, str) or n not in MECHANISMS:
            raise ValueError(f"{argument}: unknown mechanism {n!r}; the extended model's mechanisms are: "
                             f"{', '.join(MECHANISMS)}")
        out.append(n)
    return tuple(sorted(set(out)))
