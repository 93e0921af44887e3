"""routeplan's settings (``routeplan/settings.py``, ``routeplan config``): defaults, the
environment's overrides, one-line errors, every ``ROUTEPLAN_*`` name the repository uses declared,
and one home for the CLI and the Airflow plugin."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from routeplan import settings
from routeplan.cli.main import main
from routeplan.errors import UsageError

REPO = Path(__file__).resolve().parents[1]
VARIABLE = re.compile(r"\bROUTEPLAN_[A-Z][A-Z0-9_]*")
# Named in the repository but no setting: a marker scripts/airflow_api.py puts into the
# environment of the Airflow server it starts, to find its processes again; nothing reads it.
NOT_SETTINGS = {"ROUTEPLAN_AIRFLOW_SERVER_ID"}
# A direct read of a ROUTEPLAN_* variable (settings.py alone may read the environment).
DIRECT_READ = re.compile(r"""(environ\.get\(|environ\[|getenv\()\s*["']ROUTEPLAN_""")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No ROUTEPLAN_* variable set (``make`` exports some)."""
    for name in list(os.environ):
        if name.upper().startswith("ROUTEPLAN_"):
            monkeypatch.delenv(name)
    return monkeypatch


def config_json(capsys: pytest.CaptureFixture[str]) -> dict[str, dict]:
    """``routeplan config --json``, by setting name."""
    assert main(["config", "--json"]) == 0
    return {row["name"]: row for row in json.loads(capsys.readouterr().out)}


def repository_files() -> list[Path]:
    """The repository's files (tracked, or new and not ignored), but for the tests."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return [REPO / p for p in listed if not p.startswith("tests/") and (REPO / p).is_file()]


def test_defaults(clean_env, capsys):
    current = settings.current()
    assert current.model_fields_set == set()
    assert current.home == str(REPO / "var")  # the checkout's, wherever the process runs
    assert settings.home() == str(REPO / "var")
    assert settings.routing_root() == str(REPO / "var" / "routing")
    assert settings.workers_file() == str(REPO / "var" / "config" / "workers.json")
    assert (current.api_auth, current.api_token) == ("airflow", None)  # closed by default
    assert (current.api_auth, current.spark_conn, current.spark_master) == (
        "airflow",
        "spark_local",
        "local[2]",
    )
    assert (current.alert_conn, current.py_files) == ("routeplan_alerts", None)
    assert current.spark_connect_conn == ""  # every Spark task a spark-submit
    assert current.jobs_dir == REPO / "jobs" and current.schemas == REPO / "schemas"
    assert current.spark_defaults == REPO / "config" / "spark-defaults.conf"
    assert current.cluster_dir == REPO / "var" / "cluster"
    rows = config_json(capsys)
    assert {row["source"] for row in rows.values()} == {"default"}
    assert rows["routing"]["value"] == rows["routing"]["default"] == str(REPO / "var" / "routing")
    assert rows["py_files"]["value"] is None
    assert all(row["value"] == row["default"] for row in rows.values())


def test_every_setting_is_described():
    for name, field in settings.Settings.model_fields.items():
        assert field.description, name


@pytest.mark.parametrize(
    ("variable", "value", "name", "expected"),
    [
        ("ROUTEPLAN_HOME", "s3://bucket/prefix", "home", "s3://bucket/prefix"),
        ("ROUTEPLAN_ROUTING", "/srv/routing", "routing", "/srv/routing"),
        ("ROUTEPLAN_API_AUTH", "none", "api_auth", "none"),
        ("ROUTEPLAN_ROUTING_FILE_MODE", "0640", "routing_file_mode", "0640"),
        ("ROUTEPLAN_SPARK_CONN", "spark_cluster", "spark_conn", "spark_cluster"),
        ("ROUTEPLAN_SPARK_CONNECT_CONN", "spark_connect", "spark_connect_conn", "spark_connect"),
        ("ROUTEPLAN_JARS", "/opt/jars", "jars", Path("/opt/jars")),
        ("ROUTEPLAN_PY_FILES", "dist/routeplan.zip", "py_files", "dist/routeplan.zip"),
        ("ROUTEPLAN_ALERT_CONN", "pager", "alert_conn", "pager"),
        ("ROUTEPLAN_SPARK_DEFAULTS", "/etc/spark.conf", "spark_defaults", Path("/etc/spark.conf")),
    ],
)
def test_the_environment_overrides(clean_env, capsys, variable, value, name, expected):
    clean_env.setenv(variable, value)
    assert getattr(settings.current(), name) == expected
    row = config_json(capsys)[name]
    assert (row["variable"], row["value"], row["source"]) == (variable, value, "environment")
    assert row["default"] != value


def test_locations_follow_the_home(clean_env, tmp_path):
    clean_env.setenv("ROUTEPLAN_HOME", str(tmp_path))
    assert settings.home() == settings.home(default="/elsewhere") == str(tmp_path)
    assert settings.landing_root() == str(tmp_path / "landing")
    assert settings.routing_root() == str(tmp_path / "routing")
    assert settings.routing_root("s3://b/h") == "s3://b/h/routing"
    clean_env.setenv("ROUTEPLAN_ROUTING", str(tmp_path / "tables"))
    assert settings.routing_root() == settings.routing_root("s3://b/h") == str(tmp_path / "tables")


def test_an_empty_variable_counts_as_unset(clean_env):
    clean_env.setenv("ROUTEPLAN_HOME", "")
    clean_env.setenv("ROUTEPLAN_API_AUTH", "")
    assert settings.home() == str(REPO / "var")
    assert settings.home(default="/given") == "/given"
    assert settings.current().api_auth == "airflow"


def test_the_api_token_is_read_but_never_printed(clean_env, capsys):
    clean_env.setenv("ROUTEPLAN_API_TOKEN", "s3cret-token")
    assert settings.current().api_token.get_secret_value() == "s3cret-token"
    assert "s3cret" not in repr(settings.current())
    row = config_json(capsys)["api_token"]
    assert (row["value"], row["source"]) == ("**********", "environment")
    assert main(["config"]) == 0
    assert "s3cret" not in capsys.readouterr().out


def test_an_invalid_value_is_one_clear_error(clean_env, capsys):
    clean_env.setenv("ROUTEPLAN_API_AUTH", "nope")
    with pytest.raises(UsageError, match=r"^ROUTEPLAN_API_AUTH='nope': .*'none' or 'airflow'$"):
        settings.current()
    # any command says so on one line, exit code 2, before it runs
    for argv in (["config"], ["show", "--stream", "clicks"]):
        assert main(argv) == 2
        assert capsys.readouterr().err == (
            "routeplan: error: ROUTEPLAN_API_AUTH='nope': input should be 'none' or 'airflow'\n"
        )


@pytest.mark.parametrize("value", ["0200", "0o7777", "u+r", "644x", "0 644"])
def test_a_routing_file_mode_is_three_octal_digits_the_owner_can_read(clean_env, value):
    clean_env.setenv("ROUTEPLAN_ROUTING_FILE_MODE", value)
    with pytest.raises(UsageError, match=r"file mode of three octal digits whose owner can read"):
        settings.routing_file_mode()
    for text, expected in (("0640", 0o640), ("600", 0o600), ("0o644", 0o644)):
        clean_env.setenv("ROUTEPLAN_ROUTING_FILE_MODE", text)
        assert settings.routing_file_mode() == expected
    clean_env.delenv("ROUTEPLAN_ROUTING_FILE_MODE")
    assert settings.routing_file_mode() == 0o644


def test_config_table_and_unknown_variables(clean_env, capsys):
    clean_env.setenv("ROUTEPLAN_HOME", "/data/routeplan")
    clean_env.setenv("ROUTEPLAN_HOMEE", "/typo")
    assert main(["config"]) == 0
    out, err = capsys.readouterr()
    assert err == "routeplan config: note: ROUTEPLAN_HOMEE is set but names no setting\n"
    lines = out.splitlines()
    assert lines[0].split() == ["SETTING", "VARIABLE", "SOURCE", "VALUE"]
    home = lines.index(next(line for line in lines if line.startswith("home ")))
    assert lines[home].split() == ["home", "ROUTEPLAN_HOME", "environment", "/data/routeplan"]
    assert f"default: {REPO / 'var'}" in "".join(lines[home + 1 : home + 5]).replace("  ", "")
    for name in settings.Settings.model_fields:
        assert any(line.split()[:2] == [name, settings.Settings.variable(name)] for line in lines)


def test_every_routeplan_variable_the_repository_names_is_a_setting(clean_env, capsys):
    """A new ROUTEPLAN_* variable (read in code, set in the Makefile, compose or a Dockerfile,
    or documented) fails here until it is a field of ``Settings``."""
    named = set()
    for path in repository_files():
        named |= set(VARIABLE.findall(path.read_text(encoding="utf-8", errors="ignore")))
    listed = {row["variable"] for row in config_json(capsys).values()}
    assert "ROUTEPLAN_HOME" in named
    assert named - NOT_SETTINGS - listed == set()


def test_only_the_settings_module_reads_routeplan_variables():
    """routeplan reads its variables through ``Settings``; the clients (``clients/``) and their
    examples (``examples/``), which run without routeplan, read the API token from the
    environment."""
    readers = [
        f"{path.relative_to(REPO)}:{number}"
        for path in repository_files()
        if path.suffix == ".py"
        and path != REPO / "routeplan" / "settings.py"
        and not path.is_relative_to(REPO / "clients")
        and not path.is_relative_to(REPO / "examples")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if DIRECT_READ.search(line)
    ]
    assert readers == [], f"read these through routeplan.settings.current(): {readers}"


def test_the_plugin_and_the_cli_agree_on_the_home(tmp_path):
    """With ROUTEPLAN_HOME unset, the Airflow tasks' home and the CLI's are the checkout's var/,
    from any current directory."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("ROUTEPLAN_")}
    env["AIRFLOW_HOME"] = str(tmp_path / "airflow")  # importing Airflow may write its config

    def run(code: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    plugin_home = run(
        f"import sys; sys.path.insert(0, {str(REPO / 'plugins')!r}); "
        "import routeplan_tasks; print(routeplan_tasks.HOME)"
    ).strip()
    cli = run("from routeplan.cli.main import main; main(['config', '--json'])")
    cli_home = next(row for row in json.loads(cli) if row["name"] == "home")
    assert plugin_home == cli_home["value"] == str(REPO / "var")
    assert cli_home["source"] == "default"


def test_a_driver_importing_the_shipped_zip_finds_the_checkouts_folders(tmp_path):
    """spark-submit --py-files dist/routeplan.zip puts the zip first on the driver's path: the
    defaults are still the folders beside dist/ (gx/, config/, schemas/), not inside the zip."""
    from scripts.build_zip import build

    root = tmp_path / "root"
    (root / "dist").mkdir(parents=True)
    build(root / "dist" / "routeplan.zip", REPO)
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("ROUTEPLAN_")}
    env["PYTHONPATH"] = str(root / "dist" / "routeplan.zip")
    code = (
        "from routeplan import settings as s; c = s.current(); print(s.__file__, c.gx, c.schemas)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    module, gx, schemas = done.stdout.split()
    assert module.startswith(str(root / "dist" / "routeplan.zip"))
    assert (gx, schemas) == (str(root / "gx"), str(root / "schemas"))
