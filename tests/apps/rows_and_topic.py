"""A test app with two outputs: each input forwarded to the output topic once, and a row per
input in the ``results`` table, two for every tenth (a bug the topic does not show).

``python -m tests.apps.rows_and_topic``: everything from the contract's environment.
"""

from __future__ import annotations

import json
import sys

import psycopg

from kafka_replay_incidents.apps.common import Service

INSERT = "INSERT INTO results (event_id) VALUES (%s)"


def main() -> int:
    service = Service()
    context = service.context
    consumer, producer = service.consumer(), service.producer()
    consumer.subscribe([context.input_topic])
    assert context.database_url, "this app needs the run's database"
    with psycopg.connect(context.database_url, autocommit=True) as database:
        while not service.stopping:
            batch = [m for m in consumer.consume(100, timeout=0.5) if m.error() is None]
            for message in batch:
                event_id = json.loads(message.value())["event_id"]
                header = [("event_id", event_id.encode())]
                producer.produce(
                    context.output_topic, message.value(), message.key(), headers=header
                )
                database.execute(INSERT, (event_id,))
                if message.offset() % 10 == 0:
                    database.execute(INSERT, (event_id,))
            producer.flush(30)
            if batch:
                consumer.commit(asynchronous=False)
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
