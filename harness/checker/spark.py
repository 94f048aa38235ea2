"""The Spark session the checker runs on, with Spark's own Kafka source on its classpath.

``local[2]`` by default (this machine has two cores); any ``spark.master`` URL for a cluster.
The Kafka connector matching the installed PySpark is resolved from Maven Central once and
cached (see :mod:`kafka_replay.servers.maven`), so later sessions never touch the network.
The driver binds 127.0.0.1 only.
"""

from __future__ import annotations

import os
import re
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

import pyspark
from pyspark.sql import SparkSession

from kafka_replay.servers.maven import Artifact, cached_classpath, resolve_classpath
from kafka_replay.servers.server_errors import ArtifactResolutionError

from .driver_archive import spark_class_archive

MASTER_ENV = "KAFKA_REPLAY_SPARK_MASTER"
#: A Spark Connect server to check with (``sc://host:port``) where no master is given: set for
#: its sides by ``kafka-replay compare`` (:mod:`.connect_server`), for its processes by pytest's
#: ``--replay-shared-spark``, or by a user with one.
REMOTE_ENV = "KAFKA_REPLAY_SPARK_REMOTE"
DEFAULT_MASTER = "local[2]"
LOG_CONFIG = Path(__file__).parent / "resources" / "log4j2.properties"
SCALA = "2.13"
_VERSIONED = re.compile(r"^(?P<name>.+?)-\d[\w.\-]*\.jar$")
_LOCAL_MASTER = re.compile(r"^local(\[(\d+|\*)(,\d+)?\])?$|^local-cluster\[\d+,\d+,\d+\]$")
MASTER_CONNECT_TIMEOUT_S = 5.0


def _artifact_name(jar: str) -> str:
    match = _VERSIONED.match(jar)
    return match.group("name") if match else jar


def connector_versions(pyspark_version: str) -> list[str]:
    """The Kafka connector releases that fit a PySpark release, the best first: its own, then
    the earlier patch releases of its line (a patch release of Spark keeps its connector's
    interfaces, and Maven Central does not carry every one: 4.2.1's is missing)."""
    parts = re.match(r"^(\d+)\.(\d+)\.(\d+)", pyspark_version)
    if parts is None:
        return [pyspark_version]
    major, minor, patch = (int(part) for part in parts.groups())
    own = [] if pyspark_version == f"{major}.{minor}.{patch}" else [pyspark_version]
    return own + [f"{major}.{minor}.{n}" for n in range(patch, -1, -1)]


def kafka_connector_jars() -> list[Path]:
    """Spark's Kafka source for this PySpark, minus what PySpark already ships.

    A connector cached before is taken without asking Maven; else each release of
    :func:`connector_versions` is resolved in turn, once (then cached).
    """
    versions = connector_versions(pyspark.__version__)
    cached = (cached_classpath(f"spark-kafka-{version}") for version in versions)
    jars = next(filter(None, cached), None) or _resolve_connector(versions)
    bundled = Path(pyspark.__file__).parent / "jars"
    shipped = {_artifact_name(p.name) for p in bundled.glob("*.jar")}
    return [jar for jar in jars if _artifact_name(jar.name) not in shipped]


def _resolve_connector(versions: Sequence[str]) -> list[Path]:
    """The first of ``versions`` whose connector resolves from Maven Central, cached."""
    refused = []
    for version in versions:
        connector = Artifact("org.apache.spark", f"spark-sql-kafka-0-10_{SCALA}", version)
        try:
            return resolve_classpath(f"spark-kafka-{version}", [connector])
        except ArtifactResolutionError as exc:
            refused.append(f"{version}: {str(exc).splitlines()[0]}")
    raise ArtifactResolutionError(
        f"no Kafka connector for PySpark {pyspark.__version__} resolved from Maven Central "
        f"({'; '.join(refused)}); install a PySpark whose release line has one "
        f"(pip install 'pyspark>=4.0,<4.3')"
    )


def spark_named(master: str | None = None) -> bool:
    """Whether a Spark to use is named (``master``, ``$KAFKA_REPLAY_SPARK_MASTER`` or a Connect
    server in ``$KAFKA_REPLAY_SPARK_REMOTE``): then the harness starts no shared server."""
    return bool(master or os.environ.get(MASTER_ENV) or os.environ.get(REMOTE_ENV))


def remote_url(master: str | None = None) -> str | None:
    """The Spark Connect server a session goes to: ``$KAFKA_REPLAY_SPARK_REMOTE`` when no
    ``master`` is given; None for a driver of its own."""
    return (os.environ.get(REMOTE_ENV) or None) if master is None else None


def check_master(master: str | None = None) -> str:
    """The master URL to use, refused at once if Spark could not use it.

    Spark itself waits about a minute for a standalone master that does not answer and then
    fails with "Cannot call methods on a stopped SparkContext"; here a ``spark://`` master is
    tried first (one of its hosts must accept a connection), and a URL of no known form is
    named.
    """
    master = master or os.environ.get(MASTER_ENV) or DEFAULT_MASTER
    if _LOCAL_MASTER.match(master) or master.startswith(("yarn", "k8s://", "mesos://")):
        return master
    if not master.startswith("spark://"):
        raise ValueError(
            f"the checker's Spark master {master!r} is not a Spark master URL: give local[N], "
            f"spark://HOST:PORT, yarn or k8s://HOST:PORT (--spark-master or ${MASTER_ENV}; "
            f"default {DEFAULT_MASTER})"
        )
    problems = []
    for address in master.removeprefix("spark://").split(","):
        host, _, port = address.rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=MASTER_CONNECT_TIMEOUT_S).close()
            return master
        except (OSError, ValueError) as exc:
            problems.append(f"{address}: {exc}")
    raise ValueError(
        f"the checker's Spark master {master} does not answer ({'; '.join(problems)}): start it, "
        f"or leave --spark-master and ${MASTER_ENV} out to run Spark here ({DEFAULT_MASTER})"
    )


#: PySpark's DataFrame debugging walks the Python stack and asks the session's settings on
#: every column function, to name the caller in a failed query's error: a check builds
#: hundreds of columns, and its queries are the harness's own (a user's output-id function
#: fails with its own traceback, see :func:`~kafka_replay.checker.sources.user_event_id`).
#: Off: zombie-commit's warm check 8.0 s instead of 9.9 s (medians, alternating, one session).
CALL_SITES_OFF = {"spark.python.sql.dataFrameDebugging.enabled": "false"}

MAX_SHUFFLE_PARTITIONS = 16
#: Bytes of run history per shuffle partition: about 250,000 acknowledgements.
HISTORY_BYTES_PER_PARTITION = 64 * 2**20
#: Up to this much run history (about 30,000 acknowledgements: every incident of the
#: catalog), a check runs interpreted, see :func:`fit_to_history`.
SMALL_HISTORY_BYTES = 8 * 2**20
#: How a small run is checked: interpreted, no Java code generated and compiled per query,
#: no re-planning between stages (``factoryMode`` is one of Spark's internal settings; its
#: ``NO_CODEGEN`` is the path Spark itself falls back to when generated code does not
#: compile); and joins kept in one partition: a small run's inputs are read as one
#: partition (:func:`~kafka_replay.checker.views.in_one_partition`), so a join needs no
#: shuffle, unless Spark, not knowing a Kafka read's or a checkpoint's size, takes it for more
#: than ``maxSinglePartitionBytes`` (its size unknown: the largest there is), or broadcasts
#: one side, each broadcast a job of its own (zombie-commit's recorded check: 3 stages, not 7,
#: once its inputs were in one partition).
SMALL_RUN_SETTINGS = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.maxSinglePartitionBytes": f"{2**63 - 1}b",
}
#: Where a session keeps the value it was configured with for each setting a check changes.
_CONFIGURED = "spark.kafka-replay.configured."


def _configured(spark: SparkSession, key: str) -> str:
    """The session's own value of ``key``, before any check changed it."""
    kept = spark.conf.get(_CONFIGURED + key, None)
    if kept is None:  # the first check in this session
        kept = spark.conf.get(key)
        spark.conf.set(_CONFIGURED + key, kept)
    return kept


def fit_to_history(spark: SparkSession, history_bytes: int) -> int:
    """Fit the session to a check's data, never beyond what the session was given.

    Every shuffle partition is a task in every stage: an incident's few thousand records in
    16 partitions took 22 s to check where 2 took 13 s (measured side by side, one session),
    and one 6.3 s where two took 6.9 s (warm, with the matching checkpointed: see
    :attr:`~kafka_replay.checker.views.AnalysisViews.matched`), while 10M records need the 16.
    Below :data:`SMALL_HISTORY_BYTES` the check also runs interpreted (:data:`SMALL_RUN_SETTINGS`):
    on an incident's records, compiling code for each of its queries cost more than running
    them (zombie-commit's run, 60 inputs read from Kafka: 13.0 s instead of 18.7 s in a new
    session, 7.5 instead of 11.4 CPU-seconds in a warm
    one). Returns the shuffle partitions set.
    """
    configured = int(_configured(spark, "spark.sql.shuffle.partitions"))
    small = history_bytes <= SMALL_HISTORY_BYTES
    wanted = 1 if small else max(2, -(-history_bytes // HISTORY_BYTES_PER_PARTITION))
    partitions = min(configured, wanted)
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    for key, for_small in SMALL_RUN_SETTINGS.items():
        own = _configured(spark, key)
        spark.conf.set(key, for_small if small else own)
    return partitions


#: C1 only, with the code cache tiered compilation would have: C1 alone gets 48 MB, which a
#: driver checking run after run fills within minutes (an exploration's lane did in 7), and
#: the JVM then stops compiling for the rest of its life.
C1_ONLY = ("-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=240m")


def spark_session(
    master: str | None = None,
    app_name: str = "kafka-replay-checker",
    extra_jars: list[Path] | None = None,
    class_sharing: bool = True,
    java_options: Sequence[str] = (),
    small_runs: bool = False,
) -> SparkSession:
    """A session for the checker (reused if one is already running in this process): on the
    Spark Connect server ``$KAFKA_REPLAY_SPARK_REMOTE`` names when no ``master`` is given,
    else a driver of its own.

    Its driver JVM maps Spark's classes from a class-data archive (made on first use, see
    :mod:`kafka_replay.checker.driver_archive`) unless ``class_sharing`` is off. ``small_runs`` is
    for a session that checks incident-sized runs (:data:`SMALL_HISTORY_BYTES`): its driver
    JVM compiles with C1 only, whose quick code suits minutes of small checks (the first check
    of a new session on zombie-commit's run: 9.7 s instead of 13.9 s; later ones 5.2
    CPU-seconds instead of 7.4), where millions of records want C2's.
    """
    remote = remote_url(master)
    if remote:
        return remote_session(remote, extra_jars)
    master = check_master(master)
    # inherited from a process on Spark Connect (PySpark's switch to it): this one has a driver
    os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
    archive = spark_class_archive() if class_sharing else None
    driver_options = [
        *([f"-XX:SharedArchiveFile={archive}"] if archive else []),
        *(C1_ONLY if small_runs else []),
        f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}",
        *java_options,
    ]
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python workers run the user's output-id function: they need this interpreter's packages.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    jars = ",".join(str(jar) for jar in [*kafka_connector_jars(), *(extra_jars or [])])
    return (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.jars", jars)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # the most a check uses (see fit_to_history): 16 keeps a 10M-record shuffle
        # from spilling in 2g
        .config("spark.sql.shuffle.partitions", str(MAX_SHUFFLE_PARTITIONS))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "2g")
        .config("spark.driver.extraJavaOptions", " ".join(driver_options))
        .config(map=CALL_SITES_OFF)
        .getOrCreate()
    )


def remote_session(url: str, extra_jars: list[Path] | None = None) -> SparkSession:
    """A session of this process's own on a Spark Connect server (see :mod:`.connect_server`),
    with ``extra_jars`` (a JDBC driver) added to it."""
    session = SparkSession.builder.remote(url).getOrCreate()
    if extra_jars:
        session.addArtifacts(*(str(jar) for jar in extra_jars))
    return session


def is_remote(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session: no SparkContext on this side."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def checked_on(spark: SparkSession) -> str:
    """Where ``spark``'s queries run: its master (``local[2]``), or ``sc://HOST:PORT (local[2])``
    for a Spark Connect server's."""
    master = spark.conf.get("spark.master")
    return f"{os.environ.get(REMOTE_ENV)} ({master})" if is_remote(spark) else str(master)
