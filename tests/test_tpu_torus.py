"""TPU v4: the chip-level 3-D torus and the dimension-by-dimension torus all-reduce against
their closed forms (simulator/collectives/torus.py) and Google's 4,096-chip figure."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import make_cluster

from simulator.cli import main
from simulator.collectives import Algorithm, Group, Op, build_schedule, whole_cluster
from simulator.config import HardwareLibrary, load_scenario
from simulator.config.hardware import Protocol
from simulator.cost import CollectiveModel
from simulator.cost.network import NetworkCostModel
from simulator.errors import InfeasibleError
from simulator.sweep.scale import plan_points
from simulator.topology.fabric import balanced_dims
from simulator.topology.graph import VertexKind

ROOT = Path(__file__).resolve().parents[1]
ICI = HardwareLibrary().link("ici-v4")
B = ICI.effective_Bps                 # one link, one direction: 45 GB/s
NCCL = HardwareLibrary().protocols()
STEP_S = (NCCL.hop_latency_us["nvlink"]["ring"][Protocol.SIMPLE] + ICI.latency_us) * 1e-6
BASE_S = NCCL.base_latency_us["ring"][Protocol.SIMPLE] * 1e-6


def tpu_torus(dims):
    return make_cluster(node="tpu-v4-chip", nodes=int(np.prod(dims)), link="ici-v4",
                        topology="torus", torus_dims=list(dims), chip_torus=True)


@pytest.fixture(scope="module")
def cube():
    return tpu_torus([4, 4, 4])


def _simple(cluster, op, group=None):
    group = group or whole_cluster(cluster)
    terms = NetworkCostModel(cluster).terms(build_schedule(op, Algorithm.TORUS, group))
    return next(t for t in terms if t.protocol == Protocol.SIMPLE)


def test_chip_torus_wires_every_chip_to_six_neighbours(cube):
    """Each chip hangs off its own router by 6 ICI lanes; each router has 6 torus neighbours."""
    graph = cube.graph
    routers = [v for v, k in graph.nodes(data="kind") if k == VertexKind.ROUTER]
    assert len(routers) == 64
    for r in routers:
        kinds = [graph.nodes[u]["kind"] for u in graph.successors(r)]
        assert kinds.count(VertexKind.ROUTER) == 6 and kinds.count(VertexKind.GPU) == 1
    chip = cube.gpu_vertex(0)
    router = next(u for u in graph.successors(chip) if graph.nodes[u]["kind"] == VertexKind.ROUTER)
    assert cube.bandwidth_Bps[graph[chip][router]["eid"]] == pytest.approx(6 * B)


@pytest.mark.parametrize("op, factor", [(Op.ALL_REDUCE, 2), (Op.REDUCE_SCATTER, 1),
                                        (Op.ALL_GATHER, 1)])
def test_torus_matches_closed_form_on_a_cube(cube, op, factor):
    """4x4x4: T = base + f m (p-1) (hop + wire) + f/2 n (1 - 1/P) / (m B), m = 3, p = 4,
    f = 2 for all-reduce (reduce-scatter then all-gather), 1 for either half."""
    m, p, chips = 3, 4, 64
    terms = _simple(cube, op)
    assert terms.seconds_per_byte == pytest.approx(factor / 2 * (1 - 1 / chips) / (m * B), rel=1e-9, abs=0)
    assert terms.latency_s == pytest.approx(BASE_S + factor * m * (p - 1) * STEP_S, rel=1e-9)


def test_uneven_axes_follow_the_stage_formula():
    """2x4x8: stage j waits for its longest ring; part k holds 1/(m prod of the axes it has
    already reduced over) of the message: per byte sum_j max_k held (p-1)/(2 p B), twice. An
    axis of two chips has one neighbour, one link each way, which both ring directions share:
    held (p-1)/(p B) there."""
    dims = [2, 4, 8]
    cluster = tpu_torus(dims)
    orders = [[0, 1, 2], [1, 2, 0], [2, 0, 1]]
    per_byte = steps = 0.0
    for j in range(3):
        held = [1 / 3 / np.prod([dims[a] for a in o[:j]]) for o in orders]
        per_byte += max(h * (dims[o[j]] - 1) / ((1 if dims[o[j]] == 2 else 2) * dims[o[j]] * B)
                        for h, o in zip(held, orders, strict=True))
        steps += max(dims[o[j]] - 1 for o in orders)
    terms = _simple(cluster, Op.ALL_REDUCE)
    assert terms.seconds_per_byte == pytest.approx(2 * per_byte, rel=1e-9, abs=0)
    assert terms.latency_s == pytest.approx(BASE_S + 2 * steps * STEP_S, rel=1e-9)


def test_sub_grid_group_runs_and_a_scattered_group_is_refused(cube):
    """A product of coordinate sets (the z = 0 plane) is a 2-D torus; chips 0, 1, 5 are not."""
    plane = Group(cube, tuple(range(0, 64, 4)))          # z = 0: x and y free
    terms = _simple(cube, Op.ALL_REDUCE, plane)
    assert terms.seconds_per_byte == pytest.approx((1 - 1 / 16) / (2 * B), rel=1e-9, abs=0)
    with pytest.raises(InfeasibleError, match="grid"):
        build_schedule(Op.ALL_REDUCE, Algorithm.TORUS, Group(cube, (0, 1, 5)))


def test_torus_is_refused_off_a_chip_torus_and_never_chosen_there(h100_node, h100_node_model):
    with pytest.raises(InfeasibleError, match="chip-level torus"):
        build_schedule(Op.ALL_REDUCE, Algorithm.TORUS, whole_cluster(h100_node))
    sweep = h100_node_model.sweep(Op.ALL_REDUCE, None, whole_cluster(h100_node), [2**10, 2**30])
    assert "torus" not in set(sweep.algorithm)


def test_4096_chip_pod_all_reduce_is_efficient():
    """The 16x16x16 pod: auto picks torus; at 16 GiB busbw is within 1% of 2 m B = 270 GB/s
    (every chip's six links busy), so the pod reduces at 4,096 x 270 GB/s = 1.1 PB/s, the
    all-reduce bandwidth Google quotes per TPU v4 pod; per chip it equals the 64-chip cube's
    (no loss with scale); the flat ring over the same chips reaches under a fifth of it."""
    pod = tpu_torus([16, 16, 16])
    model = CollectiveModel(pod)
    group = whole_cluster(pod)
    size = [16 * 2**30]
    auto = model.sweep(Op.ALL_REDUCE, None, group, size)
    assert auto.algorithm[0] == "torus"
    busbw = float(auto.busbw_Bps[0])
    assert busbw == pytest.approx(6 * B, rel=0.01)
    assert 4096 * busbw == pytest.approx(1.1e15, rel=0.02)
    cube_busbw = CollectiveModel(tpu_torus([4, 4, 4])).sweep(
        Op.ALL_REDUCE, None, whole_cluster(tpu_torus([4, 4, 4])), size).busbw_Bps[0]
    assert busbw == pytest.approx(float(cube_busbw), rel=0.01)
    ring = model.sweep(Op.ALL_REDUCE, Algorithm.RING, group, size)
    assert float(ring.busbw_Bps[0]) < busbw / 5


def _check(tmp_path: Path, capsys, cluster: dict) -> tuple[int, str]:
    path = tmp_path / "tpu.yaml"
    path.write_text(yaml.safe_dump({"cluster": cluster}))
    code = main(["check", str(path)])
    return code, capsys.readouterr().err.strip()


@pytest.mark.parametrize("cluster, fragment", [
    ({"node": "tpu-v4-chip", "nodes": 64, "fabric": {"topology": "fat-tree", "chip_torus": True}},
     "cluster.fabric.chip_torus: a chip-level torus needs cluster.fabric.topology: torus"),
    ({"node": "dgx-h100", "nodes": 4, "fabric": {"topology": "torus", "chip_torus": True,
                                                 "torus_dims": [2, 2]}},
     "cluster.fabric.chip_torus: a chip-level torus needs one chip per node"),
    ({"node": "tpu-v4-chip", "nodes": 64, "fabric": {"topology": "torus", "chip_torus": "yes"}},
     "cluster.fabric.chip_torus"),
    ({"node": "tpu-v4-chip", "nodes": 64, "fabric": {"topology": "torus", "chip_torus": True,
                                                     "torus_dims": [4, 4, 8]}},
     "cluster.fabric.torus_dims: [4, 4, 8] holds 128 nodes"),
])
def test_bad_chip_torus_is_one_line_and_exit_2(tmp_path, capsys, cluster, fragment):
    code, err = _check(tmp_path, capsys, cluster)
    assert code == 2
    assert len(err.splitlines()) == 1 and err.startswith(f"error: {tmp_path / 'tpu.yaml'}: ")
    assert fragment in err


def test_check_names_the_chip_torus(tmp_path, capsys):
    path = tmp_path / "tpu.yaml"
    path.write_text(yaml.safe_dump({"cluster": {"node": "tpu-v4-chip", "nodes": 64, "fabric": {
        "topology": "torus", "torus_dims": [4, 4, 4], "chip_torus": True}}}))
    assert main(["check", str(path)]) == 0
    assert "chip-level torus 4x4x4, 6 x ici-v4 per chip" in " ".join(capsys.readouterr().out.split())


def test_tpu_nodes_without_a_torus_are_told_how(tmp_path, capsys):
    code, err = _check(tmp_path, capsys, {"node": "tpu-v4-chip", "nodes": 8})
    assert code == 2
    assert err.endswith("cluster.nodes: 8 nodes need NICs but node 'tpu-v4-chip' has none; its "
                        "chips link directly: set cluster.fabric.topology: torus and chip_torus: true")


def test_init_writes_a_chip_torus_for_tpu_nodes(tmp_path, capsys):
    path = tmp_path / "tpu.yaml"
    assert main(["init", "-o", str(path), "--node", "tpu-v4-chip", "--nodes", "64"]) == 0
    fabric = yaml.safe_load(path.read_text())["cluster"]["fabric"]
    assert fabric == {"topology": "torus", "chip_torus": True}
    capsys.readouterr()
    assert main(["run", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gpus"] == 64


@pytest.mark.parametrize("n, d, dims", [(4096, 3, [16, 16, 16]), (2048, 3, [8, 16, 16]),
                                        (1024, 3, [8, 8, 16]), (96, 3, [4, 4, 6]),
                                        (12, 2, [3, 4]), (7, 3, [1, 1, 7])])
def test_balanced_dims(n, d, dims):
    assert balanced_dims(n, d) == dims


def test_scaling_a_chip_torus_reshapes_it():
    """clustersim scale / regress: a TPU pod at half and a quarter of its chips is a torus of
    8x16x16 and 8x8x16 chips (a server torus keeps its shape and is refused elsewhere)."""
    scenario = load_scenario(ROOT / "scenarios" / "llama3-70b-4096xTPUv4.yaml")
    points = plan_points(scenario, [1024, 2048], False, HardwareLibrary())
    assert [p.mapping["cluster"]["fabric"]["torus_dims"] for p in points] == [[8, 8, 16],
                                                                             [8, 16, 16]]
    assert [p.mapping["cluster"]["nodes"] for p in points] == [1024, 2048]
