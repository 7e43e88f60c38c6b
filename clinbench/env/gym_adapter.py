"""Gymnasium view of any clinbench environment: feature vector in, macro-action index out.

Importing :mod:`clinbench` registers the ids (or let Gymnasium import it:
``gym.make("clinbench:clinbench/Recruitment-easy_bench-v2")``).

``gym.make("clinbench/Recruitment-easy_bench-v2")`` gives a :class:`MacroGymEnv` whose

- observation is ``macro_space.features(obs)`` as a ``Box(0, 1, (n_features,), float32)``;
- action is an index into the task's macro-actions (``Discrete(macro_space.n)``), turned
  into a concrete action by ``macro_space.to_action(k, obs)``;
- ``info["action_mask"]`` (``np.int8``, length ``n``) marks the macro-actions valid now,
  in the form ``action_space.sample(mask=...)`` and maskable policies expect. A masked-out
  index is still played: the native environment turns it into an invalid action, which
  takes the day, costs nothing and comes back as ``info["error"]``. The native ``info``
  (``error``, ``outcome``, and at the end ``score`` and ``score_parts``) is passed through.

The episode ends only by itself (``stop`` or the deadline, both ``terminated``), so the
ids are registered without a ``TimeLimit`` and ``truncated`` is always False.

Actions: a macro index is an ``int`` or a numpy integer (a scalar such as ``np.int64``,
or a 0-d integer array), in ``0..n-1``; a numpy integer plays exactly as the ``int`` it
holds. A ``bool`` (or ``np.bool_``) is not an index, nor is a float: ``ValueError``,
and the episode is unchanged.

Seeding: ``reset(seed=s)`` plays the native world of seed ``s``, the same world a native
agent meets with that seed, and ``info["seed"]`` is ``s``. ``reset()`` without a seed
draws the native seed from the Gymnasium ``np_random`` (the environment's own stream),
so a seeded reset followed by unseeded ones is reproducible, and reports no seed: its
``info`` has no ``"seed"``, and nothing in it is derived from the world's seed.

Binary actions: a family whose native env offers ``binary_actions`` (an object with
``n``, ``mask(obs)`` and ``to_action(bits, obs)``, e.g. a portfolio as a set drawn from
a catalogue) can be played with ``gym.make(id, action="binary")``: the action space is
then ``MultiBinary(n)``, ``info["action_mask"]`` marks the entries valid now, and an
action that is not a 0/1 integer or bool vector of shape ``(n,)`` raises ``ValueError``
with the episode unchanged. A masked-out bit is still played, as a masked-out macro is.

Pickling stores the recipe of the current episode (task id, overrides, reset seed and
options, the macro indices played) and replays it on load. Native environments are
deterministic given the seed, so this restores the exact state without depending on how
a native environment lays out its internals. An adapter made with :meth:`MacroGymEnv.wrap`
stores the task id and the native parameters (as overrides of the task's own) instead.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from clinbench.env.base import Env
from clinbench.env.registry import env_ids, make, spec

#: Entry point Gymnasium imports when it builds a registered id.
ENTRY_POINT = "clinbench.env.gym_adapter:MacroGymEnv"
#: What ``gym.make_vec(id, n, vectorization_mode="vector_entry_point")`` builds.
VECTOR_ENTRY_POINT = "clinbench.env.gym_vector:MacroVectorEnv"
_SEED_BOUND = np.iinfo(np.int64).max


class MacroGymEnv(gym.Env[np.ndarray, np.int64]):
    """A registered clinbench environment behind Gymnasium's ``Env`` API."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(
        self, env_id: str, render_mode: str | None = None, action: str = "macro", **overrides: Any
    ):
        if render_mode is not None:
            raise ValueError(f"clinbench environments do not render (render_mode={render_mode!r})")
        if action not in ("macro", "binary"):
            raise ValueError(f"action must be 'macro' or 'binary', got {action!r}")
        self.render_mode = None
        self.env_id = env_id
        self.overrides = dict(overrides)
        self._build_native()
        self._init_spaces()
        if action == "binary":
            self._use_binary()

    def _use_binary(self) -> None:
        """Play the native env's ``binary_actions`` (``MultiBinary``) instead of macros."""
        hook = getattr(self.native, "binary_actions", None)
        if hook is None:
            raise ValueError(f"{self.env_id} offers no binary action (only action='macro')")
        self.binary = hook
        self.action_space = spaces.MultiBinary(hook.n)

    @classmethod
    def wrap(cls, native: Env) -> MacroGymEnv:
        """The adapter around an existing native env (e.g. built by a training factory).

        ``reset(seed=s)`` then plays the native world of seed ``s``. Pickling rebuilds
        the native env from ``native.spec.id`` and its parameters, so those must be the
        registered task's parameters with some fields replaced (checked here).
        """
        self = cls.__new__(cls)
        self.render_mode = None
        self.env_id = native.spec.id
        self.overrides = _overrides_of(native)
        gid = gym_id(self.env_id)
        if gid in gym.registry:  # how to build the same env with gym.make
            kwargs = {**gym.spec(gid).kwargs, **self.overrides}
            self.spec = dataclasses.replace(gym.spec(gid), kwargs=kwargs)
        self._attach(native)
        self._init_spaces()
        return self

    def _build_native(self) -> None:
        self._attach(make(self.env_id, **self.overrides))

    def _attach(self, native: Env) -> None:
        self.native = native
        self.macro_space = native.macro_space
        self._obs: Any = None

    def _init_spaces(self) -> None:
        self.observation_space = spaces.Box(
            0.0, 1.0, (self.macro_space.n_features,), dtype=np.float32
        )
        self.action_space = spaces.Discrete(self.macro_space.n)
        self._n = self.macro_space.n
        self._n_features = self.macro_space.n_features
        self._features_dtype = "dtype" in inspect.signature(self.macro_space.features).parameters
        self._episode: tuple[int, dict[str, Any] | None] | None = None
        self._played: list[int] = []

    # ------------------------------------------------------------------ Gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        native_seed = int(self.np_random.integers(_SEED_BOUND)) if seed is None else seed
        options = dict(options) if options else None
        obs, info = self.native.reset(seed=native_seed, options=options)
        if seed is None:  # the world's seed stays inside: an agent could rebuild the world
            info.pop("seed", None)
        self._episode = (native_seed, options)
        self._played = []
        return self._convert(obs, info)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if getattr(self, "binary", None) is not None:
            k = self._bits(action)
        else:
            # Plain ints (what policies mostly pass) are checked here; anything else below.
            k = action if type(action) is int and 0 <= action < self._n else self._index(action)
        if self._obs is None:
            raise RuntimeError("call reset() first")
        obs, reward, terminated, truncated, info = self.native.step(self._native_action(k))
        self._played.append(k)
        features, info = self._convert(obs, info)
        return features, float(reward), bool(terminated), bool(truncated), info

    def _native_action(self, k: Any) -> Any:
        if getattr(self, "binary", None) is not None:
            return self.binary.to_action(np.asarray(k, dtype=np.int8), self._obs)
        return self.macro_space.to_action(k, self._obs)

    def _bits(self, action: Any) -> tuple[int, ...]:
        """``action`` as a 0/1 vector of the binary action space (a tuple, for replay)."""
        a = np.asarray(action) if isinstance(action, (list, tuple, np.ndarray)) else None
        n = self.action_space.n
        if (
            a is None
            or a.shape != (n,)
            or a.dtype.kind not in "biu"
            or not np.isin(a, (0, 1)).all()
        ):
            raise ValueError(
                f"action {action!r:.80} is not in {self.action_space} (a 0/1 vector of "
                f"{n} integers or bools)"
            )
        return tuple(int(b) for b in a)

    def _index(self, action: Any) -> int:
        """``action`` as a macro index: an int (not a bool) or a numpy integer in range."""
        if isinstance(action, int) and not isinstance(action, bool):
            k = int(action)
        elif isinstance(action, (np.integer, np.ndarray)) and action.dtype.kind in "iu":
            k = int(action) if action.shape == () else -1
        else:
            k = -1
        if not 0 <= k < self._n:
            raise ValueError(
                f"action {action!r} is not in {self.action_space} (a macro index is an int "
                "or a numpy integer; a bool is not one)"
            )
        return k

    def _convert(self, obs: Any, info: dict[str, Any]) -> tuple[np.ndarray, dict[str, Any]]:
        """Features and mask of ``obs``; ``info`` is the native env's fresh dict, extended."""
        self._obs = obs
        hook = getattr(self, "binary", None)
        mask = self.macro_space.mask(obs) if hook is None else hook.mask(obs)
        # A bool array holds 0/1 bytes: viewing it as int8 is the cast without a copy.
        info["action_mask"] = mask.view(np.int8) if mask.dtype == np.bool_ else mask.astype(np.int8)
        return self._features(obs), info

    def _features(self, obs: Any) -> np.ndarray:
        if self._features_dtype:  # clipped in float64, cast on the way out like ``astype``
            return self.macro_space.features(obs, dtype=np.float32)
        return np.asarray(self.macro_space.features(obs), dtype=np.float32)

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for name in ("native", "macro_space", "_obs"):
            del state[name]
        if state.pop("binary", None) is not None:
            state["_binary"] = True
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        binary = state.pop("_binary", False)
        self.__dict__.update(state)
        self._build_native()
        if binary:
            self._use_binary()
        if self._episode is not None:
            self._replay()

    def _replay(self) -> None:
        seed, options = self._episode
        obs, _ = self.native.reset(seed=seed, options=options)
        for k in self._played:
            self._obs = obs
            obs = self.native.step(self._native_action(k))[0]
        self._obs = obs


def _overrides_of(native: Env) -> dict[str, Any]:
    """The parameter overrides that rebuild ``native`` with ``make`` (for pickling)."""
    base, params = spec(native.spec.id).params, native.spec.params
    if not (dataclasses.is_dataclass(params) and type(params) is type(base)):
        raise TypeError(f"cannot wrap {native!r}: its parameters are not the task's kind")
    overrides = {
        f.name: getattr(params, f.name)
        for f in dataclasses.fields(params)
        if getattr(params, f.name) != getattr(base, f.name)
    }
    rebuilt = make(native.spec.id, **overrides).spec.params
    if rebuilt != params:
        raise TypeError(f"cannot wrap {native!r}: make() does not rebuild its parameters")
    return overrides


# ---------------------------------------------------------------------- registration
def gym_id(env_id: str) -> str:
    """``"recruitment/easy_bench"`` -> ``"clinbench/Recruitment-easy_bench-v2"``."""
    s = spec(env_id)
    family = s.env.title().replace("_", "")
    return f"clinbench/{family}-{s.task}-v{s.version}"


def register_gym_envs() -> list[str]:
    """Register a Gymnasium id for every clinbench task; safe to call any number of times."""
    ids = []
    for env_id in env_ids():
        gid = gym_id(env_id)
        if gid not in gym.registry:
            gym.register(
                id=gid,
                entry_point=ENTRY_POINT,
                vector_entry_point=VECTOR_ENTRY_POINT,
                kwargs={"env_id": env_id},
                max_episode_steps=None,
            )
        ids.append(gid)
    return ids
