"""The best layout of a search written back as a scenario file (``clustersim search
--save-best FILE``): the searched scenario's own YAML with the winning layout's parallelism
keys, micro batch and ``--set`` values put in, and its ``search:`` section dropped, so that
``clustersim run FILE`` (or ``--engine des``, ``compare``, ``scale``) starts from it.
Everything else in the file is kept as written (relative paths too, so write it beside the
searched scenario when it names other files).

The file is validated before it is written: it loads as a scenario and gives the layout the
search ranked first.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from simulator.config import HardwareLibrary, scenario_from_mapping
from simulator.sweep.layouts import PARALLELISM_KEYS, TRAINING_KEYS, plain_value
from simulator.sweep.search import SearchResult, set_key

YAML_WIDTH = 92


def best_mapping(raw: dict, result: SearchResult) -> dict | None:
    """``raw`` (a scenario mapping) with the best layout of ``result`` written into it, without
    its ``search:`` section; None when no layout is feasible."""
    best = result.best
    if best is None:
        return None
    mapping = copy.deepcopy(raw)
    mapping.pop("search", None)
    for key in result.set_keys:     # as the search set them (model.preset loads the preset)
        mapping = set_key(mapping, key, _plain(best[key]))
    parallelism = mapping.setdefault("parallelism", {})
    for key in sorted(PARALLELISM_KEYS & set(best.index)):
        value = _plain(best[key])
        if value is None:
            parallelism.pop(key, None)
        else:
            parallelism[key] = value
    training = mapping.setdefault("training", {})
    for key in sorted(TRAINING_KEYS & set(best.index)):
        if (value := _plain(best[key])) is not None:
            training[key] = value
    return mapping


def best_scenario_text(raw: dict, result: SearchResult, source: Path,
                       library: HardwareLibrary) -> str | None:
    """YAML text of :func:`best_mapping` with a comment header naming the search and the
    best layout's headline figures; validated by loading it. None when nothing is feasible."""
    mapping = best_mapping(raw, result)
    if mapping is None:
        return None
    scenario_from_mapping(copy.deepcopy(mapping), str(source), library)   # raises if it does not load
    best = result.best
    header = [f"Written by 'clustersim search --save-best' from {source}:",
              f"the best of {len(result.frame):,} layouts by {result.objective}, "
              f"{best['tokens_per_s']:,.0f} tokens/s, step {best['step_time_s']:.3f} s, "
              f"MFU {best['mfu']:.1%}, {best['memory_per_gpu_bytes'] / 2**30:.1f} GiB per GPU."]
    body = yaml.safe_dump(mapping, sort_keys=False, default_flow_style=False, width=YAML_WIDTH,
                          allow_unicode=True)
    return "".join(f"# {line}\n" for line in header) + body


def _plain(value: Any) -> Any:
    """A search frame cell as a YAML scalar (:func:`~simulator.sweep.layouts.plain_value`),
    whole floats as int (a column with missing cells is float) and enums by value."""
    value = plain_value(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return getattr(value, "value", value)
