"""Megatron-Core's uneven pipeline split: how many transformer layers the first and last
pipeline stages hold when ``--decoder-first-pipeline-num-layers`` /
``--decoder-last-pipeline-num-layers`` are given (``parallelism.first_stage_layers`` /
``last_stage_layers``).

Reference: Megatron-Core ``get_transformer_layer_offset`` and ``get_num_layers_to_build``
(megatron/core/transformer/transformer_layer.py, transformer_block.py; read in the copy
AMD's Primus carries, primus/backends/megatron/core/transformer/transformer_layer.py @
194d0b5): the stages not set are "middle" stages, ``middle_num_layers = L - first - last``
is divided evenly over them, and with virtual pipeline stages each stage's count is cut into
``vp_size`` equal chunks (Megatron-Core's MR 2795 design note: "each stage's layer count must
still be divisible by the VPP size").
"""

from __future__ import annotations


def uneven_split(layers: int, pp: int, virtual_stages: int, first: int | None,
                 last: int | None) -> list[int]:
    """Megatron-Core's uneven pipeline split: ``first`` layers on stage 0 and ``last`` on stage
    ``p - 1`` (either may be None), the rest ``L - first - last`` divided evenly over the
    ``p - (number set)`` middle stages; with ``v`` virtual stages every stage's count is cut
    into ``v`` equal chunks. Megatron-Core ``get_transformer_layer_offset``
    (megatron/core/transformer/transformer_layer.py) and its ``TransformerConfig`` checks.

    Raises
    ------
    ValueError
        If the middle layers do not divide evenly, a stage would be empty, or a stage's count
        is not a multiple of ``v``.
    """
    ends = [x for x in (first, last) if x is not None]
    middle_stages = pp - len(ends)
    middle = layers - sum(ends)
    if pp < 2 or middle < middle_stages or (middle_stages == 0 and middle != 0):
        raise ValueError(f"first/last stage layers {first}/{last} leave {middle} layers for "
                         f"{middle_stages} middle stages of {pp}")
    if middle_stages and middle % middle_stages:
        raise ValueError(f"the {middle} layers left by first/last stage layers {first}/{last} do "
                         f"not divide evenly over the {middle_stages} middle stages")
    each = middle // middle_stages if middle_stages else 0
    split = [each] * pp
    if first is not None:
        split[0] = first
    if last is not None:
        split[-1] = last
    if any(n % virtual_stages for n in split):
        raise ValueError(f"stage layer counts {split} are not all multiples of virtual_stages "
                         f"({virtual_stages})")
    return split


def empty_end_chunks(pp: int, virtual_stages: int) -> int:
    """How many model chunks may hold no transformer layer: the first (embedding only) and
    the last (output layer and loss only), with interleaving (``v > 1``, so that no pipeline
    stage is left empty) and at least two stages."""
    return min(2, pp - 1) if virtual_stages > 1 else 0
