"""What the charts draw from: the report JSON and the tidy CSVs of a results folder."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from clinbench.charts.style import agent_colors, agent_markers
from clinbench.env.family import Family
from clinbench.env.registry import family
from clinbench.references import normalise


class ChartDataError(ValueError):
    """The results folder lacks what the charts need (exit code 2)."""


@dataclass
class ChartData:
    report: dict[str, Any]
    results: pd.DataFrame
    curves: pd.DataFrame
    trajectories: pd.DataFrame

    @property
    def agents(self) -> list[str]:
        return list(self.report["protocol"]["agents"])

    @property
    def tasks(self) -> list[str]:
        return list(self.report["protocol"]["tasks"])

    @property
    def seeds(self) -> list[int]:
        return list(self.report["protocol"]["seeds"])

    def task_env(self, task: str) -> str:
        """The environment family of ``task``."""
        protocol = self.report["protocol"]
        return (protocol.get("task_envs") or {}).get(task) or protocol["env"]

    @property
    def families(self) -> list[Family]:
        """The hooks of the results' environment families (labels, domain charts)."""
        return [family(e) for e in dict.fromkeys(self.task_env(t) for t in self.tasks)]

    def tasks_of(self, env: str) -> list[str]:
        """The tasks of family ``env``, in report order."""
        return [t for t in self.tasks if self.task_env(t) == env]

    @property
    def colors(self) -> dict[str, str]:
        return agent_colors(self.agents)

    @property
    def markers(self) -> dict[str, str]:
        return agent_markers(self.agents)

    def cell_scores(self) -> pd.DataFrame:
        """One row per (task, agent, seed): the mean over evaluation episodes."""
        return self.results.groupby(
            ["task", "agent", "seed"], as_index=False, sort=False
        ).score.mean()

    def normalised_scores(self) -> pd.DataFrame:
        """Cell scores with a ``normalised`` column (fixed per-task references)."""
        refs = self.report["protocol"]["references"]
        cells = self.cell_scores()
        cells = cells[cells.task.isin(refs)].copy()
        lo = cells.task.map(lambda t: refs[t]["random"])
        hi = cells.task.map(lambda t: refs[t]["reference_planner"])
        cells["normalised"] = normalise(cells.score, lo, hi)
        return cells


def _without(frame: pd.DataFrame, cells: list[dict[str, Any]]) -> pd.DataFrame:
    """``frame`` without the rows of cells the report left out (failed, corrupt, bad values)."""
    if not cells:
        return frame
    left_out = {(c["task"], c["agent"], int(c["seed"])) for c in cells}
    keep = [
        (t, a, int(s)) not in left_out
        for t, a, s in zip(frame.task, frame.agent, frame.seed, strict=True)
    ]
    return frame[keep].reset_index(drop=True)


def load_chart_data(folder: Path) -> ChartData:
    folder = Path(folder)
    if not folder.is_dir():  # name the folder, not every file it would have held
        what = "is a file, not a results folder" if folder.exists() else "does not exist"
        raise ChartDataError(
            f"{folder} {what} (relative to {Path.cwd()}); give a sweep's folder with --results"
        )
    needed = [
        "benchmark_report.json",
        "sweep_results.csv",
        "training_curves.csv",
        "progress_by_time.csv",
    ]
    missing = [n for n in needed if not (folder / n).exists()]
    if missing:
        raise ChartDataError(
            f"{folder} lacks {', '.join(missing)}: run `clinbench sweep` and `clinbench report "
            f"--results {folder}` first"
        )
    try:
        report = json.loads((folder / "benchmark_report.json").read_text())
    except json.JSONDecodeError as exc:
        raise ChartDataError(
            f"{folder / 'benchmark_report.json'} is not valid JSON: {exc}"
        ) from None
    results = _without(_read_csv(folder / "sweep_results.csv"), report.get("missing", []))
    _check_finite(results, ("score",), folder / "sweep_results.csv")
    curves = _read_csv(folder / "training_curves.csv")
    _check_finite(curves, ("mean_score",), folder / "training_curves.csv")
    return ChartData(
        report=report,
        results=results,
        curves=curves,
        trajectories=_read_csv(folder / "progress_by_time.csv"),
    )


def _read_csv(path: Path) -> pd.DataFrame:
    """A tidy CSV, or ChartDataError naming it (charts of a damaged file would be wrong)."""
    try:
        return pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ChartDataError(f"{path} is not a readable CSV file: {exc}") from None


def _check_finite(frame: pd.DataFrame, columns: tuple[str, ...], path: Path) -> None:
    """Every value the charts plot from ``columns`` is a finite number, as ``report`` checks
    the cell files: a NaN would silently drop points or shift a mean."""
    for column in columns:
        if column not in frame.columns:
            raise ChartDataError(f"{path} has no {column!r} column")
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = values.isna() | values.abs().eq(float("inf"))
        if bad.any():
            row = frame[bad].iloc[0]
            where = ", ".join(
                f"{k} {row[k]}" for k in ("agent", "task", "seed") if k in frame.columns
            )
            raise ChartDataError(
                f"{path}: {int(bad.sum())} {column} value(s) are not finite numbers (first: "
                f"{where}); re-running the sweep's command rebuilds the CSVs from the cell files "
                "(it resumes)"
            )
