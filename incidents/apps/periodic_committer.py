"""A service that keeps a map of processed offsets and flushes it on a timer.

``python -m kafka_replay_incidents.apps.periodic_committer [--commit-every-s S] [--work-ms MS]
[--only-assigned] [--commit-on-revoke] [--retry-stale-commits] [--forget-revoked]``

Without ``--only-assigned`` (the post's code) the map keeps partitions the instance no longer
owns, so after a rebalance it commits their old offsets over the new owner's progress. With
it (the fix) commits are filtered to the current assignment, and progress on partitions being
revoked is committed before they leave.

``--commit-on-revoke`` alone (KIP-848's migration advice) commits what was processed of the
partitions being revoked, its output flushed first, before they leave. ``--retry-stale-commits``
retries a commit the coordinator refused with ``STALE_MEMBER_EPOCH`` (the ``consumer``
protocol's member epoch moved on between the commit and the heartbeat that told the member),
as the KIP-848 guides say, instead of dropping it. ``--forget-revoked`` drops what was processed
of the partitions being revoked without committing it: the timer only ever commits partitions
the member owns, and the next owner starts at the last commit (``rolling-deploy-rebalance-storm``).
"""

from __future__ import annotations

import argparse
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from .common import Service, result_of

#: How often a commit refused for a stale member epoch is tried again (``--retry-stale-commits``).
STALE_RETRIES = 5


class Committer:
    def __init__(
        self,
        service: Service,
        only_assigned: bool,
        commit_on_revoke: bool = False,
        retry_stale: bool = False,
        forget_revoked: bool = False,
    ) -> None:
        self.service = service
        self.only_assigned = only_assigned
        self.commit_on_revoke = commit_on_revoke
        self.retry_stale = retry_stale
        self.forget_revoked = forget_revoked
        self.producer: Producer | None = None  # flushed before a commit on revoke
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
            self.commit(consumer, offsets)

    def commit(self, consumer: Consumer, offsets: list[TopicPartition]) -> None:
        """Commit (reported); with ``retry_stale``, again while the member epoch was stale.

        The member learns its new epoch from its next heartbeat, which librdkafka sends in the
        background: a short wait lets it arrive before the next try.
        """
        for _ in range(STALE_RETRIES if self.retry_stale else 1):
            try:
                self.service.report.commit(consumer, offsets=offsets)
                return
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.STALE_MEMBER_EPOCH or not self.retry_stale:
                    return
                time.sleep(0.2)

    def on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if self.only_assigned or self.commit_on_revoke:
            if self.commit_on_revoke and self.producer is not None:
                self.producer.flush(30)  # the outputs before the offsets that say they are done
            self.flush(consumer, partitions)
        if self.only_assigned or self.commit_on_revoke or self.forget_revoked:
            for p in partitions:
                self.done.pop((p.topic, p.partition), None)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="periodic_committer")
    parser.add_argument("--commit-every-s", type=float, default=1.0)
    parser.add_argument("--work-ms", type=float, default=0.0)
    parser.add_argument("--only-assigned", action="store_true")
    parser.add_argument("--commit-on-revoke", action="store_true")
    parser.add_argument("--retry-stale-commits", action="store_true")
    parser.add_argument("--forget-revoked", action="store_true")
    options = parser.parse_args(argv)
    service = Service()
    committer = Committer(
        service,
        options.only_assigned,
        options.commit_on_revoke,
        options.retry_stale_commits,
        options.forget_revoked,
    )
    consumer = service.consumer()
    producer = committer.producer = service.producer()
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
