"""The optimizer a scenario trains with (``training.optimizer``): Adam, or Muon.

Muon (Jordan et al. 2024; Liu et al., "Muon is Scalable for LLM Training", arXiv:2502.16982)
keeps one momentum buffer per matrix parameter and orthogonalises the momentum by a few
Newton-Schulz iterations before each update; the embedding, the output layer and every
parameter that is not a matrix (norms, biases) stay with Adam. As Megatron-Core runs it
(``--optimizer muon`` with ``--use-distributed-optimizer``, or the older ``dist_muon``:
``megatron/core/optimizer/emerging_optimizers.py`` ``TensorParallelMuon`` and
``layer_wise_optimizer.py`` ``LayerWiseDistributedOptimizer`` at NVIDIA/Megatron-LM d48bd6be0a,
with NVIDIA-NeMo/Emerging-Optimizers ``orthogonalized_optimizers``); what it costs is priced in
:mod:`simulator.workload.muon`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, Strict, model_validator


class OptimizerName(StrEnum):
    """Which optimizer updates the matrix parameters."""

    ADAM = "adam"
    MUON = "muon"


class StateDtype(StrEnum):
    """A dtype Megatron-Core's precision-aware optimizer may keep a state tensor in."""

    FP32 = "fp32"
    FP16 = "fp16"
    BF16 = "bf16"
    FP8 = "fp8"

    @property
    def nbytes(self) -> int:
        return {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}[self.value]


class OptimizerConfig(BaseModel):
    """``training.optimizer``: a name (``adam``, ``muon``) or a mapping with Muon's settings or
    Adam's state dtypes.

    ``ns_steps``: Newton-Schulz iterations per update (Megatron-Core ``muon_num_ns_steps``, 5);
    ``split_qkv``: the fused query-key-value weight orthogonalised as its three blocks
    (``muon_split_qkv``, True); ``nesterov``: Nesterov momentum (``muon_use_nesterov``,
    False in Megatron-Core, True in Megatron-Bridge's ``distributed_muon_with_cosine_annealing``).
    The tensor-parallel mode is Megatron-Core's default, ``blockwise``: each rank
    orthogonalises its own shard of a weight, with no communication.

    ``precision_aware``: Megatron-Core's ``use_precision_aware_optimizer`` (TransformerEngine's
    ``FusedAdam`` holds the state): ``master_dtype`` (``main_params_dtype``), ``exp_avg_dtype``
    and ``exp_avg_sq_dtype`` (fp32 unless stated; Megatron-Core asserts they stay fp32 without
    it) and ``param_remainders`` (``store_param_remainders``, True: with fp32 master weights
    over bf16 parameters only the 16 bits the bf16 weight lacks are kept,
    :meth:`state_bytes`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: OptimizerName = OptimizerName.ADAM
    ns_steps: Annotated[int, Strict(), Field(ge=1, le=100)] = 5
    split_qkv: Annotated[bool, Strict()] = True
    nesterov: Annotated[bool, Strict()] = False
    precision_aware: Annotated[bool, Strict()] = False
    master_dtype: StateDtype = StateDtype.FP32
    exp_avg_dtype: StateDtype = StateDtype.FP32
    exp_avg_sq_dtype: StateDtype = StateDtype.FP32
    param_remainders: Annotated[bool, Strict()] = True

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, value: Any) -> Any:
        """``optimizer: muon`` is ``optimizer: {name: muon}``."""
        return {"name": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _state_dtypes_need_precision_aware(self) -> OptimizerConfig:
        """Megatron-Core: the state dtypes "can only be fp32 when not using precision-aware
        optimizer", which is "only supported with adam"; master weights are 16 or 32 bits."""
        lowered = [name for name in ("master_dtype", "exp_avg_dtype", "exp_avg_sq_dtype")
                   if getattr(self, name) != StateDtype.FP32]
        if lowered and not self.precision_aware:
            raise ValueError(f"{', '.join(lowered)} other than fp32 needs precision_aware: true "
                             "(Megatron-Core's --use-precision-aware-optimizer)")
        if self.precision_aware and self.muon:
            raise ValueError("precision_aware is Adam's (Megatron-Core supports it only with adam)")
        if self.master_dtype == StateDtype.FP8:
            raise ValueError("master_dtype takes fp32, fp16 or bf16")
        return self

    def state_bytes(self, params_bf16: bool, fp32_master_in_core: bool) -> float | None:
        """Optimizer-state bytes per parameter under ``precision_aware`` (None without: the
        memory model's default, 12 with 16-bit parameters): master weight plus the two moments.
        The master weight is 2 bytes in fp16 or bf16, and in fp32 over ``params_bf16`` with
        ``param_remainders`` (TransformerEngine >= 2.1 ``FusedAdam`` ``store_param_remainders``:
        an int16 of the low bits, Megatron-Core d98e8a64dd ``distrib_optimizer.py``), unless
        ``fp32_master_in_core`` (fp8 current or block scaling with fp32 master weights:
        Megatron-Core keeps them itself, 4 bytes); else 4."""
        if not self.precision_aware:
            return None
        master = self.master_dtype.nbytes
        if self.master_dtype == StateDtype.FP32 and self.param_remainders and params_bf16 \
                and not fp32_master_in_core:
            master = 2
        return float(master + self.exp_avg_dtype.nbytes + self.exp_avg_sq_dtype.nbytes)

    @property
    def muon(self) -> bool:
        return self.name == OptimizerName.MUON
