"""The check that a draft scenario from ``import-log`` loads (``clustersim check`` passes).

A draft is refused whole, before anything is written, when the scenario schema or its checks
refuse it: the error names the log, the Megatron argument the offending scenario key came
from and, for a value outside a key's range, that range as the schema
(:mod:`simulator.config.scenario`) states it, read through
:func:`simulator.config.reference.bounds` so no limit is repeated here.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.config.reference import bounds, describe_type, leaves
from simulator.errors import ConfigError

LOG_KEYS: dict[str, tuple[str, ...]] = {
    "model.layers": ("num_layers", "hybrid_layer_pattern", "hybrid_override_pattern"),
    "model.hidden": ("hidden_size",),
    "model.heads": ("num_attention_heads",),
    "model.kv_heads": ("num_query_groups",),
    "model.head_dim": ("kv_channels",),
    "model.ffn_hidden": ("moe_ffn_hidden_size", "ffn_hidden_size"),
    "model.seq_len": ("seq_length",),
    "model.vocab": ("padded_vocab_size", "vocab_size"),
    "model.dropout": ("hidden_dropout",),
    "model.mla.q_lora_rank": ("q_lora_rank",),
    "model.mla.kv_lora_rank": ("kv_lora_rank",),
    "model.mla.qk_head_dim": ("qk_head_dim",),
    "model.mla.qk_rope_head_dim": ("qk_pos_emb_head_dim",),
    "model.mla.v_head_dim": ("v_head_dim",),
    "model.experts": ("num_experts",),
    "model.top_k": ("moe_router_topk",),
    "model.router_groups": ("moe_router_num_groups",),
    "model.router_group_topk": ("moe_router_group_topk",),
    "model.shared_expert_ffn": ("moe_shared_expert_intermediate_size",),
    "model.first_dense_layers": ("moe_layer_freq",),
    "model.dense_ffn": ("ffn_hidden_size",),
    "model.mtp_layers": ("mtp_num_layers",),
    "model.moe_latent": ("moe_latent_size",),
    "model.mamba.head_dim": ("mamba_head_dim",),
    "model.mamba.state": ("mamba_state_dim",),
    "model.mamba.groups": ("mamba_num_groups",),
    "model.mamba.heads": ("mamba_num_heads",),
    "training.global_batch": ("global_batch_size",),
    "training.micro_batch": ("micro_batch_size",),
    "parallelism.tp": ("tensor_model_parallel_size",),
    "parallelism.pp": ("pipeline_model_parallel_size",),
    "parallelism.cp": ("context_parallel_size",),
    "parallelism.ep": ("expert_model_parallel_size",),
    "parallelism.etp": ("expert_tensor_parallel_size",),
    "parallelism.dp": ("world_size",),
    "parallelism.virtual_stages": ("virtual_pipeline_model_parallel_size",
                                   "num_layers_per_virtual_pipeline_stage"),
    "parallelism.recompute_fraction": ("recompute_num_layers",),
    "parallelism.recompute_modules": ("recompute_modules",),
    "parallelism.cpu_offload_layers": ("cpu_offloading_num_layers",),
    "parallelism.first_stage_layers": ("decoder_first_pipeline_num_layers",),
    "parallelism.last_stage_layers": ("decoder_last_pipeline_num_layers",),
    "parallelism.pipeline_layout": ("pipeline_model_parallel_layout",),
}
"""Scenario key -> the Megatron arguments it may come from (:mod:`simulator.measure.draft`)."""


def check_draft(scenario: dict[str, Any], arguments: dict[str, Any], source: str,
                library: HardwareLibrary) -> None:
    """Refuse a draft that ``clustersim check`` would refuse.

    Parameters
    ----------
    scenario : dict
        The drafted scenario mapping (not changed).
    arguments : dict
        The log's Megatron arguments, to name the one a refused key came from.
    source : str
        The log file, named in the error.
    library : HardwareLibrary
        The hardware library the draft is checked against.

    Raises
    ------
    ConfigError
        Naming ``source``, the Megatron argument (else the scenario key) and, for a value
        outside the schema's range, the range.
    """
    try:
        scenario_from_mapping(copy.deepcopy(scenario), source, library)
    except ConfigError as exc:
        raise _refusal(exc, scenario, arguments, source) from None


def _refusal(exc: ConfigError, scenario: dict[str, Any], arguments: dict[str, Any],
             source: str) -> ConfigError:
    """The import-log error for the scenario error ``exc`` of the draft ``scenario``."""
    key = exc.key or ""
    value = _at(scenario, key)
    argument = _argument(key, value, arguments)
    field = _fields().get(key)
    if field is not None and _outside(value, bounds(field)):
        message = (f"{value} is outside what a scenario takes for {key} ({describe_type(field)}); "
                   "no draft written")
    else:
        message = f"the draft would not load ({exc.render(with_source=False)}); no draft written"
    return ConfigError(message, source, argument or key or None)


def _at(mapping: dict[str, Any], key: str) -> Any:
    """The value at dotted ``key`` of ``mapping``, None when absent."""
    value: Any = mapping
    for part in key.split(".") if key else []:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _argument(key: str, value: Any, arguments: dict[str, Any]) -> str | None:
    """The Megatron argument ``key`` came from: of its candidates, the one logged with
    ``value``, else the first one logged, else None."""
    logged = [name for name in LOG_KEYS.get(key, ()) if arguments.get(name) is not None]
    return next((name for name in logged if arguments[name] == value), logged[0] if logged else None)


@cache
def _fields() -> dict[str, Any]:
    """Dotted scenario key -> its pydantic field (:func:`simulator.config.reference.leaves`)."""
    return dict(leaves())


def _outside(value: Any, span: tuple[float | None, bool, float | None]) -> bool:
    """Whether the number ``value`` lies outside the range ``span`` (:func:`bounds`)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    low, excluded, high = span
    below = low is not None and (value <= low if excluded else value < low)
    return below or (high is not None and value > high)
