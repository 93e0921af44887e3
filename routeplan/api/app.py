"""HTTP API for published routing tables (``routeplan serve``, Airflow plugin); it publishes
nothing.

    GET /healthz                                   is the store readable, how many streams
    GET /streams                                   every stream, its versions and LATEST
    GET /streams/{stream}/versions                 one stream's versions and LATEST
    GET /streams/{stream}/latest                   LATEST's document (ETag, Cache-Control: no-cache)
    GET /streams/{stream}/versions/{version}       a pinned version's document (immutable)
    GET /streams/{stream}/diff?from_version=A&to_version=B   what changes from A to B (B: LATEST)
    GET /streams/{stream}/plot.png                 LATEST's worker loads before and after (PNG)
    GET /streams/{stream}/outcomes?days=N          what its versions did, day by day (the guard)
    GET /streams/{stream}/overview                 LATEST, its last outcome, a hold (routing_views)
    GET /streams/{stream}/versions/{version}/explain   why a version routes as it does
    POST /streams/{stream}/plan                    a dry run: plan a stream's inputs by its policy
    GET /metrics                                   Prometheus metrics (routeplan.api.prometheus)
    GET /docs                                      Swagger UI from installed assets (offline_docs)
    GET /ui/…                                      the Routing pages (HTML; routeplan.api.ui)

``/outcomes`` serves the outcomes stage's reports (``<reports>/<day>/outcomes.json``) as
``routeplan outcomes`` prints them (``schemas/plan_outcomes.schema.json``). ``/plan`` takes a
stream's planning inputs (``schemas/stream_inputs.schema.json``, at most ``max_bytes``) and
answers what the nightly run would decide for them — the same ``plan_stream``, the deployment's
policy (a stream the policies file does not list gets its defaults, as at night; without a file,
``cg``) and the store's LATEST — as ``StreamPlan.summary()``; ``max_plans`` bound how many run at
once (429 beyond).

Documents are served as stored (the same JSON, compact; ``schemas/routing_table.schema.json``,
checksum intact) with the checksum as a strong ETag; ``If-None-Match`` answers 304. Every
request reads ``LATEST``; a version is parsed, schema-checked and checksum-verified once and
then kept in a small LRU, re-read if its file changes (on disk or in the bucket), and read within
the bounds of ``routeplan.contracts.documents`` (size, nesting). A stored document that fails
those checks is never served: the answer is 500 naming the file and the failure.

Bad input is a 4xx with a short message and never a server path: a stream name that breaks the
name rule (``routeplan.model.names``) is 404, as a stream that does not exist. ``/streams`` lists a
stream whose LATEST is broken with an ``error`` instead of failing for every stream.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, HTTPException, Query, Request, Response
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from routeplan import __version__, settings, storage
from routeplan.api import offline_docs, prometheus, routing_views, ui
from routeplan.api.dry_run import bounded_body, finite, plan_request
from routeplan.api.openapi import (
    DETAIL,
    DOCUMENT_ERRORS,
    ERRORS,
    openapi_schema,
    schema_response,
)
from routeplan.api.ui import AirflowLinks
from routeplan.contracts.documents import DEFAULT_MAX_BYTES
from routeplan.model.names import InvalidNameError, check_name
from routeplan.model.table import Table, table_from_document
from routeplan.publishing.diff import diff_tables
from routeplan.publishing.store import BrokenLatestError, RoutingStore, version_runs
from routeplan.publishing.store_files import LATEST
from routeplan.streams.outcome_reports import read_outcomes

log = logging.getLogger(__name__)

LATEST_CACHE_CONTROL = "no-cache"
VERSION_CACHE_CONTROL = "public, max-age=31536000, immutable"
MAX_VERSION = 2**63 - 1  # larger numbers are no version (and no file name)
MAX_OUTCOME_DAYS = 3660
_ENTITY_TAG = re.compile(r'(?:W/)?"([^"]*)"')

DESCRIPTION = """\
Published routing tables of routeplan; nothing is published through this API.

A producer routes a key with nothing but a routing-table document and Murmur3
(`schemas/routing_table.schema.json`). Poll `/streams/{stream}/latest` with `If-None-Match`
set to the last ETag (the document's `checksum`): 304 until a new version is published.
Pinned versions never change and may be cached forever. `/streams/{stream}/outcomes` says
what the versions did; `POST /streams/{stream}/plan` answers what a night would plan for a
stream's inputs (a dry run).
"""


@dataclass(frozen=True)
class _Published:
    """One version as served: the verified table, its JSON body and its file's identity."""

    table: Table
    body: bytes
    checksum: str
    file_id: tuple[Any, ...]  # RoutingStore.identity: changes when the file is replaced

    @property
    def etag(self) -> str:
        return f'"{self.checksum}"'


class _Tables:
    """Reads a store for the API: verified versions in a bounded LRU, LATEST on every call."""

    def __init__(self, store: RoutingStore, cache_size: int) -> None:
        self.store = store
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple[str, int], _Published] = OrderedDict()
        self._lock = threading.Lock()
        self._warned: dict[str, str] = {}  # stream (or "") -> the problem last logged

    def stream_names(self) -> list[str]:
        """Streams with a LATEST; 503 when the store's root cannot be read (no path said)."""
        try:
            if not self.store.is_remote:  # an object-store prefix is never "not a directory"
                root = Path(self.store.root)
                if not root.exists():
                    return []
                if not root.is_dir():
                    raise self._unavailable("the routing store's root is not a directory")
            streams = self.store.streams()
        except OSError as err:
            problem = f"the routing store is unreadable ({type(err).__name__})"
            raise self._unavailable(problem) from None
        self._recovered("")
        return streams

    def listing(self, streams: list[str] | None = None) -> list[dict[str, Any]]:
        """``/streams``: each stream's versions, or an ``error`` when its LATEST is broken."""
        entries: list[dict[str, Any]] = []
        for stream in self.stream_names() if streams is None else streams:
            try:
                latest = self.store.checked_latest(stream)
                versions = self.store.versions(stream)
            except BrokenLatestError as err:
                entries.append({"stream": stream, "error": self._warn(stream, err.problem)})
                continue
            except OSError as err:
                problem = f"unreadable ({type(err).__name__})"
                entries.append({"stream": stream, "error": self._warn(stream, problem)})
                continue
            self._recovered(stream)
            if latest is not None:  # None: LATEST went away meanwhile
                entries.append({"stream": stream, "latest_version": latest, "versions": versions})
        return entries

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

    def _corrupt(self, stream: str, name: str, failure: object) -> HTTPException:
        """500 naming the file relative to the store's root (the log has the full location): a
        client learns which table is broken, never where the server keeps it."""
        root = self.store.root
        log.error("refusing to serve %s: %s", storage.join(root, stream, name), failure)
        sep = "/" if self.store.is_remote else os.sep
        hidden = str(failure).replace(f"{root}{sep}", "").replace(root, "<root>")
        return HTTPException(
            500, f"stored routing table file {stream}/{name} is not servable: {hidden}"
        )

    def _unavailable(self, problem: str) -> HTTPException:
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
        _check_name(stream)
        try:
            latest = self.store.latest_version(stream)
        except (OSError, ValueError) as err:
            raise self._corrupt(stream, LATEST, err) from err
        if latest is None:
            streams = self.store.streams()
            known = f"streams: {', '.join(streams)}" if streams else "none published yet"
            raise HTTPException(404, f"no routing tables for stream {stream!r} ({known})")
        return latest

    def get(self, stream: str, version: int) -> _Published:
        """A verified version (cached while its file is unchanged); 404 if it is not stored."""
        _check_name(stream)
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

    def _read(self, stream: str, version: int, file_id: tuple[Any, ...]) -> _Published:
        try:
            doc = self.store.read_document(stream, version)  # JSON + schema
            table = table_from_document(doc)  # checksum and consistency
            if (doc["stream"], doc["version"]) != (stream, version):
                raise ValueError(f"holds {doc['stream']!r} v{doc['version']}")
        except FileNotFoundError:
            raise self._no_version(stream, version) from None
        except (OSError, ValueError, KeyError, TypeError) as err:
            self._forget(stream, version)
            raise self._corrupt(stream, f"v{version}.json", err) from err
        body = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()
        return _Published(table, body, doc["checksum"], file_id)

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


def _check_name(stream: str) -> None:
    """404 for a name that breaks the name rule: no such stream can exist (never a path)."""
    try:
        check_name(stream)
    except InvalidNameError as err:
        raise HTTPException(404, f"no such stream: {err}") from None


def etag_matches(if_none_match: str | None, checksum: str) -> bool:
    """RFC 9110 §13.1.2: ``*`` or any listed entity tag equal to ours by weak comparison."""
    if if_none_match is None:
        return False
    if if_none_match.strip() == "*":
        return True
    return checksum in _ENTITY_TAG.findall(if_none_match)


def _document_response(request: Request, published: _Published, cache_control: str) -> Response:
    headers = {"ETag": published.etag, "Cache-Control": cache_control}
    if etag_matches(request.headers.get("if-none-match"), published.checksum):
        return Response(status_code=304, headers=headers)
    return Response(published.body, media_type="application/json", headers=headers)


StreamParam = Annotated[
    str,
    PathParam(
        description="stream name, e.g. `clicks` (1-128 characters of A-Z a-z 0-9 . _ -, "
        "not starting with `.` or `-`; others are 404)"
    ),
]
VersionParam = Annotated[int, PathParam(ge=1, le=MAX_VERSION, description="a published version")]


def create_app(
    root: str | os.PathLike[str],
    *,
    cache_size: int = 64,
    max_bytes: int = DEFAULT_MAX_BYTES,
    dependencies: Sequence[Any] = (),
    reports_root: str | os.PathLike[str] | None = None,
    policies_file: str | os.PathLike[str] | None = None,
    max_plans: int = 2,
    airflow: AirflowLinks | None = None,
) -> FastAPI:
    """The API over the routing store at ``root`` (``<root>/<stream>/v<N>.json``, ``LATEST``):
    a directory or an object-store URI (``s3://bucket/routing``, ``s3a://…``).

    ``cache_size`` bounds the verified versions kept in memory and ``max_bytes`` the size of a
    version file it reads and of a request body; ``dependencies`` (FastAPI ``Depends``) run
    before every endpoint, e.g. the Airflow plugin's authentication. ``reports_root`` (default
    ``settings.reports_root()``) holds the outcomes reports, ``policies_file`` (default
    ``settings.policies_file()``, read at each dry run) the streams' policies; ``max_plans``
    dry runs plan at once. ``airflow`` says how the Routing pages reach Airflow when the app is
    mounted in its API server (``routeplan.api.ui``; None: ``routeplan serve``).
    """
    tables = _Tables(RoutingStore(root, max_bytes=max_bytes), cache_size)
    reports = os.fspath(reports_root) if reports_root is not None else settings.reports_root()
    policies_path = (
        os.fspath(policies_file) if policies_file is not None else settings.policies_file()
    )
    planning = threading.BoundedSemaphore(max_plans)
    app = FastAPI(
        dependencies=list(dependencies),
        title="routeplan routing tables",
        version=__version__,
        description=DESCRIPTION,
        openapi_tags=[
            {"name": "health", "description": "whether the routing store can be read"},
            {"name": "streams", "description": "which streams and versions are published"},
            {"name": "tables", "description": "routing-table documents (ETag = checksum)"},
            {"name": "diff", "description": "what changes between two versions"},
            {"name": "plots", "description": "pictures of the published tables"},
            {"name": "outcomes", "description": "what published versions did, the guard"},
            {"name": "plans", "description": "dry runs: what a night would plan (never published)"},
        ],
    )
    document = schema_response("routing_table", "the routing-table document, as stored")
    document["headers"] = {
        "ETag": {
            "description": 'the document\'s checksum, quoted: `"sha256:…"`',
            "schema": {"type": "string"},
        },
        "Cache-Control": {
            "description": "`no-cache` for LATEST, `immutable` for a version",
            "schema": {"type": "string"},
        },
    }

    @app.get(
        "/healthz",
        tags=["health"],
        summary="Whether the routing store can be read",
        response_model=None,
        responses={
            200: schema_response("routing_health", "ok, or degraded: some streams are broken"),
            503: schema_response("routing_health", "unavailable: the store cannot be read"),
        },
    )
    def healthz() -> Any:
        try:
            streams = tables.stream_names()
        except HTTPException as err:
            return JSONResponse({"status": "unavailable", "detail": err.detail}, status_code=503)
        broken = sum("error" in entry for entry in tables.listing(streams))
        body: dict[str, Any] = {
            "status": "degraded" if broken else "ok",
            "streams": len(streams),
            "broken": broken,
        }
        if not streams:
            body["detail"] = "nothing published yet"
        return body

    @app.get(
        "/streams",
        tags=["streams"],
        summary="Every published stream",
        response_model=None,
        responses={
            200: schema_response("routing_streams", "streams and versions (or what is wrong)"),
            503: {"description": "the routing store cannot be read", "content": DETAIL},
        },
    )
    def list_streams() -> dict[str, Any]:
        return {"streams": tables.listing()}

    @app.get(
        "/streams/{stream}/versions",
        tags=["streams"],
        summary="One stream's versions",
        response_model=None,
        responses={200: schema_response("routing_versions", "the stream's versions"), **ERRORS},
    )
    def list_versions(stream: StreamParam) -> dict[str, Any]:
        return tables.versions(stream)

    @app.get(
        "/streams/{stream}/latest",
        tags=["tables"],
        summary="LATEST's routing table",
        response_class=Response,
        responses={200: document, **DOCUMENT_ERRORS},
    )
    def latest(stream: StreamParam, request: Request) -> Response:
        published = tables.get(stream, tables.latest(stream))
        return _document_response(request, published, LATEST_CACHE_CONTROL)

    @app.get(
        "/streams/{stream}/versions/{version}",
        tags=["tables"],
        summary="A pinned routing-table version",
        response_class=Response,
        responses={200: document, **DOCUMENT_ERRORS},
    )
    def version(stream: StreamParam, version: VersionParam, request: Request) -> Response:
        published = tables.get(stream, version)
        return _document_response(request, published, VERSION_CACHE_CONTROL)

    @app.get(
        "/streams/{stream}/diff",
        tags=["diff"],
        summary="Moves from one version to another",
        response_model=None,
        responses={
            200: schema_response("routing_diff", "the moves and the load they carry"),
            **ERRORS,
        },
    )
    def diff(
        stream: StreamParam,
        response: Response,
        from_version: Annotated[int, Query(ge=1, le=MAX_VERSION, description="the older version")],
        to_version: Annotated[
            int | None, Query(ge=1, le=MAX_VERSION, description="default: LATEST")
        ] = None,
    ) -> dict[str, Any]:
        pinned = to_version is not None
        new = tables.get(stream, to_version if pinned else tables.latest(stream)).table
        old = tables.get(stream, from_version).table
        cache_control = VERSION_CACHE_CONTROL if pinned else LATEST_CACHE_CONTROL
        response.headers["Cache-Control"] = cache_control
        try:
            return diff_tables(old, new)
        except ValueError as err:  # e.g. a key_routing and a partition_assignment table
            raise HTTPException(422, f"{stream}: v{from_version} → v{new.version}: {err}") from err

    @app.get(
        "/streams/{stream}/plot.png",
        tags=["plots"],
        summary="LATEST's worker loads, before and after",
        description="Each worker's load relative to its capacity on the loads LATEST was "
        "planned on: under the version it replaced (when still stored) and under LATEST, with "
        "the fair share (key routing) or the bin capacity (partitions) as a line. The ETag "
        "changes with LATEST.",
        response_class=Response,
        responses={
            200: {"description": "a PNG picture", "content": {"image/png": {}}},
            **DOCUMENT_ERRORS,
            422: {"description": "LATEST records no planning load", "content": DETAIL},
        },
    )
    def plot(stream: StreamParam, request: Request) -> Response:
        from routeplan.plots import version_png

        published = tables.get(stream, tables.latest(stream))
        table = published.table
        parent = None
        if table.parent_version is not None:
            try:
                parent = tables.get(stream, table.parent_version).table
            except HTTPException as err:
                if err.status_code != 404:  # pruned: the plot shows LATEST alone
                    raise
        tag = f"{published.checksum}-plot-v{parent.version if parent else 0}"
        headers = {"ETag": f'"{tag}"', "Cache-Control": LATEST_CACHE_CONTROL}
        if etag_matches(request.headers.get("if-none-match"), tag):
            return Response(status_code=304, headers=headers)
        try:
            png, _ = version_png(table, parent)
        except ValueError as err:
            raise HTTPException(422, f"{stream} v{table.version}: {err}") from err
        return Response(png, media_type="image/png", headers=headers)

    @app.get(
        "/streams/{stream}/outcomes",
        tags=["outcomes"],
        summary="What the stream's versions did, day by day",
        description="The outcomes stage's records for the stream (oldest day first) from the "
        "newest `days` nightly reports: each version's headline measure predicted, realized and "
        "realized by its predecessor, the error, the verdict, and the regression guard's "
        "decision. An empty list when there is none yet; a report that cannot be read is "
        "skipped (and logged).",
        response_model=None,
        responses={200: schema_response("plan_outcomes", "the outcome records"), **ERRORS},
    )
    def outcomes(
        stream: StreamParam,
        days: Annotated[
            int,
            Query(ge=1, le=MAX_OUTCOME_DAYS, description="the newest N days with a report"),
        ] = 30,
    ) -> list[dict[str, Any]]:
        tables.latest(stream)  # 404: no such stream (or a name that breaks the rule)
        try:
            found = read_outcomes(reports, stream=stream, days=days)
        except OSError as err:
            raise tables._unavailable(
                f"the reports are unreadable ({type(err).__name__})"
            ) from None
        for warning in found.warnings:
            log.warning("outcomes of %s: %s", stream, warning)
        return found.records

    inputs_body = {
        "required": True,
        "description": "the stream's planning inputs, as the plan job writes them to "
        "`<home>/reports/<day>/plan-inputs/<stream>.json`",
        "content": {"application/json": {"schema": openapi_schema("stream_inputs")}},
    }

    @app.post(
        "/streams/{stream}/plan",
        tags=["plans"],
        summary="Plan a stream's inputs by its policy (a dry run)",
        description="What the nightly run would decide for these planning inputs: the "
        "stream's policy from the deployment's policies file (a stream it does not list gets "
        "the defaults, as at night), against the store's LATEST. Nothing is published. The "
        "answer is the decision's summary: every candidate with its moves and predicted "
        "numbers, the one selected and why, the baseline, the rerun rule.",
        response_model=None,
        openapi_extra={"requestBody": inputs_body},
        responses={
            200: {
                "description": "the decision (`StreamPlan.summary()`)",
                "content": {"application/json": {"schema": {"type": "object"}}},
            },
            400: {"description": "the body is not JSON, or too deep", "content": DETAIL},
            404: ERRORS[404],
            413: {"description": "the body is larger than the API's bound", "content": DETAIL},
            422: {
                "description": "not a stream's planning inputs, inputs of another stream or "
                "kind than its policy's, or the policy cannot plan them (`detail` says why)",
                "content": DETAIL,
            },
            429: {"description": "as many dry runs as allowed are running", "content": DETAIL},
            500: {
                "description": "LATEST or the policies file is broken (`detail` says what)",
                "content": DETAIL,
            },
        },
    )
    async def dry_run(stream: StreamParam, request: Request) -> Any:
        _check_name(stream)
        raw = await bounded_body(request, max_bytes)
        if not planning.acquire(blocking=False):
            raise HTTPException(429, f"{max_plans} dry runs are running; retry later")
        try:
            decided = await run_in_threadpool(_plan_inputs, stream, raw)
        finally:
            planning.release()
        return JSONResponse(finite(decided))

    def _plan_inputs(stream: str, raw: bytes) -> dict[str, Any]:
        def current() -> Any:
            try:
                latest = tables.store.latest_version(stream)
            except (OSError, ValueError) as err:
                raise tables._corrupt(stream, LATEST, err) from err
            return tables.get(stream, latest).table if latest is not None else None

        return plan_request(stream, raw, max_bytes, policies_path, current)

    # --- routeplan.api.routing_views: explain a version, a stream's overview
    app.openapi_tags = [*(app.openapi_tags or []), *routing_views.TAGS]
    app.include_router(routing_views.router(tables, reports))
    # --- /docs from installed assets (no CDN); /metrics and the request metrics
    offline_docs.install(app)
    scrape, _, request_metrics = prometheus.metrics(tables, reports)
    app.include_router(scrape)
    app.add_middleware(prometheus.RequestMetrics, **request_metrics)
    # --- the Routing pages (/ui/)
    app.include_router(ui.router(tables, reports, airflow))

    return app


def serve(
    root: str | os.PathLike[str],
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "info",
    *,
    allow_anonymous_read: bool = False,
) -> None:
    """Serve the API over ``root`` with uvicorn until interrupted: closed unless
    ``$ROUTEPLAN_API_TOKEN`` is set (clients send it as a bearer token) or
    ``allow_anonymous_read`` opens it (``routeplan.api.auth.serve_dependencies``; neither is a
    ``UsageError`` before anything listens)."""
    import uvicorn

    from routeplan.api.auth import serve_dependencies

    dependencies = serve_dependencies(allow_anonymous_read)
    uvicorn.run(
        create_app(root, dependencies=dependencies), host=host, port=port, log_level=log_level
    )
