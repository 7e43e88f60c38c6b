"""Tools of the recruitment family: one per action type."""

from __future__ import annotations

from typing import Literal

from clinbench.tool_envs.base import ToolEnv

Phase = Literal["screening", "conversion", "allocation", "retention", "wrap_up"]


class RecruitmentToolEnv(ToolEnv):
    """Patient recruitment, one day per tool call."""

    FAMILY = "recruitment"
    DEFAULT_TASK = "recruitment/easy_bench"

    def screen_patient(self, patient_id: str) -> str:
        """Screen an arrived patient for eligibility.

        Args:
            patient_id: The patient's id, e.g. P-1053 (from available_patients).
        """
        return self._play({"action_type": "screen_patient", "patient_id": patient_id})

    def recontact(self, patient_id: str) -> str:
        """Recontact an eligible patient to ask for consent.

        Args:
            patient_id: The patient's id (from recontact_candidates).
        """
        return self._play({"action_type": "recontact", "patient_id": patient_id})

    def allocate_to_site(self, patient_id: str, site_id: str) -> str:
        """Allocate a consented patient to a site to enrol them.

        Args:
            patient_id: The patient's id (from allocation_candidates).
            site_id: The site, e.g. site_A (from site_performance).
        """
        return self._play(
            {"action_type": "allocate_to_site", "patient_id": patient_id, "site_id": site_id}
        )

    def adjust_strategy(self, strategy_change: str) -> str:
        """Change the recruitment strategy.

        Args:
            strategy_change: One of increase_outreach, relax_criteria, tighten_criteria,
                focus_site_<X> or negotiate_site_<X> for a site letter X.
        """
        return self._play({"action_type": "adjust_strategy", "strategy_change": strategy_change})

    def plan_next_phase(self, target_phase: Phase, plan_summary: str = "") -> str:
        """Record a plan for the next phase (costs nothing but the day).

        Args:
            target_phase: The phase the plan is for.
            plan_summary: A short summary of the plan.
        """
        action = {"action_type": "plan_next_phase", "target_phase": target_phase}
        if plan_summary:
            action["plan_summary"] = plan_summary
        return self._play(action)

    def summarize_and_index(self, memory_key: str, memory_payload: str = "") -> str:
        """Store a snapshot of the current state in memory under a key.

        Args:
            memory_key: The key to store the snapshot under.
            memory_payload: A note kept with the snapshot.
        """
        action = {"action_type": "summarize_and_index", "memory_key": memory_key}
        if memory_payload:
            action["memory_payload"] = memory_payload
        return self._play(action)

    def retrieve_relevant_history(self, memory_query: str) -> str:
        """Retrieve a stored snapshot into the next observations.

        Args:
            memory_query: The key (or words of it) of the snapshot to retrieve.
        """
        action = {"action_type": "retrieve_relevant_history", "memory_query": memory_query}
        return self._play(action)

    def stop_recruitment(self) -> str:
        """Stop recruiting now; the rest of the time passes and the episode ends."""
        return self._play({"action_type": "stop_recruitment"})
