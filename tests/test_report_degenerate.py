"""Degenerate inputs of ``clinbench report``, each decided as docs/statistics.md says.

Results folders are made by hand here (a manifest and one cell file per cell), so each
case is exactly the one named: bad values in a cell file, agents without variance, a
constant paired difference, too few seeds, an incomplete grid.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from shared_helpers import synthetic_manifest
from typer.testing import CliRunner

from clinbench.charts import figures
from clinbench.charts.data import ChartData
from clinbench.cli.app import app
from clinbench.env.recruitment.tasks import TASK_VERSION
from clinbench.sweep.store import FORMAT

runner = CliRunner(env={"COLUMNS": "200"})
TASKS = ["easy_bench", "medium_bench", "hard_bench"]


def cell_hash(task: str, agent: str, seed: int) -> str:
    return hashlib.sha256(f"{task}/{agent}/{seed}".encode()).hexdigest()[:20]


def write_results(folder: Path, scores: dict[tuple[str, str, int], list], seeds: list[int]) -> Path:
    """A results folder holding ``scores[(task, agent, seed)]`` (evaluation episodes' scores).

    Cells of the grid that ``scores`` leaves out are listed in the manifest without a file,
    as a sweep that was killed leaves them.
    """
    tasks = sorted({k[0] for k in scores}, key=TASKS.index)
    agents = list(dict.fromkeys(k[1] for k in scores))
    runs = folder / "runs"
    runs.mkdir(parents=True)
    cells = []
    for task in tasks:
        for agent in agents:
            for seed in seeds:
                h = cell_hash(task, agent, seed)
                cells.append(
                    {
                        "task": task,
                        "agent": agent,
                        "seed": seed,
                        "env": "recruitment",
                        "hash": h,
                        "status": "ok",
                        "seconds": 0.1,
                    }
                )
                if (task, agent, seed) not in scores:
                    continue
                record = {
                    "format": FORMAT,
                    "hash": h,
                    "key": {"env": "recruitment", "task": task, "agent": agent, "seed": seed},
                    "config": {"task_version": TASK_VERSION},
                    "status": "ok",
                    "curve": [],
                    "episodes": [
                        {"score": v, "eval_seed": i}
                        for i, v in enumerate(scores[task, agent, seed])
                    ],
                }
                # json.dumps writes NaN and Infinity as a hand-edited file could hold them
                (runs / f"{h}.json").write_text(json.dumps(record))
    manifest = synthetic_manifest(
        {"env": "recruitment", "tasks": tasks, "agents": agents, "seeds": seeds}, cells
    )
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def grid(
    per_agent: dict[str, dict[str, list[float]]], seeds: list[int]
) -> dict[tuple[str, str, int], list]:
    """``per_agent[agent][task]`` = one score per seed -> cell scores (two equal episodes)."""
    return {
        (t, a, s): [v, v]
        for a, tasks in per_agent.items()
        for t, vs in tasks.items()
        for s, v in zip(seeds, vs)
    }


def varied(seed: int, base: float, n: int) -> list[float]:
    return list(np.round(base + np.random.default_rng(seed).normal(0, 0.03, n), 4))


def healthy(n: int = 5) -> dict[str, dict[str, list[float]]]:
    return {
        "heuristic": {t: varied(i, 0.7 - 0.1 * i, n) for i, t in enumerate(TASKS)},
        "random": {t: varied(10 + i, 0.05, n) for i, t in enumerate(TASKS)},
        "klong": {t: varied(20 + i, 0.6 - 0.1 * i, n) for i, t in enumerate(TASKS)},
    }


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def report(folder: Path, *args: object) -> dict:
    result = invoke(
        "report",
        "--results",
        folder,
        "--no-charts",
        "--reproducible",
        "--bootstrap-reps",
        500,
        *args,
    )
    assert result.exit_code == 0, result.output
    return json.loads((folder / "benchmark_report.json").read_text())


def pair(rep: dict, family: str, a: str, b: str) -> dict:
    fam = next(f for f in rep["families"] if f["name"] == family)
    return next(q for q in fam["pairs"] if {q["a"], q["b"]} == {a, b})


SEEDS = [1, 7, 21, 42, 123]


# --------------------------------------------------------------------------- bad cell values
@pytest.mark.parametrize(
    ("value", "says"),
    [(math.nan, "is nan"), (math.inf, "is inf"), (None, "is null"), ("0.5", '"0.5"')],
)
def test_a_bad_score_exits_2_naming_the_file_and_the_field(tmp_path, value, says):
    scores = grid(healthy(), SEEDS)
    scores["medium_bench", "klong", 21] = [0.5, value]
    folder = write_results(tmp_path / "r", scores, SEEDS)
    for command in (["report", "--no-charts"], ["report", "--check"]):
        result = invoke(*command, "--results", folder)
        assert result.exit_code == 2, result.output
        path = folder / "runs" / f"{cell_hash('medium_bench', 'klong', 21)}.json"
        assert (
            str(path) in result.stderr
            and "episodes[1].score" in result.stderr
            and says in result.stderr
        )
        assert "--skip-bad" in result.stderr and "Traceback" not in result.output


def test_skip_bad_reports_such_cells_as_failed_and_goes_on(tmp_path):
    scores = grid(healthy(), SEEDS)
    scores["medium_bench", "klong", 21] = [math.nan, 0.5]
    rep = report(write_results(tmp_path / "r", scores, SEEDS), "--skip-bad")
    where = {"task": "medium_bench", "agent": "klong", "seed": 21}
    assert rep["failed"] == [{**where, "error": "bad value: episodes[0].score is nan"}]
    assert rep["missing"] == [{**where, "reason": "bad value: episodes[0].score is nan"}]
    agg = rep["aggregates"]["recruitment"]
    assert agg["seeds"]["klong"] == [1, 7, 42, 123] and agg["seeds"]["random"] == SEEDS
    assert pair(rep, "recruitment", "heuristic", "klong")["n"] == 4
    assert pair(rep, "recruitment", "heuristic", "random")["n"] == 5  # untouched pairs keep all
    assert rep["per_task"]["medium_bench"]["klong"]["n"] == 4


def test_a_score_missing_from_an_episode_is_bad_input(tmp_path):
    folder = write_results(tmp_path / "r", grid(healthy(), SEEDS), SEEDS)
    path = folder / "runs" / f"{cell_hash('easy_bench', 'random', 7)}.json"
    record = json.loads(path.read_text())
    del record["episodes"][0]["score"]
    path.write_text(json.dumps(record))
    result = invoke("report", "--results", folder, "--no-charts")
    assert result.exit_code == 2 and "episodes[0].score is missing" in result.stderr


# --------------------------------------------------------------------------- no variance
def test_two_constant_agents_apart_are_not_testable_never_significant(tmp_path):
    agents = healthy()
    agents["always_a"] = {t: [0.300] * 5 for t in TASKS}
    agents["always_b"] = {t: [0.301] * 5 for t in TASKS}
    rep = report(write_results(tmp_path / "r", grid(agents, SEEDS), SEEDS))
    for family in ["recruitment", *TASKS]:
        q = pair(rep, family, "always_a", "always_b")
        assert q["status"] == "no variance" and q["note"] == "not testable (no variance)"
        assert q["p"] is None and q["significant"] is False and q["p_holm"] == 1.0
        assert q["welch"]["testable"] is False and q["welch"]["p"] is None
    md = (tmp_path / "r" / "benchmark_report.md").read_text()
    assert "not testable (no variance)" in md
    assert "always_a vs always_b (not testable (no variance))" in " ".join(rep["verdict"])


def test_equal_constant_agents_give_p_one(tmp_path):
    agents = healthy()
    agents["idle_a"] = {t: [0.0] * 5 for t in TASKS}
    agents["idle_b"] = {t: [0.0] * 5 for t in TASKS}
    rep = report(write_results(tmp_path / "r", grid(agents, SEEDS), SEEDS))
    q = pair(rep, "easy_bench", "idle_a", "idle_b")
    assert (
        q["status"] == "tested"
        and q["p"] == 1.0
        and q["welch"]["p"] == 1.0
        and not q["significant"]
    )


@pytest.mark.filterwarnings("ignore:Precision loss:RuntimeWarning")  # scipy's own paired t here
def test_a_constant_paired_difference_is_not_testable_while_welch_is_shown(tmp_path):
    agents = healthy()
    agents["heuristic"]["easy_bench"] = [0.682, 0.462, 0.325, 0.31, 0.788]
    agents["shifted"] = {t: [v - 0.05 for v in agents["heuristic"][t]] for t in TASKS}
    scores = grid(agents, SEEDS)
    rep = report(write_results(tmp_path / "r", scores, SEEDS))
    q = pair(rep, "easy_bench", "heuristic", "shifted")
    x = np.array([scores["easy_bench", "heuristic", s][0] for s in SEEDS])
    y = np.array([scores["easy_bench", "shifted", s][0] for s in SEEDS])
    assert len(set((x - y).tolist())) > 1  # equal only up to rounding: scipy gives t ~ 1e15
    assert sps.ttest_rel(x, y).pvalue < 1e-4
    assert q["status"] == "no variance" and q["p"] is None and not q["significant"]
    assert q["welch"]["p"] == pytest.approx(sps.ttest_ind(x, y, equal_var=False).pvalue, rel=1e-9)
    assert q["welch"]["p"] > 0.05


def test_a_constant_difference_exactly(tmp_path):
    # scores that are exact in binary, so every difference is the same float
    agents = {
        "a": {t: [0.5, 0.25, 0.75, 0.125, 0.375] for t in TASKS},
        "b": {t: [0.25, 0.0, 0.5, -0.125, 0.125] for t in TASKS},
        "c": {t: [0.0625, 0.5, 0.3125, 0.25, 0.1875] for t in TASKS},
    }
    rep = report(write_results(tmp_path / "r", grid(agents, SEEDS), SEEDS))
    for family in ["recruitment", *TASKS]:
        q = pair(rep, family, "a", "b")
        assert q["status"] == "no variance" and q["p"] is None and q["significant"] is False
        assert q["welch"]["p"] > 0.1  # the same data, unpaired: nowhere near significant
        assert q["effect"]["value"] is None


# --------------------------------------------------------------------------- few seeds
@pytest.mark.parametrize("n", [1, 2])
def test_fewer_than_three_seeds_give_no_tests_and_no_intervals(tmp_path, n):
    seeds = SEEDS[:n]
    rep = report(write_results(tmp_path / "r", grid(healthy(n), seeds), seeds))
    for task in TASKS:
        for s in rep["per_task"][task].values():
            assert s["lo"] is None and s["hi"] is None
    for fam in rep["families"]:
        for q in fam["pairs"]:
            assert q["status"] == "too few seeds" and q["p"] is None and not q["significant"]
    for stats in rep["aggregates"]["recruitment"]["agents"].values():
        assert all(s["lo"] is None and s["hi"] is None for s in stats.values())
    assert rep["rankings"]["recruitment"] == {} and rep["power"]["families"] == {}
    head = rep["verdict"][0]
    assert "no confirmatory test" in head and "[" not in head
    assert any("no interval and no tests for them there" in w for w in rep["warnings"])
    assert any("no interval and no tests for it" in w for w in rep["warnings"])
    md = (tmp_path / "r" / "benchmark_report.md").read_text()
    assert "No power analysis" in md
    row = next(line for line in md.splitlines() if line.startswith("| heuristic | 1-3 |"))
    assert "no interval" not in row and "[" not in row.split(" | ")[2]
    if n == 2:
        # untested pairs show no Holm p (they count as p = 1 inside the family)
        row = next(
            line for line in md.splitlines() if line.startswith("| heuristic | random | 2 |")
        )
        assert row.split(" | ")[5:7] == ["-", "-"]


def test_one_agent_with_two_seeds_on_a_task_is_not_tested_there(tmp_path):
    scores = grid(healthy(), SEEDS)
    for s in SEEDS[2:]:
        del scores["hard_bench", "klong", s]
    rep = report(write_results(tmp_path / "r", scores, SEEDS))
    assert rep["per_task"]["hard_bench"]["klong"]["lo"] is None
    q = pair(rep, "hard_bench", "heuristic", "klong")
    assert q["status"] == "too few seeds" and q["n"] == 2
    assert pair(rep, "hard_bench", "heuristic", "random")["status"] == "tested"
    assert pair(rep, "easy_bench", "heuristic", "klong")["n"] == 5


# --------------------------------------------------------------------------- incomplete grids
def test_an_incomplete_grid_costs_only_the_pairs_it_touches_and_names_them(tmp_path):
    scores = grid(healthy(), SEEDS)
    del scores["medium_bench", "random", 42]
    rep = report(write_results(tmp_path / "r", scores, SEEDS))
    agg = rep["aggregates"]["recruitment"]
    lost = [{"seed": 42, "missing": [{"task": "medium_bench", "agent": "random"}]}]
    assert agg["seeds"]["random"] == [1, 7, 21, 123] and agg["seeds"]["klong"] == SEEDS
    assert agg["dropped_seeds"] == {"random": lost}
    # on the family's aggregate each pair uses the seeds *it* shares on every task
    q = pair(rep, "recruitment", "heuristic", "random")
    assert q["n"] == 4 and q["seeds"] == [1, 7, 21, 123] and q["dropped_seeds"] == lost
    assert pair(rep, "recruitment", "heuristic", "klong")["n"] == 5
    # the ranking needs complete blocks: it drops the seed and says so
    ranking = rep["rankings"]["recruitment"]
    assert ranking["blocks"] == 3 * 4 and ranking["dropped_seeds"] == lost
    assert rep["power"]["families"]["recruitment"]["seeds"] == 4  # most pairs: 2 of 3
    assert pair(rep, "easy_bench", "heuristic", "random")["n"] == 5  # per task: shared seeds
    assert pair(rep, "medium_bench", "heuristic", "random")["n"] == 4
    md = (tmp_path / "r" / "benchmark_report.md").read_text()
    assert "- random: seed 42 (missing medium_bench)" in md
    assert "- heuristic vs random: seed 42 (missing random on medium_bench)" in md
    assert "each comparison uses the seeds its pair shares" in rep["verdict"][-1]


def test_an_agent_missing_a_whole_task_costs_its_own_pairs_not_the_others_seeds(tmp_path):
    scores = grid(healthy(), SEEDS)
    for s in SEEDS:
        del scores["hard_bench", "klong", s]
    rep = report(write_results(tmp_path / "r", scores, SEEDS))
    agg = rep["aggregates"]["recruitment"]
    assert agg["seeds"]["heuristic"] == SEEDS and agg["seeds"]["klong"] == []
    assert set(agg["agents"]) == {"heuristic", "random"}  # klong has no row, its pairs stay
    fam = next(f for f in rep["families"] if f["name"] == "recruitment")
    assert fam["m"] == 3  # declared pairs: m does not shrink
    assert pair(rep, "recruitment", "heuristic", "klong")["status"] == "too few seeds"
    assert pair(rep, "recruitment", "heuristic", "random")["n"] == 5
    assert "klong" in rep["per_task"]["easy_bench"] and "klong" not in rep["per_task"]["hard_bench"]
    md = (tmp_path / "r" / "benchmark_report.md").read_text()
    assert "- klong: seed 1 (missing hard_bench); seed 7 (missing hard_bench)" in md


def test_an_agent_with_too_few_complete_seeds_costs_only_its_pairs(tmp_path):
    scores = grid(healthy(), SEEDS)
    for s in SEEDS[:3]:
        del scores["hard_bench", "klong", s]
    rep = report(write_results(tmp_path / "r", scores, SEEDS))
    agg = rep["aggregates"]["recruitment"]
    assert agg["seeds"]["heuristic"] == SEEDS and agg["seeds"]["klong"] == [42, 123]
    assert agg["agents"]["klong"]["mean"]["lo"] is None  # two seeds: no interval
    assert pair(rep, "recruitment", "heuristic", "klong")["status"] == "too few seeds"
    assert pair(rep, "recruitment", "heuristic", "random")["status"] == "tested"
    # the ranking needs complete blocks: without klong two agents remain, too few to rank
    assert rep["rankings"]["recruitment"] == {}


def test_welch_primary_uses_each_agents_own_seeds(tmp_path):
    scores = grid(healthy(), SEEDS)
    del scores["easy_bench", "klong", 7]
    rep = report(write_results(tmp_path / "r", scores, SEEDS), "--test", "welch")
    q = pair(rep, "easy_bench", "heuristic", "klong")
    x = np.array([scores["easy_bench", "heuristic", s][0] for s in SEEDS])
    y = np.array([scores["easy_bench", "klong", s][0] for s in SEEDS if s != 7])
    assert q["n_each"] == [5, 4] and q["p"] == pytest.approx(
        sps.ttest_ind(x, y, equal_var=False).pvalue, rel=1e-9
    )
    shared = np.array([scores["easy_bench", "heuristic", s][0] for s in SEEDS if s != 7])
    assert q["paired"]["p"] == pytest.approx(sps.ttest_rel(shared, y).pvalue, rel=1e-9)
    assert q["effect"]["method"] == "noncentral t (pooled variance)"
    md = (tmp_path / "r" / "benchmark_report.md").read_text()
    assert "| heuristic | klong | 5 / 4 |" in md


def test_welch_can_be_declared_primary(tmp_path):
    scores = grid(healthy(), SEEDS)
    rep = report(write_results(tmp_path / "r", scores, SEEDS), "--test", "welch")
    assert rep["protocol"]["test"] == "welch" and rep["power"]["effect"] == "d"
    for fam in rep["families"]:
        assert fam["test"] == "welch"
        for q in fam["pairs"]:
            assert q["p"] == q["welch"]["p"] and q["effect"]["name"] == "hedges_g"
    x = np.array([scores["easy_bench", "heuristic", s][0] for s in SEEDS])
    y = np.array([scores["easy_bench", "klong", s][0] for s in SEEDS])
    q = pair(rep, "easy_bench", "heuristic", "klong")
    ci = sps.ttest_ind(x, y, equal_var=False).confidence_interval()
    assert (q["diff_lo"], q["diff_hi"]) == pytest.approx((ci.low, ci.high), rel=1e-9)
    result = invoke("report", "--results", tmp_path / "r", "--no-charts", "--test", "wilcoxon")
    assert result.exit_code == 2 and "paired" in result.stderr and "welch" in result.stderr


# --------------------------------------------------------------------------- odd folders
def test_a_seed_listed_twice_is_bad_input(tmp_path):
    folder = write_results(tmp_path / "r", grid(healthy(), SEEDS), SEEDS)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["grid"]["seeds"].append(7)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    result = invoke("report", "--results", folder, "--no-charts")
    assert result.exit_code == 2 and "lists a seed more than once" in result.stderr


def test_a_cell_listed_twice_is_bad_input(tmp_path):
    folder = write_results(tmp_path / "r", grid(healthy(), SEEDS), SEEDS)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["cells"].append(manifest["cells"][0])
    (folder / "manifest.json").write_text(json.dumps(manifest))
    result = invoke("report", "--results", folder, "--no-charts")
    assert result.exit_code == 2 and "lists a cell more than once" in result.stderr


def test_an_agent_constant_on_every_seed_has_no_zero_width_headline(tmp_path):
    agents = healthy()
    agents["heuristic"] = {t: [0.9] * 5 for t in TASKS}  # best, and the same on every seed
    rep = report(write_results(tmp_path / "r", grid(agents, SEEDS), SEEDS))
    assert rep["aggregates"]["recruitment"]["agents"]["heuristic"]["mean"]["no_spread"] is True
    ranks = next(s for s in rep["verdict"] if s.startswith("Ranks"))
    assert "heuristic 1 (1.19 (the same on every seed: no spread))" in ranks
    md = (tmp_path / "r" / "benchmark_report.md").read_text()
    row = next(
        line for line in md.splitlines() if line.startswith("| heuristic |") and "no spread" in line
    )
    assert "[" not in row.split(" | ")[1]


def test_a_task_without_references_is_named_and_the_report_says_there_is_no_aggregate(tmp_path):
    agents = healthy()
    scores = grid(agents, SEEDS)
    folder = write_results(tmp_path / "r", scores, SEEDS)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["grid"]["tasks"] = ["easy_bench", "medium_bench", "hard_bench", "no_such_task"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    rep = report(folder)
    agg = rep["aggregates"]["recruitment"]
    assert agg["absent"] == "no normalisation references for no_such_task"
    assert not [f for f in rep["families"] if f["role"] == "confirmatory"]
    assert any("no normalisation references for no_such_task" in w for w in rep["warnings"])
    assert (
        "recruitment: no aggregate (no normalisation references for no_such_task): no "
        "confirmatory family." in rep["verdict"]
    )
    md = (folder / "benchmark_report.md").read_text()
    assert "alpha / 0" not in md and "No aggregate: no normalisation references" in md


def test_a_tiny_alpha_gives_planning_figures_in_finite_time(tmp_path):
    rep = report(write_results(tmp_path / "r", grid(healthy(), SEEDS), SEEDS), "--alpha", "1e-17")
    mde = rep["power"]["families"]["recruitment"]["mde"]
    assert mde["holm"] > mde["alpha"] > 0


def test_one_task_has_no_iqm_caveat(tmp_path):
    agents = {a: {"easy_bench": per["easy_bench"]} for a, per in healthy().items()}
    rep = report(write_results(tmp_path / "r", grid(agents, SEEDS), SEEDS))
    assert not any("IQM is not" in c for c in rep["aggregates"]["recruitment"]["caveats"])


def test_scores_too_large_to_summarise_are_bad_input(tmp_path):
    agents = healthy()
    agents["klong"]["easy_bench"] = [1e200, -1e200, 1e200, 3e200, 0.0]
    result = invoke(
        "report",
        "--results",
        write_results(tmp_path / "r", grid(agents, SEEDS), SEEDS),
        "--no-charts",
    )
    assert result.exit_code == 2 and "too large to summarise" in result.stderr
    agents["klong"]["easy_bench"] = [1e308] * 5
    scores = grid(agents, SEEDS)
    result = invoke(
        "report", "--results", write_results(tmp_path / "s", scores, SEEDS), "--no-charts"
    )
    assert (
        result.exit_code == 2 and "overflows" in result.stderr and "Traceback" not in result.output
    )


def test_charts_and_export_survive_a_friedman_test_that_is_undefined(tmp_path):
    agents = {a: {t: [0.5] * 5 for t in TASKS} for a in ("a", "b", "c")}
    folder = write_results(tmp_path / "r", grid(agents, SEEDS), SEEDS)
    rep = report(folder)
    assert rep["rankings"]["recruitment"]["friedman_p"] is None
    data = ChartData(
        report=rep, results=pd.DataFrame(), curves=pd.DataFrame(), trajectories=pd.DataFrame()
    )
    fig = figures.critical_difference(data, 7.0)
    titles = " ".join(ax.get_title() for ax in fig.axes)
    assert "Friedman p = undefined (every block tied)" in titles


def _set_task_version(folder: Path, version, which=None) -> None:
    """Rewrite the task version of every cell file (or of the first ``which`` files);
    ``version=None`` drops the field, as cell files from before it was recorded."""
    files = sorted((folder / "runs").glob("*.json"))
    for path in files if which is None else files[:which]:
        record = json.loads(path.read_text())
        if version is None:
            record["config"].pop("task_version")
        else:
            record["config"]["task_version"] = version
        path.write_text(json.dumps(record))


def test_a_report_refuses_to_mix_task_versions(tmp_path):
    folder = write_results(tmp_path / "r", grid(healthy(), SEEDS), SEEDS)
    _set_task_version(folder, None, which=1)  # one cell from before versions: version 1
    result = invoke("report", "--results", folder, "--no-charts")
    assert result.exit_code == 2
    assert "mixes task versions" in result.output and "version 1: 1 cells" in result.output


def test_results_of_another_task_version_get_no_normalised_scores(tmp_path):
    folder = write_results(tmp_path / "r", grid(healthy(), SEEDS), SEEDS)
    _set_task_version(folder, TASK_VERSION - 1)
    rep = report(folder)
    assert rep["aggregates"]["recruitment"]["absent"].startswith("no normalisation references")
    assert rep["protocol"]["task_version"] == {"recruitment": TASK_VERSION - 1}
    assert any(f"ran recruitment task version {TASK_VERSION - 1}" in w for w in rep["warnings"])
