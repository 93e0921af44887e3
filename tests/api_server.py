"""What the HTTP API's tests share: a small key-routing table, the API in a real uvicorn server
on a free port (httpx as the client), JSON and error reads, an outcome row of a report."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import uvicorn

from routeplan.api.app import create_app
from routeplan.contracts.schemas import validate_document
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers

WORKERS = Workers.homogeneous(3)
GROUPS = 16


def key_table(stream: str, moved: int = 0) -> RoutingTable:
    """16 key groups round-robin on w0..w2 and a split hot key; ``moved`` groups shifted by one,
    planned on loads 1..16 so that a diff can weigh its moves."""
    owners = [f"w{(g + (g < moved)) % 3}" for g in range(GROUPS)]
    return RoutingTable(
        stream,
        "kg",
        WORKERS,
        tuple(owners),
        hot_keys={"hot": (("w0", 0.25), ("w1", 0.75))},
        planning_load={"key_group_load": list(range(1, GROUPS + 1)), "hot_key_load": {"hot": 5}},
    )


@contextlib.contextmanager
def running(root: Path, **options) -> Iterator[httpx.Client]:
    """``create_app(root, **options)`` in a uvicorn server on a free port; a client to it."""
    app = create_app(root, **options)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive(), "uvicorn exited during start-up"
        assert time.monotonic() < deadline, "uvicorn did not start within 20 s"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            yield client
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    assert not thread.is_alive(), "uvicorn did not shut down"


def get_json(api: httpx.Client, url: str, schema: str, **kw) -> dict:
    """GET ``url``, expect 200 and validate the JSON body against ``schema``."""
    resp = api.get(url, **kw)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == "application/json"
    body = resp.json()
    validate_document(schema, body, where=f"GET {url}")
    return body


def error(api: httpx.Client, url: str, status: int) -> str:
    """GET ``url``, expect the error ``status``; its ``detail`` text."""
    resp = api.get(url)
    assert resp.status_code == status, resp.text
    detail = resp.json()["detail"]
    assert isinstance(detail, str)
    return detail


def outcome_row(
    stream: str,
    day: str,
    version: int,
    verdict: str,
    realized: float = 0.4,
    *,
    realized_day: float = 0.35,
    attribution: str = "event_version",
    messages: float = 500.0,
) -> dict:
    """A row of an outcomes report: ``version`` of ``stream`` on ``day``, predicted 0.1, the day
    before 0.2, ``realized`` in the planning window and ``realized_day`` over the day."""
    from routeplan.streams.outcomes import Outcome

    return Outcome(
        stream=stream,
        version=version,
        interval_start=day,
        kind="key_routing",
        attribution=attribution,
        measure="imbalance",
        predicted=0.1,
        realized=realized,
        previous_realized=0.2,
        error=realized - 0.1,
        verdict=verdict,
        realized_day=realized_day,
        previous_realized_day=0.2,
        predicted_imbalance=0.1,
        realized_imbalance=realized,
        previous_realized_imbalance=0.2,
        realized_imbalance_day=realized_day,
        messages=messages,
    ).to_row()
