"""A queue worker on a share group (KIP-932): poll a batch, work on each record, acknowledge.

``python -m kafka_replay_incidents.apps.share_worker [--work-ms MS] [--slow-every N]
[--slow-ms MS] [--timeout-ms MS] [--delivery-limit N] [--dead-letter]``

The app's group (``REPLAY_GROUP_ID``) is a share group: confluent-kafka's ``ShareConsumer`` in
explicit acknowledgement mode. Each record takes ``--work-ms``; one in ``--slow-every`` (chosen
by its ``event_id``, so the same records every run) needs ``--slow-ms``, and a call that takes
longer than ``--timeout-ms`` gives up (a downstream timeout). The result is written, then the
record accepted; the batch's acknowledgements go to the broker with ``commit_sync`` after it.

The vulnerable service: a record that timed out is released for a retry, whatever its delivery
count, so at ``group.share.delivery.count.limit`` the broker archives it and nobody hears of it;
and a batch that takes longer than the acquisition lock keeps working on records the broker has
already handed to another consumer (each is written twice). The fix adds ``--dead-letter``: a
record that fails on its last delivery (``--delivery-limit``, the group's limit) is rejected and
its failure written to the output (a dead letter carrying its ``event_id``), never dropped; the
lock part of the fix is the incident's (a lock that covers a batch, or smaller batches).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time

from confluent_kafka import AcknowledgeType, KafkaException, Message, ShareConsumer

from kafka_replay.apps.client_config import for_client

from .common import Service, result_of

#: librdkafka settings a share consumer refuses (its group has no offsets, no static members).
NOT_FOR_SHARE = ("auto.offset.reset", "group.instance.id", "enable.auto.commit", "group.protocol")


def is_slow(message: Message, every: int) -> bool:
    """Whether this record is one of the slow ones: a stable choice by its ``event_id``."""
    if every <= 0:
        return False
    event_id = json.loads(message.value())["event_id"]
    return int(hashlib.sha1(event_id.encode()).hexdigest(), 16) % every == 0


def share_consumer(service: Service) -> ShareConsumer:
    """The share consumer: the contract's settings that a share group takes, explicit acks."""
    context = service.context
    config = {
        k: v
        for k, v in for_client(context.client_config, "consumer").items()
        if k not in NOT_FOR_SHARE
    }
    if context.max_poll_records:
        config["max.poll.records"] = context.max_poll_records
    return ShareConsumer(
        {
            "bootstrap.servers": context.bootstrap_servers,
            "group.id": context.group_id,
            "share.acknowledgement.mode": "explicit",
            "error_cb": service.report.client_error,
            **config,
        }
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="share_worker")
    parser.add_argument("--work-ms", type=float, default=0.0)
    parser.add_argument("--slow-every", type=int, default=0)
    parser.add_argument("--slow-ms", type=float, default=0.0)
    parser.add_argument("--timeout-ms", type=float, default=float("inf"))
    parser.add_argument("--delivery-limit", type=int, default=5, help="the group's limit")
    parser.add_argument("--dead-letter", action="store_true", help="the fix: reject and record")
    options = parser.parse_args(argv)
    service = Service()
    consumer = share_consumer(service)
    producer = service.producer()
    consumer.subscribe([service.context.input_topic])
    output = service.context.output_topic
    while not service.stopping:
        batch = [m for m in consumer.poll(0.5) if m.error() is None]
        if not batch:
            continue
        service.report.consumed(batch)
        for message in batch:
            work = options.slow_ms if is_slow(message, options.slow_every) else options.work_ms
            time.sleep(min(work, options.timeout_ms) / 1000)  # the call, or its timeout
            value, headers = result_of(message)
            if work <= options.timeout_ms:
                producer.produce(output, value, message.key(), headers=headers)
                consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            elif options.dead_letter and message.delivery_count() >= options.delivery_limit:
                letter = {**json.loads(value), "dead_letter": "downstream timeout"}
                producer.produce(
                    output, json.dumps(letter).encode(), message.key(), headers=headers
                )
                consumer.acknowledge(message, AcknowledgeType.REJECT)
            else:  # a retry, as the vulnerable service thought: the limit archives it silently
                consumer.acknowledge(message, AcknowledgeType.RELEASE)
            producer.poll(0)
        producer.flush(30)
        try:
            results = consumer.commit_sync(30)
        except KafkaException as exc:
            service.report.client_error(exc.args[0])
            continue
        for partition, error in results.items():
            service.report.event(
                "share_ack",
                topic=partition.topic,
                partition=partition.partition,
                error=None if error is None else str(error),
            )
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
