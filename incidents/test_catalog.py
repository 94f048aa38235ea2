"""Every incident of the catalog under each profile, as a pytest item.

``pytest -k incident`` runs them all (``-k "zombie and remediated"`` picks one). A vulnerable
item passes when the post's failure is reproduced, a remediated item when the declared
guarantee holds and no symptom of the failure appears. With ``--app`` every item runs that app
instead and passes when its declared guarantee (``--guarantee``) holds. Outside this
repository: ``pytest --pyargs incidents -k incident --app ...``.
"""

from __future__ import annotations

import pytest

from incidents import PROFILES, catalog

CASES = [(name, profile) for name in catalog() for profile in PROFILES]


@pytest.mark.parametrize(("name", "profile"), CASES, ids=[f"{n}-{p}" for n, p in CASES])
def test_incident(replay_incident, name: str, profile: str) -> None:
    outcome = replay_incident(name, profile)
    print(outcome.explain())
    assert outcome.passed, outcome.explain()
