"""An exactly-once consume-transform-produce service, like a Kafka Streams app.

``python -m kafka_replay_incidents.apps.eos_processor [--side-effects TOPIC] [--keepalive-s S]
[--outside-transaction] [--work-ms MS] [--transactional-id-per-start]``

Output and input offsets commit in one transaction. Any error ends the process (the post's
uncaught exception handler), and the supervisor restarts it like a deployment would.

- ``--side-effects TOPIC``: also send each result outside the transaction (an e-mail, a call to
  another service), to show what such a sink sees when a transaction is retried.
- ``--keepalive-s S``: when idle for S seconds, commit a transaction holding only the current
  offsets, so the transactional id never looks abandoned to the coordinator (the fix for
  ``transactional.id.expiration.ms``).
- ``--work-ms MS``: each record's work, done after its result is sent, so a kill at any moment
  of a batch finds its transaction holding records.
- ``--outside-transaction``: write the output without a transaction, then commit the offsets
  (the at-least-once variant).
- ``--transactional-id-per-start``: a new transactional id at every start (the contract's with
  the process id added), as frameworks that derive it from a process do: a restart then cannot
  fence and abort the transaction a killed process left open, which holds read_committed
  readers until it times out.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

from .common import Service, next_offsets, result_of


def keep_alive(service: Service, consumer: Consumer, producer: Producer) -> None:
    """Commit the current offsets in a transaction of their own."""
    positions = [p for p in consumer.position(consumer.assignment()) if p.offset >= 0]
    if not positions:
        return
    producer.begin_transaction()
    producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
    producer.commit_transaction(30)
    service.report.event("keepalive", offsets=len(positions))


def failed_transaction(producer: Producer) -> KafkaError | None:
    """Why the current transaction failed (a produce only says the state is erroneous)."""
    try:
        producer.commit_transaction(10)
    except KafkaException as exc:
        return exc.args[0]
    return None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="eos_processor")
    parser.add_argument("--side-effects", default=None)
    parser.add_argument("--keepalive-s", type=float, default=None)
    parser.add_argument("--outside-transaction", action="store_true")
    parser.add_argument("--work-ms", type=float, default=0.0)
    parser.add_argument("--transactional-id-per-start", action="store_true")
    options = parser.parse_args(argv)
    service = Service()
    context = service.context
    transactional = not options.outside_transaction
    consumer = service.consumer(**{"isolation.level": "read_committed"})
    if transactional:
        transactional_id = context.transactional_id
        if options.transactional_id_per_start:
            transactional_id += f"-{os.getpid()}"
        producer = service.producer(**{"transactional.id": transactional_id})
        producer.init_transactions(60)
    else:
        producer = service.producer()
    side_effects = service.producer() if options.side_effects else None
    consumer.subscribe([context.input_topic], **service.report.rebalance_callbacks())
    last_transaction = time.monotonic()
    while not service.stopping:
        batch = service.poll(consumer, 50, timeout=0.2)
        if not batch:
            idle = time.monotonic() - last_transaction
            if transactional and options.keepalive_s and idle >= options.keepalive_s:
                keep_alive(service, consumer, producer)
                last_transaction = time.monotonic()
            continue
        try:
            if transactional:
                producer.begin_transaction()
            for message in batch:
                value, headers = result_of(message)
                producer.produce(context.output_topic, value, message.key(), headers=headers)
                if side_effects is not None:
                    side_effects.produce(
                        options.side_effects, value, message.key(), headers=headers
                    )
                time.sleep(options.work_ms / 1000)  # after the send: the transaction holds records
            if side_effects is not None:
                side_effects.flush(30)
            if transactional:
                producer.send_offsets_to_transaction(
                    next_offsets(batch), consumer.consumer_group_metadata(), 30
                )
                producer.commit_transaction(30)
            else:
                producer.flush(30)
                service.report.commit(consumer, offsets=next_offsets(batch))
        except KafkaException as exc:
            error = exc.args[0]
            if transactional and error.code() == KafkaError._STATE:
                error = failed_transaction(producer) or error
            service.report.failure("transaction" if transactional else "commit", error)
            print(f"eos_processor: giving up on {error}", file=sys.stderr, flush=True)
            return 1
        last_transaction = time.monotonic()
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
