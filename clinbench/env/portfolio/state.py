"""A program's development state: the trials started, what they showed, the records.

Both the logged sponsors (``history``) and the online environment (``simulator``) run
a program through this one state machine, so the offline logs and the online task are
the same world. Starting a trial fixes its outcome (``trials.draw_outcome``) and its
future public records; time only reveals them. A sponsor learns its own readouts at the
readout month; the public learns them from the records' dates.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from clinbench.env.portfolio.calendar import discount, month_label
from clinbench.env.portfolio.evidence import Record, make_record, visible
from clinbench.env.portfolio.trials import (
    Outcome,
    TrialDesign,
    draw_outcome,
    phase_allows,
    trial_cost,
)
from clinbench.env.portfolio.world import Program

#: Months from a Phase III success to the filing's acceptance record, and from a Phase
#: II success to a designation (*assumption*).
FILING_DELAY = 2
DESIGNATION_DELAY = 3
#: Months from the decision to start a trial to its registry entry: a trial decided at a
#: date starts recruiting in the six months after it, so its entry is never public at
#: the decision date itself (the offline label cannot leak into its own evidence).
REGISTRY_DELAY = 1
#: A Phase II estimate this far above its threshold earns a breakthrough designation.
DESIGNATION_MARGIN = 0.4


@dataclass(frozen=True)
class Trial:
    id: str
    design: TrialDesign
    start_month: int
    cost: float
    outcome: Outcome

    def read_out(self, month: int) -> bool:
        return self.outcome.readout_month <= month

    def approval_month(self) -> int | None:
        """When the filing it led to was approved (``None``: no approval)."""
        o = self.outcome
        return o.readout_month + o.review_months if o.approved else None

    def decision_month(self) -> int | None:
        """When the regulator decided on its filing (``None``: nothing filed)."""
        o = self.outcome
        return o.readout_month + o.review_months if self.design.phase == 3 and o.success else None


@dataclass(frozen=True)
class Standing:
    """Where each indication stands at one month: filed (a Phase III success read out),
    the highest phase read out successfully, and the phases of trials still running."""

    filed: frozenset[str]
    earned: dict[str, int]
    running: dict[str, frozenset[int]]
    approved: frozenset[str]  # an approval decided by now (:meth:`ProgramState.approved`)


def realised_value(program: Program, trials: list[Trial], month: int) -> dict[str, float]:
    """What ``program``'s ``trials`` have realised by ``month`` ($M, discounted to its
    start): the value of the approvals granted by then and the cost of the trials started
    by then, and the number of approved indications. The one formula of a program's value:
    the score (at the episode's end) and the prediction study (at a split's cutoff)."""
    p, start = program.params, program.start_month
    value_of = {ind.key: ind.value for ind in program.indications}
    approved: dict[str, int] = {}
    for t in trials:
        a = t.approval_month()
        if a is not None and a <= month:
            key = t.design.indication
            approved[key] = min(a, approved.get(key, a))
    value = sum(value_of[k] * discount(m - start, p.discount_rate) for k, m in approved.items())
    cost = sum(
        t.cost * discount(t.start_month - start, p.discount_rate)
        for t in trials
        if t.start_month <= month
    )
    return {"value": value, "cost": cost, "approvals": float(len(approved))}


class ProgramState:
    """The mutable development state of one program."""

    def __init__(self, program: Program, budget: float | None = None):
        self.program = program
        self.month = program.start_month
        self.budget = program.sponsor.budget if budget is None else budget
        self.cash = self.budget
        self.trials: list[Trial] = []
        self.attempts: Counter[tuple[str, int]] = Counter()
        self.records: list[Record] = []
        self._visible: tuple[tuple[int, int] | None, tuple[Record, ...]] = (None, ())
        self._now: tuple[tuple[int, int] | None, Standing | None] = (None, None)
        self.stopped = False
        for ind in program.indications:
            self._record(program.start_month - 1, "epidemiology", ind.key,
                         {"patients_thousands": round(ind.patients, 1), "line": ind.line,
                          "tumour": ind.tumour},
                         f"{ind.tumour} {ind.line}: about {ind.patients:.0f} thousand US "
                         "patients a year")
            if ind.regime:
                p = program.params
                self._record(p.cutoff_month, "regulatory", ind.key, {"event": "new_standard"},
                             f"a new standard of care is approved in {ind.tumour} {ind.line}")

    # ------------------------------------------------------------------ queries
    def earned(self, indication: str) -> int:
        """Highest phase read out successfully in ``indication`` by now (0: none)."""
        best = 0
        for t in self.trials:
            d = t.design
            if d.indication == indication and t.read_out(self.month) and t.outcome.success:
                best = max(best, d.phase)
        return best

    def running(self, indication: str, phase: int) -> bool:
        return any(
            t.design.indication == indication and t.design.phase == phase
            and not t.read_out(self.month)
            for t in self.trials
        )

    def filed(self, indication: str) -> bool:
        """A Phase III success in ``indication`` (filed; approved or pending or refused)."""
        return any(
            t.design.indication == indication and t.design.phase == 3 and t.read_out(self.month)
            and t.outcome.success
            for t in self.trials
        )

    def approved(self, indication: str, month: int | None = None) -> bool:
        at = self.month if month is None else month
        return any(
            t.design.indication == indication and (a := t.approval_month()) is not None
            and a <= at
            for t in self.trials
        )

    def standing(self) -> Standing:
        """Each indication's :meth:`filed`, :meth:`earned` and running phases now, in one
        pass over the trials: what :meth:`design_error` asks of every catalogue entry.
        Kept until the month or the trials (only ever appended) change: a decision asks
        for it four times. Callers only read it."""
        key = (self.month, len(self.trials))
        if self._now[0] != key:
            self._now = (key, self._standing())
        return self._now[1]

    def _standing(self) -> Standing:
        filed: set[str] = set()
        approved: set[str] = set()
        earned: dict[str, int] = {}
        running: dict[str, set[int]] = {}
        for t in self.trials:
            d = t.design
            if not t.read_out(self.month):
                running.setdefault(d.indication, set()).add(d.phase)
            elif t.outcome.success:
                earned[d.indication] = max(earned.get(d.indication, 0), d.phase)
                if d.phase == 3:
                    filed.add(d.indication)
            if (a := t.approval_month()) is not None and a <= self.month:
                approved.add(d.indication)
        return Standing(frozenset(filed), earned, {k: frozenset(v) for k, v in running.items()},
                        frozenset(approved))

    def design_error(self, d: TrialDesign, standing: Standing | None = None) -> str | None:
        """Why ``d`` cannot start now (an error code), or ``None``; ``standing`` is
        :meth:`standing` of this state now (computed when not given)."""
        if not phase_allows(d.phase, d.randomised):
            return "design_not_allowed"
        if d.biomarker and not self.program.biomarker:
            return "design_not_allowed"
        now = self.standing() if standing is None else standing
        if d.indication in now.filed:
            return "indication_filed"
        if d.phase > now.earned.get(d.indication, 0) + 1:
            return "not_earned"
        if d.phase in now.running.get(d.indication, ()):
            return "already_running"
        return None

    def visible_records(self, month: int | None = None) -> tuple[Record, ...]:
        """The records public at ``month`` (default: now); kept until the month or the
        records (only ever appended) change, as every decision reads them twice."""
        at = self.month if month is None else month
        key = (at, len(self.records))
        if self._visible[0] != key:
            self._visible = (key, visible(self.records, at))
        return self._visible[1]

    @staticmethod
    def last_event(t: Trial) -> int:
        d = t.decision_month()
        return t.outcome.readout_month if d is None else d

    # ------------------------------------------------------------------ value
    def value_parts(self) -> dict[str, float]:
        """Discounted value of the approvals and cost of the trials so far ($M, at start)."""
        return realised_value(self.program, self.trials, self.month)

    # ------------------------------------------------------------------ changes
    def start(self, designs: tuple[TrialDesign, ...]) -> list[Trial]:
        """Start ``designs`` now (already validated): pay, fix outcomes, post records."""
        started = []
        for d in designs:
            attempt = self.attempts[(d.indication, d.phase)]
            self.attempts[(d.indication, d.phase)] += 1
            outcome = draw_outcome(self.program, d, self.month, attempt)
            cost = trial_cost(self.program.params, d)
            tid = f"{self.program.id}-T{len(self.trials):03d}"
            trial = Trial(tid, d, self.month, cost, outcome)
            self.trials.append(trial)
            self.cash -= cost
            self._post_trial_records(trial)
            started.append(trial)
        return started

    def advance(self, month: int) -> None:
        """Let time pass to ``month``; a yearly pipeline update is posted on the way."""
        start = self.program.start_month
        for m in range(self.month + 1, month + 1):
            if (m - start) % 12 == 0:
                self._pipeline_update(m)
        self.month = month

    def finish(self) -> None:
        """Fast-forward past every pending readout and regulatory decision."""
        last = max((self.last_event(t) for t in self.trials), default=self.month)
        self.month = max(self.month, last)

    # ------------------------------------------------------------------ records
    def _record(self, month: int, kind: str, indication: str | None, fields: dict, text: str):
        rid = f"{self.program.id}-R{len(self.records):04d}"
        self.records.append(make_record(rid, month, kind, self.program.id, indication, fields,
                                        text))

    def _post_trial_records(self, t: Trial) -> None:
        d, o, p = t.design, t.outcome, self.program.params
        design = {**d.to_dict(), "trial": t.id}
        where = d.indication.replace("_", " ")
        kind = "randomised" if d.randomised else "single-arm"
        extra = "".join(
            s for flag, s in ((d.biomarker, ", biomarker-selected"),
                              (d.combination, ", in combination")) if flag
        )
        self._record(t.start_month + REGISTRY_DELAY + o.registry_lag, "registry", d.indication,
                     {**design, "status": "recruiting", "start": month_label(t.start_month)},
                     f"Phase {d.phase} {kind} trial of {self.program.drug_id} in {where}{extra} "
                     "starts recruiting")
        self._record(o.readout_month + o.registry_lag, "registry", d.indication,
                     {"trial": t.id, "status": "completed"},
                     f"trial {t.id} ({where}, Phase {d.phase}) completed")
        lo, hi = o.reported_estimate - 1.96 * o.sd, o.reported_estimate + 1.96 * o.sd
        met = "met" if o.success else "missed"
        if d.phase == 1:
            met = "was tolerable" if o.success else "was not tolerable"
        self._record(o.result_month, "result", d.indication,
                     {"trial": t.id, "phase": d.phase, "estimate": round(o.reported_estimate, 3),
                      "ci_low": round(lo, 3), "ci_high": round(hi, 3), "success": o.success},
                     f"Phase {d.phase} in {where}: effect {o.reported_estimate:+.2f} "
                     f"(95% CI {lo:+.2f} to {hi:+.2f}); the trial {met} its endpoint")
        threshold = p.success_threshold[0]
        if d.phase == 2 and o.success and o.estimate > threshold + DESIGNATION_MARGIN:
            self._record(o.readout_month + DESIGNATION_DELAY, "regulatory", d.indication,
                         {"event": "breakthrough_designation", "trial": t.id},
                         f"breakthrough therapy designation for {self.program.drug_id} in {where}")
        if d.phase == 3 and o.success:
            self._record(o.readout_month + FILING_DELAY, "regulatory", d.indication,
                         {"event": "filing_accepted", "trial": t.id},
                         f"marketing application for {self.program.drug_id} in {where} accepted")
            verdict = "approval" if o.approved else "refusal"
            self._record(o.readout_month + o.review_months, "regulatory", d.indication,
                         {"event": verdict, "trial": t.id},
                         f"{verdict} of {self.program.drug_id} in {where}")

    def _pipeline_update(self, month: int) -> None:
        ongoing = Counter(
            t.design.phase for t in self.trials if t.start_month <= month < t.outcome.readout_month
        )
        priorities = sorted({
            t.design.indication for t in self.trials
            if t.start_month <= month < t.outcome.readout_month
        })
        cash = round(self.cash, 0)
        self._record(month + 1, "sponsor", None,
                     {"ongoing_by_phase": {str(k): ongoing.get(k, 0) for k in (1, 2, 3)},
                      "priorities": priorities, "cash": cash},
                     f"{self.program.sponsor.id} pipeline update: {sum(ongoing.values())} "
                     f"ongoing trials of {self.program.drug_id}, priorities "
                     f"{', '.join(priorities) or 'none'}, cash {cash:.0f} $M")
