"""What each registered strategy is called in words, which paper it comes from, and what it
optimises: the Trigger form's strategy labels, the Routing page and ``routeplan explain`` read
them here, so a strategy has one name for people everywhere.

``describe(name)`` is a ``StrategyInfo``: its ``title`` ("Consistent Grouping"), ``paper``
("000"; None for a strategy no paper of docs/papers.md describes), its ``objective`` in one
sentence, the predicted metrics that are the terms of that objective (``terms``, names of a
table's ``predicted``) and the parameters that weigh them (``weights``, names of its
``params``). ``label(name)`` is the form's "cg — Consistent Grouping (paper 000)". Every
registered strategy must be listed (tests/test_catalog.py checks it against the registry).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["STRATEGIES", "StrategyInfo", "describe", "label"]

_KEY_BALANCE = ("imbalance", "max_worker_load", "memory")
_BINS = ("consumers", "lower_bound", "overloaded", "rscore", "max_consumer_load")
_RACKS = ("cross_rack_fraction",)  # KIP-881: reported when racks are known


@dataclass(frozen=True)
class StrategyInfo:
    """A strategy for people: its title, paper, objective, objective terms and their weights."""

    title: str
    paper: str | None
    objective: str
    terms: tuple[str, ...] = ()
    weights: tuple[str, ...] = ()


def _fit(title: str, rule: str, racks: bool = True) -> StrategyInfo:
    return StrategyInfo(
        title,
        "002",
        f"fewest consumers with no consumer above the bin capacity C ({rule})"
        + ("; in-rack consumers first among those a partition fits" if racks else ""),
        (*_BINS, *_RACKS),
        ("rack_weight",) if racks else (),
    )


def _modified(title: str) -> StrategyInfo:
    return StrategyInfo(
        title,
        "002",
        "fewest consumers with no consumer above C, least rebalanced load (Rscore): previous "
        "consumers keep their partitions where they fit; migrating partitions go to in-rack "
        "consumers first",
        (*_BINS, "moves", "migrated_load_share", *_RACKS),
        ("rack_weight",),
    )


STRATEGIES: dict[str, StrategyInfo] = {
    "cg": StrategyInfo(
        "Consistent Grouping",
        "000",
        "every worker within (1+ε) of its share of the load, splitting only the hot keys that "
        "need it, moving as little as the budget allows",
        (*_KEY_BALANCE, "hot_keys_split", "moves", "migrated_load_share"),
        ("epsilon", "theta_busy", "theta_idle"),
    ),
    "porc": StrategyInfo(
        "Power of Random Choices",
        "000",
        "each key group on its first hashed worker under the (1+ε)·mean bound",
        _KEY_BALANCE,
        ("epsilon",),
    ),
    "chbl": StrategyInfo(
        "Consistent Hashing with Bounded Loads",
        "000",
        "key groups around a hash ring, none on a worker beyond (1+ε)·mean",
        _KEY_BALANCE,
        ("epsilon",),
    ),
    "potc": StrategyInfo(
        "Power of Two Choices",
        "000",
        "each message to the less loaded of d hashed workers",
        _KEY_BALANCE,
    ),
    "kg": StrategyInfo(
        "Key Grouping (hash partitioning)",
        "000",
        "none: a key's hash alone decides",
        ("imbalance",),
    ),
    "sg": StrategyInfo(
        "Shuffle Grouping",
        "000",
        "balance only: every key on every worker",
        ("imbalance", "memory"),
    ),
    "ring": StrategyInfo(
        "Consistent Hashing with token halving and doubling",
        "001",
        "move ring tokens from the most to the least loaded workers within the budget",
        (*_KEY_BALANCE, "moves", "migrated_load_share"),
    ),
    "pkg": StrategyInfo(
        "Partial Key Grouping",
        "003",
        "split each key over d hashed workers, each producer sending to the one it loaded least",
        (*_KEY_BALANCE, "hot_keys_split"),
    ),
    "dchoices": StrategyInfo(
        "D-Choices",
        "003",
        "PKG with as many choices for the hot keys as their load needs",
        (*_KEY_BALANCE, "hot_keys_split"),
    ),
    "milp": StrategyInfo(
        "Mixed-Integer Linear Program",
        "004",
        "min w1·d − w2·(d_u + d_l) + w_drain·(load left on draining workers) + w_migration·"
        "(migration cost): the load distance d first, then the rest, within the budget",
        ("load_distance", "imbalance", "moves", "migrated_load_share", "migration_cost"),
        ("w1", "w2", "w_drain", "w_migration", "max_load_distance"),
    ),
    "albic": StrategyInfo(
        "Adaptive Load Balancing with Integrated Collocation",
        "004",
        "the MILP's load distance within maxLD, then collocating key groups that exchange "
        "messages (score factor sF)",
        ("load_distance", "imbalance", "moves", "migrated_load_share", "collocation_factor"),
        ("max_load_distance", "score_factor"),
    ),
    "flux": StrategyInfo(
        "Flux",
        "004",
        "pairwise moves from the most to the least loaded worker while they lower the load "
        "distance, within the budget",
        ("load_distance", "imbalance", "moves", "migrated_load_share"),
    ),
    "nf": _fit("Next Fit", "arrival order, one open bin", racks=False),
    "ff": _fit("First Fit", "arrival order, the first bin that fits"),
    "bf": _fit("Best Fit", "arrival order, the fullest bin that fits"),
    "wf": _fit("Worst Fit", "arrival order, the emptiest bin that fits"),
    "nfd": _fit("Next Fit Decreasing", "largest first, one open bin", racks=False),
    "ffd": _fit("First Fit Decreasing", "largest first, the first bin that fits"),
    "bfd": _fit("Best Fit Decreasing", "largest first, the fullest bin that fits"),
    "wfd": _fit("Worst Fit Decreasing", "largest first, the emptiest bin that fits"),
    "mwf": _modified("Modified Worst Fit"),
    "mbf": _modified("Modified Best Fit"),
    "mwfp": _modified("Modified Worst Fit Partition"),
    "mbfp": _modified("Modified Best Fit Partition"),
    "binpack_milp": StrategyInfo(
        "Bin packing MILP (exact reference)",
        "002",
        "fewest consumers, then least Rscore less rack_weight × the load read in rack, solved "
        "exactly within the time limit",
        (*_BINS, "moves", *_RACKS),
        ("rack_weight",),
    ),
    "kafka_range": StrategyInfo(
        "Kafka RangeAssignor",
        None,
        "none: consecutive partitions per consumer, blind to load; with racks, KIP-881's "
        "in-rack partitions first",
        (*_BINS, *_RACKS),
        ("rack_weight",),
    ),
    "kafka_roundrobin": StrategyInfo(
        "Kafka RoundRobinAssignor",
        None,
        "none: partition i to consumer i mod n, blind to load and racks",
        (*_BINS, *_RACKS),
    ),
}


def describe(name: str) -> StrategyInfo:
    """``name``'s entry; a strategy not listed (a plugin's, say) is described by its name."""
    return STRATEGIES.get(name) or StrategyInfo(name, None, "not described")


def label(name: str) -> str:
    """``"cg — Consistent Grouping (paper 000)"``; without a paper, ``"kafka_range — Kafka
    RangeAssignor"``."""
    info = describe(name)
    paper = f" (paper {info.paper})" if info.paper else ""
    return f"{name} — {info.title}{paper}"
