"""Airflow plugin: routeplan's read-only routing-table API in the Airflow API server.

Mounted at ``/routeplan`` (e.g. http://localhost:8080/routeplan/streams) over the store at
``$ROUTEPLAN_ROUTING``, else ``$ROUTEPLAN_HOME/routing`` (``./var/routing``). Airflow mounts a
plugin's app as it is, so Airflow's authentication does not apply unless
``ROUTEPLAN_API_AUTH=airflow`` (then every request needs an Airflow JWT: bearer token or the UI's
session cookie). See plugins/README.md.
"""

from __future__ import annotations

import os
from typing import Any

from airflow.plugins_manager import AirflowPlugin

from routeplan import settings
from routeplan.publishing.api import create_app

AUTH_MODES = ("none", "airflow")


def auth_dependencies() -> list[Any]:
    """What ``$ROUTEPLAN_API_AUTH`` asks for: nothing (``none``), or an authenticated user."""
    mode = os.environ.get("ROUTEPLAN_API_AUTH", "none")
    if mode not in AUTH_MODES:
        raise ValueError(f"ROUTEPLAN_API_AUTH must be one of {AUTH_MODES}, got {mode!r}")
    if mode == "none":
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
