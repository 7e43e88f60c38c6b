"""``clinbench report``: its numbers against scipy, statsmodels and rliable on the tidy
CSV, its files, and bad input.

One smoke sweep is run per session; tests that change a results folder work on a copy.
Every expected number is recomputed here from ``sweep_results.csv`` (a cell's score is
the mean over its evaluation episodes), never read back from clinbench. Degenerate
inputs on hand-made results folders are in ``test_report_degenerate.py``.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower
from typer.testing import CliRunner

from clinbench.cli.app import app
from clinbench.config import load
from clinbench.sweep import run_sweep

# A wide terminal, so that messages are not folded across lines.
runner = CliRunner(env={"COLUMNS": "200"})
STAT_SECTIONS = ("per_task", "aggregates", "families", "rankings", "power")
#: the smoke run's one environment family: its aggregate is the confirmatory family
ENV = "recruitment"
#: the committed canonical run's report
CANONICAL_REPORT = Path(__file__).resolve().parents[1] / "data/sweep_results/benchmark_report.json"
MD_SECTIONS = (
    "## Protocol",
    "## Headline: one aggregate per environment family",
    "## Exploratory results that disagree with the confirmatory families",
    "## Per-task scores",
    "## Pairwise comparisons",
    "## Ranking",
    "## Power",
    "## Provenance",
    "## Warnings",
)


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def sweep(folder: Path, *overrides: str) -> Path:
    outcome = run_sweep(
        load(
            [
                "preset=smoke",
                "env=recruitment",
                f"results={folder}",
                "launcher=sequential",
                *overrides,
            ]
        ),
        show_progress=False,
    )
    assert outcome.ok, outcome.failed
    return folder


def report(folder: Path, *args: object) -> dict:
    """Run ``clinbench report`` (no charts) on ``folder`` and return its JSON."""
    result = invoke("report", "--results", folder, "--no-charts", *args)
    assert result.exit_code == 0, result.output
    return json.loads((folder / "benchmark_report.json").read_text())


def files(folder: Path) -> tuple[bytes, bytes]:
    return (folder / "benchmark_report.json").read_bytes(), (
        folder / "benchmark_report.md"
    ).read_bytes()


@pytest.fixture(scope="module")
def smoke(smoke_results) -> Path:
    """Smoke results with their reproducible report (shared, read-only)."""
    return smoke_results


@pytest.fixture(scope="module")
def rep(smoke) -> dict:
    return json.loads((smoke / "benchmark_report.json").read_text())


@pytest.fixture
def copy(smoke, tmp_path) -> Path:
    """A copy of the smoke results that a test may damage."""
    return Path(shutil.copytree(smoke, tmp_path / "results"))


@pytest.fixture(scope="module")
def cells(smoke) -> pd.Series:
    """Per-seed cell scores, indexed by (task, agent, seed), from the tidy CSV."""
    frame = pd.read_csv(smoke / "sweep_results.csv")
    return frame.groupby(["task", "agent", "seed"]).score.mean()


def per_seed(cells: pd.Series, task: str, agent: str) -> np.ndarray:
    return cells.loc[(task, agent)].sort_index().to_numpy()


def normalised(cells: pd.Series, rep: dict, agent: str) -> np.ndarray:
    """tasks x seeds normalised scores of ``agent`` with the references stored in the report."""
    refs, seeds = rep["protocol"]["references"], rep["aggregates"][ENV]["seeds"][agent]
    rows = []
    for task in rep["protocol"]["tasks"]:
        lo, hi = refs[task]["random"], refs[task]["reference_planner"]
        rows.append([(cells.loc[(task, agent, s)] - lo) / (hi - lo) for s in seeds])
    return np.array(rows)


def constant(a: np.ndarray) -> bool:
    return bool(np.all(a == a[0]))


def holm(pvalues: list[float]) -> list[float]:
    return list(multipletests(pvalues, method="holm")[1])


def family(rep: dict, name: str) -> dict:
    return next(f for f in rep["families"] if f["name"] == name)


def family_samples(cells: pd.Series, rep: dict, name: str) -> dict[str, np.ndarray]:
    """Per-seed samples of every agent in a family: the task's scores, or on the aggregate
    the mean over tasks of the normalised scores."""
    agents = rep["protocol"]["agents"]
    if name == ENV:
        return {a: normalised(cells, rep, a).mean(axis=0) for a in agents}
    return {a: per_seed(cells, name, a) for a in agents}


# --------------------------------------------------------------------------- numbers
def test_per_task_summaries_match_the_csv(rep, cells):
    p = rep["protocol"]
    assert list(rep["per_task"]) == p["tasks"]
    for task in p["tasks"]:
        assert list(rep["per_task"][task]) == p["agents"]
        for agent, s in rep["per_task"][task].items():
            v = per_seed(cells, task, agent)
            half = sps.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
            assert s["n"] == v.size == len(p["seeds"])
            assert s["seeds"] == p["seeds"]
            assert s["mean"] == pytest.approx(v.mean(), rel=1e-12, abs=1e-15)
            assert s["sd"] == pytest.approx(v.std(ddof=1), rel=1e-9, abs=1e-12)
            assert s["lo"] == pytest.approx(v.mean() - half, rel=1e-9, abs=1e-12)
            assert s["hi"] == pytest.approx(v.mean() + half, rel=1e-9, abs=1e-12)
            assert s["median"] == pytest.approx(np.median(v), abs=1e-12)


FAMILIES = [ENV, "easy_bench", "medium_bench", "hard_bench"]


@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.filterwarnings("ignore:Precision loss:RuntimeWarning")  # scipy, on a constant sample
def test_pairwise_tests_match_scipy(rep, cells, name):
    fam = family(rep, name)
    samples = family_samples(cells, rep, name)
    agents = rep["protocol"]["agents"]
    assert fam["test"] == rep["protocol"]["test"] == "paired"
    assert fam["role"] == ("confirmatory" if name == ENV else "exploratory")
    assert fam["members"] == [[q["a"], q["b"]] for q in fam["pairs"]]
    assert [(q["a"], q["b"]) for q in fam["pairs"]] == list(itertools.combinations(agents, 2))
    for q in fam["pairs"]:
        x, y = samples[q["a"]], samples[q["b"]]
        assert q["n"] == x.size == y.size == len(rep["protocol"]["seeds"])
        assert q["mean_diff"] == pytest.approx(x.mean() - y.mean(), abs=1e-12)
        d = x - y
        if constant(d):
            # no spread in the differences: "not testable" (or p = 1 when they are all 0)
            assert q["status"] == ("tested" if d[0] == 0 else "no variance")
            assert q["p"] == (1.0 if d[0] == 0 else None)
        else:
            ref = sps.ttest_rel(x, y)
            ci = ref.confidence_interval()
            assert q["status"] == "tested"
            assert q["p"] == q["paired"]["p"] == pytest.approx(ref.pvalue, rel=1e-9)
            assert q["paired"]["t"] == pytest.approx(ref.statistic, rel=1e-9)
            assert (q["diff_lo"], q["diff_hi"]) == pytest.approx(
                (ci.low, ci.high), rel=1e-9, abs=1e-12
            )
            # g_z: d_z with the small-sample correction J(n - 1) = 1 - 3 / (4 (n - 1) - 1) + ...
            dz = d.mean() / d.std(ddof=1)
            j = math.gamma((d.size - 1) / 2) / (
                math.sqrt((d.size - 1) / 2) * math.gamma((d.size - 2) / 2)
            )
            assert q["effect"]["name"] == "g_z"
            assert q["effect"]["uncorrected"] == pytest.approx(dz, rel=1e-9)
            assert q["effect"]["value"] == pytest.approx(j * dz, rel=1e-9)
            if q["effect"]["method"] == "noncentral t":
                lo_nc = q["effect"]["lo"] * math.sqrt(d.size)
                assert sps.nct.sf(ref.statistic, d.size - 1, lo_nc) == pytest.approx(
                    0.025, abs=1e-7
                )
        if constant(x) and constant(y):
            assert q["welch"]["p"] == (1.0 if x[0] == y[0] else None)
        else:
            w = sps.ttest_ind(x, y, equal_var=False)
            assert q["welch"]["t"] == pytest.approx(w.statistic, rel=1e-9)
            assert q["welch"]["p"] == pytest.approx(w.pvalue, rel=1e-9)
        if name != ENV:
            u = sps.mannwhitneyu(x, y, alternative="two-sided").statistic
            assert q["prob_improvement"]["value"] == pytest.approx(u / (x.size * y.size), abs=1e-12)


def test_aggregate_probability_of_improvement_is_rliables(rep, cells):
    from rliable import metrics

    for q in family(rep, ENV)["pairs"]:
        x, y = normalised(cells, rep, q["a"]).T, normalised(cells, rep, q["b"]).T  # [run, task]
        assert q["prob_improvement"]["value"] == pytest.approx(
            metrics.probability_of_improvement(x, y), abs=1e-12
        )
        lo, hi = q["prob_improvement"]["lo"], q["prob_improvement"]["hi"]
        assert q["prob_improvement"]["zero_width"] == (lo == hi)


@pytest.mark.parametrize("name", FAMILIES)
def test_holm_over_each_family(rep, name):
    fam = family(rep, name)
    assert fam["method"] == "holm"
    assert fam["alpha"] == rep["protocol"]["alpha"] == 0.05
    # m is the declared family size; a pair that is not testable counts as p = 1 and is
    # never significant
    assert fam["m"] == len(fam["pairs"]) and fam["holm_threshold"] == pytest.approx(0.05 / fam["m"])
    raw = [q["p"] if q["status"] == "tested" else 1.0 for q in fam["pairs"]]
    for q, expected in zip(fam["pairs"], holm(raw), strict=True):
        assert q["p_holm"] == pytest.approx(expected, rel=1e-12, abs=1e-300)
        assert q["significant"] == (q["status"] == "tested" and q["p_holm"] <= fam["alpha"])


def paired_power(dz: float, n: int, alpha: float) -> float:
    """statsmodels' power of the paired t; where it returns NaN (its nct.cdf fails for a
    large noncentrality) the upper tail alone, which is then the whole power."""
    value = TTestPower().power(effect_size=dz, nobs=n, alpha=alpha)
    if math.isnan(value):
        value = sps.nct.sf(sps.t.ppf(1 - alpha / 2, n - 1), n - 1, dz * math.sqrt(n))
    return float(value)


@pytest.mark.parametrize("name", FAMILIES)
def test_seeds_needed_use_the_paired_test_at_alpha_and_the_holm_threshold(rep, name):
    fam = family(rep, name)
    for q in fam["pairs"]:
        if q["effect"] is None or q["effect"]["value"] is None:
            assert q["seeds_needed"] is None
            continue
        dz = abs(q["effect"]["value"])
        for key, alpha in (("alpha", fam["alpha"]), ("holm", fam["holm_threshold"])):
            n = q["seeds_needed"][key]
            if n is None:  # no feasible number of seeds: even 100,000 fall short
                assert paired_power(dz, 100_000, alpha) < 0.8
                continue
            assert n >= 3
            if n > 3:  # the fewest seeds with 80 % power (the report tests nothing below 3)
                assert paired_power(dz, n, alpha) >= 0.8 > paired_power(dz, n - 1, alpha)


def test_power_section_is_a_planning_figure_for_the_paired_test(rep, smoke):
    p = rep["power"]
    n = len(rep["protocol"]["seeds"])
    assert p["planning"] is True and p["test"] == "paired" and p["effect"] == "d_z"
    assert set(p["families"]) == {f["name"] for f in rep["families"]}  # every family's MDE
    f = p["families"][ENV]
    assert f["seeds"] == n and f["holm_threshold"] == pytest.approx(0.05 / family(rep, ENV)["m"])
    for key, alpha in (("alpha", 0.05), ("holm", f["holm_threshold"])):
        assert paired_power(f["mde"][key], n, alpha) == pytest.approx(0.8, abs=1e-6)
    md = (smoke / "benchmark_report.md").read_text()
    assert f"| {ENV} | confirmatory | {n} | {family(rep, ENV)['m']} |" in md


def test_aggregate_headline_is_the_tested_per_seed_mean(rep, cells):
    from rliable import metrics

    agg = rep["aggregates"][ENV]
    assert set(agg["agents"]) == set(rep["protocol"]["agents"])
    assert agg["headline"] == "mean" and agg["tasks"] == rep["protocol"]["tasks"]
    assert all(agg["seeds"][a] == rep["protocol"]["seeds"] for a in agg["agents"])
    for agent, a in agg["agents"].items():
        norm = normalised(cells, rep, agent)  # [task, seed]
        per_seed = norm.mean(axis=0)
        half = sps.t.ppf(0.975, per_seed.size - 1) * per_seed.std(ddof=1) / math.sqrt(per_seed.size)
        assert a["mean"]["value"] == pytest.approx(per_seed.mean(), rel=1e-9, abs=1e-12)
        assert (a["mean"]["lo"], a["mean"]["hi"]) == pytest.approx(
            (per_seed.mean() - half, per_seed.mean() + half), rel=1e-9, abs=1e-12
        )
        runs = norm.T  # [run, task] as rliable takes it
        assert a["iqm"]["value"] == pytest.approx(metrics.aggregate_iqm(runs), rel=1e-9, abs=1e-12)
        assert a["median"]["value"] == pytest.approx(
            metrics.aggregate_median(runs), rel=1e-9, abs=1e-12
        )
        assert a["optimality_gap"]["value"] == pytest.approx(
            metrics.aggregate_optimality_gap(runs), rel=1e-9, abs=1e-12
        )
        for name in ("iqm", "median", "optimality_gap"):
            s = a[name]
            assert s["lo"] <= s["value"] <= s["hi"] or s["lo"] <= s["hi"]
            assert s["zero_width"] == (s["lo"] == s["hi"])
    # the aggregate family tests exactly the headline's unit
    for q in family(rep, ENV)["pairs"]:
        assert q["mean_diff"] == pytest.approx(
            agg["agents"][q["a"]]["mean"]["value"] - agg["agents"][q["b"]]["mean"]["value"],
            abs=1e-12,
        )


def test_aggregate_states_the_iqm_caveat_with_three_tasks(rep):
    agg = rep["aggregates"][ENV]
    assert any("with 3 tasks the IQM" in c for c in agg["caveats"])
    assert any("measured 0.777 for 3 tasks x 3 seeds" in c for c in agg["caveats"])
    n = len(rep["protocol"]["seeds"])
    for agent, per_task in agg["iqm_trimmed"].items():
        assert sum(per_task.values()) == 2 * (3 * n // 4), agent


def test_friedman_and_its_wilcoxon_holm_post_hoc_match_scipy(rep, cells):
    r = rep["rankings"][ENV]
    agents, tasks, seeds = r["agents"], r["tasks"], r["seeds"]
    assert agents == rep["protocol"]["agents"] and seeds == rep["protocol"]["seeds"]
    columns = [np.array([cells.loc[(t, a, s)] for t in tasks for s in seeds]) for a in agents]
    expected = sps.friedmanchisquare(*columns)
    assert r["blocks"] == len(tasks) * len(seeds)
    assert r["friedman_statistic"] == pytest.approx(expected.statistic, rel=1e-9)
    assert r["friedman_p"] == pytest.approx(expected.pvalue, rel=1e-9)
    post = r["posthoc"]["pairs"]
    assert [(q["a"], q["b"]) for q in post] == list(itertools.combinations(agents, 2))
    raw = []
    for q in post:
        x, y = columns[agents.index(q["a"])], columns[agents.index(q["b"])]
        pv = 1.0 if np.all(x == y) else sps.wilcoxon(x, y).pvalue
        assert q["p"] == pytest.approx(pv, rel=1e-9)
        raw.append(pv)
    for q, adj in zip(post, holm(raw), strict=True):
        assert q["p_holm"] == pytest.approx(adj, rel=1e-9)
        assert q["significant"] == (adj <= 0.05)


@pytest.mark.parametrize("source", ["smoke", "canonical"])
def test_verdict_lists_the_significant_confirmatory_pairs(source, rep):
    """Every confirmatory family's verdict sentence counts and lists its significant
    pairs, on the smoke run (three seeds: whether any pair survives Holm over 15 depends
    on the learners' smoke numbers) and on the committed canonical run (where most do)."""
    from clinbench.report.verdict import LIST_AT_MOST

    report = rep if source == "smoke" else json.loads(CANONICAL_REPORT.read_text())
    text = " ".join(report["verdict"])
    listed = 0
    for fam in (f for f in report["families"] if f["role"] == "confirmatory"):
        significant = [q for q in fam["pairs"] if q["significant"]]
        confirmatory = next(s for s in report["verdict"] if s.startswith(f"{fam['name']} ("))
        if significant:
            count = f"{len(significant)} of {fam['m']} confirmatory differences are significant"
        else:
            count = f"none of the {fam['m']} confirmatory differences is significant"
        assert count in confirmatory
        for q in significant[:LIST_AT_MOST]:
            better, worse = (q["a"], q["b"]) if q["mean_diff"] > 0 else (q["b"], q["a"])
            assert f"{better} > {worse}" in confirmatory
        listed += len(significant[:LIST_AT_MOST])
        if len(significant) < fam["m"]:
            assert f"Planning figure for {fam['name']}, not evidence" in text
    if source == "canonical":
        assert listed > 0


# --------------------------------------------------------------------------- files
def leaves(value, path=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaves(v, f"{path}[{i}]")
    else:
        yield path, value


def test_json_keeps_numbers_as_numbers(smoke, rep):
    def no_constants(name):
        raise AssertionError(f"{name} in the JSON")

    json.loads((smoke / "benchmark_report.json").read_text(), parse_constant=no_constants)
    for section in STAT_SECTIONS:
        for path, value in leaves(rep[section], section):
            if isinstance(value, str):
                with pytest.raises(ValueError):
                    float(value)  # a number written as text
                assert "[" not in value, f"{path} holds an interval as text: {value!r}"
    for rows in rep["per_task"].values():
        for s in rows.values():
            assert all(isinstance(s[k], float) for k in ("mean", "sd", "lo", "hi"))
            assert isinstance(s["n"], int)
    for stats in rep["aggregates"][ENV]["agents"].values():
        assert set(stats) == {"mean", "iqm", "median", "optimality_gap"}
        for s in stats.values():
            assert all(isinstance(s[k], float) for k in ("value", "lo", "hi"))
    for fam in rep["families"]:
        assert isinstance(fam["m"], int) and isinstance(fam["alpha"], float)
        for q in fam["pairs"]:
            assert q["p"] is None or isinstance(q["p"], float)
            assert isinstance(q["p_holm"], float)
            for test in ("paired", "welch"):
                assert q[test]["p"] is None or isinstance(q[test]["p"], float)
            assert isinstance(q["significant"], bool)
            if q["status"] == "tested":
                assert isinstance(q["diff_lo"], float) and isinstance(q["diff_hi"], float)


def test_markdown_opens_with_the_verdict_then_has_every_section(smoke, rep):
    md = (smoke / "benchmark_report.md").read_text()
    lines = md.splitlines()
    first = next(line for line in lines if line.strip() and not line.startswith("#"))
    assert rep["verdict"] and first == rep["verdict"][0]
    head = md[: md.index("## Protocol")]
    assert all(sentence in head for sentence in rep["verdict"])
    positions = [md.index(s) for s in MD_SECTIONS]
    assert positions == sorted(positions)
    for fam in rep["families"]:
        assert f"### {fam['name']} ({fam['role']}; m = {fam['m']}, alpha = {fam['alpha']})" in md
    assert "## Power (planning figures, not evidence)" in md
    assert "[1.00, 1.00]" not in md and "[0.00, 0.00]" not in md  # zero-width bootstrap intervals
    assert "Generated" not in md and rep["generated"] is None


def test_reproducible_reports_are_byte_identical(copy, smoke):
    report(copy, "--reproducible")
    first = files(copy)
    report(copy, "--reproducible")
    assert files(copy) == first == files(smoke)


def test_without_reproducible_the_generation_time_is_recorded(copy):
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    rep = report(copy)
    generated = dt.datetime.fromisoformat(rep["generated"])
    assert before <= generated <= dt.datetime.now(dt.UTC)
    assert f"Generated {rep['generated']}" in (copy / "benchmark_report.md").read_text()


def intervals(rep: dict) -> dict[tuple[str, str], tuple[float, float]]:
    """The bootstrap intervals of the aggregate (the headline's t interval has no bootstrap)."""
    return {
        (a, k): (s["lo"], s["hi"])
        for a, stats in rep["aggregates"][ENV]["agents"].items()
        for k, s in stats.items()
        if k != "mean"
    }


def test_bootstrap_seed_drives_the_aggregate_intervals(copy):
    # With two seeds a task has only four distinct resamples, so the 2.5 % and 97.5 %
    # quantiles of many replicates are the same extremes whatever the seed; with few
    # replicates they are order statistics that depend on the draws.
    def run(seed: int) -> dict:
        return report(copy, "--reproducible", "--bootstrap-reps", 40, "--bootstrap-seed", seed)

    one, again, other = run(1), run(1), run(2)
    assert one["protocol"]["bootstrap_seed"] == 1 and other["protocol"]["bootstrap_seed"] == 2
    assert intervals(one) == intervals(again)
    assert intervals(one) != intervals(other)
    for a, stats in one["aggregates"][ENV]["agents"].items():  # nor the estimates, t intervals
        assert stats["mean"] == other["aggregates"][ENV]["agents"][a]["mean"]
        assert {k: s["value"] for k, s in stats.items()} == {
            k: s["value"] for k, s in other["aggregates"][ENV]["agents"][a].items()
        }


def test_an_agents_intervals_do_not_depend_on_the_other_agents(copy, rep):
    subset = ["heuristic", "random", "klong"]
    sweep(copy, f"agents=[{','.join(subset)}]")  # every cell is reused from the copy
    small = report(copy, "--reproducible")
    assert small["protocol"]["agents"] == subset
    for a in subset:
        assert small["aggregates"][ENV]["agents"][a] == rep["aggregates"][ENV]["agents"][a]
        for task in rep["protocol"]["tasks"]:
            assert small["per_task"][task][a] == rep["per_task"][task][a]
    full = {(q["a"], q["b"]): q for q in family(rep, "easy_bench")["pairs"]}
    for q in family(small, "easy_bench")["pairs"]:
        same = full[q["a"], q["b"]]
        assert (q["prob_improvement"], q["p"], q["effect"]) == (
            same["prob_improvement"],
            same["p"],
            same["effect"],
        )
    assert family(small, ENV)["m"] == 3


# --------------------------------------------------------------------------- incomplete grids
def cell_entry(folder: Path, index: int) -> dict:
    return json.loads((folder / "manifest.json").read_text())["cells"][index]


@pytest.mark.slow
def test_a_missing_cell_is_reported_and_the_rest_analysed(copy):
    cell = cell_entry(copy, -1)
    (copy / "runs" / f"{cell['hash']}.json").unlink()
    result = invoke("report", "--results", copy, "--reproducible")  # with the charts
    assert result.exit_code == 0, result.output
    rep = json.loads((copy / "benchmark_report.json").read_text())
    where = {k: cell[k] for k in ("task", "agent", "seed")}
    assert rep["missing"] == [{**where, "reason": "no cell file"}]
    assert any("missing" in w for w in rep["warnings"])
    assert "warning:" in result.stderr
    assert rep["per_task"][cell["task"]][cell["agent"]]["n"] == len(rep["protocol"]["seeds"]) - 1
    # the aggregate says exactly what it dropped: the agent's row and its own pairs lose the
    # seed (two left: no interval, no tests), every other pair keeps every seed
    agg = rep["aggregates"][ENV]
    lost = [{"seed": cell["seed"], "missing": [{"task": cell["task"], "agent": cell["agent"]}]}]
    assert agg["dropped_seeds"] == {cell["agent"]: lost}
    assert agg["agents"][cell["agent"]]["mean"]["n"] == len(rep["protocol"]["seeds"]) - 1
    for q in family(rep, ENV)["pairs"]:
        involved = cell["agent"] in (q["a"], q["b"])
        assert q["status"] == ("too few seeds" if involved else "tested")
    # per-task pairs with that agent use the seeds they share; the others keep every seed
    for q in family(rep, cell["task"])["pairs"]:
        involved = cell["agent"] in (q["a"], q["b"])
        assert q["n"] == len(rep["protocol"]["seeds"]) - involved
        assert (cell["seed"] in q["seeds"]) != involved
    md = (copy / "benchmark_report.md").read_text()
    assert f"- {cell['agent']}: seed {cell['seed']} (missing {cell['task']})" in md
    missing = md[md.index("## Missing or failed cells") : md.index("## Warnings")]
    assert f"| {cell['task']} | {cell['agent']} | {cell['seed']} | no cell file |" in missing
    assert "missing" in md[md.index("## Warnings") :]
    assert (copy / "charts" / "agent_comparison.svg").exists()


def test_a_corrupt_cell_is_reported_as_missing(copy):
    cell = cell_entry(copy, 0)
    path = copy / "runs" / f"{cell['hash']}.json"
    path.write_bytes(path.read_bytes()[:50])  # truncated, as by a crash mid-write
    rep = report(copy, "--reproducible")
    where = ("task", "agent", "seed")
    assert [[m[k] for k in where] for m in rep["missing"]] == [[cell[k] for k in where]]
    assert rep["missing"][0]["reason"].startswith("corrupt")
    assert "## Missing or failed cells" in (copy / "benchmark_report.md").read_text()


def damage(kind: str, folder: Path) -> Path:
    """A results folder the report cannot use at all."""
    if kind == "no folder":
        return folder / "nowhere"
    if kind == "empty folder":
        empty = folder / "empty"
        empty.mkdir()
        return empty
    manifest = folder / "manifest.json"
    if kind == "no manifest":
        manifest.unlink()
    elif kind == "manifest not JSON":
        manifest.write_text('{"grid": {"tasks": [')
    elif kind == "manifest without cells":
        manifest.write_text("{}")
    elif kind == "no cell files":
        shutil.rmtree(folder / "runs")
    return folder


@pytest.mark.parametrize(
    ("kind", "says"),
    [
        ("no folder", "no results folder"),
        ("empty folder", "manifest.json"),
        ("no manifest", "manifest.json"),
        ("manifest not JSON", "unreadable"),
        ("manifest without cells", "unreadable"),
        ("no cell files", "no finished cells"),
    ],
)
def test_unusable_results_exit_2_with_a_message(copy, kind, says):
    result = invoke("report", "--results", damage(kind, copy), "--no-charts")
    assert result.exit_code == 2, result.output
    assert "error:" in result.stderr and says in result.stderr
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output


# --------------------------------------------------------------------------- options
def test_alpha_sets_every_family(copy, rep):
    strict = report(copy, "--reproducible", "--alpha", 0.01)
    assert strict["protocol"]["alpha"] == 0.01
    for fam, before in zip(strict["families"], rep["families"], strict=True):
        assert fam["alpha"] == 0.01
        for q, b in zip(fam["pairs"], before["pairs"], strict=True):
            assert q["p_holm"] == b["p_holm"]  # alpha decides, it does not adjust
            assert q["significant"] == (q["p_holm"] is not None and q["p_holm"] <= 0.01)
    assert "alpha = 0.01" in (copy / "benchmark_report.md").read_text()


@pytest.mark.parametrize("alpha", ["2", "0", "1", "-0.5", "x"])
def test_alpha_outside_0_1_exits_2(copy, alpha):
    result = invoke("report", "--results", copy, "--no-charts", "--alpha", alpha)
    assert result.exit_code == 2, result.output
    assert "alpha" in result.output
    assert "Traceback" not in result.output


def test_report_check_detects_a_stale_report(copy):
    assert invoke("report", "--results", copy, "--check").exit_code == 0
    md = copy / "benchmark_report.md"
    md.write_text(md.read_text().replace("## Power", "## Power (edited)"))
    result = invoke("report", "--results", copy, "--check")
    assert result.exit_code == 1
    assert "benchmark_report.md" in result.stderr and "benchmark_report.json" not in result.stderr


# --------------------------------------------------------------------------- sweep
@pytest.mark.slow
@pytest.mark.parametrize("no_report", [False, True])
def test_sweep_writes_the_report_unless_told_not_to(copy, no_report):
    for name in ("benchmark_report.json", "benchmark_report.md"):
        (copy / name).unlink()
    shutil.rmtree(copy / "charts", ignore_errors=True)
    args = [
        "sweep",
        "preset=smoke",
        "env=recruitment",
        "--results",
        copy,
        "--backend",
        "sequential",
    ]
    args.append("--quiet")
    result = invoke(*args, *(["--no-report"] if no_report else []))
    assert result.exit_code == 0, result.output
    assert "54 cells: 0 run, 54 resumed" in result.output  # the copy's cells were reused
    written = [(copy / n).exists() for n in ("benchmark_report.json", "benchmark_report.md")]
    assert written == [not no_report] * 2
    assert (copy / "charts").exists() == (not no_report)
    if not no_report:
        rep = json.loads((copy / "benchmark_report.json").read_text())
        assert rep["protocol"]["agents"] and rep["generated"] is not None
