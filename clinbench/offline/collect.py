"""Playing behaviour agents on training worlds and logging their macro-actions.

A behaviour agent's action is logged as the macro-action it corresponds to
(the valid macro whose action it is, else ``macro_space.index_of``), and that
macro-action is what is played, so the dataset is exactly the episode that happened:
replaying its actions on its world seed gives its rewards again. An agent that acts
through the macro-actions is logged exactly; another (the ``heuristic``) is projected
on the nearest macro. An action with no valid macro becomes the first valid one. With
probability ``noise`` the logged action is instead uniform over the valid
macro-actions (``stop`` excluded while anything else is valid: a sampled stop ends an
episode within days and shows nothing), the epsilon-noised behaviour of the spec.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clinbench.env.base import Env, coerce_action
from clinbench.env.registry import family
from clinbench.offline.data import LoggedEpisode


def behaviour_macro(macros: Any, action: Any, obs: Any, mask: np.ndarray) -> int:
    """The valid macro-action index of a behaviour agent's native (or dict) action."""
    if isinstance(action, dict):
        from clinbench.llm.tools import action_class

        action = coerce_action(action, action_class(macros))
    k = int(macros.index_of(action))
    if mask[k] and macros.to_action(k, obs) == action:
        return k
    for j in np.flatnonzero(mask):  # an agent acting through the macros: its own macro
        if macros.to_action(int(j), obs) == action:
            return int(j)
    return k if mask[k] else int(np.argmax(mask))


def noise_macro(macros: Any, mask: np.ndarray, rng: np.random.Generator) -> int:
    """A uniform valid macro-action (``stop`` only when nothing else is valid)."""
    valid = mask.copy()
    if "stop" in macros.names and valid.sum() > 1:
        valid[macros.names.index("stop")] = False
    choices = np.flatnonzero(valid)
    return int(choices[int(rng.integers(choices.size))])


def play_logged(
    env: Env,
    agent: Any,
    task: str,
    behaviour: str,
    world_seed: int,
    agent_seed: int,
    noise: float,
    noise_rng: np.random.Generator,
) -> LoggedEpisode:
    """One behaviour episode on ``world_seed``, logged in the dataset's layout."""
    macros = env.macro_space
    obs, _ = env.reset(seed=world_seed)
    agent.reset(agent_seed)
    feats, masks, actions, rewards = [], [], [], []
    done = truncated = False
    info: dict[str, Any] = {}
    while not (done or truncated):
        mask = macros.mask(obs).copy()
        feats.append(macros.features(obs))
        masks.append(mask)
        k = behaviour_macro(macros, agent.act(obs), obs, mask)
        if noise and noise_rng.random() < noise:
            k = noise_macro(macros, mask, noise_rng)
        obs, reward, done, truncated, info = env.step(macros.to_action(k, obs))
        actions.append(k)
        rewards.append(reward)
    feats.append(macros.features(obs))
    masks.append(macros.mask(obs))
    metrics = {m.name: float(info[m.name]) for m in family(env.spec.env).episode_metrics}
    return LoggedEpisode(
        task=task,
        behaviour=behaviour,
        world_seed=int(world_seed),
        observations=np.asarray(feats, dtype=np.float32),
        action_masks=np.asarray(masks, dtype=bool),
        actions=np.asarray(actions, dtype=np.int64),
        rewards=np.asarray(rewards, dtype=np.float64),
        terminated=bool(done),
        truncated=bool(truncated and not done),
        score=float(info["score"]),
        metrics=metrics,
    )
