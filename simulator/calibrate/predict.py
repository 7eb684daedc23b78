"""Predictions of measurement rows under a candidate overlay, fast enough to fit with.

A fit evaluates every row tens of times with different constants. Building a scenario's
cluster graph and pricing its collectives (routes, schedules) costs far more than one step
of the analytical engine once those are cached on the :class:`~simulator.cost.CollectiveModel`
(about 1 s against 13 ms for SC21's 3,072-GPU row). So each scenario is opened once, and an
overlay that changes only GPU constants reuses the opened session: the collective model is
shallow-copied (sharing its caches) with the new :class:`~simulator.config.GpuSpec` swapped
into its cluster's resolved hardware, which is where the compute model reads it. Collective
costs do not depend on GPU constants. An overlay that changes a link or protocol table the
scenario's cluster uses rebuilds that cluster (bandwidths and latencies are in its arrays); a
stack the scenario uses reloads the scenario. Results are memoised per row and the part of
the overlay its scenario reads, so a finite-difference step on one GPU's constant simulates
only the rows on that GPU.

Training rows use the analytical engine whatever the scenario's ``simulate.engine`` says.
A scenario's own ``calibration:`` key is ignored here: a fit starts from the library given.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from simulator.calibrate.rows import BUSBW, TRAINING_METRICS, Measurement
from simulator.config import HardwareLibrary, load_scenario
from simulator.config.overlay import CalibratedLibrary, Overlay
from simulator.config.stack import StackProfile
from simulator.cost import CollectiveModel
from simulator.engine.analytical import simulate_step
from simulator.errors import ConfigError
from simulator.pipeline import ClusterSession, session_from_scenario
from simulator.validation.compare import compare_log
from simulator.validation.nccl_log import NcclLog, read_nccl_log


class Predictor:
    """Predicted values of ``rows`` (in their metric's SI unit) under overlays of ``library``."""

    def __init__(self, rows: Sequence[Measurement], library: HardwareLibrary):
        self.rows = list(rows)
        self.library = library
        self.evaluations = 0
        self._sessions: dict[Path, ClusterSession] = {}
        self._logs: dict[Path, NcclLog] = {}
        self._memo: dict[tuple[str, int], float] = {}
        self._specs: dict[Path, dict[str, set[str]]] = {}

    def predict(self, overlay: dict[str, Any], indices: Sequence[int]) -> np.ndarray:
        """Predictions of the rows ``indices`` with ``overlay`` ({} for the library as is)."""
        keys = {i: (self._relevant_key(self.rows[i].scenario, overlay), i) for i in indices}
        missing = [i for i in indices if keys[i] not in self._memo]
        if missing:
            self.evaluations += 1
            library = (CalibratedLibrary(self.library, Overlay.from_mapping(overlay)) if overlay
                       else self.library)
            for path in dict.fromkeys(self.rows[i].scenario for i in missing):
                chosen = [i for i in missing if self.rows[i].scenario == path]
                try:
                    values = self._predict_scenario(path, chosen, library, overlay)
                except ConfigError as exc:
                    raise exc.with_source(str(path)) from None
                self._memo.update({keys[i]: value for i, value in zip(chosen, values, strict=True)})
        return np.array([self._memo[keys[i]] for i in indices])

    def _relevant_key(self, path: Path, overlay: dict[str, Any]) -> str:
        """The part of ``overlay`` that the scenario at ``path`` uses, as canonical text: rows
        of a scenario whose specs an overlay leaves alone are not simulated again."""
        used = self._used(path)
        part = {category: {name: entries[name] for name in sorted(entries) if name in used[category]}
                for category, entries in overlay.items()}
        return json.dumps(part, sort_keys=True)

    def _used(self, path: Path) -> dict[str, set[str]]:
        """Spec names per category that the scenario at ``path`` reads."""
        if path not in self._specs:
            session = self._base(path)
            hardware = session.hardware
            links = {link.name for link in (hardware.intra_link, hardware.pcie_link, hardware.nic_link)
                     if link is not None}
            self._specs[path] = {"gpus": {hardware.gpu.name, hardware.gpu.derived_from} - {""},
                                 "links": links, "protocols": {hardware.protocols.name},
                                 "stacks": {_stack_name(session.scenario)} - {None}}
        return self._specs[path]

    def _predict_scenario(self, path: Path, indices: list[int], library: HardwareLibrary,
                          overlay: dict[str, Any]) -> list[float]:
        session = self.session(path, library, overlay)
        result = None
        sweeps: dict[Path, Any] = {}
        values = []
        for i in indices:
            row = self.rows[i]
            if row.metric == BUSBW:
                if row.log not in sweeps:
                    sweeps[row.log] = compare_log(self._log(row.log), session.collectives)
                frame = sweeps[row.log]
                found = frame.loc[frame["size_bytes"] == row.size_bytes, "predicted_busbw_GBps"]
                values.append(float(found.iloc[0]) * 1e9)
            else:
                if result is None:
                    result = simulate_step(session.scenario, session.collectives)
                values.append(TRAINING_METRICS[row.metric](result))
        return values

    def session(self, path: Path, library: HardwareLibrary, overlay: dict[str, Any]
                ) -> ClusterSession:
        """The session of ``path`` under ``library`` (= the base library + ``overlay``)."""
        base = self._base(path)
        if not overlay:
            return base
        scenario, hardware = base.scenario, base.hardware
        if _stack_name(scenario) in overlay.get("stacks", {}):
            scenario = load_scenario(path, library)
        links = {link.name for link in (hardware.intra_link, hardware.pcie_link, hardware.nic_link)
                 if link is not None}
        if links & set(overlay.get("links", {})) or hardware.protocols.name in overlay.get("protocols", {}):
            return session_from_scenario(scenario, library)
        gpu = library.gpu(hardware.gpu.name)
        if gpu is hardware.gpu:
            return replace(base, scenario=scenario)
        collectives = with_gpu(base.collectives, gpu)
        return ClusterSession(scenario, collectives.cluster.hw, collectives.cluster, collectives)

    def _base(self, path: Path) -> ClusterSession:
        if path not in self._sessions:
            try:
                scenario = load_scenario(path, self.library)
                training = any(r.scenario == path and r.metric != BUSBW for r in self.rows)
                if training and (scenario.model is None or scenario.training is None):
                    raise ConfigError("'model' and 'training' sections are needed for a "
                                      "training metric", str(path), "model")
                self._sessions[path] = session_from_scenario(scenario, self.library)
            except ConfigError as exc:
                raise exc.with_source(str(path)) from None
        return self._sessions[path]

    def _log(self, path: Path) -> NcclLog:
        if path not in self._logs:
            self._logs[path] = read_nccl_log(path)
        return self._logs[path]


def with_gpu(collectives: CollectiveModel, gpu) -> CollectiveModel:
    """``collectives`` on the same cluster with ``gpu`` as its GPU spec; route, schedule and
    term caches are shared (collective costs do not read GPU constants)."""
    cluster = collectives.cluster
    swapped = copy.copy(collectives)
    swapped.cluster = replace(cluster, hw=replace(cluster.hw, gpu=gpu))
    return swapped


def _stack_name(scenario) -> str | None:
    stack = scenario.training.stack if scenario.training is not None else None
    return stack.name if isinstance(stack, StackProfile) else stack
