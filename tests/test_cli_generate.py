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


def test_cli_generate_under_a_file_names_the_file_in_the_way(tmp_path, capsys):
    blocker = tmp_path / "data"
    blocker.write_text("a file")
    common = ["generate", "--date", "2026-11-20", "--events", "50", "--streams", "x"]
    landing, workers = ["--landing", str(tmp_path / "landing")], ["--workers-out"]
    out = str(tmp_path / "w.json")
    assert main([*common, "--landing", str(blocker / "landing"), *workers, out]) == 1
    assert capsys.readouterr().err == (
        f"routeplan generate: error: {blocker / 'landing' / '2026-11-20'}: cannot be written: "
        f"{blocker} is not a directory\n"
    )
    assert main([*common, *landing, *workers, str(blocker / "w.json")]) == 1
    assert capsys.readouterr().err == (
        f"routeplan generate: error: {blocker / 'w.json'}: cannot be written: "
        f"{blocker} is not a directory\n"
    )
