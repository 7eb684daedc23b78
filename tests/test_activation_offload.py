"""Activation offloading (``parallelism.cpu_offload_layers``, simulator/cost/activation_offload.py):
TransformerEngine's schedule in closed forms, the GPUs' rate to host memory from the node specs,
the activations it takes off the GPU, both engines alike, and Megatron-Core's refusals (exit 2)."""

from __future__ import annotations

import pytest
import yaml
from scenario_maps import merged as _with
from scenario_maps import run_mapping as _run

from simulator.cli import main
from simulator.config import HardwareLibrary
from simulator.config.resolved import resolve_cluster
from simulator.config.scenario import ClusterConfig
from simulator.cost.activation_offload import offload_bandwidth, offload_stalls

LIBRARY = HardwareLibrary()
FABRIC = {"topology": "rail-optimized", "link": "ib-ndr"}
LLAMA = {"cluster": {"node": "dgx-h100", "nodes": 1, "fabric": FABRIC},
         "model": {"preset": "llama3-8b", "seq_len": 8192},
         "training": {"global_batch": 16, "micro_batch": 2, "stack": "megatron-core"},
         "parallelism": {"tp": 1, "pp": 1, "zero_stage": 3, "recompute": "none", "cpu_offload_layers": 24},
         "simulate": {"contention": False}}


def test_copies_slower_than_nothing_hide_behind_compute():
    """With each copy no longer than a layer's forward and room for two or more layers, the
    copies overlap compute entirely (TransformerEngine's Figure 3)."""
    assert offload_stalls(80, 40, 1.0, 2.0, 1.0) == (0.0, 0.0)
    assert offload_stalls(80, 0, 1.0, 2.0, 10.0) == (0.0, 0.0)


def test_one_layer_on_the_gpu_serialises_every_reload():
    """n = L - 1: one set on the GPU, so each reload waits for the last backward to free it and
    the layer's backward waits for the whole reload: ``n t`` in backward; in forward each layer
    waits for the previous copy's excess over its forward, ``(L - 1)(t - f)``."""
    layers, forward, backward, transfer = 10, 1.0, 2.0, 1.5
    fwd, bwd = offload_stalls(layers, layers - 1, forward, backward, transfer)
    assert bwd == pytest.approx((layers - 1) * transfer)
    assert fwd == pytest.approx((layers - 1) * (transfer - forward))


def test_copies_slower_than_the_layers_stall_once_room_runs_out():
    """TransformerEngine's Figure 4 case (n 3 of 5 layers, two sets on the GPU) with copies half
    again a forward: layer 5 waits for layer 3's copy; none of the reloads is late."""
    assert offload_stalls(5, 3, 1.0, 2.0, 1.5) == pytest.approx((0.5, 0.0))


@pytest.mark.parametrize(("node", "expected"), [
    ("gb200-nvl72", 512.0 / 2),      # two GPUs share one Grace's 512 GB/s of LPDDR5X
    ("gb300-nvl72", 512.0 / 2),
    ("dgx-h100", 63.0 * 0.80),       # each GPU's PCIe Gen5 x16 at its efficiency
])
def test_rate_to_host_memory_per_gpu(node, expected):
    hw = resolve_cluster(ClusterConfig(node=node), LIBRARY)
    assert offload_bandwidth(hw) / 1e9 == pytest.approx(expected)


def test_offloaded_layers_leave_the_gpu(tmp_path):
    """n of L layers offloaded: the activations part falls by n / L of the layers' share (one
    micro-batch in flight without pipelining); the weights, gradients and optimizer do not move."""
    kept = _run(tmp_path, _with(LLAMA, parallelism={"cpu_offload_layers": 0})).stages[0].memory
    off = _run(tmp_path, LLAMA).stages[0].memory
    layers, n = 32, 24
    assert 0 < off["activations"] < kept["activations"]
    for part in ("weights", "gradients", "optimizer"):
        assert off[part] == kept[part]
    # the same difference for every offloaded layer: the layers' part of the activations is linear
    half = _run(tmp_path, _with(LLAMA, parallelism={"cpu_offload_layers": n // 2})).stages[0].memory
    assert kept["activations"] - off["activations"] == pytest.approx(
        2 * (kept["activations"] - half["activations"]), rel=1e-12)
    per_layer = (kept["activations"] - off["activations"]) / n
    assert per_layer * layers < kept["activations"]


def test_pcie_copies_of_most_layers_cost_time_and_both_engines_agree(tmp_path):
    """Over PCIe (about 50 GB/s) with 31 of 32 layers offloaded the reloads serialise with the
    backward: the step grows by the reported waits, and the DES replays the same passes."""
    mapping = _with(LLAMA, parallelism={"cpu_offload_layers": 31})
    none = _run(tmp_path, _with(LLAMA, parallelism={"cpu_offload_layers": 0}))
    off, des = _run(tmp_path, mapping), _run(tmp_path, mapping, engine="des")
    waits = off.microbatches * off.stages[0].offload_wait_s
    assert waits > 0.0
    assert off.step_time_s == pytest.approx(none.step_time_s + waits, rel=1e-9)
    assert des.step_time_s == pytest.approx(off.step_time_s, rel=1e-9)
    assert 0.0 < off.mfu < none.mfu <= 1.0


@pytest.mark.parametrize(("change", "words"), [
    ({"parallelism": {"cpu_offload_layers": 32}}, "less than model.layers"),
    ({"parallelism": {"pp": 2, "dp": 4}}, "pipeline parallelism"),
    ({"parallelism": {"recompute": "selective"}}, "recompute"),
    ({"parallelism": {"recompute": "full"}}, "recompute"),
    ({"model": {"preset": "nemotron-3-nano-30b-a3b", "seq_len": 8192},
      "parallelism": {"zero_stage": 1, "cpu_offload_layers": 4}}, "hybrid"),
])
def test_mistakes_get_one_message_and_exit_2(tmp_path, capsys, change, words):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(_with(LLAMA, **change)))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "parallelism.cpu_offload_layers" in err and words in err and "Traceback" not in err


def test_offloaded_bytes_beyond_the_hosts_memory_are_warned_about(tmp_path):
    """A GB200 rack's Grace holds 480 GB for two GPUs: 79 of Llama 3 70B's 80 layers at micro
    batch 2 (about 3.7 GiB each) need more than that, 40 do not; the host bytes are n layers'."""
    cluster = {"node": "gb200-nvl72", "nodes": 1, "gpus_per_node": 64,
               "fabric": {"topology": "fat-tree", "link": "ib-ndr"}}
    base = _with(LLAMA, cluster=cluster, model={"preset": "llama3-70b"}, training={"global_batch": 128},
                 parallelism={"cpu_offload_layers": 40})
    fits = _run(tmp_path, base)
    over = _run(tmp_path, _with(base, parallelism={"cpu_offload_layers": 79}))
    assert not any("does not fit in host memory" in w for w in fits.warnings)
    assert any("does not fit in host memory" in w and "cpu_offload_layers" in w for w in over.warnings)
    assert over.stages[0].offload_host_bytes == pytest.approx(79 / 40 * fits.stages[0].offload_host_bytes)


def test_a_step_that_does_not_fit_names_the_offload_that_would(tmp_path):
    """Llama 3 70B under Megatron FSDP on 64 GB200 at micro batch 2 without offloading does not
    fit; the warning names the fewest offloaded layers that do, and that count fits while one
    fewer does not."""
    cluster = {"node": "gb200-nvl72", "nodes": 1, "gpus_per_node": 64,
               "fabric": {"topology": "fat-tree", "link": "ib-ndr"}}
    base = _with(LLAMA, cluster=cluster, model={"preset": "llama3-70b"},
                 training={"global_batch": 128, "micro_batch": 2}, parallelism={"cpu_offload_layers": 0})
    hint = [w for w in _run(tmp_path, base).warnings if "cpu_offload_layers:" in w]
    assert len(hint) == 1
    needed = int(hint[0].split("cpu_offload_layers: ")[1].split(";")[0])
    assert 0 < needed < 78
    fits = _run(tmp_path, _with(base, parallelism={"cpu_offload_layers": needed}))
    short = _run(tmp_path, _with(base, parallelism={"cpu_offload_layers": needed - 1}))
    assert fits.fits_in_memory and not short.fits_in_memory
    assert not any("cpu_offload_layers:" in w for w in fits.warnings)
