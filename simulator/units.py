"""Unit conversions. Everything inside clustersim is SI: bytes, seconds, FLOP/s, B/s.

Hardware-spec keys carry their unit as a suffix (``bandwidth_GBps``,
``latency_us``); :mod:`simulator.config` converts them once with these factors.
Decimal prefixes follow the vendors' datasheets (1 GB/s = 1e9 B/s); binary
prefixes are only used for memory sizes written as GiB/MiB/KiB.
"""

from __future__ import annotations

import re

GB = 1e9
TB = 1e12
GIB = 2**30
MIB = 2**20
KIB = 2**10
US = 1e-6
TFLOPS = 1e12

GBPS_TO_BYTES_PER_S = 1e9
GBITPS_TO_BYTES_PER_S = 1e9 / 8.0

_SIZE_SUFFIX = {
    "": 1, "B": 1,
    "K": KIB, "KB": KIB, "KIB": KIB,
    "M": MIB, "MB": MIB, "MIB": MIB,
    "G": GIB, "GB": GIB, "GIB": GIB,
    "T": 2**40, "TB": 2**40, "TIB": 2**40,
}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def parse_size(text: str | int) -> int:
    """Parse a byte count as nccl-tests writes it: ``8``, ``64K``, ``8G``, ``1.5M``.

    Suffixes are binary (K = 1024 bytes), as in nccl-tests' ``-b``/``-e`` flags.

    Raises
    ------
    ValueError
        If the text is not a size.
    """
    if isinstance(text, int):
        return text
    match = _SIZE_RE.match(str(text))
    if not match or match.group(2).upper() not in _SIZE_SUFFIX:
        raise ValueError(f"{text!r} is not a size (expected e.g. 8, 64K, 8M, 8G)")
    return int(float(match.group(1)) * _SIZE_SUFFIX[match.group(2).upper()])


def format_bytes(n: float) -> str:
    """Human-readable binary size: ``format_bytes(2**30) == '1.0 GiB'``."""
    for unit, factor in (("TiB", 2**40), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if abs(n) >= factor:
            return f"{n / factor:.1f} {unit}"
    return f"{n:.0f} B"
