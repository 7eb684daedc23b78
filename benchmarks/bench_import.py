"""Issue target: import a 100 MB Kineto trace in <= 30 s and <= 2 GB peak memory.

Usage: python benchmarks/bench_import.py [megabytes]   (default 100)

Builds a synthetic trace in a temporary folder from the structure of a real one
(validation/traces/negative_queue_length_values_check__rank0.json.gz, rank 0 of a 16-rank
A100 job): its events are repeated with timestamps shifted by the trace's span,
correlation ids shifted so launches still match their kernels, and ProfilerStep numbers
continued, until the JSON reaches the size asked for. The file is written as plain JSON and
gzipped; each is imported in a fresh process, which prints wall time and peak RSS.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import peak_rss_gib

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "validation" / "traces" / "negative_queue_length_values_check__rank0.json.gz"
TARGETS = {"seconds": 30.0, "peak_rss_GiB": 2.0}


def _shifted(event: dict, copy: int, span: float, ids: int, steps: int) -> dict:
    """``event`` as it would appear ``copy`` repetitions later."""
    out = dict(event)
    if "ts" in out:
        out["ts"] = event["ts"] + copy * span
    args = event.get("args")
    if isinstance(args, dict):
        out["args"] = dict(args)
        for key in ("correlation", "External id"):
            if isinstance(args.get(key), int):
                out["args"][key] = args[key] + copy * ids
    if isinstance(out.get("id"), int):
        out["id"] = event["id"] + copy * ids
    name = event.get("name")
    if isinstance(name, str) and name.startswith("ProfilerStep#"):
        out["name"] = f"ProfilerStep#{int(name.split('#')[1]) + copy * steps}"
    return out


def make_trace(folder: Path, megabytes: float) -> Path:
    """Write a plain-JSON trace of about ``megabytes`` MB (1e6 bytes) into ``folder``."""
    real = json.loads(gzip.decompress(SOURCE.read_bytes()))
    events = real.pop("traceEvents")
    timed = [e for e in events if "ts" in e]
    span = max(e["ts"] + e.get("dur", 0) for e in timed) - min(e["ts"] for e in timed) + 1000
    ids = 1 + max(max(e.get("args", {}).get(k, 0) for k in ("correlation", "External id"))
                  if isinstance(e.get("args"), dict) else 0 for e in events)
    steps = sum(str(e.get("name", "")).startswith("ProfilerStep#") for e in events)
    path = folder / "large_trace.json"
    target, copy = megabytes * 1e6, 0
    with open(path, "w", encoding="utf-8") as handle:
        head = json.dumps({k: v for k, v in real.items() if k not in ("traceName",)})
        handle.write(head[:-1] + ', "traceEvents": [\n')
        first = True
        while handle.tell() < target:
            for event in events:
                if event.get("ph") == "M" and copy:
                    continue
                handle.write(("" if first else ",\n") + json.dumps(_shifted(event, copy, span, ids, steps)))
                first = False
            copy += 1
        handle.write('\n], "traceName": "synthetic"}\n')
    return path


def import_once(path: str) -> dict:
    """Import ``path`` in this process; time, peak RSS and what was found."""
    from simulator.measure.kineto import read_kineto_trace

    start = time.perf_counter()
    trace = read_kineto_trace(path)
    seconds = time.perf_counter() - start
    return {"file": Path(path).name, "bytes": Path(path).stat().st_size,
            "seconds": round(seconds, 2), "peak_rss_GiB": round(peak_rss_gib(), 3),
            "steps": len(trace.steps), "gpu_ops": len(trace.kernels),
            "max_partition_error": float(
                ((trace.steps["compute_only_s"] + trace.steps["comm_overlapped_s"]
                  + trace.steps["comm_exposed_s"] + trace.steps["idle_s"]) / trace.steps["wall_s"]
                 - 1).abs().max())}


def main(megabytes: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        plain = make_trace(folder, megabytes)
        packed = folder / "large_trace.json.gz"
        with open(plain, "rb") as src, gzip.open(packed, "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst)
        print(json.dumps({"generated_s": round(time.perf_counter() - start, 1),
                          "plain_MB": round(plain.stat().st_size / 1e6, 1),
                          "gzip_MB": round(packed.stat().st_size / 1e6, 1)}))
        for path in (plain, packed):
            done = subprocess.run([sys.executable, __file__, "--one", str(path)], check=True,
                                  capture_output=True, text=True)
            result = json.loads(done.stdout)
            result["meets_targets"] = all(result[k] <= v for k, v in TARGETS.items())
            print(json.dumps(result))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        print(json.dumps(import_once(sys.argv[2])))
        sys.exit(0)
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 100.0)
