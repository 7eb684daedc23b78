"""The ``megatron_moe_layer`` validation set: Megatron-LM's MoE layer benchmark on one DGX H100
(NVIDIA/Megatron-LM tests/functional_tests/test_cases/common/moe_perf/baseline.json @ cf39a4ddcf;
validation/README.md), its encoding and the layer-time prediction it is scored on."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from simulator.config import load_scenario
from simulator.config.loader import scenario_stack
from simulator.cost.layer import head_costs
from simulator.engine.context import make_context
from simulator.pipeline import open_scenario, run_scenario
from simulator.validation.layer_times import layer_seconds
from simulator.validation.suite import SETS

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "validation" / "scenarios" / "megatron_moe_layer"
DATA = pd.read_csv(ROOT / "validation" / "megatron_moe_layer_h100.csv")
INDEX = pd.read_csv(FOLDER / "index.csv")
PROXIES = {"mixtral": (4096, 14336, 8, 2), "deepseek": (7168, 2048, 32, 8)}   # test_cases.py
DISPATCHERS = {"alltoall": "alltoall", "flex (DeepEP)": "deepep", "flex (HybridEP)": "hybridep"}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return SETS["megatron_moe_layer"].run(ROOT)


def test_index_pairs_each_scenario_with_its_forward_and_backward_row():
    """Rows 1..24 once each; every scenario file twice, its forward row then its backward row."""
    assert sorted(INDEX["row"]) == list(range(1, len(DATA) + 1))
    assert set(INDEX["scenario"]) == {p.name for p in FOLDER.glob("*.yaml")}
    for name, rows in INDEX.groupby("scenario"):
        passes = [DATA.iloc[r - 1]["pass"] for r in sorted(rows["row"])]
        assert passes == ["forward", "backward"], name
        cases = {DATA.iloc[r - 1]["case"] for r in rows["row"]}
        assert cases == {Path(name).stem.replace("-", "_")}, name


IDS = [f"{case}-{pass_}" for case, pass_ in zip(DATA["case"], DATA["pass"], strict=True)]


@pytest.mark.parametrize("row", list(DATA.itertuples()), ids=IDS)
def test_scenario_encodes_its_case(row):
    """Hidden, expert width, experts, top k, 4,096 tokens per GPU, ep 8 on 8 GPUs, the dispatcher
    and the precision of the CSV's case; the header names the CSV rows."""
    entry = INDEX[INDEX["row"] == row.Index + 1].iloc[0]
    path = FOLDER / entry.scenario
    scenario = load_scenario(path)
    model, par = scenario.model, scenario.parallelism
    assert (model.hidden, model.ffn_hidden, model.experts, model.top_k) == PROXIES[row.case.split("_")[0]]
    assert model.layers == 1 and model.seq_len * scenario.training.micro_batch == row.tokens_per_gpu
    cluster = scenario.cluster
    assert (par.tp, par.ep, cluster.nodes * cluster.gpus_per_node) == (row.tp, row.ep, row.gpus)
    assert scenario_stack(scenario).expert_parallel.dispatcher == DISPATCHERS[row.dispatcher]
    assert (scenario.training.dtype == "fp8") == row.precision.startswith("FP8")
    assert "CSV rows" in path.read_text().splitlines()[0] and row.case in path.read_text().splitlines()[0]


def test_layer_time_is_the_stage_time_without_the_heads():
    """The scored prediction is what a one-layer stage runs besides its embedding and output
    layer: stage forward = layer forward + embedding + logits (closed form of the analytical
    engine's stage, bf16 so no fp8 amax reduction)."""
    path = FOLDER / "mixtral-hybridep-tp1ep8-bf16.yaml"
    forward, backward = layer_seconds(path)
    session = open_scenario(path)
    context = make_context(session.scenario, session.collectives)
    embed, logits_f, _ = head_costs(context.shape, context.compute)
    stage = run_scenario(path, engine="analytical").stages[0]
    assert stage.forward_s == pytest.approx(forward + embed + logits_f, rel=1e-9)
    assert 0 < forward < backward < stage.backward_s


def _measured(frame: pd.DataFrame, case: str, pass_: str) -> tuple[float, float]:
    rows = DATA.index[(DATA["case"] == case) & (DATA["pass"] == pass_)]
    row = frame[frame["row"] == str(rows[0] + 1)].iloc[0]
    return row.measured, row.predicted


@pytest.mark.parametrize("pass_", ["forward", "backward"])
def test_deduplicated_dispatch_saves_what_was_measured(frame, pass_):
    """The alltoall dispatcher sends a token once per expert, HybridEP once per GPU, and adds
    the permute before its all-to-all and two sorts: on the DeepSeek proxy (top 8 from 4 groups
    of 4 experts, one group per GPU) the alltoall forward is 1.73 ms (BF16) and 2.47 ms (FP8)
    slower, the backward 1.69 and 2.44, measured; predicted within 10% of each (the backward's
    2.35 and 3.00 until the permutations' gradients moved their bytes once, not twice)."""
    for precision in ("bf16", "fp8"):
        a2a = _measured(frame, f"deepseek_a2a_tp1ep8_{precision}", pass_)
        hybrid = _measured(frame, f"deepseek_hybridep_tp1ep8_{precision}", pass_)
        measured, predicted = a2a[0] - hybrid[0], a2a[1] - hybrid[1]
        assert measured > 1.5 and predicted == pytest.approx(measured, rel=0.10), precision


def test_deepep_setup_is_the_known_miss(frame):
    """DeepEP's normal-mode dispatch (layout kernel, host wait on the received counts) measured
    0.29-0.30 ms slower than HybridEP in both BF16 forwards; the model prices the two alike
    (docs/validation.md): a fix must change this test knowingly."""
    for proxy in ("mixtral", "deepseek"):
        deepep = _measured(frame, f"{proxy}_deepep_tp1ep8_bf16", "forward")
        hybrid = _measured(frame, f"{proxy}_hybridep_tp1ep8_bf16", "forward")
        assert deepep[0] - hybrid[0] > 0.25
        assert abs(deepep[1] - hybrid[1]) < 0.05


def test_calibrating_on_a_layer_time_set_is_refused_with_the_reason(capsys):
    """``calibrate --set`` fits throughput or busbw; a set of layer times (or memory) names its
    metric and the sets that can calibrate, exit 2, no traceback."""
    from simulator.cli import main
    assert main(["calibrate", "--set", "megatron_moe_layer"]) == 2
    err = capsys.readouterr().err
    assert "one layer's forward or backward time" in err and "cannot calibrate" in err
    assert "Traceback" not in err


def test_eager_expert_activation_weights_by_the_probabilities_in_fp32():
    """Unfused, a routed expert's activation is ``gelu(x)`` (4 units of its 16-bit inner
    activation with the bias add the table assumes), ``* permuted_probs`` into fp32 and
    ``.to(bf16)`` (6 units more: PROBS_WEIGHT_BYTES, Megatron-Core experts.py ``bias_act_func``);
    fused, one kernel of 2 units that weights inside."""
    from dataclasses import replace

    from simulator.workload.mlp_kernels import PROBS_WEIGHT_BYTES, activation_kernel_bytes
    session = open_scenario(FOLDER / "mixtral-a2a-tp1ep8-bf16.yaml")
    shape = make_context(session.scenario, session.collectives).shape
    inner = shape.expert_tokens * shape.model.top_k * shape.model.ffn_hidden * shape.dtype_bytes
    assert activation_kernel_bytes(shape) == pytest.approx((4.0 + PROBS_WEIGHT_BYTES) * inner)
    assert activation_kernel_bytes(replace(shape, fused_activation=True)) == pytest.approx(2.0 * inner)
