"""Parse a Megatron-LM training log: the arguments block and the iteration lines.

Megatron-LM (and Megatron-Core based launchers that print the same lines: NVIDIA NeMo,
AMD Primus) writes, from ``megatron/training/arguments.py`` ``_print_args``::

    ------------------------ arguments ------------------------
      num_layers ...................................... 32
      ...
    -------------------- end of arguments ---------------------

and, from ``megatron/training/training.py`` ``training_log``, one line per logged
iteration::

     iteration       10/      50 | consumed samples: 20480 | elapsed time per iteration (ms):
     6387.4 | throughput per GPU (TFLOP/s/GPU): 945.7 | ... | global batch size:  2048 | ...

Primus prints ``current/average`` pairs (``6387.4/6428.2``); the first number is taken.
Upstream Megatron averages "elapsed time per iteration" over ``log_interval`` iterations,
so each line stands for the mean of its interval. Other lines are ignored; launcher
prefixes and ANSI colour codes are stripped. Megatron also logs
``> padded vocab (size: V) with D dummy tokens (new size: P)`` when it builds the tokenizer;
P is the vocabulary the model trains with.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from simulator.errors import ConfigError
from simulator.measure.files import READ_ERRORS, open_measured

EXPECTED = "a Megatron-LM training log (arguments block and 'iteration N/ M |' lines)"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_BLOCK_START = re.compile(r"-{4,}\s*arguments\s*-{4,}")
_BLOCK_END = re.compile(r"-{4,}\s*end of arguments\s*-{4,}")
_ARG = re.compile(r"([A-Za-z_]\w*) \.+(?: (.*?))?\s*$")
_LONG_ARG = re.compile(r"([A-Za-z_]\w{47,})  (.*?)\s*$")   # 48+ characters: no dots printed
_ITERATION = re.compile(r"\biteration\s+(\d+)\s*/\s*(\d+)\s*\|")
_NUMBER = r"(\S*)"
"""A field's value: the text up to the next blank (``2000.5``, or Primus's ``6529.4/156330.0``:
this iteration's, then the running average), read by :func:`_field_value`."""
_FIELDS = {
    "elapsed_ms": re.compile(r"elapsed time per iteration \(ms\):\s*" + _NUMBER),
    "tflops_per_gpu": re.compile(r"throughput per GPU \(TFLOP/s/GPU\):\s*" + _NUMBER),
    "tokens_per_gpu_s": re.compile(r"tokens per GPU \(tokens/s/GPU\):\s*" + _NUMBER),
    "global_batch": re.compile(r"global batch size:\s*" + _NUMBER),
    "skipped": re.compile(r"number of skipped iterations:\s*" + _NUMBER),
}
_DECIMAL = re.compile(r"\d+(?:\.\d*)?|\.\d+")
_PADDED_VOCAB = re.compile(r"padded vocab \(size: (\d+)\) with (\d+) dummy tokens "
                           r"\(new size: (\d+)\)")
_INT = re.compile(r"^-?\d+$")
MS = 1e-3
"""Seconds per millisecond (the log prints elapsed times in ms)."""


@dataclass(frozen=True)
class MegatronLog:
    """One parsed log.

    Attributes
    ----------
    source : str
        The file.
    arguments : dict
        Every ``name .... value`` of the first arguments block; values as Python
        None/bool/int/float where they read as such, else the printed text.
    iterations : pandas.DataFrame
        One row per logged iteration (first occurrence of each number): ``iteration``,
        ``train_iters``, ``elapsed_s``, ``tflops_per_gpu``, ``tokens_per_gpu_s``,
        ``global_batch``, ``skipped`` (NaN where the line does not print the field).
    padded_vocab : int or None
        The padded vocabulary size Megatron logged, None if it did not.
    """

    source: str
    arguments: dict[str, Any]
    iterations: pd.DataFrame
    padded_vocab: int | None


def read_megatron_log(path: Path | str) -> MegatronLog:
    """Read the log at ``path`` (plain text or gzip), line by line.

    Raises
    ------
    ConfigError
        Empty, binary or damaged file; no arguments block, a block that is never closed,
        or no iteration line. The message names the file and what was expected.
    """
    source = str(path)
    with open_measured(path, EXPECTED) as stream:
        try:
            arguments, rows, vocab, state = _scan(_text_lines(stream))
        except READ_ERRORS as exc:
            raise ConfigError(f"damaged or truncated gzip data ({exc}); expected {EXPECTED}",
                              source) from None
    _require(state, rows, source)
    frame = pd.DataFrame(rows, columns=["iteration", "train_iters", *_FIELDS])
    frame = frame[frame["elapsed_ms"] > 0.0].drop_duplicates("iteration")   # NaN and 0 dropped
    frame = frame.sort_values("iteration").reset_index(drop=True)
    frame.insert(2, "elapsed_s", frame.pop("elapsed_ms") * MS)
    return MegatronLog(source, arguments, frame, vocab)


def _text_lines(stream):
    for raw in stream:
        yield _ANSI.sub("", raw.decode("utf-8", errors="replace"))


def _scan(lines) -> tuple[dict[str, Any], list[list], int | None, str]:
    """One pass: arguments of the first block, iteration rows, padded vocabulary, and the
    block state at the end (``none``, ``open`` or ``closed``)."""
    arguments: dict[str, Any] = {}
    rows: list[list] = []
    vocab, state = None, "none"
    for line in lines:
        if state == "open":
            if _BLOCK_END.search(line):
                state = "closed"
            elif (found := _ARG.search(line) or _LONG_ARG.search(line)) is not None:
                arguments[found.group(1)] = _value(found.group(2) or "")
        elif state == "none" and _BLOCK_START.search(line) and "end of" not in line:
            state = "open"
        elif (found := _ITERATION.search(line)) is not None:
            rows.append(_iteration_row(found, line))
        elif vocab is None and (found := _PADDED_VOCAB.search(line)) is not None:
            vocab = int(found.group(3))
    return arguments, rows, vocab, state


def _iteration_row(found: re.Match, line: str) -> list:
    row: list = [int(found.group(1)), int(found.group(2))]
    for pattern in _FIELDS.values():
        value = pattern.search(line)
        row.append(_field_value(value.group(1)) if value else float("nan"))
    return row


def _field_value(text: str) -> float:
    """The number an iteration field prints, as Megatron formats it: digits with an optional
    decimal part, ending the text or before a separator (``/``, ``|``, ``,``); NaN for anything
    else (``nan``, ``1.2.3``, ``1e400``, ``-5``), so that a malformed field drops its row instead
    of being read as the digits it starts with or failing the import."""
    number = _DECIMAL.match(text)
    after = text[number.end():number.end() + 1] if number is not None else ""
    if number is None or (after and (after.isalnum() or after in ".+-")):
        return float("nan")
    return float(number.group())


def _value(text: str) -> Any:
    """``None``/``True``/``False``/numbers as Python values, anything else as text; Primus
    prints the booleans of its YAML configs in lower case (``no_fp8_weight_transpose_cache
    .... true``), read as booleans too."""
    text = text.strip()
    constants = {"None": None, "True": True, "False": False, "true": True, "false": False}
    if text in constants:
        return constants[text]
    if _INT.match(text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


def _require(state: str, rows: list, source: str) -> None:
    if state == "none":
        raise ConfigError("no Megatron arguments block ('---- arguments ----' followed by "
                          f"'name .... value' lines); expected {EXPECTED}", source)
    if state == "open":
        raise ConfigError("the arguments block never ends ('---- end of arguments ----' "
                          f"missing): the file is cut off; expected {EXPECTED}", source)
    if all(math.isnan(row[2]) for row in rows):   # no line with an elapsed time
        raise ConfigError("no iteration lines with 'elapsed time per iteration (ms)' and a number "
                          "such as 2000.5 after it: the log ends before training logged a step "
                          f"(cut off?), or its times are malformed; expected {EXPECTED}", source)
    if not any(row[2] > 0.0 for row in rows):
        raise ConfigError("every 'elapsed time per iteration (ms)' is 0: the log holds no step "
                          f"time to compare with; expected {EXPECTED}", source)
