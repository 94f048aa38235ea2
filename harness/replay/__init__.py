"""The replay engine: reads incident definitions, plays their steps against real Kafka and the
app under test, measures the symptoms, judges and reports.

- :mod:`.model`: what a definition says; :mod:`.definition`: reading and checking TOML files;
- :mod:`.catalog`: where incidents come from (the shipped catalog, a team's directories);
- :mod:`.steps`, :mod:`.symptoms`: the registries of steps and symptoms;
- :mod:`.runner`: one run; :mod:`.judge`: the pass/fail rule; :mod:`.session`: many runs.

The run record and the reports live apart, in :mod:`kafka_replay.report`.

Nothing is imported here, so reading where incidents live stays cheap.
"""
