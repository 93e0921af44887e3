"""Where routeplan's files live: a local path or an object-store URI, one way to name them.

``ROUTEPLAN_HOME`` (and every place under it: landing, warehouse, routing, config, reports) is a
*location*: a local path (``var``, ``/srv/routeplan``) or a URI (``s3://bucket/prefix``). Spark
names an S3 bucket ``s3a://`` (Hadoop's S3A connector) and the library ``s3://`` (fsspec's
s3fs); both spellings name the same objects, and fsspec reads either.

* ``join(location, *parts)`` — a child location (``/`` between parts, never a ``..``);
* ``is_remote(location)`` — a URI with a scheme other than ``file``;
* ``spark_uri(location)`` / ``library_uri(location)`` — the spelling Spark / fsspec expects;
* ``filesystem(location)`` — fsspec's file system and the path on it. For S3 it honours the
  standard AWS variables (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
  ``AWS_ENDPOINT_URL`` for an S3-compatible server on another address);
* ``read_bytes`` / ``write_text`` / ``exists`` / ``is_file`` / ``list_files`` /
  ``make_bucket`` — what jobs, the CLI and the Airflow tasks do with files under the home, on
  either kind of location;
* ``make_folder`` — a local folder and its parents, made for a file a person named: when one
  of them is a file, the error names what was to be written and that file (never a bare "File
  exists"). ``write_bytes`` and ``write_text`` make their file's folder with it.

The routing store (``routeplan.publishing.store``) has its own two back ends
(``routeplan.publishing.store_files``): its promises (write once, LATEST moved atomically) need
more than these helpers.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from routeplan_client.sources import s3_options  # the AWS variables, read as the client does

__all__ = [
    "exists",
    "filesystem",
    "is_file",
    "is_remote",
    "join",
    "library_uri",
    "list_files",
    "make_bucket",
    "make_folder",
    "read_bytes",
    "s3_options",
    "spark_uri",
    "write_text",
]

# Spark's spelling → the library's (fsspec registers both, but one name reads better in logs).
_LIBRARY_SCHEMES = {"s3a": "s3", "s3n": "s3"}
_SPARK_SCHEMES = {"s3": "s3a", "s3n": "s3a"}


def scheme(location: str | os.PathLike[str]) -> str:
    """``"s3"`` for ``s3://b/p``, ``""`` for a local path (``C:`` is no scheme either)."""
    text = os.fspath(location)
    found = urlsplit(text).scheme if "://" in text else ""
    return found.lower()


def is_remote(location: str | os.PathLike[str]) -> bool:
    """True for a URI naming another file system than the local one."""
    return scheme(location) not in ("", "file")


def join(location: str | os.PathLike[str], *parts: str) -> str:
    """``location`` / ``parts``. A part may hold ``/`` but never ``..`` or an empty segment: a
    location is built from names, never walked up out of."""
    for part in parts:
        if any(seg in ("", ".", "..") for seg in part.split("/")):
            raise ValueError(f"not a relative name: {part!r}")
    text = os.fspath(location)
    if is_remote(text):
        return "/".join([text.rstrip("/"), *parts])
    return str(Path(text, *parts))


def library_uri(location: str | os.PathLike[str]) -> str:
    """``s3a://b/p`` → ``s3://b/p``; a local path as given."""
    text = os.fspath(location)
    found = scheme(text)
    if found in _LIBRARY_SCHEMES:
        return _LIBRARY_SCHEMES[found] + text[len(found) :]
    return text


def spark_uri(location: str | os.PathLike[str]) -> str:
    """``s3://b/p`` → ``s3a://b/p`` (Hadoop's S3A); a local path made absolute."""
    text = os.fspath(location)
    found = scheme(text)
    if found in _SPARK_SCHEMES:
        return _SPARK_SCHEMES[found] + text[len(found) :]
    if not found:
        return str(Path(text).resolve())
    return text


def filesystem(location: str | os.PathLike[str]) -> tuple[Any, str]:
    """``(fsspec file system, path on it)`` for ``location``."""
    import fsspec

    uri = library_uri(location)
    if not is_remote(uri):
        return fsspec.filesystem("file"), str(Path(uri).resolve())
    options = s3_options() if scheme(uri) == "s3" else {}
    fs, path = fsspec.core.url_to_fs(uri, **options)
    return fs, path


def exists(location: str | os.PathLike[str]) -> bool:
    fs, path = filesystem(location)
    return bool(fs.exists(path))


def is_file(location: str | os.PathLike[str]) -> bool:
    """True when ``location`` is a file (not a folder, not missing)."""
    fs, path = filesystem(location)
    return bool(fs.isfile(path))


def read_bytes(location: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The file's bytes (at most ``limit + 1`` when ``limit`` is given: enough to tell that it
    is too large); ``FileNotFoundError`` naming ``location`` when there is none."""
    fs, path = filesystem(location)
    try:
        with fs.open(path, "rb") as handle:
            return handle.read() if limit is None else handle.read(limit + 1)
    except FileNotFoundError:
        raise FileNotFoundError(2, "No such file", os.fspath(location)) from None


def write_text(location: str | os.PathLike[str], text: str) -> str:
    """Write ``text`` to the file at ``location`` (folders made as needed); ``location``."""
    return write_bytes(location, text.encode("utf-8"))


def write_bytes(location: str | os.PathLike[str], data: bytes) -> str:
    """Write ``data`` to the file at ``location`` (folders made as needed); ``location``."""
    fs, path = filesystem(location)
    if not is_remote(location):
        make_folder(Path(os.fspath(location)).parent, writing=location)
    with fs.open(path, "wb") as handle:
        handle.write(data)
    return os.fspath(location)


def make_folder(
    location: str | os.PathLike[str], writing: str | os.PathLike[str] | None = None
) -> None:
    """Make the local folder ``location`` and its missing parents (a URI needs none). When one
    of them is a file, ``NotADirectoryError`` naming ``writing`` (default: the folder) and that
    file, as given (relative stays relative)."""
    if is_remote(location):
        return
    folder = Path(os.fspath(location))
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        found = [p for p in (*reversed(folder.parents), folder) if p.exists() and not p.is_dir()]
        blocker = found[0] if found else folder
        raise NotADirectoryError(
            errno.ENOTDIR,
            f"cannot be written: {blocker} is not a directory",
            os.fspath(writing if writing is not None else location),
        ) from None


def list_files(location: str | os.PathLike[str]) -> list[str]:
    """Every file under the folder ``location`` (recursively, sorted), as locations spelled like
    ``location``; empty when there is no such folder."""
    text = os.fspath(location)
    fs, path = filesystem(text)
    if not fs.isdir(path):
        return []
    found = sorted(fs.find(path))
    base = path.rstrip("/")
    return [join(text, name[len(base) + 1 :]) for name in found if name.startswith(base + "/")]


def list_folders(location: str | os.PathLike[str]) -> list[str]:
    """The names of the folders directly under ``location``, sorted; empty when there is no
    such folder."""
    fs, path = filesystem(location)
    try:
        found = fs.ls(path, detail=True, refresh=True)  # fresh: another process writes there
    except (FileNotFoundError, NotADirectoryError):
        return []
    base = path.rstrip("/") + "/"
    names = (e["name"].rstrip("/")[len(base) :] for e in found if e["type"] == "directory")
    return sorted(name for name in names if name and "/" not in name)


def make_bucket(location: str | os.PathLike[str]) -> bool:
    """Create the bucket an object-store ``location`` lives in, if it does not exist yet (a new
    deployment's first step); True when it was created. A local location needs none."""
    if not is_remote(location):
        return False
    fs, path = filesystem(location)
    bucket = path.split("/", 1)[0]
    if fs.exists(bucket):
        return False
    fs.mkdir(bucket)
    return True
