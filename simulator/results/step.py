"""What one simulated training step produced, in SI units, with the documented JSON keys."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class StageBreakdown:
    """Per-pipeline-stage times for one microbatch (seconds) and its memory (bytes)."""

    stage: int
    layers: int
    forward_s: float
    backward_s: float
    recompute_s: float
    tp_comm_s: float
    cp_comm_s: float
    ep_comm_s: float
    p2p_s: float
    memory_bytes: float
    memory: dict = field(default_factory=dict)
    zero3_exposed_s: float = 0.0    # ZeRO-3/FSDP gathers and reductions not hidden, per microbatch
    attention_forward_s: float = 0.0    # with training.documents: the attention-core part of
    attention_backward_s: float = 0.0   # forward/backward at full length (work ~ sum l^2)
    per_token_forward_s: float = 0.0    # and the rest (work ~ tokens), both per microbatch
    per_token_backward_s: float = 0.0
    amax_comm_s: float = 0.0    # fp8 delayed scaling's amax all-reduces, in line, per microbatch
    offload_wait_s: float = 0.0    # waits for activation copies to or from host memory, per microbatch
    offload_host_bytes: float = 0.0    # host memory one GPU's offloaded activations take


@dataclass(frozen=True)
class StepResult:
    """One scenario's step: the SCENARIO_FORMAT.md result fields and the breakdowns behind them."""

    name: str
    gpus: int
    step_time_s: float
    step_time_p50_s: float
    step_time_p95_s: float
    step_time_p99_s: float
    tokens_per_s: float
    model_flops_per_gpu: float
    hardware_flops_per_gpu: float
    mfu: float
    bubble_fraction: float
    comm_exposed_s: float
    memory_per_gpu_bytes: float
    fits_in_memory: bool
    pipeline_s: float
    bubble_s: float
    dp_comm_s: float
    dp_comm_exposed_s: float
    optimizer_s: float
    microbatches: int
    layer_split: list[int]
    stages: list[StageBreakdown]
    exposed_by_dimension: dict[str, float]
    memory_capacity_bytes: float
    warnings: list[str] = field(default_factory=list)
    step_times_s: list[float] = field(default_factory=list)
    contention_and_noise_s: float = 0.0   # DES median step minus the analytical step
    engine: str = "analytical"            # or "des (fidelity[, contention])"
    calibration: str = ""                 # calibration overlay file(s) in force, "" for none
    what_if: dict[str, float] = field(default_factory=dict)   # training what-ifs' figures (docs/what_ifs.md)
    parameter_server: dict = field(default_factory=dict)   # training.sync: async figures, else {}
    bottleneck_stage: int = 0             # the stage with the most busy seconds per step
    bottleneck_excess: float = 0.0        # its busy seconds over the mean stage's, minus 1
    sequences: dict | None = None         # sequence-length variation: mean work factors (analytical)
    stragglers: dict | None = None        # attribution and what-ifs (run --attribute)
    dp_sm_slowdown_s: float = 0.0         # of dp_comm_exposed_s: NCCL's SMs and HBM beside compute
    dp_in_pipeline_s: float = 0.0         # of dp_comm_exposed_s: ZeRO-3/FSDP's, inside pipeline_s
    pp_in_bubble_s: float = 0.0           # of exposed_by_dimension["pp"]: overlapped sends' fill
                                          # and drain, inside bubble_s (held sends: 0)
    pipeline_flushes: int = 1             # pipeline schedules a step, microbatches / it each

    def to_json_dict(self) -> dict:
        """Plain types only; the documented keys first."""
        data = asdict(self)
        data["stages"] = [asdict(s) for s in self.stages]
        if not self.what_if:
            del data["what_if"]
        if not data["parameter_server"]:      # synchronous training: nothing to add
            del data["parameter_server"]
        return data
