"""Where a split key's message goes: the rule the router and its vectorised batch share."""

from __future__ import annotations


def split_to(slots: tuple[int, ...], capacities: tuple[float, ...], loads: list[float]) -> int:
    """The slot among ``slots`` with the smallest ``loads[slot] / capacity``, the first one on
    ties (paper 003 §3.2); counts the message in ``loads``."""
    if len(slots) == 2:  # PKG's d = 2, the common case, without the loop
        first, second = slots
        best = second if loads[second] / capacities[1] < loads[first] / capacities[0] else first
    else:
        best, best_load = slots[0], loads[slots[0]] / capacities[0]
        for i in range(1, len(slots)):
            load = loads[slots[i]] / capacities[i]
            if load < best_load:
                best, best_load = slots[i], load
    loads[best] += 1.0
    return best
