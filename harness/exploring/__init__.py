"""Exploration: draw schedules of the harness's own steps against a team's service, play and
judge them, keep the ones that break its guarantee, shrink them, and write each one down as an
incident definition (``kafka-replay explore``; docs/explore.md).

A schedule is data (:mod:`.schedule`), drawn from fault families (:mod:`.families`); it is
played as a definition through the engine like any incident (:mod:`.explorer`), shrunk by
removing and simplifying its faults (:mod:`.shrinking`), and reported (:mod:`.findings`). The
room stands on the engine (definitions, playing, replay) and the report; nothing below it
knows it exists.
"""
