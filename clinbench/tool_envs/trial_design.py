"""Tools of the dose-finding family: the next cohort, or a decision."""

from __future__ import annotations

from typing import Literal

from clinbench.tool_envs.base import ToolEnv

Dose = Literal["low", "mid", "high"]


class TrialDesignToolEnv(ToolEnv):
    """An adaptive Phase II dose-finding trial, one interim look per tool call."""

    FAMILY = "trial_design"
    DEFAULT_TASK = "trial_design/effective_drug"

    def enrol_cohort(
        self,
        n_patients: int,
        allocation_control: float | None = None,
        allocation_low: float | None = None,
        allocation_mid: float | None = None,
        allocation_high: float | None = None,
        drop_arm: Dose | None = None,
        inclusion_criteria_strictness: float | None = None,
    ) -> str:
        """Enrol the next cohort, after optionally dropping an arm or changing strictness.

        Args:
            n_patients: Patients in the cohort (0 to 100).
            allocation_control: Share of the cohort on control (all four shares sum to 1;
                leave them all unset for equal shares over the active arms).
            allocation_low: Share on the low dose.
            allocation_mid: Share on the mid dose.
            allocation_high: Share on the high dose.
            drop_arm: A dose arm to drop before the cohort.
            inclusion_criteria_strictness: Inclusion strictness from 0 to 1 (unset: unchanged).
        """
        return self._play(
            {
                "n_next_cohort": n_patients,
                "allocation_control": allocation_control,
                "allocation_low": allocation_low,
                "allocation_mid": allocation_mid,
                "allocation_high": allocation_high,
                "drop_arm": drop_arm,
                "inclusion_criteria_strictness": inclusion_criteria_strictness,
            }
        )

    def stop_for_success(self, arm: Dose) -> str:
        """Claim success for a dose arm; allowed only where its boundary is crossed now.

        Args:
            arm: The dose arm the claim is for.
        """
        return self._play({"stop_for_success": True, "success_arm": arm})

    def stop_for_futility(self) -> str:
        """Stop the trial for futility: no dose is worth pursuing."""
        return self._play({"stop_for_futility": True})
