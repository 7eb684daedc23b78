"""Every shipped scenario loads; the sc21-* ones reproduce validation/megatron_sc21_table1.csv."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from simulator.config import load_scenario

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
SC21_CSV = ROOT / "validation" / "megatron_sc21_table1.csv"


def _sc21_rows() -> dict[str, dict[str, str]]:
    with SC21_CSV.open(newline="") as handle:
        return {row["model"].lower(): row for row in csv.DictReader(handle)}


SC21_ROWS = _sc21_rows()


def _sc21_path(model: str) -> Path:
    return ROOT / "scenarios" / f"sc21-{model}.yaml"


def test_scenarios_exist():
    assert SCENARIOS, "no scenarios/*.yaml found"


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_scenario_loads(path):
    scenario = load_scenario(path)
    assert scenario.name == path.stem


def test_exactly_one_sc21_scenario_per_csv_row():
    found = sorted(p.stem.removeprefix("sc21-") for p in SCENARIOS if p.stem.startswith("sc21-"))
    assert len(SC21_ROWS) == 10
    assert found == sorted(SC21_ROWS)


@pytest.mark.parametrize("model", sorted(SC21_ROWS))
def test_sc21_scenario_matches_csv_row(model):
    row = SC21_ROWS[model]
    scenario = load_scenario(_sc21_path(model))
    par, training = scenario.parallelism, scenario.training
    gpus_per_node = scenario.cluster.gpus_per_node or 8
    assert scenario.model.preset == f"megatron-{model}"
    assert (par.tp, par.pp, par.dp) == (int(row["tp"]), int(row["pp"]), int(row["dp"]))
    assert scenario.cluster.nodes == int(row["nodes"])
    assert scenario.cluster.nodes * gpus_per_node == int(row["gpus"])
    assert par.tp * par.pp * par.dp == int(row["gpus"])
    assert training.global_batch == int(row["global_batch"])
    assert training.micro_batch == int(row["micro_batch"])
    assert par.virtual_stages == int(row["virtual_stages"])
    assert par.schedule.value == row["schedule"]
    assert par.recompute.value == row["recompute"]
    assert training.dtype.value == row["dtype"]
    assert scenario.model.layers == int(row["layers"])
    assert scenario.model.hidden == int(row["hidden"])
    assert scenario.model.heads == int(row["heads"])
    assert scenario.model.seq_len == int(row["seq_len"])
    assert scenario.model.vocab == int(row["vocab"])
    # PyTorch DDP (pp = 1) overlaps the gradient all-reduce; Megatron's own DDP (pp > 1) did not.
    assert par.zero_stage == 0 and par.overlap_grad_reduce is (par.pp == 1)
    assert par.sequence_parallel is False
    assert scenario.cluster.node == "dgx-a100-80gb"
    assert scenario.cluster.fabric.topology.value == "fat-tree"
    assert scenario.cluster.fabric.link == "ib-hdr"
    assert scenario.description
