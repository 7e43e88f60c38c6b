"""Offline learners of the prediction task: behavioural cloning (``bc``) and
reward-weighted behavioural cloning (``rwbc``) of the sponsors' logged portfolios.

The paper ("Learning Clinical-Trial Strategy: Offline Policy Training for Decision
Agents", arXiv 2608.03606) fine-tunes a language model on the records; here the policy
is a logistic model of "the sponsor starts this catalogue entry now" on features of the
public evidence (what :mod:`~clinbench.agents.portfolio.predictors` reads, per entry,
and whether the hand-written ``heuristic`` predictor picks the entry),
fitted with scipy's L-BFGS. A portfolio is the valid entries whose probability clears
a threshold, most probable first, up to the cap; a sponsor starts few of 128 entries, so
the threshold is the one of ``THRESHOLDS`` that maximises indication F1 (micro) on the
training episodes, not 0.5. ``rwbc`` weighs each episode by
``exp(clip(z, -CLIP, CLIP) / TEMPERATURE)``, ``z`` the standardised net value its
program realised (the return of the logged decisions), so programs that went well
count more: the paper's reward-weighted regression.

Hyper-parameters are the constants below, fixed before any test set was scored (not
searched).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from clinbench.agents.portfolio.evidence_view import PublicView, read_records
from clinbench.agents.portfolio.predictors import heuristic
from clinbench.env.portfolio.metrics import portfolio_f1
from clinbench.env.portfolio.offline import OfflineEpisode
from clinbench.env.portfolio.trials import DESIGN_FLAGS, TrialDesign

#: ridge penalty on the weights (not the intercept), per weighted episode-entry
L2 = 1e-3
#: the candidate thresholds of "predict this entry" (one is chosen on the training set)
THRESHOLDS = tuple(np.round(np.arange(0.05, 0.951, 0.05), 2))
#: rwbc: the temperature and the clip of the standardised returns
TEMPERATURE = 1.0
CLIP = 2.0
#: trials per portfolio (the online task's cap)
CAP = 4
#: a result or completion this recent (months) counts as "recent"
RECENT = 6

FEATURES = (
    "phase_1", "phase_2", "phase_3", *DESIGN_FLAGS,
    "log_patients", "top_indication", "program_unstarted",
    "prev_phase_result", "prev_phase_success", "prev_phase_estimate", "prev_result_recent",
    "prev_phase_completed_recent", "phase_registered", "prev_phase_registered",
    "later_phase_registered", "indication_failed", "new_standard",
    "registered_last_6", "registered_last_12", "years_since_first",
    "flag_share_match", "start_lead", "rule_pick", "rule_exact",
)


def _flags(d: TrialDesign) -> tuple[bool, ...]:
    return tuple(getattr(d, f) for f in DESIGN_FLAGS)


@lru_cache(maxsize=256)
def _layout(
    catalogue: tuple[TrialDesign, ...],
) -> tuple[np.ndarray, tuple[tuple[str, int], ...], np.ndarray, tuple[tuple[bool, ...], ...]]:
    """A catalogue's fixed part: the phase and design-flag columns, its (indication,
    phase) groups (the evidence features depend on the entry only through its group),
    each entry's group and each entry's flag pattern."""
    groups = tuple(dict.fromkeys((d.indication, d.phase) for d in catalogue))
    index = {g: i for i, g in enumerate(groups)}
    fixed = np.array(
        [(d.phase == 1, d.phase == 2, d.phase == 3, *_flags(d)) for d in catalogue],
        dtype=float,
    ).reshape(len(catalogue), 3 + len(DESIGN_FLAGS))
    group_of = np.array([index[(d.indication, d.phase)] for d in catalogue], dtype=np.intp)
    return fixed, groups, group_of, tuple(_flags(d) for d in catalogue)


def entry_features(episode: OfflineEpisode, view: PublicView | None = None) -> np.ndarray:
    """One row of ``FEATURES`` per catalogue entry (every value in [-1, 2]): the
    catalogue's fixed columns, the evidence columns once per (indication, phase) group,
    then the two that depend on the entry's design (flag share, the heuristic's pick)."""
    v = read_records(episode.evidence) if view is None else view
    m = episode.month
    ranked = sorted(v.patients, key=lambda k: (-v.patients[k], k))
    top = ranked[0] if ranked else None
    first = min((mm for mm, _ in v.designs), default=None)
    past = [d for _, d in v.designs]
    flag_counts = Counter(_flags(d) for d in past)
    registered_6 = any(m - mm < 6 for mm, _ in v.designs)
    registered_12 = any(m - mm < 12 for mm, _ in v.designs)
    years = min(2.0, (m - first) / 120.0) if first is not None else 0.0
    completed_recent = {(d.indication, d.phase) for mm, d in v.completed if m - mm < RECENT}
    rule = set(heuristic(episode))
    rule_pairs = {(d.indication, d.phase) for d in rule}
    fixed, groups, group_of, patterns = _layout(episode.catalogue)
    evidence = []
    for indication, phase in groups:
        reg = v.registered.get(indication, set())
        latest = v.latest.get(indication)
        prev = phase - 1
        has_prev = latest is not None and latest[0] == prev
        evidence.append((
            math.log1p(v.patients.get(indication, 0.0)) / 6.0,
            indication == top,
            not v.designs,
            has_prev,
            has_prev and latest[1],
            max(-1.0, min(2.0, latest[2])) if has_prev else 0.0,
            has_prev and m - latest[3] < RECENT,
            (indication, prev) in completed_recent,
            phase in reg,
            prev in reg,
            any(p > phase for p in reg),
            latest is not None and not latest[1],
            indication in v.new_standard,
            registered_6,
            registered_12,
            years,
            phase == 1 and not v.designs and indication == top,
            (indication, phase) in rule_pairs,
        ))
    by_group = np.array(evidence, dtype=float).reshape(len(groups), -1)[group_of]
    share = [flag_counts[f] / len(past) for f in patterns] if past else [0.5] * len(patterns)
    rows = np.empty((len(episode.catalogue), len(FEATURES)))
    rows[:, : fixed.shape[1]] = fixed
    rows[:, fixed.shape[1]: -4] = by_group[:, :-2]
    rows[:, -4] = share
    rows[:, -3:-1] = by_group[:, -2:]
    rows[:, -1] = [d in rule for d in episode.catalogue]
    return rows


def _design_matrix(
    episodes: Sequence[OfflineEpisode], features: Sequence[np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stacked features, labels and the episode index of every valid entry."""
    xs, ys, owner = [], [], []
    for i, (e, x) in enumerate(zip(episodes, features, strict=True)):
        label = set(e.label)
        valid = np.flatnonzero(e.mask)
        xs.append(x[valid])
        ys.append(np.array([e.catalogue[j] in label for j in valid], dtype=float))
        owner.append(np.full(valid.size, i))
    return np.vstack(xs), np.concatenate(ys), np.concatenate(owner)


def _fit_logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float) -> np.ndarray:
    """Weighted ridge logistic regression (intercept first), by L-BFGS."""
    xb = np.hstack([np.ones((x.shape[0], 1)), x])
    w = w / w.mean()
    n = w.sum()

    def loss(beta: np.ndarray) -> tuple[float, np.ndarray]:
        z = xb @ beta
        nll = -(w * (y * log_expit(z) + (1 - y) * log_expit(-z))).sum() / n
        grad = xb.T @ (w * (expit(z) - y)) / n
        pen = beta.copy()
        pen[0] = 0.0
        return nll + 0.5 * l2 * pen @ pen, grad + l2 * pen

    res = minimize(loss, np.zeros(xb.shape[1]), jac=True, method="L-BFGS-B")
    if not res.success:
        raise RuntimeError(f"the logistic fit did not converge: {res.message}")
    return res.x


def episode_returns(episodes: Sequence[OfflineEpisode], value: dict[str, float]) -> np.ndarray:
    """Per episode, its program's realised net value ($M): the return of the logged
    decisions (``value``: program id -> net value)."""
    return np.array([value[e.program_id] for e in episodes], dtype=float)


def standardised(x: np.ndarray) -> np.ndarray:
    """``(x - mean) / sd`` (zeros when every value is the same)."""
    sd = x.std()
    return (x - x.mean()) / sd if sd > 0 else np.zeros_like(x, dtype=float)


def rwbc_weights(returns: np.ndarray) -> np.ndarray:
    """``exp(clip(z, -CLIP, CLIP) / TEMPERATURE)`` of the standardised returns."""
    return np.exp(np.clip(standardised(returns), -CLIP, CLIP) / TEMPERATURE)


def ranking(episode: OfflineEpisode, p: np.ndarray) -> tuple[list[float], list[int]]:
    """The probabilities with the invalid entries at 0, and the entries most probable
    first (ties in catalogue order): what :func:`select` reads at any threshold."""
    p = np.where(episode.mask, p, 0.0)
    return p.tolist(), np.argsort(-p, kind="stable").tolist()


def select(
    episode: OfflineEpisode, p: np.ndarray, threshold: float, cap: int = CAP,
    ranked: tuple[list[float], list[int]] | None = None,
) -> tuple[TrialDesign, ...]:
    """The valid entries above ``threshold``, most probable first, at most ``cap``, one per
    (indication, phase); ``ranked``: :func:`ranking` of ``p``, when already computed."""
    probs, order = ranking(episode, p) if ranked is None else ranked
    out: list[TrialDesign] = []
    seen: set[tuple[str, int]] = set()
    for k in order:
        if probs[k] <= threshold or len(out) == cap:
            break
        d = episode.catalogue[k]
        if (d.indication, d.phase) not in seen:
            seen.add((d.indication, d.phase))
            out.append(d)
    return tuple(out)


@dataclass(frozen=True)
class ImitationPolicy:
    """A fitted logistic policy over catalogue entries and its decision threshold."""

    coef: np.ndarray
    threshold: float

    @classmethod
    def fit(
        cls, episodes: Sequence[OfflineEpisode], weights: np.ndarray | None = None,
        features: Sequence[np.ndarray] | None = None, l2: float = L2,
    ) -> ImitationPolicy:
        """BC (``weights`` None) or weighted BC (one weight per episode); ``features``:
        the episodes' :func:`entry_features`, when already computed."""
        if not episodes:
            raise ValueError("no episodes to learn from")
        feats = [entry_features(e) for e in episodes] if features is None else features
        x, y, owner = _design_matrix(episodes, feats)
        w = np.ones(len(episodes)) if weights is None else np.asarray(weights, dtype=float)
        if w.shape != (len(episodes),) or not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ValueError("weights: one positive finite number per episode")
        coef = _fit_logistic(x, y, w[owner], l2)
        probs = [expit(coef[0] + f @ coef[1:]) for f in feats]
        ranked = [ranking(e, p) for e, p in zip(episodes, probs, strict=True)]
        gold = [e.label for e in episodes]

        def train_f1(t: float) -> float:
            pred = [select(e, p, t, ranked=r)
                    for e, p, r in zip(episodes, probs, ranked, strict=True)]
            return portfolio_f1(pred, gold)["indication_f1_micro"]

        return cls(coef, max(THRESHOLDS, key=train_f1))

    def probabilities(self, episode: OfflineEpisode, features: np.ndarray | None = None):
        x = entry_features(episode) if features is None else features
        return expit(self.coef[0] + x @ self.coef[1:])

    def predict(
        self, episode: OfflineEpisode, features: np.ndarray | None = None, cap: int = CAP
    ) -> tuple[TrialDesign, ...]:
        return select(episode, self.probabilities(episode, features), self.threshold, cap)
