"""torch.distributed.pipelining memory (simulator/workload/pipeline_memory.py) and DTensor
loss_parallel's logit bytes: small hand-computed cases."""

from __future__ import annotations

import pytest

from simulator.config import HardwareLibrary
from simulator.config.presets import MODEL_PRESETS
from simulator.config.scenario import ModelConfig, ParallelismConfig, Recompute, TrainingConfig
from simulator.workload.memory import rank_chunks, stage_memory
from simulator.workload.pipeline_memory import Chunk, timeline_peak, torch_order

LLAMA = ModelConfig(**MODEL_PRESETS["llama3-8b"])
LIBRARY = HardwareLibrary()
TITAN, MEGATRON = LIBRARY.stack("torchtitan"), LIBRARY.stack("megatron-core")


def _names(order):
    return [("F" if f else "B") + f"{c}{j}" for f, c, j in order]


def test_schedule_1f1b_order_warms_up_p_minus_rank_forwards():
    """Schedule1F1B: min(m, p - rank) forwards, then B, F alternately, then the rest."""
    assert _names(torch_order(2, 0, 3)) == ["F00", "F01", "B00", "F02", "B01", "B02"]
    assert _names(torch_order(2, 1, 3)) == ["F00", "B00", "F01", "B01", "F02", "B02"]


def test_gpipe_order_runs_every_forward_first():
    assert _names(torch_order(2, 1, 2, gpipe=True)) == ["F00", "F01", "B00", "B01"]


def test_interleaved_order_uses_torchs_warmup_rule():
    """p = v = m = 2: rank 1 warms up (v-1) q + 2 (p-1-1) = 2 forwards (Megatron, with m == p,
    would run all four first); rank 0 min(2 + 2, 4) = 4."""
    assert _names(torch_order(2, 1, 2, 2)) == ["F00", "F01", "F10", "B10", "F11", "B11", "B00", "B01"]
    assert _names(torch_order(2, 0, 2, 2)) == ["F00", "F01", "F10", "F11", "B10", "B11", "B00", "B01"]


def test_gradients_live_from_a_chunks_first_backward_to_its_last():
    """Rank 0 of p = v = m = 2, chunks of 10 B activations and 100 B gradients: the peak is
    40 + 100 at the first backward (one chunk's gradients), not 40 + 200; plus workspace 5
    and buffers 3."""
    chunks = [Chunk(10.0, gradients=100.0), Chunk(10.0, gradients=100.0)]
    peak = timeline_peak(torch_order(2, 0, 2, 2), chunks, 2, buffers=3.0, workspace=5.0, loss=0.0)
    assert (peak.activations, peak.gradients, peak.transient, peak.buffers) == (40.0, 100.0, 5.0, 3.0)


def test_outputs_and_input_gradients_stay_to_the_steps_end():
    """One chunk, p = 2, rank 0, m = 3, activations 10, output 1, input gradient 2: after
    F0 F1 B0 F2 the live set is 2 x 10 + 3 x 1 + 2 = 25, the peak."""
    peak = timeline_peak(torch_order(2, 0, 3), [Chunk(10.0, output=1.0, input_grad=2.0)], 3,
                         buffers=0.0, workspace=0.0, loss=0.0)
    assert peak.activations == 25.0


def test_outputs_not_kept_go_with_their_backward():
    """The same case with ``return_outputs=False`` (``output_kept`` False): each backward also
    frees its microbatch's output, so after F0 F1 B0 F2 the live set is 2 x 10 + 2 x 1 + 2 = 24."""
    peak = timeline_peak(torch_order(2, 0, 3), [Chunk(10.0, output=1.0, input_grad=2.0, output_kept=False)],
                         3, buffers=0.0, workspace=0.0, loss=0.0)
    assert peak.activations == 24.0


def test_last_stage_logits_kept_or_freed_by_the_stack():
    """Last stage of pp 2, m = 8: with the outputs kept its peak holds all 8 microbatches' bf16
    logits (2 s b V bytes each); with ``pipeline.keep_stage_outputs: false`` one, the 1F1B last
    stage's single microbatch in flight: the difference is 7 microbatches' logits."""
    par = ParallelismConfig(dp=1, pp=2, recompute=Recompute.FULL)
    training = TrainingConfig(global_batch=8, micro_batch=1)
    pipeline = TITAN.pipeline.model_copy(update={"keep_stage_outputs": False})
    freed = TITAN.model_copy(update={"pipeline": pipeline})
    kept = stage_memory(LLAMA, training, par, 1, 16, 1, False, True, 8, runtime=False, stack=TITAN)
    gone = stage_memory(LLAMA, training, par, 1, 16, 1, False, True, 8, runtime=False, stack=freed)
    logits = 2 * LLAMA.seq_len * LLAMA.vocab
    assert kept.activations - gone.activations == pytest.approx(7 * logits, rel=1e-12)


def test_the_loss_and_the_recompute_do_not_coexist():
    """On the loss chunk the op's working set is max(workspace, loss), elsewhere workspace."""
    order = torch_order(2, 1, 1)
    last = timeline_peak(order, [Chunk(1.0, last=True)], 1, 0.0, workspace=5.0, loss=7.0)
    middle = timeline_peak(order, [Chunk(1.0)], 1, 0.0, workspace=5.0, loss=7.0)
    assert (last.transient, middle.transient) == (7.0, 5.0)


def test_rank_chunks_follow_the_pipeline_split():
    """126 layers, p = 8, v = 2: rank 0 holds global chunks 0 (7 layers, first) and 8 (8)."""
    par = ParallelismConfig(dp=1, pp=8, virtual_stages=2, schedule="interleaved-1f1b")
    model = ModelConfig(**MODEL_PRESETS["llama3-405b"])
    assert rank_chunks(model, par, 0) == [(7, True, False, 0, 0), (8, False, False, 0, 0)]
    assert rank_chunks(model, par, 7) == [(8, False, False, 0, 0), (7, False, True, 0, 0)]


def test_receive_buffers_are_m_inputs_and_m_output_gradients():
    """A middle stage (pp = 4, stage 1) holds m (input + output gradient) = 2 m s b h / t x
    2 bytes of persistent receive buffers."""
    par = ParallelismConfig(dp=1, pp=4, tp=2, sequence_parallel=True, recompute=Recompute.FULL)
    training = TrainingConfig(global_batch=16, micro_batch=2)
    memory = stage_memory(LLAMA, training, par, 1, 8, 1, False, False, 8, runtime=False, stack=TITAN)
    hidden = 2 * LLAMA.seq_len * 2 * LLAMA.hidden / 2
    assert dict(memory.what_if)["pipeline_buffers"] == pytest.approx(8 * 2 * hidden, rel=1e-12)


def test_loss_parallel_holds_parallel_logit_bytes():
    """tp = 2: the loss peak is 16 s b V / t under torchtitan (loss_parallel), 12 without TP
    sharding of the vocabulary (one stage, no pipeline)."""
    par = ParallelismConfig(dp=1, tp=2, sequence_parallel=True, recompute=Recompute.FULL)
    training = TrainingConfig(global_batch=1, micro_batch=1)
    plain = TITAN.model_copy(update={"loss": TITAN.loss.model_copy(update={"parallel_logit_bytes": None})})
    a = stage_memory(LLAMA, training, par, 0, 32, 1, True, True, 1, runtime=False, stack=TITAN)
    b = stage_memory(LLAMA, training, par, 0, 32, 1, True, True, 1, runtime=False, stack=plain)
    expected = (16 - 12) * LLAMA.seq_len * LLAMA.vocab / 2
    assert a.activations - b.activations == pytest.approx(expected, rel=1e-12)


def test_output_layer_keeps_its_all_gathered_input():
    """DTensor TP (saves_gathered_inputs) under SP: the last stage keeps 2 s b h (1 - 1/t)
    more activations per microbatch, the output linear's gathered input (full recompute)."""
    par = ParallelismConfig(dp=1, tp=4, sequence_parallel=True, recompute=Recompute.FULL)
    training = TrainingConfig(global_batch=2, micro_batch=2)
    sharded = TITAN.model_copy(update={"tensor_parallel": TITAN.tensor_parallel.model_copy(
        update={"saves_gathered_inputs": False})})
    a = stage_memory(LLAMA, training, par, 0, 32, 1, True, True, 1, runtime=False, stack=TITAN)
    b = stage_memory(LLAMA, training, par, 0, 32, 1, True, True, 1, runtime=False, stack=sharded)
    expected = 2 * LLAMA.seq_len * 2 * LLAMA.hidden * (1 - 1 / 4)
    assert a.activations - b.activations == pytest.approx(expected, rel=1e-12)
