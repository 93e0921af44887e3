"""The workers of one stream for the jobs: the workers file, else the workers the logs name."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from jobs.common import log
from routeplan.files import read_workers_file
from routeplan.model.workers import Worker, Workers


def read_workers(path: Path | None, stream: str, seen: Iterable[str] = ()) -> Workers:
    """The stream's workers from the workers file (``routeplan.files.read_workers_file``);
    without a file (or an entry for the stream), the workers ``seen`` in the logs at capacity 1
    — said in the job log, never silently."""
    if path is not None and path.is_file():
        workers = read_workers_file(path).get(stream)
        if workers is not None:
            return workers
    names = sorted(w for w in seen if w != "(unrecorded)")
    if not names:
        raise SystemExit(f"no workers for stream {stream!r}: none in {path}, none in the logs")
    log(
        "workers",
        f"{stream}: no workers file entry; using {len(names)} logged workers at capacity 1",
    )
    return Workers(tuple(Worker(n) for n in names))
