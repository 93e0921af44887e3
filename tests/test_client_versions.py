"""The clients are versioned together: ``clients/VERSION`` is the version of every client, and
each names the routing specification version ``docs/routing-spec.md`` states.

Each check is one ``(what, reader)`` row; a client joins with one row per list."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
TABLES_DOC = "docs/routing-tables.md"
PY_INIT = "clients/python/routeplan_client/__init__.py"


def clients_version() -> str:
    return (REPO / "clients" / "VERSION").read_text(encoding="utf-8").strip()


def one(pattern: str, path: str) -> str:
    """The one match of ``pattern``'s group in the file ``path`` (relative to the repository)."""
    found = re.findall(pattern, (REPO / path).read_text(encoding="utf-8"), re.MULTILINE)
    assert len(found) == 1, f"{path}: {len(found)} matches of {pattern!r}"
    return found[0]


def pom_version(path: str = "clients/java/pom.xml") -> str:
    return ET.parse(REPO / path).getroot().findtext("m:version", namespaces=POM_NS).strip()


def pom_dependency(path: str, artifact: str) -> str:
    for dep in ET.parse(REPO / path).getroot().iterfind("m:dependencies/m:dependency", POM_NS):
        if dep.findtext("m:artifactId", namespaces=POM_NS) == artifact:
            return dep.findtext("m:version", namespaces=POM_NS).strip()
    raise AssertionError(f"{path} does not depend on {artifact}")


# (what, reader): each must read the version clients/VERSION holds. A client joins with one
# row here and one in SPEC_VERSIONS.
CLIENT_VERSIONS: list[tuple[str, Callable[[], str]]] = [
    ("python: routeplan_client.__version__", lambda: one(r'^__version__ = "([^"]*)"', PY_INIT)),
    ("java: clients/java/pom.xml", pom_version),
    ("go: routeplan.Version", lambda: one(r'^const Version = "([^"]*)"', "clients/go/version.go")),
    (
        "java example: its dependency on routeplan-client",
        lambda: pom_dependency("examples/java/pom.xml", "routeplan-client"),
    ),
    (
        "go example: its require of routeplan.dev/client",
        lambda: one(r"^\s*routeplan\.dev/client v(\S+)$", "examples/go/go.mod"),
    ),
    *(
        (f"docs/routing-tables.md: {what}", lambda pattern=pattern: one(pattern, TABLES_DOC))
        for what, pattern in [
            ("clients/VERSION", r"`clients/VERSION` \(`([^`]+)`\)"),
            ("<dependency>", r"<artifactId>routeplan-client</artifactId>\s*<version>([^<]+)<"),
            ("go get", r"go get routeplan\.dev/client@v(\S+)"),
            ("go.mod's require", r"^require routeplan\.dev/client v(\S+)$"),
        ]
    ),
]

# (what, reader): each must read the version docs/routing-spec.md states.
SPEC_VERSIONS: list[tuple[str, Callable[[], str]]] = [
    (
        "python: routeplan_client.ROUTING_SPEC_VERSION",
        lambda: one(r'^ROUTING_SPEC_VERSION = "(\d+)"', PY_INIT),
    ),
    (
        "java: RoutingSpec.VERSION",
        lambda: one(
            r"static final int VERSION = (\d+);",
            "clients/java/src/main/java/dev/routeplan/client/RoutingSpec.java",
        ),
    ),
    (
        "go: routeplan.SpecVersion",
        lambda: one(r"^const SpecVersion = (\d+)$", "clients/go/version.go"),
    ),
]


def test_clients_version_is_one_release_number():
    assert re.fullmatch(r"\d+\.\d+\.\d+", clients_version()), clients_version()


@pytest.mark.parametrize("what, reader", CLIENT_VERSIONS, ids=[w for w, _ in CLIENT_VERSIONS])
def test_each_client_has_the_version_of_clients_version(what, reader):
    assert reader() == clients_version(), f"{what} is not clients/VERSION"


@pytest.mark.parametrize("what, reader", SPEC_VERSIONS, ids=[w for w, _ in SPEC_VERSIONS])
def test_each_client_names_the_spec_version_the_spec_states(what, reader):
    stated = one(r"^Routing specification version (\d+)\.", "docs/routing-spec.md")
    assert reader() == stated, f"{what} is not the version docs/routing-spec.md states"
