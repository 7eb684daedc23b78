"""A hybrid model's keys from a Megatron-LM log (``import-log``): the layer pattern, the Mamba-2
mixer, the latent mixture of experts and the prediction depths.

=============================================================  ===================================
Megatron argument                                               scenario key
=============================================================  ===================================
``hybrid_layer_pattern`` (``hybrid_override_pattern`` before)   ``model.hybrid_pattern`` (its main
                                                                part, ``|`` segments joined),
                                                                ``model.layers`` its length
the pattern's ``/`` parts (or ``mtp_hybrid_override_pattern``   ``model.mtp_pattern``,
with ``mtp_num_layers``)                                        ``model.mtp_layers``
``mtp_use_repeated_layer``                                      ``model.mtp_shared``
``mamba_num_heads`` (default ``2 h / head_dim``),               ``model.mamba`` heads, head_dim,
``mamba_head_dim``, ``mamba_state_dim``, ``mamba_num_groups``   state, groups
``squared_relu``                                                ``model.mlp: squared-relu``
``moe_latent_size``                                             ``model.moe_latent``
=============================================================  ===================================

Megatron-LM d98e8a64dd ``megatron/training/arguments.py`` (the deprecated names converted to the
unified pattern) and ``megatron/core/models/hybrid/hybrid_layer_allocation.py`` (the symbols).
"""

from __future__ import annotations

from typing import Any

from simulator.config.hybrid import PATTERN_CHARS
from simulator.errors import UsageError

MAMBA_DEFAULTS = {"head_dim": 64, "state": 128, "groups": 8}
"""Megatron-Core's ``TransformerConfig`` defaults (``mamba_head_dim``, ``mamba_state_dim``,
``mamba_num_groups``)."""

NOT_MODELLED = {"G": "Gated DeltaNet", "D": "DeepSeek sparse attention", "+": "latent attention"}


def hybrid_model(args: dict[str, Any], hidden: int, extra: list[str]) -> dict[str, Any]:
    """The hybrid model keys the log's arguments give (module table); empty for a transformer.

    Raises
    ------
    UsageError
        The pattern has layers clustersim does not model (``G``, ``D``, ``+``).
    """
    pattern = args.get("hybrid_layer_pattern") or args.get("hybrid_override_pattern")
    if not isinstance(pattern, str) or not pattern:
        return {}
    main, *depths = pattern.split("/")
    legacy = args.get("mtp_hybrid_override_pattern")
    if not depths and isinstance(legacy, str) and isinstance(args.get("mtp_num_layers"), int):
        depths = [legacy] * args["mtp_num_layers"]
    if "|" in main:
        extra.append("hybrid_layer_pattern's '|' pipeline segments (split evenly over the stages)")
    main = main.replace("|", "")
    _check_symbols(main + "".join(depths))
    model: dict[str, Any] = {"hybrid_pattern": main, "layers": len(main)}
    if depths:
        model.update(mtp_layers=len(depths), mtp_pattern=depths[0],
                     mtp_shared=bool(args.get("mtp_use_repeated_layer")))
    if "M" in main + "".join(depths):
        model["mamba"] = _mamba(args, hidden)
    if args.get("squared_relu"):
        model["mlp"] = "squared-relu"
    return model


def latent_width(args: dict[str, Any]) -> dict[str, int]:
    """``moe_latent_size`` as ``model.moe_latent``; empty without it."""
    latent = args.get("moe_latent_size")
    return {"moe_latent": latent} if isinstance(latent, int) and latent > 0 else {}


def _mamba(args: dict[str, Any], hidden: int) -> dict[str, int]:
    """``model.mamba`` from the logged Mamba arguments, Megatron-Core's defaults where absent
    (heads: ``2 h / head_dim``, the mixer's expand 2)."""
    shape = dict(MAMBA_DEFAULTS)
    for ours, theirs in (("head_dim", "mamba_head_dim"), ("state", "mamba_state_dim"),
                         ("groups", "mamba_num_groups")):
        if isinstance(args.get(theirs), int):
            shape[ours] = args[theirs]
    heads = args.get("mamba_num_heads")
    shape["heads"] = heads if isinstance(heads, int) else 2 * hidden // shape["head_dim"]
    return shape


def _check_symbols(pattern: str) -> None:
    unknown = sorted(set(pattern) - set(PATTERN_CHARS))
    if unknown:
        names = ", ".join(f"'{c}' ({NOT_MODELLED.get(c, 'unknown')})" for c in unknown)
        raise UsageError(f"hybrid_layer_pattern has {names} layers, which clustersim does not model; "
                         f"it models {', '.join(repr(c) for c in PATTERN_CHARS)}")
