"""The incident catalog: each post-mortem's incident as a declarative definition.

``<name>.toml`` beside this file defines one incident, and each is a pytest item under both
profiles (the harness's pytest plugin collects them). The reference apps live in
:mod:`kafka_replay_incidents.apps`. The engine reads them (:mod:`kafka_replay.definitions`),
plays them (:mod:`kafka_replay.playing`) and judges each run (:mod:`kafka_replay.judging`).
"""
