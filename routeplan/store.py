"""The routing-table store on a file system: ``<root>/<stream>/v<N>.json`` plus ``LATEST``.

A version file is written once (temp file, fsync, hard link that fails if the name exists) and
never changed. ``LATEST`` holds the current file name and moves by an atomic rename, so a reader
sees the old or the new version, never a mix. Publishers of one stream take an exclusive lock
(``<stream>/.lock``), so two publishes never race for a version number or for ``LATEST``.
Rollback publishes a new version whose routing is an older one's. Old JSON files may be pruned
(``keep_versions``); Delta ``gold.routing_tables`` keeps every version.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import groupby
from pathlib import Path
from types import EllipsisType
from typing import Any

from routeplan.routing_table import RoutingTable
from routeplan.schemas import validate_document

_VERSION_FILE = re.compile(r"^v(\d+)\.json$")


def default_root() -> Path:
    """The routing store: ``$ROUTEPLAN_ROUTING``, else ``$ROUTEPLAN_HOME/routing`` (``./var``)."""
    if routing := os.environ.get("ROUTEPLAN_ROUTING"):
        return Path(routing)
    return Path(os.environ.get("ROUTEPLAN_HOME", "var")) / "routing"


class RoutingStore:
    """Versions of each stream's routing table under one root directory."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def streams(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if (p / "LATEST").is_file())

    def versions(self, stream: str) -> list[int]:
        folder = self.root / stream
        if not folder.is_dir():
            return []
        found = (_VERSION_FILE.match(p.name) for p in folder.iterdir())
        return sorted(int(m.group(1)) for m in found if m)

    def latest_version(self, stream: str) -> int | None:
        latest = self.root / stream / "LATEST"
        if not latest.is_file():
            return None
        return parse_latest(latest.read_text(), where=str(latest))

    def path(self, stream: str, version: int) -> Path:
        return self.root / stream / f"v{version}.json"

    def read_document(self, stream: str, version: int | None = None) -> dict[str, Any]:
        """A version's JSON (LATEST when ``version`` is None), schema-checked."""
        if version is None:
            version = self.latest_version(stream)
            if version is None:
                raise FileNotFoundError(f"no routing table published for stream {stream!r}")
        path = self.path(stream, version)
        if not path.is_file():
            kept = self.versions(stream)
            raise FileNotFoundError(
                f"no routing table v{version} for stream {stream!r} in {self.root} "
                f"(JSON versions kept: {version_runs(kept)}; "
                "Delta gold.routing_tables keeps them all)"
            )
        doc = json.loads(path.read_text())
        validate_document("routing_table", doc, where=str(path))
        return doc

    def load(self, stream: str, version: int | None = None) -> RoutingTable | None:
        """The table (checksum verified), or None when the stream has none yet."""
        if version is None and self.latest_version(stream) is None:
            return None
        return RoutingTable.from_document(self.read_document(stream, version))

    def publish(
        self,
        table: RoutingTable,
        now: datetime | None = None,
        reason: str | None = None,
        restored_version: int | None = None,
        expected_latest: int | None | EllipsisType = ...,
    ) -> RoutingTable:
        """Write ``table`` as the next version, move LATEST to it, return the published table.

        With ``expected_latest`` the publish is refused (``StaleLatestError``) unless LATEST
        still names that version (``None``: no version yet) — a plan made against an older table
        must not overwrite a newer one.
        """
        folder = self.root / table.stream
        folder.mkdir(parents=True, exist_ok=True)
        with _locked(folder / ".lock"):
            parent = self.latest_version(table.stream)
            if expected_latest is not ... and parent != expected_latest:
                raise StaleLatestError(
                    f"{table.stream}: expected LATEST v{expected_latest}, found v{parent}"
                )
            version = max(self.versions(table.stream), default=0) + 1
            created = (now or datetime.now(UTC)).isoformat(timespec="seconds")
            published = table.published(version, parent, created, reason, restored_version)
            doc = published.to_document()
            validate_document("routing_table", doc, where=f"{table.stream} v{version}")
            _write_once(self.path(table.stream, version), json.dumps(doc, indent=1) + "\n")
            _replace_atomically(folder / "LATEST", f"v{version}.json\n")
        return published

    def rollback(
        self, stream: str, version: int, reason: str, now: datetime | None = None
    ) -> tuple[RoutingTable, bool]:
        """Publish a new version that routes as ``version`` did; ``(table, published?)``.

        Nothing is published when LATEST already routes as ``version`` (then LATEST is
        returned with False). The new version's ``parent_version`` is the LATEST it replaces,
        ``restored_version`` names ``version`` and ``reason`` says why.
        """
        if not reason.strip():
            raise ValueError("a rollback needs a reason")
        target = self.load(stream, version)
        if target is None:
            raise FileNotFoundError(f"no routing table published for stream {stream!r}")
        return self.restore(target, reason, now)

    def restore(
        self, target: RoutingTable, reason: str, now: datetime | None = None
    ) -> tuple[RoutingTable, bool]:
        """``rollback`` to a table read elsewhere (e.g. from Delta when its JSON was pruned)."""
        latest = self.load(target.stream)
        if latest is not None and latest.same_routing(target):
            return latest, False
        restored = self.publish(
            target,
            now=now,
            reason=f"rollback to v{target.version}: {reason.strip()}",
            restored_version=target.version,
            expected_latest=None if latest is None else latest.version,
        )
        return restored, True

    def prune(self, stream: str, keep_versions: int) -> list[int]:
        """Delete all but the newest ``keep_versions`` JSON files (never LATEST's); the deleted."""
        if keep_versions < 1:
            raise ValueError(f"keep_versions must be >= 1, got {keep_versions}")
        folder = self.root / stream
        with _locked(folder / ".lock"):
            latest = self.latest_version(stream)
            versions = self.versions(stream)
            doomed = [v for v in versions[:-keep_versions] if v != latest]
            for version in doomed:
                self.path(stream, version).unlink()
            if doomed:
                _fsync_dir(folder)
        return doomed


def parse_latest(text: str, where: str = "LATEST") -> int:
    """The version a ``LATEST`` file names (``v3.json`` → 3); ValueError if it names none."""
    match = _VERSION_FILE.match(text.strip())
    if not match:
        raise ValueError(f"{where}: does not name a version file: {text.strip()!r}")
    return int(match.group(1))


class StaleLatestError(RuntimeError):
    """LATEST moved since the caller read it (another publish or rollback came first)."""


def version_runs(versions: list[int]) -> str:
    """``[1, 2, 3, 5]`` → ``"1–3, 5"``; ``"none"`` for no versions."""
    runs = [[v for _, v in run] for _, run in groupby(enumerate(versions), lambda p: p[1] - p[0])]
    return ", ".join(f"{r[0]}–{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs) or "none"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``path`` for the duration of the block."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _fsynced_temp(folder: Path, text: str) -> Path:
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    return Path(tmp)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_once(path: Path, text: str) -> None:
    tmp = _fsynced_temp(path.parent, text)
    try:
        os.link(tmp, path)  # fails with FileExistsError: a version is never rewritten
    finally:
        tmp.unlink()
    _fsync_dir(path.parent)


def _replace_atomically(path: Path, text: str) -> None:
    tmp = _fsynced_temp(path.parent, text)
    os.replace(tmp, path)
    _fsync_dir(path.parent)
