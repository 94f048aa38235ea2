"""Reference apps: Python services that do what each post's application did.

Each follows the app contract (``kafka_replay.apps.contract``) and reports what its Kafka
clients do through ``kafka_replay.apps.Reporter``, so the run history shows the post's symptoms.
Their options switch between the post's code (vulnerable) and its fix (remediated).
"""
