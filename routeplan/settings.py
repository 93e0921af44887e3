"""routeplan's settings: every ``ROUTEPLAN_*`` environment variable, declared in one place.

``Settings`` names each one with its type, default and meaning; ``current()`` reads them from the
environment on each call (cheap), so a changed environment — a test, a job's launcher — counts at
once. An empty variable counts as unset. An invalid value (``ROUTEPLAN_API_AUTH=nope``) raises a
``UsageError`` naming the variable and what it allows. ``routeplan config`` prints them all.

``ROUTEPLAN_HOME`` holds ``landing/`` (stream logs by day), ``warehouse/`` (Delta tables),
``routing/`` (published routing tables, or ``$ROUTEPLAN_ROUTING``), ``config/`` (the workers
file, the planning policies), ``reports/`` and ``data_docs/`` (the Great Expectations site). It is
a *location* (``routeplan.storage``): a local path, or an object-store URI such as
``s3://bucket/prefix`` (Spark reads the same bucket as ``s3a://bucket/prefix``). Its default is
the same for the CLI, the Spark jobs (whose ``--home`` defaults to ``home()``), the Airflow
plugins and the scripts, whatever the current directory: the ``var/`` folder of the source
checkout routeplan is imported from (``make setup`` installs it editable; ``make`` exports that
folder as ``ROUTEPLAN_HOME`` too), else ``./var``. A job given another ``--home`` passes it as
``home_dir``. Every location function returns a string.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, SettingsConfigDict

from routeplan import storage
from routeplan.errors import UsageError

__all__ = [
    "ENV_PREFIX",
    "SOURCE_ROOT",
    "Settings",
    "current",
    "data_docs_root",
    "home",
    "landing_root",
    "policies_file",
    "reports_root",
    "routing_file_mode",
    "routing_root",
    "workers_file",
]

ENV_PREFIX = "ROUTEPLAN_"


def _source_root(package_dir: Path) -> Path:
    """The folder holding the ``routeplan`` package ``package_dir``: the source checkout
    (editable install) or site-packages (the wheel installs ``jobs/`` beside it too) — or, for
    the zip spark-submit ships (``--py-files <root>/dist/routeplan.zip``, which a Spark driver
    imports first), the ``<root>`` holding ``dist/`` beside ``gx/``, ``config/`` and
    ``schemas/`` (a checkout after ``make setup``, ``/opt/routeplan`` in the images)."""
    root = package_dir.parent
    return root.parent.parent if root.suffix == ".zip" else root


SOURCE_ROOT = _source_root(Path(__file__).resolve().parent)


def _is_checkout(folder: Path) -> bool:
    """Whether ``folder`` is routeplan's source checkout (its pyproject.toml names routeplan)."""
    pyproject = folder / "pyproject.toml"
    return pyproject.is_file() and 'name = "routeplan"' in pyproject.read_text(encoding="utf-8")


DEFAULT_HOME = str(SOURCE_ROOT / "var") if _is_checkout(SOURCE_ROOT) else "var"


class Settings(BaseSettings):
    """Every routeplan setting; each field is read from ``ROUTEPLAN_<FIELD>`` (``home`` from
    ``ROUTEPLAN_HOME``)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_ignore_empty=True, frozen=True)

    home: str = Field(
        DEFAULT_HOME,
        description="the data root (a folder or an s3:// / s3a:// URI): landing/, warehouse/, "
        "routing/, config/, reports/, data_docs/; default: the source checkout's var/, else ./var",
    )
    routing: str | None = Field(
        None,
        description="the routing store (a folder or a URI); default: <home>/routing",
    )
    routing_file_mode: str = Field(
        "0644",
        description="the permissions of the files the routing store writes on a local disk "
        "(versions, LATEST, HOLD), in octal: 0644 lets any user read them (a producer running "
        "as another user), 0640 the owner's group only; the owner must be able to read them. "
        "The store never changes a folder's mode; object stores have no modes",
    )
    api_auth: Literal["none", "airflow"] = Field(
        "airflow",
        description="the Airflow plugin's routes (/routeplan/…): only Airflow users who may read "
        "routeplan's DAGs, or requests with api_token (airflow, the default); none opens read "
        "access to anyone who can reach the API server (an explicit opt-in)",
    )
    api_token: SecretStr | None = Field(
        None,
        description="the bearer token `routeplan serve` requires (Authorization: Bearer <token>) "
        "and the Airflow plugin accepts besides an Airflow login: for producers and Prometheus; "
        "never printed",
    )
    schemas: Path = Field(
        SOURCE_ROOT / "schemas",
        description="the folder of the JSON Schemas (*.schema.json) records are checked against",
    )
    jars: Path = Field(
        SOURCE_ROOT / ".jars",
        description="the Delta Lake and S3A jars (make setup fetches them), on the class path of "
        "Spark's driver and executors",
    )
    spark_master: str = Field(
        "local[2]",
        description="the master of a Spark session started in process (tests, benchmarks); "
        "spark-submit tasks use the Airflow connection spark_conn instead",
    )
    spark_defaults: Path = Field(
        SOURCE_ROOT / "config" / "spark-defaults.conf",
        description="the Spark properties file every session and spark-submit task reads",
    )
    task_timeouts: str = Field(
        "",
        description="the DAGs' task time limits in minutes, over the built-in ones "
        "(task=minutes,…, e.g. ingest=240,windows=180)",
    )
    spark_conn: str = Field(
        "spark_local",
        description="the Airflow connection id the DAGs' spark-submit tasks submit to",
    )
    spark_connect_conn: str = Field(
        "",
        description="the Airflow connection id (type spark_connect) of a Spark Connect server: "
        "the DAGs' Spark tasks then run their jobs as its clients, no JVM of their own "
        "(make demo starts one, scripts/spark_connect.py); empty: each task is a spark-submit "
        "to spark_conn",
    )
    jobs_dir: Path = Field(
        SOURCE_ROOT / "jobs",
        description="the folder of the Spark jobs (jobs/<stage>.py) the DAGs submit",
    )
    py_files: str | None = Field(
        None,
        description="the zip of routeplan shipped to Spark's executors (spark-submit --py-files; "
        "make setup builds dist/routeplan.zip); none: the executors import their own",
    )
    alert_conn: str = Field(
        "routeplan_alerts",
        description="the Airflow connection id of the webhook a failed run is reported to",
    )
    gx: Path = Field(
        SOURCE_ROOT / "gx",
        description="the Great Expectations project (great_expectations.yml) of the validate job",
    )
    cluster_dir: Path = Field(
        Path(DEFAULT_HOME) / "cluster",
        description="where scripts/cluster.py keeps the local cluster's data and logs",
    )

    @field_validator("routing_file_mode")
    @classmethod
    def _octal_mode(cls, value: str) -> str:
        """Three octal digits (a leading ``0`` or ``0o`` allowed), the owner's read bit set."""
        if not re.fullmatch(r"(0o?)?[4-7][0-7]{2}", value.strip()):
            raise PydanticCustomError(
                "file_mode",
                "input should be a file mode of three octal digits whose owner can read, "
                "e.g. 0644 or 0640",
            )
        return value.strip()

    @classmethod
    def variable(cls, name: str) -> str:
        """The environment variable of setting ``name``: ``ROUTEPLAN_<NAME>``."""
        return ENV_PREFIX + name.upper()


def current() -> Settings:
    """The settings as the environment gives them now; an invalid value is a ``UsageError``
    naming the variable, its value and what it allows."""
    try:
        return Settings()
    except ValidationError as err:
        problems = []
        for error in err.errors():
            name = str(error["loc"][0])
            problems.append(
                f"{Settings.variable(name)}={error['input']!r}: {error['msg'][:1].lower()}"
                f"{error['msg'][1:]}"
            )
        raise UsageError("; ".join(problems)) from None


def home(default: str | os.PathLike[str] | None = None) -> str:
    """The data root: ``$ROUTEPLAN_HOME``, else ``default`` when given, else the source
    checkout's ``var/`` (``./var`` outside a checkout)."""
    settings = current()
    if default is not None and "home" not in settings.model_fields_set:
        return os.fspath(default)
    return settings.home


def _under(home_dir: str | os.PathLike[str] | None, *parts: str) -> str:
    return storage.join(home() if home_dir is None else home_dir, *parts)


def routing_root(home_dir: str | os.PathLike[str] | None = None) -> str:
    """The routing store: ``$ROUTEPLAN_ROUTING``, else ``<home>/routing`` (``home_dir`` or
    ``home()``)."""
    return current().routing or _under(home_dir, "routing")


def routing_file_mode() -> int:
    """The mode of the files the routing store writes on a local disk (``0o644`` by default:
    readable by every user), from ``$ROUTEPLAN_ROUTING_FILE_MODE``."""
    return int(current().routing_file_mode.removeprefix("0o"), 8)


def landing_root(home_dir: str | os.PathLike[str] | None = None) -> str:
    """Stream logs land here, one folder per day: ``<home>/landing``."""
    return _under(home_dir, "landing")


def reports_root(home_dir: str | os.PathLike[str] | None = None) -> str:
    """Each run's job reports, one folder per day: ``<home>/reports``."""
    return _under(home_dir, "reports")


def data_docs_root(home_dir: str | os.PathLike[str] | None = None) -> str:
    """Great Expectations' Data Docs site, built by the validate job: ``<home>/data_docs``."""
    return _under(home_dir, "data_docs")


def policies_file(home_dir: str | os.PathLike[str] | None = None) -> str:
    """The streams' planning policies: ``<home>/config/streams.yaml``."""
    return _under(home_dir, "config", "streams.yaml")


def workers_file(home_dir: str | os.PathLike[str] | None = None) -> str:
    """The workers of every stream: ``<home>/config/workers.json``."""
    return _under(home_dir, "config", "workers.json")
