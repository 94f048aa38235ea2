"""A service shipped in a container image, written only against the documented contract.

``python3 image_service.py [--transactional] [--work-ms N] [--delivery-timeout-ms N]``

It reads its input with the client settings the run gives (``REPLAY_CLIENT_CONFIG``), copies
each record to the output and commits the batch. ``--transactional``: output and offsets in one
transaction (``REPLAY_TRANSACTIONAL_ID``), read with read_committed. Otherwise an idempotent
producer with acks=all whose batch is flushed before the commit; a send that expired
(``--delivery-timeout-ms``, Kafka's 120 s by default) is logged and the batch committed anyway,
as many services do. A fatal consumer error (fenced by a static member) ends it, for its restart.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="image_service")
    parser.add_argument("--transactional", action="store_true")
    parser.add_argument("--work-ms", type=float, default=0.0)
    parser.add_argument("--delivery-timeout-ms", type=int, default=None)
    options = parser.parse_args(argv)
    env = os.environ
    bootstrap = env["KAFKA_BOOTSTRAP_SERVERS"]
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": env["REPLAY_GROUP_ID"],
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **({"isolation.level": "read_committed"} if options.transactional else {}),
            **json.loads(env.get("REPLAY_CLIENT_CONFIG") or "{}"),
        }
    )
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            **(
                {"delivery.timeout.ms": options.delivery_timeout_ms}
                if options.delivery_timeout_ms
                else {}
            ),
            **(
                {"transactional.id": env["REPLAY_TRANSACTIONAL_ID"]}
                if options.transactional
                else {}
            ),
        }
    )
    if options.transactional:
        producer.init_transactions(60)
    stopping: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    consumer.subscribe([env["REPLAY_INPUT_TOPIC"]])
    batch_size = int(env.get("REPLAY_MAX_POLL_RECORDS") or 500)
    output = env["REPLAY_OUTPUT_TOPIC"]
    print(
        f"image_service: reading {env['REPLAY_INPUT_TOPIC']} as {env['REPLAY_GROUP_ID']}",
        flush=True,
    )
    while not stopping:
        records = []
        for message in consumer.consume(batch_size, timeout=0.5):
            error = message.error()
            if error is None:
                records.append(message)
            elif error.fatal() or error.code() == KafkaError._FATAL:
                print(f"image_service: fatal consumer error: {error.str()}", flush=True)
                return 3
        if not records:
            continue
        offsets = {(m.topic(), m.partition()): m.offset() + 1 for m in records}
        commit = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        if options.transactional:
            producer.begin_transaction()
        for message in records:
            time.sleep(options.work_ms / 1000)
            producer.produce(output, message.value(), message.key(), on_delivery=_logged)
            producer.poll(0)
        if options.transactional:
            producer.send_offsets_to_transaction(commit, consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(60)
            continue
        producer.flush((options.delivery_timeout_ms or 120_000) / 1000 + 5)
        consumer.commit(offsets=commit, asynchronous=False)
    consumer.close()
    return 0


def _logged(error: KafkaError | None, message: object) -> None:
    if error is not None:
        print(f"image_service: a send failed: {error.str()}", flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
