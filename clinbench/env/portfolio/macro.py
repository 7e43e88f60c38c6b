"""Macro-actions and features of the portfolio task, for learning agents and Gymnasium.

Seven macro-actions cover what a development team does at a decision date; each fills
in the concrete portfolio from the observation with the standard design (biomarker
selection when the drug has a biomarker, monotherapy, Phase II single-arm, Phase III
randomised), in order of promise, cut to the cap and the cash. A macro that would
start nothing is masked out (``wait`` and ``stop`` are always valid).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from clinbench.env.base import MacroSpace
from clinbench.env.portfolio.actions import PortfolioAction
from clinbench.env.portfolio.observation import IndicationView, Observation
from clinbench.env.portfolio.params import LINE_SHARE, TUMOUR_INCIDENCE, PortfolioParams
from clinbench.env.portfolio.trials import TrialDesign, catalogue_for, trial_cost

MACROS: tuple[tuple[str, str], ...] = (
    ("wait", "start nothing this period"),
    ("advance_best", "advance the indication with the best readout to its next phase"),
    ("advance_all", "advance every indication whose last phase succeeded"),
    ("expand_one", "open Phase I in the most valuable untried indication"),
    ("expand_two", "open Phase I in the two most valuable untried indications"),
    ("advance_and_expand", "advance the best indication and open one more"),
    ("stop", "stop the program (running trials read out; nothing new starts)"),
)
PER_INDICATION = ("value", "earned", "running", "estimate", "success", "tried", "filed",
                  "new_standard")
#: Scale of estimates in the features: (estimate - ESTIMATE_LOW) / ESTIMATE_SPAN.
ESTIMATE_LOW, ESTIMATE_SPAN = -1.5, 3.0


@cache
def catalogue_index(keys: tuple[str, ...]) -> dict[TrialDesign, int]:
    return {d: k for k, d in enumerate(catalogue_for(keys))}


def standard_design(obs: Observation, key: str, phase: int) -> TrialDesign:
    return TrialDesign(key, phase, randomised=phase == 3, biomarker=obs.biomarker)


def advance_candidates(obs: Observation) -> list[IndicationView]:
    """Indications whose last phase succeeded and whose next phase is untried, best
    readout first."""
    out = [
        i for i in obs.indications
        if 1 <= i.earned < 3 and not i.filed and (i.earned + 1) not in i.tried
    ]
    return sorted(out, key=lambda i: (-(i.last_estimate or 0.0), -i.value, i.key))


def expand_candidates(obs: Observation) -> list[IndicationView]:
    """Untried indications, most valuable first."""
    return sorted((i for i in obs.indications if not i.tried), key=lambda i: (-i.value, i.key))


class PortfolioMacros(MacroSpace[Observation, PortfolioAction]):
    """The seven macro-actions and the features of a portfolio task."""

    def __init__(self, params: PortfolioParams):
        self.params = params
        self.names = tuple(n for n, _ in MACROS)
        self.descriptions = tuple(d for _, d in MACROS)
        self.index = {n: k for k, n in enumerate(self.names)}
        self.feature_names = (
            "decision", "cash", "biomarker", "running", "approvals", "after_cutoff",
            *(f"ind{j}_{f}" for j in range(params.n_indications) for f in PER_INDICATION),
        )
        self._max_value = max(TUMOUR_INCIDENCE.values()) * max(LINE_SHARE.values())

    # ------------------------------------------------------------------ helpers
    def fit(self, obs: Observation, wanted: list[TrialDesign]) -> tuple[TrialDesign, ...]:
        """``wanted`` in order, keeping what is startable, affordable and under the cap."""
        index = catalogue_index(obs.indication_keys)
        out, cash = [], obs.cash
        for d in wanted:
            cost = trial_cost(self.params, d)
            if len(out) < obs.portfolio_cap and obs.catalogue_mask[index[d]] and cost <= cash:
                out.append(d)
                cash -= cost
        return tuple(out)

    @staticmethod
    def wanted(obs: Observation) -> dict[str, list[TrialDesign]]:
        """What each macro that starts trials asks for, before :meth:`fit`."""
        adv = [standard_design(obs, i.key, i.earned + 1) for i in advance_candidates(obs)]
        exp = [standard_design(obs, i.key, 1) for i in expand_candidates(obs)]
        return {
            "advance_best": adv[:1],
            "advance_all": adv,
            "expand_one": exp[:1],
            "expand_two": exp[:2],
            "advance_and_expand": adv[:1] + exp[:1],
        }

    def portfolio(
        self, name: str, obs: Observation, wanted: dict[str, list[TrialDesign]] | None = None
    ) -> tuple[TrialDesign, ...]:
        """The trials macro ``name`` starts (``wanted``: :meth:`wanted` of ``obs``, where
        the caller has it already)."""
        chosen = self.fit(obs, (self.wanted(obs) if wanted is None else wanted).get(name, []))
        if name == "advance_and_expand" and len(chosen) < 2:
            return ()  # only both together make this macro
        return chosen

    def index_of(self, action: PortfolioAction) -> int:
        """The macro-action a concrete portfolio corresponds to (for imitation labels and
        logged datasets), read from its shape: a stop, nothing, new indications only
        (one or more), next phases only (one or more), or both."""
        if action.stop is True:
            return self.index["stop"]
        trials = action.trials if isinstance(action.trials, (list, tuple)) else ()
        phases = [getattr(d, "phase", None) for d in trials]
        opened = sum(p == 1 for p in phases)
        advanced = len(phases) - opened
        if opened and advanced:
            return self.index["advance_and_expand"]
        if opened:
            return self.index["expand_one" if opened == 1 else "expand_two"]
        if advanced:
            return self.index["advance_best" if advanced == 1 else "advance_all"]
        return self.index["wait"]

    # ------------------------------------------------------------------ MacroSpace
    def mask(self, obs: Observation) -> np.ndarray:
        m = np.zeros(len(self.names), dtype=bool)
        m[self.index["wait"]] = m[self.index["stop"]] = True
        wanted = self.wanted(obs)
        for k, name in enumerate(self.names):
            if name not in ("wait", "stop"):
                m[k] = bool(self.portfolio(name, obs, wanted))
        return m

    def to_action(self, k: int, obs: Observation) -> PortfolioAction:
        name = self.names[k]
        if name == "stop":
            return PortfolioAction(stop=True)
        return PortfolioAction(trials=self.portfolio(name, obs))

    def features(self, obs: Observation) -> np.ndarray:
        p = self.params
        running = sum(1 for t in obs.trials if not t.read_out)
        row = [
            obs.decision / max(obs.max_decisions, 1),
            obs.cash / max(obs.budget, 1e-9),
            float(obs.biomarker),
            running / (3 * p.portfolio_cap),
            obs.approvals / max(len(obs.indications), 1),
            float(obs.month >= p.cutoff_month),
        ]
        for i in obs.indications:
            est = i.last_estimate
            row += [
                i.patients / self._max_value,
                i.earned / 3.0,
                float(i.running),
                0.0 if est is None else (est - ESTIMATE_LOW) / ESTIMATE_SPAN,
                float(i.last_success),
                float(bool(i.tried)),
                float(i.filed),
                float(i.new_standard),
            ]
        return np.clip(np.asarray(row, dtype=np.float64), 0.0, 1.0)


class CatalogueActions:
    """The portfolio as a 0/1 vector over the program's catalogue (Gymnasium's
    ``MultiBinary``): the hook ``clinbench.env.gym_adapter`` reads as
    ``env.binary_actions``. ``mask(obs)`` marks the entries startable now; a vector
    setting no bit waits; a masked-out bit is still played, and the environment refuses
    the portfolio (``info["error"]``, nothing changes)."""

    def __init__(self, params: PortfolioParams):
        self.n = 16 * params.n_indications

    def mask(self, obs: Observation) -> np.ndarray:
        return np.asarray(obs.catalogue_mask, dtype=bool)

    def to_action(self, bits: np.ndarray, obs: Observation) -> PortfolioAction:
        chosen = np.flatnonzero(bits)
        designs = catalogue_for(obs.indication_keys)
        return PortfolioAction(trials=tuple(designs[int(k)] for k in chosen))
