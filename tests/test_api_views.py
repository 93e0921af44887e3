"""The API's views beyond the documents (``routeplan.api.routing_views``): a version's
explanation and a stream's overview, through FastAPI's TestClient over a store and reports
built in a tmp dir. ``sample_home`` is that home; the UI, metrics and auth tests use it too."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from api_server import outcome_row

from routeplan.contracts.schemas import validate_document
from routeplan.model.table import PartitionAssignment, RoutingTable
from routeplan.model.workers import Workers
from routeplan.publishing.store import RoutingStore

with warnings.catch_warnings():  # the TestClient's httpx deprecation notice
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from routeplan.api.app import create_app

DAY = "2026-11-20"
KEY_LOADS = {"key_group_load": [4.0, 1.0, 1.0, 2.0], "hot_key_load": {}}


def clicks(owners: list[str]) -> RoutingTable:
    return RoutingTable(
        "clicks",
        "cg",
        Workers.homogeneous(2),
        tuple(owners),
        planning_load=KEY_LOADS,
        predicted={"imbalance": 0.05, "moves": 2.0},
    )


def orders(assign: dict[int, str]) -> PartitionAssignment:
    return PartitionAssignment(
        "orders",
        "mwf",
        Workers.homogeneous(2, prefix="c"),
        assign,
        params={"bin_capacity": 4.0},
        planning_load={"partition_load": [3.0, 2.0, 1.0]},
        predicted={"imbalance": 0.2, "consumers": 2.0},
    )


def sample_home(home: Path) -> Path:
    """``home/routing``: clicks v1 → v2 (two key groups move off an overloaded w0), orders v1 →
    v2 (a partition moves off c0, over C) and held; ``home/reports/<DAY>``: both v2 published
    that night, clicks' plan with a budget and two candidates, clicks' v1 regressed."""
    store = RoutingStore(home / "routing")
    store.publish(clicks(["w0", "w0", "w1", "w0"]), reason="first")
    store.publish(clicks(["w0", "w1", "w1", "w1"]), reason="cg plan: 2 moves against v1")
    store.publish(orders({0: "c0", 1: "c0", 2: "c1"}), reason="first")
    store.publish(orders({0: "c0", 1: "c1", 2: "c1"}), reason="mwf plan: 1 move against v1")
    store.hold("orders", "held by hand")
    day = home / "reports" / DAY
    day.mkdir(parents=True)
    published = [
        {"stream": s, "action": "published", "version": 2, "reason": "r"}
        for s in ("clicks", "orders")
    ]
    (day / "publish.json").write_text(json.dumps({"run_id": "run-1", "streams": published}))
    plan = {
        "clicks": {
            "strategy": "cg",
            "choice": "the stream's policy names it",
            "budget": {"max_moves": 10},
            "migration_cost_unit": "moves",
            "observed_imbalance": 0.75,
            "predicted_imbalance": 0.05,
            "candidates": [
                {
                    "strategy": "cg",
                    "selected": True,
                    "choice": "policy",
                    "moves": 2,
                    "predicted": {"imbalance": 0.05},
                },
                {
                    "strategy": "kg",
                    "selected": False,
                    "choice": "baseline",
                    "moves": 0,
                    "predicted": {"imbalance": 0.75},
                },
            ],
        }
    }
    (day / "plan.json").write_text(json.dumps({"run_id": "run-1", "streams": plan}))
    outcomes = {"run_id": "run-1", "outcomes": [outcome_row("clicks", DAY, 1, "regressed")]}
    (day / "outcomes.json").write_text(json.dumps(outcomes))
    return home


@pytest.fixture
def home(tmp_path) -> Path:
    return sample_home(tmp_path)


def client_for(home: Path, root_path: str = "", **options) -> TestClient:
    """A TestClient of ``create_app`` over ``home`` (mounted at ``root_path``, as Airflow does)."""
    options.setdefault("reports_root", home / "reports")
    return TestClient(create_app(home / "routing", **options), root_path=root_path)


def test_explain_is_the_versions_moves_budget_and_objective(home):
    client = client_for(home)
    resp = client.get("/streams/clicks/versions/2/explain")
    assert resp.status_code == 200
    explained = resp.json()
    validate_document("routing_explain", explained)
    assert [(m["unit"], m["relieved"]) for m in explained["moves"]] == [
        ("key_group:3", ["w0"]),
        ("key_group:1", ["w0"]),
    ]
    assert explained["publication"]["run_id"] == "run-1"
    assert explained["budget"]["limits"] == {"max_moves": 10}
    assert explained["budget"]["within"] == {"max_moves": True}
    parts = client.get("/streams/orders/versions/2/explain").json()
    validate_document("routing_explain", parts)
    assert [(m["unit"], m["relieved"]) for m in parts["moves"]] == [("partition:1", ["c0"])]
    assert parts["reference"] == "bin capacity C"


def test_explain_of_what_does_not_exist_is_404_and_a_pruned_parent_a_note(home):
    client = client_for(home)
    assert "no routing table v7" in client.get("/streams/clicks/versions/7/explain").text
    assert client.get("/streams/nope/versions/1/explain").status_code == 404
    assert client.get("/streams/clicks/versions/0/explain").status_code == 422
    assert client.get("/streams/clicks/versions/02/explain").status_code == 422  # one spelling
    assert client.get("/ui/streams/clicks/versions/2.0").status_code == 422
    (home / "routing" / "clicks" / "v1.json").unlink()
    explained = client.get("/streams/clicks/versions/2/explain").json()
    assert explained["note"] == "v1 is no longer stored: its moves cannot be listed"


def test_overview_joins_latest_its_plan_the_last_outcome_and_a_hold(home):
    client = client_for(home)
    view = client.get("/streams/clicks/overview").json()
    validate_document("routing_overview", view)
    assert (view["latest_version"], view["published_by"], view["published_day"]) == (2, "plan", DAY)
    assert (view["observed_imbalance"], view["predicted_imbalance"]) == (0.75, 0.05)
    assert view["outcome"]["verdict"] == "regressed" and view["regressed"]
    assert view["outcome"]["realized_imbalance"] == 0.4 and not view["held"]
    held = client.get("/streams/orders/overview").json()
    validate_document("routing_overview", held)
    assert held["held"] and held["outcome"] is None and not held["regressed"]
    assert (held["hold_reason"], held["held_by"]) == ("held by hand", "person")
    assert client.get("/streams/nope/overview").status_code == 404
