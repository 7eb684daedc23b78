"""The training what-ifs in ``clustersim run``'s report (docs/what_ifs.md): what each
technique saves and costs, the net change of the step against the same run without it,
and whether the input pipeline is the bottleneck."""

from __future__ import annotations

from rich.table import Table

from simulator.results import StepResult
from simulator.units import format_bytes


def what_if_table(r: StepResult) -> Table | None:
    """One row per figure of ``r.what_if``; None without training what-ifs."""
    w = r.what_if
    if not w:
        return None
    table = Table(title="training what-ifs (docs/what_ifs.md)", show_header=False)
    table.add_column("figure")
    table.add_column("value", justify="right")
    rows = _rows(w, r.step_time_p99_s if len(r.step_times_s) > 1 else None)
    if "baseline_step_time_mean_s" in w and len(r.step_times_s) > 1:
        mean = sum(r.step_times_s) / len(r.step_times_s)
        rows.append(("mean step without / with (DES)", f"{_s(w['baseline_step_time_mean_s'])} / {_s(mean)}"))
    for name, value in rows:
        table.add_row(name, value)
    return table


def _rows(w: dict, p99: float | None) -> list[tuple[str, str]]:
    rows = []
    if "dp_bytes_sent_per_gpu" in w:
        rows += [("gradient bytes sent per GPU per step", format_bytes(w["dp_bytes_sent_per_gpu"])),
                 ("  uncompressed", format_bytes(w["dp_bytes_uncompressed_per_gpu"])),
                 ("  saved", format_bytes(w["dp_bytes_saved_per_gpu"])),
                 ("compression compute added per step", _s(w["compression_compute_s"]))]
    if "wan_s" in w:
        rows += [("sites joined by WAN", f"{w['sites']:.0f}"),
                 ("WAN: effective bandwidth (loss-bound TCP)", f"{w['wan_effective_Bps'] / 1e9:.2f} GB/s"),
                 ("WAN: bytes per site uplink per sync", format_bytes(w["wan_bytes_per_sync"])),
                 ("WAN: ring between sites per sync", _s(w["wan_s"]))]
    if "sync_every" in w:
        rows += [("data-parallel sync every", f"{w['sync_every']:.0f} steps"),
                 ("step without sync / sync step", f"{_s(w['local_step_time_s'])} / "
                                                   f"{_s(w['sync_step_time_s'])}"),
                 ("outer optimizer (on a sync step)", _s(w["outer_optimizer_s"])),
                 ("DP communication per sync / per step", f"{_s(w['dp_comm_per_sync_s'])} / "
                                                          f"{_s(w['dp_comm_per_sync_s'] / w['sync_every'])}"),
                 ("DP bytes per GPU per sync / per step",
                  f"{format_bytes(w['dp_bytes_per_sync_per_gpu'])} / "
                  f"{format_bytes(w['dp_bytes_per_step_per_gpu'])}")]
    if "input_load_s" in w:
        rows += [("input: loader time per batch", _s(w["input_load_s"])),
                 ("input: loader / step", f"{w['input_load_over_step']:.0%}"),
                 ("input: steady-state stall per step", _s(w["input_stall_s"]))]
        if "input_stall_mean_s" in w:
            rows += [("input: mean / p99 stall (DES)", f"{_s(w['input_stall_mean_s'])} / "
                                                       f"{_s(w['input_stall_p99_s'])}"),
                     ("input: steps that waited (DES)", f"{w['input_stalled_steps']:.1%}")]
        rows.append(("input pipeline the bottleneck?", bottleneck_verdict(w)))
    if "baseline_step_time_s" in w:
        rows += [("step without them (one site, no compression, sync and loader)",
                  _s(w["baseline_step_time_s"])),
                 ("net change of the step", f"{w['step_time_change_s']:+.4f} s "
                                            f"({w['step_time_change_s'] / w['baseline_step_time_s']:+.1%})")]
        if p99 is not None and p99 != w["baseline_step_time_p99_s"]:
            rows.append(("p99 step without / with", f"{_s(w['baseline_step_time_p99_s'])} / {_s(p99)}"))
    return rows


def bottleneck_verdict(w: dict) -> str:
    """"yes, by X s per step" when the loader is slower than the step, else its headroom."""
    stall = w.get("input_stall_mean_s", w["input_stall_s"])
    if w["input_stall_s"] > 0:
        return f"yes: steps wait {_s(w['input_stall_s'])} each for their batch"
    if stall > 0:
        return f"at times: jitter makes steps wait {_s(stall)} on average"
    return f"no: the loader needs {w['input_load_over_step']:.0%} of a step"


def stall_seconds(r: StepResult) -> float:
    """Seconds per step spent waiting for input (DES mean, else the steady state)."""
    return r.what_if.get("input_stall_mean_s", r.what_if.get("input_stall_s", 0.0))


def _s(seconds: float) -> str:
    return f"{seconds:.4f} s"
