"""The cell hash covers every source a cell executes: the shared cell code, its
family's code and its agent's own modules (``AgentEntry.code``). Each registered agent
plays a small cell of each family it plays under a profiler, and every clinbench file
that runs must be one of those, so an edit anywhere a cell reaches re-runs it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from shared_helpers import clinbench_sources_run

import clinbench
from clinbench.agents.registry import _load_builtin, agent_entries, agent_entry, agent_source_files
from clinbench.env.registry import env_ids
from clinbench.protocol import Protocol, run_cell
from clinbench.sweep.cells import SHARED_AGENT_MODULES, cell_code_files

ROOT = Path(clinbench.__file__).resolve().parent
#: Resolves names to the classes whose code is hashed (a cell's agent is built by name;
#: a shared name's dispatch to its family's class is ``agents/variants.py``, hashed).
NOT_CELL_CODE = {"agents/registry.py"}
TINY = Protocol(train_steps=120, eval_episodes=1, curve_points=2, curve_episodes=1,
                oc_episodes=1, null_episodes=1)


def _first_task(family: str) -> str:
    return next(i for i in env_ids() if i.split("/")[0] == family)


def _cases() -> list[tuple[str, str]]:
    _load_builtin()
    families = sorted({i.split("/")[0] for i in env_ids()})
    cases = []
    for entry in agent_entries():
        module = entry.factory.__module__ if entry.factory is not None else ""
        if not module.startswith(("clinbench.agents.", "clinbench.env.")):
            continue  # plugins and clinbench's own packages hash their whole package
        plays = families if "*" in entry.envs else [f for f in entry.envs if f in families]
        cases += [(entry.name, family) for family in plays]
    return cases


def _executed(env_id: str, agent: str) -> set[str]:
    return clinbench_sources_run(lambda: run_cell(env_id, agent, 3, TINY, {}))


@pytest.mark.parametrize(("agent", "family"), _cases())
def test_a_cell_runs_only_hashed_code(agent, family):
    entry = next(e for e in agent_entries() if e.name == agent)
    if entry.unavailable:
        pytest.skip(entry.unavailable)
    _executed(_first_task(family), agent)  # imports happen here, outside the count
    executed = _executed(_first_task(family), agent)
    own = {p.relative_to(ROOT).as_posix() for p in agent_source_files([entry.factory])}
    hashed = set(cell_code_files(family)) | own | NOT_CELL_CODE
    assert executed - hashed == set()
    assert any(f.startswith(f"env/{family}/") for f in executed)


def test_an_agent_s_own_modules_are_its_identity_not_the_cell_code():
    """Editing mira.py changes mira's code identity and no family's cell code, so it
    re-runs mira's cells only; mira's PPO ablation runs grpo's minibatch update and klong
    builds its heuristic teacher by name, so grpo.py is in mira's identity and the
    heuristic's module in klong's."""
    from clinbench.agents.registry import _agents_folder, _digest, plugin_code

    names = {e.name: e for e in agent_entries()}
    mira = agent_source_files([names["mira"].factory])
    assert [p.name for p in mira] == ["grpo.py", "mira.py"]
    assert plugin_code(names["mira"].factory) == f"source {_digest(mira, _agents_folder())}"
    assert "heuristic.py" in [p.name for p in agent_source_files([names["klong"].factory])]
    assert "grpo.py" in [p.name for p in agent_source_files([names["hcapo"].factory])]
    for family in ("recruitment", "trial_design", "portfolio"):
        assert "agents/mira.py" not in cell_code_files(family)
    # the portfolio family's agents import the generic random agent: family code there
    assert "agents/random_agent.py" in cell_code_files("portfolio")
    assert "agents/random_agent.py" not in cell_code_files("recruitment")


def test_a_clinbench_package_agent_also_hashes_the_agent_modules_it_uses(tmp_path):
    """clinbench's own agent packages (offline, llm) hash their package; an agent module
    of ``clinbench/agents/`` such a package imports is in its identity too."""
    import importlib.util

    from clinbench.agents.registry import _agents_folder, _digest, plugin_code

    source = tmp_path / "agent.py"
    source.write_text(
        "from clinbench.agents.base import Agent\n"
        "from clinbench.agents.mira import MIRAAgent  # noqa: F401\n\n"
        "class Uses(Agent):\n    name = 'uses'\n"
    )
    spec = importlib.util.spec_from_file_location("clinbench.fakepkg.agent", source)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        code = plugin_code(module.Uses)
    finally:
        del sys.modules[spec.name]
    mira = [_agents_folder() / "grpo.py", _agents_folder() / "mira.py"]
    assert f"agents {_digest(mira, _agents_folder())}" in code
    assert code.startswith("source ")


def test_a_plugin_built_on_a_built_in_agent_hashes_that_agent_s_modules(tmp_path):
    """A spec-string plugin subclassing mira runs mira.py: editing it must re-run the
    plugin's cells, so mira.py is in the plugin's identity beside its own file."""
    from clinbench.agents.registry import _agents_folder, _digest

    plugin = tmp_path / "mymira.py"
    plugin.write_text("from clinbench.agents.mira import MIRAAgent\n\n"
                      "class MyMira(MIRAAgent):\n    name = 'mymira'\n")
    code = agent_entry(f"{plugin}:MyMira").code
    mira = [_agents_folder() / "grpo.py", _agents_folder() / "mira.py"]
    assert f"agents {_digest(mira, _agents_folder())}" in code


@pytest.mark.parametrize("line", [
    "from clinbench.agents import heuristic",
    "import clinbench.agents.heuristic",
    "from clinbench.agents.heuristic import RecruitmentHeuristic",
    "from . import heuristic",
    "from .heuristic import RecruitmentHeuristic",
    "from ..agents.heuristic import RecruitmentHeuristic",
    "importlib.import_module('clinbench.agents.heuristic')",
    "make_agent('heuristic', context)",
    "make_agent(ref='heuristic', context=context)",
    "agent_entry('heuristic')",
])
def test_every_way_of_reaching_an_agent_module_is_found(line):
    """Each import form (relative ones read as if in a module of clinbench/agents/),
    and each call that builds an agent by a constant name, reaches heuristic.py."""
    from clinbench.agents.registry import _agents_folder, _module_file, _static_uses

    folder = _agents_folder()
    modules, names = _static_uses(folder / "probe.py", line + "\n")
    found = {f for m in modules if (f := _module_file(m)) is not None}
    found |= set(agent_source_files([agent_entry(n).factory for n in names]))
    assert folder / "heuristic.py" in found


def test_a_file_read_again_after_an_edit_gives_its_new_uses(tmp_path):
    """What a source file uses is kept per text, never per path: the same path read
    again after an edit gives what the edited text imports and builds."""
    from clinbench.agents.registry import _static_uses

    probe = tmp_path / "probe.py"
    probe.write_text("from clinbench.agents import heuristic\n")
    assert _static_uses(probe) == (
        {"clinbench.agents", "clinbench.agents.heuristic"}, set()
    )
    probe.write_text("import numpy\nmake_agent('klong', context)\n")
    assert _static_uses(probe) == ({"numpy"}, {"klong"})


#: Calls an agent module may make when it is imported (constants, registration).
IMPORT_TIME_CALLS = {"frozenset", "tuple", "len", "dict", "set", "register_agent",
                     "dataclass", "field", "ClassVar", "np.round", "np.arange", "np.array"}


def _agent_modules() -> list[Path]:
    from clinbench.agents.registry import _agents_folder

    folder = _agents_folder()
    shared = {folder / f"{m}.py" for m in (*SHARED_AGENT_MODULES, "registry", "__init__")}
    # a family's study is no agent: it has a code identity of its own (clinbench.studies)
    return [f for f in sorted(folder.rglob("*.py"))
            if f not in shared and "core" not in f.relative_to(folder).parts
            and f.name != "study.py"]


@pytest.mark.parametrize("path", _agent_modules(), ids=lambda p: p.name)
def test_importing_an_agent_module_changes_nothing_but_its_own_names(path):
    """Every cell imports every agent module (the registry loads them all), but a cell's
    hash covers only its own agent's: so importing one may only define things (imports,
    functions, classes, constants, registration), never patch another agent. The trace
    above does not see module bodies; this reads them."""
    import ast

    def calls(node: ast.AST) -> set[str]:
        return {ast.unparse(c.func) for c in ast.walk(node) if isinstance(c, ast.Call)}

    allowed = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.Assign, ast.AnnAssign)
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            assert all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in node.body)
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            assert calls(node) <= {"register_agent"}, (path.name, ast.unparse(node)[:80])
            continue
        if isinstance(node, ast.ClassDef):
            body = [n for n in node.body if not isinstance(n, ast.FunctionDef)]
            found = set().union(*(calls(d) for d in node.decorator_list),
                                *(calls(n) for n in body), set())
            assert found <= IMPORT_TIME_CALLS, (path.name, node.name, found)
            continue
        assert isinstance(node, allowed), (path.name, ast.unparse(node)[:80])
        targets = getattr(node, "targets", None) or [getattr(node, "target", None)]
        if isinstance(node, (ast.Assign, ast.AnnAssign)):  # a name of its own, no patch
            assert all(isinstance(t, ast.Name) for t in targets), ast.unparse(node)[:80]
        if not isinstance(node, ast.FunctionDef):
            assert calls(node) <= IMPORT_TIME_CALLS, (path.name, ast.unparse(node)[:80])


def test_a_remote_cell_s_identity_covers_the_client():
    """A remote cell plays through ``clinbench.serve.remote`` (and what it imports of
    ``clinbench.serve``): its cell code carries their hash, a local cell's does not."""
    import ast

    from clinbench.sweep.cells import _REMOTE_CODE, cell_code

    client = ROOT / "serve" / "remote.py"
    used = {"serve/remote.py"}
    for node in ast.walk(ast.parse(client.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("clinbench.serve"):
            used.add(node.module.removeprefix("clinbench.").replace(".", "/") + ".py")
    covered = {f.relative_to(ROOT).as_posix() for part in _REMOTE_CODE for f in ROOT.glob(part)}
    assert used <= covered
    remote = cell_code("recruitment", remote=True)
    assert remote.startswith(cell_code("recruitment") + " remote ")
