"""An at-least-once service: poll a batch, do the work for each record, write, commit.

``python -m kafka_replay_incidents.apps.batch_forwarder [--batch N] [--work-ms MS]
[--on-bad crash|skip|dead-letter] [--dead-letter-topic TOPIC] [--enrich-percent P]
[--on-send-error log|stop] [--on-commit-error exit|retry] [--bad MODULE:FUNCTION]
[--filtered MODULE:FUNCTION]``

The batch size is the Java client's ``max.poll.records``: the incident's, given by the
contract (``REPLAY_MAX_POLL_RECORDS``), else ``--batch`` (500, the Java default). ``--work-ms``
is the per-record work (a database write, a call to another service). A commit that fails is
reported and the loop goes on, as the post's service did, unless ``--on-commit-error`` says:

- ``exit``: the process ends (its clients closed), the batch uncommitted, as a service that
  treats a failed commit as fatal does; restarted, it resumes at its last commit and does the
  batch again;
- ``retry``: a commit refused because the group's coordinator moved, is loading or did not
  answer in time is sent again, the same offsets, every second until it is taken (or the
  service is asked to stop); the next batch waits for it. Other refusals are reported and the
  loop goes on.

``--on-bad`` says what becomes of a record whose value is not a JSON object (a poison pill: its
producer changed its serializer):

- ``crash``: the error ends the process (its clients closed), uncommitted; restarted, the
  service resumes at the same offset and meets the same record again;
- ``skip``: logged and dropped, its offset committed with the batch's (a framework's default
  error handler: the record is lost without a trace in any topic);
- ``dead-letter``: written as it came (key, value and headers) to ``--dead-letter-topic`` before
  the batch is committed, and the service goes on.

Without ``--on-bad`` an undecodable value fails as it always did (an exception, so a crash).
``--bad`` names more records ``--on-bad`` takes, and ``--filtered`` records the service drops
(committed with the batch, written nowhere): each a ``module:function`` over the input as an
incident's ``[expect]`` predicates see it (``kafka_replay.workload.expect.InputRecord``, its
topic ``input``), so that the service puts each input where such an ``[expect]`` says.

``--enrich-percent P`` makes the service enrich each record and re-publish it: the output is
the input's value (a JSON object) with an ``enrichment`` field of P percent of its size added
(reference data joined in), key and headers kept. ``--on-send-error`` says what a send the
producer refused or could not deliver (its delivery report, or ``produce()`` itself) does:

- ``log``: logged, and the batch committed anyway (the input is lost);
- ``stop``: logged, and the process ends without committing the batch (clients closed);
  restarted, the service resumes at its last commit and sends the batch again.

Without it, delivery reports are not read: the batch is committed after the flush whatever
became of its sends (a refusal at ``produce()`` is an exception, so a crash).
"""

from __future__ import annotations

import argparse
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from . import routing
from .common import Service, next_offsets, result_of

ON_BAD = ("crash", "skip", "dead-letter")
ON_SEND_ERROR = ("log", "stop")
ON_COMMIT_ERROR = ("exit", "retry")
#: Refusals of a commit that a later try of the same offsets can get past.
RETRIABLE_COMMIT = {
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError._WAIT_COORD,
    KafkaError._TIMED_OUT,
    KafkaError._TRANSPORT,
}
#: Seconds between two tries of a refused commit (``--on-commit-error retry``).
COMMIT_RETRY_S = 1.0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="batch_forwarder")
    parser.add_argument("--batch", type=int, default=500, help="unless the incident sets one")
    parser.add_argument("--work-ms", type=float, default=0.0)
    routing.add_options(parser, ON_BAD)
    parser.add_argument("--enrich-percent", type=float, help="output = input + P%% enrichment")
    parser.add_argument("--on-send-error", choices=ON_SEND_ERROR, help="a send that failed")
    parser.add_argument("--on-commit-error", choices=ON_COMMIT_ERROR, help="a refused commit")
    options = parser.parse_args(argv)
    routing.check_options(parser, options)
    service = Service()
    batch_size = service.context.max_poll_records or options.batch
    consumer = service.consumer()
    producer = service.producer()
    consumer.subscribe([service.context.input_topic], **service.report.rebalance_callbacks())
    failed: list[str] = []  # this batch's sends that failed (with --on-send-error)

    def delivered(error: KafkaError | None, message: Message) -> None:
        if error is not None:
            failed.append(f"{_where(message)}: {error.str()}")
            print(f"send failed, {failed[-1]}", flush=True)

    send_options = {"on_delivery": delivered} if options.on_send_error else {}
    while not service.stopping:
        batch = service.poll(consumer, batch_size, timeout=0.5)
        if not batch:
            continue
        for message in batch:
            time.sleep(options.work_ms / 1000)  # the record's work
            place = routing.place_of(message, options)
            if place == "filtered":
                continue
            if place == "bad":
                if options.on_bad == "crash":  # as an uncaught exception closes the clients
                    producer.flush(30)
                    consumer.close()
                    raise SystemExit(f"cannot deserialize the record at {_where(message)}")
                if options.on_bad == "skip":
                    where = _where(message)
                    print(f"skipping a record that cannot be deserialized at {where}", flush=True)
                else:
                    producer.produce(
                        options.dead_letter_topic,
                        message.value(),
                        message.key(),
                        headers=message.headers() or [],
                    )
                continue
            if options.enrich_percent is not None:
                value = _enriched(message.value(), options.enrich_percent)
                headers = message.headers()
            else:
                value, headers = result_of(message)
            try:
                producer.produce(
                    service.context.output_topic,
                    value,
                    message.key(),
                    headers=headers or [],
                    **send_options,
                )
            except KafkaException as error:  # refused before it was sent (e.g. too large)
                if not options.on_send_error:
                    raise
                failed.append(f"{len(value)} bytes for {_where(message)}: {error.args[0].str()}")
                print(f"send refused, {failed[-1]}", flush=True)
            producer.poll(0)
        if producer.flush(30) > 0 and options.on_send_error:
            failed.append("sends still undelivered after 30 s")
        if failed and options.on_send_error == "stop":  # resume at the last commit, restarted
            consumer.close()
            raise SystemExit(f"{len(failed)} sends failed; stopping without committing the batch")
        failed.clear()
        _commit(service, consumer, next_offsets(batch), options.on_commit_error)
    consumer.close()
    return 0


def _commit(
    service: Service, consumer: Consumer, offsets: list[TopicPartition], on_error: str | None
) -> None:
    """Commit the batch's offsets; a refusal is reported, then handled as ``on_error`` says."""
    while True:
        try:
            service.report.commit(consumer, offsets=offsets)
            return
        except KafkaException as exc:
            error = exc.args[0]
        print(f"commit refused: {error.str()}", flush=True)
        if on_error == "exit":  # as an uncaught exception closes the clients
            consumer.close()
            raise SystemExit(f"commit refused ({error.name()}); exiting uncommitted")
        if on_error != "retry" or error.code() not in RETRIABLE_COMMIT or service.stopping:
            return  # the next batch's commit covers these offsets too
        time.sleep(COMMIT_RETRY_S)


def _enriched(value: bytes, percent: float) -> bytes:
    """The input's JSON object with an ``enrichment`` field of ``percent`` of its size added."""
    padding = b"e" * int(len(value) * percent / 100)
    return value.rstrip()[:-1] + b',"enrichment":"' + padding + b'"}'


def _where(message: Message) -> str:
    return f"{message.topic()} partition {message.partition()} offset {message.offset()}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
