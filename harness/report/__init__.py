"""The report side: the run record and everything that shows it, apart from the engine.

- :mod:`.outcome`: the run record (:class:`~.outcome.Outcome`) and what it means in words;
- :mod:`.catalog_report`: ``report.json``, ``report.md``, the terminal summary, GitHub's job
  summary;
- :mod:`.html_report`: ``report.html``, the page; :mod:`.timeline`: a run's history on one
  time axis, stacking the :mod:`.panels`; :mod:`.readings`: what the streams say, for both;
- :mod:`.junit`: JUnit XML for CI; :mod:`.browser`: headless Chromium for ``report --png``.

It reads runs through :mod:`kafka_replay.history` and imports nothing of the replay engine
(``kafka_replay.definitions``, ``playing``, ``judging``, ``replay``), so a report is written, or
read back, without it. Nothing is imported
here, so the record stays cheap to load.
"""
