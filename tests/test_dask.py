"""clustersim search on Dask: a LocalCluster gives the rows of the local run, in order."""

from __future__ import annotations

import json

import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")

from simulator.cli import main  # noqa: E402
from simulator.config import scenario_from_text  # noqa: E402
from simulator.sweep.dask_runner import MIN_CHUNK, rechunk  # noqa: E402
from simulator.sweep.search import parse_sets, plan_tasks, scenario_points, search  # noqa: E402

SCENARIO = """\
name: tiny-dask
cluster: {node: dgx-a100-80gb, nodes: 2, fabric: {topology: fat-tree, link: ib-hdr}}
model: {preset: megatron-1.7b}
training: {global_batch: 64, micro_batch: 1}
parallelism: {tp: 2, pp: 2}
"""
FLAGS = {"tp": "1,2,4", "pp": "1,2,4", "micro_batch": "1,2,8"}


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as local:
        yield local


@pytest.fixture(scope="module")
def client(cluster):
    with distributed.Client(cluster) as connected:
        yield connected


def test_dask_rows_are_identical_to_the_local_run(client):
    scenario = scenario_from_text(SCENARIO)
    sets = parse_sets(["cluster.fabric.oversubscription=1,2"])
    local = search(scenario, flags=FLAGS, sets=sets)
    seen = []
    remote = search(scenario, flags=FLAGS, sets=sets, client=client,
                    progress=lambda done, total: seen.append((done, total)))
    pd.testing.assert_frame_equal(local.frame, remote.frame)
    pd.testing.assert_frame_equal(local.ranked, remote.ranked)
    assert seen and seen[-1][0] == seen[-1][1] == len(local.frame)


def test_chunks_are_large_and_keep_the_order():
    scenario = scenario_from_text(SCENARIO)
    from simulator.config import HardwareLibrary

    library = HardwareLibrary()
    points = scenario_points(scenario, parse_sets(["cluster.fabric.oversubscription=1,2"]), library)
    tasks = plan_tasks(points, None, {}, library, chunk=50)
    chunks = rechunk(tasks, workers=2)
    assert [lay for t in chunks for lay in t.layouts] == [lay for t in tasks for lay in t.layouts]
    for point in {t.point for t in chunks}:
        sizes = [len(t.layouts) for t in chunks if t.point == point]
        assert all(size >= MIN_CHUNK for size in sizes[:-1])


def test_cli_on_an_existing_scheduler(cluster, capsys, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    local_json, dask_json = tmp_path / "local.json", tmp_path / "dask.json"
    args = ["search", str(path), "--tp", "1,2", "--pp", "1,2", "--micro-batch", "1,2"]
    assert main([*args, "--json", str(local_json)]) == 0
    assert main([*args, "--json", str(dask_json), "--scheduler", cluster.scheduler_address]) == 0
    capsys.readouterr()
    assert json.loads(local_json.read_text()) == json.loads(dask_json.read_text())


def test_cli_local_cluster(capsys, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    code = main(["search", str(path), "--tp", "2", "--pp", "2", "--dask", "--workers", "1"])
    assert code == 0
    assert "best layouts" in capsys.readouterr().out


def test_unreachable_scheduler_or_bad_workers_exit_2(capsys, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    assert main(["search", str(path), "--dask", "--workers", "0"]) == 2
    assert "--workers" in capsys.readouterr().err
