"""The routing-table store on a file system: ``<root>/<stream>/v<N>.json`` plus ``LATEST``.

A version file is written once (temp file, fsync, hard link that fails if the name exists) and
never changed. ``LATEST`` holds the current file name and moves by an atomic rename, so a reader
sees the old or the new version, never a mix. Publishers of one stream take an exclusive lock
(``<stream>/.lock``), so two publishes never race for a version number or for ``LATEST``.
Rollback publishes a new version whose routing is an older one's. Old JSON files may be pruned
(``keep_versions``); Delta ``gold.routing_tables`` keeps every version.

A stream name becomes a folder, so every method that takes one refuses a name that breaks the
name rule (``routeplan.model.names``) with ``InvalidNameError`` before it touches the file system.
Documents are read within ``routeplan.publishing.documents``' bounds (size, nesting). After a fault
— a garbage ``LATEST``, a publisher killed mid-way — ``doctor`` says what is wrong and repairs what
it safely can; a publish refuses to build on a broken ``LATEST`` and says to run it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from itertools import groupby
from pathlib import Path
from types import EllipsisType
from typing import Any, Literal

from routeplan.errors import one_line
from routeplan.model.names import check_name, is_valid_name
from routeplan.model.table import Table, table_from_document
from routeplan.publishing.documents import DEFAULT_MAX_BYTES, parse_document, read_limited
from routeplan.publishing.schemas import validate_document

_VERSION_FILE = re.compile(r"^v(\d+)\.json$")
TEMP_PREFIX = ".tmp-"
LATEST_MAX_BYTES = 256  # "v<N>.json\n" needs < 30; more is garbage, never read whole

LatestState = Literal["ok", "missing", "garbage", "missing_version", "invalid_version"]


class RoutingStore:
    """Versions of each stream's routing table under one root directory.

    ``max_bytes`` bounds the version files it reads (``routeplan.publishing.documents``).
    """

    def __init__(self, root: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = Path(root)
        self.max_bytes = max_bytes

    def folder(self, stream: str) -> Path:
        """``<root>/<stream>``; ``InvalidNameError`` when ``stream`` breaks the name rule."""
        return self.root / check_name(stream, "stream")

    def streams(self) -> list[str]:
        """Streams with a ``LATEST`` (folders whose names break the name rule are skipped)."""
        return [s for s in self.stream_folders() if (self.root / s / "LATEST").is_file()]

    def stream_folders(self) -> list[str]:
        """Every folder under the root whose name obeys the name rule, with a LATEST or not."""
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if is_valid_name(p.name) and p.is_dir())

    def versions(self, stream: str) -> list[int]:
        folder = self.folder(stream)
        if not folder.is_dir():
            return []
        found = (_VERSION_FILE.match(p.name) for p in folder.iterdir())
        return sorted(int(m.group(1)) for m in found if m)

    def latest_version(self, stream: str) -> int | None:
        """The version ``LATEST`` names (None: no LATEST); ValueError when it names none."""
        latest = self.folder(stream) / "LATEST"
        if not latest.is_file():
            return None
        return parse_latest(_read_latest(latest), where=str(latest))

    def checked_latest(self, stream: str) -> int | None:
        """``latest_version``, and the version it names is stored; ``BrokenLatestError`` (with a
        short message, no path) when LATEST is garbage or names a file that is not there."""
        latest = self.folder(stream) / "LATEST"
        if not latest.is_file():
            return None
        try:
            version = parse_latest(_read_latest(latest))
        except ValueError as err:
            raise BrokenLatestError(stream, str(err)) from None
        if not self.path(stream, version).is_file():
            kept = f"versions {version_runs(self.versions(stream))}"
            raise BrokenLatestError(stream, f"LATEST names v{version}, not stored ({kept})")
        return version

    def path(self, stream: str, version: int) -> Path:
        return self.folder(stream) / f"v{version}.json"

    def read_document(self, stream: str, version: int | None = None) -> dict[str, Any]:
        """A version's JSON (LATEST when ``version`` is None), bounded and schema-checked."""
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
        doc = parse_document(read_limited(path, self.max_bytes), str(path), self.max_bytes)
        validate_document("routing_table", doc, where=str(path))
        return doc

    def load(self, stream: str, version: int | None = None) -> Table | None:
        """The table of either kind (checksum verified), or None when the stream has none yet."""
        if version is None and self.latest_version(stream) is None:
            return None
        return table_from_document(self.read_document(stream, version))

    def publish(
        self,
        table: Table,
        now: datetime | None = None,
        reason: str | None = None,
        restored_version: int | None = None,
        expected_latest: int | None | EllipsisType = ...,
    ) -> Table:
        """Write ``table`` as the next version, move LATEST to it, return the published table.

        With ``expected_latest`` the publish is refused (``StaleLatestError``) unless LATEST
        still names that version (``None``: no version yet) — a plan made against an older table
        must not overwrite a newer one. A LATEST that is garbage or names a missing file refuses
        every publish (``BrokenLatestError``) until ``routeplan doctor --fix`` repairs it.
        """
        folder = self.folder(table.stream)
        folder.mkdir(parents=True, exist_ok=True)
        with _locked(folder / ".lock"):
            parent = self.checked_latest(table.stream)
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
    ) -> tuple[Table, bool]:
        """Publish a new version that routes as ``version`` did; ``(table, published?)``.

        Nothing is published when LATEST already routes as ``version`` (then LATEST is
        returned with False). The new version's ``parent_version`` is the LATEST it replaces,
        ``restored_version`` names ``version`` and ``reason`` says why.
        """
        self.folder(stream)
        if not reason.strip():
            raise ValueError("a rollback needs a reason")
        target = self.load(stream, version)
        if target is None:
            raise FileNotFoundError(f"no routing table published for stream {stream!r}")
        return self.restore(target, reason, now)

    def restore(
        self, target: Table, reason: str, now: datetime | None = None
    ) -> tuple[Table, bool]:
        """``rollback`` to a table read elsewhere (e.g. from Delta when its JSON was pruned)."""
        self.checked_latest(target.stream)  # a broken LATEST: say how to repair it
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
        folder = self.folder(stream)
        if keep_versions < 1:
            raise ValueError(f"keep_versions must be >= 1, got {keep_versions}")
        if not folder.is_dir():
            return []
        with _locked(folder / ".lock"):
            latest = self.latest_version(stream)
            versions = self.versions(stream)
            doomed = [v for v in versions[:-keep_versions] if v != latest]
            for version in doomed:
                self.path(stream, version).unlink()
            if doomed:
                _fsync_dir(folder)
        return doomed

    def doctor(self, stream: str, fix: bool = False) -> DoctorReport:
        """What is wrong with ``stream``'s files, under the publish lock; with ``fix``, repair
        what is safe and report the state after it (``fixed`` says what was done).

        Checks ``LATEST`` (missing, garbage, naming a missing or corrupt version), every version
        file (bounded JSON, schema, checksum, the stream and version it holds), temp files left
        by interrupted publishes and orphans (valid versions newer than LATEST: a publisher died
        between writing the file and moving LATEST). ``fix`` removes temp files and, only when
        LATEST is broken or missing, points it at the newest valid version. It never deletes a
        version file and never promotes an orphan over a valid LATEST.
        """
        folder = self.folder(stream)
        if not folder.is_dir():
            return self._inspect(stream)
        with _locked(folder / ".lock"):
            found = self._inspect(stream)
            if not fix:
                return found
            done = []
            for name in found.temp_files:
                (folder / name).unlink(missing_ok=True)
                done.append(f"removed temp file {name}")
            if found.latest_problem and found.valid_versions:
                newest = found.valid_versions[-1]
                _replace_atomically(folder / "LATEST", f"v{newest}.json\n")
                done.append(f"LATEST now names v{newest} ({found.latest_was})")
            if done:
                _fsync_dir(folder)
            return replace(self._inspect(stream), fixed=tuple(done))

    def _inspect(self, stream: str) -> DoctorReport:
        folder = self.folder(stream)
        names = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
        found = (_VERSION_FILE.match(name) for name in names)
        versions = sorted(int(m.group(1)) for m in found if m)
        valid, corrupt = [], []
        for version in versions:
            try:
                self._check_version(stream, version)
            except (OSError, ValueError, KeyError, TypeError) as err:
                corrupt.append((version, one_line(err)))
            else:
                valid.append(version)
        corrupt_versions = {version for version, _ in corrupt}
        latest: LatestState = "missing"
        named, detail = None, ""
        if (folder / "LATEST").is_file():
            try:
                named = parse_latest(_read_latest(folder / "LATEST"))
            except ValueError as err:
                latest, detail = "garbage", str(err)
            else:
                latest = "ok" if named in valid else "missing_version"
                if named in corrupt_versions:
                    latest = "invalid_version"
        orphans = () if latest == "garbage" else (v for v in valid if named is None or v > named)
        return DoctorReport(
            stream=stream,
            latest=latest,
            latest_version=named,
            latest_detail=detail,
            valid_versions=tuple(valid),
            corrupt_versions=tuple(corrupt),
            orphan_versions=tuple(orphans),
            temp_files=tuple(n for n in names if n.startswith(TEMP_PREFIX)),
        )

    def _check_version(self, stream: str, version: int) -> None:
        """Raise unless ``v<version>.json`` is whole: JSON, schema, checksum, what it says."""
        path = self.path(stream, version)
        where = f"{stream}/{path.name}"
        doc = parse_document(read_limited(path, self.max_bytes), where, self.max_bytes)
        validate_document("routing_table", doc, where=where)
        table_from_document(doc)
        if (doc["stream"], doc["version"]) != (stream, version):
            raise ValueError(f"{where} holds {doc['stream']!r} v{doc['version']}")


@dataclass(frozen=True)
class DoctorReport:
    """One stream's files as ``RoutingStore.doctor`` found them (after ``fix``, if asked)."""

    stream: str
    latest: LatestState  # ok | missing | garbage | missing_version | invalid_version
    latest_version: int | None  # the version LATEST names, when it names one
    latest_detail: str = ""  # why LATEST is garbage
    valid_versions: tuple[int, ...] = ()
    corrupt_versions: tuple[tuple[int, str], ...] = ()  # (version, why)
    orphan_versions: tuple[int, ...] = ()  # valid, newer than LATEST: never published
    temp_files: tuple[str, ...] = ()  # file names, left by interrupted publishes
    fixed: tuple[str, ...] = field(default=())  # what ``fix`` did

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
            "temp_files": list(self.temp_files),
            "problems": list(self.problems),
            "fixed": list(self.fixed),
        }


def parse_latest(text: str, where: str = "LATEST") -> int:
    """The version a ``LATEST`` file names (``v3.json`` → 3); ValueError if it names none."""
    match = _VERSION_FILE.match(text.strip())
    if not match:
        shown = text.strip()
        shown = repr(shown) if len(shown) <= 40 else repr(shown[:37]) + "…"
        raise ValueError(f"{where}: does not name a version file: {shown}")
    return int(match.group(1))


class StaleLatestError(RuntimeError):
    """LATEST moved since the caller read it (another publish or rollback came first)."""


class BrokenLatestError(ValueError):
    """LATEST is garbage or names a version that is not stored: ``routeplan doctor --fix``."""

    def __init__(self, stream: str, problem: str) -> None:
        self.stream, self.problem = stream, problem
        super().__init__(
            f"stream {stream!r}: {problem}; run `routeplan doctor --stream {stream} --fix`"
        )


def version_runs(versions: list[int]) -> str:
    """``[1, 2, 3, 5]`` → ``"1–3, 5"``; ``"none"`` for no versions."""
    runs = [[v for _, v in run] for _, run in groupby(enumerate(versions), lambda p: p[1] - p[0])]
    return ", ".join(f"{r[0]}–{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs) or "none"


def _read_latest(path: Path) -> str:
    """A ``LATEST`` file's text, at most ``LATEST_MAX_BYTES`` (+1) of it."""
    with open(path, "rb") as handle:
        return handle.read(LATEST_MAX_BYTES + 1).decode("utf-8", "replace")


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
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=TEMP_PREFIX)
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
