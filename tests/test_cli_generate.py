"""``routeplan.cli.generate``: ``routeplan generate`` then ``routeplan show``."""

from __future__ import annotations

import json

import pytest
from test_simulation_generate import config

from routeplan.cli.main import main
from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget
from routeplan.planning.registry import get_strategy
from routeplan.simulation.generate import stream_workers


def test_cli_generate_then_show(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ROUTEPLAN_HOME", str(tmp_path))
    assert main(["generate", "--date", "2026-11-20", "--events", "500", "--streams", "x"]) == 0
    assert (tmp_path / "landing" / "2026-11-20" / "x-000.jsonl").is_file()
    assert main(["show", "--stream", "x"]) == 1
    assert "no routing table published" in capsys.readouterr().err
    from routeplan.publishing.store import RoutingStore

    snapshot = LoadSnapshot("x", [3.0, 1.0, 2.0, 0.0])
    table = get_strategy("cg").plan(snapshot, None, stream_workers(config(tmp_path)), Budget())
    RoutingStore(tmp_path / "routing").publish(table.table)
    assert main(["show", "--stream", "x", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["version"] == 1 and shown["strategy"] == "cg"
    assert shown["predicted"]["imbalance"] == pytest.approx(table.predicted["imbalance"])
