"""Same seed and same actions give a bit-identical trajectory (spec section 3).

Whatever ran before, in any process, under any ``PYTHONHASHSEED``, and whatever the
global random generators hold: paired comparisons of agents rely on it.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clinbench.agents.context import AgentContext
from clinbench.agents.reference_planner import ReferencePlanner
from clinbench.agents.registry import make_agent
from clinbench.env import make

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent / "clinbench"
#: (task, agent, seed): the random agent also writes and reads memory and files protocol
#: amendments (their approval delay is drawn from the outcome stream); the heuristic
#: stops early on hard; the reference planner reads the hidden world.
CASES = (
    ("easy_bench", "heuristic", 3),
    ("medium_bench", "random", 8),
    ("hard_bench", "random", 5),
    ("hard_bench", "heuristic", 12),
    ("medium_bench", "planner", 21),
)
#: Agents are reset with a seed of their own, never the world seed (spec section 11).
AGENT_SEED_OFFSET = 10_000


def build_agent(agent_name: str, env):
    if agent_name == "planner":  # handed the hidden world through its own constructor
        return ReferencePlanner(AgentContext.of(env), world=lambda: env.world)
    return make_agent(agent_name, AgentContext.of(env))


def trajectory(task: str, agent_name: str, seed: int) -> str:
    """Every observation, reward and info of one episode, as JSON text."""
    env = make(f"recruitment/{task}")
    agent = build_agent(agent_name, env)
    agent.reset(AGENT_SEED_OFFSET + seed)
    obs, info = env.reset(seed=seed)
    steps = [{"obs": obs.to_dict(), "info": info}]
    done = False
    while not done:
        action = agent.act(obs)
        obs, reward, done, truncated, info = env.step(action)
        steps.append(
            {
                "action": action.to_dict(),
                "obs": obs.to_dict(),
                "reward": reward,
                "done": done,
                "truncated": truncated,
                "info": info,
            }
        )
    return json.dumps(steps, sort_keys=True)


def digest() -> str:
    """One hash over the trajectories of every case."""
    h = hashlib.sha256()
    for case in CASES:
        h.update(trajectory(*case).encode())
    return h.hexdigest()


def test_same_seed_same_actions_same_trajectory():
    for case in CASES:
        assert trajectory(*case) == trajectory(*case)


def test_the_cases_draw_on_every_random_mechanic():
    """The cases above replay amendments, an early stop, site openings, follow-up that
    ends in completion and in dropout, and a resolution of follow-up at the end."""
    seen = set()
    for case in CASES:
        steps = json.loads(trajectory(*case))
        for prev, step in itertools.pairwise(steps):
            a = step["action"]
            f0, f1 = prev["obs"]["current_funnel"], step["obs"]["current_funnel"]
            if a.get("strategy_change") in ("relax_criteria", "tighten_criteria"):
                seen.add("amendment filed" if step["info"]["error"] is None else "refused")
            if prev["obs"]["pending_amendment"] and not step["obs"]["pending_amendment"]:
                seen.add("amendment approved")
            opened = sum(s["active"] for s in step["obs"]["site_performance"].values())
            if opened > sum(s["active"] for s in prev["obs"]["site_performance"].values()):
                seen.add("site opened")
            if f1["completed"] > f0["completed"]:
                seen.add("completed")
            if f1["dropped_out"] > f0["dropped_out"]:
                seen.add("dropped out")
            if step["done"]:
                seen.add(step["info"]["terminated_by"])
                if f0["enrolled"] > 0:
                    seen.add("follow-up resolved at the end")
    expected = {
        "amendment filed",
        "amendment approved",
        "site opened",
        "completed",
        "dropped out",
        "stop",
        "deadline",
        "follow-up resolved at the end",
    }
    assert expected <= seen


def test_trajectory_does_not_depend_on_what_ran_before():
    forward = [trajectory(*case) for case in CASES]
    backward = [trajectory(*case) for case in reversed(CASES)][::-1]
    assert forward == backward
    assert len(set(forward)) == len(forward)  # the cases are different episodes


def test_one_environment_replays_a_seed_after_other_seeds():
    """Reusing the environment object across seeds leaves no trace either."""
    env = make("recruitment/medium_bench")
    action = {"action_type": "plan_next_phase", "target_phase": "screening"}

    def replay(seed: int) -> list:
        obs, _ = env.reset(seed=seed)
        out = [obs.to_dict()]
        for _ in range(20):
            obs, reward, *_ = env.step(action)
            out.append((obs.to_dict(), reward))
        return out

    first = replay(1)
    replay(2)
    replay(3)
    assert replay(1) == first


def test_trajectory_is_identical_across_processes_and_hash_seeds():
    here = digest()
    script = (
        f"import sys; sys.path.insert(0, {str(HERE)!r}); "
        "from test_recruitment_determinism import digest; print(digest())"
    )
    for hash_seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == here, out.stderr


def test_global_random_generators_neither_matter_nor_move():
    """Seeding the global generators changes nothing, and an episode draws nothing from them."""
    np.random.seed(1)
    random.seed(1)
    first = [trajectory(*case) for case in CASES]
    np.random.seed(987_654)
    random.seed("other")
    np_state, py_state = np.random.get_state(), random.getstate()
    second = [trajectory(*case) for case in CASES]
    assert second == first
    after = np.random.get_state()
    assert after[0] == np_state[0] and np.array_equal(after[1], np_state[1])
    assert after[2:] == np_state[2:]
    assert random.getstate() == py_state


# ---------------------------------------------------------------- no global RNG in the code
ALLOWED_NUMPY_RANDOM = frozenset({"default_rng", "SeedSequence", "Generator"})


def global_rng_uses(source: str) -> list[str]:
    """Calls of ``numpy.random`` functions other than the allowed ones, and imports of
    the ``random`` module, in Python source (aliases such as ``np`` are followed)."""
    tree = ast.parse(source)
    numpy_names, np_random_names, found = set(), set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "random" or a.name.startswith("random."):
                    found.append(f"import {a.name}")
                elif a.name == "numpy":
                    numpy_names.add(a.asname or "numpy")
                elif a.name == "numpy.random":
                    (np_random_names if a.asname else numpy_names).add(a.asname or "numpy")
        elif isinstance(node, ast.ImportFrom):
            if node.module == "random" or (node.module or "").startswith("random."):
                found.append(f"from {node.module} import ...")
            elif node.module == "numpy":
                np_random_names.update(a.asname or a.name for a in node.names if a.name == "random")
            elif node.module == "numpy.random":
                found += [
                    f"from numpy.random import {a.name}"
                    for a in node.names
                    if a.name not in ALLOWED_NUMPY_RANDOM
                ]
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner, name = node.func.value, node.func.attr
        via_numpy = (
            isinstance(owner, ast.Attribute)
            and owner.attr == "random"
            and isinstance(owner.value, ast.Name)
            and owner.value.id in numpy_names
        )
        via_alias = isinstance(owner, ast.Name) and owner.id in np_random_names
        if (via_numpy or via_alias) and name not in ALLOWED_NUMPY_RANDOM:
            found.append(f"line {node.lineno}: numpy.random.{name}(...)")
    return found


@pytest.mark.parametrize(
    "source, bad",
    [
        ("import numpy as np\nnp.random.default_rng(np.random.SeedSequence(1))", False),
        ("import numpy as np\nnp.random.Generator(np.random.PCG64())", True),
        ("import numpy as np\nnp.random.seed(0)", True),
        ("import numpy\nnumpy.random.shuffle(x)", True),
        ("from numpy import random as npr\nnpr.normal()", True),
        ("from numpy.random import default_rng\ndefault_rng(0)", False),
        ("from numpy.random import rand", True),
        ("import random", True),
        ("from random import choice", True),
        ("rng.random(3)\nself.np_random.integers(3)", False),
    ],
)
def test_the_global_rng_check_itself(source, bad):
    assert bool(global_rng_uses(source)) is bad


def test_no_file_of_the_package_uses_a_global_rng():
    files = sorted(PACKAGE.rglob("*.py"))
    assert files
    offences = {
        str(f.relative_to(PACKAGE.parent)): uses
        for f in files
        if (uses := global_rng_uses(f.read_text(encoding="utf-8")))
    }
    assert offences == {}
