"""The batched VectorEnv: the same trajectories as N adapters and as SyncVectorEnv."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import clinbench  # noqa: F401  (registers the ids)
from clinbench.env.gym_adapter import VECTOR_ENTRY_POINT, MacroGymEnv, gym_id, register_gym_envs
from clinbench.env.gym_vector import MacroVectorEnv

GYM_IDS = register_gym_envs()
HARD = gym_id("recruitment/hard_bench")  # from the task spec, version included
# Short episodes so every sub-env autoresets several times; the sites still open on
# staggered days (activation_span may not exceed the horizon).
SHORT = {"horizon": 20, "activation_span": 10}
N = 3
MODES = [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP]


def _actions(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """A random valid macro per sub-env (``stop`` included: episodes end at varied times)."""
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks], dtype=np.int64)


def _vec(gid: str, mode: AutoresetMode, n: int = N, **kw) -> MacroVectorEnv:
    return gym.make_vec(
        gid, num_envs=n, vectorization_mode="vector_entry_point", autoreset_mode=mode, **kw
    )


def _sync(gid: str, mode: AutoresetMode, n: int = N, **kw) -> SyncVectorEnv:
    return gym.make_vec(
        gid, num_envs=n, vectorization_mode="sync", vector_kwargs={"autoreset_mode": mode}, **kw
    )


def _check_sub_info(vinfo: dict, i: int, single: dict) -> None:
    """``single`` is exactly what the vector info holds for sub-env ``i``."""
    present = {k for k in vinfo if not k.startswith("_") and vinfo[f"_{k}"][i]}
    present -= {"final_obs", "final_info"}  # checked against the step before the reset
    assert present == set(single), (present, set(single))
    for key, value in single.items():
        got = vinfo[key]
        if isinstance(value, dict):
            _check_sub_info(got, i, value)
        elif isinstance(value, np.ndarray):
            assert got.dtype == value.dtype, key
            np.testing.assert_array_equal(got[i], value)
        else:
            assert got[i] == value, (key, got[i], value)


def test_every_id_has_a_vector_entry_point():
    for gid in GYM_IDS:
        assert gym.spec(gid).vector_entry_point == VECTOR_ENTRY_POINT
        envs = gym.make_vec(gid, num_envs=2, vectorization_mode="vector_entry_point")
        assert isinstance(envs, MacroVectorEnv)
        assert envs.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
        single = gym.make(gid)
        assert envs.single_observation_space == single.observation_space
        assert envs.single_action_space == single.action_space
        assert envs.observation_space == gym.vector.utils.batch_space(single.observation_space, 2)
        obs, info = envs.reset(seed=0)
        assert obs in envs.observation_space
        assert info["action_mask"].shape == (2, single.action_space.n)
        assert info["action_mask"].dtype == np.int8


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_each_sub_env_plays_like_an_independent_seeded_adapter(mode):
    envs = _vec(HARD, mode, **SHORT)
    assert envs.metadata["autoreset_mode"] is mode
    singles = [MacroGymEnv("recruitment/hard_bench", **SHORT) for _ in range(N)]
    rng = np.random.default_rng(3)
    obs, info = envs.reset(seed=40)
    for i, env in enumerate(singles):
        o, inf = env.reset(seed=40 + i)
        np.testing.assert_array_equal(obs[i], o)
        _check_sub_info(info, i, inf)
    pending = [False] * N  # NEXT_STEP: the sub-env resets on its next step
    episodes = [0] * N
    for _ in range(70):
        actions = _actions(rng, info["action_mask"])
        obs, rewards, terms, truncs, info = envs.step(actions)
        assert obs.dtype == np.float32 and rewards.dtype == np.float64
        assert not truncs.any()
        for i, env in enumerate(singles):
            if pending[i]:
                o, inf = env.reset()
                r, t = 0.0, False
                pending[i] = False
            else:
                o, r, t, _, inf = env.step(int(actions[i]))
                if t:
                    episodes[i] += 1
                    if mode is AutoresetMode.SAME_STEP:
                        assert info["_final_obs"][i] and info["_final_info"][i]
                        np.testing.assert_array_equal(info["final_obs"][i], o)
                        _check_sub_info(info["final_info"], i, inf)
                        o, inf = env.reset()
                    else:
                        pending[i] = True
            if mode is AutoresetMode.SAME_STEP and not t and "_final_obs" in info:
                assert not info["_final_obs"][i]
            np.testing.assert_array_equal(obs[i], o)
            assert rewards[i] == r and terms[i] == t
            _check_sub_info(info, i, inf)
    assert min(episodes) >= 2  # every sub-env went through autoreset


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_the_same_results_as_sync_vector_env_key_for_key(mode):
    envs, sync = _vec(HARD, mode, **SHORT), _sync(HARD, mode, **SHORT)
    assert envs.metadata["autoreset_mode"] == sync.metadata["autoreset_mode"]
    rng = np.random.default_rng(5)
    out, ref = envs.reset(seed=7), sync.reset(seed=7)
    assert data_equivalence(out, ref, exact=True)
    done = np.zeros(N, dtype=int)
    for step in range(70):
        actions = _actions(rng, out[-1]["action_mask"])
        out, ref = envs.step(actions), sync.step(actions)
        assert data_equivalence(out, ref, exact=True), step
        done += out[2]
        if step == 35:  # unseeded resets draw from each sub-env's own generator
            out, ref = envs.reset(), sync.reset()
            assert data_equivalence(out, ref, exact=True)
    assert done.min() >= 2


def test_same_as_sync_on_full_length_episodes_of_every_task():
    for gid in GYM_IDS:
        envs, sync = _vec(gid, AutoresetMode.NEXT_STEP, 2), _sync(gid, AutoresetMode.NEXT_STEP, 2)
        rng = np.random.default_rng(0)
        out, ref = envs.reset(seed=[3, 11]), sync.reset(seed=[3, 11])
        assert data_equivalence(out, ref, exact=True)
        for _ in range(190):  # past the deadline: final step and autoreset
            masks = out[-1]["action_mask"].copy()
            masks[masks[:, :-1].any(axis=1), -1] = 0  # no ending macro while another is valid
            actions = _actions(rng, masks)
            out, ref = envs.step(actions), sync.step(actions)
            assert data_equivalence(out, ref, exact=True)


def test_reset_mask_and_disabled_autoreset_match_sync():
    mode = AutoresetMode.DISABLED
    envs, sync = _vec(HARD, mode, **SHORT), _sync(HARD, mode, **SHORT)
    rng = np.random.default_rng(2)
    out, ref = envs.reset(seed=1), sync.reset(seed=1)
    resets = 0
    masks = out[1]["action_mask"].copy()
    for _ in range(60):
        actions = _actions(rng, masks)
        out, ref = envs.step(actions), sync.step(actions)
        assert data_equivalence(out, ref, exact=True)
        masks = out[4]["action_mask"].copy()
        done = out[2] | out[3]
        if done.any():
            opts = {"reset_mask": done.copy()}
            r_out, r_ref = envs.reset(options=dict(opts)), sync.reset(options=dict(opts))
            assert data_equivalence(r_out, r_ref, exact=True)
            masks[done] = r_out[1]["action_mask"][done]
            resets += 1
    assert resets >= 2


def test_bad_calls_are_refused():
    envs = _vec(HARD, AutoresetMode.NEXT_STEP, 2)
    with pytest.raises(RuntimeError, match="reset"):
        envs.step(np.zeros(2, dtype=np.int64))
    envs.reset(seed=0)
    with pytest.raises(ValueError):
        envs.step(np.array([0, envs.single_action_space.n]))
    with pytest.raises(ValueError):
        envs.step(np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError):
        envs.reset(seed=[1, 2, 3])
    envs.close()


# ---------------------------------------------------------------------- the batched core
RECRUITMENT_IDS = [g for g in GYM_IDS if "Recruitment" in g]
#: Task overrides that drive the batched core down its rare paths: full sites and no
#: open site, an empty budget, lapsing consents, a full memory, short follow-up and
#: short strategies (so effects, negotiations and amendments end within the episode).
TIGHT = {
    "n_sites": 2,
    "site_capacity": 1,
    "negotiate_slots": 0,
    "consent_window": 2,
    "history_window": 3,
    "memory_capacity": 2,
    "followup_days": 5,
    "horizon": 50,
    "activation_span": 20,
    "negotiate_delay": 2,
    "focus_days": 3,
    "outreach_days": 2,
    "amendment_delay": (2, 4),
}
#: ... and with a budget that runs out.
POOR = {**TIGHT, "budget": 3_000.0}


def _styled(rng: np.random.Generator, masks: np.ndarray, style: str) -> np.ndarray:
    """Actions of a policy ``style``: ``valid`` (never stop), ``any`` (masked-out indices
    too), ``funnel`` (mostly screen / recontact / allocate), ``memory`` (summarize and
    retrieve)."""
    out = []
    for m in masks:
        n, u = m.size, rng.random()
        if style == "any" and u < 0.3:
            k = rng.integers(n)
        elif style == "funnel" and u < 0.9:
            k = (0, 1, 2)[rng.integers(3)]
        elif style == "memory" and u < 0.6:
            k = n - 3 if u < 0.4 else n - 2
        else:
            valid = np.flatnonzero(m[:-1])
            k = rng.choice(valid) if valid.size else n - 1
        out.append(k)
    return np.array(out, dtype=np.int64)


def _seen(info: dict, seen: set) -> None:
    for key in ("error", "outcome"):
        if key in info:
            seen.update(f"{key}:{v}" for v, p in zip(info[key], info[f"_{key}"]) if p and v)
    seen.update(k for k in info if not k.startswith("_"))


def test_recruitment_ids_use_the_batched_core_and_others_the_adapters():
    from clinbench.env.gym_vector import AdapterCore
    from clinbench.env.recruitment.vector import RecruitmentVectorCore

    for gid in GYM_IDS:
        core = gym.make_vec(gid, num_envs=2, vectorization_mode="vector_entry_point").core
        expected = RecruitmentVectorCore if gid in RECRUITMENT_IDS else AdapterCore
        assert type(core) is expected, gid


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("overrides", [{}, TIGHT, POOR], ids=["task", "tight", "poor"])
@pytest.mark.parametrize("gid", RECRUITMENT_IDS)
def test_batched_core_equals_sync_on_every_path(gid, overrides, mode):
    """Every policy style against SyncVectorEnv over the same id, step by step, and the
    paths the styles must have gone through (so that equality means something)."""
    n = 4
    seen: set = set()
    for s, style in enumerate(("valid", "any", "funnel", "memory")):
        envs, sync = _vec(gid, mode, n, **overrides), _sync(gid, mode, n, **overrides)
        rng = np.random.default_rng(s)
        out, ref = envs.reset(seed=10 * s), sync.reset(seed=10 * s)
        assert data_equivalence(out, ref, exact=True)
        for step in range(200):
            actions = _styled(rng, out[-1]["action_mask"], style)
            out, ref = envs.step(actions), sync.step(actions)
            assert data_equivalence(out, ref, exact=True), (style, step)
            _seen(out[-1], seen)
            if "final_info" in out[-1]:
                _seen(out[-1]["final_info"], seen)
    for path in ("score", "memory_evicted", "outcome:consented", "outcome:eligible"):
        assert path in seen, path
    assert "seed" not in seen  # autoresets are unseeded: no world seed leaves the env
    for path in ("outcome:declined", "error:missing_patient_id"):
        assert path in seen, path
    if overrides is TIGHT:
        assert "error:missing_site_id" in seen
    if overrides is POOR:
        assert "error:insufficient_budget" in seen
    else:
        assert "outcome:relax_criteria" in seen


def test_batched_core_fixed_worlds_and_unseeded_resets_equal_adapters():
    envs = _vec(HARD, AutoresetMode.NEXT_STEP, 3)
    singles = [MacroGymEnv("recruitment/hard_bench") for _ in range(3)]
    rng = np.random.default_rng(4)
    for seed in (5, None, 7):
        options = {"fixed_world": True}
        obs, info = envs.reset(seed=seed, options=options)
        ref = [
            env.reset(seed=None if seed is None else seed + i, options=options)
            for i, env in enumerate(singles)
        ]
        for i, (o, inf) in enumerate(ref):
            np.testing.assert_array_equal(obs[i], o)
            _check_sub_info(info, i, inf)
        for _ in range(40):
            actions = _styled(rng, info["action_mask"], "valid")
            obs, rewards, _, _, info = envs.step(actions)
            for i, env in enumerate(singles):
                o, r, _, _, inf = env.step(int(actions[i]))
                np.testing.assert_array_equal(obs[i], o)
                assert rewards[i] == r
                _check_sub_info(info, i, inf)


def test_the_speed_benchmark_prints_the_figures_the_readme_quotes():
    """``benchmarks/gym_speed.py`` runs and reports the adapter ratio (over processes) and
    the VectorEnv speed-ups of both families (tiny sizes; no timing is asserted)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "gym_speed.py"
    args = ["--episodes", "1", "--processes", "2", "--num-envs", "3", "--vec-steps", "5"]
    out = subprocess.run(
        [sys.executable, str(script), *args, "--rounds", "1", "--json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    results = json.loads(out)["results"]
    adapter = results["adapter"]
    assert adapter["processes"] == 2
    assert adapter["ratio_min"] <= adapter["overhead_ratio"] <= adapter["ratio_max"]
    assert results["vector"]["task"].startswith("recruitment/")
    assert results["vector_dose"]["task"].startswith("trial_design/")
    for key in ("vector", "vector_dose"):
        assert results[key]["num_envs"] == 3 and results[key]["speedup"] > 0
