"""``pkg`` Partial Key Grouping (paper 003, Nasir et al.) and ``dchoices``, our head-key variant.

PKG (§3): every key has ``d`` hash choices ``H_1(k) … H_d(k)`` (``routeplan.model.hashing.
hash_choices``; ``H_1`` is key grouping's worker; ``d = 2`` by default as in the paper) and each
message goes to the less loaded of them — **key splitting** — by the load each source sees of its
own messages — **local load estimation** (§3.2). A key's state lives on at most ``d`` workers.
As in §5 the choices are ``d`` independent hashes, so they may coincide (probability ``1/W`` for
two): such a key has one worker, as under key grouping. ``distinct_choices=True`` (ours) draws
until the ``min(d, W)`` choices differ.

Paper 003's answer to extreme skew (§6.2 Q4, Fig. 9: "load balance … can be restored if the
number of choices is increased: from two to four when the workers are five, or to nine when the
workers are forty") is one larger, uniform ``d`` for every key: ``pkg`` with ``d``. Under skew a
key heavier than ``d/W`` of the stream overloads its choices whatever they do (§5: the bound
``p_1 ≤ d/W``).

``dchoices`` is **not** paper 003's scheme. Giving more choices to the **head** only — the keys
whose share is at least ``head_threshold`` (default ``1/(5W)``, the hypothesis ``p_1 ≤ 1/(5n)``
of Theorem 5.1) — follows the D-Choices idea of Nasir et al.'s later paper "When Two Choices Are
not Enough: Balancing at Scale in Distributed Stream Processing" (ICDE 2016, not one of our
papers), which picks one ``d`` for the whole head. The per-key count is **ours**: the ``i``-th
heaviest head key, with ``C_i`` the summed share of the head keys down to it, gets
``d_i = ⌈C_i · W / fill⌉`` distinct choices (at least 2, at most all ``W``): the heavier keys
together fill at most ``fill`` of the workers they may use, and a lighter head key has choices
beyond the workers its heavier peers load. Every other key keeps two. The head is at most ``5W``
keys, so the memory stays close to PKG's. Its choices are distinct (``d_i`` counts workers).

Batch tables (``placement``): each hot key is water-filled over its ``d`` (or ``d_i``) hash choices
— the limit of PKG's greedy choice on the snapshot's loads, so the weights are the parts the greedy
process would send to each choice — and each other key group is placed whole on the less loaded of
the group's own ``d`` choices. The planner balances load normalised by capacity; PKG's sources
(``routeplan.simulation``) count messages only. A published table lists every hot key's workers
explicitly, so producers route by the table and never recompute hash choices.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from routeplan.model.hashing import hash_choices
from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget, Plan
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.planning.contract import parameters
from routeplan.planning.keyrouting.placement import choices_plan
from routeplan.planning.registry import register


def head_choices(
    shares: Sequence[float], n: int, head_threshold: float | None = None, fill: float = 0.5
) -> list[int]:
    """How many distinct hash choices ``dchoices`` (ours) gives each key of the given stream
    shares among ``n``: ``d_i = ⌈C_i·n/fill⌉`` for a head key, 2 for the others."""
    threshold = 1.0 / (5 * n) if head_threshold is None else head_threshold
    result = [min(2, n)] * len(shares)
    head = sorted((i for i, x in enumerate(shares) if x >= threshold), key=lambda i: -shares[i])
    cumulative = 0.0
    for i in head:
        cumulative += shares[i]
        result[i] = max(min(2, n), min(n, math.ceil(cumulative * n / fill - 1e-12)))
    return result


class _ChoicePlanner:
    """A table from the keys' hash choices; ``choices(shares, n)`` says how many per hot key."""

    kind: ClassVar[str] = "key_routing"
    honours: ClassVar[frozenset[str]] = frozenset()
    name: ClassVar[str]

    def choices(self, shares: list[float], n: int) -> list[int]:
        raise NotImplementedError

    def uses_distinct_choices(self) -> bool:
        """``hash_choices(..., distinct=...)`` for every unit (paper 003 §5: independent)."""
        return False

    def plan(
        self,
        loads: LoadSnapshot,
        current: RoutingTable | None,
        workers: Workers,
        budget: Budget,
    ) -> Plan:
        seed = loads.hash_seed
        n = len(workers.active)
        keys = list(loads.hot_key_load)
        total = loads.total
        shares = [loads.hot_key_load[k] / total if total > 0 else 0.0 for k in keys]
        count = dict(zip(keys, self.choices(shares, n), strict=True))
        group_d = self.choices([0.0], n)[0]
        distinct = self.uses_distinct_choices()

        def hot(key: str, _share: float, n: int) -> list[int]:
            return hash_choices(key, count[key], n, seed, distinct)

        def group(g: int, n: int) -> list[int]:
            return hash_choices(f"g{g}", group_d, n, seed, distinct)

        return choices_plan(self.name, parameters(self), loads, current, workers, hot, group)


@register("pkg")
@dataclass(frozen=True)
class PartialKeyGrouping(_ChoicePlanner):
    """Key splitting over ``d`` independent hash choices (paper 003 §3, §5; ``d = 2`` as in the
    paper, a larger uniform ``d`` for extreme skew as in §6.2 Q4). ``distinct_choices=True`` (ours)
    makes the ``min(d, W)`` choices differ."""

    d: int = 2
    distinct_choices: bool = False

    def __post_init__(self) -> None:
        if self.d < 1:
            raise ValueError("d must be >= 1")
        object.__setattr__(self, "d", int(self.d))
        if not isinstance(self.distinct_choices, bool):
            raise ValueError("distinct_choices must be true or false")

    def uses_distinct_choices(self) -> bool:
        return self.distinct_choices

    def choices(self, shares: list[float], n: int) -> list[int]:
        return [min(self.d, n) if self.distinct_choices else self.d] * len(shares)


@register("dchoices")
@dataclass(frozen=True)
class DChoices(_ChoicePlanner):
    """PKG whose head keys get ``⌈C_i·W/fill⌉`` distinct choices, up to all workers — ours: the
    head-only idea follows Nasir et al. (ICDE 2016), the per-key count is ours; paper 003's own
    answer to skew (§6.2 Q4) is ``pkg`` with a larger uniform ``d``."""

    head_threshold: float | None = None
    fill: float = 0.5

    def __post_init__(self) -> None:
        if self.head_threshold is not None and not 0 < self.head_threshold <= 1:
            raise ValueError("head_threshold must be a share in (0, 1]")
        if not 0 < self.fill <= 1:
            raise ValueError("fill must be in (0, 1]")
        if self.head_threshold is not None:
            object.__setattr__(self, "head_threshold", float(self.head_threshold))
        object.__setattr__(self, "fill", float(self.fill))

    def uses_distinct_choices(self) -> bool:
        return True

    def choices(self, shares: list[float], n: int) -> list[int]:
        return head_choices(shares, n, self.head_threshold, self.fill)
