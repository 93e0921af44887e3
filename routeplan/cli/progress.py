"""Progress bars on stderr for the CLI's long work (rich): shown only to a person at a terminal.

The library reports progress through an ``on_step(n)`` callback (``simulate``, ``generate``,
``replay_strategy``) and never imports rich; ``bar`` makes that callback here.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator

OnStep = Callable[[int], None]


def add_flag(parser: argparse.ArgumentParser) -> None:
    """``--no-progress``, on the subcommands that draw a bar."""
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (there is none either with --json or when stderr is not a terminal)",
    )


def wanted(args: argparse.Namespace) -> bool:
    """A bar only for a person: stderr is a terminal, and neither ``--json`` nor
    ``--no-progress`` was given."""
    quiet = getattr(args, "json", False) or getattr(args, "no_progress", False)
    return not quiet and sys.stderr.isatty()


@contextlib.contextmanager
def bar(args: argparse.Namespace, description: str, total: float | None) -> Iterator[OnStep | None]:
    """A transient bar on stderr while the block runs, and its ``on_step`` callback (advance by
    ``n``); ``total`` None is a spinner with the elapsed time. None (no callback) when no bar is
    ``wanted``."""
    if not wanted(args):
        yield None
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

    columns = (
        (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
        if total is None
        else (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
        )
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(description, total=total)
        yield lambda n: progress.advance(task, n)
