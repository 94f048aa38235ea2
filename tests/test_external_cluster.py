"""``--kafka-bootstrap``: a user's existing cluster is used, and only our own topics are touched."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from kafka_replay.cluster import Cluster


def test_pytest_against_an_existing_cluster_touches_only_its_own_topics(
    kafka_cluster: Cluster, kafka_topic, tmp_path: Path
) -> None:
    bystander = kafka_topic("belongs-to-someone-else")
    names_file = tmp_path / "names.txt"
    (tmp_path / "test_user_suite.py").write_text(
        textwrap.dedent(
            f"""
            import pytest
            from tests.kafka_helpers import produce_acked

            def test_uses_the_given_cluster(kafka_cluster, kafka_topic):
                topic = kafka_topic("orders", partitions=2)
                produce_acked(kafka_cluster, topic, [("k", "v")])
                leftover = kafka_cluster.create_topic("left-for-teardown")
                with open({str(names_file)!r}, "w") as out:
                    out.write(kafka_cluster.bootstrap_servers + "\\n" + topic + "\\n" + leftover)

            @pytest.mark.kafka(brokers=3)
            def test_needing_three_brokers_is_skipped(kafka_cluster):
                raise AssertionError("must not run against an external cluster")
            """
        )
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", str(tmp_path), "-p", "no:cacheprovider",
         "-q", "-rs", "--rootdir", str(tmp_path),
         "--replay-kafka-bootstrap", kafka_cluster.bootstrap_servers],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 1 skipped" in result.stdout
    assert "cannot provide" in result.stdout  # the skip says why

    bootstrap, topic, leftover = names_file.read_text().split("\n")
    assert bootstrap == kafka_cluster.bootstrap_servers
    assert topic.startswith("kafka-replay-") and leftover.startswith("kafka-replay-")
    remaining = set(kafka_cluster.admin().list_topics(timeout=10).topics)
    assert topic not in remaining and leftover not in remaining
    assert bystander in remaining
