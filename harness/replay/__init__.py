"""The replay engine's faces share this: run settings and comparisons, over its three rooms.

The engine is three rooms, each a package: reading a definition (:mod:`kafka_replay.definitions`),
playing a run (:mod:`kafka_replay.playing`) and judging it (:mod:`kafka_replay.judging`). Here:

- :mod:`.settings`: every option a run takes, declared once, for the command line, compare and
  pytest;
- :mod:`.compare`: a baseline against a candidate (broker versions, group protocols, clients).

The run record and the reports live apart, in :mod:`kafka_replay.report`. The modules
``judge``, ``steps`` and ``symptoms`` here keep the import paths earlier docs gave working.

Nothing is imported here, so reading where incidents live stays cheap.
"""
