"""The native environment checker: every registered task passes, broken envs are caught."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from clinbench.env import env_ids, make
from clinbench.env.checker import check_env, observation_fields
from clinbench.env.recruitment import TASKS, Observation, RecruitmentEnv
from clinbench.env.recruitment.macro import RecruitmentMacros


@pytest.mark.parametrize("env_id", env_ids())
def test_every_registered_env_passes(env_id):
    check_env(make(env_id))


def test_field_list_matches_the_spec_section_2_names():
    fields = observation_fields(make("recruitment/easy_bench"))
    assert len(fields) == len(set(fields)) == 24
    assert {"timestamp", "token_usage_so_far", "recontact_candidates"} <= set(fields)


# ---------------------------------------------------------------------- broken envs
@dataclasses.dataclass(frozen=True, eq=False)
class NumpyLeakObs(Observation):
    """``to_dict`` leaks a numpy integer, which ``json`` cannot encode."""

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["enrolled_so_far"] = np.int64(self.enrolled_so_far)
        return d


@dataclasses.dataclass(frozen=True, eq=False)
class MissingFieldObs(Observation):
    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        del d["recent_events"]
        return d


class MutableObs:
    """A plain proxy: reads through to the real observation, but accepts assignments."""

    def __init__(self, obs: Observation):
        self.obs = obs

    def __getattr__(self, name: str) -> Any:
        return getattr(self.obs, name)

    def to_dict(self) -> dict[str, Any]:
        return self.obs.to_dict()


def _rebuild(cls: type, obs: Observation) -> Observation:
    return cls(**{f.name: getattr(obs, f.name) for f in dataclasses.fields(obs)})


class ObsWrappingEnv(RecruitmentEnv):
    """Returns every observation through ``wrap``."""

    def __init__(self, wrap):
        super().__init__(TASKS["easy_bench"])
        self.wrap = wrap

    def reset(self, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        return self.wrap(obs), info

    def step(self, action):
        obs, *rest = super().step(action)
        return (self.wrap(obs), *rest)


class RewardOffOnceEnv(RecruitmentEnv):
    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward + (0.1 if obs.timestamp == 10 else 0.0), terminated, truncated, info


class TruncatingEnv(RecruitmentEnv):
    def step(self, action):
        obs, reward, terminated, _, info = super().step(action)
        return obs, reward, terminated, terminated, info


class EndlessEnv(RecruitmentEnv):
    """Answers a step after the end with the last result instead of raising."""

    last = None

    def reset(self, seed=None, options=None):
        self.last = None
        return super().reset(seed=seed, options=options)

    def step(self, action):
        if self.last is not None and self.last[2]:
            return self.last
        self.last = super().step(action)
        return self.last


class IntRewardEnv(RecruitmentEnv):
    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, int(reward > 0), terminated, truncated, info


class NondeterministicEnv(RecruitmentEnv):
    """Every reset draws a new world, whatever the seed."""

    resets = 0

    def reset(self, seed=None, options=None):
        self.resets += 1
        return super().reset(seed=(seed or 0) + self.resets, options=options)


class AllValidMacros(RecruitmentMacros):
    def mask(self, obs):
        return np.ones(self.n, dtype=bool)


class UnclippedMacros(RecruitmentMacros):
    def features(self, obs):
        f = super().features(obs)
        f[0] = obs.timestamp  # day, not day fraction
        return f


def _easy(cls=RecruitmentEnv, macros=None):
    env = cls(TASKS["easy_bench"])
    if macros is not None:
        env.macro_space = macros(env.params)
    return env


BROKEN = {
    "reward off by 0.1 once": (lambda: _easy(RewardOffOnceEnv), "return .* differs"),
    "obs not JSON": (lambda: ObsWrappingEnv(lambda o: _rebuild(NumpyLeakObs, o)), "JSON"),
    "obs mutable": (lambda: ObsWrappingEnv(MutableObs), "mutable"),
    "field missing": (
        lambda: ObsWrappingEnv(lambda o: _rebuild(MissingFieldObs, o)),
        "recent_events",
    ),
    "truncated used": (lambda: _easy(TruncatingEnv), "truncated"),
    "no error after the end": (lambda: _easy(EndlessEnv), "finished episode"),
    "int reward": (lambda: _easy(IntRewardEnv), "finite float"),
    "nondeterministic": (lambda: _easy(NondeterministicEnv), "not deterministic"),
    "mask marks invalid macros": (lambda: _easy(macros=AllValidMacros), "marked valid"),
    "features out of range": (lambda: _easy(macros=UnclippedMacros), "day_fraction"),
}


@pytest.mark.parametrize("factory, message", BROKEN.values(), ids=BROKEN.keys())
def test_catches_a_broken_env(factory, message):
    with pytest.raises(AssertionError, match=message):
        check_env(factory(), seeds=(0,), n_random_episodes=1)


def test_wrappers_alone_do_not_trip_the_checker():
    """The broken-env fixtures differ from a sound env only in their defect."""
    check_env(ObsWrappingEnv(lambda o: o), seeds=(0,), n_random_episodes=1)
    check_env(ObsWrappingEnv(lambda o: _rebuild(Observation, o)), seeds=(0,), n_random_episodes=1)


def test_needs_a_seed_and_an_episode():
    with pytest.raises(ValueError):
        check_env(make("recruitment/easy_bench"), seeds=())
    with pytest.raises(ValueError):
        check_env(make("recruitment/easy_bench"), n_random_episodes=0)
