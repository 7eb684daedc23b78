"""Megatron-Core's explicit pipeline layout (``parallelism.pipeline_layout``,
``--pipeline-model-parallel-layout``): which layers each model chunk holds.

A layout is a string of chunks separated by ``|``, in pipeline order (chunk ``c`` on stage
``c mod p``, virtual stage ``c div p``); each chunk lists its layers: ``E`` the embedding,
``t`` a decoder layer, ``m`` a multi-token prediction layer, ``L`` the output layer and loss.
``x*n`` repeats a letter, ``(...)*n`` a group (``|`` included); commas are cosmetic. DeepSeek-V3
on 8 x 4 chunks: ``Et|(tt|)*30mL`` (Megatron-Bridge's H100 recipe); on 16 chunks:
``Et*4|(t*4|)*14tmL``.

Reference: Megatron-Core ``PipelineParallelLayerLayout`` (``parse_str_to_list``,
``validate_layer_layout``; megatron/core/transformer/pipeline_parallel_layer_layout.py):
the chunk count is a multiple of ``p`` (the quotient is the virtual stage count), the
embedding comes first and the loss last, each once, the decoder and MTP layers number
``num_layers`` and ``mtp_num_layers``, no decoder layer follows an MTP layer, and the MTP layers
share one chunk in the last virtual stage of its rank (a rank other than the last: Megatron-Core's
standalone MTP stage).
"""

from __future__ import annotations

import re

__all__ = ["LayoutError", "layout_chunks", "parse_layout"]

_GROUP = re.compile(r"\(([^)]+)\)\*(\d+)")
_REPEAT = re.compile(r"(.)\*(\d+)")
_LETTERS = frozenset("EtmL")


class LayoutError(ValueError):
    """A layout string Megatron-Core would refuse; the message says why."""


MAX_UNROLLED = 1 << 20
"""Letters a layout may unroll to: a million layers and chunks, beyond any model."""


def parse_layout(text: str) -> list[str]:
    """The chunks of a layout string, each as its letters (``"Et|(tt|)*2mL"`` ->
    ``["Et", "tt", "tt", "mL"]``), unrolled as Megatron-Core's ``parse_str_to_list`` does."""
    text = text.replace(",", "")
    for pattern in (_GROUP, _REPEAT):
        text = _unrolled(pattern, text)
    chunks = text.split("|")
    bad = sorted({c for chunk in chunks for c in chunk} - _LETTERS)
    if bad:
        raise LayoutError(f"unknown layer letter(s) {', '.join(map(repr, bad))}: a layout uses E "
                          "(embedding), t (decoder layer), m (multi-token prediction), L (loss), "
                          "| between chunks, x*n and (...)*n")
    return chunks


def _unrolled(pattern: re.Pattern, text: str) -> str:
    """``text`` with every ``pattern`` match (a letter or group, times a count) repeated, refused
    before it is built when the result would exceed :data:`MAX_UNROLLED` letters."""
    matches = list(pattern.finditer(text))
    if any(len(m.group(2)) > len(str(MAX_UNROLLED)) for m in matches):
        raise LayoutError(f"a repeat count beyond {MAX_UNROLLED:,}")
    size = len(text) + sum(len(m.group(1)) * int(m.group(2)) - len(m.group(0)) for m in matches)
    if size > MAX_UNROLLED:
        raise LayoutError(f"unrolls to {size:,} letters; a layout spells at most {MAX_UNROLLED:,} "
                          "(one letter per layer, | per chunk)")
    return pattern.sub(lambda match: match.group(1) * int(match.group(2)), text)


def layout_chunks(text: str, pp: int, virtual_stages: int, layers: int, mtp_layers: int
                  ) -> list[tuple[int, int]]:
    """(decoder layers, multi-token prediction layers) of each of the layout's ``p v`` chunks
    in pipeline order, after Megatron-Core's checks (module docstring).

    Raises
    ------
    LayoutError
        If the layout does not parse or fails a check.
    """
    chunks = parse_layout(text)
    if len(chunks) != pp * virtual_stages:
        hint = (f" (set parallelism.virtual_stages: {len(chunks) // pp})"
                if len(chunks) % pp == 0 and len(chunks) > pp else "")
        raise LayoutError(f"{len(chunks)} chunks; expected pp * virtual_stages = {pp} * {virtual_stages}"
                          + hint)
    flat = "".join(chunks)
    if not flat.startswith("E") or flat.count("E") != 1:
        raise LayoutError("the embedding E must come first, once")
    if not flat.endswith("L") or flat.count("L") != 1:
        raise LayoutError("the loss L must come last, once")
    if flat.count("t") != layers:
        raise LayoutError(f"{flat.count('t')} decoder layers t; expected model.layers ({layers})")
    if flat.count("m") != mtp_layers:
        raise LayoutError(f"{flat.count('m')} multi-token prediction layers m; expected model.mtp_layers "
                          f"({mtp_layers})")
    if "m" in flat and "t" in flat[flat.index("m"):]:
        raise LayoutError("a decoder layer t follows a multi-token prediction layer m")
    holding = [c for c, chunk in enumerate(chunks) if "m" in chunk]
    if len(holding) > 1 or (holding and holding[0] // pp != virtual_stages - 1):
        raise LayoutError("the multi-token prediction layers m must share one chunk, in the last virtual "
                          "stage of its pipeline rank")
    return [(chunk.count("t"), chunk.count("m")) for chunk in chunks]
