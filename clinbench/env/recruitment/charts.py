"""The recruitment family's domain charts (``Family.charts``): enrolment by day."""

from __future__ import annotations

from collections.abc import Callable

from matplotlib.figure import Figure

from clinbench.charts.data import ChartData
from clinbench.charts.figures import bottom_legend, columns, panels, suptitle
from clinbench.env.registry import spec


def enrollment_trajectories(d: ChartData, width: float) -> Figure:
    """Net enrolled by day: median and interquartile band over all evaluation episodes."""
    tasks = d.tasks_of("recruitment")
    ncols = columns(len(tasks), width)
    fig, axes = panels(len(tasks), width, 2.3, ncols=ncols, sharey=False)
    targets = {}
    for task in tasks:
        try:
            targets[task] = spec(f"recruitment/{task}").params.target
        except KeyError:
            targets[task] = None
    n_eps = None
    for ax, task in zip(axes, tasks, strict=False):
        for i, agent in enumerate(d.agents):
            t = d.trajectories[(d.trajectories.task == task) & (d.trajectories.agent == agent)]
            if t.empty:
                continue
            n_eps = int(t.n.iloc[0])
            # markers every ~10 % of the days, staggered so that agents' markers do not stack
            every = max(1, len(t) // 10)
            ax.plot(
                t.time,
                t["median"],
                color=d.colors[agent],
                lw=1.3,
                label=agent,
                marker=d.markers[agent],
                ms=3,
                markevery=((i * every) // max(len(d.agents), 1), every),
            )
            ax.fill_between(t.time, t.q25, t.q75, color=d.colors[agent], alpha=0.15, lw=0)
        if targets[task]:
            ax.axhline(targets[task], color="black", ls=":", lw=1, label="target")
        ax.set_title(task)
        ax.set_xlabel("day")
        ax.set_ylabel("net enrolled")
    bottom_legend(fig, axes[0], 7, width)
    suptitle(
        fig,
        f"Net enrolled by day: median and interquartile band over {n_eps} evaluation episodes per "
        "agent",
        width,
    )
    return fig


CHARTS: dict[str, Callable[[ChartData, float], Figure]] = {
    "enrollment_trajectories": enrollment_trajectories,
}
