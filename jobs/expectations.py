"""routeplan's Great Expectations suites, run on pandas DataFrames.

Each public ``validate_*`` function builds its suite for the given parameters, validates one
DataFrame with Great Expectations 1.x (ephemeral context, pandas data source, dataframe asset,
whole-dataframe batch definition, validation definition) and returns a
:class:`ValidationOutcome` with one readable line per failed expectation.

Every call builds its own in-memory context, so calls are independent of each other and can
be repeated any number of times in one process with the same suite names. Note that
``gx.get_context`` also makes that context GX's process-wide "current" context.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import great_expectations as gx
import pandas as pd
from great_expectations.data_context.types.base import (
    DataContextConfig,
    InMemoryStoreBackendDefaults,
    ProgressBarsConfig,
)

__all__ = [
    "KEY_GROUP_LOAD_COLUMNS",
    "KEY_GROUP_LOAD_SUITE",
    "PARTITION_ASSIGNMENT_SUITE",
    "PARTITION_METRICS_COLUMNS",
    "PARTITION_METRICS_SUITE",
    "PLAN_ASSIGNMENT_COLUMNS",
    "PLAN_ASSIGNMENT_SUITE",
    "PLAN_METRICS_COLUMNS",
    "PLAN_METRICS_SUITE",
    "ValidationFailed",
    "ValidationOutcome",
    "validate_key_group_load",
    "validate_partition_assignment",
    "validate_partition_metrics",
    "validate_plan_assignment",
    "validate_plan_metrics",
]

KEY_GROUP_LOAD_SUITE = "routeplan.key_group_load"
PLAN_ASSIGNMENT_SUITE = "routeplan.plan_assignment"
PLAN_METRICS_SUITE = "routeplan.plan_metrics"
PARTITION_ASSIGNMENT_SUITE = "routeplan.partition_assignment"
PARTITION_METRICS_SUITE = "routeplan.partition_metrics"

KEY_GROUP_LOAD_COLUMNS: tuple[str, ...] = (
    "stream",
    "window_start",
    "window_end",
    "key_group",
    "messages",
    "bytes",
    "cost_ms",
    "distinct_keys",
)
PLAN_ASSIGNMENT_COLUMNS: tuple[str, ...] = ("key_group", "worker")
PLAN_METRICS_COLUMNS: tuple[str, ...] = (
    "stream",
    "strategy",
    "predicted_imbalance",
    "imbalance_bound",
    "migrated_load_share",
)
PARTITION_METRICS_COLUMNS: tuple[str, ...] = (
    "stream",
    "strategy",
    "consumers",
    "lower_bound",
    "overloaded",
    "migrated_load_share",
)

_MAX_SHOWN_VALUES = 5  # unexpected values quoted per failure line
_MAX_SHOWN_KWARG_ITEMS = 5  # list items quoted per expectation argument (e.g. value_set)
_RESULT_FORMAT = {"result_format": "BASIC", "partial_unexpected_count": _MAX_SHOWN_VALUES}
_HIDDEN_KWARGS = frozenset({"batch_id", "result_format", "catch_exceptions"})


class ValidationFailed(Exception):
    """Raised by :meth:`ValidationOutcome.raise_for_failures` when a suite did not pass."""


@dataclass(frozen=True)
class ValidationOutcome:
    """The result of running one suite on one DataFrame."""

    suite: str
    success: bool
    failures: list[str]
    statistics: dict

    def raise_for_failures(self) -> None:
        """Raise :class:`ValidationFailed` listing every failure line, unless the suite passed."""
        if self.success:
            return
        evaluated = self.statistics.get("evaluated_expectations", "?")
        unsuccessful = self.statistics.get("unsuccessful_expectations", len(self.failures))
        lines = "\n".join(f"  - {line}" for line in self.failures)
        raise ValidationFailed(
            f"suite {self.suite}: {unsuccessful} of {evaluated} expectations failed:\n{lines}"
        )


def validate_key_group_load(df: pd.DataFrame, num_key_groups: int) -> ValidationOutcome:
    """Validate per-window key-group load rows against suite ``routeplan.key_group_load``.

    Columns: stream, window_start, window_end, key_group, messages, bytes, cost_ms,
    distinct_keys. Checks: no nulls; messages, bytes, cost_ms >= 0; distinct_keys >= 1;
    0 <= key_group < num_key_groups; (stream, window_start, key_group) unique;
    window_end > window_start.
    """
    _check_num_key_groups(num_key_groups)
    ex = gx.expectations
    expectations: list[Any] = [
        ex.ExpectColumnValuesToNotBeNull(column=column) for column in KEY_GROUP_LOAD_COLUMNS
    ]
    expectations += [
        ex.ExpectColumnValuesToBeBetween(column=column, min_value=0)
        for column in ("messages", "bytes", "cost_ms")
    ]
    expectations += [
        ex.ExpectColumnValuesToBeBetween(column="distinct_keys", min_value=1),
        ex.ExpectColumnValuesToBeBetween(
            column="key_group", min_value=0, max_value=num_key_groups - 1
        ),
        ex.ExpectCompoundColumnsToBeUnique(column_list=["stream", "window_start", "key_group"]),
        ex.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="window_end", column_B="window_start", or_equal=False
        ),
    ]
    return _run_suite(KEY_GROUP_LOAD_SUITE, df, expectations)


def validate_plan_assignment(
    df: pd.DataFrame,
    active_workers: list[str],
    num_key_groups: int,
    draining_workers: list[str] = (),
) -> ValidationOutcome:
    """Validate one proposed key group -> worker map against ``routeplan.plan_assignment``.

    Columns: key_group, worker (and previous_worker when ``draining_workers`` are given).
    Checks: exactly num_key_groups rows; key_group not null, unique and in [0, num_key_groups);
    worker not null and one of ``active_workers`` — or, during a gradual scale-in, a draining
    worker that already held the group (``placement`` = ``draining_unmoved``; nothing may move
    onto a draining worker). Together: every key group is assigned exactly once, to an active
    worker or to the draining worker it has not left yet.
    """
    _check_num_key_groups(num_key_groups)
    if isinstance(active_workers, str) or isinstance(draining_workers, str):
        raise TypeError("workers must be lists of worker names, not strings")
    active, draining = set(active_workers), set(draining_workers)
    if draining:
        unmoved = df["worker"].isin(draining) & (df["worker"] == df["previous_worker"])
        placement = df["worker"].map(lambda w: "active" if w in active else "unknown worker")
        placement = placement.where(~df["worker"].isin(draining), "moved onto a draining worker")
        df = df.assign(placement=placement.where(~unmoved, "draining_unmoved"))
    ex = gx.expectations
    expectations: list[Any] = [
        ex.ExpectTableRowCountToEqual(value=num_key_groups),
        ex.ExpectColumnValuesToNotBeNull(column="key_group"),
        ex.ExpectColumnValuesToBeUnique(column="key_group"),
        ex.ExpectColumnValuesToBeBetween(
            column="key_group", min_value=0, max_value=num_key_groups - 1
        ),
        ex.ExpectColumnValuesToNotBeNull(column="worker"),
        ex.ExpectColumnValuesToBeInSet(column="worker", value_set=sorted(active | draining)),
    ]
    if draining:
        expectations.append(
            ex.ExpectColumnValuesToBeInSet(
                column="placement", value_set=["active", "draining_unmoved"]
            )
        )
    return _run_suite(PLAN_ASSIGNMENT_SUITE, df, expectations)


def validate_plan_metrics(df: pd.DataFrame) -> ValidationOutcome:
    """Validate per-stream plan metrics against suite ``routeplan.plan_metrics``.

    Columns: stream, strategy, predicted_imbalance, imbalance_bound, migrated_load_share.
    Checks: no nulls; predicted_imbalance >= 0; 0 <= migrated_load_share <= 1;
    predicted_imbalance <= imbalance_bound on every row (the caller sets imbalance_bound to
    today's observed imbalance plus a tolerance).
    """
    ex = gx.expectations
    expectations: list[Any] = [
        ex.ExpectColumnValuesToNotBeNull(column=column) for column in PLAN_METRICS_COLUMNS
    ]
    expectations += [
        ex.ExpectColumnValuesToBeBetween(column="predicted_imbalance", min_value=0),
        ex.ExpectColumnValuesToBeBetween(column="migrated_load_share", min_value=0, max_value=1),
        ex.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="imbalance_bound", column_B="predicted_imbalance", or_equal=True
        ),
    ]
    return _run_suite(PLAN_METRICS_SUITE, df, expectations)


def validate_partition_assignment(
    df: pd.DataFrame, consumers: list[str], partitions: list[int]
) -> ValidationOutcome:
    """Validate one proposed partition -> consumer map against
    ``routeplan.partition_assignment`` (paper 002 plans).

    Columns: partition, consumer. Checks: partition not null, unique, >= 0 and covering every
    partition in ``partitions`` (those seen in the logs); consumer not null and one of
    ``consumers``. Together: every partition is read by exactly one listed consumer.
    """
    if isinstance(consumers, str):
        raise TypeError("consumers must be a list of consumer names, not a string")
    ex = gx.expectations
    expectations: list[Any] = [
        ex.ExpectColumnValuesToNotBeNull(column="partition"),
        ex.ExpectColumnValuesToBeUnique(column="partition"),
        ex.ExpectColumnValuesToBeBetween(column="partition", min_value=0),
        ex.ExpectColumnDistinctValuesToContainSet(
            column="partition", value_set=sorted(set(partitions))
        ),
        ex.ExpectColumnValuesToNotBeNull(column="consumer"),
        ex.ExpectColumnValuesToBeInSet(column="consumer", value_set=sorted(set(consumers))),
    ]
    return _run_suite(PARTITION_ASSIGNMENT_SUITE, df, expectations)


def validate_partition_metrics(df: pd.DataFrame) -> ValidationOutcome:
    """Validate per-stream partition-plan metrics against ``routeplan.partition_metrics``.

    Columns: stream, strategy, consumers, lower_bound, overloaded, migrated_load_share.
    Checks: no nulls; overloaded = 0 (no consumer over the bin capacity C, except one reading a
    single partition that alone exceeds C); consumers >= lower_bound; lower_bound >= 1;
    0 <= migrated_load_share <= 1.
    """
    ex = gx.expectations
    expectations: list[Any] = [
        ex.ExpectColumnValuesToNotBeNull(column=column) for column in PARTITION_METRICS_COLUMNS
    ]
    expectations += [
        ex.ExpectColumnValuesToBeBetween(column="overloaded", min_value=0, max_value=0),
        ex.ExpectColumnValuesToBeBetween(column="lower_bound", min_value=1),
        ex.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="consumers", column_B="lower_bound", or_equal=True
        ),
        ex.ExpectColumnValuesToBeBetween(column="migrated_load_share", min_value=0, max_value=1),
    ]
    return _run_suite(PARTITION_METRICS_SUITE, df, expectations)


# --------------------------------------------------------------------------------------------
# Running a suite


def _check_num_key_groups(num_key_groups: int) -> None:
    if isinstance(num_key_groups, bool) or not isinstance(num_key_groups, int):
        raise TypeError(f"num_key_groups must be an int, got {num_key_groups!r}")
    if num_key_groups < 1:
        raise ValueError(f"num_key_groups must be >= 1, got {num_key_groups}")


def _context_config() -> DataContextConfig:
    # In-memory stores, no data-docs site, and no tqdm "Calculating Metrics" bars on stderr.
    return DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
        progress_bars=ProgressBarsConfig(globally=False, metric_calculations=False),
        analytics_enabled=False,
    )


def _run_suite(suite_name: str, df: pd.DataFrame, expectations: list[Any]) -> ValidationOutcome:
    """Build a fresh ephemeral context, run ``expectations`` on ``df`` and summarise."""
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"expected a pandas DataFrame, got {type(df).__name__}")

    context = gx.get_context(mode="ephemeral", project_config=_context_config())
    batch_definition = (
        context.data_sources.add_pandas(name="routeplan")
        .add_dataframe_asset(name=suite_name)
        .add_batch_definition_whole_dataframe(name="whole_dataframe")
    )
    # One store write for the whole suite (suite.add_expectation on a saved suite re-serialises
    # it every time). ExpectationSuite(expectations=...) logs and drops an expectation it cannot
    # take instead of raising, so check that none went missing.
    suite = context.suites.add(gx.ExpectationSuite(name=suite_name, expectations=expectations))
    if len(suite.expectations) != len(expectations):
        raise RuntimeError(
            f"suite {suite_name}: GX kept {len(suite.expectations)} of "
            f"{len(expectations)} expectations"
        )
    validation = context.validation_definitions.add(
        gx.ValidationDefinition(name=suite_name, data=batch_definition, suite=suite)
    )
    result = validation.run(batch_parameters={"dataframe": df}, result_format=_RESULT_FORMAT)

    # GX does not return results in suite order; report failures in the order they were declared.
    order = {expectation.id: index for index, expectation in enumerate(suite.expectations)}
    failed = sorted(
        (r for r in result.results if not r.success),
        key=lambda r: order.get(r.expectation_config.id, len(order)),
    )
    return ValidationOutcome(
        suite=suite_name,
        success=bool(result.success),
        failures=[_describe_failure(r) for r in failed],
        statistics=dict(result.statistics),
    )


# --------------------------------------------------------------------------------------------
# Failure lines


def _describe_failure(validation_result: Any) -> str:
    """One line: expectation type, its arguments, and what was observed."""
    config = validation_result.expectation_config
    arguments = ", ".join(
        f"{key}={_format_argument(value)}"
        for key, value in config.kwargs.items()
        if key not in _HIDDEN_KWARGS and value is not None
    )
    head = f"{config.type}({arguments})"

    exception_message = _exception_message(validation_result.exception_info)
    if exception_message is not None:
        return f"{head}: raised an error: {exception_message}"

    observed: Mapping[str, Any] = validation_result.result or {}
    if "unexpected_count" in observed:
        count = observed["unexpected_count"]
        text = f"{head}: {count} unexpected"
        if observed.get("element_count") is not None:
            text += f" of {observed['element_count']} rows"
        values = list(observed.get("partial_unexpected_list") or [])[:_MAX_SHOWN_VALUES]
        if "column_A" in config.kwargs and "column_B" in config.kwargs:
            # Column-pair results are (A, B) tuples; name the columns.
            names = (config.kwargs["column_A"], config.kwargs["column_B"])
            values = [
                dict(zip(names, v, strict=True)) if isinstance(v, tuple) and len(v) == 2 else v
                for v in values
            ]
        if values:
            label = "first unexpected values" if count > len(values) else "unexpected values"
            text += f"; {label}: [{', '.join(_format_value(v) for v in values)}]"
        return text
    if "observed_value" in observed:
        return f"{head}: observed value {_format_value(observed['observed_value'])}"
    return f"{head}: failed"


def _exception_message(exception_info: Any) -> str | None:
    """The first raised exception's message, whichever shape GX reports it in."""
    if not exception_info:
        return None
    infos = [exception_info] if "raised_exception" in exception_info else exception_info.values()
    messages = [
        str(info.get("exception_message") or "unknown error")
        for info in infos
        if isinstance(info, Mapping) and info.get("raised_exception")
    ]
    return "; ".join(dict.fromkeys(messages)) if messages else None


def _format_argument(value: Any) -> str:
    if isinstance(value, list | tuple) and len(value) > _MAX_SHOWN_KWARG_ITEMS:
        shown = ", ".join(_format_value(v) for v in value[:_MAX_SHOWN_KWARG_ITEMS])
        return f"[{shown}, ... ({len(value)} in all)]"
    if isinstance(value, list | tuple):
        return f"[{', '.join(_format_value(v) for v in value)}]"
    return _format_value(value)


def _format_value(value: Any) -> str:
    """Readable text for a value from a result (numpy scalars, timestamps, rows, nulls)."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_format_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple):
        return "(" + ", ".join(_format_value(v) for v in value) + ")"
    if isinstance(value, list):
        return "[" + ", ".join(_format_value(v) for v in value) + "]"
    if value is None or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
        return "null"
    if hasattr(value, "dtype") and hasattr(value, "item"):  # numpy scalar
        if getattr(value.dtype, "kind", "") in "mM":
            timestamp = pd.Timestamp(value)
            return "null" if timestamp is pd.NaT else timestamp.isoformat()
        return _format_value(value.item())
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if isinstance(value, str):
        return repr(value)
    return str(value)
