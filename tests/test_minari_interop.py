"""Datasets that Minari's own functions load: a namespaced id, ``recover_environment``
and ``get_normalized_score`` (skips without the offline extra)."""

from __future__ import annotations

import numpy as np
import pytest

minari = pytest.importorskip("minari")

from clinbench.offline.dataset import (
    DatasetError,
    DatasetSpec,
    check_name,
    create,
    metadata,
    names,
)
from clinbench.references import normalised_score

NAME = "clinbench/trial/tiny-v0"


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("minari")
    spec = DatasetSpec(
        name=NAME,
        env="trial_design",
        tasks=("effective_drug",),
        agents=("heuristic", "random"),
        episodes=6,
        noise=0.1,
        seed=3,
    )
    create(spec, root, jobs=1)
    return root


@pytest.fixture
def loaded(root, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    return minari.load_dataset(NAME)


def test_namespaced_ids_are_accepted_and_listed(root, loaded):
    assert check_name(NAME) == NAME
    for bad in ("clinbench/", "/tiny-v0", "clinbench//tiny-v0", "clinbench/tiny", "a b/c-v0"):
        with pytest.raises(DatasetError):
            check_name(bad)
    assert names(root) == [NAME]
    assert metadata(NAME, root)["name"] == NAME
    assert not (root / ".staging").exists() or not any((root / ".staging").iterdir())
    assert NAME in minari.list_local_datasets()  # Minari's own listing


def test_recover_environment_builds_the_task(loaded):
    env = loaded.recover_environment()
    assert env.spec.id == "clinbench/TrialDesign-effective_drug-v2"
    obs, _ = env.reset(seed=1)
    assert obs.shape == loaded.observation_space.shape
    assert env.action_space == loaded.action_space
    env.close()


def test_normalised_scores_are_clinbenchs(loaded):
    episodes = list(loaded.iterate_episodes())
    returns = np.array([e.rewards.sum() for e in episodes])
    scores = [m["score"] for m in loaded.storage.get_episode_metadata(range(len(episodes)))]
    assert np.allclose(returns, scores)  # the return is the score
    want = [normalised_score("trial_design/effective_drug", s) for s in scores]
    assert np.allclose(minari.get_normalized_score(loaded, returns), want)
    meta = loaded.storage.metadata
    assert meta["ref_min_score"] < meta["ref_max_score"]


def test_a_dataset_of_several_tasks_stores_no_single_reference(tmp_path, monkeypatch):
    spec = DatasetSpec(
        name="clinbench/trial/two-v0",
        env="trial_design",
        tasks=("effective_drug", "efficacy_safety"),
        agents=("random",),
        episodes=3,
        seed=1,
    )
    create(spec, tmp_path, jobs=1)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    ds = minari.load_dataset(spec.name)
    assert ds.recover_environment().spec.id == "clinbench/TrialDesign-effective_drug-v2"
    with pytest.raises(ValueError, match="Reference score"):
        minari.get_normalized_score(ds, np.zeros(1))
