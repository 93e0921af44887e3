"""The routing store's two back ends: what ``RoutingStore`` needs of its storage, one stream
folder at a time (``Files``), on a local file system (``LocalFiles``) or on object storage
(``ObjectFiles``). ``RoutingStore`` (``routeplan.publishing.store``) picks one from the root and
holds the logic over it: numbering, publishing, rollback, prune, doctor.

* ``LocalFiles``: a version is a temp file (``TEMP_PREFIX``), fsynced, then hard-linked to its
  name (the link fails if the name exists); ``LATEST`` moves by an atomic rename; one exclusive
  advisory lock per stream folder (``<stream>/.lock``); every change fsynced, file and folder.
* ``ObjectFiles``: an fsspec URI. On S3 a version is a conditional create (``If-None-Match: *``)
  and ``LATEST`` is read with its ETag and moved by a conditional PUT (``If-Match``); no lock.
  Other schemes are read-only.

Both write a small file whole with ``replace`` (a stream's ``HOLD``, its loop states
``loop-<night>.json``: ``loop_name``): a rename on disk, one PUT on
object storage. Both set a file aside (``set_aside``: ``doctor --fix`` with a version LATEST never
named) into a folder of the stream's, never overwriting and never losing it: a hard link then an
unlink on disk; a conditional create then a delete on object storage.

On disk every file written gets ``file_mode`` (``0o644`` unless the setting
``ROUTEPLAN_ROUTING_FILE_MODE`` says otherwise), whatever the process's umask: a temp file is
created private (``mkstemp``), so it is given its mode before it is linked or renamed into place.
Folders are made with the umask's mode and a folder's mode is never changed. Object stores have
no modes.

A back end reads at most what it is asked for (``limit + 1`` bytes; ``LATEST_MAX_BYTES + 1`` of
``LATEST``), so a huge or garbage file is never read whole.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from routeplan import storage
from routeplan.contracts.documents import read_limited
from routeplan_client.sources import LATEST, LATEST_MAX_BYTES  # the layout readers follow

TEMP_PREFIX = ".tmp-"
HOLD = "HOLD"  # a stream's hold: publish nothing new until it is cleared (``RoutingStore.hold``)
LOOP_MAX_BYTES = 4 * 2**20  # a stream's loop state after one night (``loop-<night>.json``)
_LOOP_NAME = re.compile(r"loop-(\d{4}-\d{2}-\d{2})\.json")


def loop_name(night: str) -> str:
    """``loop-<night>.json``; ``ValueError`` unless ``night`` is a date (YYYY-MM-DD): a name
    from data never becomes a path unchecked."""
    name = f"loop-{night}.json" if isinstance(night, str) else ""
    if loop_night(name) is None:
        raise ValueError(f"a loop state's night is a date YYYY-MM-DD, not {night!r}")
    return name


def loop_night(name: str) -> str | None:
    """The night a loop state's file ``name`` holds; None for any other name."""
    found = _LOOP_NAME.fullmatch(name)
    if found is None:
        return None
    try:
        datetime.strptime(found.group(1), "%Y-%m-%d")
    except ValueError:
        return None
    return found.group(1)


class Files(Protocol):
    """A store's files by (stream, file name). ``tag`` identifies the LATEST a writer read, for
    a conditional move (None: there was none, or the back end moves LATEST under its lock)."""

    root: str

    def location(self, *names: str) -> str: ...
    def folders(self) -> list[str]: ...
    def has_folder(self, stream: str) -> bool: ...
    def names(self, stream: str) -> list[str]: ...
    def is_file(self, stream: str, name: str) -> bool: ...
    def read(self, stream: str, name: str, limit: int) -> bytes: ...
    def read_latest(self, stream: str) -> tuple[str, str | None] | None: ...
    def identity(self, stream: str, name: str) -> tuple[Any, ...]: ...
    def create(self, stream: str, name: str, text: str) -> None: ...
    def move_latest(self, stream: str, text: str, tag: str | None) -> bool: ...
    def replace(self, stream: str, name: str, text: str) -> None: ...
    def set_aside(self, stream: str, name: str, folder: str) -> bool: ...
    def delete(self, stream: str, names: list[str]) -> None: ...
    def locked(
        self, stream: str, create: bool = False
    ) -> contextlib.AbstractContextManager[None]: ...


class LocalFiles:
    """A directory: write once by hard link, LATEST moved by rename, one lock per stream folder;
    every change fsynced (file and folder); every file written has ``file_mode``."""

    def __init__(self, root: str | os.PathLike[str], file_mode: int | None = None) -> None:
        self.base = Path(root)
        self.root = str(self.base)
        self._file_mode = file_mode

    @property
    def file_mode(self) -> int:
        """The mode of the files written: the one given, else the setting's, read at the first
        write (a store opened only to read never depends on the settings)."""
        if self._file_mode is None:
            from routeplan import settings

            self._file_mode = settings.routing_file_mode()
        return self._file_mode

    def location(self, *names: str) -> str:
        return storage.join(self.base, *names)

    def folders(self) -> list[str]:
        if not self.base.is_dir():
            return []
        return [p.name for p in self.base.iterdir() if p.is_dir()]

    def has_folder(self, stream: str) -> bool:
        return (self.base / stream).is_dir()

    def names(self, stream: str) -> list[str]:
        folder = self.base / stream
        return [p.name for p in folder.iterdir()] if folder.is_dir() else []

    def is_file(self, stream: str, name: str) -> bool:
        return (self.base / stream / name).is_file()

    def read(self, stream: str, name: str, limit: int) -> bytes:
        return read_limited(self.base / stream / name, limit)

    def read_latest(self, stream: str) -> tuple[str, str | None] | None:
        latest = self.base / stream / LATEST
        if not latest.is_file():
            return None
        with open(latest, "rb") as handle:
            return handle.read(LATEST_MAX_BYTES + 1).decode("utf-8", "replace"), None

    def identity(self, stream: str, name: str) -> tuple[Any, ...]:
        stat = (self.base / stream / name).stat()
        return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)

    def create(self, stream: str, name: str, text: str) -> None:
        path = self.base / stream / name
        tmp = _fsynced_temp(path.parent, text, self.file_mode)
        try:
            os.link(tmp, path)  # fails with FileExistsError: a version is never rewritten
        finally:
            tmp.unlink()
        _fsync_dir(path.parent)

    def move_latest(self, stream: str, text: str, tag: str | None) -> bool:
        """Always moves: the caller holds the stream's lock."""
        folder = self.base / stream
        os.replace(_fsynced_temp(folder, text, self.file_mode), folder / LATEST)
        _fsync_dir(folder)
        return True

    def replace(self, stream: str, name: str, text: str) -> None:
        """Write ``name`` whole, replacing it atomically (a reader sees the old or the new)."""
        folder = self.base / stream
        os.replace(_fsynced_temp(folder, text, self.file_mode), folder / name)
        _fsync_dir(folder)

    def set_aside(self, stream: str, name: str, folder: str) -> bool:
        """Move ``name`` into ``<stream>/<folder>/`` (made when missing): a hard link, then the
        old name unlinked. False, and nothing changed, when ``folder`` holds another file of
        that name; a link left by an earlier, interrupted move is finished."""
        source = self.base / stream / name
        aside = self.base / stream / folder
        aside.mkdir(exist_ok=True)
        try:
            os.link(source, aside / name)
        except FileExistsError:
            if not os.path.samefile(source, aside / name):
                return False
        _fsync_dir(aside)
        source.unlink()
        _fsync_dir(source.parent)
        return True

    def delete(self, stream: str, names: list[str]) -> None:
        for name in names:
            (self.base / stream / name).unlink(missing_ok=True)
        if names:
            _fsync_dir(self.base / stream)

    @contextlib.contextmanager
    def locked(self, stream: str, create: bool = False) -> Iterator[None]:
        """An exclusive advisory lock on ``<stream>/.lock`` (the folder made with ``create``)."""
        folder = self.base / stream
        if create:
            folder.mkdir(parents=True, exist_ok=True)
        with open(folder / ".lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


class ObjectFiles:
    """An fsspec URI. On S3: reads with the object's ETag, a version created with
    ``If-None-Match: *``, LATEST moved with ``If-Match: <ETag>``; no lock. Listings and
    existence are asked of the server every time (never s3fs's listing cache: another process
    writes the same folders). Other schemes are read-only here."""

    def __init__(self, root: str, storage_options: Mapping[str, Any] | None) -> None:
        self.root = storage.library_uri(root).rstrip("/")
        if storage_options is None:
            self.fs, path = storage.filesystem(self.root)
        else:
            import fsspec

            self.fs, path = fsspec.core.url_to_fs(self.root, **storage_options)
        self.base = path.rstrip("/")
        self.s3 = storage.scheme(self.root) == "s3"

    def location(self, *names: str) -> str:
        return storage.join(self.root, *names)

    def _path(self, *names: str) -> str:
        return "/".join([self.base, *names])

    def _entries(self, folder: str) -> list[dict[str, Any]]:
        """What is directly in ``folder`` (fsspec entries), fresh from the server."""
        try:
            found = self.fs.ls(folder, detail=True, refresh=True)
        except FileNotFoundError:
            return []
        prefix = folder.rstrip("/") + "/"
        return [entry for entry in found if entry["name"].startswith(prefix)]

    def _child(self, entry: dict[str, Any]) -> str:
        return entry["name"].rstrip("/").rsplit("/", 1)[-1]

    def folders(self) -> list[str]:
        return [self._child(e) for e in self._entries(self.base) if e["type"] == "directory"]

    def has_folder(self, stream: str) -> bool:
        return bool(self._entries(self._path(stream)))

    def names(self, stream: str) -> list[str]:
        return [self._child(e) for e in self._entries(self._path(stream)) if e["type"] == "file"]

    def _info(self, stream: str, name: str) -> dict[str, Any]:
        info = self.fs.info(self._path(stream, name), refresh=True)
        if info.get("type") != "file":
            raise FileNotFoundError(errno.ENOENT, "no such object", self.location(stream, name))
        return info

    def is_file(self, stream: str, name: str) -> bool:
        try:
            self._info(stream, name)
        except FileNotFoundError:
            return False
        return True

    def read(self, stream: str, name: str, limit: int) -> bytes:
        return self._read(stream, name, limit)[0]

    def read_latest(self, stream: str) -> tuple[str, str | None] | None:
        try:
            data, tag = self._read(stream, LATEST, LATEST_MAX_BYTES)
        except FileNotFoundError:
            return None
        return data.decode("utf-8", "replace"), tag

    def _read(self, stream: str, name: str, limit: int) -> tuple[bytes, str | None]:
        """At most ``limit + 1`` bytes of the object and its ETag (of the same object: one GET)."""
        path = self._path(stream, name)
        try:
            if not self.s3:
                with self.fs.open(path, "rb") as handle:
                    return handle.read(limit + 1), None
            from fsspec.asyn import sync

            bucket, key, _ = self.fs.split_path(path)
            return sync(self.fs.loop, _get_object, self.fs, bucket, key, limit + 1)
        except FileNotFoundError:
            raise FileNotFoundError(
                errno.ENOENT, "no such object", self.location(stream, name)
            ) from None

    def identity(self, stream: str, name: str) -> tuple[Any, ...]:
        info = self._info(stream, name)
        return (info.get("ETag"), info.get("size"), str(info.get("LastModified")))

    def create(self, stream: str, name: str, text: str) -> None:
        if not self._put(stream, name, text, IfNoneMatch="*"):
            raise FileExistsError(
                errno.EEXIST, "a version is written once", self.location(stream, name)
            )

    def move_latest(self, stream: str, text: str, tag: str | None) -> bool:
        """Moves LATEST unless it changed since it had ``tag`` (None: unless there is one)."""
        condition = {"IfNoneMatch": "*"} if tag is None else {"IfMatch": tag}
        return self._put(stream, LATEST, text, **condition)

    def _put(self, stream: str, name: str, text: str, **condition: str) -> bool:
        """One conditional PUT; False when the server refused its condition."""
        if not self.s3:
            raise NotImplementedError(
                f"{self.root}: publishing needs conditional writes, which routeplan uses on "
                "S3 (s3://) only; this store can be read"
            )
        bucket, key, _ = self.fs.split_path(self._path(stream, name))
        try:
            self.fs.call_s3(
                "put_object", Bucket=bucket, Key=key, Body=text.encode("utf-8"), **condition
            )
        except OSError as err:
            if _condition_refused(err):
                return False
            raise
        finally:
            self.fs.invalidate_cache(self._path(stream))
        return True

    def replace(self, stream: str, name: str, text: str) -> None:
        """One unconditional PUT (atomic: a reader sees the old or the new object)."""
        self._put(stream, name, text)

    def set_aside(self, stream: str, name: str, folder: str) -> bool:
        """Copy ``name`` to ``<stream>/<folder>/<name>`` by a conditional create, then delete it.
        False, and nothing changed, when ``folder`` holds another object of that name; a copy
        left by an earlier, interrupted move is finished."""
        data = self._read(stream, name, 2**62)[0]
        target = f"{folder}/{name}"
        created = self._put(stream, target, data.decode("utf-8"), IfNoneMatch="*")
        if not created and self._read(stream, target, len(data))[0] != data:
            return False
        self.delete(stream, [name])
        return True

    def delete(self, stream: str, names: list[str]) -> None:
        if names:
            self.fs.rm([self._path(stream, name) for name in names])

    def locked(self, stream: str, create: bool = False) -> contextlib.AbstractContextManager[None]:
        """No lock on object storage: every change is a conditional write."""
        return contextlib.nullcontext()


async def _get_object(fs: Any, bucket: str, key: str, limit: int) -> tuple[bytes, str]:
    """GET ``key``: at most ``limit`` bytes of it and its ETag (s3fs's client, its loop)."""
    resp = await fs._call_s3("get_object", Bucket=bucket, Key=key)
    body, data = resp["Body"], bytearray()
    try:
        while len(data) < limit:
            chunk = await body.read(limit - len(data))  # may return less than asked
            if not chunk:
                break
            data += chunk
    finally:
        body.close()
    return bytes(data), resp["ETag"]


_REFUSALS = ("PreconditionFailed", "ConditionalRequestConflict")  # 412; 409 (a concurrent one)


def _condition_refused(err: BaseException) -> bool:
    """True when ``err`` (s3fs wraps botocore's ``ClientError``) says a condition did not hold."""
    seen: BaseException | None = err
    for _ in range(4):
        if seen is None:
            break
        response = getattr(seen, "response", None)
        if isinstance(response, dict) and response.get("Error", {}).get("Code") in _REFUSALS:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _fsynced_temp(folder: Path, text: str, mode: int) -> Path:
    """A new temp file in ``folder`` holding ``text``, fsynced, with ``mode`` (``mkstemp``
    makes it private: 0600)."""
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=TEMP_PREFIX)
    os.fchmod(fd, mode)
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
