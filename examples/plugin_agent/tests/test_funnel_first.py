"""The plugin's own test: it plays whole episodes through clinbench's public API."""

from clinbench.agents import AgentContext, make_agent
from clinbench.env import make
from clinbench.episode import play_episode


def test_plays_a_whole_episode_and_scores():
    env = make("recruitment/easy_bench")
    agent = make_agent("funnel_first", AgentContext.of(env))
    episode = play_episode(env, agent, 3, agent_seed=12345)
    assert episode.steps > 0
    assert 0.0 <= episode.score <= 1.0


def test_same_seeds_same_episode():
    env = make("recruitment/easy_bench")
    agent = make_agent("funnel_first", AgentContext.of(env), explore=0.3)
    first = play_episode(env, agent, 3, agent_seed=99)
    again = play_episode(env, agent, 3, agent_seed=99)
    assert first.score == again.score and first.steps == again.steps
