"""Where an app's results land other than a topic: a database the run gives it.

An app under test may write rows instead of (or as well as) records; the run hands it a
database of its own and the checker reads the table back. It stands on
:mod:`kafka_replay.servers` (the database's process or container) alone.
"""
