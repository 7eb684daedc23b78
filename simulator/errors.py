"""Typed errors that the CLI turns into one clear line and exit status 2.

Every user mistake raises a subclass of :class:`ClusterSimError`. The message
names the file, the key path and what was expected, e.g.::

    scenarios/bad.yaml: parallelism.tp: 5 does not divide model.heads (96)
"""

from __future__ import annotations


class ClusterSimError(Exception):
    """Base class of every error caused by user input (exit status 2)."""

    exit_code = 2


class ConfigError(ClusterSimError):
    """A scenario or hardware-spec file is malformed or inconsistent.

    Parameters
    ----------
    message : str
        What was expected, in the user's vocabulary.
    source : str, optional
        The file the value came from.
    key : str, optional
        Dotted key path inside that file (``parallelism.tp``).
    """

    def __init__(self, message: str, source: str | None = None, key: str | None = None):
        self.message = message
        self.source = source
        self.key = key
        super().__init__(self.render())

    def render(self, with_source: bool = True) -> str:
        """``source: key: message`` (those known); without ``with_source``, ``key: message``."""
        parts = [p for p in (self.source if with_source else None, self.key) if p]
        return ": ".join([*parts, self.message])

    def with_source(self, source: str) -> ConfigError:
        """Return a copy that names ``source`` when none was known."""
        return ConfigError(self.message, self.source or source, self.key)


class UsageError(ClusterSimError):
    """A command-line argument is invalid (unknown op, min > max, ...)."""


class InfeasibleError(ClusterSimError):
    """A request that is well-formed but cannot be served (e.g. NVLS without NVSwitch)."""


class ModelError(ClusterSimError):
    """The model produced a physically impossible result (a bug in clustersim, not in the
    input): never printed as a result; the CLI reports it on one line with exit status 3."""

    exit_code = 3
