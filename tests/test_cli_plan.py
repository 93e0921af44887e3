"""``routeplan.cli.plan``: ``routeplan plan``."""

from __future__ import annotations

import json

from routeplan.cli.main import main
from routeplan.contracts.schemas import validate_document
from routeplan.model.table import RoutingTable

# ---------------------------------------------------------------- CLI


def test_cli_plan_prints_the_predicted_metrics(tmp_path, capsys):
    loads = tmp_path / "loads.csv"
    rows = ["key_group,load,worker,distinct_keys"] + [
        f"{g},{1 + (g % 7)},w{g % 4},{g + 1}" for g in range(40)
    ]
    loads.write_text("\n".join(rows) + "\n")
    flow = tmp_path / "flow.jsonl"
    flow.write_text(
        "".join(
            json.dumps({"upstream_key_group": g, "key_group": g + 20, "messages": 9}) + "\n"
            for g in range(20)
        )
    )
    out = tmp_path / "table.json"
    common = ["plan", "--loads", str(loads), "--workers", "4", "--flow", str(flow)]
    for strategy in ("kg", "flux", "milp", "albic"):
        params = [] if strategy == "kg" else ["--max-moves", "3"]
        code = main(
            [*common, "--strategy", strategy, *params, "--time-limit", "1", "--out", str(out)]
            + ["--json"]
        )
        assert code == 0
        doc = json.loads(capsys.readouterr().out)
        for field in (
            "load_distance",
            "imbalance",
            "moves",
            "solver_status",
            "mip_gap",
            "solver_seconds",
        ):
            assert field in doc
        if strategy != "kg":  # the loads file's worker column is the current table
            assert doc["moves"] <= 3
        assert (doc["solver_status"] is None) == (strategy in ("kg", "flux"))
        table = RoutingTable.from_document(json.loads(out.read_text()))
        assert table.strategy == strategy and table.num_key_groups == 40
        published = table.published(1, None, "2026-01-01T00:00:00Z").to_document()
        validate_document("routing_table", published)
    # the table it wrote is a valid --current
    code = main(
        [
            "plan",
            "--loads",
            str(loads),
            "--strategy",
            "milp",
            "--workers",
            "4",
            "--current",
            str(out),
            "--time-limit",
            "1",
        ]
    )
    assert code == 0
    assert "load distance" in capsys.readouterr().out
    assert (
        main(
            ["plan", "--loads", str(tmp_path / "nope.csv"), "--strategy", "milp", "--workers", "4"]
        )
        == 1  # a missing input file is a failure (1), not a usage error (2)
    )


def test_cli_plan_reads_the_old_parameters_with_warnings(tmp_path, capsys):
    loads = tmp_path / "loads.csv"
    rows = ["key_group,load,worker,keys"] + [
        f"{g},{1 + 9 * (g % 4 == 0)},w{g % 4},{g + 1}" for g in range(40)
    ]
    loads.write_text("\n".join(rows) + "\n")
    common = ["plan", "--loads", str(loads), "--workers", "4", "--time-limit", "1", "--json"]
    rounds = ["--param", "variant=rounds"]  # the paper's Flux moves at most 2 on 4 workers
    assert main([*common, "--strategy", "flux", *rounds]) == 0
    free = json.loads(capsys.readouterr().out)
    assert free["moves"] > 3  # so that a cap of 3 binds
    args = ["--param", "max_migrations=3", "--param", "migration_cost=keys"]
    table = tmp_path / "table.json"
    assert main([*common, "--strategy", "flux", *rounds, *args, "--out", str(table)]) == 0
    out = capsys.readouterr()
    doc = json.loads(out.out)
    assert 0 < doc["moves"] <= 3
    planned = RoutingTable.from_document(json.loads(table.read_text())).key_group_worker
    moved = [g for g in range(40) if planned[g] != f"w{g % 4}"]
    assert len(moved) == doc["moves"]
    assert doc["migration_cost"] == sum(g + 1 for g in moved)  # in distinct keys
    err = out.err
    assert "routeplan plan: warning: max_migrations is deprecated" in err
    assert "routeplan plan: warning: migration_cost is deprecated" in err
    assert "column keys is deprecated: call it distinct_keys" in err
    assert main([*common, "--strategy", "milp", "--param", "bound=5", "--max-moves", "3"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["moves"] <= 3
    assert out.err.count("routeplan plan: warning: strategy 'milp': parameter bound is now") == 1
    assert main([*common, "--strategy", "flux", *rounds, "--max-moves", "3"]) == 0
    assert json.loads(capsys.readouterr().out)["moves"] == doc["moves"]


def test_cli_plan_says_when_a_workers_file_capacity_is_auto(tmp_path, capsys):
    """Outside the nightly jobs no learnt capacity exists: an ``auto`` worker is planned at
    capacity 1, and the command says so."""
    loads = tmp_path / "loads.csv"
    loads.write_text("key_group,load\n" + "".join(f"{g},{1 + g % 3}\n" for g in range(12)))
    workers = tmp_path / "workers.json"
    records = [
        {"stream": "s", "worker": "a", "capacity": 2},
        {"stream": "s", "worker": "b", "capacity": "auto"},
        {"stream": "s", "worker": "c"},
    ]
    workers.write_text(json.dumps({"workers": records}))
    code = main(["plan", "--loads", str(loads), "--workers", str(workers), "--strategy", "kg"])
    assert code == 0
    err = capsys.readouterr().err
    assert "capacity auto for b, c: planned at capacity 1" in err


def test_cli_plan_out_and_plot_under_a_file_name_the_file_in_the_way(tmp_path, capsys):
    loads = tmp_path / "loads.csv"
    loads.write_text("key_group,load\n" + "".join(f"{g},{1 + g % 5}\n" for g in range(16)))
    blocker = tmp_path / "results"
    blocker.write_text("a file")
    common = ["plan", "--loads", str(loads), "--workers", "4", "--strategy", "kg"]
    for flag, name in (("--out", "table.json"), ("--plot", "plan.png")):
        assert main([*common, flag, str(blocker / name)]) == 1
        err = capsys.readouterr().err
        assert err == (
            f"routeplan plan: error: {blocker / name}: cannot be written: "
            f"{blocker} is not a directory\n"
        )
    assert main([*common, "--out", str(tmp_path / "new" / "table.json")]) == 0  # folder made
    assert json.loads((tmp_path / "new" / "table.json").read_text())["strategy"] == "kg"
