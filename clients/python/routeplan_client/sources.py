"""Where a ``Router`` or ``Assignment`` reads a stream's published versions from.

A source is a directory or ``file://`` URL (``<root>/<stream>/LATEST`` naming ``v<N>.json``, the
layout routeplan's store writes), the routing-table HTTP API at an ``http(s)://`` base URL, or
any other fsspec URL (``s3://bucket/routing`` or ``s3a://…``, ``gs://…``, ``memory://…``; the
``fsspec`` extra and the scheme's own package) with the store's layout. A source delivers a
version's bytes unverified (``Fetched``); ``verified`` turns them into the table, within
``routeplan_client.documents``' bounds (``max_bytes``, nesting depth), checked and checksummed.
Following a source (polling, swapping, logging) is ``routeplan_client.router``'s.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Union
from urllib.parse import quote, urlsplit
from urllib.request import url2pathname

from routeplan_client.documents import DEFAULT_MAX_BYTES, parse_document
from routeplan_client.names import check_name
from routeplan_client.tables import Table, table_from_document

LATEST = "LATEST"
LATEST_MAX_BYTES = 256  # "v<N>.json\n" needs < 30; more is garbage, never read whole
_VERSION_FILE = re.compile(r"^v(\d+)\.json$")
_LIBRARY_SCHEMES = {"s3a": "s3", "s3n": "s3"}  # Hadoop's spellings of the same S3 objects


@dataclass(frozen=True)
class Fetched:
    """One version's document as a source delivered it, not yet verified."""

    tag: str  # what names this version at the source: its file name, or the HTTP ETag
    where: str  # for messages: the file or URL
    body: bytes
    version: int | None  # the version the source says it is, when it knows


def parse_latest(text: str, where: str = LATEST) -> int:
    """The version a ``LATEST`` file names (``v3.json`` → 3); ValueError if it names none."""
    match = _VERSION_FILE.match(text.strip())
    if not match:
        shown = text.strip()
        shown = repr(shown) if len(shown) <= 40 else repr(shown[:37]) + "…"
        raise ValueError(f"{where}: does not name a version file: {shown}")
    return int(match.group(1))


def s3_options() -> dict[str, Any]:
    """s3fs's options from the standard AWS variables: the endpoint of an S3-compatible server
    (``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL``, path-style addressing as such servers
    expect) and its region (``AWS_REGION`` or ``AWS_DEFAULT_REGION``)."""
    options: dict[str, Any] = {}
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        options["endpoint_url"] = endpoint
        options["config_kwargs"] = {"s3": {"addressing_style": "path"}}
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        options["client_kwargs"] = {"region_name": region}
    return options


class StoreSource:
    """A routing store (``<root>/<stream>/LATEST`` naming ``v<N>.json``): a local directory, or
    any fsspec URL. Only reads a version when LATEST moved (at most ``max_bytes + 1`` bytes of
    it: enough to tell it is too large)."""

    def __init__(
        self,
        root: str,
        stream: str,
        version: int | None,
        max_bytes: int,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.stream = stream
        self.version = version
        self.max_bytes = max_bytes
        self.root = root
        scheme = urlsplit(root).scheme if "://" in root else ""
        if not scheme:
            self._fs, self._base = None, root
            return
        try:
            import fsspec
        except ImportError as err:
            raise ImportError(
                f"reading {scheme}:// routing tables needs fsspec and its {scheme} package: "
                "pip install 'routeplan-client[fsspec]' (and s3fs, gcsfs, …)"
            ) from err
        uri = _LIBRARY_SCHEMES.get(scheme, scheme) + root[len(scheme) :]
        options = {**(s3_options() if uri.startswith("s3://") else {}), **(storage_options or {})}
        try:
            self._fs, self._base = fsspec.core.url_to_fs(uri, **options)
        except ImportError as err:  # e.g. "Install s3fs to access S3"
            raise ImportError(
                f"reading {scheme}:// routing tables needs its fsspec package: {err}"
            ) from err

    def fetch(self, known: str | None) -> Fetched | None:
        """The version LATEST (or the pinned one) names; None when that is ``known``."""
        version = self.version if self.version is not None else self._latest()
        tag = f"v{version}.json"
        if tag == known:
            return None
        return Fetched(tag, self._where(tag), self._read(tag, self.max_bytes), version)

    def close(self) -> None:
        pass

    def _latest(self) -> int:
        try:
            text = self._read(LATEST, LATEST_MAX_BYTES).decode("utf-8", "replace")
        except FileNotFoundError:
            raise FileNotFoundError(
                f"no routing table published for stream {self.stream!r} in {self.root}"
            ) from None
        return parse_latest(text, where=self._where(LATEST))  # ValueError: names no version

    def _path(self, name: str) -> str:
        if self._fs is None:
            return os.path.join(self._base, self.stream, name)
        return "/".join((self._base.rstrip("/"), self.stream, name))

    def _read(self, name: str, limit: int) -> bytes:
        path = self._path(name)
        if self._fs is None:
            with open(path, "rb") as handle:
                return handle.read(limit + 1)
        try:
            with self._fs.open(path, "rb") as handle:
                return handle.read(limit + 1)
        except FileNotFoundError:
            raise FileNotFoundError(self._where(name)) from None

    def _where(self, name: str) -> str:
        return f"{self.root.rstrip('/')}/{self.stream}/{name}" if self._fs else self._path(name)


class HttpSource:
    """The routing-table HTTP API: ``GET {base}/streams/{stream}/latest`` (or
    ``/versions/{version}``) with ``If-None-Match``; 304 means unchanged. A body is read up to
    ``max_bytes + 1`` bytes, then the download stops."""

    def __init__(
        self,
        base: str,
        stream: str,
        version: int | None,
        timeout: float,
        max_bytes: int,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        import httpx

        self.stream = stream
        self.version = version
        self.max_bytes = max_bytes
        tail = "latest" if version is None else f"versions/{int(version)}"
        self._url = f"{base.rstrip('/')}/streams/{quote(stream, safe='')}/{tail}"
        self._client = httpx.Client(timeout=timeout, headers=dict(headers or {}))
        self._transport_error = httpx.TransportError

    def fetch(self, known: str | None) -> Fetched | None:
        headers = {"If-None-Match": known} if known else {}
        try:
            with self._client.stream("GET", self._url, headers=headers) as resp:
                if resp.status_code == 304:
                    return None
                limit = self.max_bytes if resp.status_code == 200 else 64 * 1024
                body = bytearray()
                for chunk in resp.iter_bytes():
                    body += chunk
                    if len(body) > limit:
                        break
        except self._transport_error as err:
            raise ConnectionError(f"GET {self._url}: {err}") from err
        if resp.status_code != 200:
            try:
                detail = json.loads(body)["detail"]
            except (ValueError, KeyError, TypeError):
                detail = body[:200].decode("utf-8", "replace")
            if resp.status_code in (401, 403):
                given = "was refused" if "authorization" in self._client.headers else "needs one"
                raise PermissionError(
                    f"GET {self._url}: HTTP {resp.status_code}: {detail} (the API is closed: "
                    f"pass token=… to Router.open / Assignment.open; the token {given})"
                )
            kind = FileNotFoundError if resp.status_code == 404 else ConnectionError
            raise kind(f"GET {self._url}: HTTP {resp.status_code}: {detail}")
        body = bytes(body[: self.max_bytes + 1])
        tag = resp.headers.get("etag") or f'"sha256:{hashlib.sha256(body).hexdigest()}"'
        if tag == known:
            return None
        return Fetched(tag, self._url, body, self.version)

    def close(self) -> None:
        self._client.close()


Source = Union[StoreSource, HttpSource]


def open_source(
    source: str | os.PathLike[str],
    stream: str,
    version: int | None,
    timeout: float,
    storage_options: Mapping[str, Any] | None,
    headers: Mapping[str, str] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Source:
    """The source ``source`` names for ``stream`` (pinned to ``version``, or following LATEST);
    ``InvalidNameError`` (a ValueError) for a stream name that breaks the name rule, before any
    read."""
    check_name(stream, "stream")  # InvalidNameError (a ValueError) before any read
    text = os.fspath(source)
    parts = urlsplit(text) if "://" in text else None
    if parts is None:
        return StoreSource(text, stream, version, max_bytes)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise ValueError(f"{text}: a file:// URL names a local path (file:///path)")
        return StoreSource(url2pathname(parts.path), stream, version, max_bytes)
    if parts.scheme in ("http", "https"):
        return HttpSource(text, stream, version, timeout, max_bytes, headers)
    return StoreSource(text, stream, version, max_bytes, storage_options)


def verified(fetched: Fetched, stream: str, max_bytes: int) -> Table:
    """The table in ``fetched``: bounded JSON, checked, checksum verified, and what was asked
    for."""
    doc = parse_document(fetched.body, fetched.where, max_bytes)
    table = table_from_document(doc)
    if table.stream != stream or fetched.version not in (None, table.version):
        raise ValueError(
            f"{fetched.where} holds {table.stream!r} v{table.version}, "
            f"not {stream!r}" + (f" v{fetched.version}" if fetched.version is not None else "")
        )
    return table
