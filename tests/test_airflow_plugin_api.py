"""routeplan's HTTP API mounted as an Airflow plugin (plugins/routeplan_plugin.py) inside
Airflow's real API-server app (``airflow.api_fastapi.app``): the plugin is listed, its routes
answer under ``/routeplan`` from the store ``routeplan.settings.routing_root()`` names, closed by
default (an Airflow login who may read routeplan's DAGs, or ``$ROUTEPLAN_API_TOKEN``), open with
``ROUTEPLAN_API_AUTH=none``; the OpenAPI page is public and served without internet.

(Triggering the DAG over Airflow's own REST API is tests/test_airflow_trigger.py.)

Airflow reads its configuration when it is first imported, so each probe runs in a child
Python (this file, ``python tests/test_airflow_plugin_api.py OUT``) with the Makefile's Airflow
settings (``airflow_server.airflow_env``) and its own routing store: it builds the app ``airflow
api-server`` runs, enters its lifespan and sends requests with Starlette's TestClient. The probes
share one AIRFLOW_HOME whose database is migrated once (a few seconds): token validation looks up
revoked tokens there.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

import pytest
from airflow_server import airflow_env, run_checked
from api_server import key_table

from routeplan.publishing.store import RoutingStore

pytestmark = pytest.mark.airflow


def probe() -> dict:
    """In the child: the plugin as Airflow lists it and the answers of the mounted app."""
    warnings.simplefilter("ignore")  # the TestClient's httpx deprecation notice
    from airflow.api_fastapi.app import create_app
    from airflow.plugins_manager import get_plugin_info
    from fastapi.testclient import TestClient

    home = Path(os.environ["AIRFLOW_HOME"])
    results: dict = {"plugins": get_plugin_info(["fastapi_apps", "source"])}
    with TestClient(create_app()) as client:

        def answer(path: str, headers: dict[str, str] | None = None) -> dict:
            resp = client.get(path, headers=headers)
            is_json = resp.headers.get("content-type") == "application/json"
            return {
                "status": resp.status_code,
                "headers": dict(resp.headers),
                "json": resp.json() if is_json else None,
                "text": None if is_json else resp.text[:20000],
                "size": len(resp.content),
            }

        results["streams"] = answer("/routeplan/streams")
        latest = results["latest"] = answer("/routeplan/streams/clicks/latest")
        etag = latest["headers"].get("etag", '"none"')
        results["latest_304"] = answer("/routeplan/streams/clicks/latest", {"If-None-Match": etag})
        results["openapi"] = answer("/routeplan/openapi.json")
        results["airflow_dags"] = answer("/api/v2/dags")
        password = json.loads((home / "simple_auth_manager_passwords.json.generated").read_text())
        token = client.post(
            "/auth/token", json={"username": "admin", "password": password["admin"]}
        )
        bearer = f"Bearer {token.json()['access_token']}"
        results["streams_with_token"] = answer("/routeplan/streams", {"Authorization": bearer})
        results["streams_bad_token"] = answer(
            "/routeplan/streams", {"Authorization": "Bearer not-a-jwt"}
        )
        service = {"Authorization": f"Bearer {os.environ.get('ROUTEPLAN_API_TOKEN', '-')}"}
        results["streams_service_token"] = answer("/routeplan/streams", service)
        results["metrics_service_token"] = answer("/routeplan/metrics", service)
        results["docs"] = answer("/routeplan/docs")
        results["docs_css"] = answer("/routeplan/docs/assets/swagger-ui.css")
    return results


@pytest.fixture(scope="module")
def airflow_home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("airflow")
    run_checked(["airflow", "db", "migrate"], airflow_env(home), home)
    return home


def run_probe(airflow_home: Path, tmp_path: Path, **env: str) -> dict:
    """Publish a table where the plugin should look (``$ROUTEPLAN_HOME`` is ``tmp_path``), run
    ``probe()`` in a child Python with ``env``; its results."""
    routing = Path(env.get("ROUTEPLAN_ROUTING", tmp_path / "routing"))
    RoutingStore(routing).publish(key_table("clicks"))
    out = tmp_path / "probe.json"
    child_env = airflow_env(airflow_home, tmp_path, **env)
    run_checked([sys.executable, __file__, str(out)], child_env, tmp_path)
    return json.loads(out.read_text())


def test_the_plugin_mounts_the_api_open_only_with_routeplan_api_auth_none(airflow_home, tmp_path):
    results = run_probe(airflow_home, tmp_path, ROUTEPLAN_API_AUTH="none")  # $HOME/routing

    (plugin,) = [p for p in results["plugins"] if p["name"] == "routeplan"]
    assert plugin["source"] == "$PLUGINS_FOLDER/routeplan_plugin.py"
    assert plugin["fastapi_apps"] == [
        {
            "app": "fastapi.applications.FastAPI",
            "url_prefix": "/routeplan",
            "name": "routeplan routing tables",
        }
    ]
    streams = results["streams"]
    assert streams["status"] == 200
    assert streams["json"] == {
        "streams": [{"stream": "clicks", "latest_version": 1, "versions": [1]}]
    }
    stored = json.loads(RoutingStore(tmp_path / "routing").path("clicks", 1).read_text())
    latest = results["latest"]
    assert (latest["status"], latest["json"]) == (200, stored)
    assert latest["headers"]["etag"] == f'"{stored["checksum"]}"'
    assert results["latest_304"]["status"] == 304
    assert results["latest_304"]["size"] == 0
    assert results["latest_304"]["headers"]["etag"] == latest["headers"]["etag"]
    assert results["openapi"]["json"]["info"]["title"] == "routeplan routing tables"
    # Airflow's own API wants a token; the mounted app, opened on purpose, answers without one
    assert results["airflow_dags"]["status"] == 401


def test_by_default_every_route_needs_an_airflow_login_or_the_api_token(airflow_home, tmp_path):
    results = run_probe(
        airflow_home,
        tmp_path,
        ROUTEPLAN_ROUTING=str(tmp_path / "elsewhere"),
        ROUTEPLAN_API_TOKEN="routeplan-scrape-token",
    )

    assert results["streams"]["status"] == 401
    assert results["latest"]["status"] == 401
    assert "etag" not in results["latest"]["headers"]
    assert results["streams_bad_token"]["status"] == 403  # not a valid Airflow JWT
    assert results["openapi"]["status"] == 200  # the description stays public
    assert results["streams_with_token"]["status"] == 200  # an Airflow login (admin)
    # the store is $ROUTEPLAN_ROUTING, not $ROUTEPLAN_HOME/routing
    assert results["streams_with_token"]["json"] == {
        "streams": [{"stream": "clicks", "latest_version": 1, "versions": [1]}]
    }
    assert not (tmp_path / "routing").exists()
    # the routeplan token (Prometheus, producers) instead of an Airflow login
    assert results["streams_service_token"]["status"] == 200
    metrics = results["metrics_service_token"]
    assert metrics["status"] == 200
    assert 'routeplan_stream_latest_version{stream="clicks"} 1.0' in metrics["text"]
    # the OpenAPI page: public, every asset from /routeplan/docs/assets (no CDN)
    docs = results["docs"]
    assert docs["status"] == 200
    assert "/routeplan/docs/assets/swagger-ui-bundle.js" in docs["text"]
    assert "/routeplan/openapi.json" in docs["text"]
    assert "http" not in docs["text"].replace("http-equiv", "")
    assert results["docs_css"]["status"] == 200 and results["docs_css"]["size"] > 10_000


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(json.dumps(probe(), default=str))
