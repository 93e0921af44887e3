"""Who may read the HTTP API: closed by default.

The API serves routing tables, which can name keys (hot keys may be user ids), and the Routing
pages; none of it is public unless someone says so:

* ``routeplan serve`` requires ``Authorization: Bearer <token>`` on every route, the token
  being ``$ROUTEPLAN_API_TOKEN`` (``settings.api_token``), unless it is started with
  ``--allow-anonymous-read`` (``serve_dependencies``); with neither it refuses to start.
* Inside Airflow (plugins/routeplan_plugin.py) every route needs an Airflow user allowed to
  read routeplan's DAGs, or the same bearer token when one is set (Prometheus, producers), unless
  ``ROUTEPLAN_API_AUTH=none`` opens read access explicitly.

Only the OpenAPI description and its offline Swagger UI (``routeplan.api.offline_docs``) stay
public: they carry no data. A wrong or missing token is 401 with ``WWW-Authenticate: Bearer``;
the comparison takes constant time (``hmac.compare_digest``).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any

from fastapi import Depends, HTTPException, Request

from routeplan import settings
from routeplan.errors import UsageError

__all__ = ["bearer_token", "presented_token", "require_token", "serve_dependencies"]

CHALLENGE = {"WWW-Authenticate": "Bearer"}


def bearer_token(request: Request) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else None."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return (token.strip() or None) if scheme.lower() == "bearer" else None


def presented_token(request: Request, token: str | None) -> bool:
    """Whether the request carries ``token`` as its bearer token (never, when ``token`` is
    None or empty)."""
    given = bearer_token(request)
    return bool(token) and given is not None and hmac.compare_digest(given.encode(), token.encode())


def require_token(token: str) -> Callable[[Request], None]:
    """A FastAPI dependency: 401 unless the request's bearer token is ``token``."""
    if not token:
        raise ValueError("an empty API token would let everyone in")

    def check(request: Request) -> None:
        if presented_token(request, token):
            return
        detail = "wrong bearer token" if bearer_token(request) else "a bearer token is required"
        raise HTTPException(401, detail, headers=CHALLENGE)

    return check


def serve_dependencies(allow_anonymous_read: bool = False) -> list[Any]:
    """What ``routeplan serve`` puts before every route: the token check when
    ``$ROUTEPLAN_API_TOKEN`` is set (it wins over ``allow_anonymous_read``), nothing when
    anonymous reading is allowed, else a ``UsageError`` saying what to set."""
    secret = settings.current().api_token
    if secret is not None and secret.get_secret_value():
        return [Depends(require_token(secret.get_secret_value()))]
    if allow_anonymous_read:
        return []
    raise UsageError(
        f"the API is closed by default: set {settings.Settings.variable('api_token')} (clients "
        "then send Authorization: Bearer <token>) or pass --allow-anonymous-read to open it to "
        "anyone who can reach it"
    )
