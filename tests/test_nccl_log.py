"""Tests of the nccl-tests log parser on the public logs in validation/nccl_tests."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.errors import ConfigError
from simulator.validation.nccl_log import parse_nccl_log, read_nccl_log

LOGS = Path(__file__).resolve().parents[1] / "validation" / "nccl_tests"
ALL_LOGS = sorted(LOGS.glob("*.txt"))
ROW = "  1048576  262144  float  sum  -1  100.0  10.49  19.66  0  100.0  10.49  19.66  0"

# file stem prefix: (rows, first size, last size, first time us, op, nranks, algorithm, avg busbw)
FACTS = {
    "h100_2node_16gpu_gcp": (31, 8, 8 * 2**30, 135.8, "all_reduce", 16, None, 70.742),
    "h100_2node_16gpu_oci": (5, 2**30, 16 * 2**30, 4511.2, "all_reduce", None, None, 458.452),
    "a100_2node_16gpu_oci_allreduce_nccl-2.21": (1, 10 * 2**30, 10 * 2**30, 90330, "all_reduce",
                                                 16, None, 220.921),
    "a100_2node_16gpu_oci_allreduce_nccl-2.26": (1, 10 * 2**30, 10 * 2**30, 104989, "all_reduce",
                                                 None, None, 191.752),
    "a100x8_1node_oci": (1, 10 * 2**30, 10 * 2**30, 80922, "all_reduce", None, None, 232.167),
    "h100_2node_4gpu": (5, 2**29, 8 * 2**30, 10052, "all_reduce", 8, "ring", 95.3009),
    "a100x8_1node_nvlink": (4, 2**27, 2**30, 1211.2, "sendrecv", None, None, None),
    "h100pcie": (2, 2**30, 2**31, 9306.7, "all_reduce", None, None, None),
    "h100x8_1node_nvls": (1, 8 * 2**30, 8 * 2**30, 31356, "all_reduce", None, None, None),
    "h100x8_1node_allreduce": (32, 8, 16 * 2**30, 13.67, "all_reduce", None, None, 159.151),
    "h20": (10, 4, 2048, 12.49, "all_reduce", None, None, None),
    "mi300x": (31, 8, 8 * 2**30, 19.28, "all_reduce", 8, None, 110.464),
    "h100x4": (1, 524288000, 524288000, 1174.14, "all_to_all", 4, "ring", None),
}


def load(prefix):
    (path,) = [p for p in ALL_LOGS if p.stem == prefix or p.name.startswith(prefix + "_")]
    return read_nccl_log(path)


def test_every_log_parses_to_rows_of_a_known_collective():
    """The logs without facts below (the OCI quick starts', one or two truncated rows each)
    still parse: rows, sizes increasing, a collective named by their ``*_perf`` line."""
    assert len(ALL_LOGS) >= len(FACTS) == 13
    for path in ALL_LOGS:
        log = read_nccl_log(path)
        assert len(log.size_bytes) >= 1 and np.all(np.diff(log.size_bytes) > 0), path.name
        assert log.op in {"all_reduce", "all_to_all", "sendrecv"}, path.name


@pytest.mark.parametrize("prefix", FACTS)
def test_real_log_facts(prefix):
    rows, first, last, first_us, op, nranks, algorithm, avg = FACTS[prefix]
    log = load(prefix)
    assert len(log.size_bytes) == rows and log.size_bytes.dtype == np.int64
    assert (log.size_bytes[0], log.size_bytes[-1]) == (first, last)
    assert log.time_s[0] == pytest.approx(first_us * 1e-6)
    assert (log.op, log.nranks, log.algorithm, log.avg_busbw_GBps) == (op, nranks, algorithm, avg)


@pytest.mark.parametrize("path", ALL_LOGS, ids=lambda p: p.name)
def test_algbw_is_size_over_time(path):
    log = read_nccl_log(path)
    expected = log.size_bytes / log.time_s / 1e9
    assert np.allclose(log.algbw_GBps, expected, rtol=0.01, atol=0.01)
    assert np.all(np.isfinite(log.inplace_time_s))  # every real row has an in-place time


@pytest.mark.parametrize("prefix", ["h100_2node_16gpu_gcp", "h100_2node_4gpu"])
def test_allreduce_busbw_convention(prefix):
    log = load(prefix)
    factor = 2 * (log.nranks - 1) / log.nranks
    assert np.allclose(log.busbw_GBps, log.algbw_GBps * factor, rtol=0.01, atol=0.01)


def test_specific_values():
    a3 = load("h100_2node_16gpu_gcp")
    assert a3.busbw_GBps[a3.size_bytes == 8 * 2**30].tolist() == [338.82]
    assert a3.inplace_time_s[-1] == pytest.approx(47743e-6)
    ring = load("h100_2node_4gpu")
    assert ring.inplace_time_s[0] == pytest.approx(9676.9e-6)
    assert load("a100x8_1node_nvlink").busbw_GBps[-1] == 195.10  # in-place #wrong is N/A there
    assert load("h100x8_1node_nvls").busbw_GBps.tolist() == [479.41]


def test_truncated_excerpt_line_is_not_a_row():
    log = load("h100pcie")
    assert 4 * 2**30 not in log.size_bytes
    assert log.time_s[-1] == pytest.approx(18535e-6)


def test_prose_mention_of_nccl_algo_is_not_a_setting():
    # the NVLS log's header quotes a maintainer on "NCCL_ALGO=RING" runs; it did not run ring
    assert "NCCL_ALGO=RING" in Path(load("h100x8_1node_nvls").source).read_text()
    assert load("h100x8_1node_nvls").algorithm is None
    assert parse_nccl_log(f"export NCCL_ALGO=Tree\n{ROW}").algorithm == "tree"


def test_row_layouts():
    text = "\n".join([
        "   1048576  262144  float  sum  100.0  10.49  10.49  0e+00  99.0  10.59  10.59  0e+00",
        "  2147483648  536870912  float  sum  12646  169.81  318.40  2e-07  12641  169.88  318.52",
        "   1048576  16384  float  none  -1  50.00  20.97  18.35  0  49.00  21.40  18.73  N/A",
        "  4294967296  1073741824  float  sum  -1  36943  116.26  116.26  0  36917  116.34  116.",
        "   2097152  524288  float  sum  -1  254.0  8.26  15.48  0",
        ROW,
    ])
    log = parse_nccl_log(text)
    assert log.size_bytes.tolist() == [2**20, 2**31, 2**20, 2**32, 2**21, 2**20]
    assert log.time_s * 1e6 == pytest.approx([100.0, 12646, 50.0, 36943, 254.0, 100.0])
    assert log.busbw_GBps.tolist() == [10.49, 318.40, 18.35, 116.26, 15.48, 19.66]
    assert log.inplace_time_s[:4] * 1e6 == pytest.approx([99.0, 12641, 49.0, 36917])
    assert np.isnan(log.inplace_time_s[4])
    assert list(log.to_frame().columns) == [
        "size_bytes", "time_s", "algbw_GBps", "busbw_GBps", "inplace_time_s"]


def test_garbage_lines_skipped_and_mpi_prefix_stripped():
    text = "\n".join([
        "host:12:34 [0] NCCL INFO Channel 00/24 : 0 1", "[1,0]<stdout>:" + ROW,
        "#  Rank  0 Group  0 Pid 1 on a device  0 [0x07] NVIDIA H100",
        "#  Rank  1 Group  0 Pid 2 on a device  1 [0x08] NVIDIA H100",
        "1 2 3 4 5 6 7", ROW, "./build/alltoall_perf -b 8 -e 1M", "# Avg bus bandwidth    : nan",
    ])
    log = parse_nccl_log(text)
    assert (len(log.size_bytes), log.nranks, log.op) == (2, 2, "all_to_all")
    assert log.avg_busbw_GBps is None


@pytest.mark.parametrize("text", ["", "hello\nworld", "# 1048576 262144 float sum -1 1 2 3 0"])
def test_no_rows_raises_config_error(text):
    with pytest.raises(ConfigError, match="no nccl-tests result rows found"):
        parse_nccl_log(text)


def test_rows_that_cannot_be_scored_are_counted_not_kept():
    zero_time = "  2097152  524288  float  sum  -1  0.00  inf  inf  0  10.0  0.00  0.00  0"
    text = "\n".join([ROW, ROW.replace("1048576  262144", "0  0", 1), ROW.replace("100.0", "nan", 1),
                      zero_time, ROW.replace("10.49", "-1.00", 1)])
    log = parse_nccl_log(text)
    assert log.size_bytes.tolist() == [2**20]
    assert log.skipped == (("of size 0", 1), ("with a NaN, infinite, zero or negative time", 2),
                           ("with a NaN, infinite or negative bandwidth", 1))
    assert log.skipped_note().startswith("4 result rows skipped (1 of size 0, 2 with")
    assert parse_nccl_log(ROW).skipped == () and parse_nccl_log(ROW).skipped_note() is None
    with pytest.raises(ConfigError, match="none of its 1 nccl-tests result rows can be scored"):
        parse_nccl_log(zero_time, "x.txt")

@pytest.mark.parametrize("data", [b"\x00\x01\x02binary", b"\xff\xfe\xfa not utf-8"])
def test_bad_file_raises_config_error_naming_it(tmp_path, data):
    path = tmp_path / "log.bin"
    path.write_bytes(data)
    with pytest.raises(ConfigError, match="log.bin") as info:
        read_nccl_log(path)
    assert info.value.source == str(path)
    with pytest.raises(ConfigError, match="not found"):
        read_nccl_log(tmp_path / "missing.txt")


ODD = ["#", "\n", "1e999", "99999999999999999999", "nan", "N/A", "0e+00", "-1", "", "1.5", "-np 2",
       "NCCL_ALGO=x", "# Avg bus bandwidth :", "# Rank 0 device", "[1,0]<stdout>:"]
EDITS = st.lists(st.tuples(st.integers(0, 12), st.sampled_from(ODD)), max_size=5)
ROWISH = EDITS.map(lambda edits: " ".join(dict([*enumerate(ROW.split()), *edits]).values()))


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), ROWISH, st.lists(ROWISH | st.text()).map("\n".join)))
def test_arbitrary_text_only_raises_config_error(text):
    try:
        log = parse_nccl_log(text)
    except ConfigError:
        return
    assert len(log.size_bytes) == len(log.time_s) > 0
    assert np.all(log.time_s > 0) and np.all(log.size_bytes > 0)
