"""The online development task: one program, one decision every six months.

``reset(seed)`` draws the universe of ``seed`` and its program 0 (from the task's start
window); each step starts a portfolio (or stops the program), then time passes to the
next decision date and readouts, filings and reviews happen as the world says. After
the last decision (or a stop) every pending readout and review is played out. The
score (``score``) reads the hidden truth, so it is paid as the last step's reward and
every earlier reward is 0: the return equals the score and no reward reveals the truth
mid-episode.

Each played decision is also compared with what the program's sponsor would have started
in the same state (its logged behaviour policy, with the decision noise of the offline
data's stream): the final ``info`` holds the episode's agreement with the sponsor as
indication and strict F1 in per cent (micro over its decisions, as in the offline task),
so online agents get the offline task's metric beside their value. The sponsor's draws come from
their own Generator: they change nothing the agent sees or is scored on.

An invalid action changes nothing: no trial, no cost, no time (``info["error"]`` and
``info["message"]`` say why, and the same observation comes back). So that a policy
repeating one cannot run forever, ``max_invalid`` invalid actions in a row end the
episode as it stands (``terminated_by="invalid_actions"``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clinbench.env.base import Env, EnvSpec, reset_arguments
from clinbench.env.portfolio.actions import (
    ErrorCode,
    PortfolioAction,
    Refusal,
    as_action,
    parse_portfolio,
)
from clinbench.env.portfolio.history import SPONSOR
from clinbench.env.portfolio.macro import CatalogueActions, PortfolioMacros
from clinbench.env.portfolio.metrics import indication_set, strict_set
from clinbench.env.portfolio.observation import IndicationView, Observation, TrialView
from clinbench.env.portfolio.params import TASK_VERSION, PortfolioParams
from clinbench.env.portfolio.score import score_parts
from clinbench.env.portfolio.sponsor import regime_seen, sponsor_portfolio
from clinbench.env.portfolio.state import ProgramState, Trial
from clinbench.env.portfolio.trials import TrialDesign, catalogue_for, phase_allows, trial_cost
from clinbench.env.portfolio.value import expected_value
from clinbench.env.portfolio.world import FAMILY_TAG, Program, draw_program, draw_universe

FAMILY_NAME = "portfolio"


class PortfolioEnv(Env[Observation, Any]):
    """One portfolio task; ``reset(seed)`` draws the program of ``seed``."""

    def __init__(self, params: PortfolioParams, spec: EnvSpec | None = None):
        self.params = params
        self.spec = spec or EnvSpec(FAMILY_NAME, params.name, TASK_VERSION, params,
                                    params.description)
        self.macro_space = PortfolioMacros(params)
        #: the portfolio as a 0/1 vector over the catalogue (Gymnasium ``MultiBinary``)
        self.binary_actions = CatalogueActions(params)
        self._state: ProgramState | None = None
        self._done = True
        self._root_seq: np.random.SeedSequence | None = None

    # ------------------------------------------------------------------ API
    @property
    def world(self) -> Program:
        """The hidden truth (for the reference planner and tests; never for agents)."""
        if self._state is None:
            raise RuntimeError("call reset() first")
        return self._state.program

    @property
    def state(self) -> ProgramState:
        if self._state is None:
            raise RuntimeError("call reset() first")
        return self._state

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """Draw the program of ``seed``. ``options={"fixed_world": True}`` keeps the
        program of seed 0 and draws only its trials' luck from ``seed``."""
        seed, fixed = reset_arguments(seed, options)
        given = seed
        if seed is None:
            if self._root_seq is None:
                self._root_seq = np.random.SeedSequence()
            seed = int(self._root_seq.spawn(1)[0].generate_state(1)[0])
        if fixed:
            program = draw_program(draw_universe(self.params, 0), 0, luck_seed=seed)
        else:
            program = draw_program(draw_universe(self.params, seed), 0)
        self._state = ProgramState(program)
        self._decision = 0
        self._steps = 0
        self._invalid = 0
        self._ev = expected_value(program)
        self._sponsor_rng = np.random.default_rng(
            [FAMILY_TAG, program.universe.seed, SPONSOR, program.index]
        )
        #: hits and sizes of the indication and strict sets against the sponsor's
        self._agreement = [0, 0, 0, 0]
        self._done = False
        self._terminated_by: str | None = None
        self._catalogue_keys: tuple[str, ...] | None = None
        self._views: dict[tuple[str, bool], TrialView] = {}
        self._obs = self._observe(None)
        return self._obs, {"seed": given, "fixed_world": fixed, "error": None}

    def step(self, action: Any) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        if self._done:
            raise RuntimeError("the episode is over (or was never started): call reset()")
        self._steps += 1
        info: dict[str, Any] = {"decision": self._decision, "error": None, "message": None,
                                "outcome": None}
        checked = self._check(action)
        if isinstance(checked, Refusal):
            info["error"], info["message"] = checked.code.value, checked.message
            self._invalid += 1
            if self._invalid < self.params.max_invalid:
                return self._obs, 0.0, False, False, info
            self._end("invalid_actions")
        else:
            self._invalid = 0
            action, designs = checked
            self._compare_with_sponsor(() if action.stop else designs)
            if action.stop:
                self._end("stop")
            else:
                started = self.state.start(designs)
                info["outcome"] = {"started": [t.id for t in started]}
                self._decision += 1
                if self._decision >= self.params.horizon:
                    self._end("horizon")
                else:
                    self.state.advance(self.state.program.start_month
                                       + self._decision * self.params.decision_months)
        reward = 0.0
        self._obs = self._observe(info["error"])
        if self._done:
            parts = score_parts(self.state, self._ev)
            reward = parts["score"]
            info.update(self._final_info(parts))
        return self._obs, float(reward), self._done, False, info

    # ------------------------------------------------------------------ internals
    def _check(self, action: Any) -> tuple[PortfolioAction, tuple[TrialDesign, ...]] | Refusal:
        """The action and its designs if it can be played now, else why not."""
        a = as_action(action)
        if isinstance(a, Refusal):
            return a
        designs = parse_portfolio(a, self._obs.indication_keys, self.params.portfolio_cap)
        if isinstance(designs, Refusal):
            return designs
        for d in designs:
            error = self.state.design_error(d)
            if error is not None:
                return Refusal(ErrorCode(error), f"{d.label}: {error.replace('_', ' ')}")
        cost = sum(trial_cost(self.params, d) for d in designs)
        if cost > self.state.cash + 1e-9:
            return Refusal(ErrorCode.OVER_BUDGET,
                           f"the portfolio costs {cost:.1f} $M; cash is {self.state.cash:.1f} $M")
        return a, designs

    def _compare_with_sponsor(self, designs: tuple[TrialDesign, ...]) -> None:
        sponsor = sponsor_portfolio(self.state, self._sponsor_rng)
        for k, view in enumerate((indication_set, strict_set)):
            mine, theirs = view(designs), view(sponsor)
            self._agreement[2 * k] += len(mine & theirs)
            self._agreement[2 * k + 1] += len(mine) + len(theirs)

    def _f1(self, k: int) -> float:
        """Micro F1 over the decisions, in per cent (100 when neither started anything)."""
        hits, size = self._agreement[2 * k], self._agreement[2 * k + 1]
        return 100.0 if size == 0 else 200.0 * hits / size

    def _end(self, reason: str) -> None:
        self.state.finish()
        self._done = True
        self._terminated_by = reason

    def _final_info(self, parts: dict[str, float]) -> dict[str, Any]:
        trials = self.state.trials
        return {
            "score": parts["score"],
            "score_parts": parts,
            "terminated_by": self._terminated_by,
            "steps": self._steps,
            "approvals": parts["approvals"],
            "npv": parts["npv"],
            "rnpv": parts["rnpv"],
            "trials_started": float(len(trials)),
            "phase3_started": float(sum(t.design.phase == 3 for t in trials)),
            "any_approval": float(parts["approvals"] > 0),
            "sponsor_f1": self._f1(0),
            "sponsor_strict_f1": self._f1(1),
        }

    def _observe(self, error: str | None) -> Observation:
        s, p = self.state, self.params
        month = s.month
        records = s.visible_records()
        seen = regime_seen(s, records)
        by_indication: dict[str, list] = {ind.key: [] for ind in s.program.indications}
        for t in s.trials:
            by_indication[t.design.indication].append(t)
        now = s.standing()
        views = []
        for ind in s.program.indications:
            mine = by_indication[ind.key]
            last = None  # the latest read-out trial (the later started on a tie)
            for t in mine:
                if t.read_out(month) and (
                    last is None or t.outcome.readout_month >= last.outcome.readout_month
                ):
                    last = t
            views.append(IndicationView(
                key=ind.key, tumour=ind.tumour, line=ind.line, patients=ind.patients,
                value=ind.value, earned=now.earned.get(ind.key, 0),
                tried=tuple(sorted({t.design.phase for t in mine})),
                running=ind.key in now.running,
                last_phase=last.design.phase if last else 0,
                last_estimate=last.outcome.estimate if last else None,
                last_success=bool(last.outcome.success) if last else False,
                filed=ind.key in now.filed, approved=ind.key in now.approved,
                new_standard=ind.key in seen,
            ))
        trials = tuple(self._trial_view(t, t.read_out(month)) for t in s.trials)
        keys = tuple(v.key for v in views)
        phase, row, allowed, cost = self._catalogue(keys)
        if self._done:
            mask = (False,) * phase.size
        else:
            # design_error's state checks per (indication, phase): not filed, earned the
            # phase below, none running
            open_ = np.zeros((len(keys), 4), dtype=np.bool_)
            for j, key in enumerate(keys):
                if key not in now.filed:
                    running = now.running.get(key, ())
                    for ph in range(1, min(3, now.earned.get(key, 0) + 1) + 1):
                        open_[j, ph] = ph not in running
            ok = allowed & (cost <= s.cash + 1e-9) & open_[row, phase]
            mask = tuple(ok.tolist())
        prog = s.program
        return Observation(
            task_id=self.spec.id, program_id=prog.id, drug_class=prog.drug_class,
            modality=prog.modality, biomarker=prog.biomarker, sponsor_size=prog.sponsor.size,
            decision=self._decision, max_decisions=p.horizon, month=month, cash=s.cash,
            budget=s.budget, portfolio_cap=p.portfolio_cap, indications=tuple(views),
            trials=trials, catalogue_mask=mask, records=records,
            approvals=len(now.approved), last_error=error,
        )

    def _trial_view(self, t: Trial, read_out: bool) -> TrialView:
        """``t`` as the agent sees it; a view changes only when the trial reads out, so
        each (trial, read out) view is built once per episode."""
        view = self._views.get((t.id, read_out))
        if view is None:
            d, o = t.design, t.outcome
            view = self._views[(t.id, read_out)] = TrialView(
                id=t.id, indication=d.indication, phase=d.phase, randomised=d.randomised,
                biomarker=d.biomarker, combination=d.combination, start=t.start_month,
                readout=o.readout_month, cost=t.cost, read_out=read_out,
                estimate=o.estimate if read_out else None,
                success=o.success if read_out else None,
            )
        return view

    def _catalogue(
        self, keys: tuple[str, ...]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The catalogue of ``keys`` in mask order as arrays of what does not change
        within an episode: each design's phase, its indication's row in ``keys``,
        whether the program may ever run it (the design checks of
        :meth:`ProgramState.design_error`) and its cost. The mask adds the rest of
        ``design_error`` (filed, earned, running) and the cash."""
        if self._catalogue_keys != keys:
            program, designs = self.state.program, catalogue_for(keys)
            self._catalogue_keys = keys
            self._catalogue_rows = (
                np.array([d.phase for d in designs]),
                np.array([keys.index(d.indication) for d in designs]),
                np.array([phase_allows(d.phase, d.randomised)
                          and not (d.biomarker and not program.biomarker) for d in designs]),
                np.array([trial_cost(self.params, d) for d in designs]),
            )
        return self._catalogue_rows
