"""Megatron-Core's precision-aware optimizer (``training.optimizer.precision_aware``): the state
bytes per parameter in closed form (TransformerEngine's ``FusedAdam`` master weights, remainders
and moments), the memory and update traffic they set, import-log's mapping, and the refusals."""

from __future__ import annotations

import pytest
import yaml
from scenario_maps import merged as _with
from scenario_maps import run_mapping as _run

from simulator.cli import main
from simulator.config.optimizer import OptimizerConfig
from simulator.engine.optimizer_step import ADAM_BYTES_PER_PARAM, adam_bytes_per_param
from simulator.measure.logged_optimizer import logged_optimizer

FABRIC = {"topology": "rail-optimized", "link": "ib-ndr"}
LLAMA = {"cluster": {"node": "dgx-h100", "nodes": 1, "fabric": FABRIC},
         "model": {"preset": "llama3-8b"},
         "training": {"global_batch": 16, "micro_batch": 1, "dtype": "bf16", "stack": "megatron-core"},
         "parallelism": {"tp": 1, "pp": 1, "zero_stage": 1, "recompute": "selective"}}


@pytest.mark.parametrize(("settings", "bf16", "in_core", "expected"), [
    ({}, True, False, 2 + 4 + 4),                                         # int16 remainders of fp32
    ({"param_remainders": False}, True, False, 4 + 4 + 4),
    ({}, False, False, 4 + 4 + 4),                                        # fp16 parameters: no remainders
    ({}, True, True, 4 + 4 + 4),                               # fp8 current scaling: Megatron-Core fp32
    ({"exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16"}, True, False, 2 + 2 + 2),
    ({"master_dtype": "fp16", "exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16"}, True, False, 6),
    ({"exp_avg_dtype": "fp8", "exp_avg_sq_dtype": "fp8"}, True, False, 2 + 1 + 1),
])
def test_state_bytes_per_parameter(settings, bf16, in_core, expected):
    assert OptimizerConfig(precision_aware=True, **settings).state_bytes(bf16, in_core) == expected
    assert OptimizerConfig().state_bytes(bf16, in_core) is None


def test_update_traffic_follows_the_state():
    """2 S of state read and written beside 10 bytes of gradient, weight and unscale traffic:
    the default 12 bytes give the documented 34."""
    assert adam_bytes_per_param(None) == ADAM_BYTES_PER_PARAM == 34.0
    assert adam_bytes_per_param(6.0) == 22.0


def test_lower_precision_state_shrinks_only_the_optimizer_part(tmp_path):
    """Llama 3 8B over 8 GPUs with the distributed optimizer: bf16 moments over fp32-remainder
    master weights keep 6 of Adam's 12 bytes per parameter, so the optimizer part halves; the
    weights, gradients and activations do not move, and the update gets faster."""
    plain = _run(tmp_path, LLAMA)
    lean = _run(tmp_path, _with(LLAMA, training={"optimizer": {
        "precision_aware": True, "exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16"}}))
    before, after = plain.stages[0].memory, lean.stages[0].memory
    assert after["optimizer"] == pytest.approx(before["optimizer"] * 6 / 12, rel=1e-12)
    for part in ("weights", "gradients", "activations"):
        assert after[part] == before[part]
    assert 0 < lean.optimizer_s < plain.optimizer_s


def test_import_log_reads_the_state_dtypes():
    extra: list[str] = []
    args = {"optimizer": "adam", "use_precision_aware_optimizer": True, "main_params_dtype": "torch.float16",
            "exp_avg_dtype": "torch.bfloat16", "exp_avg_sq_dtype": "torch.bfloat16"}
    assert logged_optimizer(args, extra) == {"name": "adam", "precision_aware": True, "master_dtype": "fp16",
                                             "exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16"}
    assert logged_optimizer({"optimizer": "adam"}, extra) is None and not extra


@pytest.mark.parametrize(("optimizer", "dtype", "words"), [
    ({"exp_avg_dtype": "bf16"}, "bf16", "precision_aware"),
    ({"name": "muon", "precision_aware": True}, "bf16", "adam"),
    ({"precision_aware": True, "master_dtype": "fp8"}, "bf16", "master_dtype"),
    ({"precision_aware": True}, "fp32", "bf16 or fp8"),
])
def test_mistakes_get_one_message_and_exit_2(tmp_path, capsys, optimizer, dtype, words):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(_with(LLAMA, training={"optimizer": optimizer, "dtype": dtype})))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "training.optimizer" in err and words in err and "Traceback" not in err
