"""Offline predictors of the next six-month portfolio from public evidence.

``repeat_last`` (the naive baseline: the designs registered in the last six months),
``random`` (a uniform subset of the valid catalogue, up to the cap) and ``heuristic``
(continue what is working: the next phase after a public success; open the most
valuable indications when nothing is registered yet; avoid indications with a public
failure). Each maps an :class:`~clinbench.env.portfolio.offline.OfflineEpisode` to a
portfolio and reads nothing but the episode's evidence and catalogue.
"""

from __future__ import annotations

import numpy as np

from clinbench.agents.portfolio.evidence_view import read_records
from clinbench.env.portfolio.offline import OfflineEpisode
from clinbench.env.portfolio.trials import TrialDesign

#: A result older than this (months) no longer triggers the next phase.
RECENT_MONTHS = 12


def repeat_last(episode: OfflineEpisode, window: int = 6) -> tuple[TrialDesign, ...]:
    """The designs whose registry entry appeared in the ``window`` months before the date."""
    view = read_records(episode.evidence)
    recent = {d for m, d in view.designs if episode.month - window < m <= episode.month}
    return tuple(sorted(recent))


def random_portfolio(
    episode: OfflineEpisode, rng: np.random.Generator, cap: int = 4
) -> tuple[TrialDesign, ...]:
    """A uniform number (0..cap) of distinct valid catalogue entries."""
    valid = np.flatnonzero(episode.mask)
    k = int(rng.integers(0, min(cap, valid.size) + 1))
    picks = rng.choice(valid, size=k, replace=False) if k else []
    return tuple(sorted(episode.catalogue[int(i)] for i in picks))


def heuristic(episode: OfflineEpisode, cap: int = 4, leads: int = 1) -> tuple[TrialDesign, ...]:
    """Continue what is working: the next phase of every trial completed in the last
    six months unless its public result says it failed; a success published recently
    counts too. At the start, Phase I in the ``leads`` most valuable indications."""
    view = read_records(episode.evidence)
    biomarker = bool(episode.mask.all())
    out: list[TrialDesign] = []
    if not view.designs:
        ranked = sorted(view.patients, key=lambda k: (-view.patients[k], k))
        out = [TrialDesign(k, 1, biomarker=biomarker) for k in ranked[:leads]]
    nxt: dict[str, int] = {}
    for month, d in view.completed:
        if episode.month - month < 6:
            nxt[d.indication] = max(nxt.get(d.indication, 0), d.phase + 1)
    for ind, (phase, success, _est, month) in view.latest.items():
        if success and episode.month - month < RECENT_MONTHS:
            nxt[ind] = max(nxt.get(ind, 0), phase + 1)
        elif not success and nxt.get(ind) == phase + 1:
            del nxt[ind]
    for ind, phase in sorted(nxt.items(), key=lambda kv: (-view.patients.get(kv[0], 0), kv[0])):
        if phase <= 3 and phase not in view.registered.get(ind, ()):
            out.append(TrialDesign(ind, phase, randomised=phase == 3, biomarker=biomarker))
    return tuple(out[:cap])
