"""Expert-parallel all-to-alls overlapped with another microbatch's compute: Megatron-Core's
combined 1F1B schedule (``overlap_moe_expert_parallel_comm``).

What the runtime does (NVIDIA/Megatron-LM core_v0.15.0,
``megatron/core/models/common/model_chunk_schedule_plan.py``
``TransformerLayerSchedulePlan.run``, ``megatron/core/models/gpt/fine_grained_callables.py``,
``megatron/core/pipeline_parallel/combined_1f1b.py``): the forward of one microbatch's model
chunk and the backward of another's run together, layer by layer (the forward's layer ``i``
with the backward's layer ``L - 1 - i``). Each layer is cut into nodes on two CUDA streams,
issued in this order and ordered by events:

====================  =========================================================================
stream                nodes of one layer pair (forward microbatch A, backward microbatch B)
====================  =========================================================================
communication         combine_bwd(B) | dispatch_fwd(A) -> dispatch_bwd(B) | combine_fwd(A)
computation           attn_fwd(A) -> post_attn_fwd(A) | mlp_bwd(B) -> mlp_bwd_dw(B) -> mlp_fwd(A)
                      | post_attn_bwd(B) -> attn_bwd(B) -> attn_bwd_dw(B)
====================  =========================================================================

- ``attn`` + ``post_attn``: input norm, QKV, attention, projection (with its tensor-parallel
  collectives), residual, pre-MLP norm, router and the dispatch's permutation (this module's
  *attention block*); ``mlp``: the received rows sorted by expert, the expert GEMMs and
  activation, the rows sorted back (:func:`simulator.workload.mlp_kernels.expert_block`);
  ``dispatch`` / ``combine``: the all-to-alls (with the expert tensor-parallel gather or
  reduce-scatter), the combine node also running the un-permutation and the MLP's residual add
  after its all-to-all, on the communication stream.
- dependencies: a node waits for its own microbatch's previous node; each stream runs its
  nodes in issue order; the backward's next layer starts from this layer's attention data
  gradient, the forward's from this layer's combine.
- ``delay_wgrad_compute``: the weight-gradient GEMMs (``backward_dw``) run after the data
  gradients without recording the layer's event, so the dispatch backward waits for the
  expert data gradient only.
- warm-up and cool-down passes run alone (no partner): with pipelining (interleaved only),
  ``(pp - r - 1) 2 + (v - 1) pp + 1`` of each on pipeline rank ``r`` (``schedules.py``
  ``get_pp_rank_microbatches``; rank 0's count is used), else the first forward and the last
  backward.

Priced here: the pairs' two-stream timeline, simulated node by node with the all-to-all's
NCCL kernels holding their share of the SMs while both streams run
(:func:`simulator.cost.nccl_sms.nccl_sm_share`; the compute runs at ``1 - f`` of its pace
then); a chunk's layer pairs simulated in sequence (the first four, then the steady period).
The result is the all-to-all time left exposed per layer and microbatch, the paired passes'
and the lone passes' weighted by their counts. Not modelled: the schedule's CPU-side ordering
and the p2p sends it moves onto the communication stream.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.config.scenario import Scenario
from simulator.workload.chunk_gathers import MAX_SHARE
from simulator.workload.warmup import interleaved_warmup

SIMULATED_PAIRS = 4
"""Layer pairs simulated before the steady period is extrapolated to the chunk's length (at
least 3: the period is read between the second and third)."""


@dataclass(frozen=True)
class LayerNodes:
    """Seconds of one mixture-of-experts layer's schedule nodes for one microbatch."""

    attention_forward: float
    expert_forward: float
    expert_dgrad: float
    expert_wgrad: float
    attention_dgrad: float
    attention_wgrad: float
    dispatch: float
    """One dispatch all-to-all (forward, or its backward: the same bytes)."""
    combine: float
    tail_forward: float
    """The combine node's memory-bound kernels after its all-to-all, forward."""
    tail_backward: float

    @property
    def compute(self) -> float:
        """Seconds of the layer's compute nodes (both passes)."""
        return (self.attention_forward + self.expert_forward + self.expert_dgrad + self.expert_wgrad
                + self.attention_dgrad + self.attention_wgrad)

    @property
    def serial(self) -> float:
        """Seconds of the layer's forward and backward with every node in line."""
        return self.compute + 2 * (self.dispatch + self.combine) + self.tail_forward + self.tail_backward


@dataclass(frozen=True)
class _Node:
    stream: int           # 0 computation, 1 communication
    seconds: float
    after: tuple[int, ...]


COMPUTE, COMMUNICATION = 0, 1


def _pair_nodes(nodes: LayerNodes, delay_wgrad: bool, base: int, previous: int | None) -> list[_Node]:
    """The ten nodes of one layer pair in issue order (module table); ``base``: the index of
    the pair's first node; ``previous``: the previous pair's first node index (None for the
    first pair). Node order: 0 combine_bwd, 1 attention fwd, 2 expert dgrad, 3 dispatch fwd,
    4 expert wgrad, 5 dispatch bwd, 6 expert fwd, 7 combine fwd, 8 attention dgrad,
    9 attention wgrad; without ``delay_wgrad`` a weight gradient is part of its backward node,
    so the dispatch backward and the next layer's combine backward also wait for it."""
    prev = () if previous is None else (previous,)
    expert_done = base + 4 if not delay_wgrad else base + 2
    attention_done = 8 if delay_wgrad else 9      # the event the next layer's backward waits for
    return [
        _Node(COMMUNICATION, nodes.tail_backward + nodes.combine, tuple(p + attention_done for p in prev)),
        _Node(COMPUTE, nodes.attention_forward, tuple(p + 7 for p in prev)),
        _Node(COMPUTE, nodes.expert_dgrad, (base,)),
        _Node(COMMUNICATION, nodes.dispatch, (base + 1,)),
        _Node(COMPUTE, nodes.expert_wgrad, (base + 2,)),
        _Node(COMMUNICATION, nodes.dispatch, (expert_done,)),
        _Node(COMPUTE, nodes.expert_forward, (base + 3,)),
        _Node(COMMUNICATION, nodes.combine + nodes.tail_forward, (base + 6,)),
        _Node(COMPUTE, nodes.attention_dgrad, (base + 5,)),
        _Node(COMPUTE, nodes.attention_wgrad, (base + 8,)),
    ]


def _node_ends(schedule: list[_Node], sm_share: float) -> list[float]:
    """When each node of ``schedule`` ends (s): each stream runs its nodes in list order, a
    node starts once its stream is free and the nodes it waits for have ended, and a compute
    node progresses at ``1 - sm_share`` of its pace while a communication node runs."""
    queues = ([i for i, n in enumerate(schedule) if n.stream == COMPUTE],
              [i for i, n in enumerate(schedule) if n.stream == COMMUNICATION])
    heads, running, left = [0, 0], [-1, -1], [0.0, 0.0]
    ends = [-1.0] * len(schedule)
    now, pace, finished = 0.0, 1.0 - min(sm_share, MAX_SHARE), 0
    while finished < len(schedule):
        for s in (COMPUTE, COMMUNICATION):
            if running[s] < 0 and heads[s] < len(queues[s]):
                i = queues[s][heads[s]]
                if all(ends[a] >= 0.0 for a in schedule[i].after):
                    running[s], left[s], heads[s] = i, schedule[i].seconds, heads[s] + 1
        rates = (pace if running[COMMUNICATION] >= 0 else 1.0, 1.0)
        step = min(left[s] / rates[s] for s in (COMPUTE, COMMUNICATION) if running[s] >= 0)
        now += step
        for s in (COMPUTE, COMMUNICATION):
            if running[s] >= 0:
                left[s] -= step * rates[s]
                if left[s] <= 1e-15:
                    ends[running[s]], running[s], finished = now, -1, finished + 1
    return ends


def paired_chunk_seconds(nodes: LayerNodes, layers: int, delay_wgrad: bool, sm_share: float) -> float:
    """Seconds of one forward chunk of ``layers`` layers run paired with one backward chunk
    (module docstring): the first :data:`SIMULATED_PAIRS` layer pairs simulated, the rest at
    the steady period of a simulated pair that has a successor (the last pair of a chunk ends
    earlier: nothing waits behind it) (s)."""
    simulated = min(layers, SIMULATED_PAIRS)
    schedule: list[_Node] = []
    for pair in range(simulated):
        schedule += _pair_nodes(nodes, delay_wgrad, 10 * pair, None if pair == 0 else 10 * (pair - 1))
    ends = _node_ends(schedule, sm_share)
    pair_ends = [max(ends[10 * p:10 * p + 10]) for p in range(simulated)]
    if simulated == layers:
        return pair_ends[-1]
    period = pair_ends[-2] - pair_ends[-3]       # a pair with a successor: the last ends early
    return pair_ends[-1] + (layers - simulated) * period


def lone_pass_share(scenario: Scenario, microbatches: int) -> float:
    """Share of a step's forward and backward chunk passes that run without a partner:
    ``w / (m v)`` with ``w`` = ``(pp - 1) 2 + (v - 1) pp + 1`` on pipeline rank 0 (interleaved
    schedule), or 1 (no pipelining: the first forward and the last backward); at most 1."""
    par = scenario.parallelism
    v = par.virtual_stages
    warmup = 1 if par.pp == 1 else interleaved_warmup(par.pp, 0, microbatches, v) + 1
    return min(1.0, warmup / max(microbatches * v, 1))


def exposed_seconds(nodes: LayerNodes, layers: int, delay_wgrad: bool, sm_share: float,
                    lone_share: float) -> float:
    """All-to-all seconds a layer leaves exposed per microbatch (forward and backward), over
    what the layer's passes charge in line (its compute nodes and the combine's memory-bound
    tail): paired passes ``max(T_pair / L - inline, 0)``, lone passes every all-to-all,
    weighted by ``lone_share`` (s)."""
    inline = nodes.compute + nodes.tail_forward + nodes.tail_backward
    paired = paired_chunk_seconds(nodes, layers, delay_wgrad, sm_share) / layers - inline
    return (1.0 - lone_share) * max(paired, 0.0) + lone_share * (nodes.serial - inline)
