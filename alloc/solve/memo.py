"""What a round may reuse from the round before it on the same cluster and budget tree, where
reuse is exact (ISSUE 14: a round costs what changed, not the whole cluster).

The caller that runs rounds one after another (`alloc.rounds.Rounds`) keeps one; a round
without it computes everything, with the same result. Each entry is keyed by the workload
value it was computed from and reused only for that very value (`is`), so a workload that
changed in any way is computed afresh:

- standings (`policy.contract.standings`): queued work, and protected running work until
  its protection ends (on a cluster whose hosts are all ready);
- decisions: a decision equal to the last round's for an unchanged workload is that same
  object;
- per-decision checks of `validate`: a decision object already found sound for the same
  workload value and standing is sound again (the checks across decisions always run).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from alloc.domain import BudgetTree, Cluster, Decision, Policy, Workload, WorkloadId
from alloc.policy.contract import Standing, StandingCache


@dataclass
class RoundMemo:
    budgets: BudgetTree | None = None
    cluster: Cluster | None = None
    policy: Policy | None = None
    standings: StandingCache = field(default_factory=dict)
    decisions: dict[WorkloadId, tuple[Workload, Decision]] = field(default_factory=dict)
    checked: dict[WorkloadId, tuple[Workload, Standing, Decision]] = field(default_factory=dict)

    def for_round(self, budgets: BudgetTree, cluster: Cluster, policy: Policy) -> RoundMemo:
        """Itself, emptied if the budget tree, the cluster or the policy is not the last
        round's."""
        if budgets is not self.budgets or cluster is not self.cluster or policy != self.policy:
            self.budgets, self.cluster, self.policy = budgets, cluster, policy
            self.standings.clear()
            self.decisions.clear()
            self.checked.clear()
        return self
