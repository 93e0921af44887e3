"""The API's views of a stream beyond its documents: why a version routes as it does
(``GET /streams/{stream}/versions/{version}/explain``) and where each stream stands (``GET
/streams/{stream}/overview``) — what the Routing page (``routeplan.api.ui``) and the metrics
(``routeplan.api.prometheus``) show, as JSON.

``router(tables, reports_root)`` is mounted by ``create_app``; ``tables`` is the app's reader of
the store (verified versions; ``get``, ``latest``, ``listing``), so the same cache, the same
404s and 500s apply. An explanation is ``routeplan.streams.publications.explain_published``
(``schemas/routing_explain.schema.json``); an overview joins LATEST's document, the stream's
hold and its newest outcome record (``schemas/routing_overview.schema.json``).
"""

from __future__ import annotations

import logging
import math
from typing import Annotated, Any, Protocol

from fastapi import APIRouter, HTTPException
from fastapi import Path as PathParam
from pydantic import BeforeValidator
from starlette.concurrency import run_in_threadpool

from routeplan.api.openapi import ERRORS, schema_response
from routeplan.api.params import MAX_VERSION, canonical_version
from routeplan.model.table import Table
from routeplan.planning.catalog import describe
from routeplan.publishing.explain import published_by
from routeplan.publishing.store import RoutingStore
from routeplan.streams.outcome_reports import read_outcomes
from routeplan.streams.outcomes import prediction
from routeplan.streams.publications import explain_published, publications

log = logging.getLogger(__name__)

OUTCOME_DAYS = 30  # the newest days of outcomes an overview and the stream page read


class PublishedTable(Protocol):
    table: Table


class TableReader(Protocol):
    """What these views need of the app's table reader (``routeplan.api.app``)."""

    store: RoutingStore

    def get(self, stream: str, version: int) -> PublishedTable: ...

    def latest(self, stream: str) -> int: ...

    def listing(self, streams: list[str] | None = None) -> list[dict[str, Any]]: ...


TAGS = [
    {"name": "explain", "description": "why a version routes as it does, where a stream stands"}
]


Stream = Annotated[str, PathParam(description="stream name, e.g. `clicks`")]
Version = Annotated[
    int,
    BeforeValidator(canonical_version),
    PathParam(ge=1, le=MAX_VERSION, description="a published version, in plain digits"),
]


def stored_parent(tables: TableReader, table: Table) -> Table | None:
    """The version ``table`` replaced, when still stored (pruned: None); other errors raise."""
    if table.parent_version is None:
        return None
    try:
        return tables.get(table.stream, table.parent_version).table
    except HTTPException as err:
        if err.status_code != 404:
            raise
        return None


def explain(tables: TableReader, reports_root: str, stream: str, version: int) -> dict[str, Any]:
    """The explanation of ``stream`` v``version`` (404 / 500 as the documents)."""
    table = tables.get(stream, version).table
    explained, warnings = explain_published(table, stored_parent(tables, table), reports_root)
    for warning in warnings:
        log.warning("explain %s v%s: %s", stream, version, warning)
    return explained


def _number(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok and math.isfinite(value) else None


def overview(tables: TableReader, reports_root: str, stream: str) -> dict[str, Any]:
    """Where ``stream`` stands: LATEST (version, when and by what it was published, strategy,
    the imbalance its plan observed in the logs and the one it predicted), the newest outcome
    (the measure predicted and realized, the realized imbalance, the verdict, the guard's
    action) and whether it is held. 404 for an unknown stream."""
    latest = tables.latest(stream)
    table = tables.get(stream, latest).table
    info = describe(table.strategy)
    found = read_outcomes(reports_root, stream=stream, days=OUTCOME_DAYS)
    published = publications(reports_root, stream, days=OUTCOME_DAYS)
    for warning in [*found.warnings, *published.warnings]:
        log.warning("overview of %s: %s", stream, warning)
    publication = published.of(latest)
    plan = (publication.plan if publication is not None else None) or {}
    last = found.records[-1] if found.records else None
    guard = (last or {}).get("guard") or {}
    hold = tables.store.held(stream)
    root = str(tables.store.root)
    return {
        "stream": stream,
        "kind": table.kind,
        "strategy": table.strategy,
        "strategy_title": info.title,
        "paper": info.paper,
        "latest_version": latest,
        "published_at": table.created_at,
        "published_by": published_by(table),
        "published_day": publication.day if publication is not None else None,
        "reason": table.reason,
        "observed_imbalance": _number(plan.get("observed_imbalance")),
        # what LATEST was published predicting, out of sample (None: fitted on its own day)
        "predicted_imbalance": _number(prediction(table, "imbalance")),
        "predicted_peak_excess": _number(prediction(table, "peak_excess")),
        "outcome": None
        if last is None
        else {
            "day": last["interval_start"],
            "version": last["version"],
            "measure": last["measure"],
            "predicted": _number(last.get("predicted")),
            "realized": _number(last.get("realized")),
            "realized_imbalance": _number(last.get("realized_imbalance")),
            "realized_peak_excess": _number(last.get("realized_peak_excess")),
            "band": last.get("band"),
            "verdict": last["verdict"],
            "guard_action": guard.get("action"),
        },
        "held": hold is not None,
        "hold_reason": None if hold is None else str(hold["reason"]).replace(root, "<root>"),
        "held_by": None if hold is None else hold.get("by", "person"),
        "regressed": last is not None and last["verdict"] == "regressed",
    }


def router(tables: TableReader, reports_root: str) -> APIRouter:
    """The explain and overview routes over ``tables`` and the reports at ``reports_root``."""
    api = APIRouter()

    @api.get(
        "/streams/{stream}/versions/{version}/explain",
        tags=["explain"],
        summary="Why a version routes as it does",
        description="Every move against the version it replaced (key group, hot key or "
        "partition; its share of the load; from → to; the overloaded worker it relieved), each "
        "worker's load against its fair share or the bin capacity before and after, the budget "
        "used against the limits of its night's plan, and the strategy's objective terms.",
        response_model=None,
        responses={200: schema_response("routing_explain", "the explanation"), **ERRORS},
    )
    async def explain_route(stream: Stream, version: Version) -> dict[str, Any]:
        return await run_in_threadpool(explain, tables, reports_root, stream, version)

    @api.get(
        "/streams/{stream}/overview",
        tags=["explain"],
        summary="Where a stream stands: LATEST, its last outcome, a hold",
        response_model=None,
        responses={200: schema_response("routing_overview", "the stream's overview"), **ERRORS},
    )
    async def overview_route(stream: Stream) -> dict[str, Any]:
        return await run_in_threadpool(overview, tables, reports_root, stream)

    return api
