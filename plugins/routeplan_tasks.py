"""What routeplan's DAGs share: Spark job tasks, their retries, timeouts and alerts, the checks
before Spark starts, and the routing-table asset events.

Downstream DAGs run on a new routing table by scheduling on its asset::

    from routeplan_tasks import routing_table_asset
    with DAG("reload_router", schedule=[routing_table_asset("clicks")]): ...

(or on ``ROUTING_TABLES``, the alias every publish and rollback adds its events through). Each
event's ``extra`` (``event_extra``) holds ``stream``, ``version``, ``action`` and ``reason``, the
version's ``strategy`` and ``predicted_imbalance`` (from its document; the report's when the store
cannot be read), ``restored_version`` for a rollback, and ``routing_page``: the version's page in
the Routing UI (``[api] base_url`` + ``/routeplan/ui/…``).
"""

from __future__ import annotations

import json
from datetime import date, timedelta
from urllib.parse import quote

from airflow.providers.apache.spark.operators.spark_pyspark import PySparkOperator
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Asset, AssetAlias, BaseOperator, task
from routeplan_alerts import RunAlert, guard_alert_fields, raise_alert

from jobs.common import location_arg, spark_defaults, spark_defaults_file, submit_conf
from routeplan import settings, storage
from routeplan.parsing import integer, parse_spec

JOBS = settings.current().jobs_dir
HOME = settings.home()  # a local folder or a URI (routeplan.storage)
ROUTING_TABLES = AssetAlias("routeplan-routing-tables")
ANNOUNCED = ("published", "rolled_back")
# A Spark task's --run-id: the attempt that writes its rows. The run's id on its first try;
# a retry or a cleared task (a rerun of the night in the same run) adds ``__try<N>``, so that
# gold.publish_log, which appends a row per stream and attempt, tells the attempts apart.
ATTEMPT_RUN_ID = "{{ run_id }}{% if ti.try_number > 1 %}__try{{ ti.try_number }}{% endif %}"

# How long each task may run before Airflow stops it (its execution_timeout), in minutes, by
# task id. ingest and windows read the whole day (10M events: ~5 min of ingest on 2 cores, see
# docs/performance.md), the others a day's aggregates or one file. $ROUTEPLAN_TASK_TIMEOUTS
# overrides some: "ingest=240,windows=180".
TIMEOUT_MINUTES = {
    "check_policies": 5,
    "check_landing": 5,
    "ingest": 180,
    "windows": 120,
    "outcomes": 30,
    "guard": 30,
    "plan": 60,
    "validate": 30,
    "publish": 30,
    "announce": 5,
    "guard_alerts": 5,
    "rollback": 30,
    "maintain": 240,
}
# A failed task retries after 2, then 4 minutes (doubling, at most 20): every job replaces
# exactly its interval and publish and rollback skip a table LATEST already routes as, so a
# rerun is safe. A failure a rerun would repeat fails at once: the Python tasks raise
# AirflowFailException, and these Spark tasks never retry:
NOT_RETRIED = {
    "validate": "a failure is the expectations' verdict on the day's data, which a rerun repeats; "
    "a transient Spark error is rare in this short job: clear the task to rerun it",
}
RETRIES = {
    "retries": 2,
    "retry_delay": timedelta(minutes=2),
    "retry_exponential_backoff": 2.0,
    "max_retry_delay": timedelta(minutes=20),
}


def task_timeouts(spec: str | None = None) -> dict[str, timedelta]:
    """Each task's execution_timeout: ``TIMEOUT_MINUTES`` with the overrides of ``spec``
    (``task=minutes,…``, default ``$ROUTEPLAN_TASK_TIMEOUTS``; a ``UsageError`` naming an unknown
    task or a bad value)."""
    spec = settings.current().task_timeouts if spec is None else spec
    fields = {name: integer(1, 7 * 24 * 60) for name in TIMEOUT_MINUTES}
    given = parse_spec(spec, fields, "ROUTEPLAN_TASK_TIMEOUTS")
    return {name: timedelta(minutes=m) for name, m in {**TIMEOUT_MINUTES, **given}.items()}


TIMEOUTS = task_timeouts()


def task_defaults() -> dict:
    """The DAGs' ``default_args``: ``RETRIES`` and ``RunAlert`` once a task has failed for good."""
    return {**RETRIES, "on_failure_callback": RunAlert()}


def spark_job(stage: str, application_args: list[str]) -> BaseOperator:
    """The task running ``jobs/<stage>.py`` with spark-submit (``$ROUTEPLAN_SPARK_CONN``), the
    Spark settings of ``spark_defaults_file()`` as its ``--properties-file``, stopped after
    ``TIMEOUTS[stage]``, never retried when ``NOT_RETRIED`` names it.

    On a cluster the executors import routeplan (the windows job's key-group UDF) from the zip
    ``$ROUTEPLAN_PY_FILES`` names (``make setup`` builds ``dist/routeplan.zip``), shipped with the
    application as spark-submit's ``--py-files``.

    With ``$ROUTEPLAN_SPARK_CONNECT_CONN`` set, the task is instead a client of that Spark
    Connect server (the provider's PySparkOperator, ``run_job``): the same job and arguments,
    no JVM of its own — a warm server runs a night's stages about twice as fast as six cold
    spark-submits (docs/performance.md)."""
    spark_defaults()  # a mistake in the file fails the DAG's import, naming its line
    retried = {"retries": 0} if stage in NOT_RETRIED else {}
    connect = settings.current().spark_connect_conn
    if connect:
        return PySparkOperator(
            task_id=stage,
            python_callable=run_job,
            conn_id=connect,
            op_kwargs={"stage": stage, "argv": application_args},
            execution_timeout=TIMEOUTS[stage],
            **retried,
        )
    return SparkSubmitOperator(
        task_id=stage,
        application=str(JOBS / f"{stage}.py"),
        conn_id=settings.current().spark_conn,
        conf=submit_conf(JOBS),
        properties_file=str(spark_defaults_file()),
        name=f"routeplan-{stage}",
        py_files=settings.current().py_files,
        application_args=application_args,
        execution_timeout=TIMEOUTS[stage],
        **retried,
    )


def run_job(stage: str, argv: list[str], spark=None) -> None:
    """A Spark Connect task's body: ``jobs/<stage>.py``'s ``main(argv)`` in this process, on the
    session ``spark`` PySparkOperator opened (the job finds it active). A job's refusal
    (``SystemExit`` with its message) fails the task with that message, as spark-submit's exit
    does; the job's report stays in its file, not in XCom."""
    import importlib

    from airflow.sdk.exceptions import AirflowException

    try:
        importlib.import_module(f"jobs.{stage}").main(argv)
    except SystemExit as refused:
        if refused.code not in (None, 0):
            raise AirflowException(f"jobs/{stage}.py: {refused.code}") from None


def routing_table_asset(stream: str) -> Asset:
    """The asset updated whenever ``stream`` gets a new routing-table version."""
    return Asset(f"x-routeplan://routing/{stream}")


@task(execution_timeout=TIMEOUTS["check_policies"])
def check_policies(*, params=None) -> dict:
    """The run's first task: the planning policies file, and this run's streams and strategy
    against it, checked before any Spark job starts — a mistake fails here with one line naming
    the file, the stream and the field (``routeplan.streams.policy``)."""
    from airflow.sdk.exceptions import AirflowFailException

    from routeplan.errors import InputError
    from routeplan.streams.policy import load_policies, policy_from_overrides

    given = params.get("policies_path")
    path = given or settings.policies_file(HOME)
    if not storage.is_file(path):
        if given:
            raise AirflowFailException(f"policies_path {path}: no such file")
        print(f"no planning policies at {path}: every stream is planned with cg (or strategy)")
        return {}
    try:
        policies = load_policies(path)
        streams = list(params.get("streams") or ())
        if streams:
            policies.check_streams(streams)
        chosen = {s: policies.for_stream(s) for s in streams or policies.streams}
        if params.get("strategy"):
            chosen = {
                s: policy_from_overrides(p, strategy=params["strategy"], where="the Trigger form")
                for s, p in chosen.items()
            }
    except InputError as err:  # PolicyError names the file, the stream and the field
        raise AirflowFailException(str(err)) from None
    summary = {s: f"{p.kind}: {p.strategy}" for s, p in chosen.items()}
    print(f"planning policies {path}: {summary}")
    return summary


@task(execution_timeout=TIMEOUTS["check_landing"])
def check_landing(day: str, *, params=None) -> int:
    """Before ingest: the number of landing files of ``day`` (``YYYY-MM-DD``) under the
    ``landing_path`` Param (empty: ``<home>/landing``), counted as ingest counts them; none
    fails the run at once (``AirflowFailException``: no retry, no Spark started)."""
    from airflow.sdk.exceptions import AirflowFailException

    from jobs.common import RunArgs
    from jobs.landing import landing_files

    given = params.get("landing_path")
    landing = location_arg(given) if given else settings.landing_root(HOME)
    start = date.fromisoformat(day)
    interval = RunArgs(HOME, start, start + timedelta(days=1), (), "check_landing")
    files = landing_files(landing, interval)
    if not files:
        raise AirflowFailException(
            f"no landing files for {day} under {landing} (expected "
            f"{storage.join(landing, day)}/*.jsonl|csv|parquet[.gz]; landing_path sets the folder)"
        )
    print(f"{len(files)} landing files for {day} under {landing}")
    return len(files)


def routing_page(stream: str, version: int, base_url: str | None = None) -> str:
    """The version's page in the Routing UI, under Airflow's ``[api] base_url``."""
    if base_url is None:
        from airflow.configuration import conf

        base_url = conf.get("api", "base_url", fallback="http://localhost:8080")
    return (
        f"{base_url.rstrip('/')}/routeplan/ui/streams/{quote(stream, safe='')}/versions/{version}"
    )


def event_extra(outcome: dict, routing: str, base_url: str | None = None) -> dict:
    """An asset event's ``extra`` for a report's ``outcome`` (a published or rolled-back
    version): what the report says, plus the version's strategy, predicted imbalance (and, for a
    rollback, the version it routes as) from its document in the store at ``routing``, and its
    Routing page. A document that cannot be read leaves the report's own figures."""
    from routeplan.publishing.store import RoutingStore

    extra = {k: outcome[k] for k in ("stream", "version", "action", "reason")}
    try:
        doc = RoutingStore(routing).read_document(outcome["stream"], outcome["version"])
    except (OSError, ValueError) as err:
        print(f"{outcome['stream']} v{outcome['version']}: document unreadable ({err})")
        doc = {}
    extra["strategy"] = doc.get("strategy", outcome.get("strategy"))
    predicted = doc.get("predicted", {}).get("imbalance", outcome.get("predicted_imbalance"))
    extra["predicted_imbalance"] = predicted
    if doc.get("restored_version") is not None:
        extra["restored_version"] = doc["restored_version"]
    extra["routing_page"] = routing_page(outcome["stream"], outcome["version"], base_url)
    return extra


@task(outlets=[ROUTING_TABLES], execution_timeout=TIMEOUTS["announce"])
def announce(report_path: str, *, outlet_events=None) -> list[dict]:
    """One asset event per stream the job's report (a path or URI) says got a new version."""
    report = json.loads(storage.read_bytes(report_path))
    announced = []
    routing = settings.routing_root(HOME)
    for outcome in report["streams"]:
        if outcome["action"] not in ANNOUNCED:
            continue
        extra = event_extra(outcome, routing)
        outlet_events[ROUTING_TABLES].add(routing_table_asset(outcome["stream"]), extra=extra)
        announced.append(extra)
    print(f"asset events: {announced or 'none (no stream got a new version)'}")
    return announced


@task(execution_timeout=TIMEOUTS["guard_alerts"])
def guard_alerts(report_path: str) -> list[dict]:
    """One alert (``routeplan_alerts.raise_alert``: a ``routeplan alert:`` line, POSTed to the
    webhook) per regression guard decision with an action in the guard report (a path or URI):
    ``regression_rollback``, ``regression_hold`` or ``regression_alert``; the alerts. A decision
    an earlier run of the night took (``again``) was alerted then: not a second time."""
    report = json.loads(storage.read_bytes(report_path))
    alerts = [
        guard_alert_fields(entry, report)
        for entry in report.get("guard") or []
        if isinstance(entry, dict) and entry.get("action") and not entry.get("again")
    ]
    for alert in alerts:
        raise_alert(alert)
    print(f"guard alerts: {len(alerts) or 'none (the guard took no new action)'}")
    return alerts
