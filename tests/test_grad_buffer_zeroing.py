"""Megatron-Core zeroes its whole gradient buffer at the start of every step
(``DistributedDataParallel.zero_grad_buffer`` -> ``grad_data.zero_()``, core_v0.12.0): one
memory-bound write of every parameter the GPU holds in the reduce dtype, in the step's fixed part
(``data_parallel.zero_grad_buffer``, simulator/engine/analytical.py ``_optimizer_time``)."""

from __future__ import annotations

import pytest

from simulator.config import HardwareLibrary, resolve_cluster, scenario_from_mapping
from simulator.cost import CollectiveModel
from simulator.engine.analytical import make_context, simulate_step
from simulator.topology import build_cluster
from simulator.workload.memory import stage_parameters


def _run(zeroing: bool, zero_stage: int = 1, reduce_dtype: str = "fp32"):
    data = {"name": "zero-grad", "cluster": {"node": "dgx-h100", "nodes": 1},
            "model": {"preset": "llama3-8b", "layers": 4},
            "training": {"global_batch": 16, "micro_batch": 1,
                         "stack": {"base": "megatron-core",
                                   "data_parallel": {"zero_grad_buffer": zeroing,
                                                     "grad_reduce_dtype": reduce_dtype}}},
            "parallelism": {"tp": 2, "pp": 1, "dp": 4, "zero_stage": zero_stage}}
    scenario = scenario_from_mapping(data, "<test>")
    collectives = CollectiveModel(build_cluster(resolve_cluster(scenario.cluster, HardwareLibrary())))
    return scenario, simulate_step(scenario, collectives), make_context(scenario, collectives)


@pytest.mark.parametrize("reduce_dtype,nbytes", [("fp32", 4), ("bf16", 2)])
def test_the_zeroing_writes_every_held_parameter_once_in_the_reduce_dtype(reduce_dtype, nbytes):
    """optimizer_s grows by one streaming kernel of ``g P`` bytes: P the parameters the GPU
    holds (not its optimizer shard), g the reduce dtype's bytes."""
    scenario, on, ctx = _run(True, reduce_dtype=reduce_dtype)
    _, off, _ = _run(False, reduce_dtype=reduce_dtype)
    held = sum(stage_parameters(scenario.model, scenario.parallelism, 4, True, True))
    assert on.optimizer_s - off.optimizer_s == pytest.approx(
        float(ctx.compute.memory_time(nbytes * held)), rel=1e-12)
    assert on.step_time_s - off.step_time_s == pytest.approx(on.optimizer_s - off.optimizer_s, rel=1e-9)


def test_megatron_core_zeroes_its_buffer_pytorch_stacks_do_not_and_zero3_has_none():
    """On in the megatron-core profile, off in PyTorch's (their optimizers set gradients to
    None); nothing under ZeRO 3, whose sharded gradients live in no persistent buffer here."""
    library = HardwareLibrary()
    assert library.stack("megatron-core").data_parallel.zero_grad_buffer
    pytorch = ("fsdp", "fsdp2", "torchtitan")
    assert not any(library.stack(name).data_parallel.zero_grad_buffer for name in pytorch)
    assert _run(True, zero_stage=3)[1].optimizer_s == pytest.approx(_run(False, zero_stage=3)[1].optimizer_s,
                                                                    rel=1e-12)
