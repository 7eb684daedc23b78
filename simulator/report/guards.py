"""Checks every ``clustersim`` command gets before it does any work.

:class:`CheckedGroup` wraps each command added to it so that its output files (``-o``,
``--png``, ``--csv``, ``--timeline-png``, ``--write``; ``--trace`` of ``run``) are checked
(:func:`~simulator.export.atomic.check_output_path`) before the command's own code runs:
a missing or read-only folder, a folder given as a file, two options naming one file, or
an output that would overwrite one of the command's input files is one ``error:`` line and
exit status 2, before any simulation starts.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import click

from simulator.errors import UsageError
from simulator.export.atomic import check_output_path

OUTPUT_PARAMS = frozenset({"output", "png", "png_path", "csv_path", "timeline_png", "write"})
"""Parameter names that are output files in every command."""
COMMAND_OUTPUTS = {"run": frozenset({"trace"})}
"""Parameter names that are outputs only in one command (``compare --trace`` is an input)."""
STDOUT = "-"


def output_params(command: click.Command) -> list[click.Parameter]:
    """The parameters of ``command`` that name files it writes."""
    names = OUTPUT_PARAMS | COMMAND_OUTPUTS.get(command.name or "", frozenset())
    return [p for p in command.params if p.name in names]


def _is_file_value(value) -> bool:
    """A path the user gave (not None, not ``-`` for stdout, not a ``<default>`` sentinel)."""
    return isinstance(value, (str, Path)) and str(value) not in ("", STDOUT) \
        and not str(value).startswith("<")


def check_outputs(command: click.Command, values: dict) -> None:
    """Refuse ``command``'s output paths in ``values`` (its parsed parameters) that cannot or
    must not be written.

    Raises
    ------
    UsageError
        See the module docstring.
    """
    outputs = output_params(command)
    seen: dict[str, str] = {}
    for param in outputs:
        value = values.get(param.name)
        if not _is_file_value(value):
            continue
        option = "/".join(param.opts)
        check_output_path(value, option)
        key = os.path.realpath(value)
        if key in seen:
            raise UsageError(f"{seen[key]} and {option} name the same file '{value}'; give each its own")
        seen[key] = option
    for param in command.params:
        value = values.get(param.name)
        if param in outputs or not _is_file_value(value) or not Path(value).is_file():
            continue
        key = os.path.realpath(value)
        if key in seen:
            raise UsageError(f"{seen[key]}: '{value}' is this command's input; writing there would "
                             "overwrite it")


def guard(command: click.Command) -> click.Command:
    """Make ``command`` run :func:`check_outputs` before its callback (idempotent)."""
    callback = command.callback
    if callback is None or getattr(callback, "_outputs_checked", False):
        return command

    @functools.wraps(callback)
    def checked(*args, **kwargs):
        check_outputs(command, kwargs)
        return callback(*args, **kwargs)

    checked._outputs_checked = True
    command.callback = checked
    return command


class CheckedGroup(click.Group):
    """A click group whose commands all get :func:`guard`."""

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        super().add_command(guard(cmd), name)
