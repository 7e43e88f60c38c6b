"""The numbers docs/agents.md and docs/offline.md quote are those of the committed results.

Each table of ``tests/doc_tables.py`` names the results folder and agent of
every number in a doc's table; a table that still shows an earlier run's numbers fails
here, naming the cell, what the doc says and what the results give.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import doc_tables
import numpy as np
import pytest
from scipy import stats

from clinbench.report.results import load_results

ROOT = Path(__file__).resolve().parents[1]


def doc(table) -> str:
    return (ROOT / table.doc).read_text(encoding="utf-8")


@pytest.mark.parametrize("table", doc_tables.TABLES, ids=lambda t: t.name)
def test_doc_table_is_the_committed_results(table):
    problems = doc_tables.check(doc(table), table, ROOT)
    assert not problems, "\n".join(
        problems + ["the table from the committed results:", doc_tables.render(table, ROOT)]
    )


def test_a_stale_number_fails():
    """The check is not vacuous: the numbers agents.md showed before this round fail it."""
    table = doc_tables.AGENTS_RECRUITMENT
    text = doc(table)
    current = "| hcapo | 0.690 ± 0.078 | 0.404 ± 0.182 | 0.339 ± 0.131 |"
    assert current in text
    # the previous run's row (full-batch updates)
    stale = text.replace(current, "| hcapo | 0.196 ± 0.128 | 0.076 ± 0.026 | 0.078 ± 0.039 |")
    problems = doc_tables.check(stale, table, ROOT)
    assert len(problems) == 3
    assert "hcapo, easy_bench: the doc says '0.196 ± 0.128'" in problems[0]
    assert "'0.690 ± 0.078'" in problems[0]


def test_a_missing_row_or_table_fails():
    table = doc_tables.AGENTS_TRIAL
    text = doc(table)
    row = [line for line in text.splitlines() if line.startswith("| maskable_ppo")][1]
    assert "0.447 ± 0.075" in row  # the dose-finding table's
    assert doc_tables.check(text.replace(row + "\n", ""), table, ROOT)
    assert doc_tables.check(text.replace("## Measured scores", "## Scores"), table, ROOT)


def test_the_doc_cell_is_the_t_interval_of_the_per_seed_means():
    """A cell is the mean over seeds of the per-seed mean score, ± t_{0.975, n-1} s / sqrt(n),
    whether read from the report (canonical run) or from the cell files (ablations)."""
    for folder, agent, task in [
        ("data/sweep_results", "hcapo", "easy_bench"),
        ("data/ablations/maskable_ppo_trial", "maskable_ppo", "efficacy_safety"),
    ]:
        res = load_results(ROOT / folder)
        x = np.array(list(res.scores(task, agent).values()))
        assert x.size == 5
        half = stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
        source = doc_tables.Source(folder, agent, task)
        assert doc_tables.score_cell(ROOT, source) == doc_tables.format_cell(x.mean(), half)


def test_an_absent_cell_reads_not_run():
    # the long recruitment run played medium_bench only
    source = doc_tables.Source("data/long_budget/recruitment", "hcapo", "easy_bench")
    assert doc_tables.score_cell(ROOT, source) == doc_tables.NOT_RUN
    assert doc_tables.score_cell(ROOT, None) == ""


def test_a_dash_of_the_long_budget_table_is_a_family_the_agent_cannot_play():
    """A "—" of the long-budget table hides no run: its agent refuses that family's task,
    and every number of the table rests on the five canonical seeds."""
    from clinbench.agents.context import AgentContext
    from clinbench.agents.registry import make_agent
    from clinbench.env import make

    table = doc_tables.AGENTS_LONG_BUDGET
    cells = [
        (label[0], task, source)
        for label, sources in table.rows
        for task, source in zip(doc_tables.LONG_TASKS, sources)
    ]
    hidden = {(agent, task) for agent, task, source in cells if source == doc_tables.NOT_PLAYED}
    assert hidden == {
        ("mira", "develop"),
        ("klong", "develop"),
        ("memexrl", "develop"),
        ("repeat_last", "medium_bench"),
        ("repeat_last", "effective_drug"),
    }
    for agent, task in hidden:
        family = doc_tables.LONG_TASKS[task]
        with pytest.raises(ValueError):
            make_agent(agent, AgentContext.of(make(f"{family}/{task}")))
    for agent, task, source in cells:
        if source != doc_tables.NOT_PLAYED:
            seeds = doc_tables.cell_seeds(ROOT / source.folder).get((agent, task))
            assert seeds == [1, 7, 21, 42, 123], (source, seeds)
    assert doc_tables.score_cell(ROOT, doc_tables.NOT_PLAYED) == doc_tables.NO_CELLS


def test_the_long_budget_runs_play_the_canonical_evaluation_worlds():
    """Each long-budget cell is evaluated on the canonical cell's worlds (same agent,
    task and seed: the same evaluation key and world seeds), so the table's two budgets
    are paired comparisons."""
    canonical = doc_tables.cell_files(ROOT / doc_tables.CANONICAL)
    compared = 0
    for family in sorted(set(doc_tables.LONG_TASKS.values())):
        for key, path in doc_tables.cell_files(ROOT / doc_tables.LONG_BUDGET / family).items():
            long_cell = json.loads(path.read_text())
            cell = json.loads(canonical[key].read_text())
            assert long_cell["eval_seeds"] == cell["eval_seeds"], key
            assert long_cell["evaluation"] == cell["evaluation"], key
            compared += 1
    assert compared == 65


def test_long_budget_wall_clock():
    """The wall-clock agents.md quotes for the long recruitment and portfolio runs."""
    text = " ".join((ROOT / "docs" / "agents.md").read_text(encoding="utf-8").split())
    for family in ("recruitment", "portfolio"):
        manifest = json.loads(
            (ROOT / doc_tables.LONG_BUDGET / family / "manifest.json").read_text()
        )
        assert f"{family} run took {manifest['wall_seconds']:,.0f} s" in text


def test_time_per_cell_total():
    """The summed durations agents.md quotes for the first two families' cells."""
    seconds = doc_tables.cell_seconds(ROOT / doc_tables.CANONICAL)
    tasks = (*doc_tables.RECRUITMENT, *doc_tables.TRIAL)
    total = sum(sum(v) for (_, task), v in seconds.items() if task in tasks)
    count = sum(len(v) for (_, task), v in seconds.items() if task in tasks)
    text = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    section = doc_tables.section_text(text, "## Time per cell")
    assert count == 195
    assert f"add up to {total:,.0f} s" in " ".join(section.split())
