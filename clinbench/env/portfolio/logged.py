"""The sponsors' logged decisions as a Minari dataset (``clinbench dataset logged``).

One Minari episode per program with at least one decision date in its active life (the
offline task's episodes, :mod:`~clinbench.env.portfolio.offline`, in date order). At
step ``t`` the observation holds the records that became public since the previous
decision date, up to and including decision ``t``'s date, as structured JSON and as
text (``date kind: text`` lines), so the observations up to ``t`` are exactly the
evidence public at ``t``; the last observation holds what became public afterwards.
The action is the portfolio the sponsor started, a 0/1 vector over the program's
catalogue (``MultiBinary(128)``; each episode's metadata lists the catalogue's labels
and the drug's valid entries), and the reward is 0 until the last step, which pays the
program's realised net value ($M, discounted to its start). Episode metadata also hold
the program, drug, sponsor, class and decision months, the keys of the four splits.
"""

from __future__ import annotations

import json

import numpy as np

from clinbench.env.portfolio.calendar import month_label
from clinbench.env.portfolio.evidence import Record
from clinbench.env.portfolio.offline import OfflineEpisode, build_dataset
from clinbench.env.portfolio.params import TASKS
from clinbench.logged import Logged, LoggedTrajectory

#: the task whose world the logs come from
TASK = "develop"
#: longest text of one step (characters); a longer one is cut at a line end
MAX_TEXT = 60_000


def _text(records: list[Record]) -> str:
    lines = [f"{month_label(r.month)} {r.kind}: {r.text}" for r in records]
    out = "\n".join(lines)
    return out if len(out) <= MAX_TEXT else out[: out.rfind("\n", 0, MAX_TEXT)]


def _step(records: list[Record]) -> dict[str, str]:
    return {"records": json.dumps([r.to_dict() for r in records], separators=(",", ":")),
            "text": _text(records)}


def trajectory(episodes: list[OfflineEpisode], all_records: tuple[Record, ...], value: float):
    """One program's logged trajectory from its offline episodes (date order)."""
    observations: list[dict[str, str]] = []
    seen = 0
    ordered = sorted(all_records, key=lambda r: (r.month, r.id))
    for e in episodes:
        new = [r for r in ordered[seen:] if r.month <= e.month]
        seen += len(new)
        observations.append(_step(new))
    observations.append(_step(ordered[seen:]))
    first = episodes[0]
    actions = np.array(
        [[d in set(e.label) for d in e.catalogue] for e in episodes], dtype=np.int8
    )
    rewards = np.zeros(len(episodes))
    rewards[-1] = value
    metadata = {
        "program": first.program_id, "drug": first.drug_id, "sponsor": first.sponsor_id,
        "drug_class": first.drug_class, "months": [e.month for e in episodes],
        "catalogue": [d.label for d in first.catalogue],
        "valid": [bool(v) for v in first.mask], "net_value": value,
    }
    stacked = {k: [o[k] for o in observations] for k in ("records", "text")}
    return LoggedTrajectory(stacked, actions, rewards, metadata)


def build_logged(programs: int, seed: int) -> Logged:
    """The logged decisions of ``programs`` programs of the universe of ``seed``."""
    import gymnasium as gym

    params = TASKS[TASK]
    data = build_dataset(params, seed, programs)
    by_program: dict[str, list[OfflineEpisode]] = {}
    for e in data.episodes:
        by_program.setdefault(e.program_id, []).append(e)
    trajectories = []
    for h in data.histories:
        episodes = sorted(by_program.get(h.program.id, []), key=lambda e: e.month)
        if episodes:
            value = float(h.value["value"] - h.value["cost"])
            trajectories.append(trajectory(episodes, h.records, value))
    charset = frozenset(chr(c) for c in range(32, 127)) | {"\n"}
    text = gym.spaces.Text(max_length=MAX_TEXT * 4, min_length=0, charset=charset)
    return Logged(
        observation_space=gym.spaces.Dict({"records": text, "text": text}),
        action_space=gym.spaces.MultiBinary(16 * params.n_indications),
        trajectories=trajectories,
        description=(
            f"clinbench portfolio: sponsors' logged trial portfolios of {programs} oncology "
            f"programs (universe seed {seed}, task {TASK}), with the dated public evidence "
            "as structured records and text"
        ),
        metadata={"task": TASK, "records": data.n_records, "decision_episodes": len(data.episodes)},
    )
