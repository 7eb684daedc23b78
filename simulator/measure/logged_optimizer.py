"""The optimizer a Megatron-LM log ran, as scenario keys (``training.optimizer`` and, for Muon's
layer-wise distributed optimizer, its data-parallel collectives).

Megatron-LM's ``--optimizer`` (``adam``, ``sgd``, ``muon``, ``dist_muon``, ``lion``, ``soap``,
``adaptive_muon``; NVIDIA/Megatron-LM d48bd6be0a ``megatron/training/arguments.py``): argument
validation rewrites ``dist_muon`` to ``muon`` with ``use_layer_wise_distributed_optimizer``, and
``muon`` with ``--use-distributed-optimizer`` to the same, turning ``use_distributed_optimizer``
off; the log prints the arguments after that. The layer-wise optimizer all-reduces the gradients
and gathers the updated weights after the step (``LayerWiseDistributedOptimizer``):
``data_parallel.sharded_reduce: all_reduce`` at ``zero_stage`` 1, the weight gather overlapped
only when the log says ``overlap_param_gather``. Adam with ``use_precision_aware_optimizer`` keeps
its state in the logged ``main_params_dtype``, ``exp_avg_dtype`` and ``exp_avg_sq_dtype``
(``torch.float16``, ``torch.bfloat16``, ``torch.uint8`` for fp8) and ``store_param_remainders``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["layer_wise", "logged_optimizer", "muon_data_parallel"]

_MUON = ("muon", "dist_muon")


def _name(args: dict[str, Any]) -> str:
    return str(args.get("optimizer") or "adam").lower()


def layer_wise(args: dict[str, Any]) -> bool:
    """Whether the run shards Muon's state with the layer-wise distributed optimizer."""
    return _name(args) in _MUON and bool(args.get("use_layer_wise_distributed_optimizer")
                                         or _name(args) == "dist_muon")


def logged_optimizer(args: dict[str, Any], extra: list[str]) -> dict[str, Any] | None:
    """``training.optimizer`` for a Muon run (None for Adam, the default); an optimizer the model
    does not price, or a Muon setting it does not, is added to ``extra``."""
    name = _name(args)
    if name not in _MUON:
        if name != "adam":
            extra.append(f"optimizer {name} (not modelled; priced as Adam)")
            return None
        return _precision_aware(args, extra)
    optimizer: dict[str, Any] = {"name": "muon"}
    steps = args.get("muon_num_ns_steps")
    if isinstance(steps, int) and not isinstance(steps, bool) and steps > 0 and steps != 5:
        optimizer["ns_steps"] = steps
    if args.get("muon_split_qkv") is False:
        optimizer["split_qkv"] = False
    if args.get("muon_nesterov", args.get("muon_use_nesterov")):
        optimizer["nesterov"] = True
    mode = str(args.get("muon_tp_mode") or "blockwise").lower()
    if mode != "blockwise":
        extra.append(f"muon_tp_mode {mode} (not modelled; priced blockwise: each rank's shard on its own)")
    return optimizer


_DTYPES = {"float32": "fp32", "float": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16",
           "uint8": "fp8", "float8_e4m3fn": "fp8"}
_STATE_ARGS = (("master_dtype", "main_params_dtype"), ("exp_avg_dtype", "exp_avg_dtype"),
               ("exp_avg_sq_dtype", "exp_avg_sq_dtype"))


def _precision_aware(args: dict[str, Any], extra: list[str]) -> dict[str, Any] | None:
    """Adam's state dtypes under ``use_precision_aware_optimizer`` (None without it)."""
    if not args.get("use_precision_aware_optimizer"):
        return None
    optimizer: dict[str, Any] = {"name": "adam", "precision_aware": True}
    for key, arg in _STATE_ARGS:
        logged = str(args.get(arg) or "torch.float32").split(".")[-1].lower()
        if logged not in _DTYPES:
            extra.append(f"{arg} {args.get(arg)} (not modelled; taken as fp32)")
        dtype = _DTYPES.get(logged, "fp32")
        if dtype != "fp32" and not (key == "master_dtype" and dtype == "fp8"):
            optimizer[key] = dtype
    if args.get("store_param_remainders") is False:
        optimizer["param_remainders"] = False
    return optimizer


def muon_data_parallel(args: dict[str, Any]) -> dict[str, Any]:
    """``data_parallel`` fields of the layer-wise distributed optimizer (module docstring); none
    for other runs."""
    if not layer_wise(args):
        return {}
    return {"sharded_reduce": "all_reduce", "overlap_param_gather": bool(args.get("overlap_param_gather"))}
