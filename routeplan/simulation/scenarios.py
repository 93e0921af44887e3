"""Named events of one generated day (``routeplan generate --scenario NAME[:ARG]``).

Each scenario lasts the day it is given for; the next day is back to normal unless it is given
again. They apply to every generated stream.

* ``slow-worker:W`` — worker ``W`` is ``SLOWDOWN`` (4) times slower that day: every event it
  processes costs 4× the ``cost_ms``, and the workers file lists it with a quarter of its
  capacity. The nightly capacity estimate (``routeplan.model.capacity``, ``ĉ = M / B``: messages
  over the busy seconds their ``cost_ms`` add up to) sees a 4× slower worker, and so does a
  planner that reads the capacities the workers file fixes.
* ``hot-key[:SHARE]`` — a new hot key: a key from the colder half of the previous day's
  popularity (its last hour) takes ``SHARE`` (default 0.1) of the stream's messages, spread over
  the day. A producer routes it like any key: by its key group (it is not split in a table
  planned before it was hot).
* ``remove-worker:W`` — ``W`` is gone: it leaves the workers file, and no event names it. A
  producer following a table that still routes to ``W`` gets ``W`` from its router; its message
  is sent instead to one of the table's remaining workers chosen by the key's Murmur3 hash (seed
  ``REROUTE_SEED``; the partition number for a partition assignment), so each key (partition)
  moves to one survivor and ``W``'s load spreads evenly over them (should the table have no
  other worker, over the stream's remaining workers). Streams routed by hash key grouping spread
  the key groups over the remaining workers.

A name or argument the generator does not know is a usage error (exit 2), and so is a worker
that a stream does not have.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from routeplan.errors import UsageError
from routeplan.model.workers import Worker, Workers
from routeplan.parsing import probability

SLOWDOWN = 4.0  # slow-worker: cost_ms × this, capacity ÷ this
HOT_KEY_SHARE = 0.1  # hot-key's default share of the stream's messages
REROUTE_SEED = 2  # remove-worker: the hash seed that picks a survivor (partitions use 1)

SCENARIOS = {
    "slow-worker": (
        "W",
        f"worker W is {SLOWDOWN:g}x slower: its events' cost_ms x{SLOWDOWN:g} (what the learnt "
        f"capacities see) and its capacity in the workers file /{SLOWDOWN:g}",
    ),
    "hot-key": (
        "[SHARE]",
        "a key from the colder half of the previous day's popularity takes SHARE "
        f"(default {HOT_KEY_SHARE:g}) of each stream's messages",
    ),
    "remove-worker": (
        "W",
        "W leaves the workers file; a message a followed table routes to W goes to one of the "
        "table's remaining workers by the hash of its key (of its partition: a partition "
        "assignment); hash key grouping spreads over the remaining workers",
    ),
}


@dataclass(frozen=True)
class Scenario:
    """One scenario of the day: its name and argument (a worker, or hot-key's share)."""

    name: str
    arg: str | None = None

    def __post_init__(self) -> None:
        if self.name not in SCENARIOS:
            raise ValueError(f"unknown scenario {self.name!r}; known: {', '.join(SCENARIOS)}")
        if SCENARIOS[self.name][0] == "W" and not self.arg:
            raise ValueError(f"scenario {self.name} needs a worker: {self.name}:W")
        if self.name == "hot-key" and self.arg is not None:
            try:
                probability(self.arg)
            except argparse.ArgumentTypeError as err:
                raise ValueError(f"scenario hot-key: {err}") from None

    def __str__(self) -> str:
        return self.name if self.arg is None else f"{self.name}:{self.arg}"

    @property
    def share(self) -> float:
        """hot-key's share of the messages."""
        return HOT_KEY_SHARE if self.arg is None else float(probability(self.arg))


def scenario(text: str) -> Scenario:
    """``--scenario NAME[:ARG]`` as an argparse type: unknown names and bad arguments are
    ``argparse.ArgumentTypeError`` (exit 2)."""
    name, sep, arg = text.strip().partition(":")
    try:
        return Scenario(name.strip(), arg.strip() if sep else None)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def help_text() -> str:
    """One line per scenario, for ``routeplan generate --help``."""
    lines = []
    for name, (arg, what) in SCENARIOS.items():
        usage = f"{name}:{arg}" if arg == "W" else f"{name}{arg.replace('[', '[:')}"
        lines.append(
            textwrap.fill(what, 96, initial_indent=f"  {usage:<18} ", subsequent_indent=" " * 21)
        )
    return "\n".join(lines)


def workers_named(scenarios: Iterable[Scenario], name: str) -> set[str]:
    """The workers the scenarios called ``name`` name."""
    return {s.arg for s in scenarios if s.name == name and s.arg is not None}


def hot_keys(scenarios: Iterable[Scenario]) -> list[Scenario]:
    return [s for s in scenarios if s.name == "hot-key"]


def day_workers(
    stream: str,
    generated: Workers,
    table: Workers | None,
    scenarios: Sequence[Scenario],
) -> Workers:
    """The stream's workers that day, as the workers file lists them: the generated ones, then
    any of the followed table's that are not among them (with the table's capacity), less the
    removed ones, the slow ones ``SLOWDOWN`` times slower. ``UsageError`` when a scenario names
    a worker the stream does not have, or removes them all."""
    items = list(generated.items)
    if table is not None:
        known = set(generated.names)
        items += [Worker(w.name, w.capacity) for w in table.items if w.name not in known]
    names = {w.name for w in items}
    slow, removed = (
        workers_named(scenarios, "slow-worker"),
        workers_named(scenarios, "remove-worker"),
    )
    for worker in sorted((slow | removed) - names):
        listed = ", ".join(w.name for w in items)
        raise UsageError(f"stream {stream!r} has no worker {worker!r} (it has {listed})")
    kept = [
        Worker(w.name, w.capacity / SLOWDOWN if w.name in slow else w.capacity, w.state)
        for w in items
        if w.name not in removed
    ]
    if not any(w.state == "active" for w in kept):
        raise UsageError(f"stream {stream!r}: remove-worker leaves no worker")
    return Workers(tuple(kept))
