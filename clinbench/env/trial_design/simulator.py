"""The adaptive Phase II dose-finding trial: one step is one interim look.

A look either decides (a success claim for an arm, or a futility stop) or enrols the
next cohort, after optional arm dropping and a change of inclusion strictness, and then
shows the Data Monitoring Committee's statistics. The claim rule is the protocol's: a
success claim is accepted only for an arm whose efficacy statistic crosses its
group-sequential boundary at this look (``boundary_not_crossed`` otherwise). Invalid
actions change nothing and cost nothing but use the look.

Statistics (all analytic, see :mod:`clinbench.env.trial_design.statistics`): per dose arm
a Mantel-Haenszel z against control stratified by cohort (valid whatever the cohorts'
response levels and the allocation, so shifting allocation over time cannot fake an
effect), its information fraction ``sum_c n_arm n_ctl / (n_arm + n_ctl)`` over the
planned ``planned_per_arm / 2`` (not capped: over-running spends on the information
reached), a Lan-DeMets O'Brien-Fleming-type boundary per arm at ``alpha / 3``
(Bonferroni), a crossing confirmed by the stratified exact conditional test, Beta
posteriors, the predictive probability of success and Bayesian safety monitoring.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.special import betaincinv, ndtri

from clinbench.env.base import Env, EnvSpec, coerce_action, reset_arguments
from clinbench.env.trial_design import statistics as st
from clinbench.env.trial_design.actions import (
    SUM_TOL,
    ErrorCode,
    TrialAction,
    argument_error,
)
from clinbench.env.trial_design.observation import Observation
from clinbench.env.trial_design.score import ruled_out, score_parts
from clinbench.env.trial_design.tasks import ARMS, DOSE_ARMS, TASK_VERSION, TaskParams
from clinbench.env.trial_design.world import World, draw_world, max_patients

N_ARMS, N_DOSES = len(ARMS), len(DOSE_ARMS)
#: Boundaries already computed: (alpha, information fractions so far) -> (boundary at
#: the last of them, the SpendingBoundary after it). A boundary depends on nothing else,
#: and cohort sizes repeat across worlds and arms, so most looks are a lookup. Exact:
#: a hit returns what the computation would. Cleared when it grows past the bound.
_BOUNDARY_MEMO: dict[tuple[float, tuple[float, ...]], tuple[float, st.SpendingBoundary]] = {}
_MEMO_LIMIT = 200_000
#: The exact test's null distribution before any stratum (read-only, shared).
_POINT_MASS = np.ones(1)
_POINT_MASS.flags.writeable = False


class ArmBoundary:
    """One dose arm's online boundary, looked up in the memo before it is computed."""

    __slots__ = ("alpha", "fractions", "state")

    def __init__(self, alpha: float, start: st.SpendingBoundary):
        """``start``: the state before any look, shared (a look copies before it moves)."""
        self.alpha = alpha
        self.fractions: tuple[float, ...] = ()
        self.state = start

    @property
    def information_fraction(self) -> float:
        return self.fractions[-1] if self.fractions else 0.0

    def look(self, t: float) -> float:
        key = (self.alpha, (*self.fractions, t))
        hit = _BOUNDARY_MEMO.get(key)
        if hit is None:
            state = self.state.copy()  # states in the memo are shared: never mutate them
            hit = (state.look(t), state)
            if len(_BOUNDARY_MEMO) >= _MEMO_LIMIT:
                _BOUNDARY_MEMO.clear()
            _BOUNDARY_MEMO[key] = hit
        self.fractions = key[1]
        self.state = hit[1]
        return hit[0]


def split_cohort(n: int, allocation: Sequence[float]) -> list[int]:
    """Integer patients per arm: ``n * allocation`` rounded by largest remainder (ties to
    the earlier arm), so an arm with allocation 0 gets 0 patients."""
    quota = [n * float(a) for a in allocation]
    counts = [math.floor(q + 1e-9) for q in quota]
    left = n - sum(counts)
    if left > 0:
        frac = [q - c if a > 0 else -1.0 for q, c, a in zip(quota, counts, allocation, strict=True)]
        for i in sorted(range(len(frac)), key=lambda i: -frac[i])[:left]:
            counts[i] += 1
    return counts


class TrialDesignEnv(Env[Observation, TrialAction]):
    """One dose-finding task; ``reset(seed)`` draws the world of ``seed``."""

    def __init__(self, params: TaskParams, spec: EnvSpec | None = None):
        from clinbench.env.trial_design.macro import TrialMacros

        self.params = params
        self.spec = spec or EnvSpec(
            "trial_design", params.name, TASK_VERSION, params, params.description
        )
        self.macro_space = TrialMacros(params)
        self._alpha_arm = st.per_arm_alpha(params.alpha, N_DOSES)
        self._boundary0 = st.SpendingBoundary(self._alpha_arm)
        self._final_c = float(-ndtri(self._alpha_arm))
        self._info_max = params.planned_per_arm / 2.0
        self._max_n = max_patients(params)
        self._toxic0 = np.atleast_1d(
            st.prob_toxic(np.zeros(N_ARMS), np.zeros(N_ARMS), params.ae_threshold)
        )
        self._obs0: Observation | None = None
        self._world: World | None = None
        self._done = True
        self._root_seq: np.random.SeedSequence | None = None

    # ------------------------------------------------------------------ API
    @property
    def world(self) -> World:
        """The hidden truth (for the reference planner and tests; never for agents)."""
        if self._world is None:
            raise RuntimeError("call reset() first")
        return self._world

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """Draw the world of ``seed`` and return the first look (no data yet).

        ``options={"fixed_world": True}`` keeps the canonical world (seed 0) and draws
        only the patients from ``seed``.
        """
        seed, fixed = reset_arguments(seed, options)
        given = seed  # an unseeded reset reports no seed: the world's stays inside
        if seed is None:
            if self._root_seq is None:
                self._root_seq = np.random.SeedSequence()
            seed = int(self._root_seq.spawn(1)[0].generate_state(1)[0])
        self._world = draw_world(self.params, 0, seed) if fixed else draw_world(self.params, seed)
        self._look = 0
        self._cohort = 0
        self._weeks = 0.0
        self._cost = 0.0
        self._strictness = 0.5
        self._active = np.ones(N_ARMS, dtype=bool)
        self._n = np.zeros(N_ARMS, dtype=np.int64)
        self._x = np.zeros(N_ARMS, dtype=np.int64)
        self._ae = np.zeros(N_ARMS, dtype=np.int64)
        # the Mantel-Haenszel sums and the boundaries, per dose arm, as plain floats: a
        # look updates a few of them one by one (numpy's per-element cost would dominate)
        self._mh_num = [0.0] * N_DOSES
        self._mh_var = [0.0] * N_DOSES
        self._mh_w = [0.0] * N_DOSES
        # the exact test's strata (n_arm, n_ctl, responders), the arm's responders in
        # them, and their null distribution so far (strata convolved, first value, pmf)
        self._strata: list[list[tuple[int, int, int]]] = [[] for _ in DOSE_ARMS]
        self._arm_x = [0] * N_DOSES
        self._exact = [(0, 0, _POINT_MASS)] * N_DOSES
        self._bounds = [ArmBoundary(self._alpha_arm, self._boundary0) for _ in DOSE_ARMS]
        self._boundary = [math.inf] * N_DOSES
        self._n_unsafe = 0
        self._toxic = self._toxic0
        self._decision: str | None = None
        self._claim: str | None = None
        self._evidence = False
        self._terminated_by: str | None = None
        self._last_error: str | None = None
        self._done = False
        self._score = 0.0
        if self._obs0 is None:  # the first look shows no data: the same in every world
            self._obs0 = self._observe()
        self._obs = self._obs0
        return self._obs, {"seed": given, "fixed_world": fixed, "error": None}

    def step(
        self, action: TrialAction | dict[str, Any]
    ) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """Play one look. Invalid actions change nothing and cost nothing but the look."""
        if self._done:
            raise RuntimeError("the episode is over (or was never started): call reset()")
        a = coerce_action(action, TrialAction)
        info: dict[str, Any] = {"look": self._look, "error": None, "outcome": None}
        error = argument_error(a) or self._state_error(a)
        final = self._obs.final_analysis
        self._look += 1
        if error is not None:
            info["error"] = error.value
        elif a.stop_for_success:
            self._decide("success", a.success_arm)
        elif a.stop_for_futility:
            self._decide("futility", None)
        else:
            info["outcome"] = self._enrol(a)
        self._last_error = info["error"]
        if not self._done:
            if final:  # the last analysis passed without a decision
                self._end(self._obs_final_reason())
            elif self._look >= self.params.max_looks:
                self._end("max_looks")
        self._obs = self._observe()
        parts = self.score_parts() if self._done else None
        new_score = parts["score"] if parts else 0.0
        reward = new_score - self._score
        self._score = new_score
        if parts:
            info["score_parts"] = parts
            info["score"] = parts["score"]
            info["terminated_by"] = self._terminated_by
            info["steps"] = self._look
            info.update(self._metrics())
        return self._obs, reward, self._done, False, info

    def score_parts(self) -> dict[str, float]:
        """The score of the trial as it would end now (0 until a decision)."""
        return score_parts(
            self.world,
            self._decision,
            self._claim,
            self._evidence,
            self._cost,
            self._weeks,
            self._n_unsafe,
        )

    # ------------------------------------------------------------------ actions
    def _state_error(self, a: TrialAction) -> ErrorCode | None:
        """What the trial's current state forbids (arguments are already well-formed)."""
        if a.stop_for_success:
            j = DOSE_ARMS.index(a.success_arm)
            return None if self._obs.crossed[j] else ErrorCode.BOUNDARY_NOT_CROSSED
        if a.stop_for_futility:
            return None
        active = self._active.copy()
        if a.drop_arm is not None:
            i = ARMS.index(a.drop_arm)
            if i == 0 or not active[i]:
                return ErrorCode.CANNOT_DROP
            active[i] = False
        alloc = a.allocation
        if alloc[0] is not None:
            w = np.asarray(alloc, dtype=float)
            if np.any(w[~active] > 0):
                return ErrorCode.ALLOCATION_TO_DROPPED_ARM
            if abs(w[active].sum() - 1.0) > SUM_TOL:
                return ErrorCode.BAD_ALLOCATION
        n = a.n_next_cohort
        if n == 0:
            return None
        s = (
            self._strictness
            if a.inclusion_criteria_strictness is None
            else float(a.inclusion_criteria_strictness)
        )
        cost, weeks = self._cohort_cost(n, s)
        if cost > self.params.budget - self._cost + 1e-9:
            return ErrorCode.OVER_BUDGET
        if self._weeks + weeks > self.params.max_weeks + 1e-9:
            return ErrorCode.OVER_DURATION
        return None

    def _cohort_cost(self, n: int, s: float) -> tuple[float, float]:
        p = self.params
        if n == 0:
            return 0.0, p.look_weeks
        cost = n * (p.cost_base + p.cost_strictness * s) + p.look_cost
        return cost, n / (p.enrol_rate * (1.5 - s)) + p.look_weeks

    def _decide(self, decision: str, arm: str | None) -> None:
        self._decision, self._claim = decision, arm
        if decision == "futility":
            self._evidence = all(ruled_out(self._obs, self.params))
        self._end(decision)

    def _enrol(self, a: TrialAction) -> str:
        p, w = self.params, self.world
        if a.drop_arm is not None:
            self._active[ARMS.index(a.drop_arm)] = False
        if a.inclusion_criteria_strictness is not None:
            self._strictness = float(a.inclusion_criteria_strictness)
        s, n = self._strictness, a.n_next_cohort
        cost, weeks = self._cohort_cost(n, s)
        self._cost += cost
        self._weeks += weeks
        if n == 0:
            return "waited"
        active = self._active.tolist()
        if a.allocation[0] is None:
            alloc = [on / sum(active) for on in active]
        else:
            weights = [v * on for v, on in zip(a.allocation, active, strict=True)]
            alloc = [v / sum(weights) for v in weights]
        starts = self._n.tolist()
        ms = [
            min(c, self._max_n - k) for c, k in zip(split_cohort(n, alloc), starts, strict=True)
        ]
        m = np.array(ms)
        # cohort response levels: one quantile per cohort shared by the arms
        r = w.response_rate(s)
        kappa = p.kappa0 * (1.0 + p.kappa_strictness * s)
        u = w.u_cohort[min(self._cohort, w.u_cohort.size - 1)]
        rate = betaincinv(kappa * r, kappa * (1.0 - r), u).tolist()
        x, ae = [0] * N_ARMS, [0] * N_ARMS
        for i in range(N_ARMS):
            if ms[i]:
                lo, hi = starts[i], starts[i] + ms[i]
                x[i] = int(np.count_nonzero(w.u_response[i, lo:hi] < rate[i]))
                ae[i] = int(np.count_nonzero(w.u_ae[i, lo:hi] < w.ae_list[i]))
        self._cohort += 1
        self._n += m
        self._x += x
        self._ae += ae
        self._n_unsafe += sum(mi for mi, bad in zip(ms, w.unsafe_list, strict=True) if bad)
        self._mantel_haenszel(ms, x)
        self._update_boundaries()
        self._toxic = st.prob_toxic(self._ae, self._n, p.ae_threshold)
        if self._safety_stop():
            self._end("safety")
            return "safety_stop"
        return f"enrolled {n}"

    def _mantel_haenszel(self, m: list[int], x: list[int]) -> None:
        """Add this cohort's 2x2 tables (each dose arm vs control) to the MH sums and to
        the exact test's strata."""
        n0, x0 = m[0], x[0]
        if n0 == 0:
            return
        for j in range(N_DOSES):
            n1, x1 = m[j + 1], x[j + 1]
            if n1 == 0:
                continue
            big_n, tot = n1 + n0, x1 + x0
            self._strata[j].append((n1, n0, tot))
            self._arm_x[j] += x1
            self._mh_w[j] += n1 * n0 / big_n
            self._mh_num[j] += x1 - n1 * tot / big_n
            if big_n > 1:
                self._mh_var[j] += n1 * n0 * tot * (big_n - tot) / (big_n * big_n * (big_n - 1))

    def _update_boundaries(self) -> None:
        """This look's boundary of every active dose arm that gained information.

        The information fraction is not capped at 1: the first look at or past the
        planned maximum is the arm's final analysis and spends the alpha left at the
        information actually reached (:meth:`statistics.SpendingBoundary.look`).
        """
        t = [w / self._info_max for w in self._mh_w]
        active = self._active.tolist()
        for j in range(N_DOSES):
            b = self._bounds[j]
            tj = round(t[j], 12)
            if active[j + 1] and tj > b.information_fraction:
                self._boundary[j] = float(b.look(tj))
            else:
                self._boundary[j] = math.inf

    def _safety_stop(self) -> bool:
        """The monitoring rule: an active dose arm with at least ``safety_min_n`` patients
        and P(AE rate > threshold | data) above ``safety_prob`` stops the trial (the
        posterior of :func:`statistics.safety_stop`, computed once per look)."""
        p = self.params
        active, n, toxic = self._active.tolist(), self._n.tolist(), self._toxic.tolist()
        return any(
            active[i] and n[i] >= p.safety_min_n and toxic[i] > p.safety_prob
            for i in range(1, N_ARMS)
        )

    def _exact_p(self, j: int) -> float:
        """Dose ``j``'s one-sided mid-p value of the stratified exact conditional test
        (strata added since the last call are convolved in; most looks never ask)."""
        done, first, pmf = self._exact[j]
        strata = self._strata[j]
        if done < len(strata):
            first, pmf = st.null_distribution(strata[done:], (first, pmf))
            self._exact[j] = (len(strata), first, pmf)
        return st.upper_tail(first, pmf, self._arm_x[j], mid=True)

    def _crosses(self, j: int, z: float, b: float) -> bool:
        """The claim rule: the MH z reaches the boundary and the stratified exact
        conditional test confirms it, its mid-p value at most the boundary's nominal
        level ``Phi(-b)``.

        Why: the normal approximation alone has a heavy upper tail when a dose is small
        next to control within cohorts (one cohort of 5 on the dose and 70 on control at
        a rate of 0.1: 3.7 times the nominal level at b = 2.4; legal plans reached a
        familywise 6.6 % at a nominal 2.5 %). The conditional test's null distribution
        is exact for any allocation. Mid-p, not the exact p-value: over one 2 x 2 table
        with 2-100 patients per arm, rates 0.05-0.5 and b from 2 to 4.3, the rule's size
        is at most 1.09 times nominal (the z alone: up to 1,600 times), while the exact
        p-value's discreteness holds it at most 0.78 times and cost the heuristic
        0.009-0.034 of score in power (``docs/environments.md`` II.4). Computed only
        when the z crosses (about 20 us), so a look costs almost nothing more.
        """
        if not (z >= b and b < math.inf):
            return False
        return self._exact_p(j) <= 0.5 * math.erfc(b / math.sqrt(2.0))

    def _end(self, reason: str) -> None:
        self._done = True
        self._terminated_by = reason

    def _obs_final_reason(self) -> str:
        p = self.params
        if self._look >= p.max_looks:
            return "max_looks"
        cost, _ = self._cohort_cost(1, 0.0)
        return "budget" if cost > p.budget - self._cost + 1e-9 else "duration"

    # ------------------------------------------------------------------ observation
    def _z(self) -> list[float]:
        """Mantel-Haenszel z per dose arm (0 without a stratum that has variance)."""
        return [
            num / math.sqrt(var) if var > 0 else 0.0
            for num, var in zip(self._mh_num, self._mh_var, strict=True)
        ]

    def _observe(self) -> Observation:
        p = self.params
        z = self._z()
        t = [min(w / self._info_max, 1.0) for w in self._mh_w]
        b = self._boundary
        active = self._active.tolist()
        crossed = [
            on and self._crosses(j, zj, bj)
            for j, (on, zj, bj) in enumerate(zip(active[1:], z, b, strict=True))
        ]
        pp = st.predictive_probabilities(z, t, self._final_c)
        cost1, weeks1 = self._cohort_cost(1, 0.0)
        final = (
            self._look >= p.max_looks - 1
            or cost1 > p.budget - self._cost + 1e-9
            or self._weeks + weeks1 > p.max_weeks + 1e-9
        )
        s = self._strictness
        return Observation.from_fields(
            {
                "task_id": p.name,
                "look": self._look,
                "max_looks": p.max_looks,
                "weeks": round(self._weeks, 9),
                "max_weeks": p.max_weeks,
                "budget_remaining": round(p.budget - self._cost, 9),
                "initial_budget": p.budget,
                "strictness": s,
                "cost_per_patient": p.cost_base + p.cost_strictness * s,
                "enrol_per_week": p.enrol_rate * (1.5 - s),
                "planned_per_arm": p.planned_per_arm,
                "active": tuple(active),
                "n": tuple(self._n.tolist()),
                "responders": tuple(self._x.tolist()),
                "adverse_events": tuple(self._ae.tolist()),
                "z": tuple(z),
                "information_fraction": tuple(t),
                "boundary": tuple(b),
                "crossed": tuple(crossed),
                "predictive_probability": tuple(pp),
                "prob_toxic": tuple(self._toxic.tolist()),
                "ae_threshold": p.ae_threshold,
                "alpha_per_arm": self._alpha_arm,
                "final_analysis": bool(final) and not self._done,
                "last_error": self._last_error,
            }
        )

    # ------------------------------------------------------------------ episode metrics
    def _metrics(self) -> dict[str, float]:
        """The operating characteristics' raw material (``Family.episode_metrics``)."""
        w = self.world
        good = w.good_arms
        claimed = self._decision == "success"
        j = DOSE_ARMS.index(self._claim) if claimed else -1
        best = int(np.argmax(np.where(good, w.effect, -np.inf))) if good.any() else -1
        return {
            "null_world": float(w.scenario == "null"),
            "good_world": float(good.any()),
            "claimed": float(claimed),
            "false_claim": float(claimed and not good[j]),
            "correct_claim": float(claimed and bool(good[j])),
            "picked_best": float(claimed and j == best),
            "futility_stop": float(self._decision == "futility"),
            "safety_stop": float(self._terminated_by == "safety"),
            "patients": float(self._n.sum()),
            "weeks": float(self._weeks),
            "unsafe_patients": float(self._n_unsafe),
        }

