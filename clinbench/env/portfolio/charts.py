"""The portfolio family's domain chart (``Family.charts``): value against agreement.

Per task, each agent's mean score against its mean agreement with the sponsor
(indication F1 of its decisions against what the program's sponsor would have started
in the same state), with Student-t 95 % intervals over seeds on both axes: does
deciding as sponsors do go with developing drugs well?
"""

from __future__ import annotations

from collections.abc import Callable

from matplotlib.figure import Figure

from clinbench.charts.data import ChartData
from clinbench.charts.figures import columns, panels, suptitle
from clinbench.stats.intervals import t_interval


def value_vs_agreement(d: ChartData, width: float) -> Figure:
    """Mean score against mean sponsor agreement, per agent and task."""
    tasks = d.tasks_of("portfolio")
    fig, axes = panels(max(len(tasks), 1), width, 2.6, ncols=columns(max(len(tasks), 1), width))
    frame = d.results
    for ax, task in zip(axes, tasks, strict=False):
        rows = frame[frame.task == task]
        for agent in d.agents:
            cell = rows[rows.agent == agent]
            if cell.empty or "sponsor_f1" not in cell:
                continue
            per_seed = cell.groupby("seed")[["sponsor_f1", "score"]].mean()
            x = t_interval(per_seed.sponsor_f1.to_numpy())
            y = t_interval(per_seed.score.to_numpy())
            ax.errorbar(
                x[0], y[0], xerr=[[x[0] - x[1]], [x[2] - x[0]]],
                yerr=[[y[0] - y[1]], [y[2] - y[0]]], fmt=d.markers[agent],
                color=d.colors[agent], ms=5, lw=1, capsize=2, label=agent,
            )
        ax.set_title(task)
        ax.set_xlabel("agreement with the sponsor (indication F1, %)")
        ax.set_ylabel("score")
    axes[0].legend(fontsize="small", frameon=False)
    suptitle(
        fig,
        "Value against agreement with the sponsor: mean score and mean indication F1 of "
        "each agent's decisions against the sponsor's in the same state, Student-t 95 % "
        "intervals over seeds",
        width,
    )
    return fig


CHARTS: dict[str, Callable[[ChartData, float], Figure]] = {
    "portfolio_value_vs_agreement": value_vs_agreement,
}
