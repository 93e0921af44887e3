"""The API's view of a routing store (``routeplan.api.app``): verified versions in a bounded
LRU, LATEST read on every call, and what ``/latest`` can serve — one check shared by
``/latest``, ``/streams`` and ``/healthz``, so they never disagree.

A version is parsed, schema-checked and checksum-verified once and kept while its file is
unchanged (its identity: device, inode, size, mtime on disk; ETag on object storage). What is
wrong is said without a server path: a file is named relative to the store's root. ``/streams``
and ``/healthz`` ask ``servable``, which remembers per stream what ``latest_document`` found for
LATEST's file (servable or why not) and asks again only when LATEST or its file changed.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import HTTPException, Request, Response
from fastapi.responses import JSONResponse

from routeplan import storage
from routeplan.model.names import InvalidNameError, check_name
from routeplan.model.table import Table, table_from_document
from routeplan.publishing.store import RoutingStore, version_runs
from routeplan.publishing.store_files import LATEST

log = logging.getLogger("routeplan.api.app")  # one logger for the API (its tests listen there)


@dataclass(frozen=True)
class Published:
    """One version as served: the verified table, its JSON body and its file's identity."""

    table: Table
    body: bytes
    checksum: str
    file_id: tuple[Any, ...]  # RoutingStore.identity: changes when the file is replaced

    @property
    def etag(self) -> str:
        return f'"{self.checksum}"'


class Tables:
    """Reads a store for the API: verified versions in a bounded LRU, LATEST on every call."""

    def __init__(self, store: RoutingStore, cache_size: int) -> None:
        self.store = store
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple[str, int], Published] = OrderedDict()
        self._lock = threading.Lock()
        self._warned: dict[str, str] = {}  # stream (or "") -> the problem last logged
        # stream -> LATEST's version, its file's identity, its refusal (None: servable)
        self._checked: dict[str, tuple[int, tuple[Any, ...], tuple[str, str] | None]] = {}

    def stream_names(self) -> list[str]:
        """Streams with a LATEST; 503 when the store's root is missing or cannot be read (no
        path said). An object-store prefix always exists: without objects it is empty."""
        try:
            if not self.store.is_remote:
                root = Path(self.store.root)
                if not root.exists():
                    raise self.unavailable("the routing store's root does not exist")
                if not root.is_dir():
                    raise self.unavailable("the routing store's root is not a directory")
            streams = self.store.streams()
        except OSError as err:
            problem = f"the routing store is unreadable ({type(err).__name__})"
            raise self.unavailable(problem) from None
        self._recovered("")
        return streams

    def listing(self, streams: list[str] | None = None) -> list[dict[str, Any]]:
        """``/streams``: each stream's versions, or an ``error`` when ``/latest`` cannot serve
        its LATEST (``servable``: the same check, so ``/healthz`` counts the same streams)."""
        entries: list[dict[str, Any]] = []
        for stream in self.stream_names() if streams is None else streams:
            try:
                latest = self.servable(stream)
                versions = self.store.versions(stream)
            except NotServable as err:
                entries.append({"stream": stream, "error": self._warn(stream, err.problem)})
                continue
            except HTTPException:  # 404: LATEST went away meanwhile
                continue
            except OSError as err:
                problem = f"unreadable ({type(err).__name__})"
                entries.append({"stream": stream, "error": self._warn(stream, problem)})
                continue
            self._recovered(stream)
            entries.append({"stream": stream, "latest_version": latest, "versions": versions})
        return entries

    def latest_document(self, stream: str) -> Published:
        """LATEST's verified document, as ``/latest`` serves it: 404 when the stream has no
        LATEST; 500 (``NotServable``) when LATEST is garbage, names a version that is not
        stored, or one that fails its checks. The outcome is kept for ``servable``."""
        version = self.latest(stream)
        try:
            published = self.get(stream, version)
        except NotServable as err:
            err.problem = f"LATEST names v{version}, not servable: {err.problem}"
            self._remember(stream, version, err.file_id, err)
            raise
        except HTTPException as err:
            if err.status_code != 404:
                raise
            kept = version_runs(self.store.versions(stream))
            failure = f"names v{version}, not stored (versions {kept})"
            raise self._corrupt(stream, LATEST, failure, problem=f"LATEST {failure}") from None
        self._remember(stream, version, published.file_id, None)
        return published

    def servable(self, stream: str) -> int:
        """The version LATEST names when ``latest_document`` can serve it, else its error;
        without reading the document again while LATEST and its file are unchanged."""
        try:
            version = self.store.latest_version(stream)
            with self._lock:
                known = self._checked.get(stream)
            if (
                version is not None
                and known is not None
                and known[:2]
                == (
                    version,
                    self.store.identity(stream, version),
                )
            ):
                if known[2] is not None:  # a new exception: a raised one keeps its traceback
                    raise NotServable(known[2][0], known[2][1], known[1])
                return version
        except (OSError, ValueError):
            pass  # latest_document says what is wrong
        return self.latest_document(stream).table.version or 0

    def _remember(
        self,
        stream: str,
        version: int,
        file_id: tuple[Any, ...] | None,
        refused: NotServable | None,
    ) -> None:
        if file_id is not None:
            why = None if refused is None else (refused.detail, refused.problem)
            with self._lock:
                self._checked[stream] = (version, file_id, why)

    def _recovered(self, stream: str) -> None:
        with self._lock:
            problem = self._warned.pop(stream, None)
        if problem is not None:
            log.info("stream %s is served again (was: %s)", stream or "(all)", problem)

    def _warn(self, stream: str, problem: str) -> str:
        """Log ``problem`` once (until it changes), not at every request; return it."""
        with self._lock:
            known = self._warned.get(stream)
            self._warned[stream] = problem
        if known != problem:
            log.warning("stream %s cannot be served: %s", stream or "(all)", problem)
        return problem

    def _corrupt(
        self,
        stream: str,
        name: str,
        failure: object,
        file_id: tuple[Any, ...] | None = None,
        problem: str | None = None,
    ) -> NotServable:
        """500 naming the file relative to the store's root (the log has the full location): a
        client learns which table is broken, never where the server keeps it. ``problem``:
        the short text ``/streams`` shows (default: the failure)."""
        root = self.store.root
        sep = "/" if self.store.is_remote else os.sep
        hidden = str(failure).replace(f"{root}{sep}", "").replace(root, "<root>")
        detail = f"stored routing table file {stream}/{name} is not servable: {hidden}"
        logged = f"{storage.join(root, stream, name)}: {failure}"
        return NotServable(detail, problem or hidden, file_id, logged)

    def unavailable(self, problem: str) -> HTTPException:
        return HTTPException(503, self._warn("", problem))

    def versions(self, stream: str) -> dict[str, Any]:
        """``{"stream", "latest_version", "versions"}``; 404 for an unknown stream."""
        latest = self.latest(stream)
        versions = self.store.versions(stream)
        if latest not in versions:
            raise self._corrupt(stream, LATEST, f"names v{latest}, not stored")
        return {"stream": stream, "latest_version": latest, "versions": versions}

    def latest(self, stream: str) -> int:
        """The version LATEST names; 404 when the stream has none, 500 when LATEST is garbage."""
        check_stream_name(stream)
        try:
            latest = self.store.latest_version(stream)
        except (OSError, ValueError) as err:
            where = storage.join(self.store.root, stream, LATEST)  # the store's messages start so
            problem = (
                LATEST + str(err).removeprefix(where)
                if isinstance(err, ValueError)
                else f"{LATEST} unreadable ({type(err).__name__})"
            )
            raise self._corrupt(stream, LATEST, err, problem=problem) from err
        if latest is None:
            streams = self.store.streams()
            known = f"streams: {', '.join(streams)}" if streams else "none published yet"
            raise HTTPException(404, f"no routing tables for stream {stream!r} ({known})")
        return latest

    def get(self, stream: str, version: int) -> Published:
        """A verified version (cached while its file is unchanged); 404 if it is not stored."""
        check_stream_name(stream)
        try:
            file_id = self.store.identity(stream, version)
        except FileNotFoundError:
            self._forget(stream, version)
            raise self._no_version(stream, version) from None
        except OSError as err:
            raise self._corrupt(stream, f"v{version}.json", err) from err
        with self._lock:
            hit = self._cache.get((stream, version))
            if hit is not None and hit.file_id == file_id:
                self._cache.move_to_end((stream, version))
                return hit
        published = self._read(stream, version, file_id)
        with self._lock:
            self._cache[(stream, version)] = published
            self._cache.move_to_end((stream, version))
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return published

    def _read(self, stream: str, version: int, file_id: tuple[Any, ...]) -> Published:
        try:
            doc = self.store.read_document(stream, version)  # JSON + schema
            table = table_from_document(doc)  # checksum and consistency
            if (doc["stream"], doc["version"]) != (stream, version):
                raise ValueError(f"holds {doc['stream']!r} v{doc['version']}")
        except FileNotFoundError:
            raise self._no_version(stream, version) from None
        except (OSError, ValueError, KeyError, TypeError) as err:
            self._forget(stream, version)
            raise self._corrupt(stream, f"v{version}.json", err, file_id) from err
        body = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()
        return Published(table, body, doc["checksum"], file_id)

    def _forget(self, stream: str, version: int) -> None:
        with self._lock:
            self._cache.pop((stream, version), None)

    def _no_version(self, stream: str, version: int) -> HTTPException:
        self.latest(stream)  # an unknown stream says so
        kept = self.store.versions(stream)
        return HTTPException(
            404,
            f"no routing table v{version} for stream {stream!r} (versions {version_runs(kept)})",
        )


class NotServable(HTTPException):
    """500: a stored file ``/latest`` or a version cannot serve. ``problem`` says what is wrong
    in a few words (``/streams``' ``error``); ``file_id`` is the refused file's identity;
    ``logged`` the full location and failure, logged as an error when a request is refused
    (``/streams`` and ``/healthz`` warn once instead)."""

    def __init__(
        self,
        detail: str,
        problem: str,
        file_id: tuple[Any, ...] | None = None,
        logged: str = "",
    ) -> None:
        super().__init__(500, detail)
        self.problem, self.file_id, self.logged = problem, file_id, logged


async def refused(request: Request, err: Exception) -> Response:
    """A request refused by ``NotServable``: the error logged with the file's location, the
    client told the file relative to the store's root."""
    assert isinstance(err, NotServable)
    log.error("refusing to serve %s", err.logged)
    return JSONResponse({"detail": err.detail}, status_code=err.status_code)


def check_stream_name(stream: str) -> None:
    """404 for a name that breaks the name rule: no such stream can exist (never a path)."""
    try:
        check_name(stream)
    except InvalidNameError as err:
        raise HTTPException(404, f"no such stream: {err}") from None
