"""The routing-table store: ``<root>/<stream>/v<N>.json`` plus ``LATEST``, on a local file system
or on object storage (``s3://bucket/prefix``; ``s3a://`` names the same bucket).

A version file is written once and never changed. ``LATEST`` holds the current file name and
moves atomically, so a reader sees the old or the new version, never a mix. Rollback publishes a
new version whose routing is an older one's. Old JSON files may be pruned (``keep_versions``);
Delta ``gold.routing_tables`` keeps every version. One ``RoutingStore`` holds this logic over two
back ends (``routeplan.publishing.store_files``), chosen from the root
(``routeplan.storage.is_remote``):

* a local path: a version is a temp file, fsynced, then hard-linked to its name (the link fails
  if the name exists); ``LATEST`` moves by an atomic rename. Publishers of one stream take an
  exclusive lock (``<stream>/.lock``), so two publishes never race for a number or for LATEST.
  Every file written (versions, LATEST, HOLD) has the mode ``ROUTEPLAN_ROUTING_FILE_MODE`` says
  (0644: any user, e.g. a producer's, reads it), whatever the umask; a folder's mode is never
  changed.
* object storage (fsspec; conditional writes on S3): a PUT is atomic, so there are no temp files.
  A version is a conditional create (``If-None-Match: *``, refused when the object exists).
  ``LATEST`` is read with its ETag and moved by a conditional PUT (``If-Match`` on that ETag, or
  ``If-None-Match: *`` when there was none), refused when someone moved it first. There is no
  lock: a publish is optimistic. It reads LATEST, numbers the version max(stored) + 1 (the next
  one when the create is refused), creates it, then moves LATEST conditionally. When that move
  is refused, a publish with ``expected_latest`` raises ``StaleLatestError`` (its caller planned
  against an older table); one without retries from the top, up to ``PUBLISH_ATTEMPTS`` times
  (each refusal is another publish's success: progress, never a livelock). The version written
  by a refused attempt stays, never deleted: LATEST never names it, and ``doctor`` lists it as a
  harmless orphan. LATEST therefore only moves forward, two
  publishers never lose an update, and a reader never sees a torn table. ``doctor --fix`` moves
  a broken LATEST by the same conditional write; ``prune`` deletes objects. Other fsspec schemes
  (``gs://``, ``memory://``) are read the same way, but publishing needs S3's conditional writes.

A stream may be *held* (``hold``): ``<stream>/HOLD`` is a small JSON document (``reason``,
``created_at``, ``version``: the LATEST it holds), written whole (a rename on disk under the publish
lock, one PUT on object storage). While it exists a publish of a new routing is refused
(``HeldError``; the publish job records ``held``); a ``restore`` (rollback) is published and lifts
it, as does ``clear_hold``. On object storage, where there is no lock, a hold written while a
publish is in flight may be too late for it (that publish checked HOLD first): the hold's
``version`` then names the LATEST before it.

The regression guard keeps each stream's loop state beside its versions, one document per night
(``write_loop_state``, ``read_loop_state``, ``loop_nights``; ``routeplan.streams.loop_state``),
written whole like HOLD; its night must be a date before it becomes a file name.

A stream name becomes a folder, so every method that takes one refuses a name that breaks the
name rule (``routeplan.model.names``) with ``InvalidNameError`` before it touches storage.
Documents are read within ``routeplan.contracts.documents``' bounds (size, nesting). After a fault
— a garbage ``LATEST``, a publisher killed mid-way — ``doctor`` says what is wrong and repairs what
it safely can; a publish refuses to build on a broken ``LATEST`` and says to run it. A version
LATEST's history never named (``routeplan.publishing.store_doctor``: an orphan, never published)
is moved by ``doctor --fix`` to ``<stream>/unpublished/``; a publish numbers above those too, so
no number is given twice.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from itertools import groupby
from pathlib import Path
from types import EllipsisType
from typing import Any

from routeplan import storage
from routeplan.contracts.documents import DEFAULT_MAX_BYTES, parse_document
from routeplan.contracts.schemas import validate_document
from routeplan.errors import one_line
from routeplan.model.names import check_name, is_valid_name
from routeplan.model.table import Table, table_from_document
from routeplan.publishing.store_doctor import (
    UNPUBLISHED,
    DoctorReport,
    LatestState,
    Links,
    latest_history,
)
from routeplan.publishing.store_files import (
    HOLD,
    LATEST,
    LOOP_MAX_BYTES,
    TEMP_PREFIX,
    Files,
    LocalFiles,
    ObjectFiles,
    loop_name,
    loop_night,
)
from routeplan_client.sources import parse_latest

_VERSION_FILE = re.compile(r"^v(\d+)\.json$")
# on object storage: how often a publish tries when LATEST moved first. A retry starts at once:
# a pause would only let a publisher that publishes again and again starve the one that waits.
PUBLISH_ATTEMPTS = 50
HOLD_MAX_BYTES = 64 * 2**10  # a HOLD document is a few hundred bytes; more is garbage
MAX_HOLD_REASON = 2000  # characters of a hold's reason


class RoutingStore:
    """Versions of each stream's routing table under one root: a local directory or an
    object-store URI (``s3://bucket/prefix``, ``s3a://…``).

    ``max_bytes`` bounds the version files it reads (``routeplan.contracts.documents``);
    ``storage_options`` go to fsspec for a URI root (default: ``routeplan.storage``'s, from the
    AWS variables). ``file_mode`` is the mode of the files it writes on a local disk (default:
    the setting ``ROUTEPLAN_ROUTING_FILE_MODE``, 0644). ``root`` is the root as a string
    (``s3a://`` spelled ``s3://``).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        max_bytes: int = DEFAULT_MAX_BYTES,
        storage_options: Mapping[str, Any] | None = None,
        file_mode: int | None = None,
    ) -> None:
        self._files: Files = (
            ObjectFiles(os.fspath(root), storage_options)
            if storage.is_remote(root)
            else LocalFiles(root, file_mode)
        )
        self.root = self._files.root
        self.max_bytes = max_bytes

    @property
    def is_remote(self) -> bool:
        """True when the store is on object storage (no local paths, no lock)."""
        return isinstance(self._files, ObjectFiles)

    def folder(self, stream: str) -> str:
        """``<root>/<stream>``; ``InvalidNameError`` when ``stream`` breaks the name rule."""
        return self._files.location(check_name(stream))

    def streams(self) -> list[str]:
        """Streams with a ``LATEST`` (folders whose names break the name rule are skipped)."""
        return [s for s in self.stream_folders() if self._files.is_file(s, LATEST)]

    def stream_folders(self) -> list[str]:
        """Every folder under the root whose name obeys the name rule, with a LATEST or not."""
        return sorted(name for name in self._files.folders() if is_valid_name(name))

    def versions(self, stream: str) -> list[int]:
        return _version_numbers(self._files.names(check_name(stream)))

    def unpublished(self, stream: str) -> list[int]:
        """The versions ``doctor --fix`` set aside (``<stream>/unpublished/``): never published,
        never served; their numbers are never given again."""
        return _version_numbers(self._files.names(f"{check_name(stream)}/{UNPUBLISHED}"))

    def latest_version(self, stream: str) -> int | None:
        """The version ``LATEST`` names (None: no LATEST); ValueError when it names none."""
        found = self._files.read_latest(check_name(stream))
        if found is None:
            return None
        return parse_latest(found[0], where=self._files.location(stream, LATEST))

    def checked_latest(self, stream: str) -> int | None:
        """``latest_version``, and the version it names is stored; ``BrokenLatestError`` (with a
        short message, no path) when LATEST is garbage or names a file that is not there."""
        return self._checked_latest(stream)[0]

    def _checked_latest(self, stream: str) -> tuple[int | None, str | None]:
        """``checked_latest`` and the tag ``LATEST`` had (its ETag on object storage)."""
        found = self._files.read_latest(check_name(stream))
        if found is None:
            return None, None
        text, tag = found
        try:
            version = parse_latest(text)
        except ValueError as err:
            raise BrokenLatestError(stream, str(err)) from None
        if not self._files.is_file(stream, _version_name(version)):
            kept = f"versions {version_runs(self.versions(stream))}"
            raise BrokenLatestError(stream, f"LATEST names v{version}, not stored ({kept})")
        return version, tag

    def path(self, stream: str, version: int) -> Path:
        """The version's file on the local disk; ValueError for a store on object storage (read
        it with ``read_document`` or ``read_bytes``)."""
        if not isinstance(self._files, LocalFiles):
            raise ValueError(f"{self.root} is on object storage: its versions have no local path")
        return Path(self._files.location(check_name(stream), _version_name(version)))

    def identity(self, stream: str, version: int) -> tuple[Any, ...]:
        """What changes when the version's file is replaced (device, inode, size, mtime on disk;
        ETag and size on object storage): a cache's key. ``FileNotFoundError`` when not stored."""
        return self._files.identity(check_name(stream), _version_name(version))

    def read_bytes(self, stream: str, version: int) -> bytes:
        """The version file's bytes, at most ``max_bytes + 1`` (enough for ``parse_document`` to
        tell that it is too large); ``FileNotFoundError`` when it is not stored."""
        return self._files.read(check_name(stream), _version_name(version), self.max_bytes)

    def read_document(self, stream: str, version: int | None = None) -> dict[str, Any]:
        """A version's JSON (LATEST when ``version`` is None), bounded and schema-checked."""
        if version is None:
            version = self.latest_version(stream)
            if version is None:
                raise FileNotFoundError(f"no routing table published for stream {stream!r}")
        if not self._files.is_file(check_name(stream), _version_name(version)):
            kept = self.versions(stream)
            raise FileNotFoundError(
                f"no routing table v{version} for stream {stream!r} in {self.root} "
                f"(JSON versions kept: {version_runs(kept)}; "
                "Delta gold.routing_tables keeps them all)"
            )
        where = self._files.location(stream, _version_name(version))
        doc = parse_document(self.read_bytes(stream, version), where, self.max_bytes)
        validate_document("routing_table", doc, where=where)
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

        A held stream (``hold``) refuses a new routing (``HeldError``); a restore
        (``restored_version`` set, see ``restore``) is published and lifts the hold.

        With ``expected_latest`` the publish is refused (``StaleLatestError``) unless LATEST
        still names that version (``None``: no version yet) — a plan made against an older table
        must not overwrite a newer one. A LATEST that is garbage or names a missing file refuses
        every publish (``BrokenLatestError``) until ``routeplan doctor --fix`` repairs it. On
        object storage a publish without ``expected_latest`` that keeps losing the race for
        LATEST gives up after ``PUBLISH_ATTEMPTS`` tries (``StaleLatestError``).
        """
        stream = table.stream
        created = (now or datetime.now(UTC)).isoformat(timespec="seconds")
        with self._files.locked(check_name(stream), create=True):
            written: Table | None = None  # the last attempt's version: its move was refused
            for _ in range(PUBLISH_ATTEMPTS):
                if restored_version is None:  # a restore is how a person lifts a hold
                    hold = self.held(stream)
                    if hold is not None:
                        raise HeldError(stream, hold)
                parent, tag = self._checked_latest(stream)
                if written is not None and parent == written.version:
                    return written  # the refused move had landed (a retry after a lost answer)
                if expected_latest is not ... and parent != expected_latest:
                    raise StaleLatestError(
                        f"{stream}: expected LATEST v{expected_latest}, found v{parent}"
                    )
                version = max(self.versions(stream) + self.unpublished(stream), default=0) + 1
                while True:
                    published = table.published(version, parent, created, reason, restored_version)
                    doc = published.to_document()
                    validate_document("routing_table", doc, where=f"{stream} v{version}")
                    try:
                        self._files.create(stream, _version_name(version), _document_text(doc))
                        break
                    except FileExistsError:
                        if not self.is_remote:
                            raise
                        version += 1  # another publisher took the number
                if self._files.move_latest(stream, f"{_version_name(version)}\n", tag):
                    return published
                written = published  # someone moved LATEST first: an orphan; look again
        raise StaleLatestError(
            f"{stream}: LATEST moved during each of {PUBLISH_ATTEMPTS} attempts to publish"
        )

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
        self, target: Table, reason: str, now: datetime | None = None, lift_hold: bool = True
    ) -> tuple[Table, bool]:
        """``rollback`` to a table read elsewhere (e.g. from Delta when its JSON was pruned).

        A restore is how a person decides about a held stream: it is published despite the
        hold and then clears it (also when LATEST already routes as ``target``). The regression
        guard restores with ``lift_hold=False``: it never lifts a hold."""
        self.checked_latest(target.stream)  # a broken LATEST: say how to repair it
        latest = self.load(target.stream)
        if latest is not None and latest.same_routing(target):
            if lift_hold:
                self.clear_hold(target.stream)
            return latest, False
        restored = self.publish(
            target,
            now=now,
            reason=f"rollback to v{target.version}: {reason.strip()}",
            restored_version=target.version,
            expected_latest=None if latest is None else latest.version,
        )
        if lift_hold:
            self.clear_hold(target.stream)
        return restored, True

    def hold(
        self, stream: str, reason: str, now: datetime | None = None, by: str = "person"
    ) -> dict[str, Any]:
        """Hold ``stream``: write ``<stream>/HOLD`` (``{"reason", "created_at", "version",
        "by"}``, ``version`` the LATEST it holds, None before the first publish; ``by``:
        ``person`` or ``guard``, the regression guard) and return it.

        Until the hold is cleared (``clear_hold``, or a ``restore``) ``publish`` refuses every
        new routing of the stream with ``HeldError``; LATEST stays as it is. Holding a held
        stream replaces its document (the newest reason). The write is atomic on both back ends
        (a rename under the publish lock on disk, one PUT on object storage)."""
        check_name(stream)
        if by not in ("person", "guard"):
            raise ValueError(f"a hold is put by a person or the guard, not {by!r}")
        reason = reason.strip()
        if not reason:
            raise ValueError("a hold needs a reason")
        if len(reason) > MAX_HOLD_REASON:
            raise ValueError(f"a hold's reason has at most {MAX_HOLD_REASON} characters")
        with self._files.locked(stream, create=True):
            try:
                latest = self.latest_version(stream)
            except ValueError:  # a garbage LATEST: held all the same (doctor --fix repairs it)
                latest = None
            doc = {
                "reason": reason,
                "created_at": (now or datetime.now(UTC)).isoformat(timespec="seconds"),
                "version": latest,
                "by": by,
            }
            self._files.replace(stream, HOLD, json.dumps(doc, indent=1) + "\n")
        return doc

    def held(self, stream: str) -> dict[str, Any] | None:
        """``stream``'s HOLD document, or None when it is not held. A HOLD that cannot be read
        as one still holds: its ``reason`` then says what is wrong with it."""
        check_name(stream)
        try:
            raw = self._files.read(stream, HOLD, HOLD_MAX_BYTES)
        except FileNotFoundError:
            return None
        where = self._files.location(stream, HOLD)
        try:
            doc = parse_document(raw, HOLD, HOLD_MAX_BYTES)
            if not isinstance(doc, dict) or not isinstance(doc.get("reason"), str):
                raise ValueError(f"{HOLD}: not a hold document (no reason)")
        except ValueError as err:
            return {
                "reason": f"unreadable {where} ({one_line(err)})",
                "created_at": None,
                "version": None,
                "by": "person",
            }
        return {
            "reason": doc["reason"],
            "created_at": doc.get("created_at"),
            "version": doc.get("version"),
            "by": "guard" if doc.get("by") == "guard" else "person",  # unsaid: a person's
        }

    def holds(self) -> dict[str, dict[str, Any]]:
        """Every held stream folder → its HOLD document, by name."""
        found = {stream: self.held(stream) for stream in self.stream_folders()}
        return {stream: doc for stream, doc in found.items() if doc is not None}

    def clear_hold(self, stream: str) -> bool:
        """Lift ``stream``'s hold; False when it was not held."""
        check_name(stream)
        if not self._files.has_folder(stream):
            return False
        with self._files.locked(stream):
            if not self._files.is_file(stream, HOLD):
                return False
            self._files.delete(stream, [HOLD])
        return True

    def write_loop_state(self, stream: str, night: str, doc: Mapping[str, Any]) -> None:
        """Write the stream's loop state after ``night`` (``routeplan.streams.loop_state``) as
        ``<stream>/loop-<night>.json``, whole (a rename on disk, one PUT on object storage);
        a rerun of the night replaces it."""
        name = loop_name(night)
        with self._files.locked(check_name(stream), create=True):
            self._files.replace(stream, name, json.dumps(doc, indent=1, sort_keys=True) + "\n")

    def loop_nights(self, stream: str) -> list[str]:
        """The nights with a written loop state, oldest first."""
        check_name(stream)
        return sorted(n for n in map(loop_night, self._files.names(stream)) if n is not None)

    def read_loop_state(self, stream: str, night: str) -> dict[str, Any]:
        """The loop state written after ``night``; ``FileNotFoundError`` when there is none,
        ``ValueError`` when it is not a JSON object."""
        check_name(stream)
        name = loop_name(night)
        doc = parse_document(self._files.read(stream, name, LOOP_MAX_BYTES), name, LOOP_MAX_BYTES)
        if not isinstance(doc, dict):
            raise ValueError(f"{self._files.location(stream, name)}: not a JSON object")
        return doc

    def prune(self, stream: str, keep_versions: int) -> list[int]:
        """Delete all but the newest ``keep_versions`` JSON files (never LATEST's); the deleted."""
        check_name(stream)
        if keep_versions < 1:
            raise ValueError(f"keep_versions must be >= 1, got {keep_versions}")
        if not self._files.has_folder(stream):
            return []
        with self._files.locked(stream):
            latest = self.latest_version(stream)
            versions = self.versions(stream)
            doomed = [v for v in versions[:-keep_versions] if v != latest]
            self._files.delete(stream, [_version_name(v) for v in doomed])
        return doomed

    def doctor(self, stream: str, fix: bool = False) -> DoctorReport:
        """What is wrong with ``stream``'s files, under the publish lock; with ``fix``, repair
        what is safe and report the state after it (``fixed`` says what was done).

        Checks ``LATEST`` (missing, garbage, naming a missing or corrupt version), every version
        file (bounded JSON, schema, checksum, the stream and version it holds), temp files left
        by interrupted publishes and orphans: valid versions LATEST's history never named
        (``routeplan.publishing.store_doctor``), however many versions came after them — a
        publisher died between writing the file and moving LATEST, or lost the race for LATEST
        on object storage. ``fix`` removes temp files; only when LATEST is broken or missing, it
        points it at the newest valid version (on object storage by a conditional write: when
        LATEST moved meanwhile it is left as it is); then, LATEST whole, it moves the orphans to
        ``<stream>/unpublished/`` (on object storage only those below LATEST: one above may be a
        publish in flight). It never deletes a version file, never moves one LATEST's history
        names and never promotes an orphan over a valid LATEST.
        """
        check_name(stream)
        if not self._files.has_folder(stream):
            return self._inspect(stream)[0]
        with self._files.locked(stream):
            found, tag = self._inspect(stream)
            if not fix:
                return found
            done = []
            if found.temp_files:
                self._files.delete(stream, list(found.temp_files))
                done += [f"removed temp file {name}" for name in found.temp_files]
            if found.latest_problem and found.valid_versions:
                newest = found.valid_versions[-1]
                if self._files.move_latest(stream, f"{_version_name(newest)}\n", tag):
                    done.append(f"LATEST now names v{newest} ({found.latest_was})")
            found = self._inspect(stream)[0]
            if found.latest == "ok" and found.latest_version is not None:
                for version in found.orphan_versions:
                    name = _version_name(version)
                    if self.is_remote and version > found.latest_version:
                        # its publisher's conditional move of LATEST may still come
                        done.append(f"left v{version}: newer than LATEST, a publish in flight?")
                        continue
                    if self._files.set_aside(stream, name, UNPUBLISHED):
                        done.append(f"moved v{version} (never published) to {UNPUBLISHED}/{name}")
                    else:
                        done.append(f"left v{version}: {UNPUBLISHED}/{name} is another file")
            return replace(self._inspect(stream)[0], fixed=tuple(done))

    def _inspect(self, stream: str) -> tuple[DoctorReport, str | None]:
        """The report, and the tag of the LATEST it read (for a conditional repair)."""
        names = sorted(self._files.names(stream))
        links: dict[int, tuple[int | None, int | None]] = {}
        corrupt = []
        for version in _version_numbers(names):
            try:
                links[version] = self._check_version(stream, version)
            except (OSError, ValueError, KeyError, TypeError) as err:
                corrupt.append((version, one_line(err)))
        valid = sorted(links)
        latest: LatestState = "missing"
        named, detail, tag = None, "", None
        read = self._files.read_latest(stream) if LATEST in names else None
        if read is not None:
            text, tag = read
            try:
                named = parse_latest(text)
            except ValueError as err:
                latest, detail = "garbage", str(err)
            else:
                latest = "ok" if named in links else "missing_version"
                if any(version == named for version, _ in corrupt):
                    latest = "invalid_version"
        orphans, unknown, broken = _never_named(latest, named, links)
        report = DoctorReport(
            stream=stream,
            latest=latest,
            latest_version=named,
            latest_detail=detail,
            valid_versions=tuple(valid),
            corrupt_versions=tuple(corrupt),
            orphan_versions=orphans,
            unknown_versions=unknown,
            history_break=broken,
            temp_files=tuple(n for n in names if n.startswith(TEMP_PREFIX)),
            hold=self.held(stream) if HOLD in names else None,
        )
        return report, tag

    def _check_version(self, stream: str, version: int) -> tuple[int | None, int | None]:
        """Raise unless ``v<version>.json`` is whole: JSON, schema, checksum, what it says;
        its ``(parent_version, restored_version)``."""
        where = f"{stream}/{_version_name(version)}"
        doc = parse_document(self.read_bytes(stream, version), where, self.max_bytes)
        validate_document("routing_table", doc, where=where)
        table = table_from_document(doc)
        if (doc["stream"], doc["version"]) != (stream, version):
            raise ValueError(f"{where} holds {doc['stream']!r} v{doc['version']}")
        return table.parent_version, table.restored_version


def _never_named(
    latest: LatestState, named: int | None, links: Links
) -> tuple[tuple[int, ...], tuple[int, ...], int | None]:
    """``(orphans, unknown, where the history breaks)`` among the valid versions (``links``).

    Without LATEST every valid version is an orphan; with a garbage one nothing can be told. A
    LATEST naming a missing or corrupt version breaks its history at once: the versions above
    it are orphans (LATEST only moves forward), those below it unknown."""
    if latest == "garbage":
        return (), (), None
    if named is None:
        return tuple(sorted(links)), (), None
    history, broken = latest_history(named, links)
    outside = [v for v in sorted(links) if v not in history]
    orphans = tuple(v for v in outside if v > broken)
    return orphans, tuple(v for v in outside if v < broken), broken or None


class StaleLatestError(RuntimeError):
    """LATEST moved since the caller read it (another publish or rollback came first)."""


class HeldError(RuntimeError):
    """The stream is held (``RoutingStore.hold``): no new routing is published until a person
    clears the hold (``routeplan hold --clear``) or restores a version (a rollback)."""

    def __init__(self, stream: str, hold: Mapping[str, Any]) -> None:
        self.stream, self.hold = stream, dict(hold)
        self.reason = str(hold.get("reason") or "")
        held_at = f" at v{hold['version']}" if hold.get("version") is not None else ""
        super().__init__(
            f"stream {stream!r} is held{held_at} ({self.reason}); nothing new is published "
            f"until `routeplan hold --stream {stream} --clear` or a rollback"
        )


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


def _version_numbers(names: list[str]) -> list[int]:
    """The versions among file names (``v3.json`` → 3), sorted."""
    found = (_VERSION_FILE.match(name) for name in names)
    return sorted(int(m.group(1)) for m in found if m)


def _version_name(version: int) -> str:
    return f"v{version}.json"


def _document_text(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1) + "\n"
