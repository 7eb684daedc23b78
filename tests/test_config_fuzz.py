"""Fuzzing the scenario loader: whatever the input, ``scenario_from_text`` returns a Scenario
or raises ConfigError with a one-line message naming the source, never anything else."""

from __future__ import annotations

import copy
import math
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scenario_maps import key_paths, value_at

from simulator.config import HardwareLibrary, Scenario, scenario_from_text
from simulator.config.presets import MODEL_PRESETS
from simulator.errors import ConfigError

SOURCE = "fuzz.yaml"
LIBRARY = HardwareLibrary()
FUZZ = settings(max_examples=200, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# A valid scenario that sets (nearly) every key, so mutations reach every part of the schema.
BASE: dict[str, Any] = {
    "name": "fuzz-base",
    "cluster": {
        "node": "dgx-a100-80gb", "nodes": 2, "gpus_per_node": 8,
        "fabric": {"topology": "fat-tree", "link": "ib-hdr", "nics_per_node": 8, "oversubscription": 1.0,
                   "switch_radix": 64},
    },
    "model": {"preset": "gpt3-175b", "layers": 96, "heads": 96, "kv_heads": 96, "mlp": "gelu",
              "seq_len": 2048, "experts": 1, "top_k": 1},
    "training": {"global_batch": 64, "micro_batch": 1, "dtype": "bf16"},
    "parallelism": {"tp": 8, "pp": 2, "dp": 1, "cp": 1, "ep": 1, "sequence_parallel": False,
                    "schedule": "interleaved-1f1b", "virtual_stages": 2, "zero_stage": 1,
                    "recompute": "none", "overlap_grad_reduce": True},
    "collectives": {"algorithm": {"all_reduce": "ring", "all_gather": "auto"}},
    "simulate": {"engine": "analytical", "contention": True, "steps": 1, "seed": 0},
    "noise": {"straggler": {"distribution": "lognormal", "sigma": 0.02}},
}
INLINE_NODE = {
    "name": "my-h100", "gpu": "h100-sxm", "gpus": 8, "fabric": {"kind": "nvswitch", "link": "nvlink4"},
    "pcie": {"link": "pcie5-x16"}, "nics": 8, "nic_link": "ib-ndr",
}
BASE_INLINE = {**copy.deepcopy(BASE), "cluster": {"node": INLINE_NODE, "nodes": 2,
                                                  "fabric": {"topology": "torus", "torus_dims": [1, 2]}}}

# Words the schema knows, so that random documents sometimes get past the first check.
WORDS = sorted({
    *MODEL_PRESETS, "dgx-a100-80gb", "dgx-h100", "dgx-h10", "pcie-a100x8", "ib-hdr", "ib-ndr", "nvlink4",
    "h100-sxm", "fat-tree", "rail-optimized", "single-switch", "torus", "gelu", "swiglu", "gpipe", "1f1b",
    "interleaved-1f1b", "none", "selective", "full", "analytical", "des", "fp32", "tf32", "bf16", "fp16",
    "fp8", "auto", "ring", "tree", "lognormal", "nvswitch", "mesh", "pcie", "all_reduce",
    *BASE, *BASE["cluster"], *BASE["cluster"]["fabric"], *BASE["model"], "hidden", "ffn_hidden", "vocab",
    *BASE["training"], *BASE["parallelism"], *BASE["simulate"], *INLINE_NODE, "tiers", "torus_dims",
})

small_ints = st.integers(min_value=-3, max_value=300)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    small_ints,
    st.integers(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.sampled_from([0, 1, 2, 3, 7, 8, 16, 96, 2**31, 2**63, 10**6, 10**6 + 1, 10**12 + 1, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 0.5, 1.0, 1.5, 2.0, 1e308, math.inf, -math.inf, math.nan]),
    st.text(max_size=24),
    st.sampled_from(WORDS),
)
keys = st.one_of(st.sampled_from(WORDS), st.text(max_size=12), small_ints, st.booleans(), st.none())
documents = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(keys, children, max_size=5)),
    max_leaves=24,
)
top_level = st.dictionaries(st.sampled_from(list(BASE)) | st.text(max_size=10), documents, max_size=6)

YAML_ALPHABET = st.sampled_from(list(":-?[]{},&*!|>'\"#%@`~ \n\t\r.0123456789xobeE+_abcnulltrue=<\\")
                                + ["!!int ", "!!bool ", "!!timestamp ", "!!float ", "!!binary ", "!!set ",
                                   "!!python/object ", "0x", "---\n", "...\n", "<<: ", "&a ", "*a",
                                   "cluster:\n  node: ", "dgx-h100", "\n  ", "\xff", "\ufeff", "\x85",
                                   "\u2028", "\x00"])


def assert_scenario_or_config_error(text: str | bytes) -> None:
    """The property: a Scenario, or a ConfigError whose message is one line naming the source."""
    try:
        result = scenario_from_text(text, SOURCE, LIBRARY)
    except ConfigError as exc:
        message = str(exc)
        assert message.startswith(f"{SOURCE}: "), message
        assert "\n" not in message and "\r" not in message, message
        assert "Traceback" not in message
        assert "set_int_max_str_digits" not in message, message
        assert len(message) < 2000, message[:200]
    else:
        assert isinstance(result, Scenario)


def dump(doc: Any) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


# (a) random documents and random text


@FUZZ
@given(documents)
def test_random_yaml_documents(doc: Any) -> None:
    assert_scenario_or_config_error(dump(doc))


@FUZZ
@given(top_level)
def test_random_top_level_mappings(doc: dict[Any, Any]) -> None:
    assert_scenario_or_config_error(dump(doc))


@FUZZ
@given(st.text(max_size=200))
def test_random_text(text: str) -> None:
    assert_scenario_or_config_error(text)


@FUZZ
@given(st.lists(YAML_ALPHABET, max_size=60).map("".join))
def test_random_yaml_like_text(text: str) -> None:
    assert_scenario_or_config_error(text)
    assert_scenario_or_config_error(text.encode("utf-8", errors="surrogatepass"))


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes(raw: bytes) -> None:
    assert_scenario_or_config_error(raw)


@FUZZ
@given(st.binary(max_size=40), st.integers(min_value=0, max_value=len(dump(BASE))))
def test_bytes_spliced_into_valid_scenario(raw: bytes, at: int) -> None:
    text = dump(BASE).encode()
    assert_scenario_or_config_error(text[:at] + raw + text[at:])


# (b) mutations of a valid scenario


def _containers(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Key paths of every mapping in ``doc`` (the root is ``()``)."""
    found = [prefix] if isinstance(doc, dict) else []
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        found.extend(_containers(value, (*prefix, key)))
    return found


@st.composite
def mutated_scenarios(draw: st.DrawFn) -> Any:
    doc = copy.deepcopy(draw(st.sampled_from([BASE, BASE_INLINE])))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        if action == "add":
            parent = value_at(doc, draw(st.sampled_from(_containers(doc))))
            parent[draw(keys)] = draw(documents)
            continue
        paths = key_paths(doc)
        if not paths:
            break
        *parent_path, key = draw(st.sampled_from(paths))
        parent = value_at(doc, tuple(parent_path))
        if action == "delete":
            del parent[key]
        else:
            parent[key] = draw(st.one_of(scalars, documents))
    return doc


@FUZZ
@given(mutated_scenarios())
def test_mutated_valid_scenario(doc: Any) -> None:
    assert_scenario_or_config_error(dump(doc))


def test_bases_are_valid() -> None:
    """The mutation tests start from valid scenarios (else they would only test one error)."""
    for base in (BASE, BASE_INLINE):
        assert isinstance(scenario_from_text(dump(base), SOURCE, LIBRARY), Scenario)
