"""Shared assertions on the discrete-event engine against the analytical one."""

from __future__ import annotations

import pytest

from simulator.engine.analytical import simulate_step
from simulator.engine.des import simulate_steps_des


def assert_des_brackets_analytical(scenario, collectives) -> None:
    """One DES step equals the analytical step with contention off (rel 1e-9: the two engines
    add the same durations in a different order) and is never faster with contention on
    (links shared by concurrent flows only slow transfers down)."""
    analytical = simulate_step(scenario, collectives).step_time_s
    off = simulate_steps_des(scenario, collectives, steps=1, contention=False).step_time_s
    on = simulate_steps_des(scenario, collectives, steps=1, contention=True).step_time_s
    assert off == pytest.approx(analytical, rel=1e-9)
    assert on >= analytical * (1 - 1e-12)
