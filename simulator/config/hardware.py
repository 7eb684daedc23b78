"""Typed hardware specifications read from ``hardware_specs/`` (GPUs, links, nodes, protocols).

YAML keys carry their unit as a suffix (``bandwidth_GBps``, ``latency_us``,
``hbm_capacity_GiB``); the ``*_si`` properties convert once to SI (bytes, B/s,
seconds, FLOP/s). Every numeric key must have an entry in ``sources`` naming
where the number came from; :func:`missing_sources` lists the ones that do not.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict, model_validator

from simulator.units import GBPS_TO_BYTES_PER_S, GIB, TFLOPS, US

# Hardware files are checked as strictly as scenarios: finite numbers in physical ranges,
# integers as integers (no "8" or 8.0), flags as booleans.
Fraction = Annotated[float, Field(ge=1e-3, le=1.0, allow_inf_nan=False)]
SpeedupRatio = Annotated[float, Field(ge=0.01, le=100.0, allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, Field(ge=0.0, le=1e9, allow_inf_nan=False)]
PositiveFloat = Annotated[float, Field(gt=0.0, le=1e9, allow_inf_nan=False)]
PositiveInt = Annotated[int, Strict(), Field(ge=1, le=10_000_000)]
Flag = Annotated[bool, Strict()]


class Dtype(StrEnum):
    """Training number formats; ``tf32`` and ``fp4`` are only GPU capabilities, not training
    dtypes (fp4 GEMMs are an fp8 recipe's, ``kernels.fp8_scaling: nvfp4``)."""

    FP32 = "fp32"
    TF32 = "tf32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    FP4 = "fp4"


class LinkKind(StrEnum):
    NVLINK = "nvlink"
    XGMI = "xgmi"
    PCIE = "pcie"
    INFINIBAND = "infiniband"
    ROCE = "roce"
    ETHERNET = "ethernet"
    ICI = "ici"                    # TPU inter-chip interconnect: chip-to-chip torus links
    C2C = "c2c"                    # NVLink-C2C: the Grace CPU to Hopper GPU link of one superchip


class HwClass(StrEnum):
    """NCCL's three hardware classes for protocol latencies (tuning.cc ``NCCL_HW_*``)."""

    NVLINK = "nvlink"
    PCI = "pci"
    NET = "net"


LINK_HW_CLASS = {
    LinkKind.NVLINK: HwClass.NVLINK,
    LinkKind.XGMI: HwClass.NVLINK,
    LinkKind.PCIE: HwClass.PCI,
    LinkKind.INFINIBAND: HwClass.NET,
    LinkKind.ROCE: HwClass.NET,
    LinkKind.ETHERNET: HwClass.NET,
    LinkKind.ICI: HwClass.NVLINK,  # a direct chip-to-chip link, no NIC: NVLink-class latencies
    LinkKind.C2C: HwClass.PCI,     # it stands where a GPU's PCIe link to its host would be
}


class IntraFabricKind(StrEnum):
    NVSWITCH = "nvswitch"          # every GPU to one non-blocking switch plane
    MESH = "mesh"                  # every GPU pair directly linked (AMD Infinity Fabric)
    NVLINK_BRIDGE = "nvlink-bridge"  # GPUs paired by bridges, the rest over PCIe
    PCIE = "pcie"                  # PCIe only


class Protocol(StrEnum):
    LL = "LL"
    LL128 = "LL128"
    SIMPLE = "Simple"


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    display_name: str = ""
    sources: dict[str, str] = Field(default_factory=dict)


Fp8AttentionRecipe = Literal["mxfp8", "per_tensor"]
SpeedupRow = tuple[PositiveInt, SpeedupRatio, SpeedupRatio]


def head_widths_key(head_dim: int, value_dim: int | None = None, window: int | None = None) -> str:
    """``"d_qk/d_v"``, or ``"d_qk/d_v@w"`` for the sliding-window kernel of window ``w``: the key
    of a GPU's ``compute.fp8_attention_speedup``."""
    widths = f"{head_dim}/{value_dim or head_dim}"
    return widths if window is None else f"{widths}@{window}"


class ComputeEfficiency(BaseModel):
    """How close kernels get to the GPU's peaks (data, not code; see cost/compute.py).

    ``gemm_peak_fraction``: fraction of dense peak a large, well-shaped GEMM reaches.
    ``gemm_tile``: output tile (rows, cols) one SM computes per wave.
    ``gemm_k_overhead``: per-tile prologue/epilogue cost, in K elements of a 16-bit GEMM
    (fp8 GEMMs: times the fp8/16-bit peak ratio, the same seconds at a faster main loop).
    ``gemm_fixed_us``: each GEMM kernel's fixed in-kernel time, microseconds: the operand
    pipeline's first fill and the last tile's epilogue, which no other tile's main loop hides
    (0: not modelled on the part).
    ``memory_fixed_us``: each memory-bound kernel's fixed in-kernel time, microseconds: the
    grid's launch onto the SMs, its first loads and its drain, what a one-block kernel moving
    almost nothing still takes (0: not modelled on the part).
    ``memory_bandwidth_fraction``: fraction of HBM bandwidth streaming kernels reach.
    ``kernel_overhead_us``: launch and tail cost per kernel.
    ``fp8_gemm_peak_fraction``: the same as ``gemm_peak_fraction`` for fp8 GEMMs, as a
    fraction of the fp8 peak (default: ``gemm_peak_fraction``).
    ``attention_forward_fraction`` / ``attention_backward_fraction``: fraction of the
    16-bit dense peak that the fused (flash) attention kernel reaches, forward and backward,
    causal, head dimension 128, long sequences (default: ``gemm_peak_fraction``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    gemm_peak_fraction: Fraction
    gemm_tile: tuple[PositiveInt, PositiveInt] = (256, 128)
    gemm_k_overhead: NonNegativeFloat = 128.0
    gemm_fixed_us: NonNegativeFloat = 0.0
    memory_fixed_us: NonNegativeFloat = 0.0
    memory_bandwidth_fraction: Fraction
    kernel_overhead_us: NonNegativeFloat
    fp8_gemm_peak_fraction: Fraction | None = None
    fp4_gemm_peak_fraction: Fraction | None = None
    """Fraction of the fp4 dense peak a large block-scaled fp4 GEMM reaches (NVFP4, MXFP4);
    None on parts without fp4 tensor cores."""
    fp8_block_gemm_ratio: Fraction | None = None
    """Rate of fp8 GEMMs whose operands carry a scale per 1 x 128 tile or 128 x 128 block
    (``kernels.fp8_scaling: blockwise``: the scales are applied in the GEMM's main loop) over
    per-tensor fp8 GEMMs' rate; None: 1 (the part runs them at the fp8 rate)."""
    attention_forward_fraction: Fraction | None = None
    attention_backward_fraction: Fraction | None = None
    attention_kernels: dict[str, tuple[Fraction, Fraction]] = Field(default_factory=dict)
    """Per attention implementation (fa2, fa3, cudnn...): (forward, backward) fractions;
    an implementation not listed uses the two fields above."""
    fp8_attention_speedup: dict[Fp8AttentionRecipe, dict[str, list[SpeedupRow]]] = Field(default_factory=dict)
    """Fused attention in fp8 against bf16: per recipe (``mxfp8``, ``per_tensor``), per head
    widths ``"d_qk/d_v"`` (the causal kernel) or ``"d_qk/d_v@w"`` (the sliding-window kernel of
    window ``w``), rows of (sequence, forward, backward): the bf16 kernel's time over the fp8
    kernel's, measured by the kernel's vendor at those sequence lengths (interpolated in log2 of
    the sequence between rows, the end rows' values beyond them); kernels not listed are not
    priced (``kernels.fp8_attention`` is then refused)."""
    scan_product_fraction: Fraction | None = None
    """Fraction of the 16-bit dense peak the chunked scan's batched matrix products reach (the
    Mamba-2 mixer's Triton kernels, :mod:`simulator.workload.mamba_mixer`), before the tile,
    wave and K effects every GEMM pays; None: ``gemm_peak_fraction`` (priced as the cuBLAS
    GEMMs of their shapes). Set where a measurement shows those kernels short of the GEMM
    library's rate (Blackwell: docs/research/gpu_kernel_efficiency.md)."""
    attention_tile_overhead: Annotated[float, Field(gt=0.0, le=64.0, allow_inf_nan=False)] = 1.5
    """Per query tile of fused attention, the prologue and epilogue in key tiles of main-loop
    work (``c`` of :func:`simulator.cost.compute.causal_tile_efficiency`); it sets how fast
    the kernel's rate falls below its 8k value at shorter sequences. Default 1.5, read off
    FlashAttention-2's H100 benchmark (its A100 panel agrees); a GPU whose tensor cores
    outrun its softmax more (Blackwell) pays more tiles."""

    @property
    def fp8_fraction(self) -> float:
        return self.fp8_gemm_peak_fraction or self.gemm_peak_fraction

    @property
    def scan_fraction(self) -> float:
        return self.scan_product_fraction or self.gemm_peak_fraction

    def attention_fraction(self, backward: bool, kernel: str = "default") -> float:
        """Fraction of the 16-bit peak the ``kernel`` implementation of fused attention reaches."""
        if kernel in self.attention_kernels:
            return self.attention_kernels[kernel][int(backward)]
        found = self.attention_backward_fraction if backward else self.attention_forward_fraction
        return found or self.gemm_peak_fraction


class GpuSpec(_Spec):
    """One accelerator: dense peak per dtype, HBM, SMs, kernel efficiencies."""

    vendor: str
    peak_dense_tflops: dict[Dtype, PositiveFloat]
    hbm_capacity_GiB: PositiveFloat
    hbm_bandwidth_GBps: PositiveFloat
    sm_count: PositiveInt
    compute: ComputeEfficiency
    derived_from: str = ""
    sustained_clock_fraction: Fraction | None = None
    """Sustained tensor-core clock under the part's power limit over the boost clock its
    peaks are quoted at; scales compute-bound kernels (GEMMs, attention), not HBM traffic.
    None: the part sustains the clock its peaks assume (1.0)."""
    fp8_any_layout: bool = False
    """Whether the tensor cores take fp8 operands in any layout (TN, NT, NN), so a per-tensor
    fp8 cast writes one copy that serves the forward and the weight-gradient GEMMs; Hopper and
    Ada take the TN layout only and need a transposed copy besides (TransformerEngine docs,
    "FP8 Current Scaling", transpose handling: Blackwell and later)."""
    nvls_efficiency: Fraction | None = None
    """Fraction of its NVSwitch ports' effective rate NVLink SHARP (NVLS, NVLS-Tree) reaches on
    this GPU generation, as NCCL's tuner keys it by compute capability (src/graph/tuning.cc
    ``nvlsEfficiency``); None: the protocol table's ``nvls`` efficiency (Hopper's)."""
    nvls_channels: tuple[PositiveInt, PositiveInt] | None = None
    """NCCL's NVLink SHARP channels (CTAs) on this GPU generation: (inside one NVLink domain,
    across domains), ``NVLS_NCHANNELS_*`` in src/transport/nvls.cc; None: the protocol table's
    ``nvls_chunking.channels`` (Hopper's 16) for both."""
    nvls_tree_head_GBps: tuple[PositiveFloat, PositiveFloat] | None = None
    """NVLS-Tree's bus bandwidth per head GPU at most on this generation, GB/s, on two nodes and
    on more (NCCL's ``perChMaxNVLSTreeBws``); None: the protocol table's
    ``nvls_chunking.tree_head_GBps``."""
    nccl_ll_max_busbw_GBps: PositiveFloat | None = None
    """NCCL's ceiling on the LL protocol's bus bandwidth inside one node for this generation
    (``llMaxBws``, src/graph/tuning.cc: Ampere 87.7, Hopper 141, Blackwell 282 GB/s), applied
    to ring and tree; across nodes the protocol table's ``ll_max_busbw_GBps`` by host CPU.
    None: no ceiling (parts NCCL does not tune: RCCL's, TPUs)."""
    nccl_tree_channel_GBps: dict[Protocol, tuple[PositiveFloat, PositiveFloat]] | None = None
    """Per protocol, NCCL's ceiling on a tree's bus bandwidth per channel across two nodes and
    across three or more, GB/s (``perChMaxTreeBws``, and for LL128 the smaller of it and
    ``perChMaxTreeLL128Bws``, src/graph/tuning.cc); None: no ceiling."""
    mx_block_scaling: bool = False
    """Whether the tensor cores take block-scaled fp8 operands, one E8M0 scale per 32
    elements (OCP Microscaling, MXFP8): NVIDIA Blackwell (sm100) and AMD CDNA 4 (gfx950's scaled
    MFMA), and later parts. TransformerEngine's ``MXFP8BlockScaling`` recipe
    (``kernels.fp8_scaling: mxfp8``) needs it."""

    @property
    def clock_fraction(self) -> float:
        return self.sustained_clock_fraction or 1.0

    @model_validator(mode="after")
    def _has_a_16_bit_peak(self) -> GpuSpec:
        if not {Dtype.BF16, Dtype.FP16} & set(self.peak_dense_tflops):
            raise ValueError("peak_dense_tflops needs a bf16 or fp16 entry (the training peak)")
        return self

    def peak_flops(self, dtype: Dtype | str) -> float:
        """Dense peak in FLOP/s at ``dtype`` (a dtype the part lacks falls back to fp16, or bf16
        on parts without fp16: TPU v4)."""
        dtype = Dtype(dtype)
        if dtype in self.peak_dense_tflops:
            return self.peak_dense_tflops[dtype] * TFLOPS
        fallback = Dtype.FP16 if Dtype.FP16 in self.peak_dense_tflops else Dtype.BF16
        return self.peak_dense_tflops[fallback] * TFLOPS

    @property
    def hbm_capacity_bytes(self) -> float:
        return self.hbm_capacity_GiB * GIB

    @property
    def hbm_bandwidth_Bps(self) -> float:
        return self.hbm_bandwidth_GBps * GBPS_TO_BYTES_PER_S


class LinkSpec(_Spec):
    """One link type: per-direction data rate of one lane/port, efficiency, latency.

    ``efficiency`` is the fraction of ``bandwidth_GBps`` that GPU-driven
    transfers (NCCL's Simple protocol) reach; ``latency_us`` the one-way
    latency of one traversal (port to port, including the switch it enters).
    ``protocol_latency_us`` optionally replaces the protocol's per-hop latency
    for network transports that differ from NCCL's defaults.
    """

    kind: LinkKind
    bandwidth_GBps: PositiveFloat
    efficiency: Fraction = 1.0
    latency_us: NonNegativeFloat = 0.0
    protocol_latency_us: dict[Protocol, NonNegativeFloat] | None = None

    @property
    def hw_class(self) -> HwClass:
        return LINK_HW_CLASS[self.kind]

    @property
    def bandwidth_Bps(self) -> float:
        """Line data rate per direction in B/s."""
        return self.bandwidth_GBps * GBPS_TO_BYTES_PER_S

    @property
    def effective_Bps(self) -> float:
        """Achievable per-direction rate in B/s: ``bandwidth * efficiency``."""
        return self.bandwidth_Bps * self.efficiency

    @property
    def latency_s(self) -> float:
        return self.latency_us * US


class IntraFabricSpec(BaseModel):
    """How the GPUs of one node talk to each other."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: IntraFabricKind
    link: str | None = None
    links_per_gpu: PositiveInt = 1
    in_switch_reduction: Flag = False


class PcieSpec(BaseModel):
    """The node's PCIe tree: GPUs and NICs under switches under CPU sockets."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    link: str
    gpus_per_switch: PositiveInt = 2
    sockets: PositiveInt = 2
    socket_link: str | None = None
    gpu_link: str | None = None
    """The link between each GPU and its PCIe switch or host, where it is not ``link``
    (NVLink-C2C between Hopper and Grace on a GH200 superchip); None: ``link``."""


class CpuVendor(StrEnum):
    INTEL = "intel"
    AMD = "amd"
    ARM = "arm"


class HostMemorySpec(BaseModel):
    """Where a GPU's copies to and from host memory go (activation offloading,
    :mod:`simulator.cost.activation_offload`): ``link``, the GPU's link to its CPU (None: the
    PCIe tree's GPU link); ``gpus_per_link``, the GPUs whose copies share it; ``bandwidth_GBps``,
    one CPU socket's memory bandwidth, shared by the socket's GPUs (None: not stated, not a
    limit); ``capacity_GB``, one socket's memory, shared likewise (None: not stated, not
    checked)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    link: str | None = None
    gpus_per_link: PositiveInt = 1
    bandwidth_GBps: PositiveFloat | None = None
    capacity_GB: PositiveFloat | None = None


MAX_GPUS_PER_NODE = 2048
"""GPUs one node (one NVLink domain) may hold: 3.5 times the largest announced, NVIDIA's
Vera Rubin Ultra NVL576 (GTC 2025); the intra-node routes are priced pair by pair, 29 s at
4,608 GPUs and quadratic beyond."""


class NodeSpec(_Spec):
    """One server (or rack-scale NVLink domain): GPUs, intra-node fabric, PCIe, NICs, the host
    CPUs' vendor (NCCL keys its LL ceiling across nodes by it; None: not stated) and the GPUs'
    path to host memory (``host_memory``; None: each GPU's PCIe link, no memory limit)."""

    gpu: str
    gpus: Annotated[int, Strict(), Field(ge=1, le=MAX_GPUS_PER_NODE)]
    fabric: IntraFabricSpec
    pcie: PcieSpec
    nics: Annotated[int, Strict(), Field(ge=0, le=1024)]
    nic_link: str
    cpu_vendor: CpuVendor | None = None
    host_memory: HostMemorySpec | None = None


class NvlsChunking(BaseModel):
    """How NCCL's NVLink SHARP kernels cut a collective into chunks (src/enqueue.cc
    ``computeCollChunkInfo``, src/transport/nvls.cc, src/device/all_reduce.h); priced by
    :mod:`simulator.cost.nvls_chunks`.

    ``channels``: NVLS channels where the GPU states none (``NVLS_NCHANNELS_SM90``);
    ``chunk_bytes``: the largest chunk (``NCCL_NVLS_CHUNKSIZE``), the size the protocol
    table's NVLS efficiency was measured at; ``max_heads``: heads per NVLink domain at most
    (``NCCL_MAX_NVLS_ARITY``); ``step_latency_us``: the synchronisation one loop of a channel
    pays (a Simple-protocol step over NVLink)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    channels: PositiveInt
    chunk_bytes: PositiveInt
    max_heads: PositiveInt
    step_latency_us: NonNegativeFloat
    tree_head_GBps: tuple[PositiveFloat, PositiveFloat] | None = None
    """NVLS-Tree's bus bandwidth per head GPU at most, GB/s, on two nodes and on more
    (``perChMaxNVLSTreeBws``, src/graph/tuning.cc), where the GPU states none."""


class RingSearch(BaseModel):
    """NCCL's topology search for ring channels inside one NVLink domain, for one NVLink
    generation (src/graph/search.cc ``ncclTopoCompute`` and ``ncclTopoDupChannels``, 2.18 to
    2.29): ``speeds_GBps``, the per-channel rates it tries, fastest first
    (``speedArrayIntra``; ``sm90SpeedArrayIntra`` from Hopper, ``sm100SpeedArrayIntra`` from
    Blackwell), and ``dup_below_GBps``, the channel rate under which a graph of more than four
    channels is not doubled (50 from sm90 on: ``ccMin > 80 && bwIntra < 50.0 && nChannels >
    4``; 0: such graphs are doubled too). Priced by :func:`simulator.cost.nccl_sms.ring_search_channels`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    speeds_GBps: tuple[PositiveFloat, ...] = Field(min_length=1)
    dup_below_GBps: NonNegativeFloat = 0.0
    inter_speeds_GBps: tuple[PositiveFloat, ...] = ()
    """The per-channel rates the search tries for a ring through the network
    (``speedArrayInter``, ``sm90SpeedArrayInter``, ``sm100SpeedArrayInter``), fastest first;
    empty: the channels across servers are not doubled."""

    @model_validator(mode="after")
    def _fastest_first(self) -> RingSearch:
        for name in ("speeds_GBps", "inter_speeds_GBps"):
            speeds = list(getattr(self, name))
            if speeds != sorted(speeds, reverse=True):
                raise ValueError(f"{name} must be listed fastest first")
        return self


class ProtocolTable(_Spec):
    """NCCL-style protocol constants (src/graph/tuning.cc).

    ``base_latency_us[algorithm][protocol]`` is paid once per collective;
    ``hop_latency_us[hw_class][algorithm][protocol]`` once per dependent step
    over that hardware class; ``bandwidth_efficiency[algorithm][protocol]``
    scales the achievable bus bandwidth.
    """

    base_latency_us: dict[str, dict[Protocol, NonNegativeFloat]]
    hop_latency_us: dict[HwClass, dict[str, dict[Protocol, NonNegativeFloat]]]
    bandwidth_efficiency: dict[str, dict[Protocol, Fraction]]
    algorithm_family: dict[str, str] = Field(default_factory=dict)
    nvls_chunking: NvlsChunking | None = None
    """NCCL's chunking of NVLink SHARP collectives; None: priced as one ``a + b n``."""
    ll_max_busbw_GBps: dict[CpuVendor, tuple[PositiveFloat, PositiveFloat]] = Field(default_factory=dict)
    """Per host CPU vendor, NCCL's ceiling on the LL protocol's bus bandwidth of a ring or tree
    across two nodes and across three or more (``llMaxBws``, src/graph/tuning.cc; NCCL reads
    the AMD row for AMD hosts and the Intel row for every other, Arm included)."""
    tree_channels_per_nic: PositiveInt = 2
    """NCCL's tree channels per NIC of a server (one per NIC, doubled by
    ``ncclTopoDupChannels``): the count a tree's per-channel ceiling multiplies."""
    ring_plateau_latency_factor: Annotated[float, Field(ge=1.0, le=10.0, allow_inf_nan=False)] = 1.0
    """Factor on the latency of a ring all-reduce with the Simple protocol across servers
    (NCCL's "plateau effect of ring", src/graph/tuning.cc ``ncclTopoGetAlgoTime``)."""
    ring_net_overhead_us: dict[CpuVendor, NonNegativeFloat] = Field(default_factory=dict)
    """Per host CPU vendor, NCCL's floor on the latency of each step a ring takes inside a node
    when the ring spans nodes ("Inter-node rings still have to launch nsteps * net overhead",
    ``getNetOverhead``, src/graph/tuning.cc): the AMD entry for AMD hosts, the Intel entry for
    every other, Arm included. Empty: no floor."""
    ring_net_overhead_simple_factor: Annotated[float, Field(ge=1.0, le=10.0, allow_inf_nan=False)] = 1.0
    """Factor on that floor under the Simple protocol."""
    ring_search: dict[str, RingSearch] = Field(default_factory=dict)
    """Per NVLink generation (the intra-node link's name), NCCL's search for ring channels
    inside one NVLink domain (:class:`RingSearch`): how many CTAs its collectives run there.
    Empty or missing: the fallback in :mod:`simulator.cost.nccl_sms`."""
    tree_correction: dict[Protocol, tuple[Fraction, ...]] = Field(default_factory=dict)
    """Per protocol, the factor on the tree all-reduce's bandwidth at messages of
    ``64 B x 2^i`` bytes, entry ``i`` (NCCL's ``treeCorrectionFactor``, src/graph/tuning.cc;
    between powers of two :func:`simulator.cost.network.size_factor`). Empty: none."""

    @model_validator(mode="after")
    def _complete(self) -> ProtocolTable:
        """Every algorithm with a bandwidth entry has base and per-class hop latencies for the
        same protocols; ring and p2p (what every collective and send falls back to) exist."""
        for required in ("ring", "p2p"):
            if required not in self.bandwidth_efficiency:
                raise ValueError(f"bandwidth_efficiency needs an entry for '{required}'")
        for family, protocols in self.bandwidth_efficiency.items():
            if not protocols:
                raise ValueError(f"bandwidth_efficiency.{family} lists no protocol")
            if set(self.base_latency_us.get(family, {})) != set(protocols):
                raise ValueError(f"base_latency_us.{family} must list the protocols of "
                                 f"bandwidth_efficiency.{family}")
            for cls in HwClass:
                if set(self.hop_latency_us.get(cls, {}).get(family, {})) != set(protocols):
                    raise ValueError(f"hop_latency_us.{cls.value}.{family} must list the protocols "
                                     f"of bandwidth_efficiency.{family}")
        extra = set(self.tree_correction) - set(self.bandwidth_efficiency.get("tree", {}))
        if extra:
            raise ValueError(f"tree_correction lists protocols the tree does not run: {sorted(extra)}")
        for proto, factors in self.tree_correction.items():
            if any(b >= 2.0 * a for a, b in zip((1.0, *factors), (*factors, 1.0), strict=True)):
                raise ValueError(f"tree_correction.{proto}: an entry may not double the one before "
                                 "it (a larger message would then take less time)")
        return self


def numeric_keys(spec: BaseModel, prefix: str = "") -> list[str]:
    """Dotted names of every top-level numeric field of ``spec`` (for source checks)."""
    keys = []
    for name, value in spec:
        if name == "sources":
            continue
        if isinstance(value, (int, float, dict)) and not isinstance(value, bool):
            keys.append(prefix + name)
        elif isinstance(value, BaseModel):
            keys.extend(numeric_keys(value, prefix=f"{prefix}{name}."))
    return keys


def missing_sources(spec: _Spec) -> list[str]:
    """Numeric keys of ``spec`` with no entry in ``spec.sources``.

    A nested key (``fabric.links_per_gpu``) is covered by its own entry or by
    its parent's (``fabric``).
    """
    covered = set(spec.sources)
    missing = []
    for key in numeric_keys(spec):
        parts = key.split(".")
        prefixes = {".".join(parts[: i + 1]) for i in range(len(parts))}
        if not prefixes & covered:
            missing.append(key)
    return missing
