"""The Routing pages: server-rendered HTML (Jinja2, ``templates/``) under ``/ui/`` — inside
Airflow at ``/routeplan/ui/``, reached from Airflow's navigation (plugins/routeplan_plugin.py's
``external_views``).

==========================================  ===================================================
``/ui/``                                    Streams: each stream's kind, strategy (name and
                                            paper), LATEST and when and by what it was
                                            published, observed / predicted / realized
                                            imbalance, the last verdict, held / regressed
``/ui/streams/{stream}``                    a stream: its versions (who or what published each),
                                            LATEST's worker loads before and after, realized
                                            against predicted night by night, auto's candidates
                                            and the reason of the choice, the diff of any two
                                            versions (``?from_version=&to_version=``)
``/ui/streams/{stream}/versions/{n}``       a version explained (``routing_views.explain``)
``/ui/streams/{stream}/rollback?version=N`` the confirmation naming what changes; inside Airflow
                                            its button triggers ``routeplan_rollback`` through
                                            Airflow's REST API from the browser, so as the
                                            logged-in user (Airflow answers 403 to a user who
                                            may not trigger it), then follows the run until the
                                            new version is published
``/ui/runs/{dag_id}/{run_id}``              "Plans of this run": what a nightly (or rollback)
                                            run published, from its reports
==========================================  ===================================================

The numbers are the API's (``routing_views.overview`` and ``explain``): the Streams table marks
each with ``data-field``/``data-value`` so that a test can compare them with the JSON. Pictures
are the project's matplotlib PNGs (``routeplan.plots``). Every URL in a page carries the mount's
``root_path``; nothing is loaded from elsewhere. The pages sit behind the same dependencies as
the rest of the API (``routeplan.api.auth``) and are left out of the OpenAPI description.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request, Response
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape
from pydantic import BeforeValidator
from starlette.concurrency import run_in_threadpool

from routeplan.api.params import MAX_VERSION, canonical_version
from routeplan.api.routing_views import (
    OUTCOME_DAYS,
    Stream,
    TableReader,
    Version,
    explain,
    overview,
    stored_parent,
)
from routeplan.publishing.diff import diff_tables
from routeplan.publishing.explain import published_by
from routeplan.streams.outcome_reports import read_outcomes
from routeplan.streams.outcomes import prediction
from routeplan.streams.publications import publications, reports_of_run

log = logging.getLogger(__name__)

UI = "/ui"
SHOWN_VERSIONS = 50
SHOWN_MOVES = 50
OWN_DAGS = ("routeplan_nightly", "routeplan_rollback")


@dataclass(frozen=True)
class AirflowLinks:
    """How the pages reach Airflow when the app is mounted in its API server: the mount
    (``/routeplan``, stripped from the ``root_path`` to find Airflow's own root), the DAG that
    rolls back, and ``who(request)``: the user's name and whether they may trigger that DAG
    (None: not known here; Airflow decides when the button is pressed)."""

    mount: str = "/routeplan"
    rollback_dag: str = "routeplan_rollback"
    who: Callable[[Request], tuple[str | None, bool | None]] | None = None


def _number(value: Any) -> str:
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return "-" if value is None else str(value)
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _percent(value: Any) -> str:
    return "-" if value is None else f"{100 * value:.2f} %"


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=select_autoescape(["html"]),
    )
    env.filters["num"] = _number
    env.filters["pct"] = _percent
    return env


def router(
    tables: TableReader, reports_root: str, airflow: AirflowLinks | None = None
) -> APIRouter:
    """The Routing pages over ``tables`` and the reports at ``reports_root``; ``airflow`` when
    mounted in Airflow (the Roll back button)."""
    pages = APIRouter(include_in_schema=False)
    templates = environment()

    def render(request: Request, name: str, **context: Any) -> HTMLResponse:
        base = request.scope.get("root_path", "").rstrip("/")
        html = templates.get_template(name).render(base=base, ui=f"{base}{UI}", **context)
        return HTMLResponse(html, headers={"Cache-Control": "no-cache"})

    @pages.get(f"{UI}/")
    async def streams_page(request: Request) -> HTMLResponse:
        def gather() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
            views, broken = [], []
            for entry in tables.listing():
                if "error" in entry:
                    broken.append(entry)
                    continue
                try:
                    views.append(overview(tables, reports_root, entry["stream"]))
                except HTTPException as err:
                    broken.append({"stream": entry["stream"], "error": err.detail})
            return views, broken

        views, broken = await run_in_threadpool(gather)
        return render(request, "streams.html", streams=views, broken=broken)

    @pages.get(UI, include_in_schema=False)
    async def streams_redirect(request: Request) -> Response:
        base = request.scope.get("root_path", "").rstrip("/")
        return Response(status_code=307, headers={"Location": f"{base}{UI}/"})

    @pages.get(f"{UI}/streams/{{stream}}")
    async def stream_page(
        request: Request,
        stream: Stream,
        from_version: Annotated[
            int | None, BeforeValidator(canonical_version), Query(ge=1, le=MAX_VERSION)
        ] = None,
        to_version: Annotated[
            int | None, BeforeValidator(canonical_version), Query(ge=1, le=MAX_VERSION)
        ] = None,
    ) -> HTMLResponse:
        context = await run_in_threadpool(_stream_context, stream, from_version, to_version)
        return render(request, "stream.html", **context)

    def _stream_context(stream: str, frm: int | None, to: int | None) -> dict[str, Any]:
        view = overview(tables, reports_root, stream)
        listed = tables.versions(stream)["versions"]
        published = publications(reports_root, stream, days=None)
        rows = []
        for version in reversed(listed[-SHOWN_VERSIONS:]):
            by = published.of(version)
            row: dict[str, Any] = {"version": version, "day": None, "run_id": None}
            if by is not None:
                row.update(day=by.day, run_id=by.run_id)
            try:
                table = tables.get(stream, version).table
            except HTTPException as err:
                rows.append({**row, "error": err.detail, "published_by": "-", "strategy": ""})
                continue
            predicted = prediction(table, "imbalance")
            rows.append(
                {
                    **row,
                    "created_at": table.created_at,
                    "published_by": published_by(table),
                    "restored_version": table.restored_version,
                    "strategy": table.strategy,
                    "reason": table.reason,
                    "predicted_imbalance": predicted,
                }
            )
        latest_publication = published.of(view["latest_version"])
        plan = latest_publication.plan if latest_publication is not None else None
        outcomes = read_outcomes(reports_root, stream=stream, days=OUTCOME_DAYS).records
        diff, diff_error = None, None
        default_from = view["latest_version"] if len(listed) < 2 else listed[-2]
        diff_from, diff_to = frm or default_from, to or view["latest_version"]
        if diff_from != diff_to:
            try:
                diff = diff_tables(
                    tables.get(stream, diff_from).table, tables.get(stream, diff_to).table
                )
            except HTTPException as err:
                diff_error = err.detail
            except ValueError as err:
                diff_error = f"v{diff_from} → v{diff_to}: {err}"
        moves = sorted((diff or {}).get("moves", []), key=lambda m: -(m["load"] or 0.0))
        return {
            "stream": stream,
            "view": view,
            "versions": rows,
            "more_versions": max(0, len(listed) - SHOWN_VERSIONS),
            "all_versions": list(reversed(listed)),
            "outcomes": outcomes,
            "plan": plan,
            "diff": diff,
            "diff_moves": moves[:SHOWN_MOVES],
            "diff_error": diff_error,
            "diff_from": diff_from,
            "diff_to": diff_to,
        }

    @pages.get(f"{UI}/streams/{{stream}}/versions/{{version}}")
    async def version_page(request: Request, stream: Stream, version: Version) -> HTMLResponse:
        def gather() -> tuple[dict[str, Any], int]:
            return explain(tables, reports_root, stream, version), tables.latest(stream)

        explained, latest = await run_in_threadpool(gather)
        return render(
            request,
            "version.html",
            e=explained,
            latest=latest,
            moves=explained["moves"][:SHOWN_MOVES],
        )

    @pages.get(f"{UI}/streams/{{stream}}/versions/{{version}}/plot.png")
    async def version_plot(stream: Stream, version: Version) -> Response:
        def draw() -> bytes:
            from routeplan.plots import version_png

            table = tables.get(stream, version).table
            try:
                png, _ = version_png(table, stored_parent(tables, table))
            except ValueError as err:
                raise HTTPException(422, f"{stream} v{version}: {err}") from err
            return png

        png = await run_in_threadpool(draw)
        return Response(png, media_type="image/png", headers={"Cache-Control": "no-cache"})

    @pages.get(f"{UI}/streams/{{stream}}/outcomes.png")
    async def outcomes_plot(stream: Stream) -> Response:
        def draw() -> bytes:
            from routeplan.plots import outcomes_png

            tables.latest(stream)  # 404 for an unknown stream
            records = read_outcomes(reports_root, stream=stream, days=OUTCOME_DAYS).records
            if not records:
                raise HTTPException(404, f"no outcomes of {stream} yet")
            return outcomes_png(records, title=f"{stream}: {records[0]['measure']}, night by night")

        png = await run_in_threadpool(draw)
        return Response(png, media_type="image/png", headers={"Cache-Control": "no-cache"})

    @pages.get(f"{UI}/streams/{{stream}}/rollback")
    async def rollback_page(
        request: Request,
        stream: Stream,
        version: Annotated[
            int,
            BeforeValidator(canonical_version),
            Query(ge=1, le=MAX_VERSION, description="the version to restore"),
        ],
    ) -> HTMLResponse:
        def gather() -> dict[str, Any]:
            latest = tables.latest(stream)
            target = tables.get(stream, version).table  # 404: no such version
            diff, diff_error = None, None
            try:
                diff = diff_tables(tables.get(stream, latest).table, target)
            except ValueError as err:
                diff_error = f"v{latest} and v{version} cannot be compared: {err}"
            moves = sorted((diff or {}).get("moves", []), key=lambda m: -(m["load"] or 0.0))
            return {
                "latest": latest,
                "diff": diff,
                "diff_error": diff_error,
                "diff_moves": moves[:SHOWN_MOVES],
            }

        context = await run_in_threadpool(gather)
        user, allowed = None, None
        links = None
        if airflow is not None:
            if airflow.who is not None:
                user, allowed = airflow.who(request)
            base = request.scope.get("root_path", "").rstrip("/")
            root = base.removesuffix(airflow.mount)
            links = {"api": f"{root}/api/v2", "root": root, "dag": airflow.rollback_dag}
        return render(
            request,
            "rollback.html",
            stream=stream,
            target=version,
            airflow=links,
            user=user,
            may_roll_back=allowed,
            **context,
        )

    @pages.get(f"{UI}/runs/{{dag_id}}/{{run_id}}")
    async def run_page(request: Request, dag_id: str, run_id: str) -> HTMLResponse:
        routeplan_dag = dag_id in OWN_DAGS
        found = None
        if routeplan_dag:
            found = await run_in_threadpool(reports_of_run, reports_root, run_id)
        return render(
            request,
            "run.html",
            dag_id=dag_id,
            run_id=run_id,
            routeplan_dag=routeplan_dag,
            found=found,
        )

    return pages
