"""Megatron-LM SC21 Table 1: achieved TFLOP/s per GPU, predicted against measured.

Source: Narayanan et al., SC21 (arXiv:2104.04473), Table 1; settings from the paper's
artifact script (validation/README.md). Targets: each row within 10%, MAE <= 5%, with
the one A100 spec (hardware_specs/gpus/a100-sxm-80gb.yaml) for every row.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.validation.megatron import MAE_TOLERANCE, ROW_TOLERANCE, replay

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def table():
    return replay(ROOT / "validation" / "megatron_sc21_table1.csv", ROOT / "scenarios")


def test_all_ten_rows_are_replayed(table):
    assert list(table["model"]) == ["1.7B", "3.6B", "7.5B", "18B", "39B", "76B", "145B",
                                    "310B", "530B", "1T"]


@pytest.mark.parametrize("index", range(10))
def test_row_within_ten_percent(table, index):
    row = table.iloc[index]
    assert abs(row.error) <= ROW_TOLERANCE, f"{row.model}: {row.error:+.1%}"


def test_mean_absolute_error_at_most_five_percent(table):
    assert table["error"].abs().mean() <= MAE_TOLERANCE
