"""The longer run of tests/test_layout_property.py: N drawn layouts (default 1,000), each
refused cleanly or simulated by both engines (contention off: DES = analytical to 1e-9;
contention on: DES never faster). Prints counts, time and any failure.

    python benchmarks/bench_layout_property.py [N]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_layout_property import scenarios  # noqa: E402

from simulator.config import scenario_from_mapping  # noqa: E402
from simulator.engine.analytical import simulate_step  # noqa: E402
from simulator.engine.des import simulate_steps_des  # noqa: E402
from simulator.errors import ConfigError  # noqa: E402
from simulator.pipeline import session_from_scenario  # noqa: E402


def main(examples: int) -> None:
    counts = {"refused": 0, "simulated": 0}

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(scenarios())
    def check(data):
        try:
            scenario = scenario_from_mapping(data, "drawn.yaml")
        except ConfigError:
            counts["refused"] += 1
            return
        session = session_from_scenario(scenario)
        analytical = simulate_step(scenario, session.collectives).step_time_s
        off = simulate_steps_des(scenario, session.collectives, steps=1, contention=False).step_time_s
        on = simulate_steps_des(scenario, session.collectives, steps=1, contention=True).step_time_s
        assert abs(off / analytical - 1) <= 1e-9, (data, off, analytical)
        assert on >= analytical * (1 - 1e-12), (data, on, analytical)
        counts["simulated"] += 1

    start = time.perf_counter()
    check()
    print({**counts, "examples": examples, "seconds": round(time.perf_counter() - start, 1)})


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
