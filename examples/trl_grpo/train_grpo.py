"""GRPO on a clinbench task through TRL's ``environment_factory`` (not run in CI).

    pip install -c constraints.txt -e ".[tools]" trl==1.16.0 datasets
    python examples/trl_grpo/train_grpo.py --task trial_design/effective_drug
    python examples/trl_grpo/train_grpo.py --task recruitment/easy_bench --horizon 30

Each dataset row names a task and a world seed; TRL builds one tool environment per
rollout (``clinbench.tool_envs``), calls ``reset(**row)``, lets the model call the
environment's tools until the episode ends or the completion budget runs out, and
rewards the rollout with ``get_reward()`` (the episode's score; the score so far when
the budget cut it). Training seeds are drawn from [2**31, 2**32), the range clinbench's
training worlds come from, so they never coincide with evaluation worlds (seeds below
2**31). Evaluate the trained model like any agent: serve it on an OpenAI-compatible
endpoint (vLLM, llama.cpp, ...) and sweep the ``llm`` agent against it (docs/serving.md).
"""

from __future__ import annotations

import argparse

import numpy as np

from clinbench.agents.learner import TRAIN_SEED_HIGH, TRAIN_SEED_LOW
from clinbench.env import spec
from clinbench.tool_envs import TOOL_ENVS

PROMPT = (
    "You run a simulated clinical-trial task with the tools you are given. Read the state, "
    "then call one tool per decision until the episode is over."
)


def rows(task: str, n: int, horizon: int | None, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    seeds = rng.integers(TRAIN_SEED_LOW, TRAIN_SEED_HIGH, size=n)
    row = {"prompt": [{"role": "user", "content": PROMPT}], "task": task}
    if horizon:
        row["horizon"] = horizon
    return [{**row, "seed": int(s)} for s in seeds]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="trial_design/effective_drug")
    parser.add_argument("--horizon", type=int, default=None, help="short variant (recruitment)")
    parser.add_argument("--model", default="Qwen/Qwen3-0.6B")
    parser.add_argument("--episodes", type=int, default=512, help="dataset rows (worlds)")
    parser.add_argument("--output", default="results/grpo")
    args = parser.parse_args()

    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    factory = TOOL_ENVS[spec(args.task).env]
    trainer = GRPOTrainer(
        model=args.model,
        train_dataset=Dataset.from_list(rows(args.task, args.episodes, args.horizon, seed=0)),
        environment_factory=factory,
        args=GRPOConfig(
            output_dir=args.output,
            num_generations=8,
            max_completion_length=4096,
            per_device_train_batch_size=8,
            learning_rate=1e-6,
            logging_steps=1,
        ),
    )
    trainer.train()
    trainer.save_model(args.output)


if __name__ == "__main__":
    main()
