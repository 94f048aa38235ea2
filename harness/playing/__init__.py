"""Playing a run: a definition's steps against real Kafka and the app under test.

- :mod:`.runner`: one run, from its topics to its outcome (checked and judged through
  :mod:`kafka_replay.judging`), composed of parts that each own one resource or phase:
  :mod:`.start_up` (in order: the cluster, :mod:`.topics`, the schema registry of
  :mod:`.workloads`, :mod:`.run_database`, the apps of :mod:`.services`), :mod:`.recording`,
  :mod:`.settling`;
- :mod:`.stage`: what the steps act on (:class:`~.stage.Stage`) and the loop that plays them;
  :mod:`.steps` plays the app and workload steps, :mod:`.fault_steps` names the faults (whose
  mechanics are in :mod:`kafka_replay.faults`), :mod:`.election_steps` a replica falling out of
  sync and its unclean election;
- :mod:`.session`: many runs in one Spark session; :mod:`.parallel`, :mod:`.lane`: side by
  side in lanes; :mod:`.shards`: the catalog split between machines;
- :mod:`.share_group`, :mod:`.group_protocol`, :mod:`.idle_apps`: what a run needs for share
  groups, the consumer group protocol and apps left idle; :mod:`.mirror` and :mod:`.failover`:
  a second cluster fed by MirrorMaker 2, and the step that moves the apps there.

It may import reading a definition, judging and the lower rooms, never the faces (the CLI,
the pytest plugin) or :mod:`kafka_replay.replay`. Nothing is imported here.
"""
