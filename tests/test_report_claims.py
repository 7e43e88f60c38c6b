"""A report that claims only what its tests support (docs/statistics.md).

Hand-made results folders over both environment families, each exactly the case named:
one agent, all agents tied, two constants a rounding error apart, two constant agents,
a family x pair interaction, an incomplete grid, a NaN score, an exploratory result
against a confirmatory one, declared families. Then the claim checker on planted
sentences, the references with their standard errors, and the small defects: the
median of seeds needed, zero-width intervals of operating characteristics, cell files
outside the manifest.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats as sps
from shared_helpers import synthetic_manifest
from typer.testing import CliRunner

from clinbench.cli.app import app
from clinbench.env.registry import family as env_family
from clinbench.report import claims
from clinbench.report.pairs import median_seeds_needed
from clinbench.report.render import _characteristic
from clinbench.sweep.store import FORMAT

runner = CliRunner(env={"COLUMNS": "200"})
SEEDS = [1, 7, 21, 42, 123]
RECRUITMENT = ["easy_bench", "medium_bench", "hard_bench"]
TRIAL = ["effective_drug", "efficacy_safety", "rare_disease"]
ENV_OF = {**{t: "recruitment" for t in RECRUITMENT}, **{t: "trial_design" for t in TRIAL}}


def write_results(
    folder: Path,
    per_agent: dict[str, dict[str, list[float]]],
    seeds: list[int] = SEEDS,
    report_config: dict | None = None,
    drop: tuple[tuple[str, str, int], ...] = (),
) -> Path:
    """A results folder: ``per_agent[agent][task]`` = one score per seed (two equal
    evaluation episodes per cell); cells in ``drop`` are listed in the manifest without a
    file, as a killed sweep leaves them; ``report_config`` is the saved ``report:``."""
    tasks = [t for t in [*RECRUITMENT, *TRIAL] if any(t in v for v in per_agent.values())]
    runs = folder / "runs"
    runs.mkdir(parents=True)
    cells = []
    for task in tasks:
        env = ENV_OF[task]
        for agent, by_task in per_agent.items():
            if task not in by_task:
                continue  # the agent does not play this task's family
            for seed, value in zip(seeds, by_task[task], strict=True):
                h = hashlib.sha256(f"{task}/{agent}/{seed}".encode()).hexdigest()[:20]
                cells.append(
                    {
                        "task": task,
                        "agent": agent,
                        "seed": seed,
                        "env": env,
                        "hash": h,
                        "status": "ok",
                        "seconds": 0.1,
                    }
                )
                if (task, agent, seed) in drop:
                    continue
                record = {
                    "format": FORMAT,
                    "hash": h,
                    "key": {"env": env, "task": task, "agent": agent, "seed": seed},
                    "config": {"task_version": env_family(env).task_version},
                    "status": "ok",
                    "curve": [],
                    "episodes": [
                        {"score": value, "eval_seed": 0},
                        {"score": value, "eval_seed": 1},
                    ],
                }
                (runs / f"{h}.json").write_text(json.dumps(record))
    envs = list(dict.fromkeys(ENV_OF[t] for t in tasks))
    manifest = synthetic_manifest(
        {
            "env": envs[0] if len(envs) == 1 else "all",
            "envs": envs,
            "tasks": tasks,
            "task_envs": {t: ENV_OF[t] for t in tasks},
            "agents": list(per_agent),
            "seeds": seeds,
        },
        cells,
    )
    (folder / "manifest.json").write_text(json.dumps(manifest))
    if report_config is not None:
        (folder / "config.yaml").write_text(yaml.safe_dump({"report": report_config}))
    return folder


def noisy(seed: int, base: float, sd: float = 0.02) -> list[float]:
    return [float(v) for v in np.round(base + np.random.default_rng(seed).normal(0, sd, 5), 6)]


def healthy(tasks: list[str] = RECRUITMENT) -> dict[str, dict[str, list[float]]]:
    return {
        "heuristic": {t: noisy(i, 0.7) for i, t in enumerate(tasks)},
        "random": {t: noisy(10 + i, 0.05) for i, t in enumerate(tasks)},
        "klong": {t: noisy(20 + i, 0.5) for i, t in enumerate(tasks)},
    }


def run(folder: Path, *args: object):
    return runner.invoke(
        app,
        [
            "report",
            "--results",
            str(folder),
            "--no-charts",
            "--reproducible",
            "--bootstrap-reps",
            "300",
            *map(str, args),
        ],
    )


def report(folder: Path, *args: object) -> dict:
    result = run(folder, *args)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return json.loads((folder / "benchmark_report.json").read_text())


def fam(rep: dict, name: str) -> dict:
    return next(f for f in rep["families"] if f["name"] == name)


def pair(rep: dict, name: str, a: str, b: str) -> dict:
    return next(q for q in fam(rep, name)["pairs"] if {q["a"], q["b"]} == {a, b})


def text(rep: dict) -> str:
    return " ".join(rep["verdict"])


# --------------------------------------------------------------------------- adversarial folders
def test_one_agent_has_nothing_to_compare_and_no_best(tmp_path):
    rep = report(write_results(tmp_path / "r", {"heuristic": healthy()["heuristic"]}))
    assert rep["verdict"][0].startswith("recruitment (easy_bench, medium_bench, hard_bench;")
    assert "one agent (heuristic, 0." in rep["verdict"][0]
    assert "nothing to compare" in rep["verdict"][0]
    assert "best" not in text(rep).lower() and fam(rep, "recruitment")["m"] == 0
    assert rep["aggregates"]["recruitment"]["ranks"] == {"heuristic": [1, 1]}
    md = (tmp_path / "r" / "benchmark_report.md").read_text()
    assert "| heuristic | 1 |" in md


def test_all_agents_tied_are_ranked_nowhere_and_shown_level(tmp_path):
    same = {t: noisy(i, 0.5, 0.05) for i, t in enumerate(RECRUITMENT)}
    rep = report(write_results(tmp_path / "r", {a: same for a in ("a", "b", "c")}))
    head = rep["verdict"][0]
    assert "none of the 3 confirmatory differences is significant" in head
    assert "the tests rank no agent above another" in head
    assert "best" not in text(rep).lower() and not any(
        s.startswith("Ranks") for s in rep["verdict"]
    )
    assert rep["aggregates"]["recruitment"]["ranks"] == {a: [1, 3] for a in "abc"}
    for q in fam(rep, "recruitment")["pairs"]:
        assert q["p"] == 1.0 and q["equivalence"]["identical"] and q["equivalent"]
    assert (
        "Shown level (TOST at ±0.05 normalised, Holm over m = 3): a and b, a and c, b and c."
        in (rep["verdict"])
    )
    assert rep["disagreements"] == []


def test_two_constants_a_rounding_error_apart_are_equal_everywhere(tmp_path):
    agents = healthy()
    agents["always_a"] = {t: [0.3] * 5 for t in RECRUITMENT}
    agents["always_b"] = {t: [0.3 + 1e-13] * 5 for t in RECRUITMENT}
    rep = report(write_results(tmp_path / "r", agents))
    for name in ["recruitment", *RECRUITMENT]:
        q = pair(rep, name, "always_a", "always_b")
        assert q["status"] == "tested" and q["p"] == 1.0 and not q["significant"]
        assert q["note"] == "identical scores on every seed: p = 1"
        assert q["prob_improvement"]["value"] == 0.5  # not 0.40: one tolerance for "equal"
        assert q["equivalence"]["identical"] and q["equivalent"]
    post = rep["rankings"]["recruitment"]["posthoc"]["pairs"]
    q = next(p for p in post if {p["a"], p["b"]} == {"always_a", "always_b"})
    assert q["p"] == 1.0 and not q["significant"]
    assert not [d for d in rep["disagreements"] if {d["a"], d["b"]} == {"always_a", "always_b"}]


def test_two_constant_agents_are_not_testable_in_the_posthoc_either(tmp_path):
    agents = healthy()
    agents["always_a"] = {t: [0.3] * 5 for t in RECRUITMENT}
    agents["always_b"] = {t: [0.5] * 5 for t in RECRUITMENT}
    rep = report(write_results(tmp_path / "r", agents))
    q = pair(rep, "recruitment", "always_a", "always_b")
    assert q["status"] == "no variance" and not q["significant"]
    assert not q["equivalence"]["testable"] and not q["equivalent"]
    post = rep["rankings"]["recruitment"]["posthoc"]["pairs"]
    p = next(p for p in post if {p["a"], p["b"]} == {"always_a", "always_b"})
    assert p["status"] == "no variance" and not p["significant"]  # not "significant" here
    assert not [d for d in rep["disagreements"] if {d["a"], d["b"]} == {"always_a", "always_b"}]
    assert "Not testable: " in text(rep) and "always_a vs always_b" in text(rep)


def interacting() -> dict[str, dict[str, list[float]]]:
    """a ahead of b on recruitment, behind on dose finding (normalised, by about 0.3)."""
    return {
        "a": {
            **{t: noisy(i, 0.7) for i, t in enumerate(RECRUITMENT)},
            **{t: noisy(5 + i, 0.25) for i, t in enumerate(TRIAL)},
        },
        "b": {
            **{t: noisy(10 + i, 0.45) for i, t in enumerate(RECRUITMENT)},
            **{t: noisy(15 + i, 0.45) for i, t in enumerate(TRIAL)},
        },
    }


def test_a_family_by_pair_interaction_makes_the_declared_cross_family_aggregate_exploratory(
    tmp_path,
):
    folder = write_results(tmp_path / "r", interacting(), report_config={"cross_family": True})
    rep = report(folder)
    # each family its own headline and confirmatory family, in opposite directions
    assert pair(rep, "recruitment", "a", "b")["significant"]
    assert pair(rep, "trial_design", "a", "b")["significant"]
    assert (
        pair(rep, "recruitment", "a", "b")["mean_diff"]
        > 0
        > pair(rep, "trial_design", "a", "b")["mean_diff"]
    )
    across = fam(rep, "across families")
    assert across["role"] == "exploratory" and rep["cross_family"]["role"] == "exploratory"
    q = across["pairs"][0]
    inter = q["interaction"]
    refs = rep["protocol"]["references"]

    def norm(agent, tasks):
        return np.mean(
            [
                [
                    (json_score(folder, t, agent, s) - refs[t]["random"])
                    / (refs[t]["reference_planner"] - refs[t]["random"])
                    for s in SEEDS
                ]
                for t in tasks
            ],
            axis=0,
        )

    d_rec = norm("a", RECRUITMENT) - norm("b", RECRUITMENT)
    d_trial = norm("a", TRIAL) - norm("b", TRIAL)
    assert inter["significant"] and inter["p"] == pytest.approx(
        sps.ttest_rel(d_rec, d_trial).pvalue, rel=1e-9
    )
    assert "the family x pair interaction is significant for 1 of 1 pairs" in text(rep)
    assert "exploratory" in text(rep)
    md = (folder / "benchmark_report.md").read_text()
    assert "## Across families (declared; exploratory)" in md and "(interacts)" in md


def json_score(folder: Path, task: str, agent: str, seed: int) -> float:
    h = hashlib.sha256(f"{task}/{agent}/{seed}".encode()).hexdigest()[:20]
    record = json.loads((folder / "runs" / f"{h}.json").read_text())
    return float(np.mean([e["score"] for e in record["episodes"]]))


def test_without_a_declaration_there_is_no_cross_family_aggregate(tmp_path):
    rep = report(write_results(tmp_path / "r", interacting()))
    assert rep["cross_family"] == {} and "across families" not in [
        f["name"] for f in rep["families"]
    ]
    assert list(rep["aggregates"]) == ["recruitment", "trial_design"]
    md = (tmp_path / "r" / "benchmark_report.md").read_text()
    assert md.index("### recruitment (easy_bench") < md.index("## Per-task scores")


def test_the_generic_report_names_no_family_of_its_own():
    """Families come from the results, never from the report's code."""
    import clinbench.report as package

    for path in Path(package.__file__).parent.glob("*.py"):
        source = path.read_text()
        assert '"recruitment"' not in source and '"trial_design"' not in source, path.name


def test_an_incomplete_grid_names_what_each_pair_dropped(tmp_path):
    folder = write_results(tmp_path / "r", healthy(), drop=(("hard_bench", "klong", 7),))
    result = run(folder)
    assert result.exit_code == 0 and "Traceback" not in result.output
    rep = json.loads((folder / "benchmark_report.json").read_text())
    q = pair(rep, "recruitment", "heuristic", "klong")
    assert q["n"] == 4 and q["dropped_seeds"] == [
        {"seed": 7, "missing": [{"task": "hard_bench", "agent": "klong"}]}
    ]
    assert pair(rep, "recruitment", "heuristic", "random")["n"] == 5
    assert "1 cells are missing or failed" in rep["verdict"][-1]


def test_a_nan_score_exits_2_naming_the_cell_without_a_traceback(tmp_path):
    agents = healthy()
    agents["klong"]["easy_bench"][2] = math.nan
    result = run(write_results(tmp_path / "r", agents))
    assert result.exit_code == 2 and "episodes[0].score is nan" in result.stderr
    assert "Traceback" not in result.output


def test_an_exploratory_reversal_is_listed_against_the_confirmatory_result(tmp_path):
    agents = {
        "a": {
            "easy_bench": noisy(1, 0.8),
            "medium_bench": noisy(2, 0.2),
            "hard_bench": noisy(3, 0.8),
        },
        "b": {
            "easy_bench": noisy(4, 0.1),
            "medium_bench": noisy(5, 0.5),
            "hard_bench": noisy(6, 0.1),
        },
    }
    rep = report(write_results(tmp_path / "r", agents))
    assert pair(rep, "recruitment", "a", "b")["significant"]
    assert pair(rep, "medium_bench", "a", "b")["significant"]
    rows = [d for d in rep["disagreements"] if d["exploratory"] == "medium_bench"]
    assert rows == [
        {
            "confirmatory": "recruitment",
            "exploratory": "medium_bench",
            "a": "a",
            "b": "b",
            "kind": "opposite",
            "confirmatory_result": "a > b",
            "exploratory_result": "b > a",
        }
    ]
    assert "1 exploratory result(s) disagree with a confirmatory one" in text(rep)


def test_declared_primary_comparisons_set_the_confirmatory_family(tmp_path):
    agents = {**healthy(), "mira": {t: noisy(30 + i, 0.4) for i, t in enumerate(RECRUITMENT)}}
    rep = report(
        write_results(tmp_path / "r", agents, report_config={"primary": ["* vs heuristic"]})
    )
    f = fam(rep, "recruitment")
    assert f["m"] == 3 and f["declared"] == ["* vs heuristic"]
    assert sorted(map(sorted, f["members"])) == [
        ["heuristic", "klong"],
        ["heuristic", "mira"],
        ["heuristic", "random"],
    ]
    assert fam(rep, "easy_bench")["m"] == 6  # per-task families: every pair with cells
    assert rep["protocol"]["declared"]["primary"] == ["* vs heuristic"]


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ({"primary": ["heuristic klong"]}, "is not of the form 'a vs b'"),
        ({"equivalence_margin": -1}, "equivalence_margin must be a positive number"),
        ({"cross_family": "yes"}, "cross_family must be true or false"),
    ],
)
def test_a_bad_declaration_exits_2(tmp_path, config, says):
    result = run(write_results(tmp_path / "r", healthy(), report_config=config))
    assert result.exit_code == 2 and says in result.stderr and "Traceback" not in result.output


def test_per_task_families_hold_only_pairs_with_cells_on_the_task(tmp_path):
    agents = {
        **{
            a: {**v, **{t: noisy(40 + i, 0.4) for i, t in enumerate(TRIAL)}}
            for a, v in healthy().items()
        },
        "fixed_design": {t: noisy(50 + i, 0.3) for i, t in enumerate(TRIAL)},
    }
    rep = report(write_results(tmp_path / "r", agents))
    assert fam(rep, "easy_bench")["m"] == 3 and fam(rep, "effective_drug")["m"] == 6
    assert fam(rep, "recruitment")["m"] == 3 and fam(rep, "trial_design")["m"] == 6


def test_equivalence_margin_is_in_each_tasks_own_units(tmp_path):
    rep = report(write_results(tmp_path / "r", healthy()))
    ref = rep["protocol"]["references"]["easy_bench"]
    width = ref["reference_planner"] - ref["random"]
    assert fam(rep, "easy_bench")["equivalence_margin"] == pytest.approx(0.05 * width)
    assert fam(rep, "recruitment")["equivalence_margin"] == 0.05
    q = pair(rep, "recruitment", "heuristic", "klong")
    assert q["equivalence"]["margin"] == 0.05


def test_effect_sizes_carry_the_small_sample_correction_in_the_markdown(tmp_path):
    rep = report(write_results(tmp_path / "r", healthy()))
    q = pair(rep, "recruitment", "heuristic", "klong")
    assert q["effect"]["name"] == "g_z"
    assert q["effect"]["value"] == pytest.approx(
        q["effect"]["uncorrected"] * q["effect"]["correction"]
    )
    md = (tmp_path / "r" / "benchmark_report.md").read_text()
    assert "g_z [95 % CI]" in md and "small-sample correction J(n - 1)" in md
    assert "0 = random" not in md and "random's mean score" in md


def test_cell_files_outside_the_manifest_are_ignored_with_a_warning(tmp_path):
    folder = write_results(tmp_path / "r", healthy())
    (folder / "runs" / "stale0000.json").write_text("{}")
    rep = report(folder)
    assert any(
        "not in the manifest and were ignored" in w and "stale0000.json" in w
        for w in rep["warnings"]
    )


# --------------------------------------------------------------------------- small defects
def test_median_seeds_needed_counts_unbounded_pairs_and_rounds_up():
    def p(v):
        return {"seeds_needed": {"alpha": v, "holm": v}}

    assert median_seeds_needed([p(14), p(15), p(None), p(3)]) == 15  # 14.5 -> 15, not 14
    assert median_seeds_needed([p(14), p(None)]) == math.inf
    assert median_seeds_needed([p(10), p(20), p(30)]) == 20
    assert median_seeds_needed([]) is None


def test_a_zero_width_operating_characteristic_is_marked():
    c = {"kind": "mean", "value": 142.0, "lo": 142.0, "hi": 142.0, "n": 1000}
    assert _characteristic(c) == "142.0 (no spread)"
    assert _characteristic({**c, "hi": 143.0}) == "142.0 [142.0, 143.0]"


# --------------------------------------------------------------------------- the claim checker
def fake_report() -> dict:
    """The parts of a report JSON the checker reads."""

    def q(a, b, diff, sig, eq=False, status="tested"):
        return {
            "a": a,
            "b": b,
            "mean_diff": diff,
            "significant": sig,
            "status": status,
            "p_holm": 0.01 if sig else 0.6,
            "note": None,
            "equivalent": eq,
            "equivalence": {"p_holm": 0.01 if eq else 0.9, "margin": 0.05, "testable": True},
        }

    return {
        "protocol": {"agents": ["heuristic", "random", "klong", "memexrl", "maskable_ppo"]},
        "families": [
            {
                "name": "recruitment",
                "role": "confirmatory",
                "pairs": [
                    q("heuristic", "random", 0.9, True),
                    q("heuristic", "klong", 0.07, True),
                    q("klong", "maskable_ppo", 0.01, False, eq=True),
                    q("heuristic", "memexrl", 0.2, False),
                ],
            },
            {
                "name": "effective_drug",
                "role": "exploratory",
                "pairs": [
                    q("memexrl", "heuristic", 0.03, True),
                ],
            },
        ],
        "aggregates": {"recruitment": {"ranks": {"heuristic": [1, 1], "klong": [2, 3]}}},
        "operating_characteristics": {
            "effective_drug": {
                "agents": {"heuristic": {"type_i_error": {"lo": 0.004, "hi": 0.021}}},
                "policies": {},
            }
        },
    }


@pytest.fixture
def checked(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "benchmark_report.json").write_text(json.dumps(fake_report()))

    def check(prose: str) -> tuple[int, str]:
        doc = tmp_path / "doc.md"
        doc.write_text(prose)
        out = []
        import contextlib
        import io

        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = claims.main([str(doc), "--report", str(folder), "--root", "/"])
        out.append(err.getvalue())
        return code, "".join(out)

    return check


SUPPORTED = """# Results

On recruitment the heuristic is significantly above random and klong.
<!-- claim: heuristic > random, klong in recruitment -->
klong ranks 2-3 on recruitment. <!-- claim: rank klong = 2-3 in recruitment -->
klong is level with maskable_ppo on recruitment (TOST).
<!-- claim: klong = maskable_ppo in recruitment -->
The heuristic and memexrl are not separated on recruitment.
<!-- claim: heuristic ~ memexrl in recruitment -->
In an exploratory per-task test memexrl scores above the heuristic on effective_drug.
<!-- claim: memexrl > heuristic in effective_drug -->
The heuristic's type-I error rate on effective_drug is below 2.5 %.
<!-- claim: rate type_i_error of heuristic on effective_drug < 0.025 -->
The table lists 0.769 for the heuristic on easy_bench, which is plain description.

| agent | better than everyone |
|---|---|
"""


def tag(claim: str) -> str:
    return f" <!-- claim: {claim} -->"


def test_the_checker_passes_supported_prose(checked):
    code, err = checked(SUPPORTED)
    assert code == 0, err


@pytest.mark.parametrize(
    ("planted", "says"),
    [
        ("memexrl scores above the heuristic on recruitment.", "without a claim tag"),
        ("memexrl scores above the heuristic." + tag("memexrl > heuristic in recruitment"), "not"),
        (
            "The heuristic is above memexrl. <!-- claim: heuristic > memexrl in recruitment -->",
            "not significant in recruitment",
        ),
        (
            "memexrl is level with the heuristic." + tag("heuristic ~ memexrl in recruitment"),
            "equivalence wording",
        ),
        (
            "klong is level with memexrl. <!-- claim: klong = memexrl in recruitment -->",
            "no pair klong vs memexrl",
        ),
        ("memexrl is fourth on recruitment.", "without a claim tag"),
        ("klong ranks second. <!-- claim: rank klong = 2 in recruitment -->", "not 2"),
        ("No learner reaches the heuristic on recruitment.", "without a claim tag"),
        (
            "Every design keeps its type-I error low, because the environment enforces the rule.",
            "causal wording",
        ),
        (
            "memexrl is above the heuristic on effective_drug."
            + tag("memexrl > heuristic in effective_drug"),
            "exploratory family",
        ),
        (
            "The heuristic is above klong."
            + tag("heuristic > klong in recruitment; heuristic > memexrl in recruitment"),
            "not significant",
        ),
        (
            "The heuristic is above random and memexrl." + tag("heuristic > random in recruitment"),
            "names memexrl",
        ),
    ],
)
def test_the_checker_fails_on_a_planted_unsupported_sentence(checked, planted, says):
    code, err = checked(SUPPORTED + "\n" + planted + "\n")
    assert code == 1 and says in err, err
    assert "doc.md:" in err


def test_the_checker_reads_sentences_and_their_tags():
    para = (
        "klong is below the heuristic, e.g. on easy_bench. <!-- claim: heuristic > klong in x -->"
        " Then 0.5 vs. 0.7 holds. Last one"
    )
    out = claims.sentences(para)
    assert [s for s, _ in out] == [
        "klong is below the heuristic, e.g. on easy_bench.",
        "Then 0.5 vs. 0.7 holds.",
        "Last one",
    ]
    assert out[0][1] == [" claim: heuristic > klong in x "] and out[1][1] == []
    assert claims.named_agents(
        "MaskablePPO and unmasked PPO and bc@task", ["ppo", "maskable_ppo", "bc@task", "bc"]
    ) == {"ppo", "maskable_ppo", "bc@task"}


def test_the_checker_runs_in_ci_after_the_report_checks():
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text()
    assert ci.index("clinbench report --check") < ci.index("python -m clinbench.report.claims")


# --------------------------------------------------------------------------- references
def test_reference_scores_store_their_standard_error_and_world_count(tmp_path):
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "experiments" / "compute_reference_scores.py"
    spec = importlib.util.spec_from_file_location("compute_reference_scores", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (
        module.main(["--family", "trial_design", "--seeds-count", "4", "--output", str(tmp_path)])
        == 0
    )
    loaded = importlib.util.spec_from_file_location("scores", tmp_path / "trial_design_scores.py")
    scores = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(scores)
    from clinbench.references import reference_scores, reference_seeds
    from clinbench.references.trial_design import PLANNER

    for task, ref in scores.REFERENCE_SCORES.items():
        assert ref["worlds"] == 4 and ref["random_se"] >= 0 and ref["reference_planner_se"] >= 0
        fresh = reference_scores(f"trial_design/{task}", PLANNER, reference_seeds(4))
        assert ref["random"] == fresh["random"]["mean"]
        assert ref["reference_planner_se"] == fresh["reference_planner"]["se"]
