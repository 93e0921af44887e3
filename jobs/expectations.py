"""routeplan's Great Expectations suites, run on pandas DataFrames from the GX project in ``gx/``.

The project (``gx/great_expectations.yml``, ``$ROUTEPLAN_GX`` elsewhere) is reviewed like code:
the six suites are files (``gx/expectations/routeplan/*.json``), each with one validation
definition (its dataframe asset of the pandas data source ``routeplan``, the whole DataFrame) and
one checkpoint (no actions: :func:`build_data_docs` adds a run's results to the Data Docs site
once, after its last suite — GX's ``UpdateDataDocsAction`` rebuilt the site's index, reading up to
its 500 latest results, after every checkpoint). What
depends on the data (the number of key groups, the workers, the partitions, the consumers) is an
expectation parameter (``{"$PARAMETER": "num_key_groups"}`` in a suite), given by each call.

``open_context(output_dir)`` opens the project; a run writes its validation results to
``<output_dir>/gx/validations`` and the Data Docs site to ``<output_dir>/data_docs``, never into
``gx/``. Each public ``validate_*`` function runs one suite's checkpoint on one DataFrame and
returns a :class:`ValidationOutcome`: one readable line per failed expectation, and the result's
page in the site (there once :func:`build_data_docs` has run).

Why pandas, in a Spark job: what is validated is small and on the driver already or nearly so —
a plan's assignment (one row per key group or partition), one row of its numbers, and one
stream's day of ``silver.key_group_load`` (key groups × windows rows, e.g. 4,096 × 24 hourly
windows ≈ 98k rows, a few MB: the windows the plan job's backtest already holds on its driver).
On Spark every expectation's metrics are Spark queries (~130 for a night's eleven suites, ~12 s
through a warm session); on pandas the same suites take milliseconds each.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import great_expectations as gx
import numpy as np
import pandas as pd
from great_expectations.data_context import FileDataContext

from routeplan import settings

__all__ = [
    "KEY_GROUP_LOAD_COLUMNS",
    "KEY_GROUP_LOAD_SUITE",
    "PARTITION_ASSIGNMENT_SUITE",
    "PARTITION_METRICS_COLUMNS",
    "PARTITION_METRICS_SUITE",
    "PLAN_ASSIGNMENT_COLUMNS",
    "PLAN_ASSIGNMENT_SUITE",
    "PLAN_BACKTEST_COLUMNS",
    "PLAN_BACKTEST_SUITE",
    "PLAN_METRICS_COLUMNS",
    "PLAN_METRICS_SUITE",
    "SUITES",
    "ValidationFailed",
    "ValidationOutcome",
    "build_data_docs",
    "open_context",
    "validate_key_group_load",
    "validate_partition_assignment",
    "validate_partition_metrics",
    "validate_plan_assignment",
    "validate_plan_backtest",
    "validate_plan_metrics",
]


KEY_GROUP_LOAD_SUITE = "routeplan.key_group_load"
PLAN_ASSIGNMENT_SUITE = "routeplan.plan_assignment"
PLAN_METRICS_SUITE = "routeplan.plan_metrics"
PARTITION_ASSIGNMENT_SUITE = "routeplan.partition_assignment"
PARTITION_METRICS_SUITE = "routeplan.partition_metrics"
PLAN_BACKTEST_SUITE = "routeplan.plan_backtest"
SUITES = (
    KEY_GROUP_LOAD_SUITE,
    PLAN_ASSIGNMENT_SUITE,
    PLAN_METRICS_SUITE,
    PARTITION_ASSIGNMENT_SUITE,
    PARTITION_METRICS_SUITE,
    PLAN_BACKTEST_SUITE,
)

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
PLAN_BACKTEST_COLUMNS: tuple[str, ...] = (
    "stream",
    "strategy",
    "backtest_regression",
    "regression_bound",
)
PARTITION_METRICS_COLUMNS: tuple[str, ...] = (
    "stream",
    "strategy",
    "consumers",
    "lower_bound",
    "overloaded",
    "migrated_load_share",
)

DATA_DOCS_SITE = "routeplan"  # the site's name in gx/great_expectations.yml
_MAX_SHOWN_VALUES = 5  # unexpected values quoted per failure line (the checkpoints' result_format)
_MAX_SHOWN_KWARG_ITEMS = 5  # list items quoted per expectation argument (e.g. value_set)
_HIDDEN_KWARGS = frozenset({"batch_id", "result_format", "catch_exceptions"})


class ValidationFailed(Exception):
    """Raised by :meth:`ValidationOutcome.raise_for_failures` when a suite did not pass."""


@dataclass(frozen=True)
class ValidationOutcome:
    """The result of running one suite on one DataFrame.

    ``data_docs_page`` is the result's page, relative to the Data Docs site
    (``validations/routeplan/<suite>/…/<batch>.html``); ``result_id`` names the stored
    validation result (GX's ``ValidationResultIdentifier``) for :func:`build_data_docs`."""

    suite: str
    success: bool
    failures: list[str]
    statistics: dict
    data_docs_page: str | None = None
    result_id: Any = field(default=None, repr=False, compare=False)

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


# --------------------------------------------------------------------------------------------
# The project


def open_context(
    output_dir: str | os.PathLike[str], project: Path | None = None
) -> FileDataContext:
    """The GX project ``project`` (default ``gx/``), writing validation results to
    ``<output_dir>/gx/validations`` and the Data Docs site to ``<output_dir>/data_docs``
    (``routeplan.settings.data_docs_root``): ``output_dir`` is a home, or a local stand-in.

    Opening it reads the project's files and writes none of them."""
    project = settings.current().gx if project is None else project
    if not (project / "great_expectations.yml").is_file():
        raise FileNotFoundError(
            f"no Great Expectations project at {project}: set ROUTEPLAN_GX to the repository's "
            "gx/ folder"
        )
    output = Path(output_dir).resolve()
    return gx.get_context(
        context_root_dir=project,
        runtime_environment={
            "routeplan_validation_results": str(output / "gx" / "validations"),
            "routeplan_data_docs": settings.data_docs_root(output),
        },
    )


# --------------------------------------------------------------------------------------------
# The suites


def validate_key_group_load(
    context: FileDataContext, df: pd.DataFrame, num_key_groups: int
) -> ValidationOutcome:
    """Validate per-window key-group load rows against suite ``routeplan.key_group_load``.

    Columns: stream, window_start, window_end, key_group, messages, bytes, cost_ms,
    distinct_keys. Checks: no nulls; messages, bytes, cost_ms >= 0; distinct_keys >= 1;
    0 <= key_group < num_key_groups; (stream, window_start, key_group) unique;
    window_end > window_start.
    """
    _check_num_key_groups(num_key_groups)
    return _run_checkpoint(context, KEY_GROUP_LOAD_SUITE, df, {"num_key_groups": num_key_groups})


def validate_plan_assignment(
    context: FileDataContext,
    df: pd.DataFrame,
    active_workers: Sequence[str],
    num_key_groups: int,
    draining_workers: Sequence[str] = (),
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
    _check_frame(df)
    placement = pd.Series("not_draining", index=df.index, dtype=object)
    if draining:
        if "previous_worker" not in df.columns:
            raise ValueError("draining workers given but the frame has no previous_worker column")
        on_draining = df["worker"].isin(sorted(draining))
        unmoved = on_draining & (df["worker"] == df["previous_worker"])
        placement = placement.mask(on_draining, "moved onto a draining worker")
        placement = placement.mask(unmoved, "draining_unmoved")
    parameters = {"num_key_groups": num_key_groups, "workers": sorted(active | draining)}
    return _run_checkpoint(
        context, PLAN_ASSIGNMENT_SUITE, df.assign(placement=placement), parameters
    )


def validate_plan_metrics(context: FileDataContext, df: pd.DataFrame) -> ValidationOutcome:
    """Validate per-stream plan metrics against suite ``routeplan.plan_metrics``.

    Columns: stream, strategy, predicted_imbalance, imbalance_bound, migrated_load_share.
    Checks: no nulls; predicted_imbalance >= 0; 0 <= migrated_load_share <= 1;
    predicted_imbalance <= imbalance_bound on every row (the caller sets imbalance_bound to
    today's observed imbalance plus a tolerance).
    """
    return _run_checkpoint(context, PLAN_METRICS_SUITE, df, {})


def validate_plan_backtest(context: FileDataContext, df: pd.DataFrame) -> ValidationOutcome:
    """Validate per-stream backtests of selected plans against ``routeplan.plan_backtest``.

    Columns: stream, strategy, backtest_regression (the candidate's mean headline measure —
    imbalance, or overload for partitions — over the day's windows minus LATEST's),
    regression_bound (the policy's regression_tolerance).
    Checks: stream and strategy not null; backtest_regression <= regression_bound on every row
    that has both (a stream without a backtest — no LATEST of the plan's kind — passes).
    """
    return _run_checkpoint(context, PLAN_BACKTEST_SUITE, df, {})


def validate_partition_assignment(
    context: FileDataContext, df: pd.DataFrame, consumers: Sequence[str], partitions: Sequence[int]
) -> ValidationOutcome:
    """Validate one proposed partition -> consumer map against
    ``routeplan.partition_assignment`` (paper 002 plans).

    Columns: partition, consumer. Checks: partition not null, unique, >= 0 and covering every
    partition in ``partitions`` (those seen in the logs); consumer not null and one of
    ``consumers``. Together: every partition is read by exactly one listed consumer.
    """
    if isinstance(consumers, str):
        raise TypeError("consumers must be a list of consumer names, not a string")
    parameters = {"partitions": sorted(set(partitions)), "consumers": sorted(set(consumers))}
    return _run_checkpoint(context, PARTITION_ASSIGNMENT_SUITE, df, parameters)


def validate_partition_metrics(context: FileDataContext, df: pd.DataFrame) -> ValidationOutcome:
    """Validate per-stream partition-plan metrics against ``routeplan.partition_metrics``.

    Columns: stream, strategy, consumers, lower_bound, overloaded, migrated_load_share.
    Checks: no nulls; overloaded = 0 (no consumer over the bin capacity C, except one reading a
    single partition that alone exceeds C); consumers >= lower_bound; lower_bound >= 1;
    0 <= migrated_load_share <= 1.
    """
    return _run_checkpoint(context, PARTITION_METRICS_SUITE, df, {})


# --------------------------------------------------------------------------------------------
# Running a checkpoint


def _check_num_key_groups(num_key_groups: int) -> None:
    if isinstance(num_key_groups, bool) or not isinstance(num_key_groups, int):
        raise TypeError(f"num_key_groups must be an int, got {num_key_groups!r}")
    if num_key_groups < 1:
        raise ValueError(f"num_key_groups must be >= 1, got {num_key_groups}")


def _check_frame(df: Any) -> None:
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"expected a pandas DataFrame, got {type(df).__name__}")


def _run_checkpoint(
    context: FileDataContext, suite_name: str, df: pd.DataFrame, parameters: dict[str, Any]
) -> ValidationOutcome:
    """Run the suite's checkpoint on ``df`` with ``parameters`` and summarise its result."""
    _check_frame(df)
    checkpoint = context.checkpoints.get(suite_name)
    result = checkpoint.run(batch_parameters={"dataframe": df}, expectation_parameters=parameters)
    [(identifier, validation)] = result.run_results.items()

    # GX does not return results in suite order; report failures in the order the suite file
    # declares them.
    suite = checkpoint.validation_definitions[0].suite
    order = {expectation.id: index for index, expectation in enumerate(suite.expectations)}
    failed = sorted(
        (r for r in validation.results if not r.success),
        key=lambda r: order.get(r.expectation_config.id, len(order)),
    )
    [site] = context.get_docs_sites_urls(
        resource_identifier=identifier, site_names=[DATA_DOCS_SITE], only_if_exists=False
    )
    return ValidationOutcome(
        suite=suite_name,
        success=bool(validation.success),
        failures=[_describe_failure(r) for r in failed],
        statistics=dict(validation.statistics),
        data_docs_page=_site_page(context, site["site_url"]),
        result_id=identifier,
    )


def build_data_docs(context: FileDataContext, outcomes: Sequence[ValidationOutcome]) -> None:
    """Add the results of ``outcomes`` to the Data Docs site — their pages, and the index
    (linking the latest ``validation_results_limit`` results of every run) rebuilt once."""
    identifiers = [o.result_id for o in outcomes if o.result_id is not None]
    context.build_data_docs(site_names=[DATA_DOCS_SITE], resource_identifiers=identifiers)


def _site_page(context: FileDataContext, url: str) -> str:
    """A ``file://`` URL in the Data Docs site as a path relative to the site's folder."""
    [index] = context.get_docs_sites_urls(site_names=[DATA_DOCS_SITE], only_if_exists=False)
    site_folder = _url_path(index["site_url"]).parent
    return _url_path(url).relative_to(site_folder).as_posix()


def _url_path(url: str) -> Path:
    return Path(unquote(urlsplit(url).path))


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
            # Column-pair results are (A, B) pairs; name the columns.
            names = (config.kwargs["column_A"], config.kwargs["column_B"])
            values = [
                dict(zip(names, v, strict=True))
                if isinstance(v, tuple | list) and len(v) == 2
                else v
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
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # a parameter expression's result ("num_key_groups - 1")
    if isinstance(value, list | tuple) and len(value) > _MAX_SHOWN_KWARG_ITEMS:
        shown = ", ".join(_format_value(v) for v in value[:_MAX_SHOWN_KWARG_ITEMS])
        return f"[{shown}, ... ({len(value)} in all)]"
    if isinstance(value, list | tuple):
        return f"[{', '.join(_format_value(v) for v in value)}]"
    return _format_value(value)


def _format_value(value: Any) -> str:
    """Readable text for a value from a result (rows, timestamps, nulls)."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_format_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple):
        return "(" + ", ".join(_format_value(v) for v in value) + ")"
    if isinstance(value, list):
        return "[" + ", ".join(_format_value(v) for v in value) + "]"
    if value is None or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
        return "null"
    if isinstance(value, np.datetime64):  # a timestamp from a pandas column
        value = pd.Timestamp(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, str):
        return repr(value)
    return str(value)
