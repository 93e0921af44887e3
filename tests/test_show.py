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
