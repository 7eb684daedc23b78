"""Peak memory of one pipeline rank under torch.distributed.pipelining, walked op by op.

Megatron-LM's schedules free a stage's output once it is sent and keep fixed gradient
buffers, so :func:`simulator.workload.memory.microbatches_in_flight` times the per-microbatch
activations is its peak. PyTorch's pipelining runtime (``pipeline.runtime: torch``; torchtitan)
keeps more, and what it keeps depends on the rank's op order, so this module replays that
order (:func:`torch_order`) and takes the largest sum of live bytes (:func:`timeline_peak`):

- ``PipelineStage.forward_one_chunk`` appends every microbatch's stage output to
  ``output_chunks`` (and to ``fwd_cache`` until its backward); ``output_chunks`` is cleared only
  by ``clear_runtime_states`` at the next step, so each chunk ends the step holding ``m``
  outputs: ``[b, s/t, h]`` activations, or on the last stage the model's logits (bf16);
  a schedule run with ``return_outputs=False`` (``save_forward_output``, torch 2.10; torchtitan
  b5bcd76c6) appends none, and each output goes with its microbatch's backward
  (``pipeline.keep_stage_outputs: false``);
- ``_prepare_forward_infra`` allocates a receive buffer per microbatch on every non-first
  stage (``args_recv_info[chunk_id]``), ``_prepare_backward_infra`` a gradient receive
  buffer per microbatch on every non-last stage (``grad_recv_info[mb_index]``); both live
  for the whole run. A received buffer is the first block's saved input, so a microbatch in
  flight does not count it twice; ``stage_backward`` leaves each microbatch's input
  gradient in that buffer's ``.grad``, which ``clear_runtime_states`` clears only at the next
  step, so a non-first chunk also gains one input gradient per backward;
- ``backward_maybe_with_nosync`` runs FSDP2 with ``set_requires_gradient_sync(False)`` until
  the stage's last backward, so ``FSDPParam.to_accumulated_grad_if_needed`` keeps each
  parameter's unsharded gradient in the reduce dtype (fp32) from the stage's *first*
  backward until the reduce-scatter after its last one (``foreach_reduce``): a chunk holds
  its accumulated gradients only between those two ops.

Sources: pytorch/pytorch ``torch/distributed/pipelining/stage.py`` and ``schedules.py``
(``Schedule1F1B._step_microbatches``; ``ScheduleInterleaved1F1B``'s
``get_rank_warmup_ops``), ``torch/distributed/fsdp/_fully_shard/_fsdp_param.py``; versions of
late 2024 (torch 2.6, torchtitan 9dec370's torch 1963fc8); docs/research/stack_facts.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.workload.warmup import interleaved_warmup

__all__ = ["Chunk", "PipelinePeak", "timeline_peak", "torch_order"]


@dataclass(frozen=True)
class Chunk:
    """One model chunk (pipeline stage) a rank runs; bytes per microbatch unless noted.

    ``activations``: what its forward keeps for backward (less a received input that is a
    persistent buffer); ``output``: its stage output (the logits on the last stage), kept to
    the end of the step; ``gradients``: unsharded gradients accumulated from its first to its
    last backward (bytes, once; 0 when gradients are reduced every microbatch); ``last``:
    whether it computes the loss; ``input_grad``: the input gradient each backward leaves in
    its receive buffer's ``.grad`` until the step ends (0 on the first stage).
    """

    activations: float
    output: float = 0.0
    gradients: float = 0.0
    last: bool = False
    input_grad: float = 0.0
    output_kept: bool = True
    """Whether ``output`` stays to the step's end (``output_chunks``); False: its backward frees
    it (``schedule.step(return_outputs=False)``, ``pipeline.keep_stage_outputs``)."""


@dataclass(frozen=True)
class PipelinePeak:
    """Live bytes at a rank's peak, by kind."""

    activations: float   # saved activations and stage outputs
    gradients: float     # accumulated unsharded gradients
    transient: float     # the op's working set: recompute workspace or the loss
    buffers: float       # persistent receive buffers

    @property
    def total(self) -> float:
        return self.activations + self.gradients + self.transient + self.buffers


def torch_order(p: int, rank: int, m: int, v: int = 1,
                gpipe: bool = False) -> list[tuple[bool, int, int]]:
    """(forward, local chunk, microbatch) of ``rank``'s ops in torch's order.

    ``gpipe`` (``ScheduleGPipe``, one chunk): every forward, then every backward.
    ``v == 1`` (``Schedule1F1B``): ``w = min(m, p - rank)`` forwards, then one backward and
    one forward alternately, then the remaining backwards. ``v > 1``
    (``ScheduleInterleaved1F1B``): with ``r = max(1, m // p)`` rounds of ``q = m // r``
    microbatches, ``w = min((v - 1) q + 2 (p - 1 - rank), m v)`` warm-up forwards, then
    forward and backward alternately; forward op ``k`` runs local chunk ``(k // q) mod v``,
    backward op ``k`` chunk ``v - 1 - (k // q) mod v``, microbatch ``(k // (q v)) q + k mod q``.
    """
    if gpipe:
        return [(True, 0, j) for j in range(m)] + [(False, 0, j) for j in range(m)]
    if v == 1:
        warmup = min(m, p - rank)
        forwards = [(True, 0, j) for j in range(m)]
        backwards = [(False, 0, j) for j in range(m)]
    else:
        q = m // max(1, m // p)
        warmup = interleaved_warmup(p, rank, m, v, round_size=q)
        forwards = [(True, (k // q) % v, (k // (q * v)) * q + k % q) for k in range(m * v)]
        backwards = [(False, v - 1 - (k // q) % v, (k // (q * v)) * q + k % q) for k in range(m * v)]
    order = forwards[:warmup]
    for k in range(len(forwards) - warmup):
        if v == 1:
            order += [backwards[k], forwards[warmup + k]]
        else:
            order += [forwards[warmup + k], backwards[k]]
    return order + backwards[len(forwards) - warmup:]


def timeline_peak(order: list[tuple[bool, int, int]], chunks: list[Chunk], m: int,
                  buffers: float, workspace: float, loss: float) -> PipelinePeak:
    """Largest live memory over ``order`` (:func:`torch_order`).

    Live after forward ``(c, j)``: every forward so far adds ``activations + output`` of its
    chunk; a backward frees ``activations`` (and ``output`` unless ``output_kept``) and adds
    ``input_grad`` (kept outputs and input gradients stay to the step's end); a chunk's
    ``gradients`` appear at its first backward and go at its ``m``-th. During an op the
    working set is ``workspace`` (one layer's recompute), or on the loss chunk
    ``max(workspace, loss)``: the loss runs outside the layers, before the last layer's
    recompute in backward and after its forward. ``buffers`` are always live.
    """
    acts = grads = 0.0
    done = [0] * len(chunks)
    best = PipelinePeak(0.0, 0.0, 0.0, buffers)
    for forward, c, _ in order:
        chunk = chunks[c]
        if forward:
            acts += chunk.activations + chunk.output
        elif done[c] == 0:
            grads += chunk.gradients
        transient = max(workspace, loss) if chunk.last else workspace
        now = PipelinePeak(acts, grads, transient, buffers)
        if now.total > best.total:
            best = now
        if not forward:
            acts += chunk.input_grad - chunk.activations - (0.0 if chunk.output_kept else chunk.output)
            done[c] += 1
            if done[c] == m:
                grads -= chunk.gradients
    return best
