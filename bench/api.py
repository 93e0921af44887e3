"""Routing-table HTTP API: requests/s and latency of ``GET /streams/{s}/latest``, on this machine.

    .venv/bin/python bench/api.py                          # 8 threads, 10 s per case
    .venv/bin/python bench/api.py --threads 16 --seconds 30

Publishes a realistic table (cg on a Zipf stream: 1024 key groups, 10 workers, 50 hot keys, its
planning loads), starts ``routeplan.api.app.serve`` (uvicorn, one process) on a free local
port in a subprocess, and drives it from ``--threads`` httpx clients (keep-alive) in this process:
first with a plain GET (200, the whole document), then with ``If-None-Match`` set to the current
ETag (304, no body). The load generator shares the machine with the server.

Measured on this machine (2 cores shared by server and load generator, Python 3.11, 10 s per
case, one run each; the table is 35 kB as stored, 21 kB served; the first, uncached GET of a
version (parse, schema, checksum) took ~52 ms):

    threads  case                  req/s   p50 ms  p90 ms  p99 ms  server CPU
          1  200 full document     1,072     0.87    1.14    1.45   0.48 cores
          1  304 If-None-Match     1,280     0.77    0.91    1.18   0.51 cores
          8  200 full document     1,332     5.20   10.16   16.65   0.69 cores
          8  304 If-None-Match     1,691     4.21    7.86   13.57   0.68 cores

The API's own work per request (read LATEST, stat the version file, LRU hit) is ~60 µs; the rest
is FastAPI/uvicorn and the Python client, which share the two cores. A 304 saves the 21 kB body,
which matters on a network more than on loopback.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np

from routeplan.model.hashing import key_groups
from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget
from routeplan.model.workers import Worker, Workers
from routeplan.planning.registry import get_strategy
from routeplan.publishing.store import RoutingStore

STREAM = "clicks"


def publish_table(root: Path, groups: int, workers: int, hot: int, keys: int = 100_000) -> int:
    """Plan ``cg`` on a Zipf (z = 1.1) snapshot and publish it; the document's size in bytes."""
    rng = np.random.default_rng(1)
    p = 1.0 / np.arange(1, keys + 1) ** 1.1
    counts = rng.multinomial(2_000_000, p / p.sum()).astype(float)
    names = [f"user-{i}" for i in range(keys)]
    snapshot = LoadSnapshot(
        stream=STREAM,
        key_group_load=np.bincount(key_groups(names, groups), weights=counts, minlength=groups),
        hot_key_load={names[i]: counts[i] for i in np.argsort(-counts)[:hot]},
    )
    fleet = Workers(tuple(Worker(f"w{i}", 3.0 if i < 3 else 1.0) for i in range(workers)))
    table = get_strategy("cg").plan(snapshot, None, fleet, Budget()).table
    store = RoutingStore(root)
    store.publish(table)
    return store.path(STREAM, 1).stat().st_size


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(root: Path, port: int) -> subprocess.Popen:
    """``routeplan.api.app.serve`` in a child process; returns once it answers."""
    code = (  # the API is closed by default; this local benchmark opens it on purpose
        "import sys; from routeplan.api.app import serve; "
        "serve(sys.argv[1], port=int(sys.argv[2]), allow_anonymous_read=True)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(root), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            httpx.get(f"http://127.0.0.1:{port}/streams", timeout=1).raise_for_status()
            return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not answer within 30 s")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load(
    url: str, headers: dict[str, str], threads: int, seconds: float, expect: int, server: int
) -> dict:
    """``threads`` clients GET ``url`` for ``seconds``: throughput, latency percentiles and the
    CPU the ``server`` process used (cores; near 1 means the server is the bottleneck)."""
    latencies: list[list[float]] = [[] for _ in range(threads)]
    errors = [0] * threads
    start = threading.Barrier(threads + 1)

    def client(i: int) -> None:
        with httpx.Client(headers=headers, timeout=10) as http:
            start.wait()
            end = time.perf_counter() + seconds
            while (began := time.perf_counter()) < end:
                ok = http.get(url).status_code == expect
                latencies[i].append(time.perf_counter() - began)
                errors[i] += not ok

    pool = [threading.Thread(target=client, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    cpu = cpu_seconds(server)
    start.wait()
    began = time.perf_counter()
    for t in pool:
        t.join()
    elapsed = time.perf_counter() - began
    cpu = cpu_seconds(server) - cpu
    ms = np.concatenate([np.asarray(x) for x in latencies]) * 1000
    return {
        "requests": int(ms.size),
        "requests_per_s": ms.size / elapsed,
        "p50_ms": float(np.percentile(ms, 50)),
        "p90_ms": float(np.percentile(ms, 90)),
        "p99_ms": float(np.percentile(ms, 99)),
        "errors": int(sum(errors)),
        "server_cores": cpu / elapsed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--groups", type=int, default=1024)
    parser.add_argument("--workers", type=int, default=10)
    parser.add_argument("--hot", type=int, default=50)
    parser.add_argument("--out", default="bench/results/api.json")
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        size = publish_table(Path(tmp), ns.groups, ns.workers, ns.hot)
        port = free_port()
        server = start_server(Path(tmp), port)
        try:
            url = f"http://127.0.0.1:{port}/streams/{STREAM}/latest"
            began = time.perf_counter()
            first = httpx.get(url)  # parses, schema-checks and verifies the stored file
            cold_ms = (time.perf_counter() - began) * 1000
            etag = first.headers["etag"]
            cases = [
                ("200 full document", {}, 200),
                ("304 If-None-Match", {"If-None-Match": etag}, 304),
            ]
            print(
                f"table: {ns.groups} key groups, {ns.workers} workers, {ns.hot} hot keys, "
                f"{size:,} bytes stored, {len(first.content):,} bytes served; "
                f"first (uncached) GET {cold_ms:.1f} ms"
            )
            print(f"{ns.threads} threads, {ns.seconds:g} s per case")
            print(
                f"{'case':<20} {'requests':>9} {'req/s':>8} {'p50 ms':>7} {'p90 ms':>7} "
                f"{'p99 ms':>7} {'errors':>6} {'server CPU':>10}"
            )
            rows = []
            for name, headers, expect in cases:
                stats = load(url, headers, ns.threads, ns.seconds, expect, server.pid)
                row = {"case": name, **stats}
                rows.append(row)
                print(
                    f"{name:<20} {row['requests']:>9,} {row['requests_per_s']:>8,.0f} "
                    f"{row['p50_ms']:>7.2f} {row['p90_ms']:>7.2f} {row['p99_ms']:>7.2f} "
                    f"{row['errors']:>6} {row['server_cores']:>9.2f}c"
                )
        finally:
            server.terminate()
            server.wait(timeout=10)
    result = {
        "threads": ns.threads,
        "seconds": ns.seconds,
        "stored_bytes": size,
        "served_bytes": len(first.content),
        "first_get_ms": cold_ms,
        "cases": rows,
    }
    out = Path(ns.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"written {out}")


if __name__ == "__main__":
    main()
