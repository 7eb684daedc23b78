"""MLPerf result logs (simulator/measure/mllog.py): the training blocks and the step time, in
both ways the logs count a block's samples, with rank prefixes and stray lines."""

from __future__ import annotations

import json

import pytest

from simulator.measure.mllog import read_blocks, step_time


def _line(key, time_ms, value=None, prefix="", **metadata):
    event = {"namespace": "", "time_ms": time_ms, "event_type": "POINT_IN_TIME", "key": key,
             "value": value, "metadata": {"file": "x.py", **metadata}}
    return f"{prefix}:::MLLOG {json.dumps(event)}"


def _token_counted(seconds_per_block, batch=4, seq=2048, steps=10, prefix=""):
    """NVIDIA's v3.1-v4.1 form: epoch_count (tokens) in each block's metadata."""
    tokens = batch * seq * steps
    out = [_line("global_batch_size", 0, batch, prefix), _line("max_sequence_length", 0, seq, prefix)]
    t = 1000
    for i, seconds in enumerate(seconds_per_block):
        out.append(_line("block_start", t, prefix=prefix, first_epoch_num=i * tokens, epoch_count=tokens))
        t += int(seconds * 1000)
        out.append(_line("block_stop", t, prefix=prefix, first_epoch_num=i * tokens, epoch_count=tokens))
        out.append(_line("eval_start", t, prefix=prefix, epoch_num=(i + 1) * tokens))
        t += 5000                                  # evaluation: outside every block
    return out


def _sample_counted(seconds_per_block, batch=8, steps=5):
    """The v5.0 form: samples_count at block_start and at the next eval_start."""
    out = [_line("global_batch_size", 0, batch)]
    t, samples = 1000, 0
    for seconds in seconds_per_block:
        out.append(_line("block_start", t, samples_count=samples))
        t += int(seconds * 1000)
        out.append(_line("block_stop", t, samples_count=samples))
        samples += batch * steps
        out.append(_line("eval_start", t, samples_count=samples))
        t += 7000
    return out


def test_token_counted_blocks_give_seconds_per_step():
    blocks = read_blocks(_token_counted([12.0, 10.0, 10.5, 9.5]))
    assert [b.steps for b in blocks] == [10, 10, 10, 10]
    assert [b.step_seconds for b in blocks] == pytest.approx([1.2, 1.0, 1.05, 0.95])


def test_step_time_is_the_median_without_the_first_block():
    """The first block (warm-up) is left out; evaluation time never counts."""
    assert step_time(_token_counted([30.0, 10.0, 10.5, 9.5])) == pytest.approx(1.0)


def test_sample_counted_blocks_and_rank_prefixes():
    assert step_time(_sample_counted([40.0, 20.0, 22.0, 21.0])) == pytest.approx(4.2)
    prefixed = _token_counted([5.0, 4.0, 4.0], prefix="   0: ") + ["garbage line", ":::MLLOG {not json"]
    assert step_time(prefixed) == pytest.approx(0.4)


def test_too_few_blocks_is_an_error():
    with pytest.raises(ValueError, match="at least 2"):
        step_time(_token_counted([5.0]))
