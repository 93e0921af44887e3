"""The flow between key groups (paper 004 §4.3.2): the ``LoadSnapshot.key_group_flow`` and
``flow_anchors`` arrays from plain edges.

An edge ``(upstream, downstream, messages)`` joins two key groups of the stream (``int``) or a
key group of the stream and an *anchor* ``(name, worker)``: a key group of another stream, fixed
on its worker (ALBIC counts it as a partition pinned there). Readers of flow files (``routeplan
plan --flow``, the plan job) turn their rows into such edges and call :func:`flow_arrays`.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

Anchor = tuple[str, str]  # (name, worker): a key group of another stream and where it sits


def flow_arrays(
    num_key_groups: int, edges: Iterable[tuple[int | Anchor, int | Anchor, float]]
) -> tuple[np.ndarray, tuple[str, ...]]:
    """``(LoadSnapshot.key_group_flow, LoadSnapshot.flow_anchors)`` from edges ``(upstream,
    downstream, messages)`` whose ends are key groups of the stream (``int``) or anchors
    ``(name, worker)``; repeated edges add up, an anchor named twice is one node (numbered
    ``num_key_groups``, ``num_key_groups + 1``, … in order of appearance)."""
    anchors: dict[str, int] = {}
    workers: list[str] = []
    total: dict[tuple[int, int], float] = {}

    def node(end: int | Anchor) -> int:
        if isinstance(end, tuple):
            name, worker = end
            if name not in anchors:
                anchors[name] = num_key_groups + len(workers)
                workers.append(str(worker))
            return anchors[name]
        if not 0 <= int(end) < num_key_groups:
            raise ValueError(f"flow names key group {end}, outside 0..{num_key_groups - 1}")
        return int(end)

    for up, down, messages in edges:
        key = (node(up), node(down))
        total[key] = total.get(key, 0.0) + float(messages)
    rows = [(a, b, m) for (a, b), m in sorted(total.items())]
    return np.array(rows, dtype=float).reshape(-1, 3), tuple(workers)
