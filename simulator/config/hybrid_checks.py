"""Rules of hybrid and single-block models (:mod:`simulator.config.hybrid`): each names the key,
what was expected and, where the model stops, that it is not modelled."""

from __future__ import annotations

from simulator.config.hybrid import Block, pattern_counts
from simulator.config.scenario import ModelConfig, Recompute, Scenario
from simulator.config.stack import SelectiveRecompute, StackProfile
from simulator.errors import ConfigError


def check_hybrid(scenario: Scenario) -> None:
    """The pattern's length and kinds agree with the model; the Mamba mixer's heads and groups
    split over the tensor-parallel ranks (Megatron-Core ``MambaMixer`` asserts both); what the
    model does not price yet is refused with its reason."""
    model = scenario.model
    _check_pattern(model)
    _check_mtp_keys(model)
    _check_mamba(model)
    _check_latent(scenario)
    if model.hybrid_pattern is None and model.block == Block.FULL:
        return
    _check_not_modelled(scenario)
    tp, mamba = scenario.parallelism.tp, model.mamba
    if mamba is not None and (mamba.heads % tp or mamba.groups % tp):
        raise ConfigError(f"{tp} must divide the Mamba mixer's heads ({mamba.heads}) and groups "
                          f"({mamba.groups}): Megatron-Core splits both over the tensor-parallel ranks",
                          key="parallelism.tp")


def _check_pattern(model: ModelConfig) -> None:
    pattern = model.hybrid_pattern
    if pattern is None:
        return
    if model.block != Block.FULL:
        raise ConfigError(f"'{model.block}' applies to a model without model.hybrid_pattern (the pattern "
                          "sets each layer's block); remove one", key="model.block")
    if len(pattern) != model.layers:
        raise ConfigError(f"the pattern has {len(pattern)} layers, model.layers is {model.layers}; expected "
                          "one character per layer", key="model.hybrid_pattern")
    counts = pattern_counts(pattern)
    if ("E" in counts) != (model.experts > 1):
        raise ConfigError("'E' layers (a mixture of experts) need model.experts above 1, and model.experts "
                          "above 1 needs 'E' layers", key="model.hybrid_pattern")
    if "M" in counts and model.mamba is None:
        raise ConfigError("'M' layers need model.mamba (the mixer's heads, head_dim, state, groups)",
                          key="model.mamba")
    if model.first_dense_layers:
        raise ConfigError("with model.hybrid_pattern, '-' marks the dense MLP layers (of model.dense_ffn, "
                          "default model.ffn_hidden); remove model.first_dense_layers",
                          key="model.first_dense_layers")
    if model.mtp_layers and model.mtp_pattern is None:
        raise ConfigError("a hybrid model's multi-token prediction layers need model.mtp_pattern (the layers "
                          "of one depth, e.g. '*E')", key="model.mtp_pattern")
    if "M" in (model.mtp_pattern or "") and model.mamba is None:
        raise ConfigError("'M' layers need model.mamba (the mixer's heads, head_dim, state, groups)",
                          key="model.mamba")
    if "E" in (model.mtp_pattern or "") and model.experts == 1:
        raise ConfigError("'E' layers (a mixture of experts) need model.experts above 1",
                          key="model.mtp_pattern")


def _check_mtp_keys(model: ModelConfig) -> None:
    """``mtp_pattern`` and ``mtp_shared`` describe a hybrid model's prediction depths."""
    if model.mtp_pattern is not None and (model.hybrid_pattern is None or not model.mtp_layers):
        raise ConfigError("model.mtp_pattern applies to a hybrid model (model.hybrid_pattern) with "
                          "model.mtp_layers above 0", key="model.mtp_pattern")
    if model.mtp_shared and model.mtp_pattern is None:
        raise ConfigError("model.mtp_shared applies to a hybrid model's prediction depths "
                          "(model.mtp_pattern)", key="model.mtp_shared")


def _check_latent(scenario: Scenario) -> None:
    """A latent mixture of experts needs experts; Muon and PowerSGD do not list its matrices."""
    model = scenario.model
    if model.moe_latent is None:
        return
    if model.experts == 1:
        raise ConfigError(f"{model.moe_latent} applies to a mixture of experts only (model.experts is 1); "
                          "remove it or set model.experts", key="model.moe_latent")
    if _training(scenario, "optimizer") is not None and scenario.training.optimizer.muon:
        raise ConfigError("Muon over a latent mixture of experts is not modelled yet; remove "
                          "model.moe_latent or use adam", key="training.optimizer")
    if _training(scenario, "gradient_compression") is not None:
        raise ConfigError("gradient compression of a latent mixture of experts is not modelled yet; remove "
                          "training.gradient_compression", key="training.gradient_compression")


def _check_mamba(model: ModelConfig) -> None:
    patterns = (model.hybrid_pattern or "") + (model.mtp_pattern or "")
    mamba_layers = model.block == Block.MAMBA or "M" in patterns
    if model.mamba is not None and not mamba_layers:
        raise ConfigError("model.mamba applies to Mamba layers: set model.hybrid_pattern with 'M' layers "
                          "or model.block: mamba", key="model.mamba")
    if model.block == Block.MAMBA and model.mamba is None:
        raise ConfigError("model.block: mamba needs model.mamba (the mixer's heads, head_dim, state, groups)",
                          key="model.mamba")
    if model.mamba is not None and model.mamba.heads % model.mamba.groups:
        raise ConfigError(f"{model.mamba.groups} must divide model.mamba.heads ({model.mamba.heads}): "
                          "each group's B and C serve whole heads", key="model.mamba.groups")


def _op_sac(scenario: Scenario) -> bool:
    """Whether the stack's selective recompute is torchtitan's per-op policy."""
    stack = scenario.training.stack if scenario.training is not None else None
    return (isinstance(stack, StackProfile) and scenario.parallelism.recompute == Recompute.SELECTIVE
            and scenario.parallelism.recompute_modules is None
            and stack.recompute.selective == SelectiveRecompute.EVERY_SECOND_MATMUL)


def _training(scenario: Scenario, field: str):
    return getattr(scenario.training, field) if scenario.training is not None else None


NOT_MODELLED = (
    (lambda s: s.model.mla is not None, "model.mla", "latent attention in hybrid layers ('+')"),
    (lambda s: s.model.attention_window is not None, "model.attention_window",
     "sliding-window attention in a hybrid model"),
    (lambda s: s.parallelism.cp > 1, "parallelism.cp",
     "context parallelism of hybrid layers (Megatron-Core's Mamba head all-to-alls)"),
    (lambda s: s.parallelism.zero_stage == 3 and s.model.mtp_layers > 0, "model.mtp_layers",
     "ZeRO-3 / FSDP units of a hybrid model's multi-token prediction layers"),
    (lambda s: _training(s, "optimizer") is not None and s.training.optimizer.muon, "training.optimizer",
     "Muon over hybrid layers"),
    (lambda s: _training(s, "gradient_compression") is not None, "training.gradient_compression",
     "gradient compression of hybrid layers"),
    (lambda s: _training(s, "documents") is not None, "training.documents",
     "document-length variability of hybrid layers"),
    (_op_sac, "parallelism.recompute", "torchtitan's per-op selective checkpointing of hybrid layers"),
    (lambda s: s.parallelism.cpu_offload_layers > 0, "parallelism.cpu_offload_layers",
     "activation offloading of hybrid layers"),
)
"""What a hybrid or single-block model does not price yet: (applies, key, what)."""


def _check_not_modelled(scenario: Scenario) -> None:
    for applies, key, what in NOT_MODELLED:
        if applies(scenario):
            raise ConfigError(f"{what} is not modelled yet; remove {key} or use a transformer model", key=key)
