"""The exit code CI reads from a replay's outcomes, the same for ``run`` and a merge of shards."""

from __future__ import annotations

from collections.abc import Sequence

from .outcome import Outcome


def exit_code(outcomes: Sequence[Outcome], allow_not_applicable: bool) -> int:
    """0 every run passed or did not apply, 1 a run failed, 2 a run could not be judged.

    When runs were made but none applied, nothing was tested: a ValueError (exit 2, one
    ``error:`` line) unless that is allowed. No runs at all (an empty shard) is a pass.
    """
    if any(o.error for o in outcomes):
        return 2
    nothing = outcomes and all(o.gate == "n/a" for o in outcomes)
    if nothing and not allow_not_applicable:
        raise ValueError(
            f"no run applied here, so nothing was tested ({outcomes[0].reasons[-1]}); give "
            "--allow-not-applicable when that is expected"
        )
    return 1 if any(o.gate == "FAIL" for o in outcomes) else 0
