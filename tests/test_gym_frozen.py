"""Frozen trajectories: refactors and optimisations of the adapter and macro space change nothing.

The digests below were frozen from the task-version-2 code; a change to these digests means a
change to the task, which needs a version bump. They were produced by ``trajectory_digest``
(this module) on the working tree over commit 8d1623c with the move to
``TASK_VERSION = 2`` (sites opening over time, home sites, follow-up completions,
protocol amendments), and for trial_design from its first version: ``python
tests/test_gym_frozen.py`` prints them. Each is the sha256 of 400 steps of seeded random
valid play (the last, ending macro excluded while another is valid; worlds of seeds 0, 1, ...):
the float64 features and bool mask of every observation, every concrete action, reward,
flags, error, outcome and final score. The features are hashed as raw float64 bytes, so
one feature value off by one ulp changes the digest (checked below). Re-freeze only
together with a task version bump. The digests are those of numpy's pinned ``X86_V3``
dispatch (clinbench/numerics.py), which every x86-64 CPU with AVX2 and FMA runs: the
trial_design ones were re-frozen when the pin came in, since numpy's AVX-512 ``exp`` and
``log`` round the dose-finding observation differently (the task itself did not change),
and again for the type-I error remedies (the final analysis spends alpha on the information
reached; a crossing needs the stratified exact test too), which change trial_design's
boundaries and claims: trial_design task version 2.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from clinbench.env import env_ids, make, spec

#: The task version of each family the digests were frozen for.
FROZEN_VERSION = {"recruitment": 2, "trial_design": 2, "portfolio": 1}
#: Digests of the current task versions' code, per task.
FROZEN = {
    "recruitment/easy_bench": "5520d10c53bbe533d260988911376b82e33d675e1c00773ca22b940bd3e795dd",
    "recruitment/medium_bench": "e2da98d1006e4f90666dabf3f8823e2712a1f0d6e0354539265b239431064bf4",
    "recruitment/hard_bench": "0bcb4d797f0a5662569d5206516b61e0e66cf50a3e527c64d449df3adec1921d",
    "trial_design/effective_drug": (
        "dd98c3d563b17aae19028a9938252f18037ce85b473c3816f460349b26846644"
    ),
    "trial_design/efficacy_safety": (
        "f65ceb8e0a00d6db686e33cbf0c6e94eab3b2ed89714261d8d981db0599a4b79"
    ),
    "trial_design/rare_disease": (
        "3612d416adb3013ebeb3958eedac5ad8d0a3cc8401652214c245b8887036ff96"
    ),
    "portfolio/develop": "6cdfe9c204fbdc9cc5eaab65e98ba739c82127cf7ba2818dd86747351e1e6222",
    "portfolio/develop_post_cutoff": (
        "85ea689561f780462892c9471f76e3a1e7be36c6314ff0a7896816eaf41c2955"
    ),
}
STEPS = 400


def trajectory_digest(env_id: str, steps: int = STEPS) -> str:
    """sha256 of features, masks, actions, rewards and info over random valid play."""
    env = make(env_id)
    macros = env.macro_space
    h = hashlib.sha256()
    rng = np.random.default_rng(12345)
    seed, done, obs = 0, True, None
    for _ in range(steps):
        if done:
            obs, info = env.reset(seed=seed)
            seed += 1
        feats = macros.features(obs)
        mask = macros.mask(obs)
        assert feats.dtype == np.float64 and mask.dtype == np.bool_
        h.update(feats.tobytes())
        h.update(mask.tobytes())
        # never the last, ending macro while another is valid: play to the deadline
        valid = np.flatnonzero(mask[:-1]) if mask[:-1].any() else np.flatnonzero(mask)
        k = int(valid[rng.integers(valid.size)])
        action = macros.to_action(k, obs)
        h.update(repr(action).encode())
        obs, reward, done, truncated, info = env.step(action)
        h.update(np.float64(reward).tobytes())
        h.update(repr((done, truncated, info.get("error"), info.get("outcome"))).encode())
        h.update(repr(info.get("score")).encode())
    return h.hexdigest()


@pytest.mark.parametrize("env_id", env_ids())
def test_trajectories_match_the_frozen_digest(env_id):
    version, frozen = spec(env_id).version, FROZEN_VERSION[spec(env_id).env]
    assert version == frozen, (
        f"{env_id} is task version {version}, the digests are of version {frozen}:"
        " re-freeze them (python tests/test_gym_frozen.py) with the version bump"
    )
    assert env_id in FROZEN, f"no frozen digest for {env_id}"
    assert trajectory_digest(env_id) == FROZEN[env_id]


@pytest.mark.parametrize("env_id", env_ids())
def test_one_feature_value_off_by_one_ulp_changes_the_digest(env_id, monkeypatch):
    macros_type = type(make(env_id).macro_space)
    features = macros_type.features
    calls = [0]

    def nudged(self, obs, *args, **kwargs):
        out = features(self, obs, *args, **kwargs)
        calls[0] += 1
        if calls[0] == STEPS // 2:  # one value, once, mid-trajectory
            out[0] = np.nextafter(out[0], np.inf)
        return out

    monkeypatch.setattr(macros_type, "features", nudged)
    assert trajectory_digest(env_id) != FROZEN[env_id]
    assert calls[0] == STEPS


def test_the_simulator_sets_exactly_the_observation_fields():
    from dataclasses import fields

    from clinbench.env.recruitment.observation import Observation

    env = make("recruitment/hard_bench")
    obs, _ = env.reset(seed=0)
    names = {f.name for f in fields(Observation)}
    assert set(obs.__dict__) == names
    obs = env.step(env.macro_space.to_action(0, obs))[0]
    assert set(obs.__dict__) == names


if __name__ == "__main__":  # print the digests of the current code (to re-freeze them)
    from clinbench.numerics import NUMPY_OFF, PINNED_NUMPY, numpy_simd

    # numpy was imported above, before clinbench could pin its dispatch: say how to pin it.
    if numpy_simd() != PINNED_NUMPY:
        raise SystemExit(
            f"numpy dispatches to {numpy_simd()}, the digests are of {PINNED_NUMPY}: run "
            f"NPY_DISABLE_CPU_FEATURES='{NUMPY_OFF}' python tests/test_gym_frozen.py"
        )
    for env_id in env_ids():
        print(f"    {env_id!r}: {trajectory_digest(env_id)!r},")
