"""How a model's layers are split over pipeline stages and their virtual chunks.

References
----------
.. [N21] Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
   Clusters Using Megatron-LM", SC21, arXiv:2104.04473 -- sec. 2.2 (schedules).
.. [L24] Llama Team, "The Llama 3 Herd of Models", arXiv:2407.21783, sec. 3.3.2 --
   one layer fewer on the first and the last pipeline stage.
"""

from __future__ import annotations

from simulator.config.hybrid import pattern_counts
from simulator.config.pipeline_layout import layout_chunks
from simulator.config.scenario import ModelConfig, ParallelismConfig
from simulator.config.stage_split import empty_end_chunks, uneven_split

__all__ = ["chunk_layers", "layer_split", "pipeline_chunks", "scenario_split", "stage_kinds", "stage_mix",
           "stage_patterns"]


def chunk_layers(layers: int, pp: int, virtual_stages: int = 1) -> list[int]:
    """Layers of each of the ``pp * v`` model chunks, in pipeline order.

    Every chunk gets ``ceil(L / n)`` layers (``n = pp v``) and the ``n ceil(L/n) - L``
    chunks left one short are taken from the ends inward: first, last, second,
    second-to-last... This is Llama 3's rule [L24]: the first and last stages, which also
    hold the embedding and the output layer and loss, get one layer fewer (126 layers on
    16 stages: 7, 8, ..., 8, 7). With one layer per chunk the first and last chunks may be
    left with no transformer layer at all (``n = L + 1`` or ``L + 2``): "the first model
    chunk on the first stage has only the embedding, and the last model chunk on the last
    stage has only output projection and loss calculation" (Llama 3 paper, sec. 3.3.2;
    126 layers in 16 x 8 chunks).

    Raises
    ------
    ValueError
        If a chunk other than the first or last would be empty (``pp * v > layers +``
        :func:`empty_end_chunks`) or a count is below 1.
    """
    chunks = pp * virtual_stages
    if min(pp, virtual_stages) < 1 or chunks > layers + empty_end_chunks(pp, virtual_stages):
        raise ValueError(f"cannot split {layers} layers into pp*v = {pp}*{virtual_stages} chunks "
                         "with only the first and last possibly empty")
    ceil = -(-layers // chunks)
    sizes = [ceil] * chunks
    for i in range(chunks * ceil - layers):
        sizes[i // 2 if i % 2 == 0 else chunks - 1 - i // 2] -= 1
    return sizes


def layer_split(layers: int, pp: int, virtual_stages: int = 1, first: int | None = None,
                last: int | None = None) -> list[int]:
    """Layers per pipeline stage (length ``pp``, sum ``layers``).

    Chunk ``c`` of :func:`chunk_layers` lives on stage ``c mod pp`` (Megatron's
    interleaved placement [N21, sec. 2.2.2]); a stage's total is the sum of its
    ``v`` chunks. ``layer_split(96, 8) == [12] * 8``; ``layer_split(126, 16)``
    gives 7 layers on the first and last stage and 8 elsewhere.

    With ``first`` and/or ``last`` (Megatron-Core's ``--decoder-first-pipeline-num-layers``
    and ``--decoder-last-pipeline-num-layers``), those stages hold that many layers and the
    other ``L - first - last`` are divided evenly over the remaining stages
    (:func:`uneven_split`).
    """
    if first is not None or last is not None:
        return uneven_split(layers, pp, virtual_stages, first, last)
    totals = [0] * pp
    for chunk, size in enumerate(chunk_layers(layers, pp, virtual_stages)):
        totals[chunk % pp] += size
    return totals


def scenario_split(model: ModelConfig, par: ParallelismConfig) -> list[int]:
    """Decoder layers per pipeline stage of a scenario's model and parallelism:
    :func:`layer_split`, with the multi-token prediction layers (``model.mtp_layers``) taking
    the last slots of the split when no first/last stage counts are given
    (:func:`pipeline_chunks`)."""
    if not model.mtp_layers and par.pipeline_layout is None:
        return layer_split(model.layers, par.pp, par.virtual_stages, par.first_stage_layers,
                           par.last_stage_layers)
    totals = [0] * par.pp
    for c, (decoder, _, _) in enumerate(pipeline_chunks(model, par)):
        totals[c % par.pp] += decoder
    return totals


def pipeline_chunks(model: ModelConfig, par: ParallelismConfig) -> list[tuple[int, int, int]]:
    """(decoder layers, of them dense, multi-token prediction layers) of each of the ``p v``
    model chunks, in pipeline order (chunk ``c`` on stage ``c mod p``).

    Layers run in order through the chunks; the first ``model.first_dense_layers`` are dense,
    and the ``model.mtp_layers`` multi-token prediction layers follow the last decoder layer.
    Without first/last stage counts the ``L + mtp`` layers are split by :func:`chunk_layers`
    (DeepSeek-V3's 61 + 1 on 8 x 4 chunks: 1, 2, ..., 2, then the MTP layer alone in the last
    chunk: Megatron-Bridge's layout ``Et|(tt|)*30mL``, ``set_deepseek_v3_pipeline_model_parallel_layout``);
    with them, Megatron-Core's :func:`uneven_split` of the decoder layers, each stage's count
    cut into ``v`` equal chunks, and the MTP layers on the last chunk (Megatron-Core builds them
    on the post-process stage, ``mtp_on_this_rank``); with ``parallelism.pipeline_layout``, its
    chunks (:func:`~simulator.config.pipeline_layout.layout_chunks`). A hybrid model's pattern
    (``model.hybrid_pattern``) splits evenly without its prediction depths, which follow on the
    last chunk (Megatron-Core ``select_pipeline_segment``: a pattern without ``|`` divides
    ``num_layers`` over the stages; the ``/`` depths run on the post-process stage).
    """
    p, v = par.pp, par.virtual_stages
    if par.pipeline_layout is not None:
        sizes = [t + m for t, m in layout_chunks(par.pipeline_layout, p, v, model.layers, model.mtp_layers)]
    elif model.hybrid_pattern is not None and (par.first_stage_layers, par.last_stage_layers) == (None, None):
        sizes = chunk_layers(model.layers, p, v)
        sizes[-1] += model.mtp_layers
    elif par.first_stage_layers is None and par.last_stage_layers is None:
        sizes = chunk_layers(model.layers + model.mtp_layers, p, v)
    else:
        split = uneven_split(model.layers, p, v, par.first_stage_layers, par.last_stage_layers)
        sizes = [split[c % p] // v for c in range(p * v)]
        sizes[-1] += model.mtp_layers
    chunks, start = [], 0
    for size in sizes:
        end = start + size
        decoder = max(0, min(end, model.layers) - start)
        dense = max(0, min(end, model.first_dense_layers) - start)
        chunks.append((decoder, dense, size - decoder))
        start = end
    return chunks


def stage_mix(model: ModelConfig, par: ParallelismConfig) -> list[tuple[int, int]]:
    """Per pipeline stage, (dense decoder layers, multi-token prediction layers) it holds
    (:func:`pipeline_chunks` summed over its chunks); all (0, 0) for a model with neither."""
    if not (model.first_dense_layers or model.mtp_layers):
        return [(0, 0)] * par.pp
    totals = [[0, 0] for _ in range(par.pp)]
    for c, (_, dense, mtp) in enumerate(pipeline_chunks(model, par)):
        totals[c % par.pp][0] += dense
        totals[c % par.pp][1] += mtp
    return [(d, m) for d, m in totals]


def stage_kinds(model: ModelConfig, par: ParallelismConfig) -> list[tuple[int, bool, bool, int, int, str]]:
    """Per pipeline stage, its kind: (decoder layers, first stage, last stage, dense layers,
    multi-token prediction layers, hybrid layers) (:func:`scenario_split`, :func:`stage_mix`,
    :func:`stage_patterns`), what its parameters and prices depend on."""
    last, mixes, patterns = par.pp - 1, stage_mix(model, par), stage_patterns(model, par)
    return [(layers, i == 0, i == last, *mixes[i], patterns[i])
            for i, layers in enumerate(scenario_split(model, par))]


def stage_patterns(model: ModelConfig, par: ParallelismConfig) -> list[str]:
    """Per pipeline stage, the ``model.hybrid_pattern`` characters of its layers, sorted (what
    its price depends on: how many of each kind), each multi-token prediction depth's
    ``mtp_pattern`` among them; "" without a pattern. The pattern runs in order through the model
    chunks of :func:`pipeline_chunks` (Megatron-Core's even split of a pattern without ``|``
    separators, ``select_pipeline_segment``), the prediction depths after it."""
    if model.hybrid_pattern is None:
        return [""] * par.pp
    parts, start = [""] * par.pp, 0
    for c, (decoder, _, mtp) in enumerate(pipeline_chunks(model, par)):
        parts[c % par.pp] += model.hybrid_pattern[start:start + decoder] + (model.mtp_pattern or "") * mtp
        start += decoder
    return ["".join(sorted(part)) for part in parts]


def dense_share(model: ModelConfig, par: ParallelismConfig, stage: int) -> float:
    """Share of ``stage``'s layers (its decoder and multi-token prediction layers) that are dense
    layers among a mixture of experts' (:func:`stage_kinds`); 0 without them."""
    decoder, _, _, dense, mtp, _ = stage_kinds(model, par)[stage]
    return dense / (decoder + mtp) if dense else 0.0


def stage_layer_models(model: ModelConfig, par: ParallelismConfig,
                       stage: int) -> list[tuple[ModelConfig, float]]:
    """The models of ``stage``'s layers with each one's share of them (the shares sum to 1): a
    hybrid stage's pattern kinds (:meth:`~simulator.config.scenario.ModelConfig.sublayer_model`,
    each its share of the stage's pattern), dense layers among a mixture of experts' by
    :func:`dense_share`, else the model alone. What a per-layer price of the stage (a ZeRO-3
    unit's collectives, its gathered parameters) averages over."""
    pattern = stage_patterns(model, par)[stage]
    if pattern:
        return [(model.sublayer_model(kind), count / len(pattern))
                for kind, count in pattern_counts(pattern).items()]
    share = dense_share(model, par, stage)
    if not share:
        return [(model, 1.0)]
    return [(model, 1.0 - share), (model.dense_model(), share)]
