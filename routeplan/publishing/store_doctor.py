"""What ``RoutingStore.doctor`` finds in a stream's folder (``DoctorReport``) and the rule that
tells a published version from one that never was (``latest_history``).

A version is *published* when LATEST named it once. The store keeps no log of LATEST's moves;
the record is in the versions themselves: a publish writes, as its ``parent_version``, the LATEST
it replaces (read under the stream's lock on disk, moved only if still unchanged on object
storage), and a rollback names the version it restores (``restored_version``). So LATEST's
history is what LATEST names, what that version names as parent and restored version, and so on
down. A version none of them names was written and never published: its publisher was killed
between writing the file and moving LATEST (then the next publish, built on the same LATEST,
takes the next number: the two share a parent), or lost the race for LATEST on object storage.
That holds however many versions follow it.

The history can only be followed through versions that are stored and whole. A version number
is always above its parent's and its restored version's, so where the history reaches a version
that is pruned or corrupt, every version above that one is still judged, and those below it are
*unknown*: listed as such, never moved.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

LatestState = Literal["ok", "missing", "garbage", "missing_version", "invalid_version"]
UNPUBLISHED = "unpublished"  # <stream>/unpublished/: where ``doctor --fix`` sets orphans aside

# a version's links down its history: (parent_version, restored_version)
Links = Mapping[int, tuple[int | None, int | None]]


def latest_history(latest: int, links: Links) -> tuple[set[int], int]:
    """``(versions LATEST's history names, the highest of them that cannot be read or 0)``.

    ``links`` holds the links of every stored, whole version; a named version missing from it
    (pruned, corrupt) ends its branch of the history."""
    named: set[int] = set()
    unreadable, todo = 0, [latest]
    while todo:
        version = todo.pop()
        if version in named:
            continue
        named.add(version)
        if version not in links:
            unreadable = max(unreadable, version)
            continue
        todo += [v for v in links[version] if v is not None]
    return named, unreadable


@dataclass(frozen=True)
class DoctorReport:
    """One stream's files as ``RoutingStore.doctor`` found them (after ``fix``, if asked)."""

    stream: str
    latest: LatestState  # ok | missing | garbage | missing_version | invalid_version
    latest_version: int | None  # the version LATEST names, when it names one
    latest_detail: str = ""  # why LATEST is garbage
    valid_versions: tuple[int, ...] = ()
    corrupt_versions: tuple[tuple[int, str], ...] = ()  # (version, why)
    orphan_versions: tuple[int, ...] = ()  # valid, LATEST's history never named them
    unknown_versions: tuple[int, ...] = ()  # valid, below where LATEST's history breaks off
    temp_files: tuple[str, ...] = ()  # file names, left by interrupted publishes
    fixed: tuple[str, ...] = field(default=())  # what ``fix`` did
    hold: Mapping[str, Any] | None = None  # the HOLD document: no problem, listed
    history_break: int | None = None  # the highest version LATEST's history names, unreadable

    @property
    def latest_problem(self) -> str | None:
        """What is wrong with LATEST, or None (no LATEST and no version file is no problem)."""
        if self.latest == "garbage":
            return self.latest_detail
        if self.latest == "missing_version":
            return f"LATEST names v{self.latest_version}, not stored"
        if self.latest == "invalid_version":
            return f"LATEST names v{self.latest_version}, which is corrupt"
        if self.latest == "missing" and (self.valid_versions or self.corrupt_versions):
            return "LATEST is missing"
        return None

    @property
    def latest_was(self) -> str:
        """The broken LATEST in a few words, for what ``fix`` did."""
        return {
            "garbage": "it did not name a version file",
            "missing_version": f"it named v{self.latest_version}, not stored",
            "invalid_version": f"it named v{self.latest_version}, corrupt",
            "missing": "there was none",
        }.get(self.latest, "it was fine")

    @property
    def problems(self) -> tuple[str, ...]:
        """Everything that is wrong, one line each (orphans are not: they harm nothing)."""
        found = [self.latest_problem] if self.latest_problem else []
        found += [f"temp file {name} (left by an interrupted publish)" for name in self.temp_files]
        found += [f"v{version} is corrupt: {why}" for version, why in self.corrupt_versions]
        return tuple(found)

    @property
    def clean(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (``routeplan doctor --json``)."""
        return {
            "stream": self.stream,
            "clean": self.clean,
            "latest": self.latest,
            "latest_version": self.latest_version,
            "valid_versions": list(self.valid_versions),
            "corrupt_versions": [{"version": v, "error": why} for v, why in self.corrupt_versions],
            "orphan_versions": list(self.orphan_versions),
            "unknown_versions": list(self.unknown_versions),
            "history_break": self.history_break,
            "temp_files": list(self.temp_files),
            "problems": list(self.problems),
            "fixed": list(self.fixed),
            "hold": None if self.hold is None else dict(self.hold),
        }
