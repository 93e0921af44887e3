"""The closed loop's state of one stream, and the regression guard's rules as functions of it.

What outlives a night is data in one value, ``LoopState``, written to the routing store after
each night (``<stream>/loop-<night>.json``, ``RoutingStore.write_loop_state``):

* ``in_force`` — the routing in force on the last day observed: its version, its ``fingerprint``
  (``Table.fingerprint``: what it routes, capacities left out) and ``since``, the first day it
  was observed in force; ``previous`` — the routings in force before it, oldest first;
* ``last_good`` — the last routing whose realized outcome was good (``as_predicted``,
  ``improved`` or ``off_prediction``): where a rollback goes;
* ``rolled_back`` — every routing rolled back from, by the guard or by hand (``by``), with the
  night and the version restored: never restored again, never published again for ``cooldown``
  nights (``publish_refusal``);
* ``hold`` — the stream's hold as the store has it, with who put it (``by``: ``person`` or
  ``guard``): the guard never lifts a hold, and never acts over a person's (it alerts);
* ``regressed_nights`` — the nights in a row the routing in force regressed (nights without
  traffic neither count nor break the run): what ``regression_days`` waits for;
* ``regressions`` — the regressions the guard acted on: once per stint of a routing in force,
  and a second one within ``regression_window`` nights holds the stream;
* ``decision`` — the night's decision, with its inputs, ``status`` (``decided``: written before
  acting; ``done``: acted) and the version its rollback published.

A night (``jobs/guard.py``) folds its inputs into the state of the night before:
``observe`` → ``rollback_target`` → ``decide`` → ``decided`` (written) → the action →
``done`` (written). Any step may run twice: a rerun of a night starts from that night's written
state — a ``done`` decision is reported, never taken again, and a ``decided`` one is finished
(restore and hold are idempotent). The plan and publish jobs read the same state: nothing new is
planned for a stream the guard rolled back or held that night (``acted_tonight``), and a
candidate that routes as a rolled-back routing is kept out for its cooldown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import date
from typing import Any

from routeplan.model.table import Table
from routeplan.streams.outcomes import Outcome
from routeplan.streams.policy import StreamPolicy

GOOD_VERDICTS = ("as_predicted", "improved", "off_prediction")
ACTORS = ("person", "guard")
MAX_PREVIOUS = 30  # routings in force remembered before the current one
MAX_REMEMBERED = 200  # rollbacks and regressions remembered (the oldest are dropped)
GUARD_REASON = "regression"  # a guard rollback's reason: "rollback to vN: regression: …"
DOCUMENT_VERSION = 1


@dataclass(frozen=True)
class InForce:
    """A routing that was in force: its (newest) version, fingerprint, and the first day seen."""

    version: int
    fingerprint: str
    since: str


@dataclass(frozen=True)
class RolledBack:
    """A routing rolled back from (``version``, ``fingerprint``) on ``night``, to ``restored``."""

    version: int
    fingerprint: str
    night: str
    restored: int | None
    by: str  # one of ACTORS


@dataclass(frozen=True)
class Hold:
    """A hold of the stream: who put it, why, when, and the LATEST it holds."""

    by: str  # one of ACTORS
    reason: str
    since: str | None = None
    version: int | None = None

    @classmethod
    def from_store(cls, doc: Mapping[str, Any] | None) -> Hold | None:
        """From ``RoutingStore.held``'s document (a hold without ``by`` is a person's)."""
        if doc is None:
            return None
        by = doc.get("by") if doc.get("by") in ACTORS else "person"
        return cls(by, str(doc.get("reason") or ""), doc.get("created_at"), doc.get("version"))


@dataclass(frozen=True)
class Regression:
    """A regression the guard acted on: the night, the version, its routing, the action."""

    night: str
    version: int
    fingerprint: str
    action: str


@dataclass(frozen=True)
class Decision:
    """What the guard decided on ``night`` about ``version`` (``action`` None: nothing)."""

    night: str
    version: int | None
    action: str | None  # rollback, hold or alert
    restore_version: int | None
    hold: bool  # the guard holds the stream (on_regression hold, or a repeated regression)
    reason: str
    inputs: Mapping[str, Any] = field(default_factory=dict)
    status: str = "done"  # "decided": not acted yet; "done"
    published_version: int | None = None

    def entry(self, stream: str) -> dict[str, Any]:
        """The decision as a report entry (``reports/<day>/guard.json``)."""
        return {
            "stream": stream,
            "version": self.version,
            "action": self.action,
            "restore_version": self.restore_version,
            "hold": self.hold,
            "reason": self.reason,
            "published_version": self.published_version,
            "status": self.status,
        }


@dataclass(frozen=True)
class Night:
    """What a night observed of a stream: the main version in force on the day (the most
    traffic) with its outcome and routing fingerprint, the store's hold, the rollbacks by hand
    published since the last night, and the newest version in the store."""

    night: str
    outcome: Outcome | None = None
    fingerprint: str | None = None
    hold: Hold | None = None
    rollbacks: tuple[RolledBack, ...] = ()
    latest_version: int | None = None


@dataclass(frozen=True)
class LoopState:
    """One stream's loop state after ``night`` (see the module docstring)."""

    stream: str
    night: str | None = None
    in_force: InForce | None = None
    previous: tuple[InForce, ...] = ()
    last_good: InForce | None = None
    rolled_back: tuple[RolledBack, ...] = ()
    hold: Hold | None = None
    regressed_nights: int = 0
    regressions: tuple[Regression, ...] = ()
    seen_version: int = 0
    decision: Decision | None = None

    def to_document(self) -> dict[str, Any]:
        return {"document_version": DOCUMENT_VERSION, **asdict(self)}

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> LoopState:
        """The state a ``to_document`` wrote; ``ValueError`` naming what is wrong otherwise."""
        try:
            if doc.get("document_version") != DOCUMENT_VERSION:
                raise ValueError(f"document_version {doc.get('document_version')!r}")

            def one(kind, value):
                return None if value is None else kind(**value)

            decision = doc.get("decision")
            return cls(
                stream=str(doc["stream"]),
                night=doc.get("night"),
                in_force=one(InForce, doc.get("in_force")),
                previous=tuple(InForce(**p) for p in doc.get("previous") or ()),
                last_good=one(InForce, doc.get("last_good")),
                rolled_back=tuple(RolledBack(**r) for r in doc.get("rolled_back") or ()),
                hold=one(Hold, doc.get("hold")),
                regressed_nights=int(doc.get("regressed_nights") or 0),
                regressions=tuple(Regression(**r) for r in doc.get("regressions") or ()),
                seen_version=int(doc.get("seen_version") or 0),
                decision=one(Decision, decision),
            )
        except (KeyError, TypeError, AttributeError, ValueError) as err:
            raise ValueError(f"not a loop state document ({err})") from None


def nights_between(earlier: str, later: str) -> int:
    """Whole days from ``earlier`` to ``later`` (YYYY-MM-DD each)."""
    return (date.fromisoformat(later) - date.fromisoformat(earlier)).days


def observe(base: LoopState, night: Night) -> LoopState:
    """``base`` (the state after the night before) with what ``night`` observed. The night's
    decision is not taken yet (``decision`` None)."""
    state = replace(
        base,
        night=night.night,
        hold=night.hold,
        rolled_back=_merged(base.rolled_back, night.rollbacks),
        seen_version=max(base.seen_version, night.latest_version or 0),
        decision=None,
    )
    o, fingerprint = night.outcome, night.fingerprint
    if o is None or fingerprint is None or o.verdict == "unknown":
        return state
    in_force, previous, streak = state.in_force, state.previous, state.regressed_nights
    if in_force is None or in_force.fingerprint != fingerprint:
        if in_force is not None:
            previous = (*previous, in_force)[-MAX_PREVIOUS:]
        in_force, streak = InForce(o.version, fingerprint, night.night), 0
    elif in_force.version != o.version:  # the same routing, published again (a restore)
        in_force = replace(in_force, version=o.version)
    last_good = state.last_good
    if o.verdict == "regressed":
        streak += 1
    elif o.verdict in GOOD_VERDICTS:
        streak, last_good = 0, InForce(o.version, fingerprint, night.night)
    return replace(
        state, in_force=in_force, previous=previous, regressed_nights=streak, last_good=last_good
    )


def _merged(known: tuple[RolledBack, ...], seen: Sequence[RolledBack]) -> tuple[RolledBack, ...]:
    versions = {r.version for r in known}
    return (*known, *(r for r in seen if r.version not in versions))[-MAX_REMEMBERED:]


def rolled_back_fingerprints(state: LoopState) -> set[str]:
    return {r.fingerprint for r in state.rolled_back}


def rollback_target(state: LoopState, published_before: InForce | None = None) -> InForce | None:
    """Where a rollback goes: the last good routing, else the newest routing in force before
    the current one, else ``published_before`` (the version the current one replaced when it
    was published, though never seen in force: a table published by hand the night after may
    replace it before any traffic) — never the current routing, never one rolled back from.
    The guard acts only when the day, replayed through the target, confirms it does better."""
    if state.in_force is None:
        return None
    bad = rolled_back_fingerprints(state) | {state.in_force.fingerprint}
    for candidate in (state.last_good, *reversed(state.previous), published_before):
        if candidate is not None and candidate.fingerprint not in bad:
            return candidate
    return None


def unrestorable(target: Table, current: Table) -> str | None:
    """Why ``target``'s routing cannot replace ``current``'s (None: it can): it would send load to
    a worker ``current`` no longer has, or to one ``current`` drains."""
    now = {w.name: w.state for w in current.workers_of().items}
    gone = [w.name for w in target.workers_of().items if w.name not in now]
    if gone:
        return f"v{target.version} routes to workers v{current.version} no longer has: " + (
            ", ".join(gone)
        )
    draining = [
        w.name
        for w in target.workers_of().items
        if w.state == "active" and now[w.name] == "draining"
    ]
    if draining:
        return f"v{target.version} routes to workers being drained: {', '.join(draining)}"
    return None


def decide(
    state: LoopState,
    outcome: Outcome | None,
    policy: StreamPolicy,
    target: InForce | None,
    replayed: tuple[float, float] | None = None,
    unreplayable: str | None = None,
    not_restorable: str | None = None,
) -> Decision:
    """The guard's decision for the night ``state`` observed (``observe``), from the main
    version's ``outcome``, the ``rollback_target`` (``not_restorable``: why its routing cannot
    replace the current one, ``unrestorable``), and the day replayed through the current
    routing and the target (``replayed``: their mean headline measure; ``unreplayable``: why
    there is none). The rules, in order:

    1. no regression, or fewer than ``regression_days`` regressed nights in a row under the
       routing in force → nothing;
    2. the guard already acted on this routing's regression while it has been in force →
       nothing (reruns and later nights do not act twice);
    3. the stream is held: by the guard → nothing (a person decides); by a person → alert only
       (the guard never lifts or overrides a person's hold);
    4. no version to return to, one that routes to workers gone or draining, or no replay of
       the day through both → alert, no action (the guard acts only on a confirmed regression);
    5. the target, replayed on the same day's traffic, would not have done better by more than
       the tolerance → nothing (the traffic changed, not the plan);
    6. otherwise ``on_regression``: alert, hold, or rollback to the target; a second regression
       within ``regression_window`` nights of one the guard acted on also holds the stream
       after its rollback, until a person acts.
    """
    inputs = _inputs(state, outcome, target, replayed, unreplayable, not_restorable)
    early = _without_replay(state, outcome, policy, target, not_restorable, inputs)
    if early is not None:
        return early
    assert outcome is not None and target is not None
    night = state.night or ""
    version = outcome.version
    reason = _regression(outcome, policy.regression_tolerance)
    if replayed is None:
        why = unreplayable or "no replay"
        return _decision(
            state, outcome, inputs, "alert",
            f"{reason}; the day cannot be replayed through v{version} and v{target.version} "
            f"({why}): the guard acts only when the replay confirms; alert, no action",
        )  # fmt: skip
    ours, theirs = replayed
    same_day = (
        f"{outcome.interval_start}'s traffic replayed through both, mean {outcome.measure} "
        f"v{version} {ours:.4f}, v{target.version} {theirs:.4f}"
    )
    if ours - theirs <= policy.regression_tolerance:
        return _decision(
            state, outcome, inputs, None,
            f"v{version} did worse than the day before it came into force, but "
            f"v{target.version} would not have done better on the same traffic by more than "
            f"{policy.regression_tolerance:.2f} ({same_day}): the traffic changed, not the "
            "plan; no action",
        )  # fmt: skip
    reason += f"; {same_day}"
    if policy.on_regression == "alert":
        return _decision(state, outcome, inputs, "alert", reason)
    if policy.on_regression == "hold":
        return _decision(
            state, outcome, inputs, "hold", f"{reason}; v{version} held until a person acts",
            hold=True,
        )  # fmt: skip
    repeated = [
        r
        for r in state.regressions
        if r.action != "alert" and 0 < nights_between(r.night, night) <= policy.regression_window
    ]
    again = (
        f"; a second regression within {policy.regression_window} nights (v{repeated[-1].version}"
        f" on {repeated[-1].night}): held until a person acts"
        if repeated
        else ""
    )
    return _decision(
        state, outcome, inputs, "rollback", f"{reason}; back to v{target.version}'s routing{again}",
        restore_version=target.version, hold=bool(repeated),
    )  # fmt: skip


def needs_replay(
    state: LoopState,
    outcome: Outcome | None,
    policy: StreamPolicy,
    target: InForce | None,
    not_restorable: str | None = None,
) -> bool:
    """Whether ``decide`` weighs the day's replay (rules 1–4 leave the decision open): the
    replay, a Spark backtest, is run only then."""
    return _without_replay(state, outcome, policy, target, not_restorable, {}) is None


def _decision(state, outcome, inputs, action, reason, **more) -> Decision:
    status = "done" if action is None else "decided"
    version = outcome.version if outcome is not None else None
    return Decision(state.night or "", version, action, more.get("restore_version"),
                    more.get("hold", False), reason, inputs, status)  # fmt: skip


def _without_replay(state, outcome, policy, target, not_restorable, inputs) -> Decision | None:
    """Rules 1–4 of ``decide``: the decision they take, or None when the replay decides."""
    if outcome is None or outcome.verdict != "regressed" or state.in_force is None:
        verdict = outcome.verdict if outcome is not None else "no outcome"
        shown = f"v{outcome.version}: {verdict}" if outcome is not None else verdict
        return _decision(state, outcome, inputs, None, shown)
    version = outcome.version
    fingerprint, since = state.in_force.fingerprint, state.in_force.since
    if state.regressed_nights < policy.regression_days:
        return _decision(
            state, outcome, inputs, None,
            f"v{version} regressed on {state.regressed_nights} of the {policy.regression_days} "
            "nights in a row (under the same routing) the policy waits for",
        )  # fmt: skip
    acted = [r for r in state.regressions if r.fingerprint == fingerprint and r.night >= since]
    if acted:
        return _decision(
            state, outcome, inputs, None,
            f"v{version}: the guard already acted on this routing's regression on "
            f"{acted[-1].night} ({acted[-1].action})",
        )  # fmt: skip
    reason = _regression(outcome, policy.regression_tolerance)
    if state.hold is not None:
        if state.hold.by == "guard":
            return _decision(
                state,
                outcome,
                inputs,
                None,
                f"{reason}; held by the guard since {state.hold.since}",
            )
        return _decision(
            state, outcome, inputs, "alert",
            f"{reason}; held by a person ({state.hold.reason}): the guard never lifts a "
            "person's hold, alert only",
        )  # fmt: skip
    if target is None:
        return _decision(
            state, outcome, inputs, "alert",
            f"{reason}; no version to return to (none realized well and was not rolled back "
            "from): alert, no action",
        )  # fmt: skip
    if not_restorable is not None:
        return _decision(state, outcome, inputs, "alert", f"{reason}; {not_restorable}: alert, "
                         "no action")  # fmt: skip
    return None


def _regression(outcome: Outcome, tolerance: float) -> str:
    return (
        f"regression: v{outcome.version}'s realized {outcome.measure} over "
        f"{outcome.interval_start} {_shown(outcome.realized_day)} is worse than the day before it "
        f"came into force ({_shown(outcome.previous_realized_day)}) by more than {tolerance:.2f} "
        f"(busiest window {_shown(outcome.realized)}, predicted {_shown(outcome.predicted)})"
    )


def _inputs(state, outcome, target, replayed, unreplayable, not_restorable) -> dict[str, Any]:
    """What a decision was taken on, kept with it."""
    found: dict[str, Any] = {"regressed_nights": state.regressed_nights}
    if outcome is not None:
        for name in ("verdict", "measure", "realized", "realized_day", "previous_realized_day"):
            found[name] = getattr(outcome, name)
    found["target"] = target.version if target is not None else None
    found["replayed"] = list(replayed) if replayed is not None else None
    found["unreplayable"] = unreplayable
    found["not_restorable"] = not_restorable
    return found


def decided(state: LoopState, decision: Decision) -> LoopState:
    """The state with the night's ``decision`` recorded (before acting): the regression acted
    on, the routing rolled back from, the guard's hold."""
    if decision.action is None or state.in_force is None:
        return replace(state, decision=decision)
    fingerprint = state.in_force.fingerprint
    version = decision.version if decision.version is not None else state.in_force.version
    regression = Regression(decision.night, version, fingerprint, decision.action)
    rolled_back = state.rolled_back
    if decision.action == "rollback":
        gone = RolledBack(version, fingerprint, decision.night, decision.restore_version, "guard")
        rolled_back = _merged(rolled_back, [gone])
    hold = state.hold
    if decision.hold:
        hold = Hold("guard", decision.reason, decision.night, version)
    return replace(
        state,
        decision=decision,
        regressions=(*state.regressions, regression)[-MAX_REMEMBERED:],
        rolled_back=rolled_back,
        hold=hold,
    )


def done(state: LoopState, published_version: int | None = None) -> LoopState:
    """The state once the night's decision was acted on (``published_version``: the version
    its rollback published, or the LATEST that already routed as the target)."""
    if state.decision is None:
        return state
    return replace(
        state,
        decision=replace(state.decision, status="done", published_version=published_version),
    )


def run_night(
    written: LoopState | None,
    decide_night: Callable[[], LoopState],
    write: Callable[[LoopState], None],
    act: Callable[[LoopState], LoopState],
) -> tuple[LoopState, bool]:
    """One stream's night, however often it runs: ``written`` is the state a run of this night
    already wrote (None: none did). A decision already taken stands (``again`` True); else the
    night is decided (``decide_night``: ``observe`` … ``decided``) and written before acting.
    A decision not done yet — this run's, or one a failed run left — is acted on (``act``:
    idempotent) and the state written again. Returns the state and ``again``: an earlier run
    of the night had taken and done the decision (its alert was sent then)."""
    taken = written is not None and written.decision is not None
    state = written if taken else decide_night()
    assert state is not None and state.decision is not None
    if not taken:
        write(state)
    again = taken and state.decision.status == "done"
    if state.decision.status == "decided":
        state = act(state)
        write(state)
    return state, again


def acted_tonight(state: LoopState | None, night: str) -> str | None:
    """The guard's rollback or hold of ``night`` (nothing new is planned or published for the
    stream that night), as its action; None otherwise."""
    if state is None or state.night != night or state.decision is None:
        return None
    action = state.decision.action
    return action if action in ("rollback", "hold") else None


def publish_refusal(
    state: LoopState | None, candidate: Table, night: str, cooldown: int
) -> str | None:
    """Why ``candidate`` must not be published on ``night`` (None: it may): it routes as a
    routing rolled back from less than ``cooldown`` nights before."""
    if state is None:
        return None
    fingerprint = candidate.fingerprint()
    for gone in reversed(state.rolled_back):
        if gone.fingerprint == fingerprint and nights_between(gone.night, night) < cooldown:
            return (
                f"the plan routes as v{gone.version}, rolled back on {gone.night} by the "
                f"{'regression guard' if gone.by == 'guard' else 'operator'}: not published "
                f"again for {cooldown} nights (cooldown)"
            )
    return None


def rollbacks_by_hand(
    tables: Sequence[Table], fingerprints: Mapping[int, str | None]
) -> tuple[RolledBack, ...]:
    """The rollbacks a person published among ``tables`` (versions the loop has not seen yet):
    a version with ``restored_version`` whose reason is not the guard's. ``fingerprints`` maps a
    version to its routing's fingerprint (None when the version is gone)."""
    found = []
    for table in tables:
        if table.restored_version is None or table.parent_version is None:
            continue
        why = (table.reason or "").partition(": ")[2]
        if why.startswith(GUARD_REASON):
            continue
        fingerprint = fingerprints.get(table.parent_version)
        if fingerprint is None:
            continue
        night = (table.created_at or "")[:10]
        found.append(
            RolledBack(table.parent_version, fingerprint, night, table.restored_version, "person")
        )
    return tuple(found)


def _shown(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"
