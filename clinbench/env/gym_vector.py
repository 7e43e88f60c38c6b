"""A natively batched Gymnasium ``VectorEnv`` for every clinbench id.

``gym.make_vec(id, num_envs=N, vectorization_mode="vector_entry_point")`` builds a
:class:`MacroVectorEnv`. It is a drop-in for ``SyncVectorEnv`` over the same id: the
same observations, rewards, flags and ``info`` (keys, ``_key`` masks, dtypes), in the
same autoreset mode (``NextStep`` by default, ``SameStep`` with ``final_obs`` /
``final_info``, or ``Disabled``), and the same seeding (``reset(seed=s)`` seeds sub-env
``i`` with ``s + i``; later unseeded resets, autoresets included, draw the native seed
from each sub-env's own generator and report none, as
:class:`~clinbench.env.gym_adapter.MacroGymEnv` does: the ``info`` of an unseeded reset
has no ``"seed"``, whatever the core returns). Actions are ``num_envs`` integers (an
integer array, or a sequence of ints or numpy integers); a ``bool`` is not a macro
index, in an array or in a list (``ValueError``, nothing is stepped).

The sub-environments live in a *core* with three calls:

- ``reset(i, seed, options) -> info``: start sub-env ``i`` as ``MacroGymEnv.reset``
  would (``seed`` None: drawn from the sub-env's own generator);
- ``step(idx, ks) -> (rewards, terminated, infos)``: macro ``ks[j]`` in sub-env
  ``idx[j]``, with the native ``info`` of each;
- ``observe(obs, masks, rows)``: write the features and action masks of ``rows``.

A family whose package has a ``vector`` module with a ``VectorCore`` class (built as
``VectorCore(params, macro_space, num_envs)``) brings its own batched core, which keeps
N worlds in shared arrays and computes every feature and mask as one array operation
(``clinbench.env.recruitment.vector``); any other family is stepped through N adapters.
"""

from __future__ import annotations

import importlib
from copy import deepcopy
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from clinbench.env.gym_adapter import MacroGymEnv


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
        first = MacroGymEnv(env_id, render_mode=render_mode, **overrides)
        self.core = _core_for(first, self.num_envs, overrides)
        self.metadata = dict(first.metadata)
        self.metadata["autoreset_mode"] = self.autoreset_mode
        self.render_mode = None
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._n = first.macro_space.n
        n, f = self.num_envs, first.macro_space.n_features
        self._obs = np.zeros((n, f), dtype=np.float32)
        self._masks = np.zeros((n, self._n), dtype=np.int8)
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
        rows = np.flatnonzero(which)
        items = [(i, self._reset_one(i, seeds[i], options)) for i in rows.tolist()]
        self._autoreset_envs[rows] = False
        self._started[rows] = True
        self.core.observe(self._obs, self._masks, rows)
        return self._out(self._obs), _batch_infos(n, items, self._masks, which)

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        n, mode, core = self.num_envs, self.autoreset_mode, self.core
        ks = self._check(actions)
        if not self._started.all():
            raise RuntimeError("call reset() before step()")
        if mode is AutoresetMode.DISABLED and self._autoreset_envs.any():
            i = int(np.flatnonzero(self._autoreset_envs)[0])
            raise RuntimeError(f"sub-env {i} is done: reset it (autoreset is disabled)")
        infos: list[Any] = [None] * n
        stepped = list(range(n))
        if mode is AutoresetMode.NEXT_STEP and self._autoreset_envs.any():
            for i in np.flatnonzero(self._autoreset_envs).tolist():
                infos[i] = self._reset_one(i, None, None)
            stepped = np.flatnonzero(~self._autoreset_envs).tolist()
        rewards = np.zeros(n)
        terms = np.zeros(n, dtype=np.bool_)
        if stepped:
            r, t, step_infos = core.step(stepped, ks[stepped].tolist())
            rewards[stepped], terms[stepped] = r, t
            for i, info in zip(stepped, step_infos, strict=True):
                infos[i] = info
        everyone = np.ones(n, dtype=np.bool_)
        core.observe(self._obs, self._masks, np.arange(n))
        final: dict[str, Any] = {}
        if mode is AutoresetMode.SAME_STEP and terms.any():
            done = np.flatnonzero(terms).tolist()
            final_obs = np.full(n, None, dtype=object)
            ended = []
            for i in done:
                final_obs[i] = self._obs[i].copy()
                infos[i]["action_mask"] = self._masks[i].copy()
                ended.append((i, infos[i]))
                infos[i] = self._reset_one(i, None, None)
            core.observe(self._obs, self._masks, np.array(done))
            final = {
                "final_obs": final_obs,
                "_final_obs": terms.copy(),
                "final_info": _batch_infos(n, ended),
                "_final_info": terms.copy(),
            }
        out = _batch_infos(n, list(enumerate(infos)), self._masks, everyone)
        out.update(final)
        self._autoreset_envs = terms.copy()
        return self._out(self._obs), rewards, terms, np.zeros(n, dtype=np.bool_), out

    def close_extras(self, **kwargs: Any) -> None:
        self.core.close()

    # ------------------------------------------------------------------ helpers
    def _reset_one(self, i: int, seed: int | None, options: dict[str, Any] | None) -> dict:
        """Sub-env ``i``'s reset ``info``; an unseeded one keeps the world's seed inside."""
        info = self.core.reset(i, seed, options)
        if seed is None:
            info.pop("seed", None)
        return info

    def _check(self, actions: Any) -> np.ndarray:
        a = np.asarray(actions)
        # a list such as [True, 2] becomes an integer array: its bools are refused here
        if a.ndim == 1 and not isinstance(actions, np.ndarray):
            has_bool = any(
                isinstance(x, (bool, np.bool_, np.ndarray)) and np.asarray(x).dtype == np.bool_
                for x in actions
            )
        else:
            has_bool = False
        if a.shape != (self.num_envs,) or a.dtype.kind not in "iu" or has_bool:
            raise ValueError(
                f"actions must be {self.num_envs} integers (not bools), got {actions!r}"
            )
        if a.min() < 0 or a.max() >= self._n:
            raise ValueError(f"actions {actions!r} are not in {self.action_space}")
        return a.astype(np.int64, copy=False)

    def _out(self, obs: np.ndarray) -> np.ndarray:
        return deepcopy(obs) if self.copy else obs


class AdapterCore:
    """The core of a family without a batched one: N adapters, stepped one by one."""

    def __init__(self, envs: list[MacroGymEnv]):
        self.envs = envs
        n = len(envs)
        self._features = [np.zeros(0, dtype=np.float32)] * n
        self._masks = [np.zeros(0, dtype=np.int8)] * n

    def reset(self, i: int, seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
        features, info = self.envs[i].reset(seed=seed, options=options)
        return self._keep(i, features, info)

    def step(
        self, idx: list[int], ks: list[int]
    ) -> tuple[list[float], list[bool], list[dict[str, Any]]]:
        rewards, terms, infos = [], [], []
        for i, k in zip(idx, ks, strict=True):
            features, reward, terminated, _, info = self.envs[i].step(k)
            rewards.append(reward)
            terms.append(terminated)
            infos.append(self._keep(i, features, info))
        return rewards, terms, infos

    def _keep(self, i: int, features: np.ndarray, info: dict[str, Any]) -> dict[str, Any]:
        self._features[i] = features
        self._masks[i] = info.pop("action_mask")
        return info

    def observe(self, obs: np.ndarray, masks: np.ndarray, rows: np.ndarray) -> None:
        for i in rows.tolist():
            obs[i] = self._features[i]
            masks[i] = self._masks[i]

    def close(self) -> None:
        for env in self.envs:
            env.close()


def batched_core(native: Any, num_envs: int) -> Any | None:
    """The batched core of ``native``'s family for ``num_envs`` worlds of its task, or
    None if the family's package ships none (its ``vector.VectorCore``)."""
    package = type(native).__module__.rpartition(".")[0]
    try:
        module = importlib.import_module(f"{package}.vector")
    except ModuleNotFoundError as exc:
        if exc.name != f"{package}.vector":
            raise
        return None
    if not hasattr(module, "VectorCore"):
        return None
    return module.VectorCore(native.spec.params, native.macro_space, num_envs)


def _core_for(first: MacroGymEnv, num_envs: int, overrides: dict[str, Any]) -> Any:
    """The family's own batched core if its package ships one, else an :class:`AdapterCore`."""
    core = batched_core(first.native, num_envs)
    if core is not None:
        return core
    others = [MacroGymEnv(first.env_id, **overrides) for _ in range(num_envs - 1)]
    return AdapterCore([first, *others])


def _batch_infos(
    n: int,
    items: list[tuple[int, dict[str, Any]]],
    masks: np.ndarray | None = None,
    masked: np.ndarray | None = None,
) -> dict[str, Any]:
    """``info`` as ``SyncVectorEnv`` merges it: per key an array and a ``_key`` mask.

    ``items`` are ``(env index, info)`` in ascending index; as in Gymnasium the first
    value of a key decides the array's dtype, dicts nest, other values go in object
    arrays. ``masks`` becomes ``action_mask`` for the envs ``masked`` (others zero).
    """
    cols: dict[str, tuple[list[int], list[Any]]] = {}
    for i, info in items:
        for key, value in info.items():
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
    if masks is not None and masked is not None:
        action_mask = masks.copy()
        action_mask[~masked] = 0
        out["action_mask"], out["_action_mask"] = action_mask, masked.copy()
    return out
