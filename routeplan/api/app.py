"""HTTP API for published routing tables (``routeplan serve``, Airflow plugin); it publishes
nothing.

    GET /healthz                                   the store's root there, streams LATEST serves
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
name rule (``routeplan.model.names``) is 404, as a stream that does not exist; a version that is
not plain digits (``03``, ``+3``, ``3.0``, ``3e0``) is 422 in every route, so a version cached as
immutable has one address. ``/streams`` lists a stream whose LATEST ``/latest`` cannot serve
with an ``error`` instead of failing for every stream, and ``/healthz`` counts those streams
(``routeplan.api.tables``: one check for the three); it is 503 ``unavailable`` when the store's
local root does not exist or cannot be read.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import FastAPI, HTTPException, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BeforeValidator
from starlette.concurrency import run_in_threadpool

from routeplan import __version__, settings
from routeplan.api import offline_docs, prometheus, routing_views, ui
from routeplan.api.dry_run import bounded_body, finite, plan_request
from routeplan.api.openapi import (
    DETAIL,
    DOCUMENT_ERRORS,
    ERRORS,
    openapi_schema,
    schema_response,
)
from routeplan.api.params import (
    MAX_VERSION,
    VERSION_RULE,
    StreamParam,
    VersionParam,
    canonical_version,
)
from routeplan.api.tables import NotServable, Published, Tables, check_stream_name, refused
from routeplan.api.ui import AirflowLinks
from routeplan.contracts.documents import DEFAULT_MAX_BYTES
from routeplan.publishing.diff import diff_tables
from routeplan.publishing.store import RoutingStore
from routeplan.streams.outcome_reports import read_outcomes

log = logging.getLogger(__name__)

LATEST_CACHE_CONTROL = "no-cache"
VERSION_CACHE_CONTROL = "public, max-age=31536000, immutable"
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


def etag_matches(if_none_match: str | None, checksum: str) -> bool:
    """RFC 9110 §13.1.2: ``*`` or any listed entity tag equal to ours by weak comparison."""
    if if_none_match is None:
        return False
    if if_none_match.strip() == "*":
        return True
    return checksum in _ENTITY_TAG.findall(if_none_match)


def _document_response(request: Request, published: Published, cache_control: str) -> Response:
    headers = {"ETag": published.etag, "Cache-Control": cache_control}
    if etag_matches(request.headers.get("if-none-match"), published.checksum):
        return Response(status_code=304, headers=headers)
    return Response(published.body, media_type="application/json", headers=headers)


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
    tables = Tables(RoutingStore(root, max_bytes=max_bytes), cache_size)
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
    app.add_exception_handler(NotServable, refused)
    document = schema_response("routing_table", "the routing-table document, as stored")
    document["headers"] = {
        "ETag": {
            "description": 'the document\'s checksum, quoted: `"jcs-sha256:…"` '
            '(`"sha256:…"` for documents published before)',
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
        published = tables.latest_document(stream)
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
        from_version: Annotated[
            int,
            BeforeValidator(canonical_version),
            Query(ge=1, le=MAX_VERSION, description=f"the older version, in {VERSION_RULE}"),
        ],
        to_version: Annotated[
            int | None,
            BeforeValidator(canonical_version),
            Query(ge=1, le=MAX_VERSION, description=f"default: LATEST; {VERSION_RULE}"),
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

        published = tables.latest_document(stream)
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
            raise tables.unavailable(f"the reports are unreadable ({type(err).__name__})") from None
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
        check_stream_name(stream)
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
                return tables.latest_document(stream).table
            except HTTPException as err:
                if err.status_code == 404:  # no LATEST: nothing published yet
                    return None
                raise

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
