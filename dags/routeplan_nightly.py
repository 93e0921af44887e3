"""routeplan_nightly: check_policies → check_landing → ingest → windows → outcomes → guard →
guard_alerts → plan → validate → publish → announce.

Nightly for the previous UTC day, or on demand from the UI's Trigger form (its Params:
``routeplan_form``; ``DOC_MD``: what the form's fields and its "Unpause on trigger" box do).
Every stage is a SparkSubmitOperator: the same jobs run on ``local[2]`` here and on a cluster by
changing the connection (``$ROUTEPLAN_SPARK_CONN``, default ``spark_local``). ``announce`` adds an
asset event per stream that got a new routing table (``routeplan_tasks.routing_table_asset``).

Operability (``routeplan_tasks``, ``routeplan_alerts``): every task has a timeout
(``TIMEOUTS``) and retries with a growing delay, except where a rerun would fail the same way
(the checks, validate); a task that fails for good and a run still unfinished ``DEADLINE`` after
it was queued each log one alert line and post it to the alert webhook; ``RUN_TIMEOUT`` stops
the run.

Every Param is valid at its default, so the Trigger form submits as shown. A Param whose empty
value means "the job's default" is nullable with default ``None``; ``optional`` renders it as an
empty argument (Jinja would render ``None`` as the string "None"), which the jobs read as their
default.

The plan's budget (``routeplan.model.plan.Budget``) comes from ``max_moves``,
``max_migrated_load_share``, ``max_migration_cost`` and ``migration_cost_unit``, each passed to
``jobs/plan.py`` as its own flag; a strategy given a limit it does not honour fails the run
naming the limit. The deprecated ``max_migrations`` and ``migration_cost`` (before the budget held
every limit) are still accepted for one release: when set they travel in ``--params-json`` and
``jobs/plan.py`` turns them into budget limits (``routeplan.planning.budget``), logging a
deprecation note.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import DAG, CronDataIntervalTimetable
from routeplan_alerts import deadline_alerts
from routeplan_form import honoured_by, imbalance_allowance, nightly_params, strategy_params
from routeplan_tasks import (
    ATTEMPT_RUN_ID,
    HOME,
    RETRIES,
    TIMEOUTS,
    announce,
    check_landing,
    check_policies,
    guard_alerts,
    spark_job,
    task_defaults,
)

STAGES = ("ingest", "windows", "outcomes", "guard", "plan", "validate", "publish")
# The routing tables are due this long after the run was queued (00:00 UTC for a scheduled run):
# later, the deadline alert fires (the run goes on); after RUN_TIMEOUT the run is stopped and
# failed, well before the next night's run.
DEADLINE = timedelta(hours=6)
RUN_TIMEOUT = timedelta(hours=12)

DOC_MD = """
### routeplan_nightly

Plans and publishes a new routing table per stream from one day of stream logs:
**check_policies → check_landing → ingest → windows → outcomes → guard → guard_alerts → plan →
validate → publish → announce**. **outcomes** measures what the version in force did that day
(`gold.plan_outcomes`, `routeplan outcomes`); **guard** keeps each stream's loop state and, when
the version in force regressed, acts by the stream's `on_regression`: rollback (a new version
with the last good routing), hold or alert — once per night, whatever the reruns;
**guard_alerts** sends an alert for each such action.
It runs every night at 00:00 UTC for the day that just ended, with the defaults below.

#### When it fails or is late

* **check_policies**, **check_landing** fail at once, without retry, on a mistake in the
  policies or a day without landing files (`<landing>/<YYYY-MM-DD>/`).
* The Spark tasks retry {retries} times, with a growing delay: every job replaces exactly its
  day, so a rerun is safe. **validate** does not: a failed expectation fails again on the same
  data (its Data Docs link is in the log); fix the cause, then *Clear* the task.
* Each task has a time limit ({timeouts}; `$ROUTEPLAN_TASK_TIMEOUTS` changes them, e.g.
  `ingest=240,windows=180`); the run is stopped after {run_timeout} h.
* A task that fails for good, and a run not finished {deadline} h after it was queued (the
  deadline alert), log one line `routeplan alert: {{…json…}}` and post it to the webhook of the
  Airflow connection `routeplan_alerts` (type http, host = the URL) when it exists.

#### Trigger

**Trigger** opens the *Run Parameters* form with every field at its default; it can be submitted
as shown. Empty fields mean "the default":

* **date** — the day (UTC) to process; empty: the run's data interval (for a manual run,
  yesterday UTC).
* **streams** — one stream per line; empty: every stream found in the day's logs. A stream
  named here must be listed in the planning policies file.
* **policies_path** — the streams' planning policies (`schemas/streams.schema.json`): each
  stream's kind, strategy (or `auto`: the best of several by goals in order), parameters,
  budget, load metric, planning window and workers; empty: `$ROUTEPLAN_HOME/config/streams.yaml`
  (without it, every stream is planned with `cg`). The run's first task checks it.
* **strategy** (listed as "cg — Consistent Grouping (paper 000)" and so on), **planning_window**,
  **load_metric** and the budget — empty: each stream's policy; set, they override it for this
  run's streams (a strategy of another kind than a stream's fails the run naming both: select
  the streams it suits).
* **each strategy's parameters**, in its own section — all optional: only the ones you fill in
  go to the chosen strategy; an empty one keeps the stream's policy value (the strategy's
  default when the policy names another strategy). They are ignored without a strategy.
* **landing_path**, **workers_path** — empty: `$ROUTEPLAN_HOME/landing` (files under
  `<landing>/<YYYY-MM-DD>/`) and `$ROUTEPLAN_HOME/config/workers.json`.
* **max_bad_files**, **max_quarantined_share** — a landing file that cannot be read goes whole
  to `bronze.quarantine` and the day proceeds, unless more than *max_bad_files* files are bad
  or more than *max_quarantined_share* of the rows read are quarantined: then ingest fails and
  its log names every offending file.
* **max_moves**, **max_migrated_load_share**, **max_migration_cost** — the plan's budget: most
  key groups / hot keys / partitions moved, most share of the load moved, most summed migration
  cost (in **migration_cost_unit**: `moves`, `distinct_keys` or `load`); empty: no limit. A
  strategy given a limit it does not honour fails the run and says so. max_moves is
  {max_moves}.
* **keep_versions**, **consumer_capacity**, **max_load_distance** — empty: keep every version /
  the workers' capacity / the strategy's default.
* **max_migrations**, **migration_cost** — deprecated spellings of max_moves and
  migration_cost_unit (`keys` = `distinct_keys`), accepted for one release.

#### "Unpause routeplan_nightly on trigger"

A new DAG is paused, and the form's *Unpause … on trigger* box is then checked by default.

* **Checked** (the default): your run starts now, and the DAG's nightly schedule is switched on.
  The scheduler at once adds the *scheduled* run of the latest complete day (yesterday UTC, all
  streams, default Params) and one every midnight after. One run at a time: yours may wait for
  that scheduled run or the other way round. If the default landing path holds no files for
  yesterday, that scheduled run fails in `check_landing` ("no landing files") — your run is not
  affected. Pause the DAG again (toggle at the top) if you only wanted your run.
* **Unchecked**: your run is created but stays *queued* until the DAG is unpaused.
""".format(
    max_moves=honoured_by("max_moves"),
    retries=RETRIES["retries"],
    timeouts=", ".join(f"{t} {TIMEOUTS[t] // timedelta(minutes=1)} min" for t in STAGES),
    run_timeout=RUN_TIMEOUT // timedelta(hours=1),
    deadline=DEADLINE // timedelta(hours=1),
)


def interval_day(params: dict, data_interval_start, dag_run) -> str:
    """The day to process: the ``date`` Param, else the run's data interval, else yesterday."""
    if params.get("date"):
        return params["date"]
    if data_interval_start is not None:
        return data_interval_start.date().isoformat()
    return (dag_run.run_after - timedelta(days=1)).date().isoformat()


def optional(value) -> str:
    """A nullable Param as a job argument: ``""`` (the job's default) for None, else its text.
    (``{{ params.x }}`` would render None as the string "None".)"""
    return "" if value is None else str(value)


def stream_list(params: dict) -> str:
    """``--streams``: the chosen streams comma-separated; empty (none chosen) means all."""
    return ",".join(params.get("streams") or ())


with DAG(
    dag_id="routeplan_nightly",
    description="Plan and publish routing tables from yesterday's stream logs",
    doc_md=DOC_MD,
    schedule=CronDataIntervalTimetable("0 0 * * *", timezone="UTC"),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args=task_defaults(),
    dagrun_timeout=RUN_TIMEOUT,
    deadline=deadline_alerts(within=DEADLINE),
    user_defined_macros={
        "interval_day": interval_day,
        "strategy_params": strategy_params,
        "imbalance_allowance": imbalance_allowance,
        "stream_list": stream_list,
        "optional": optional,
    },
    render_template_as_native_obj=False,
    tags=["routeplan"],
    params=nightly_params(),
) as dag:
    day = "{{ interval_day(params, data_interval_start, dag_run) }}"
    common = [
        "--home",
        HOME,
        "--interval-start",
        day,
        "--streams",
        "{{ stream_list(params) }}",
        "--run-id",
        ATTEMPT_RUN_ID,
    ]
    # Optional values as one "--flag=value" argument: "--flag=" (empty) is the job's default.
    workers = ["--workers-path={{ optional(params.workers_path) }}"]
    stage_args = {
        "ingest": [
            "--landing={{ optional(params.landing_path) }}",
            "--max-bad-files",
            "{{ params.max_bad_files }}",
            "--max-quarantined-share",
            "{{ params.max_quarantined_share }}",
        ],
        "windows": [
            "--window-minutes",
            "{{ params.window_minutes }}",
            "--capacity-alpha",
            "{{ params.capacity_alpha }}",
            "--capacity-min-messages",
            "{{ params.capacity_min_messages }}",
            "--capacity-busiest-windows",
            "{{ params.capacity_busiest_windows }}",
            *workers,
        ],
        "outcomes": ["--policies={{ optional(params.policies_path) }}"],
        "guard": ["--policies={{ optional(params.policies_path) }}"],
        "plan": [
            "--policies={{ optional(params.policies_path) }}",
            "--strategy={{ optional(params.strategy) }}",
            "--planning-window={{ optional(params.planning_window) }}",
            "--load-metric={{ optional(params.load_metric) }}",
            "--params-json",
            "{{ strategy_params(params) }}",
            "--max-moves={{ optional(params.max_moves) }}",
            "--max-migrated-load-share={{ optional(params.max_migrated_load_share) }}",
            "--max-migration-cost={{ optional(params.max_migration_cost) }}",
            "--migration-cost-unit",
            "{{ params.migration_cost_unit }}",
            *workers,
        ],
        "validate": ["--imbalance-allowance", "{{ imbalance_allowance(params) }}"],
        "publish": [
            "--keep-versions={{ optional(params.keep_versions) }}",
            "--policies={{ optional(params.policies_path) }}",
        ],
    }
    previous = check_policies() >> check_landing(day)
    for stage in STAGES:
        task = spark_job(stage, common + stage_args[stage])
        previous >> task
        previous = task
        if stage == "guard":  # an alert per regression the guard acted on, before planning
            previous = task >> guard_alerts(f"{HOME}/reports/{day}/guard.json")
    previous >> announce(f"{HOME}/reports/{day}/publish.json")
