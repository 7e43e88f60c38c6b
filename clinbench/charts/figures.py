"""The charts, one function each: ``f(data, width) -> Figure``.

Titles state n and the interval method; every agent keeps its colour and marker. The
one resampling (the performance profile's bootstrap band) draws from a Generator seeded
by the report's bootstrap seed and the agent; nothing else is random (no seaborn
bootstrap, no jitter), so files are reproducible.
"""

from __future__ import annotations

import textwrap
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from unittest import mock

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from scipy import stats as sps

from clinbench.charts.data import ChartData

LEARNING = ("hcapo", "mira", "klong", "memexrl", "grpo")


def _seeds(n: int) -> str:
    """``1 seed`` / ``5 seeds`` in titles and captions."""
    return f"{n} seed" if n == 1 else f"{n} seeds"


def panels(
    n: int, width: float, height_per_row: float, ncols: int | None = None, **kw
) -> tuple[Figure, np.ndarray]:
    ncols = ncols or n
    nrows = int(np.ceil(n / ncols))
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(width, height_per_row * nrows),
        squeeze=False,
        layout="constrained",
        **kw,
    )
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, axes.flat


def _points(key: str) -> float:
    """A font size from the rc parameters, in points (names like "medium" resolved)."""
    return FontProperties(size=plt.rcParams[key]).get_size_in_points()


#: Panels per row at double-column width (one per task up to this many).
MAX_COLUMNS = 4


def frozen_layout(fig: Figure, decimals: int = 6) -> Figure:
    """Run the figure's constrained layout once and fix the axes where it put them,
    rounded: with three stacked panels of unequal height the solver's last bits vary
    from one interpreter to the next (with the hash seed), which changes the SVG's clip
    ids, so the same data would not render to the same bytes."""
    fig.draw_without_rendering()
    for ax in fig.axes:
        ax.set_position(np.round(ax.get_position().bounds, decimals))
    fig.set_layout_engine("none")
    return fig


#: Panels per row of the seed heatmap at double-column width: at four, five seeds'
#: two-decimal scores were wider than their cells and the seeds' labels touched.
HEATMAP_COLUMNS = 3


def columns(n_panels: int, width: float, narrow: int = 1, most: int = MAX_COLUMNS) -> int:
    """Panels per row: one row of up to ``most`` at double-column width (more panels
    wrap onto rows of equal length), ``narrow`` at single-column width."""
    if width <= 5:
        return min(narrow, n_panels)
    rows = -(-n_panels // most)
    return -(-n_panels // rows)


def suptitle(fig: Figure, text: str, width: float) -> None:
    """A figure title wrapped to the figure's width.

    DejaVu Sans averages about 0.6 em per character, so a line holds ``120 / size``
    characters per inch; a wider line would widen the saved (tight) figure.
    """
    fig.suptitle(textwrap.fill(text, int(width * 120 / _points("figure.titlesize"))))


def _title(ax, text: str, width: float) -> None:
    """The title of a one-axes chart, centred on the figure rather than the axes,
    whose tick labels push it off-centre and past the figure's edge."""
    size = _points("axes.titlesize")
    ax.figure.suptitle(textwrap.fill(text, int(width * 120 / size)), fontsize=size)


def bottom_legend(fig: Figure, ax, ncol: int, width: float) -> None:
    """A legend under the panels, with no more columns than fit in ``width`` inches."""
    handles, labels = ax.get_legend_handles_labels()
    em = _points("legend.fontsize") / 72
    column = (0.6 * max(map(len, labels), default=0) + 3.5) * em  # text, handle and padding
    fits = max(1, int(width / column))
    ncol = min(len(labels), ncol, fits)
    fig.legend(handles, labels, loc="outside lower center", ncol=ncol, frameon=False)


def _t_ci(values: np.ndarray) -> tuple[float, float, float]:
    m = float(np.mean(values))
    if values.size < 2:
        return m, m, m
    half = float(sps.t.ppf(0.975, values.size - 1) * np.std(values, ddof=1) / np.sqrt(values.size))
    return m, m - half, m + half


def _p(value: float | None) -> str:
    """A p-value for a title; the report leaves it out (null) when it is undefined."""
    return "undefined (every block tied)" if value is None else f"{value:.2g}"


def _errorbar(ax, value: float, lo: float | None, hi: float | None, y: float, **kw) -> None:
    """A point with its interval, or the point alone where the report gives no interval."""
    xerr = None if lo is None or hi is None else [[value - lo], [hi - value]]
    ax.errorbar(value, y, xerr=xerr, capsize=2, ms=4, **kw)


def _aggregates(d: ChartData) -> dict[str, dict]:
    """Each environment family's aggregate section that has agents (the headline)."""
    return {env: a for env, a in (d.report.get("aggregates") or {}).items() if a.get("agents")}


def agent_comparison(d: ChartData, width: float) -> Figure:
    """Mean score per task (t 95 % CI) and each family's aggregate mean (t 95 % CI over
    seeds)."""
    cells = d.cell_scores()
    aggs = _aggregates(d)
    n_panels = len(d.tasks) + len(aggs)
    ncols = columns(n_panels, width, narrow=2)
    fig, axes = panels(n_panels, width, 0.28 * len(d.agents) + 1.0, ncols=ncols, sharey=True)
    y = np.arange(len(d.agents))[::-1]
    for ax, task in zip(axes, d.tasks, strict=False):
        for yi, agent in zip(y, d.agents, strict=True):
            v = cells[(cells.task == task) & (cells.agent == agent)].score.to_numpy()
            if v.size:
                m, lo, hi = _t_ci(v)
                ax.errorbar(
                    m,
                    yi,
                    xerr=[[m - lo], [hi - m]],
                    fmt=d.markers[agent],
                    color=d.colors[agent],
                    capsize=2,
                    ms=4,
                )
        ax.set_title(task)
        ax.set_xlabel("score")
    for ax, (env, agg) in zip(axes[len(d.tasks) :], aggs.items(), strict=False):
        for yi, agent in zip(y, d.agents, strict=True):
            if agent in agg["agents"]:
                s = agg["agents"][agent]["mean"]
                m, c = d.markers[agent], d.colors[agent]
                _errorbar(ax, s["value"], s["lo"], s["hi"], yi, fmt=m, color=c)
        ax.axvline(0, color="grey", lw=0.8, ls=":")
        ax.axvline(1, color="grey", lw=0.8, ls=":")
        ax.set_title(f"{env} aggregate")
        ax.set_xlabel("normalised score")
    axes[0].set_yticks(y, d.agents)
    suptitle(
        fig,
        "Mean score per task and per environment family (per-seed mean normalised score; 0 "
        "and 1: random's and the reference planner's means on the reference worlds), "
        f"Student-t 95 % CIs; n = {_seeds(len(d.seeds))}",
        width,
    )
    return fig


def score_distribution(d: ChartData, width: float) -> Figure:
    """Box plot of per-seed scores with every seed drawn as a point."""
    cells = d.cell_scores()
    ncols = columns(len(d.tasks), width)
    fig, axes = panels(len(d.tasks), width, 0.3 * len(d.agents) + 1.0, ncols=ncols, sharey=True)
    for ax, task in zip(axes, d.tasks, strict=False):
        pos = np.arange(len(d.agents))[::-1]
        # agents without results (every cell failed) keep their row, empty
        present = [
            (p, a, v)
            for p, a in zip(pos, d.agents, strict=True)
            if (v := cells[(cells.task == task) & (cells.agent == a)].score.to_numpy()).size
        ]
        if present:
            bp = ax.boxplot(
                [v for _, _, v in present],
                positions=[p for p, _, _ in present],
                orientation="horizontal",
                widths=0.55,
                patch_artist=True,
                showfliers=False,
                medianprops={"color": "black", "lw": 1},
            )
            for patch, (_, agent, _) in zip(bp["boxes"], present, strict=True):
                patch.set_facecolor(d.colors[agent])
                patch.set_alpha(0.35)
        for p, agent, v in present:
            offsets = np.linspace(-0.15, 0.15, v.size) if v.size > 1 else np.zeros(v.size)
            ax.scatter(
                v,
                p + offsets,
                s=10,
                color=d.colors[agent],
                zorder=3,
                edgecolor="black",
                linewidth=0.3,
            )
        ax.set_yticks(pos, d.agents)
        ax.set_title(task)
        ax.set_xlabel("score")
    suptitle(
        fig,
        "Score per seed (mean over its evaluation episodes): box = quartiles, points = the "
        f"{_seeds(len(d.seeds))}",
        width,
    )
    return fig


@contextmanager
def heatmaps_without_overlap_check() -> Iterator[None]:
    """``seaborn.heatmap`` (0.13) draws the whole figure after each panel, to see whether
    its tick labels overlap and turn them if they do: a layout and a render of every
    panel so far, per panel (4.0 of the canonical seed heatmap's 4.4 CPU seconds to
    build). Every heatmap here sets its labels' rotation itself (the seed heatmap turns
    the seeds upright after one draw of the whole figure if they overlap), so the draw is
    skipped."""
    with mock.patch.object(sns.matrix, "_draw_figure", lambda fig: None):
        yield


def seed_heatmap(d: ChartData, width: float) -> Figure:
    """Agent x seed matrix of scores, one panel per task."""
    cells = d.cell_scores()
    ncols = columns(len(d.tasks), width, most=HEATMAP_COLUMNS)
    fig, axes = panels(len(d.tasks), width, 0.3 * len(d.agents) + 1.1, ncols=ncols)
    listed = [[a for a in d.agents if a in set(cells[cells.task == t].agent)] for t in d.tasks]
    # where every panel lists the same agents, their names once per row of panels
    shared = all(rows == listed[0] for rows in listed)
    for i, (ax, task) in enumerate(zip(axes, d.tasks, strict=False)):
        m = cells[cells.task == task].pivot(index="agent", columns="seed", values="score")
        m = m.reindex(index=listed[i], columns=[s for s in d.seeds if s in m.columns])
        repeat = shared and i % ncols > 0
        with heatmaps_without_overlap_check():
            sns.heatmap(
                m,
                ax=ax,
                vmin=0,
                vmax=1,
                cmap="viridis",
                annot=True,
                fmt=".2f",
                cbar=False,
                annot_kws={"fontsize": 6},
                linewidths=0.5,
            )
        ax.set_title(task)
        ax.set_xlabel("seed")
        ax.set_ylabel("")
        ax.tick_params(axis="x", rotation=0)
        ax.tick_params(axis="y", rotation=0, labelleft=not repeat, left=not repeat)
        ax.grid(False)
    suptitle(
        fig,
        "Score per agent and seed (mean over evaluation episodes; same worlds within a seed)",
        width,
    )
    fig.draw_without_rendering()  # the labels where the layout puts them
    for ax in axes[: len(d.tasks)]:
        if sns.utils.axis_ticklabels_overlap(ax.get_xticklabels()):
            ax.tick_params(axis="x", rotation=90)
    return fig


def learning_curves(d: ChartData, width: float) -> Figure:
    """Greedy evaluation score over the training budget: mean over seeds, t 95 % band."""
    cells = d.cell_scores()
    learners = [a for a in d.agents if a in set(d.curves.agent)]
    ncols = columns(len(d.tasks), width)
    fig, axes = panels(len(d.tasks), width, 2.3, ncols=ncols, sharey=True)
    for ax, task in zip(axes, d.tasks, strict=False):
        for agent in learners:
            c = d.curves[(d.curves.task == task) & (d.curves.agent == agent)]
            if c.empty:
                continue
            xs, ms, los, his = [], [], [], []
            for x, g in c.groupby("env_steps"):
                m, lo, hi = _t_ci(g.mean_score.to_numpy())
                xs.append(x), ms.append(m), los.append(lo), his.append(hi)
            ax.plot(xs, ms, marker=d.markers[agent], ms=3, color=d.colors[agent], label=agent)
            ax.fill_between(xs, los, his, color=d.colors[agent], alpha=0.15, lw=0)
        for base in ("heuristic", "random"):
            v = cells[(cells.task == task) & (cells.agent == base)].score
            if len(v):
                ax.axhline(
                    v.mean(), color=d.colors[base], ls="--", lw=1, label=f"{base} (no training)"
                )
        ax.set_title(task)
        ax.set_xlabel("training environment steps")
        ax.set_ylabel("evaluation score")
    bottom_legend(fig, axes[0], 4, width)
    suptitle(
        fig,
        f"Learning curves: greedy evaluation score, mean over {_seeds(len(d.seeds))} (Student-t 95 "
        "% band)",
        width,
    )
    return fig


def _confirmatory(d: ChartData) -> list[dict]:
    """The confirmatory family of each environment family's aggregate."""
    return [
        f
        for f in d.report["families"]
        if f["role"] == "confirmatory" and f.get("scope", {}).get("kind") != "cross_family"
    ]


def _family_agents(d: ChartData, fam: dict) -> list[str]:
    """The agents of a family's pairs, in report order."""
    named = {a for p in fam["pairs"] for a in (p["a"], p["b"])}
    return [a for a in d.agents if a in named]


def _effect_matrix(fam: dict, agents: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Row-minus-column effect size of the primary test and Holm significance."""
    k = len(agents)
    value = np.full((k, k), np.nan)
    sig = np.zeros((k, k), dtype=bool)
    for p in fam["pairs"]:
        i, j = agents.index(p["a"]), agents.index(p["b"])
        v = (p["effect"] or {}).get("value")
        if v is not None:
            value[i, j], value[j, i] = v, -v
        sig[i, j] = sig[j, i] = p["significant"]
    return value, sig


#: The most agents whose pairwise matrix prints each effect size in its cell.
PAIRWISE_NUMBERS = 10


def pairwise_significance(d: ChartData, width: float) -> Figure:
    """The primary test's effect size of each pair on each family's aggregate,
    Holm-significant pairs marked (one matrix per confirmatory family)."""
    fams = [f for f in _confirmatory(d) if f["pairs"]]
    k = max((len(_family_agents(d, f)) for f in fams), default=2)
    # the colour bar takes about 0.8 in beside each square matrix; the whole stays within width
    size = min(width, 0.55 * k + 2.4)
    # names written upright under a matrix of more than PAIRWISE_NUMBERS agents need height
    longest = max((len(a) for f in fams for a in _family_agents(d, f)), default=0)
    upright = 0.03 * longest if k > PAIRWISE_NUMBERS else 0.0
    fig, axes = plt.subplots(
        max(len(fams), 1),
        1,
        figsize=(size, (size - 0.5 + upright) * max(len(fams), 1)),
        layout="constrained",
        squeeze=False,
    )
    effect = "g_z" if d.report["protocol"]["test"] == "paired" else "Hedges' g"
    for ax, fam in zip(axes.flat, fams, strict=False):
        agents = _family_agents(d, fam)
        g, sig = _effect_matrix(fam, agents)
        # colours saturate at |g| = 3 (already a very large effect); the numbers are exact
        lim = min(3.0, float(np.nanmax(np.abs(g)))) if np.isfinite(g).any() else 1.0
        # more agents than PAIRWISE_NUMBERS leave no room for the numbers: the marks only
        numbers = len(agents) <= PAIRWISE_NUMBERS
        labels = np.array(
            [
                [
                    "" if np.isnan(v) else (f"{v:.1f}" if numbers else "") + ("*" if s else "")
                    for v, s in zip(rg, rs, strict=True)
                ]
                for rg, rs in zip(g, sig, strict=True)
            ]
        )
        with heatmaps_without_overlap_check():
            sns.heatmap(
                g,
                ax=ax,
                cmap="RdBu_r",
                vmin=-lim,
                vmax=lim,
                annot=labels,
                fmt="",
                xticklabels=agents,
                yticklabels=agents,
                annot_kws={"fontsize": 6},
                linewidths=0.5,
                cbar_kws={"label": f"{effect} (row - column)"},
            )
        ax.set_title(f"{fam['name']} (m = {fam['m']}, n = {_seeds(fam['seeds'])})")
        ax.tick_params(axis="x", rotation=45 if numbers else 90)
        ax.tick_params(axis="y", rotation=0)
        ax.grid(False)
    if not fams:
        axes.flat[0].axis("off")
    left_out = k > PAIRWISE_NUMBERS
    _title(
        axes.flat[0],
        f"Each family's aggregate normalised score, row vs column: {effect}; * = significant "
        f"after Holm within the family ({d.report['protocol']['test_name']}, alpha = "
        f"{d.report['protocol']['alpha']})"
        + (
            f"; over {PAIRWISE_NUMBERS} agents, the colour alone gives {effect}" if left_out else ""
        ),
        size,
    )
    return fig


def probability_of_improvement(d: ChartData, width: float) -> Figure:
    """rliable's aggregate P(first > second) per family with bootstrap 95 % CIs; a hollow
    marker where the interval has zero width (which is not certainty)."""
    fams = [(f, [p for p in f["pairs"] if p["prob_improvement"]]) for f in _confirmatory(d)]
    fams = [(f, pairs) for f, pairs in fams if pairs] or [({"name": "", "seeds": 0}, [])]
    rows = [max(len(pairs), 1) for _, pairs in fams]
    fig, axes = plt.subplots(
        len(fams),
        1,
        figsize=(width, 0.22 * sum(rows) + 0.9 * len(fams)),
        layout="constrained",
        squeeze=False,
        height_ratios=rows,
    )
    for ax, (fam, pairs) in zip(axes.flat, fams, strict=True):
        y = np.arange(len(pairs))[::-1]
        for yi, p in zip(y, pairs, strict=True):
            v = p["prob_improvement"]
            if v["zero_width"]:
                ax.plot(
                    v["value"], yi, d.markers[p["a"]], ms=5, mfc="white", color=d.colors[p["a"]]
                )
            else:
                m, c = d.markers[p["a"]], d.colors[p["a"]]
                _errorbar(ax, v["value"], v["lo"], v["hi"], yi, fmt=m, color=c)
        ax.axvline(0.5, color="grey", ls=":", lw=1)
        ax.set_yticks(y, [f"P({p['a']} > {p['b']})" for p in pairs])
        ax.set_xlim(-0.02, 1.02)
        ax.set_title(f"{fam['name']} (n = {_seeds(fam['seeds'])})" if fam["name"] else "")
    axes.flat[-1].set_xlabel("probability of improvement")
    _title(
        axes.flat[0],
        "Probability of improvement on each family's aggregate (rliable: mean over tasks of "
        "per-task P(X > Y)); stratified bootstrap 95 % CI, hollow = zero-width interval (at "
        "least 95 % of resamples agree)",
        width,
    )
    return frozen_layout(fig)


#: Bootstrap replicates of the performance profile's band (rliable's default) and the seed
#: used when a report records none.
PROFILE_REPS, PROFILE_SEED = 2_000, 20_211_129


def profile_rng(d: ChartData, env: str, agent: str) -> np.random.Generator:
    """The band's Generator: seeded by the report's bootstrap seed, the family and the
    agent, so an agent's band does not change with which other agents ran."""
    seed = d.report["protocol"].get("bootstrap_seed", PROFILE_SEED)
    labels = [zlib.crc32(x.encode()) for x in ("performance_profile", env, agent)]
    return np.random.default_rng(np.random.SeedSequence([seed, *labels]))


#: The most agents the performance profile lists beside its panel (more go under it).
PROFILE_SIDE_LEGEND = 10


def performance_profile(d: ChartData, width: float) -> Figure:
    """Fraction of runs (tasks x seeds) with normalised score above tau, per family, with
    rliable's pointwise stratified bootstrap 95 % band (seeds resampled within each task)."""
    from clinbench.stats import performance_profile_ci

    norm = d.normalised_scores()
    envs = [e for e in dict.fromkeys(d.task_env(t) for t in d.tasks) if d.tasks_of(e)]
    envs = [e for e in envs if norm.task.isin(d.tasks_of(e)).any()] or envs[:1]
    w = min(width, 5.0)
    # a legend of more entries than a panel's height holds goes under the panels, in two
    # columns
    below = len(d.agents) > PROFILE_SIDE_LEGEND
    rows = -(-len(d.agents) // 2) if below else 0
    fig, axes = plt.subplots(
        len(envs),
        1,
        figsize=(w, 2.4 * len(envs) + 0.4 + 0.2 * rows),
        layout="constrained",
        squeeze=False,
    )
    for ax, env in zip(axes.flat, envs, strict=True):
        part = norm[norm.task.isin(d.tasks_of(env))]
        if part.empty:
            ax.axis("off")
            continue
        taus = np.linspace(
            min(-0.1, float(part.normalised.min())), max(1.1, float(part.normalised.max())), 241
        )
        for i, agent in enumerate(d.agents):
            mine = part[part.agent == agent]
            runs = [g.normalised.to_numpy() for _, g in mine.groupby("task", sort=False)]
            if not runs:
                continue
            profile, lo, hi = performance_profile_ci(
                runs, taus, profile_rng(d, env, agent), reps=PROFILE_REPS
            )
            ax.plot(
                taus,
                profile,
                color=d.colors[agent],
                label=agent,
                lw=1.5,
                marker=d.markers[agent],
                ms=3.5,
                markevery=(3 * i % 30, 30),
            )
            ax.fill_between(taus, lo, hi, color=d.colors[agent], alpha=0.15, lw=0)
        n_tasks = len(d.tasks_of(env))
        ax.set_title(f"{env} ({n_tasks} task{'s' if n_tasks != 1 else ''})")
        ax.set_xlabel(r"normalised score $\tau$")
        ax.set_ylabel(r"runs with score > $\tau$")
        if not below:
            ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if below:  # one legend for every panel (an agent has one colour and marker)
        entries = {lab: h for ax in axes.flat for h, lab in zip(*ax.get_legend_handles_labels())}
        fig.legend(
            entries.values(), entries.keys(), loc="outside lower center", ncol=2, frameon=False
        )
    _title(
        axes.flat[0],
        f"Performance profile per family over its tasks x {_seeds(len(d.seeds))} (0 and 1: "
        "random's and the reference planner's means on the reference worlds); bands: "
        f"stratified bootstrap 95 % ({PROFILE_REPS} replicates, seeds resampled within each "
        "task)",
        w,
    )
    return fig


def _cd_panel(ax, d: ChartData, r: dict, name: str) -> None:
    """One family's average ranks with the Nemenyi critical difference."""
    ranks = r["average_ranks"]
    order = sorted(ranks, key=ranks.get)
    k = len(order)
    ax.set_xlim(k + 0.3, 0.7)
    ax.set_ylim(-0.5 * k - 0.5, 1.4)
    ax.axhline(0, color="black", lw=1)
    for i in range(1, k + 1):
        ax.plot([i, i], [0, 0.1], color="black", lw=1)
        ax.text(i, 0.2, str(i), ha="center", fontsize=7)
    for j, a in enumerate(order):
        yy = -0.5 * (j + 1)
        ax.plot([ranks[a], ranks[a]], [0, yy], color=d.colors[a], lw=1)
        ax.plot(ranks[a], 0, d.markers[a], color=d.colors[a], ms=5)
        ax.text(
            ranks[a] + 0.05 if j < k / 2 else ranks[a] - 0.05,
            yy,
            f"{a} ({ranks[a]:.2f})",
            va="center",
            ha="right" if j < k / 2 else "left",
            fontsize=7,
            color="black",
        )
    cd = r["critical_difference"]
    ax.plot([1, 1 + cd], [1.0, 1.0], color="black", lw=2)
    ax.text(1 + cd / 2, 1.12, f"CD = {cd:.2f}", ha="center", fontsize=7)
    # cliques: maximal runs of agents whose rank span is below the CD
    cliques = []
    for i in range(k):
        j = i
        while j + 1 < k and ranks[order[j + 1]] - ranks[order[i]] < cd:
            j += 1
        if j > i and not any(c[0] <= i and j <= c[1] for c in cliques):
            cliques.append((i, j))
    for n, (i, j) in enumerate(cliques):
        yy = -0.12 - 0.12 * n
        ax.plot(
            [ranks[order[i]] - 0.03, ranks[order[j]] + 0.03],
            [yy, yy],
            color="black",
            lw=3,
            alpha=0.6,
        )
    ax.axis("off")
    ax.set_title(
        f"{name}: {r['blocks']} blocks (task x seed), Friedman p = {_p(r['friedman_p'])}",
        fontsize=_points("axes.titlesize"),
    )


def critical_difference(d: ChartData, width: float) -> Figure:
    """Average ranks (1 = highest score) with the Nemenyi critical difference, per family."""
    rankings = {n: r for n, r in (d.report.get("rankings") or {}).items() if r}
    heights = [0.25 * len(r["average_ranks"]) + 1.2 for r in rankings.values()] or [1.5]
    fig, axes = plt.subplots(
        len(heights),
        1,
        figsize=(width, sum(heights)),
        layout="constrained",
        squeeze=False,
        height_ratios=heights,
    )
    if not rankings:
        ax = axes.flat[0]
        ax.text(0.5, 0.5, "ranking needs at least three agents", ha="center", va="center")
        ax.axis("off")
        return fig
    for ax, (name, r) in zip(axes.flat, rankings.items(), strict=True):
        _cd_panel(ax, d, r, name)
    fig.suptitle(
        textwrap.fill(
            "Average rank per environment family; descriptive: bars join agents within the "
            f"Nemenyi CD (alpha = {d.report['protocol']['alpha']}); the tests are the "
            "confirmatory families and the Wilcoxon-Holm post-hoc (report)",
            int(width * 120 / _points("axes.titlesize")),
        ),
        fontsize=_points("axes.titlesize"),
    )
    return fig


CHARTS: dict[str, Callable[[ChartData, float], Figure]] = {
    "agent_comparison": agent_comparison,
    "score_distribution": score_distribution,
    "seed_heatmap": seed_heatmap,
    "learning_curves": learning_curves,
    "pairwise_significance": pairwise_significance,
    "probability_of_improvement": probability_of_improvement,
    "performance_profile": performance_profile,
    "critical_difference": critical_difference,
}


def charts_for(d: ChartData) -> dict[str, Callable[[ChartData, float], Figure]]:
    """The generic charts, then the domain charts of the results' environment families,
    then the charts of their studies (``clinbench.studies``) that the report holds."""
    import importlib

    from clinbench.studies import study_named

    out = dict(CHARTS)
    for fam in d.families:
        if fam.charts:
            out.update(importlib.import_module(fam.charts).CHARTS)
    for name, record in d.report.get("studies", {}).items():  # the studies' charts
        study = study_named(name)
        for chart, figure in (study.charts if study else {}).items():
            out[chart] = lambda _d, width, f=figure, r=record["results"]: f(r, width)
    return out
