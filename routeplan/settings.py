"""Where routeplan keeps its data: the one module that reads ``ROUTEPLAN_HOME`` and
``ROUTEPLAN_ROUTING``.

``ROUTEPLAN_HOME`` (default ``./var``) holds ``landing/`` (stream logs by day), ``warehouse/``
(Delta tables), ``routing/`` (published routing tables, or ``$ROUTEPLAN_ROUTING``), ``config/``
(the workers file, the planning policies) and ``reports/``. It is a *location*
(``routeplan.storage``): a local path, or an object-store URI such as ``s3://bucket/prefix``
(Spark reads the same bucket as ``s3a://bucket/prefix``). The CLI, the Spark jobs (whose
``--home`` defaults to ``home()``), the Airflow plugins and the scripts all ask here; a job given
another ``--home`` passes it as ``home_dir``. Every function returns a location as a string.
"""

from __future__ import annotations

import os

from routeplan import storage

__all__ = ["home", "landing_root", "policies_file", "reports_root", "routing_root", "workers_file"]


def home(default: str | os.PathLike[str] = "var") -> str:
    """The data root: ``$ROUTEPLAN_HOME``, else ``default`` (``./var``)."""
    return os.environ.get("ROUTEPLAN_HOME") or os.fspath(default)


def _under(home_dir: str | os.PathLike[str] | None, *parts: str) -> str:
    return storage.join(home() if home_dir is None else home_dir, *parts)


def routing_root(home_dir: str | os.PathLike[str] | None = None) -> str:
    """The routing store: ``$ROUTEPLAN_ROUTING``, else ``<home>/routing`` (``home_dir`` or
    ``home()``)."""
    return os.environ.get("ROUTEPLAN_ROUTING") or _under(home_dir, "routing")


def landing_root(home_dir: str | os.PathLike[str] | None = None) -> str:
    """Stream logs land here, one folder per day: ``<home>/landing``."""
    return _under(home_dir, "landing")


def reports_root(home_dir: str | os.PathLike[str] | None = None) -> str:
    """Each run's job reports, one folder per day: ``<home>/reports``."""
    return _under(home_dir, "reports")


def policies_file(home_dir: str | os.PathLike[str] | None = None) -> str:
    """The streams' planning policies: ``<home>/config/streams.yaml``."""
    return _under(home_dir, "config", "streams.yaml")


def workers_file(home_dir: str | os.PathLike[str] | None = None) -> str:
    """The workers of every stream: ``<home>/config/workers.json``."""
    return _under(home_dir, "config", "workers.json")
