"""Creating a run's topic when librdkafka drops the request's connection before its answer:
the retry's logic alone, on a stand-in for the admin client (the real creation is in every run
of the catalog)."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from kafka_replay.cluster.external import ExternalCluster


class Answers:
    """An admin client whose create_topics answers with each error in turn (None: created)."""

    def __init__(self, *errors: int | None) -> None:
        self.errors, self.asked = list(errors), 0

    def create_topics(self, topics: list[NewTopic], **_: Any) -> dict[str, Future]:
        self.asked += 1
        future: Future = Future()
        error = self.errors.pop(0)
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(KafkaException(KafkaError(error)))
        return {topics[0].topic: future}


def cluster_answering(answers: Answers) -> ExternalCluster:
    cluster = ExternalCluster("127.0.0.1:9")
    cluster._admin = answers  # type: ignore[assignment]
    return cluster


def test_a_request_dropped_before_its_answer_is_asked_again() -> None:
    answers = Answers(KafkaError._DESTROY_BROKER, KafkaError.TOPIC_ALREADY_EXISTS)
    cluster_answering(answers)._create(NewTopic("t", 1, 1), timeout=5)
    assert answers.asked == 2  # "already exists": the first request's doing


def test_already_exists_at_the_first_answer_is_librdkafkas_own_retry() -> None:
    """librdkafka asks again by itself when a request times out on a loaded machine (the broker's
    log shows the first CreateTopics succeed, then one "already exists"): the name is the run's
    own, made unique, so the topic is ours."""
    answers = Answers(KafkaError.TOPIC_ALREADY_EXISTS, None)
    cluster_answering(answers)._create(NewTopic("t", 1, 1), timeout=5)
    assert answers.asked == 1


def test_a_refusal_is_raised_at_once() -> None:
    answers = Answers(KafkaError.INVALID_REPLICATION_FACTOR, None)
    with pytest.raises(KafkaException):
        cluster_answering(answers)._create(NewTopic("t", 1, 1), timeout=5)
    assert answers.asked == 1
