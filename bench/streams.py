"""Streams for the paper benchmarks: Zipf keys, stand-ins for paper 003's datasets, English words.

The papers' real datasets (paper 003 Table I: Wikipedia WP, Twitter TW, cashtags CT, the
LiveJournal and Slashdot graphs LJ, SL1, SL2, the log-normal LN1, LN2) are not redistributable.
``stand_in(name, messages)`` builds a Zipf stream with the dataset's **number of keys** and the
share ``p_1`` of its most frequent key — the property that drives PKG's results (§5: balance
holds while ``p_1 ≤ 2/W``) — and as many messages as asked (Table I's counts, up to 1.2G, are
out of reach of a few-minute run; the message count only lengthens the replay).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from routeplan.model.hashing import key_groups
from routeplan.model.loads import LoadSnapshot
from routeplan.simulation.events import Stream, zipf_stream


@dataclass(frozen=True)
class Dataset:
    """One row of paper 003 Table I."""

    symbol: str
    name: str
    messages: int
    keys: int
    top_share: float  # p_1


# Paper 003 Table I ("number of messages, number of keys and percentage of messages having the
# most frequent key (p1)"); ZF is the Zipf workload, built by ``zipf``.
TABLE_I = {
    d.symbol: d
    for d in (
        Dataset("WP", "Wikipedia", 22_000_000, 2_900_000, 0.0932),
        Dataset("TW", "Twitter", 1_200_000_000, 31_000_000, 0.0267),
        Dataset("CT", "Cashtags", 690_000, 2_900, 0.0329),
        Dataset("LJ", "LiveJournal", 69_000_000, 4_900_000, 0.0029),
        Dataset("SL1", "Slashdot0811", 905_000, 77_000, 0.0328),
        Dataset("SL2", "Slashdot0902", 948_000, 82_000, 0.0311),
        Dataset("LN1", "Lognormal 1", 10_000_000, 16_000, 0.1471),
        Dataset("LN2", "Lognormal 2", 10_000_000, 1_100, 0.0701),
    )
}
WP_TOP_SHARE = TABLE_I["WP"].top_share
WP_KEYS_PER_MESSAGE = TABLE_I["WP"].keys / TABLE_I["WP"].messages

_HEAD = 200_000  # ranks summed exactly; beyond, the sum is the integral over [r − ½, r + ½]


def zipf(messages: int, keys: int, exponent: float, seed: int = 0) -> Stream:
    """Paper 003 §6.1 ZF: ``f(r, K, z) ∝ 1/r^z`` over ``K`` keys."""
    return zipf_stream(messages, keys, exponent, seed)


def _tail_integral(a: float, b: float, z: float) -> float:
    """``∫_a^b x^(−z) dx``."""
    if abs(z - 1) < 1e-12:
        return float(np.log(b / a))
    return float((b ** (1 - z) - a ** (1 - z)) / (1 - z))


def _zipf_mass(z: float, keys: int) -> tuple[np.ndarray, float]:
    """The head ranks' weights ``r^−z`` (``r ≤ min(K, 200k)``) and the tail's summed weight."""
    head = np.arange(1, min(keys, _HEAD) + 1, dtype=float) ** -z
    tail = _tail_integral(_HEAD + 0.5, keys + 0.5, z) if keys > _HEAD else 0.0
    return head, tail


def exponent_for_top_share(top_share: float, keys: int) -> float:
    """The Zipf exponent whose most frequent key has share ``top_share`` among ``keys`` keys."""
    lo, hi = 0.0, 5.0
    for _ in range(60):
        z = (lo + hi) / 2
        head, tail = _zipf_mass(z, keys)
        if 1.0 / (head.sum() + tail) < top_share:
            lo = z
        else:
            hi = z
    return (lo + hi) / 2


def zipf_ranks(messages: int, keys: int, z: float, rng: np.random.Generator) -> np.ndarray:
    """``messages`` 0-based Zipf ranks over ``keys`` keys without a table of all ``K`` keys: the
    first 200k ranks exactly, the rest by inverting the tail integral (rounded to a rank)."""
    head, tail = _zipf_mass(z, keys)
    cdf = np.cumsum(head)
    u = rng.random(messages) * (cdf[-1] + tail)
    ranks = np.searchsorted(cdf, u, side="right")
    beyond = u >= cdf[-1]
    if beyond.any():
        f, a = u[beyond] - cdf[-1], _HEAD + 0.5  # solve ∫_a^x t^(−z) dt = f for x
        one = abs(z - 1) < 1e-12
        x = a * np.exp(f) if one else (a ** (1 - z) + (1 - z) * f) ** (1 / (1 - z))
        ranks[beyond] = np.floor(x + 0.5).astype(np.int64) - 1
    return np.clip(ranks, 0, keys - 1)


def zipf_drawn(messages: int, keys: int, z: float, seed: int = 0, prefix: str = "k") -> Stream:
    """A Zipf stream over ``keys`` keys in which only the keys drawn get a name (so 1M or 31M
    keys cost what the messages cost)."""
    ranks = zipf_ranks(messages, keys, z, np.random.default_rng(seed))
    drawn, ids = np.unique(ranks, return_inverse=True)
    return Stream(ids.astype(np.int64), [f"{prefix}{r}" for r in drawn.tolist()])


def stand_in(symbol: str, messages: int, seed: int = 0) -> Stream:
    """A Zipf stream with Table I's key count and ``p_1`` for dataset ``symbol``."""
    data = TABLE_I[symbol]
    z = exponent_for_top_share(data.top_share, data.keys)
    return zipf_drawn(messages, data.keys, z, seed, symbol.lower())


def wp_like(messages: int, seed: int = 0) -> Stream:
    """A Zipf stream with WP's top-key share (9.32 %) and WP's keys-per-message ratio (2.9M keys
    in 22M messages) — paper 000's WP stand-in; ``stand_in("WP", …)`` keeps Table I's 2.9M keys."""
    keys = max(10_000, int(messages * WP_KEYS_PER_MESSAGE))
    return zipf_stream(messages, keys, exponent_for_top_share(WP_TOP_SHARE, keys), seed, "page")


def words(messages: int, vocabulary: int = 200_000, seed: int = 0) -> Stream:
    """English words drawn by their wordfreq frequency (tweet-like words; ``p_1`` ≈ 5.4 % for
    "the", so not TW's 2.67 %: ``stand_in("TW", …)`` is paper 003's TW stand-in)."""
    import wordfreq

    freq = wordfreq.get_frequency_dict("en")
    top = sorted(freq.items(), key=lambda kv: (-kv[1], kv[0]))[:vocabulary]
    p = np.array([f for _, f in top])
    rng = np.random.default_rng(seed)
    ids = np.searchsorted(np.cumsum(p), rng.random(messages) * p.sum(), side="right")
    return Stream(np.minimum(ids, len(top) - 1), [w for w, _ in top])


def snapshot_of(
    stream: Stream, num_key_groups: int = 1024, hot_key_min_share: float = 0.001
) -> LoadSnapshot:
    """The loads the windows job would aggregate from ``stream``: messages per key group,
    the keys above ``hot_key_min_share`` of the messages as hot keys, and each group's
    distinct keys (for the memory footprint, paper 000 §IV)."""
    counts = np.bincount(stream.keys, minlength=len(stream.names)).astype(float)
    group = key_groups(stream.names, num_key_groups)
    hot = np.flatnonzero(counts >= hot_key_min_share * counts.sum())
    return LoadSnapshot(
        "s",
        np.bincount(group, weights=counts, minlength=num_key_groups),
        {stream.names[i]: counts[i] for i in hot.tolist()},
        distinct_keys=np.bincount(group, weights=counts > 0, minlength=num_key_groups),
    )
