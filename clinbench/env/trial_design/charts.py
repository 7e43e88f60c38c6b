"""The trial_design family's domain chart (``Family.charts``): operating characteristics.

Per task, each agent's type-I error (on null worlds) and power (on worlds with an
effective and safe dose) with their exact binomial 95 % intervals, from the report's
operating-characteristics section; the dotted line is the familywise alpha.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from matplotlib.figure import Figure

from clinbench.charts.data import ChartData
from clinbench.charts.figures import columns, panels, suptitle
from clinbench.env.registry import spec

#: (characteristic, offset, label) drawn per agent, with the agent's marker: open for the
#: type-I error, filled for power
SHOWN = (("type_i_error", 0.15, "type-I error"), ("power", -0.15, "power"))


def operating_characteristics(d: ChartData, width: float) -> Figure:
    """Type-I error and power per agent and task, with Clopper-Pearson intervals."""
    table = d.report.get("operating_characteristics") or {}
    tasks = [t for t in d.tasks_of("trial_design") if t in table]
    ncols = columns(max(len(tasks), 1), width)
    fig, axes = panels(
        max(len(tasks), 1), width, 0.3 * len(d.agents) + 1.2, ncols=ncols, sharey=True
    )
    for ax, task in zip(axes, tasks, strict=False):
        rows = table[task]["agents"]
        pos = np.arange(len(d.agents))[::-1]
        for k, (name, offset, label) in enumerate(SHOWN):
            for p, agent in zip(pos, d.agents, strict=True):
                c = rows.get(agent, {}).get(name)
                if not c or c.get("value") is None:
                    continue
                ax.errorbar(
                    c["value"],
                    p + offset,
                    xerr=[[c["value"] - c["lo"]], [c["hi"] - c["value"]]],
                    fmt=d.markers[agent],
                    color=d.colors[agent],
                    ms=4,
                    lw=1,
                    capsize=2,
                    mfc="white" if k == 0 else d.colors[agent],
                    label=label if p == pos[0] else None,
                )
        alpha = spec(f"trial_design/{task}").params.alpha
        ax.axvline(alpha, color="black", ls=":", lw=1)
        ax.set_xlim(-0.02, 1.02)
        ax.set_yticks(pos, d.agents)
        ax.set_title(task)
        ax.set_xlabel("probability")
    handles = [
        axes[0].errorbar([], [], fmt="o", color="grey", mfc="white" if i == 0 else "grey")
        for i in range(len(SHOWN))
    ]
    fig.legend(
        handles, [label for _, _, label in SHOWN], loc="outside lower center", ncol=2, frameon=False
    )
    suptitle(
        fig,
        "Operating characteristics: type-I error (open, on null worlds) and power (filled, "
        "on worlds with an effective and safe dose), exact binomial 95 % intervals; dotted: "
        "the familywise alpha",
        width,
    )
    return fig


CHARTS: dict[str, Callable[[ChartData, float], Figure]] = {
    "operating_characteristics": operating_characteristics,
}
