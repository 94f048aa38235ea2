"""A service that keeps a map of processed offsets and flushes it on a timer.

``python -m kafka_replay_incidents.apps.periodic_committer [--commit-every-s S] [--work-ms MS]
[--only-assigned]``

Without ``--only-assigned`` (the post's code) the map keeps partitions the instance no longer
owns, so after a rebalance it commits their old offsets over the new owner's progress. With
it (the fix) commits are filtered to the current assignment, and progress on partitions being
revoked is committed before they leave.
"""

from __future__ import annotations

import argparse
import sys
import time

from confluent_kafka import Consumer, TopicPartition

from .common import Service, result_of


class Committer:
    def __init__(self, service: Service, only_assigned: bool) -> None:
        self.service = service
        self.only_assigned = only_assigned
        self.done: dict[tuple[str, int], int] = {}

    def flush(self, consumer: Consumer, partitions: list[TopicPartition] | None = None) -> None:
        """Commit the processed offsets (of ``partitions``, or of everything the map holds)."""
        keys = set(self.done)
        if partitions is not None:
            keys &= {(p.topic, p.partition) for p in partitions}
        if self.only_assigned:
            keys &= {(p.topic, p.partition) for p in consumer.assignment()}
        offsets = [TopicPartition(t, p, self.done[(t, p)]) for t, p in sorted(keys)]
        if offsets:
            self.service.commit(consumer, offsets)

    def on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if self.only_assigned:
            self.flush(consumer, partitions)
            for p in partitions:
                self.done.pop((p.topic, p.partition), None)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="periodic_committer")
    parser.add_argument("--commit-every-s", type=float, default=1.0)
    parser.add_argument("--work-ms", type=float, default=0.0)
    parser.add_argument("--only-assigned", action="store_true")
    options = parser.parse_args(argv)
    service = Service()
    committer = Committer(service, options.only_assigned)
    consumer = service.consumer()
    producer = service.producer()
    consumer.subscribe(
        [service.context.input_topic],
        **service.report.rebalance_callbacks(on_revoke=committer.on_revoke),
    )
    next_flush = time.monotonic() + options.commit_every_s
    while not service.stopping:
        for message in service.poll(consumer, 50, timeout=0.1):
            time.sleep(options.work_ms / 1000)
            value, headers = result_of(message)
            producer.produce(service.context.output_topic, value, message.key(), headers=headers)
            committer.done[(message.topic(), message.partition())] = message.offset() + 1
        if time.monotonic() >= next_flush:
            producer.flush(30)
            committer.flush(consumer)
            next_flush = time.monotonic() + options.commit_every_s
    producer.flush(30)
    committer.flush(consumer)
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
