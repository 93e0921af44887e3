"""PoRC, the Power of Random Choices (paper 000 §V-A, Alg. 1): a unit goes to the first of its
salted hash choices ``H(u + 1), H(u + 2), …`` with room for it under its bound; a hot key too
heavy for one choice is split over several.

Shared by two strategies: ``porc`` (``bounded_loads``) places straight onto workers
(``porc_place``, ``porc_split``); ``cg`` (``consistent_grouping``) places onto virtual workers
(``place_whole``, ``place_hot_key``, ``hot_key_pieces``).
"""

from __future__ import annotations

import numpy as np

from routeplan.model.hashing import salted_choice

_EPS = 1e-12


def first_with_room(
    unit: str, load: float, virtual_worker_load: np.ndarray, bound: np.ndarray, max_salt: int
) -> int | None:
    """Paper 000 Alg. 1's scan: the first of ``unit``'s salted choices ``H(unit + 1), …,
    H(unit + max_salt)`` with room for ``load`` under its ``bound``; None when none has."""
    n = virtual_worker_load.size
    for salt in range(1, max_salt + 1):
        choice = salted_choice(unit, salt, n)
        if virtual_worker_load[choice] + load <= bound[choice] + _EPS:
            return choice
    return None


def porc_choice(
    unit: str,
    load: float,
    virtual_worker_load: np.ndarray,
    capacity: float | np.ndarray,
    max_salt: int,
) -> int:
    """Paper 000 Alg. 1 for one unit: the first of its salted choices with room for ``load``
    under ``capacity`` (one bound for every bin or one per bin, ``first_with_room``); when none
    has room, the least loaded of them. Changes nothing."""
    n = virtual_worker_load.size
    bound = np.broadcast_to(capacity, (n,))
    choice = first_with_room(unit, load, virtual_worker_load, bound, max_salt)
    if choice is not None:
        return choice
    tried = [salted_choice(unit, salt, n) for salt in range(1, max_salt + 1)]
    return min(tried, key=lambda c: virtual_worker_load[c] / bound[c])


def porc_place(
    unit: str,
    load: float,
    virtual_worker_load: np.ndarray,
    capacity: float | np.ndarray,
    max_salt: int,
) -> int:
    """``porc_choice``, its load added to ``virtual_worker_load`` in place."""
    choice = porc_choice(unit, load, virtual_worker_load, capacity, max_salt)
    virtual_worker_load[choice] += load
    return choice


def porc_split(
    key: str,
    load: float,
    virtual_worker_load: np.ndarray,
    capacity: float | np.ndarray,
    max_salt: int,
) -> list[tuple[int, float]]:
    """Spread one hot key over its salted choices, filling their spare capacity (PoRC for a key
    whose messages overflow its principal virtual worker). Returns ``(virtual worker, load)``."""
    n = virtual_worker_load.size
    bound = np.broadcast_to(capacity, (n,))
    pieces: dict[int, float] = {}
    remaining = load
    for salt in range(1, max_salt + 1):
        if remaining <= _EPS:
            break
        choice = salted_choice(f"key:{key}", salt, n)
        take = min(bound[choice] - virtual_worker_load[choice], remaining)
        if take > _EPS:
            virtual_worker_load[choice] += take
            pieces[choice] = pieces.get(choice, 0.0) + take
            remaining -= take
    if remaining > _EPS:
        choice = int(np.argmin(virtual_worker_load / bound))
        virtual_worker_load[choice] += remaining
        pieces[choice] = pieces.get(choice, 0.0) + remaining
    return sorted(pieces.items())


def hot_key_pieces(load: float, capacity: float) -> int:
    """How many virtual workers a hot key needs at least: ``⌈load / capacity⌉`` with
    ``capacity = (1 + ε)·total / V``, i.e. ``⌈p_k · V / (1 + ε)⌉`` (paper 000 §VI-B, Eq. 2).
    With ``capacity`` a worker's, ``α`` of them, the workers it needs: ``⌈p_k · W / (1 + ε)⌉``."""
    if not np.isfinite(capacity) or capacity <= 0:
        return 1
    return max(1, int(np.ceil(load / capacity - 1e-9)))


def place_whole(
    unit: str,
    load: float,
    virtual_worker_load: np.ndarray,
    capacity: float | np.ndarray,
    max_salt: int,
    owner: np.ndarray | None = None,
) -> int:
    """Alg. 1 for an indivisible unit in the batch planner: the first of its salted choices with
    room for ``load`` under ``capacity`` (one bound, or one per virtual worker); when none has
    room, the virtual worker with the most room of the worker (``owner``) with the most room of
    all — a worker's load, not a virtual worker's, is what the imbalance counts, and its other
    virtual workers lend their room (``consistent_grouping``). That one has room whenever
    ``load ≤ ε·total/V`` (equal bounds), so small units never break the ε bound. Adds the
    load; returns the virtual worker."""
    bound = np.broadcast_to(capacity, virtual_worker_load.shape)
    choice = first_with_room(unit, load, virtual_worker_load, bound, max_salt)
    if choice is None:
        room = bound - virtual_worker_load
        if owner is not None and np.any(owner >= 0):
            placed = np.flatnonzero(owner >= 0)
            by_worker = np.bincount(owner[placed], weights=room[placed])
            roomiest = placed[owner[placed] == int(np.argmax(by_worker))]
            choice = int(roomiest[np.argmax(room[roomiest])])
        else:
            choice = int(np.argmax(room))
    virtual_worker_load[choice] += load
    return choice


def place_hot_key(
    key: str,
    load: float,
    virtual_worker_load: np.ndarray,
    capacity: float,
    max_salt: int,
    bound: np.ndarray | None = None,
    owner: np.ndarray | None = None,
) -> list[tuple[int, float]]:
    """A hot key on as few workers as its load needs (paper 000 §V-A, §VI-B; issue 32).

    The key's salted sequence ``H(key + 1), H(key + 2), …`` names virtual workers (Alg. 1); the
    first whose worker (``owner``) has room for the rest of the key, or is empty, takes it: the
    key fills that virtual worker, then the worker's other virtual workers (most room first), up
    to their bounds, before the next choice opens another worker. So a key on empty workers
    takes ``⌈load / (α·capacity)⌉ = ⌈p_k·W/(1+ε)⌉`` workers, not one per virtual-worker piece
    (``⌈p_k·V/(1+ε)⌉`` pieces used to land on as many distinct workers). A rest no choice
    takes fills the workers with the most room (so a hot key never breaks the ε bound while
    ``V·capacity ≥ total``). Without ``owner`` each virtual worker is its own worker. Adds the
    load; returns ``(virtual worker, load)`` sorted. ``bound``: each virtual worker's bound
    when not ``capacity`` for all."""
    n = virtual_worker_load.size
    bound = np.broadcast_to(capacity if bound is None else bound, virtual_worker_load.shape)
    owner = np.arange(n) if owner is None else np.asarray(owner)
    if load <= _EPS:  # an idle key still needs a worker: its principal choice
        choice = salted_choice(f"key:{key}", 1, n)
        virtual_worker_load[choice] += load
        return [(choice, load)]
    room = np.clip(bound - virtual_worker_load, 0.0, None)
    placed = owner >= 0
    workers = max(int(owner.max(initial=-1)) + 1, 1)
    worker_room = np.bincount(owner[placed], weights=room[placed], minlength=workers)
    worker_bound = np.bincount(owner[placed], weights=bound[placed], minlength=workers)
    pieces: dict[int, float] = {}
    rest = load
    tiny = _EPS * max(load, 1.0)

    def fill(first: int) -> None:
        nonlocal rest
        w = owner[first]
        siblings = np.flatnonzero(owner == w) if w >= 0 else np.array([first])
        order = [first] + [int(v) for v in siblings[np.argsort(-room[siblings], kind="stable")]]
        for v in dict.fromkeys(order):
            take = min(room[v], rest)
            if take > tiny:
                virtual_worker_load[v] += take
                pieces[v] = pieces.get(v, 0.0) + take
                room[v] -= take
                if w >= 0:
                    worker_room[w] -= take
                rest -= take
            if rest <= tiny:
                return

    used: set[int] = set()
    for salt in range(1, max_salt + 1):
        if rest <= tiny:
            break
        choice = salted_choice(f"key:{key}", salt, n)
        w = int(owner[choice])
        if w < 0:  # a virtual worker whose worker left: on its own
            if room[choice] >= rest - tiny:
                fill(choice)
            continue
        if w in used or worker_room[w] < min(rest, worker_bound[w]) - tiny:
            continue
        used.add(w)
        fill(choice)
    if rest > tiny:  # no choice had room for the rest: the roomiest workers take it
        by_room = np.argsort(-worker_room, kind="stable")
        for w in by_room.tolist():
            if worker_room[w] <= tiny or rest <= tiny:
                break
            members = np.flatnonzero(owner == w)
            fill(int(members[np.argmax(room[members])]))
    if rest > tiny:  # no room anywhere (ε = 0 rounding, or unplaced virtual workers)
        choice = int(np.argmin(virtual_worker_load - bound))
        virtual_worker_load[choice] += rest
        pieces[choice] = pieces.get(choice, 0.0) + rest
    return sorted(pieces.items())
