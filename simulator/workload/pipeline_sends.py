"""Stage-to-stage sends: how long a send holds its stage and how long its receiver waits.

A pipeline send of ``t`` seconds (:func:`simulator.cost.in_layer.p2p_time`) is either

- held: the sending stage waits for it before its next pass (Megatron's batched, waited
  exchange, ``batch_p2p_comm``; 1F1B without virtual stages always): the stage's clock and
  the receiver's earliest start both advance by ``t``; or
- overlapped: the send is issued asynchronously and the stage goes on at once, the receiver
  still waits ``t`` after the pass ends (Megatron-Core's ``overlap_p2p_comm`` under the
  interleaved schedule: ``isend``/``irecv`` whose handles are waited before the stage's next
  pass in the same direction, NVIDIA/Megatron-LM core_r0.8.0
  ``megatron/core/pipeline_parallel/schedules.py``; on by default there and in NeMo's and
  Megatron-Bridge's interleaved recipes, stack field ``pipeline.overlap_p2p``).

The task graph (:mod:`simulator.workload.taskgraph`) takes the two parts as ``p2p`` (held)
and ``lag`` (overlapped): ``done = end + lag`` for a dependant, ``clock = end + p2p`` for the
stage; an overlapped send is also waited for before the stage's next pass in the same
direction (core_r0.8's ``fwd_wait_handles`` / ``bwd_wait_handles``), which binds between the
warm-up's forwards and between the cool-down's backwards: NeMo's documentation has it so,
"the PP communications in pipeline fill and flush are still exposed" (NVIDIA NeMo user
guide, "Communication Overlap", pipeline-parallel section). Not modelled: Megatron-Core
0.12+ waits for a send one pass later still (``send_next_wait_handle``), and the few SMs the
send's NCCL kernel holds beside the compute (``NCCL_NCHANNELS_PER_NET_PEER``, 2 by default,
against 132 SMs, for about a tenth of the pass).
"""

from __future__ import annotations

from simulator.config.scenario import Scenario, Schedule
from simulator.config.stack import StackProfile


def overlapped_sends(scenario: Scenario, stack: StackProfile) -> bool:
    """Whether the scenario's pipeline sends overlap the next pass: the stack overlaps them
    (``pipeline.overlap_p2p``) and the schedule is interleaved with ``v > 1`` and ``pp > 1``."""
    par = scenario.parallelism
    return (stack.pipeline.overlap_p2p and par.schedule == Schedule.INTERLEAVED
            and par.virtual_stages > 1 and par.pp > 1)


def send_parts(p2p: float, overlapped: bool) -> tuple[float, float]:
    """(held, lag) seconds of a send of ``p2p`` seconds (module docstring)."""
    return (0.0, p2p) if overlapped else (p2p, 0.0)


def path_sends(pp: int, v: int) -> int:
    """Sends along one microbatch's forward and backward through every model chunk,
    ``2 (p v - 1)``: what an overlapped pipeline's sends expose (its fill and drain)."""
    return 2 * (pp * v - 1)
