"""Input files read one way for the whole library — the command line, the simulator and the
Spark jobs — and JSON written one way.

* ``read_rows``: the rows of a CSV file (header row) or a JSON Lines file (loads files, rates,
  flows);
* ``read_json``: one JSON document, within ``routeplan.contracts.documents``' size and depth
  bounds, from a local path or an object-store URI (``routeplan.storage``);
* ``read_workers_file``: the workers file (``schemas/worker.schema.json``, a path or URI), each
  stream's ``Workers`` (``read_workers_and_learn``: and the workers whose capacity is ``auto``);
* ``json_text``: strict JSON output (never NaN or Infinity).

Every error met while reading an input file becomes an ``InputError`` whose message starts with
the file (``path:line:`` when the line is known): a missing or unreadable file, bytes that are
not UTF-8, an empty CSV, a line that is not JSON, a row that breaks the file's rules.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
import math
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from routeplan import storage
from routeplan.contracts.documents import check_bounds, read_limited
from routeplan.contracts.schemas import validate_document
from routeplan.errors import InputError, OutputError, UsageError
from routeplan.model.workers import Workers

__all__ = [
    "JSON_LINES_SUFFIXES",
    "Row",
    "json_text",
    "read_json",
    "read_rows",
    "read_workers_and_learn",
    "read_workers_file",
    "reading",
]

JSON_LINES_SUFFIXES = (".jsonl", ".json", ".ndjson")


class Row(dict[str, Any]):
    """One row of an input file (column → value) and the line it came from (1-based)."""

    __slots__ = ("line",)

    def __init__(self, values: dict[str, Any], line: int) -> None:
        super().__init__(values)
        self.line = line


def where(path: str | Path, row: Row | None = None) -> str:
    """``path`` or ``path:line`` for messages."""
    line = getattr(row, "line", None)
    return f"{path}:{line}" if line else str(path)


@contextlib.contextmanager
def reading(path: str | Path) -> Iterator[None]:
    """Turn what goes wrong while reading ``path`` into an ``InputError`` naming it."""
    try:
        yield
    except (InputError, UsageError):
        raise
    except FileNotFoundError as err:
        if err.filename is None:  # raised with its own message (e.g. by the routing store)
            raise
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a file") from None
    except UnicodeDecodeError as err:
        line = _decode_error_line(path)
        raise InputError(f"{path}{line}: not UTF-8 text ({err.reason})") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except (OSError, EOFError, ValueError, csv.Error) as err:
        text = str(err).strip() or type(err).__name__
        if type(err).__name__ == "EmptyDataError":  # pandas: an empty CSV file
            text = "empty file (no header row)"
        raise InputError(text if text.startswith(str(path)) else f"{path}: {text}") from None


def _decode_error_line(path: str | os.PathLike[str]) -> str:
    """``:line`` of the first byte of ``path`` (gunzipped) that is not UTF-8, or ``""``."""
    try:
        data = storage.read_bytes(path)
        if str(path).endswith(".gz"):
            data = gzip.decompress(data)
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        newline = b"\n"
        return f":{data[: err.start].count(newline) + 1}"
    except (OSError, EOFError):
        pass
    return ""


def read_rows(path: Path) -> list[Row]:
    """Rows of a CSV file (header row) or a JSON Lines file (one object a line)."""
    with reading(path):
        text = path.read_text(encoding="utf-8")
        if path.suffix in JSON_LINES_SUFFIXES:
            return _json_lines(path, text)
        return _csv_rows(path, text)


def read_rows_with(path: Path, columns: Sequence[str], nothing: str) -> list[Row]:
    """``read_rows`` of a file that must hold rows (else an ``InputError``: ``nothing`` names
    what it lacks) and ``columns`` in its first row (else an ``InputError`` naming them and
    the columns found)."""
    rows = read_rows(path)
    if not rows:
        raise InputError(f"{path}: no {nothing}")
    missing = [c for c in columns if c not in rows[0]]
    if missing:
        raise InputError(
            f"{where(path, rows[0])}: no {' or '.join(missing)} column "
            f"(found: {', '.join(map(str, rows[0])) or 'none'})"
        )
    return rows


def _json_lines(path: Path, text: str) -> list[Row]:
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(f"{path}:{number}: not JSON Lines: {err.msg}") from None
        if not isinstance(record, dict):
            raise InputError(f"{path}:{number}: expected a JSON object, got {line.strip()[:40]!r}")
        rows.append(Row(record, number))
    return rows


def _csv_rows(path: Path, text: str) -> list[Row]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows = []
    for record in reader:
        if None in record:  # more fields than the header
            raise InputError(
                f"{path}:{reader.line_num}: {len(reader.fieldnames or ()) + len(record[None])} "
                f"fields, the header has {len(reader.fieldnames or ())}"
            )
        rows.append(Row(record, reader.line_num))
    return rows


def read_json(path: str | os.PathLike[str]) -> Any:
    """The JSON document in ``path`` (a local path or a URI), within
    ``routeplan.contracts.documents``' size and depth bounds."""
    with reading(path):
        data = read_limited(path)
        try:
            check_bounds(data, str(path))
        except ValueError as err:
            raise InputError(str(err)) from None
        try:
            return json.loads(data.decode("utf-8"))
        except json.JSONDecodeError as err:
            raise InputError(f"{path}:{err.lineno}: not JSON: {err.msg}") from None


def read_workers_file(path: str | os.PathLike[str]) -> dict[str, Workers]:
    """Each stream's ``Workers`` in the workers file at ``path`` (``schemas/worker.schema.json``),
    streams in file order. The file is checked whole: ``InputError`` naming it when it is
    missing, not JSON, breaks the schema, or lists a stream's workers twice or none of them
    active. A capacity ``auto`` (or absent) reads as 1 here; the Spark jobs learn it from the
    logs (``read_workers_and_learn``, ``jobs.workers.resolve_workers``)."""
    return read_workers_and_learn(path)[0]


def read_workers_and_learn(
    path: str | os.PathLike[str],
) -> tuple[dict[str, Workers], dict[str, frozenset[str]]]:
    """``read_workers_file``'s workers and, per stream, the workers whose capacity is to be
    learnt from the logs (``"capacity": "auto"`` or no capacity): they hold capacity 1 in the
    ``Workers`` until a job resolves them (``routeplan.model.capacity``)."""
    path = os.fspath(path)
    doc = read_json(path)
    with reading(path):
        validate_document("worker", doc, where=str(path))
    records: dict[str, list[dict[str, Any]]] = {}
    learn: dict[str, set[str]] = {}
    for record in doc["workers"]:
        if record.get("capacity", "auto") == "auto":
            learn.setdefault(record["stream"], set()).add(record["worker"])
            record = {**record, "capacity": 1.0}
        records.setdefault(record["stream"], []).append(record)
    workers = {}
    for stream, listed in records.items():
        try:
            workers[stream] = Workers.from_records(listed)
        except ValueError as err:
            raise InputError(f"{path}: stream {stream!r}: {err}") from None
    return workers, {stream: frozenset(names) for stream, names in learn.items()}


def json_text(doc: Any, indent: int | None = None) -> str:
    """``doc`` as strict JSON: ``OutputError`` naming the field if a number is NaN or infinite."""
    try:
        return json.dumps(doc, indent=indent, allow_nan=False)
    except ValueError:
        raise OutputError(
            f"cannot write JSON: {_non_finite(doc) or 'a value'} is not a finite number"
        ) from None


def _non_finite(doc: Any, at: str = "") -> str | None:
    """The path of the first NaN or infinity in ``doc``."""
    if isinstance(doc, float) and not math.isfinite(doc):
        return at or "<root>"
    if isinstance(doc, dict):
        items: Any = doc.items()
    elif isinstance(doc, list | tuple):
        items = enumerate(doc)
    else:
        return None
    for key, value in items:
        found = _non_finite(value, f"{at}.{key}" if at else str(key))
        if found:
            return found
    return None
