"""Scaling curves read from validation rows (simulator/validation/curves.py): closed forms."""

from pathlib import Path

import pandas as pd
import pytest

from simulator.validation.curves import curves_table, scaling_curves


def _rows(points):
    return pd.DataFrame([{"scenario": f"validation/scenarios/x/{name}", "description": text,
                          "measured": measured, "predicted": predicted}
                         for name, text, measured, predicted in points])


def test_growth_is_the_first_throughput_over_the_last_minus_one():
    """Throughput per GPU 100 -> 80 measured and 100 -> 90 predicted: the step grows by
    100/80 - 1 = 25% and 100/90 - 1 = 11.1%, whatever the order of the rows."""
    rows = _rows([("m-64gpu-fp8.yaml", "M, 64 GPUs", 80.0, 90.0),
                  ("m-8gpu-fp8.yaml", "M, 8 GPUs", 100.0, 100.0),
                  ("m-16gpu-fp8.yaml", "M, 16 GPUs", 95.0, 99.0)])
    curve = scaling_curves(rows).iloc[0]
    assert (curve["curve"], curve["first"], curve["last"]) == ("m-fp8", 8, 64)
    assert curve["measured"] == pytest.approx(0.25)
    assert curve["predicted"] == pytest.approx(1 / 0.9 - 1)


def test_proxies_single_points_and_other_names_make_no_curve():
    rows = _rows([("m-8gpu-bf16.yaml", "M, 8 GPUs", 1.0, 1.0),
                  ("m-32gpu-bf16.yaml", "M (7-layer proxy), 32 GPUs", 2.0, 2.0),
                  ("other.yaml", "no GPU count in the name", 1.0, 1.0)])
    assert scaling_curves(rows).empty
    assert curves_table(rows, Path(".")) == ""


def test_jitter_what_if_without_jitter_is_the_analytical_step_and_grows_with_sigma():
    """With sigma 0 the discrete-event mean step equals the analytical step (the engines'
    invariant); with jitter each step waits for its slowest worker, so the mean step grows
    with sigma (E[max] of lognormals rises with their spread)."""
    from simulator.pipeline import run_scenario
    from simulator.validation.curves import jittered_step

    root = Path(__file__).resolve().parent.parent
    path = root / "validation/scenarios/dgxc_llama31/llama31-8b-16gpu-fp8.yaml"
    plain = run_scenario(path).step_time_s
    assert jittered_step(path, 0.0) == pytest.approx(plain, rel=1e-9)
    assert plain < jittered_step(path, 0.005) < jittered_step(path, 0.02)
