"""The DP x TP x PP x CP rank grid on the cluster's GPUs, and its process groups.

Megatron-LM's order (tensor fastest, then context, then data, then pipeline):

    gpu = tp_rank + tp * (cp_rank + cp * (dp_rank + dp * pp_rank))

so tensor-parallel groups sit inside a node whenever tp divides the GPUs per node,
data-parallel peers are ``tp * cp`` GPUs apart, and each pipeline stage owns a
contiguous block of ``tp * cp * dp`` GPUs. With ``pp_inner`` (``parallelism.rank_order:
tp-cp-pp-dp``, NeMo's ``use_tp_pp_dp_mapping``, Megatron-Core ``order="tp-cp-ep-pp-dp"``)
pipeline comes before data:

    gpu = tp_rank + tp * (cp_rank + cp * (pp_rank + pp * dp_rank))

so each pipeline replica owns a contiguous block of ``tp * cp * pp`` GPUs (one NVLink
domain of a GB200 NVL72 rack in MLPerf's Llama 3.1 405B runs) and data-parallel peers are
``tp * cp * pp`` GPUs apart.

Experts follow Megatron-Core's expert rank generator (order tp-ep-dp within a stage, expert
tensor parallelism ``etp``, default ``tp``): the stage's ``i``-th rank in the dense order above
(``i = tp_rank + tp (cp_rank + cp dp_rank)``) is expert rank

    i = etp_rank + etp (ep_rank + ep edp_rank)

so an expert-parallel group is ``ep`` ranks ``etp`` apart, and with ``etp = tp`` the ``ep``
consecutive data-and-context-parallel peers of a tensor-parallel rank. Under ``tp-cp-pp-dp``
the generator's order is tp-ep-pp-dp, ``gpu = etp_rank + etp (ep_rank + ep (pp_rank + pp
edp_rank))``; Megatron-Core accepts it with pipeline stages only when ``etp ep = tp cp``
(:func:`simulator.config.checks._check_pp_inner_experts`), and then it is the formula above
(an expert block is one replica's stage block), as it is with one stage.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Layout:
    tp: int
    pp: int
    dp: int
    cp: int = 1
    ep: int = 1
    pp_inner: bool = False
    """Pipeline ranks before data ranks in the GPU order (module docstring)."""
    etp: int | None = None
    """Expert tensor parallelism (None: ``tp``; module docstring)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.tp, self.pp, self.dp, self.cp, self.ep, self.pp_inner,
                                                self.etp)))

    def __hash__(self) -> int:
        """The fields' hash, computed once: a layout is in the key of most memo look-ups of a
        search (tens of thousands)."""
        return self._hash

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    def gpu(self, tp_rank: int = 0, cp_rank: int = 0, dp_rank: int = 0, pp_rank: int = 0) -> int:
        if self.pp_inner:
            return tp_rank + self.tp * (cp_rank + self.cp * (pp_rank + self.pp * dp_rank))
        return tp_rank + self.tp * (cp_rank + self.cp * (dp_rank + self.dp * pp_rank))

    @property
    def stage_stride(self) -> int:
        """GPUs between a rank of stage ``s`` and the same rank of stage ``s + 1``: a stage's
        GPUs are stage 0's shifted by ``s`` times this (``tp cp dp``, or ``tp cp`` with
        ``pp_inner``)."""
        return self.tp * self.cp * (1 if self.pp_inner else self.dp)

    def stage_of(self, gpu: int) -> int:
        """The pipeline stage GPU ``gpu`` belongs to."""
        return gpu // self.stage_stride % self.pp

    def tp_group(self, stage: int = 0) -> tuple[int, ...]:
        return tuple(self.gpu(tp_rank=i, pp_rank=stage) for i in range(self.tp))

    def cp_group(self, stage: int = 0) -> tuple[int, ...]:
        return tuple(self.gpu(cp_rank=i, pp_rank=stage) for i in range(self.cp))

    def dp_group(self, stage: int = 0, tp_rank: int = 0, cp_rank: int = 0) -> tuple[int, ...]:
        return tuple(self.gpu(tp_rank, cp_rank, i, stage) for i in range(self.dp))

    @property
    def expert_tp(self) -> int:
        """Expert tensor-parallel size: ``etp``, or ``tp`` when unset."""
        return self.etp or self.tp

    def stage_rank(self, index: int, stage: int) -> int:
        """The GPU of a stage's ``index``-th rank in the dense order ``tp_rank + tp (cp_rank +
        cp dp_rank)``."""
        tp, cp = self.tp, self.cp
        return self.gpu(index % tp, index // tp % cp, index // (tp * cp), stage)

    def expert_rank(self, etp_rank: int, ep_rank: int, edp_rank: int, stage: int = 0) -> int:
        """The GPU of expert rank (``etp_rank``, ``ep_rank``, ``edp_rank``) on ``stage``
        (module docstring)."""
        return self.stage_rank(etp_rank + self.expert_tp * (ep_rank + self.ep * edp_rank), stage)

    def expert_group(self, block: int = 0, stage: int = 0, tp_rank: int = 0) -> tuple[int, ...]:
        """Expert-parallel group ``block`` at expert tensor-parallel rank ``tp_rank``: ``ep``
        ranks ``etp`` apart (Megatron-Core's expert rank generator, order tp-ep-dp-pp: with
        ``etp = tp`` the ``ep`` consecutive data-and-context ranks ``j = cp_rank + cp dp_rank``
        from ``block ep``; context-parallel ranks fold into expert data parallelism)."""
        return tuple(self.expert_rank(tp_rank, e, block, stage) for e in range(self.ep))

    @property
    def expert_blocks(self) -> int:
        """Expert-parallel groups per expert tensor-parallel rank on a stage: the expert
        data-parallel size ``tp dp cp / (etp ep)``."""
        return max(1, self.tp * self.dp * self.cp // (self.expert_tp * self.ep))

    @property
    def expert_replicas(self) -> int:
        """Data-parallel replicas one expert-parallel block (``etp ep`` consecutive ranks)
        spans (1 when it lies inside one)."""
        return max(1, self.expert_tp * self.ep // (self.tp * self.cp))

    def replica_expert_groups(self, replica: int, stage: int) -> list[tuple[int, ...]]:
        """The expert-parallel groups that hold ranks of one (replica, stage)."""
        ranks = {self.stage_rank(i, stage) for i in range(replica * self.tp * self.cp,
                                                          (replica + 1) * self.tp * self.cp)}
        return [g for g in self.stage_expert_groups(stage) if ranks.intersection(g)]

    def entity_tp_groups(self, replica: int, stage: int) -> list[tuple[int, ...]]:
        """Tensor-parallel groups of one (replica, stage): one per context-parallel rank."""
        return [tuple(self.gpu(t, c, replica, stage) for t in range(self.tp)) for c in range(self.cp)]

    def entity_cp_groups(self, replica: int, stage: int) -> list[tuple[int, ...]]:
        """Context-parallel groups of one (replica, stage): one per tensor-parallel rank."""
        return [tuple(self.gpu(t, c, replica, stage) for c in range(self.cp)) for t in range(self.tp)]

    def stage_expert_groups(self, stage: int = 0) -> list[tuple[int, ...]]:
        """Every expert-parallel group of a stage: they exchange tokens at the same time."""
        return [self.expert_group(b, stage, t) for b in range(self.expert_blocks)
                for t in range(self.expert_tp)]

    def expert_tp_group(self, stage: int = 0) -> tuple[int, ...]:
        """The first expert tensor-parallel group of a stage: ``etp`` consecutive ranks."""
        return tuple(self.expert_rank(t, 0, 0, stage) for t in range(self.expert_tp))

    def stage_expert_tp_groups(self, stage: int = 0) -> list[tuple[int, ...]]:
        """Every expert tensor-parallel group of a stage."""
        return [tuple(self.expert_rank(t, e, b, stage) for t in range(self.expert_tp))
                for b in range(self.expert_blocks) for e in range(self.ep)]

    @property
    def expert_dp(self) -> int:
        """Ranks of one expert-data-parallel group: ``tp dp cp / (etp ep)`` (the ranks that
        hold the same experts; Megatron-Core's ``expert_data_parallel_size``)."""
        return self.expert_blocks

    def stage_expert_dp_groups(self, stage: int = 0) -> list[tuple[int, ...]]:
        """Every expert-data-parallel group of a stage: per expert tensor-parallel rank and
        position ``e`` in an expert-parallel group, the ``e``-th rank of each group
        (:meth:`expert_group`), which holds the same experts and reduces their gradients."""
        return [tuple(self.expert_rank(t, e, b, stage) for b in range(self.expert_blocks))
                for t in range(self.expert_tp) for e in range(self.ep)]

    def all_dp_groups(self) -> list[tuple[int, ...]]:
        """Every data-parallel group of every stage: they reduce gradients at the same time."""
        return [group for stage in range(self.pp) for group in self.stage_dp_groups(stage)]

    @property
    def gradient_ranks(self) -> int:
        """Ranks that reduce one copy of the dense gradients together: ``dp cp``. Context-parallel
        ranks hold the same weights and see different tokens, so their gradients are summed with
        the data-parallel ranks' in one collective (Megatron-Core ``DistributedDataParallel`` and
        its distributed optimizer use ``get_data_parallel_group(with_context_parallel=True)``,
        core_v0.12.0 ``distributed_data_parallel.py``, ``optimizer/__init__.py``; torchtitan and
        FSDP shard over ``dp_shard_cp``)."""
        return self.dp * self.cp

    def stage_gradient_groups(self, stage: int) -> list[tuple[int, ...]]:
        """The groups that reduce one stage's dense gradients: per tensor-parallel rank its
        :attr:`gradient_ranks` data- and context-parallel ranks (cp fastest): the ZeRO-3 shard
        groups without hybrid sharding."""
        return self.stage_shard_groups(stage)

    def stage_dp_groups(self, stage: int) -> list[tuple[int, ...]]:
        """The data-parallel groups of one stage (one per tensor- and context-parallel rank, tp
        fastest): :meth:`dp_group` of each, the grid's GPUs taken at once (:meth:`_grid`)."""
        grid = self._grid(stage)                        # (tp, cp, dp)
        return list(map(tuple, grid.transpose(1, 0, 2).reshape(-1, self.dp).tolist()))

    def stage_shard_groups(self, stage: int, shard: int | None = None) -> list[tuple[int, ...]]:
        """Groups that ZeRO-3/FSDP shards parameters over on ``stage``: the data- and
        context-parallel ranks of each tensor-parallel rank (Megatron and torchtitan shard
        over dp x cp; context-parallel ranks hold the same weights), cut into blocks of
        ``shard`` consecutive ranks with hybrid sharding."""
        ranks = self._shard_ranks(stage)
        shard = shard or len(ranks[0])
        return [tuple(r[i:i + shard]) for r in ranks for i in range(0, len(r), shard)]

    def stage_replica_groups(self, stage: int, shard: int) -> list[tuple[int, ...]]:
        """With hybrid sharding, the ranks holding the same shard (one per block) on ``stage``."""
        return [tuple(r[i::shard]) for r in self._shard_ranks(stage) for i in range(shard)]

    def _shard_ranks(self, stage: int) -> list[list[int]]:
        """Per tensor-parallel rank, the stage's data- and context-parallel ranks (cp fastest)."""
        return self._grid(stage).transpose(0, 2, 1).reshape(self.tp, -1).tolist()

    def _grid(self, stage: int) -> np.ndarray:
        """The GPUs of ``stage`` by (tp rank, cp rank, dp rank): :meth:`gpu` of every rank at
        once (int64, the same integers)."""
        return np.asarray(self.gpu(np.arange(self.tp)[:, None, None], np.arange(self.cp)[None, :, None],
                                   np.arange(self.dp)[None, None, :], stage), dtype=np.int64)

    def embedding_groups(self) -> list[tuple[int, int]]:
        """The embedding groups: each GPU of the first stage with the GPU at the same tensor,
        context and data-parallel position on the last (Megatron's ``embedding_group``)."""
        order = (2, 1, 0)                               # dp, cp, tp (tp fastest)
        first = self._grid(0).transpose(order).ravel().tolist()
        last = self._grid(self.pp - 1).transpose(order).ravel().tolist()
        return list(zip(first, last, strict=True))

    def pp_pair(self, stage: int) -> tuple[int, int]:
        """(sender, receiver) GPUs between stage ``stage`` and ``stage + 1`` (replica 0)."""
        return self.gpu(pp_rank=stage), self.gpu(pp_rank=stage + 1)
