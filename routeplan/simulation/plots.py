"""Plots of simulation results (matplotlib, written to a file)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from routeplan.simulation.replay import SimulationResult


def plot(results: Sequence[SimulationResult], path: str | Path, title: str = "") -> Path:
    """Imbalance and queue spread over time, memory per strategy: one PNG (Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
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
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
