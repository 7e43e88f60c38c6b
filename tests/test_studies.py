"""A family's study in a sweep (``clinbench.studies``): run for the sweep's seeds, resumed
when unchanged, shown in the report and charts, the same for any number of jobs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clinbench import studies
from clinbench.agents.portfolio.study import STUDY, PredictionStudy
from clinbench.cli.app import app
from clinbench.config import ConfigError, load
from clinbench.sweep import run_sweep

runner = CliRunner(env={"COLUMNS": "200"})


def _cfg(folder: Path, *extra: str):
    return load(["preset=smoke", "env=portfolio", "tasks=[develop]", "agents=[heuristic]",
                 "launcher=sequential", f"results={folder}", *extra])


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("study") / "results"
    outcome = run_sweep(_cfg(folder), show_progress=False)
    assert outcome.ok
    result = runner.invoke(app, ["report", "--results", str(folder), "--reproducible"])
    assert result.exit_code == 0, result.output
    return folder


def test_the_sweep_runs_the_familys_study_for_its_seeds(swept):
    record = json.loads(studies.path(swept, STUDY.name).read_text())
    assert record["seeds"] == [1, 2, 3] and record["size"] == "quick"
    assert record["code"] == studies.code_id(STUDY)
    results = record["results"]
    assert results["seeds"] == [1, 2, 3]
    assert results["programs_per_seed"] == PredictionStudy.of_size("quick").programs
    assert {r["split"] for r in results["f1"]} == {"drug", "sponsor", "class", "temporal"}
    for r in results["f1"]:
        for view in ("indication", "strict"):
            assert r[view]["low"] <= r[view]["f1"] <= r[view]["high"]
    assert all(t["p_holm"] >= t["p"] for t in results["tests"])


def test_the_report_shows_the_study_with_intervals_tests_and_online_value(swept):
    report = json.loads((swept / "benchmark_report.json").read_text())
    kept = json.loads(studies.path(swept, STUDY.name).read_text())
    assert report["studies"][STUDY.name]["results"] == kept["results"]
    text = (swept / "benchmark_report.md").read_text()
    section = text[text.index(f"## {STUDY.title}"):text.index("## Power")]
    assert "| split | predictor | programs | episodes | indication F1 | strict F1 |" in section
    assert "### Paired tests (F1)" in section and "### Online value of the predictors" in section
    temporal_bc = next(r for r in kept["results"]["f1"]
                       if r["split"] == "temporal" and r["predictor"] == "bc")
    f1 = temporal_bc["indication"]
    assert (f"| temporal | bc | {temporal_bc['programs']} | {temporal_bc['episodes']} | "
            f"{100 * f1['f1']:.1f} [{100 * f1['low']:.1f}, {100 * f1['high']:.1f}]") in section
    charts = json.loads((swept / "charts" / "charts.json").read_text())["charts"]
    assert set(STUDY.charts) <= set(charts)
    assert (swept / "charts" / "portfolio_f1_by_split.svg").exists()
    check = runner.invoke(app, ["charts", "--results", str(swept), "--check"])
    assert check.exit_code == 0, check.output


def test_an_unchanged_study_is_resumed_and_a_changed_one_rerun(swept, tmp_path, monkeypatch):
    import shutil

    folder = tmp_path / "results"
    shutil.copytree(swept, folder)
    target = studies.path(folder, STUDY.name)
    before = target.read_bytes()
    calls = []
    monkeypatch.setattr(PredictionStudy, "run", lambda *a, **k: calls.append(a) or {})
    said = []
    studies.run_studies(folder, ["portfolio"], [1, 2, 3], 1, "quick", say=said.append)
    assert calls == [] and target.read_bytes() == before and "resumed" in said[0]
    studies.run_studies(folder, ["portfolio"], [1, 2], 1, "quick", say=said.append)
    assert len(calls) == 1 and json.loads(target.read_text())["seeds"] == [1, 2]
    monkeypatch.setattr(studies, "code_id", lambda study: "other")
    studies.run_studies(folder, ["portfolio"], [1, 2], 1, "quick", say=said.append)
    assert len(calls) == 2
    studies.run_studies(folder, ["portfolio"], [1, 2], 1, "quick", resume=False,
                        say=said.append)
    assert len(calls) == 3


def test_the_study_is_the_same_for_any_number_of_jobs():
    small = PredictionStudy(programs=6, online_worlds=2)
    assert small.run([4, 9], jobs=1) == small.run([4, 9], jobs=2)


def test_studies_off_or_other_families_run_none(tmp_path):
    assert studies.run_studies(tmp_path, ["recruitment", "trial_design"], [1], 1) == ([], [])
    assert studies.run_studies(tmp_path, ["portfolio"], [1], 1, "off") == ([], [])
    assert not (tmp_path / studies.FOLDER).exists()
    with pytest.raises(ValueError, match="valid: full, quick, off"):
        studies.run_studies(tmp_path, ["portfolio"], [1], 1, "huge")


def test_a_bad_studies_value_is_a_config_error_listing_the_choices(tmp_path):
    with pytest.raises(ConfigError, match="valid: full, quick, off"):
        _cfg(tmp_path, "studies=huge")
    result = runner.invoke(app, ["sweep", "preset=smoke", "studies=huge", "--quiet"])
    assert result.exit_code == 2 and "full, quick, off" in result.output


def _broken(*args, **kwargs):
    raise RuntimeError("the study broke")


def test_a_failing_study_is_kept_with_its_traceback_and_run_again(tmp_path, monkeypatch):
    monkeypatch.setattr(PredictionStudy, "run", _broken)
    said = []
    runs = studies.run_studies(tmp_path, ["portfolio"], [1], 1, "quick", say=said.append)
    target = studies.path(tmp_path, STUDY.name)
    assert runs == ([], [target]) and "the study broke" in said[-1]
    kept = json.loads(target.read_text())
    assert kept["status"] == "failed" and "RuntimeError: the study broke" in kept["traceback"]
    shown, problems = studies.load_studies(tmp_path, ["portfolio"])
    assert "results" not in kept and shown == {} and "the study broke" in problems[0]
    monkeypatch.setattr(PredictionStudy, "run", lambda *a, **k: {"ran": True})
    runs = studies.run_studies(tmp_path, ["portfolio"], [1], 1, "quick", say=said.append)
    assert runs == ([target], []) and "running" in said[-2]
    shown, problems = studies.load_studies(tmp_path, ["portfolio"])
    assert problems == [] and shown[STUDY.name]["results"] == {"ran": True}


def test_a_sweep_whose_study_fails_keeps_its_cells_reports_them_and_exits_1(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(PredictionStudy, "run", _broken)
    folder = tmp_path / "results"
    result = runner.invoke(app, ["sweep", "preset=smoke", "env=portfolio", "tasks=[develop]",
                                 "--agents", "heuristic", "--backend", "sequential",
                                 "--results", str(folder), "--quiet"])
    assert result.exit_code == 1, result.output
    assert f"failed study {STUDY.name}" in result.output
    assert len(list((folder / "runs").glob("*.json"))) == 3
    text = (folder / "benchmark_report.md").read_text()
    assert "heuristic" in text and STUDY.title not in text


def test_studies_off_in_a_preset_file_means_off(tmp_path):
    """YAML 1.1 reads an unquoted ``off`` in a preset file as false (as the override
    ``studies=false`` gives it); either means off."""
    from omegaconf import OmegaConf

    assert OmegaConf.create("studies: off\n")["studies"] is False
    assert _cfg(tmp_path, "studies=false").studies == "off"
    with pytest.raises(ConfigError, match="valid: full, quick, off"):
        _cfg(tmp_path, "studies=true")


def test_the_report_leaves_out_a_study_of_other_seeds_older_code_or_a_bad_file(
    swept, tmp_path
):
    import shutil

    folder = tmp_path / "results"
    shutil.copytree(swept, folder)
    target = studies.path(folder, STUDY.name)
    good = json.loads(target.read_text())

    def report_with(record_text: str) -> tuple[str, list[str]]:
        target.write_text(record_text)
        result = runner.invoke(
            app, ["report", "--results", str(folder), "--reproducible", "--no-charts"]
        )
        assert result.exit_code == 0, result.output
        report = json.loads((folder / "benchmark_report.json").read_text())
        return (folder / "benchmark_report.md").read_text(), report["warnings"]

    text, notes = report_with(json.dumps(good))
    assert STUDY.title in text and not any("study" in n for n in notes)
    for record, said in [
        ({**good, "seeds": [1, 2]}, "was run for seeds [1, 2]"),
        ({**good, "code": "0.1.0+older"}, "was run by other code"),
        ({k: v for k, v in good.items() if k != "results"} | {"traceback": "E: boom"},
         "failed: E: boom"),
    ]:
        text, notes = report_with(json.dumps(record))
        assert STUDY.title not in text and any(said in n for n in notes), notes
        assert said in text  # the warning is in the Markdown too
    for bad in ('{"study": "portfolio_pre', "[]", '{"results": []}'):
        text, notes = report_with(bad)
        assert STUDY.title not in text and any("unreadable" in n for n in notes), notes
    # and a sweep resumes none of them: it runs the study again
    assert studies.read_record(target) is None
