"""Airflow plugin: routeplan's read-only routing-table API in the Airflow API server.

Mounted at ``/routeplan`` (e.g. http://localhost:8080/routeplan/streams) over the store at
``$ROUTEPLAN_ROUTING``, else ``$ROUTEPLAN_HOME/routing`` (``routeplan.settings``). Airflow mounts a
plugin's app as it is, so Airflow's authentication does not apply unless
``ROUTEPLAN_API_AUTH=airflow`` (then every request needs an Airflow JWT: bearer token or the UI's
session cookie). See plugins/README.md.
"""

from __future__ import annotations

from typing import Any

from airflow.plugins_manager import AirflowPlugin

from routeplan import settings
from routeplan.api.app import create_app


def auth_dependencies() -> list[Any]:
    """What ``$ROUTEPLAN_API_AUTH`` asks for: nothing (``none``), or an authenticated user; any
    other value is a ``UsageError`` naming the allowed ones (``routeplan.settings``)."""
    if settings.current().api_auth == "none":
        return []
    from airflow.api_fastapi.core_api.security import requires_authenticated
    from fastapi import Depends

    return [Depends(requires_authenticated())]


class RouteplanPlugin(AirflowPlugin):
    """Serves published routing tables next to the Airflow UI and REST API."""

    name = "routeplan"
    fastapi_apps = [
        {
            "app": create_app(settings.routing_root(), dependencies=auth_dependencies()),
            "url_prefix": "/routeplan",
            "name": "routeplan routing tables",
        }
    ]
