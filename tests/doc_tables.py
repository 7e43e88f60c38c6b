"""The tables the docs quote from committed results, computed from those results.

``docs/agents.md`` ("Measured scores", "Time per cell") and ``docs/offline.md`` ("4. The
committed study") quote, per agent and task, the mean over the seeds of the per-seed
score (the mean over the cell's evaluation episodes) with the half-width of the
Student-t 95 % interval, as ``0.176 ± 0.049``. Each table below names, row by row and
column by column, the results folder and the agent each number comes from;
:func:`check` compares a doc's table with what the committed folders give
(``tests/test_docs_numbers.py``), so a doc cannot keep the numbers of an earlier run.

A folder with a ``benchmark_report.json`` is read from it (the report's per-task
summaries); a folder without one (the ablation sweeps) from its cell files through
:func:`clinbench.report.results.load_results`, with the report's interval
(:func:`clinbench.stats.intervals.t_interval`).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from clinbench.report.results import load_results
from clinbench.stats.intervals import t_interval

#: a cell of a table whose source folder has no cell of that agent on that task
NOT_RUN = "not run"
#: a cell of a table whose row has no such column (an agent with no cells in a family)
NO_CELLS = "—"
#: the source of a score cell whose agent does not play that column's family
NOT_PLAYED = "not played"

CANONICAL = "data/sweep_results"
ABLATIONS = "data/ablations"
LONG_BUDGET = "data/long_budget"
OFFLINE = "data/offline_study"
RECRUITMENT = ("easy_bench", "medium_bench", "hard_bench")
TRIAL = ("effective_drug", "efficacy_safety", "rare_disease")


class Source(NamedTuple):
    """One quoted number: ``agent`` on ``task`` in the results folder ``folder``
    (relative to the repository root; an offline cell's agent is ``name@split``)."""

    folder: str
    agent: str
    task: str


def format_cell(mean: float, half: float) -> str:
    """``mean ± half`` at three decimals, as the docs write a score."""
    return f"{mean:.3f} ± {half:.3f}"


@functools.cache
def summaries(folder: Path) -> dict[tuple[str, str], tuple[float, float]]:
    """(agent, task) -> (mean over the seeds of the per-seed score, half-width of the
    Student-t 95 % interval) of the results folder ``folder``."""
    report = folder / "benchmark_report.json"
    if report.exists():
        per_task = json.loads(report.read_text())["per_task"]
        return {
            (agent, task): (s["mean"], s["hi"] - s["mean"])
            for task, by_agent in per_task.items()
            for agent, s in by_agent.items()
        }
    return recomputed(folder)


def recomputed(folder: Path) -> dict[tuple[str, str], tuple[float, float]]:
    """:func:`summaries` from the cell files the folder's manifest lists."""
    res = load_results(folder)
    out = {}
    for task in res.tasks:
        for agent in res.agents:
            scores = list(res.scores(task, agent).values())
            if scores:
                mean, lo, _ = t_interval(np.array(scores))
                out[(agent, task)] = (mean, mean - lo)
    return out


def score_cell(root: Path, source: Source | str | None) -> str:
    """The text of one score cell: blank without a source, :data:`NO_CELLS` where the
    agent does not play the family, ``not run`` without cells."""
    if source is None:
        return ""
    if source == NOT_PLAYED:
        return NO_CELLS
    s = summaries((root / source.folder).resolve()).get((source.agent, source.task))
    return NOT_RUN if s is None else format_cell(*s)


@dataclass(frozen=True)
class ScoreTable:
    """A table of scores: one row per label, one source (or none) per column."""

    name: str
    doc: str
    section: str
    header: tuple[str, ...]
    rows: tuple[tuple[str | tuple[str, ...], tuple[Source | str | None, ...]], ...]
    label_columns: int = 1

    def expected(self, root: Path) -> list[list[str]]:
        return [
            [
                *((label,) if isinstance(label, str) else label),
                *(score_cell(root, s) for s in sources),
            ]
            for label, sources in self.rows
        ]

    def accepts(self, doc_cell: str, expected_cell: str) -> bool:
        return doc_cell == expected_cell


def _tasks(folder: str, agent: str, tasks: tuple[str, ...]) -> tuple[Source, ...]:
    return tuple(Source(folder, agent, t) for t in tasks)


def _agents_table(name: str, tasks: tuple[str, ...], rows: dict[str, tuple[str, str]]):
    return ScoreTable(
        name,
        "docs/agents.md",
        "## Measured scores",
        ("agent", *tasks),
        tuple((label, _tasks(folder, agent, tasks)) for label, (folder, agent) in rows.items()),
    )


AGENTS_RECRUITMENT = _agents_table(
    "agents.md, recruitment scores",
    RECRUITMENT,
    {
        **{a: (CANONICAL, a) for a in ("heuristic", "random", "hcapo", "mira", "klong", "memexrl")},
        "grpo (hcapo with omega = 0)": (f"{ABLATIONS}/grpo", "grpo"),
        "grpo, GAE advantages": (f"{ABLATIONS}/grpo_gae", "grpo_gae"),
        "mira, lambda = 0": (f"{ABLATIONS}/mira_lambda0", "mira"),
        "mira, 36 phases": (f"{ABLATIONS}/mira_36_phases", "mira"),
        "mira, standardised advantages": (f"{ABLATIONS}/mira_standardised", "mira_standardised"),
        "mira, standardised advantages, 36 phases": (
            f"{ABLATIONS}/mira_standardised_36_phases",
            "mira_standardised",
        ),
        "mira, GAE advantages": (f"{ABLATIONS}/mira_gae_regression", "mira"),
        "mira, GAE advantages, 36 phases": (f"{ABLATIONS}/mira_gae_regression_36_phases", "mira"),
        "mira, PPO actor": (f"{ABLATIONS}/mira_ppo_actor", "mira"),
        "mira, PPO actor, 36 phases": (f"{ABLATIONS}/mira_ppo_actor_36_phases", "mira"),
        "mira, PPO actor, standardised advantages": (
            f"{ABLATIONS}/mira_ppo_standardised",
            "mira_standardised",
        ),
        "mira, PPO actor, standardised advantages, 36 phases": (
            f"{ABLATIONS}/mira_ppo_standardised_36_phases",
            "mira_standardised",
        ),
        "mira, PPO actor, GAE advantages": (f"{ABLATIONS}/mira_gae", "mira"),
        "mira, PPO actor, GAE advantages, 36 phases": (
            f"{ABLATIONS}/mira_gae_36_phases",
            "mira",
        ),
        "klong, imitation only": (f"{ABLATIONS}/klong_imitation_only", "klong"),
        "klong, no stages": (f"{ABLATIONS}/klong_no_stages", "klong"),
        "memexrl, memory masked": (f"{ABLATIONS}/memexrl_memory_masked", "memexrl"),
        "memexrl, full-batch updates": (f"{ABLATIONS}/memexrl_full_batch", "memexrl"),
        "maskable_ppo (stable-baselines3, same budget in steps)": (
            f"{ABLATIONS}/maskable_ppo_recruitment",
            "maskable_ppo",
        ),
    },
)

AGENTS_TRIAL = _agents_table(
    "agents.md, dose-finding scores",
    TRIAL,
    {
        "heuristic (group-sequential design)": (CANONICAL, "heuristic"),
        "random": (CANONICAL, "random"),
        "fixed_design": (CANONICAL, "fixed_design"),
        "hcapo": (CANONICAL, "hcapo"),
        "mira": (CANONICAL, "mira"),
        "klong": (CANONICAL, "klong"),
        "memexrl (its GRPO core here)": (CANONICAL, "memexrl"),
        "mira, lambda = 1 (the recruitment shaping weight)": (
            f"{ABLATIONS}/mira_lambda1_trial",
            "mira",
        ),
        "maskable_ppo (stable-baselines3, same budget in steps)": (
            f"{ABLATIONS}/maskable_ppo_trial",
            "maskable_ppo",
        ),
    },
)

PORTFOLIO = ("develop", "develop_post_cutoff")

AGENTS_PORTFOLIO = _agents_table(
    "agents.md, portfolio scores",
    PORTFOLIO,
    {
        **{a: (CANONICAL, a) for a in ("heuristic", "random", "repeat_last", "hcapo")},
        "grpo, GAE advantages": (f"{ABLATIONS}/grpo_gae_portfolio", "grpo_gae"),
        "maskable_ppo (stable-baselines3, same budget in steps)": (
            f"{ABLATIONS}/maskable_ppo_portfolio",
            "maskable_ppo",
        ),
    },
)

#: the long-budget table's tasks, one per family (task -> family); each family's runs at
#: ten times the budget (``preset=long``) are in ``data/long_budget/<family>``
LONG_TASKS = {
    "medium_bench": "recruitment",
    "effective_drug": "trial_design",
    "develop": "portfolio",
}


def plays(agent: str, family: str) -> bool:
    """Whether the registered ``agent`` plays environment family ``family``."""
    from clinbench.agents.registry import agent_entry

    envs = agent_entry(agent).envs
    return "*" in envs or family in envs


def long_budget_folder(task: str) -> str:
    return f"{LONG_BUDGET}/{LONG_TASKS[task]}"


def _budget_row(agent: str, budget: str, folder_of) -> tuple[tuple[str, str], tuple]:
    """One row of the long-budget table: ``agent`` on each of its tasks from the folder
    ``folder_of(task)``; :data:`NOT_PLAYED` on the families it does not play."""
    return (
        (agent, budget),
        tuple(
            Source(folder_of(t), agent, t) if plays(agent, f) else NOT_PLAYED
            for t, f in LONG_TASKS.items()
        ),
    )


AGENTS_LONG_BUDGET = ScoreTable(
    "agents.md, ten times the budget",
    "docs/agents.md",
    "## Measured scores",
    ("agent", "training steps", *LONG_TASKS),
    (
        _budget_row("heuristic", "none", lambda t: CANONICAL),
        _budget_row("repeat_last", "none", lambda t: CANONICAL),
        *(
            row
            for agent in ("hcapo", "mira", "klong", "memexrl")
            for row in (
                _budget_row(agent, "default", lambda t: CANONICAL),
                _budget_row(agent, "10 times", long_budget_folder),
            )
        ),
    ),
    label_columns=2,
)

_STUDY = "## 4. The committed study"
_OFFLINE_AGENTS = ("bc", "rwbc", "learned_reward", "iql")
_ONLINE = tuple(f"{a} (online)" for a in ("heuristic", "memexrl", "random"))


def _online(folder: str, tasks: tuple[str, ...], blanks: int = 0):
    return tuple(
        (label, (*_tasks(folder, label.split()[0], tasks), *(None,) * blanks)) for label in _ONLINE
    )


def _ablation(label: str, name: str, family: str, agent: str, tasks, blanks: int = 0):
    folder = f"{OFFLINE}/ablations/{name}_{family}"
    return (label, (*_tasks(folder, agent, tasks), *(None,) * blanks))


OFFLINE_RECRUITMENT = ScoreTable(
    "offline.md, recruitment hard_bench",
    "docs/offline.md",
    _STUDY,
    ("agent", "worlds", "behaviour=heuristic+random"),
    (
        *_online(f"{OFFLINE}/recruitment", ("hard_bench",), blanks=1),
        *(
            (
                a,
                (
                    Source(f"{OFFLINE}/recruitment", a, "hard_bench"),
                    Source(
                        f"{OFFLINE}/recruitment", f"{a}@behaviour=heuristic+random", "hard_bench"
                    ),
                ),
            )
            for a in _OFFLINE_AGENTS
        ),
        _ablation("bc, linear (ablation)", "bc_linear", "recruitment", "bc", ("hard_bench",), 1),
        _ablation(
            "rwbc, beta = 0 (ablation)", "rwbc_beta0", "recruitment", "rwbc", ("hard_bench",), 1
        ),
        _ablation(
            "learned_reward, immediate reward (ablation)",
            "learned_reward_myopic",
            "recruitment",
            "learned_reward",
            ("hard_bench",),
            1,
        ),
        _ablation(
            "iql, expectile 0.5 (ablation)",
            "iql_expectile05",
            "recruitment",
            "iql",
            ("hard_bench",),
            1,
        ),
    ),
)

OFFLINE_UNSEEN_TASK = ScoreTable(
    "offline.md, recruitment unseen task",
    "docs/offline.md",
    _STUDY,
    ("agent", "worlds", "task"),
    tuple(
        (
            a,
            (
                Source(f"{OFFLINE}/recruitment_tasks", a, "hard_bench"),
                Source(f"{OFFLINE}/recruitment_tasks", f"{a}@task", "hard_bench"),
            ),
        )
        for a in _OFFLINE_AGENTS
    ),
)

_TRIAL_STUDY = f"{OFFLINE}/trial_design"
OFFLINE_TRIAL = ScoreTable(
    "offline.md, dose finding",
    "docs/offline.md",
    _STUDY,
    ("agent", *TRIAL),
    (
        *_online(_TRIAL_STUDY, TRIAL),
        *(
            (a, _tasks(_TRIAL_STUDY, a, TRIAL))
            for a in (
                *_OFFLINE_AGENTS,
                "bc@task",
                "rwbc@task",
                "iql@task",
                "bc@unseen=null_world",
                "rwbc@unseen=null_world",
            )
        ),
        _ablation("iql, expectile 0.5 (ablation)", "iql_expectile05", "trial_design", "iql", TRIAL),
        _ablation(
            "learned_reward, immediate reward (ablation)",
            "learned_reward_myopic",
            "trial_design",
            "learned_reward",
            TRIAL,
        ),
    ),
)


@dataclass(frozen=True)
class DataTable:
    """offline.md's mean scores of the logged episodes, per behaviour agent and pooled
    (``mixture``), as the study's reports give them for the ``worlds`` split."""

    name: str = "offline.md, logged data"
    doc: str = "docs/offline.md"
    section: str = _STUDY
    header: tuple[str, ...] = ("dataset", "task", "heuristic", "random", "memexrl", "mixture")
    rows: tuple[tuple[str, str, str], ...] = (
        ("recruitment-hard-v0", "hard_bench", f"{OFFLINE}/recruitment"),
        *(("trial-mixed-v0", t, _TRIAL_STUDY) for t in TRIAL),
    )
    label_columns: int = 2

    def expected(self, root: Path) -> list[list[str]]:
        out = []
        for dataset, task, folder in self.rows:
            report = json.loads((root / folder / "benchmark_report.json").read_text())
            data = report["offline"][task]["bc"]
            if data["dataset"] != dataset:
                raise ValueError(f"{folder}: bc on {task} learned from {data['dataset']}")
            scores = data["behaviour_scores"]
            values = [scores[a] for a in self.header[2:-1]] + [data["data_score"]]
            out.append([dataset, task, *(f"{v:.3f}" for v in values)])
        return out

    def accepts(self, doc_cell: str, expected_cell: str) -> bool:
        return doc_cell == expected_cell


def cell_seconds(folder: Path) -> dict[tuple[str, str], list[float]]:
    """(agent, task) -> the wall-clock seconds the manifest records for each seed's cell."""
    manifest = json.loads((folder / "manifest.json").read_text())
    out: dict[tuple[str, str], list[float]] = {}
    for cell in manifest["cells"]:
        out.setdefault((cell["agent"], cell["task"]), []).append(float(cell["seconds"]))
    return out


def cell_files(folder: Path) -> dict[tuple[str, str, int], Path]:
    """(agent, task, seed) -> the run file of each cell the folder's manifest lists."""
    manifest = json.loads((folder / "manifest.json").read_text())
    return {
        (c["agent"], c["task"], c["seed"]): folder / "runs" / f"{c['hash']}.json"
        for c in manifest["cells"]
    }


def cell_seeds(folder: Path) -> dict[tuple[str, str], list[int]]:
    """(agent, task) -> the sorted seeds of the folder's cells (manifest order aside)."""
    out: dict[tuple[str, str], list[int]] = {}
    for agent, task, seed in cell_files(folder):
        out.setdefault((agent, task), []).append(seed)
    return {k: sorted(v) for k, v in out.items()}


def format_seconds(seconds: list[float]) -> str:
    """``mean s (max m)`` at one decimal; :data:`NO_CELLS` without cells."""
    if not seconds:
        return NO_CELLS
    return f"{np.mean(seconds):.1f} s (max {max(seconds):.1f})"


@dataclass(frozen=True)
class TimeTable:
    """agents.md's "Time per cell": mean (maximum) over the seeds of each cell's seconds.
    The doc may leave the maximum out (``0.5 s``)."""

    name: str = "agents.md, time per cell"
    doc: str = "docs/agents.md"
    section: str = "## Time per cell"
    header: tuple[str, ...] = ("agent", *RECRUITMENT, *TRIAL)
    agents: tuple[str, ...] = (
        "hcapo",
        "mira",
        "klong",
        "memexrl",
        "heuristic",
        "random",
        "fixed_design",
    )
    folder: str = CANONICAL
    label_columns: int = 1

    def expected(self, root: Path) -> list[list[str]]:
        seconds = cell_seconds(root / self.folder)
        return [
            [a, *(format_seconds(seconds.get((a, t), [])) for t in self.header[1:])]
            for a in self.agents
        ]

    def accepts(self, doc_cell: str, expected_cell: str) -> bool:
        return doc_cell in (expected_cell, expected_cell.split(" (max ")[0])


@dataclass(frozen=True)
class BudgetTable:
    """agents.md's extrapolated budget to beat the heuristic
    (``experiments/budget_extrapolation.py``, from the canonical and long-budget runs)."""

    name: str = "agents.md, budget to beat the heuristic"
    doc: str = "docs/agents.md"
    section: str = "## Measured scores"
    label_columns: int = 2

    @property
    def script(self):
        from shared_helpers import load_script

        return load_script(
            Path(__file__).resolve().parents[1] / "experiments" / "budget_extrapolation.py"
        )

    @property
    def header(self) -> tuple[str, ...]:
        return self.script.HEADER

    def expected(self, root: Path) -> list[list[str]]:
        return self.script.table_rows(root)

    def accepts(self, doc_cell: str, expected_cell: str) -> bool:
        return doc_cell == expected_cell


TABLES = (
    AGENTS_RECRUITMENT,
    AGENTS_TRIAL,
    AGENTS_PORTFOLIO,
    AGENTS_LONG_BUDGET,
    BudgetTable(),
    TimeTable(),
    DataTable(),
    OFFLINE_RECRUITMENT,
    OFFLINE_UNSEEN_TASK,
    OFFLINE_TRIAL,
)


def section_text(markdown: str, heading: str) -> str:
    """The lines under the heading line ``heading`` up to the next heading of its level
    or above (empty when there is no such heading)."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = markdown.splitlines()
    if heading not in lines:
        return ""
    start = lines.index(heading) + 1
    end = next(
        (
            i
            for i in range(start, len(lines))
            if lines[i].startswith("#") and len(lines[i]) - len(lines[i].lstrip("#")) <= level
        ),
        len(lines),
    )
    return "\n".join(lines[start:end])


def markdown_tables(text: str) -> list[list[list[str]]]:
    """Every Markdown table in ``text``: its rows (the header first, the separator
    dropped), each a list of stripped cells."""
    tables: list[list[list[str]]] = []
    current: list[list[str]] | None = None
    for line in text.splitlines():
        if not line.startswith("|"):
            current = None
            continue
        cells = [c.strip() for c in line.strip().removeprefix("|").removesuffix("|").split("|")]
        if current is None:
            current = []
            tables.append(current)
        if not all(set(c) <= set("-: ") and c for c in cells):
            current.append(cells)
    return tables


def check(markdown: str, table, root: Path) -> list[str]:
    """What differs between ``table`` as the doc ``markdown`` prints it and as the
    committed results give it: one sentence per difference (none when they agree)."""
    found = [
        t
        for t in markdown_tables(section_text(markdown, table.section))
        if tuple(t[0]) == table.header
    ]
    if len(found) != 1:
        header = " | ".join(table.header)
        problem = (
            f"{table.name}: {len(found)} tables with the header {header} under "
            f"{table.section!r} in {table.doc}, expected 1"
        )
        return [problem]
    k = table.label_columns
    rows = found[0][1:]
    want = table.expected(root)
    labels = [tuple(r[:k]) for r in rows]
    wanted = [tuple(w[:k]) for w in want]
    problems = []
    if labels != wanted:
        problems.append(f"{table.name}: the doc's rows are {labels}, the table defines {wanted}")
    by_label = {tuple(w[:k]): w for w in want}
    for row in rows:
        expected = by_label.get(tuple(row[:k]))
        if expected is None:
            continue
        if len(row) != len(expected):
            problems.append(f"{table.name}, {row[:k]}: {len(row)} cells, expected {len(expected)}")
            continue
        for column, doc_cell, cell in zip(table.header[k:], row[k:], expected[k:]):
            if not table.accepts(doc_cell, cell):
                problems.append(
                    f"{table.name}, {' / '.join(row[:k])}, {column}: the doc says {doc_cell!r}, "
                    f"the committed results give {cell!r}"
                )
    return problems


def render(table, root: Path) -> str:
    """The Markdown of ``table`` from the committed results (to paste into its doc)."""
    rows = [table.header, *table.expected(root)]
    lines = ["|" + "|".join(f" {c} " if c else " " for c in r) + "|" for r in rows]
    lines.insert(1, "|" + "---|" * len(table.header))
    return "\n".join(lines)
