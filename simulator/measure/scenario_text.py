"""Render a :class:`~simulator.measure.draft.Draft` as scenario YAML with a comment header:
the measurement, what could not be inferred, and what the scenario does not represent."""

from __future__ import annotations

import textwrap

import yaml

from simulator.measure.draft import Draft

WIDTH = 92


def render_draft(draft: Draft, source: str) -> str:
    """Scenario YAML text for ``draft`` (imported from ``source``)."""
    m = draft.measured
    kept = f"iterations {m.iterations[0]}-{m.iterations[-1]} of {m.logged}"
    lines = [f"Draft scenario written by 'clustersim import-log' from {source}",
             "(Megatron-LM arguments block -> scenario; iteration lines -> measurement).",
             "",
             f"Measured (median of {kept}; warm-up rule in docs/measurements.md):",
             f"  step time           {m.step_time_s:.3f} s per iteration "
             f"(p10-p90 spread {100 * m.spread:.1f}%)"]
    if m.tflops_per_gpu is not None:
        lines.append(f"  throughput          {m.tflops_per_gpu:.1f} TFLOP/s per GPU (as logged)")
    how = "as logged" if m.tokens_logged else "global batch x seq_len / (step x GPUs)"
    lines += [f"  tokens per GPU      {m.tokens_per_gpu_s:,.0f} tokens/s ({how})", "",
              "Not inferred from the log (check these):"]
    lines += _bullets(draft.not_inferred or ["nothing"])
    lines += ["", "In the log but not represented by the scenario:"]
    lines += _bullets(draft.not_modelled or ["nothing"])
    header = "\n".join(f"# {line}".rstrip() for line in lines)
    body = yaml.safe_dump(draft.scenario, sort_keys=False, default_flow_style=False,
                          width=WIDTH, allow_unicode=True)
    return f"{header}\n{body}"


def _bullets(items: list[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        wrapped = textwrap.wrap(item, WIDTH - 6) or [""]
        out.append(f"  - {wrapped[0]}")
        out += [f"    {rest}" for rest in wrapped[1:]]
    return out
