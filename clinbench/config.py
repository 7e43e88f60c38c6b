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
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

if TYPE_CHECKING:
    from types import ModuleType

    from clinbench.agents.registry import AgentEntry

BACKENDS = ("loky", "sequential", "dask", "ray")


def _envs() -> ModuleType:
    """The environment registry. The generic config imports no environment family, agent,
    mode or statistics module at import time (they import it, not the other way round)."""
    import clinbench.env.registry

    return clinbench.env.registry


def _agents() -> ModuleType:
    """The agent registry (see ``_envs``)."""
    import clinbench.agents.registry

    return clinbench.agents.registry


def __getattr__(name: str) -> Any:
    """``REPORT_TESTS``, the report's primary tests (paired by seed, the default, or
    Welch), from the statistics package that defines them, loaded when asked for."""
    if name == "REPORT_TESTS":
        from clinbench.stats.hypothesis_tests import T_TESTS

        return tuple(T_TESTS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ConfigError(ValueError):
    """A configuration problem the user can fix (reported with exit code 2)."""


def config_dir() -> Path:
    """The configs shipped inside the package (``clinbench/conf``, which a clone also
    reaches as ``conf/``), or ``$CLINBENCH_CONF_DIR``: an installed wheel needs no clone."""
    env = os.environ.get("CLINBENCH_CONF_DIR")
    path = Path(env) if env else Path(__file__).resolve().parent / "conf"
    if not (path / "config.yaml").exists():
        where = "CLINBENCH_CONF_DIR" if env else "the installed package (reinstall clinbench)"
        raise ConfigError(f"no config.yaml in {path}: check {where}")
    return path


@dataclass(frozen=True)
class ProtocolConfig:
    #: environment steps of training per learning cell; None: each family's default
    #: (``Family.training_steps``)
    train_steps: int | None
    #: None: each family's measured default (``Family.evaluation_episodes``)
    eval_episodes: int | None
    curve_points: int
    seeds: tuple[int, ...]
    # Every default is in conf/protocol/default.yaml, and only there (fields without
    # defaults here; a test checks the file sets each one).
    oc_episodes: int
    #: validation episodes behind each learning-curve point; None: each family's
    #: default (``Family.curve_episodes``)
    curve_episodes: int | None
    #: evaluate the trained checkpoint that scored best on the validation worlds (not
    #: the last policy)
    select_checkpoint: bool
    #: null worlds per cell, for families that declare them (``Family.null_world_overrides``)
    null_episodes: int
    #: multiplies every cell's training budget (the ``long`` preset: 10)
    budget_scale: int

    def evaluation_episodes(self, env: str) -> int:
        """The evaluation episodes of a cell of environment family ``env``."""
        if self.eval_episodes is not None:
            return self.eval_episodes
        return _envs().family(env).evaluation_episodes

    def validation_episodes(self, env: str) -> int:
        """The validation episodes behind each learning-curve point of family ``env``."""
        if self.curve_episodes is not None:
            return self.curve_episodes
        return _envs().family(env).curve_episodes

    def training_steps(self, env: str) -> int:
        """The training budget (environment steps) of a cell of family ``env``."""
        steps = self.train_steps
        if steps is None:
            steps = _envs().family(env).training_steps
        return steps * self.budget_scale


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
    #: the defaults: conf/report/default.yaml
    test: str


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
    #: the size of the selected families' studies (``clinbench.studies.SIZES``)
    studies: str = "full"

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
    group = re.search(r"Could not find '([\w-]+)/([^']*)'", message)
    if group:  # Hydra's own list of options comes empty ("Available options in 'preset':")
        valid = ", ".join(available(group[1]))
        return f"bad override: unknown {group[1]} {group[2]!r}; valid {group[1]} options: {valid}"
    key = re.search(r"Could not override '([\w.-]+)'", message)
    if key:
        parent = key[1].rpartition(".")[0]
        node = OmegaConf.select(_hydra_compose([]), parent) if parent else _hydra_compose([])
        valid = ", ".join(sorted(node)) if isinstance(node, DictConfig) else "none (not a mapping)"
        where = f" under {parent!r}" if parent else ""
        return f"bad override: unknown config key {key[1]!r}; valid keys{where}: {valid}"
    if "Ambiguous value" in message:  # a comma list outside a grid
        return (
            f"bad override: {message}; or run the values as a grid with -m "
            "(clinbench sweep -m key=a,b: one results folder, a column per swept key)"
        )
    return f"bad override: {message}"


def _key(section: dict[str, Any], key: str, group: str) -> Any:
    """``section[key]``; a config without it (an old ``CLINBENCH_CONF_DIR``) is told where
    the default lives rather than given a KeyError."""
    if key not in section:
        raise ConfigError(f"{group}.{key} is not set: its default is in conf/{group}/default.yaml")
    return section[key]


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{what} must be an integer, got {value!r}")
    return value


def _bool(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{what} must be true or false, got {value!r}")
    return value


def validate(cfg: DictConfig) -> SweepConfig:
    """Check every field and build the typed config."""
    raw = OmegaConf.to_container(cfg, resolve=True)
    env = raw["env"]["name"]
    registered = {e.split("/", 1)[0] for e in _envs().env_ids()}
    families = list(raw["env"].get("families") or [])
    if not families or any(f not in registered for f in families):
        valid = sorted(registered | {"all"})
        raise ConfigError(f"unknown environment {env!r}; valid: {', '.join(valid)}")
    task_family = {
        e.split("/", 1)[1]: e.split("/", 1)[0]
        for e in _envs().env_ids()
        if e.split("/", 1)[0] in families
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
    if "train_episodes" in p:
        raise ConfigError(
            "protocol.train_episodes was replaced by protocol.train_steps: training budgets "
            "are environment steps, the same for every learning agent (--steps; null: each "
            "family's default)"
        )
    protocol = ProtocolConfig(
        train_steps=None
        if _key(p, "train_steps", "protocol") is None
        else _int(p["train_steps"], "protocol.train_steps (--steps)"),
        eval_episodes=None
        if p["eval_episodes"] is None
        else _int(p["eval_episodes"], "protocol.eval_episodes (--eval-episodes)"),
        curve_points=_int(p["curve_points"], "protocol.curve_points"),
        curve_episodes=None
        if p["curve_episodes"] is None
        else _int(p["curve_episodes"], "protocol.curve_episodes"),
        select_checkpoint=_bool(
            _key(p, "select_checkpoint", "protocol"), "protocol.select_checkpoint"
        ),
        oc_episodes=_int(_key(p, "oc_episodes", "protocol"), "protocol.oc_episodes"),
        null_episodes=_int(_key(p, "null_episodes", "protocol"), "protocol.null_episodes"),
        budget_scale=_int(_key(p, "budget_scale", "protocol"), "protocol.budget_scale"),
        seeds=seeds,
    )
    if protocol.budget_scale < 1:
        raise ConfigError(f"protocol.budget_scale must be >= 1, got {protocol.budget_scale}")
    if protocol.train_steps is not None and protocol.train_steps < 0:
        raise ConfigError(f"training steps must be >= 0, got {protocol.train_steps}")
    if protocol.null_episodes < 0:
        raise ConfigError(f"protocol.null_episodes must be >= 0, got {protocol.null_episodes}")
    if protocol.eval_episodes is not None and protocol.eval_episodes < 1:
        raise ConfigError(f"evaluation episodes must be >= 1, got {protocol.eval_episodes}")
    if protocol.oc_episodes < 0:
        raise ConfigError(f"protocol.oc_episodes must be >= 0, got {protocol.oc_episodes}")
    if protocol.curve_episodes is not None and protocol.curve_episodes < 1:
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
        test=str(_key(rc, "test", "report")),
    )
    tests = __getattr__("REPORT_TESTS")
    if report.test not in tests:
        raise ConfigError(f"unknown report.test {report.test!r}; valid: {', '.join(tests)}")
    if not 0.0 < report.alpha < 1.0:
        raise ConfigError(f"report.alpha must be in (0, 1), got {report.alpha}")
    if report.bootstrap_reps < 1:
        raise ConfigError("report.bootstrap_reps must be >= 1")
    _check_declared(rc, [e.name for e in entries], sorted(set(task_family.values())))

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
    from clinbench.studies import SIZES

    studies = raw.get("studies", "full")
    # YAML 1.1 (a preset file) reads an unquoted ``off`` as false
    studies = "off" if studies is False else str(studies)
    if studies not in SIZES:
        raise ConfigError(f"unknown studies {studies!r}; valid: {', '.join(SIZES)}")
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
        studies=studies,
    )


def _offline(raw: Any, entries: list[AgentEntry], tasks: tuple[str, ...], families: dict):
    """The offline plan (``offline:`` of the config), problems as ConfigError."""
    from clinbench.offline import INSTALL_HINT, available
    from clinbench.offline.dataset import DatasetError
    from clinbench.offline.plan import plan
    from clinbench.offline.splits import SplitError

    offline = [e.name for e in entries if getattr(e.factory, "offline", False)]
    name = (raw or {}).get("dataset")
    if offline and name and not available():
        raise ConfigError(f"offline sweeps read Minari datasets (extra 'offline'): {INSTALL_HINT}")
    try:
        if offline and name:
            from clinbench.offline.dataset import data_dir, metadata

            if "spec" not in metadata(str(name), data_dir(raw.get("data_dir"))):
                raise ConfigError(
                    f"dataset {name} holds a family's own logged decisions (clinbench dataset "
                    "logged), not behaviour episodes an offline agent learns from: make one "
                    "with clinbench dataset create"
                )
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
        raise ConfigError(f"no agents selected; valid: {', '.join(_agents().agent_names())}")
    entries = []
    for ref in refs:
        try:
            entry = _agents().agent_entry(str(ref))
            entry.require()
        except _agents().AgentLoadError as exc:
            raise ConfigError(str(exc)) from exc
        entries.append(entry)
    return entries


def _check_declared(rc: Any, agents: list[str], envs: list[str]) -> None:
    """The declared families (``report.primary``, margin, cross_family) are checked
    before any cell runs, not when the report is rendered after the sweep."""
    from clinbench.report.declared import declaration, split
    from clinbench.report.results import ResultsError

    try:
        decl = declaration(OmegaConf.to_container(rc) if OmegaConf.is_config(rc) else rc)
    except ResultsError as exc:
        raise ConfigError(str(exc)) from None
    primary = decl.primary
    if isinstance(primary, dict):
        for env in primary:
            if env not in envs:
                raise ConfigError(
                    f"report.primary names family {env!r}, not in this sweep; valid: "
                    f"{', '.join(envs)}"
                )
    lists = primary.values() if isinstance(primary, dict) else [primary or ()]
    for entries in lists:
        for entry in entries:
            for name in split(entry):
                if name != "*" and name not in agents:
                    raise ConfigError(
                        f"report.primary: {entry!r} names agent {name!r}, not in this sweep; "
                        f"valid: *, {', '.join(agents)}"
                    )


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
            entry = _agents().agent_entry(name)
        except _agents().AgentLoadError:
            continue
        if (
            entry.factory is not None
        ):  # an optional agent not installed here still has its signature
            accepted = _agents().agent_parameters(dataclasses.replace(entry, unavailable=None))
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
        defaults = _agents().agent_parameters(e)
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
