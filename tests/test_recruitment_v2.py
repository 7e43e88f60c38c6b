"""The decisions of task version 2 (spec section 11), each as a measured property.

Paired comparisons play every policy on the same worlds (common random numbers), so
the standard error is that of the per-world differences. "Does not beat" means the
mean gain is at most two standard errors.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from clinbench.agents.context import AgentContext
from clinbench.agents.heuristic import HeuristicAgent
from clinbench.agents.reference_planner import ReferencePlanner
from clinbench.agents.registry import make_agent
from clinbench.env import make
from clinbench.env.recruitment.actions import Action, ActionType
from clinbench.env.recruitment.macro import is_open
from clinbench.env.recruitment.tasks import TASK_VERSION, TASKS
from clinbench.env.recruitment.world import draw_world
from clinbench.episode import play_episode
from clinbench.references.recruitment_scores import REFERENCE_SCORES
from clinbench.references.recruitment_scores import TASK_VERSION as REFERENCE_VERSION

TASK_NAMES = tuple(TASKS)
#: World seeds of these tests (disjoint from the sweep's and the references').
HEURISTIC_WORLDS = tuple(range(20_000, 20_100))
PLANNER_WORLDS = tuple(range(30_000, 30_200))


class Trick:
    """A documented trick wrapped around a policy: idle ``idle`` days first, and/or
    file a relax-criteria amendment on day 0."""

    def __init__(self, base, idle: int = 0, relax: bool = False):
        self.base, self.idle, self.relax = base, idle, relax

    def reset(self, seed=None) -> None:
        self.base.reset(seed)
        self._relaxed = False

    def act(self, obs):
        if self.relax and not self._relaxed:
            self._relaxed = True
            return Action(ActionType.ADJUST_STRATEGY, strategy_change="relax_criteria")
        if obs.timestamp < self.idle:
            return Action(ActionType.PLAN_NEXT_PHASE, target_phase="screening", plan_summary="idle")
        return self.base.act(obs)


class DistrustTopSite(HeuristicAgent):
    """The heuristic, never allocating to the site that reports the best conversion
    while another site is open (the version-1 trick that found the biased site)."""

    def pick_site(self, obs, patient):
        top = max(range(len(obs.sites)), key=lambda s: obs.sites[s].reported_conversion)
        s = super().pick_site(obs, patient)
        if s != top:
            return s
        others = [k for k, site in enumerate(obs.sites) if k != top and is_open(site)]
        return max(others, key=lambda k: obs.sites[k].reported_conversion) if others else s


def _policy(name: str, env):
    ctx = AgentContext.of(env)
    planner = lambda: ReferencePlanner(ctx, world=lambda: env.world)
    policies = {
        "heuristic": lambda: make_agent("heuristic", ctx),
        "planner": planner,
        "heuristic+idle20": lambda: Trick(make_agent("heuristic", ctx), idle=20),
        "heuristic+idle40": lambda: Trick(make_agent("heuristic", ctx), idle=40),
        "heuristic+relax0": lambda: Trick(make_agent("heuristic", ctx), relax=True),
        "heuristic+distrust": lambda: DistrustTopSite(ctx),
        "planner+idle20": lambda: Trick(planner(), idle=20),
        "planner+idle40": lambda: Trick(planner(), idle=40),
        "planner+relax0": lambda: Trick(planner(), relax=True),
    }
    return policies[name]()


@functools.cache
def _play(task: str, name: str, worlds: tuple[int, ...]) -> tuple[np.ndarray, tuple[dict, ...]]:
    """Scores and final score parts of one policy on ``worlds`` (cached across tests)."""
    env = make(f"recruitment/{task}")
    agent = _policy(name, env)
    scores, parts = [], []
    for w in worlds:
        result = play_episode(env, agent, w, agent_seed=w + 1)
        scores.append(result.score)
        parts.append(
            {
                **env.score_parts(),
                "site_successes": tuple(env._cum_succ),
                "activation_day": env.world.activation_day.copy(),
            }
        )
    return np.array(scores), tuple(parts)


def _gain(task: str, trick: str, base: str, worlds: tuple[int, ...]) -> tuple[float, float]:
    d = _play(task, trick, worlds)[0] - _play(task, base, worlds)[0]
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size))


@pytest.mark.parametrize("task", TASK_NAMES)
@pytest.mark.parametrize("trick", ["heuristic+idle20", "heuristic+idle40", "heuristic+relax0"])
def test_no_trick_beats_the_heuristic(task, trick):
    """Idling (dropouts now count through follow-up) and relaxing at once (an amendment
    with a fee and an approval delay) gain nothing over the heuristic."""
    mean, se = _gain(task, trick, "heuristic", HEURISTIC_WORLDS)
    assert mean <= 2 * se, f"{trick} beats the heuristic on {task} by {mean:+.4f} +- {se:.4f}"


@pytest.mark.parametrize("task", TASK_NAMES)
@pytest.mark.parametrize(
    "trick",
    ["planner+idle20", "planner+idle40", "planner+relax0", "heuristic+distrust", "heuristic"],
)
def test_the_planner_is_an_upper_bound_under_the_documented_tricks(task, trick):
    mean, se = _gain(task, trick, "planner", PLANNER_WORLDS)
    assert mean <= 2 * se, f"{trick} beats the planner on {task} by {mean:+.4f} +- {se:.4f}"


@pytest.mark.parametrize("task", ["medium_bench", "hard_bench"])
def test_the_top_reported_site_is_biased_at_chance(task):
    """Reports are drawn alike for biased and honest sites: over 2,000 site-bias worlds
    the best-reporting site is the biased one about as often as any site is."""
    params = TASKS[task]
    hits = worlds = 0
    seed = 0
    while worlds < 2_000:
        rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[0])
        seed += 1
        w = draw_world(params, rng)
        if not w.biased.any():
            continue
        worlds += 1
        hits += bool(w.biased[int(np.argmax(w.reported_conversion))])
    share = hits / worlds
    # With reports independent of bias, P(top is biased) = E[number biased] / n_sites.
    expected = (
        float(np.mean(range(params.biased_sites[0], params.biased_sites[1] + 1))) / params.n_sites
    )
    assert share <= 1 / params.n_sites + 0.1
    assert abs(share - expected) < 4 * np.sqrt(expected * (1 - expected) / worlds)


def test_hard_is_hard_but_alive():
    """The planner reaches hard's target in at least a quarter of the worlds; the
    heuristic's T and B terms move; its normalised mean stays below 0.9."""
    planner = _play("hard_bench", "planner", PLANNER_WORLDS)[1]
    assert np.mean([p["enrolment"] >= 1.0 for p in planner]) >= 0.25
    scores, parts = _play("hard_bench", "heuristic", HEURISTIC_WORLDS)
    assert np.mean([p["time"] for p in parts]) > 0.0
    assert np.mean([p["budget"] * (p["enrolment"] >= 1.0) for p in parts]) > 0.0
    assert REFERENCE_VERSION == TASK_VERSION
    ref = REFERENCE_SCORES["hard_bench"]
    normalised = (scores.mean() - ref["random"]) / (ref["reference_planner"] - ref["random"])
    assert normalised < 0.9


@pytest.mark.parametrize("task", TASK_NAMES)
def test_per_site_monthly_enrolment_is_in_the_published_band(task):
    """Mean enrolments per site per month of activity, heuristic over 100 worlds, lie in
    0.5-3 (UK HTA trials: median about 0.9 per centre per month; Walters et al. 2017)."""
    horizon = TASKS[task].horizon
    rates = [
        np.mean(np.array(p["site_successes"]) / ((horizon - p["activation_day"]) / 30.0))
        for p in _play(task, "heuristic", HEURISTIC_WORLDS)[1]
    ]
    assert 0.5 <= float(np.mean(rates)) <= 3.0


@pytest.mark.parametrize("task", TASK_NAMES)
def test_sites_differ_as_in_anisimov_fedorov(task):
    """Gamma site rates with the task's CV, staggered openings from day 0, and about the
    task's share of sites that never enrol."""
    p = TASKS[task]
    rates, opens = [], []
    for seed in range(400):
        w = draw_world(p, np.random.default_rng(seed))
        rates.append(w.arrival_rate)
        opens.append(w.activation_day)
        assert w.activation_day.min() == 0 and w.activation_day.max() <= p.activation_span
        for k, (times, idx) in enumerate(w.site_arrivals):
            assert (w.home_site[idx] == k).all() and np.all(np.diff(times) >= 0)
            if w.arrival_rate[k] == 0:
                assert idx.size == 0
    rates = np.concatenate(rates)
    zero = rates == 0
    assert abs(zero.mean() - p.never_enrol_prob) < 0.05
    positive = rates[~zero]
    assert positive.mean() == pytest.approx(p.site_rate_mean, rel=0.1)
    assert positive.std() / positive.mean() == pytest.approx(p.site_rate_cv, rel=0.15)


def test_the_environment_package_imports_no_agent():
    """``clinbench.env`` and all its modules load without ``clinbench.agents`` or the
    reference computation (the planner is handed the hidden world from outside); the
    stored reference scores are plain data and may load."""
    import pkgutil
    import subprocess
    import sys

    import clinbench.env

    modules = [m.name for m in pkgutil.walk_packages(clinbench.env.__path__, "clinbench.env.")]
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m.startswith('clinbench.agents') or (\n"
        "    m.startswith('clinbench.references.') and not m.endswith('_scores')))\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_an_observation_cannot_be_made_to_alter_the_world():
    env = make("recruitment/medium_bench")
    obs, _ = env.reset(seed=3)
    before = env.world.reported_conversion.copy()
    for a in (obs.visible.reported_conversion, obs.visible.prescreen_eligibility, obs.patients):
        assert not a.flags.writeable
        a.flags.writeable = True  # allowed on a copy: it is not the world's array
        a[...] = 0
    assert (env.world.reported_conversion == before).all()
    assert env.world.prescreen_eligibility.any()
