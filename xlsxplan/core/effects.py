"""The effects that a single efficiency per kind cannot carry: communication and attention, as physics.

A calibrated share of peak (:mod:`xlsxplan.calibration`) covers what every run of a kind loses in the same
proportion. Three losses do not scale that way, and each is computed here from the model's shape and the
accelerator's datasheet, with no free parameter:

* **expert-parallel all-to-all** in mixture-of-experts training: every routed copy of a token's hidden vector is sent
  to the GPU holding its expert and sent back, forward and backward, over the scale-up link (``link_gb_s``);
* **expert-parallel all-to-all in serving**: a decode step's low-latency kernels send every routed copy
  (:func:`all_to_all_seconds`); a prefill pool's throughput kernels send a token once to each GPU and node holding
  its experts (:func:`forwarded_all_to_all_seconds`), overlapped with the other micro-batch's computation but for
  the SMs they hold (:func:`exposed_comm_seconds`);
* **tensor-parallel all-reduce** per layer per decode step: two all-reduces of the batch's activations per layer,
  which grow with the batch while the weights read per step do not;
* **prefill riding on decode steps**: a continuous-batching engine prefills new prompts inside the decode steps of
  the running sequences, so a prompt's arithmetic fills the compute a memory-bound step leaves idle instead of
  queueing behind it (:func:`prefill_tokens_per_step`);
* **attention's arithmetic at long context**: the scores and weighted sums over the cache, ``4 L d ctx`` FLOPs per
  decoded token, which the ``2 N`` of "Back-of-the-Envelope Estimation for LLM Systems" (section 4) leaves out and
  which at 20,000 tokens of context rival the weights' own.

One further loss is fitted rather than computed (it has no datasheet figure): the memory-bound work each *routed*
copy of a token costs in a mixture of experts (permuting and un-permuting tokens, the router, the experts' activation
functions). :func:`moe_routed_bytes_per_token` gives its traffic for a number of bytes per routed value that the
calibration fits (``routed_bytes`` in ``calibration.json``).

Units: hidden sizes and counts are plain numbers, bandwidth in GB/s per direction (the catalog's ``link_gb_s``), time
in seconds, FLOPs and bytes as counts.

References
----------
.. [1] Lepikhin et al. 2020, "GShard: Scaling Giant Models with Conditional Computation and Automatic Sharding",
   arXiv:2006.16668, section 3.2 and Figure 3: expert parallelism dispatches tokens to their experts with one
   all-to-all and combines them with another.
.. [2] DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", arXiv:2412.19437, section 3.2.2: each token is dispatched
   to its 8 routed experts and combined back, forward and backward; the all-to-all is what DualPipe overlaps.
.. [3] Shoeybi et al. 2019, "Megatron-LM", arXiv:1909.08053, section 3: tensor parallelism all-reduces the
   activations twice per layer (after attention and after the MLP) in the forward pass.
.. [4] Patarasuk and Yuan 2009, "Bandwidth optimal all-reduce algorithms for clusters of workstations", J.
   Parallel Distrib. Comput. 69(2): a ring all-reduce sends ``2 (n-1)/n`` of the data from each GPU; an all-to-all
   sends ``(n-1)/n`` of it.
.. [5] Kaplan et al. 2020, "Scaling Laws for Neural Language Models", arXiv:2001.08361, Table 1: the forward pass
   costs ``2 N + 2 n_layer n_ctx d_attn`` FLOPs per token, the second term being attention over the context; the
   scores and the weighted sum each cost ``2 L d ctx``, hence ``4 L d ctx`` for both without the causal halving that
   a decoded token, which sees its whole context, does not get.
.. [6] Yu et al. 2022, "Orca: A Distributed Serving System for Transformer-Based Generative Models", OSDI '22,
   sections 3.1-3.2: iteration-level scheduling, a new request joins the running batch at the next iteration and its
   prompt is processed in the same iteration as the other requests' decoded tokens (selective batching).
.. [7] Agrawal et al. 2024, "Taming Throughput-Latency Tradeoff in LLM Inference with Sarathi-Serve",
   arXiv:2403.02310, sections 2-4: decode iterations are memory-bound and leave compute idle; chunked prefills
   "piggyback" on them (stall-free batching), so a mixed iteration costs little more than the decodes alone until
   its arithmetic reaches the compute ceiling.
.. [8] Thakur, Rabenseifner and Gropp 2005, "Optimization of Collective Communication Operations in MPICH", Int. J.
   High Perform. Comput. Appl. 19(1), section 2: the cost of a collective as a latency term plus bytes over bandwidth
   (the alpha-beta model); a ring all-reduce sends ``2 (n-1)/n`` of the data, a pairwise all-to-all ``(n-1)/n``.
.. [9] Huang et al. 2019, "GPipe", arXiv:1811.06965, section 2.2, and Narayanan et al. 2021, "Efficient Large-Scale
   Language Model Training on GPU Clusters Using Megatron-LM", arXiv:2104.04473, section 2.2: ``m`` micro-batches
   through ``p`` stages take ``m + p - 1`` stage times, the bubble ``(p - 1) / (m + p - 1)`` of the step.
"""

from __future__ import annotations

from ..errors import OutOfRangeError

__all__ = [
    "ACTIVATION_BYTES",
    "SCALE_OUT_LATENCY_US",
    "SCALE_UP_LATENCY_US",
    "FP8_DISPATCH_BYTES",
    "NORMAL_KERNEL_SM_SHARE",
    "NVFP4_DISPATCH_BYTES",
    "all_to_all_seconds",
    "allreduce_seconds",
    "exposed_comm_seconds",
    "forwarded_all_to_all_seconds",
    "p2p_seconds",
    "pipeline_bubble",
    "ALL_TO_ALL_PASSES",
    "ALL_REDUCES_PER_LAYER",
    "SCALE_OUT_GB_S",
    "attention_decode_flops_per_token",
    "attention_prefill_flops",
    "moe_all_to_all_seconds",
    "moe_routed_bytes_per_token",
    "dispatched_routed_share",
    "prefill_tokens_per_step",
    "tp_allreduce_seconds",
]

_GIGA = 1e9

ACTIVATION_BYTES = 2.0
"""Bytes per activation value sent between GPUs: 16-bit, as Megatron-LM and the serving engines send them."""
ALL_REDUCES_PER_LAYER = 2
"""All-reduces per layer per forward pass under tensor parallelism (Megatron-LM, section 3)."""
FP8_DISPATCH_BYTES = 1.0 + 4.0 / 128.0
"""Bytes per value of an FP8 dispatch: one byte a value and a 4-byte FP32 scale for every 128 values (DeepEP's
``fp8_factor = (1 + 4 / 128) / 2`` of the 16-bit bytes, deepseek-ai/DeepEP@567632d:tests/test_internode.py; the
DeepSeek-V3 Technical Report, arXiv:2412.19437, section 3.3.2: tile-wise 1x128 activation scales)."""
NVFP4_DISPATCH_BYTES = 0.5 + 1.0 / 16.0
"""Bytes per value of an NVFP4 dispatch: four bits a value and one FP8 scale for every 16 values (NVFP4's 16-value
blocks, "Deploying DeepSeek on GB200 NVL72 with PD and Large Scale EP (Part II)", lmsys.org, 2025-09-25: "NVFP4
quantization is fused into [DeepEP] alongside the original FP8, halving the required network traffic")."""
NORMAL_KERNEL_SM_SHARE = 20.0 / 132.0
"""Share of a GPU's streaming multiprocessors that the throughput ("normal") all-to-all kernels hold while they run:
20 SMs (DeepEP's default ``Buffer.num_sms = 20``, deepseek-ai/DeepEP@567632d:deep_ep/buffer.py; "only 20 SMs are
sufficient to fully utilize the bandwidths of IB and NVLink", DeepSeek-V3 Technical Report, section 3.2.2) of an
H800's or H100 SXM's 132 ("20 out of the 132 SMs available in the H800 GPU", section 3.5.1) [fraction]."""
ALL_TO_ALL_PASSES = 4
"""All-to-alls per MoE layer per training step: dispatch and combine forward, and their transposes backward
(GShard, section 3.2; DeepSeek-V3, section 3.2.2)."""


SCALE_OUT_GB_S = 50.0
"""GPU-to-GPU bandwidth between nodes, per GPU and direction: one 400 Gb/s InfiniBand port per GPU, "IB (50 GB/s)"
in DeepSeek-V3's cluster (DeepSeek-V3 Technical Report, section 3.2.2) [GB/s]."""


SCALE_UP_LATENCY_US = 6.0
"""Latency of one collective of small messages within a scale-up domain: NCCL's all-reduce of 128 bytes to 64 KiB
on two H100s of an HGX H100 over NVLink (NVLSTree, CUDA graphs), about 6 us (NVIDIA/nccl, "Is intra-node latency
supposed to increase with the number of GPUs when using NVLink SHARP?", 2024-04-22). Used where a system preset
publishes no ``scale_up_latency_us`` [us]."""
SCALE_OUT_LATENCY_US = 46.0
"""Latency of one collective of small messages between nodes: NCCL's all-reduce of 4 to 1,024 bytes over 16 GPUs in
two nodes with a ConnectX-7 NDR NIC per GPU (NVLSTree), 46-48 us (NVIDIA/nccl, "2 node 16 H20 GPU allreduce
performance is not as expected with NVL sharp", 2024-04). Used where a system preset publishes no
``scale_out_latency_us`` [us]."""


def _positive(value: float, name: str, allowed: str = "above 0") -> None:
    if not value > 0:
        raise OutOfRangeError(f"{name} must be {allowed}, got {value!r}", name)


def _at_least(value: float, floor: float, name: str) -> None:
    if not value >= floor:
        raise OutOfRangeError(f"{name} must be at least {floor:g}, got {value!r}", name)


def tp_allreduce_seconds(
    tokens: float,
    hidden: float,
    layers: float,
    n_gpus: int,
    link_gb_s: float,
    bytes_per_value: float = ACTIVATION_BYTES,
) -> float:
    """Time the tensor-parallel all-reduces of one forward pass over ``tokens`` tokens take, over the link.

    Parameters
    ----------
    tokens : float
        Tokens in the pass: the batch of a decode step, the prompt of a prefill [tokens].
    hidden : float
        Model width, the size of each all-reduced activation [count].
    layers : float
        Transformer layers [count].
    n_gpus : int
        GPUs sharing each layer by tensor parallelism; 1 exchanges nothing [count].
    link_gb_s : float
        GPU-to-GPU bandwidth per direction, the catalog's ``link_gb_s`` (450 for H100 NVLink) [GB/s].
    bytes_per_value : float, default 2
        Bytes per activation value sent [bytes].

    Returns
    -------
    float
        Seconds spent all-reducing, in addition to the pass's arithmetic and memory traffic [s].

    Notes
    -----
    ``2 L * 2 (n-1)/n * tokens * d * bytes / link``: two all-reduces per layer (Megatron-LM, section 3), each
    sending ``2 (n-1)/n`` of the activations from every GPU (ring all-reduce, Patarasuk and Yuan 2009). A decode step
    of 512 sequences of Llama-3-70B (80 layers, width 8,192) on 8 H100s (450 GB/s) sends 2 x 80 x 1.75 x 512 x
    8,192 x 2 bytes: 2.35 GB, 5.2 ms, against 4.9 ms to read an eighth of the FP8 weights at 53% of 3.35 TB/s. The
    weights read per step are split n ways; the activations sent are not, which is why tensor-parallel serving at a
    large batch falls short of n times one GPU.
    """
    _at_least(tokens, 0, "tokens")
    _positive(hidden, "hidden")
    _at_least(layers, 0, "layers")
    _at_least(n_gpus, 1, "n_gpus")
    if n_gpus == 1:
        return 0.0
    _positive(link_gb_s, "link_gb_s", "above 0 for more than one GPU (the accelerator's link_gb_s)")
    sent = ALL_REDUCES_PER_LAYER * layers * 2.0 * (n_gpus - 1) / n_gpus * tokens * hidden * bytes_per_value
    return sent / (link_gb_s * _GIGA)


def moe_all_to_all_seconds(
    tokens: float,
    hidden: float,
    moe_layers: float,
    experts_per_token: float,
    ep: int,
    link_gb_s: float,
    bytes_per_value: float = ACTIVATION_BYTES,
    passes: int = ALL_TO_ALL_PASSES,
    gpus_per_node: int = 0,
    scale_out_gb_s: float = SCALE_OUT_GB_S,
) -> float:
    """Time the expert-parallel all-to-alls for ``tokens`` tokens of one GPU take, over the link, left un-overlapped.

    Parameters
    ----------
    tokens : float
        Tokens the GPU processes [tokens].
    hidden : float
        Model width: the size of each dispatched hidden vector [count].
    moe_layers : float
        Layers with routed experts [count].
    experts_per_token : float
        Routed experts each token goes to (top-k) [count].
    ep : int
        Expert-parallel group: GPUs the experts are spread over; 1 sends nothing [count].
    link_gb_s : float
        GPU-to-GPU bandwidth per direction within the group [GB/s].
    bytes_per_value : float, default 2
        Bytes per dispatched value: 2 for BF16 dispatch, 1 for DeepSeek-V3's FP8 dispatch [bytes].
    passes : int, default 4
        All-to-alls per MoE layer: 4 in training (dispatch and combine, forward and backward), 2 in inference [count].
    gpus_per_node : int, default 0
        GPUs sharing the scale-up link; an expert group larger than this sends ``(ep - gpus_per_node) / ep`` of its
        traffic between nodes at ``scale_out_gb_s``; 0: the whole group on the link [count].
    scale_out_gb_s : float, default 50
        Bandwidth between nodes per GPU and direction (SCALE_OUT_GB_S) [GB/s].

    Returns
    -------
    float
        Seconds of all-to-all; an upper bound on what the step loses, as a schedule can hide it behind arithmetic [s].

    Notes
    -----
    ``passes * L_moe * k * d * bytes * (ep-1)/ep * tokens / link``: every routed copy of a token's hidden vector is
    dispatched to its expert's GPU and combined back (GShard, section 3.2; DeepSeek-V3, section 3.2.2), and of an
    even spread over ``ep`` GPUs a share ``(ep-1)/ep`` leaves the GPU. Qwen3-30B-A3B (48 MoE layers, width 2,048, 8
    experts per token) with experts over 8 H100s (450 GB/s) sends 4 x 48 x 8 x 2,048 x 2 x 7/8 bytes = 5.5 MB per
    token: 12.2 us per token, a quarter of the 49 us its 3.9e10 training FLOPs take at 40% of the H100's FP8 peak.
    DeepSeek-V3's 64-way expert parallelism over 8 nodes sends 7/8 of it between nodes, at 50 GB/s.
    """
    _at_least(tokens, 0, "tokens")
    _positive(hidden, "hidden")
    _at_least(moe_layers, 0, "moe_layers")
    _at_least(experts_per_token, 0, "experts_per_token")
    _at_least(ep, 1, "ep")
    _at_least(passes, 0, "passes")
    if ep == 1:
        return 0.0
    _positive(link_gb_s, "link_gb_s", "above 0 for more than one GPU (the accelerator's link_gb_s)")
    _at_least(gpus_per_node, 0, "gpus_per_node")
    per_copy = passes * moe_layers * experts_per_token * hidden * bytes_per_value * tokens
    return all_to_all_seconds(per_copy, ep, link_gb_s, gpus_per_node, scale_out_gb_s)


def allreduce_seconds(bytes_: float, n: int, link_gb_s: float, latency_us: float = 0.0) -> float:
    """One ring all-reduce of ``bytes_`` bytes over ``n`` GPUs: what every GPU sends, over its link, plus a latency.

    Parameters
    ----------
    bytes_ : float
        Bytes each GPU holds and all-reduces [bytes].
    n : int
        GPUs in the all-reduce; 1 sends nothing [count].
    link_gb_s : float
        Bandwidth of one GPU's link per direction: the scale-up link within a domain, the NIC across nodes [GB/s].
    latency_us : float, default 0
        Latency of one collective of small messages (SCALE_UP_LATENCY_US, SCALE_OUT_LATENCY_US) [us].

    Returns
    -------
    float
        Seconds [s].

    Notes
    -----
    ``2 (n-1)/n * bytes / link + latency`` (Patarasuk and Yuan 2009; Thakur, Rabenseifner and Gropp 2005, section 2:
    the alpha-beta cost, the latency taken as one measured small-message collective). ``2 (n-1)/n * bytes / time``
    is what nccl-tests prints as the bus bandwidth (busbw), so the model's busbw is the link's line rate: 450 GB/s
    for H100 NVLink, against 365-370 GB/s measured by NCCL's ring and about 480 GB/s by NVLink SHARP on eight H100s
    (NVIDIA/nccl, "[SHArP] about the intranode allreduce performance with SHArP"; NVIDIA/nccl-tests, "H100 all
    reduce performance is poor").
    """
    _at_least(bytes_, 0, "bytes")
    _at_least(n, 1, "n")
    _at_least(latency_us, 0, "latency_us")
    if n == 1:
        return 0.0
    _positive(link_gb_s, "link_gb_s")
    return 2.0 * (n - 1) / n * bytes_ / (link_gb_s * _GIGA) + latency_us * 1e-6


def _alone(bytes_: float, n: float, gpus_per_domain: float, latency_us: float, link_gb_s: float) -> bool:
    """Check an all-to-all's common arguments (each error names its argument); True for one GPU, which sends
    nothing. Past one GPU the scale-up link must be above 0."""
    _at_least(bytes_, 0, "bytes")
    _at_least(n, 1, "n")
    _at_least(gpus_per_domain, 0, "gpus_per_domain")
    _at_least(latency_us, 0, "latency_us")
    if n == 1:
        return True
    _positive(link_gb_s, "link_gb_s", "above 0 for more than one GPU (the accelerator's link_gb_s)")
    return False


def all_to_all_seconds(
    bytes_: float,
    n: int,
    link_gb_s: float,
    gpus_per_domain: int = 0,
    scale_out_gb_s: float = SCALE_OUT_GB_S,
    latency_us: float = 0.0,
) -> float:
    """One all-to-all in which every GPU sends ``bytes_`` spread evenly over ``n`` GPUs (itself included).

    Parameters
    ----------
    bytes_ : float
        Bytes one GPU scatters over the group, its own share included [bytes].
    n : int
        GPUs in the all-to-all; 1 sends nothing [count].
    link_gb_s : float
        Scale-up bandwidth of one GPU per direction (NVLink, Infinity Fabric) [GB/s].
    gpus_per_domain : int, default 0
        GPUs that reach each other over the scale-up link (8 in an HGX server, 72 in an NVL72 rack); a group larger
        than this sends ``(n - gpus_per_domain) / n`` of its bytes over the network; 0: all on the link [count].
    scale_out_gb_s : float, default 50
        Network bandwidth of one GPU per direction (its NIC; 400 Gb/s is 50 GB/s) [GB/s].
    latency_us : float, default 0
        Latency of one collective of small messages over the slowest fabric used [us].

    Returns
    -------
    float
        Seconds, the two fabrics used at once and each GPU's share over each added [s].

    Notes
    -----
    ``bytes * ((g-1)/n / up + (n-g)/n / out) + latency`` with ``g = min(n, gpus_per_domain)``; within one domain
    ``(n-1)/n * bytes / up + latency`` (Thakur, Rabenseifner and Gropp 2005, section 2; GShard, section 3.2). The
    model's bandwidth is the line rate: DeepEP's normal kernels measure 153-158 GB/s of NVLink's 160 on eight
    H800s and 43-58 GB/s of the NIC's 50 across 16-64 (deepseek-ai/DeepEP, docs/legacy.md, "Performance").
    """
    if _alone(bytes_, n, gpus_per_domain, latency_us, link_gb_s):
        return 0.0
    if gpus_per_domain and n > gpus_per_domain:
        _positive(scale_out_gb_s, "scale_out_gb_s")
        inside, outside = (gpus_per_domain - 1) / n, (n - gpus_per_domain) / n
        return bytes_ * (inside / (link_gb_s * _GIGA) + outside / (scale_out_gb_s * _GIGA)) + latency_us * 1e-6
    return bytes_ * (n - 1) / n / (link_gb_s * _GIGA) + latency_us * 1e-6


def forwarded_all_to_all_seconds(
    bytes_per_copy: float,
    copies: float,
    n: int,
    link_gb_s: float,
    gpus_per_domain: int = 0,
    scale_out_gb_s: float = SCALE_OUT_GB_S,
    latency_us: float = 0.0,
    max_domains: int = 0,
) -> float:
    """One dispatch (or combine) of the throughput ("normal") expert all-to-all kernels, which send a token once to
    each GPU, and across the network once to each scale-up domain, that holds any of its experts.

    Parameters
    ----------
    bytes_per_copy : float
        Bytes of one GPU's tokens, one copy each (tokens x hidden x bytes per value) [bytes].
    copies : float
        Routed experts each token goes to (top-k) [count].
    n : int
        GPUs the experts are spread over; 1 sends nothing [count].
    link_gb_s : float
        Scale-up bandwidth of one GPU per direction (NVLink) [GB/s].
    gpus_per_domain : int, default 0
        GPUs of one scale-up domain; 0: all ``n`` on the link [count].
    scale_out_gb_s : float, default 50
        Network bandwidth of one GPU per direction [GB/s].
    latency_us : float, default 0
        Latency of one collective of small messages over the slowest fabric used [us].
    max_domains : int, default 0
        Most domains one token may be routed to (DeepSeek-V3's node-limited routing: 4); 0: no limit [count].

    Returns
    -------
    float
        Seconds: the network leg and the NVLink leg at once, the longer of the two, plus the latency [s].

    Notes
    -----
    With ``k`` experts drawn evenly over ``D = n / g`` domains of ``g`` GPUs, a token reaches
    ``D' (1 - (1 - 1/D')^k)`` domains, ``D' = min(D, max_domains)``, of which ``(D - 1) / D`` are not its own, and
    ``n (1 - (1 - 1/n)^k)`` GPUs, of which ``(g - 1) / g`` are not the one its copy arrives at. The time is
    ``max(bytes x remote domains / out, bytes x GPUs x (g-1)/g / up) + latency``; within one domain
    ``bytes x (n - 1)(1 - (1 - 1/n)^k) / up + latency``. DeepEP's normal kernels send each token over RDMA once per
    node and forward it over NVLink to its GPUs, counting their RDMA bytes so (``num_rdma_token_sent``, the distinct
    nodes of each token, deepseek-ai/DeepEP@567632d:tests/test_internode.py); the DeepSeek-V3 Technical Report
    (arXiv:2412.19437, section 3.2.2) sends each token "to at most 4 nodes" over IB and forwards it over NVLink,
    "IB and NVLink communications ... fully overlapped". The combine returns one reduced vector the same way. The
    low-latency kernels send every copy (:func:`all_to_all_seconds`).
    """
    _at_least(copies, 0, "copies")
    _at_least(max_domains, 0, "max_domains")
    if _alone(bytes_per_copy, n, gpus_per_domain, latency_us, link_gb_s):
        return 0.0
    g = min(n, gpus_per_domain) if gpus_per_domain else n
    gpus = n * (1.0 - (1.0 - 1.0 / n) ** copies)
    if g >= n:
        return bytes_per_copy * gpus * (n - 1) / n / (link_gb_s * _GIGA) + latency_us * 1e-6
    _positive(scale_out_gb_s, "scale_out_gb_s")
    d = n / g
    reach = min(d, max_domains) if max_domains else d
    remote = (d - 1.0) / d * reach * (1.0 - (1.0 - 1.0 / reach) ** copies)
    network = bytes_per_copy * remote / (scale_out_gb_s * _GIGA)
    nvlink = bytes_per_copy * gpus * (g - 1) / g / (link_gb_s * _GIGA)
    return max(network, nvlink) + latency_us * 1e-6


def exposed_comm_seconds(compute_s: float, comm_s: float, sm_share: float) -> float:
    """The communication time a step still shows when two micro-batches overlap it with computation.

    Parameters
    ----------
    compute_s : float
        The step's computation at the whole GPU [s].
    comm_s : float
        Its communication, run on its own [s].
    sm_share : float
        Share of the GPU's streaming multiprocessors the communication kernels hold while they run: 0 for kernels
        that free them in flight, 1 for kernels that hold every SM until the data arrive (no overlap) [fraction].

    Returns
    -------
    float
        Seconds the step is longer than ``compute_s``: ``max(sm_share x comm, comm - compute)`` [s].

    Notes
    -----
    Two-batch overlap (deepseek-ai/profile-data@4496024, README: "two micro-batches to overlap computation and
    all-to-all communication"; "Day 6: One More Thing", deepseek-ai/open-infra-index@56d8685) runs one micro-batch's
    dispatch and combine while the other computes. While the kernels run (``comm``), the computation has
    ``1 - s`` of the SMs, so it ends at ``compute + s comm`` if that is later than ``comm``, else the step waits for
    the communication: ``step = max(compute + s comm, comm)``.
    """
    _at_least(compute_s, 0, "compute_s")
    _at_least(comm_s, 0, "comm_s")
    if not 0 <= sm_share <= 1:
        raise OutOfRangeError(f"sm_share must be from 0 to 1, got {sm_share!r}", "sm_share")
    return max(sm_share * comm_s, comm_s - compute_s)


def p2p_seconds(bytes_: float, link_gb_s: float, latency_us: float = 0.0) -> float:
    """One point-to-point send of ``bytes_`` from a GPU to another, as a pipeline stage sends its activations on.

    Parameters
    ----------
    bytes_ : float
        Bytes sent [bytes].
    link_gb_s : float
        Bandwidth per direction of the link the send crosses: scale-up within a domain, the NIC between [GB/s].
    latency_us : float, default 0
        Latency of one small message over that link [us].

    Returns
    -------
    float
        Seconds [s].

    Notes
    -----
    ``bytes / link + latency`` (the alpha-beta model, Thakur, Rabenseifner and Gropp 2005, section 2). The 50 GB/s of
    a 400 Gb/s NDR NIC is its line rate; NCCL reaches 46-48 GB/s a NIC (NVIDIA/nccl-tests, "Single-node and
    multi-node performance of H100 nodes.").
    """
    _at_least(bytes_, 0, "bytes")
    _positive(link_gb_s, "link_gb_s")
    _at_least(latency_us, 0, "latency_us")
    return bytes_ / (link_gb_s * _GIGA) + latency_us * 1e-6


def pipeline_bubble(stages: int, micro_batches: int) -> float:
    """Share of a pipelined step that stages sit idle: the bubble.

    Parameters
    ----------
    stages : int
        Pipeline stages ``p`` [count].
    micro_batches : int
        Micro-batches ``m`` the batch is split into [count].

    Returns
    -------
    float
        ``(p - 1) / (m + p - 1)`` [fraction].

    Notes
    -----
    ``m`` micro-batches through ``p`` stages take ``m + p - 1`` stage times, of which ``p - 1`` leave each stage
    idle (GPipe, arXiv:1811.06965, section 2.2; Megatron-LM, arXiv:2104.04473, section 2.2). One stage: no bubble;
    4 stages of 4 micro-batches: 3/7.
    """
    _at_least(stages, 1, "stages")
    _at_least(micro_batches, 1, "micro_batches")
    return (stages - 1) / (micro_batches + stages - 1)


def moe_routed_bytes_per_token(
    hidden: float, moe_layers: float, experts_per_token: float, bytes_per_routed_value: float
) -> float:
    """Memory traffic per token of the work each routed copy of it costs outside the experts' matrix multiplies.

    Parameters
    ----------
    hidden : float
        Model width [count].
    moe_layers : float
        Layers with routed experts [count].
    experts_per_token : float
        Routed experts each token goes to (top-k) [count].
    bytes_per_routed_value : float
        Bytes moved per value of each routed copy, forward and backward: the calibration's fitted ``routed_bytes``
        [bytes].

    Returns
    -------
    float
        Bytes per token, to be read at the accelerator's memory bandwidth [bytes].

    Notes
    -----
    ``bytes_per_routed_value * k * d * L_moe``. Permuting tokens into expert order and back, gathering the router's
    weights and the experts' activation functions each touch every routed copy of the hidden vector (DeepSeek-V3,
    section 3.2.2 lists the permutation and the combine as memory-bound steps it fuses), so the traffic grows with
    the experts per token while a dense layer's grows only with its width. The work is memory-bound: its time is
    these bytes over the bandwidth, and its share of a step grows with the accelerator's FLOP per byte, as the dense
    overhead of :mod:`xlsxplan.calibration` does.
    """
    _positive(hidden, "hidden")
    _at_least(moe_layers, 0, "moe_layers")
    _at_least(experts_per_token, 0, "experts_per_token")
    _at_least(bytes_per_routed_value, 0, "bytes_per_routed_value")
    return bytes_per_routed_value * experts_per_token * hidden * moe_layers


def dispatched_routed_share(dispatch_bytes: float) -> float:
    """The routed copies' memory traffic in an expert-parallel step, as a share of the same traffic at 16 bits.

    Parameters
    ----------
    dispatch_bytes : float
        Bytes per value the layout's dispatch sends (FP8_DISPATCH_BYTES, NVFP4_DISPATCH_BYTES, ACTIVATION_BYTES)
        [bytes].

    Returns
    -------
    float
        The share of :func:`moe_routed_bytes_per_token`'s traffic, whose bytes per value are fitted on 16-bit
        training runs [fraction].

    Notes
    -----
    ``(dispatch_bytes + ACTIVATION_BYTES) / (2 ACTIVATION_BYTES)``. A token is quantized once, before it leaves its
    GPU, so every routed copy of it is received, stored and permuted into expert order at the dispatch's width
    (DeepSeek's "Day 6: One More Thing", 2025-03-01: "matrix multiplications and dispatch transmissions adopt the FP8
    format aligned with training, while core MLA computations and combine transmissions use the BF16 format"; SGLang
    fuses NVFP4 quantization into the dispatch, lmsys.org, 2025-09-25), while the experts' outputs are permuted back
    and combined at 16 bits: the way in at the dispatch's bytes, the way back at two. 1 for a 16-bit dispatch; FP8
    with its 1x128 scales 0.76, NVFP4 with its 16-value scales 0.64.
    """
    _positive(dispatch_bytes, "dispatch_bytes")
    return (dispatch_bytes + ACTIVATION_BYTES) / (2.0 * ACTIVATION_BYTES)


def prefill_tokens_per_step(batch: float, prompt_tokens: float, output_tokens: float) -> float:
    """Prompt tokens a continuous-batching engine prefills per decode step, in its steady state.

    Parameters
    ----------
    batch : float
        Sequences decoding together, one token each per step [sequences].
    prompt_tokens : float
        Tokens in each request's prompt [tokens].
    output_tokens : float
        Tokens each request generates [tokens].

    Returns
    -------
    float
        Prompt tokens per step, ``batch * prompt_tokens / output_tokens`` [tokens].

    Notes
    -----
    A sequence holds its slot for ``O`` steps and then leaves; in the steady state ``B / O`` new requests join per
    step, each bringing a prompt of ``P`` tokens, which the engine prefills in the same iteration as the running
    sequences' decoded tokens (Orca, OSDI '22, section 3.2; chunked into pieces by Sarathi-Serve, arXiv:2403.02310,
    section 4). The step's arithmetic is then ``2 N (B + B P / O)`` plus attention, against one read of the weights
    and caches: a memory-bound decode step absorbs the prompts' arithmetic until the sum reaches the compute ceiling,
    where the prompts were a serial cost of ``P / O`` prefill per generated token before. Llama-3.1-8B at 2,048 in
    and 128 out with 462 sequences in flight: 7,392 prompt tokens per step beside the 462 decoded ones.
    """
    _at_least(batch, 0, "batch")
    _at_least(prompt_tokens, 0, "prompt_tokens")
    _positive(output_tokens, "output_tokens")
    return batch * prompt_tokens / output_tokens


def attention_decode_flops_per_token(layers: float, attn_width: float, context: float) -> float:
    """Attention's arithmetic for one decoded token over its context: scores and weighted sum.

    Parameters
    ----------
    layers : float
        Layers with attention over the context [count].
    attn_width : float
        Query heads times head dimension [count].
    context : float
        Tokens of cache the token attends to [tokens].

    Returns
    -------
    float
        FLOPs per decoded token, beyond the ``2 N`` of its weights [FLOPs].

    Notes
    -----
    ``4 L d_attn ctx``: ``Q K^T`` and ``softmax(.) V`` each cost ``2 L d_attn ctx`` (Kaplan et al. 2020, Table 1,
    the ``2 n_layer n_ctx d_attn`` of the forward pass, counted for both products). Llama-3.1-8B (32 layers, 4,096
    wide) at 21,000 tokens of context: 11.0 GFLOPs per token, 69% of its 2 N = 16.1 GFLOPs; at 1,152 tokens, 3.8%.
    A decode step is bound by memory at a small batch and by arithmetic at a large one, where this term counts.
    """
    _at_least(layers, 0, "layers")
    _at_least(attn_width, 0, "attn_width")
    _at_least(context, 0, "context")
    return 4.0 * layers * attn_width * context


def attention_prefill_flops(layers: float, attn_width: float, prompt_tokens: float) -> float:
    """Causal attention's arithmetic over a whole prompt: every token attends to the ones before it.

    Parameters
    ----------
    layers : float
        Layers with attention over the context [count].
    attn_width : float
        Query heads times head dimension [count].
    prompt_tokens : float
        Tokens in the prompt [tokens].

    Returns
    -------
    float
        FLOPs for the prompt, beyond ``2 N P`` [FLOPs].

    Notes
    -----
    ``2 L d_attn P^2``: the decode figure summed over a causal prompt, ``sum_t 4 L d t = 2 L d P^2`` (the
    ``2 L d P^2`` term of TTFT_S). Llama-3.1-8B, a 20,000-token prompt: 105 TFLOPs against 2 N P = 321 TFLOPs.
    """
    _at_least(layers, 0, "layers")
    _at_least(attn_width, 0, "attn_width")
    _at_least(prompt_tokens, 0, "prompt_tokens")
    return 2.0 * layers * attn_width * prompt_tokens**2
