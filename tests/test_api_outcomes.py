"""The HTTP API's answers about what versions did (``/streams/{stream}/outcomes``: the outcomes
reports) and its dry runs (plan a stream by its policy, publish nothing)."""

from __future__ import annotations

import json
import logging

from api_server import error, get_json, key_table, outcome_row, running

from routeplan.model.workers import Workers
from routeplan.publishing.store import RoutingStore


def test_outcomes_serve_the_reports_of_one_stream(tmp_path, caplog):
    routing, reports = tmp_path / "routing", tmp_path / "reports"
    store = RoutingStore(routing)
    store.publish(key_table("clicks"))
    store.publish(key_table("quiet"))
    for day, verdict in (("2026-11-20", "as_predicted"), ("2026-11-21", "regressed")):
        (reports / day).mkdir(parents=True)
        report = {
            "stage": "outcomes",
            "run_id": f"scheduled__{day}",
            "interval_start": day,
            "outcomes": [
                outcome_row("clicks", day, 1, verdict),
                outcome_row("other", day, 2, verdict),
            ],
            "guard": [
                {
                    "stream": "clicks",
                    "version": 1,
                    "action": "hold" if verdict == "regressed" else None,
                    "restore_version": None,
                    "reason": f"v1: {verdict}",
                    "published_version": None,
                }
            ],
        }
        (reports / day / "outcomes.json").write_text(json.dumps(report))
    (reports / "2026-11-22").mkdir()
    (reports / "2026-11-22" / "outcomes.json").write_text("not json")
    (reports / "notes").mkdir()
    with running(routing, reports_root=reports) as client:
        with caplog.at_level(logging.WARNING, logger="routeplan.api.app"):
            records = get_json(client, "/streams/clicks/outcomes", "plan_outcomes")
        assert [(r["interval_start"], r["verdict"]) for r in records] == [
            ("2026-11-20", "as_predicted"),
            ("2026-11-21", "regressed"),
        ]
        assert records[1]["guard"] == {
            "action": "hold",
            "restore_version": None,
            "hold": None,  # a report of an earlier release: the guard's entry in outcomes.json
            "reason": "v1: regressed",
            "published_version": None,
        }
        assert records[1]["realized"] == 0.4 and records[1]["run_id"] == "scheduled__2026-11-21"
        assert "2026-11-22/outcomes.json: not JSON" in caplog.text  # logged, not an error
        one = get_json(client, "/streams/clicks/outcomes?days=1", "plan_outcomes")
        assert [r["interval_start"] for r in one] == ["2026-11-21"]
        assert get_json(client, "/streams/quiet/outcomes", "plan_outcomes") == []
        assert "no routing tables for stream 'nosuch'" in error(
            client, "/streams/nosuch/outcomes", 404
        )
        assert "no such stream" in error(client, "/streams/.hidden/outcomes", 404)
        assert client.get("/streams/clicks/outcomes?days=0").status_code == 422
    with running(routing, reports_root=tmp_path / "none") as client:
        assert get_json(client, "/streams/clicks/outcomes", "plan_outcomes") == []


def inputs_body(stream: str, workers: int = 3) -> dict:
    from conftest import zipf_snapshot

    from routeplan.streams.inputs import StreamInputs, inputs_document

    loads = zipf_snapshot(stream, keys=2_000, messages=50_000, num_key_groups=64)
    return inputs_document(StreamInputs(stream, loads, Workers.homogeneous(workers)))


def test_a_dry_run_plans_by_the_policy_and_publishes_nothing(tmp_path):
    routing, policies = tmp_path / "routing", tmp_path / "streams.yaml"
    policies.write_text("defaults: {strategy: cg}\nstreams:\n  clicks: {strategy: kg}\n")
    store = RoutingStore(routing)
    store.publish(key_table("clicks"))
    with running(routing, policies_file=policies, max_bytes=2**20) as client:
        resp = client.post("/streams/clicks/plan", json=inputs_body("clicks"))
        assert resp.status_code == 200, resp.text
        decided = resp.json()
        assert (decided["stream"], decided["policy"], decided["strategy"]) == ("clicks", "kg", "kg")
        assert decided["current_version"] == 1 and decided["published"] is False
        assert decided["baseline"] == "kg"
        assert sum(c["selected"] for c in decided["candidates"]) == 1
        assert store.versions("clicks") == [1]  # nothing published

        # a stream the file does not list gets the defaults, as at night; no LATEST is no error
        fresh = client.post("/streams/fresh/plan", json=inputs_body("fresh"))
        assert fresh.status_code == 200, fresh.text
        assert fresh.json()["policy"] == "cg" and fresh.json()["current_version"] is None
        assert any("not listed in the policies file" in n for n in fresh.json()["notes"])
        assert store.streams() == ["clicks"]

        def refused(url: str, status: int, **kw) -> str:
            resp = client.post(url, **kw)
            assert resp.status_code == status, resp.text
            return resp.json()["detail"]

        assert "request body: not JSON" in refused("/streams/clicks/plan", 400, content=b"{x")
        deep = b"[" * 100 + b"]" * 100
        assert "nested deeper" in refused("/streams/clicks/plan", 400, content=deep)
        assert "not a stream's planning inputs" in refused(
            "/streams/clicks/plan", 422, json={"stream": "clicks"}
        )
        assert "inputs of stream 'views'" in refused(
            "/streams/clicks/plan", 422, json=inputs_body("views")
        )
        assert "larger than 1048576 bytes" in refused(
            "/streams/clicks/plan", 413, content=b" " * (2**20 + 1)
        )
        assert "no such stream" in refused("/streams/.hidden/plan", 404, json={})
    policies.write_text("streams:\n  clicks: {strategy: nosuch}\n")
    with running(routing, policies_file=policies) as client:
        resp = client.post("/streams/clicks/plan", json=inputs_body("clicks"))
        assert resp.status_code == 500 and "policies are broken" in resp.json()["detail"]
        assert str(tmp_path) not in resp.text  # the server's path is not told
