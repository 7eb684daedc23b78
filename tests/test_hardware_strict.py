"""Hardware files are checked as strictly as scenarios (issue: accepted means simulable):
a user folder (CLUSTERSIM_HARDWARE_SPECS) with an impossible number is refused with the file
and key named, never simulated into NaN, Infinity or a 0 MFU."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.errors import ConfigError

SPECS = Path(__file__).resolve().parents[1] / "hardware_specs"


def _library_with(tmp_path: Path, category: str, name: str, edit) -> HardwareLibrary:
    root = tmp_path / "hw"
    shutil.copytree(SPECS, root)
    path = root / category / f"{name}.yaml"
    data = yaml.safe_load(path.read_text())
    edit(data)
    path.write_text(yaml.safe_dump(data))
    return HardwareLibrary(root=root)


@pytest.mark.parametrize(("category", "name", "edit", "key"), [
    ("gpus", "h100-sxm", lambda d: d["peak_dense_tflops"].update(bf16=float("inf")), "peak_dense_tflops"),
    ("gpus", "h100-sxm", lambda d: d.update(hbm_bandwidth_GBps=float("nan")), "hbm_bandwidth_GBps"),
    ("gpus", "h100-sxm", lambda d: d["compute"].update(gemm_peak_fraction=1e-310),
     "compute.gemm_peak_fraction"),
    ("gpus", "h100-sxm", lambda d: d["compute"].update(gemm_tile=[0, 128]), "compute.gemm_tile"),
    ("gpus", "h100-sxm", lambda d: d.update(sm_count="132"), "sm_count"),
    ("gpus", "h100-sxm", lambda d: d.update(peak_dense_tflops={"fp32": 66.9}), "bf16 or fp16"),
    ("links", "ib-ndr", lambda d: d.update(efficiency=1e-300), "efficiency"),
    ("links", "ib-ndr", lambda d: d.update(bandwidth_GBps=float("inf")), "bandwidth_GBps"),
    ("nodes", "dgx-h100", lambda d: d.update(gpus=8.0), "gpus"),
    ("nodes", "dgx-h100", lambda d: d.update(nics=True), "nics"),
    ("protocols", "nccl", lambda d: d["bandwidth_efficiency"].pop("ring"), "ring"),
    ("protocols", "nccl", lambda d: d["hop_latency_us"].pop("net"), "hop_latency_us.net"),
])
def test_an_impossible_hardware_value_is_refused(tmp_path, category, name, edit, key):
    library = _library_with(tmp_path, category, name, edit)
    with pytest.raises(ConfigError, match=key.split(".")[-1]) as info:
        library.load_any(category, name)
    assert f"{name}.yaml" in str(info.value)


def test_an_inline_node_is_checked_like_a_library_node():
    node = yaml.safe_load((SPECS / "nodes" / "dgx-h100.yaml").read_text())
    node["gpus"] = "8"
    data = {"name": "x", "cluster": {"node": node, "nodes": 1}}
    with pytest.raises(ConfigError, match="cluster.node.gpus"):
        scenario_from_mapping(data, "inline.yaml")
