"""Prometheus metrics of the API: ``GET /metrics`` (``/routeplan/metrics`` inside Airflow), in
the text format of ``prometheus_client`` with its conventions (``_total`` counters, ``_seconds``
units, base units, one registry per app).

Per stream, read at each scrape from the store and the reports (``routing_views.overview``, the
same numbers as the Routing page):

==============================================  =================================================
``routeplan_stream_latest_version``             the version LATEST names
``routeplan_stream_published_timestamp_seconds``  when LATEST was published (Unix time)
``routeplan_stream_predicted_imbalance``        LATEST's predicted imbalance (0 = balanced)
``routeplan_stream_observed_imbalance``         the logs' imbalance LATEST's plan started from
``routeplan_stream_realized_imbalance``         the newest outcome's realized imbalance
``routeplan_stream_predicted_peak_excess``      LATEST's predicted peak excess (forecast plans)
``routeplan_stream_realized_peak_excess``       the newest outcome's realized peak excess
``routeplan_stream_verdict``                    1 for the newest outcome's verdict (label
                                                ``verdict``), 0 for the others
``routeplan_stream_held``                       1 while the stream is held (``routeplan hold``)
``routeplan_stream_regressed``                  1 when the newest outcome regressed
``routeplan_streams``                           streams with a LATEST; ``routeplan_stream_errors``
                                                those whose overview failed (each logged)
==============================================  =================================================

A number that is unknown (no outcome yet) is left out, not reported as 0. Per request class —
the route's template (``/streams/{stream}/latest``), never the raw path, so that the number of
series stays bounded — and method: ``routeplan_api_requests_total`` (label ``status``) and the
``routeplan_api_request_duration_seconds`` histogram. ``/metrics`` itself is behind the API's
authentication like every data route (Prometheus sends ``authorization: Bearer <token>``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from fastapi import APIRouter, HTTPException, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from routeplan.api.routing_views import TableReader, overview

log = logging.getLogger(__name__)

VERDICTS = ("unknown", "no_traffic", "regressed", "as_predicted", "improved", "off_prediction")
UNMATCHED = "unmatched"  # the request class of a path no route answers


class StreamCollector(Collector):
    """The per-stream gauges, computed from ``overviews()`` at each scrape."""

    def __init__(self, overviews: Callable[[], tuple[list[dict[str, Any]], int]]) -> None:
        self.overviews = overviews

    def collect(self) -> Iterator[GaugeMetricFamily]:
        views, errors = self.overviews()

        def family(name: str, doc: str, labels: tuple[str, ...] = ("stream",)):
            return GaugeMetricFamily(f"routeplan_stream_{name}", doc, labels=list(labels))

        version = family("latest_version", "The version LATEST names")
        published = family(
            "published_timestamp_seconds", "When LATEST was published, seconds since the epoch"
        )
        predicted = family("predicted_imbalance", "LATEST's predicted imbalance (0 = balanced)")
        observed = family("observed_imbalance", "The logs' imbalance LATEST was planned from")
        realized = family("realized_imbalance", "The newest outcome's realized imbalance")
        peak_predicted = family(
            "predicted_peak_excess", "LATEST's predicted peak excess (planned on the forecast)"
        )
        peak_realized = family(
            "realized_peak_excess",
            "The newest outcome's peak excess: the busiest worker-window over the busiest "
            "window's fair share, minus 1",
        )
        verdict = family(
            "verdict", "1 for the newest outcome's verdict, 0 for the others", ("stream", "verdict")
        )
        held = family("held", "1 while the stream is held: nothing new is published")
        regressed = family("regressed", "1 when the newest outcome's verdict is regressed")
        for view in views:
            stream = view["stream"]
            version.add_metric([stream], view["latest_version"])
            when = _timestamp(view["published_at"])
            if when is not None:
                published.add_metric([stream], when)
            for metric, value in (
                (predicted, view["predicted_imbalance"]),
                (observed, view["observed_imbalance"]),
                (realized, (view["outcome"] or {}).get("realized_imbalance")),
                (peak_predicted, view["predicted_peak_excess"]),
                (peak_realized, (view["outcome"] or {}).get("realized_peak_excess")),
            ):
                if value is not None:
                    metric.add_metric([stream], value)
            if view["outcome"] is not None:
                for name in VERDICTS:
                    verdict.add_metric([stream, name], float(view["outcome"]["verdict"] == name))
            held.add_metric([stream], float(view["held"]))
            regressed.add_metric([stream], float(view["regressed"]))
        yield from (version, published, predicted, observed, realized, peak_predicted)
        yield from (peak_realized, verdict, held, regressed)
        count = GaugeMetricFamily("routeplan_streams", "Streams with a LATEST")
        count.add_metric([], len(views) + errors)
        yield count
        failed = GaugeMetricFamily(
            "routeplan_stream_errors", "Streams whose state could not be read (see the log)"
        )
        failed.add_metric([], errors)
        yield failed


def _timestamp(text: str | None) -> float | None:
    try:
        return datetime.fromisoformat(text).timestamp() if text else None
    except ValueError:
        return None


class RequestMetrics:
    """ASGI middleware counting and timing each request by its class (route template)."""

    def __init__(self, app: ASGIApp, requests: Counter, durations: Histogram) -> None:
        self.app = app
        self.requests = requests
        self.durations = durations

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = getattr(scope.get("route"), "path", None) or UNMATCHED
            method = scope.get("method", "")
            self.requests.labels(route, method, str(status)).inc()
            self.durations.labels(route, method).observe(time.perf_counter() - started)


def metrics(tables: TableReader, reports_root: str) -> tuple[APIRouter, CollectorRegistry, dict]:
    """The ``/metrics`` route, its registry, and the middleware's keyword arguments
    (``app.add_middleware(RequestMetrics, **kwargs)``)."""
    registry = CollectorRegistry(auto_describe=False)  # no scrape at registration

    def overviews() -> tuple[list[dict[str, Any]], int]:
        views, errors = [], 0
        for entry in tables.listing():
            if "error" in entry:
                errors += 1
                continue
            try:
                views.append(overview(tables, reports_root, entry["stream"]))
            except (HTTPException, OSError, ValueError) as err:
                errors += 1
                log.warning("metrics: stream %s: %s", entry["stream"], err)
        return views, errors

    registry.register(StreamCollector(overviews))
    requests = Counter(
        "routeplan_api_requests",
        "Requests answered, by route template, method and status",
        ["route", "method", "status"],
        registry=registry,
    )
    durations = Histogram(
        "routeplan_api_request_duration_seconds",
        "Time to answer a request, by route template and method",
        ["route", "method"],
        registry=registry,
    )
    api = APIRouter()

    @api.get(
        "/metrics",
        tags=["metrics"],
        summary="Prometheus metrics: each stream's state, requests by class",
        response_class=Response,
        responses={200: {"description": "Prometheus text format", "content": {"text/plain": {}}}},
    )
    async def scrape() -> Response:
        body = await run_in_threadpool(generate_latest, registry)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    return api, registry, {"requests": requests, "durations": durations}
