"""Read the workers file (``schemas/worker.schema.json``) for one stream."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from jobs.common import log
from routeplan.model.workers import Worker, Workers
from routeplan.publishing.schemas import validate_document


def read_workers(path: Path | None, stream: str, seen: Iterable[str] = ()) -> Workers:
    """The stream's workers from the file; without a file (or an entry for the stream), the
    workers ``seen`` in the logs at capacity 1 — said in the job log, never silently."""
    if path is not None and path.is_file():
        doc = json.loads(path.read_text())
        validate_document("worker", doc, where=str(path))
        records = [r for r in doc["workers"] if r["stream"] == stream]
        if records:
            return Workers.from_records(records)
    names = sorted(w for w in seen if w != "(unrecorded)")
    if not names:
        raise SystemExit(f"no workers for stream {stream!r}: none in {path}, none in the logs")
    log(
        "workers",
        f"{stream}: no workers file entry; using {len(names)} logged workers at capacity 1",
    )
    return Workers(tuple(Worker(n) for n in names))
