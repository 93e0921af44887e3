"""The routing-table HTTP API through a real uvicorn server on 127.0.0.1 (httpx as the client)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from airflow_server import free_port
from api_server import GROUPS, WORKERS, error, get_json, key_table, running
from conftest import stream_names
from hypothesis import HealthCheck, given, settings

from routeplan.api.app import etag_matches
from routeplan.contracts.schemas import load_schema, validate_document
from routeplan.model.names import is_valid_name
from routeplan.model.table import PartitionAssignment, RoutingTable, checksum, table_from_document
from routeplan.publishing.diff import diff_tables
from routeplan.publishing.store import RoutingStore


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("api") / "routing"


@pytest.fixture(scope="module")
def api(root) -> Iterator[httpx.Client]:
    with running(root) as client:
        yield client


def test_streams_and_versions_are_listed(api, root):
    store = RoutingStore(root)
    store.publish(key_table("listed"))
    store.publish(key_table("listed", moved=2))
    store.publish(key_table("listed_too"))

    streams = get_json(api, "/streams", "routing_streams")["streams"]
    by_name = {s["stream"]: s for s in streams}
    assert [s["stream"] for s in streams] == sorted(by_name)
    assert by_name["listed"] == {"stream": "listed", "latest_version": 2, "versions": [1, 2]}
    assert by_name["listed_too"] == {"stream": "listed_too", "latest_version": 1, "versions": [1]}
    one = get_json(api, "/streams/listed/versions", "routing_versions")
    assert one == by_name["listed"]


def test_latest_is_the_stored_document_with_its_checksum_as_etag(api, root):
    published = RoutingStore(root).publish(key_table("clicks"))
    stored = json.loads((root / "clicks" / "v1.json").read_text())

    resp = api.get("/streams/clicks/latest")
    assert resp.status_code == 200
    assert resp.json() == stored
    validate_document("routing_table", resp.json(), where="GET latest")
    assert RoutingTable.from_document(resp.json()).same_routing(published)  # checksum intact
    assert resp.headers["etag"] == f'"{stored["checksum"]}"'
    assert resp.headers["cache-control"] == "no-cache"


def test_if_none_match_answers_304_until_a_new_version_is_published(api, root):
    store = RoutingStore(root)
    store.publish(key_table("orders"))
    first = api.get("/streams/orders/latest")
    etag = first.headers["etag"]

    for header in (etag, f"W/{etag}", f'"sha256:{"0" * 64}", {etag}', "*"):
        resp = api.get("/streams/orders/latest", headers={"If-None-Match": header})
        assert resp.status_code == 304, header
        assert resp.content == b""
        assert resp.headers["etag"] == etag
    stale = api.get("/streams/orders/latest", headers={"If-None-Match": '"sha256:00"'})
    assert stale.status_code == 200

    store.publish(key_table("orders", moved=3))
    resp = api.get("/streams/orders/latest", headers={"If-None-Match": etag})
    assert resp.status_code == 200
    assert resp.json()["version"] == 2
    assert resp.json()["parent_version"] == 1
    assert resp.headers["etag"] == f'"{resp.json()["checksum"]}"' != etag
    again = api.get("/streams/orders/latest", headers={"If-None-Match": resp.headers["etag"]})
    assert again.status_code == 304

    pinned = api.get("/streams/orders/versions/1", headers={"If-None-Match": etag})
    assert pinned.status_code == 304
    assert pinned.headers["cache-control"] == "public, max-age=31536000, immutable"


def test_a_pinned_version_is_served_after_latest_moved(api, root):
    store = RoutingStore(root)
    v1 = store.publish(key_table("pinned"))
    store.publish(key_table("pinned", moved=5))

    resp = api.get("/streams/pinned/versions/1")
    assert resp.status_code == 200
    assert resp.json() == v1.to_document()
    assert resp.headers["etag"] == f'"{v1.to_document()["checksum"]}"'
    assert resp.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert api.get("/streams/pinned/latest").json()["version"] == 2


def test_unknown_streams_and_versions_are_404_with_what_exists(api, root):
    store = RoutingStore(root)
    for moved in range(5):
        store.publish(key_table("five", moved))

    assert error(api, "/streams/five/versions/7", 404) == (
        "no routing table v7 for stream 'five' (versions 1–5)"
    )
    (root / "five" / "v2.json").unlink()  # e.g. pruned
    detail = error(api, "/streams/five/versions/2", 404)
    assert detail == "no routing table v2 for stream 'five' (versions 1, 3–5)"
    assert "five" in error(api, "/streams/nope/latest", 404)
    assert "no routing tables for stream 'nope'" in error(api, "/streams/nope/versions", 404)
    assert "stream 'nope'" in error(api, "/streams/nope/versions/1", 404)
    assert "stream 'nope'" in error(api, "/streams/nope/diff?from_version=1", 404)
    assert "v9" in error(api, "/streams/five/diff?from_version=9", 404)


def test_a_stream_name_cannot_leave_the_root(api, root):
    # a valid table right above the root: ".." must not reach it
    RoutingStore(root).publish(key_table("inside"))
    shutil.copy(RoutingStore(root).path("inside", 1), root.parent / "v1.json")
    (root.parent / "LATEST").write_text("v1.json\n")
    for url in ("/streams/%2E%2E/latest", "/streams/%2E%2E/versions/1", "/streams/../latest"):
        resp = api.get(url)
        assert resp.status_code == 404, (url, resp.text)


def test_bad_parameters_are_422(api, root):
    RoutingStore(root).publish(key_table("params"))
    for url in (
        "/streams/params/versions/0",
        "/streams/params/versions/x",
        "/streams/params/diff",
        "/streams/params/diff?from_version=one",
        "/streams/params/diff?from_version=1&to_version=-1",
    ):
        assert api.get(url).status_code == 422, url


@pytest.mark.parametrize(
    "damage, failure",
    [
        (lambda doc: doc.update(key_group_worker=["w2"] * GROUPS), "checksum mismatch"),
        (lambda doc: doc.pop("hash"), "is not a valid routing_table"),
        (lambda doc: doc.update(version=7, checksum=checksum({**doc, "version": 7})), "holds"),
        (None, "Expecting value"),
    ],
    ids=["checksum", "schema", "misplaced", "not-json"],
)
def test_a_corrupt_stored_table_is_500_and_never_served(api, root, damage, failure, request):
    stream = f"damaged_{request.node.callspec.id}"
    RoutingStore(root).publish(key_table(stream))
    assert api.get(f"/streams/{stream}/versions/1").status_code == 200  # now cached
    path = root / stream / "v1.json"
    doc = json.loads(path.read_text())
    if damage:
        damage(doc)
    text = json.dumps(doc) if damage else "truncated"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)  # a new file: the cache must notice

    for url in (f"/streams/{stream}/latest", f"/streams/{stream}/versions/1"):
        resp = api.get(url)
        assert resp.status_code == 500, resp.text
        assert "etag" not in resp.headers
        detail = resp.json()["detail"]
        assert f"{stream}/v1.json" in detail and str(root) not in detail  # never a server path
        assert failure in detail
    assert api.get(f"/streams/{stream}/diff?from_version=1").status_code == 500


def test_a_latest_naming_a_missing_version_is_500(tmp_path):
    RoutingStore(tmp_path).publish(key_table("s"))
    (tmp_path / "s" / "LATEST").write_text("v3.json\n")
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "LATEST").write_text("garbage\n")
    with running(tmp_path) as api:
        assert "names v3, not stored" in error(api, "/streams/s/versions", 500)
        assert "file s/LATEST " in error(api, "/streams/s/versions", 500)
        assert "file t/LATEST " in error(api, "/streams/t/latest", 500)
        assert str(tmp_path) not in error(api, "/streams/t/latest", 500)
        streams = get_json(api, "/streams", "routing_streams")["streams"]
        assert [s.get("error") for s in streams] == [
            "LATEST names v3, not stored (versions 1)",
            "LATEST: does not name a version file: 'garbage'",
        ]


def test_a_small_cache_still_serves_each_version_its_own_document(tmp_path):
    store = RoutingStore(tmp_path)
    docs = [store.publish(key_table("s", moved)).to_document() for moved in range(3)]
    with running(tmp_path, cache_size=1) as api:
        for version in (1, 2, 1, 3, 2, 3, 1):
            resp = api.get(f"/streams/s/versions/{version}")
            assert resp.json() == docs[version - 1]
            assert resp.headers["etag"] == f'"{docs[version - 1]["checksum"]}"'


def test_serve_runs_the_api_on_the_given_host_and_port_closed_by_its_token(tmp_path):
    RoutingStore(tmp_path).publish(key_table("served"))
    port = free_port()
    code = (
        "import sys; from routeplan.api.app import serve; serve(sys.argv[1], port=int(sys.argv[2]))"
    )
    env = {**os.environ, "ROUTEPLAN_API_TOKEN": "serve-token"}
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path), str(port)], env=env)
    url = f"http://127.0.0.1:{port}/streams/served/versions"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, "serve() exited"
            try:
                resp = httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "serve() did not answer within 30 s"
                time.sleep(0.1)
        assert resp.status_code == 401 and resp.headers["www-authenticate"] == "Bearer"
        resp = httpx.get(url, headers={"Authorization": "Bearer serve-token"}, timeout=5)
        assert resp.json() == {"stream": "served", "latest_version": 1, "versions": [1]}
    finally:
        proc.terminate()
        # uvicorn shuts down gracefully, then re-raises the SIGTERM it caught
        assert proc.wait(timeout=10) in (0, -signal.SIGTERM)


def test_diff_is_diff_tables_of_the_two_versions(api, root):
    store = RoutingStore(root)
    v1 = store.publish(key_table("diffed"))
    v2 = store.publish(key_table("diffed", moved=4))
    v3 = store.publish(key_table("diffed", moved=6))

    latest = get_json(api, "/streams/diffed/diff", "routing_diff", params={"from_version": 1})
    assert latest == json.loads(json.dumps(diff_tables(v1, v3)))
    assert (latest["from_version"], latest["to_version"]) == (1, 3)
    assert latest["moved_key_groups"] == 6
    assert latest["load_basis"] == "planning_load of v3"

    url = "/streams/diffed/diff?from_version=1&to_version=2"
    pinned = get_json(api, url, "routing_diff")
    assert pinned == json.loads(json.dumps(diff_tables(v1, v2)))
    assert pinned["moved_key_groups"] == 4
    assert pinned["key_space_share"] == 4 / GROUPS
    assert api.get(url).headers["cache-control"] == "public, max-age=31536000, immutable"


def test_diff_of_tables_that_do_not_compare_is_422(api, root):
    store = RoutingStore(root)
    store.publish(key_table("kinds"))
    partitions = PartitionAssignment("kinds", "ffd", WORKERS, {0: "w1"})
    store.publish(partitions)
    assert "partition_assignment" in error(api, "/streams/kinds/diff?from_version=1", 422)


def test_plot_is_a_png_of_latest_against_its_parent(api, root):
    from routeplan.plots import version_png

    store = RoutingStore(root)
    v1 = store.publish(key_table("plotted"))
    v2 = store.publish(key_table("plotted", moved=4))
    resp = api.get("/streams/plotted/plot.png")
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == "image/png"
    assert resp.content.startswith(b"\x89PNG\r\n\x1a\n")
    assert resp.content == version_png(v2, v1)[0]  # rendered from the published documents
    assert resp.headers["cache-control"] == "no-cache"
    again = api.get("/streams/plotted/plot.png", headers={"If-None-Match": resp.headers["etag"]})
    assert again.status_code == 304 and again.content == b""

    (root / "plotted" / "v1.json").unlink()  # pruned: LATEST alone, another picture and ETag
    alone = api.get("/streams/plotted/plot.png", headers={"If-None-Match": resp.headers["etag"]})
    assert alone.status_code == 200 and alone.headers["etag"] != resp.headers["etag"]
    assert alone.content == version_png(v2, None)[0] != resp.content


def test_plot_of_an_unknown_stream_is_404_and_of_a_table_without_loads_422(api, root):
    assert "no routing tables for stream 'nope'" in error(api, "/streams/nope/plot.png", 404)
    assert "no such stream" in error(api, "/streams/%2E%2E/plot.png", 404)
    store = RoutingStore(root)
    store.publish(PartitionAssignment("no_loads", "ffd", WORKERS, {0: "w1"}))
    assert "records no planning load" in error(api, "/streams/no_loads/plot.png", 422)


def test_both_kinds_and_an_old_partition_document_round_trip(api, root):
    """A key_routing table, a partition_assignment and a partition document of the shape
    published before the kinds had their own: each served as stored, verified, and read by the
    producer's Router or the consumer's Assignment over HTTP."""
    from test_binpack import OLD_PARTITION_DOCUMENT, write_old_partition_document

    from routeplan_client import Assignment, Router

    store = RoutingStore(root)
    keys = store.publish(key_table("both_keys"))
    parts = store.publish(
        PartitionAssignment(
            "both_parts",
            "mwf",
            WORKERS,
            {0: "w1", 1: "w0"},
            planning_load={"partition_load": [2, 1]},
        )
    )
    write_old_partition_document(root)
    base = str(api.base_url)
    for table in (keys, parts):
        doc = get_json(api, f"/streams/{table.stream}/latest", "routing_table")
        assert doc == store.read_document(table.stream)
        again = table_from_document(doc)
        assert type(again) is type(table) and again.same_routing(table)
    old = get_json(api, "/streams/orders/latest", "routing_table")
    assert old == OLD_PARTITION_DOCUMENT  # served as stored, checksum intact
    assert api.get("/streams/orders/versions/1").headers["etag"] == f'"{old["checksum"]}"'
    with Router.open(base, "both_keys") as router:
        assert router.route("hot") in ("w0", "w1")
    with Assignment.open(base, "both_parts") as assignment:
        assert assignment.consumer(0) == "w1" and assignment.partitions("w0") == [1]
    with Assignment.open(base, "orders") as assignment:
        assert assignment.version == 1 and assignment.partitions("w0") == [0, 3, 4]
    with pytest.raises(ValueError, match="Assignment"):
        Router.open(base, "orders")


def test_openapi_documents_every_endpoint_with_its_schema(api):
    spec = api.get("/openapi.json").json()
    assert spec["info"]["title"] == "routeplan routing tables"
    paths = spec["paths"]
    assert set(paths) == {
        "/healthz",
        "/streams",
        "/streams/{stream}/versions",
        "/streams/{stream}/latest",
        "/streams/{stream}/versions/{version}",
        "/streams/{stream}/diff",
        "/streams/{stream}/plot.png",
        "/streams/{stream}/outcomes",
        "/streams/{stream}/plan",
        "/streams/{stream}/overview",
        "/streams/{stream}/versions/{version}/explain",
        "/metrics",
    }
    outcomes = paths["/streams/{stream}/outcomes"]["get"]["responses"]
    schema = outcomes["200"]["content"]["application/json"]["schema"]
    assert schema["type"] == "array" and "$ref" not in json.dumps(schema)
    plan = paths["/streams/{stream}/plan"]["post"]
    body = plan["requestBody"]["content"]["application/json"]["schema"]
    assert body["title"] == load_schema("stream_inputs")["title"]
    assert set(plan["responses"]) >= {"200", "400", "404", "413", "422"}
    plot = paths["/streams/{stream}/plot.png"]["get"]["responses"]
    assert set(plot["200"]["content"]) == {"image/png"}
    latest = paths["/streams/{stream}/latest"]["get"]["responses"]
    assert set(latest) >= {"200", "304", "404", "500"}
    schema = latest["200"]["content"]["application/json"]["schema"]
    assert schema["title"] == "Routing table (one published version)"
    assert "$ref" not in json.dumps(schema)  # worker.schema.json inlined


@pytest.mark.parametrize(
    "header, matches",
    [
        (None, False),
        ('"sha256:ab"', True),
        ('W/"sha256:ab"', True),
        ('"x", W/"sha256:ab" , "y"', True),
        (" * ", True),
        ('"sha256:abc"', False),
        ("sha256:ab", False),  # unquoted: not an entity tag
        ("", False),
    ],
)
def test_if_none_match_uses_weak_comparison(header, matches):
    assert etag_matches(header, "sha256:ab") is matches


def test_router_follows_the_api_with_etags(api, root, caplog):
    """routeplan_client.Router against this server: an unchanged table costs a 304, a new
    version is swapped in, a corrupt one is refused and the last good table keeps routing."""
    from routeplan_client import Router

    store = RoutingStore(root)
    store.publish(key_table("followed"))
    base = str(api.base_url)
    with Router.open(base, "followed", headers={"X-Caller": "test"}) as router:
        assert router.version == 1
        assert router.route("hot") in ("w0", "w1")
        assert router.reload() is False  # 304: nothing fetched, nothing parsed
        store.publish(key_table("followed", moved=4))
        assert router.reload() is True and router.version == 2
        assert list(router.table.key_group_worker) == list(key_table("f", 4).key_group_worker)

        path = store.path("followed", 3)
        doc = key_table("followed").published(3, 2, "2026-11-21T00:00:00+00:00").to_document()
        doc["key_group_worker"][0] = "w2" if doc["key_group_worker"][0] != "w2" else "w1"
        path.write_text(json.dumps(doc))  # a v3 whose checksum no longer matches
        (root / "followed" / "LATEST").write_text("v3.json\n")
        with caplog.at_level("WARNING", logger="routeplan_client.router"):
            assert router.reload() is False
        assert router.version == 2
        assert "keeps serving v2" in caplog.text and "HTTP 500" in caplog.text


# --------------------------------------------------------------------------------------------
# bad input is a 4xx with a short message; one broken stream does not break the others


def no_server_errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        f"{r.name}: {r.getMessage()}"
        for r in caplog.records
        if r.levelno >= logging.ERROR and r.name.startswith(("routeplan", "uvicorn"))
    ]


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=stream_names())
def test_any_stream_name_is_served_not_found_or_refused_never_a_500(api, root, name, caplog):
    RoutingStore(root).publish(key_table("named"))
    quoted = quote(name, safe="")
    caplog.clear()
    for url in (
        f"/streams/{quoted}/latest",
        f"/streams/{quoted}/versions",
        f"/streams/{quoted}/versions/1",
        f"/streams/{quoted}/diff?from_version=1",
    ):
        resp = api.get(url)
        assert resp.status_code in ((200, 404) if is_valid_name(name) else (404,)), (url, resp)
        assert str(root) not in resp.text and str(root.parent) not in resp.text
        if resp.status_code == 404:
            detail = resp.json()["detail"]
            assert isinstance(detail, str)
            assert is_valid_name(name) or len(detail) < 300  # refused: a short message
    assert no_server_errors(caplog) == []


def test_an_overlong_or_invalid_stream_name_is_404_naming_the_rule(api, root, caplog):
    for name in ("x" * 256, "y" * 1000, "a b", ".hidden", "-x", "é"):
        for tail in ("latest", "versions", "versions/1", "diff?from_version=1", "outcomes"):
            resp = api.get(f"/streams/{quote(name, safe='')}/{tail}")
            assert resp.status_code == 404, (name, tail, resp.text)
            detail = resp.json()["detail"]
            assert detail.startswith("no such stream: invalid stream name")
            assert "1-128 characters of A-Z a-z 0-9 . _ -, not starting with" in detail
            assert str(root) not in detail and len(detail) < 300
    assert no_server_errors(caplog) == []


def test_an_overlong_version_number_is_a_4xx(api, root):
    RoutingStore(root).publish(key_table("numbered"))
    for url in (
        "/streams/numbered/versions/" + "9" * 300,
        "/streams/numbered/versions/" + "9" * 30,
    ):
        resp = api.get(url)
        assert 400 <= resp.status_code < 500, (url, resp.text)
        assert str(root) not in resp.text


def test_a_version_has_one_spelling_every_other_is_422(api, root):
    """``1.0``, ``01``, ``+1``, `` 1``, ``1e0``… are no address of v1: a pinned version is
    cached forever, so a table answering to many spellings would be cached many times (and a
    typo would be served as a version). Every route taking a version refuses them alike."""
    RoutingStore(root).publish(key_table("spelled"))
    RoutingStore(root).publish(key_table("spelled", moved=2))
    resp = api.get("/streams/spelled/versions/1")
    assert resp.status_code == 200 and resp.json()["version"] == 1
    assert api.get("/streams/spelled/diff?from_version=1&to_version=2").status_code == 200
    for spelling in ("1.0", "01", "%2B1", "+1", "%201", "1%20", "1e0", "1_0", "%D9%A1", "0x1"):
        for url in (
            f"/streams/spelled/versions/{spelling}",
            f"/streams/spelled/diff?from_version={spelling}",
            f"/streams/spelled/diff?from_version=2&to_version={spelling}",
        ):
            resp = api.get(url)
            assert resp.status_code == 422, (url, resp.text)
            assert "plain digits" in resp.text and "cache-control" not in resp.headers


def test_one_garbage_latest_does_not_hide_the_other_streams(tmp_path, caplog):
    store = RoutingStore(tmp_path)
    store.publish(key_table("good"))
    store.publish(key_table("broken"))
    store.publish(key_table("gone"))
    (tmp_path / "broken" / "LATEST").write_text("garbage\n")
    (tmp_path / "gone" / "LATEST").write_text("v9.json\n")
    with running(tmp_path) as api:
        streams = get_json(api, "/streams", "routing_streams")["streams"]
        health = get_json(api, "/healthz", "routing_health")
    assert streams == [
        {"stream": "broken", "error": "LATEST: does not name a version file: 'garbage'"},
        {"stream": "gone", "error": "LATEST names v9, not stored (versions 1)"},
        {"stream": "good", "latest_version": 1, "versions": [1]},
    ]
    assert str(tmp_path) not in json.dumps(streams)
    assert health == {"status": "degraded", "streams": 3, "broken": 2}
    assert no_server_errors(caplog) == []


def test_healthz_says_ok_or_what_is_wrong(tmp_path):
    root = tmp_path / "routing"
    with running(root) as api:
        resp = api.get("/healthz")  # no root: nothing can be served, not even "nothing yet"
        assert resp.status_code == 503 and resp.json() == {
            "status": "unavailable",
            "detail": "the routing store's root does not exist",
        }
        assert api.get("/streams").status_code == 503
        root.mkdir()
        assert get_json(api, "/healthz", "routing_health") == {
            "status": "ok",
            "streams": 0,
            "broken": 0,
            "detail": "nothing published yet",
        }
        RoutingStore(root).publish(key_table("one"))
        RoutingStore(root).publish(key_table("two"))
        assert get_json(api, "/healthz", "routing_health") == {
            "status": "ok",
            "streams": 2,
            "broken": 0,
        }
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    with running(blocked) as api:
        resp = api.get("/healthz")
        assert resp.status_code == 503
        body = resp.json()
        validate_document("routing_health", body)
        assert body["status"] == "unavailable" and "not a directory" in body["detail"]
        assert str(tmp_path) not in resp.text
        resp = api.get("/streams")
        assert resp.status_code == 503 and str(tmp_path) not in resp.text


def test_healthz_counts_every_stream_whose_latest_cannot_be_served(tmp_path):
    """Health asks what ``/latest`` would answer: a LATEST naming a corrupt version is broken
    (also after it was served whole), and a root moved away is unavailable, not "ok"."""
    root = tmp_path / "routing"
    store = RoutingStore(root)
    for stream in ("a", "b", "c"):
        store.publish(key_table(stream))
    with running(root) as api:
        assert get_json(api, "/healthz", "routing_health")["status"] == "ok"
        assert api.get("/streams/b/latest").status_code == 200  # verified, cached
        path = root / "b" / "v1.json"
        doc = json.loads(path.read_text())
        doc["key_group_worker"] = ["w2"] * GROUPS  # the checksum no longer matches
        path.with_suffix(".tmp").write_text(json.dumps(doc))
        path.with_suffix(".tmp").replace(path)
        assert api.get("/streams/b/latest").status_code == 500
        for _ in range(2):  # the second answer from what the first one found
            health = get_json(api, "/healthz", "routing_health")
            assert health == {"status": "degraded", "streams": 3, "broken": 1}
        (entry,) = [
            e for e in get_json(api, "/streams", "routing_streams")["streams"] if "error" in e
        ]
        assert entry["stream"] == "b" and "LATEST names v1, not servable" in entry["error"]
        assert "checksum mismatch" in entry["error"] and str(root) not in entry["error"]
        store.publish(key_table("b", moved=3))  # v2 is whole: served again
        assert get_json(api, "/healthz", "routing_health")["broken"] == 0

        root.rename(tmp_path / "moved")
        resp = api.get("/healthz")
        assert resp.status_code == 503 and resp.json()["status"] == "unavailable"
        assert "does not exist" in resp.json()["detail"] and str(tmp_path) not in resp.text
        (tmp_path / "moved").rename(root)
        assert get_json(api, "/healthz", "routing_health")["status"] == "ok"


def test_a_too_deep_or_too_large_stored_document_is_refused_not_a_crash(tmp_path):
    store = RoutingStore(tmp_path)
    store.publish(key_table("deep"))
    store.publish(key_table("large"))
    (tmp_path / "deep" / "v2.json").write_text("[" * 200_000 + "]" * 200_000)
    (tmp_path / "deep" / "LATEST").write_text("v2.json\n")
    size = store.path("large", 1).stat().st_size
    with running(tmp_path) as api:
        assert "nested deeper than 64 levels" in error(api, "/streams/deep/latest", 500)
        assert api.get("/streams/deep/versions/1").status_code == 200
    with running(tmp_path, max_bytes=size) as api:
        assert api.get("/streams/large/latest").status_code == 200
        store.publish(key_table("large", moved=2), reason="x" * 100)
        assert f"more than {size} bytes" in error(api, "/streams/large/latest", 500)
