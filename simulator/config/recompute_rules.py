"""Rules of ``parallelism.recompute_modules`` (Megatron-Core's ``--recompute-modules``): the
combinations Megatron-Core refuses, refused here with the same reason, and what it accepts and
ignores, warned about in the result: modules that name nothing in the model, and modules under
``recompute: none`` or ``full`` (Megatron-Core reads them only with selective granularity; a
search's other recompute settings leave them unused).

References: NVIDIA/Megatron-LM core_v0.17.1 ``megatron/core/transformer/transformer_config.py``
``__post_init__`` (the refusals), ``models/gpt/gpt_layer_specs.py`` (which norms are modules).
"""

from __future__ import annotations

from simulator.config.hardware import Dtype
from simulator.config.scenario import Recompute, RecomputeModule, Scenario
from simulator.config.stack import Fp8Scaling, SelectiveRecompute, StackProfile
from simulator.errors import ConfigError

KEY = "parallelism.recompute_modules"
M = RecomputeModule


def check_recompute_modules(scenario: Scenario) -> None:
    """Raise :class:`ConfigError` where Megatron-Core would refuse the modules under selective
    recompute, or where they cannot apply (a stack whose selective recompute is another policy)."""
    par, model = scenario.parallelism, scenario.model
    if par.recomputed_modules is None:
        return
    modules, stack = set(par.recompute_modules), scenario.training.stack
    if not isinstance(stack, StackProfile):
        return
    if stack.recompute.selective != SelectiveRecompute.CORE_ATTENTION:
        raise ConfigError(f"stack {stack.name} recomputes by its own policy "
                          f"({stack.recompute.selective.value}); the modules are Megatron-Core's: "
                          "use a Megatron-Core stack or remove the key", key=KEY)
    if M.MLA_UP_PROJ in modules and model.mla is None:
        raise ConfigError("mla_up_proj needs latent attention (model.mla); Megatron-Core refuses it "
                          "otherwise", key=KEY)
    if M.MOE_ACT in modules and model.experts == 1:
        raise ConfigError("moe_act needs a mixture of experts (Megatron-Core: only with "
                          "moe_grouped_gemm)", key=KEY)
    if M.MOE in modules and stack.expert_parallel.a2a_overlap:
        raise ConfigError("Megatron-Core refuses moe recompute with the expert all-to-all overlap; "
                          "remove moe or set training.stack.expert_parallel.a2a_overlap false", key=KEY)
    delayed = scenario.training.dtype == Dtype.FP8 and stack.kernels.fp8_scaling == Fp8Scaling.DELAYED
    if delayed and modules & {M.MOE_ACT, M.LAYERNORM}:
        raise ConfigError("Megatron-Core refuses moe_act and layernorm recompute under fp8 delayed "
                          "scaling; use current scaling (training.stack.kernels.fp8_scaling: dynamic) "
                          "or remove them", key=KEY)


def idle_module_warnings(scenario: Scenario) -> list[str]:
    """Named modules the model has nothing for, or that the recompute setting leaves unused
    (Megatron-Core accepts and ignores both)."""
    par, model = scenario.parallelism, scenario.model
    if par.recompute_modules is not None and par.recompute != Recompute.SELECTIVE:
        return [f"{KEY} has no effect with parallelism.recompute {par.recompute.value} (the modules "
                "apply to selective recompute)"]
    modules = par.recomputed_modules
    if modules is None:
        return []
    idle = {
        M.LAYERNORM: model.mla is None and model.experts == 1,
        M.MLP: model.experts > 1 and not model.first_dense_layers,
        M.MOE: model.experts == 1,
        M.SHARED_EXPERTS: not model.shared_expert_ffn,
    }
    why = {
        M.LAYERNORM: "TransformerEngine fuses both norms into the next linear (Identity modules)",
        M.MLP: "every layer's MLP is a mixture of experts",
        M.MOE: "the model has no experts",
        M.SHARED_EXPERTS: "the model has no shared experts",
    }
    return [f"{KEY}: {m.value} has no effect here ({why[m]})" for m in M if m in modules and idle.get(m)]
