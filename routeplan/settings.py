"""Where routeplan keeps its data: one place reads the environment.

``ROUTEPLAN_HOME`` (default ``./var``) holds ``landing/`` (stream logs by day), ``warehouse/``
(Delta tables), ``routing/`` (published routing tables, or ``$ROUTEPLAN_ROUTING``), ``config/``
(the workers file) and ``reports/``.
"""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    """The data root: ``$ROUTEPLAN_HOME``, else ``./var``."""
    return Path(os.environ.get("ROUTEPLAN_HOME") or "var")


def routing_root() -> Path:
    """The routing store: ``$ROUTEPLAN_ROUTING``, else ``<home>/routing``."""
    routing = os.environ.get("ROUTEPLAN_ROUTING")
    return Path(routing) if routing else home() / "routing"


def landing_root() -> Path:
    """Stream logs land here, one folder per day: ``<home>/landing``."""
    return home() / "landing"


def workers_file() -> Path:
    """The workers of every stream: ``<home>/config/workers.json``."""
    return home() / "config" / "workers.json"
