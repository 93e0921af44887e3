"""Each make target installs only what it uses: ``make demo`` the virtualenv with routeplan's
runtime packages, Delta Lake's jars and Airflow's SQLite database — not the dev tools, S3A's
jars with the ~690 MB AWS SDK bundle, MinIO compiled from its Go module, the executors' zip,
PostgreSQL or Chromium, which the targets using them install (``make test`` all of them: CI runs
it on a clean clone).

Read from ``make --dry-run --always-make``: the commands a fresh checkout would run, none run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# what a line of the dry run installs, by a pattern of its command
INSTALLS = {
    "virtualenv": r"uv pip install .*-c constraints\.txt -e clients/python -e '\.\[(?!dev\])",
    "dev_tools": r"uv pip install .*-c constraints\.txt -e '\.\[dev\]'",
    "delta_jars": r"mvn (?!.*-P)\S.*-f jars/pom\.xml dependency:copy-dependencies",
    "s3a_jars": r"mvn .*-Ps3a -f jars/pom\.xml dependency:copy-dependencies",
    "airflow_sqlite": r"airflow db migrate",
    "minio": r"go install github\.com/minio/minio@",
    "executors_zip": r"scripts/build_zip\.py dist/routeplan\.zip",
    "postgresql": r"apt-get install \S+ \S+ postgresql",
    "chromium": r"apt-get install \S+ \S+ chromium",
}
LOCAL = {"virtualenv", "delta_jars", "airflow_sqlite"}
SPARK_CLUSTER = {"virtualenv", "delta_jars", "s3a_jars", "minio", "executors_zip"}
EVERYTHING = set(INSTALLS)


def installs(target: str) -> set[str]:
    """What ``make <target>`` would install on a fresh checkout."""
    done = subprocess.run(
        ["make", "--dry-run", "--always-make", target],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return {name for name, pattern in INSTALLS.items() if re.search(pattern, done.stdout)}


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("demo", LOCAL),
        ("airflow", LOCAL),
        ("cluster-demo", SPARK_CLUSTER | {"postgresql"}),
        ("bench", SPARK_CLUSTER | {"dev_tools"}),
        ("docs", {"virtualenv", "dev_tools"}),
        ("lint", {"virtualenv", "dev_tools"}),
        ("setup", EVERYTHING),
        ("test", EVERYTHING),
    ],
)
def test_each_target_installs_only_what_it_uses(target, expected):
    assert installs(target) == expected


def test_the_demos_jars_leave_s3a_to_its_profile():
    """Maven without the profile resolves Delta Lake alone: hadoop-aws (and with it the AWS SDK
    bundle) is a dependency of the profile ``s3a`` only."""
    pom = (REPO / "jars" / "pom.xml").read_text()
    profiles = pom.index("<profiles>")
    assert "<artifactId>delta-spark_" in pom[:profiles]
    assert "<artifactId>hadoop-aws</artifactId>" not in pom[:profiles]
    s3a = re.search(r"<profile>.*?<id>s3a</id>(.*?)</profile>", pom, re.S)
    assert s3a and "<artifactId>hadoop-aws</artifactId>" in s3a.group(1)


def test_make_names_its_python_and_refuses_one_routeplan_cannot_run_on():
    """scripts/python_check.py, which make runs before building the virtualenv: Python 3.11 (at
    least 3.11.5 for the dev tools) passes and is named; any other is refused with the fix."""
    from scripts.python_check import verdict

    ok, said = verdict((3, 11, 7), "/usr/bin/python3")
    assert ok and said == "make: using Python 3.11.7 (/usr/bin/python3)"
    for version, minimum in [
        ((3, 12, 1), (3, 11, 0)),
        ((3, 9, 18), (3, 11, 0)),
        ((3, 11, 2), (3, 11, 5)),
    ]:
        ok, said = verdict(version, "/opt/python", minimum)
        assert not ok, version
        assert "routeplan needs Python 3.11" in said and "make PYTHON=python3.11 demo" in said
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "python_check.py")], capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.startswith("make: using Python 3.11."), done
