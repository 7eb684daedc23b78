"""What the ``clustersim`` commands share: the stdout and stderr consoles, option types,
the note printed after writing a file, and the check that refuses options only the
discrete-event engine uses.

Used by :mod:`simulator.cli` and the command modules it registers; imports nothing of them.
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape
from rich.text import Text

from simulator.errors import UsageError
from simulator.pipeline import MAX_SEED, MAX_STEPS
from simulator.report.console import console

out = console()
err = console(stderr=True)

SCENARIO = click.Path(path_type=Path)
OUT_FILE = click.Path(path_type=Path, dir_okay=False)
STEPS = click.IntRange(1, MAX_STEPS)
SEED = click.IntRange(0, MAX_SEED)
QUIET = click.option("--quiet", "-q", is_flag=True, help="no progress bar")


def say(text: str) -> None:
    """A note about what was done (files written): stderr, so stdout stays the result."""
    err.print(escape(text), soft_wrap=True)


def warn(text: str) -> None:
    """One ``warning: ...`` line on stderr, so a JSON or CSV result on stdout stays whole."""
    err.print(Text.assemble(("warning: ", "bold yellow"), text), soft_wrap=True)


def check_des_options(engine: str, steps, seed, png, timeline: bool, attribute: bool = False) -> None:
    """Refuse options the chosen engine would ignore."""
    if engine == "des":
        return
    given = [name for name, value in (("--steps", steps), ("--png", png), ("--attribute", attribute or None))
             if value is not None]
    if seed is not None and not timeline:
        given.append("--seed")
    if given:
        verb = "applies" if len(given) == 1 else "apply"
        raise UsageError(f"{' and '.join(given)} {verb} to the discrete-event engine, but this run "
                         "uses the analytical engine; add --engine des")
