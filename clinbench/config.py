"""Sweep configuration: composed from ``conf/`` with Hydra, validated into typed objects.

Hydra's Compose API builds the config (typer owns the command line, so Hydra's own
app runner and multirun are not used); the seed x agent x task grid is expanded in
clinbench itself. Everything is checked here, before any work starts, and every
problem is a ``ConfigError`` whose message names the valid choices.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from clinbench.agents.registry import (
    AgentEntry,
    AgentLoadError,
    agent_entry,
    agent_names,
    agent_parameters,
)
from clinbench.env.registry import env_ids, family
from clinbench.stats.hypothesis_tests import T_TESTS

BACKENDS = ("loky", "sequential", "dask", "ray")
#: The primary test of the report: paired by seed (default), or Welch.
REPORT_TESTS = tuple(T_TESTS)


class ConfigError(ValueError):
    """A configuration problem the user can fix (reported with exit code 2)."""


def config_dir() -> Path:
    """``conf/`` of this checkout (or ``$CLINBENCH_CONF_DIR``)."""
    env = os.environ.get("CLINBENCH_CONF_DIR")
    path = Path(env) if env else Path(__file__).resolve().parents[1] / "conf"
    if not (path / "config.yaml").exists():
        raise ConfigError(
            f"no config.yaml in {path}: run from a clinbench checkout or set CLINBENCH_CONF_DIR"
        )
    return path


@dataclass(frozen=True)
class ProtocolConfig:
    train_episodes: int
    #: None: each family's measured default (``Family.evaluation_episodes``)
    eval_episodes: int | None
    curve_points: int
    seeds: tuple[int, ...]
    oc_episodes: int = 0
    #: validation episodes behind each learning-curve point
    curve_episodes: int = 10

    def evaluation_episodes(self, env: str) -> int:
        """The evaluation episodes of a cell of environment family ``env``."""
        if self.eval_episodes is not None:
            return self.eval_episodes
        return family(env).evaluation_episodes


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
    test: str = "paired"


@dataclass(frozen=True)
class SweepConfig:
    """The validated sweep: what to run, how, and where the results go."""

    #: the environment selection (``conf/env/``): a family's name, or ``all``
    env: str
    tasks: tuple[str, ...]
    #: agent names, as they appear in results
    agents: tuple[str, ...]
    agent_params: dict[str, dict[str, Any]]
    env_overrides: dict[str, dict[str, Any]]
    protocol: ProtocolConfig
    launcher: LauncherConfig
    report: ReportConfig
    results: Path
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    #: what each agent's cells load it by (a name, or a plugin's spec string)
    agent_refs: dict[str, str] = field(default_factory=dict)
    #: the environment family of each task
    task_envs: dict[str, str] = field(default_factory=dict)
    #: the families each agent plays (``*``: any)
    agent_envs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: selected agents left out: they play none of the selected tasks' families
    idle_agents: tuple[str, ...] = ()
    #: ``ws://host:port`` of a ``clinbench serve`` server to play every task on ("": here)
    remote: str = ""
    #: the offline cells (dataset, splits, their agent names; ``clinbench.offline.plan``)
    offline: Any = None

    def env_id(self, task: str) -> str:
        return f"{self.task_envs[task]}/{task}"

    @property
    def envs(self) -> list[str]:
        """The families of the selected tasks, in task order."""
        return list(dict.fromkeys(self.task_envs[t] for t in self.tasks))

    def plays(self, agent: str, task: str) -> bool:
        """Whether ``agent`` plays ``task``'s family (its cells exist only then); an
        offline agent plays the selected tasks its dataset covers."""
        if self.offline is not None and agent in self.offline.agents:
            return task in self.offline.tasks
        envs = self.agent_envs.get(agent, ("*",))
        return "*" in envs or self.task_envs[task] in envs


def available(group: str) -> list[str]:
    """Option names of a config group (files in ``conf/<group>/``)."""
    return sorted(p.stem for p in (config_dir() / group).glob("*.yaml"))


def _hydra_compose(overrides: list[str]) -> DictConfig:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(config_dir()), version_base=None):
        return hydra_compose("config", overrides=[_open_mapping(o) for o in overrides])


def _open_mapping(override: str) -> str:
    """``env.overrides`` (task -> parameters) and ``agent`` (agent -> parameters) are open
    mappings; Hydra's struct mode would refuse ``env.overrides={hard_bench: {...}}`` or a
    plugin's ``agent.mymethod.lr=0.1`` unless forced with ``++``. The parameters are then
    checked against the task and the agent's constructor (unknown ones exit 2)."""
    return f"++{override}" if override.startswith(("env.overrides", "agent.")) else override


def compose(overrides: list[str]) -> DictConfig:
    """Compose ``conf/config.yaml`` with Hydra overrides; errors become ConfigError."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        return _hydra_compose(overrides)
    except (HydraException, OmegaConfBaseException) as exc:
        lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
        message = " ".join(lines[:2]) if lines else type(exc).__name__
        raise ConfigError(_explain(message)) from None
    except ValueError as exc:  # OmegaConf indexing a list with a name, e.g. agents.x=1
        raise ConfigError(f"bad override in {' '.join(overrides)}: {exc}") from None


def _explain(message: str) -> str:
    """Hydra's message with the valid choices named (Hydra lists them on later lines or
    not at all, and suggests ``+key=value``, which would add a key nothing reads)."""
    group = re.search(r"Could not find '([\w-]+)/", message)
    if group:
        return (
            f"bad override: {message}; valid {group[1]} options: {', '.join(available(group[1]))}"
        )
    key = re.search(r"Could not override '([\w.-]+)'", message)
    if key:
        parent = key[1].rpartition(".")[0]
        node = OmegaConf.select(_hydra_compose([]), parent) if parent else _hydra_compose([])
        valid = ", ".join(sorted(node)) if isinstance(node, DictConfig) else "none (not a mapping)"
        where = f" under {parent!r}" if parent else ""
        return f"bad override: unknown config key {key[1]!r}; valid keys{where}: {valid}"
    return f"bad override: {message}"


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{what} must be an integer, got {value!r}")
    return value


def validate(cfg: DictConfig) -> SweepConfig:
    """Check every field and build the typed config."""
    raw = OmegaConf.to_container(cfg, resolve=True)
    env = raw["env"]["name"]
    registered = {e.split("/", 1)[0] for e in env_ids()}
    families = list(raw["env"].get("families") or [])
    if not families or any(f not in registered for f in families):
        valid = sorted(registered | {"all"})
        raise ConfigError(f"unknown environment {env!r}; valid: {', '.join(valid)}")
    task_family = {
        e.split("/", 1)[1]: e.split("/", 1)[0] for e in env_ids() if e.split("/", 1)[0] in families
    }
    env_tasks = list(task_family)
    tasks = tuple(raw["tasks"] or ())
    if not tasks:
        raise ConfigError(f"no tasks selected; valid: {', '.join(env_tasks)}")
    for t in tasks:
        if t not in env_tasks:
            raise ConfigError(f"unknown task {t!r}; valid: {', '.join(env_tasks)}")
    entries = _resolve_agents(raw["agents"] or ())
    chosen = {task_family[t] for t in tasks}
    idle = [e for e in entries if "*" not in e.envs and not chosen & set(e.envs)]
    if len(idle) == len(entries):
        raise ConfigError(
            "no selected agent plays the selected tasks' environments "
            f"({', '.join(sorted(chosen))})"
        )
    entries = [e for e in entries if e not in idle]
    agents = tuple(e.name for e in entries)
    for e in entries:
        if e.source == "clinbench" and e.name not in raw["agent"]:
            raise ConfigError(f"agent {e.name!r} has no config file conf/agent/{e.name}.yaml")
    for name in set(tasks) | set(raw["env"].get("overrides") or {}):
        if name not in env_tasks:
            raise ConfigError(
                f"env.overrides names unknown task {name!r}; valid: {', '.join(env_tasks)}"
            )
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
        eval_episodes=None
        if p["eval_episodes"] is None
        else _int(p["eval_episodes"], "protocol.eval_episodes (--eval-episodes)"),
        curve_points=_int(p["curve_points"], "protocol.curve_points"),
        curve_episodes=_int(p.get("curve_episodes", 10), "protocol.curve_episodes"),
        oc_episodes=_int(p.get("oc_episodes", 0), "protocol.oc_episodes"),
        seeds=seeds,
    )
    if protocol.train_episodes < 0:
        raise ConfigError(f"training episodes must be >= 0, got {protocol.train_episodes}")
    if protocol.eval_episodes is not None and protocol.eval_episodes < 1:
        raise ConfigError(f"evaluation episodes must be >= 1, got {protocol.eval_episodes}")
    if protocol.oc_episodes < 0:
        raise ConfigError(f"protocol.oc_episodes must be >= 0, got {protocol.oc_episodes}")
    if protocol.curve_episodes < 1:
        raise ConfigError(f"protocol.curve_episodes must be >= 1, got {protocol.curve_episodes}")
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
        test=str(rc.get("test", "paired")),
    )
    if report.test not in REPORT_TESTS:
        raise ConfigError(f"unknown report.test {report.test!r}; valid: {', '.join(REPORT_TESTS)}")
    if not 0.0 < report.alpha < 1.0:
        raise ConfigError(f"report.alpha must be in (0, 1), got {report.alpha}")
    if report.bootstrap_reps < 1:
        raise ConfigError("report.bootstrap_reps must be >= 1")

    _check_agent_keys(entries, raw["agent"])
    agent_params = {e.name: dict(raw["agent"].get(e.name) or {}) for e in entries}
    _check_agent_params(entries, agent_params)
    env_overrides = {t: dict((raw["env"].get("overrides") or {}).get(t) or {}) for t in tasks}
    _check_env_overrides(task_family, env_overrides)
    refs = {e.name: e.ref for e in entries}
    envs = {e.name: tuple(e.envs) for e in entries}
    offline = _offline(raw.get("offline"), entries, tasks, task_family)
    if offline.agents:  # each offline agent once per split, under the split's name
        named = []
        for a in agents:
            split_names = [n for n, (base, _) in offline.agents.items() if base == a]
            named += split_names or [a]
            for n in split_names:
                refs[n], envs[n], agent_params[n] = refs[a], envs[a], agent_params[a]
        agents = tuple(named)
    remote = _remote(raw["env"].get("remote"))
    if remote and offline.agents:
        raise ConfigError("offline agents are evaluated here; env.remote is for online agents")
    return SweepConfig(
        env=env,
        tasks=tasks,
        agents=agents,
        agent_params=agent_params,
        env_overrides=env_overrides,
        protocol=protocol,
        launcher=launcher,
        report=report,
        results=Path(raw["results"]),
        raw=raw,
        agent_refs=refs,
        task_envs={t: task_family[t] for t in tasks},
        agent_envs=envs,
        idle_agents=tuple(e.name for e in idle),
        remote=remote,
        offline=offline,
    )


def _offline(raw: Any, entries: list[AgentEntry], tasks: tuple[str, ...], families: dict):
    """The offline plan (``offline:`` of the config), problems as ConfigError."""
    from clinbench.offline import INSTALL_HINT, available
    from clinbench.offline.dataset import DatasetError
    from clinbench.offline.plan import plan
    from clinbench.offline.splits import SplitError

    offline = [e.name for e in entries if getattr(e.factory, "offline", False)]
    if offline and (raw or {}).get("dataset") and not available():
        raise ConfigError(f"offline sweeps read Minari datasets (extra 'offline'): {INSTALL_HINT}")
    try:
        return plan(raw, offline, tasks, families)
    except (DatasetError, SplitError) as exc:
        raise ConfigError(str(exc)) from None


def _remote(url: Any) -> str:
    """``env.remote``: empty, or the ``ws://`` / ``wss://`` address of a served environment."""
    if not url:
        return ""
    from clinbench.serve import remote_address

    try:
        return remote_address(url)
    except ValueError as exc:
        raise ConfigError(f"env.remote: {exc}") from None


def _resolve_agents(refs: Any) -> list[AgentEntry]:
    """The agents of ``refs`` (names or spec strings) that can run here, or ConfigError
    naming the valid agents, the plugin that failed to import or the missing extra."""
    if not refs:
        raise ConfigError(f"no agents selected; valid: {', '.join(agent_names())}")
    entries = []
    for ref in refs:
        try:
            entry = agent_entry(str(ref))
            entry.require()
        except AgentLoadError as exc:
            raise ConfigError(str(exc)) from exc
        entries.append(entry)
    return entries


def _check_agent_keys(entries: list[AgentEntry], params: dict[str, Any]) -> None:
    """Every ``agent.<name>`` must name an agent of ``conf/agent/`` or a selected agent
    (``agent.hcapoo.omega=0`` is a typo, not a new agent), and the parameters of the
    agents of ``conf/agent/`` must be theirs even when they are not selected."""
    known = set(available("agent")) | {e.name for e in entries}
    for name in params:
        if name not in known:
            raise ConfigError(
                f"agent.{name}: no such agent among conf/agent/ and the selected agents; "
                f"valid: {', '.join(sorted(known))}"
            )
    selected = {e.name for e in entries}
    for name in sorted(set(params) - selected):
        try:
            entry = agent_entry(name)
        except AgentLoadError:
            continue
        if (
            entry.factory is not None
        ):  # an optional agent not installed here still has its signature
            accepted = agent_parameters(dataclasses.replace(entry, unavailable=None))
            unknown = sorted(set(params[name] or {}) - set(accepted))
            if unknown:
                raise ConfigError(
                    f"agent {name!r} has no parameter(s) {unknown}; valid: {sorted(accepted)}"
                )


def _check_agent_params(entries: list[AgentEntry], params: dict[str, dict[str, Any]]) -> None:
    """Every parameter given to an agent (conf/agent/<name>.yaml or ``agent.<name>.<p>=v``)
    must be a parameter of its constructor, with a value of the kind of its default (a
    typo such as ``omega=abc`` fails here, not in every cell of the agent)."""
    for e in entries:
        defaults = agent_parameters(e)
        unknown = sorted(set(params[e.name]) - set(defaults))
        if unknown:
            raise ConfigError(
                f"agent {e.name!r} has no parameter(s) {unknown}; valid: {sorted(defaults)}"
            )
        for name, value in params[e.name].items():
            _check_kind(f"agent.{e.name}.{name}", value, defaults[name])


def _check_env_overrides(task_family: dict[str, str], overrides: dict[str, dict[str, Any]]) -> None:
    """Task-parameter overrides must name parameters of the task, with values of their kind."""
    from dataclasses import asdict

    from clinbench.env.registry import make

    for task, params in overrides.items():
        env_id = f"{task_family[task]}/{task}"
        defaults = asdict(make(env_id).spec.params)
        try:
            make(env_id, **params)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"env.overrides.{task}: {exc}") from None
        for name, value in params.items():
            _check_kind(f"env.overrides.{task}.{name}", value, defaults[name])


#: Kinds of value a parameter of a given default kind accepts.
_ACCEPTS = {
    "bool": {"bool"},
    "int": {"int"},
    "float": {"int", "float"},
    "list": {"list"},
    "str": {"str"},
}


def _check_kind(where: str, value: Any, default: Any) -> None:
    """``value`` must be of the kind of ``default`` (an int where a float is expected is fine)."""
    kind = _kind(default)
    if kind is not None and _kind(value) not in _ACCEPTS[kind]:
        raise ConfigError(f"{where} must be {kind}, got {value!r} (default {default!r})")


def _kind(value: Any) -> str | None:
    for kind, types in (
        ("bool", bool),
        ("int", int),
        ("float", float),
        ("list", (list, tuple)),
        ("str", str),
    ):
        if isinstance(value, types):
            return kind
    return None


def load(overrides: list[str]) -> SweepConfig:
    """Compose and validate in one step."""
    return validate(compose(overrides))
