"""The routing-table store on a file system: ``<root>/<stream>/v<N>.json`` plus ``LATEST``.

A version file is written once (temp file, fsync, hard link that fails if the name exists) and
never changed. ``LATEST`` holds the current file name and moves by an atomic rename, so a reader
sees the old or the new version, never a mix.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from routeplan.routing_table import RoutingTable
from routeplan.schemas import validate_document

_VERSION_FILE = re.compile(r"^v(\d+)\.json$")


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
        name = latest.read_text().strip()
        match = _VERSION_FILE.match(name)
        if not match:
            raise ValueError(f"{latest}: does not name a version file: {name!r}")
        return int(match.group(1))

    def path(self, stream: str, version: int) -> Path:
        return self.root / stream / f"v{version}.json"

    def read_document(self, stream: str, version: int | None = None) -> dict[str, Any]:
        """A version's JSON (LATEST when ``version`` is None), schema-checked."""
        if version is None:
            version = self.latest_version(stream)
            if version is None:
                raise FileNotFoundError(f"no routing table published for stream {stream!r}")
        path = self.path(stream, version)
        doc = json.loads(path.read_text())
        validate_document("routing_table", doc, where=str(path))
        return doc

    def load(self, stream: str, version: int | None = None) -> RoutingTable | None:
        """The table (checksum verified), or None when the stream has none yet."""
        if version is None and self.latest_version(stream) is None:
            return None
        return RoutingTable.from_document(self.read_document(stream, version))

    def publish(self, table: RoutingTable, now: datetime | None = None) -> RoutingTable:
        """Write ``table`` as the next version, move LATEST to it, return the published table."""
        folder = self.root / table.stream
        folder.mkdir(parents=True, exist_ok=True)
        parent = self.latest_version(table.stream)
        version = max(self.versions(table.stream), default=0) + 1
        created = (now or datetime.now(UTC)).isoformat(timespec="seconds")
        published = table.published(version, parent, created)
        doc = published.to_document()
        validate_document("routing_table", doc, where=f"{table.stream} v{version}")
        _write_once(self.path(table.stream, version), json.dumps(doc, indent=1) + "\n")
        _replace_atomically(folder / "LATEST", f"v{version}.json\n")
        return published


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
