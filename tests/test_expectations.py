"""Tests for jobs/expectations.py: routeplan's Great Expectations suites, read from the GX
project in gx/, run on pandas DataFrames, with Data Docs built outside the checkout."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import threading
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from great_expectations.data_context import FileDataContext

from jobs.expectations import (
    KEY_GROUP_LOAD_COLUMNS,
    KEY_GROUP_LOAD_SUITE,
    PARTITION_ASSIGNMENT_SUITE,
    PARTITION_METRICS_SUITE,
    PLAN_ASSIGNMENT_SUITE,
    PLAN_METRICS_SUITE,
    SUITES,
    ValidationFailed,
    ValidationOutcome,
    build_data_docs,
    open_context,
    validate_key_group_load,
    validate_partition_assignment,
    validate_partition_metrics,
    validate_plan_assignment,
    validate_plan_metrics,
)
from routeplan import settings
from routeplan.cli import docs
from routeplan.errors import InputError

GX_PROJECT = settings.current().gx

NUM_KEY_GROUPS = 8
WORKERS = ["worker-a", "worker-b", "worker-c"]
W0 = pd.Timestamp("2024-05-01T10:00:00Z")
W1 = W0 + pd.Timedelta(minutes=5)
W2 = W1 + pd.Timedelta(minutes=5)

NOT_NULL = "expect_column_values_to_not_be_null"
BETWEEN = "expect_column_values_to_be_between"
UNIQUE = "expect_column_values_to_be_unique"
IN_SET = "expect_column_values_to_be_in_set"
COMPOUND_UNIQUE = "expect_compound_columns_to_be_unique"
PAIR_A_GT_B = "expect_column_pair_values_a_to_be_greater_than_b"
ROW_COUNT = "expect_table_row_count_to_equal"


def project_files(project: Path) -> dict[str, bytes]:
    """Every file under a GX project folder (ignored ones too) and its bytes."""
    return {str(p.relative_to(project)): p.read_bytes() for p in project.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def project_before() -> dict[str, bytes]:
    """The repository's gx/ folder before this module validated anything."""
    return project_files(GX_PROJECT)


@pytest.fixture(scope="module")
def output_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where this module's validation results and Data Docs go (a home would hold them)."""
    return tmp_path_factory.mktemp("gx_output")


@pytest.fixture(scope="module")
def context(project_before: dict, output_dir: Path) -> FileDataContext:
    """The repository's GX project, opened once for the module (as the validate job does)."""
    return open_context(output_dir)


def load_frame() -> pd.DataFrame:
    """Two streams, two windows; includes the boundary values that must pass."""
    rows = [
        # stream, window_start, window_end, key_group, messages, bytes, cost_ms, distinct_keys
        ("orders", W0, W1, 0, 120, 4_800, 3.5, 40),
        ("orders", W0, W1, NUM_KEY_GROUPS - 1, 0, 0, 0.0, 1),
        ("orders", W1, W2, 0, 90, 3_600, 2.25, 30),
        ("orders", W1, W2, 3, 15, 600, 0.5, 5),
        ("clicks", W0, W1, 0, 7, 280, 0.1, 2),
    ]
    return pd.DataFrame(
        rows,
        columns=[
            "stream",
            "window_start",
            "window_end",
            "key_group",
            "messages",
            "bytes",
            "cost_ms",
            "distinct_keys",
        ],
    )


def assignment_frame() -> pd.DataFrame:
    """Every key group 0..NUM_KEY_GROUPS-1 assigned once, round robin over WORKERS."""
    return pd.DataFrame(
        {
            "key_group": list(range(NUM_KEY_GROUPS)),
            "worker": [WORKERS[k % len(WORKERS)] for k in range(NUM_KEY_GROUPS)],
        }
    )


def metrics_frame() -> pd.DataFrame:
    """Includes predicted_imbalance == imbalance_bound and the share bounds 0 and 1."""
    return pd.DataFrame(
        {
            "stream": ["orders", "clicks", "payments"],
            "strategy": ["greedy", "lpt", "milp"],
            "predicted_imbalance": [1.05, 1.2, 0.0],
            "imbalance_bound": [1.10, 1.2, 0.5],
            "migrated_load_share": [0.125, 0.0, 1.0],
        }
    )


def only_failure(outcome: ValidationOutcome) -> str:
    assert not outcome.success
    assert len(outcome.failures) == 1, outcome.failures
    assert outcome.statistics["unsuccessful_expectations"] == 1
    return outcome.failures[0]


def _set(frame: pd.DataFrame, row: int, column: str, value: object) -> pd.DataFrame:
    if value is None:
        frame[column] = frame[column].astype(object)
    frame.loc[row, column] = value
    return frame


# --------------------------------------------------------------------------------------------
# Good data


def test_good_key_group_load_passes(context: FileDataContext) -> None:
    outcome = validate_key_group_load(context, load_frame(), NUM_KEY_GROUPS)
    assert outcome.suite == KEY_GROUP_LOAD_SUITE
    assert outcome.success, outcome.failures
    assert outcome.failures == []
    # 8 not-null + 3 non-negative + distinct_keys + key_group range + compound key + window order
    assert outcome.statistics["evaluated_expectations"] == 15
    assert outcome.statistics["unsuccessful_expectations"] == 0
    outcome.raise_for_failures()


def test_good_plan_assignment_passes(context: FileDataContext) -> None:
    outcome = validate_plan_assignment(context, assignment_frame(), WORKERS, NUM_KEY_GROUPS)
    assert outcome.suite == PLAN_ASSIGNMENT_SUITE
    assert outcome.success, outcome.failures
    assert outcome.failures == []
    assert outcome.statistics["evaluated_expectations"] == 7  # the 6 checks and placement
    outcome.raise_for_failures()


def test_good_plan_metrics_passes(context: FileDataContext) -> None:
    outcome = validate_plan_metrics(context, metrics_frame())
    assert outcome.suite == PLAN_METRICS_SUITE
    assert outcome.success, outcome.failures
    assert outcome.failures == []
    assert outcome.statistics["evaluated_expectations"] == 8
    outcome.raise_for_failures()


# --------------------------------------------------------------------------------------------
# routeplan.key_group_load


def _dup_compound_key(frame: pd.DataFrame) -> pd.DataFrame:
    duplicate = frame.iloc[[0]].assign(messages=1, bytes=40, cost_ms=0.2, distinct_keys=1)
    return pd.concat([frame, duplicate], ignore_index=True)


LOAD_BREAKAGES: list[tuple[str, Callable[[pd.DataFrame], pd.DataFrame], str, str, str]] = [
    # id, mutation, expectation type, column text, observed text
    ("null key_group", lambda f: _set(f, 1, "key_group", None), NOT_NULL, "'key_group'", "null"),
    ("null stream", lambda f: _set(f, 2, "stream", None), NOT_NULL, "'stream'", "null"),
    ("negative messages", lambda f: _set(f, 0, "messages", -5), BETWEEN, "'messages'", "[-5]"),
    ("negative bytes", lambda f: _set(f, 0, "bytes", -1), BETWEEN, "'bytes'", "[-1]"),
    ("negative cost_ms", lambda f: _set(f, 3, "cost_ms", -0.75), BETWEEN, "'cost_ms'", "[-0.75]"),
    (
        "zero distinct_keys",
        lambda f: _set(f, 0, "distinct_keys", 0),
        BETWEEN,
        "'distinct_keys'",
        "[0]",
    ),
    (
        "key_group == num_key_groups",
        lambda f: _set(f, 3, "key_group", NUM_KEY_GROUPS),
        BETWEEN,
        "'key_group'",
        f"[{NUM_KEY_GROUPS}]",
    ),
    ("negative key_group", lambda f: _set(f, 3, "key_group", -1), BETWEEN, "'key_group'", "[-1]"),
    (
        "duplicate (stream, window_start, key_group)",
        _dup_compound_key,
        COMPOUND_UNIQUE,
        "['stream', 'window_start', 'key_group']",
        "2 unexpected",
    ),
    (
        "window_end == window_start",
        lambda f: _set(f, 2, "window_end", W1),
        PAIR_A_GT_B,
        "column_A='window_end', column_B='window_start'",
        "1 unexpected",
    ),
    (
        "window_end before window_start",
        lambda f: _set(f, 4, "window_end", W0 - pd.Timedelta(minutes=1)),
        PAIR_A_GT_B,
        "column_A='window_end', column_B='window_start'",
        "window_end: 2024-05-01T09:59:00",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "expectation", "column", "observed"),
    [case[1:] for case in LOAD_BREAKAGES],
    ids=[case[0] for case in LOAD_BREAKAGES],
)
def test_broken_key_group_load_fails(
    context: FileDataContext,
    mutate: Callable[[pd.DataFrame], pd.DataFrame],
    expectation: str,
    column: str,
    observed: str,
) -> None:
    line = only_failure(validate_key_group_load(context, mutate(load_frame()), NUM_KEY_GROUPS))
    assert line.startswith(expectation + "(")
    assert column in line
    assert observed in line


def test_null_window_end_fails_not_null_only(context: FileDataContext) -> None:
    # The window-order check leaves a row missing a side to the not-null check
    # (ignore_row_if: either_value_is_missing), which names it.
    outcome = validate_key_group_load(
        context, _set(load_frame(), 3, "window_end", pd.NaT), NUM_KEY_GROUPS
    )
    assert not outcome.success
    assert len(outcome.failures) == 1
    assert outcome.failures[0].startswith(NOT_NULL + "(column='window_end')")
    assert "1 unexpected of 5 rows; unexpected values: [null]" in outcome.failures[0]


def test_key_group_range_follows_num_key_groups(context: FileDataContext) -> None:
    # The good frame uses key group 7: valid for 8 key groups, out of range for 4.
    # Same suite name twice in one process, with different parameters.
    assert validate_key_group_load(context, load_frame(), NUM_KEY_GROUPS).success
    line = only_failure(validate_key_group_load(context, load_frame(), 4))
    assert line.startswith(BETWEEN + "(column='key_group'")
    assert "max_value=3" in line
    assert "unexpected values: [7]" in line


def test_missing_column_is_reported_not_raised(context: FileDataContext) -> None:
    outcome = validate_key_group_load(context, load_frame().drop(columns=["bytes"]), NUM_KEY_GROUPS)
    assert not outcome.success
    assert len(outcome.failures) == 2  # not-null and >= 0 on bytes
    assert [line.split("(")[0] for line in outcome.failures] == [NOT_NULL, BETWEEN]
    for line in outcome.failures:
        assert "column='bytes'" in line
        assert 'The column "bytes" in BatchData does not exist' in line


def test_failure_lines_quote_at_most_five_values(context: FileDataContext) -> None:
    frame = pd.concat([load_frame()] * 2, ignore_index=True)
    frame["window_start"] = [W0 + pd.Timedelta(minutes=m) for m in range(len(frame))]
    frame["window_end"] = frame["window_start"] + pd.Timedelta(minutes=5)
    frame["messages"] = [-(i + 1) for i in range(len(frame))]  # 10 negative values
    frame = _set(frame, 0, "stream", None)
    outcome = validate_key_group_load(context, frame, NUM_KEY_GROUPS)
    assert [line.split("(")[0] for line in outcome.failures] == [NOT_NULL, BETWEEN]
    messages_line = outcome.failures[1]
    assert "10 unexpected of 10 rows" in messages_line
    assert "first unexpected values: [-1, -2, -3, -4, -5]" in messages_line
    assert "-6" not in messages_line


def test_failures_follow_suite_order(context: FileDataContext) -> None:
    # GX returns results in its own order (here the compound-key error would come before the
    # messages range failure); failure lines follow the order the suite declares them in.
    frame = load_frame().drop(columns=["stream"]).assign(messages=-1)
    outcome = validate_key_group_load(context, frame, NUM_KEY_GROUPS)
    assert [line.split("(")[0] for line in outcome.failures] == [
        NOT_NULL,
        BETWEEN,
        COMPOUND_UNIQUE,
    ]
    assert "column='stream'" in outcome.failures[0]
    assert "column='messages'" in outcome.failures[1]
    assert 'The column "stream" in BatchData does not exist' in outcome.failures[2]


def test_validation_does_not_modify_the_frame(context: FileDataContext) -> None:
    frame = load_frame()
    before = frame.copy()
    validate_key_group_load(context, frame, NUM_KEY_GROUPS)
    pd.testing.assert_frame_equal(frame, before)
    assert list(frame.columns) == list(KEY_GROUP_LOAD_COLUMNS)


def test_no_progress_bars_on_the_terminal(
    context: FileDataContext, capfd: pytest.CaptureFixture[str]
) -> None:
    validate_plan_metrics(context, metrics_frame())
    captured = capfd.readouterr()
    assert "Calculating Metrics" not in captured.err + captured.out


# --------------------------------------------------------------------------------------------
# routeplan.plan_assignment


def test_missing_key_group_fails_row_count(context: FileDataContext) -> None:
    frame = assignment_frame()
    frame = frame[frame["key_group"] != 5].reset_index(drop=True)
    line = only_failure(validate_plan_assignment(context, frame, WORKERS, NUM_KEY_GROUPS))
    assert line.startswith(ROW_COUNT + f"(value={NUM_KEY_GROUPS})")
    assert f"observed value {NUM_KEY_GROUPS - 1}" in line


def test_key_group_assigned_twice_fails_uniqueness_and_row_count(context: FileDataContext) -> None:
    frame = assignment_frame()
    frame = pd.concat(
        [frame, pd.DataFrame({"key_group": [2], "worker": ["worker-a"]})], ignore_index=True
    )
    outcome = validate_plan_assignment(context, frame, WORKERS, NUM_KEY_GROUPS)
    assert not outcome.success
    assert outcome.failures[0].startswith(ROW_COUNT)
    assert f"observed value {NUM_KEY_GROUPS + 1}" in outcome.failures[0]
    assert outcome.failures[1].startswith(UNIQUE + "(column='key_group')")
    assert "unexpected values: [2, 2]" in outcome.failures[1]
    assert len(outcome.failures) == 2


def test_duplicate_key_group_replacing_another_fails_uniqueness(context: FileDataContext) -> None:
    frame = _set(assignment_frame(), 7, "key_group", 6)  # 7 rows cover 0..6, key group 7 lost
    line = only_failure(validate_plan_assignment(context, frame, WORKERS, NUM_KEY_GROUPS))
    assert line.startswith(UNIQUE + "(column='key_group')")


def test_worker_not_active_fails(context: FileDataContext) -> None:
    frame = _set(assignment_frame(), 4, "worker", "worker-retired")
    line = only_failure(validate_plan_assignment(context, frame, WORKERS, NUM_KEY_GROUPS))
    assert line.startswith(IN_SET + "(column='worker'")
    assert "'worker-retired'" in line


def test_worker_removed_from_active_set_fails(context: FileDataContext) -> None:
    # worker-c holds key groups 2 and 5; the plan is fine until worker-c leaves the active set.
    line = only_failure(
        validate_plan_assignment(
            context, assignment_frame(), ["worker-a", "worker-b"], NUM_KEY_GROUPS
        )
    )
    assert line.startswith(IN_SET + "(column='worker'")
    assert "2 unexpected of 8 rows" in line
    assert "unexpected values: ['worker-c', 'worker-c']" in line


def test_null_worker_fails(context: FileDataContext) -> None:
    line = only_failure(
        validate_plan_assignment(
            context, _set(assignment_frame(), 3, "worker", None), WORKERS, NUM_KEY_GROUPS
        )
    )
    assert line.startswith(NOT_NULL + "(column='worker')")


def test_null_key_group_fails(context: FileDataContext) -> None:
    # Uniqueness and range checks skip nulls, so only the not-null expectation reports it.
    line = only_failure(
        validate_plan_assignment(
            context, _set(assignment_frame(), 3, "key_group", None), WORKERS, NUM_KEY_GROUPS
        )
    )
    assert line.startswith(NOT_NULL + "(column='key_group')")
    assert "1 unexpected of 8 rows" in line


def test_key_group_out_of_range_fails(context: FileDataContext) -> None:
    frame = _set(assignment_frame(), 7, "key_group", NUM_KEY_GROUPS)
    line = only_failure(validate_plan_assignment(context, frame, WORKERS, NUM_KEY_GROUPS))
    assert line.startswith(BETWEEN + "(column='key_group'")
    assert f"unexpected values: [{NUM_KEY_GROUPS}]" in line


def test_num_key_groups_must_be_positive(context: FileDataContext) -> None:
    with pytest.raises(ValueError, match="num_key_groups"):
        validate_plan_assignment(context, assignment_frame(), WORKERS, 0)


def test_non_dataframe_is_rejected(context: FileDataContext) -> None:
    with pytest.raises(TypeError, match="DataFrame"):
        validate_plan_metrics(context, metrics_frame().to_dict())  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# routeplan.plan_metrics


METRICS_BREAKAGES: list[tuple[str, Callable[[pd.DataFrame], pd.DataFrame], str, str, str]] = [
    (
        "predicted_imbalance above bound",
        lambda f: _set(f, 0, "predicted_imbalance", 1.25),
        PAIR_A_GT_B,
        "column_A='imbalance_bound', column_B='predicted_imbalance', or_equal=True",
        "{imbalance_bound: 1.1, predicted_imbalance: 1.25}",
    ),
    (
        "negative predicted_imbalance",
        lambda f: _set(f, 2, "predicted_imbalance", -0.5),
        BETWEEN,
        "'predicted_imbalance'",
        "[-0.5]",
    ),
    (
        "migrated_load_share above 1",
        lambda f: _set(f, 1, "migrated_load_share", 1.5),
        BETWEEN,
        "'migrated_load_share'",
        "[1.5]",
    ),
    (
        "negative migrated_load_share",
        lambda f: _set(f, 1, "migrated_load_share", -0.01),
        BETWEEN,
        "'migrated_load_share'",
        "[-0.01]",
    ),
    ("null strategy", lambda f: _set(f, 1, "strategy", None), NOT_NULL, "'strategy'", "null"),
]


@pytest.mark.parametrize(
    ("mutate", "expectation", "column", "observed"),
    [case[1:] for case in METRICS_BREAKAGES],
    ids=[case[0] for case in METRICS_BREAKAGES],
)
def test_broken_plan_metrics_fails(
    context: FileDataContext,
    mutate: Callable[[pd.DataFrame], pd.DataFrame],
    expectation: str,
    column: str,
    observed: str,
) -> None:
    line = only_failure(validate_plan_metrics(context, mutate(metrics_frame())))
    assert line.startswith(expectation + "(")
    assert column in line
    assert observed in line


def test_null_imbalance_bound_fails(context: FileDataContext) -> None:
    outcome = validate_plan_metrics(context, _set(metrics_frame(), 0, "imbalance_bound", None))
    assert not outcome.success
    # The row-wise comparison leaves a row missing a side to the not-null check
    # (ignore_row_if: either_value_is_missing), which names the missing bound.
    assert len(outcome.failures) == 1
    assert outcome.failures[0].startswith(NOT_NULL + "(column='imbalance_bound')")


# --------------------------------------------------------------------------------------------
# raise_for_failures


def test_raise_for_failures_lists_every_failure(context: FileDataContext) -> None:
    frame = metrics_frame()
    frame.loc[0, "predicted_imbalance"] = 2.0  # above its bound
    frame.loc[1, "migrated_load_share"] = 3.0  # out of [0, 1]
    frame = _set(frame, 2, "stream", None)
    outcome = validate_plan_metrics(context, frame)
    assert len(outcome.failures) == 3
    with pytest.raises(ValidationFailed) as excinfo:
        outcome.raise_for_failures()
    message = str(excinfo.value)
    assert PLAN_METRICS_SUITE in message
    assert "3 of 8 expectations failed" in message
    for line in outcome.failures:
        assert line in message
    assert "column='stream'" in message
    assert "column='migrated_load_share'" in message
    assert "column_B='predicted_imbalance'" in message


def test_raise_for_failures_is_silent_on_success() -> None:
    outcome = ValidationOutcome(suite=PLAN_METRICS_SUITE, success=True, failures=[], statistics={})
    assert outcome.raise_for_failures() is None


# --------------------------------------------------------------------------------------------
# routeplan.partition_assignment and routeplan.partition_metrics (paper 002 plans)


def test_partition_suites_pass_good_plans_and_name_what_is_wrong(context: FileDataContext) -> None:
    assignment = pd.DataFrame({"partition": [0, 1, 2], "consumer": ["c0", "c1", "c0"]})
    good = validate_partition_assignment(context, assignment, ["c0", "c1"], [0, 1, 2])
    assert good.suite == PARTITION_ASSIGNMENT_SUITE
    assert good.success, good.failures
    missing = validate_partition_assignment(context, assignment.iloc[:2], ["c0", "c1"], [0, 1, 2])
    assert [f.split("(")[0] for f in missing.failures] == [
        "expect_column_distinct_values_to_contain_set"
    ]
    stranger = assignment.assign(consumer=["c0", "x", "c0"])
    assert only_failure(
        validate_partition_assignment(context, stranger, ["c0", "c1"], [0, 1, 2])
    ).startswith(IN_SET)
    metrics = pd.DataFrame(
        [
            {
                "stream": "s",
                "strategy": "mwf",
                "consumers": 3.0,
                "lower_bound": 3.0,
                "overloaded": 0.0,
                "migrated_load_share": 0.1,
            }
        ]
    )
    ok = validate_partition_metrics(context, metrics)
    assert ok.suite == PARTITION_METRICS_SUITE
    assert ok.success, ok.failures
    bad = validate_partition_metrics(context, metrics.assign(overloaded=1.0, consumers=2.0))
    assert not bad.success
    assert [f.split("(")[0] for f in bad.failures] == [BETWEEN, PAIR_A_GT_B]


def test_plan_assignment_lets_a_draining_worker_keep_groups_it_held(context: FileDataContext):
    df = pd.DataFrame(
        {
            "key_group": [0, 1, 2, 3],
            "worker": ["w0", "w1", "w9", "w9"],
            "previous_worker": ["w0", "w9", "w9", "w9"],
        }
    )
    outcome = validate_plan_assignment(context, df, ["w0", "w1"], 4, draining_workers=["w9"])
    assert outcome.success, outcome.failures
    without_rule = validate_plan_assignment(
        context, df.drop(columns="previous_worker"), ["w0", "w1"], 4
    )
    assert not without_rule.success


def test_plan_assignment_refuses_a_move_onto_a_draining_worker(context: FileDataContext):
    df = pd.DataFrame(
        {
            "key_group": [0, 1, 2],
            "worker": ["w0", "w9", "w9"],
            "previous_worker": ["w0", "w0", "w9"],
        }
    )
    outcome = validate_plan_assignment(context, df, ["w0"], 3, draining_workers=["w9"])
    assert not outcome.success
    assert any("placement" in f and "moved onto a draining worker" in f for f in outcome.failures)


# --------------------------------------------------------------------------------------------
# The GX project: suites read from gx/, Data Docs and results written outside it


def test_the_suites_checkpoints_and_data_source_come_from_the_project_files(
    context: FileDataContext,
) -> None:
    assert sorted(suite.name for suite in context.suites.all()) == sorted(SUITES)
    for name in SUITES:
        on_disk = json.loads(
            (GX_PROJECT / "expectations" / f"{name.replace('.', '/')}.json").read_text()
        )
        assert [e.expectation_type for e in context.suites.get(name).expectations] == [
            e["type"] for e in on_disk["expectations"]
        ]
        checkpoint = context.checkpoints.get(name)
        [definition] = checkpoint.validation_definitions
        assert definition.suite.name == name
        assert definition.data.data_asset.datasource.type == "pandas"
        assert checkpoint.actions == []  # build_data_docs builds the site once a run


def test_an_edited_suite_file_changes_the_result(tmp_path: Path) -> None:
    project = tmp_path / "gx"
    shutil.copytree(GX_PROJECT, project)
    suite_file = project / "expectations" / "routeplan" / "key_group_load.json"
    suite = json.loads(suite_file.read_text())
    [distinct_keys] = [
        e
        for e in suite["expectations"]
        if e["type"] == BETWEEN and e["kwargs"]["column"] == "distinct_keys"
    ]
    distinct_keys["kwargs"]["min_value"] = 41  # the good frame has 1 to 40 distinct keys a row
    suite_file.write_text(json.dumps(suite))
    edited = open_context(tmp_path / "output", project=project)
    line = only_failure(validate_key_group_load(edited, load_frame(), NUM_KEY_GROUPS))
    assert line.startswith(BETWEEN + "(column='distinct_keys', min_value=41)")
    assert "5 unexpected of 5 rows" in line


def test_data_docs_show_each_suite_run(context: FileDataContext, output_dir: Path) -> None:
    passed = validate_key_group_load(context, load_frame(), NUM_KEY_GROUPS)
    failed = validate_plan_metrics(context, _set(metrics_frame(), 1, "migrated_load_share", 1.5))
    site = Path(settings.data_docs_root(output_dir))
    assert not (site / failed.data_docs_page).exists()  # the run builds the site once, at its end
    build_data_docs(context, [passed, failed])
    index = (site / "index.html").read_text()
    for outcome in (passed, failed):
        assert outcome.data_docs_page.startswith("validations/routeplan/")
        page = (site / outcome.data_docs_page).read_text()
        assert outcome.suite in page
        assert outcome.data_docs_page in index  # the index links the page
    assert "migrated_load_share" in (site / failed.data_docs_page).read_text()
    # the results themselves are JSON files beside the site, never in gx/
    assert list((output_dir / "gx" / "validations").rglob("*.json"))


def test_the_data_docs_index_links_the_latest_results_only(tmp_path: Path) -> None:
    project = tmp_path / "gx"
    shutil.copytree(GX_PROJECT, project)
    config = project / "great_expectations.yml"
    text = config.read_text()
    assert "validation_results_limit: 500" in text
    config.write_text(text.replace("validation_results_limit: 500", "validation_results_limit: 2"))
    context = open_context(tmp_path / "output", project=project)
    pages = []
    for _ in range(3):  # three runs
        outcome = validate_plan_metrics(context, metrics_frame())
        build_data_docs(context, [outcome])
        pages.append(outcome.data_docs_page)
    site = Path(settings.data_docs_root(tmp_path / "output"))
    index = (site / "index.html").read_text()
    assert [page in index for page in pages] == [False, True, True]
    assert (site / pages[0]).is_file()  # no longer linked, not deleted


def test_validation_writes_nothing_into_the_project(
    context: FileDataContext, project_before: dict[str, bytes]
) -> None:
    git = shutil.which("git")
    status = [git, "status", "--porcelain", "--ignored", "--", str(GX_PROJECT)]
    before = (
        subprocess.run(status, capture_output=True, text=True, cwd=GX_PROJECT).stdout if git else ""
    )
    validate_plan_metrics(context, metrics_frame())
    assert project_files(GX_PROJECT) == project_before
    if git:
        after = subprocess.run(status, capture_output=True, text=True, cwd=GX_PROJECT).stdout
        assert after == before


def test_a_missing_project_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="ROUTEPLAN_GX"):
        open_context(tmp_path / "output", project=tmp_path / "no-such-gx")


# --------------------------------------------------------------------------------------------
# routeplan docs


def test_routeplan_docs_serves_the_built_site(context: FileDataContext, output_dir: Path) -> None:
    outcome = validate_plan_metrics(context, metrics_frame())
    build_data_docs(context, [outcome])
    folder = docs.site_folder(settings.data_docs_root(output_dir))
    with docs.make_server(folder, 0) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        try:
            index = urllib.request.urlopen(base + "index.html", timeout=30).read().decode()
            page = urllib.request.urlopen(base + outcome.data_docs_page, timeout=30).read()
        finally:
            server.shutdown()
    assert PLAN_METRICS_SUITE in index and PLAN_METRICS_SUITE in page.decode()


def test_routeplan_docs_says_when_nothing_was_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser()
    docs.add_parser(parser.add_subparsers())
    monkeypatch.setenv("ROUTEPLAN_HOME", str(tmp_path))
    args = parser.parse_args(["docs"])
    with pytest.raises(InputError, match="^.*data_docs: no Data Docs built yet"):
        args.func(args)
    with pytest.raises(InputError, match="not served from there"):
        docs.site_folder("s3://bucket/home/data_docs")
