"""An at-least-once service: poll a batch, do the work for each record, write, commit.

``python -m kafka_replay_incidents.apps.batch_forwarder [--batch N] [--work-ms MS]``

The batch size is the Java client's ``max.poll.records``: the incident's, given by the
contract (``REPLAY_MAX_POLL_RECORDS``), else ``--batch`` (500, the Java default). ``--work-ms``
is the per-record work (a database write, a call to another service). A commit that fails is
reported and the loop goes on, as the post's service did.
"""

from __future__ import annotations

import argparse
import sys
import time

from .common import Service, next_offsets, result_of


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="batch_forwarder")
    parser.add_argument("--batch", type=int, default=500, help="unless the incident sets one")
    parser.add_argument("--work-ms", type=float, default=0.0)
    options = parser.parse_args(argv)
    service = Service()
    batch_size = service.context.max_poll_records or options.batch
    consumer = service.consumer()
    producer = service.producer()
    consumer.subscribe([service.context.input_topic], **service.report.rebalance_callbacks())
    while not service.stopping:
        batch = service.poll(consumer, batch_size, timeout=0.5)
        if not batch:
            continue
        for message in batch:
            time.sleep(options.work_ms / 1000)  # the record's work
            value, headers = result_of(message)
            producer.produce(service.context.output_topic, value, message.key(), headers=headers)
            producer.poll(0)
        producer.flush(30)
        service.commit(consumer, next_offsets(batch))  # a refusal shows at the next poll
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
