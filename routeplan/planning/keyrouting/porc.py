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
    ``capacity = (1 + ε)·total / V``, i.e. ``⌈p_k · V / (1 + ε)⌉`` (paper 000 §VI-B, Eq. 2)."""
    if not np.isfinite(capacity) or capacity <= 0:
        return 1
    return max(1, int(np.ceil(load / capacity - 1e-9)))


def place_whole(
    unit: str,
    load: float,
    virtual_worker_load: np.ndarray,
    capacity: float | np.ndarray,
    max_salt: int,
) -> int:
    """Alg. 1 for an indivisible unit in the batch planner: the first of its salted choices with
    room for ``load`` under ``capacity`` (one bound, or one per virtual worker); when none has
    room, the virtual worker with the most room of all — which has room whenever
    ``load ≤ ε·total/V`` (equal bounds), so small units never break the ε bound. Adds the
    load; returns the virtual worker."""
    bound = np.broadcast_to(capacity, virtual_worker_load.shape)
    choice = first_with_room(unit, load, virtual_worker_load, bound, max_salt)
    if choice is None:
        choice = int(np.argmax(bound - virtual_worker_load))
    virtual_worker_load[choice] += load
    return choice


def place_hot_key(
    key: str,
    load: float,
    virtual_worker_load: np.ndarray,
    capacity: float,
    max_salt: int,
    bound: np.ndarray | None = None,
) -> list[tuple[int, float]]:
    """A hot key split over as few virtual workers as its load allows (paper 000 §V-A, §VI-B):
    ``⌈load / capacity⌉`` pieces — full virtual workers and the remainder, the parts Alg. 1's
    overflow of a key's messages makes — each placed by Alg. 1 on the key's salted sequence
    ``H(key + 1), H(key + 2), …`` (first choice with room for the piece, another piece's choice
    passed over). A piece no choice has room for fills the spare capacity of the least loaded
    virtual workers — so a hot key never breaks the ε bound (``V·capacity ≥ total``). Adds the
    load; returns ``(virtual worker, load)`` sorted. ``bound``: each virtual worker's bound when
    not ``capacity`` for all."""
    bound = np.broadcast_to(capacity if bound is None else bound, virtual_worker_load.shape)
    n_pieces = min(hot_key_pieces(load, capacity), virtual_worker_load.size)
    full = min(capacity, load / n_pieces) if n_pieces == virtual_worker_load.size else capacity
    sizes = [full] * (n_pieces - 1) + [load - full * (n_pieces - 1) if n_pieces > 1 else load]
    pieces: dict[int, float] = {}
    n = virtual_worker_load.size
    salt = 0
    for piece in sizes:
        placed = False
        while salt < max_salt and not placed:
            salt += 1
            choice = salted_choice(f"key:{key}", salt, n)
            if choice not in pieces and virtual_worker_load[choice] + piece <= bound[choice] + _EPS:
                virtual_worker_load[choice] += piece
                pieces[choice] = piece
                placed = True
        if placed:
            continue
        remaining = piece
        for choice in np.argsort(virtual_worker_load - bound, kind="stable").tolist():
            room = bound[choice] - virtual_worker_load[choice] if np.isfinite(capacity) else piece
            take = min(max(room, 0.0), remaining)
            if take > _EPS * max(piece, 1.0):
                virtual_worker_load[choice] += take
                pieces[choice] = pieces.get(choice, 0.0) + take
                remaining -= take
            if remaining <= _EPS * max(piece, 1.0):
                break
        if remaining > _EPS * max(piece, 1.0):  # no room anywhere (only with ε < 0 rounding)
            choice = int(np.argmin(virtual_worker_load))
            virtual_worker_load[choice] += remaining
            pieces[choice] = pieces.get(choice, 0.0) + remaining
    return sorted(pieces.items())
