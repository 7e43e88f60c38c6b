"""How mira's milestone advantage relates to the episode's score: per phase of a default
mira training run, each episode's mean advantage against its score, beside GAE on the
same steps, and what the advantage's mean is made of (docs/agents.md, mira).

    python experiments/mira_advantages.py [--tasks medium_bench hard_bench] [--seeds 1 7]

Each run trains ``mira`` with its defaults at the canonical budget (108,000 steps of
training worlds, from the training stream of the canonical cell of that seed) and,
before each phase's actor update, reads that phase's episodes (the newest in the
buffer, the policy that collected them):

- ``score``: their mean score (sampled actions, so lower than the greedy evaluation);
- ``milestones``: the correlation over episodes between an episode's mean milestone
  advantage (``MIRAAgent.advantages``: the doubly robust advantage on the shaped
  reward) and its score;
- ``gae``: the same for GAE (``mira.gae_advantages``: gamma 0.99, lambda 0.95, a ridge
  value of the return; what the ablation ``advantage: gae`` uses);
- ``steps``: the correlation of the two advantages over the phase's steps;
- ``V``: the correlation over episodes between an episode's mean success-critic value
  V(s) (the probability that the episode scores above the phase median) and its score;
- ``A``, ``-V/2``, ``-lamP/2``, ``G/2``: the mean over the phase's steps of the
  milestone advantage and of three parts of its Monte-Carlo half,
  1/2 [G' - V(s)] = 1/2 [G - lam P(s) - V(s)] (G' the shaped return, G the discounted
  return of the rewards, P the potential critic, terminal potential 0).

The rewards of an episode add up to its score, a few hundredths for the sampled
training episodes, while V(s) is a probability near 1/2: of the advantage's mean, the
terms of the state alone (-V/2, -lamP/2) make up nearly all and the return G/2 a few
thousandths (the TD half and the clipping make up the rest of ``A``). For a plain
on-policy policy-gradient step, terms of the state alone are a baseline that leaves
the expected gradient unchanged; mira's actors are not exactly one, and a negative
correlation with the score does not show that the advantage favours the actions of
the episodes that score low.
"""

from __future__ import annotations

import argparse

import clinbench  # first: it pins the BLAS kernel before numpy loads  # noqa: F401

# isort: split
import numpy as np

from clinbench.agents.context import AgentContext
from clinbench.agents.mira import MIRAAgent, discounted
from clinbench.env import make
from clinbench.env.registry import family
from clinbench.evaluation_key import PUBLIC
from clinbench.protocol import training_env_factory, training_stream

COLUMNS = (
    "task", "seed", "phase", "score", "milestones", "gae", "steps", "V",
    "A", "-V/2", "-lamP/2", "G/2",
)  # fmt: skip


def correlation(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(a, b)[0, 1])


class Watched(MIRAAgent):
    """mira, unchanged, that records its advantages before each actor update."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rows: list[tuple[float, ...]] = []

    def update_actor(self, optimizer) -> None:
        trajs = list(self.buffer[-1])
        score = np.array([t.score for t in trajs])
        milestones = [self.advantages(t) for t in trajs]
        gae = self.gae_advantages(trajs)  # the ablation ``advantage: gae``'s
        xs = [self.std(t.x) for t in trajs]
        value = [self.success.predict_proba(x) for x in xs]
        potential = [self.potential.predict(x) for x in xs]
        returns = [discounted(t.rewards, self.gamma) for t in trajs]
        self.rows.append(
            (
                float(score.mean()),
                correlation(np.array([a.mean() for a in milestones]), score),
                correlation(np.array([a.mean() for a in gae]), score),
                correlation(np.concatenate(milestones), np.concatenate(gae)),
                correlation(np.array([v.mean() for v in value]), score),
                float(np.concatenate(milestones).mean()),
                float(-0.5 * np.concatenate(value).mean()),
                float(-0.5 * self.lam * np.concatenate(potential).mean()),
                float(0.5 * np.concatenate(returns).mean()),
            )
        )
        super().update_actor(optimizer)


def watched_run(task: str, seed: int, steps: int | None = None) -> Watched:
    """One default training run of mira on ``task`` with cell seed ``seed``, for
    ``steps`` steps (the canonical budget by default)."""
    name = f"recruitment/{task}"
    agent = Watched(AgentContext.of(make(name)))
    stream = training_stream(PUBLIC, seed, "mira", name)  # the canonical cell's
    steps = steps or family("recruitment").training_steps
    agent.train(training_env_factory(name, None, steps), steps, stream, None, 2)
    return agent


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", nargs="+", default=["medium_bench", "hard_bench"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 7])
    args = parser.parse_args()
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for task in args.tasks:
        for seed in args.seeds:
            for phase, row in enumerate(watched_run(task, seed).rows, start=1):
                cells = [
                    f"{row[0]:.3f}",
                    *(f"{c:+.2f}" for c in row[1:5]),
                    *(f"{c:+.3f}" for c in row[5:]),
                ]
                print(f"| {task} | {seed} | {phase} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
