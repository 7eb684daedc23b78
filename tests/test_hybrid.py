"""Hybrid models (``model.hybrid_pattern``, ``model.mamba``, ``model.block``): a Mamba-2 mixer's
parameters, FLOPs and saved activations match the closed forms read from Megatron-Core and
state-spaces/mamba; a pattern of attention-only and MLP-only layers prices exactly as the
transformer whose layers they pair into; bad patterns exit 2 with the key
(simulator/config/hybrid.py, simulator/workload/mamba_mixer.py)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from simulator.cli import main
from simulator.config import scenario_from_mapping
from simulator.config.hybrid import Block, MambaConfig
from simulator.config.presets import MODEL_PRESETS
from simulator.config.scenario import ModelConfig
from simulator.engine.analytical import simulate_step
from simulator.engine.flops import step_flops
from simulator.pipeline import session_from_scenario
from simulator.workload.layer_activations import activation_bytes_per_layer
from simulator.workload.layer_shape import LayerShape
from simulator.workload.params import active_parameter_count, embedding_parameters, parameter_count
from simulator.workload.transformer import layer_forward

NANO = ModelConfig(**MODEL_PRESETS["nemotron-3-nano-30b-a3b"])


def _mamba_layer(tp: int = 1, micro_batch: int = 2) -> LayerShape:
    return LayerShape(NANO.sublayer_model("M"), micro_batch, tp=tp)


def test_mixer_parameters_are_megatron_cores_tensors():
    """One Mamba-2 layer with Megatron-Core's defaults at h 4096 (d = 2h, 128 heads of 64, 8
    groups of state 128, conv 4): ``h (2d + 2GN + H) + d h + (d + 2GN)(K + 1) + 3H + d + h`` =
    109,640,064 (``MambaMixer.__init__``: in_proj, conv1d weight and bias, dt_bias, A_log, D,
    the gated norm, out_proj, and the fused input norm)."""
    mamba = MambaConfig(heads=128)
    h, d, gn, heads = 4096, 8192, 8 * 128, 128
    closed = h * (2 * d + 2 * gn + heads) + d * h + (d + 2 * gn) * 5 + 3 * heads + d + h
    assert sum(mamba.tensor_sizes(h)) == closed == 109_640_064


def test_nemotron_3_nano_counts_its_model_card():
    """31.6B parameters with about 3.6B active ("31.6 billion total parameters but only uses
    about 3.6 billion at a time", NVIDIA's model card as replicate.com/nvidia/nemotron-3-nano-30b-a3b
    carries it), the layers of each kind summing to the whole: 23 Mamba, 23 MoE, 6 attention
    layers and the untied embeddings."""
    total, embeddings = parameter_count(NANO), embedding_parameters(NANO)
    layers = {k: parameter_count(NANO.sublayer_model(k).model_copy(update={"layers": 1})) - embeddings
              for k in "ME*"}
    assert total == pytest.approx(31.6e9, rel=0.005)
    assert active_parameter_count(NANO) == pytest.approx(3.6e9, rel=0.01)
    assert total == 23 * layers["M"] + 23 * layers["E"] + 6 * layers["*"] + embeddings


def test_scan_flops_are_the_kernels_counts():
    """Forward: ``b s (2 G Q N + 4 H P N + H P Q) / t`` (C B^T per group, chunk states and state
    to output per head, the causal half of the intra-chunk square); backward, with the
    memory-efficient path's recomputed products, ``b s (6 G Q N + 10 H P N + 3 H P Q) / t``
    (state-spaces/mamba ``_mamba_chunk_scan_combined_bwd``: 11 products against 4)."""
    for tp in (1, 2):
        shape = _mamba_layer(tp)
        fwd = layer_forward(shape)
        m, tokens = NANO.mamba, shape.tokens
        g, q, n, h, p = m.groups, m.chunk, m.state, m.heads, m.head_dim
        scan = fwd.gemms[~fwd.linear_mask]
        scan_flops = float(np.sum(2 * np.prod(scan, axis=1)))
        forward = tokens * (2 * g * q * n + 4 * h * p * n + h * p * q) / tp
        assert scan_flops == pytest.approx(forward, rel=1e-12)
        bwd = fwd.backward()
        linear = 2 * float(np.sum(2 * np.prod(fwd.gemms[fwd.linear_mask], axis=1)))
        expected = tokens * (6 * g * q * n + 10 * h * p * n + 3 * h * p * q) / tp
        assert bwd.flops - linear == pytest.approx(expected, rel=1e-12)


def test_scan_mask_marks_exactly_the_scan_products():
    """Forward and backward, the GEMMs priced at a GPU's ``scan_product_fraction`` are the scan's
    products (every non-linear GEMM of a Mamba layer, the backward's reruns included) and carry
    the whole scan FLOP count above; an attention layer has none."""
    for tp in (1, 2):
        fwd = layer_forward(_mamba_layer(tp))
        for kernels in (fwd, fwd.backward()):
            assert len(kernels.scan_mask) == len(kernels.gemms)
            assert np.array_equal(kernels.scan_mask, ~kernels.linear_mask)
    attention = layer_forward(LayerShape(NANO.sublayer_model("*"), 2, tp=1))
    assert not attention.scan_mask.any() and not attention.backward().scan_mask.any()


def test_projection_flops_and_no_attention():
    """in_proj ``2 T h (2d + 2GN + H) / t`` and out_proj ``2 T d h / t``; no attention kernel."""
    shape = _mamba_layer(2)
    fwd = layer_forward(shape)
    m, h, tokens = NANO.mamba, NANO.hidden, shape.tokens
    linear = fwd.gemms[fwd.linear_mask]
    assert float(np.sum(2 * np.prod(linear, axis=1))) == pytest.approx(
        2 * tokens * h * (m.in_proj_width + m.inner) / 2, rel=1e-12)
    assert fwd.attention_flops == 0.0


def test_mamba_layer_keeps_what_the_fused_kernel_saves():
    """``(4h + 10d + 4GN + 2H) 2-byte halves and 4G bytes``: the norm input and in_proj input
    (2h each, unsplit), in_proj's output ``2(2d + 2GN + H)``, the ungated scan output, the gated
    norm's input and out_proj's input (2d each) and the norm's fp32 rstd, over ``t``."""
    model, m = NANO.sublayer_model("M"), NANO.mamba
    h, d, gn = model.hidden, m.inner, m.groups * m.state
    for tp in (1, 2):
        kept = activation_bytes_per_layer(model, 1, tp, True, "selective")
        per_token = (4 * h + 10 * d + 4 * gn + 2 * m.heads + 4 * m.groups) / tp
        assert kept == pytest.approx(model.seq_len * per_token, rel=1e-12)


def _pair_scenarios(tp: int, pp: int, sequence_parallel: bool):
    """A Llama-style transformer of 8 layers, and the same model as 16 layers of a hybrid
    pattern pairing an attention-only layer with an MLP-only one."""
    base = {"mlp": "swiglu", "seq_len": 4096, "vocab": 32000, "hidden": 2048, "heads": 16, "kv_heads": 4,
            "ffn_hidden": 5632}

    def scenario(model):
        data = {"name": "pairs", "cluster": {"node": "dgx-h100", "nodes": 2,
                                             "fabric": {"topology": "rail-optimized", "link": "ib-ndr"}},
                "model": model,
                "training": {"global_batch": 64, "micro_batch": 2, "dtype": "bf16", "stack": "megatron-core"},
                "parallelism": {"tp": tp, "pp": pp, "sequence_parallel": sequence_parallel}}
        return scenario_from_mapping(data, "<test>")
    return scenario({**base, "layers": 8}), scenario({**base, "layers": 16, "hybrid_pattern": "*-" * 8})


@pytest.mark.parametrize(("tp", "pp", "sequence_parallel"), [(1, 1, False), (2, 1, True), (4, 2, True)])
def test_attention_and_mlp_layers_price_as_the_transformer(tp, pp, sequence_parallel):
    """Splitting each transformer layer into its attention and MLP blocks changes nothing the
    blocks do: the same kernels, tensor-parallel sites, parameters and activations, so each
    stage's compute, communication and memory per microbatch are the same (to rounding) and the
    model FLOPs too. The step may differ by the data-parallel overlap's layer granularity
    (gradients become ready layer by layer, twice as often with half layers): under 0.1%."""
    results = []
    scenarios = _pair_scenarios(tp, pp, sequence_parallel)
    for scenario in scenarios:
        results.append(simulate_step(scenario, session_from_scenario(scenario).collectives))
    whole, pairs = results
    assert parameter_count(scenarios[1].model) == parameter_count(scenarios[0].model)
    for a, b in zip(whole.stages, pairs.stages, strict=True):
        for field in ("forward_s", "backward_s", "tp_comm_s", "p2p_s", "memory_bytes"):
            assert getattr(b, field) == pytest.approx(getattr(a, field), rel=1e-9)
    assert step_flops(scenarios[1]) == pytest.approx(step_flops(scenarios[0]), rel=1e-12)
    assert pairs.step_time_s == pytest.approx(whole.step_time_s, rel=1e-3)


def test_pure_mamba_model_runs():
    """``block: mamba`` is a pure Mamba-2 model: its parameters are its mixers' and embeddings'."""
    model = ModelConfig(layers=4, hidden=1024, heads=8, mlp="squared-relu", vocab=32000, block="mamba",
                        mamba={"heads": 32})
    assert model.block == Block.MAMBA
    assert parameter_count(model) == 4 * sum(model.mamba.tensor_sizes(1024)) + embedding_parameters(model)


def _write(tmp_path, model_update: dict, parallelism: dict | None = None):
    data = {"name": "hybrid", "cluster": {"node": "dgx-h100", "nodes": 1},
            "model": {"preset": "nemotron-3-nano-30b-a3b", **model_update},
            "training": {"global_batch": 64, "micro_batch": 1, "dtype": "bf16", "stack": "megatron-core"},
            "parallelism": {"tp": 1, "ep": 8, **(parallelism or {})}}
    path = tmp_path / "hybrid.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(("model_update", "parallelism", "key"), [
    ({"layers": 50}, None, "model.hybrid_pattern"),
    ({"hybrid_pattern": "MEMX"}, None, "model.hybrid_pattern"),
    ({"mamba": None}, None, "model.mamba"),
    ({"block": "mamba"}, None, "model.block"),
    ({"first_dense_layers": 2}, None, "model.first_dense_layers"),
    ({"mamba": {"heads": 64, "groups": 4}}, {"tp": 8, "ep": 1}, "parallelism.tp"),
    ({}, {"cp": 2, "ep": 4}, "parallelism.cp"),
    ({"mtp_layers": 1, "mtp_pattern": "*E"}, {"zero_stage": 3}, "model.mtp_layers"),
])
def test_bad_hybrid_input_exits_2_naming_the_key(tmp_path, capsys, model_update, parallelism, key):
    """One clear message naming the key, exit status 2, no traceback."""
    code = main(["run", str(_write(tmp_path, model_update, parallelism))])
    err = capsys.readouterr().err
    assert code == 2 and key in err and "Traceback" not in err


def test_nano_runs_with_finite_figures(tmp_path):
    """The preset on one DGX H100 runs: finite step, MFU in (0, 1], memory below the GPU's."""
    scenario = scenario_from_mapping(yaml.safe_load(_write(tmp_path, {}, {"recompute": "full"}).read_text()),
                                     "<test>")
    result = simulate_step(scenario, session_from_scenario(scenario).collectives)
    assert np.isfinite(result.step_time_s) and 0.0 < result.mfu <= 1.0


SUPER = ModelConfig(**MODEL_PRESETS["nemotron-3-super-120b-a12b"])


def test_nemotron_3_super_counts_the_verification_card():
    """123,611,033,088 parameters (Megatron-Bridge ``examples/model_verification_cards/
    nemotron-3-super-120b-a12b/card.yaml``, the checkpoint's count): the count here, whose
    one shared prediction block counts once, plus the two tensors it leaves out, the final norm
    (``h``) and each MoE layer's router expert bias (``E`` each, 40 layers and the prediction
    block's)."""
    moe_layers = SUPER.hybrid_pattern.count("E") + SUPER.mtp_pattern.count("E")
    assert parameter_count(SUPER) + SUPER.hidden + SUPER.experts * moe_layers == 123_611_033_088


def test_shared_prediction_depths_count_their_weights_once():
    """``mtp_shared``: two depths of one ``*E`` block hold one block's weights (and one
    projection); without sharing each depth holds its own."""
    apart = SUPER.model_copy(update={"mtp_shared": False})
    depth = parameter_count(apart) - parameter_count(apart.model_copy(update={"mtp_layers": 1}))
    assert parameter_count(apart) - parameter_count(SUPER) == depth > 0


def test_latent_experts_work_and_dispatch_at_the_latent_width():
    """A latent mixture of experts (``moe_latent`` ``L``): the routed experts' GEMMs read and write
    ``L``, the dispatcher moves ``L``-wide rows (``L / h`` of the hidden-width bytes), and the two
    projections run on the rank's tokens, whole on every tensor-parallel rank."""
    from simulator.cost.in_layer import _dispatched_bytes
    from simulator.workload.mlp_kernels import latent_gemms, mlp_gemms

    moe = SUPER.sublayer_model("E")
    plain = moe.model_copy(update={"moe_latent": None})
    shape = LayerShape(moe, 1, tp=2, sequence_parallel=True, ep=8)
    plain_shape = LayerShape(plain, 1, tp=2, sequence_parallel=True, ep=8)
    fc1, fc2 = mlp_gemms(shape)
    assert fc1[2] == fc2[1] == SUPER.moe_latent
    assert _dispatched_bytes(shape) == pytest.approx(_dispatched_bytes(plain_shape) * 1024 / 4096)
    down, up = latent_gemms(shape)
    assert down == (shape.tokens / 2, 1024, 4096, 1) and up == (shape.tokens / 2, 4096, 1024, 1)
    assert latent_gemms(plain_shape) == []


def _logged(**arguments):
    from dataclasses import replace
    from pathlib import Path

    from simulator.measure.draft import draft_from_log
    from simulator.measure.megatron_log import read_megatron_log
    log = read_megatron_log(Path(__file__).resolve().parents[1] / "validation" / "training_logs"
                            / "primus-megatron_mixtral-8x7b_8x8-mi325x.log.gz")
    return draft_from_log(replace(log, arguments={**log.arguments, **arguments}), "mi325x-platform", 8)


def test_import_log_maps_a_hybrid_pattern_its_mixer_and_prediction_depths():
    """``hybrid_layer_pattern`` with ``|`` segments and ``/`` depths, the Mamba arguments (the
    head count defaulting to ``2 h / head_dim``), ``squared_relu``, ``moe_latent_size`` and
    ``mtp_use_repeated_layer`` become the scenario's keys; a scenario that loads."""
    pattern = "MEM*|EMEM/*E/*E"
    draft = _logged(hybrid_layer_pattern=pattern, num_layers=8, squared_relu=True, swiglu=False,
                    mamba_head_dim=64, mamba_num_groups=8, moe_latent_size=1024, mtp_use_repeated_layer=True,
                    mtp_num_layers=2)
    model = draft.scenario["model"]
    assert model["hybrid_pattern"] == "MEM*EMEM" and model["layers"] == 8
    assert (model["mtp_pattern"], model["mtp_layers"], model["mtp_shared"]) == ("*E", 2, True)
    assert model["mamba"] == {"head_dim": 64, "state": 128, "groups": 8, "heads": 2 * model["hidden"] // 64}
    assert model["mlp"] == "squared-relu" and model["moe_latent"] == 1024
    assert scenario_from_mapping(draft.scenario, "<draft>").model.hybrid_pattern == "MEM*EMEM"


def test_import_log_refuses_layers_it_cannot_price():
    """A Gated DeltaNet (``G``) layer is named in the one message, not priced as something else."""
    from simulator.errors import UsageError
    with pytest.raises(UsageError, match="'G' \\(Gated DeltaNet\\)"):
        _logged(hybrid_layer_pattern="MGM*")


def test_search_axes_fit_a_hybrid_model(tmp_path):
    """A hybrid model's default layouts split its mixer's heads and groups over tp and leave out
    what it does not price (context parallelism; ZeRO-3 only with prediction layers)."""
    from simulator.sweep.layouts import default_axes
    scenario = scenario_from_mapping(yaml.safe_load(_write(tmp_path, {"mamba": {"heads": 64, "groups": 4}},
                                                           {}).read_text()), "<test>")
    axes = default_axes(scenario, 8)
    assert axes["tp"] == [1, 2, 4] and axes["zero_stage"] == [1, 2, 3] and axes["cp"] == [1]


def test_nemotron_3_5_lightning_counts_the_verification_card():
    """Nemotron 3.5 Lightning is the Nano with two prediction depths of one shared ``*E`` block
    (Megatron-Bridge's Lightning recipes): its card's export matches "32,913,266,240 parameters"
    (``examples/model_verification_cards/nemotron-3.5-lightning/card.yaml``), the count here
    plus the final norm and the 24 MoE layers' router expert biases."""
    lightning = NANO.model_copy(update={"mtp_layers": 2, "mtp_pattern": "*E", "mtp_shared": True})
    moe_layers = NANO.hybrid_pattern.count("E") + 1
    assert parameter_count(lightning) + NANO.hidden + NANO.experts * moe_layers == 32_913_266_240


def _fsdp_nano(tmp_path, reshard: bool):
    data = {"name": "hybrid-fsdp", "cluster": {"node": "dgx-h100", "nodes": 1},
            "model": {"preset": "nemotron-3-nano-30b-a3b", "seq_len": 4096},
            "training": {"global_batch": 16, "micro_batch": 2, "dtype": "bf16",
                         "stack": {"base": "torchtitan", "sharding": {"reshard_after_forward": reshard}}},
            "parallelism": {"tp": 1, "dp": 8, "ep": 8, "recompute": "full"}}
    return scenario_from_mapping(data, "<test>")


def test_fsdp_units_of_a_hybrid_stage_are_its_layers(tmp_path):
    """ZeRO-3 / FSDP over a hybrid model wraps each layer of the pattern: the stage's units hold
    every layer's non-expert weights once, so what is left of its dense parameters is the root
    unit, the embedding and the output layer (``2 V h``); a Mamba layer's unit is the largest, an
    MoE layer's the smallest (its router and shared expert: its 16 local experts stay resident,
    expert parallelism 8 = dp leaves no one to gather them from)."""
    from simulator.workload.memory import stage_parameters
    from simulator.workload.stage_layers import stage_patterns
    from simulator.workload.unsharded import stage_units
    scenario = _fsdp_nano(tmp_path, True)
    model, par = scenario.model, scenario.parallelism
    pattern = stage_patterns(model, par)[0]
    dense, _ = stage_parameters(model, par, model.layers, True, True, 0, 0, pattern)
    dense_units, units = stage_units(model, par, 8, model.layers, pattern)
    assert len(units) == 52 and dense - dense_units == 2 * model.vocab * model.hidden
    from simulator.workload.params import dense_layer_parameters, layer_parameters
    assert units[0] == layer_parameters(model.sublayer_model("M"))
    assert units[-1] == dense_layer_parameters(model.sublayer_model("E"))


@pytest.mark.parametrize("reshard", [True, False])
def test_hybrid_fsdp_engines_agree_and_report_the_sharded_traffic(tmp_path, reshard):
    """DES = analytical with contention off on a sharded hybrid stage; the step reports ZeRO-3
    traffic under dp, and keeping the units gathered (no reshard after forward) gathers less."""
    from simulator.engine.des import simulate_steps_des
    scenario = _fsdp_nano(tmp_path, reshard)
    collectives = session_from_scenario(scenario).collectives
    analytical = simulate_step(scenario, collectives)
    des = simulate_steps_des(scenario, collectives, 1, 0, contention=False).step_times_s[0]
    assert des == pytest.approx(analytical.step_time_s, rel=1e-9)
    assert analytical.dp_comm_s > 0 and np.isfinite(analytical.step_time_s)
    if not reshard:
        again = simulate_step(_fsdp_nano(tmp_path, True), collectives)
        assert analytical.dp_comm_s < again.dp_comm_s


def test_experts_outside_fsdp_units_keep_no_fp32_accumulator(tmp_path):
    """NeMo AutoModel leaves the experts out of FSDP where expert parallelism covers the
    data-parallel ranks (``ignored_params``): deferring the gradient sync over 8 microbatches
    then accumulates only the non-expert weights' gradients unsharded in the reduce dtype (4 B),
    so the peak drops by 4 B per expert parameter the GPU holds."""
    from simulator.engine.analytical import simulate_step as step
    from simulator.workload.memory import stage_parameters
    from simulator.workload.stage_layers import stage_patterns
    base = {"name": "aut", "cluster": {"node": "dgx-h100", "nodes": 1},
            "model": {"preset": "nemotron-3-nano-30b-a3b", "seq_len": 4096},
            "training": {"global_batch": 64, "micro_batch": 1, "dtype": "bf16", "stack": None},
            "parallelism": {"tp": 1, "dp": 8, "ep": 8, "recompute": "full"}}
    peaks = []
    for outside in (False, True):
        base["training"]["stack"] = {"base": "automodel", "sharding": {"experts_outside_units": outside,
                                                                       "grad_reduce_dtype": "fp32"}}
        scenario = scenario_from_mapping(base, "<test>")
        peaks.append(step(scenario, session_from_scenario(scenario).collectives).memory_per_gpu_bytes)
    model, par = scenario.model, scenario.parallelism
    _, expert = stage_parameters(model, par, model.layers, True, True, 0, 0, stage_patterns(model, par)[0])
    assert peaks[0] - peaks[1] == pytest.approx(4 * expert, rel=1e-9)
