"""What each registered strategy is called in words, which paper it comes from, and what it
optimises: the Trigger form's strategy labels, the Routing page and ``routeplan explain`` read
them here, so a strategy has one name for people everywhere.

``describe(name)`` is a ``StrategyInfo``: its ``title`` ("Consistent Grouping"), ``paper``
("000"; None for a strategy no paper of docs/papers.md describes), its ``objective`` in one
sentence, the predicted metrics that are the terms of that objective (``terms``, names of a
table's ``predicted``) and the parameters that weigh them (``weights``, names of its
``params``). ``label(name)`` is the form's "cg — Consistent Grouping (paper 000)". Every
registered strategy must be listed (tests/test_catalog.py checks it against the registry).

``PARAMETERS`` says what each strategy parameter means and the values it takes, one entry per
parameter name (a name means the same in every strategy that takes it); its type and default
are the strategy's own fields. docs/reference/strategies.md is generated from both
(scripts/reference_docs.py), and every parameter of a registered strategy must be listed.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PARAMETERS", "STRATEGIES", "ParameterInfo", "StrategyInfo", "describe", "label"]

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


@dataclass(frozen=True)
class ParameterInfo:
    """A strategy parameter for people: the values it takes and what it means."""

    values: str
    meaning: str


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
    "lpt": StrategyInfo(
        "Longest Processing Time first on every window",
        None,
        "the lowest worst window of the day: units heaviest first, each onto the worker whose "
        "worst window rises least; hot keys too heavy for one worker split into equal pieces",
        (*_KEY_BALANCE, "hot_keys_split", "moves", "migrated_load_share"),
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


PARAMETERS: dict[str, ParameterInfo] = {
    "epsilon": ParameterInfo(
        ">= 0", "PoRC's ε: a worker takes load up to (1+ε) × its fair share (paper 000)"
    ),
    "hot_key_fraction": ParameterInfo(
        "(0, 1]", "a key is hot, and may be split, above this share of its worker's fair share"
    ),
    "max_salt": ParameterInfo(">= 1", "the most salted hash choices tried for one unit"),
    "virtual_workers_per_worker": ParameterInfo(
        ">= 1", "cg's α: α·n equal virtual workers are placed onto the n workers"
    ),
    "theta_busy": ParameterInfo(
        ">= 1", "θ_b: a worker above θ_b × its share of the load is busy and gives load away"
    ),
    "theta_idle": ParameterInfo(
        "[0, 1]", "θ_i: a worker below θ_i × its share of the load is idle and takes load"
    ),
    "pairing": ParameterInfo(
        "fcfs, exact",
        "how busy and idle workers pair: fcfs (paper 000 §V-B's queues) or exact (ours: by "
        "exact load ratios and capacities)",
    ),
    "tokens_per_worker": ParameterInfo(">= 1", "chbl's ring tokens per worker"),
    "split_share": ParameterInfo(
        "(0, 1]",
        "lpt: a hot key carrying more than this share of a window's fair share is split into "
        "equal pieces, each at most that share",
    ),
    "keep_within": ParameterInfo(
        ">= 0",
        "lpt: a unit stays on its current worker while that worker's worst window is within "
        "this many fair shares of the busiest window of the best; a plan gaining less moves "
        "nothing",
    ),
    "d": ParameterInfo(">= 1", "hashed worker choices per key (pkg) or per message (potc)"),
    "distinct_choices": ParameterInfo(
        "true, false", "ours: make a key's d choices differ (the paper lets them coincide)"
    ),
    "head_threshold": ParameterInfo(
        "(0, 1], null",
        "dchoices: a key whose share of the load is at least this is in the head; null: 1/(5W)",
    ),
    "fill": ParameterInfo(
        "(0, 1]", "dchoices: how full the hot keys' choices are planned (d_i = ⌈C_i·W/fill⌉)"
    ),
    "method": ParameterInfo(
        "halving, doubling",
        "ring: halve the hot worker's tokens or double everyone else's (paper 001 §4.2)",
    ),
    "tau": ParameterInfo(
        ">= 0", "ring's τ: rebalance while the top load exceeds the second's by more than τ"
    ),
    "initial_tokens": ParameterInfo("a power of 2", "ring: each new worker's tokens"),
    "max_rounds": ParameterInfo(">= 0", "ring: the most halving or doubling rounds per plan"),
    "variant": ParameterInfo(
        "paper, rounds",
        "flux: one pass of pairwise moves (paper 004 §2.2), or rounds (ours) of best-fitting "
        "moves until none helps",
    ),
    "w1": ParameterInfo("a number", "the MILP's weight of the load distance d (w1 ≫ w2: d first)"),
    "w2": ParameterInfo(
        "a number", "the MILP's weight of tightening both sides of the load distance (d_u + d_l)"
    ),
    "w_drain": ParameterInfo("a number", "the MILP's weight of the load left on draining workers"),
    "w_migration": ParameterInfo("a number", "the MILP's weight of the migration cost"),
    "max_load_distance": ParameterInfo(
        ">= 0, null",
        "the most load distance d, a share of the mean load (albic's maxLD); null: no bound",
    ),
    "resource_bounds": ParameterInfo(
        "resource → number, null",
        "per worker, the most of each resource column of the loads (bytes, cost_ms, "
        "distinct_keys) as a multiple of its fair share",
    ),
    "scale_in": ParameterInfo(
        "integrated, first",
        "draining workers emptied within the balancing model, or first (paper 004 §5.1)",
    ),
    "solver": ParameterInfo("highs, cbc", "the MILP solver"),
    "max_variables": ParameterInfo(
        ">= 1, null",
        "the whole model up to this many binaries, neighbourhoods of workers above it",
    ),
    "seed": ParameterInfo("an integer", "the seed of the neighbourhoods' random picks"),
    "full_model_share": ParameterInfo(
        "(0, 1]",
        "milp: the share of the time limit the whole model has before neighbourhoods take the "
        "rest, when it found nothing better than the warm start (1: never stopped)",
    ),
    "max_partition_load": ParameterInfo(
        "> 0", "albic's maxPL: a collocated set heavier than this share is split"
    ),
    "step_partition_load": ParameterInfo("> 0", "albic: the step by which maxPL is lowered"),
    "score_factor": ParameterInfo(
        "> 0", "albic's sF: how much a pair's messages weigh in its collocation score"
    ),
    "collocations_per_run": ParameterInfo(
        ">= 0", "albic: pairs collocated per plan (1: Algorithm 2; more: our variant)"
    ),
    "operator_groups": ParameterInfo(
        ">= 1, null", "albic: key groups per operator, when one stream holds several operators"
    ),
    "remote_cost": ParameterInfo(
        ">= 0", "albic: the cost of a message between workers against one within a worker"
    ),
    "consumer_capacity": ParameterInfo(
        "> 0, null", "C̄: a consumer's capacity in bytes/s (paper 002); null: the workers' capacity"
    ),
    "iteration_s": ParameterInfo(
        "> 0", "T: seconds an iteration lasts at steady rates (paper 002)"
    ),
    "rebalance_s": ParameterInfo(
        "[0, iteration_s)", "R: seconds a moved partition is unreadable after a rebalance"
    ),
    "rack_weight": ParameterInfo(
        ">= 0", "how much load read within its consumer's rack weighs (KIP-881); 0: racks ignored"
    ),
    "consumers": ParameterInfo(
        ">= 1, null", "the Kafka assignors' group size; null: the active workers"
    ),
}
