"""Opening measured-run files (plain or gzip, told apart by magic bytes) and writing outputs
atomically.

Every importer reads through :func:`open_measured`, so an empty, binary or unreadable file
gives the same one-line :class:`~simulator.errors.ConfigError` naming the file and what was
expected, whatever the format.
"""

from __future__ import annotations

import gzip
import os
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from simulator.errors import ConfigError, UsageError

GZIP_MAGIC = b"\x1f\x8b"
"""First two bytes of every gzip member (RFC 1952, section 2.3.1: ID1 = 31, ID2 = 139)."""

SNIFF_BYTES = 4096
READ_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile)
"""What a damaged or cut-off gzip stream raises while it is being read."""


def is_gzip(path: Path) -> bool:
    """True when ``path`` starts with the gzip magic bytes (whatever its name ends with)."""
    with open(path, "rb") as handle:
        return handle.read(2) == GZIP_MAGIC


@contextmanager
def open_measured(path: Path | str, expected: str) -> Iterator[BinaryIO]:
    """Open ``path`` for binary reading, decompressing gzip transparently.

    Parameters
    ----------
    path : path-like
        The measured file (trace or log).
    expected : str
        What the file should be, for error messages ("a PyTorch profiler trace (JSON)").

    Raises
    ------
    ConfigError
        The file is missing, unreadable, empty, or (after decompression) holds binary data.
    """
    path = Path(path)
    source = str(path)
    try:
        compressed = is_gzip(path)
        handle = gzip.open(path, "rb") if compressed else open(path, "rb")  # noqa: SIM115
    except FileNotFoundError:
        raise ConfigError("file not found", source) from None
    except OSError as exc:
        raise ConfigError(f"cannot read file ({exc.strerror or exc})", source) from None
    with handle:
        _sniff(handle, source, expected)
        yield handle


def _sniff(handle: BinaryIO, source: str, expected: str) -> None:
    """Reject an empty or binary stream before parsing; leave the stream at its start."""
    try:
        head = handle.peek(SNIFF_BYTES)[:SNIFF_BYTES] if hasattr(handle, "peek") else b""
    except READ_ERRORS as exc:
        raise ConfigError(f"damaged or truncated gzip data ({exc}); expected {expected}",
                          source) from None
    if not head.strip():
        raise ConfigError(f"file is empty; expected {expected}", source)
    if b"\x00" in head:
        raise ConfigError(f"not a text file (binary data found); expected {expected}", source)


def check_output_path(path: Path | str, option: str = "-o") -> Path:
    """Refuse an output path whose folder does not exist, before any work is done."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"{option}: folder '{folder}' does not exist; create it first")
    if path.is_dir():
        raise UsageError(f"{option}: '{path}' is a folder; give a file name")
    return path


def write_atomic(path: Path | str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and
    :func:`os.replace`, so readers never see a half-written file."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
