"""The Gymnasium adapter: registration, Gymnasium's own checker, masks, score and pickling."""

from __future__ import annotations

import dataclasses
import importlib
import os
import pickle
import platform
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import clinbench
import clinbench.env
import clinbench.numerics
from clinbench.env import env_ids, make, register_gym_envs, spec
from clinbench.env.gym_adapter import ENTRY_POINT, MacroGymEnv, gym_id

GYM_IDS = register_gym_envs()
# Ids come from the task specs (their version included), so a version bump needs no edit.
EASY = gym_id("recruitment/easy_bench")
MEDIUM = gym_id("recruitment/medium_bench")
HARD = gym_id("recruitment/hard_bench")


def _no_stop(mask: np.ndarray) -> np.ndarray:
    """The mask without the last, ending macro (``stop``, ``stop_futility``), so random
    play runs long; unchanged when that is the only valid one."""
    out = mask.copy()
    out[-1] = 0
    return out if out.any() else mask


def _greedy(mask: np.ndarray, names: tuple[str, ...]) -> int:
    """A simple funnel policy: allocate, else recontact, else screen, else plan."""
    for name in ("allocate_urgent", "recontact_urgent", "screen_best", "plan"):
        if mask[names.index(name)]:
            return names.index(name)
    raise AssertionError("plan is always valid")


def test_registers_one_id_per_task_without_time_limit():
    tasks = ("easy_bench", "medium_bench", "hard_bench")
    assert {f"recruitment/{t}" for t in tasks} <= set(env_ids())
    assert GYM_IDS == [gym_id(e) for e in env_ids()]
    assert len(set(GYM_IDS)) == len(GYM_IDS)
    for gid, env_id in zip(GYM_IDS, env_ids(), strict=True):
        native = spec(env_id)
        family = native.env.title().replace("_", "")
        assert gid == f"clinbench/{family}-{native.task}-v{native.version}"
        gspec = gym.spec(gid)
        assert gspec.entry_point == ENTRY_POINT
        assert gspec.kwargs == {"env_id": env_id}
        assert gspec.max_episode_steps is None
        assert gspec.version == native.version
        # only the current version of a task is registered (older ids are gone)
        same_name = [
            i
            for i, s in gym.registry.items()
            if (s.namespace, s.name) == (gspec.namespace, gspec.name)
        ]
        assert same_name == [gid]


def test_registration_is_idempotent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert register_gym_envs() == GYM_IDS
        importlib.reload(clinbench.env)


@pytest.mark.parametrize("gid", GYM_IDS)
def test_gymnasium_check_env_passes_without_warnings(gid):
    env = gym.make(gid)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)
    # On the wrapped env the only warning is Gymnasium's advice to check the raw env.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    messages = [str(w.message) for w in caught]
    assert all("different from the unwrapped version" in m for m in messages), messages


@pytest.mark.parametrize("gid", GYM_IDS)
def test_spaces_masks_and_rewards_match_the_native_env(gid):
    env = gym.make(gid)
    native = make(gym.spec(gid).kwargs["env_id"])
    macros = native.macro_space
    assert env.observation_space == gym.spaces.Box(0, 1, (macros.n_features,), np.float32)
    assert env.action_space == gym.spaces.Discrete(macros.n)
    if native.spec.env == "recruitment":
        # Sizes follow the task's sites: 18 head features and 6 per site; 3 funnel macros,
        # 3 global strategies, focus and negotiate per site, plan/summarize/retrieve/stop.
        n_sites = native.params.n_sites
        assert macros.n_features == 18 + 6 * n_sites
        assert macros.n == 10 + 2 * n_sites
    elif native.spec.env == "trial_design":
        # 5 trial features and 8 per dose arm, 2 of control; 10 macros
        assert (macros.n_features, macros.n) == (31, 10)
    else:  # portfolio: 6 program features and 8 per candidate indication; 7 macros
        assert (macros.n_features, macros.n) == (6 + 8 * native.params.n_indications, 7)

    env.action_space.seed(7)
    feats, info = env.reset(seed=11)
    obs, native_info = native.reset(seed=11)
    terminated = False
    while not terminated:
        assert info["action_mask"].dtype == np.int8
        np.testing.assert_array_equal(info["action_mask"], macros.mask(obs).astype(np.int8))
        np.testing.assert_array_equal(feats, macros.features(obs).astype(np.float32))
        assert info["error"] == native_info["error"]
        k = int(env.action_space.sample(mask=_no_stop(info["action_mask"])))
        feats, reward, terminated, truncated, info = env.step(k)
        obs, native_reward, _, _, native_info = native.step(macros.to_action(k, obs))
        assert info["error"] is None, (macros.names[k], info["error"])  # unmasked: accepted
        assert reward == native_reward
        assert truncated is False
    assert info["score"] == native_info["score"]
    assert info["score_parts"] == native_info["score_parts"]


def test_return_over_an_episode_equals_the_score():
    env = gym.make(MEDIUM)
    names = env.unwrapped.macro_space.names
    _, info = env.reset(seed=3)
    total, terminated, steps = 0.0, False, 0
    while not terminated:
        _, reward, terminated, truncated, info = env.step(_greedy(info["action_mask"], names))
        assert not truncated
        total += reward
        steps += 1
    assert steps == 180  # no stop played: the deadline ends the episode, no TimeLimit
    assert info["score"] > 0.0  # the funnel policy enrols, so the check has teeth
    assert abs(total - info["score"]) <= 1e-9
    with pytest.raises(RuntimeError):
        env.step(0)


def test_a_masked_out_macro_is_played_as_an_invalid_action():
    env = gym.make(EASY)
    macros = env.unwrapped.macro_space
    budget = macros.feature_names.index("budget_fraction")
    feats, info = env.reset(seed=0)
    k = macros.names.index("retrieve")
    assert info["action_mask"][k] == 0  # memory is empty on day 0
    after, reward, terminated, _, info = env.step(k)
    assert info["error"] == "missing_memory_query"
    assert reward == 0.0 and not terminated
    assert after[budget] == feats[budget] == 1.0  # nothing was charged
    assert env.unwrapped.native.day == 1  # but the day was spent


def test_amendment_masks_follow_the_amendment_rules():
    """relax/tighten are protocol amendments: a fee, one under review at a time, a delay
    before the criteria change and at most ``max_amendments`` per episode."""
    env = gym.make(EASY).unwrapped
    macros, params = env.macro_space, env.native.params
    relax, tighten = macros.names.index("relax_criteria"), macros.names.index("tighten_criteria")
    plan = macros.names.index("plan")
    level = macros.feature_names.index("criteria_level")
    budget = macros.feature_names.index("budget_fraction")
    fee = params.strategy_cost * params.amendment_cost_multiplier
    lo, hi = params.amendment_delay
    assert params.max_amendments >= 2
    feats, info = env.reset(seed=4)
    assert feats[level] == 0.5 and info["action_mask"][[relax, tighten]].tolist() == [1, 1]
    # relax, then tighten back, ... until no amendment is left
    for n in range(params.max_amendments):
        k, other = (relax, tighten) if n % 2 == 0 else (tighten, relax)
        before = feats
        feats, _, _, _, info = env.step(k)
        assert info["error"] is None
        assert before[budget] - feats[budget] == pytest.approx(fee / params.budget, abs=1e-6)
        assert feats[level] == before[level]  # not in force before approval
        days = 1
        while feats[level] == before[level]:
            # under review: neither amendment may be filed; a masked one played is refused
            assert info["action_mask"][[relax, tighten]].tolist() == [0, 0]
            if days == 1:
                feats, _, _, _, info = env.step(other)
                assert info["error"] == "amendment_pending"
            else:
                feats, _, _, _, info = env.step(plan)
            days += 1
        assert lo <= days <= hi
        assert feats[level] == (1.0 if k == relax else 0.5)
        left = params.max_amendments - n - 1
        mask = info["action_mask"]
        assert mask[relax] == (left > 0 and feats[level] != 1.0)  # not relaxed twice
        assert mask[tighten] == (left > 0 and feats[level] != 0.0)
    _, _, _, _, info = env.step(relax if feats[level] != 1.0 else tighten)
    assert info["error"] == "amendment_limit_reached"


def test_sites_not_yet_opened_show_as_closed():
    env = gym.make(HARD)
    native = make(gym.spec(HARD).kwargs["env_id"])
    macros, params = native.macro_space, native.params
    names = macros.feature_names
    open_k = [names.index(f"site_{chr(ord('A') + s)}_open") for s in range(params.n_sites)]
    plan = macros.names.index("plan")
    feats, _ = env.reset(seed=1)
    obs, _ = native.reset(seed=1)
    assert any(site.active for site in obs.sites)  # the first site opens on day 0
    late = set()
    for _ in range(params.activation_span + 1):
        for s, site in enumerate(obs.sites):
            if not site.active:
                late.add(s)
                assert feats[open_k[s]] == 0.0
            else:
                free = site.capacity_remaining > 0 and not site.under_audit
                assert feats[open_k[s]] == float(free)
        feats, _, _, _, _ = env.step(plan)
        obs = native.step(macros.to_action(plan, obs))[0]
    assert late and all(site.active for site in obs.sites)
    # a site that opened late, with a free slot and no audit, now shows as open
    assert any(feats[open_k[s]] == 1.0 for s in late)


@pytest.mark.parametrize("wrapped", [False, True], ids=["unwrapped", "gym.make"])
def test_pickle_round_trip_mid_episode(wrapped):
    made = gym.make(HARD)
    env = made if wrapped else made.unwrapped
    env.action_space.seed(5)
    _, info = env.reset(seed=8)
    for _ in range(60):
        _, _, _, _, info = env.step(env.action_space.sample(mask=_no_stop(info["action_mask"])))
    copy = pickle.loads(pickle.dumps(env))
    terminated = False
    while not terminated:
        k = env.action_space.sample(mask=_no_stop(info["action_mask"]))
        feats, reward, terminated, _, info = env.step(k)
        feats2, reward2, terminated2, _, info2 = copy.step(k)
        np.testing.assert_array_equal(feats, feats2)
        assert (reward, terminated) == (reward2, terminated2)
        np.testing.assert_array_equal(info["action_mask"], info2["action_mask"])
        assert (info["error"], info["outcome"]) == (info2["error"], info2["outcome"])
    assert info["score"] == info2["score"]


def test_pickle_before_reset_and_unseeded_resets_follow_the_gym_rng():
    env = gym.make(EASY).unwrapped
    copy = pickle.loads(pickle.dumps(env))
    env.reset(seed=21)
    copy.reset(seed=21)
    a, info_a = env.reset()
    b, info_b = copy.reset()
    np.testing.assert_array_equal(a, b)
    assert env._episode[0] == copy._episode[0] != 21  # the same world, drawn, not seed 21
    assert "seed" not in info_a and "seed" not in info_b  # and its seed is not reported


def test_overrides_reach_the_native_env_and_bad_arguments_are_refused():
    env = gym.make(EASY, budget=50_000.0)
    assert env.unwrapped.native.params.budget == 50_000.0
    env.reset(seed=0)
    with pytest.raises(ValueError, match="not in"):
        env.unwrapped.step(env.action_space.n)
    with pytest.raises(ValueError, match="render"):
        MacroGymEnv("recruitment/easy_bench", render_mode="rgb_array")
    with pytest.raises(RuntimeError, match="reset"):
        MacroGymEnv("recruitment/easy_bench").step(0)


def test_import_clinbench_alone_registers_the_ids_for_gymnasiums_module_form():
    code = (
        "import sys, gymnasium as gym\n"
        f"env = gym.make('clinbench:{EASY}')\n"
        "feats, info = env.reset(seed=0)\n"
        "assert feats.shape == env.observation_space.shape\n"
        "assert 'clinbench.env' in sys.modules\n"
        "import clinbench, clinbench.numerics\n"
        "print(len([i for i in gym.registry if i.startswith('clinbench/')]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(clinbench.__file__).parents[1]), env.get("PYTHONPATH", "")]
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert int(out.stdout.strip()) == len(env_ids())


def test_import_clinbench_still_pins_the_blas_kernel_before_numpy_loads():
    # pin_blas_kernel() does nothing once numpy is loaded, so the variable shows the order.
    code = "import os, clinbench\nprint(os.environ.get('OPENBLAS_CORETYPE'))\n"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    env["PYTHONPATH"] = str(Path(clinbench.__file__).parents[1])
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    if platform.machine().lower() in ("x86_64", "amd64") and clinbench.numerics._cpu_has_avx2_fma():
        assert out.stdout.strip() == clinbench.numerics.PINNED_KERNEL


def _play(env, seed: int, steps: int) -> list:
    rng = np.random.default_rng(seed)
    feats, info = env.reset(seed=seed)
    out = [feats]
    for _ in range(steps):
        k = int(rng.choice(np.flatnonzero(_no_stop(info["action_mask"]))))
        feats, reward, terminated, _, info = env.step(k)
        out += [feats, reward, info["action_mask"], info["error"]]
        if terminated:
            break
    return out


def _same(a: list, b: list) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
        else:
            assert x == y


def test_wrap_puts_the_adapter_around_an_existing_native_env():
    native = make("recruitment/hard_bench", budget=60_000.0)
    env = MacroGymEnv.wrap(native)
    assert env.native is native
    assert env.env_id == "recruitment/hard_bench"
    assert env.overrides == {"budget": 60_000.0}
    assert env.observation_space.shape == (native.macro_space.n_features,)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    made = MacroGymEnv("recruitment/hard_bench", budget=60_000.0)
    _same(_play(env, 4, 80), _play(made, 4, 80))
    # the world of seed s is the native world of seed s
    feats, _ = env.reset(seed=9)
    obs, _ = make("recruitment/hard_bench", budget=60_000.0).reset(seed=9)
    np.testing.assert_array_equal(feats, native.macro_space.features(obs).astype(np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(MacroGymEnv.wrap(make("recruitment/easy_bench")))


def test_a_wrapped_adapter_pickles_by_rebuilding_from_the_task_and_its_params():
    env = MacroGymEnv.wrap(make("recruitment/medium_bench", budget=70_000.0, target=20))
    rng = np.random.default_rng(1)
    _, info = env.reset(seed=2)
    for _ in range(30):
        _, _, _, _, info = env.step(int(rng.choice(np.flatnonzero(_no_stop(info["action_mask"])))))
    copy = pickle.loads(pickle.dumps(env))
    assert copy.native is not env.native
    assert copy.native.spec.params == env.native.spec.params
    for _ in range(40):
        k = int(rng.choice(np.flatnonzero(_no_stop(info["action_mask"]))))
        a, b = env.step(k), copy.step(k)
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1:4] == b[1:4]
        info = a[4]


def test_wrap_refuses_a_native_env_make_cannot_rebuild():
    native = make("recruitment/easy_bench")
    native.spec = dataclasses.replace(native.spec, params=object())
    with pytest.raises(TypeError, match="cannot wrap"):
        MacroGymEnv.wrap(native)
