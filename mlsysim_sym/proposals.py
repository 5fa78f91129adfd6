"""The macros we propose to the book's notation registry (``mlsysim.Symbols``): one for every parameter, model
quantity, formal argument and cost term the registry has no entry for, with the fields its entries carry.

:mod:`mlsysim_sym.notation` reads them (a name the registry lacks must have its row here); ``derivations/registry.py``
writes them in the registry's own YAML format (``docs/registry/*.yaml``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict

@dataclass(frozen=True)
class Proposal:
    """A macro we propose to the book's registry, with the fields its entries carry.

    ``kind`` is the registry's kind (``count`` or ``scalar``); ``definition`` is a plain
    noun phrase (no LaTeX), as the registry's rules ask; ``domain`` is the registry file
    the entry belongs in.
    """

    macro: str
    kind: str
    definition: str
    domain: str = "distributed"
    unit: str = ""      # a cost term's unit (ours), which its notation does not record
    notes: str = ""     # for the registry's notes: what the entry must not be confused with


_P = Proposal
#: name (parameter, quantity, formal argument or cost term) -> the proposed macro.
EXTENSION: Dict[str, Proposal] = {
    # model quantities
    "G": _P(r"\ReplicaAcceleratorCount", "count",
            "number of accelerators one model replica spans, its tensor, pipeline and expert parallel degrees "
            "multiplied"),
    "W": _P(r"\ModelWeightSize", "scalar", "bytes of a model's weights at the training precision", "performance"),
    "O_hw": _P(r"\HardwareStepOperations", "scalar",
               "floating-point operations one replica executes per training step, recomputation included"),
    "R_eff": _P(r"\DeviceAchievedComputeRate", "scalar",
                "operation rate one accelerator sustains on a replica's step, its peak rate times the hardware "
                "efficiency", "performance"),
    "f_train": _P(r"\TrainableParameterFraction", "scalar",
                  "share of a model's parameters that training updates, below one under LoRA", "learning"),
    "ifd": _P(r"\InFlightGroupCount", "count",
              "number of microbatch groups one stage of a one-forward-one-backward pipeline schedule cycles through"),
    "L_stage": _P(r"\StageLayerCount", "count", "number of layers one pipeline stage holds"),
    "mb": _P(r"\HeldMicrobatchSamples", "count",
             "number of samples whose activations one pipeline stage holds at once: with a pipeline the "
             "microbatches in flight, without one those of an accumulation step or of one microbatch"),
    "P_shard": _P(r"\ShardParameterCount", "count",
                  "number of parameters one accelerator holds after tensor, pipeline and expert sharding, before ZeRO"),
    "M_buffers": _P(r"\CommunicationBufferMemory", "scalar",
                    "memory one accelerator holds for gradient buckets and pipeline send and receive buffers"),
    "feasible": _P(r"\MemoryFitIndicator", "scalar",
                   "one when a training state fits in device memory, zero when it does not", "performance"),
    "T_node": _P(r"\ReplicaRooflineTime", "scalar",
                 "roofline time of one replica's training step, the larger of compute and memory time plus overhead"),
    "hfu_node": _P(r"\HardwareFlopsUtilization", "scalar",
                   "operations a device executes per second, recomputation included, divided by its peak operation "
                   "rate", "performance"),
    "energy": _P(r"\ReplicaStepEnergy", "scalar", "energy one replica's accelerators draw over one training step"),
    "throughput_node": _P(r"\ReplicaSampleThroughput", "scalar",
                          "samples per second one replica processes when it communicates with no other replica"),
    "memory_bound": _P(r"\MemoryBoundIndicator", "scalar",
                       "one when the memory roofline binds a replica's step, zero when compute does", "performance"),
    "overhead_dominated": _P(r"\OverheadDominanceIndicator", "scalar",
                             "one when fixed overhead exceeds a replica's roofline time, zero when it does not",
                             "performance"),
    "offload_spill": _P(r"\HostSpillMemory", "scalar",
                        "bytes of training state beyond device memory capacity, which must spill to host memory",
                        "performance"),
    "BW_inter": _P(r"\EffectiveFabricBandwidth", "scalar",
                   "fabric bandwidth per accelerator after division by the oversubscription ratio"),
    "rpn": _P(r"\NodeDataParallelRankCount", "count", "number of ranks of one data-parallel group on one node"),
    "nodes_dp": _P(r"\DataParallelNodeCount", "count", "number of nodes one data-parallel group spans"),
    "T_dp_allreduce": _P(r"\GradientAllReduceTime", "scalar",
                         "time of one gradient AllReduce of a data-parallel group, before congestion"),
    "L_tp": _P(r"\TensorParallelLayerCount", "count",
               "number of layers whose tensor-parallel AllReduces one pipeline stage pays",
               notes=r"Equal to \StageLayerCount for every layer count; mlsysim computes the two apart (its "
                     "memory model and its tensor-parallel communication)."),
    "T_tp_allreduce": _P(r"\TensorParallelAllReduceTime", "scalar",
                         "time of a step's tensor-parallel activation AllReduces, before congestion"),
    "T_ep_alltoall": _P(r"\ExpertAllToAllTime", "scalar",
                        "time of a step's expert-parallel token AllToAll, before congestion"),
    "T_bubble": _P(r"\PipelineBubbleTime", "scalar", "idle time that a pipeline's fill and drain add to a step"),
    "T_dp": _P(r"\DataParallelCommunicationTime", "scalar",
               "data-parallel communication time per step with congestion, amortized over gradient accumulation"),
    "T_tp": _P(r"\TensorParallelCommunicationTime", "scalar",
               "tensor-parallel communication time per step with congestion"),
    "T_ep": _P(r"\ExpertParallelCommunicationTime", "scalar",
               "expert-parallel communication time per step with congestion"),
    "T_dp_exposed": _P(r"\ExposedGradientSyncTime", "scalar",
                       "data-parallel communication time per step left on the critical path after overlap"),
    "T_sync": _P(r"\UnstraggledStepTime", "scalar", "time of one training step before the straggler multiplier"),
    "mfu": _P(r"\FleetModelFlopsUtilization", "scalar",
              "useful model operations per second of a whole fleet divided by its accelerators' combined peak "
              "operation rate", "performance"),
    # formal arguments of the cost terms
    "T_busy": _P(r"\StageBusyTime", "scalar", "busy time of one pipeline stage over a training step"),
    # cost terms
    "HierarchicalAllReduce": _P(r"\HierarchicalAllReduceTime", "scalar",
                                "time to complete an AllReduce in two levels, inside each node and then across "
                                "nodes", unit="s"),
    "BubbleTime": _P(r"\PipelineBubbleTime", "scalar", "idle time that a pipeline's fill and drain add to a step",
                     unit="s"),
    "PipelineSendTime": _P(r"\PipelineStageSendTime", "scalar",
                           "time to send one microbatch's activations across one pipeline stage boundary", unit="s"),
    "ExpertCapacity": _P(r"\ExpertTokenCapacity", "count",
                         "number of token slots one expert accepts per batch, the capacity factor times its uniform "
                         "share"),
    "ActivationsNoRecompute": _P(r"\TensorParallelLayerActivationMemory", "scalar",
                                 "activation bytes one transformer layer keeps per device without recomputation under "
                                 "tensor parallelism", "learning", unit="B"),
    "ActivationsSeqParallel": _P(r"\SequenceParallelLayerActivationMemory", "scalar",
                                 "activation bytes one transformer layer keeps per device without recomputation under "
                                 "tensor and sequence parallelism", "learning", unit="B"),
    "DataParallelCommVolume": _P(r"\GradientSyncVolume", "scalar",
                                 "bytes one rank sends per step for the data-parallel gradient AllReduce", unit="B"),
    "Zero3CommVolume": _P(r"\FullyShardedSyncVolume", "scalar",
                          "bytes one rank sends per step under ZeRO-3 or FSDP, two AllGathers and one ReduceScatter",
                          unit="B"),
    "Zero3CommTime": _P(r"\FullyShardedCommunicationTime", "scalar",
                        "communication time per step under ZeRO-3 or FSDP, two AllGathers and one ReduceScatter",
                        unit="s"),
    # parameters
    "ep": _P(r"\ExpertParallelDegree", "count",
             "number of devices over which the experts of a mixture-of-experts layer are spread"),
    "z": _P(r"\ZeroShardingStage", "index",
            "ZeRO stage, from zero for no sharding to three for optimizer state, gradients and weights", "learning"),
    "lora": _P(r"\LoraFineTuningSwitch", "scalar",
               "one when training updates low-rank adapters only, zero for full training", "learning"),
    "rc": _P(r"\FullRecomputationSwitch", "scalar",
             "one when the backward pass recomputes every activation, zero when it keeps them", "learning"),
    "ov": _P(r"\GradientOverlapSwitch", "scalar",
             "one when data-parallel communication overlaps the backward pass, zero when it follows it"),
    "eta_ov": _P(r"\CommunicationOverlapFraction", "scalar",
                 "share of data-parallel communication time hidden behind the backward pass when overlap is on"),
    "c": _P(r"\CongestionSlowdownFactor", "scalar",
            "multiplier on data, tensor and expert parallel communication time for fabric congestion"),
    "f_s": _P(r"\StragglerSlowdownFactor", "scalar",
              "multiplier on the step time set by the slowest worker, applied only above one"),
    "iota": _P(r"\RoutingImbalanceFactor", "scalar",
               "multiplier on the expert-parallel AllToAll volume for uneven routing of tokens to experts"),
    "F": _P(r"\ForwardTokenOperations", "scalar",
            "floating-point operations of one forward pass per token, or per sample for workloads without tokens",
            "performance"),
    "W_lw": _P(r"\LoweredWeightSize", "scalar",
               "weight bytes of a lowered compute graph, where they differ from parameters times element size",
               "performance"),
    "W_g": _P(r"\GradientWeightSize", "scalar",
              "bytes of a whole model's weights from which the data-parallel gradient payload is sized",
              notes=r"Not \GradientPayload, the bytes one data-parallel group all-reduces (this over the "
                    "tensor and pipeline degrees)."),
    "BW_intra": _P(r"\IntraNodeBandwidth", "scalar",
                   "bandwidth per direction between accelerators of one node, such as NVLink"),
    "alpha_nv": _P(r"\IntraNodeLatency", "scalar", "startup latency of one message between accelerators of one node"),
    "alpha_fab": _P(r"\FabricMessageLatency", "scalar", "startup latency of one message across the network fabric"),
    "BW_pcie": _P(r"\HostOffloadBandwidth", "scalar",
                  "bandwidth per direction of the host link over which one accelerator offloads state", "performance",
                  notes=r"Not \HostLinkBandwidth, the aggregate host bandwidth of a serving node."),
    "CAP_sram": _P(r"\OnChipSramCapacity", "scalar", "bytes of on-chip SRAM one accelerator provides", "performance",
                   notes=r"Not \SramCapacity, the words of SRAM one kernel can use."),
    "BW_sram": _P(r"\OnChipSramBandwidth", "scalar", "bandwidth of one accelerator's on-chip SRAM", "performance"),
    "BW_flash": _P(r"\FlashStorageBandwidth", "scalar", "bandwidth of a device's flash storage", "performance"),
    "ADAM": _P(r"\OptimizerStateBytesPerParameter", "scalar",
               "bytes of optimizer state held for each trainable parameter, twelve for Adam in mixed precision",
               "learning"),
    "TAX": _P(r"\LayerLaunchOverhead", "scalar", "framework time per layer per kernel launch", "performance"),
    "E_idle": _P(r"\IdlePowerFraction", "scalar",
                 "share of its thermal power limit an accelerator draws while idle during a step", "performance"),
    "E_dyn": _P(r"\DynamicPowerFraction", "scalar",
                "share of its thermal power limit an accelerator draws in proportion to its hardware utilization",
                "performance"),
    "alpha_h": _P(r"\HierarchicalIntraNodeLatency", "scalar",
                  "message latency inside a node that mlsysim's hierarchical AllReduce takes as a fixed constant",
                  notes=r"The meaning of \IntraNodeLatency; mlsysim fixes it (500 ns) for this one algorithm "
                        r"instead of reading the accelerator's value. A book needs only \IntraNodeLatency."),
    "n_ar": _P(r"\TensorParallelAllReduceCount", "count",
               "number of tensor-parallel AllReduces per layer per training step, forward and backward"),
    "K_sel": _P(r"\SelectiveRecomputeFactor", "scalar",
                "number of activation bytes (two a value) one layer keeps per token and hidden unit with selective "
                "recomputation", "learning"),
    "K_full": _P(r"\FullRecomputeFactor", "scalar",
                 "number of activation bytes (two a value) one layer keeps per token and hidden unit with full "
                 "recomputation", "learning"),
    "f_buf": _P(r"\GradientBucketFraction", "scalar", "size of the gradient bucket buffer as a share of gradient memory"),
    "f_lora": _P(r"\LoraGradientVolumeFraction", "scalar",
                 "share of the full gradient volume that a LoRA run all-reduces", "learning"),
    "f_act": _P(r"\ActivationTrafficFraction", "scalar",
                "activation bytes one sample streams as a share of the weight bytes", "performance"),
    "f_lora_mem": _P(r"\LoraMemoryMultiplier", "scalar",
                     "memory of a LoRA run on one accelerator as a multiple of its weight bytes", "learning"),
    "eps_t": _P(r"\RooflineTieTolerance", "scalar", "time below which a roofline time counts as zero",
                "performance"),
    "eps_O": _P(r"\RooflineWorkTolerance", "scalar", "work below which the arithmetic intensity counts it as zero",
                "performance"),
    "eps_Q": _P(r"\RooflineTrafficTolerance", "scalar",
                "memory traffic below which the arithmetic intensity counts it as zero", "performance"),
}
# ---- issue 13: the extended model's names (DistributedModel(fidelity="extended")) ------------ begin
EXTENSION.update({
    "sp": _P(r"\SequenceParallelSwitch", "scalar",
             "one when tensor-parallel ranks also split the sequence outside the tensor-parallel blocks, zero when "
             "they do not"),
    "tov": _P(r"\TensorParallelOverlapSwitch", "scalar",
              "one when tensor-parallel communication overlaps the matrix multiplications, zero when it does not"),
    "kvf": _P(r"\KvHeadFraction", "scalar",
              "width of the attention keys and values as a share of the hidden dimension, key-value heads over "
              "query heads"),
    "d_half": _P(r"\GemmHalfEfficiencyWidth", "scalar",
                 "hidden dimension at which the shape factor of a layer's matrix multiplications is one half",
                 "performance"),
    "n_a2a": _P(r"\ExpertAllToAllCount", "count",
                "number of expert-parallel AllToAlls per mixture-of-experts layer per training step, dispatch and "
                "combine in the forward and the backward pass"),
    "b_perm": _P(r"\PermutationBytesPerRoutedByte", "scalar",
                 "bytes of memory traffic the permutation of a mixture-of-experts layer's tokens moves for each "
                 "byte of the tokens a rank routes"),
    "b_upd": _P(r"\OptimizerUpdateBytesPerParameter", "scalar",
                "bytes of memory traffic the optimizer update moves for each trainable parameter", "learning"),
    "G_mp": _P(r"\ModelShardAcceleratorCount", "count",
               "number of accelerators over which one copy of the weights is split, the tensor, pipeline and "
               "expert parallel degrees multiplied"),
    "r_sp": _P(r"\UnsplitActivationShare", "scalar",
               "share of the activations that tensor parallelism leaves whole which one tensor-parallel rank keeps",
               "learning"),
    "beta_tp": _P(r"\TensorParallelLinkBandwidth", "scalar", "link bandwidth of a tensor-parallel group"),
    "alpha_tp": _P(r"\TensorParallelLinkLatency", "scalar", "message latency of a tensor-parallel group"),
    "beta_cp": _P(r"\ContextParallelLinkBandwidth", "scalar",
                  "link bandwidth of a group of tensor and context parallel ranks"),
    "alpha_cp": _P(r"\ContextParallelLinkLatency", "scalar",
                   "message latency of a group of tensor and context parallel ranks"),
    "T_sp_pair": _P(r"\SequenceParallelPairTime", "scalar",
                    "time of the ReduceScatter and AllGather pair that replaces one tensor-parallel AllReduce "
                    "under sequence parallelism"),
    "n_p2p": _P(r"\PipelineCriticalSendCount", "count",
                "number of stage-to-stage sends on the critical path of one pipelined training step"),
    "T_dp_gather": _P(r"\FullyShardedGatherTime", "scalar",
                      "time of the two weight AllGathers of one micro-step under ZeRO-3 or FSDP, before congestion"),
    "K_act": _P(r"\LayerActivationFactor", "scalar",
                "number of activation bytes (two a value) one layer keeps per token and hidden unit on one "
                "tensor-parallel rank", "learning"),
    "T_tp_layer": _P(r"\TensorParallelLayerCollectiveTime", "scalar",
                     "time of one tensor-parallel collective of one layer, before congestion"),
    "M_kv": _P(r"\SequenceKvPayload", "scalar",
               "bytes of the keys and values of a whole sequence held by one tensor-parallel rank"),
    "T_cp_layer": _P(r"\ContextParallelLayerExchangeTime", "scalar",
                     "time of one layer's context-parallel key and value exchange, before congestion"),
    "alpha_pp": _P(r"\PipelineLinkLatency", "scalar", "message latency between consecutive pipeline stages"),
    "f_gemm": _P(r"\GemmShapeEfficiencyFactor", "scalar",
                 "share of the large-matrix efficiency that a layer's matrix multiplications reach at their shape",
                 "performance"),
    "T_cp_exchange": _P(r"\ContextParallelExchangeTime", "scalar",
                        "time of a step's context-parallel key and value exchange, before congestion"),
    "T_cp": _P(r"\ContextParallelCommunicationTime", "scalar",
               "context-parallel communication time per step with congestion"),
    "beta_pp": _P(r"\PipelineLinkBandwidth", "scalar",
                  "bandwidth of the link between consecutive pipeline stages"),
    "T_p2p": _P(r"\PipelineSendTimePerStep", "scalar",
                "time of a step's point-to-point sends between pipeline stages, forward and backward"),
    "P_update": _P(r"\UpdatedParameterCount", "count",
                   "number of parameters whose optimizer update one accelerator computes"),
    "T_tp_exposed": _P(r"\ExposedTensorParallelTime", "scalar",
                       "tensor-parallel communication time per step left on the critical path after overlap"),
    "T_ep_exposed": _P(r"\ExposedExpertParallelTime", "scalar",
                       "expert-parallel all-to-all time per step left on the critical path after overlap"),
    "M_routed": _P(r"\RoutedTokenBytes", "scalar",
                   "bytes of the tokens one accelerator sends to the experts in each all-to-all of a layer"),
    "P_gather": _P(r"\GatheredLayerParameters", "scalar",
                   "parameters of one layer an accelerator gathers under ZeRO-3 / FSDP, of the shards split over "
                   "more than one data-parallel rank"),
    "M_gather": _P(r"\GatheredLayerMemory", "scalar",
                   "bytes per accelerator of the layers ZeRO-3 / FSDP holds gathered: the weights of the layer "
                   "computed (and of the next, when prefetched) and one layer's gradients before their "
                   "reduce-scatter"),
    "T_perm": _P(r"\TokenPermutationTime", "scalar",
                 "time per step of the memory-bound kernels that group a rank's routed tokens by expert and restore "
                 "their order"),
    "GemmShapeEfficiency": _P(r"\GemmShapeEfficiency", "scalar",
                              "share of the large-matrix efficiency a matrix multiplication of a given width "
                              "reaches", "performance", unit="1"),
    "OptimizerUpdateTime": _P(r"\MemoryBoundUpdateTime", "scalar",
                              "time of one optimizer update over a set of parameters, bounded by memory bandwidth",
                              "learning", unit="s",
                              notes=r"A step's update is the book's \OptimizerStepTime, which this term prices."),
    "x_gemm": _P(r"\GemmSharedWidth", "scalar",
                 "width of the shared dimension of a layer's matrix multiplications", "performance"),
    "n_param": _P(r"\UpdateParameterCount", "count", "number of parameters an update reads and writes",
                  "learning"),
})
# ---- issue 13 --------------------------------------------------------------------------------- end
# ---- issue 21: architecture cards (mlsysim_sym.shape) and what the extended model reads of them ---------
_A = "learning"
EXTENSION.update({
    "F_tok": _P(r"\TokenForwardOperations", "scalar",
                "forward floating-point operations per token, the weights' matrix products and attention over the "
                "keys attended", "performance"),
    "A_full": _P(r"\AttentionOperationsPerKey", "scalar",
                 "forward attention operations per token for each key attended, summed over the layers without a "
                 "sliding window", _A),
    "A_win": _P(r"\WindowedAttentionOperationsPerKey", "scalar",
                "forward attention operations per token for each key attended, summed over the layers with a "
                "sliding window", _A),
    "w_att": _P(r"\AttentionWindowLength", "count", "number of tokens a sliding attention window spans", _A),
    "chi_causal": _P(r"\CausalAttentionSwitch", "scalar",
                     "one when a token attends only to the tokens before it, zero when it attends to all", _A),
    "n_mlp": _P(r"\MlpMatrixCount", "count",
                "number of weight matrices of one feed-forward block, three when gated and two when not", _A),
    "n_vocab": _P(r"\VocabularySize", "count", "number of tokens in a model's vocabulary", _A,
                  notes=r"Not the book's \TokenVocabulary, which is the set of tokens."),
    "chi_tie": _P(r"\TiedEmbeddingSwitch", "scalar",
                  "one when the output layer shares the input embedding matrix, zero when it does not", _A),
    "n_shared": _P(r"\SharedExpertCount", "count",
                   "number of shared experts of one mixture-of-experts layer that every token passes through", _A),
    "d_ffe": _P(r"\ExpertFeedForwardWidth", "count", "width of the feed-forward block of one expert", _A),
    "L_moe": _P(r"\MoeLayerCount", "count", "number of mixture-of-experts layers of a model", _A),
    "r_q": _P(r"\LatentQueryRank", "count", "rank of the low-rank query projection of latent attention", _A),
    "r_kv": _P(r"\LatentKvRank", "count", "rank of the joint key and value projection of latent attention", _A),
    "d_rope": _P(r"\RotaryHeadDimension", "count",
                 "width of the rotary-position part of a query or key head of latent attention", _A),
    "d_v": _P(r"\OutputHeadDimension", "count",
              "width of one attention head's output, the vector its weighted sum of the keys' partners gives", _A),
    "L_win": _P(r"\WindowedLayerCount", "count", "number of layers whose attention has a sliding window", _A),
    "P_attn_w": _P(r"\AttentionProjectionParameterCount", "count",
                   "number of weights of the attention projections of one layer", _A),
    "P_attn": _P(r"\AttentionParameterCount", "count",
                 "number of parameters of the attention of one layer, projections and their norms", _A),
    "P_mlp": _P(r"\MlpParameterCount", "count", "number of parameters of the feed-forward block of one dense layer",
                _A),
    "P_expert": _P(r"\ExpertParameterCount", "count", "number of parameters of one expert", _A),
    "P_router": _P(r"\RouterParameterCount", "count", "number of parameters of the router of one mixture-of-experts "
                   "layer", _A),
    "P_dense_layer": _P(r"\DenseLayerParameterCount", "count", "number of parameters of one dense layer", _A),
    "P_routed": _P(r"\RoutedExpertParameterCount", "count",
                   "number of parameters of the routed experts of every mixture-of-experts layer of a model", _A),
    "P_moe_layer": _P(r"\MoeLayerParameterCount", "count",
                      "number of parameters of one mixture-of-experts layer, every expert counted", _A),
    "P_embed": _P(r"\EmbeddingParameterCount", "count",
                  "number of parameters of the input embedding and the output layer", _A),
    "P_total": _P(r"\TotalParameterCount", "count", "number of parameters of a model, every expert counted", _A),
    "P_active": _P(r"\TokenActiveParameterCount", "count",
                   "number of parameters one token meets, its routed experts, the shared ones, the router and the "
                   "embeddings", _A, notes=r"The book's \ActiveParameterCount has no convention for the embeddings."),
    "F_logits": _P(r"\LogitOperations", "scalar",
                   "forward floating-point operations per token of a model's output layer, its logits", _A),
    "E_exp": _P(r"\RoutedExpertsPerLayer", "count", "number of routed experts of each mixture-of-experts layer", _A),
    "F_head": _P(r"\OutputLayerOperations", "scalar",
                 "forward floating-point operations per token of a model's output layer, which the last pipeline "
                 "stage computes", "performance"),
    "F_mm": _P(r"\TokenGemmOperations", "scalar",
               "forward floating-point operations per token of the matrix products of a model's weights", _A),
    "A_att": _P(r"\LayerAttentionOperationsPerKey", "scalar",
                "forward attention operations per token for each key attended in one layer", _A),
    "S_keys": _P(r"\MeanKeysAttended", "scalar",
                 "number of keys one query attends on average in a layer without a window", _A),
    "S_keys_win": _P(r"\MeanWindowKeysAttended", "scalar",
                     "number of keys one query attends on average in a layer with a sliding window", _A),
    "F_att": _P(r"\TokenAttentionOperations", "scalar",
                "forward floating-point operations per token of attention's scores and weighted sums", _A),
    "F_shape": _P(r"\TokenShapeOperations", "scalar",
                  "forward floating-point operations per token of a model's shape, matrix products and attention", _A),
    "K_layer": _P(r"\CardActivationFactor", "scalar",
                  "number of activation bytes (two a value) a model's layer keeps per token and hidden unit, from its "
                  "shape, on average over the layers", _A),
    "K_card": _P(r"\WorkloadActivationFactor", "scalar",
                 "number of activation bytes (two a value) a layer of the workload keeps per token and hidden unit "
                 "with selective recomputation", _A),
    "F_train": _P(r"\TokenTrainingOperations", "scalar",
                  "floating-point operations per token of a training step, forward and backward, under a named "
                  "counting convention", _A),
    "D_tok": _P(r"\TrainingTokenCount", "count", "number of tokens a training run trains on", "performance",
                notes=r"Not the book's \TrainingDataset, which is the data set."),
    "H_acc": _P(r"\AcceleratorHours", "scalar", "accelerator-hours a training run occupies", "performance"),
    "R_tok": _P(r"\TrainingTokenThroughput", "scalar", "tokens a training run trains per second of wall-clock "
                "time, over its whole fleet", "performance"),
    "R_tok_acc": _P(r"\AcceleratorTokenThroughput", "scalar", "tokens a training run trains per second of "
                    "wall-clock time, per accelerator of its fleet", "performance",
                    notes="The figure training frameworks publish as tokens per second per GPU."),
    "E_train": _P(r"\TrainingRunEnergy", "scalar", "energy the accelerators of a training run draw over it",
                  "performance"),
    "y": _P(r"\RequiredOutputTarget", "scalar",
            "value an output of the model must reach, the target of a question of what input it takes",
            "performance", notes="Its unit is the unit of the output it is a target for."),
})
# ---- issue 21 --------------------------------------------------------------------------------- end
# ---- issue 22: today's runs (FP8 GEMMs, MoE laid out as frameworks do, FSDP and CP overlapped) --------- begin
EXTENSION.update({
    "etp": _P(r"\ExpertTensorParallelDegree", "count",
              "number of ranks that split the matrices of each expert, the tensor-parallel degree of the experts"),
    "fov": _P(r"\ShardedDataParallelOverlapSwitch", "scalar",
              "one when sharded data parallelism prefetches the next layer's weights during the current layer's "
              "compute and overlaps the gradient reduction with the backward pass, zero when it does not"),
    "cov": _P(r"\ContextParallelOverlapSwitch", "scalar",
              "one when context parallelism passes the keys and values around a ring overlapped with the attention "
              "compute, zero when it gathers them first"),
    "epov": _P(r"\ExpertParallelOverlapSwitch", "scalar",
               "one when each microbatch's expert-parallel all-to-alls run beside the compute of another "
               "microbatch, zero when they are exposed"),
    "fdis": _P(r"\FusedDispatchSwitch", "scalar",
               "one when the mixture-of-experts dispatcher permutes the tokens inside its all-to-all kernels, zero "
               "when it permutes them in kernels of their own"),
    # ---- issue 24: the per-layer overlap schedule ---- begin
    "lov": _P(r"\LayerOverlapSwitch", "scalar",
              "one when the gradient AllReduce is overlapped layer by layer with the backward pass, zero when a "
              "fixed share of it is hidden"),
    # ---- issue 24: the per-layer overlap schedule ---- end
    "R_16": _P(r"\HalfPrecisionPeakRate", "scalar",
               "peak operation rate of one accelerator at a sixteen-bit precision", "performance"),
    "P_exp": _P(r"\RoutedExpertParameters", "count",
                "number of parameters of the routed experts of every mixture-of-experts layer of a model", "learning"),
    "eta_8": _P(r"\LowPrecisionGemmEfficiency", "scalar",
                "share of the eight-bit peak that eight-bit matrix multiplications reach, relative to the share of "
                "the sixteen-bit peak that sixteen-bit ones reach", "performance"),
    "eta_epov": _P(r"\ExpertOverlapComputeShare", "scalar",
                   "share of a replica's compute beside which its microbatches' expert all-to-alls can run when they "
                   "are overlapped with another microbatch", "performance"),
    "eta_att": _P(r"\AttentionKernelEfficiency", "scalar",
                  "share of the efficiency of the weights' matrix multiplications that attention kernels reach",
                  "performance"),
    "s_16": _P(r"\HalfPrecisionElementSize", "scalar", "bytes of one sixteen-bit element", "performance"),
    "R_gemm": _P(r"\GemmPeakRate", "scalar",
                 "peak operation rate the weights' matrix multiplications reach at the training precision, before "
                 "the hardware efficiency", "performance"),
    "R_rest": _P(r"\NonGemmPeakRate", "scalar",
                 "peak operation rate of the work outside the weights' matrix multiplications, the sixteen-bit "
                 "rate or the precision's when lower", "performance"),
    "G_exp": _P(r"\ExpertShardAcceleratorCount", "count",
                "number of accelerators that share one copy of the routed experts' weights, the expert-parallel, "
                "expert tensor-parallel and pipeline degrees multiplied"),
    "dp_exp": _P(r"\ExpertDataParallelDegree", "count",
                 "number of ranks that hold the same experts' weights and reduce their gradients"),
    "M_grad_exp": _P(r"\ExpertGradientPayload", "scalar",
                     "bytes of the routed experts' gradients one rank reduces per step"),
    "rpn_exp": _P(r"\ExpertRanksPerNode", "count",
                  "number of ranks of one expert data-parallel group on one node"),
    "nodes_exp": _P(r"\ExpertDataParallelNodeCount", "count", "number of nodes one expert data-parallel group spans"),
    "M_weight_exp": _P(r"\ExpertWeightPayload", "scalar", "bytes of the weights of one rank's routed experts"),
    "M_weight_msg": _P(r"\ShardedWeightPayload", "scalar",
                       "bytes of the weights one rank gathers over the data-parallel ranks under fully sharded data "
                       "parallelism, its routed experts apart"),
    "T_dp_gather_exp": _P(r"\ExpertWeightGatherTime", "scalar",
                          "time of the weight all-gathers of one rank's routed experts over the expert data-parallel "
                          "ranks, under fully sharded data parallelism"),
    "T_dp_expert": _P(r"\ExpertGradientAllReduceTime", "scalar",
                      "time of the all-reduce of the routed experts' gradients over the expert data-parallel ranks"),
    "beta_ep": _P(r"\ExpertParallelLinkBandwidth", "scalar", "link bandwidth of the expert-parallel group"),
    "alpha_ep": _P(r"\ExpertParallelLinkLatency", "scalar", "message latency of the expert-parallel group"),
    "beta_etp": _P(r"\ExpertTensorParallelLinkBandwidth", "scalar",
                   "link bandwidth of the expert tensor-parallel group"),
    "alpha_etp": _P(r"\ExpertTensorParallelLinkLatency", "scalar",
                    "message latency of the expert tensor-parallel group"),
    "T_etp_layer": _P(r"\ExpertTensorParallelGatherTime", "scalar",
                      "time of one MoE layer's expert tensor-parallel token AllGather and ReduceScatter in one pass"),
    "z_held": _P(r"\HeldZeroStage", "scalar",
                 "ZeRO stage at which an accelerator holds its weights and gradients during a training step"),
    "M_etp": _P(r"\ExpertTensorParallelGatherBytes", "scalar",
                "bytes of routed tokens one rank's expert tensor-parallel group gathers"),
    "T_ep_layer": _P(r"\ExpertLayerCommunicationTime", "scalar",
                     "time of one MoE layer's all-to-alls and expert tensor-parallel gathers in one step"),
    "r_stage": _P(r"\PipelineStageImbalance", "scalar",
                  "ratio of the slowest pipeline stage's work to the mean stage's work", "performance"),
    "n_pass": _P(r"\StepPassTaxCount", "count",
                 "number of framework taxes one training step charges one accelerator for the fixed cost of every "
                 "pass of every microbatch through its layers", "performance"),
    "k_pass": _P(r"\LayerPassTaxCount", "count",
                 "number of framework taxes the fixed cost of one layer's pass of one microbatch comes to, per "
                 "forward-pass equivalent", "performance"),
    "T_att": _P(r"\AttentionComputeTime", "scalar",
                "time one accelerator computes attention over a step, forward and backward, at its achieved rate",
                "performance"),
})
# ---- issue 22 --------------------------------------------------------------------------------- end
# ---- issue 24: the Fault Tolerance chapter's reliability and checkpoint terms ---------------- begin
EXTENSION.update({
    "S_ckpt": _P(r"\CheckpointSize", "scalar", "bytes of one training checkpoint: weights, optimizer state and "
                 "progress counters", "performance"),
    "t_run": _P(r"\ReliabilityElapsedTime", "scalar",
                "time a system has run since it was last known to be fully up, the argument of its reliability "
                "function", "performance"),
    "k_rep": _P(r"\AvailabilityReplicaCount", "count",
                "number of independent replicas of a service in an availability calculation", "performance"),
    "BW_ckpt": _P(r"\CheckpointWriteBandwidth", "scalar",
                  "aggregate bandwidth at which a training checkpoint is written to persistent storage", "performance"),
    "AllUpAvailability": _P(r"\AllUpAvailability", "scalar",
                            "probability that every one of a set of independent components is up at the same instant",
                            "performance", "1"),
})
# ---- issue 24 --------------------------------------------------------------------------------- end
# ---- issue 24: the Distributed Training chapter's training dynamics ---------------------------- begin
EXTENSION.update({
    # the registry has \SerialFraction (r), \BatchScalingFactor (k) and \WarmupStepCount (W), whose glyphs the
    # package gives other meanings (LoRA rank, accumulation steps, weight bytes): subscripted glyphs of their own
    "r_serial": _P(r"\AmdahlSerialShare", "scalar",
                   "share of a fixed workload's single-device time that does not shrink as devices are added, "
                   "written with a subscript", "performance", notes=r"The meaning of \SerialFraction, whose glyph r "
                   "the package gives the LoRA rank."),
    "k_batch": _P(r"\LearningRateBatchMultiplier", "scalar",
                  "factor by which a learning-rate scaling rule multiplies the batch size, written with a subscript",
                  "learning", notes=r"The meaning of \BatchScalingFactor, whose glyph k the package gives the "
                  "accumulation steps."),
    "W_warm": _P(r"\WarmupStepSpan", "count",
                 "number of optimizer steps a linear learning-rate warmup spans, written with a subscript", "learning",
                 notes=r"The meaning of \WarmupStepCount, whose glyph W the package gives the weight bytes."),
    "tr_cov": _P(r"\GradientNoiseTrace", "scalar",
                 "total variance of per-example gradients about the true gradient, the trace of their covariance "
                 "matrix", "learning"),
    "g_norm2": _P(r"\SquaredTrueGradientNorm", "scalar", "squared norm of the true gradient of the training loss",
                  "learning"),
    "w_norm": _P(r"\LayerWeightNorm", "scalar", "norm of the weights of one layer", "learning"),
    "g_norm_l": _P(r"\LayerGradientNorm", "scalar", "norm of the loss gradient with respect to one layer's weights",
                   "learning"),
    "lambda_wd": _P(r"\WeightDecayCoefficient", "scalar",
                    "coefficient by which an optimizer's weight decay shrinks each weight per update", "learning"),
    "T_mu": _P(r"\MicroStepComputeTime", "scalar",
               "compute time of one micro-step whose gradient is accumulated before an optimizer update"),
    "AmdahlSpeedup": _P(r"\AmdahlSpeedup", "scalar",
                        "speedup of a fixed workload on many devices when a share of its single-device time stays "
                        "serial", unit="1"),
    "SqrtScaledLearningRate": _P(r"\SquareRootScaledLearningRate", "scalar",
                                 "learning rate after multiplying the base rate by the square root of the batch "
                                 "scaling factor", "learning", unit="1"),
    "WarmupLearningRate": _P(r"\WarmupLearningRate", "scalar",
                             "learning rate at one step of a linear warmup from the base rate to the scaled rate",
                             "learning", unit="1"),
    "LarsLearningRate": _P(r"\LarsLayerLearningRate", "scalar",
                           "learning rate layer-wise adaptive rate scaling gives one layer, the global rate times "
                           "the layer's trust ratio", "learning", unit="1"),
    "AccumulationSyncOverhead": _P(r"\AccumulationSyncOverheadFraction", "scalar",
                                   "ratio of one accumulated update's synchronization time to its micro-steps' "
                                   "compute time", unit="1"),
    "S_mean": _P(r"\BatchMeanSequenceLength", "scalar",
                 "mean length in tokens of the training sequences that share one padded batch", "learning"),
    "S_longest": _P(r"\BatchLongestSequenceLength", "count",
                    "length in tokens of the longest training sequence of one padded batch", "learning"),
    "ExpectedStragglers": _P(r"\ExpectedStragglersPerStep", "scalar",
                             "number of devices expected to straggle in one synchronous training step when each "
                             "straggles independently", unit="1"),
    # the registry's \PaddingWasteFraction is this share, but its glyph W is the package's weight bytes
    "PaddingWaste": _P(r"\PaddedSlotWasteFraction", "scalar",
                       "share of the token slots of a batch padded to its longest sequence that hold padding, written "
                       "with a subscript", "learning", unit="1",
                       notes=r"The meaning of \PaddingWasteFraction, whose glyph W the package gives the weight bytes."),
})
# ---- issue 24: training dynamics -------------------------------------------------------------- end
# ---- issue 24: the Collective Communication chapter's terms (terms/networks.py) ------------- begin
EXTENSION.update({
    "E_byte": _P(r"\NetworkEnergyPerByte", "scalar",
                 "energy the network fabric spends to move one byte from one rank to another", "performance",
                 notes=r"Not \EnergyPerByteMoved, which is between memory and the compute units."),
    "s_grad": _P(r"\GradientElementBytes", "scalar", "bytes of one gradient element before compression"),
    "s_code": _P(r"\CompressedElementBytes", "scalar", "bytes of one compressed gradient value a worker sends"),
    "s_meta": _P(r"\CompressionMetadataBytes", "scalar",
                 "bytes of one piece of compression metadata a worker sends, a block's scale or a kept element's "
                 "index"),
    "p_steps": _P(r"\CompressionStepPenalty", "scalar",
                  "extra training steps a compressed run needs to converge, as a share of the uncompressed run's "
                  "steps", "learning"),
    "TorusAllReduce": _P(r"\TorusAllReduceTime", "scalar",
                         "time to complete a dimension-ordered AllReduce on a three-dimensional torus", unit="s"),
    "ParameterServerTime": _P(r"\ParameterServerAggregationTime", "scalar",
                              "time for sharded parameter servers to receive every worker's gradient shard in one "
                              "step", unit="s"),
    "LogPOverlapTime": _P(r"\LogpOverlappedTransferTime", "scalar",
                          "time of a transfer overlapped with one layer's compute in the LogP model, the two "
                          "processor overheads plus the longer of compute and network latency", unit="s"),
    "AllReduceEnergy": _P(r"\AllReduceNetworkEnergy", "scalar",
                          "network energy of one ring AllReduce, the bytes all ranks send times the energy per byte",
                          "performance", unit="J"),
    "BlockQuantRatio": _P(r"\BlockQuantizationCompressionRatio", "scalar",
                          "compression ratio of block-wise quantization, one scale sent per block", unit="1"),
    "TopKRatio": _P(r"\TopKCompressionRatio", "scalar",
                    "compression ratio of top-k sparsification, each kept value sent with its index", unit="1"),
    "CompressedTrainingTime": _P(r"\CompressedTrainingTime", "scalar",
                                 "wall-clock time of a training run with gradient compression, its extra steps "
                                 "included", "performance", unit="s"),
    "FsdpStartupTime": _P(r"\ShardedCollectiveStartupTime", "scalar",
                          "startup latency fully sharded data parallelism pays per step, one AllGather and one "
                          "ReduceScatter per layer", unit="s"),
})
# ---- issue 24 --------------------------------------------------------------------------------- end
# ---- issue 24: the communication and fleet appendices (AC, FA) ---------------------------- begin
EXTENSION.update({
    "f_oh_bubble": _P(r"\PipelineBubbleOverheadFraction", "scalar",
                      "share of a training run's wall-clock time lost to pipeline bubbles", "performance"),
    "f_oh_recovery": _P(r"\FailureRecoveryOverheadFraction", "scalar",
                        "share of a training run's wall-clock time lost to failure detection and recovery",
                        "performance"),
    "f_oh_maint": _P(r"\MaintenanceOverheadFraction", "scalar",
                     "share of a training run's wall-clock time lost to maintenance windows", "performance"),
    "b_ckpt": _P(r"\CheckpointBytesPerParameter", "scalar", "bytes a training checkpoint stores for each parameter",
                 "performance"),
    "PUE": _P(r"\PowerUsageEffectiveness", "scalar",
              "power a data center facility draws divided by the power its IT equipment draws", "performance"),
    "IronLawTime": _P(r"\IronLawTime", "scalar",
                      "time of a workload as its data movement time, compute time and fixed latency added",
                      "performance", unit="s"),
    "FailureProbability": _P(r"\WindowFailureProbability", "scalar",
                             "probability of at least one failure within a time window when failures arrive "
                             "at a constant rate", "performance", unit="1"),
    "GoodputRatio": _P(r"\OverheadGoodputRatio", "scalar",
                       "share of a training run's wall-clock time left for useful training after pipeline bubbles, "
                       "checkpointing, failure recovery and maintenance", "performance", unit="1"),
    "CheckpointSize": _P(r"\CheckpointSize", "scalar", "bytes of one training checkpoint", "performance",
                         unit="B"),
    "CompressionBreakEven": _P(r"\CompressionBreakEvenOverhead", "scalar",
                               "largest encode and decode time for which compressing a payload still saves "
                               "communication time", unit="s"),
})
# ---- issue 24: AC, FA ------------------------------------------------------------------------ end
# ---- issue 24: the FT chapter's remaining equations and AC's LogGP time (fix2) --------------- begin
EXTENSION.update({
    "p_event": _P(r"\DeviceWindowEventProbability", "scalar",
                  "probability that one device meets a given event, such as a silent data corruption, within a "
                  "stated time window", "performance"),
    "T_ref": _P(r"\EventProbabilityWindow", "scalar",
                "time window over which a per-device event probability is quoted", "performance"),
    "k_timeout": _P(r"\HeartbeatTimeoutMultiplier", "scalar",
                    "number of network-delay standard deviations a heartbeat timeout allows beyond the heartbeat "
                    "interval, written with a subscript", "performance",
                    notes=r"The meaning of \TimeoutSafetyMultiplier, whose glyph k the package gives the "
                    "accumulation steps."),
    "T_rank": _P(r"\HealthyRankComputeTime", "scalar",
                 "compute time of one healthy rank's share of a synchronous training step"),
    "T_rank_slow": _P(r"\SlowestRankComputeTime", "scalar",
                      "compute time of the slowest rank's share of a synchronous training step"),
    "FIT": _P(r"\FitFailureRate", "scalar",
              "failure rate of one component expressed as failures per billion device-hours", "performance"),
    "T_FIT": _P(r"\FitReferenceTime", "scalar",
                "the billion device-hours over which a failures-in-time rate counts failures", "performance"),
    "N_new": _P(r"\ElasticResizedWorkerCount", "count",
                "number of workers of a training job after an elastic resize", "learning"),
    "N_base": _P(r"\LearningRateReferenceWorkerCount", "count",
                 "number of workers of the configuration a learning rate was tuned for", "learning"),
    "k_bytes": _P(r"\LongMessageByteCount", "count", "number of bytes of one long message in the LogGP model"),
    "G_byte": _P(r"\LogGpPerByteGap", "scalar",
                 "time per byte to send a long message in the LogGP model, written with a subscript",
                 notes=r"The meaning of \LongMessageGapPerByte, whose glyph G the package gives the "
                 "accelerators of one model replica."),
    "StepEventProbability": _P(r"\StepEventProbability", "scalar",
                               "probability that at least one of the devices of a synchronous job meets a given "
                               "event during one training step", "performance", unit="1"),
    "HeartbeatTimeout": _P(r"\HeartbeatFailureTimeout", "scalar",
                           "time without a heartbeat after which a worker is declared failed", "performance",
                           unit="s"),
    "MtbfFromFit": _P(r"\FitComponentMtbf", "scalar",
                      "mean time between failures of one component given its failures-in-time rate",
                      "performance", unit="s"),
})
# ---- issue 24: FT remaining equations, AC LogGP (fix2) ---------------------------------------- end
# ---- issue 24: priced rows ---- begin
EXTENSION.update({
    "f_ecc": _P(r"\EccBandwidthOverheadFraction", "scalar",
                "share of a memory's raw bandwidth that its error-correcting code check bits take", "performance"),
    "EccEffectiveBandwidth": _P(r"\EccEffectiveMemoryBandwidth", "scalar",
                                "memory bandwidth left for data after error-correcting code check bits take their "
                                "share", "performance", unit="B/s"),
    "ObservedMTBF": _P(r"\ObservedMtbf", "scalar",
                       "mean time between failures measured on a run as the time observed divided by the failures "
                       "counted in it", "performance", unit="s"),
    "FabricBandwidthRatio": _P(r"\IntraInterNodeBandwidthRatio", "scalar",
                               "bandwidth of the link between accelerators of one node divided by the bandwidth "
                               "between nodes, both per direction", unit="1"),
})
# ---- issue 24: priced rows ---- end
del _P
#: Formal arguments of the cost terms whose meaning is a parameter's or a quantity's: they print as it does; and
#: the workload fields an architecture card fills from its shape's own symbols (its heads and key/value heads).
SAME_MEANING: Dict[str, str] = {"beta_in": "BW_intra", "alpha_in": "alpha_nv", "beta_out": "BW_inter",
                                "alpha_out": "alpha_fab", "n_heads": "a_heads", "N_experts": "n_experts",
                                "H_q": "a_heads", "H_kv": "n_kv", "d_exp": "d_ffe"}
for _formal, _name in SAME_MEANING.items():
    if _name in EXTENSION:
        EXTENSION[_formal] = EXTENSION[_name]



def proposal(name: str) -> Proposal:
    try:
        return EXTENSION[name]
    except KeyError:
        raise KeyError(f"{name!r} has no registry macro: add the macro we propose to mlsysim_sym.proposals.EXTENSION"
                       ) from None
