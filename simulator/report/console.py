"""The consoles the CLI prints through.

On a terminal rich fits tables to its width. Piped, redirected or in a CI log there is no
width to fit, and rich would assume 80 columns and cut cells short with an ellipsis; there
the console is :data:`PIPE_WIDTH` wide (or ``COLUMNS``, if wider), whatever width the
environment inherited from an interactive shell says.
"""

from __future__ import annotations

import os
import sys

from rich.console import Console

PIPE_WIDTH = 160
"""Columns of output written to a pipe or file: every shipped table fits without cutting."""


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def console(stderr: bool = False) -> Console:
    """A console for stdout (or stderr), :data:`PIPE_WIDTH` wide when not a terminal."""
    stream = sys.stderr if stderr else sys.stdout
    width = None
    if not _is_terminal(stream):
        columns = os.environ.get("COLUMNS", "")
        width = max(PIPE_WIDTH, int(columns) if columns.isdigit() else 0)
    return Console(stderr=stderr, width=width, highlight=False)
