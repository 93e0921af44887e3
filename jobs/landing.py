"""ingest's landing files: the interval's files under ``<landing>/<YYYY-MM-DD>/``, their format
by suffix, the whole-file checks and how Spark is given them.

A file that cannot be read at all goes to quarantine whole, one row naming it: refused when
listed (a symlink that is broken, loops, leads to a folder or out of the landing folder — never
followed, never read; a FIFO or device; a name that is not UTF-8), by ``probe`` before reading
(unknown type, corrupt gzip or Parquet, a CSV header that is not UTF-8 or names a column twice,
Parquet columns whose names differ only in case) or by ``unreadable_file`` from Spark's failure.

Every file is read by its exact path, never as a pattern: Spark globs a path holding one of
``{}[]*?\\`` (Hadoop's glob syntax), so those characters are escaped (``spark_batches``); a name
that also holds ``:`` cannot be globbed at all (Hadoop takes ``a:b`` for a URI) and is read alone
with globbing off. Local files are read through Hadoop's raw local file system (the checksum
file system cannot name the ``.crc`` of a file with ``:`` in its name).
"""

from __future__ import annotations

import csv
import errno
import gzip
import io
import os
import re
import stat
import zlib
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import unquote

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
GLOB_CHARACTERS = re.compile(r"([{}\[\]*?\\])")  # what Hadoop's GlobPattern reads as a pattern
# the options of a read of local landing files: the raw local file system, an instance of its
# own (never cached: the cached one is the checksum file system the rest of the job uses). Never
# given to a read of another file system: a read's options are the configuration a file system
# it creates is cached with (S3A then fails to make its local buffers).
LOCAL_READ_OPTIONS = {
    "fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
    "fs.file.impl.disable.cache": "true",
}


@dataclass(frozen=True)
class LandingFile:
    path: str  # what Spark and ``routeplan.storage`` read: an absolute local path or s3a://…
    uri: str  # how ingest names it (``source_file``): ``file:`` + ``path``, or ``path``; literal
    fmt: str | None  # None: unknown type
    gzip: bool
    refused: str | None = None  # why it is not even opened (found when listed)


def landing_files(landing: str, args: RunArgs) -> list[LandingFile]:
    """Every file under the interval's day folders of the ``landing`` location (a local folder
    or a URI; files whose names start with ``.`` or ``_`` are skipped). A local entry that is
    not a regular file inside the landing folder — by its real path, every symlink resolved —
    is listed ``refused``."""
    remote = storage.is_remote(landing)
    root = landing if remote else os.path.realpath(landing)
    found = []
    for day in args.days():
        for location in storage.list_files(storage.join(root, day.isoformat())):
            name = PurePosixPath(location)
            if name.name.startswith((".", "_")):
                continue
            gz = name.suffix == ".gz"
            suffixes = name.suffixes[-2:] if gz else name.suffixes[-1:]
            fmt = SUFFIXES.get(suffixes[0] if suffixes else "")
            if remote:
                path = storage.spark_uri(location)
                found.append(LandingFile(path, path, fmt, gz))
                continue
            path = os.path.abspath(location)  # not resolved: a symlink is named as listed
            refused = _refusal(path, root)
            if not _utf8(path):
                path = os.fsencode(path).decode("utf-8", "backslashreplace")
                refused = "file name is not UTF-8"
            found.append(LandingFile(path, f"file:{path}", fmt, gz, refused))
    return found


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a name's bytes that are not UTF-8 (surrogate escapes)
        return False
    return True


def _refusal(path: str, root: str) -> str | None:
    """Why the local landing entry ``path`` must not be read, or None: it must be a regular
    file, or a symlink to one, whose real path is inside ``root`` (the real landing folder). A
    symlink is never followed out of the landing folder: not even opened."""
    try:
        entry = os.lstat(path)
    except OSError as error:
        return f"unreadable file: {error.strerror}"
    if not stat.S_ISLNK(entry.st_mode):
        if not stat.S_ISREG(entry.st_mode):
            return "not a regular file (a FIFO, socket or device is never read)"
        if not _inside(os.path.realpath(path), root):  # under a symlinked folder
            return f"outside the landing folder: {os.path.realpath(path)!r}"
        return None
    target = os.readlink(path)
    real = os.path.realpath(path)
    if not _inside(real, root):
        return f"symlink out of the landing folder (not followed): {target!r}"
    try:
        points_to = os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            return f"symlink loop: {target!r}"
        if error.errno == errno.ENOENT:
            return f"broken symlink: {target!r} does not exist"
        return f"unreadable symlink: {target!r}: {error.strerror}"
    if not stat.S_ISREG(points_to.st_mode):
        return f"symlink to something other than a file (not followed): {target!r}"
    return None


def _inside(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip("/") + "/")


def probe(file: LandingFile) -> tuple[str | None, object]:
    """``(reason the file cannot be read, None)`` or ``(None, what reading it needs)``.

    The driver reads only what it must: a CSV's header line, a Parquet file's footer (through
    ``routeplan.storage``, wherever the file is). Damage further in is found by Spark while
    reading (see ``unreadable_file``).
    """
    if file.refused:
        return file.refused, None
    if file.fmt is None:
        return f"unknown file type (expected {', '.join(sorted(SUFFIXES))}, optionally .gz)", None
    if file.fmt == "parquet" and file.gzip:
        return "gzip-compressed Parquet is not supported (Parquet compresses itself)", None
    if file.gzip and not storage.read_bytes(file.path, limit=0):
        return "empty .gz file (0 bytes is not a gzip stream)", None
    if file.fmt == "csv":
        return _csv_header(file)
    if file.fmt == "parquet":
        return _parquet_schema(file)
    return None, None


def _csv_header(file: LandingFile) -> tuple[str | None, object]:
    fs, path = storage.filesystem(file.path)
    try:
        with fs.open(path, "rb") as raw:
            handle = gzip.GzipFile(fileobj=raw) if file.gzip else raw
            first = handle.readline()
    except (OSError, EOFError, zlib.error) as error:  # zlib.error: gzip magic, then garbage
        kind = "gzip file" if file.gzip else "file"
        return f"unreadable {kind}: {one_line(error)}", None
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


def _parquet_schema(file: LandingFile) -> tuple[str | None, object]:
    """The file's columns, or why Spark cannot read it: its footer is unreadable, or two column
    names at one level differ only in case (Spark resolves names case-insensitively:
    ``COLUMN_ALREADY_EXISTS``) — the whole file is refused rather than one column guessed."""
    import pyarrow.parquet as pq

    fs, path = storage.filesystem(file.path)
    try:
        with fs.open(path, "rb") as handle:
            schema = pq.read_schema(handle)
    except Exception as error:  # noqa: BLE001 - any failure means "not readable Parquet"
        return f"not a readable Parquet file: {one_line(error)}", None
    clashes = _case_clashes(list(schema), "")
    if clashes:
        return (
            "Parquet column names differ only in case (Spark reads names case-insensitively): "
            + "; ".join(", ".join(map(repr, names)) for names in clashes)
        ), None
    return None, tuple((f.name, str(f.type)) for f in schema)


def _case_clashes(fields: list, prefix: str) -> list[list[str]]:
    """Groups of names (dotted from the top) of ``fields`` and their nested struct fields
    (also inside lists and maps) that are equal ignoring case."""
    import pyarrow as pa

    clashes = []
    by_lower: dict[str, list[str]] = {}
    for field in fields:
        by_lower.setdefault(field.name.lower(), []).append(prefix + field.name)
        kind = field.type
        while isinstance(kind, pa.ListType | pa.LargeListType | pa.FixedSizeListType | pa.MapType):
            kind = kind.item_type if isinstance(kind, pa.MapType) else kind.value_type
        if isinstance(kind, pa.StructType):
            clashes += _case_clashes(list(kind), f"{prefix}{field.name}.")
    return [sorted(names) for names in by_lower.values() if len(names) > 1] + clashes


def spark_batches(files: list[LandingFile]) -> list[tuple[dict[str, str], list[str]]]:
    """``(options, paths)`` per Spark read, so that each of ``files`` is read exactly once, by
    its exact path: one read of the local files and one of the others, glob characters
    escaped, plus one read with globbing off per path that holds both a glob character and
    ``:`` (Hadoop's globber takes ``a:b`` for a URI; Spark's switch for globbing,
    ``__globPaths__``, is exact for one path per read only)."""
    batches = []
    for remote in (False, True):
        options = {} if remote else LOCAL_READ_OPTIONS
        together, alone = [], []
        for file in files:
            if storage.is_remote(file.path) != remote:
                continue
            if GLOB_CHARACTERS.search(file.path) and ":" in file.path.split("://", 1)[-1]:
                alone.append(file.path)
            else:
                together.append(GLOB_CHARACTERS.sub(r"\\\1", file.path))
        batches += [(options, together)] if together else []
        batches += [({**options, "__globPaths__": "false"}, [p]) for p in alone]
    return batches


def spark_name_differs(files: list[LandingFile]) -> bool:
    """True when Spark names one of ``files`` otherwise than its ``uri``: ``_metadata.file_path``
    is Hadoop's ``Path.toUri()``, which percent-encodes every character but letters, digits,
    ``-_.!~*'(),;:$&+=/@`` (``source_file`` then decodes it)."""
    return any(_URI_SAFE.fullmatch(f.uri) is None for f in files)


_URI_SAFE = re.compile(r"[A-Za-z0-9\-_.!~*'(),;:$&+=/@]*")
_FAILED_FILE = re.compile(r"Encountered error while reading file (\S+?)\.?(?:\s|$)")
_CAUSE = re.compile(r"Caused by: ([\w.$]+(?:Exception|Error)[^\n]*)")


def unreadable_file(error: Exception, files: dict[str, LandingFile]) -> tuple[str, str] | None:
    """``(uri, reason)`` when Spark failed on reading one of ``files`` (FAILED_READ_FILE; Spark
    names it percent-encoded, see ``spark_name_differs``)."""
    text = str(error)
    match = _FAILED_FILE.search(text)
    if not match:
        return None
    uri = unquote(re.sub(r"^file:/+", "file:/", match.group(1)))  # the form of ``uri``
    if uri not in files:
        return None
    causes = _CAUSE.findall(text)
    cause = causes[-1] if causes else text.splitlines()[0]
    return uri, f"unreadable file: {one_line(cause)}"
