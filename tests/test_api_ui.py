"""The Routing pages (``routeplan.api.ui``) through FastAPI's TestClient over the sample home of
tests/test_api_views.py; the same pages inside Airflow, in a browser, are tests/test_browser.py."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from fastapi import Depends
from test_api_views import DAY, client_for, sample_home

from routeplan.api.auth import require_token
from routeplan.api.ui import AirflowLinks


class Cells(HTMLParser):
    """``data-stream`` rows' ``data-field`` → ``data-value``, every src/href, and the text."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, str]] = {}
        self.links: list[str] = []
        self.text: list[str] = []
        self._stream: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and "data-stream" in a:
            self._stream = a["data-stream"]
            self.rows[self._stream] = {}
        if "data-field" in a and self._stream is not None:
            self.rows[self._stream][a["data-field"]] = a.get("data-value", "")
        self.links += [a[k] for k in ("src", "href", "action") if k in a]

    def handle_data(self, data):
        self.text.append(data)


def parsed(html: str) -> Cells:
    cells = Cells()
    cells.feed(html)
    return cells


def words(html: str) -> str:
    """The page's text, whitespace collapsed."""
    return re.sub(r"\s+", " ", "".join(parsed(html).text))


@pytest.fixture
def home(tmp_path):
    return sample_home(tmp_path)


def number(text: str) -> float | None:
    return None if text == "" else float(text)


def test_the_streams_page_shows_the_apis_numbers_for_every_stream(home):
    client = client_for(home, root_path="/routeplan")
    page = parsed(client.get("/ui/").text)
    assert sorted(page.rows) == ["clicks", "orders"]
    for stream, cells in page.rows.items():
        view = client.get(f"/streams/{stream}/overview").json()
        assert cells["strategy"] == view["strategy"]
        assert int(cells["latest_version"]) == view["latest_version"]
        assert number(cells["predicted_imbalance"]) == pytest.approx(view["predicted_imbalance"])
        assert number(cells["observed_imbalance"]) == view["observed_imbalance"]
        realized = (view["outcome"] or {}).get("realized_imbalance")
        assert number(cells["realized_imbalance"]) == realized
        assert cells["verdict"] == ((view["outcome"] or {}).get("verdict") or "")
    text = re.sub(r"\s+", " ", "".join(page.text))
    assert "cg — Consistent Grouping (paper 000)" in text and "held" in text
    assert "/routeplan/ui/streams/clicks" in page.links


def test_a_streams_page_has_its_versions_outcomes_candidates_and_a_diff(home):
    client = client_for(home)
    html = client.get("/ui/streams/clicks").text
    page = parsed(html)
    text = re.sub(r"\s+", " ", "".join(page.text))
    assert "cg plan: 2 moves against v1" in text and f"night {DAY}" in text
    assert "/ui/streams/clicks/rollback?version=1" in page.links  # not for LATEST
    assert "/ui/streams/clicks/rollback?version=2" not in page.links
    assert "regressed" in text  # the outcome of v1
    assert re.search(r"<td>kg</td><td></td>", html) and "baseline" in text  # auto's candidates
    assert "v1 → v2: 2 moves (2 key groups" in text  # the default diff: LATEST's parent
    other = words(client.get("/ui/streams/clicks?from_version=2&to_version=1").text)
    assert "v2 → v1: 2 moves" in other
    for url in ("/ui/streams/clicks/versions/2/plot.png", "/ui/streams/clicks/outcomes.png"):
        resp = client.get(url)
        assert resp.headers["content-type"] == "image/png" and resp.content[:4] == b"\x89PNG"
    assert client.get("/ui/streams/orders/outcomes.png").status_code == 404  # none yet
    assert client.get("/ui/streams/nope").status_code == 404


def test_a_versions_page_lists_its_moves_for_keys_and_partitions(home):
    client = client_for(home)
    keys = parsed(client.get("/ui/streams/clicks/versions/2").text)
    assert "relieves w0 (1.75×)" in " ".join(keys.text)
    assert "/ui/streams/clicks/versions/2/plot.png" in keys.links
    parts = words(client.get("/ui/streams/orders/versions/2").text)
    assert "partition:1" in parts and "relieves c0" in parts and "bin capacity C" in parts
    first = words(client.get("/ui/streams/orders/versions/1").text)
    assert "the first version: nothing to compare with" in first
    assert "Roll back to v1" in first


def test_roll_back_names_what_changes_and_who_may_do_it(home):
    alone = words(client_for(home).get("/ui/streams/clicks/rollback?version=1").text)
    assert "routes as v1, replacing LATEST v2: 2 moves" in alone
    assert "routeplan rollback --stream clicks --version 1" in alone  # no Airflow: the CLI

    def inside(who) -> str:
        links = AirflowLinks(who=lambda request: who)
        client = client_for(home, root_path="/routeplan", airflow=links)
        return client.get("/ui/streams/clicks/rollback?version=1").text

    allowed = inside(("op", True))
    assert 'const API = "/api/v2"' in allowed and 'DAG = "routeplan_rollback"' in allowed
    # disabled until the page has asked Airflow whether the DAG is paused; a viewer's for good
    assert '<button id="confirm" type="submit" disabled data-allowed="true">' in allowed
    refused = inside(("viewer", False))
    assert '<button id="confirm" type="submit" disabled data-allowed="false">' in refused
    assert "You may not trigger routeplan_rollback" in refused
    unknown = client_for(home, root_path="/routeplan", airflow=AirflowLinks())
    assert (
        '<button id="confirm" type="submit" disabled data-allowed="true">'
        in unknown.get("/ui/streams/clicks/rollback?version=1").text
    )
    assert client_for(home).get("/ui/streams/clicks/rollback?version=9").status_code == 404


def test_plans_of_a_run_are_read_from_its_reports(home):
    client = client_for(home)
    text = words(client.get("/ui/runs/routeplan_nightly/run-1").text)
    assert f"night {DAY}" in text and "published" in text and "v2" in text
    other = words(client.get("/ui/runs/some_dag/run-1").text)
    assert "not one of routeplan's DAGs" in other
    later = words(client.get("/ui/runs/routeplan_nightly/run-9").text)
    assert "No report names this run yet" in later


def test_pages_load_nothing_from_elsewhere_and_are_closed_like_the_api(home):
    client = client_for(home, root_path="/routeplan")
    for url in (
        "/ui/",
        "/ui/streams/clicks",
        "/ui/streams/orders/versions/2",
        "/ui/streams/clicks/rollback?version=1",
        "/ui/runs/routeplan_nightly/run-1",
    ):
        html = client.get(url).text
        for link in parsed(html).links:
            assert link.startswith("/routeplan/"), (url, link)
        assert "http://" not in html and "https://" not in html, url
    closed = client_for(home, dependencies=[Depends(require_token("t"))])
    assert closed.get("/ui/").status_code == 401
    assert closed.get("/ui/streams/clicks").status_code == 401
    assert closed.get("/ui/", headers={"Authorization": "Bearer t"}).status_code == 200
    spec = closed.get("/openapi.json").json()
    assert not [p for p in spec["paths"] if p.startswith("/ui")]  # pages are not the API
