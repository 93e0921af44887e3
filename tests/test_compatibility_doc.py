"""docs/compatibility.md against the pins it reports: every version in its matrix is read here
from the file that pins it (pyproject.toml, clients/python/pyproject.toml, clients/VERSION,
constraints.txt, the poms, go.mod, the Makefile, docker/compose.yaml), so a pin that changes
without the page fails this test — and so does a row the page drops or a version it misspells."""

from __future__ import annotations

import re
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "compatibility.md"
POM = {"m": "http://maven.apache.org/POM/4.0.0"}


def matrix() -> dict[str, str]:
    """The page's table rows: component → version (the first two cells, backticks dropped)."""
    rows = {}
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 2 or set(cells[0]) <= {"-"}:
            continue
        if cells[0] == "component":
            continue
        assert cells[0] not in rows, f"{cells[0]!r} is listed twice in {PAGE.name}"
        rows[cells[0]] = cells[1].replace("`", "")
    return rows


def pinned(requirements: list[str], name: str) -> str:
    """The ``==`` version of ``name`` (extras ignored) in a list of requirement strings."""
    for requirement in requirements:
        match = re.match(r"\s*([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*==\s*([^\s;,#]+)", requirement)
        if match and canonical(match.group(1)) == canonical(name):
            return match.group(3)
    raise AssertionError(f"{name} is not pinned with == in {requirements}")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def constraint(name: str) -> str:
    lines = (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines()
    return pinned([line for line in lines if not line.startswith("#")], name)


def pom(path: str) -> ET.Element:
    return ET.parse(REPO / path).getroot()


def pom_dependency(path: str, artifact: str) -> str:
    root = pom(path)
    for dep in root.iter(f"{{{POM['m']}}}dependency"):
        if dep.findtext("m:artifactId", namespaces=POM) == artifact:
            version = dep.findtext("m:version", namespaces=POM)
            return resolve(root, version)
    raise AssertionError(f"{path} has no dependency {artifact}")


def resolve(root: ET.Element, value: str) -> str:
    """A pom value with its ``${property}`` replaced from the pom's properties."""
    match = re.fullmatch(r"\$\{(.+)\}", value.strip())
    if not match:
        return value.strip()
    found = root.find(f"m:properties/m:{match.group(1)}", POM)
    assert found is not None and found.text, f"no property {match.group(1)}"
    return found.text.strip()


def go_mod() -> dict[str, str]:
    text = (REPO / "clients" / "go" / "go.mod").read_text(encoding="utf-8")
    found = {"go": re.search(r"^go\s+(\S+)", text, re.M).group(1)}
    for module, version in re.findall(r"^\s*(\S+/\S+)\s+(v\S+)", text, re.M):
        found[module] = version
    return found


def compose_image(name: str) -> str:
    text = (REPO / "docker" / "compose.yaml").read_text(encoding="utf-8")
    match = re.search(rf"image:\s*\S*{re.escape(name)}:(\S+)", text)
    assert match, f"docker/compose.yaml has no {name} image"
    return match.group(1)


def python_range(spec: str) -> str:
    """``>=3.11,<3.12`` → ``3.11``: the one minor version a range admits."""
    low = re.search(r">=\s*3\.(\d+)", spec)
    high = re.search(r"<\s*3\.(\d+)", spec)
    assert low and high and int(high.group(1)) == int(low.group(1)) + 1, spec
    return f"3.{low.group(1)}"


def expected() -> dict[str, str]:
    """Each row of the page → the version its pin says."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pipeline = project["optional-dependencies"]["pipeline"]
    client = tomllib.loads(
        (REPO / "clients" / "python" / "pyproject.toml").read_text(encoding="utf-8")
    )["project"]
    oldest = re.fullmatch(r">=\s*(3\.\d+)", client["requires-python"]).group(1)
    minors = [
        c.rsplit(":: ", 1)[1]
        for c in client["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    newest = max(minors, key=lambda v: tuple(map(int, v.split("."))))
    go = go_mod()
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    from routeplan_client import ROUTING_SPEC_VERSION

    return {
        "routeplan (the library, the jobs, the CLI, the API)": project["version"],
        "Python for routeplan": python_range(project["requires-python"]),
        "the clients (Python, Java, Go: versioned together)": (
            (REPO / "clients" / "VERSION").read_text(encoding="utf-8").strip()
        ),
        "routing specification": ROUTING_SPEC_VERSION,
        "Python for routeplan-client": f"{oldest}–{newest}",
        "kafka-python (the Python client's kafka extra)": constraint("kafka-python"),
        "confluent-kafka (RoutedProducer)": constraint("confluent-kafka"),
        "Java": resolve(pom("clients/java/pom.xml"), "${maven.compiler.release}"),
        "kafka-clients (brought by the application: provided)": pom_dependency(
            "clients/java/pom.xml", "kafka-clients"
        ),
        "jackson-core (the Java client's one dependency)": pom_dependency(
            "clients/java/pom.xml", "jackson-core"
        ),
        "Go": go["go"],
        "franz-go (kgoroute)": go["github.com/twmb/franz-go"],
        "segmentio/kafka-go (kafkagoroute)": go["github.com/segmentio/kafka-go"],
        "Apache Airflow": pinned(pipeline, "apache-airflow"),
        "Apache Spark provider for Airflow": pinned(
            pipeline, "apache-airflow-providers-apache-spark"
        ),
        "Apache Spark / PySpark": pinned(pipeline, "pyspark"),
        "Delta Lake (delta-spark, Scala 2.13)": pinned(pipeline, "delta-spark"),
        "hadoop-aws (S3A)": pom_dependency("jars/pom.xml", "hadoop-aws"),
        "Great Expectations": pinned(pipeline, "great_expectations"),
        "Kafka broker (KRaft, kafka_2.13)": pom_dependency("jars/kafka/pom.xml", "kafka_2.13"),
        "MinIO (make minio, built from its Go module)": re.search(
            r"^MINIO_VERSION\s*\?=\s*(\S+)", makefile, re.M
        ).group(1),
        "MinIO (image in docker/compose.yaml)": compose_image("minio/minio"),
        "PostgreSQL (image in docker/compose.yaml)": compose_image("postgres"),
        "Playwright (driving Chromium)": constraint("playwright"),
        "MkDocs Material (make docs)": constraint("mkdocs-material"),
        "uv (installs the virtualenv)": constraint("uv"),
    }


def clean(component: str) -> str:
    return component.replace("`", "")


def test_every_pin_is_on_the_page_with_its_version():
    page = {clean(k): v for k, v in matrix().items()}
    wrong = {
        component: (page.get(component, "(missing)"), version)
        for component, version in expected().items()
        if page.get(component) != version
    }
    assert not wrong, f"{PAGE.name} (page, pinned): {wrong}"


def test_the_page_lists_no_version_the_test_does_not_read():
    extra = {clean(k) for k in matrix()} - set(expected())
    assert not extra, f"rows of {PAGE.name} with no pin read by this test: {sorted(extra)}"


def test_delta_spark_agrees_in_pyproject_and_the_jars_pom():
    pipeline = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]["pipeline"]
    assert pinned(pipeline, "delta-spark") == pom_dependency("jars/pom.xml", "delta-spark_4.2_2.13")


@pytest.mark.parametrize("name", ["apache-airflow", "pyspark", "great_expectations"])
def test_the_extras_pins_agree_with_constraints(name):
    pipeline = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]["pipeline"]
    assert pinned(pipeline, name) == constraint(name)
