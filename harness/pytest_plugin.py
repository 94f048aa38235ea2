"""pytest plugin: real Kafka clusters as fixtures.

Installed with the package (``pytest11`` entry point). Fixtures:

- ``kafka_cluster``: a running cluster; tests asking for the same configuration share one for
  the whole session. Configure it with ``@pytest.mark.kafka(brokers=3, broker_config={...})``
  and choose the release with ``--kafka-version``, ``$KAFKA_REPLAY_VERSION`` or by
  parametrizing ``kafka_version``.
- ``kafka_admin``: an admin client for it.
- ``kafka_topic``: a factory of uniquely named topics, deleted after the test.
- ``kafka_cluster_factory``: unshared clusters for tests that break or restart them.

``--kafka-backend container`` (or parametrizing ``kafka_backend``) runs brokers in containers;
those tests are skipped, saying how to enable them, where no Docker daemon answers.
``--kafka-backend tansu[:VERSION]`` runs them on Tansu, another vendor's Kafka-compatible broker.

``--kafka-bootstrap HOST:PORT`` runs everything against an existing cluster instead; tests
that need a particular broker configuration are then skipped. An incident item that a cluster
cannot host (an essential broker setting it cannot take, more brokers than it has) is skipped
with the reason: it does not apply there.

Incidents: every incident definition (``*.toml``) in an incident directory is collected as
one pytest item per profile, ``<file>::incident[<name>-<profile>]`` (marked ``incident``), so
``pytest -k incident`` runs them. Incident directories: the catalog (collected where the
``incidents`` package is, e.g. ``pytest --pyargs incidents``), ``--incidents DIR`` (repeatable;
collected wherever pytest runs) and ``incidents = [...]`` under ``[tool.kafka-replay]`` in the
project's ``pyproject.toml``. ``--app``, ``--output-id``, ``--guarantee``, ``--group-protocol``
and ``--restart`` put the user's own app under the incidents' conditions. ``--setup SETUP``
(repeatable; the syntax of ``kafka-replay compare``) multiplies every incident item by setup,
its id naming it: ``incident[<name>-<profile>-kafka=3.9.2]``.
``replay_incident(name, profile)`` replays one incident for a test of your own; ``replay_spark``
is one Spark session per test process.

The plugin imports nothing heavy when it loads: Kafka clients, Spark and the replay engine are
imported by the fixtures and items that use them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.apps.supervisor import RESTART_MODES
from harness.checker.verdict import GUARANTEES
from harness.cluster.backends import backend_argument, choose_backend
from harness.cluster.versions import choose_version
from harness.replay.catalog import incident_directories
from harness.replay.model import GROUP_PROTOCOLS, PROFILES, DefinitionError

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient
    from pyspark.sql import SparkSession

    from harness.cluster import Cluster
    from harness.cluster.nodes import NodeCluster
    from harness.cluster.pool import ClusterPool, ClusterSpec
    from harness.replay.compare import Setup
    from harness.replay.model import Incident
    from harness.replay.runner import Outcome

BOOTSTRAP_ENV = "KAFKA_REPLAY_BOOTSTRAP"
CLUSTERS_KEY = pytest.StashKey[list["Cluster"]]()
DIRECTORIES_KEY = pytest.StashKey[list[Path]]()
SETUPS_KEY = pytest.StashKey[list["Setup | None"]]()
LOG_TAIL_LINES = 60


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kafka-replay", "Kafka incident replay")
    group.addoption(
        "--kafka-version",
        default=None,
        help="Apache Kafka release for embedded brokers "
        "(default: $KAFKA_REPLAY_VERSION, else the newest 4.x)",
    )
    group.addoption(
        "--kafka-backend",
        default=None,
        type=backend_argument,
        help="how brokers run: embedded, container or tansu[:VERSION] (default: "
        "$KAFKA_REPLAY_BACKEND, else embedded)",
    )
    group.addoption(
        "--kafka-image",
        default=None,
        help="image for the container backend (default: a local kafka-replay/kafka:<version>, "
        "else apache/kafka:<version>, else one built on this machine)",
    )
    group.addoption(
        "--kafka-bootstrap",
        default=None,
        metavar="HOST:PORT",
        help="use this existing cluster instead of starting brokers "
        "(default: $KAFKA_REPLAY_BOOTSTRAP); only uniquely prefixed topics are created and deleted",
    )
    group.addoption(
        "--incidents",
        action="append",
        default=[],
        metavar="DIR",
        help="a directory of your own incident definitions, beside the catalog; repeatable",
    )
    group.addoption(
        "--app",
        default=None,
        help="run the incidents against this app instead of the reference apps: a command line "
        "({bootstrap}, {input_topic}, ... placeholders allowed) or module:function",
    )
    group.addoption(
        "--output-id",
        default=None,
        metavar="MODULE:FUNCTION",
        help="how to find the input's event_id in your app's output records",
    )
    group.addoption(
        "--guarantee",
        default=None,
        choices=GUARANTEES,
        help="the delivery guarantee your app declares (default: each incident's)",
    )
    group.addoption(
        "--group-protocol",
        default=None,
        choices=GROUP_PROTOCOLS,
        help="the consumer group protocol apps are told to use (default: classic)",
    )
    group.addoption(
        "--restart",
        default=None,
        metavar="POLICY",
        help=f"what happens when your app exits: {', '.join(RESTART_MODES)} "
        "(default: each incident's, usually always)",
    )
    group.addoption(
        "--setup",
        action="append",
        default=[],
        metavar="SETUP",
        help="replay every incident item on this setup too, e.g. 'kafka=3.9.2' or "
        "'protocol=consumer,client.max.poll.records=500' (keys as for kafka-replay compare, "
        "but bootstrap); repeatable: one item per setup, its id naming it",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kafka(brokers=1, broker_config=None): the Kafka cluster the test needs; tests with "
        "the same arguments and version share one cluster for the session",
    )
    config.addinivalue_line("markers", "incident: a replay of an incident definition")
    directories = incident_directories(config.getoption("--incidents"), config.rootpath)
    config.stash[DIRECTORIES_KEY] = directories
    config.stash[SETUPS_KEY] = _setups(config.getoption("--setup"))
    _collect_given_directories(config)


def _setups(texts: list[str]) -> list[Setup | None]:
    """``--setup`` items checked at once; ``[None]`` (the command line's setup) when none."""
    if not texts:
        return [None]
    from harness.replay.compare import parse_setup

    setups = []
    for text in texts:
        try:
            setup = parse_setup(text)
        except ValueError as exc:
            raise pytest.UsageError(f"--setup {text!r}: {exc}") from None
        if setup.bootstrap:
            raise pytest.UsageError(
                f"--setup {text!r}: an external cluster is one per session: give "
                "--kafka-bootstrap instead"
            )
        setups.append(setup)
    return setups


def _collect_given_directories(config: pytest.Config) -> None:
    """Make ``--incidents DIR`` collected wherever pytest runs, unless an argument covers it."""
    given = [Path(d).resolve() for d in config.getoption("--incidents")]
    covered = [Path(a.split("::")[0]).resolve() for a in config.args]
    for directory in given:
        if not any(directory == c or c in directory.parents for c in covered):
            config.args.append(str(directory))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """An incident definition in an incident directory is a file of incident items."""
    if file_path.suffix != ".toml" or file_path.name == "pyproject.toml":
        return None
    if file_path.parent.resolve() not in parent.config.stash[DIRECTORIES_KEY]:
        return None
    return IncidentFile.from_parent(parent, path=file_path)


class IncidentFile(pytest.File):
    """One definition: an item per profile, each replaying it on real Kafka."""

    def collect(self) -> Iterator[pytest.Item]:
        from harness.replay.catalog import load_incidents

        incidents = load_incidents(tuple(self.config.stash[DIRECTORIES_KEY]))
        (incident,) = [i for i in incidents.values() if i.source.resolve() == self.path.resolve()]
        for setup in self.config.stash[SETUPS_KEY]:
            for profile in PROFILES:
                named = f"-{setup.label}" if setup else ""
                item = pytest.Function.from_parent(
                    self,
                    name=f"incident[{incident.name}-{profile}{named}]",
                    callobj=_incident_test(incident, profile, setup),
                )
                item.add_marker(pytest.mark.incident)
                yield item

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | Any:
        """A definition mistake is shown as its message (file, field, what to do), no traceback."""
        if isinstance(excinfo.value, DefinitionError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)


def disagreements(incident: Incident, outcome: Outcome) -> list[str]:
    """Signature symptoms whose verdict differs between the app's reports and outside sources."""
    outside = outcome.symptoms_outside
    if outside is None:
        return []
    return [
        f"{c.symptom}: reported {outcome.symptoms[c.symptom]}, seen {outside[c.symptom]}"
        for c in incident.signature
        if outside[c.symptom] is not None
        and c.holds(outside[c.symptom]) != c.holds(outcome.symptoms[c.symptom])
    ]


def _incident_test(incident: Incident, profile: str, setup: Setup | None) -> Callable[..., None]:
    def test_incident(replay_incident: Callable[..., Outcome]) -> None:
        outcome = replay_incident(incident.name, profile, setup=setup)
        print(outcome.explain())
        if not outcome.applicable:
            pytest.skip("; ".join(outcome.reasons))
        assert outcome.passed, outcome.explain()
        assert not disagreements(incident, outcome), (
            "the app's own reports and what the brokers and the data show disagree: "
            + "; ".join(disagreements(incident, outcome))
        )

    test_incident.__doc__ = f"{incident.title} ({profile})"
    return test_incident


@pytest.fixture(scope="session")
def kafka_cluster_pool(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ClusterPool]:
    """Every cluster of the session; each is stopped when the session ends."""
    from harness.cluster.pool import ClusterPool

    bootstrap = request.config.getoption("--kafka-bootstrap") or os.environ.get(BOOTSTRAP_ENV)
    pool = ClusterPool(
        tmp_path_factory.mktemp("kafka"),
        bootstrap_servers=bootstrap,
        image=request.config.getoption("--kafka-image"),
    )
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def kafka_version(request: pytest.FixtureRequest) -> str:
    """The Kafka release under test; parametrize this name to run a test on several."""
    return choose_version(request.config.getoption("--kafka-version"))


@pytest.fixture
def kafka_backend(request: pytest.FixtureRequest) -> str:
    """How brokers run; parametrize this name to run a test on several backends."""
    return choose_backend(request.config.getoption("--kafka-backend"))


@pytest.fixture(scope="session")
def _docker_problem(request: pytest.FixtureRequest) -> str | None:
    """Why the container backend cannot run here, or None when it can."""
    from harness.cluster.images import DockerUnavailable, docker_client

    if request.config.getoption("--kafka-bootstrap") or os.environ.get(BOOTSTRAP_ENV):
        return None
    try:
        docker_client()
    except DockerUnavailable as exc:
        return str(exc)
    return None


@pytest.fixture
def kafka_cluster(
    request: pytest.FixtureRequest,
    kafka_cluster_pool: ClusterPool,
    kafka_version: str,
    kafka_backend: str,
) -> Cluster:
    """A running Kafka cluster configured by the test's ``kafka`` marker."""
    marker = request.node.get_closest_marker("kafka")
    options: Mapping[str, object] = marker.kwargs if marker else {}
    unknown = set(options) - {"brokers", "broker_config"}
    if unknown or (marker and marker.args):
        raise pytest.UsageError(
            f"{request.node.nodeid}: @pytest.mark.kafka takes brokers= and broker_config= "
            f"keywords only, got {sorted(unknown) or marker.args}"
        )
    from harness.cluster.pool import ClusterSpec

    if kafka_backend == "container":
        skip_without_docker(request)
    spec = ClusterSpec.of(kafka_version, backend=kafka_backend, **options)  # type: ignore[arg-type]
    return _pooled_cluster(request, kafka_cluster_pool, spec)


def _pooled_cluster(
    request: pytest.FixtureRequest, pool: ClusterPool, spec: ClusterSpec, optional: bool = False
) -> Cluster:
    """The pool's cluster for ``spec``, attached to the test.

    A test the cluster cannot serve (an external one, or Tansu, asked for broker settings or
    more brokers) is skipped with the reason; ``optional`` broker settings are left out instead.
    """
    from harness.cluster.errors import NotApplicable
    from harness.cluster.pool import ClusterSpec

    default = ClusterSpec.of(
        request.config.getoption("--kafka-version"),
        backend=request.config.getoption("--kafka-backend"),
    )
    try:
        cluster = pool.get(spec, default=default, optional=optional)
    except NotApplicable as exc:
        pytest.skip(str(exc))
    request.node.stash.setdefault(CLUSTERS_KEY, []).append(cluster)
    return cluster


def skip_without_docker(request: pytest.FixtureRequest) -> None:
    """Skip a container-backend test where no Docker daemon runs, saying how to enable it."""
    problem = request.getfixturevalue("_docker_problem")
    if problem:
        pytest.skip(f"container backend unavailable: {problem}")


@pytest.fixture
def kafka_cluster_factory(
    request: pytest.FixtureRequest, kafka_backend: str, kafka_version: str, tmp_path: Path
) -> Iterator[Callable[..., NodeCluster]]:
    """Unshared, unstarted clusters for tests that break or restart them; stopped afterwards.

    ``kafka_cluster_factory(brokers=1, broker_config=None, network_faults=False)`` uses the
    test's version and backend; ``network_faults`` puts a Toxiproxy proxy before each broker.
    """
    from harness.cluster.backends import make_cluster

    if kafka_backend == "container":
        skip_without_docker(request)
    made: list[NodeCluster] = []

    def make(
        brokers: int = 1,
        broker_config: Mapping[str, object] | None = None,
        network_faults: bool = False,
    ) -> NodeCluster:
        work_dir = tmp_path / f"cluster-{len(made) + 1}"
        cluster = make_cluster(
            kafka_backend,
            kafka_version,
            brokers,
            broker_config,
            work_dir,
            network_faults=network_faults,
        )
        made.append(cluster)
        request.node.stash.setdefault(CLUSTERS_KEY, []).append(cluster)
        return cluster

    yield make
    for cluster in made:
        cluster.stop()


@pytest.fixture
def kafka_admin(kafka_cluster: Cluster) -> AdminClient:
    return kafka_cluster.admin()


@pytest.fixture
def kafka_topic(kafka_cluster: Cluster) -> Iterator[Callable[..., str]]:
    """``kafka_topic(base="topic", partitions=1, replication_factor=1, config=None) -> name``."""
    created: list[str] = []

    def create(base: str = "topic", partitions: int = 1, **kwargs: object) -> str:
        name = kafka_cluster.create_topic(base, partitions, **kwargs)  # type: ignore[arg-type]
        created.append(name)
        return name

    yield create
    kafka_cluster.delete_topics(created)


@pytest.fixture(scope="session")
def replay_spark() -> Iterator[SparkSession]:
    """One local Spark session per test process (``local[2]``, bound to 127.0.0.1)."""
    from harness.checker import spark_session

    session = spark_session(small_runs=True)
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def replay_incident(
    request: pytest.FixtureRequest,
    kafka_cluster_pool: ClusterPool,
    kafka_version: str,
    kafka_backend: str,
    tmp_path: Path,
) -> Callable[..., Outcome]:
    """``replay_incident(name, profile, setup=None, **options) -> Outcome``: one incident.

    Options default to the command line's (``--app``, ``--output-id``, ``--guarantee``,
    ``--group-protocol``, ``--restart``); keywords of the same names override them, and
    ``client`` / ``broker`` put settings over the profile's. ``setup`` (a
    :class:`harness.replay.compare.Setup`) picks the Kafka release, backend, group protocol and
    settings of one side of a comparison.
    """
    import dataclasses

    from harness.cluster.pool import ClusterSpec
    from harness.replay.catalog import load_incidents, select
    from harness.replay.runner import RunOptions, run_incident

    config = request.config
    defaults = RunOptions(
        app=config.getoption("--app"),
        output_id=config.getoption("--output-id"),
        guarantee=config.getoption("--guarantee"),
        group_protocol=config.getoption("--group-protocol"),
        restart=config.getoption("--restart"),
    )
    runs = iter(range(1, 1000))

    def replay(name: str, profile: str, setup: Setup | None = None, **options: Any) -> Outcome:
        version = (setup and setup.kafka) or kafka_version
        backend = (setup and setup.backend) or kafka_backend
        if backend == "container":
            skip_without_docker(request)
        if setup is not None:
            options = {
                "group_protocol": setup.protocol or defaults.group_protocol,
                "client_library": setup.client_library,
                "client": setup.client_config,
                "broker": setup.broker_config,
                **options,
            }

        def cluster_for(
            broker_config: Mapping[str, object], brokers: int, network_faults: bool
        ) -> Cluster:
            spec = ClusterSpec.of(version, brokers, broker_config, backend, network_faults)
            return _pooled_cluster(request, kafka_cluster_pool, spec, optional=True)

        (incident,) = select(load_incidents(tuple(config.stash[DIRECTORIES_KEY])), [name])
        return run_incident(
            incident,
            profile,
            cluster_for=cluster_for,
            spark=lambda: request.getfixturevalue("replay_spark"),
            run_dir=tmp_path / f"run-{next(runs)}",
            options=dataclasses.replace(defaults, **options),
        )

    return replay


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Attach the brokers' log tails to the report of a failed test that used Kafka."""
    report = yield
    if report.failed:
        for cluster in item.stash.get(CLUSTERS_KEY, []):
            tail = cluster.log_tail(LOG_TAIL_LINES)
            if tail:
                files = "\n".join(cluster.log_files())
                report.sections.append((f"kafka broker log ({cluster!r})", f"{tail}\n\n{files}"))
    return report
