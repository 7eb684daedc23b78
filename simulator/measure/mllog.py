"""MLPerf Training result logs (``:::MLLOG`` lines, mlcommons/logging): the training step time.

A result log brackets each stretch of training between two evaluations with ``block_start``
and ``block_stop`` events (``time_ms``). How many samples a block holds is logged in one of
two ways, both read here:

- ``epoch_count`` in the block's metadata: tokens in the block (NVIDIA's GPT-3 logs of MLPerf
  v3.1-v4.1, whose "epoch" is counted in tokens), so ``steps = epoch_count / (B s)`` for the
  logged ``global_batch_size`` ``B`` and ``max_sequence_length`` ``s`` (2048 when not logged);
- ``samples_count`` at the block's start and at the next ``eval_start`` (the v5.0 logs), so
  ``steps = (next - start) / B``.

The step time of a block is its length over its steps; evaluation, initialisation and
checkpoint loading fall outside every block. :func:`step_time` is the median over the blocks
but the first (warm-up), as the validation sets' ``notes`` state. Lines may carry a prefix
before ``:::MLLOG`` (a rank, as in Oracle's logs).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Block", "read_blocks", "step_time"]

_TAG = ":::MLLOG "


@dataclass(frozen=True)
class Block:
    """One training block: its length (s) and the training steps it held."""

    seconds: float
    steps: float

    @property
    def step_seconds(self) -> float:
        return self.seconds / self.steps


def _events(lines: Iterable[str]) -> Iterable[dict]:
    for line in lines:
        at = line.find(_TAG)
        if at >= 0:
            try:
                yield json.loads(line[at + len(_TAG):])
            except json.JSONDecodeError:
                continue


def read_blocks(lines: Iterable[str], default_seq_len: int = 2048) -> list[Block]:
    """The training blocks of a result log's ``lines``, in order (module docstring)."""
    batch, seq_len, blocks = None, default_seq_len, []
    open_block, pending = None, None        # (start ms, tokens or start samples), block awaiting eval
    for event in _events(lines):
        key, meta, now = event.get("key"), event.get("metadata", {}), event.get("time_ms")
        if key == "global_batch_size":
            batch = float(event["value"])
        elif key == "max_sequence_length":
            seq_len = int(event["value"])
        elif key == "block_start":
            open_block = (now, meta.get("epoch_count"), meta.get("samples_count"))
        elif key == "block_stop" and open_block is not None and batch:
            start, tokens, samples = open_block
            if tokens is not None:
                blocks.append(Block((now - start) / 1000.0, tokens / (batch * seq_len)))
            elif samples is not None:
                pending = ((now - start) / 1000.0, samples)
            open_block = None
        elif key == "eval_start" and pending is not None and batch:
            seconds, samples = pending
            if meta.get("samples_count") is not None and meta["samples_count"] > samples:
                blocks.append(Block(seconds, (meta["samples_count"] - samples) / batch))
            pending = None
    return blocks


def step_time(lines: Iterable[str], default_seq_len: int = 2048) -> float:
    """Median step time (s) over a result log's training blocks, the first left out.

    Raises
    ------
    ValueError
        If the log holds fewer than two complete blocks.
    """
    blocks = read_blocks(lines, default_seq_len)
    if len(blocks) < 2:
        raise ValueError(f"{len(blocks)} complete training block(s); at least 2 are needed")
    return statistics.median(block.step_seconds for block in blocks[1:])
