"""Progress bars (rich, with ETA) on stderr, for the long loops: DES steps, ``scale`` points,
``validate`` sets, sweeps.

Shown only when stderr is a terminal and the user did not ask for ``--quiet``: never in a
pipe, a CI log or the tests (pytest captures stderr). Every bar is transient: it disappears
when its loop ends, so the output that follows is the same with or without it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Advance = Callable[..., None]


def enabled(quiet: bool = False) -> bool:
    """Whether a progress bar may be drawn: not ``quiet`` and stderr is a terminal."""
    if quiet:
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):   # replaced or closed stream
        return False


def _noop(steps: int = 1) -> None:
    return None


@contextmanager
def progress(description: str, total: int | None, show: bool) -> Iterator[Advance]:
    """A bar of ``total`` units (a spinner if None); yields ``advance(n=1)``.

    Parameters
    ----------
    description : str
        What is being done ("simulating steps").
    total : int or None
        Units of work; None when unknown.
    show : bool
        Draw it (see :func:`enabled`); otherwise ``advance`` does nothing.
    """
    if not show:
        yield _noop
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
               MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn()]
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=total)

        def advance(steps: int = 1) -> None:
            bar.advance(task, steps)

        yield advance
