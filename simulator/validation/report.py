"""The validation report (docs/validation.md) from :func:`simulator.validation.suite.run_validation`.

The generator owns the whole file: fixed prose per set (sources, encoding, what is and is not
modelled; markdown kept as data in ``simulator/validation/prose/``, one file per set, :func:`prose`)
around tables computed from the rows, so ``clustersim validate --write`` regenerates it completely
and its tables cannot go stale.
"""

from __future__ import annotations

from importlib.resources import files

import pandas as pd

from simulator.config import HardwareLibrary
from simulator.validation import nccl_suite
from simulator.validation.curves import curves_table
from simulator.validation.regime_report import regime_section
from simulator.validation.regimes import row_errors
from simulator.validation.suite import SETS, TARGET_MAPE, TARGET_MAX, default_root, finite, summary

_ROW_COLUMNS = [("row", "row"), ("description", "what"), ("scenario", "scenario"), ("stack", "stack"),
                ("measured", "measured"), ("predicted", "predicted"), ("error", "error"),
                ("notes", "notes")]
_NCCL_COLUMNS = [("description", "log"), ("row", "size"), ("metric", "metric"),
                 ("measured", "measured"), ("predicted", "predicted"), ("error", "error"),
                 ("scored", "scored"), ("notes", "notes")]


def markdown_report(frame: pd.DataFrame, library: HardwareLibrary | None = None,
                    regimes: pd.DataFrame | None = None) -> str:
    """The whole report: introduction, summary, where the errors fall (from ``regimes``, the
    rows' :func:`~simulator.validation.regimes.row_errors`, computed when not given), hardware
    constants, one section per set."""
    library = library or HardwareLibrary()
    if regimes is None:
        regimes = row_errors(frame, default_root(), library)
    parts = [INTRO.format(mape=TARGET_MAPE, max=TARGET_MAX), "## Summary", summary_table(frame),
             "## Where the errors fall", regime_section(regimes),
             "## Hardware constants", constants_table(frame, library), prose("constants")]
    for name, rows in frame.groupby("set", sort=False):
        tolerance = f"{nccl_suite.BUSBW_TOLERANCE:.0%}"
        parts += [f"## {SETS[name].title}", prose(name).replace("<TOL>", tolerance)]
        if name == "nccl":
            parts += [nccl_log_table(rows), prose("nccl_misses"),
                      "### Every row", rows_table(rows, _NCCL_COLUMNS)]
        else:
            parts += [rows_table(rows, _ROW_COLUMNS), score_line(rows)]
            if SETS[name].curves:
                parts.append(curves_table(rows, default_root()))
            if has_prose(name + "_after"):
                parts.append(prose(name + "_after"))
    return "\n\n".join(part.strip("\n") for part in parts) + "\n"


def summary_table(frame: pd.DataFrame) -> str:
    """One line per set: rows, scored rows, MAPE, max |error| and the issue's target."""
    lines = [f"| set | source | metric | rows | scored | MAPE | max abs error | "
             f"target (MAPE <= {TARGET_MAPE:.0%}, max <= {TARGET_MAX:.0%}) |",
             "|---|---|---|---:|---:|---:|---:|---|"]
    for r in summary(frame).itertuples():
        lines.append(f"| {r.set} | {r.title} | {r.metric} | {r.rows} | {r.scored} | {r.mape:.1%} | "
                     f"{r.max_abs_error:.1%} | {'met' if r.meets_target else '**not met**'} |")
    return "\n".join(lines)


def constants_table(frame: pd.DataFrame, library: HardwareLibrary | None = None) -> str:
    """The compute fractions of every GPU spec the rows used, with the sets that used it."""
    library = library or HardwareLibrary()
    lines = ["| GPU | derived from | bf16 / fp8 / fp4 dense peak (TFLOP/s) | gemm_peak_fraction | "
             "fp8 / fp4 gemm_peak_fraction | attention fwd / bwd (generic) | attention kernels fwd / bwd | "
             "gemm_k_overhead / gemm_fixed_us | memory_fixed_us / memory_bandwidth_fraction | "
             "sustained clock_fraction | "
             "sets |",
             "|---|---|---|---:|---:|---|---|---:|---:|---:|---|"]
    used = frame[frame["gpu"] != "-"].groupby("gpu", sort=True)["set"].unique()
    for name, sets in used.items():
        gpu = library.gpu(name)
        c, peak = gpu.compute, gpu.peak_dense_tflops
        kernels = "; ".join(f"{k} {f:.3g} / {b:.3g}" for k, (f, b) in sorted(c.attention_kernels.items()))
        lines.append(
            f"| {name} | {gpu.derived_from or '-'} | {_peak(peak, 'bf16')} / {_peak(peak, 'fp8')} / "
            f"{_peak(peak, 'fp4')} | {c.gemm_peak_fraction:.3g} | {c.fp8_fraction:.3g} / "
            f"{_fraction(c.fp4_gemm_peak_fraction)} | {c.attention_fraction(False):.3g} / "
            f"{c.attention_fraction(True):.3g} | {kernels or '-'} | "
            f"{c.gemm_k_overhead:g} / {c.gemm_fixed_us:g} | "
            f"{c.memory_fixed_us:g} / {c.memory_bandwidth_fraction:.3g} | {gpu.clock_fraction:.3f} | "
            f"{', '.join(sets)} |")
    return "\n".join(lines)


def _peak(peaks: dict, dtype: str) -> str:
    return f"{peaks[dtype]:.1f}" if dtype in peaks else "-"


def _fraction(value: float | None) -> str:
    return f"{value:.3g}" if value is not None else "-"


def rows_table(rows: pd.DataFrame, columns: list[tuple[str, str]]) -> str:
    """``rows`` as a Markdown table with the given (column, header) pairs."""
    metric = rows["metric"].iloc[0] if rows["metric"].nunique() == 1 else ""
    heads = [f"{h} ({metric})" if key in ("measured", "predicted") and metric else h for key, h in columns]
    lines = ["| " + " | ".join(heads) + " |",
             "|" + "|".join("---:" if key in ("measured", "predicted", "error") else "---"
                            for key, _ in columns) + "|"]
    for record in rows.to_dict("records"):
        lines.append("| " + " | ".join(_cell(key, record[key]) for key, _ in columns) + " |")
    return "\n".join(lines)


def score_line(rows: pd.DataFrame) -> str:
    """``MAPE x; max |error| y (row r: what)`` over the scored rows."""
    scored = rows[rows["scored"]]
    worst = scored.loc[scored["error"].abs().idxmax()]
    return (f"MAPE {scored['error'].abs().mean():.1%} over {len(scored)} rows; largest |error| "
            f"{abs(worst.error):.1%} (row {worst.row}: {worst.description.rstrip('.')}).")


def nccl_log_table(rows: pd.DataFrame) -> str:
    """One line per log: source and cluster (fixed text), scored rows, met count, MAPE, max."""
    lines = ["| log | source | cluster (scenario) | scored rows | within target | MAPE | max abs error |",
             "|---|---|---|---:|---:|---:|---:|"]
    for log, group in rows.groupby("description", sort=True):
        scored = group[group["scored"]]
        errors = scored["error"].abs()
        within = int((errors <= nccl_suite.BUSBW_TOLERANCE).sum())
        source, cluster = NCCL_LOGS.get(log, ("validation/nccl_tests/INDEX.md", group["scenario"].iloc[0]))
        stats = (f"{errors.mean():.1%} | {errors.max():.1%}" if len(scored) else "- | -")
        lines.append(f"| {log} | {source} | {cluster} | {len(scored)} | {within} | {stats} |")
    return "\n".join(lines)


def _cell(key: str, value) -> str:
    if key == "error":
        return "n/a" if finite(value) is None else f"{value:+.1%}"
    if key in ("measured", "predicted"):
        return _number(value)
    if key == "scenario":
        return f"`{value}`"
    if key == "scored":
        return "yes" if value else ""
    return str(value).replace("|", "\\|")


def _number(value: float) -> str:
    if finite(value) is None:
        return "n/a"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"


def json_records(frame: pd.DataFrame, library: HardwareLibrary | None = None) -> dict:
    """The report's content as plain JSON types: ``summary``, ``rows`` and ``constants``."""
    library = library or HardwareLibrary()
    rows = [{k: (finite(v) if isinstance(v, float) else v) for k, v in r.items()}
            for r in frame.to_dict("records")]
    for r in rows:
        r["scored"] = bool(r["scored"])
    constants = {}
    for name in sorted(set(frame["gpu"]) - {"-"}):
        gpu = library.gpu(name)
        c = gpu.compute
        constants[name] = {
            "derived_from": gpu.derived_from or None, "gemm_peak_fraction": c.gemm_peak_fraction,
            "fp8_gemm_peak_fraction": c.fp8_fraction,
            "fp4_gemm_peak_fraction": c.fp4_gemm_peak_fraction,
            "attention_forward_fraction": c.attention_fraction(False),
            "attention_backward_fraction": c.attention_fraction(True),
            "attention_kernels": {k: list(v) for k, v in c.attention_kernels.items()},
            "memory_bandwidth_fraction": c.memory_bandwidth_fraction,
            "sustained_clock_fraction": gpu.clock_fraction}
    table = summary(frame).to_dict("records")
    return {"summary": [{k: (bool(v) if k == "meets_target" else v) for k, v in r.items()} for r in table],
            "rows": rows, "constants": constants}


INTRO = """\
# Validation

clustersim's predictions compared with measurements other people made on real hardware.
Nothing in the "measured" columns was produced by this project; each set names its source
and `validation/README.md` describes the data files.

This file is generated: `clustersim validate --write docs/validation.md` rewrites all of it,
text and tables (the text lives in `simulator/validation/prose/`, one markdown file per set).
One set of hardware constants per GPU (`hardware_specs/gpus/`, table below) serves every set:
nothing is fitted per set or per row. Each row's scenario file states in its header comment
which published row it encodes and every assumption made.

error = predicted / measured - 1. MAPE = mean |error| over a set's scored rows. The issue's
target for each set is MAPE <= {mape:.0%} and max |error| <= {max:.0%}."""

def prose(key: str) -> str:
    """The fixed text ``key`` of the report: a set's section (its name), the text after its
    tables (``<set>_after``), ``constants`` or ``nccl_misses``; markdown kept as data in
    ``simulator/validation/prose/<key>.md``."""
    return (_PROSE / f"{key}.md").read_text(encoding="utf-8")


def has_prose(key: str) -> bool:
    """Whether the report has the fixed text ``key`` (:func:`prose`)."""
    return (_PROSE / f"{key}.md").is_file()


_PROSE = files("simulator.validation") / "prose"


DSTACK_DOCS = "dstackai/dstack @511c318c mkdocs/docs/examples/clusters/"
DSTACK_ADDED = " (added 2026-11-29 as an out-of-sample check, scored once)"
AZURE_GUIDE = "Azure/AI-benchmarking-guide"
AZURE_ADDED = (" (busbw tables only, rows derived from them; added 2026-11-29 as an out-of-sample "
               "check, scored once)")
OCI_QUICKSTARTS = "oracle-quickstart/oci-gpu-quickstarts @6a0abdc7"
ADDED_ONCE = " (added 2026-11-29, scored once)"

AAC11_ADDED = " (4, 8 and 16 GiB rows only; added 2026-11-29, scored once)"
"""How the MI325X rccl-tests logs of AMD's AAC11 cluster entered the set."""

NCCL_LOGS = {
    "b300x8_1node_allreduce_oci": (
        OCI_QUICKSTARTS, "1 x OCI BM.GPU.B300.8 (8 B300, NVSwitch), NVLS, NCCL 2.28.9" + ADDED_ONCE),
    "b300_2node_16gpu_allreduce_oci": (
        OCI_QUICKSTARTS, "2 x OCI BM.GPU.B300.8, 16 x 400 GbE RoCE per server, NCCL 2.28.9" + ADDED_ONCE),
    "b300x8_1node_alltoall_oci": (
        OCI_QUICKSTARTS, "1 x OCI BM.GPU.B300.8, alltoall" + ADDED_ONCE),
    "b300_2node_16gpu_alltoall_oci": (
        OCI_QUICKSTARTS, "2 x OCI BM.GPU.B300.8, 16 x 400 GbE RoCE per server, alltoall" + ADDED_ONCE),
    "gb200_nvl72_4gpu_allreduce_oci": (
        OCI_QUICKSTARTS, "4 GPUs (one tray) of an OCI GB200 NVL72 rack" + ADDED_ONCE),
    "gb200_nvl72_8gpu_allreduce_oci": (
        OCI_QUICKSTARTS, "8 GPUs (two trays) of a GB200 NVL72 rack, NCCL 2.27.3" + ADDED_ONCE),
    "gb200_nvl72_128gpu_2racks_allreduce_oci": (
        OCI_QUICKSTARTS, "2 GB200 NVL72 racks x 64 GPUs, one 400 Gb/s IB NIC per GPU" + ADDED_ONCE),
    "gb200_nvl72_192gpu_3racks_allreduce_oci": (
        OCI_QUICKSTARTS, "3 GB200 NVL72 racks x 64 GPUs, one 400 Gb/s IB NIC per GPU" + ADDED_ONCE),
    "gb200_nvl72_4gpu_alltoall_oci": (
        OCI_QUICKSTARTS, "4 GPUs of a GB200 NVL72 rack, alltoall" + ADDED_ONCE),
    "gb200_nvl72_8gpu_alltoall_oci": (
        OCI_QUICKSTARTS, "8 GPUs of a GB200 NVL72 rack, alltoall" + ADDED_ONCE),
    "gb200_nvl72_64gpu_alltoall_oci": (
        OCI_QUICKSTARTS, "64 GPUs of a GB200 NVL72 rack, alltoall" + ADDED_ONCE),
    "gb200_nvl72_128gpu_2racks_alltoall_oci": (
        OCI_QUICKSTARTS, "2 GB200 NVL72 racks x 64 GPUs, alltoall across the IB fabric" + ADDED_ONCE),
    "gb200_nvl72_192gpu_3racks_alltoall_oci": (
        OCI_QUICKSTARTS, "3 GB200 NVL72 racks x 64 GPUs, alltoall across the IB fabric" + ADDED_ONCE),
    "gb300_nvl72_4gpu_allreduce_oci": (
        OCI_QUICKSTARTS, "4 GPUs (one tray) of an OCI GB300 NVL72 rack, NCCL 2.28.7" + ADDED_ONCE),
    "gb300_nvl72_8gpu_allreduce_oci": (
        OCI_QUICKSTARTS, "8 GPUs of a GB300 NVL72 rack, NVLS" + ADDED_ONCE),
    "gb300_nvl72_64gpu_allreduce_oci": (
        OCI_QUICKSTARTS, "64 GPUs of a GB300 NVL72 rack, NVLS" + ADDED_ONCE),
    "gb300_nvl72_128gpu_2racks_allreduce_oci": (
        OCI_QUICKSTARTS, "2 GB300 NVL72 racks x 64 GPUs, 2 x 400 GbE RoCE per GPU" + ADDED_ONCE),
    "gb300_nvl72_4gpu_alltoall_oci": (
        OCI_QUICKSTARTS, "4 GPUs of a GB300 NVL72 rack, alltoall" + ADDED_ONCE),
    "gb300_nvl72_8gpu_alltoall_oci": (
        OCI_QUICKSTARTS, "8 GPUs of a GB300 NVL72 rack, alltoall" + ADDED_ONCE),
    "gb300_nvl72_64gpu_alltoall_oci": (
        OCI_QUICKSTARTS, "64 GPUs of a GB300 NVL72 rack, alltoall" + ADDED_ONCE),
    "gb300_nvl72_128gpu_2racks_alltoall_oci": (
        OCI_QUICKSTARTS, "2 GB300 NVL72 racks x 64 GPUs, alltoall across 2 x 400 GbE per GPU" + ADDED_ONCE),
    "a100_2node_16gpu_oci_allreduce_nccl-2.21": (
        "oracle-japan/ocitutorials @3e75fcdb", "2 x OCI BM.GPU4.8 (8 A100 40GB), 16 x 100 GbE RoCE "
        "per server, NCCL 2.21.5 (added 2026-11-29, scored once)"),
    "a100_2node_16gpu_oci_allreduce_nccl-2.26": (
        "oracle-japan/ocitutorials @40114268", "the same two BM.GPU4.8 servers, NCCL 2.26.5, no NCCL "
        "settings (added 2026-11-29, scored once)"),
    "a100x8_1node_oci_allreduce_nccl-2.26": (
        "oracle-japan/ocitutorials @40114268", "1 x OCI BM.GPU4.8 (8 A100 40GB, NVSwitch), NCCL 2.26.5 "
        "(added 2026-11-29, scored once)"),
    "h100_2node_16gpu_oci_allreduce": (
        "oracle-japan/ocitutorials @876e820b", "2 x OCI BM.GPU.H100.8, 16 x 200 GbE RoCE per server, "
        "NCCL 2.21.5 (added 2026-11-29, scored once)"),
    "a100x8_1node_nvlink_sendrecv_li-plus-playground": (
        "li-plus/playground", "8 x A100 SXM NVSwitch, sendrecv"),
    "h100_2node_16gpu_gcp_a3mega_allreduce": (
        "lessizzmore/create-a3mega-ztan-fork", "2 x 8 H100, 8 x 200G NICs (GCP A3 Mega, "
        "GPUDirect-TCPXO); modelled as RoCE 200G"),
    "h100_2node_4gpu_per_node_ring_nccl-tests-252": (
        "NVIDIA/nccl-tests#252", "2 x 4 H100, 4 x 200 Gb/s NICs per node (assumed from the "
        "maintainer's \"~24 GB/s per NIC\"), NCCL_ALGO=RING"),
    "h100pcie_x2_nvlink_bridge_allreduce_nccl-1161": (
        "NVIDIA/nccl#1161", "2 x H100 PCIe + NVLink bridges"),
    "h100x4_1node_alltoall_nccl-2169": (
        "NVIDIA/nccl#2169", "4 x H100 SXM of one NVSwitch server, alltoall (NCCL 2.30.4; added "
        "2026-11-28, scored once: the first all-to-all log, the expert-parallel pricing inside a "
        "server; one row, 500 MiB)"),
    "h100x8_1node_nvls_allreduce_8G_nccl-tests-347": (
        "NVIDIA/nccl-tests#347", "8 x H100 SXM NVSwitch, NVLS (its efficiency 0.84 comes from a "
        "maintainer statement in nccl-tests#212, ~480 GB/s busbw: consistent, not independent)"),
    "h100x8_1node_allreduce_dgxc-benchmarking": (
        "NVIDIA/dgxc-benchmarking @46e42015", "8 x H100 SXM (one DGX H100), NCCL's default algorithm "
        "(NVLS from 8 MiB)"),
    "h20_1node_allreduce_smallmsg_deepep-303": (
        "deepseek-ai/DeepEP#303", "8 x H20 NVSwitch (8 GPUs assumed); messages <= 2 KiB only"),
    "mi300x_1node_allreduce_rccl-tests_ai-scripts": (
        "hisohara/ai-scripts @0780bb3c", "8 x MI300X, fully connected Infinity Fabric, RCCL"),
    "mi325x_1node_allreduce_ring_rccl-tests_ai-scripts": (
        "hisohara/ai-scripts @f26b661", "8 x MI325X (AMD AAC11), RCCL of ROCm 6.4.1, NCCL_ALGO=Ring"
        + AAC11_ADDED),
    "mi325x_2node_16gpu_allreduce_ring_rccl-tests_ai-scripts": (
        "hisohara/ai-scripts @f26b661", "2 AAC11 nodes x 8 MI325X, 8 Broadcom 400G RoCE NICs per node, "
        "NCCL_ALGO=Ring" + AAC11_ADDED),
    "mi325x_4node_32gpu_allreduce_ring_rccl-tests_ai-scripts": (
        "hisohara/ai-scripts @f26b661", "4 AAC11 nodes x 8 MI325X, 8 Broadcom 400G RoCE NICs per node, "
        "NCCL_ALGO=Ring" + AAC11_ADDED),
    "mi325x_8node_64gpu_allreduce_ring_rccl-tests_ai-scripts": (
        "hisohara/ai-scripts @f26b661", "8 AAC11 nodes x 8 MI325X, 8 Broadcom 400G RoCE NICs per node, "
        "NCCL_ALGO=Ring" + AAC11_ADDED),
    "nebius_h100_2node_16gpu_allreduce_dstack": (
        DSTACK_DOCS + "nebius.md", "2 Nebius nodes x 8 H100 on InfiniBand (the NICs not "
        "stated: a DGX H100's 8 x 400 Gb/s assumed)" + DSTACK_ADDED),
    "lambda_b200_2node_16gpu_allreduce_dstack": (
        DSTACK_DOCS + "lambda.md", "2 Lambda 1-Click Cluster nodes x 8 B200 on InfiniBand (the "
        "NICs not stated: a DGX B200's 8 x 400 Gb/s assumed), NCCL 2.26.2" + DSTACK_ADDED),
    "gcp_a4_b200_2node_16gpu_allreduce_dstack": (
        DSTACK_DOCS + "gcp.md", "2 GCP A4 nodes x 8 B200, 3.2 Tbps RoCE per node (8 x 400 "
        "Gb/s)" + DSTACK_ADDED),
    "azure_ndh100v5_8gpu_allreduce_nvls_nccl-2.18": (
        AZURE_GUIDE + " @f350e7e6", "1 x Azure ND H100 v5 (8 H100 SXM, NVSwitch), NCCL 2.18.5, "
        "NCCL_ALGO=NVLS at every size" + AZURE_ADDED),
    "azure_ndh200v5_8gpu_allreduce_nvls_nccl-2.20": (
        AZURE_GUIDE + " @7f20e5fa", "1 x Azure ND H200 v5 (8 H200, NVSwitch), NCCL 2.20.5, "
        "NCCL_ALGO=NVLS at every size" + AZURE_ADDED),
    "azure_nda100v4_8gpu_allreduce_nccl-2.18": (
        AZURE_GUIDE + " @3bb66cac", "1 x Azure ND A100 v4 (8 A100 80GB, NVSwitch), NCCL 2.18.5, "
        "algorithm not stated" + AZURE_ADDED),
    "azure_ndgb200v6_4gpu_allreduce_ring_nccl-2.25": (
        AZURE_GUIDE + " @2a370be6", "1 x Azure ND GB200 v6 (the 4 GPUs of one GB200 NVL72 tray), "
        "NCCL 2.25.1, NCCL_ALGO=Ring" + AZURE_ADDED),
}
