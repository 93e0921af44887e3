"""routeplan_nightly's Trigger form: its Params, their sections and titles, and what a run's
strategy override passes to the plan job — kept out of the DAG file, which wires the tasks.

Every Param is valid at its default, so the form submits as shown. A Param whose empty value
means "the job's default" is nullable with default ``None`` (the DAG renders it as an empty
argument). A strategy parameter is offered here (``STRATEGY_PARAMS``, a section per strategy) or
set per stream in the policy file only (``POLICY_ONLY_PARAMS``, each with why);
tests/test_dag.py checks that every registered strategy's parameters are one or the other.
"""

from __future__ import annotations

import json

from airflow.sdk import Param

from routeplan.contracts.schemas import load_schema
from routeplan.model.capacity import DEFAULT_ALPHA, DEFAULT_BUSIEST_WINDOWS, DEFAULT_MIN_MESSAGES
from routeplan.model.plan import MIGRATION_COST_UNITS
from routeplan.planning.catalog import label
from routeplan.planning.keyrouting.ring import METHODS as RING_METHODS
from routeplan.planning.reassign.flux import VARIANTS as FLUX_VARIANTS
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
    "d",
    "fill",
    "method",
    "tau",
    "max_rounds",
    "variant",
    "consumer_capacity",
    "rack_weight",
    "solver",
    "score_factor",
    "max_load_distance",
)
# the experts' parameters, set per stream in the policy file (streams.yaml), not in the form:
# the objective's weights and the search's limits, which a run's override rarely changes
POLICY_ONLY_PARAMS = {
    "hot_key_fraction": "cg, chbl, porc: the share of the load that makes a key hot",
    "max_salt": "cg, porc: the most hash choices tried per key",
    "pairing": "cg: how busy and idle workers pair",
    "split_share": "lpt: the window share above which a hot key is split",
    "keep_within": "lpt: how close to the best a unit's current worker must be to keep it",
    "head_threshold": "dchoices: the head's share (default: the paper's rule)",
    "distinct_choices": "pkg: choices drawn without repeats (ours, not the paper's)",
    "initial_tokens": "ring: tokens per worker before rebalancing",
    "iteration_s": "partition strategies: the iteration time I of C = (1 - R/I)·C̄",
    "rebalance_s": "partition strategies: the rebalance time R",
    "consumers": "kafka_range, kafka_roundrobin: the group's size (default: the workers)",
    "w1": "milp, albic: the objective's weight of the load distance",
    "w2": "milp, albic: the objective's weight of the migrations",
    "w_drain": "milp, albic: the weight of load left on draining workers",
    "w_migration": "milp, albic: the weight of one migration",
    "resource_bounds": "milp, albic: per-resource bounds",
    "scale_in": "milp: how workers are drained",
    "max_variables": "milp, albic: the model's size limit",
    "seed": "milp, albic: the solver's seed",
    "full_model_share": "milp: the share of key groups in the full model",
    "max_partition_load": "albic: the most load of one partition",
    "step_partition_load": "albic: the partition load step",
    "collocations_per_run": "albic: collocations per run",
    "operator_groups": "albic: operator groups",
    "remote_cost": "albic: the cost of a remote read",
}
# The Spark jobs, in the order they run (jobs/<stage>.py)
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
    f"{label('pkg')}: its parameters (d also potc's)": {
        "d": "Choices per key d",
    },
    f"{label('dchoices')}: its parameters": {
        "fill": "Head fill",
    },
    f"{label('ring')}: its parameters": {
        "method": "Token method",
        "tau": "Imbalance threshold τ",
        "max_rounds": "Most rounds per worker",
    },
    f"{label('flux')}: its parameters": {
        "variant": "Variant",
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
        "rack_weight": "Rack weight (reads in rack)",
    },
    "Worker capacities learnt from the logs (the windows job)": {
        "capacity_alpha": "Smoothing α",
        "capacity_min_messages": "Fewest messages per estimate",
        "capacity_busiest_windows": "Busiest windows (without cost_ms)",
    },
    "Validate and publish": {
        "imbalance_allowance": "Imbalance allowance",
        "keep_versions": "Versions kept",
    },
    "Deprecated": {
        "max_migrations": "max_migrations (use Most moves)",
        "migration_cost": "migration_cost (use Migration cost unit)",
        "imbalance_tolerance": "imbalance_tolerance (use Imbalance allowance)",
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


def strategy_params(params: dict) -> str:
    """``--params-json``: with a ``strategy`` override, the form's strategy parameters that it
    accepts and that are set (empty ones keep the policy's value, else the strategy's default);
    without one, none (each stream's policy has its own); plus the deprecated budget Params that
    are set."""
    accepted = strategy_parameters(params["strategy"]) if params.get("strategy") else ()
    chosen = {k: params.get(k) for k in STRATEGY_PARAMS if k in accepted}
    deprecated = {k: params.get(k) for k in DEPRECATED_BUDGET_PARAMS}
    return json.dumps({k: v for k, v in {**chosen, **deprecated}.items() if v is not None})


def imbalance_allowance(params: dict) -> str:
    """``--imbalance-allowance``: the deprecated ``imbalance_tolerance`` Param when set (its old
    name, read for one more release), else ``imbalance_allowance``."""
    old = params.get("imbalance_tolerance")
    return str(params["imbalance_allowance"] if old is None else old)


def nightly_params() -> dict[str, Param]:
    """The nightly DAG's Params, in the form's order (``FORM``), each valid at its default."""
    return in_form(
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
                description="Plan on a forecast of every window of the last days, the busiest "
                "window or the whole interval; empty: each stream's policy (default forecast)",
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
            "d": strategy_param(
                "integer", "pkg, potc: hash choices per key d", "2", minimum=1, maximum=64
            ),
            "fill": strategy_param(
                "number",
                "dchoices: how full the head's workers get",
                "0.5",
                exclusiveMinimum=0,
                maximum=1,
            ),
            "method": strategy_param(
                "string", "ring: how tokens move", "halving", enum=[None, *RING_METHODS]
            ),
            "tau": strategy_param(
                "number",
                "ring: the imbalance that triggers a round τ",
                "0.2",
                minimum=0,
                maximum=10,
            ),
            "max_rounds": strategy_param(
                "integer", "ring: most rounds a worker triggers", "3", minimum=0, maximum=100
            ),
            "variant": strategy_param(
                "string",
                "flux: the paper's pairing or rounds",
                "paper",
                enum=[None, *FLUX_VARIANTS],
            ),
            "rack_weight": strategy_param(
                "number",
                "partition strategies: weight of reads in the consumer's rack (0: racks ignored)",
                "1",
                minimum=0,
                maximum=100,
            ),
            "capacity_alpha": Param(
                DEFAULT_ALPHA,
                type="number",
                exclusiveMinimum=0,
                maximum=1,
                description="Weight of tonight's capacity estimate against the previous night's",
            ),
            "capacity_min_messages": Param(
                DEFAULT_MIN_MESSAGES,
                type="integer",
                minimum=1,
                maximum=10**12,
                description="Fewer messages behind a worker's estimate: no capacity learnt for it",
            ),
            "capacity_busiest_windows": Param(
                DEFAULT_BUSIEST_WINDOWS,
                type="integer",
                minimum=1,
                maximum=24 * 60,
                description="Windows the fallback without cost_ms measures throughput in",
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
            "imbalance_allowance": Param(
                0.10,
                type="number",
                minimum=0,
                maximum=100,
                description="Allowed predicted imbalance above the logged one (once producers "
                "follow a published table, the logs are near balance: a new plan within this of "
                "them passes, and the backtest and the next day's outcome judge it)",
            ),
            "imbalance_tolerance": Param(
                None,
                type=["null", "number"],
                minimum=0,
                maximum=100,
                description="Deprecated: use imbalance_allowance (this one still sets it for one "
                "release; a policy's imbalance_tolerance is auto's, another thing); empty: unset",
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
    )
