"""Closed by default (``routeplan.api.auth``), offline docs (``routeplan.api.offline_docs``),
Prometheus metrics (``routeplan.api.prometheus``) and the client's token, through FastAPI's
TestClient (and, for the client, a real server) over a store built in a tmp dir."""

from __future__ import annotations

import re

import pytest
from api_server import running
from fastapi import Depends
from prometheus_client.parser import text_string_to_metric_families
from test_api_views import client_for, sample_home

from routeplan import settings
from routeplan.api.auth import require_token, serve_dependencies
from routeplan.cli.main import main
from routeplan.errors import UsageError
from routeplan_client import Assignment, Router

TOKEN = "test-token-0123"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def home(tmp_path):
    return sample_home(tmp_path)


@pytest.fixture
def env(monkeypatch):
    for name in list(settings.Settings.model_fields):
        monkeypatch.delenv(settings.Settings.variable(name), raising=False)
    return monkeypatch


def test_serve_is_closed_unless_a_token_is_set_or_anonymous_reading_allowed(env, capsys):
    with pytest.raises(UsageError, match="ROUTEPLAN_API_TOKEN .* --allow-anonymous-read"):
        serve_dependencies()
    assert serve_dependencies(allow_anonymous_read=True) == []
    assert main(["serve", "--routing", "/nonexistent"]) == 2  # before anything listens
    assert "the API is closed by default" in capsys.readouterr().err
    env.setenv("ROUTEPLAN_API_TOKEN", TOKEN)
    (dependency,) = serve_dependencies(allow_anonymous_read=True)  # the token wins
    assert dependency.dependency is not None
    with pytest.raises(ValueError, match="empty"):
        require_token("")


def test_with_a_token_every_data_route_is_401_without_it_and_the_docs_stay_public(home):
    client = client_for(home, dependencies=[Depends(require_token(TOKEN))])
    data = [
        "/healthz",
        "/streams",
        "/streams/clicks/latest",
        "/streams/clicks/versions/2/explain",
        "/streams/clicks/overview",
        "/streams/clicks/plot.png",
        "/metrics",
    ]
    for path in data:
        resp = client.get(path)
        assert resp.status_code == 401, path
        assert resp.headers["www-authenticate"] == "Bearer"
        assert "clicks" not in resp.text
        wrong = client.get(path, headers={"Authorization": "Bearer nope"})
        assert (wrong.status_code, wrong.json()["detail"]) == (401, "wrong bearer token")
        assert client.get(path, headers=BEARER).status_code == 200, path
    assert client.post("/streams/clicks/plan", content=b"{}").status_code == 401
    for public in ("/docs", "/openapi.json", "/docs/assets/swagger-ui.css"):
        assert client.get(public).status_code == 200, public


def test_docs_load_every_asset_from_the_api_itself(home):
    client = client_for(home, dependencies=[Depends(require_token(TOKEN))])
    page = client.get("/docs").text
    urls = re.findall(r"""(?:src|href|url)\s*[:=]\s*["']([^"']+)["']""", page)
    assert sorted(urls) == [
        "/docs/assets/favicon.png",
        "/docs/assets/swagger-ui-bundle.js",
        "/docs/assets/swagger-ui.css",
        "/openapi.json",
    ]
    assert "//" not in page.replace("window.location.origin", "")  # no host named at all
    assert '"validatorUrl": null' in page  # no badge fetched from validator.swagger.io
    for url in urls[:3]:
        resp = client.get(url)
        assert resp.status_code == 200 and len(resp.content) > 1000, url
    assert client.get("/docs/assets/core.py").status_code == 404  # only the listed files
    assert client.get("/docs/assets/..%2Fcore.py").status_code == 404
    assert client.get("/redoc").status_code == 404  # FastAPI's CDN page is gone
    behind = client_for(home, root_path="/routeplan").get("/docs").text
    assert "/routeplan/docs/assets/swagger-ui-bundle.js" in behind
    assert "/routeplan/openapi.json" in behind


def test_metrics_parse_and_say_each_streams_state_and_the_requests_by_class(home):
    client = client_for(home)
    for path in ("/streams/clicks/latest", "/streams/orders/latest", "/streams/nope/latest"):
        client.get(path)
    view = client.get("/streams/clicks/overview").json()
    resp = client.get("/metrics")
    assert resp.headers["content-type"].startswith("text/plain; version=")
    families = {f.name: f for f in text_string_to_metric_families(resp.text)}

    def value(name: str, **labels: str) -> float:
        samples = families[name].samples
        (found,) = [
            s.value for s in samples if s.name in (name, f"{name}_total") and s.labels == labels
        ]
        return found

    assert value("routeplan_stream_latest_version", stream="clicks") == 2
    assert value("routeplan_stream_predicted_imbalance", stream="clicks") == pytest.approx(
        view["predicted_imbalance"]
    )
    assert value("routeplan_stream_observed_imbalance", stream="clicks") == 0.75
    assert value("routeplan_stream_realized_imbalance", stream="clicks") == 0.4
    assert value("routeplan_stream_verdict", stream="clicks", verdict="regressed") == 1
    assert value("routeplan_stream_verdict", stream="clicks", verdict="improved") == 0
    assert value("routeplan_stream_regressed", stream="clicks") == 1
    assert value("routeplan_stream_held", stream="orders") == 1
    assert value("routeplan_stream_held", stream="clicks") == 0
    assert value("routeplan_stream_published_timestamp_seconds", stream="orders") > 1.7e9
    assert not [
        s
        for s in families["routeplan_stream_realized_imbalance"].samples
        if s.labels["stream"] == "orders"
    ]  # no outcome yet: left out, not 0
    assert value("routeplan_streams") == 2 and value("routeplan_stream_errors") == 0
    latest = "/streams/{stream}/latest"
    requests = "routeplan_api_requests"  # the parser drops the counter's _total
    assert value(requests, route=latest, method="GET", status="200") == 2
    assert value(requests, route=latest, method="GET", status="404") == 1
    durations = families["routeplan_api_request_duration_seconds"]
    counts = [s for s in durations.samples if s.name.endswith("_count")]
    assert {s.labels["route"] for s in counts} >= {latest, "/streams/{stream}/overview"}
    assert "/streams/clicks/latest" not in resp.text  # classes, never raw paths


def test_a_producer_reads_a_closed_api_with_its_token(home):
    with running(home / "routing", dependencies=[Depends(require_token(TOKEN))]) as api:
        base = str(api.base_url)
        with Router.open(base, "clicks", token=TOKEN) as router:
            assert router.version == 2 and router.route("any") in ("w0", "w1")
        with Assignment.open(base, "orders", token=TOKEN) as assignment:
            assert assignment.consumer(1) == "c1"
        with pytest.raises(PermissionError, match="HTTP 401.*pass token=.*needs one"):
            Router.open(base, "clicks")
        with pytest.raises(PermissionError, match="HTTP 401.*was refused"):
            Router.open(base, "clicks", token="wrong")
        with pytest.raises(ValueError, match="token is empty"):
            Router.open(base, "clicks", token=" ")
