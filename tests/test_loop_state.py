"""The loop's state and the regression guard's rules (routeplan.streams.loop_state): one test per
defect the explicit state fixes, and a state-machine property test over random sequences of
nights, reruns, retries, holds, rollbacks by hand, worker changes and regressions."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from routeplan.model.table import RoutingTable
from routeplan.model.workers import Worker, Workers
from routeplan.streams import loop_state as loop
from routeplan.streams.outcomes import Outcome
from routeplan.streams.policy import StreamPolicy

WORKERS = Workers((Worker("w0"), Worker("w1"), Worker("w2")))
# four routings of one stream: A..D send the four key groups to different workers
MAPS = {
    "A": ("w0", "w1", "w2", "w0"),
    "B": ("w1", "w1", "w2", "w0"),
    "C": ("w2", "w2", "w1", "w0"),
    "D": ("w0", "w0", "w0", "w1"),
}


def table(name: str, version: int, workers: Workers = WORKERS, **more) -> RoutingTable:
    return RoutingTable(
        stream="s",
        strategy="cg",
        workers=workers,
        key_group_worker=MAPS[name],
        version=version,
        **more,
    )


def outcome(version: int, verdict: str, day: str) -> Outcome:
    bad = verdict == "regressed"
    return Outcome(
        stream="s", version=version, interval_start=day, kind="key_routing",
        attribution="event_version", measure="imbalance", predicted=0.01,
        realized=0.9 if bad else 0.02, previous_realized=0.02, error=None, verdict=verdict,
        realized_day=0.9 if bad else 0.02, previous_realized_day=0.03,
        predicted_imbalance=0.01, realized_imbalance=0.9 if bad else 0.02,
        previous_realized_imbalance=0.02, realized_imbalance_day=0.9 if bad else 0.02,
        messages=1000.0,
    )  # fmt: skip


def day(n: int) -> str:
    return f"2026-11-{n + 1:02d}"


POLICY = StreamPolicy(stream="s")


def night(base, n, version, name, verdict, hold=None, rollbacks=()):
    return loop.observe(
        base,
        loop.Night(
            day(n), outcome(version, verdict, day(n)), table(name, version).fingerprint(), hold,
            tuple(rollbacks), version,
        ),
    )  # fmt: skip


def history(*steps):
    """The state after nights of (version, routing name, verdict), from night 0."""
    state = loop.LoopState("s")
    for n, (version, name, verdict) in enumerate(steps):
        state = night(state, n, version, name, verdict)
    return state


def test_capacities_within_the_tolerance_route_alike_and_a_draining_worker_does_not():
    """Defect 1: capacities re-learnt every night differ by a percent; that is the same routing
    (no new version, the guard still compares), a worker going to draining is not."""
    learnt = Workers((Worker("w0", 1.01), Worker("w1", 0.99), Worker("w2")))
    assert table("A", 1).same_routing(table("A", 2, learnt), capacity_tolerance=0.05)
    assert not table("A", 1).same_routing(table("A", 2, learnt))  # exact, as restore compares
    assert table("A", 1).fingerprint() == table("A", 2, learnt).fingerprint()
    drained = Workers((Worker("w0"), Worker("w1", state="draining"), Worker("w2")))
    assert not table("A", 1).same_routing(table("A", 2, drained), capacity_tolerance=1.0)
    assert loop.unrestorable(table("A", 1), table("B", 2, drained)) == (
        "v1 routes to workers being drained: w1"
    )
    gone = Workers((Worker("w0"), Worker("w1")))
    assert "no longer has: w2" in loop.unrestorable(table("A", 1), table("D", 2, gone))


def test_a_regression_with_relearnt_capacities_is_rolled_back_to_the_last_good_version():
    state = history((1, "A", "as_predicted"), (2, "B", "regressed"))
    target = loop.rollback_target(state)
    assert target == loop.InForce(1, table("A", 1).fingerprint(), day(0))
    decision = loop.decide(state, outcome(2, "regressed", day(1)), POLICY, target, (0.9, 0.05))
    assert (decision.action, decision.restore_version, decision.status) == (
        "rollback",
        1,
        "decided",
    )
    assert "back to v1's routing" in decision.reason


def test_after_a_rollback_the_night_acts_no_second_time_and_nothing_is_planned():
    """Defect 2: a rerun or retry after the guard rolled back decides nothing new; the plan and
    publish jobs see the rollback (acted_tonight) and publish nothing over it."""
    state = history((1, "A", "as_predicted"), (2, "B", "regressed"))
    regressed = outcome(2, "regressed", day(1))
    decision = loop.decide(state, regressed, POLICY, loop.rollback_target(state), (0.9, 0.05))
    acted = loop.done(loop.decided(state, decision), published_version=3)
    assert loop.acted_tonight(acted, day(1)) == "rollback"
    assert loop.acted_tonight(acted, day(2)) is None
    again = loop.decide(acted, regressed, POLICY, loop.rollback_target(acted), (0.9, 0.05))
    assert again.action is None and "already acted on this routing's regression" in again.reason
    # run_night: a written decision stands, whatever the inputs of the rerun
    writes = []
    state2, repeated = loop.run_night(acted, pytest.fail, writes.append, pytest.fail)
    assert (state2, repeated, writes) == (acted, True, [])
    # a retry after a failure between deciding and acting finishes the action once
    decided = loop.decided(state, decision)
    state3, repeated = loop.run_night(
        decided, pytest.fail, writes.append, lambda s: loop.done(s, 3)
    )
    assert not repeated and state3.decision.status == "done" and len(writes) == 1


def test_a_rollback_never_returns_to_a_routing_rolled_back_from():
    """Defect 3: the predecessor by parent_version of a rollback is the bad version; the target
    is the last good routing, and once both were rolled back from there is none (alert)."""
    state = history((1, "A", "as_predicted"), (2, "B", "regressed"))
    decision = loop.decide(
        state, outcome(2, "regressed", day(1)), POLICY, loop.rollback_target(state), (0.9, 0.0)
    )
    state = loop.done(loop.decided(state, decision), 3)
    # v3 routes as v1 (A); it regresses in its turn: A is the current routing, B rolled back
    state = night(state, 2, 3, "A", "regressed")
    assert loop.rollback_target(state) is None
    # the version v3 replaced when it was published is B's v2: rolled back from, never a target
    assert loop.rollback_target(state, loop.InForce(2, table("B", 2).fingerprint(), "")) is None
    decision = loop.decide(state, outcome(3, "regressed", day(2)), POLICY, None)
    assert decision.action == "alert" and "no version to return to" in decision.reason
    cooled = loop.publish_refusal(state, table("B", 9), day(3), cooldown=7)
    assert cooled is not None and "rolled back on 2026-11-02 by the regression guard" in cooled
    assert loop.publish_refusal(state, table("B", 9), day(8), cooldown=7) is None
    assert loop.publish_refusal(state, table("C", 9), day(3), cooldown=7) is None


def test_a_second_regression_within_the_window_rolls_back_and_holds():
    state = history((1, "A", "as_predicted"), (2, "B", "regressed"))
    first = loop.decide(
        state, outcome(2, "regressed", day(1)), POLICY, loop.rollback_target(state), (0.9, 0.0)
    )
    state = loop.done(loop.decided(state, first), 3)
    state = night(state, 2, 3, "A", "as_predicted")
    state = night(state, 3, 4, "C", "regressed")
    second = loop.decide(
        state, outcome(4, "regressed", day(3)), POLICY, loop.rollback_target(state), (0.9, 0.0)
    )
    assert (second.action, second.restore_version, second.hold) == ("rollback", 3, True)
    assert "a second regression within 7 nights (v2 on 2026-11-02)" in second.reason
    held = loop.decided(state, second)
    assert held.hold is not None and held.hold.by == "guard"
    outside = loop.decide(
        state, outcome(4, "regressed", day(3)), replace(POLICY, regression_window=1),
        loop.rollback_target(state), (0.9, 0.0),
    )  # fmt: skip
    assert outside.action == "rollback" and not outside.hold


def test_the_guard_never_acts_over_a_persons_hold():
    """Defect 4: a rollback lifts any hold; the guard alerts instead when a person held."""
    person = loop.Hold("person", "investigating", "2026-11-02", 2)
    state = history((1, "A", "as_predicted"))
    state = night(state, 1, 2, "B", "regressed", hold=person)
    decision = loop.decide(
        state, outcome(2, "regressed", day(1)), POLICY, loop.rollback_target(state), (0.9, 0.0)
    )
    assert decision.action == "alert" and "never lifts a person's hold" in decision.reason
    assert loop.decided(state, decision).hold == person
    assert not loop.needs_replay(state, outcome(2, "regressed", day(1)), POLICY, None)
    assert loop.Hold.from_store({"reason": "old", "created_at": None}).by == "person"


def test_the_guard_alerts_when_the_day_cannot_be_replayed():
    """Defect 7: without the replay the guard does not act on the day-to-day comparison."""
    state = history((1, "A", "as_predicted"), (2, "B", "regressed"))
    target = loop.rollback_target(state)
    assert loop.needs_replay(state, outcome(2, "regressed", day(1)), POLICY, target)
    decision = loop.decide(
        state, outcome(2, "regressed", day(1)), POLICY, target, None, "another hash seed"
    )
    assert decision.action == "alert" and "(another hash seed)" in decision.reason
    assert "acts only when the replay confirms" in decision.reason
    # the replay says the traffic changed: no action
    quiet = loop.decide(state, outcome(2, "regressed", day(1)), POLICY, target, (0.5, 0.45))
    assert quiet.action is None and "the traffic changed, not the plan" in quiet.reason


def test_regression_days_count_nights_under_the_same_routing_across_versions():
    """Defect 8: a version is published most nights; the nights count by routing content."""
    policy = replace(POLICY, regression_days=2)
    state = history((1, "A", "as_predicted"), (2, "B", "regressed"))
    target = loop.rollback_target(state)
    assert loop.decide(state, outcome(2, "regressed", day(1)), policy, target).action is None
    state = night(state, 2, 3, "B", "no_traffic")  # neither counts nor breaks the run
    state = night(state, 3, 4, "B", "regressed")  # v4 routes as v2: the same routing
    assert state.regressed_nights == 2 and state.in_force.since == day(1)
    decision = loop.decide(state, outcome(4, "regressed", day(3)), policy, target, (0.9, 0.0))
    assert decision.action == "rollback"
    fresh = night(state, 4, 5, "C", "regressed")  # another routing starts from one
    assert fresh.regressed_nights == 1


def test_rollbacks_by_hand_are_remembered_with_their_night():
    v3 = table("A", 3, parent_version=2, restored_version=1, reason="rollback to v1: bad day",
               created_at="2026-11-05T09:00:00+00:00")  # fmt: skip
    v4 = table("B", 4, parent_version=3, restored_version=2,
               reason="rollback to v2: regression: …",
               created_at="2026-11-06T00:30:00+00:00")  # fmt: skip
    found = loop.rollbacks_by_hand([v3, v4, table("C", 5)], {2: "fp2", 3: "fp3"})
    assert found == (loop.RolledBack(2, "fp2", "2026-11-05", 1, "person"),)


def test_the_state_document_round_trips_and_refuses_garbage():
    state = history((1, "A", "as_predicted"), (2, "B", "regressed"))
    decision = loop.decide(
        state, outcome(2, "regressed", day(1)), POLICY, loop.rollback_target(state), (0.9, 0.0)
    )
    state = loop.done(loop.decided(state, decision), 3)
    assert loop.LoopState.from_document(state.to_document()) == state
    with pytest.raises(ValueError, match="not a loop state document"):
        loop.LoopState.from_document({"document_version": 1, "in_force": {"x": 1}})


class LoopMachine(RuleBasedStateMachine):
    """A stream's routing store in miniature (versions, LATEST, hold) driven night after night
    through the library's rules, as jobs/guard.py and jobs/publish.py drive them."""

    def __init__(self) -> None:
        super().__init__()
        self.versions: dict[int, RoutingTable] = {1: table("A", 1)}
        self.hold: loop.Hold | None = None
        self.written: dict[str, loop.LoopState] = {}
        self.n = 0  # nights run
        self.verdicts: dict[str, str] = {}
        self.candidates: dict[str, str] = {}
        self.rollbacks: list[tuple[str, int, str]] = []  # (night, from version, target fp)
        self.planned: list[tuple[str, int]] = []  # (night, version) published by a plan
        self.actions: list[tuple[str, int, str]] = []  # the guard's (night, version, action)
        self.policy = POLICY

    @initialize(
        on_regression=st.sampled_from(["rollback", "rollback", "hold", "alert"]),
        days=st.integers(1, 2),
        cooldown=st.integers(0, 4),
    )
    def a_policy(self, on_regression: str, days: int, cooldown: int) -> None:
        self.policy = replace(
            POLICY, on_regression=on_regression, regression_days=days, cooldown=cooldown
        )

    @property
    def latest(self) -> RoutingTable:
        return self.versions[max(self.versions)]

    def publish(self, routing: RoutingTable, **more) -> int:
        version = max(self.versions) + 1
        self.versions[version] = replace(routing, version=version,
                                         parent_version=self.latest.version, **more)  # fmt: skip
        return version

    def guard(self, n: int) -> tuple[loop.LoopState, bool]:
        """The guard's night ``n`` (jobs/guard.py's steps on this store)."""
        key = day(n)
        current = self.latest

        def decide_night() -> loop.LoopState:
            earlier = [d for d in self.written if d < key]
            base = self.written[max(earlier)] if earlier else loop.LoopState("s")
            newer = [self.versions[v] for v in sorted(self.versions) if v > base.seen_version]
            prints = {v: t.fingerprint() for v, t in self.versions.items()}
            observed = loop.Night(
                key, outcome(current.version, self.verdicts[key], key), current.fingerprint(),
                self.hold, loop.rollbacks_by_hand(newer, prints), max(self.versions),
            )  # fmt: skip
            state = loop.observe(base, observed)
            parent = self.versions.get(current.parent_version)
            before = loop.InForce(parent.version, parent.fingerprint(), "") if parent else None
            target = loop.rollback_target(state, before)
            target_table = self.versions[target.version] if target else None
            blocked = loop.unrestorable(target_table, current) if target_table else None
            decision = loop.decide(
                state, observed.outcome, self.policy, target, (0.9, 0.0), None, blocked
            )
            if decision.action == "rollback":  # never back to a routing rolled back from
                assert target.fingerprint not in loop.rolled_back_fingerprints(state)
                assert target.fingerprint != current.fingerprint()
            return loop.decided(state, decision)

        def act(state: loop.LoopState) -> loop.LoopState:
            decision = state.decision
            self.actions.append((key, decision.version, decision.action))
            published = None
            if decision.action == "rollback":
                target = self.versions[decision.restore_version]
                assert loop.unrestorable(target, self.latest) is None  # never onto a drain
                if not self.latest.same_routing(target):
                    reason = f"rollback to v{target.version}: {decision.reason}"
                    published = self.publish(target, restored_version=target.version, reason=reason)
                    self.rollbacks.append((key, decision.version, target.fingerprint()))
            if decision.hold:
                self.hold = loop.Hold("guard", decision.reason, key, self.latest.version)
            return loop.done(state, published)

        return loop.run_night(self.written.get(key), decide_night,
                              lambda s: self.written.__setitem__(key, s), act)  # fmt: skip

    def plan_and_publish(self, n: int) -> None:
        """jobs/plan.py and jobs/publish.py: nothing for a stream the guard acted on tonight,
        nothing over a hold, nothing that routes as LATEST or as a routing cooling down."""
        key = day(n)
        state = self.written[key]
        candidate = table(self.candidates[key], 0)
        if loop.acted_tonight(state, key) or self.hold is not None:
            return
        if loop.publish_refusal(state, candidate, key, self.policy.cooldown):
            return
        if not candidate.same_routing(self.latest):
            self.planned.append((key, self.publish(candidate)))

    @rule(
        verdict=st.sampled_from(["regressed", "regressed", "as_predicted", "no_traffic"]),
        candidate=st.sampled_from(sorted(MAPS)),
    )
    def a_night(self, verdict: str, candidate: str) -> None:
        key = day(self.n)
        self.verdicts[key], self.candidates[key] = verdict, candidate
        person = self.hold if self.hold is not None and self.hold.by == "person" else None
        self.guard(self.n)
        assert person is None or self.hold == person  # the guard never lifts a person's hold
        self.plan_and_publish(self.n)
        self.n += 1

    @precondition(lambda self: self.n > 0)
    @rule()
    def rerun_the_last_night(self) -> None:
        """A rerun (or a retry of each task) of the last night: the same state; nothing rolled
        back or held again, and nothing published over the guard's action."""
        last = self.n - 1
        versions, hold, written = dict(self.versions), self.hold, self.written[day(last)]
        state, again = self.guard(last)
        assert again and state == written == self.written[day(last)]
        assert (self.versions, self.hold) == (versions, hold)
        self.plan_and_publish(last)
        if loop.acted_tonight(state, day(last)):
            assert self.versions == versions

    @rule(reason=st.sampled_from(["investigating", "freeze"]))
    def a_person_holds(self, reason: str) -> None:
        self.hold = loop.Hold("person", reason, None, self.latest.version)

    @rule()
    def a_person_lifts_the_hold(self) -> None:
        self.hold = None

    @rule(data=st.data())
    def a_person_rolls_back(self, data) -> None:
        older = [v for v in self.versions if v != self.latest.version]
        if not older:
            return
        version = data.draw(st.sampled_from(older))
        target = self.versions[version]
        if not self.latest.same_routing(target):
            self.publish(target, restored_version=version, reason=f"rollback to v{version}: bad",
                         created_at=day(self.n) + "T09:00:00+00:00")  # fmt: skip
            self.hold = None  # a person's rollback lifts the hold

    @rule()
    def a_worker_drains(self) -> None:
        """w2 goes to draining: a table routing nothing to it is published; a routing that sends
        load to w2 can no longer be restored (the guard alerts instead)."""
        drained = Workers((Worker("w0"), Worker("w1"), Worker("w2", state="draining")))
        if not self.latest.same_routing(table("D", 0, drained)):
            self.publish(table("D", 0, drained))

    @invariant()
    def never_two_rollbacks_from_the_same_bad_version(self) -> None:
        versions = [v for _, v, _ in self.rollbacks]
        assert len(versions) == len(set(versions))

    @invariant()
    def the_guard_acts_once_per_regressed_version(self) -> None:
        versions = [v for _, v, _ in self.actions]
        assert len(versions) == len(set(versions)), self.actions

    @invariant()
    def a_rolled_back_routing_is_not_published_by_a_plan_during_its_cooldown(self) -> None:
        for key, version in self.planned:
            fingerprint = self.versions[version].fingerprint()
            for rolled, bad, _ in self.rollbacks:
                if self.versions[bad].fingerprint() == fingerprint and rolled <= key:
                    assert loop.nights_between(rolled, key) >= self.policy.cooldown


TestLoopMachine = LoopMachine.TestCase
TestLoopMachine.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)  # fmt: skip


def test_a_routing_published_before_but_never_in_force_is_the_target_of_last_resort():
    """A bad table published by hand right after a night's version replaced it before any
    traffic: nothing realized well yet, so the rollback goes to the version it replaced — and
    only if the day, replayed through both, confirms it."""
    state = history((2, "B", "regressed"))
    replaced = loop.InForce(1, table("A", 1).fingerprint(), day(0))
    assert loop.rollback_target(state) is None
    assert loop.rollback_target(state, replaced) == replaced
    good = history((1, "C", "as_predicted"), (2, "B", "regressed"))
    assert loop.rollback_target(good, replaced).version == 1  # C's v1 realized well: first
    assert loop.rollback_target(good, replaced).fingerprint == table("C", 1).fingerprint()
