"""Planning a stream (``routeplan.streams.service.plan_stream``): the policy's plan or auto's
choice, the baseline of the kind, the rerun rule — the decision the plan job, the CLI and the
API share — and the planning inputs document they exchange (``routeplan.streams.inputs``)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from conftest import zipf_snapshot

from routeplan.errors import InputError
from routeplan.files import json_text
from routeplan.model.loads import PartitionLoad
from routeplan.model.plan import Budget
from routeplan.model.workers import Worker, Workers
from routeplan.planning.metrics import observed_imbalance
from routeplan.planning.registry import get_strategy
from routeplan.streams import service
from routeplan.streams.auto import choose
from routeplan.streams.inputs import StreamInputs, inputs_document, inputs_from_document
from routeplan.streams.policy import StreamPolicy
from routeplan.streams.service import PlanRefusedError, plan_stream, rerun_of

WORKERS = Workers((Worker("w0", 1.0), Worker("w1", 1.0), Worker("w2", 2.0), Worker("w3", 1.0)))


@pytest.fixture(scope="module")
def loads():
    return zipf_snapshot("views", keys=3000, messages=60_000, num_key_groups=256, hot=20)


def test_a_named_strategy_is_selected_beside_the_unlimited_baseline(loads):
    policy = StreamPolicy(
        "views", strategy="cg", params={"epsilon": 0.02}, budget=Budget(max_moves=4)
    )
    decided = plan_stream(policy, loads, None, WORKERS, logged={"w0": 10.0, "w1": 30.0})
    assert [c.strategy for c in decided.candidates] == ["cg", "kg"]
    assert decided.winner == "cg" and decided.selected.choice == "the stream's policy names it"
    assert decided.baseline == "kg" and not decided.candidate("kg").selected
    assert "baseline" in decided.candidate("kg").choice
    # the same strategies called directly give the same tables
    cg = get_strategy("cg", epsilon=0.02).plan(loads, None, WORKERS, Budget(max_moves=4))
    assert decided.selected.plan.table.key_group_worker == cg.table.key_group_worker
    logged = observed_imbalance({"w0": 10.0, "w1": 30.0}, WORKERS)
    assert decided.observed_imbalance == logged > 0
    assert decided.current_imbalance is None and decided.current_version is None


def test_auto_plans_every_candidate_and_selects_what_choose_picks(loads):
    policy = StreamPolicy(
        "views", strategy="auto", candidates=("cg", "pkg", "kg"), goals=("imbalance", "memory")
    )
    decided = plan_stream(policy, loads, None, WORKERS)
    names = [c.strategy for c in decided.candidates]
    assert names == ["cg", "pkg", "kg"]  # kg is a candidate: it is not planned twice
    assert sum(c.selected for c in decided.candidates) == 1
    plans = {c.strategy: c.plan for c in decided.candidates}
    expected = choose(plans, goals=("imbalance", "memory"), imbalance_tolerance=0.10,
                      budget=Budget(), workers=WORKERS, current=None)  # fmt: skip
    assert decided.winner == expected.winner == decided.auto.winner
    assert decided.selected.choice.startswith("auto: ")
    losers = [c for c in decided.candidates if not c.selected]
    assert all(f"({decided.winner} won)" in c.choice for c in losers)
    json.loads(json_text(decided.summary()))  # plain, finite JSON


def test_a_rerun_on_the_same_loads_keeps_latest_and_new_loads_plan_again(loads):
    policy = StreamPolicy("views", strategy="cg", params={"epsilon": 0.02})
    first = plan_stream(policy, loads, None, WORKERS).selected.plan.table
    latest = replace(first, version=3)
    again = plan_stream(policy, loads, latest, WORKERS)
    assert again.kept and "LATEST v3" in again.kept and again.winner == "cg"
    assert again.selected.plan.table == latest and again.selected.plan.moves == ()
    assert again.current_version == 3 and again.current_imbalance is not None
    drifted = replace(loads, key_group_load=loads.key_group_load[::-1].copy())
    moved = plan_stream(policy, drifted, latest, WORKERS)
    assert moved.kept is None


def test_an_auto_rerun_keeps_latest_and_still_plans_every_candidate(loads):
    """Issue 33, item 9: a rerun of an ``auto`` night records the same candidates as the run it
    repeats — each with its numbers and why it was not chosen — beside the baseline; LATEST (the
    first run's winner) is the selected one."""
    policy = StreamPolicy(
        "views", strategy="auto", candidates=("cg", "pkg"), goals=("imbalance", "memory")
    )
    first = plan_stream(policy, loads, None, WORKERS)
    latest = replace(first.selected.plan.table, version=3)
    again = plan_stream(policy, loads, latest, WORKERS)
    assert [c.strategy for c in again.candidates] == [c.strategy for c in first.candidates]
    assert [c.strategy for c in again.candidates] == ["cg", "pkg", "kg"]
    assert again.kept and again.winner == first.winner and again.auto is None
    assert again.selected.plan.table == latest and again.selected.choice == again.kept
    for c in again.candidates:
        assert c.choice and c.plan.predicted["imbalance"] >= 0
        if not c.selected and c.strategy != "kg":
            assert c.choice == f"auto candidate, not chosen: {again.kept}"
    assert "baseline" in again.candidate("kg").choice
    assert len(again.summary()["candidates"]) == 3


def test_a_latest_of_the_other_kind_is_not_planned_from(loads):
    partitions = PartitionLoad("views", np.linspace(0.1, 1.0, 12))
    assignment = replace(
        get_strategy("mwf").plan(partitions, None, WORKERS, Budget()).table, version=2
    )
    decided = plan_stream(StreamPolicy("views", strategy="kg"), loads, assignment, WORKERS)
    assert decided.current_version == 2 and decided.current_imbalance is None
    assert any("partition_assignment table: planning anew" in n for n in decided.notes)
    assert decided.selected.plan.moves == ()


def test_partitions_get_the_kafka_range_baseline_with_the_policys_capacity():
    partitions = PartitionLoad("orders", np.random.default_rng(1).uniform(0.1, 0.9, 24))
    policy = StreamPolicy(
        "orders", kind="partition_assignment", strategy="mwf", params={"consumer_capacity": 2.0}
    )
    decided = plan_stream(policy, partitions, None, Workers.homogeneous(8))
    assert [c.strategy for c in decided.candidates] == ["mwf", "kafka_range"]
    assert decided.candidate("kafka_range").plan.table.params.get("consumer_capacity") == 2.0


def test_no_usable_candidate_is_refused_naming_the_stream(loads, monkeypatch):
    def refuse(plans, **_):
        raise service.NoCandidateError("cg breaks budget")

    monkeypatch.setattr(service, "choose", refuse)
    policy = StreamPolicy("views", strategy="auto", candidates=("cg", "pkg"))
    with pytest.raises(PlanRefusedError, match="stream 'views': cg breaks budget"):
        plan_stream(policy, loads, None, WORKERS)


def test_planning_inputs_survive_their_document(loads):
    flowing = replace(
        loads,
        key_group_resources={"bytes": loads.key_group_load * 3},
        key_group_flow=np.array([[0, 1, 5.0], [2, 256, 1.0]]),
        flow_anchors=("w9",),
        key_group_windows=np.stack([loads.key_group_load, 2 * loads.key_group_load]),
        hot_key_windows={k: np.array([v, 0.5 * v]) for k, v in loads.hot_key_load.items()},
    )
    assert flowing.hot_key_windows  # the loads' hot keys carry their own hours
    inputs = StreamInputs("views", flowing, WORKERS, {"w0": 3.0}, "2026-11-20", ("a", "b"))
    back = inputs_from_document(json.loads(json_text(inputs_document(inputs))))
    assert back.workers == WORKERS and back.logged == {"w0": 3.0} and back.window == ("a", "b")
    for field in ("key_group_load", "distinct_keys", "key_group_flow", "key_group_windows"):
        assert np.array_equal(getattr(back.loads, field), getattr(flowing, field))
    assert dict(back.loads.hot_key_load) == dict(flowing.hot_key_load)
    assert set(back.loads.hot_key_windows) == set(flowing.hot_key_windows)
    for key, hours in flowing.hot_key_windows.items():
        assert np.array_equal(back.loads.hot_key_windows[key], hours)
    assert np.array_equal(back.loads.key_group_resources["bytes"], loads.key_group_load * 3)
    assert back.loads.flow_anchors == ("w9",)
    windows = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 3.0]])
    partitions = StreamInputs("orders", PartitionLoad("orders", np.ones(3), windows), WORKERS)
    again = inputs_from_document(inputs_document(partitions))
    assert again.kind == "partition_assignment" and again.logged is None
    assert np.array_equal(again.loads.partition_windows, windows)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("workers"), "'workers' is a required property"),
        (lambda d: d["loads"].update(key_group_load=[-1.0]), "loads/key_group_load/0: -1.0"),
        (lambda d: d.update(stream="../etc"), "stream"),
        (lambda d: d["loads"].update(kind="other"), "loads/kind: 'key_routing' was expected"),
        (lambda d: d["loads"].update(key_group_windows=[[1.0], [1.0, 2.0]]), "window needs a"),
    ],
)
def test_a_bad_inputs_document_is_an_input_error_naming_where(loads, change, message):
    doc = inputs_document(StreamInputs("views", loads, WORKERS))
    change(doc)
    with pytest.raises(InputError, match=f"(?s)^views.json: .*{message}") as raised:
        inputs_from_document(doc, "views.json")
    assert len(str(raised.value)) < 600  # the offending value is not printed whole


def test_a_rerun_of_the_same_loads_workers_and_parameters_keeps_latest():
    """Paper 002's MWF applied to its own result may still move a partition: a rerun of the day
    must not republish, so the plan job keeps LATEST when nothing it was planned on changed."""
    from dataclasses import replace

    import numpy as np

    from routeplan.model.loads import PartitionLoad
    from routeplan.model.plan import Budget
    from routeplan.model.workers import Workers
    from routeplan.planning.registry import get_strategy

    rng = np.random.default_rng(3)
    loads = PartitionLoad("orders", rng.uniform(0.1, 1.4, 16))
    workers = Workers.homogeneous(8)
    mwf = get_strategy("mwf", consumer_capacity=1.0)
    first = replace(mwf.plan(loads, None, workers, Budget()).table, version=1)
    assert "LATEST v1" in rerun_of(first, loads, workers, {"mwf": mwf})
    # a parameter the policy leaves to be derived (C̄ from the workers) matches what it became
    derived = replace(get_strategy("mwf").plan(loads, None, workers, Budget()).table, version=1)
    assert "LATEST v1" in rerun_of(derived, loads, workers, {"mwf": get_strategy("mwf")})
    moved = PartitionLoad("orders", loads.partition_load * np.linspace(0.9, 1.1, 16))
    assert rerun_of(first, moved, workers, {"mwf": mwf}) is None  # new loads: plan again
    other = get_strategy("mwf", consumer_capacity=2.0)
    assert rerun_of(first, loads, workers, {"mwf": other}) is None  # new parameters
    assert rerun_of(first, loads, workers, {"bfd": get_strategy("bfd")}) is None  # new strategy
    assert rerun_of(None, loads, workers, {"mwf": mwf}) is None
