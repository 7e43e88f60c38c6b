"""Prompt size of the ``llm`` agent: the full ``to_dict()`` JSON against the compact text.

    python benchmarks/llm_prompt_size.py [--episodes 3]

Plays the heuristic on every task and measures, per step, the characters of the
observation as plain JSON (``json.dumps(obs.to_dict())``) and as the ``llm`` agent sends
it (:func:`clinbench.llm.render.compact`), and the tool schemas sent with every request.
Tokens are estimated at four characters per token (the exact count depends on the
model's tokenizer; the agent records the endpoint's own counts per episode).
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from clinbench.agents.context import AgentContext
from clinbench.agents.registry import make_agent
from clinbench.env import env_ids, make
from clinbench.llm.render import compact, estimated_tokens
from clinbench.llm.tools import action_class, tool_specs


def measure(env_id: str, episodes: int) -> dict[str, float]:
    env = make(env_id)
    agent = make_agent("heuristic", AgentContext.of(env))
    full, short, steps = [], [], 0
    for seed in range(episodes):
        obs, _ = env.reset(seed=seed)
        agent.reset(seed)
        done = False
        while not done:
            full.append(estimated_tokens(json.dumps(obs.to_dict())))
            short.append(estimated_tokens(compact(obs.to_dict())))
            obs, _, done, _, _ = env.step(agent.act(obs))
            steps += 1
    tools = json.dumps(list(tool_specs(action_class(env.macro_space))), separators=(",", ":"))
    return {
        "steps_per_episode": steps / episodes,
        "full_tokens_per_step": float(np.mean(full)),
        "compact_tokens_per_step": float(np.mean(short)),
        "tool_schema_tokens": estimated_tokens(tools),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes", type=int, default=3)
    args = parser.parse_args()
    print(f"{'task':30s} {'steps':>6s} {'full/step':>10s} {'compact/step':>13s} {'tools':>6s}")
    for env_id in env_ids():
        m = measure(env_id, args.episodes)
        print(
            f"{env_id:30s} {m['steps_per_episode']:6.0f} {m['full_tokens_per_step']:10,.0f} "
            f"{m['compact_tokens_per_step']:13,.0f} {m['tool_schema_tokens']:6,.0f}"
        )


if __name__ == "__main__":
    main()
