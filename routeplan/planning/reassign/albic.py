"""``albic``: Autonomic Load Balancing with Integrated Collocation (paper 004 §4.3.2, Algorithm 2).

Key groups that exchange many messages (``LoadSnapshot.key_group_flow``) are brought onto one
worker, one pair per plan, while the ``milp`` keeps the load distance low:

1. **Scores** (lines 2–12): for each upstream key group ``g``, ``avg = out(g) / #downstream key
   groups``; a pair ``(g, h)`` counts when ``out(g, h) > avg·sF`` — collocated now
   (``colGrps``) or not yet (``toBeColGrps``).
2. **Maintain** (lines 14–20): collocated pairs merge into sets (connected components); a set
   splits into ``max(⌈Σ mc / maxMigrCost⌉, ⌈Σ gLoad / maxPL⌉)`` partitions by balanced graph
   partitioning (recursive bisection minimising the cut messages, :func:`balanced_partition`, in
   place of METIS), each of which then moves as a unit.
3. **Improve** (lines 22–32): the uncollocated pair with the most messages (ties at random) is
   pinned to the less loaded of its two workers — or to the worker of the one that belongs to a
   partition. ``collocations_per_run`` (default 1, the paper's) pairs per plan; a pair whose
   move does not fit the budget gives way to the next.
4. **Solve** (lines 34–37): the MILP with these units; if its load distance exceeds ``maxLD``,
   again with ``maxPL − stepPL``, down to ``maxPL ≤ 0``: the plain MILP, no collocation.

Units: ``max_load_distance`` (maxLD), ``max_partition_load`` (maxPL) and
``step_partition_load`` (stepPL) are shares of the mean load of a worker of capacity 1 (the
paper's defaults 10, 25, 5 percentage points → 0.10, 0.25, 0.05); ``maxMigrCost`` is what is left
of the budget (migration cost, else moves). The routing tables of the flow's other streams are
fixed here: a key group of another stream (a flow anchor) counts as a partition pinned to its
worker (case 2 of step 3).

Reported: ``collocation_factor`` (share of the flow's messages between collocated groups, §5.3)
and ``load_index`` — the predicted system load over the current one when each message between
workers costs ``remote_cost`` load units (serialisation and deserialisation, §4.3.2), the
paper's "current average system load divided by" a reference one (§5).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import BUDGET_LIMITS, Budget, Plan
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.planning.contract import parameters
from routeplan.planning.metrics import collocation_factor
from routeplan.planning.reassign.milp import Milp
from routeplan.planning.reassign.milp_model import distance
from routeplan.planning.reassign.reassignment import Reassignment, Units
from routeplan.planning.registry import register


@dataclass(frozen=True)
class FlowGraph:
    """The flow between key groups: nodes ``0 … groups−1`` are the snapshot's groups, then one
    node per flow anchor (worker index, −1 when that worker is not listed)."""

    groups: int
    ends: np.ndarray  # (E, 2) int
    messages: np.ndarray  # (E,)
    anchor_worker: np.ndarray  # (A,) int

    @classmethod
    def of(cls, loads: LoadSnapshot, workers: Workers) -> FlowGraph:
        flow = loads.key_group_flow
        if flow is None:
            flow = np.zeros((0, 3))
        index = workers.index()
        anchors = np.array([index.get(w, -1) for w in loads.flow_anchors], dtype=np.int64)
        keep = flow[:, 2] > 0
        return cls(loads.num_key_groups, flow[keep, :2].astype(np.int64), flow[keep, 2], anchors)

    @property
    def nodes(self) -> int:
        return self.groups + self.anchor_worker.size

    def adjacency(self, nodes: np.ndarray) -> np.ndarray:
        """Dense symmetric matrix of the messages between ``nodes`` (in their order)."""
        local = np.full(self.nodes, -1, dtype=np.int64)
        local[nodes] = np.arange(nodes.size)
        a, b = local[self.ends[:, 0]], local[self.ends[:, 1]]
        inside = (a >= 0) & (b >= 0)
        matrix = np.zeros((nodes.size, nodes.size))
        np.add.at(matrix, (a[inside], b[inside]), self.messages[inside])
        return matrix + matrix.T

    def node_worker(self, group_worker: np.ndarray) -> np.ndarray:
        return np.concatenate([group_worker, self.anchor_worker])

    def candidates(self, score_factor: float, operator_groups: int | None) -> np.ndarray:
        """Step 1: edges with ``out(g, h) > avg(g)·sF``, ``avg(g) = out(g) / #downstream groups``
        (the downstream operators' groups when ``operator_groups`` lays operators out as
        consecutive blocks of that many groups; else this stream's groups)."""
        up, down = self.ends[:, 0], self.ends[:, 1]
        out = np.bincount(up, weights=self.messages, minlength=self.nodes)
        if operator_groups:
            operator = np.where(
                np.arange(self.nodes) < self.groups,
                np.arange(self.nodes) // operator_groups,
                -1 - np.arange(self.nodes),
            )
            size = {}
            for o in np.unique(operator):
                size[int(o)] = int(np.sum(operator == o)) if o >= 0 else 1
            fan = {}
            pairs = set(zip(operator[up].tolist(), operator[down].tolist(), strict=True))
            for o_up, o_down in pairs:
                fan[o_up] = fan.get(o_up, 0) + size[o_down]
            downstream = np.array([fan.get(int(o), 1) for o in operator[up]], dtype=float)
        else:
            downstream = np.full(up.size, float(self.groups))
        return self.messages > out[up] / downstream * score_factor


def components(nodes: int, ends: np.ndarray) -> list[np.ndarray]:
    """Step 2 ``calcSets``: connected components (of two nodes or more) of the given edges."""
    parent = np.arange(nodes)

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, b in ends:
        ra, rb = find(int(a)), find(int(b))
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    roots = np.array([find(i) for i in range(nodes)])
    touched = np.unique(ends) if ends.size else np.zeros(0, dtype=np.int64)
    sets: dict[int, list[int]] = {}
    for node in touched:
        sets.setdefault(int(roots[node]), []).append(int(node))
    return [np.array(s) for s in sets.values() if len(s) > 1]


def balanced_partition(
    weight: np.ndarray, adjacency: np.ndarray, parts: int, tolerance: float = 0.03
) -> np.ndarray:
    """Labels ``0 … parts−1`` for the vertices of a weighted graph (dense symmetric
    ``adjacency``): parts of about equal weight with few cut edges, by recursive bisection — each
    bisection grows a region from the heaviest-connected vertex, taking the frontier vertex most
    tied to it (greedy graph growing), then moves boundary vertices that cut less while the
    balance stays within ``tolerance`` of the total (or one vertex's weight)."""
    weight = np.asarray(weight, dtype=float)
    labels = np.zeros(weight.size, dtype=np.int64)

    def split(nodes: np.ndarray, k: int, first: int) -> None:
        if k <= 1 or nodes.size <= 1:
            labels[nodes] = first
            return
        k = min(k, nodes.size)
        half = k // 2
        side = _bisect(weight[nodes], adjacency[np.ix_(nodes, nodes)], half / k, tolerance)
        split(nodes[side], half, first)
        split(nodes[~side], k - half, first + half)

    split(np.arange(weight.size), max(int(parts), 1), 0)
    return labels


def _bisect(weight: np.ndarray, adj: np.ndarray, share: float, tolerance: float) -> np.ndarray:
    n = weight.size
    total = weight.sum()
    target = share * total if total > 0 else share * n
    w = weight if total > 0 else np.ones(n)
    inside = np.zeros(n, dtype=bool)
    tie = np.zeros(n)  # edge weight to the region
    filled = 0.0
    while filled < target - 1e-12 and not inside.all():
        frontier = np.flatnonzero(~inside & (tie > 0))
        if frontier.size == 0:
            frontier = np.flatnonzero(~inside)
            pick = frontier[np.argmax(adj[frontier].sum(axis=1) + w[frontier] * 1e-9)]
        else:
            gain = 2 * tie[frontier] - adj[frontier].sum(axis=1)
            pick = frontier[np.argmax(gain)]
        if filled > 0 and filled + w[pick] - target > target - filled:
            break  # adding it overshoots more than leaving it out
        inside[pick] = True
        filled += w[pick]
        tie += adj[pick]
    if inside.all() and n > 1:
        inside[np.argmin(w)] = False
    slack = max(tolerance * w.sum(), w.max(initial=0.0))
    for _ in range(10):
        to_in = adj[:, inside].sum(axis=1)
        to_out = adj[:, ~inside].sum(axis=1)
        gain = np.where(inside, to_out - to_in, to_in - to_out)  # cut saved by switching side
        moved = False
        for v in np.argsort(-gain):
            if gain[v] <= 1e-12:
                break
            after = filled - w[v] if inside[v] else filled + w[v]
            if abs(after - target) <= slack and 0 < inside.sum() + (-1 if inside[v] else 1) < n:
                inside[v] = not inside[v]
                filled = after
                moved = True
                break
        if not moved:
            break
    return inside


@register("albic")
@dataclass(frozen=True)
class Albic:
    """ALBIC (paper 004 §4.3.2, Algorithm 2) on top of the ``milp`` strategy.

    Its own parameters (module docstring): ``max_load_distance`` (maxLD), ``max_partition_load``
    (maxPL), ``step_partition_load`` (stepPL), ``score_factor`` (sF), ``collocations_per_run``,
    ``operator_groups``, ``remote_cost``; the others are the :class:`Milp` it solves with
    (:attr:`milp`). Every limit is the ``Budget``'s."""

    kind: ClassVar[str] = "key_routing"
    honours: ClassVar[frozenset[str]] = frozenset(BUDGET_LIMITS)

    max_load_distance: float = 0.10
    max_partition_load: float = 0.25
    step_partition_load: float = 0.05
    score_factor: float = 1.5
    collocations_per_run: int = 1
    operator_groups: int | None = None
    remote_cost: float = 1.0
    w1: float = 1000.0
    w2: float = 1.0
    w_drain: float = 10.0
    w_migration: float = 1.0
    resource_bounds: Mapping[str, float] | None = None
    solver: str = "highs"
    max_variables: int | None = 800
    seed: int = 0

    def __post_init__(self) -> None:
        if not (
            self.max_load_distance >= 0
            and self.max_partition_load > 0
            and self.step_partition_load > 0
        ):
            raise ValueError("need max_load_distance >= 0, max/step_partition_load > 0")
        if self.score_factor <= 0 or self.collocations_per_run < 0 or self.remote_cost < 0:
            raise ValueError("need score_factor > 0, collocations_per_run >= 0, remote_cost >= 0")
        if self.operator_groups is not None and self.operator_groups < 1:
            raise ValueError("operator_groups must be >= 1")
        object.__setattr__(self, "resource_bounds", self.milp.resource_bounds)  # checks the rest

    @property
    def milp(self) -> Milp:
        """The MILP of Algorithm 2's step 4 (no hard cap on the load distance: maxLD only
        decides whether to try again with smaller partitions)."""
        return Milp(
            w1=self.w1,
            w2=self.w2,
            w_drain=self.w_drain,
            w_migration=self.w_migration,
            resource_bounds=self.resource_bounds,
            solver=self.solver,
            max_variables=self.max_variables,
            seed=self.seed,
        )

    def plan(
        self,
        loads: LoadSnapshot,
        current: RoutingTable | None,
        workers: Workers,
        budget: Budget,
    ) -> Plan:
        milp = self.milp
        problem = milp.instance(loads, current, workers, budget)
        graph = FlowGraph.of(loads, workers)
        rng = np.random.default_rng(self.seed)
        candidates = graph.candidates(self.score_factor, self.operator_groups)
        now = graph.node_worker(problem.group_owner)
        ends = graph.ends[candidates]
        together = (now[ends[:, 0]] == now[ends[:, 1]]) & (now[ends[:, 0]] >= 0)
        col_sets = components(graph.nodes, ends[together])
        to_collocate = self._pair_order(ends[~together], graph.messages[candidates][~together], rng)

        deadline = time.perf_counter() + budget.time_limit_s
        max_pl = self.max_partition_load
        attempts = 0
        while True:
            attempts += 1
            last = max_pl <= 1e-12
            if last:
                units, pins = Units.build(problem), 0
            else:
                units, pins = self._units(problem, graph, col_sets, to_collocate, max_pl)
            remaining = max(deadline - time.perf_counter(), 0.1)
            outcome = milp.optimise(problem, units, remaining if last else remaining / 2)
            if last or distance(problem, units, outcome.assign) <= self.max_load_distance:
                break
            max_pl -= self.step_partition_load  # Algorithm 2 line 36
        group_worker = units.group_worker(outcome.assign)
        extra = {
            **outcome.extra(),
            **self._flow_metrics(loads, current, group_worker, graph),
            "partitions": float(np.sum(np.bincount(units.of_group) > 1)),
            "pinned_pairs": float(pins),
            "max_partition_load": max(max_pl, 0.0),
            "albic_attempts": float(attempts),
        }
        params = {**parameters(self), "resource_bounds": dict(self.resource_bounds or {})}
        return problem.finish(self.name, group_worker, params, outcome.state(), extra)

    @staticmethod
    def _pair_order(ends: np.ndarray, messages: np.ndarray, rng: np.random.Generator):
        """Step 3's order: most messages first, ties at random (Algorithm 2 line 22)."""
        order = np.lexsort((rng.random(messages.size), -messages))
        return ends[order]

    def _units(
        self,
        problem: Reassignment,
        graph: FlowGraph,
        col_sets: list[np.ndarray],
        to_collocate: np.ndarray,
        max_pl: float,
    ) -> tuple[Units, int]:
        """Steps 2–3: partitions of the collocated sets as units, and pinned pairs."""
        groups = graph.groups
        unit_of = np.arange(groups)  # group → unit label (a group index names its unit)
        pin: dict[int, int] = {}  # unit label → worker
        left = problem.budget_left
        dim = 2 if np.isfinite(left[2]) else 0
        max_cost = left[dim]
        fair = problem.fair
        for members in col_sets:
            inner = members[members < groups]
            if inner.size == 0:
                continue
            cost = problem.group_spend[inner, dim].sum()
            weight_load = problem.group_load[inner] / fair
            p1 = int(np.ceil(cost / max_cost)) if np.isfinite(max_cost) and max_cost > 0 else 1
            p2 = int(np.ceil(weight_load.sum() / max_pl))
            parts = max(p1, p2, 1)
            labels = np.zeros(members.size, dtype=np.int64)
            if parts > 1:
                by_cost = np.isfinite(max_cost) and cost / max_cost > weight_load.sum() / max_pl
                weight = np.zeros(members.size)
                is_group = members < groups
                weight[is_group] = (
                    problem.group_spend[members[is_group], dim] if by_cost else weight_load
                )
                labels = balanced_partition(weight, graph.adjacency(members), parts)
            for part in np.unique(labels):
                nodes = members[labels == part]
                part_groups = nodes[nodes < groups]
                if part_groups.size == 0:
                    continue
                unit_of[part_groups] = part_groups[0]
                anchored = graph.anchor_worker[nodes[nodes >= groups] - groups]
                anchored = anchored[anchored >= 0]
                if anchored.size and problem.active[anchored[0]]:
                    pin[int(part_groups[0])] = int(anchored[0])
        pairs = self._pin_pairs(problem, graph, unit_of, pin, to_collocate)
        labels, unit_index = np.unique(unit_of, return_inverse=True)
        members = [np.flatnonzero(unit_index == u) for u in range(labels.size)]
        position = {int(label): u for u, label in enumerate(labels)}
        units = Units.build(problem, members, {position[k]: w for k, w in pin.items()})
        return units, pairs

    def _pin_pairs(
        self,
        problem: Reassignment,
        graph: FlowGraph,
        unit_of: np.ndarray,
        pin: dict[int, int],
        to_collocate: np.ndarray,
    ) -> int:
        """Step 3 (in place on ``unit_of`` and ``pin``): pin up to ``collocations_per_run``
        pairs; returns how many."""
        groups = graph.groups
        owner = problem.group_owner
        owned = owner >= 0
        n = len(problem.workers)
        load = problem.base + np.bincount(
            owner[owned], weights=problem.group_load[owned], minlength=n
        )
        load = load / problem.capacity
        spent = np.zeros(3)
        done = 0
        for a, b in to_collocate:
            if done >= self.collocations_per_run:
                break
            sides = []
            for node in (int(a), int(b)):
                if node >= groups:
                    worker = int(graph.anchor_worker[node - groups])
                    sides.append((None, worker, True))
                else:
                    label = int(unit_of[node])
                    in_partition = np.sum(unit_of == label) > 1 or label in pin
                    worker = pin.get(label, int(owner[node]))
                    sides.append((label, worker, in_partition))
            (la, wa, pa), (lb, wb, pb) = sides
            if la is not None and la == lb:
                continue
            options = [wa] if pa and not pb else [wb] if pb and not pa else [wa, wb]
            options = [w for w in options if w >= 0 and problem.active[w]]
            if not options:
                continue
            target = min(options, key=lambda w: load[w])
            labels = [label for label in (la, lb) if label is not None]
            if any(pin.get(label, target) != target for label in labels):
                continue
            members = np.flatnonzero(np.isin(unit_of, labels))
            moving = members[(owner[members] >= 0) & (owner[members] != target)]
            cost = problem.group_spend[moving].sum(axis=0)
            if np.any(spent + cost > problem.budget_left):
                continue
            spent += cost
            merged = min(labels)
            unit_of[members] = merged
            for label in labels:
                pin.pop(label, None)
            pin[merged] = target
            done += 1
        return done

    def _flow_metrics(
        self,
        loads: LoadSnapshot,
        current: RoutingTable | None,
        group_worker: np.ndarray,
        graph: FlowGraph,
    ) -> dict[str, float]:
        if graph.messages.size == 0:
            return {}
        flow = float(graph.messages.sum())
        new = graph.node_worker(group_worker)
        collocated = float(graph.messages[new[graph.ends[:, 0]] == new[graph.ends[:, 1]]].sum())
        result = {"flow_messages": flow, "collocated_messages": collocated}
        if current is not None and current.num_key_groups == loads.num_key_groups:
            before = collocation_factor(current.key_group_worker, loads) or 0.0
            remote_before = (1.0 - before) * flow
            remote_after = flow - collocated
            total = loads.total
            base = total + self.remote_cost * remote_before
            if base > 0:
                result["current_collocation_factor"] = before
                result["load_index"] = (total + self.remote_cost * remote_after) / base
        return result
