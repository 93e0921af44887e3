"""The Python client as a service installs it: ``routeplan-client`` (``clients/python``), mmh3 and
httpx its only dependencies, Python 3.9 and later, no import of routeplan; routeplan routes
through it (one implementation of routing). Its wheel (``make clients``) is installed into fresh
virtualenvs of the oldest and the newest interpreter this machine has, and routes the shared
vectors there (``tests/client_package_check.py``)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import routeplan_client
from routeplan.contracts.schemas import load_schema
from routeplan_client import names as client_names

REPO = Path(__file__).resolve().parents[1]
CLIENT = REPO / "clients" / "python"
UV = Path(sys.executable).with_name("uv")


def interpreters() -> list[Path]:
    """The oldest and the newest CPython >= 3.9 found on PATH's usual places and pyenv's."""
    found: dict[tuple[int, int], Path] = {}
    candidates = [Path(sys.executable)]
    candidates += sorted(Path("/usr/bin").glob("python3.*")) + sorted(
        Path("/usr/local/bin").glob("python3.*")
    )
    candidates += sorted((Path.home() / ".pyenv" / "versions").glob("3.*/bin/python3"))
    for path in candidates:
        match = re.search(r"3\.(\d+)", str(path.resolve()) if path != Path(sys.executable) else "")
        if path == Path(sys.executable):
            found.setdefault(sys.version_info[:2], path)
        elif match and path.is_file() and re.fullmatch(r".*python3(\.\d+)?", path.name):
            found.setdefault((3, int(match.group(1))), path)
    usable = sorted(v for v in found if v >= (3, 9))
    return [found[v] for v in dict.fromkeys([usable[0], usable[-1]])]


def test_the_client_imports_nothing_of_routeplan():
    for path in sorted((CLIENT / "routeplan_client").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            assert all(m.split(".")[0] != "routeplan" for m in modules), (path.name, modules)


def test_routeplan_routes_through_the_client():
    """routeplan's public Router and its hashing are the client's: one implementation."""
    import routeplan
    from routeplan.model import hashing

    assert routeplan.Router is routeplan_client.Router
    assert hashing.key_group is routeplan_client.key_group
    assert not (REPO / "routeplan" / "producers").exists()


def test_the_clients_name_rule_is_the_schemas():
    schema = load_schema("name")
    assert schema["pattern"] == client_names.NAME_PATTERN
    assert schema["maxLength"] == client_names.MAX_NAME_LENGTH


def test_the_clients_version_is_the_one_routeplan_pins():
    version = (REPO / "clients" / "VERSION").read_text().strip()
    assert routeplan_client.__version__ == version
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert f"routeplan-client=={version}" in project["dependencies"]
    client = tomllib.loads((CLIENT / "pyproject.toml").read_text())["project"]
    assert client["requires-python"] == ">=3.9"
    assert sorted(re.split(r"[<>=!~ ]", d)[0] for d in client["dependencies"]) == [
        "httpx",
        "mmh3",
    ]


@pytest.fixture(scope="module")
def wheel() -> Path:
    """The wheel ``make clients`` built (built here when missing)."""
    found = sorted((CLIENT / "dist").glob("routeplan_client-*.whl"))
    if not found:
        subprocess.run(
            [
                str(UV),
                "build",
                "--quiet",
                "--wheel",
                "--out-dir",
                str(CLIENT / "dist"),
                str(CLIENT),
            ],
            check=True,
        )
        found = sorted((CLIENT / "dist").glob("routeplan_client-*.whl"))
    assert [w.name for w in found] == [
        f"routeplan_client-{routeplan_client.__version__}-py3-none-any.whl"
    ]
    return found[0]


@pytest.mark.parametrize("interpreter", interpreters(), ids=lambda p: p.parent.parent.name)
def test_the_wheel_installs_alone_and_routes_the_vectors(tmp_path, wheel, interpreter):
    venv = tmp_path / "venv"
    subprocess.run(
        [str(UV), "venv", "--quiet", "--python", str(interpreter), str(venv)], check=True
    )
    python = venv / "bin" / "python"
    subprocess.run(
        [str(UV), "pip", "install", "--quiet", "--python", str(python), str(wheel)], check=True
    )
    listed = subprocess.run(
        [str(UV), "pip", "list", "--python", str(python), "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    installed = {p["name"].lower() for p in json.loads(listed)}
    assert {"routeplan-client", "mmh3", "httpx"} <= installed
    assert not installed & {"numpy", "routeplan", "jsonschema", "pandas", "fsspec"}
    done = subprocess.run(
        [
            str(python),
            str(REPO / "tests" / "client_package_check.py"),
            str(REPO / "schemas" / "vectors"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # not the checkout: nothing of it on the path
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["version"] == routeplan_client.__version__
    assert found["spec"] == routeplan_client.ROUTING_SPEC_VERSION
    assert found["cases"] and all(found["cases"].values()), found["cases"]
    refused = json.loads((REPO / "schemas" / "vectors" / "refused.json").read_text())["cases"]
    assert sorted(found["refused"]) == sorted(Path(c["file"]).name for c in refused)
    assert all(v.startswith("refused: ") for v in found["refused"].values()), found["refused"]
    assert found["imported"] == []  # no numpy, no routeplan, no fsspec: routed by the pure path
