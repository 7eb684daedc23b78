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


class OptimizerConfig(BaseModel):
    """``training.optimizer``: a name (``adam``, ``muon``) or a mapping with Muon's settings.

    ``ns_steps``: Newton-Schulz iterations per update (Megatron-Core ``muon_num_ns_steps``, 5);
    ``split_qkv``: the fused query-key-value weight orthogonalised as its three blocks
    (``muon_split_qkv``, True); ``nesterov``: Nesterov momentum (``muon_use_nesterov``,
    False in Megatron-Core, True in Megatron-Bridge's ``distributed_muon_with_cosine_annealing``).
    The tensor-parallel mode is Megatron-Core's default, ``blockwise``: each rank
    orthogonalises its own shard of a weight, with no communication.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: OptimizerName = OptimizerName.ADAM
    ns_steps: Annotated[int, Strict(), Field(ge=1, le=100)] = 5
    split_qkv: Annotated[bool, Strict()] = True
    nesterov: Annotated[bool, Strict()] = False

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, value: Any) -> Any:
        """``optimizer: muon`` is ``optimizer: {name: muon}``."""
        return {"name": value} if isinstance(value, str) else value

    @property
    def muon(self) -> bool:
        return self.name == OptimizerName.MUON
