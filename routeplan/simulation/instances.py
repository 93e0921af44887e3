"""The evaluation instances of paper 004 (§5.1, §5.3), shared by ``bench/paper004_milp.py`` and
the tests: key groups evenly spread over equal workers, then loads made uneven (§5.1) or key
groups made to talk (§5.3); and Zipf loads on key grouping's placement (issue 32's size)."""

from __future__ import annotations

import numpy as np

from routeplan.model.flow import flow_arrays
from routeplan.model.hashing import key_groups
from routeplan.model.loads import LoadSnapshot
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers


def varies_instance(
    workers: int = 10, varies: float = 0.4, seed: int = 0, per_worker: int = 20, stream: str = "s"
) -> tuple[LoadSnapshot, RoutingTable, Workers]:
    """§5.1: "Key groups are evenly allocated … The load of each key group is initially set to
    the mean, which is then adjusted by a percentage, randomly chosen from the range [−5%, 5%]
    … we further adjust the load on 20% of the nodes … Half of the nodes whose load are changed
    gets a reduction of 0.5·varies in their load and the other half gets an increase".

    ``per_worker`` key groups per worker (group ``g`` on worker ``g mod workers``); on 20 % of the
    workers (at least two), half of their groups, "a randomly selected set", take the worker's
    change of ±``varies``/2 of its load. Returns the loads, the current table, the workers."""
    rng = np.random.default_rng(seed)
    groups = workers * per_worker
    owner = np.arange(groups) % workers
    load = 1.0 + rng.uniform(-0.05, 0.05, groups)
    changed = rng.choice(workers, max(2, workers // 5), replace=False)
    for k, w in enumerate(changed):
        on = np.flatnonzero(owner == w)
        picked = rng.choice(on, on.size // 2, replace=False)
        delta = (0.5 if k % 2 else -0.5) * varies * load[on].sum()
        load[picked] += delta / picked.size
    load = np.clip(load, 0.0, None)
    ws = Workers.homogeneous(workers)
    return LoadSnapshot(stream, load), table_of(owner, ws, stream), ws


def flow_instance(
    workers: int = 8,
    groups: int = 96,
    operators: int = 4,
    one_to_one: float = 0.6,
    seed: int = 0,
    stream: str = "s",
) -> tuple[LoadSnapshot, np.ndarray, Workers]:
    """§5.3: the §5.1 set-up, "except that we control the maximum obtainable collocation by
    ensuring x% of the key groups to have 1-1 communication": ``operators`` in a chain of
    ``groups / operators`` key groups each; a group sends everything to one partner of the next
    operator with probability ``one_to_one``, else spreads it evenly over that operator (full
    partitioning). Returns the loads with their flow, a random even placement (group → worker
    index) and the workers."""
    rng = np.random.default_rng(seed)
    per = groups // operators
    load = 1.0 + rng.uniform(-0.05, 0.05, groups)
    edges = []
    for o in range(operators - 1):
        partner = rng.permutation(per)
        for k in range(per):
            g = o * per + k
            out = 100.0 * load[g]
            if rng.random() < one_to_one:
                edges.append((g, (o + 1) * per + partner[k], out))
            else:
                edges += [(g, (o + 1) * per + j, out / per) for j in range(per)]
    flow, anchors = flow_arrays(groups, edges)
    owner = rng.permutation(np.arange(groups) % workers)
    snapshot = LoadSnapshot(stream, load, key_group_flow=flow, flow_anchors=anchors)
    return snapshot, owner, Workers.homogeneous(workers)


def zipf_instance(
    groups: int = 800,
    workers: int = 40,
    exponent: float = 0.65,
    seed: int = 0,
    keys: int = 50_000,
    messages: int = 5_000_000,
    stream: str = "s",
) -> tuple[LoadSnapshot, RoutingTable, Workers]:
    """Zipf loads before a first plan: ``messages`` drawn from ``keys`` keys with
    ``f(r) ∝ r^−exponent``, hashed into ``groups`` key groups, group ``g`` on worker
    ``g mod workers`` (key grouping's placement) of equal workers. Returns the loads, the current
    table, the workers."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, keys + 1) ** exponent
    counts = rng.multinomial(messages, p / p.sum())
    group = key_groups([f"k{i}" for i in range(keys)], groups)
    load = np.bincount(group, weights=counts, minlength=groups).astype(float)
    ws = Workers.homogeneous(workers)
    return LoadSnapshot(stream, load), table_of(np.arange(groups) % workers, ws, stream), ws


def table_of(owner: np.ndarray, workers: Workers, stream: str = "s") -> RoutingTable:
    """The key-routing table placing group ``g`` on worker index ``owner[g]``."""
    names = workers.names
    return RoutingTable(stream, "evaluation", workers, tuple(names[i] for i in owner))
