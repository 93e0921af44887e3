"""routeplan_nightly: check_policies → check_landing → ingest → windows → outcomes → guard →
guard_alerts → plan → validate → publish → announce.

Nightly for the previous UTC day, or on demand from the UI's Trigger form (Params below, and
``DOC_MD``: what the form's fields and its "Unpause on trigger" box do). Every stage is a
SparkSubmitOperator: the same jobs run on ``local[2]`` here and on a cluster by changing the
connection (``$ROUTEPLAN_SPARK_CONN``, default ``spark_local``). ``announce`` adds an asset event
per stream that got a new routing table (``routeplan_tasks.routing_table_asset``).

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

import json
from datetime import datetime, timedelta

from airflow.sdk import DAG, CronDataIntervalTimetable, Param
from routeplan_alerts import deadline_alerts
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

from routeplan.contracts.schemas import load_schema
from routeplan.model.plan import MIGRATION_COST_UNITS
from routeplan.planning.catalog import label
from routeplan.planning.registry import get_strategy, strategy_names, strategy_parameters

# a stream name as schemas/name.schema.json has it (the rule of routeplan.model.names)
STREAM_NAME = {k: load_schema("name")[k] for k in ("type", "minLength", "maxLength", "pattern")}
# strategy parameters offered in the Trigger form; each strategy gets those it accepts
STRATEGY_PARAMS = (
    "epsilon",
    "virtual_workers_per_worker",
    "tokens_per_worker",
    "theta_busy",
    "theta_idle",
    "consumer_capacity",
    "solver",
    "score_factor",
    "max_load_distance",
)
# The Spark jobs, in the order they run (jobs/<stage>.py)
STAGES = ("ingest", "windows", "outcomes", "guard", "plan", "validate", "publish")
# The routing tables are due this long after the run was queued (00:00 UTC for a scheduled run):
# later, the deadline alert fires (the run goes on); after RUN_TIMEOUT the run is stopped and
# failed, well before the next night's run.
DEADLINE = timedelta(hours=6)
RUN_TIMEOUT = timedelta(hours=12)
# Deprecated Params that are budget limits now (old name → Budget field); set, they go to the plan
# job in --params-json, which reads them as the budget (routeplan.planning.budget.read_budget).
DEPRECATED_BUDGET_PARAMS = {"max_migrations": "max_moves", "migration_cost": "migration_cost_unit"}


def honouring(limit: str) -> list[str]:
    """The registered strategies that honour budget ``limit`` (their ``honours``)."""
    return [name for name in strategy_names() if limit in type(get_strategy(name)).honours]


def honoured_by(limit: str) -> str:
    """``"honoured by a, b; other strategies fail the run when it is set"``."""
    names = honouring(limit)
    return (
        f"honoured by {', '.join(names)}; other strategies fail the run when it is set"
        if names
        else "no strategy honours it"
    )


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


# The Trigger form's sections, in form order: section → {Param: title}. The form opens with
# Airflow's default section, "Run Parameters", expanded and the others folded: it holds what an
# operator sets on most runs.
FORM = {
    "Run Parameters": {
        "date": "Day (UTC)",
        "streams": "Streams",
        "window_minutes": "Window (minutes)",
    },
    "Where things are": {
        "landing_path": "Landing directory",
        "workers_path": "Workers file",
        "policies_path": "Planning policies file",
    },
    "Ingest checks": {
        "max_bad_files": "Most unreadable files",
        "max_quarantined_share": "Most quarantined share",
    },
    "Planning: overrides of the streams' policies for this run": {
        "strategy": "Strategy",
        "planning_window": "Planning window",
        "load_metric": "Load metric",
    },
    "Budget: overrides of the policies' limits": {
        "max_moves": "Most moves",
        "max_migrated_load_share": "Most migrated load share",
        "max_migration_cost": "Most migration cost",
        "migration_cost_unit": "Migration cost unit",
    },
    f"{label('cg')}: its parameters (ε also porc's and chbl's)": {
        "epsilon": "ε",
        "virtual_workers_per_worker": "Virtual workers per worker (α)",
        "theta_busy": "Busy threshold θ_b",
        "theta_idle": "Idle threshold θ_i",
    },
    f"{label('chbl')}: its parameters": {
        "tokens_per_worker": "Ring tokens per worker",
    },
    f"{label('milp')}: its parameters (also albic's)": {
        "solver": "MILP solver",
        "max_load_distance": "Most load distance",
    },
    f"{label('albic')}: its parameters": {
        "score_factor": "Score factor sF",
    },
    "Partition strategies (paper 002: mwf, bfd, …): their parameters": {
        "consumer_capacity": "Consumer capacity (bytes/s)",
    },
    "Validate and publish": {
        "imbalance_tolerance": "Imbalance tolerance",
        "keep_versions": "Versions kept",
    },
    "Deprecated": {
        "max_migrations": "max_migrations (use Most moves)",
        "migration_cost": "migration_cost (use Migration cost unit)",
    },
}


def in_form(params: dict[str, Param]) -> dict[str, Param]:
    """``params`` in ``FORM``'s order, each with its section and title (a Param missing from
    ``FORM``, or ``FORM`` naming one that does not exist, is a bug caught at import)."""
    placed = {
        name: (section, title) for section, rows in FORM.items() for name, title in rows.items()
    }
    if set(placed) != set(params):
        raise ValueError(f"Params and FORM differ: {sorted(set(placed) ^ set(params))}")
    for name, (section, title) in placed.items():
        params[name].schema.update(section=section, title=title)
    return {name: params[name] for name in placed}


def budget_param(limit: str, kind: str, maximum: float, what: str) -> Param:
    """The Param of budget ``limit``: empty (no limit) by default, its description naming the
    strategies that honour it."""
    return Param(
        None,
        type=["null", kind],
        minimum=0,
        maximum=maximum,
        description=f"{what}; {honoured_by(limit)}; empty: no limit",
    )


def strategy_param(kind: str, what: str, default: str, **schema) -> Param:
    """An optional strategy parameter: empty (None) by default, so that a run with a strategy
    override keeps the stream's policy value for it (the strategy's own default, ``default``,
    when the policy has none or names another strategy)."""
    return Param(
        None,
        type=["null", kind],
        description=f"{what}; empty: the policy's value (else the strategy's default, {default})",
        **schema,
    )


def interval_day(params: dict, data_interval_start, dag_run) -> str:
    """The day to process: the ``date`` Param, else the run's data interval, else yesterday."""
    if params.get("date"):
        return params["date"]
    if data_interval_start is not None:
        return data_interval_start.date().isoformat()
    return (dag_run.run_after - timedelta(days=1)).date().isoformat()


def strategy_params(params: dict) -> str:
    """``--params-json``: with a ``strategy`` override, the form's strategy parameters that it
    accepts and that are set (empty ones keep the policy's value, else the strategy's default);
    without one, none (each stream's policy has its own); plus the deprecated budget Params that
    are set."""
    accepted = strategy_parameters(params["strategy"]) if params.get("strategy") else ()
    chosen = {k: params.get(k) for k in STRATEGY_PARAMS if k in accepted}
    deprecated = {k: params.get(k) for k in DEPRECATED_BUDGET_PARAMS}
    return json.dumps({k: v for k, v in {**chosen, **deprecated}.items() if v is not None})


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
        "stream_list": stream_list,
        "optional": optional,
    },
    render_template_as_native_obj=False,
    tags=["routeplan"],
    params=in_form(
        {
            "date": Param(
                None,
                type=["null", "string"],
                format="date",
                description="Day (UTC) to process; empty: the run's data interval (manual run: "
                "yesterday)",
            ),
            "streams": Param(
                None,
                type=["null", "array"],
                items=STREAM_NAME,
                description="Streams to plan, one per line; empty: every stream in the logs",
            ),
            "strategy": Param(
                None,
                type=["null", "string"],
                enum=[None, *strategy_names()],
                values_display={name: label(name) for name in strategy_names()},
                description="Plan the selected streams (all, if none is selected) with this "
                "strategy for this run, with the parameters in its section below; empty: each "
                "stream's policy (policies_path)",
            ),
            "policies_path": Param(
                None,
                type=["null", "string"],
                description="The streams' planning policies (YAML, schemas/streams.schema.json); "
                "empty: $ROUTEPLAN_HOME/config/streams.yaml (without it, every stream on cg)",
            ),
            "window_minutes": Param(
                60,
                type="integer",
                minimum=1,
                maximum=1440,
                description="Tumbling window size in minutes (must divide a day)",
            ),
            "landing_path": Param(
                None,
                type=["null", "string"],
                description="Landing directory (files under <landing>/<YYYY-MM-DD>/); empty: "
                "$ROUTEPLAN_HOME/landing",
            ),
            "workers_path": Param(
                None,
                type=["null", "string"],
                description="Workers file; empty: $ROUTEPLAN_HOME/config/workers.json",
            ),
            "max_bad_files": Param(
                5,
                type="integer",
                minimum=0,
                maximum=100_000,
                description="Landing files that cannot be read go whole to bronze.quarantine and "
                "the day proceeds; ingest fails when more than this many are bad",
            ),
            "max_quarantined_share": Param(
                0.1,
                type="number",
                minimum=0,
                maximum=1,
                description="Ingest fails when more than this share of the rows read is "
                "quarantined (0.1 = 10 %)",
            ),
            "planning_window": Param(
                None,
                type=["null", "string"],
                enum=[None, "forecast", "peak", "interval"],
                description="Plan on a forecast of every window of the last days, the peak window "
                "or the whole interval; empty: each stream's policy (default forecast)",
            ),
            "load_metric": Param(
                None,
                type=["null", "string"],
                enum=[None, "messages", "bytes", "cost_ms"],
                description="What a key's load is: its messages, bytes or processing cost; empty: "
                "each stream's policy (default messages)",
            ),
            "epsilon": strategy_param(
                "number", "PoRC ε (cg, porc, chbl)", "0.01", minimum=0, maximum=10
            ),
            "virtual_workers_per_worker": strategy_param(
                "integer", "cg α: virtual workers per worker", "10", minimum=1, maximum=1000
            ),
            "tokens_per_worker": strategy_param(
                "integer", "chbl: ring tokens per worker", "10", minimum=1, maximum=1000
            ),
            "theta_busy": strategy_param(
                "number", "cg busy threshold θ_b", "1.03", minimum=1, maximum=10
            ),
            "theta_idle": strategy_param(
                "number", "cg idle threshold θ_i", "0.97", minimum=0, maximum=1
            ),
            "consumer_capacity": Param(
                None,
                type=["null", "number"],
                exclusiveMinimum=0,
                maximum=1e12,
                description="Consumer capacity C̄ in bytes/s for the partition strategies "
                "(mwf, bfd, …, paper 002); empty: the workers' capacity",
            ),
            "max_moves": budget_param(
                "max_moves",
                "integer",
                1_000_000,
                "Most key groups / hot keys / partitions a plan may move",
            ),
            "max_migrated_load_share": budget_param(
                "max_migrated_load_share",
                "number",
                1,
                "Most share of the load a plan may move (0.1 = 10 %)",
            ),
            "max_migration_cost": budget_param(
                "max_migration_cost",
                "number",
                1e15,
                "Most summed migration cost, in migration_cost_unit",
            ),
            "migration_cost_unit": Param(
                "moves",
                type="string",
                enum=list(MIGRATION_COST_UNITS),
                description="What one move costs against max_migration_cost: 1 (moves), the key "
                "group's distinct keys (its state size) or its load (paper 004 §4.3.1)",
            ),
            "max_migrations": Param(
                None,
                type=["null", "integer"],
                minimum=0,
                maximum=1_000_000,
                description="Deprecated: use max_moves (this one still sets it for one release); "
                "empty: unset",
            ),
            "migration_cost": Param(
                None,
                type=["null", "string"],
                enum=[None, "moves", "keys", "distinct_keys", "load"],
                description="Deprecated: use migration_cost_unit (keys = distinct_keys; this one "
                "still sets it for one release); empty: unset",
            ),
            "solver": strategy_param(
                "string", "milp, albic: MILP solver", "highs", enum=[None, "highs", "cbc"]
            ),
            "score_factor": strategy_param(
                "number", "albic sF (§4.3.2)", "1.5", exclusiveMinimum=0, maximum=100
            ),
            "max_load_distance": strategy_param(
                "number",
                "milp, albic: most load distance d, a share of the mean load (albic maxLD)",
                "albic 0.10, milp no bound",
                minimum=0,
                maximum=10,
            ),
            "imbalance_tolerance": Param(
                0.10,
                type="number",
                minimum=0,
                maximum=100,
                description="Allowed predicted imbalance above the logged one (once producers "
                "follow a published table, the logs are near balance: a new plan within this of "
                "them passes, and the backtest and the next day's outcome judge it)",
            ),
            "keep_versions": Param(
                None,
                type=["null", "integer"],
                minimum=1,
                maximum=100_000,
                description="JSON routing-table versions kept per stream; empty: all (Delta "
                "gold.routing_tables keeps every version)",
            ),
        }
    ),
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
        "windows": ["--window-minutes", "{{ params.window_minutes }}", *workers],
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
        "validate": ["--imbalance-tolerance", "{{ params.imbalance_tolerance }}"],
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
