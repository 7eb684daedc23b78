"""Opening measured-run files (plain or gzip, told apart by magic bytes); the output-file
helpers :func:`check_output_path` and :func:`write_atomic` live in
:mod:`simulator.export.atomic` and are re-exported here.

Every importer reads through :func:`open_measured`, so an empty, binary or unreadable file
gives the same one-line :class:`~simulator.errors.ConfigError` naming the file and what was
expected, whatever the format.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from simulator.errors import ConfigError
from simulator.export.atomic import check_output_path, write_atomic

__all__ = ["GZIP_MAGIC", "check_output_path", "is_gzip", "open_measured", "write_atomic"]

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
