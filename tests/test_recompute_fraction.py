"""Full recompute of a share of the layers (``parallelism.recompute_fraction``; Megatron-Core's
``--recompute-method block``, torchtitan's layer-wise and fms-fsdp's selective checkpointing):
a share of 1 is full recompute, byte for byte; recompute seconds, hardware FLOPs and kept
activations are linear in the share, each layer either re-running its forward or keeping its
activations; both engines agree; a Megatron log with the block method drafts the share; and a
share out of (0, 1] is one message naming the key, exit status 2."""

from __future__ import annotations

import pytest
import yaml
from scenario_maps import run_mapping as _run

from simulator.cli import main
from simulator.measure.draft import _block_recompute_fraction

FABRIC = {"topology": "rail-optimized", "link": "ib-ndr"}
# one replica (dp 1): nothing overlaps the backward, so the step is linear in its recompute
PIPELINE = {"cluster": {"node": "dgx-h100", "nodes": 4, "fabric": FABRIC},
            "model": {"preset": "llama3-8b"},
            "training": {"global_batch": 8, "micro_batch": 1, "stack": "megatron-core"},
            "parallelism": {"tp": 8, "pp": 4, "dp": 1, "sequence_parallel": True, "recompute": "full"},
            "simulate": {"contention": False}}


def _with_parallelism(base: dict, **fields) -> dict:
    return {**base, "parallelism": {**base["parallelism"], **fields}}


def _hardware_flops(result) -> float:
    """Hardware FLOPs of one step on one GPU."""
    return result.hardware_flops_per_gpu * result.step_time_s


def test_a_share_of_one_is_full_recompute(tmp_path):
    full = _run(tmp_path, PIPELINE)
    one = _run(tmp_path, _with_parallelism(PIPELINE, recompute_fraction=1.0))
    assert one.step_time_s == full.step_time_s
    assert one.memory_per_gpu_bytes == full.memory_per_gpu_bytes
    assert one.hardware_flops_per_gpu == full.hardware_flops_per_gpu


def test_step_flops_and_memory_are_linear_in_the_share(tmp_path):
    """Each recomputed layer adds its forward; each other layer keeps its activations: at share
    f the step, the hardware FLOPs and the memory are (1 - f) x none + f x full, the memory's
    recompute workspace (one layer's) apart, present at any share above 0."""
    none = _run(tmp_path, _with_parallelism(PIPELINE, recompute="none"))
    full = _run(tmp_path, PIPELINE)
    shares = {f: _run(tmp_path, _with_parallelism(PIPELINE, recompute_fraction=f)) for f in (0.25, 0.5, 0.75)}
    def mix(f: float, value) -> float:
        return (1 - f) * value(none) + f * value(full)

    for f, result in shares.items():
        assert result.step_time_s == pytest.approx(mix(f, lambda r: r.step_time_s), rel=1e-9)
        assert _hardware_flops(result) == pytest.approx(mix(f, _hardware_flops), rel=1e-9)
    memory = {f: r.memory_per_gpu_bytes for f, r in shares.items()}
    assert memory[0.5] - memory[0.75] == pytest.approx(memory[0.25] - memory[0.5], rel=1e-9)
    at_zero = 2 * memory[0.25] - memory[0.5]           # the line's value at share 0
    workspace = at_zero - none.memory_per_gpu_bytes     # one recomputed layer's working set
    assert 0 < workspace < none.memory_per_gpu_bytes - full.memory_per_gpu_bytes
    assert none.step_time_s < shares[0.25].step_time_s < shares[0.75].step_time_s < full.step_time_s


def test_both_engines_agree_with_a_share(tmp_path):
    mapping = _with_parallelism(PIPELINE, recompute_fraction=0.5)
    analytical = _run(tmp_path, mapping)
    des = _run(tmp_path, {**mapping, "simulate": {"contention": False, "engine": "des", "steps": 1}})
    assert des.step_time_s == pytest.approx(analytical.step_time_s, rel=1e-9)


def test_a_share_without_full_recompute_is_a_warning(tmp_path):
    result = _run(tmp_path, _with_parallelism(PIPELINE, recompute="selective", recompute_fraction=0.5))
    assert any("recompute_fraction has no effect" in w for w in result.warnings)


@pytest.mark.parametrize("share", [0, 1.5, "half"])
def test_a_share_out_of_range_is_one_message(tmp_path, capsys, share):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(_with_parallelism(PIPELINE, recompute_fraction=share)))
    code = main(["run", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and "parallelism.recompute_fraction" in err and "Traceback" not in err


def test_megatron_block_method_drafts_the_share():
    """``--recompute-method block --recompute-num-layers n`` recomputes the first n layers of
    each model chunk: 20 of 80 layers over pp 2 is half of each stage's 40; uniform, or n at
    least the chunk's layers, is every layer (no share)."""
    args = {"recompute_method": "block", "recompute_num_layers": 20, "num_layers": 80}
    assert _block_recompute_fraction(args, 2) == 0.5
    assert _block_recompute_fraction(args, 1) == 0.25
    assert _block_recompute_fraction({**args, "recompute_num_layers": 40}, 2) is None
    assert _block_recompute_fraction({**args, "recompute_method": "uniform"}, 2) is None
