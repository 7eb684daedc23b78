"""Kernel classes by name, NCCL operations and message sizes.

Each GPU kernel of a trace falls in one class, decided by the first row of this table whose
pattern occurs in the kernel name (case-insensitive). Copies and memsets (``gpu_memcpy``,
``gpu_memset`` events) are ``memory`` whatever their name.

=========  ==========================================================================
class      name contains (first matching row wins)
=========  ==========================================================================
nccl       ``nccl``, ``rccl``, ``msccl`` (``ncclKernel_AllReduce_RING_LL_Sum_float``,
           ``ncclDevKernel_SendRecv``)
attention  ``flash``, ``fmha``, ``attn``, ``attention``, ``sdpa`` (``flash_fwd_kernel``)
gemm       ``gemm``, ``cutlass``, ``xmma``, ``cublas``, ``nvjet``, ``cijk_`` (rocBLAS/Tensile),
           ``hipblaslt``, ``matmul``, ``scudnn``, ``splitkreduce`` (``sm80_xmma_gemm_...``,
           ``ampere_sgemm_128x64_nn``, ``cutlass_80_tensorop_s1688gemm_...``)
memory     ``elementwise``, ``vectorized``, ``reduce``, ``norm``, ``softmax``, ``adam``,
           ``optimizer``, ``multi_tensor``, ``copy``, ``memcpy``, ``memset``, ``fill``,
           ``transpose``, ``nchwtonhwc``, ``nhwctonchw``, ``bn_``, ``dropout``, ``gelu``,
           ``silu``, ``swiglu``, ``rotary``, ``rope_``, ``_rope``, ``cross_entropy``, ``embedding``,
           ``index``, ``scatter``, ``gather``, ``cast``, ``amax``, ``quantize``, ``pool``,
           ``moments``, ``gammabeta`` (layer-norm statistics and backward)
other      anything else (cub scans and sorts, permutes, Triton fusions, custom kernels)
=========  ==========================================================================

Attention comes before GEMM because fused attention kernels are often built from CUTLASS
templates (``fmha_cutlassF``); ``nccl`` comes first because NCCL kernels do reductions.
Only the kernel's own name and template arguments are matched, not its parameter list
(``scal_kernel<float>(cublasTransposeParams<float>)`` is not a GEMM), and the namespace
``fbgemm`` (FBGEMM_GPU, mostly embedding-table and quantisation kernels) does not count as
``gemm``.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

CLASSES = ("gemm", "attention", "memory", "other")
"""Compute classes, in the column order of the per-step summary."""
COMM = "nccl"

_PATTERNS = (
    (COMM, ("nccl", "rccl", "msccl")),
    ("attention", ("flash", "fmha", "attn", "attention", "sdpa")),
    ("gemm", ("gemm", "cutlass", "xmma", "cublas", "nvjet", "cijk_", "hipblaslt", "matmul",
              "scudnn", "splitkreduce")),
    ("memory", ("elementwise", "vectorized", "reduce", "norm", "softmax", "adam", "optimizer",
                "multi_tensor", "copy", "memcpy", "memset", "fill", "transpose", "nchwtonhwc",
                "nhwctonchw", "bn_", "dropout", "gelu", "silu", "swiglu", "rotary", "rope_", "_rope",
                "cross_entropy", "embedding", "index", "scatter", "gather", "cast", "amax",
                "quantize", "pool", "moments", "gammabeta")),
)

_NCCL_KERNEL = re.compile(r"(?:nccl|rccl)(?:Dev)?Kernel_([A-Za-z]+)", re.IGNORECASE)
_OPS = {
    "allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
    "alltoall": "all_to_all", "alltoallv": "all_to_all", "broadcast": "broadcast",
    "reduce": "reduce", "sendrecv": "sendrecv", "send": "sendrecv", "recv": "sendrecv",
    "barrier": "barrier", "gather": "gather", "scatter": "scatter",
}
_DECORATIONS = re.compile(r"^_+|_(base|coalesced|into_tensor|tensor|single)$")

# Bytes per element of the dtype names PyTorch writes in trace args ("dtype": "Float" in
# record_param_comms, "Input type": ["float"] in older traces; c10::ScalarType names).
DTYPE_BYTES = {
    "float": 4, "float32": 4, "double": 8, "float64": 8, "half": 2, "float16": 2,
    "c10::half": 2, "bfloat16": 2, "c10::bfloat16": 2, "long": 8, "int64": 8, "long int": 8,
    "int": 4, "int32": 4, "short": 2, "int16": 2, "char": 1, "signed char": 1, "int8": 1,
    "byte": 1, "unsigned char": 1, "uint8": 1, "bool": 1, "float8_e4m3fn": 1,
    "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
}


@lru_cache(maxsize=65536)
def kernel_class(name: str) -> str:
    """Class of a GPU kernel from its name (see the module table)."""
    lowered = _without_parameters(name).lower().replace("fbgemm", "fbg")
    for cls, patterns in _PATTERNS:
        if any(p in lowered for p in patterns):
            return cls
    return "other"


def compute_kernels(kernels: pd.DataFrame) -> np.ndarray:
    """Which rows of a kernels frame (``kind``, ``kernel_class`` columns) are compute kernels:
    kernels, not copies or memsets, and not NCCL's (whose time waits on the peers)."""
    return ((kernels["kind"] == "kernel") & (kernels["kernel_class"] != COMM)).to_numpy()


def _without_parameters(name: str) -> str:
    """``void k<A, f(B)>(int, float*)`` -> ``void k<A, f(B)>``: cut at the first ``(`` that is
    outside template brackets (``(anonymous namespace)`` is not a parameter list)."""
    name = name.replace("(anonymous namespace)", "anonymous")
    depth = 0
    for i, char in enumerate(name):
        if char == "<":
            depth += 1
        elif char == ">":
            depth = max(depth - 1, 0)
        elif char == "(" and depth == 0 and i > 0:
            return name[:i]
    return name


@lru_cache(maxsize=4096)
def nccl_kernel_op(name: str) -> str | None:
    """Operation in an NCCL kernel's name (``ncclKernel_AllReduce_RING_LL_Sum_float`` ->
    ``all_reduce``; ``ncclDevKernel_SendRecv`` -> ``sendrecv``); None if it names none
    (``ncclDevKernel_Generic``)."""
    found = _NCCL_KERNEL.search(name)
    return _OPS.get(found.group(1).lower()) if found else None


@lru_cache(maxsize=4096)
def collective_op(name: str) -> str:
    """PyTorch's collective name normalised to clustersim's operation names:
    ``allreduce``, ``nccl:all_reduce`` -> ``all_reduce``; ``_allgather_base``,
    ``all_gather_into_tensor`` -> ``all_gather``; ``_reduce_scatter_base`` ->
    ``reduce_scatter``; unknown names come back lower-cased."""
    text = name.strip().lower().removeprefix("nccl:")
    for _ in range(3):
        text = _DECORATIONS.sub("", text)
    return _OPS.get(text.replace("_", ""), text)


def dtype_bytes(name: object) -> int | None:
    """Bytes per element of a dtype name as PyTorch writes it, None if unknown."""
    if not isinstance(name, str):
        return None
    return DTYPE_BYTES.get(name.strip().lower().removeprefix("torch."))


def message_bytes(args: dict) -> float:
    """Message size in bytes that a kernel's or ``record_param_comms`` event's args state.

    nccl-tests' convention: the larger of input and output, so an all-gather counts its
    gathered output and a reduce-scatter its full input. Uses ``In msg nelems`` /
    ``Out msg nelems`` with ``dtype`` (PyTorch >= 2.1), else the first tensor of
    ``Input Dims`` with ``Input type``; NaN when the args say neither.
    """
    size = dtype_bytes(args.get("dtype"))
    nelems = [args.get(k) for k in ("In msg nelems", "Out msg nelems")]
    nelems = [n for n in nelems if isinstance(n, (int, float)) and n >= 0]
    if size and nelems:
        return float(max(nelems) * size)
    dims, types = args.get("Input Dims"), args.get("Input type")
    if isinstance(dims, list) and isinstance(types, list):
        for shape, kind in zip(dims, types, strict=False):
            size = dtype_bytes(kind)
            if size and isinstance(shape, list) and shape and all(isinstance(d, int) for d in shape):
                return float(math.prod(shape) * size)
    return math.nan
