"""Airflow plugin: routeplan's routing-table API and its Routing pages in the Airflow API
server, closed by default.

Mounted at ``/routeplan`` (e.g. http://localhost:8080/routeplan/streams) over the store at
``$ROUTEPLAN_ROUTING``, else ``$ROUTEPLAN_HOME/routing`` (``routeplan.settings``). Airflow mounts a
plugin's app as it is, without its own authentication, so the app brings its own
(``auth_dependencies``): by default (``ROUTEPLAN_API_AUTH=airflow``) every route needs an Airflow
user — a bearer JWT or the UI's session cookie — whom Airflow's auth manager allows to read the
DAG ``routeplan_nightly``, or the bearer token ``$ROUTEPLAN_API_TOKEN`` when one is set
(Prometheus, producers). ``ROUTEPLAN_API_AUTH=none`` opens read access to anyone who can reach the
API server: an explicit opt-in. The OpenAPI page (``/routeplan/docs``) stays public.

``external_views`` put the Routing pages (``/routeplan/ui/``, ``routeplan.api.ui``) in Airflow's
navigation ("Routing") and a "Plans of this run" tab on each DAG run. Their Roll back button
triggers ``routeplan_rollback`` through Airflow's REST API from the browser, as the logged-in
user: only a user whom the auth manager lets trigger it (``who``) sees it enabled, and Airflow
refuses (403) anyone else. See plugins/README.md.
"""

from __future__ import annotations

from typing import Any

from airflow.plugins_manager import AirflowPlugin
from fastapi import Depends, HTTPException, Request  # module level: FastAPI resolves annotations

from routeplan import settings
from routeplan.api.app import create_app
from routeplan.api.ui import AirflowLinks

NIGHTLY_DAG = "routeplan_nightly"  # who may read it may read routeplan's API
ROLLBACK_DAG = "routeplan_rollback"  # who may trigger it may roll back from the Routing page


def airflow_user_or_token(token: str | None) -> Any:
    """A FastAPI dependency: pass a request bearing ``token`` (when set), else resolve its
    Airflow user (401 without one) and ask the auth manager whether that user may read
    ``NIGHTLY_DAG`` (403 if not). The user is kept in ``request.state.routeplan_user``."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.models.resource_details import DagDetails
    from airflow.api_fastapi.core_api.security import get_user
    from fastapi.security import HTTPAuthorizationCredentials

    from routeplan.api.auth import bearer_token, presented_token

    async def reader(request: Request) -> None:
        if presented_token(request, token):
            return
        given = bearer_token(request)
        credentials = (
            HTTPAuthorizationCredentials(scheme="Bearer", credentials=given) if given else None
        )
        user = await get_user(request, None, credentials)  # 401 / 403 for a bad login
        allowed = get_auth_manager().is_authorized_dag(
            method="GET", details=DagDetails(id=NIGHTLY_DAG), user=user
        )
        if not allowed:
            raise HTTPException(403, f"you may not read {NIGHTLY_DAG}, so not routeplan's routes")
        request.state.routeplan_user = user

    return reader


def auth_dependencies() -> list[Any]:
    """What ``$ROUTEPLAN_API_AUTH`` asks for: an Airflow user who may read routeplan's DAGs (or
    ``$ROUTEPLAN_API_TOKEN``) by default, nothing with ``none``; any other value is a
    ``UsageError`` naming the allowed ones (``routeplan.settings``)."""
    current = settings.current()
    if current.api_auth == "none":
        return []
    token = current.api_token.get_secret_value() if current.api_token is not None else None
    return [Depends(airflow_user_or_token(token or None))]


def who(request: Request) -> tuple[str | None, bool | None]:
    """The logged-in user's name and whether the auth manager lets them trigger
    ``ROLLBACK_DAG`` (``POST`` on its runs, what Airflow's trigger endpoint checks); (None, None)
    when the request came with the routeplan token or the API is open (no user known)."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.models.resource_details import (
        DagAccessEntity,
        DagDetails,
    )

    user = getattr(request.state, "routeplan_user", None)
    if user is None:
        return None, None
    allowed = get_auth_manager().is_authorized_dag(
        method="POST",
        access_entity=DagAccessEntity.RUN,
        details=DagDetails(id=ROLLBACK_DAG),
        user=user,
    )
    return user.get_name(), allowed


MOUNT = "/routeplan"


class RouteplanPlugin(AirflowPlugin):
    """Serves published routing tables and the Routing pages next to the Airflow UI."""

    name = "routeplan"
    fastapi_apps = [
        {
            "app": create_app(
                settings.routing_root(),
                dependencies=auth_dependencies(),
                airflow=AirflowLinks(mount=MOUNT, rollback_dag=ROLLBACK_DAG, who=who),
            ),
            "url_prefix": MOUNT,
            "name": "routeplan routing tables",
        }
    ]
    external_views = [
        {  # Airflow's navigation → /plugin/routing, the page in an iframe
            "name": "Routing",
            "href": f"{MOUNT}/ui/",
            "destination": "nav",
            "url_route": "routing",
            "nav_top_level": True,
        },
        {  # a tab on every DAG run; a run of another DAG says it plans nothing
            "name": "Plans of this run",
            "href": f"{MOUNT}/ui/runs/{{DAG_ID}}/{{RUN_ID}}",
            "destination": "dag_run",
            "url_route": "routeplan-run",
        },
    ]
