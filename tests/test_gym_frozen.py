"""Frozen trajectories: optimisations of the adapter and the macro space change nothing.

The digests below were computed with the code *before* the speed work (features, mask,
``to_action`` and the native step as committed in 1777955). The committed results depend
on these values, so any change to them is a change of the benchmark, not a speed-up.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from clinbench.env import env_ids, make

#: Pre-optimisation digests (code of commit 1777955), per task.
FROZEN = {
    "recruitment/easy_bench": "0d5643c87278d353be6b8bceb4999edafb0c2ddcfd32f057b3c63c20abec86ca",
    "recruitment/medium_bench": "3c8ea2b0a202e479cc48d78af730ace9592ab0ee8d35ffd20ebabd5e51154d8e",
    "recruitment/hard_bench": "43be9f597a82065ba5bcdd2278c0c7eb2bdcb1dd08f5fdbfa05ee79c10ebc8d4",
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
        valid = np.flatnonzero(mask[:-1])  # never stop: play to the deadline
        k = int(valid[rng.integers(valid.size)])
        action = macros.to_action(k, obs)
        h.update(repr(action).encode())
        obs, reward, done, truncated, info = env.step(action)
        h.update(np.float64(reward).tobytes())
        h.update(repr((done, truncated, info.get("error"), info.get("outcome"))).encode())
        h.update(repr(info.get("score")).encode())
    return h.hexdigest()


@pytest.mark.parametrize("env_id", env_ids())
def test_trajectories_match_the_pre_optimisation_digest(env_id):
    assert trajectory_digest(env_id) == FROZEN[env_id]


def test_the_simulator_sets_exactly_the_observation_fields():
    from dataclasses import fields

    from clinbench.env.recruitment.observation import Observation

    env = make("recruitment/hard_bench")
    obs, _ = env.reset(seed=0)
    names = {f.name for f in fields(Observation)}
    assert set(obs.__dict__) == names
    obs = env.step(env.macro_space.to_action(0, obs))[0]
    assert set(obs.__dict__) == names
