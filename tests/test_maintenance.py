"""jobs/maintain.py on small data (OPTIMIZE compacts, VACUUM deletes past retention, retention
properties set) and the weekly DAG's integrity."""

import json
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from jobs import maintain
from jobs.common import Tables, write_delta

REPO = Path(__file__).resolve().parents[1]
SAFETY_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"
VALIDATIONS = "interval_start date, stream string, suite string, success boolean"


def data_files(path: str) -> set[Path]:
    return {p for p in Path(path).rglob("*.parquet") if "_delta_log" not in p.parts}


@pytest.mark.spark
def test_maintain_compacts_vacuums_and_sets_retention(spark, tmp_path):
    tables = Tables(tmp_path)
    path = tables.path("gold.validations")
    for day in range(1, 6):  # five small writes, then a rerun of the last day
        rows = [(date(2026, 11, day), "clicks", f"suite{i}", True) for i in range(3)]
        frame = spark.createDataFrame(rows, VALIDATIONS).repartition(3)
        write_delta(frame, tables, "gold.validations", f"interval_start = '2026-11-0{day}'")
    frame = spark.createDataFrame([(date(2026, 11, 5), "clicks", "again", False)], VALIDATIONS)
    write_delta(frame, tables, "gold.validations", "interval_start = '2026-11-05'")
    written = data_files(path)
    assert len(written) > 10
    # Retention 0 hours lets VACUUM delete the files OPTIMIZE replaced a moment ago; maintain
    # refuses it (as Delta's safety check would) unless the check is off: off here only, where
    # no other reader or writer can still need those files.
    spark.conf.set(SAFETY_CHECK, "false")
    try:
        report = maintain.main(
            [
                "--home",
                str(tmp_path),
                "--log-retention",
                "1 days",
                "--deleted-file-retention",
                "0 hours",
                "--run-id",
                "test",
            ]
        )
    finally:
        spark.conf.unset(SAFETY_CHECK)
    entry = report["tables"]["gold.validations"]
    assert list(report["tables"]) == ["gold.validations"]  # the only table that exists
    assert entry["properties_set"] == [
        "delta.deletedFileRetentionDuration",
        "delta.logRetentionDuration",
    ]
    assert entry["retention"]["delta.deletedFileRetentionDuration"] == "interval 0 hours"
    assert entry["files_before"] == len(written) and entry["files_compacted"] == len(written) - 5
    left = data_files(path)
    assert len(left) == entry["files_after"] == 1  # one compacted file, everything else gone
    assert entry["current_files_before"] == entry["files_compacted"]
    assert entry["current_files_after"] == 1
    assert not left & written
    table = spark.read.format("delta").load(path)
    assert table.count() == 13 and table.where("suite = 'again'").count() == 1
    assert report["catalog"]["gold.validations"] in ("registered", "moved", "kept")
    on_disk = Path(tables.report_path(datetime.now(UTC).date(), "maintain"))
    assert json.loads(on_disk.read_text())["tables"]["gold.validations"]["files_after"] == 1


@pytest.mark.spark
def test_maintain_keeps_a_retention_the_table_has_and_refuses_an_unsafe_one(spark, tmp_path):
    tables = Tables(tmp_path)
    frame = spark.createDataFrame([(date(2026, 11, 1), "clicks", "s", True)], VALIDATIONS)
    write_delta(frame, tables, "gold.validations", "interval_start = '2026-11-01'")
    path = tables.path("gold.validations")
    spark.sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES "
        "('delta.deletedFileRetentionDuration' = 'interval 14 days')"
    )
    with pytest.raises(SystemExit, match="'0 hours' is below Delta's safe 168 hours"):
        maintain.maintain(spark, tables, deleted_file_retention="0 hours")
    entry = maintain.maintain(spark, tables)["gold.validations"]
    assert entry["properties_set"] == ["delta.logRetentionDuration"]
    assert entry["retention"] == {
        "delta.logRetentionDuration": "interval 30 days",
        "delta.deletedFileRetentionDuration": "interval 14 days",
    }
    with pytest.raises(SystemExit):  # argparse: a retention it cannot read
        maintain.main(["--home", str(tmp_path), "--log-retention", "a week"])


@pytest.mark.airflow
def test_maintenance_dag_runs_maintain_weekly():
    from airflow.dag_processing.dagbag import DagBag
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    bag = DagBag(dag_folder=str(REPO / "dags" / "routeplan_maintenance.py"))
    assert bag.import_errors == {}
    dag = bag.get_dag("routeplan_maintenance")
    assert dag.max_active_runs == 1
    assert dag.timetable.expression == "0 3 * * 0"  # Sundays 03:00
    assert dag.timetable.timezone == "UTC"
    [task] = dag.tasks
    assert isinstance(task, SparkSubmitOperator) and task.task_id == "maintain"
    assert Path(task.application) == REPO / "jobs" / "maintain.py"
    assert "--deleted-file-retention" in task.application_args
    for name in dag.params:
        param = dag.params.get_param(name)
        assert param.description and param.schema["section"] and param.schema["title"], name
    assert dag.params.validate() == {"log_retention": "30 days", "deleted_file_retention": "7 days"}
