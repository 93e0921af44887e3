"""``routeplan.cli.show``: ``routeplan show``."""

from __future__ import annotations

import json

from routeplan.cli.main import main
from routeplan.model.plan import Budget
from routeplan.planning.registry import get_strategy


def test_cli_show_summarises_a_partition_assignment(tmp_path, capsys):
    import numpy as np

    from routeplan.model.loads import PartitionLoad
    from routeplan.model.workers import Workers
    from routeplan.publishing.store import RoutingStore

    loads = PartitionLoad("p", np.array([50.0, 40.0, 30.0, 20.0, 10.0]))
    plan = get_strategy("mwf", consumer_capacity=120.0).plan(
        loads, None, Workers.homogeneous(4), Budget()
    )
    RoutingStore(tmp_path).publish(plan.table)
    assert main(["show", "--stream", "p", "--routing", str(tmp_path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["kind"] == "partition_assignment"
    assert shown["partitions"] == 5
    assert shown["consumers"] == len(set(plan.table.partition_consumer.values())) >= 2
    assert main(["show", "--stream", "p", "--routing", str(tmp_path)]) == 0
    assert f"5 partitions on {shown['consumers']} consumers" in capsys.readouterr().out


def test_a_plot_under_a_file_names_the_path_and_the_file_in_the_way(tmp_path, capsys):
    import numpy as np

    from routeplan.model.loads import PartitionLoad
    from routeplan.model.workers import Workers
    from routeplan.publishing.store import RoutingStore

    loads = PartitionLoad("p", np.array([50.0, 40.0, 30.0, 20.0, 10.0]))
    plan = get_strategy("mwf", consumer_capacity=120.0).plan(
        loads, None, Workers.homogeneous(4), Budget()
    )
    RoutingStore(tmp_path / "routing").publish(plan.table)
    blocker = tmp_path / "notes.txt"
    blocker.write_text("a file, not a folder")
    for plot in (blocker / "x.png", blocker / "deeper" / "x.png"):
        argv = ["show", "--stream", "p", "--routing", str(tmp_path / "routing"), "--plot"]
        assert main([*argv, str(plot)]) == 1
        err = capsys.readouterr().err
        assert err == (
            f"routeplan show: error: {plot}: cannot be written: {blocker} is not a directory\n"
        )
    assert blocker.read_text() == "a file, not a folder"
    assert main([*argv, str(tmp_path / "plots" / "p.png")]) == 0  # a missing folder is made
    assert (tmp_path / "plots" / "p.png").read_bytes().startswith(b"\x89PNG")
