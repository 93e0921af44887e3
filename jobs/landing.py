"""ingest's landing files: the interval's files under ``<landing>/<YYYY-MM-DD>/``, their format
by suffix, and the whole-file checks — a file that cannot be read at all (unknown type, corrupt
gzip or Parquet, a CSV header that is not UTF-8 or names a column twice) goes to quarantine
whole, named by ``probe`` before reading or by ``unreadable_file`` from Spark's failure."""

from __future__ import annotations

import csv
import gzip
import io
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from jobs.common import RunArgs
from routeplan import storage
from routeplan.errors import one_line

SUFFIXES = {
    ".jsonl": "jsonl",
    ".json": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
}


@dataclass(frozen=True)
class LandingFile:
    path: str  # what Spark and ``routeplan.storage`` read: an absolute local path or s3a://…
    uri: str  # as Spark names it in ``_metadata.file_path`` (``file:/…`` or ``s3a://…``)
    fmt: str | None  # None: unknown type
    gzip: bool


def landing_files(landing: str, args: RunArgs) -> list[LandingFile]:
    """Every file under the interval's day folders of the ``landing`` location (a local folder
    or a URI; files whose names start with ``.`` or ``_`` are skipped)."""
    found = []
    for day in args.days():
        for location in storage.list_files(storage.join(landing, day.isoformat())):
            name = PurePosixPath(location)
            if name.name.startswith((".", "_")):
                continue
            gz = name.suffix == ".gz"
            suffixes = name.suffixes[-2:] if gz else name.suffixes[-1:]
            fmt = SUFFIXES.get(suffixes[0] if suffixes else "")
            path = storage.spark_uri(location)
            uri = path if storage.is_remote(path) else f"file:{path}"
            found.append(LandingFile(path, uri, fmt, gz))
    return found


def probe(file: LandingFile) -> tuple[str | None, object]:
    """``(reason the file cannot be read, None)`` or ``(None, what reading it needs)``.

    The driver reads only what it must: a CSV's header line, a Parquet file's footer (through
    ``routeplan.storage``, wherever the file is). Damage further in is found by Spark while
    reading (see ``unreadable_file``).
    """
    if file.fmt is None:
        return f"unknown file type (expected {', '.join(sorted(SUFFIXES))}, optionally .gz)", None
    if file.fmt == "parquet" and file.gzip:
        return "gzip-compressed Parquet is not supported (Parquet compresses itself)", None
    if file.gzip and not storage.read_bytes(file.path, limit=0):
        return "empty .gz file (0 bytes is not a gzip stream)", None
    if file.fmt == "csv":
        return _csv_header(file)
    if file.fmt == "parquet":
        import pyarrow.parquet as pq

        fs, path = storage.filesystem(file.path)
        try:
            with fs.open(path, "rb") as handle:
                schema = pq.read_schema(handle)
        except Exception as error:  # noqa: BLE001 - any failure means "not readable Parquet"
            return f"not a readable Parquet file: {one_line(error)}", None
        return None, tuple((f.name, str(f.type)) for f in schema)
    return None, None


def _csv_header(file: LandingFile) -> tuple[str | None, object]:
    fs, path = storage.filesystem(file.path)
    try:
        with fs.open(path, "rb") as raw:
            handle = gzip.GzipFile(fileobj=raw) if file.gzip else raw
            first = handle.readline()
    except (OSError, EOFError) as error:
        return f"unreadable gzip file: {one_line(error)}", None
    try:
        text = first.decode("utf-8-sig")  # a byte-order mark is not part of the first name
    except UnicodeDecodeError as error:
        return f"CSV header is not UTF-8 (byte {error.start}: {first[error.start :][:4]!r})", None
    if not text.strip():
        return None, ()  # an empty file: no rows
    header = next(csv.reader(io.StringIO(text)))
    twice = sorted({h for h in header if header.count(h) > 1})
    if twice:
        return f"CSV header names a column twice: {', '.join(map(repr, twice))}", None
    return None, tuple(header)


_FAILED_FILE = re.compile(r"Encountered error while reading file (\S+?)\.?(?:\s|$)")
_CAUSE = re.compile(r"Caused by: ([\w.$]+(?:Exception|Error)[^\n]*)")


def unreadable_file(error: Exception, files: dict[str, LandingFile]) -> tuple[str, str] | None:
    """``(uri, reason)`` when Spark failed on reading one of ``files`` (FAILED_READ_FILE)."""
    text = str(error)
    match = _FAILED_FILE.search(text)
    if not match:
        return None
    uri = re.sub(r"^file:/+", "file:/", match.group(1))  # the form of _metadata.file_path
    if uri not in files:
        return None
    causes = _CAUSE.findall(text)
    cause = causes[-1] if causes else text.splitlines()[0]
    return uri, f"unreadable file: {one_line(cause)}"
