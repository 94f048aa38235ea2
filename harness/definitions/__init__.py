"""Reading a definition: what an incident says, read from its TOML and checked.

- :mod:`.model`: the values a definition gives (incident, profiles, workloads, steps, apps);
- :mod:`.definition`: reading and checking one file (:mod:`.table`, :mod:`.workload_table`,
  a service's shape: :mod:`.shapes`, :mod:`.expectations`; :mod:`.scale`, :mod:`.overrides`);
- :mod:`.vocabulary`: the step kinds and symptoms a definition may name;
- :mod:`.catalog`: where incidents come from (the shipped catalog, a team's directories);
- :mod:`.app_option`: a team's app given on the command line, as an app definition.

It may import the harness's lower rooms (cluster's Kafka-facing names, workload, apps, the
checker's guarantees and output formats, report's run record), never the rooms that play or
judge a run: those register their step
kinds and symptoms in :mod:`.vocabulary`. Nothing is imported here.
"""
