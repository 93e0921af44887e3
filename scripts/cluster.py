"""routeplan on a cluster, on this machine: every part a real server started the real way, and the
nightly run through it.

    make cluster-demo                       # = python scripts/cluster.py demo
    python scripts/cluster.py up            # start it all; Ctrl-C stops it all

``demo`` starts the topology below, puts a day of sample logs into the object store, triggers
``routeplan_nightly`` through Airflow's REST API (as the UI's Trigger button does), waits for it,
prints the same summary as ``make demo`` and stops everything it started, each part by its
process group. ``docker/compose.yaml`` runs the same services under the same names with the same
environment (``tests/test_docker_compose.py`` holds the two together).

==========================  =====================================================================
service                     what runs
==========================  =====================================================================
postgres                    PostgreSQL (Debian's package): Airflow's metadata database
object-store                MinIO (built from its Go module): an S3-compatible server holding
                            ``s3://routeplan/home`` — landing/, warehouse/ (Delta), routing/,
                            config/, reports/
spark-master                Spark standalone master (``spark-class`` from the PySpark package)
spark-worker-1, -2          Spark standalone workers, one core each
airflow-init                ``airflow db migrate`` (once, before the components)
airflow-scheduler           LocalExecutor: each task runs spark-submit in client mode against
                            the master, shipping routeplan as a zip (``py_files``)
airflow-dag-processor       parses the DAGs
airflow-api-server          the UI, the REST API and routeplan's routing-table API (/routeplan)
airflow-triggerer           deferred tasks
==========================  =====================================================================

Everything it writes stays under ``var/cluster/`` (``$ROUTEPLAN_CLUSTER_DIR``): the PostgreSQL
and MinIO data, Airflow's home, the Spark workers' work directories (``spark/worker-N/<app>/<n>``:
which executor ran where, with its stdout and stderr) and one log per component (``logs/``).
Only settings differ from ``make demo``: the Airflow connection to Spark and ``ROUTEPLAN_HOME``
(an ``s3a://`` URI), plus the object store's address and credentials in the standard AWS
variables.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from airflow_api import AirflowClient, free_port, stop_process_group, tail  # noqa: E402

# ----------------------------------------------------------------------------- the topology

SERVICES = (
    "postgres",
    "object-store",
    "spark-master",
    "spark-worker-1",
    "spark-worker-2",
    "airflow-init",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-api-server",
    "airflow-triggerer",
)
AIRFLOW_COMPONENTS = ("scheduler", "dag-processor", "api-server", "triggerer")
SPARK_WORKERS = 2
BUCKET = "routeplan"
HOME = f"s3a://{BUCKET}/home"  # Spark's spelling; the library reads it as s3://routeplan/home
SPARK_CONN_ID = "spark_cluster"
DB = {"user": "airflow", "password": "airflow", "name": "airflow"}
# demo credentials of the local object store (compose takes them from its .env)
OBJECT_STORE_USER, OBJECT_STORE_PASSWORD = "routeplan", "routeplan-demo-secret"


@dataclass(frozen=True)
class Ports:
    """Where each service listens (compose: inside its container; here: on 127.0.0.1)."""

    postgres: int = 5432
    object_store: int = 9000
    object_store_console: int = 9001
    spark_master: int = 7077
    spark_master_ui: int = 8081
    spark_worker_ui: tuple[int, ...] = (8082, 8083)
    airflow_api: int = 8080

    @classmethod
    def local(cls) -> Ports:
        """The demo's ports on this machine: PostgreSQL on 5433 (5432 is often taken)."""
        return cls(postgres=5433)

    @classmethod
    def free(cls) -> Ports:
        """Free ports right now (tests: several clusters or servers on one machine)."""
        return cls(
            postgres=free_port(),
            object_store=free_port(),
            object_store_console=free_port(),
            spark_master=free_port(),
            spark_master_ui=free_port(),
            spark_worker_ui=tuple(free_port() for _ in range(SPARK_WORKERS)),
            airflow_api=free_port(),
        )


def connections(host: Callable[[str], str], ports: Ports) -> dict[str, str]:
    """The settings that point routeplan's Airflow at the cluster — the same names and URIs here
    and in ``docker/compose.yaml`` (``host(service)``: ``127.0.0.1`` here, the service name in
    compose)."""
    spark = {
        "conn_type": "spark",
        "host": f"spark://{host('spark-master')}",
        "port": ports.spark_master,
        "extra": {"deploy-mode": "client"},
    }
    return {
        "ROUTEPLAN_HOME": HOME,
        "ROUTEPLAN_SPARK_CONN": SPARK_CONN_ID,
        f"AIRFLOW_CONN_{SPARK_CONN_ID.upper()}": json.dumps(spark),
        "AWS_ENDPOINT_URL": f"http://{host('object-store')}:{ports.object_store}",
        "AWS_REGION": "us-east-1",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": (
            f"postgresql+psycopg2://{DB['user']}:{DB['password']}@{host('postgres')}:"
            f"{ports.postgres}/{DB['name']}"
        ),
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": (
            f"http://{host('airflow-api-server')}:{ports.airflow_api}/execution/"
        ),
    }


# Set on every Airflow component besides ``connections`` (values differ between here and compose:
# paths in the image, secrets from the compose .env).
AIRFLOW_ENV_NAMES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AIRFLOW__API_AUTH__JWT_SECRET",
    "AIRFLOW__CORE__DAGS_FOLDER",
    "AIRFLOW__CORE__PLUGINS_FOLDER",
    "AIRFLOW__CORE__LOAD_EXAMPLES",
    "ROUTEPLAN_JARS",
    "ROUTEPLAN_PY_FILES",
    "ROUTEPLAN_SCHEMAS",
    "ROUTEPLAN_GX",
    "ROUTEPLAN_SPARK_DEFAULTS",
    "PYSPARK_PYTHON",
)


# ----------------------------------------------------------------------------- the processes


@dataclass(frozen=True)
class Paths:
    """Everything the cluster writes, under one folder (default ``var/cluster``)."""

    root: Path

    @property
    def postgres(self) -> Path:
        return self.root / "postgres"

    @property
    def object_store(self) -> Path:
        return self.root / "object-store"

    @property
    def airflow(self) -> Path:
        return self.root / "airflow"

    def log(self, service: str) -> Path:
        return self.root / "logs" / f"{service}.log"

    def worker_dir(self, n: int) -> Path:
        return self.root / "spark" / f"worker-{n}"


def venv_bin() -> Path:
    return Path(sys.executable).parent


def tool(name: str, hint: str) -> str:
    """The path of a program the cluster needs, or SystemExit saying how to get it."""
    for candidate in (venv_bin() / name, REPO / ".tools" / "bin" / name):
        if candidate.is_file():
            return str(candidate)
    for folder in sorted(Path("/usr/lib/postgresql").glob("*/bin")):
        if (folder / name).is_file():
            return str(folder / name)
    found = shutil.which(name)
    if not found:
        raise SystemExit(f"{name} not found: {hint}")
    return found


@dataclass
class Service:
    name: str
    command: list[str]
    env: Mapping[str, str]
    log: Path
    proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("a") as out:
            self.proc = subprocess.Popen(
                self.command,
                env=dict(self.env),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=REPO,
                start_new_session=True,  # its own process group: stopped as a whole
            )

    def check(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(
                f"{self.name} exited ({self.proc.returncode}); {self.log}:\n{tail(self.log, 30)}"
            )

    def stop(self, grace_s: float = 30.0) -> list[str]:
        if self.proc is None:
            return []
        left = stop_process_group(self.proc, grace_s)
        self.proc = None
        return left


def wait_for(what: str, ready: Callable[[], bool], services: list[Service], timeout_s: float):
    deadline = time.monotonic() + timeout_s
    while not ready():
        for service in services:
            service.check()
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready after {timeout_s:.0f}s")
        time.sleep(0.5)


def http_json(url: str) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=3) as resp:
            return json.loads(resp.read())
    except (OSError, ValueError):
        return None


@dataclass
class Cluster:
    """The whole topology on 127.0.0.1; ``with Cluster(...) as cluster:`` starts and stops it."""

    paths: Paths
    ports: Ports = field(default_factory=Ports.local)
    # False: the scheduler starts only the runs someone triggers (the demo and the tests), not
    # the nightly schedule's, which would process yesterday alongside them
    schedule: bool = False
    services: list[Service] = field(default_factory=list)

    # -- environment

    def base_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "ROUTEPLAN_"))}
        env.update(
            PATH=f"{venv_bin()}{os.pathsep}{os.environ.get('PATH', '')}",
            SPARK_LOCAL_IP="127.0.0.1",
            AWS_ACCESS_KEY_ID=OBJECT_STORE_USER,
            AWS_SECRET_ACCESS_KEY=OBJECT_STORE_PASSWORD,
            PYSPARK_PYTHON=str(venv_bin() / "python"),
        )
        env.update(
            (k, v)
            for k, v in connections(lambda _: "127.0.0.1", self.ports).items()
            if k.startswith("AWS_")
        )
        return env

    def airflow_env(self) -> dict[str, str]:
        env = self.base_env()
        env.update(connections(lambda _: "127.0.0.1", self.ports))
        env.update(
            AIRFLOW_HOME=str(self.paths.airflow),
            AIRFLOW__API_AUTH__JWT_SECRET=self._secret("jwt-secret"),
            AIRFLOW__API__SECRET_KEY=self._secret("api-secret-key"),
            AIRFLOW__API__PORT=str(self.ports.airflow_api),
            AIRFLOW__CORE__DAGS_FOLDER=str(REPO / "dags"),
            AIRFLOW__CORE__PLUGINS_FOLDER=str(REPO / "plugins"),
            AIRFLOW__CORE__LOAD_EXAMPLES="False",
            AIRFLOW__CORE__PARALLELISM="4",
            AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE=str(self.schedule),
            ROUTEPLAN_JARS=str(REPO / ".jars"),
            ROUTEPLAN_PY_FILES=str(REPO / "dist" / "routeplan.zip"),
            ROUTEPLAN_SCHEMAS=str(REPO / "schemas"),
            ROUTEPLAN_GX=str(REPO / "gx"),
            ROUTEPLAN_SPARK_DEFAULTS=str(REPO / "config" / "spark-defaults.conf"),
        )
        return env

    def _secret(self, name: str) -> str:
        """A random secret made once per cluster folder (every component must share it)."""
        path = self.paths.airflow / name
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(secrets.token_urlsafe(32))
            path.chmod(0o600)
        return path.read_text().strip()

    # -- start and stop

    def __enter__(self) -> Cluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        self.check_ports()
        self.start_postgres()
        self.start_object_store()
        self.start_spark()
        self.start_airflow()

    def stop(self) -> None:
        """Every service, the last started first, each by its process group."""
        left = []
        for service in reversed(self.services):
            left += service.stop()
            say(f"stopped {service.name}")
        self.services.clear()
        if left:
            raise RuntimeError(f"still running after SIGKILL: {left}")

    def check_ports(self) -> None:
        import socket

        ports = [p for p in vars(self.ports).values() if isinstance(p, int)]
        ports += list(self.ports.spark_worker_ui)
        for port in ports:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    raise SystemExit(
                        f"port {port} is in use; stop what holds it, or use --free-ports"
                    )

    def run(self, name: str, command: list[str], env: Mapping[str, str]) -> Service:
        service = Service(name, command, env, self.paths.log(name))
        service.start()
        self.services.append(service)
        return service

    def as_postgres_user(self, command: list[str]) -> list[str]:
        """initdb and the server refuse to run as root: run them as ``postgres`` then."""
        if os.geteuid() != 0:
            return command
        return ["runuser", "-u", "postgres", "--", *command]

    def start_postgres(self) -> None:
        data = self.paths.postgres
        if not (data / "PG_VERSION").is_file():
            data.mkdir(parents=True, exist_ok=True)
            if os.geteuid() == 0:
                shutil.chown(data, "postgres", "postgres")
                reach = subprocess.run(self.as_postgres_user(["test", "-w", str(data)]))
                if reach.returncode != 0:
                    raise SystemExit(
                        f"the user postgres cannot reach {data} (a parent folder is private): "
                        "put the cluster's folder (--dir) where every user may enter"
                    )
            initdb = tool("initdb", "run `make postgresql` (it installs Debian's postgresql)")
            subprocess.run(
                self.as_postgres_user(
                    [initdb, "-D", str(data), "--auth=trust", "-U", "postgres", "-E", "UTF8"]
                ),
                check=True,
                stdout=subprocess.DEVNULL,
            )
        postgres = tool("postgres", "run `make postgresql` (it installs Debian's postgresql)")
        command = [postgres, "-D", str(data), "-p", str(self.ports.postgres)]
        command += ["-c", "listen_addresses=127.0.0.1", "-k", str(data)]
        service = self.run("postgres", self.as_postgres_user(command), self.base_env())
        psql = [tool("psql", "install PostgreSQL's client")]
        psql += ["-h", "127.0.0.1", "-p", str(self.ports.postgres), "-U", "postgres", "-tAc"]

        def accepting() -> bool:
            return subprocess.run(psql + ["SELECT 1"], capture_output=True).returncode == 0

        wait_for("PostgreSQL", accepting, [service], 60)
        role = subprocess.run(
            psql + [f"SELECT 1 FROM pg_roles WHERE rolname = '{DB['user']}'"],
            capture_output=True,
            text=True,
            check=True,
        )
        if not role.stdout.strip():
            for sql in (
                f"CREATE ROLE {DB['user']} LOGIN PASSWORD '{DB['password']}'",
                f"CREATE DATABASE {DB['name']} OWNER {DB['user']}",
            ):
                subprocess.run(psql + [sql], check=True, capture_output=True)
        say(f"postgres      on 127.0.0.1:{self.ports.postgres} (data {data})")

    def start_object_store(self) -> None:
        minio = tool("minio", "run `make minio` (it builds MinIO from its Go module)")
        env = {
            **self.base_env(),
            "MINIO_ROOT_USER": OBJECT_STORE_USER,
            "MINIO_ROOT_PASSWORD": OBJECT_STORE_PASSWORD,
        }
        address = f"127.0.0.1:{self.ports.object_store}"
        console = f"127.0.0.1:{self.ports.object_store_console}"
        service = self.run(
            "object-store",
            [minio, "server", str(self.paths.object_store), "--address", address]
            + ["--console-address", console, "--quiet"],
            env,
        )
        url = f"http://{address}/minio/health/ready"
        wait_for("MinIO", lambda: _ok(url), [service], 60)
        with patched_environ(self.base_env()):
            from routeplan import storage

            storage.make_bucket(HOME)
        say(f"object-store  on http://{address} (console http://{console}), bucket {BUCKET}")

    def start_spark(self) -> None:
        spark_class = tool("spark-class", "run `make setup` (PySpark provides it)")
        env = self.base_env()
        master_url = f"spark://127.0.0.1:{self.ports.spark_master}"
        master = self.run(
            "spark-master",
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
            + ["--port", str(self.ports.spark_master)]
            + ["--webui-port", str(self.ports.spark_master_ui)],
            env,
        )
        started = [master]
        for n in range(1, SPARK_WORKERS + 1):
            work = self.paths.worker_dir(n)
            work.mkdir(parents=True, exist_ok=True)
            started.append(
                self.run(
                    f"spark-worker-{n}",
                    [spark_class, "org.apache.spark.deploy.worker.Worker", master_url]
                    + ["--host", "127.0.0.1", "--cores", "1", "--memory", "2g"]
                    + ["--work-dir", str(work)]
                    + ["--webui-port", str(self.ports.spark_worker_ui[n - 1])],
                    {**env, "SPARK_LOCAL_DIRS": str(work / "tmp")},
                )
            )

        def workers_alive() -> bool:
            state = http_json(f"http://127.0.0.1:{self.ports.spark_master_ui}/json/")
            return bool(state) and state.get("aliveworkers", 0) >= SPARK_WORKERS

        wait_for("the Spark master and its workers", workers_alive, started, 120)
        say(
            f"spark-master  {master_url} (UI http://127.0.0.1:{self.ports.spark_master_ui}), "
            f"{SPARK_WORKERS} workers with 1 core each"
        )

    def start_airflow(self) -> None:
        env = self.airflow_env()
        airflow = tool("airflow", "run `make setup`")
        self.paths.airflow.mkdir(parents=True, exist_ok=True)
        init = subprocess.run(
            [airflow, "db", "migrate"], env=env, capture_output=True, text=True, cwd=REPO
        )
        self.paths.log("airflow-init").write_text(init.stdout + init.stderr)
        if init.returncode != 0:
            raise RuntimeError(f"airflow db migrate failed:\n{(init.stdout + init.stderr)[-3000:]}")
        started = [
            self.run(f"airflow-{component}", [airflow, component], env)
            for component in AIRFLOW_COMPONENTS
        ]
        client = self.airflow()

        def healthy() -> bool:
            try:
                health = client.health()
            except Exception:  # noqa: BLE001 - not up yet
                return False
            parts = ("metadatabase", "scheduler", "dag_processor", "triggerer")
            return all((health.get(p) or {}).get("status") == "healthy" for p in parts)

        wait_for("Airflow", healthy, started, 240)
        say(
            f"airflow       UI and REST API http://127.0.0.1:{self.ports.airflow_api} "
            f"(user admin, password in {self.password_file})"
        )

    # -- using it

    @property
    def password_file(self) -> Path:
        return self.paths.airflow / "simple_auth_manager_passwords.json.generated"

    def airflow(self) -> AirflowClient:
        return AirflowClient(
            f"http://127.0.0.1:{self.ports.airflow_api}",
            self.paths.airflow,
            self.paths.log("airflow-scheduler"),
            str(REPO / "dags"),
        )

    def routeplan(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """``routeplan <args>`` with the cluster's settings (ROUTEPLAN_HOME in the object store)."""
        env = {**self.airflow_env(), "ROUTEPLAN_HOME": library_home()}
        return subprocess.run(
            [str(venv_bin() / "routeplan"), *args], env=env, check=check, text=True
        )

    def nightly(self, day: date, conf: Mapping[str, object] | None = None) -> dict:
        """Trigger ``routeplan_nightly`` for ``day`` through the REST API, wait, return the run."""
        client = self.airflow()
        try:
            client.wait_for_dag("routeplan_nightly", timeout=180)
            client.unpause("routeplan_nightly")
            run_id = client.trigger("routeplan_nightly", {"date": day.isoformat(), **(conf or {})})
            say(f"triggered routeplan_nightly run {run_id} for {day}")
            return client.wait_for_run(
                "routeplan_nightly", run_id, timeout=1800, progress=lambda line: say(line, "   ")
            )
        finally:
            client.close()

    def env(self) -> dict[str, str]:
        """The library's view of the cluster (for ``Router.open`` and checks): the AWS settings."""
        return {k: v for k, v in self.base_env().items() if k.startswith("AWS_")}


def library_home() -> str:
    from routeplan import storage

    return storage.library_uri(HOME)


def _ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=3) as resp:
            return resp.status == 200
    except OSError:
        return False


@contextmanager
def patched_environ(values: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def say(message: str, prefix: str = "==>") -> None:
    print(f"{prefix} {message}", flush=True)


# ----------------------------------------------------------------------------- the demo


def demo(cluster: Cluster, day: date, events: int) -> int:
    from demo import print_summary

    from routeplan import settings, storage

    home = library_home()
    say(f"sample logs for {day} into {home}/landing")
    cluster.routeplan(
        "generate",
        "--date",
        day.isoformat(),
        "--events",
        str(events),
        "--malformed",
        "0.001",
        "--duplicates",
        "0.001",
    )
    with patched_environ(cluster.env()):
        policies = settings.policies_file(home)
        if not storage.exists(policies):
            storage.write_text(policies, (REPO / "config" / "streams.yaml").read_text())
        say(f"planning policies: {policies}")
        cluster.nightly(day)
        report = storage.read_bytes(
            storage.join(settings.reports_root(home), str(day), "publish.json")
        )
    print_summary(
        json.loads(report),
        home,
        "python scripts/cluster.py up   (this cluster, kept running: Airflow's UI, MinIO's "
        "console, Spark's UI; routeplan show --routing " + home + "/routing --stream <stream>)",
    )
    print(f"\nlogs of every component: {cluster.paths.root / 'logs'}")
    print(f"executors' work directories: {cluster.paths.root / 'spark'}/worker-N/<app>/<executor>")
    return 0


def main(argv: list[str] | None = None) -> int:
    from routeplan import settings
    from routeplan.simulation.generate import default_day

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["demo", "up"])
    parser.add_argument("--date", type=date.fromisoformat, default=default_day())
    parser.add_argument("--events", type=int, default=100_000, help="sample events per stream")
    parser.add_argument(
        "--dir",
        type=Path,
        default=settings.current().cluster_dir,
        help="where the cluster keeps its data and logs (default $ROUTEPLAN_CLUSTER_DIR, else "
        "var/cluster)",
    )
    parser.add_argument("--free-ports", action="store_true", help="pick free ports")
    args = parser.parse_args(argv)
    ports = Ports.free() if args.free_ports else Ports.local()
    cluster = Cluster(Paths(args.dir.resolve()), ports, schedule=args.command == "up")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with cluster:
        if args.command == "demo":
            return demo(cluster, args.date, args.events)
        say("cluster up; press Ctrl-C to stop it")
        try:
            while True:
                for service in cluster.services:
                    service.check()
                time.sleep(2)
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    sys.exit(main())
