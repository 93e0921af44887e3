"""docker/compose.yaml against the topology ``make cluster-demo`` starts (scripts/cluster.py).

No Docker engine runs here, so the compose file is read as data (PyYAML resolves its anchors and
``<<:`` merge keys as Compose does) and checked against the launcher: the same services, the same
environment names with the same values (the connection URIs with service names for hosts), the
same start order, and images built from docker/*.Dockerfile on the versions pyproject.toml pins.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
DOCKER = REPO / "docker"
sys.path.insert(0, str(REPO / "scripts"))
import cluster  # noqa: E402

# One-shot services compose may have besides cluster.SERVICES (none: airflow-init makes the bucket).
ONE_SHOT: set[str] = set()
AIRFLOW = ["airflow-init"] + [f"airflow-{c}" for c in cluster.AIRFLOW_COMPONENTS]
WORKERS = [f"spark-worker-{n}" for n in range(1, cluster.SPARK_WORKERS + 1)]
SPARK = ["spark-master", *WORKERS]
# what Airflow and Spark share with the object store: its address and its root user
OBJECT_STORE_CLIENT = {
    "AWS_ACCESS_KEY_ID": "MINIO_ROOT_USER",
    "AWS_SECRET_ACCESS_KEY": "MINIO_ROOT_PASSWORD",
}
# the images' paths: set in compose and as ENV in the Dockerfile of the service's image
IMAGE_PATHS = ("ROUTEPLAN_JARS", "ROUTEPLAN_PY_FILES", "ROUTEPLAN_SCHEMAS")
OFFICIAL_IMAGES = ("postgres:", "quay.io/minio/minio:", "minio/minio:")


def load_compose() -> dict[str, Any]:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text())


def expected_connections() -> dict[str, str]:
    return cluster.connections(lambda service: service, cluster.Ports())


def env(service: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in (service.get("environment") or {}).items()}


def pin(package: str) -> str:
    """The version pyproject.toml pins ``package`` to (``package==X``, ``package[extra]==X``)."""
    text = (REPO / "pyproject.toml").read_text()
    found = re.search(rf'"{re.escape(package)}(\[[\w,]+\])?==([^"]+)"', text)
    assert found, f"pyproject.toml pins no {package}"
    return found.group(2)


def python_version() -> str:
    """The minor Python version routeplan runs on (``requires-python = ">=3.11,<3.12"``)."""
    found = re.search(r'requires-python = ">=(\d+\.\d+),', (REPO / "pyproject.toml").read_text())
    assert found
    return found.group(1)


def dockerfile(name: str) -> str:
    return (DOCKER / name).read_text()


def with_arg_defaults(text: str) -> str:
    """The Dockerfile with each ``${ARG}`` replaced by its default (``ARG NAME=default``)."""
    args = dict(re.findall(r"^ARG (\w+)=(\S+)$", text, re.M))
    return re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), text)


def final_from(text: str) -> str:
    """The image the Dockerfile's last stage starts from, its ARGs at their defaults."""
    return re.findall(r"^FROM (\S+)", with_arg_defaults(text), re.M)[-1]


def env_paths(text: str) -> dict[str, str]:
    """``NAME=value`` pairs of the Dockerfile's ENV instructions (continued lines joined)."""
    joined = text.replace("\\\n", " ")
    pairs: dict[str, str] = {}
    for line in re.findall(r"^ENV (.+)$", joined, re.M):
        pairs.update(re.findall(r"(\w+)=(\S+)", line))
    return pairs


def copies_the_poms_jars(text: str, profile: str = "") -> bool:
    """Runs Maven's copy-dependencies on jars/pom.xml (whose plugin configuration lists the
    jars), with ``-P<profile>`` when one is given, without an artifact list of its own that
    could drift from the pom's."""
    activates = rf"-P{profile} " if profile else ""
    found = re.search(rf"mvn .*{activates}-f \S*pom\.xml dependency:copy-dependencies", text)
    return found is not None and "includeArtifactIds" not in text


def airflow_env_problems(services: dict[str, Any]) -> list[str]:
    """Every Airflow service must set each name of ``connections`` to exactly its value, and
    each of ``AIRFLOW_ENV_NAMES``; the problems found, one line each."""
    problems = []
    for name in AIRFLOW:
        got = env(services[name])
        for key, value in expected_connections().items():
            if got.get(key) != value:
                problems.append(f"{name}: {key}={got.get(key)!r}, launcher: {value!r}")
        problems += [f"{name}: no {key}" for key in cluster.AIRFLOW_ENV_NAMES if not got.get(key)]
    return problems


def test_services_are_the_topology():
    assert set(load_compose()["services"]) == set(cluster.SERVICES) | ONE_SHOT


def test_airflow_services_set_the_launchers_environment():
    assert airflow_env_problems(load_compose()["services"]) == []


def test_the_environment_check_catches_a_missing_or_different_value():
    services = load_compose()["services"]
    broken = copy.deepcopy(services)
    for name in ("airflow-triggerer", "airflow-scheduler"):  # each its own, not the anchor's
        broken[name]["environment"] = dict(broken[name]["environment"])
    del broken["airflow-triggerer"]["environment"]["AIRFLOW__API_AUTH__JWT_SECRET"]
    broken["airflow-scheduler"]["environment"]["ROUTEPLAN_HOME"] = "s3a://other/home"
    assert airflow_env_problems(broken) == [
        "airflow-scheduler: ROUTEPLAN_HOME='s3a://other/home', launcher: 's3a://routeplan/home'",
        "airflow-triggerer: no AIRFLOW__API_AUTH__JWT_SECRET",
    ]


def test_airflow_and_spark_use_the_object_stores_user_and_the_same_python():
    services = load_compose()["services"]
    store = env(services["object-store"])
    connections = expected_connections()
    python = f"python{python_version()}"
    for name in AIRFLOW + SPARK:
        got = env(services[name])
        for client, server in OBJECT_STORE_CLIENT.items():
            assert got[client] == store[server], (name, client)
            assert re.fullmatch(r"\$\{\w+:\?.+\}", got[client]), "a secret from docker/.env"
        for key in ("AWS_ENDPOINT_URL", "AWS_REGION"):
            assert got[key] == connections[key], (name, key)
        assert got["PYSPARK_PYTHON"] == python, name
    assert connections["AWS_ENDPOINT_URL"].endswith(f":{cluster.Ports().object_store}")
    assert "--address" in services["object-store"]["command"]
    assert f":{cluster.Ports().object_store}" in services["object-store"]["command"]


def test_postgres_holds_the_launchers_database():
    got = env(load_compose()["services"]["postgres"])
    assert (got["POSTGRES_USER"], got["POSTGRES_PASSWORD"], got["POSTGRES_DB"]) == (
        cluster.DB["user"],
        cluster.DB["password"],
        cluster.DB["name"],
    )


def test_spark_workers_join_the_master_of_the_connection_with_one_core():
    services = load_compose()["services"]
    spark = json.loads(expected_connections()[f"AIRFLOW_CONN_{cluster.SPARK_CONN_ID.upper()}"])
    master_url = f"{spark['host']}:{spark['port']}"
    master = services["spark-master"]["command"]
    assert master[master.index("--port") + 1] == str(spark["port"])
    assert master[master.index("--host") + 1] == spark["host"].removeprefix("spark://")
    for name in WORKERS:
        command = services[name]["command"]
        assert "org.apache.spark.deploy.worker.Worker" in command
        assert master_url in command, name
        assert command[command.index("--cores") + 1] == "1", name


def test_start_order_is_the_launchers():
    """postgres → object-store → spark → airflow-init → the components: a service waits only
    for services the launcher starts before it, airflow-init for all of those to be healthy,
    each component for airflow-init to have finished."""
    services = load_compose()["services"]
    order = list(cluster.SERVICES)
    for name, service in services.items():
        for dependency, how in (service.get("depends_on") or {}).items():
            assert order.index(dependency) < order.index(name), (name, dependency)
            wanted = (
                "service_completed_successfully"
                if dependency == "airflow-init"
                else "service_healthy"
            )
            assert how["condition"] == wanted, (name, dependency)
    infrastructure = order[: order.index("airflow-init")]
    assert set(services["airflow-init"]["depends_on"]) == set(infrastructure)
    for name in AIRFLOW[1:]:
        assert "airflow-init" in services[name]["depends_on"], name
    for name in WORKERS:
        assert "spark-master" in services[name]["depends_on"], name


def test_every_long_running_service_has_a_healthcheck():
    services = load_compose()["services"]
    for name in set(services) - {"airflow-init"} - ONE_SHOT:
        test = services[name].get("healthcheck", {}).get("test")
        assert test and test[0] != "NONE", name
    assert services["airflow-init"].get("restart") == "no"


def test_images_are_built_here_or_official():
    services = load_compose()["services"]
    built = {}
    for name, service in services.items():
        if "build" in service:
            path = REPO / "docker" / service["build"]["context"] / service["build"]["dockerfile"]
            assert path.resolve().parent == DOCKER, name
            assert path.is_file(), name
            built[name] = path.name
        else:
            assert service["image"].startswith(OFFICIAL_IMAGES), name
    assert {built[n] for n in AIRFLOW} == {"airflow.Dockerfile"}
    assert {built[n] for n in SPARK} == {"spark.Dockerfile"}
    # compose's image paths are where each image put them
    for name, image in built.items():
        paths = env_paths(dockerfile(image))
        for key in set(IMAGE_PATHS) & set(env(services[name])):
            assert env(services[name])[key] == paths[key], (name, key)


def test_airflow_image_is_the_pinned_airflow_with_a_jre_17_and_routeplan():
    text = dockerfile("airflow.Dockerfile")
    assert final_from(text) == f"apache/airflow:{pin('apache-airflow')}-python{python_version()}"
    assert "openjdk-17-jre-headless" in text
    assert "pip install" in text and "routeplan-*.whl)[pipeline,client]" in text
    assert "/opt/routeplan/dags" in text and "/opt/routeplan/plugins" in text


def test_spark_image_is_the_pinned_spark_with_routeplan_and_the_jars():
    text = dockerfile("spark.Dockerfile")
    image = final_from(text)
    assert image.startswith(f"apache/spark:{pin('pyspark')}-"), image
    assert "-java17-python3" in image
    assert f'"python{python_version()}-venv"' in with_arg_defaults(text)
    assert "pip install" in text and "routeplan-*.whl" in text
    assert "COPY --from=jars /jars /opt/routeplan/jars" in text
    assert env_paths(text)["PATH"].startswith("/opt/routeplan/venv/bin:")


def build_stages(text: str) -> str:
    """The stages before the image's own (the jars, the wheel and the zip)."""
    return text[text.index("\nFROM maven") : text.index("# ---- the image")]


def test_both_images_build_routeplan_and_fetch_the_makefiles_jars_alike():
    makefile = (REPO / "Makefile").read_text()
    airflow, spark = dockerfile("airflow.Dockerfile"), dockerfile("spark.Dockerfile")
    # the images hold S3A's jars too (their homes are in a bucket); the Makefile fetches them
    # apart, for the targets that use an object store
    assert copies_the_poms_jars(airflow, "s3a") and copies_the_poms_jars(makefile, "s3a")
    assert copies_the_poms_jars(makefile) and not copies_the_poms_jars(makefile, "s3x")
    assert build_stages(airflow) == build_stages(spark)


def test_airflow_init_makes_the_bucket_of_routeplan_home(object_store):
    """airflow-init's first step, run against a real object store: it creates the bucket that
    ROUTEPLAN_HOME names, and running it again changes nothing."""
    command = load_compose()["services"]["airflow-init"]["command"][-1]
    code = re.search(r"python -c '(.*?)'", command, re.S).group(1)
    bucket = f"init-{uuid.uuid4().hex[:8]}"
    run_env = {**os.environ, **object_store.env, "ROUTEPLAN_HOME": f"s3a://{bucket}/home"}
    from routeplan import storage

    fs, _ = storage.filesystem(f"s3://{bucket}")
    assert not fs.exists(bucket)
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", code], env=run_env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        fs.invalidate_cache()
        assert fs.exists(bucket)


def test_every_secret_compose_needs_is_in_the_env_example():
    compose = (DOCKER / "compose.yaml").read_text()
    needed = set(re.findall(r"\$\{(\w+):\?", compose))
    example = dict(
        line.split("=", 1)
        for line in (DOCKER / ".env.example").read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert needed and needed <= set(example), needed - set(example)
