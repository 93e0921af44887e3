"""Holds from the command line (``routeplan hold``, ``routeplan doctor``)."""

from __future__ import annotations

import json

import pytest

from routeplan.cli.main import main
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.publishing.store import RoutingStore

WORKERS = Workers.homogeneous(2)


def table(stream: str, shift: int = 0) -> RoutingTable:
    return RoutingTable(stream, "kg", WORKERS, tuple(f"w{(g + shift) % 2}" for g in range(4)))


def test_hold_list_and_clear_from_the_command_line(tmp_path, capsys):
    routing = str(tmp_path / "routing")
    store = RoutingStore(routing)
    store.publish(table("clicks"))
    store.publish(table("clicks", 1))
    store.publish(table("views"))
    assert main(["hold", "--routing", routing]) == 0
    assert capsys.readouterr().out == "no stream is held\n"

    assert main(["hold", "--routing", routing, "--stream", "clicks", "--reason", "v2 hurts"]) == 0
    assert capsys.readouterr().out == "clicks: held at v2 (v2 hurts)\n"
    assert store.held("clicks")["reason"] == "v2 hurts"
    assert main(["hold", "--routing", routing, "--list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(h["stream"], h["version"], h["reason"]) for h in listed] == [("clicks", 2, "v2 hurts")]

    assert main(["doctor", "--routing", routing]) == 0  # a hold is listed, not a problem
    out = capsys.readouterr().out
    assert "clicks: ok, LATEST v2" in out and "held at v2 since" in out and ": v2 hurts" in out
    assert main(["doctor", "--routing", routing, "--stream", "clicks", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["hold"]["reason"] == "v2 hurts"

    assert main(["hold", "--routing", routing, "--stream", "views"]) == 0
    assert store.held("views")["reason"] == "held by hand (routeplan hold)"
    capsys.readouterr()
    assert main(["hold", "--routing", routing, "--stream", "views", "--clear"]) == 0
    assert capsys.readouterr().out == "views: hold cleared\n"
    assert main(["hold", "--routing", routing, "--stream", "views", "--clear", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"stream": "views", "cleared": False}

    # a person's rollback publishes the version chosen and lifts the hold
    rollback = ["rollback", "--routing", routing, "--stream", "clicks", "--version", "1"]
    assert main([*rollback, "--reason", "v2 hurts"]) == 0
    assert "clicks: published v3 (routes as v1" in capsys.readouterr().out
    assert store.held("clicks") is None and store.latest_version("clicks") == 3


def test_a_publish_of_a_held_stream_is_one_line_exit_1(tmp_path, capsys):
    """What a caller of the library sees through the CLI's error handling."""
    from routeplan.cli.main import _fail
    from routeplan.publishing.store import HeldError

    store = RoutingStore(tmp_path)
    store.publish(table("clicks"))
    store.hold("clicks", "v1 regressed")
    with pytest.raises(HeldError) as refused:
        store.publish(table("clicks", 1))
    assert _fail("routeplan x", refused.value, 1) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "stream 'clicks' is held at v1 (v1 regressed)" in err
    assert "routeplan hold --stream clicks --clear" in err
