"""Streams for the paper benchmarks: Zipf keys, a WP-like Zipf, and English words (wordfreq).

The papers' real datasets (Wikipedia page visits WP, Twitter words TW; paper 003 Table I) are not
redistributable; these stand in for them with the property that drives the results, the share
``p_1`` of the most frequent key (WP 9.32 %, TW 2.67 %).
"""

from __future__ import annotations

import numpy as np

from routeplan.simulation.events import Stream, zipf_stream

WP_TOP_SHARE = 0.0932  # paper 003 Table I / paper 000 Table I
WP_KEYS_PER_MESSAGE = 2.9e6 / 22e6  # 2.9M keys in 22M messages


def zipf(messages: int, keys: int, exponent: float, seed: int = 0) -> Stream:
    """Paper 003 §6.1 ZF: ``f(r, K, z) ∝ 1/r^z`` over ``K`` keys."""
    return zipf_stream(messages, keys, exponent, seed)


def exponent_for_top_share(top_share: float, keys: int) -> float:
    """The Zipf exponent whose most frequent key has share ``top_share`` among ``keys`` keys."""
    ranks = np.arange(1, keys + 1, dtype=float)
    lo, hi = 0.0, 5.0
    for _ in range(60):
        z = (lo + hi) / 2
        if 1.0 / np.sum(ranks**-z) < top_share:
            lo = z
        else:
            hi = z
    return (lo + hi) / 2


def wp_like(messages: int, seed: int = 0) -> Stream:
    """A Zipf stream with WP's top-key share (9.32 %) and its keys-per-message ratio."""
    keys = max(10_000, int(messages * WP_KEYS_PER_MESSAGE))
    return zipf_stream(messages, keys, exponent_for_top_share(WP_TOP_SHARE, keys), seed, "page")


def words(messages: int, vocabulary: int = 200_000, seed: int = 0) -> Stream:
    """English words drawn by their wordfreq frequency (a TW-like stream of tweet words)."""
    import wordfreq

    freq = wordfreq.get_frequency_dict("en")
    top = sorted(freq.items(), key=lambda kv: (-kv[1], kv[0]))[:vocabulary]
    p = np.array([f for _, f in top])
    rng = np.random.default_rng(seed)
    ids = np.searchsorted(np.cumsum(p), rng.random(messages) * p.sum(), side="right")
    return Stream(np.minimum(ids, len(top) - 1), [w for w, _ in top])
