"""The collective algorithm a scenario forces (``collectives.algorithm``).

``auto`` leaves the choice to the cost model (the fastest of NCCL's algorithms per size, as
NCCL's tuner). One algorithm name forces it for the collectives NCCL_ALGO governs
(all_reduce, reduce_scatter, all_gather, broadcast, reduce); all-to-all and send/receive
stay NCCL's peer-to-peer, as NCCL_ALGO leaves them (NCCL docs, "NCCL_ALGO"). A mapping
``{op: algorithm}`` forces per collective, all-to-all and sendrecv included.

Every place the training step prices a collective passes :func:`forced_algorithm` as the
``algorithm`` of :class:`~simulator.cost.collective.CollectiveModel`; both engines price
through them, so both honour it. The functions that only see the cost model (context- and
expert-parallel collectives, pipeline sends) read the choice :func:`bind` recorded on it.
A forced algorithm that cannot serve a group (NVLS without NVSwitch, tree for an
all-gather...) raises :class:`~simulator.errors.InfeasibleError`; :func:`infeasible_error`
turns it into the one-line :class:`~simulator.errors.ConfigError` naming the key.
"""

from __future__ import annotations

from simulator.collectives import Algorithm, Op
from simulator.config.scenario import CollectivesConfig, Scenario
from simulator.errors import ConfigError, InfeasibleError

NCCL_ALGO_OPS = frozenset({Op.ALL_REDUCE, Op.REDUCE_SCATTER, Op.ALL_GATHER, Op.BROADCAST,
                           Op.REDUCE})
"""The collectives a single algorithm name applies to (NCCL_ALGO's)."""

KEY = "collectives.algorithm"
_ATTRIBUTE = "forced_collectives"


def algorithm_for(config: CollectivesConfig | None, op: Op) -> Algorithm | None:
    """The algorithm ``config`` forces for ``op``, or None for the cost model's choice."""
    value = "auto" if config is None else config.algorithm
    if isinstance(value, str):
        name = value if op in NCCL_ALGO_OPS else "auto"
    else:
        name = value.get(Op(op).value, "auto")
    return None if name == "auto" else Algorithm(name)


def forced_algorithm(scenario: Scenario, op: Op) -> Algorithm | None:
    """The algorithm ``scenario``'s ``collectives.algorithm`` forces for ``op`` (None: auto).

    Examples
    --------
    ``algorithm: ring`` forces ring for all_reduce but not for all_to_all;
    ``algorithm: {all_to_all: direct}`` forces direct for all_to_all only.
    """
    return algorithm_for(scenario.collectives, op)


def forces_any(scenario: Scenario) -> bool:
    """Whether ``scenario`` forces an algorithm for any collective."""
    value = scenario.collectives.algorithm
    if isinstance(value, str):
        return value != "auto"
    return any(name != "auto" for name in value.values())


def bind(collectives, scenario: Scenario) -> None:
    """Record ``scenario``'s choice on the cost model ``collectives`` (for :func:`bound_algorithm`)."""
    setattr(collectives, _ATTRIBUTE, scenario.collectives)


def bound_algorithm(collectives, op: Op) -> Algorithm | None:
    """The algorithm the scenario last bound to ``collectives`` forces for ``op`` (None: auto)."""
    return algorithm_for(getattr(collectives, _ATTRIBUTE, None), op)


def infeasible_error(exc: InfeasibleError, scenario: Scenario, source: str | None = None
                     ) -> ConfigError | InfeasibleError:
    """``exc`` as a :class:`ConfigError` naming ``collectives.algorithm`` when the scenario
    forces an algorithm (the likely cause); ``exc`` itself otherwise."""
    if not forces_any(scenario):
        return exc
    value = scenario.collectives.algorithm
    shown = value if isinstance(value, str) else ", ".join(f"{k}: {v}" for k, v in value.items())
    return ConfigError(f"the forced algorithm ({shown}) cannot serve this run: {exc}; use auto, "
                       "or force it per collective, e.g. {all_reduce: ring}", source, KEY)
