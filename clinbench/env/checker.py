"""A checker for the native clinbench API, in the spirit of Gymnasium's ``check_env``.

``check_env(env)`` plays a few seeded episodes of uniformly random *valid* macro-actions
and raises ``AssertionError`` on the first broken promise of the interface:

- ``reset`` returns ``(obs, dict)``; every observation is immutable, its ``to_dict()`` is
  strict JSON (no NaN) and holds the family's field names (spec section 2);
- ``step`` returns ``(obs, reward, terminated, truncated, info)`` with a finite float
  reward, bool flags, ``truncated`` False and ``info["error"]`` present;
- a macro-action the mask marks valid is a valid action (``info["error"] is None``);
- features have length ``n_features`` and are finite and within [0, 1];
- the undiscounted return equals ``info["score"]`` at the end, and the score is in [0, 1];
- stepping a finished episode raises ``RuntimeError``;
- the same seed and actions give the same trajectory, also after other episodes ran.

Episode ``j`` of a seed draws its macro-actions from a Generator seeded by
``(seed, j)``. Even-numbered episodes never draw ``stop`` while something else is
valid, so they run to the deadline; odd-numbered ones draw it like any other macro and
so also exercise the early-stop fast-forward.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from clinbench.env.base import Env
from clinbench.env.registry import family

#: Macro-actions that random episodes avoid when they should run to the deadline.
ENDING_MACROS = ("stop",)
#: An episode still running after this many steps is reported as never ending.
MAX_EPISODE_STEPS = 100_000
SCORE_TOL = 1e-9


def check_env(env: Env, seeds: Sequence[int] = (0, 1), n_random_episodes: int = 2) -> None:
    """Raise ``AssertionError`` on the first violation of the native API by ``env``."""
    if not seeds or n_random_episodes < 1:
        raise ValueError("check_env needs at least one seed and one episode per seed")
    fields = observation_fields(env)
    for seed in seeds:
        first = _play(env, seed, 0, fields)
        for j in range(1, n_random_episodes):
            _play(env, seed, j, fields)
        _assert_same(first, _play(env, seed, 0, fields), f"{env.spec.id} seed {seed}")


def observation_fields(env: Env) -> tuple[str, ...]:
    """The field names ``env``'s observations must carry (its family's declaration)."""
    try:
        return family(env.spec.env).observation_fields
    except KeyError:  # an unregistered family promises nothing beyond the interface
        return ()


# ---------------------------------------------------------------------- one episode
def _play(env: Env, seed: int, j: int, fields: tuple[str, ...]) -> tuple[list, list]:
    """Play episode ``j`` of ``seed``; return its observation dicts and rewards."""
    where = f"{env.spec.id} seed {seed} episode {j}"
    macros = env.macro_space
    rng = np.random.default_rng([seed, j])
    avoid = np.isin(macros.names, ENDING_MACROS) if j % 2 == 0 else np.zeros(macros.n, bool)

    result = env.reset(seed=seed)
    _require(
        isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict),
        f"{where}: reset() must return (obs, info dict), got {_kind(result)}",
    )
    obs = result[0]
    dicts = [_check_obs(env, obs, fields, f"{where} reset")]
    rewards: list[float] = []
    total = 0.0
    for t in range(MAX_EPISODE_STEPS):
        at = f"{where} step {t}"
        k = _draw(rng, _mask(env, obs, at), avoid, at)
        action = macros.to_action(k, obs)
        try:
            result = env.step(action)
        except Exception as e:  # a valid action must never raise
            raise AssertionError(f"{at}: step({_show(action)}) raised {e!r}") from e
        obs, reward, terminated, info = _check_step(result, at)
        _require(
            info["error"] is None,
            f"{at}: macro {macros.names[k]!r} was marked valid but its action "
            f"{_show(action)} failed with error {info['error']!r}",
        )
        dicts.append(_check_obs(env, obs, fields, at))
        rewards.append(reward)
        total += reward
        if terminated:
            break
    else:
        raise AssertionError(f"{where}: the episode did not end within {MAX_EPISODE_STEPS} steps")
    _check_end(env, action, total, info, where)
    return dicts, rewards


def _draw(rng: np.random.Generator, mask: np.ndarray, avoid: np.ndarray, at: str) -> int:
    valid = np.flatnonzero(mask & ~avoid)
    if valid.size == 0:
        valid = np.flatnonzero(mask)
    _require(valid.size > 0, f"{at}: the mask marks no macro-action valid")
    return int(valid[rng.integers(valid.size)])


def _check_end(env: Env, action: Any, total: float, info: dict, where: str) -> None:
    """The return equals the score; the finished episode refuses further steps."""
    _require("score" in info, f"{where}: the final info lacks 'score'")
    score = info["score"]
    _require(0.0 <= score <= 1.0, f"{where}: score {score!r} is outside [0, 1]")
    _require(
        abs(total - score) <= SCORE_TOL,
        f"{where}: the undiscounted return {total!r} differs from info['score'] {score!r}",
    )
    try:
        env.step(action)
    except RuntimeError:
        return
    except Exception as e:
        raise AssertionError(
            f"{where}: stepping a finished episode must raise RuntimeError, not {e!r}"
        ) from e
    raise AssertionError(f"{where}: stepping a finished episode did not raise RuntimeError")


# ---------------------------------------------------------------------- single values
def _check_step(result: Any, at: str) -> tuple[Any, float, bool, dict]:
    _require(
        isinstance(result, tuple) and len(result) == 5,
        f"{at}: step() must return a 5-tuple, got {_kind(result)}",
    )
    obs, reward, terminated, truncated, info = result
    _require(
        isinstance(reward, (float, np.floating)) and math.isfinite(reward),
        f"{at}: reward must be a finite float, got {reward!r}",
    )
    for name, flag in (("terminated", terminated), ("truncated", truncated)):
        _require(isinstance(flag, (bool, np.bool_)), f"{at}: {name} must be a bool, got {flag!r}")
    _require(not truncated, f"{at}: truncated must always be False (the deadline terminates)")
    _require(isinstance(info, dict) and "error" in info, f"{at}: info must be a dict with 'error'")
    return obs, float(reward), bool(terminated), info


def _check_obs(env: Env, obs: Any, fields: tuple[str, ...], at: str) -> dict[str, Any]:
    """Check one observation; return its ``to_dict()``."""
    _check_immutable(obs, at)
    data = obs.to_dict()
    try:
        json.dumps(data, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise AssertionError(f"{at}: obs.to_dict() is not JSON-serialisable: {e}") from e
    missing = [f for f in fields if f not in data]
    _require(not missing, f"{at}: obs.to_dict() lacks field(s) {missing}")
    _check_features(env, obs, at)
    return data


def _check_immutable(obs: Any, at: str) -> None:
    """Re-assigning a data attribute (or adding one) must raise."""
    if dataclasses.is_dataclass(obs):
        name = dataclasses.fields(obs)[0].name
    else:
        name = next(iter(getattr(obs, "__dict__", {})), "_check_env_probe")
    try:
        setattr(obs, name, getattr(obs, name, None))
    except (AttributeError, TypeError):
        return
    raise AssertionError(f"{at}: the observation is mutable (setting .{name} did not raise)")


def _check_features(env: Env, obs: Any, at: str) -> None:
    f = np.asarray(env.macro_space.features(obs))
    n = env.macro_space.n_features
    _require(f.shape == (n,), f"{at}: features have shape {f.shape}, expected ({n},)")
    bad = np.flatnonzero(~np.isfinite(f) | (f < 0.0) | (f > 1.0))
    _require(
        bad.size == 0,
        f"{at}: features outside [0, 1] or not finite: "
        + ", ".join(f"{env.macro_space.feature_names[i]}={float(f[i])}" for i in bad[:5]),
    )


def _mask(env: Env, obs: Any, at: str) -> np.ndarray:
    m = np.asarray(env.macro_space.mask(obs))
    n = env.macro_space.n
    _require(
        m.shape == (n,) and m.dtype == bool,
        f"{at}: the mask must be a bool array of shape ({n},), got {m.dtype} {m.shape}",
    )
    return m


def _assert_same(a: tuple[list, list], b: tuple[list, list], where: str) -> None:
    """Two plays of the same seed and choices must agree observation by observation."""
    (obs_a, rew_a), (obs_b, rew_b) = a, b
    for t, (x, y) in enumerate(zip(obs_a, obs_b, strict=False)):
        diff = sorted(k for k in x.keys() | y.keys() if x.get(k) != y.get(k))
        _require(
            not diff,
            f"{where}: not deterministic: replaying the same seed and actions changed "
            f"observation {t} (field(s) {diff})",
        )
    _require(len(obs_a) == len(obs_b), f"{where}: not deterministic: episode lengths differ")
    _require(rew_a == rew_b, f"{where}: not deterministic: replaying the seed changed rewards")


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def _show(action: Any) -> str:
    to_dict = getattr(action, "to_dict", None)
    return repr(to_dict() if callable(to_dict) else action)


def _kind(value: Any) -> str:
    if isinstance(value, tuple):
        return f"a {len(value)}-tuple"
    return type(value).__name__
