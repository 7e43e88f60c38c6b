"""Sweep configuration: composed from ``conf/`` with Hydra, validated into typed objects.

Hydra's Compose API builds the config (typer owns the command line, so Hydra's own
app runner and multirun are not used); the seed x agent x task grid is expanded in
clinbench itself. Everything is checked here, before any work starts, and every
problem is a ``ConfigError`` whose message names the valid choices.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from clinbench.agents.base import agent_names
from clinbench.env.registry import env_ids

BACKENDS = ("loky", "sequential", "dask", "ray")
PRESETS_DIR = "preset"


class ConfigError(ValueError):
    """A configuration problem the user can fix (reported with exit code 2)."""


def config_dir() -> Path:
    """``conf/`` of this checkout (or ``$CLINBENCH_CONF_DIR``)."""
    env = os.environ.get("CLINBENCH_CONF_DIR")
    path = Path(env) if env else Path(__file__).resolve().parents[1] / "conf"
    if not (path / "config.yaml").exists():
        raise ConfigError(f"no config.yaml in {path}: run from a clinbench checkout or set CLINBENCH_CONF_DIR")
    return path


@dataclass(frozen=True)
class ProtocolConfig:
    train_episodes: int
    eval_episodes: int
    curve_points: int
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class LauncherConfig:
    backend: str
    jobs: int | None
    scheduler: str | None


@dataclass(frozen=True)
class ReportConfig:
    alpha: float
    family: str
    bootstrap_reps: int
    bootstrap_seed: int


@dataclass(frozen=True)
class SweepConfig:
    """The validated sweep: what to run, how, and where the results go."""

    env: str
    tasks: tuple[str, ...]
    agents: tuple[str, ...]
    agent_params: dict[str, dict[str, Any]]
    env_overrides: dict[str, dict[str, Any]]
    protocol: ProtocolConfig
    launcher: LauncherConfig
    report: ReportConfig
    results: Path
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    def env_id(self, task: str) -> str:
        return f"{self.env}/{task}"


def available(group: str) -> list[str]:
    """Option names of a config group (files in ``conf/<group>/``)."""
    return sorted(p.stem for p in (config_dir() / group).glob("*.yaml"))


def compose(overrides: list[str]) -> DictConfig:
    """Compose ``conf/config.yaml`` with Hydra overrides; errors become ConfigError."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        with initialize_config_dir(config_dir=str(config_dir()), version_base=None):
            return hydra_compose("config", overrides=list(overrides))
    except (HydraException, OmegaConfBaseException) as exc:
        lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
        message = " ".join(lines[:2]) if lines else type(exc).__name__
        hint = ""
        if "preset" in message:
            hint = f"; valid presets: {', '.join(available(PRESETS_DIR))}"
        elif "launcher" in message:
            hint = f"; valid launchers: {', '.join(available('launcher'))}"
        raise ConfigError(f"bad override: {message}{hint}") from None


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{what} must be an integer, got {value!r}")
    return value


def validate(cfg: DictConfig) -> SweepConfig:
    """Check every field and build the typed config."""
    raw = OmegaConf.to_container(cfg, resolve=True)
    env = raw["env"]["name"]
    env_tasks = [e.split("/", 1)[1] for e in env_ids() if e.split("/", 1)[0] == env]
    if not env_tasks:
        families = sorted({e.split("/", 1)[0] for e in env_ids()})
        raise ConfigError(f"unknown environment {env!r}; valid: {', '.join(families)}")
    tasks = tuple(raw["tasks"] or ())
    if not tasks:
        raise ConfigError(f"no tasks selected; valid: {', '.join(env_tasks)}")
    for t in tasks:
        if t not in env_tasks:
            raise ConfigError(f"unknown task {t!r}; valid: {', '.join(env_tasks)}")
    agents = tuple(raw["agents"] or ())
    registered = agent_names()
    if not agents:
        raise ConfigError(f"no agents selected; valid: {', '.join(registered)}")
    for a in agents:
        if a not in registered:
            raise ConfigError(f"unknown agent {a!r}; valid: {', '.join(registered)}")
        if a not in raw["agent"]:
            raise ConfigError(f"agent {a!r} has no config file conf/agent/{a}.yaml")
    for name in (set(tasks) | set(raw["env"].get("overrides") or {})):
        if name not in env_tasks:
            raise ConfigError(f"env.overrides names unknown task {name!r}; valid: {', '.join(env_tasks)}")
    if len(set(tasks)) != len(tasks) or len(set(agents)) != len(agents):
        raise ConfigError("tasks and agents must not repeat")

    p = raw["protocol"]
    seeds = p.get("seeds")
    if not seeds:
        raise ConfigError("the seed list is empty; give at least one seed, e.g. --seeds 1 7 21")
    seeds = tuple(_int(s, "every seed") for s in seeds)
    if any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise ConfigError(f"seeds must be distinct non-negative integers, got {list(seeds)}")
    protocol = ProtocolConfig(
        train_episodes=_int(p["train_episodes"], "protocol.train_episodes (--episodes)"),
        eval_episodes=_int(p["eval_episodes"], "protocol.eval_episodes (--eval-episodes)"),
        curve_points=_int(p["curve_points"], "protocol.curve_points"),
        seeds=seeds,
    )
    if protocol.train_episodes < 0:
        raise ConfigError(f"training episodes must be >= 0, got {protocol.train_episodes}")
    if protocol.eval_episodes < 1:
        raise ConfigError(f"evaluation episodes must be >= 1, got {protocol.eval_episodes}")
    if protocol.curve_points < 1:
        raise ConfigError(f"protocol.curve_points must be >= 1, got {protocol.curve_points}")

    lc = raw["launcher"]
    if lc["backend"] not in BACKENDS:
        raise ConfigError(f"unknown backend {lc['backend']!r}; valid: {', '.join(BACKENDS)}")
    jobs = lc.get("jobs")
    if jobs is not None and (_int(jobs, "launcher.jobs (--jobs)") < 1):
        raise ConfigError(f"--jobs must be >= 1, got {jobs}")
    launcher = LauncherConfig(lc["backend"], jobs, lc.get("scheduler"))

    rc = raw["report"]
    report = ReportConfig(
        alpha=float(rc["alpha"]),
        family=str(rc["family"]),
        bootstrap_reps=_int(rc["bootstrap_reps"], "report.bootstrap_reps"),
        bootstrap_seed=_int(rc["bootstrap_seed"], "report.bootstrap_seed"),
    )
    if not 0.0 < report.alpha < 1.0:
        raise ConfigError(f"report.alpha must be in (0, 1), got {report.alpha}")
    if report.bootstrap_reps < 1:
        raise ConfigError("report.bootstrap_reps must be >= 1")

    _check_agent_params(agents, raw["agent"])
    return SweepConfig(
        env=env,
        tasks=tasks,
        agents=agents,
        agent_params={a: dict(raw["agent"][a]) for a in agents},
        env_overrides={t: dict((raw["env"].get("overrides") or {}).get(t) or {}) for t in tasks},
        protocol=protocol,
        launcher=launcher,
        report=report,
        results=Path(raw["results"]),
        raw=raw,
    )


def _check_agent_params(agents: tuple[str, ...], params: dict[str, Any]) -> None:
    """Every key of conf/agent/<name>.yaml must be a parameter of the agent."""
    import inspect

    from clinbench.agents.base import _AGENTS

    for a in agents:
        accepted: set[str] = set()
        for klass in _AGENTS[a].factory.__mro__:
            if "__init__" in klass.__dict__:
                accepted |= set(inspect.signature(klass.__init__).parameters) - {"self", "env", "config"}
        unknown = sorted(set(params[a]) - accepted)
        if unknown:
            raise ConfigError(f"agent {a!r} has no parameter(s) {unknown}; valid: {sorted(accepted)}")


def load(overrides: list[str]) -> SweepConfig:
    """Compose and validate in one step."""
    return validate(compose(overrides))
