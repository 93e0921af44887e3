"""One place for the Spark settings: config/spark-defaults.conf, read by spark-submit (the DAGs'
``--properties-file``) and by ``jobs.common.spark_session`` in process — the same way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.common import (
    DELTA_CONF,
    parse_spark_defaults,
    spark_defaults,
    spark_defaults_file,
    sql_conf,
    submit_conf,
)

REPO = Path(__file__).resolve().parents[1]

# every separator and comment spark-submit's loader (Java properties) accepts
TRICKY = """\
# a comment
! also a comment
   # an indented comment

spark.test.blank   value with  inner  spaces\x20\x20\t
spark.test.equals=1
spark.test.spaced = 2
spark.test.colon:3
spark.test.colon_spaced :  4
\tspark.test.tab\tfive
spark.test.hash value # not a comment: Java has no inline comments
spark.test.twice first
spark.test.twice second
spark.test.equals_in_value a=b:c
"""
PARSED = {
    "spark.test.blank": "value with  inner  spaces",
    "spark.test.equals": "1",
    "spark.test.spaced": "2",
    "spark.test.colon": "3",
    "spark.test.colon_spaced": "4",
    "spark.test.tab": "five",
    "spark.test.hash": "value # not a comment: Java has no inline comments",
    "spark.test.twice": "second",
    "spark.test.equals_in_value": "a=b:c",
}


def test_the_parser_reads_comments_blanks_and_every_separator():
    assert parse_spark_defaults(TRICKY) == PARSED
    assert parse_spark_defaults("spark.a 1\r\nspark.b 2\rspark.c 3") == {
        "spark.a": "1",
        "spark.b": "2",
        "spark.c": "3",
    }
    assert parse_spark_defaults("") == {}


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("driver.memory 4g", "expected 'spark.<name> <value>'"),  # spark-submit would ignore it
        ("spark.driver.memory", "expected 'spark.<name> <value>'"),  # no value
        ("spark.driver.memory =  ", "expected 'spark.<name> <value>'"),
        ("= 4g", "expected 'spark.<name> <value>'"),
        ("spark.a.path C:\\jars", "backslashes"),  # Java would read \\j as j
        ("spark.a.list x,\\", "backslashes"),  # a continued line
    ],
)
def test_what_the_parser_would_read_otherwise_than_spark_is_refused_naming_the_line(line, why):
    with pytest.raises(ValueError, match="my.conf, line 3: ") as refused:
        parse_spark_defaults(f"# settings\n\n{line}\n", "my.conf")
    assert why in str(refused.value)
    assert repr(line.strip(" \t")) in str(refused.value)


def test_spark_submit_reads_the_file_as_the_parser_does(tmp_path):
    """The parser against Spark's own loader: spark-submit --properties-file on the tricky
    file, a probe printing the settings its JVM got."""
    conf = tmp_path / "tricky.conf"
    conf.write_text(TRICKY)
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import json\n"
        "from pyspark import SparkConf, SparkContext\n"
        "SparkContext._ensure_initialized()  # the JVM spark-submit started, no context\n"
        "print(json.dumps(dict(SparkConf().getAll())))\n"
    )
    spark_submit = Path(sys.executable).parent / "spark-submit"
    done = subprocess.run(
        [str(spark_submit), "--master", "local[1]", "--properties-file", str(conf), str(probe)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert {k: v for k, v in got.items() if k.startswith("spark.test.")} == PARSED


def test_the_repos_file_holds_the_sessions_settings():
    settings = spark_defaults()
    assert spark_defaults_file() == REPO / "config" / "spark-defaults.conf"
    assert settings.items() >= DELTA_CONF.items()
    assert settings["spark.sql.session.timeZone"] == "UTC"
    assert settings["spark.driver.memory"] == "4g"
    assert settings["spark.databricks.delta.snapshotPartitions"] == "2"
    assert not set(settings) & set(submit_conf())  # each setting in one place


def test_the_files_location_comes_from_the_environment(tmp_path, monkeypatch):
    other = tmp_path / "spark.conf"
    other.write_text("spark.sql.shuffle.partitions 3\n")
    monkeypatch.setenv("ROUTEPLAN_SPARK_DEFAULTS", str(other))
    assert spark_defaults_file() == other
    assert spark_defaults() == {"spark.sql.shuffle.partitions": "3"}
    monkeypatch.setenv("ROUTEPLAN_SPARK_DEFAULTS", str(tmp_path / "missing.conf"))
    with pytest.raises(ValueError, match=r"missing\.conf: No such file.*ROUTEPLAN_SPARK_DEFAULTS"):
        spark_defaults()


def test_an_in_process_session_runs_with_the_files_settings(spark):
    for key, value in spark_defaults().items():
        assert spark.conf.get(key) == value, key


def test_sql_conf_holds_for_the_block_only_and_restores_what_was_unset(spark):
    set_key, unset_key = "spark.sql.shuffle.partitions", "spark.routeplan.test.unset"
    before = spark.conf.get(set_key)
    with (
        pytest.raises(RuntimeError, match="inside"),
        sql_conf(spark, {set_key: "3", unset_key: "x"}),
    ):
        assert (spark.conf.get(set_key), spark.conf.get(unset_key)) == ("3", "x")
        raise RuntimeError("inside")
    assert spark.conf.get(set_key) == before
    assert spark.conf.get(unset_key, None) is None
