"""routeplan_maintenance: weekly upkeep of every routeplan Delta table (``jobs/maintain.py``).

Sundays at 03:00 UTC, one Spark task: migrations, retention properties where missing, OPTIMIZE,
VACUUM, and the tables named in the catalog (``<home>/catalog/tables.sql``). One run at a
time, three hours after the nightly run starts so that the two do not overlap: a compaction
committed while a job rewrites the same files fails one of the two (Delta's optimistic
concurrency; no data is lost, a rerun succeeds).
"""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG, CronTriggerTimetable, Param
from routeplan_tasks import ATTEMPT_RUN_ID, HOME, spark_job, task_defaults

from jobs.maintain import DELETED_FILE_RETENTION, LOG_RETENTION, RETENTION_PATTERN

RETENTION = {"type": "string", "pattern": f"^{RETENTION_PATTERN}$"}
SECTION = "Retention (set on tables that have none)"

DOC_MD = """
### routeplan_maintenance

Every Sunday at 03:00 UTC, for each routeplan Delta table that exists: its schema migrations,
the retention properties where the table has none, **OPTIMIZE** (small files compacted) and
**VACUUM** (files older versions no longer need, once past the table's deleted-file retention,
deleted). The report is `$ROUTEPLAN_HOME/reports/<day>/maintain.json`: per table, the files its
current version reads and all data files and bytes on storage, before and after.

#### Trigger

* **log_retention** — `delta.logRetentionDuration`: how far back time travel reaches (default
  `30 days`).
* **deleted_file_retention** — `delta.deletedFileRetentionDuration`: how long a replaced data
  file stays for readers (default `7 days`, Delta's safe minimum: less is refused).

A table that already has a property keeps it: change one with
`ALTER TABLE … SET TBLPROPERTIES`.
"""

with DAG(
    dag_id="routeplan_maintenance",
    description="Weekly OPTIMIZE, VACUUM and retention of routeplan's Delta tables",
    doc_md=DOC_MD,
    schedule=CronTriggerTimetable("0 3 * * 0", timezone="UTC"),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args=task_defaults(),  # OPTIMIZE and VACUUM are idempotent: retried
    tags=["routeplan"],
    params={
        "log_retention": Param(
            LOG_RETENTION,
            **RETENTION,
            section=SECTION,
            title="Log retention",
            description="delta.logRetentionDuration where a table has none: '<N> days' or "
            "'<N> hours'",
        ),
        "deleted_file_retention": Param(
            DELETED_FILE_RETENTION,
            **RETENTION,
            section=SECTION,
            title="Deleted-file retention",
            description="delta.deletedFileRetentionDuration where a table has none, what VACUUM "
            "keeps: '<N> days' or '<N> hours', at least 7 days",
        ),
    },
) as dag:
    spark_job(
        "maintain",
        [
            "--home",
            HOME,
            "--log-retention",
            "{{ params.log_retention }}",
            "--deleted-file-retention",
            "{{ params.deleted_file_retention }}",
            "--run-id",
            ATTEMPT_RUN_ID,
        ],
    )
