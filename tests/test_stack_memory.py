"""Memory that follows the stack profile (simulator/workload/{saved_activations,unsharded}.py and
``loss.logit_bytes``): closed forms against the same stage with the Megatron defaults."""

from __future__ import annotations

import pytest

from simulator.config import HardwareLibrary
from simulator.config.presets import MODEL_PRESETS
from simulator.config.scenario import ModelConfig, ParallelismConfig, Recompute, TrainingConfig
from simulator.config.stack import ReduceDtype
from simulator.workload.loss_kernels import LOSS_PEAK_BYTES
from simulator.workload.memory import stage_memory, stage_parameters
from simulator.workload.params import layer_parameters
from simulator.workload.saved_activations import LSE_BYTES, op_sac_bytes_per_layer

LLAMA = ModelConfig(**MODEL_PRESETS["llama3-8b"])
LIBRARY = HardwareLibrary()
TORCHTITAN, MEGATRON = LIBRARY.stack("torchtitan"), LIBRARY.stack("megatron-core")
# torchtitan's profile with Megatron's pipeline runtime: the tests below isolate one stack field
# each; torch.distributed.pipelining's own memory is tests/test_pipeline_memory.py.
TORCHTITAN = TORCHTITAN.model_copy(update={"pipeline": MEGATRON.pipeline})


def _memory(stack, par, micro_batch=2, microbatches=1, layers=32, first=True, last=True):
    training = TrainingConfig(global_batch=micro_batch * microbatches * par.dp, micro_batch=micro_batch)
    return stage_memory(LLAMA, training, par, 0, layers, par.dp, first, last, microbatches,
                        runtime=False, stack=stack)


def test_per_op_checkpointing_keeps_its_save_list():
    """2 s b (h + h + k_w + f + h + h) + 4 a s b per layer without tensor parallelism."""
    h, kv, f, a, s, b = LLAMA.hidden, LLAMA.kv_heads * 128, LLAMA.ffn_hidden, LLAMA.heads, LLAMA.seq_len, 2
    expected = 2 * s * b * (h + h + kv + f + h + h) + LSE_BYTES * a * s * b
    assert op_sac_bytes_per_layer(LLAMA, b, 1, False) == pytest.approx(expected, rel=1e-12)


def test_per_op_checkpointing_memory_replaces_megatrons_selective_amount():
    par = ParallelismConfig(dp=8, recompute=Recompute.SELECTIVE, zero_stage=3)
    titan = _memory(TORCHTITAN, par, first=False, last=False)
    assert titan.activations == pytest.approx(32 * op_sac_bytes_per_layer(LLAMA, 2, 1, False), rel=1e-12)


def test_the_loss_holds_logit_bytes_per_logit_once():
    """(12 - 4) s b V more on the last stage, whatever the microbatches in flight."""
    par = ParallelismConfig(dp=1, pp=2, recompute=Recompute.FULL, zero_stage=1)
    differences = []
    for microbatches in (1, 8):
        titan = _memory(TORCHTITAN, par, microbatches=microbatches, first=False)
        megatron = _memory(MEGATRON, par, microbatches=microbatches, first=False)
        differences.append(titan.activations - megatron.activations)
    assert TORCHTITAN.loss.logit_bytes is None       # the kernel's: eager torch 12 B
    expected = (LOSS_PEAK_BYTES[TORCHTITAN.loss.kernel] - 4.0) * LLAMA.seq_len * 2 * LLAMA.vocab
    assert expected == 8.0 * LLAMA.seq_len * 2 * LLAMA.vocab
    assert differences == pytest.approx([expected, expected], rel=1e-12)


def test_fsdp_under_pipelining_keeps_the_stage_gathered_and_fp32_gradients_unsharded():
    """reshard_after_forward false + no per-microbatch reduce: + P (gather bytes) + 4 P."""
    par = ParallelismConfig(dp=8, pp=2, recompute=Recompute.FULL, zero_stage=3)
    base = {"reshard_after_forward": True, "reduce_every_microbatch": True, "prefetch": 1}
    resharding = TORCHTITAN.model_copy(update={"sharding": TORCHTITAN.sharding.model_copy(update=base)})
    pipelined = TORCHTITAN.model_copy(update={"sharding": TORCHTITAN.sharding.model_copy(
        update={**base, "reshard_after_forward": False, "reduce_every_microbatch": False})})
    a = _memory(resharding, par, microbatches=4, layers=16, first=False, last=False)
    b = _memory(pipelined, par, microbatches=4, layers=16, first=False, last=False)
    stage = stage_parameters(LLAMA, par, 16, False, False)[0]
    unit = layer_parameters(LLAMA)
    gather = ReduceDtype.BF16.nbytes(TrainingConfig(global_batch=1, micro_batch=1).dtype)  # 2 B
    assert b.weights - a.weights == pytest.approx((stage - 2 * unit) * gather, rel=1e-12)
    assert b.gradients - a.gradients == pytest.approx((stage - unit) * 4, rel=1e-12)


def test_megatron_stacks_are_unchanged_by_the_stack_argument():
    par = ParallelismConfig(dp=8, tp=2, recompute=Recompute.SELECTIVE, zero_stage=1,
                            sequence_parallel=True)
    assert _memory(MEGATRON, par) == _memory(None, par)


def test_dtensor_tp_keeps_the_gathered_linear_inputs():
    """saves_gathered_inputs: + 2 dtype s b h (1 - 1/t) per layer kept (no recompute), or once
    in the recomputed layer's workspace (full recompute)."""
    from simulator.workload.saved_activations import gathered_input_bytes

    keeps = MEGATRON.model_copy(update={"tensor_parallel": MEGATRON.tensor_parallel.model_copy(
        update={"saves_gathered_inputs": True})})
    extra = 2 * 2 * LLAMA.hidden * LLAMA.seq_len * 2 * (1 - 1 / 8)
    assert gathered_input_bytes(LLAMA, 2, 8) == pytest.approx(extra, rel=1e-12)
    for recompute, part, times in ((Recompute.NONE, "activations", 32), (Recompute.FULL, "workspace", 1)):
        par = ParallelismConfig(dp=1, tp=8, recompute=recompute, zero_stage=1, sequence_parallel=True)
        with_inputs = getattr(_memory(keeps, par, first=False, last=False), part)
        without = getattr(_memory(MEGATRON, par, first=False, last=False), part)
        assert with_inputs - without == pytest.approx(times * extra, rel=1e-9)
