"""YaRN's concentration factor read from a Megatron-LM log (simulator/measure/logged_rope.py)."""

import math
from dataclasses import replace
from pathlib import Path

import pytest

from simulator.measure.draft import draft_from_log
from simulator.measure.logged_rope import concentration, logged_rope
from simulator.measure.megatron_log import read_megatron_log

LOG = Path(__file__).resolve().parents[1] / "validation" / "training_logs"


def test_gpt_oss_factor_from_the_cli_defaults():
    """GPT-OSS's YaRN (``--rotary-scaling-factor 32``, ``--mscale`` and ``--mscale-all-dim`` at
    their CLI defaults 1 and 0): ``0.1 ln 32 + 1`` = 1.346574, the gpt-oss-120b preset's value."""
    args = {"position_embedding_type": "yarn", "rotary_scaling_factor": 32.0}
    assert logged_rope(args) == {"rope_concentration": pytest.approx(0.1 * math.log(32) + 1, abs=1e-6)}
    assert logged_rope(args)["rope_concentration"] == 1.346574


def test_equal_mscales_cancel_and_plain_rope_writes_nothing():
    """DeepSeek-style ``mscale`` = ``mscale_all_dim`` gives 1 (nothing written), as do plain
    rope, a scaling factor of at most 1, latent attention and a value that is not a number."""
    yarn = {"position_embedding_type": "yarn", "rotary_scaling_factor": 40.0}
    assert logged_rope({**yarn, "mscale": 1.0, "mscale_all_dim": 1.0}) == {}
    assert logged_rope({**yarn, "position_embedding_type": "rope"}) == {}
    assert logged_rope({**yarn, "rotary_scaling_factor": 1.0}) == {}
    assert logged_rope({**yarn, "multi_latent_attention": True}) == {}
    assert logged_rope({**yarn, "mscale": "auto"}) == {}


def test_concentration_closed_form():
    """``mscale(s, m) / mscale(s, m_all)`` with ``mscale(s, x) = 0.1 x ln s + 1``; None falls
    back to ``mscale(s, 1)``."""
    s = 40.0
    assert concentration(s, 0.707, 1.0) == pytest.approx((0.0707 * math.log(s) + 1) / (0.1 * math.log(s) + 1))
    assert concentration(s, None, 1.0) == pytest.approx(0.1 * math.log(s) + 1)


def test_import_log_writes_the_factor_into_the_draft():
    """A shipped log with YaRN's arguments added drafts ``model.rope_concentration``."""
    log = read_megatron_log(LOG / "primus-megatron_mixtral-8x7b_8x8-mi325x.log.gz")
    log = replace(log, arguments={**log.arguments, "position_embedding_type": "yarn",
                                  "rotary_scaling_factor": 32.0, "mscale": 1.0, "mscale_all_dim": 0.0})
    model = draft_from_log(log, "mi325x-platform", 8).scenario["model"]
    assert model["rope_concentration"] == 1.346574
