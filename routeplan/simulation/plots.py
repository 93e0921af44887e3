"""Plots of simulation results: data in, PNG bytes out (``routeplan compare --plot``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from routeplan.plots import new_figure, png_bytes
from routeplan.simulation.replay import SimulationResult


def compare_png(results: Sequence[SimulationResult], title: str = "") -> bytes:
    """Imbalance and queue spread over time, and replication, per strategy: one PNG."""
    fig = new_figure(width=15.0, height=4.2)
    axes = fig.subplots(1, 3)
    for r in results:
        t = r.series["messages"]
        axes[0].plot(t, np.maximum(r.series["imbalance"], 1e-6), label=r.strategy)
        axes[1].plot(t, r.series["queue_spread"], label=r.strategy)
    axes[0].set(xlabel="messages", ylabel="imbalance (max u − 1)", yscale="log")
    axes[1].set(xlabel="messages", ylabel="queue length max − min")
    axes[2].bar([r.strategy for r in results], [r.replication for r in results])
    axes[2].set(ylabel="replication (memory / distinct keys)")
    axes[2].tick_params(axis="x", rotation=45)
    for ax in axes[:2]:
        ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 0))
    axes[0].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return png_bytes(fig)
