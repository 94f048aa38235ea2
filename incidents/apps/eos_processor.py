"""An exactly-once consume-transform-produce service, like a Kafka Streams app.

``python -m kafka_replay_incidents.apps.eos_processor [--side-effects TOPIC] [--keepalive-s S]
[--outside-transaction] [--work-ms MS] [--transactional-id-per-start] [--on-bad dead-letter
--dead-letter-topic TOPIC] [--bad MODULE:FUNCTION] [--filtered MODULE:FUNCTION]``

Output and input offsets commit in one transaction. Any error ends the process (the post's
uncaught exception handler), and the supervisor restarts it like a deployment would; so does
a transactional call still waiting well after its own timeout (librdkafka's
``send_offsets_to_transaction`` can wait for ever once the group coordinator restarted
mid-transaction: confluentinc/librdkafka#5456), whose restart fences the transaction.

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
- ``--on-bad dead-letter --dead-letter-topic TOPIC``, ``--bad``, ``--filtered``: each input put
  where an incident's ``[expect]`` says (:mod:`.routing`): a poison pill or a record ``--bad``
  names written as it came to the dead-letter topic, in the same transaction as the results and
  the offsets; a record ``--filtered`` names dropped, its offset committed with the rest.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from . import routing
from .common import Service, next_offsets, result_of

#: A transactional call still waiting this long after its own timeout is stuck.
STUCK_AFTER_S = 5.0
#: The offsets' TxnOffsetCommit is one request to the group coordinator: this long is a
#: coordinator that is not coming back to this transaction.
OFFSETS_TIMEOUT_S = 10


@contextmanager
def ended_if_stuck(service: Service, call: str, timeout_s: float) -> Iterator[None]:
    """End the process when ``call`` (in the block) has not returned ``STUCK_AFTER_S`` after
    its ``timeout_s``: the restart fences and aborts the transaction, where waiting on would
    hold the partitions until the harness or a deployment gave up on the instance."""

    def stuck() -> None:
        waited = timeout_s + STUCK_AFTER_S
        service.report.event("app_error", where="transaction", code="_TIMED_OUT",
                             error=f"{call} still waiting {waited:g} s after it began",
                             fatal=False, abortable=False)  # fmt: skip
        print(f"eos_processor: {call} stuck for {waited:g} s", file=sys.stderr, flush=True)
        os._exit(1)

    timer = threading.Timer(timeout_s + STUCK_AFTER_S, stuck)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def keep_alive(service: Service, consumer: Consumer, producer: Producer) -> None:
    """Commit the current offsets in a transaction of their own."""
    positions = [p for p in consumer.position(consumer.assignment()) if p.offset >= 0]
    if not positions:
        return
    producer.begin_transaction()
    send_offsets(service, producer, consumer, positions)
    producer.commit_transaction(30)
    service.report.event("keepalive", offsets=len(positions))


def send_offsets(
    service: Service, producer: Producer, consumer: Consumer, offsets: list[TopicPartition]
) -> None:
    """The consumed offsets into the transaction, ended if the call outlives its timeout."""
    with ended_if_stuck(service, "send_offsets_to_transaction", OFFSETS_TIMEOUT_S):
        producer.send_offsets_to_transaction(
            offsets, consumer.consumer_group_metadata(), OFFSETS_TIMEOUT_S
        )


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
    routing.add_options(parser, ("dead-letter",))
    options = parser.parse_args(argv)
    routing.check_options(parser, options)
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
                place = routing.place_of(message, options)
                if place == "filtered":
                    continue
                if place == "bad":  # as it came, in the transaction
                    producer.produce(options.dead_letter_topic, message.value(), message.key(),
                                     headers=message.headers() or [])  # fmt: skip
                    continue
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
                send_offsets(service, producer, consumer, next_offsets(batch))
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
