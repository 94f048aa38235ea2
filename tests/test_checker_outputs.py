"""How output records are matched to inputs, in a Kafka topic (the event_id header, a JSON
field, the user's function, or nothing), and outputs that are not Kafka topics: files and
database tables (through JDBC)."""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys

import pytest
from confluent_kafka import KafkaError, Message, Producer

from kafka_replay.apps.correlation import OutputRecord
from kafka_replay.checker import FileOutput, KafkaOutput, check_run
from kafka_replay.checker.sources import OutputIdError, kafka_log
from kafka_replay.cluster import Cluster
from kafka_replay.workload.records import Stamper
from tests.test_checker import commit, write_run

ACKS = [(f"e{i}", "k", i, 0, i) for i in range(5)]

#: An output record to write: (partition, key, value, headers).
Out = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes]] | None]


def write_output(cluster: Cluster, topic: str, records: list[Out]) -> None:
    """Produce the records in order, one at a time, so each lands at the next offset."""
    producer = Producer(cluster.client_config())
    errors: list[KafkaError] = []

    def on_delivery(error: KafkaError | None, _message: Message) -> None:
        if error:
            errors.append(error)

    for partition, key, value, headers in records:
        producer.produce(
            topic, value, key, partition=partition, headers=headers, on_delivery=on_delivery
        )
        assert producer.flush(30) == 0, "output record unacknowledged after 30s"
    assert not errors, errors


def as_json(event_id: str, **fields: object) -> bytes:
    return json.dumps({"event_id": event_id, "total": 7, **fields}).encode()


def check_output(
    spark, cluster: Cluster, kafka_topic, tmp_path, records: list[Out], acks=ACKS, **output
):
    topic = kafka_topic("output", partitions=2)
    write_output(cluster, topic, records)
    run = write_run(tmp_path, acks, offsets=[commit(len(acks))])
    return check_run(
        spark, run, KafkaOutput(cluster.bootstrap_servers, topic, **output), "exactly-once"
    )


def nonzero(result) -> dict[str, int]:
    return {name: count for name, count in result.counts.items() if count}


def event_id_from_key(record: OutputRecord) -> bytes | None:
    """A user's function: this app keys its output by the input's event_id."""
    return record.key


def order_number(record: OutputRecord) -> str:
    """A user's function that assumes every value is a JSON object with an ``order`` field."""
    return json.loads(record.value or b"")["order"]


@pytest.mark.parametrize(
    "headers",
    [None, [("trace_id", b"abc"), ("source", b"billing")], [("event_id", b"")]],
    ids=["no-headers", "other-headers", "empty-event-id-header"],
)
def test_outputs_without_an_event_id_header_are_matched_by_their_json_field(
    spark, kafka_cluster, kafka_topic, tmp_path, headers
) -> None:
    records: list[Out] = [(0, b"k", as_json(f"e{i}"), headers) for i in range(5)]
    result = check_output(spark, kafka_cluster, kafka_topic, tmp_path, records)
    assert nonzero(result) == {}
    assert result.totals == {"acknowledged": 5, "output_records": 5, "delivered": 5}


def test_the_event_id_header_comes_before_the_value(
    spark, kafka_cluster, kafka_topic, tmp_path
) -> None:
    records: list[Out] = [
        (0, None, b"plain text, not JSON", [("event_id", b"e0")]),
        (0, None, None, [("event_id", b"e1")]),
        (0, None, as_json("zzz"), [("event_id", b"e2")]),  # the header wins over the field
        (1, None, as_json("e3"), [("trace_id", b"t")]),
        (1, None, as_json("e4"), [("event_id", b"e4"), ("event_id", b"e4")]),
    ]
    result = check_output(spark, kafka_cluster, kafka_topic, tmp_path, records)
    assert nonzero(result) == {}
    assert result.totals["delivered"] == 5


def test_values_that_are_not_json_objects_are_unexpected(
    spark, kafka_cluster, kafka_topic, tmp_path
) -> None:
    acks = ACKS[:3]
    records: list[Out] = [
        *[(0, b"k", as_json(f"e{i}"), None) for i in range(3)],
        (0, b"k", b"e3 but not JSON", None),
        (0, b"k", b'["e4"]', [("trace_id", b"t")]),
        (0, b"k", b'{"id": "e4"}', None),
        (1, b"k", b"\xff\xfe binary", None),
    ]
    result = check_output(spark, kafka_cluster, kafka_topic, tmp_path, records, acks)
    assert nonzero(result) == {"unexpected": 4}
    assert result.totals == {"acknowledged": 3, "output_records": 7, "delivered": 3}
    examples = result.findings["unexpected"].examples
    assert [(e["event_id"], e["out_partition"], e["out_offset"]) for e in examples] == [
        (None, 0, 3),
        (None, 0, 4),
        (None, 0, 5),
        (None, 1, 0),
    ]


def test_null_values_are_unexpected(spark, kafka_cluster, kafka_topic, tmp_path) -> None:
    acks = ACKS[:2]
    records: list[Out] = [
        (0, b"k", as_json("e0"), None),
        (0, b"k", None, None),  # a tombstone
        (1, None, None, [("trace_id", b"t")]),
        (1, b"k", as_json("e1"), None),
    ]
    result = check_output(spark, kafka_cluster, kafka_topic, tmp_path, records, acks)
    assert nonzero(result) == {"unexpected": 2}
    examples = result.findings["unexpected"].examples
    assert [(e["event_id"], e["out_partition"], e["out_offset"]) for e in examples] == [
        (None, 0, 1),
        (None, 1, 0),
    ]


def test_the_users_function_matches_outputs_and_none_is_unexpected(
    spark, kafka_cluster, kafka_topic, tmp_path
) -> None:
    records: list[Out] = [
        *[(i % 2, f"e{i}".encode(), f"invoice {i}".encode(), None) for i in range(5)],
        (0, None, as_json("e0"), [("event_id", b"e0")]),  # no key: None, whatever else it has
    ]
    result = check_output(
        spark, kafka_cluster, kafka_topic, tmp_path, records, event_id=event_id_from_key
    )
    assert nonzero(result) == {"unexpected": 1}
    assert result.totals["delivered"] == 5
    example = result.findings["unexpected"].examples[0]
    assert (example["event_id"], example["out_partition"], example["out_offset"]) == (None, 0, 3)


def test_a_users_function_that_raises_names_itself_and_the_record(
    spark, kafka_cluster, kafka_topic, tmp_path
) -> None:
    records: list[Out] = [
        (0, None, b'{"order": "e0"}', None),
        (1, None, b'{"order": "e1"}', None),
        (1, None, b'{"order": "e2"}', None),
        (1, None, b'{"invoice": "e3"}', None),  # the function raises KeyError here
        (1, None, b'{"invoice": "e4"}', None),  # and here
    ]
    with pytest.raises(OutputIdError) as raised:
        check_output(spark, kafka_cluster, kafka_topic, tmp_path, records, event_id=order_number)
    message = str(raised.value)
    assert "tests.test_checker_outputs:order_number" in message
    assert "partition 1, offset 2 (and 1 more)" in message
    assert "KeyError: 'order'" in message
    assert "Py4J" not in message and "org.apache.spark" not in message


def test_the_input_log_shows_what_the_brokers_kept_and_the_app_is_judged_on_it(
    spark, kafka_cluster, kafka_topic, tmp_path
) -> None:
    stamper = Stamper(random.Random(1))
    first, second, third = (stamper.stamp("k", {"n": n}) for n in range(3))
    big = stamper.stamp("big", {}, pad_to=800_000)  # read for its seq without parsing it all
    # the log: second was retried after third, and appended again; plain has no header
    # and its seq where the workload does not write it
    log = [first, third, second, second, big]
    source = kafka_topic("input", partitions=1)
    plain = (0, b"p", b'{"n": 1, "seq": 5, "event_id": "plain"}', None)
    write_output(kafka_cluster, source, [(0, r.key.encode(), r.value, r.headers) for r in log])
    write_output(kafka_cluster, source, [plain])
    assert sorted(kafka_log(spark, kafka_cluster.bootstrap_servers, source).collect()) == sorted(
        [
            (r.event_id, r.key, r.seq, 0, offset, source)
            for offset, r in enumerate(log)
        ] + [("plain", "p", 5, 0, 5, source)]
    )  # fmt: skip
    acks = [(r.event_id, r.key, r.seq, 0, offset) for offset, r in enumerate(log) if offset != 2]
    acks += [("plain", "p", 5, 0, 5), ("gone", "k", 3, 0, 6)]  # gone: its leader died
    run = write_run(tmp_path, acks, offsets=[commit(7)])
    sink = kafka_topic("output", partitions=1)  # the app processed every record of the log
    delivered = [r.event_id for r in log] + ["plain"]
    write_output(kafka_cluster, sink, [(0, None, as_json(e), None) for e in delivered])
    output = KafkaOutput(kafka_cluster.bootstrap_servers, sink)

    alone = check_run(spark, run, output, "exactly-once")
    assert not alone.source_read
    assert alone.verdict == "lossy"  # as if the app had lost gone and repeated second
    assert nonzero(alone) == {"lost": 1, "duplicate": 1, "reordered": 1,
                              "reprocessing_after_reset": 1}  # fmt: skip
    read = check_run(
        spark, run, output, "exactly-once", KafkaOutput(kafka_cluster.bootstrap_servers, source)
    )
    assert read.source_read
    assert (read.verdict, read.result) == ("exactly-once", "pass")
    assert nonzero(read) == {"lost_write": 1, "log_duplicate": 1, "log_reordered": 1,
                             "reordered": 1}  # fmt: skip
    assert read.totals == {"acknowledged": 6, "output_records": 6, "delivered": 5,
                           "log_records": 6}  # fmt: skip
    (lost_write,) = read.findings["lost_write"].examples
    assert (lost_write["event_id"], lost_write["log_event_id"]) == ("gone", None)
    (reordered,) = read.findings["log_reordered"].examples
    assert (reordered["event_id"], reordered["seq"], reordered["previous_seq"]) == (
        second.event_id, 1, 2
    )  # fmt: skip
    assert read.findings["log_duplicate"].examples[0]["offsets"] == [2, 3]


def test_output_files_are_checked(spark, tmp_path) -> None:
    run = write_run(tmp_path, ACKS, offsets=[commit(5)])
    out = tmp_path / "out"
    out.mkdir()
    (out / "part-0.json").write_text(
        "".join(json.dumps({"event_id": f"e{i}", "total": i}) + "\n" for i in (0, 1, 2, 4, 4))
    )
    result = check_run(spark, run, FileOutput(str(out)), "at-least-once")
    assert (result.verdict, result.result) == ("lossy", "fail")
    assert {k: v for k, v in result.counts.items() if v} == {"lost": 1, "duplicate": 1}


def test_a_database_table_is_checked_through_jdbc(tmp_path) -> None:
    run = write_run(tmp_path, ACKS, offsets=[commit(5)])
    database = tmp_path / "billing.db"
    with sqlite3.connect(database) as connection:
        connection.execute("create table invoices (event_id text, amount integer)")
        connection.executemany(
            "insert into invoices values (?, ?)", [(f"e{i}", 10 * i) for i in (0, 1, 1, 3, 4)]
        )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafka_replay.cli",
            "check",
            str(run),
            "--guarantee",
            "at-least-once",
            "--jdbc-url",
            f"jdbc:sqlite:{database}",
            "--jdbc-table",
            "invoices",
            "--jdbc-driver",
            "org.xerial:sqlite-jdbc:3.54.1.0",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads((run / "check.json").read_text())
    assert report["verdict"] == "lossy"
    assert report["anomalies"]["lost"]["examples"][0]["event_id"] == "e2"
    assert report["anomalies"]["duplicate"]["count"] == 1
