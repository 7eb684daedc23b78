"""YaRN's concentration factor from a Megatron-LM log (``import-log``): ``model.rope_concentration``.

A GPT model with ``--position-embedding-type yarn`` (and no latent attention) takes its YaRN
settings from ``--rotary-scaling-factor`` ``s``, ``--mscale`` ``m`` and ``--mscale-all-dim``
``m_all`` (defaults 1, 1 and 0; Megatron-LM d98e8a64dd ``megatron/training/argument_utils.py``
``_apply_yarn_config_from_args``), and multiplies the cached cos and sin by

    c = mscale(s, m) / mscale(s, m_all),   mscale(s, x) = 0.1 x ln s + 1 (1 when s <= 1)

(``megatron/core/models/common/embeddings/yarn_rotary_pos_embedding.py``
``_yarn_get_concentration_factor``; ``m`` or ``m_all`` None: ``mscale(s, 1)``). Latent attention
(``multi_latent_attention``) reads the same arguments through its own path and is left at 1.
"""

from __future__ import annotations

import math
from typing import Any

CLI_DEFAULTS = {"rotary_scaling_factor": 1.0, "mscale": 1.0, "mscale_all_dim": 0.0}
"""Megatron-LM's defaults for the three arguments (``megatron/training/arguments.py``)."""


def logged_rope(args: dict[str, Any]) -> dict[str, float]:
    """``{"rope_concentration": c}`` for a YaRN GPT model whose factor is not 1 (module
    docstring); empty otherwise, or when a logged value is not a number."""
    if args.get("position_embedding_type") != "yarn" or args.get("multi_latent_attention"):
        return {}
    values = {key: args.get(key, default) for key, default in CLI_DEFAULTS.items()}
    if not all(v is None or _number(v) for v in values.values()) or values["rotary_scaling_factor"] is None:
        return {}
    factor = concentration(values["rotary_scaling_factor"], values["mscale"], values["mscale_all_dim"])
    return {} if math.isclose(factor, 1.0) else {"rope_concentration": round(factor, 6)}


def concentration(scale: float, mscale: float | None, mscale_all_dim: float | None) -> float:
    """YaRN's concentration factor ``mscale(s, m) / mscale(s, m_all)`` (module docstring)."""
    if mscale is None or mscale_all_dim is None:
        return _mscale(scale, 1.0)
    return _mscale(scale, mscale) / _mscale(scale, mscale_all_dim)


def _mscale(scale: float, weight: float) -> float:
    return 1.0 if scale <= 1 else 0.1 * weight * math.log(scale) + 1.0


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
