"""Parse the text output of NVIDIA nccl-tests (``all_reduce_perf`` and friends).

Users point clustersim at their own logs, so the parser is lenient: it keeps
every line that reads as a result row and skips everything else (NCCL INFO
lines, MPI chatter, comments). Accepted row layouts::

    size count type redop root time algbw busbw #wrong time algbw busbw #wrong   (current)
    size count type redop      time algbw busbw error  time algbw busbw error    (older)

``#wrong`` may be a number or ``N/A``; older ``error`` columns are floats such
as ``0e+00``. A result row that cannot be scored (size 0; a time that is NaN, infinite, 0
or negative; a bandwidth that is NaN, infinite or negative) is left out and counted in
:attr:`NcclLog.skipped`, so callers can say so; a log of such rows only is an error.
The in-place half may be missing or cut off. Lines starting with
``#`` are comments; an ``mpirun --tag-output`` prefix such as
``[1,0]<stdout>:`` is stripped first. Times in the table are microseconds and
are returned in seconds; bandwidths stay in GB/s (1e9 B/s) as nccl-tests prints.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path, PurePath

import numpy as np
import pandas as pd

from simulator.errors import ConfigError
from simulator.units import US

MAX_FILE_BYTES = 64 * 2**20
NO_ROWS_MESSAGE = (
    "no nccl-tests result rows found; expected lines like "
    "'  1048576  262144  float  sum  -1  ...  time algbw busbw ...'"
)

_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d{1,3})?", re.ASCII)
_NOT_FINITE = re.compile(r"[+-]?(?:nan|inf)", re.ASCII | re.IGNORECASE)
_COUNT = re.compile(r"\d{1,18}", re.ASCII)
_ROOT = re.compile(r"-?\d{1,9}", re.ASCII)
_FIXED = re.compile(r"\d+\.\d+", re.ASCII)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
_MPI_PREFIX = re.compile(r"^\s*\[\d+,\d+\]<std(?:out|err)>:", re.ASCII)

_PERF_BINARY = re.compile(
    r"(?<![A-Za-z0-9_])(all_reduce|all_gather|reduce_scatter|broadcast|reduce|alltoall|sendrecv)"
    r"_perf(?![A-Za-z0-9])"
)
_OP_NAMES = {"alltoall": "all_to_all"}
_FILE_NAME_OPS = (
    ("allreduce", "all_reduce"), ("allgather", "all_gather"),
    ("reducescatter", "reduce_scatter"), ("alltoall", "all_to_all"),
    ("sendrecv", "sendrecv"), ("broadcast", "broadcast"), ("reduce", "reduce"),
)
_RANK_LINE = re.compile(r"^#\s*Rank\s+(\d{1,7})\b.*\bdevice\b", re.ASCII)
_THREADS_GPUS = re.compile(r"\bnThread\s+(\d{1,5})\s+nGpus\s+(\d{1,5})\b", re.ASCII)
_NP_FLAG = re.compile(r"(?<!\S)--?np[\s=]+(\d{1,7})(?!\S)", re.ASCII)
_THREAD_FLAG = re.compile(r"(?<!\S)(?:-t|--nthreads)[\s=]+(\d{1,5})(?!\S)", re.ASCII)
_GPU_FLAG = re.compile(r"(?<!\S)(?:-g|--ngpus)[\s=]+(\d{1,5})(?!\S)", re.ASCII)
# NCCL_ALGO counts only where it is set (NCCL INFO echo, -x/-e/export/env, srun
# --export, a leading VAR=value before a command or alone on a line), not in prose.
_ALGO = re.compile(
    r"NCCL_ALGO set by environment to\s+([\^\w,]+)"
    r"|(?<!\S)(?:-x|-e|--env|export|env|setenv)[ \t]+NCCL_ALGO(?:=|[ \t]+)[\"']?([\^\w,]+)"
    r"|--export=\S*?NCCL_ALGO=([\^\w,]+)"
    r"|^[#$> \t]*(?:\w+=\S*[ \t]+)*NCCL_ALGO=([\^\w,]+)(?:[ \t]+\S|[ \t]*$)",
    re.ASCII | re.MULTILINE,
)
_AVG_BUSBW = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)", re.ASCII)

ZERO_SIZE = "of size 0"
BAD_TIME = "with a NaN, infinite, zero or negative time"
BAD_BANDWIDTH = "with a NaN, infinite or negative bandwidth"
"""Why a result row is left out (:attr:`NcclLog.skipped`), as ``N rows <reason>`` reads."""


@dataclass(frozen=True, eq=False)
class NcclLog:
    """One nccl-tests log: result rows in file order plus what the text says about the run.

    Attributes
    ----------
    source : str
        File path, or ``"<text>"`` for text passed directly.
    op : str or None
        Collective (``"all_reduce"``, ``"all_to_all"``, ``"sendrecv"``, ...), from the
        ``*_perf`` binary named in the text, else from the file name, else None.
    nranks : int or None
        Number of ranks, from ``# Rank N ... device`` lines or ``-np N`` times
        threads x GPUs per process; None when the text does not say.
    algorithm : str or None
        Lower-cased ``NCCL_ALGO`` value (``"ring"``, ``"tree"``, ``"nvls"``) where the text
        sets it (``-x NCCL_ALGO=RING``, ``export``, ``NCCL_ALGO=Tree ./cmd``, NCCL's "set by
        environment" line); None if not set that way or an exclusion list (``^NVLS``).
    size_bytes : numpy.ndarray
        Message size per row, int64 bytes.
    time_s : numpy.ndarray
        Out-of-place time per row, seconds.
    algbw_GBps, busbw_GBps : numpy.ndarray
        Out-of-place algorithm and bus bandwidth, GB/s (1e9 B/s).
    inplace_time_s : numpy.ndarray
        In-place time per row, seconds; NaN where the row has no in-place half.
    avg_busbw_GBps : float or None
        Value of the last ``# Avg bus bandwidth`` line, None if absent.
    skipped : tuple of (str, int)
        Result rows left out because they cannot be scored, as ``(reason, count)`` pairs
        (:data:`ZERO_SIZE`, :data:`BAD_TIME`, :data:`BAD_BANDWIDTH`); empty if none.
    """

    source: str
    op: str | None
    nranks: int | None
    algorithm: str | None
    size_bytes: np.ndarray
    time_s: np.ndarray
    algbw_GBps: np.ndarray
    busbw_GBps: np.ndarray
    inplace_time_s: np.ndarray
    avg_busbw_GBps: float | None
    skipped: tuple[tuple[str, int], ...] = ()

    def skipped_note(self) -> str | None:
        """``N result rows skipped (k of size 0, ...)``, or None when every row was kept."""
        if not self.skipped:
            return None
        total, reasons = _tally(self.skipped)
        return f"{total} result row{'s' if total != 1 else ''} skipped ({reasons})"

    def to_frame(self) -> pd.DataFrame:
        """Rows as a DataFrame: size_bytes, time_s, algbw_GBps, busbw_GBps, inplace_time_s."""
        columns = ("size_bytes", "time_s", "algbw_GBps", "busbw_GBps", "inplace_time_s")
        return pd.DataFrame({name: getattr(self, name) for name in columns})


def read_nccl_log(path: str | Path) -> NcclLog:
    """Read and parse an nccl-tests log file.

    Parameters
    ----------
    path : str or pathlib.Path
        The log file (UTF-8 text).

    Returns
    -------
    NcclLog

    Raises
    ------
    ConfigError
        If the file is missing, unreadable, binary, not UTF-8 or holds no result rows.
    """
    source = str(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise ConfigError("file not found", source) from None
    except OSError as exc:
        raise ConfigError(f"cannot read file ({exc.strerror or exc})", source) from None
    return parse_nccl_log(_decode(raw, source), source)


def parse_nccl_log(text: str, source: str = "<text>") -> NcclLog:
    """Parse nccl-tests output held in a string.

    Parameters
    ----------
    text : str
        Whole log text; lines that are not result rows are ignored.
    source : str, optional
        Name used in error messages and stored in :attr:`NcclLog.source`.

    Returns
    -------
    NcclLog

    Raises
    ------
    ConfigError
        If no line parses as a result row, or no result row can be scored.
    """
    lines = [_MPI_PREFIX.sub("", line).strip() for line in text.splitlines()]
    parsed = [row for line in lines if (row := _parse_row(line)) is not None]
    rows = [row for row in parsed if not isinstance(row, str)]
    skipped = tuple((reason, count) for reason in (ZERO_SIZE, BAD_TIME, BAD_BANDWIDTH)
                    if (count := parsed.count(reason)))
    if not rows:
        _raise_no_rows(source, skipped)
    sizes, times_us, algbw, busbw, inplace_us = zip(*rows, strict=True)
    return NcclLog(
        source=source,
        op=_infer_op(text, source),
        nranks=_infer_nranks(lines, text),
        algorithm=_infer_algorithm(text),
        size_bytes=_frozen(np.array(sizes, dtype=np.int64)),
        time_s=_frozen(np.array(times_us, dtype=float) * US),
        algbw_GBps=_frozen(np.array(algbw, dtype=float)),
        busbw_GBps=_frozen(np.array(busbw, dtype=float)),
        inplace_time_s=_frozen(np.array(inplace_us, dtype=float) * US),
        avg_busbw_GBps=_last_avg_busbw(lines),
        skipped=skipped,
    )


def _raise_no_rows(source: str, skipped: tuple[tuple[str, int], ...]) -> None:
    """The ConfigError of a log without a usable result row, saying why rows were left out."""
    if not skipped:
        raise ConfigError(NO_ROWS_MESSAGE, source)
    total, reasons = _tally(skipped)
    raise ConfigError(f"none of its {total} nccl-tests result rows can be scored ({reasons}); "
                      "expected a size above 0, a positive time and finite bandwidths", source)


def _tally(skipped: tuple[tuple[str, int], ...]) -> tuple[int, str]:
    """(rows left out, ``k reason, ...``) of :attr:`NcclLog.skipped`."""
    return sum(count for _, count in skipped), ", ".join(f"{count} {reason}" for reason, count in skipped)


def _decode(raw: bytes, source: str) -> str:
    """UTF-8 text of ``raw``, or a ConfigError naming ``source``."""
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError(f"file is larger than {MAX_FILE_BYTES // 2**20} MiB", source)
    if b"\x00" in raw:
        raise ConfigError("not a text file (binary data found); expected nccl-tests output", source)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError("not UTF-8 text; expected nccl-tests output", source) from None


def _parse_row(line: str) -> tuple[int, float, float, float, float] | str | None:
    """``(size, time_us, algbw, busbw, inplace_time_us)`` of a result row, the reason it is
    left out (:data:`ZERO_SIZE`, :data:`BAD_TIME`, :data:`BAD_BANDWIDTH`) if it cannot be
    scored, else (not a result row) None."""
    if line.startswith("#"):
        return None
    tokens = line.split()
    if len(tokens) < 6 or not (_COUNT.fullmatch(tokens[0]) and _COUNT.fullmatch(tokens[1])):
        return None
    if not _WORD.fullmatch(tokens[2]):
        return None
    rest = tokens[4:] if _WORD.fullmatch(tokens[3]) else tokens[3:]
    if _starts_with_root(rest):
        rest = rest[1:]
    if not 3 <= len(rest) <= 8:
        return None
    out_of_place = [_value(token) for token in rest[:3]]
    if any(value is None for value in out_of_place):
        return None
    reason = _unusable(int(tokens[0]), *out_of_place)
    if reason is not None:
        return reason
    time_us, algbw, busbw = out_of_place
    inplace_us = _number(rest[4]) if len(rest) > 4 else None
    return int(tokens[0]), time_us, algbw, busbw, math.nan if inplace_us is None else inplace_us


def _starts_with_root(rest: list[str]) -> bool:
    """True if ``rest`` is ``root time algbw busbw ...`` rather than ``time algbw busbw error``.

    nccl-tests prints bandwidths as fixed-point (``%.2f``); an older ``error`` column
    is ``0e+00`` and ``#wrong`` sits after busbw, so only the root layout has
    fixed-point numbers in both the third and fourth places. A whole row of nine (root and
    both halves) is the root layout whatever its bandwidths read (``inf`` after a zero time).
    """
    return _ROOT.fullmatch(rest[0]) is not None and (
        len(rest) == 9 or (len(rest) >= 4 and all(_FIXED.fullmatch(token) for token in rest[2:4])))


def _unusable(size: int, time_us: float, algbw: float, busbw: float) -> str | None:
    """Why a result row with these out-of-place figures cannot be scored, else None."""
    if size == 0:
        return ZERO_SIZE
    if not (math.isfinite(time_us) and time_us > 0):
        return BAD_TIME
    if not all(math.isfinite(bw) and bw >= 0 for bw in (algbw, busbw)):
        return BAD_BANDWIDTH
    return None


def _value(token: str) -> float | None:
    """Float value of a plain ASCII decimal ``token`` or of ``nan``/``inf``, else None."""
    if _NOT_FINITE.fullmatch(token):
        return float(token)
    return float(token) if _NUMBER.fullmatch(token) else None


def _number(token: str) -> float | None:
    """Finite float value of a plain ASCII decimal ``token``, else None."""
    if not _NUMBER.fullmatch(token):
        return None
    value = float(token)
    return value if math.isfinite(value) else None


def _infer_op(text: str, source: str) -> str | None:
    """Collective name from the ``*_perf`` binary in ``text``, else from the file name."""
    match = _PERF_BINARY.search(text)
    if match:
        return _OP_NAMES.get(match.group(1), match.group(1))
    stem = PurePath(source).name.lower().replace("_", "").replace("-", "")
    return next((op for key, op in _FILE_NAME_OPS if key in stem), None)


def _infer_nranks(lines: list[str], text: str) -> int | None:
    """Distinct ``# Rank`` lines, else ``-np`` x threads x GPUs per process, else None."""
    ranks = {m.group(1) for line in lines if (m := _RANK_LINE.match(line))}
    if ranks:
        return len(ranks)
    processes = _NP_FLAG.search(text)
    if processes is None:
        return None
    nranks = int(processes.group(1)) * _ranks_per_process(text)
    return nranks if nranks > 0 else None


def _ranks_per_process(text: str) -> int:
    """nThread x nGpus from the nccl-tests header, else ``-t`` x ``-g`` flags (default 1)."""
    header = _THREADS_GPUS.search(text)
    if header:
        return int(header.group(1)) * int(header.group(2))
    threads, gpus = _THREAD_FLAG.search(text), _GPU_FLAG.search(text)
    return (int(threads.group(1)) if threads else 1) * (int(gpus.group(1)) if gpus else 1)


def _infer_algorithm(text: str) -> str | None:
    """Lower-cased value of the last ``NCCL_ALGO`` setting, None for none or an exclusion."""
    values = [next(group for group in m.groups() if group) for m in _ALGO.finditer(text)]
    if not values or values[-1].startswith("^"):
        return None
    return values[-1].lower()


def _last_avg_busbw(lines: list[str]) -> float | None:
    """Value of the last ``# Avg bus bandwidth : X`` line, None if absent or unreadable."""
    values = [_number(m.group(1)) for line in lines if (m := _AVG_BUSBW.match(line))]
    values = [value for value in values if value is not None]
    return values[-1] if values else None


def _frozen(array: np.ndarray) -> np.ndarray:
    """``array`` made read-only, so a frozen NcclLog stays unchanged."""
    array.setflags(write=False)
    return array
