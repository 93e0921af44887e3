"""``Router.route_many`` with numpy: a batch decided in a few array passes, exactly as one
``route`` per key decides it (routeplan_client.router imports this module when numpy is
installed; without numpy ``route_many`` loops over ``route``).

Keys are hashed in one pass; only keys whose hash is a split key's are looked up. The split ones
are decided in order by ``route``'s rule, the local load of a candidate at each being the counts
before the batch, plus the batch's plain messages before it (searchsorted in the plain positions
sorted by worker), plus the batch's earlier split decisions.
"""

from __future__ import annotations

import threading
from itertools import repeat
from typing import Any

import mmh3
import numpy as np

from routeplan_client.splitting import split_to


def arrays(routes: Any) -> dict[str, Any]:
    """The numpy forms of a compiled table (``router._Routes``), built on the first batch and
    kept with it: ``group_slot`` (key group → slot), ``split_group`` (key group → holds a hot
    key), ``split_hashes`` (the split keys' hashes, sorted), ``candidate_slots`` (split key →
    its candidates' slots, short rows padded with their first), ``names`` (slot → name)."""
    found = routes.arrays
    if found:
        return found
    names = routes.table.worker_names
    dtype = np.int16 if len(names) < 2**15 - 1 else np.int32  # int16 argsorts by radix
    width = max((len(c[0]) for c in routes.candidates), default=1)
    found.update(
        group_slot=np.array(routes.group_slot, dtype=dtype),
        split_group=_holding(routes.split_groups, routes.table.num_key_groups),
        split_hashes=np.unique(hash_array(list(routes.split), routes.table.hash_seed)),
        candidate_slots=np.array(
            [c[0] + c[0][:1] * (width - len(c[0])) for c in routes.candidates], dtype=dtype
        ).reshape(len(routes.candidates), width),
        names=np.array(names, dtype=object),
    )
    return found


def _holding(groups: frozenset, n: int) -> np.ndarray:
    """Key group → whether it is one of ``groups``, as a bool array of ``n``."""
    holding = np.zeros(n, dtype=bool)
    holding[sorted(groups)] = True
    return holding


def hash_array(keys: list[str], seed: int) -> np.ndarray:
    """Unsigned 32-bit Murmur3 of many keys, one C call each, as a uint32 array."""
    return np.fromiter(map(mmh3.hash, keys, repeat(seed), repeat(False)), np.uint32, len(keys))


def route_many(routes: Any, keys: list[str], lock: threading.Lock) -> list[str]:
    """``[route(k) for k in keys]`` for the compiled table ``routes``, its counts updated as
    those calls would leave them (under ``lock``)."""
    a = arrays(routes)
    table = routes.table
    hashes = hash_array(keys, table.hash_seed)
    groups = hashes % np.uint32(table.num_key_groups)
    slots = a["group_slot"][groups]
    counts = routes.counts
    if counts is None:  # no split key: no decision, no local load
        return a["names"][slots].tolist()
    # a key may be split if its group holds one, and its hash is one's
    maybe = np.flatnonzero(a["split_group"][groups])
    near = np.searchsorted(a["split_hashes"], hashes[maybe]) % len(a["split_hashes"])
    maybe = maybe[a["split_hashes"][near] == hashes[maybe]]
    get = routes.split.get
    found = np.array([get(keys[i], -1) for i in maybe.tolist()], dtype=np.int64)
    positions, ids = maybe[found >= 0], found[found >= 0]
    with lock:
        if len(positions):
            slots[positions] = _decide_split(routes, a, slots, positions, ids)
        sent = np.bincount(slots, minlength=len(counts))
        for slot in np.flatnonzero(sent).tolist():
            counts[slot] += float(sent[slot])
    return a["names"][slots].tolist()


def _decide_split(
    routes: Any, a: dict[str, Any], slots: np.ndarray, positions: np.ndarray, ids: np.ndarray
) -> list[int]:
    """Slots of the split messages at ``positions`` (ascending; ``ids`` index candidates)."""
    counts = routes.counts
    assert counts is not None  # a table with split keys counts
    n, last = len(slots), len(a["names"])
    marked = slots.copy()
    marked[positions] = last  # sorts after every worker: not a plain message
    order = np.argsort(marked, kind="stable")
    ranked = marked[order].astype(np.int64) * n + order  # plain (slot, position), ascending
    start = np.concatenate(([0], np.cumsum(np.bincount(marked, minlength=last + 1))))
    cand = a["candidate_slots"][ids]  # (split messages, width)
    query = (cand.astype(np.int64) * n + positions[:, None]).ravel()
    by_slot = np.argsort(cand.ravel(), kind="stable")  # sorted queries search faster
    plain_before = np.empty_like(query)
    plain_before[by_slot] = np.searchsorted(ranked, query[by_slot])
    plain_before = plain_before.reshape(cand.shape) - start[cand]
    loads = (np.asarray(counts, dtype=np.int64)[cand] + plain_before).ravel().tolist()
    decided = [0] * len(counts)  # split messages of this batch so far, per slot
    out = []
    if cand.shape[1] == 2:  # d = 2 (PKG's choice): split_to's rule, unrolled
        pairs = [(c[0][0], c[0][-1], c[1][0], c[1][-1]) for c in routes.candidates]
        for i, first_load, second_load in zip(ids.tolist(), loads[0::2], loads[1::2]):
            first, second, first_capacity, second_capacity = pairs[i]
            slot = (
                second
                if (second_load + decided[second]) / second_capacity
                < (first_load + decided[first]) / first_capacity
                else first
            )
            decided[slot] += 1
            out.append(slot)
        return out
    current = [0] * len(counts)  # the local load of each candidate, refreshed
    for i, k in zip(ids.tolist(), range(0, len(loads), cand.shape[1])):
        cand_slots, capacities = routes.candidates[i]
        for slot in cand_slots:  # flat rows, not lists: no allocation per message
            current[slot] = loads[k] + decided[slot]
            k += 1
        slot = split_to(cand_slots, capacities, current)
        decided[slot] += 1
        out.append(slot)
    return out
