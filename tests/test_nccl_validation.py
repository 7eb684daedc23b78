"""Replay real nccl-tests logs (validation/nccl_tests/, sources in INDEX.md) against predictions.

Targets: busbw within 10% at sizes >= 64 MiB (issue #8; issue #2 asked for 15%); time within
2x at sizes <= 64 KiB (issue #2).
Rows that miss are listed in KNOWN_MISSES with the reason and marked xfail(strict): if the
model starts meeting them the test fails, so the list stays honest. docs/validation.md
shows the whole table.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.validation.nccl_suite import BUSBW_TOLERANCE, replay

FOLDER = Path(__file__).resolve().parent.parent / "validation" / "nccl_tests"
KNOWN_MISSES = {
    "a100x8_1node_nvlink_sendrecv_li-plus-playground": (
        None, "the first row (128 MiB) is a warm-up outlier: 1211 us against 1423 us for twice "
        "the bytes in the next row; the others are +10% to +14%: the point-to-point efficiency "
        "(0.9 of the collectives' NVLink efficiency) comes from another A100 system "
        "(nccl-tests#331) and is not refitted to this log"),
    "h100_2node_16gpu_gcp_a3mega_allreduce": (
        lambda size: size <= 2**30, "GCP A3 Mega's GPUDirect-TCPXO transport has a ~120 us "
        "small-message floor and ~0.8 ms per-operation cost at >= 32 MiB that no public spec "
        "states; the scenario approximates it with RoCE 200G (sizes from 2 GiB meet the target)"),
    "h100x8_1node_allreduce_dgxc-benchmarking": (
        lambda size: size == 32, "the 32 B out-of-place row is an outlier of the run "
        "(68 us against 13-15 us for its neighbours and its in-place twin)"),
    "a100_2node_16gpu_oci_allreduce_nccl-2.26": (
        None, "NCCL 2.26.5's tuner runs ring on two servers (tuning.cc prices ring and tree alike "
        "at the intra-node graph bandwidth there and tree at 0.92 of it); clustersim's auto picks "
        "the faster tree (+23.2%); the ring prediction, 191.7 GB/s, is within 0.1%"),
    "b300_2node_16gpu_alltoall_oci": (
        None, "sends are priced at NCCL's point-to-point efficiency, 0.9 of the links' rate "
        "(nccl-tests#331, measured over NVLink); over the network this run reaches the NICs' full "
        "~96 GB/s per GPU (-10.5%)"),
    "gb200_nvl72_64gpu_alltoall_oci": (
        lambda size: size == 2**32, "the 4 GiB row (566 GB/s) runs below its 8 GiB twin (623, "
        "+3.9% predicted); the model is flat in size there (+14.2%)"),
    "gb300_nvl72_64gpu_allreduce_oci": (
        lambda size: size == 2**33, "measured NVLS algbw stays at 473-481 GB/s from 8 to 64 GPUs "
        "of the rack, where the switch-port model gives n (1 + 1/p) per port, 10.8% more at 64 "
        "(+10.6% at 8 GiB, +8.0% at 16 GiB with the chunk loop and NCCL's 32 heads)"),
    "gb200_nvl72_128gpu_2racks_allreduce_oci": (
        None, "NVLS-Tree across racks: the rack's 64-GPU NVLS above its measured rate (as "
        "gb300_nvl72_64gpu) and NVLS-Tree's 0.86-0.90 of NVLS compound (+20%; the rise from 4 to "
        "8 GiB, +6%, is the chunk loop's fill, reproduced)"),
    "gb200_nvl72_192gpu_3racks_allreduce_oci": (
        None, "as the two-rack log, and the measured rate falls another 6% at three racks, "
        "3-5% in the model with NCCL's three-node tree two levels deep (+22% to +25%)"),
    "gb300_nvl72_128gpu_2racks_allreduce_oci": (
        None, "as gb200_nvl72_128gpu_2racks (+34% to +36%)"),
    "gb300_nvl72_128gpu_2racks_alltoall_oci": (
        None, "48 GB/s across two racks with 2 x 400 GbE per GPU, half of what the GB200 racks "
        "measured with one 400 Gb/s NIC per GPU (90 GB/s, predicted within 5%): a fabric or "
        "configuration limit of that run the source does not explain (+260%)"),
    "azure_nda100v4_8gpu_allreduce_nccl-2.18": (
        lambda size: size <= 2**16 or size in (2**26, 2**27), "Azure's NCCL 2.18.5 run on an "
        "ND A100 v4 VM (its script set NCCL_ALGO to NVLS, which Ampere lacks; what ran is not "
        "stated) takes 42-45 us at every size up to 1 MiB, three times a ring's LL latency "
        "(15 us predicted; the H100 VM's 2.18.5 run shows the same ~42 us floor from 64 KiB), "
        "and reaches its plateau late (+29% / +30% at 64 / 128 MiB, +3.5% at 8 GiB)"),
    "azure_ndgb200v6_4gpu_allreduce_ring_nccl-2.25": (
        lambda size: size in (2**27, 2**28, 2**29), "a ring over the 4 GPUs of a GB200 tray "
        "plateaus at 680 GB/s (OCI's tray: 663), 0.755 of the NVLink5 rate where NCCL's "
        "SM100_NVLINK_BW (0.80) gives 719 (+5.8% at 8 GiB), and climbs to it more slowly than "
        "modelled (+13% to +15% at 128-512 MiB)"),
    "lambda_b200_2node_16gpu_allreduce_dstack": (
        lambda size: size == 512 or size == 2**27, "two B200 servers: with NCCL 2.28's Blackwell "
        "per-channel tree ceilings (16 channels) the model reads +13% at 128 MiB (its tree "
        "with Simple), within 8% from 64 MiB otherwise; 114-118 us are measured from 1 to 4 MiB "
        "against 55-69 predicted; the 512 B out-of-place row (51 us against its in-place twin's "
        "37) is an outlier of the run"),
    "gcp_a4_b200_2node_16gpu_allreduce_dstack": (
        lambda size: size == 2**27, "as the Lambda B200 pair, over RoCE: +21% at 128 MiB; "
        "within 10% at every other scored size"),
    "h100pcie_x2_nvlink_bridge_allreduce_nccl-1161": (
        None, "measured 116 GB/s is half of what the H100 PCIe datasheet's 600 GB/s NVLink "
        "bridge implies; the reporter's system likely ran fewer bridges (NVIDIA/nccl#1161)"),
}


def _rows():
    table = replay(FOLDER)
    for row in table.itertuples():
        if row.meets_target is None:
            continue
        miss = KNOWN_MISSES.get(row.log)
        marks = []
        if miss and (miss[0] is None or miss[0](row.size_bytes)):
            marks = [pytest.mark.xfail(strict=True, reason=miss[1])]
        yield pytest.param(row, id=f"{row.log}-{row.size_bytes}", marks=marks)


@pytest.mark.parametrize("row", list(_rows()))
def test_prediction_meets_target(row):
    if row.target.startswith("busbw"):
        assert abs(row.busbw_error) <= BUSBW_TOLERANCE, f"busbw error {row.busbw_error:+.1%}"
    else:
        assert 0.5 <= row.time_ratio <= 2.0, f"time ratio {row.time_ratio:.2f}"


def test_every_log_has_a_scenario():
    logs = {p.stem for p in FOLDER.glob("*.txt")}
    scenarios = {p.stem for p in (FOLDER / "scenarios").glob("*.yaml")}
    assert logs == scenarios


def test_nccl_algo_does_not_bind_an_all_to_all():
    """NCCL_ALGO chooses among collective algorithms; an all-to-all runs as point-to-point
    sends (``ncclAlltoAll`` -> per-peer send/recv tasks, NVIDIA/nccl src/enqueue.cc), so the
    nccl#2169 log's NCCL_ALGO=Ring leaves it priced as direct transfers, not refused."""
    table = replay(FOLDER)
    row = table[table["log"] == "h100x4_1node_alltoall_nccl-2169"].iloc[0]
    assert row["algorithm"] == "direct"
