"""Where routeplan keeps its data: the one module that reads ``ROUTEPLAN_HOME`` and
``ROUTEPLAN_ROUTING``.

``ROUTEPLAN_HOME`` (default ``./var``) holds ``landing/`` (stream logs by day), ``warehouse/``
(Delta tables), ``routing/`` (published routing tables, or ``$ROUTEPLAN_ROUTING``), ``config/``
(the workers file) and ``reports/``. The CLI, the Spark jobs (whose ``--home`` defaults to
``home()``), the Airflow plugins and the scripts all ask here; a job given another ``--home``
passes it as ``home_dir``.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["home", "landing_root", "routing_root", "workers_file"]


def home(default: str | os.PathLike[str] = "var") -> Path:
    """The data root: ``$ROUTEPLAN_HOME``, else ``default`` (``./var``)."""
    return Path(os.environ.get("ROUTEPLAN_HOME") or default)


def routing_root(home_dir: str | os.PathLike[str] | None = None) -> Path:
    """The routing store: ``$ROUTEPLAN_ROUTING``, else ``<home>/routing`` (``home_dir`` or
    ``home()``)."""
    routing = os.environ.get("ROUTEPLAN_ROUTING")
    if routing:
        return Path(routing)
    return (Path(home_dir) if home_dir is not None else home()) / "routing"


def landing_root(home_dir: str | os.PathLike[str] | None = None) -> Path:
    """Stream logs land here, one folder per day: ``<home>/landing``."""
    return (Path(home_dir) if home_dir is not None else home()) / "landing"


def policies_file(home_dir: str | os.PathLike[str] | None = None) -> Path:
    """The streams' planning policies: ``<home>/config/streams.yaml``."""
    return (Path(home_dir) if home_dir is not None else home()) / "config" / "streams.yaml"


def workers_file(home_dir: str | os.PathLike[str] | None = None) -> Path:
    """The workers of every stream: ``<home>/config/workers.json``."""
    return (Path(home_dir) if home_dir is not None else home()) / "config" / "workers.json"
