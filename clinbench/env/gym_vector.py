"""A natively batched Gymnasium ``VectorEnv`` for every clinbench id.

``gym.make_vec(id, num_envs=N, vectorization_mode="vector_entry_point")`` builds a
:class:`MacroVectorEnv`: N native environments stepped in one loop, with the features
(``(N, n_features)`` float32) and ``info["action_mask"]`` (``(N, n)`` int8) computed as
batched arrays and the per-key ``info`` arrays built once per step, instead of N adapters
whose results ``SyncVectorEnv`` then merges key by key and env by env.

It is a drop-in for ``SyncVectorEnv`` over the same id: the same observations, rewards,
flags and ``info`` (keys, ``_key`` masks, dtypes), in the same autoreset mode
(``NextStep`` by default, ``SameStep`` with ``final_obs`` / ``final_info``, or
``Disabled``), and the same seeding (``reset(seed=s)`` seeds sub-env ``i`` with
``s + i``; later unseeded resets draw the native seed from each sub-env's own
generator, as :class:`~clinbench.env.gym_adapter.MacroGymEnv` does).
"""

from __future__ import annotations

from copy import deepcopy
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from clinbench.env.gym_adapter import MacroGymEnv

#: The clip ufunc (values as ``np.clip``) without the wrapper's per-call cost.
_clip = np._core.umath.clip


class MacroVectorEnv(VectorEnv):
    """N clinbench environments of one task behind Gymnasium's ``VectorEnv`` API."""

    def __init__(
        self,
        num_envs: int,
        env_id: str,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        copy: bool = True,
        render_mode: str | None = None,
        max_episode_steps: int | None = None,
        **overrides: Any,
    ):
        if max_episode_steps is not None:
            raise ValueError("clinbench episodes end by themselves (no max_episode_steps)")
        self.num_envs = int(num_envs)
        if self.num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        self.env_id = env_id
        self.copy = copy
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        # The sub-envs are adapters: their resets (and generators) are the single env's own.
        self.envs = [
            MacroGymEnv(env_id, render_mode=render_mode, **overrides) for _ in range(self.num_envs)
        ]
        first = self.envs[0]
        self.metadata = dict(first.metadata)
        self.metadata["autoreset_mode"] = self.autoreset_mode
        self.render_mode = None
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._n = first.macro_space.n
        self._rows = all(hasattr(e.macro_space, "feature_row") for e in self.envs)
        n, f = self.num_envs, first.macro_space.n_features
        self._obs = np.zeros((n, f), dtype=np.float32)
        self._masks = np.zeros((n, self._n), dtype=np.int8)
        self._rewards = np.zeros(n, dtype=np.float64)
        self._terminations = np.zeros(n, dtype=np.bool_)
        self._truncations = np.zeros(n, dtype=np.bool_)
        self._autoreset_envs = np.zeros(n, dtype=np.bool_)
        self._started = np.zeros(n, dtype=np.bool_)

    # ------------------------------------------------------------------ Gymnasium API
    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        n = self.num_envs
        if seed is None:
            seeds: list[int | None] = [None] * n
        elif isinstance(seed, int):
            seeds = [seed + i for i in range(n)]
        else:
            seeds = list(seed)
        if len(seeds) != n:
            raise ValueError(f"{len(seeds)} seeds for num_envs={n}")
        options = dict(options) if options else None
        which = np.ones(n, dtype=np.bool_)
        if options is not None and "reset_mask" in options:
            which = options.pop("reset_mask")
            if not (isinstance(which, np.ndarray) and which.dtype == np.bool_):
                raise TypeError("options['reset_mask'] must be a numpy bool array")
            if which.shape != (n,) or not which.any():
                raise ValueError(f"options['reset_mask'] must have shape ({n},), some True")
            options = options or None
        self._terminations[which] = False
        self._truncations[which] = False
        self._autoreset_envs[which] = False
        self._started |= which
        items = []
        for i in np.flatnonzero(which).tolist():
            self._obs[i], info = self.envs[i].reset(seed=seeds[i], options=options)
            self._masks[i] = info["action_mask"]
            items.append((i, info))
        return self._out(self._obs), _batch_infos(n, items)

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        n, mode = self.num_envs, self.autoreset_mode
        ks = self._check(actions)
        if not self._started.all():
            raise RuntimeError("call reset() before step()")
        same_step = mode is AutoresetMode.SAME_STEP
        auto = self._autoreset_envs.tolist() if mode is AutoresetMode.NEXT_STEP else [False] * n
        rewards, terms = [0.0] * n, [False] * n
        stepped: list[int] = []
        rows: list[Any] = []  # feature rows (or observations, for a macro space without rows)
        mask_rows: list[Any] = []
        by_rows = self._rows
        items: list[tuple[int, dict[str, Any]]] = []  # per-env infos, ascending env index
        resets: list[tuple[int, np.ndarray, dict[str, Any]]] = []
        for i, env in enumerate(self.envs):
            if auto[i]:
                features, info = env.reset()
                resets.append((i, features, info))
                items.append((i, info))
                continue
            if mode is AutoresetMode.DISABLED and self._autoreset_envs[i]:
                raise RuntimeError(f"sub-env {i} is done: reset it (autoreset is disabled)")
            k = ks[i]
            obs, reward, terminated, _, info = env.native.step(
                env.macro_space.to_action(k, env._obs)
            )
            env._obs = obs
            env._played.append(k)
            rewards[i] = reward
            terms[i] = terminated
            stepped.append(i)
            # Rows right after the step, while this env's data is still in the CPU caches.
            if by_rows:
                rows.append(env.macro_space.feature_row(obs))
                mask_rows.append(env.macro_space.mask_row(obs))
            else:
                rows.append(obs)
            items.append((i, info))
        self._features_into(stepped, rows, mask_rows)
        for i, features, info in resets:
            self._obs[i] = features
            self._masks[i] = info["action_mask"]
        self._rewards[:] = rewards
        self._terminations[:] = terms
        self._truncations[:] = False
        infos_final: list[tuple[int, dict[str, Any]]] = []
        final_obs = None
        if same_step and any(terms):
            final_obs = np.full(n, None, dtype=object)
            for j, (i, info) in enumerate(items):
                if terms[i]:
                    info["action_mask"] = self._masks[i].copy()
                    final_obs[i] = self._obs[i].copy()
                    infos_final.append((i, info))
                    features, info = self.envs[i].reset()
                    self._obs[i] = features
                    self._masks[i] = info["action_mask"]
                    items[j] = (i, info)
        infos = _batch_infos(n, items, self._masks)
        if final_obs is not None:
            done = np.zeros(n, dtype=np.bool_)
            done[[i for i, _ in infos_final]] = True
            infos["final_obs"], infos["_final_obs"] = final_obs, done
            infos["final_info"], infos["_final_info"] = _batch_infos(n, infos_final), done.copy()
        self._autoreset_envs = self._terminations | self._truncations
        return (
            self._out(self._obs),
            np.copy(self._rewards),
            np.copy(self._terminations),
            np.copy(self._truncations),
            infos,
        )

    def close_extras(self, **kwargs: Any) -> None:
        for env in self.envs:
            env.close()

    # ------------------------------------------------------------------ batched work
    def _check(self, actions: Any) -> list[int]:
        a = np.asarray(actions)
        if a.shape != (self.num_envs,) or a.dtype.kind not in "iu":
            raise ValueError(f"actions must be {self.num_envs} integers, got {actions!r}")
        ks = a.tolist()
        if min(ks) < 0 or max(ks) >= self._n:
            raise ValueError(f"actions {actions!r} are not in {self.action_space}")
        return ks

    def _features_into(self, idx: list[int], rows: list[Any], mask_rows: list[Any]) -> None:
        """Features and masks of the stepped envs, one array operation each."""
        if not idx:
            return
        if self._rows:
            if len(idx) == self.num_envs:  # clipped in float64, cast to float32 on the way out
                _clip(rows, 0.0, 1.0, out=self._obs, dtype=np.float64)
                self._masks[:] = mask_rows
            else:
                self._obs[idx] = _clip(rows, 0.0, 1.0, dtype=np.float64)
                self._masks[idx] = mask_rows
        else:
            for i, obs in zip(idx, rows):
                self._obs[i] = self.envs[i].macro_space.features(obs)
                self._masks[i] = self.envs[i].macro_space.mask(obs)

    def _out(self, obs: np.ndarray) -> np.ndarray:
        return deepcopy(obs) if self.copy else obs


def _batch_infos(
    n: int, items: list[tuple[int, dict[str, Any]]], masks: np.ndarray | None = None
) -> dict[str, Any]:
    """``info`` as ``SyncVectorEnv`` merges it: per key an array and a ``_key`` mask.

    ``items`` are ``(env index, info)`` in ascending index; as in Gymnasium the first
    value of a key decides the array's dtype, dicts nest, other values go in object
    arrays. ``masks`` (all envs) becomes ``action_mask`` without a per-env pass.
    """
    cols: dict[str, tuple[list[int], list[Any]]] = {}
    for i, info in items:
        for key, value in info.items():
            if masks is not None and key == "action_mask":
                continue
            col = cols.get(key)
            if col is None:
                cols[key] = col = ([], [])
            col[0].append(i)
            col[1].append(value)
    out: dict[str, Any] = {}
    for key, (idx, values) in cols.items():
        first = values[0]
        if isinstance(first, dict):
            array: Any = _batch_infos(n, list(zip(idx, values)))
        else:
            kind = type(first)
            if kind in (int, float, bool) or issubclass(kind, np.number):
                array = np.zeros(n, dtype=kind)
            elif isinstance(first, np.ndarray):
                array = np.zeros((n, *first.shape), dtype=first.dtype)
            else:
                array = np.full(n, None, dtype=object)
            if array.dtype == object:
                for i, value in zip(idx, values):
                    array[i] = value
            else:
                array[idx] = values
        present = np.zeros(n, dtype=np.bool_)
        present[idx] = True
        out[key], out[f"_{key}"] = array, present
    if masks is not None:
        out["action_mask"], out["_action_mask"] = masks.copy(), np.ones(n, dtype=np.bool_)
    return out
