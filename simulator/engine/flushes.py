"""Several pipeline schedules a step (``parallelism.pipeline_flushes``).

torchtitan and NeMo AutoModel run gradient accumulation under pipeline parallelism as one
``torch.distributed.pipelining`` schedule per local batch: torchtitan's ``train_step`` splits
the step into ``gradient_accumulation_steps`` groups of ``num_pp_microbatches`` and calls
``pp_schedule.step`` once per group (pytorch/torchtitan ``torchtitan/trainer.py`` @ b5bcd76c6,
L827-834 and L854-883); AutoModel calls ``schedule.step`` once per batch of the step
(NVIDIA-NeMo/Automodel ``nemo_automodel/recipes/llm/train_ft.py`` @ 36044ad3d, L1096-1098 in
the loop of L1222), and its ``patched_backward_maybe_with_nosync``
(``components/moe/fsdp_mixin.py``) runs FSDP's post-backward (reduce-scatter, reshard) at each
schedule's last backward. Each schedule fills and drains the pipeline and synchronises its
gradients; the optimizer steps once. So a step of ``F`` flushes is

    t = F (t_1 - t_once) + t_once

with ``t_1`` the step the engines price over one schedule's ``m / F`` microbatches
(:attr:`~simulator.engine.context.Context.microbatches`) and ``t_once`` what runs once a step
(the optimizer and the stack's step overhead). Memory is one schedule's: the runtime clears
its per-schedule state (stage outputs, receive buffers) at each ``schedule.step``. Under
noise the ``F`` schedules of a simulated step share one draw.
"""

from __future__ import annotations

import numpy as np


def flushed_seconds(flush_seconds: float | np.ndarray, once_seconds: float, flushes: int
                    ) -> float | np.ndarray:
    """A step of ``flushes`` schedules (s): ``F (t_1 - t_once) + t_once`` (module docstring)."""
    if flushes == 1:
        return flush_seconds
    return flushes * (flush_seconds - once_seconds) + once_seconds
