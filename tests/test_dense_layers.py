"""Dense layers among a mixture of experts' layers (``model.first_dense_layers``), multi-token
prediction layers (``model.mtp_layers``) and Megatron-Core's explicit pipeline layout
(``parallelism.pipeline_layout``). Checked against DeepSeek-V3's published parameter counts,
Megatron-Core's layout parser and Megatron-Bridge's layouts, the closed forms of the weights
and FLOPs they add, a stage of dense layers priced as the dense model's, both engines
agreeing, and one clear message for each mistake."""

from __future__ import annotations

import pytest
import yaml
from scenario_maps import run_mapping as _run

from simulator.cli import main
from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.config.pipeline_layout import LayoutError, layout_chunks, parse_layout
from simulator.config.presets import MODEL_PRESETS
from simulator.config.scenario import ModelConfig, ParallelismConfig
from simulator.engine.flops import step_flops
from simulator.workload.memory import stage_parameters
from simulator.workload.params import (
    dense_layer_parameters,
    layer_parameters,
    mtp_extra_parameters,
    parameter_count,
)
from simulator.workload.stage_layers import pipeline_chunks, scenario_split, stage_kinds

DSV3 = ModelConfig(**MODEL_PRESETS["deepseek-v3"])
FABRIC = {"topology": "rail-optimized", "link": "ib-ndr"}
SMALL = {"preset": "deepseek-v3", "layers": 6, "first_dense_layers": 2, "experts": 16, "dense_ffn": 12288}
SCENARIO = {"cluster": {"node": "dgx-h100", "nodes": 4, "fabric": FABRIC},
            "model": SMALL,
            "training": {"global_batch": 64, "micro_batch": 1, "stack": "megatron-core"},
            "parallelism": {"tp": 1, "pp": 4, "ep": 8, "schedule": "interleaved-1f1b", "virtual_stages": 2,
                            "pipeline_layout": "Et|t|t|t|t|t|m|L"},
            "simulate": {"contention": False}}


def _mapping(**sections) -> dict:
    return {key: {**value, **sections.get(key, {})} if isinstance(value, dict) else value
            for key, value in SCENARIO.items()}


def _scenario(**sections):
    return scenario_from_mapping(_mapping(**sections), "<test>", HardwareLibrary())


def test_deepseek_v3_counts_match_the_published_totals():
    """DeepSeek-V3 Technical Report (arXiv:2412.19437) sec. 4.2 and the model card: 671B main-model
    parameters, 37B activated, and 685B with the 14B multi-token prediction module (its own
    embedding and output layer copies included: ``2 V h``). Half a unit of the last digit for
    the main model; one unit for the activated count, which the report rounds without saying
    whether it counts the 1.85B embedding and output layer, and for the 685B, the sum of two
    figures rounded to the unit (684.5B here)."""
    from simulator.workload.params import active_parameter_count
    main_model = DSV3.model_copy(update={"mtp_layers": 0})
    assert abs(parameter_count(main_model) - 671e9) <= 0.5e9
    assert abs(active_parameter_count(main_model) - 37e9) <= 1e9
    with_module = parameter_count(DSV3) + 2 * DSV3.vocab * DSV3.hidden
    assert abs(with_module - 685e9) <= 1e9     # 671 + 14, each rounded to the unit


def test_dense_layers_and_mtp_add_their_closed_form_weights():
    """Replacing k MoE layers by dense ones changes the count by k (layer(dense) - layer(MoE));
    each MTP layer adds a layer and ``2 h^2 + 3 h``."""
    all_moe = DSV3.model_copy(update={"first_dense_layers": 0, "dense_ffn": None, "mtp_layers": 0})
    dense3 = DSV3.model_copy(update={"mtp_layers": 0})
    diff = 3 * (layer_parameters(DSV3.dense_model()) - layer_parameters(DSV3))
    assert parameter_count(dense3) - parameter_count(all_moe) == diff
    h = DSV3.hidden
    assert parameter_count(DSV3) - parameter_count(dense3) == layer_parameters(DSV3) + 2 * h * h + 3 * h
    assert mtp_extra_parameters(DSV3) == 2 * h * h + 3 * h


def test_layout_parser_unrolls_as_megatron_core():
    """Megatron-Core ``parse_str_to_list``'s docstring example and its ``x*n`` rule."""
    assert parse_layout("Ettt|(tt|)*29,m|L") == ["Ettt"] + ["tt"] * 29 + ["m", "L"]
    assert parse_layout("Et*4|(t*4|)*14tmL") == ["Etttt"] + ["tttt"] * 14 + ["tmL"]


def test_default_split_is_megatron_bridge_h100_layout():
    """DeepSeek-V3's 61 layers and its MTP layer on 8 x 4 chunks split by the default rule as
    Megatron-Bridge's H100 recipe lays them out (``Et|(tt|)*30mL``): stage 0 holds 7 layers
    (layer 0 dense), stage 1 8 (layers 1 and 2 dense), stage 7 6 and the MTP layer."""
    par = ParallelismConfig(pp=8, virtual_stages=4, schedule="interleaved-1f1b")
    laid = par.model_copy(update={"pipeline_layout": "Et|(tt|)*30mL"})
    assert pipeline_chunks(DSV3, par) == pipeline_chunks(DSV3, laid)
    kinds = stage_kinds(DSV3, laid)
    assert kinds[0] == (7, True, False, 1, 0, "") and kinds[1] == (8, False, False, 2, 0, "")
    assert kinds[7] == (6, False, True, 0, 1, "") and sum(k[0] for k in kinds) == 61


def test_blackwell_layout_puts_the_dense_layers_on_stage_zero():
    """``Et*4|(t*4|)*14tmL`` on 16 stages (Megatron-Bridge's B200 recipe): stage 0 holds the three
    dense layers and one MoE layer, stage 15 one layer and the MTP layer."""
    par = ParallelismConfig(pp=16, pipeline_layout="Et*4|(t*4|)*14tmL")
    assert scenario_split(DSV3, par) == [4] * 15 + [1]
    kinds = stage_kinds(DSV3, par)
    assert kinds[0] == (4, True, False, 3, 0, "") and kinds[15] == (1, False, True, 0, 1, "")


@pytest.mark.parametrize(("layout", "message"), [
    ("Et|t|t|t|t|t||L", "multi-token prediction layers"),
    ("Et|t|t|t|t|m|t|L", "follows a multi-token"),
    ("tE|t|t|t|t|t|m|L", "embedding E must come first"),
    ("Et|t|t|t|t|tm|L", "chunks; expected"),
    ("Et|t|t|t|t|t|m|X", "unknown layer letter"),
    ("E(t|)*99999999999L", "repeat count beyond"),          # refused before it is unrolled
    ("E(t*1000|)*2000L", "unrolls to")])
def test_layout_checks_refuse_what_megatron_core_refuses(layout, message):
    with pytest.raises(LayoutError, match=message):
        layout_chunks(layout, 4, 2, 6, 1)


def test_stage_weights_count_each_layer_kind():
    """A stage's dense weights: its dense layers whole over tp, its MoE layers' non-expert part;
    expert weights only for its MoE and MTP layers; a stage holding MTP but not the embedding keeps
    a copy of the embedding."""
    par = ParallelismConfig(tp=2, pp=4, ep=8)
    model = DSV3
    dense, expert = stage_parameters(model, par, 4, True, False, 3, 0)
    all_moe_dense, all_moe_expert = stage_parameters(model, par, 4, True, False)
    assert expert == pytest.approx(all_moe_expert / 4)
    non_expert, embedding = dense_layer_parameters(model), model.vocab * model.hidden
    dense_layer = layer_parameters(model.dense_model())
    assert dense - all_moe_dense == pytest.approx(3 * (dense_layer - non_expert) / 2)
    last, last_expert = stage_parameters(model, par, 1, False, True, 0, 1)
    one, one_expert = stage_parameters(model, par, 1, False, True)
    assert last_expert == pytest.approx(2 * one_expert)
    duplicated = model.mla.duplicated_parameters(model.hidden) / 2      # latent down projections, whole
    mtp_layer = (non_expert + mtp_extra_parameters(model) + embedding) / 2 + duplicated
    assert last - one == pytest.approx(mtp_layer)


def test_model_flops_count_dense_layers_and_mtp():
    """The dense layers' MLPs replace ``top_k`` experts' and the shared one (the router is not a
    model FLOP, as Megatron-Bridge's count); each MTP layer adds a layer, its ``2h -> h``
    projection and the output layer again (3 x forward FLOPs per token)."""
    base = _scenario()
    model = base.model
    tokens = base.training.global_batch * model.seq_len
    h, f_dense, f = model.hidden, model.dense_ffn, model.ffn_hidden
    no_dense = base.model_copy(update={"model": model.model_copy(
        update={"first_dense_layers": 0, "dense_ffn": None})})
    mlp = 2 * 3 * h * tokens * (f_dense - model.top_k * f - model.shared_expert_ffn)   # per dense layer
    assert step_flops(base)[0] - step_flops(no_dense)[0] == pytest.approx(3 * 2 * mlp, rel=1e-12)
    no_mtp = base.model_copy(update={"model": model.model_copy(update={"mtp_layers": 0})})
    extra = step_flops(base)[0] - step_flops(no_mtp)[0]
    projection = 3 * 2 * tokens * 2 * h * h
    logits = 3 * 2 * tokens * h * model.vocab
    assert extra > projection + logits
    fewer = no_dense.model.model_copy(update={"layers": model.layers - 1})
    shorter = no_dense.model_copy(update={"model": fewer})
    moe_layer = step_flops(no_dense)[0] - step_flops(shorter)[0]
    assert extra == pytest.approx(moe_layer + projection + logits, rel=1e-12)


def test_a_stage_of_dense_layers_is_priced_as_the_dense_model(tmp_path):
    """Stage 0 holding only dense layers takes the forward seconds of the same stage of the
    dense model (experts off, the dense MLP width): the layer kinds are priced, not averaged in."""
    mixed = _mapping(model={"layers": 4, "mtp_layers": 0}, parallelism={
        "ep": 1, "pp": 2, "virtual_stages": 1, "schedule": "1f1b", "pipeline_layout": "Ett|ttL"})
    dense_model = {"preset": "deepseek-v3", "layers": 4, "mtp_layers": 0, "first_dense_layers": 0,
                   "experts": 1, "top_k": 1, "shared_expert_ffn": 0, "ffn_hidden": 12288, "dense_ffn": None}
    a = _run(tmp_path, mixed).stages
    b = _run(tmp_path, {**mixed, "model": dense_model}).stages[0]
    assert a[0].forward_s == pytest.approx(b.forward_s, rel=1e-12)
    assert a[1].forward_s > b.forward_s


@pytest.mark.parametrize("zero_stage", [1, 3])
def test_both_engines_agree(tmp_path, zero_stage):
    """DES = analytical with contention off, dense layers, MTP and a layout included."""
    mapping = _mapping(parallelism={"zero_stage": zero_stage})
    analytical, des = _run(tmp_path, mapping), _run(tmp_path, mapping, engine="des")
    assert des.step_time_s == pytest.approx(analytical.step_time_s, rel=1e-9)
    assert 0.0 < analytical.mfu <= 1.0


@pytest.mark.parametrize(("change", "key"), [
    ({"model": {"preset": "llama3-8b", "first_dense_layers": 2}}, "model.first_dense_layers"),
    ({"model": {**SMALL, "first_dense_layers": 6}}, "model.first_dense_layers"),
    ({"model": {**SMALL, "first_dense_layers": 0, "dense_ffn": 4096}}, "model.dense_ffn"),
    ({"parallelism": {**SCENARIO["parallelism"], "pipeline_layout": "Et|t|t|t|t|t|t|L"}},
     "parallelism.pipeline_layout"),
    ({"parallelism": {**SCENARIO["parallelism"], "first_stage_layers": 2}},
     "parallelism.first_stage_layers")])
def test_mistakes_get_one_message_and_exit_2(tmp_path, capsys, change, key):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**SCENARIO, **change}))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert key in err and "Traceback" not in err


def test_import_log_maps_deepseeks_layer_pattern_mtp_and_layout():
    """``moe_layer_freq [0]*3 + [1]*29``, ``mtp_num_layers`` and ``pipeline_model_parallel_layout``
    become the scenario's keys; another pattern (every second layer MoE) is noted, not mapped."""
    from dataclasses import replace
    from pathlib import Path

    from simulator.measure.draft import draft_from_log
    from simulator.measure.megatron_log import read_megatron_log
    log = read_megatron_log(Path(__file__).resolve().parents[1] / "validation" / "training_logs"
                            / "primus-megatron_mixtral-8x7b_8x8-mi325x.log.gz")
    args = {**log.arguments, "moe_layer_freq": [0] * 3 + [1] * 29, "mtp_num_layers": 1,
            "ffn_hidden_size": 18432, "moe_ffn_hidden_size": 2048,
            "pipeline_model_parallel_layout": "Et|(tt|)*15m|L"}
    draft = draft_from_log(replace(log, arguments=args), "mi325x-platform", 8).scenario
    keys = ("first_dense_layers", "dense_ffn", "ffn_hidden", "mtp_layers")
    assert [draft["model"][k] for k in keys] == [3, 18432, 2048, 1]
    assert draft["parallelism"]["pipeline_layout"] == "Et|(tt|)*15m|L"
    other = draft_from_log(replace(log, arguments={**log.arguments, "moe_layer_freq": [0, 1] * 16}),
                           "mi325x-platform", 8)
    assert "first_dense_layers" not in other.scenario["model"]


def test_a_search_drops_the_layout_for_another_pipeline():
    """A layout names the layers of ``pp * v`` chunks: a searched layout with the scenario's pp and
    v keeps it, one with another pp takes the default split (the layout would be refused)."""
    from simulator.sweep.layouts import apply_layout, with_layout
    scenario = _scenario()
    same = {"tp": 1, "pp": 4, "virtual_stages": 2, "ep": 8}
    other = {"tp": 1, "pp": 2, "virtual_stages": 2, "ep": 8}
    for apply in (apply_layout, with_layout):
        assert apply(scenario, same).parallelism.pipeline_layout == "Et|t|t|t|t|t|m|L"
        assert apply(scenario, other).parallelism.pipeline_layout is None


def test_a_search_drops_first_and_last_stage_counts_for_another_pp():
    """``first_stage_layers`` / ``last_stage_layers`` were chosen for the scenario's stages: kept
    for its pp (with any virtual stages), dropped for another pp (the default split)."""
    from simulator.sweep.layouts import apply_layout, with_layout
    scenario = _scenario(model={"layers": 8, "mtp_layers": 0}, parallelism={
        "pipeline_layout": None, "pp": 4, "virtual_stages": 1, "schedule": "1f1b",
        "first_stage_layers": 1, "last_stage_layers": 1})
    for apply in (apply_layout, with_layout):
        kept = apply(scenario, {"tp": 1, "pp": 4, "ep": 8}).parallelism
        assert (kept.first_stage_layers, kept.last_stage_layers) == (1, 1)
        dropped = apply(scenario, {"tp": 1, "pp": 2, "ep": 8}).parallelism
        assert (dropped.first_stage_layers, dropped.last_stage_layers) == (None, None)


def test_a_standalone_mtp_stage_keeps_the_embedding_and_the_output_layer():
    """Megatron-Core lets the MTP layers sit alone on a rank before the last (its 'standalone'
    layout, in the last virtual stage of that rank): that stage builds the embedding and runs
    the output layer and loss, so it holds both (2 V h / t) besides the MTP layer, and keeps the
    MTP loss's logits; a layout putting them in an earlier virtual stage is refused."""
    par = ParallelismConfig(tp=2, pp=4, ep=8)
    h, vocab = DSV3.hidden, DSV3.vocab
    standalone = stage_parameters(DSV3, par, 0, False, False, 0, 1)[0]
    with_layer = stage_parameters(DSV3, par, 1, False, False)[0]
    extra = mtp_extra_parameters(DSV3)
    assert standalone - with_layer == pytest.approx((extra + 2 * vocab * h) / 2)
    assert layout_chunks("Et|tt|ttm|L", 4, 1, 5, 1) == [(1, 0), (2, 0), (2, 1), (0, 0)]
    with pytest.raises(LayoutError, match="last virtual"):
        layout_chunks("Et|t|t|tm|L|||", 4, 2, 4, 1)


def test_a_zero3_unit_of_a_dense_layer_gathers_the_dense_layers_weights():
    """Under ZeRO-3 each unit gathers its own layer: a stage of dense layers prices the dense
    model's unit, a stage of MoE layers the MoE model's, and a mixed stage their mean by count."""
    from simulator.config.loader import scenario_stack
    from simulator.cost.sharding import stage_unit_comm, unit_comm
    from simulator.engine.context import make_context
    from simulator.pipeline import session_from_scenario
    mapping = _mapping(model={"mtp_layers": 0}, parallelism={
        "zero_stage": 3, "pp": 4, "virtual_stages": 1, "schedule": "1f1b", "pipeline_layout": "Ett|tt|t|tL"})
    session = session_from_scenario(scenario_from_mapping(mapping, "<test>", HardwareLibrary()))
    scenario, collectives = session.scenario, session.collectives
    stack, layout = scenario_stack(scenario), make_context(scenario, collectives).layout
    dense = scenario.model_copy(update={"model": scenario.model.dense_model()})
    assert stage_unit_comm(scenario, stack, collectives, layout, 0) == unit_comm(dense, stack, collectives,
                                                                                layout, 0)
    assert stage_unit_comm(scenario, stack, collectives, layout, 2) == unit_comm(scenario, stack, collectives,
                                                                                layout, 2)
    assert unit_comm(dense, stack, collectives, layout, 0).gather != unit_comm(scenario, stack, collectives,
                                                                               layout, 0).gather
