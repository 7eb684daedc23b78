"""Work that varies by micro-batch (issue 15, item 2): document lengths, packed or not,
attention priced per document (sum l^2) and the rest per token, on both DES paths and as
the mean micro-batch in the analytical engine."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from simulator.cli import main
from simulator.config import scenario_from_mapping
from simulator.config.variability import DocumentsConfig
from simulator.engine.analytical import simulate_step
from simulator.engine.des import simulate_steps_des
from simulator.errors import ConfigError
from simulator.pipeline import session_from_scenario
from simulator.workload.documents import DocumentStream, balanced, expected_work, microbatch_work

S = 8192
JITTER = {"straggler": {"distribution": "lognormal", "sigma": 0.02}}
LOGNORMAL = {"distribution": "lognormal", "mean_tokens": 2000.0, "sigma": 1.2}


def _data(documents=None, noise=None, **par) -> dict:
    training = {"global_batch": 32, "micro_batch": 1}
    if documents is not None:
        training["documents"] = documents
    return {"name": "docs", "cluster": {"node": "dgx-h100", "nodes": 2}, "model": {"preset": "llama3-8b"},
            "training": training, "parallelism": {"tp": 2, "pp": 4, **par},
            "simulate": {"engine": "des", "contention": False}, "noise": noise or {}}


def _session(documents=None, noise=None, **par):
    return session_from_scenario(scenario_from_mapping(_data(documents, noise, **par), "docs.yaml"))


def _steps(session, steps=12, path="fast", seed=None):
    return np.array(simulate_steps_des(session.scenario, session.collectives, steps=steps, path=path,
                                       seed=seed).step_times_s)


def _without_document_fields(result) -> dict:
    data = result.to_json_dict()
    data.pop("sequences")
    for stage in data["stages"]:
        for key in ("attention_forward_s", "attention_backward_s", "per_token_forward_s",
                    "per_token_backward_s"):
            stage.pop(key)
    return data


@pytest.mark.parametrize("documents", [
    {"distribution": "empirical", "lengths": [S]},
    {"distribution": "empirical", "lengths": [S, 3 * S], "packing": False}])
def test_documents_of_full_length_reproduce_the_fixed_length_job_exactly(documents):
    """t = a = 1 for every micro-batch: the analytical result and every DES step are the
    fixed-length job's, bit for bit."""
    fixed, varied = _session(noise=JITTER), _session(documents, JITTER)
    a = simulate_step(fixed.scenario, fixed.collectives)
    b = simulate_step(varied.scenario, varied.collectives)
    assert _without_document_fields(b) == _without_document_fields(a)
    assert b.sequences["mean_tokens_factor"] == 1.0 and b.sequences["mean_attention_factor"] == 1.0
    assert np.array_equal(_steps(varied), _steps(fixed))


def test_packed_documents_that_tile_the_sequence_have_attention_factor_l_over_s():
    """Documents of length L dividing S: S / L pieces of L^2 per sequence, a = L / S exactly."""
    for length in (1024, 4096):
        stream = DocumentStream(DocumentsConfig(distribution="empirical", lengths=[length]), S,
                                np.random.default_rng(0))
        t, a = stream.sequences(50)
        assert np.all(t == 1.0) and np.all(a == length / S)


def test_packed_stream_conserves_tokens_and_bounds_attention():
    """Packed: every sequence has S tokens, pieces of at most S, so 1/S <= a <= 1; the mean
    attention factor falls with shorter documents."""
    config = DocumentsConfig(**LOGNORMAL)
    t, a = DocumentStream(config, S, np.random.default_rng(1)).sequences(4000)
    assert np.all(t == 1.0) and np.all((a > 1.0 / S) & (a <= 1.0))
    short = DocumentsConfig(distribution="lognormal", mean_tokens=500.0, sigma=1.2)
    assert expected_work(short, S, 0)[1] < expected_work(config, S, 0)[1] < 1.0


def test_uniform_half_length_documents_give_the_analytical_step_closed_form():
    """Packed documents of S/2: every micro-batch has a = 1/2, so the DES without noise has
    no spread and equals the analytical step, whose stage chunks are F + A (1/2 - 1)."""
    fixed = _session()
    half = _session({"distribution": "empirical", "lengths": [S // 2]})
    a, b = simulate_step(fixed.scenario, fixed.collectives), simulate_step(half.scenario, half.collectives)
    for s0, s1 in zip(a.stages, b.stages, strict=True):
        assert s1.attention_forward_s > 0
        assert s1.forward_s == pytest.approx(s0.forward_s - 0.5 * s1.attention_forward_s, rel=1e-12)
        assert s1.backward_s == pytest.approx(s0.backward_s - 0.5 * s1.attention_backward_s, rel=1e-12)
    steps = _steps(half, 5)
    assert np.ptp(steps) == 0.0 and steps[0] == pytest.approx(b.step_time_s, rel=1e-12)


@pytest.mark.parametrize("packing", [True, False])
def test_the_step_waits_for_the_slowest_micro_batch(packing):
    """The step is a max-plus function of the task durations, so convex in them: the mean
    DES step is at least the analytical step at the mean micro-batch (Jensen), and steps vary."""
    session = _session({**LOGNORMAL, "packing": packing})
    mean = simulate_step(session.scenario, session.collectives).step_time_s
    steps = _steps(session, 30)
    assert steps.mean() >= mean and np.ptp(steps) > 0.01 * mean


def test_fast_path_equals_the_event_replay_and_a_seed_gives_one_result():
    for packing in (True, False):
        session = _session({**LOGNORMAL, "packing": packing}, JITTER)
        fast, event = _steps(session, 6), _steps(session, 6, path="event")
        assert np.allclose(fast, event, rtol=1e-9, atol=0.0)
        assert np.array_equal(fast, _steps(session, 6))
        assert not np.array_equal(fast, _steps(session, 6, seed=7))


def test_contention_replay_varies_with_the_documents():
    session = _session(LOGNORMAL)
    steps = simulate_steps_des(session.scenario, session.collectives, steps=3, contention=True).step_times_s
    uncontended = _steps(session, 3)
    assert np.all(np.array(steps) >= uncontended * (1 - 1e-9)) and np.ptp(steps) > 0


def test_unpacked_forward_and_backward_scale_differently():
    """Without packing a short document shrinks linears by t and attention by t^2; flash
    attention's backward is 2.5x its forward, the linears' 2x, so the two passes' ratios of
    the varying parts differ."""
    r = simulate_step(*(lambda s: (s.scenario, s.collectives))(_session({**LOGNORMAL, "packing": False})))
    stage = r.stages[1]
    assert stage.attention_backward_s / stage.attention_forward_s != pytest.approx(
        stage.per_token_backward_s / stage.per_token_forward_s, rel=0.05)
    t = r.sequences["mean_tokens_factor"]
    assert t < 1.0 and r.tokens_per_s == pytest.approx(32 * S * t / r.step_time_s, rel=1e-12)


def test_balancing_keeps_each_steps_sequences_and_evens_the_micro_batches():
    rng = np.random.default_rng(3)
    t, a = np.ones((5, 64)), rng.random((5, 64))
    bt, ba = balanced(t, a, 1.0, 4, 8)
    assert np.array_equal(np.sort(ba, axis=1), np.sort(a, axis=1))
    before = microbatch_work(t.reshape(5, 4, 16), a.reshape(5, 4, 16), 2)[1]
    after = microbatch_work(bt.reshape(5, 4, 16), ba.reshape(5, 4, 16), 2)[1]
    assert np.ptp(after.sum(axis=2), axis=1).max() < np.ptp(before.sum(axis=2), axis=1).min()
    assert np.ptp(after, axis=1).mean() < np.ptp(before, axis=1).mean()


@pytest.mark.parametrize("documents, expected", [
    ({"distribution": "lognormal"}, "lognormal needs mean_tokens"),
    ({"distribution": "empirical", "lengths": [10], "sigma": 1.0}, "empirical takes lengths"),
    ({"distribution": "empirical", "lengths": [0]}, "training.documents.lengths"),
    ({"distribution": "uniform", "lengths": [10]}, "training.documents.distribution"),
    ({"distribution": "lognormal", "mean_tokens": 100.0, "sigma": -1.0}, "training.documents.sigma"),
])
def test_bad_documents_exit_2_naming_the_key(tmp_path, capsys, documents, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(_data(documents)))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and expected in err[0], err
    with pytest.raises(ConfigError):
        session_from_scenario(scenario_from_mapping(_data(documents), "bad.yaml"))


def test_many_short_documents_are_drawn_in_bounded_batches():
    """One-token documents in 8,192-token sequences (8,192 documents a sequence): the expected
    work draws at most SAMPLE_DOCUMENTS documents (the exact a = 1/S, as every piece is one
    token), and a stream of many such sequences is packed in batches that give the same
    closed form, where drawing every document at once needed gigabytes."""
    ones = DocumentsConfig(distribution="empirical", lengths=[1])
    assert expected_work(ones, 8192, 0) == pytest.approx((1.0, 1.0 / 8192), rel=1e-12)
    t, a = DocumentStream(ones, 8192, np.random.default_rng(0)).sequences(1200)
    assert t.shape == a.shape == (1200,) and np.allclose(a, 1.0 / 8192, rtol=1e-12)
