"""The brokers' class-data archive: made once per Kafka version, Java and classpath.

A broker JVM spends most of its first seconds loading some 7,000 classes; mapped from an
archive (see :mod:`kafka_replay.jvm_archive`), they cost a fraction of that. The training run is a
broker through what a replay does first: a topic, acknowledged produces, a consumer group's
commit and a transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kafka_replay import jvm_archive
from kafka_replay.servers.paths import cache_root
from kafka_replay.waiting import wait_for

from .base import Cluster

TRAINING_TIMEOUT_S = 30
#: The training clients' retries while the new broker loads its coordinators are expected.
QUIET = {"log_level": 0}


def class_archive(
    version: str, jvm: Sequence[str], train: Callable[[Sequence[str]], None]
) -> Path | None:
    """The archive for ``jvm`` (``java``, options, ``-cp`` classpath), made on first use.

    ``train`` runs a broker of ``version`` with extra JVM options through :func:`exercise`.
    """

    def training(options: Sequence[str]) -> Sequence[str]:
        train(options)
        return jvm[1:]

    directory = jvm_archive.archive_dir(
        cache_root() / "class-data", f"kafka-{version}", jvm[0], jvm[-1]
    )
    return jvm_archive.class_archive(directory, f"Kafka {version}", jvm[0], training)


def exercise(cluster: Cluster) -> None:
    """What a replay does first: a topic, acknowledged produces, a group's commit, a transaction."""
    from confluent_kafka import Consumer, Producer

    topic = cluster.create_topic("class-training")
    producer = Producer(cluster.client_config(**{"enable.idempotence": True, **QUIET}))
    producer.produce(topic, b"training")
    if producer.flush(TRAINING_TIMEOUT_S) != 0:
        raise RuntimeError("the training broker acknowledged no produce")
    group = cluster.unique_name("class-training")
    consumer = Consumer(
        cluster.client_config(
            **{
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                **QUIET,
            }
        )
    )
    try:
        consumer.subscribe([topic])

        def received() -> Any:
            message = consumer.poll(0.2)
            return None if message is None or message.error() else message

        nothing = "the training consumer received nothing"
        message = wait_for(received, TRAINING_TIMEOUT_S, nothing, every_s=0, error=RuntimeError)
        consumer.commit(message=message, asynchronous=False)
    finally:
        consumer.close()
    transactional = Producer(cluster.client_config(**{"transactional.id": group, **QUIET}))
    transactional.init_transactions(TRAINING_TIMEOUT_S)
    transactional.begin_transaction()
    transactional.produce(topic, b"training")
    transactional.commit_transaction(TRAINING_TIMEOUT_S)
