"""Context parallelism (ring attention): the collectives and memory-bound merges one layer
runs per microbatch, as the stack's ``context_parallel`` profile says.

``generic`` (the first cp model, every stack not checked): each rank's K and V blocks go
round the cp ring three times per pass, priced as three all-gathers of the whole K/V
sequence in forward and three in backward; nothing else.

``torch``: PyTorch's ``_templated_ring_attention`` and its backward
(torch/distributed/tensor/experimental/_attention.py at the December 2024 commits torchtitan
benchmarked; docs/research/stack_facts.md section 4), with the default ``_cp_options``
(``rotate_method`` ALL_GATHER, ``convert_to_f32`` and ``enable_load_balance`` True):

- forward: one all-gather of every rank's ``cat([K, V])`` (``_AllGatherRotater``, issued at
  ring step 0 and read block by block), then ``cp`` local SDPA calls whose outputs are merged
  in fp32 (``_SDPAMerger``: the running output and log-sum-exp upcast once, then
  ``out - sigmoid(lse_b - lse) * (out - out_b)`` per step, cast back at the end);
- backward: the K/V all-gather again (``kv_rotater``, the default method) and, per ring
  step, the step's dK and dV added to the accumulator received from the previous rank and
  sent on in fp32 (``dkv_rotater``, ALL_TO_ALL: ``ft_c.permute_tensor`` to rank + 1, a ring
  shift; ``cp`` of them, the last returning the finished gradient), dQ accumulated in fp32;
- the forward ring runs again in backward when the layer's attention is recomputed.
- Under torch.compile the functional collectives are traced with their ``wait_tensor``
  right after them (``_maybe_wrap_tensor`` when ``_are_we_tracing()``) and Inductor moves
  no collective unless ``reorder_for_compute_comm_overlap`` (default False) is set: every
  collective is in line (priced fully exposed). Eagerly (``context_parallel.eager_ring``: NeMo
  AutoModel wraps SDPA in ``torch._dynamo.disable``) an ``AsyncCollectiveTensor`` is waited
  where it is read: the all-gather issued at step 0 (``_AllGatherRotater.exchange_buffers``) is
  read at step 1 (``next_buffer``), so it runs beside step 0's attention, and the dK/dV shift
  sent after each backward step is read after the next step's backward, so all but the last
  run beside one step's backward (each step ``1/cp`` of the layer's attention, the balanced
  halves).
- The merges and accumulations are memory-bound: bytes per element of the local Q-shaped
  (``E_q``) and K-shaped (``E_kv``) tensors, each tensor read and written once per step (the
  fused count; eager runs more kernels):
  forward ``E_q (12 + 10 (cp - 1)) + 4 E_kv`` (fp32 upcast 6 and downcast 6; per merge read
  the fp32 output 4 and the block's bf16 output 2, write 4; the all-gather's ``cat`` of K and
  V 4), backward ``E_q (10 cp + 6) + E_kv (20 cp + 16)`` (per step dQ, dK and dV: read the
  fp32 accumulator 4 and the block's bf16 gradient 2, write 4; the final casts 6; the
  all-gather's ``cat`` 4).

``p2p``: TransformerEngine's ``AttnFuncWithCP`` (transformer_engine/pytorch/attention.py,
v1.4 to v1.9, the versions of NeMo 24.03-24.09 and Megatron-Core's ``cp_comm_type`` "p2p"
default; docs/research/stack_facts.md section 7), which Megatron-Core's attention calls with
the key/value heads as they are (GQA kept):

- forward: ``cp`` steps; step ``i < cp - 1`` first issues the send of the K/V block it holds
  to rank + 1 and the receive of the next from rank - 1 (``flash_attn_p2p_communicate``,
  bf16 ``cat([K, V])``), then computes its own block's attention and waits for the exchange
  only at step ``i + 1``: each exchange is hidden behind one step's attention, and only what
  it takes longer shows;
- backward: ``cp`` steps; step ``i`` sends the K/V it holds together with the dK/dV
  accumulated so far (one ``[2, K/V]`` buffer, in the K/V dtype), only K/V at step 0 and
  only dK/dV at the last, and waits after computing its block's backward;
- with causal masking the load-balanced halves make every step the same work: the diagonal
  block causal, the others half a block, so a step is ``1/cp`` of the layer's attention;
- memory-bound work in the K/V dtype (2 B): per forward step the output correction
  ``out += out_i exp(lse_i - lse)`` (read 2 + 2, write 2 per ``E_q`` element) and the
  initial ``cat`` of K and V (read and write 4 per ``E_kv``); per backward step ``dq``
  accumulated (6 per ``E_q``), ``cat([dK, dV])`` (8 per ``E_kv``) and its add into the
  received dK/dV (12 per ``E_kv``): forward ``6 cp E_q + 8 E_kv``, backward
  ``cp (6 E_q + 20 E_kv)``;
- the forward ring runs again in backward when the layer's attention is recomputed.
  Exchanges are not replayed as flows by the discrete-event engine (their exposed remainder
  stays in the layer's time, as for overlapped tensor-parallel collectives).

``all_gather``: TransformerEngine's ``AttnFuncWithCPAndKVAllGather`` (Megatron-Core
``--cp-comm-type all_gather``; ``transformer_engine/pytorch/attention.py`` at v1.12), the
all-gather context parallelism of the Llama 3 paper (sec. 3.3.2), which is not a ring:

- forward: K and V all-gathered (``gather_along_first_dim``, one collective each), then the
  local query chunks attend to the gathered prefix (the balanced halves, no merges);
- backward: K and V all-gathered again, and dK and dV reduce-scattered
  (``reduce_scatter_along_first_dim``), all in line; again for a recomputed forward.
  Not replayed as flows by the discrete-event engine: a layer's count of them per pass is
  fractional for the average layer of a chunk, so the DES keeps their time in the layer's.

``ulysses``: DeepSpeed-Ulysses' ``DistributedAttention`` (deepspeed/sequence/layer.py,
v0.14-v0.16; docs/research/stack_facts.md section 7), which is not a ring: each rank trades
its sequence shard of every head for the whole sequence of ``heads/cp`` heads, so attention
runs locally on the full sequence (the same FLOPs per rank as the balanced ring):

- forward: all-to-alls of q, k and v (``_SeqAllToAll``, scatter heads, gather sequence)
  before attention and of its output after; backward the same four in reverse, for the
  output gradient and dq, dk, dv; all in line (``sp_stream`` unset, the default), and again
  for a recomputed forward;
- each all-to-all copies its input into a head-major contiguous buffer and its output back
  (``permute(...).contiguous()`` before, ``post_all2all`` after): read and write 2 B per
  element twice, 8 B per element of q, k, v or output;
- DeepSpeed asserts that the scattered head count divides by the sequence-parallel size.

``exchanged_heads: all`` sends K and V for every query head: torchtitan's Llama repeats the
key/value heads (``repeat_kv``) before ``F.scaled_dot_product_attention``, so the ring
carries ``heads`` heads, not ``kv_heads`` (pytorch/torchtitan 9dec370
torchtitan/models/llama/model.py ``Attention.forward``).

The layer cost keeps one cp figure for both passes, so the totals are split evenly
between forward and backward (:func:`cp_seconds`).
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.collectives import Group, Op
from simulator.config.scenario import Recompute, RecomputeModule, Scenario
from simulator.config.stack import CpHeads, CpRing, SelectiveRecompute, StackProfile
from simulator.cost.collective import CollectiveModel, PricedCollective
from simulator.cost.compute import ComputeModel
from simulator.cost.forced import bound_algorithm
from simulator.cost.in_layer import in_layer_terms
from simulator.cost.nccl_sms import excess_beside, nccl_sm_share
from simulator.workload.layer_shape import AttentionShape, LayerShape
from simulator.workload.layout import Layout
from simulator.workload.transformer import layer_forward

GENERIC_PASSES = 3
"""K/V ring passes per forward and per backward in the ``generic`` cp model."""
FP32_BYTES = 4


@dataclass(frozen=True)
class CpCollective:
    """A collective one layer runs ``forward`` / ``backward`` times per microbatch."""

    collective: PricedCollective
    forward: int
    backward: int

    @property
    def per_pass(self) -> float:
        """Runs per pass when the two passes share the cost evenly."""
        return (self.forward + self.backward) / 2


@dataclass(frozen=True)
class CpCost:
    """One layer's context-parallel work per microbatch: collectives in line, merge bytes,
    and ring exchanges each hidden behind one ring step's attention (``overlapped``: their
    ``forward`` / ``backward`` count the exchanges behind a forward step, the recomputed
    ones included, and behind a backward step; a step's attention is ``step_flops`` =
    (forward, backward) FLOPs)."""

    collectives: tuple[CpCollective, ...]
    merge_forward_bytes: float = 0.0
    merge_backward_bytes: float = 0.0
    overlapped: tuple[CpCollective, ...] = ()
    step_flops: tuple[float, float] = (0.0, 0.0)
    step_shape: AttentionShape | None = None
    """A step's attention kernels' shape (the rank's ``s/cp`` query tokens, ``cp`` calls)."""
    replayed: bool = True
    """Whether the discrete-event engine replays ``collectives`` as flows when the cp group
    spans servers (else their time stays in the layer's)."""
    sm_share: float = 0.0
    """Share of the SMs an overlapped exchange's NCCL kernels hold while it runs beside its
    step's attention (:func:`simulator.cost.nccl_sms.nccl_sm_share` of the cp group)."""


def exchanged_elements(stack: StackProfile, shape: LayerShape) -> tuple[float, float]:
    """(E_q, E_kv): elements of this GPU's local Q-shaped and exchanged K-shaped tensors,
    ``b (a/t) (s/cp) d`` and ``b (a_kv/t) (s/cp) d`` (``a_kv = a`` when the stack repeats
    the K/V heads before attention). With latent attention ``d`` is the mean of the query/key
    and value head widths, ``(d_qk + d_v) / 2``, so that K and V together are right."""
    mdl = shape.model
    heads = mdl.heads if stack.context_parallel.exchanged_heads == CpHeads.ALL else mdl.kv_heads
    per_head = shape.tokens * (mdl.d_head + mdl.d_value) / 2 / shape.tp
    return mdl.heads * per_head, heads * per_head


def attention_recomputed(scenario: Scenario, stack: StackProfile) -> float:
    """The share of the layers whose attention core (and so its cp ring) backward reruns:
    full recompute's share (``recompute_fraction``), or 1 under selective recompute of the
    attention core (Megatron; with ``recompute_modules``, only where ``core_attn`` is named);
    0 under torchtitan's per-op checkpointing, which saves attention's output."""
    mode = scenario.parallelism.recompute
    modules = scenario.parallelism.recomputed_modules
    if modules is not None:
        return float(RecomputeModule.CORE_ATTN in modules)
    if mode == Recompute.FULL:
        return scenario.parallelism.full_recompute_share
    saved = stack.recompute.selective == SelectiveRecompute.EVERY_SECOND_MATMUL
    return float(mode == Recompute.SELECTIVE and not saved)


def torch_merge_bytes(e_q: float, e_kv: float, cp: int) -> tuple[float, float]:
    """(forward, backward) bytes of PyTorch ring attention's fp32 merges and gradient
    accumulations in one layer: ``E_q (12 + 10 (cp-1)) + 4 E_kv`` and
    ``E_q (10 cp + 6) + E_kv (20 cp + 16)`` (module docstring)."""
    forward = e_q * (12 + 10 * (cp - 1)) + 4 * e_kv
    backward = e_q * (10 * cp + 6) + e_kv * (20 * cp + 16)
    return forward, backward


def cp_cost(scenario: Scenario, stack: StackProfile, shape: LayerShape,
            collectives: CollectiveModel, layout: Layout) -> CpCost | None:
    """One layer's context-parallel collectives and merge bytes (None with cp = 1)."""
    if layout.cp == 1:
        return None
    if stack.context_parallel.ring == CpRing.P2P:
        return _p2p_cost(scenario, stack, shape, collectives, layout)
    if stack.context_parallel.ring == CpRing.ULYSSES:
        return _ulysses_cost(scenario, stack, shape, collectives, layout)
    if stack.context_parallel.ring == CpRing.ALL_GATHER:
        return _all_gather_cost(scenario, stack, shape, collectives, layout)
    e_q, e_kv = exchanged_elements(stack, shape)
    gather = _kv_all_gather(2 * e_kv * shape.dtype_bytes, collectives, layout)
    if stack.context_parallel.ring == CpRing.GENERIC:
        return CpCost((CpCollective(gather, GENERIC_PASSES, GENERIC_PASSES),))
    rerun = attention_recomputed(scenario, stack)
    shift = _ring_shift(2 * e_kv * FP32_BYTES, collectives, layout)
    merge_f, merge_b = torch_merge_bytes(e_q, e_kv, layout.cp)
    if stack.context_parallel.eager_ring:     # the gathers and all but the last shift beside a step
        return _beside_steps((CpCollective(shift, 0, 1),), merge_f, merge_b + rerun * merge_f,
                             (CpCollective(gather, 1 + rerun, 1), CpCollective(shift, 0, layout.cp - 1)),
                             shape, collectives, layout)
    return CpCost((CpCollective(gather, 1, 1 + rerun), CpCollective(shift, 0, layout.cp)),
                  merge_f, merge_b + rerun * merge_f)


def _beside_steps(in_line: tuple[CpCollective, ...], merge_forward: float, merge_backward: float,
                  overlapped: tuple[CpCollective, ...], shape: LayerShape, collectives: CollectiveModel,
                  layout: Layout) -> CpCost:
    """A ring whose ``overlapped`` exchanges each run beside one ring step, ``1/cp`` of the
    layer's attention (forward, and backward at the kernel's backward ratio), holding the cp
    group's NCCL SM share (:func:`~simulator.cost.nccl_sms.nccl_sm_share`)."""
    kernels = layer_forward(shape)
    attention = kernels.attention_flops / layout.cp
    return CpCost(in_line, merge_forward, merge_backward, overlapped,
                  (attention, kernels.attention_shape.backward_ratio * attention), kernels.attention_shape,
                  sm_share=nccl_sm_share(Group(collectives.cluster, layout.cp_group())))


def _p2p_cost(scenario: Scenario, stack: StackProfile, shape: LayerShape,
              collectives: CollectiveModel, layout: Layout) -> CpCost:
    """TransformerEngine's K/V ring (module docstring): per layer ``cp - 1`` K/V exchanges
    in forward (again in backward when attention is recomputed), in backward ``cp - 2``
    exchanges of K/V with dK/dV and two of one of them; a step's attention is ``1/cp`` of
    the layer's."""
    cp, rerun = layout.cp, attention_recomputed(scenario, stack)
    e_q, e_kv = exchanged_elements(stack, shape)
    block = 2 * e_kv * shape.dtype_bytes
    single = _ring_shift(block, collectives, layout)
    double = _ring_shift(2 * block, collectives, layout)
    forward, backward = 6 * cp * e_q + 8 * e_kv, cp * (6 * e_q + 20 * e_kv)
    return _beside_steps((), forward, backward + rerun * forward,
                         (CpCollective(single, (cp - 1) * (1 + rerun), 2),
                          CpCollective(double, 0, max(cp - 2, 0))), shape, collectives, layout)


def _all_gather_cost(scenario: Scenario, stack: StackProfile, shape: LayerShape,
                     collectives: CollectiveModel, layout: Layout) -> CpCost:
    """TE's K/V all-gather cp (module docstring): per forward all-gathers of K and V
    (``E_kv`` elements each), per backward the same again plus reduce-scatters of dK and dV,
    in line; a recomputed forward gathers again."""
    rerun = attention_recomputed(scenario, stack)
    _, e_kv = exchanged_elements(stack, shape)
    block = e_kv * shape.dtype_bytes
    gather = _kv_all_gather(block, collectives, layout)
    scatter = _kv_reduce_scatter(block, collectives, layout)
    return CpCost((CpCollective(gather, 2, 2 * (1 + rerun)), CpCollective(scatter, 0, 2)),
                  replayed=False)


ULYSSES_COPY_BYTES = 8
"""Bytes per element the Ulysses all-to-all's two layout copies move (read and write 2 B, twice)."""


def _ulysses_cost(scenario: Scenario, stack: StackProfile, shape: LayerShape,
                  collectives: CollectiveModel, layout: Layout) -> CpCost:
    """DeepSpeed-Ulysses (module docstring): per pass two all-to-alls of ``E_q`` elements (q
    and the output, or their gradients) and two of ``E_kv`` (k and v), in line, again for a
    recomputed forward; 8 B of layout copies per element moved."""
    rerun = attention_recomputed(scenario, stack)
    e_q, e_kv = exchanged_elements(stack, shape)
    q = _all_to_all(e_q * shape.dtype_bytes, collectives, layout)
    kv = _all_to_all(e_kv * shape.dtype_bytes, collectives, layout)
    copies = ULYSSES_COPY_BYTES * 2 * (e_q + e_kv)
    return CpCost((CpCollective(q, 2, 2 * (1 + rerun)), CpCollective(kv, 2, 2 * (1 + rerun))),
                  copies, copies * (1 + rerun))


def cp_seconds(cost: CpCost | None, compute: ComputeModel) -> float:
    """Seconds charged to each pass: half of the layer's collectives in line (fully
    exposed), of its overlapped exchanges' excess over their step's attention,
    ``max(0, t_exchange - t_step)`` each, and of its merges (at HBM bandwidth)."""
    if cost is None:
        return 0.0
    comm = sum(c.per_pass * c.collective.time_s for c in cost.collectives)
    comm += _overlapped_excess(cost, compute) / 2
    merges = cost.merge_forward_bytes + cost.merge_backward_bytes
    if merges > 0.0:
        comm += float(compute.memory_time(merges)) / 2
    return comm


def _overlapped_excess(cost: CpCost, compute: ComputeModel) -> float:
    """Seconds the overlapped exchanges of both passes add to their steps' attention: a step
    ``a`` beside an exchange ``x`` whose NCCL kernels hold a share ``f`` of the SMs ends at
    ``max(a', x)``, ``a'`` = ``a + f min(x, a / (1 - f))``
    (:func:`simulator.cost.nccl_sms.excess_beside`; ``max(0, x - a)`` with ``f`` = 0)."""
    if not cost.overlapped:
        return 0.0
    step_f = compute.attention_time(cost.step_flops[0], False, cost.step_shape)
    step_b = compute.attention_time(cost.step_flops[1], True, cost.step_shape)
    return sum(c.forward * excess_beside(step_f, c.collective.time_s, cost.sm_share)
               + c.backward * excess_beside(step_b, c.collective.time_s, cost.sm_share)
               for c in cost.overlapped)


def _cp_collective(op: Op, nbytes: float, name: str, collectives: CollectiveModel,
                   layout: Layout) -> PricedCollective:
    """``op`` on ``nbytes`` run by every cp group of the stage at once, priced once per
    ``name`` and layout."""
    return PricedCollective(op, nbytes, in_layer_terms(
        collectives, op, _groups(layout), layout.cp_group(), nbytes, (name, layout),
        bound_algorithm(collectives, op)))


def _kv_all_gather(block_bytes: float, collectives: CollectiveModel,
                   layout: Layout) -> PricedCollective:
    """The all-gather of every cp rank's K/V block (``block_bytes`` each)."""
    return _cp_collective(Op.ALL_GATHER, block_bytes * layout.cp, "cp", collectives, layout)


def _kv_reduce_scatter(block_bytes: float, collectives: CollectiveModel,
                       layout: Layout) -> PricedCollective:
    """The reduce-scatter of the full-sequence dK or dV into each cp rank's block."""
    return _cp_collective(Op.REDUCE_SCATTER, block_bytes * layout.cp, "cp-rs", collectives, layout)


def _ring_shift(nbytes: float, collectives: CollectiveModel, layout: Layout) -> PricedCollective:
    """Every cp rank sends ``nbytes`` to the next (a sendrecv ring shift)."""
    return _cp_collective(Op.SENDRECV, nbytes, "cp-shift", collectives, layout)


def _all_to_all(nbytes: float, collectives: CollectiveModel, layout: Layout) -> PricedCollective:
    """An all-to-all of ``nbytes`` per cp rank (every cp group of the stage at once)."""
    return _cp_collective(Op.ALL_TO_ALL, nbytes, "cp-a2a", collectives, layout)


def _groups(layout: Layout):
    return lambda: [g for r in range(layout.dp) for g in layout.entity_cp_groups(r, 0)]
