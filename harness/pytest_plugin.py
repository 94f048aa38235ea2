"""pytest plugin: real Kafka clusters as fixtures, and incidents as test items.

Installed with the package (``pytest11`` entry point). Its options all start with
``--replay-`` (``pytest --help`` lists them), so none collides with a project's own. Fixtures:

- ``kafka_cluster``: a running cluster; tests asking for the same configuration share one for
  the whole session. Configure it with ``@pytest.mark.kafka(brokers=3, broker_config={...},
  features={...})`` and choose the release with ``--replay-kafka-version``,
  ``$KAFKA_REPLAY_VERSION`` or by parametrizing ``kafka_version``.
- ``kafka_admin``: an admin client for it.
- ``kafka_topic``: a factory of uniquely named topics, deleted after the test.
- ``kafka_cluster_factory``: unshared clusters for tests that break or restart them.

``--replay-kafka-backend NAME`` (or parametrizing ``kafka_backend``) chooses how brokers run
(``container``: tests are skipped, saying how to enable them, where no Docker daemon answers;
``tansu[:VERSION]``: another vendor's Kafka-compatible broker). ``--replay-kafka-bootstrap
HOST:PORT`` runs everything against an existing cluster instead; tests that need a particular
broker configuration are then skipped. An incident item that a cluster cannot host is skipped
with the reason: it does not apply there.

Incidents: each incident definition (``*.toml``) of an incident directory is one pytest item
per profile, ``<file>::incident[<name>-<profile>]``, marked ``incident``. They are collected
only when asked for, never by a project's plain ``pytest``: ``-m incident`` or ``-k`` naming
``incident`` (the catalog, the project's ``[tool.kafka-replay] incidents`` directories and
``--replay-incidents DIR`` are then collected wherever pytest runs), ``--replay-incidents DIR``,
or an argument that names an incident directory or file itself (``pytest --pyargs
kafka_replay_incidents``, ``pytest ops/incidents``, a ``testpaths`` entry). ``--replay-app``,
``--replay-output-id``, ``--replay-guarantee``, ... put the project's own app under the
incidents' conditions; ``--replay-setup SETUP`` (repeatable; the syntax of ``kafka-replay
compare``) multiplies every incident item by setup, its id naming it:
``incident[<name>-<profile>-kafka=3.9.2]``. ``--replay-shard K/N`` keeps shard K's incident
items and deselects the rest (:mod:`kafka_replay.playing.shards`), so that N machines replay
them between them. ``replay_incident(name, profile)`` replays one
incident for a test of your own; ``replay_spark`` is one Spark session per test process.

The plugin imports nothing heavy when it loads: Kafka clients, Spark and the replay engine are
imported by the fixtures and items that use them.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from collections.abc import Callable, Generator, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kafka_replay.cluster.backends import choose_backend
from kafka_replay.cluster.errors import NotApplicable
from kafka_replay.cluster.versions import choose_version
from kafka_replay.definitions.catalog import incident_directories
from kafka_replay.definitions.model import PROFILES, DefinitionError
from kafka_replay.replay.settings import OPTIONS, RunSettings, add_to_pytest

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient
    from pyspark.sql import SparkSession

    from kafka_replay.checker.connect_server import SparkConnectServer
    from kafka_replay.cluster import Cluster, ClusterNeeds
    from kafka_replay.cluster.nodes import NodeCluster
    from kafka_replay.cluster.pool import ClusterPool, ClusterSpec
    from kafka_replay.definitions.model import Incident
    from kafka_replay.playing.run_options import RunOptions
    from kafka_replay.replay.compare import Setup
    from kafka_replay.report.outcome import Outcome
    from kafka_replay.servers.reaper import Lease

BOOTSTRAP_ENV = "KAFKA_REPLAY_BOOTSTRAP"
CLUSTERS_KEY = pytest.StashKey[list["Cluster"]]()
DIRECTORIES_KEY = pytest.StashKey[list[Path]]()
SETUPS_KEY = pytest.StashKey[list["Setup | None"]]()
SETTINGS_KEY = pytest.StashKey[RunSettings]()
#: An incident item's run: its incident's name and its profile.
RUN_KEY = pytest.StashKey[tuple[str, str]]()
#: ``--replay-shard``'s run times (``"incident profile"`` -> seconds).
TIMES_KEY = pytest.StashKey[dict[str, float]]()
#: Whether incident items were asked for, and the paths the command line names.
ASKED_KEY = pytest.StashKey[bool]()
NAMED_KEY = pytest.StashKey[list[Path]]()
LOG_TAIL_LINES = 60
#: ``--replay-shared-spark``'s server and its lease, in the process that started it.
SHARED_SPARK_KEY = pytest.StashKey[tuple["SparkConnectServer", "Lease"]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """The run settings offered to pytest (see :mod:`kafka_replay.replay.settings`)."""
    add_to_pytest(parser.getgroup("kafka-replay", "Kafka incident replay"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kafka(brokers=1, broker_config=None, features=None): the Kafka cluster the test needs "
        "(features: levels its storage is formatted with); tests with the same arguments and "
        "version share one cluster for the session",
    )
    config.addinivalue_line("markers", "incident: a replay of an incident definition")
    settings = config.stash[SETTINGS_KEY] = RunSettings.from_pytest(config)
    directories = incident_directories(settings.incidents, config.rootpath)
    config.stash[DIRECTORIES_KEY] = directories
    config.stash[SETUPS_KEY] = _setups(settings.setup)
    config.stash[NAMED_KEY] = _named_paths(config)
    asked = config.stash[ASKED_KEY] = _incidents_asked_for(config)
    given = [Path(d).resolve() for d in settings.incidents]
    _collect_wherever_pytest_runs(config, directories if asked else given)
    if settings.shared_spark and not hasattr(config, "workerinput"):  # not in an xdist worker
        _share_spark(config)
    if settings.shard:
        _read_shard_times(config)


def _read_shard_times(config: pytest.Config) -> None:
    """The run times ``--replay-shard`` splits by, read before anything is collected."""
    from kafka_replay.playing.shards import known_durations

    try:
        times = known_durations(config.stash[SETTINGS_KEY].shard_times, "--replay-shard-times")
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[TIMES_KEY] = times


def pytest_unconfigure(config: pytest.Config) -> None:
    shared = config.stash.get(SHARED_SPARK_KEY, None)
    if shared is not None:
        from kafka_replay.checker.spark import REMOTE_ENV

        server, lease = shared
        os.environ.pop(REMOTE_ENV, None)
        server.stop()
        lease.release()


def _share_spark(config: pytest.Config) -> None:
    """``--replay-shared-spark``: start one Spark Connect server and name it in the environment
    that the workers, and what the tests start, inherit (see
    :mod:`kafka_replay.checker.connect_server`). A Spark master or server given already wins."""
    from kafka_replay.checker.connect_server import SparkConnectServer
    from kafka_replay.checker.spark import REMOTE_ENV, spark_named
    from kafka_replay.servers.reaper import Lease
    from kafka_replay.servers.server_errors import ServerError

    if spark_named(config.stash[SETTINGS_KEY].spark_master):
        return
    lease = Lease.take()
    scratch = Path(tempfile.mkdtemp(prefix="kafka-replay-spark-"))
    lease.add_dir(scratch)
    server = SparkConnectServer(scratch / "spark-connect.log", lease)
    try:
        os.environ[REMOTE_ENV] = server.start().url
    except ServerError as exc:
        lease.release()
        raise pytest.UsageError(f"--replay-shared-spark: {exc}") from None
    config.stash[SHARED_SPARK_KEY] = (server, lease)


def _setups(texts: list[str]) -> list[Setup | None]:
    """``--replay-setup`` items checked at once; ``[None]`` (the command line's setup) when none."""
    if not texts:
        return [None]
    from kafka_replay.replay.compare import parse_setup

    setups = []
    for text in texts:
        try:
            setup = parse_setup(text)
        except ValueError as exc:
            raise pytest.UsageError(f"--replay-setup {text!r}: {exc}") from None
        if setup.bootstrap:
            raise pytest.UsageError(
                f"--replay-setup {text!r}: an external cluster is one per session: give "
                "--replay-kafka-bootstrap instead"
            )
        setups.append(setup)
    return setups


def _incidents_asked_for(config: pytest.Config) -> bool:
    """Whether this run asks for incident items: ``-m``/``-k`` naming them, or a directory."""
    expressions = f"{config.option.markexpr or ''} {config.option.keyword or ''}"
    return "incident" in expressions.lower() or bool(config.stash[SETTINGS_KEY].incidents)


def _named_paths(config: pytest.Config) -> list[Path]:
    """The paths the command line (or ``testpaths``) names: a file or directory named itself
    is asked for, whatever it holds. A ``--pyargs`` package is its directory."""
    if config.args_source == pytest.Config.ArgsSource.INVOCATION_DIR:
        return []  # a plain ``pytest`` walking the project names nothing
    named = []
    for arg in config.args:
        path = Path(arg.split("::")[0])
        if config.option.pyargs and not path.exists():
            try:
                spec = importlib.util.find_spec(arg)
            except (ImportError, ValueError):
                spec = None
            locations = spec.submodule_search_locations if spec else None
            path = Path(next(iter(locations))) if locations else path
        named.append(path.resolve())
    return named


def _collect_wherever_pytest_runs(config: pytest.Config, directories: list[Path]) -> None:
    """Add ``directories`` to what pytest collects, unless an argument covers them already."""
    covered = [Path(a.split("::")[0]).resolve() for a in config.args]
    for directory in directories:
        if not any(directory == c or c in directory.parents for c in covered):
            config.args.append(str(directory))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """An incident definition in an incident directory is a file of incident items, when
    incidents are asked for or the file or its directory is named."""
    if file_path.suffix != ".toml" or file_path.name == "pyproject.toml":
        return None
    config = parent.config
    directory = file_path.parent.resolve()
    if directory not in config.stash[DIRECTORIES_KEY]:
        return None
    named = config.stash[NAMED_KEY]
    if not (config.stash[ASKED_KEY] or directory in named or file_path.resolve() in named):
        return None
    return IncidentFile.from_parent(parent, path=file_path)


class IncidentFile(pytest.File):
    """One definition: an item per profile, each replaying it on real Kafka."""

    def collect(self) -> Iterator[pytest.Item]:
        from kafka_replay.definitions.catalog import load_incidents

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
                item.stash[RUN_KEY] = (incident.name, profile)
                yield item

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | Any:
        """A definition mistake is shown as its message (file, field, what to do), no traceback."""
        if isinstance(excinfo.value, DefinitionError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)


@pytest.hookimpl(trylast=True)  # after -k and -m: the items left are what is split
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--replay-shard K/N``: the incident items of other shards are deselected (every other
    test is left alone), so N machines replay the catalog between them, each its share of its
    time (:mod:`kafka_replay.playing.shards`)."""
    settings = config.stash[SETTINGS_KEY]
    if not settings.shard:
        return
    from kafka_replay.playing.shards import pick, run_key

    units = {item.name: [run_key(*item.stash[RUN_KEY])] for item in items if RUN_KEY in item.stash}
    mine = set(pick(settings.shard, units, config.stash[TIMES_KEY]))
    others = [item for item in items if RUN_KEY in item.stash and item.name not in mine]
    if others:
        config.hook.pytest_deselected(items=others)
        items[:] = [item for item in items if RUN_KEY not in item.stash or item.name in mine]


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
    from kafka_replay.cluster.pool import ClusterPool

    settings = request.config.stash[SETTINGS_KEY]
    bootstrap = settings.kafka_bootstrap or os.environ.get(BOOTSTRAP_ENV)
    pool = ClusterPool(
        tmp_path_factory.mktemp("kafka"),
        bootstrap_servers=bootstrap,
        image=settings.kafka_image,
    )
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def kafka_version(request: pytest.FixtureRequest) -> str:
    """The Kafka release under test; parametrize this name to run a test on several."""
    return choose_version(request.config.stash[SETTINGS_KEY].kafka_version)


@pytest.fixture
def kafka_backend(request: pytest.FixtureRequest) -> str:
    """How brokers run; parametrize this name to run a test on several backends."""
    return choose_backend(request.config.stash[SETTINGS_KEY].kafka_backend)


@pytest.fixture(scope="session")
def _backend_problems(request: pytest.FixtureRequest) -> dict[str, str | None]:
    """Why each backend asked for so far cannot run here (None: it can), asked once a session."""
    return {}


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
    unknown = set(options) - {"brokers", "broker_config", "features"}
    if unknown or (marker and marker.args):
        raise pytest.UsageError(
            f"{request.node.nodeid}: @pytest.mark.kafka takes brokers=, broker_config= and "
            f"features= keywords only, got {sorted(unknown) or marker.args}"
        )
    from kafka_replay.cluster.pool import ClusterSpec

    skip_unavailable(request, kafka_backend, kafka_version)
    spec = ClusterSpec.of(kafka_version, backend=kafka_backend, **options)  # type: ignore[arg-type]
    return _pooled_cluster(request, kafka_cluster_pool, spec)


def _pooled_cluster(
    request: pytest.FixtureRequest, pool: ClusterPool, spec: ClusterSpec, optional: bool = False
) -> Cluster:
    """The pool's cluster for ``spec``, attached to the test.

    A test the cluster cannot serve (an external one, or Tansu, asked for broker settings or
    more brokers) is skipped with the reason; ``optional`` broker settings are left out instead.
    """
    from kafka_replay.cluster.pool import ClusterSpec

    settings = request.config.stash[SETTINGS_KEY]
    default = ClusterSpec.of(settings.kafka_version, backend=settings.kafka_backend)
    try:
        cluster = pool.get(spec, default=default, optional=optional)
    except NotApplicable as exc:
        pytest.skip(str(exc))
    request.node.stash.setdefault(CLUSTERS_KEY, []).append(cluster)
    return cluster


def skip_unavailable(request: pytest.FixtureRequest, backend: str, version: str | None) -> None:
    """Skip a test whose backend cannot run on this machine (no Docker daemon for the container
    backend, no cargo to build Tansu), saying how to enable it."""
    if request.config.stash[SETTINGS_KEY].kafka_bootstrap or os.environ.get(BOOTSTRAP_ENV):
        return
    from kafka_replay.cluster.backends import backend_class, backend_version

    problems = request.getfixturevalue("_backend_problems")
    backend = choose_backend(backend)
    if backend not in problems:
        release = backend_version(backend, version)
        problems[backend] = backend_class(backend).unavailable(release)
    if problems[backend]:
        pytest.skip(f"{backend} backend unavailable: {problems[backend]}")


@pytest.fixture
def kafka_cluster_factory(
    request: pytest.FixtureRequest, kafka_backend: str, kafka_version: str, tmp_path: Path
) -> Iterator[Callable[..., NodeCluster]]:
    """Unshared, unstarted clusters for tests that break or restart them; stopped afterwards.

    ``kafka_cluster_factory(brokers=1, broker_config=None, network_faults=False)`` uses the
    test's version and backend; ``network_faults`` puts a proxy before each broker.
    """
    from kafka_replay.cluster.backends import make_cluster

    skip_unavailable(request, kafka_backend, kafka_version)
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
def replay_spark(request: pytest.FixtureRequest) -> Iterator[SparkSession]:
    """One Spark session per test process (``--replay-spark-master``, else ``local[2]``)."""
    from kafka_replay.checker.spark import is_remote, spark_session

    session = spark_session(request.config.stash[SETTINGS_KEY].spark_master, small_runs=True)
    if not is_remote(session):  # a Spark Connect server logs as it was started
        session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def replay_incident(
    request: pytest.FixtureRequest, kafka_cluster_pool: ClusterPool, tmp_path: Path
) -> Callable[..., Outcome]:
    """``replay_incident(name, profile, setup=None, **options) -> Outcome``: one incident.

    The run takes the command line's settings (``--replay-app``, ``--replay-guarantee``, ...;
    see ``pytest --help``); ``setup`` (a :class:`kafka_replay.replay.compare.Setup`) puts one
    side of a comparison over them (Kafka release, backend, group protocol, settings), and
    keywords named like :class:`kafka_replay.playing.run_options.RunOptions`' fields override both
    (``client`` / ``broker`` put settings over the profile's; see :func:`keyword_options`).
    """
    from kafka_replay.definitions.catalog import at_scale, load_incidents, select
    from kafka_replay.playing.runner import run_incident
    from kafka_replay.replay.preflight import check_before_starting

    config = request.config
    runs = iter(range(1, 1000))

    def replay(name: str, profile: str, setup: Setup | None = None, **options: Any) -> Outcome:
        settings = config.stash[SETTINGS_KEY]
        if setup is not None:
            settings = settings.with_argv(setup.options)
        incidents = select(load_incidents(tuple(config.stash[DIRECTORIES_KEY])), [name])
        (incident,) = at_scale(incidents, settings.scale)
        try:  # before any broker starts, as kafka-replay run checks it (the pool fetches Kafka)
            chosen = keyword_options(settings, options)
            check_before_starting(settings, chosen, [incident], kafka=False)
        except ValueError as exc:
            pytest.fail(str(exc), pytrace=False)
        backend = choose_backend(settings.kafka_backend)
        skip_unavailable(request, backend, settings.kafka_version)
        pooled = kafka_cluster_pool.cluster_for(settings.kafka_version, backend)

        def cluster_for(needs: ClusterNeeds) -> Cluster:
            try:
                cluster = pooled(needs)
            except NotApplicable as exc:
                pytest.skip(str(exc))
            request.node.stash.setdefault(CLUSTERS_KEY, []).append(cluster)
            return cluster

        return run_incident(
            incident,
            profile,
            cluster_for=cluster_for,
            spark=lambda: request.getfixturevalue("replay_spark"),
            run_dir=tmp_path / f"run-{next(runs)}",
            options=chosen,
        )

    return replay


def keyword_options(settings: RunSettings, keywords: Mapping[str, Any]) -> RunOptions:
    """``replay_incident``'s keywords over the settings. One named like a run option (``app``,
    ``guarantee``, ``payload``, ...) goes through the settings, so a bad value gets that
    option's own refusal (a string typed as on the command line); the other fields
    (``client``, ``broker``, ``settle_timeout_s``) are put over the run's options as given."""
    import dataclasses

    from kafka_replay.playing.run_options import RunOptions

    named = {f.name for f in dataclasses.fields(RunOptions)} & OPTIONS.keys()
    checked = {
        name: OPTIONS[name].type(value) if isinstance(value, str) else value
        for name, value in keywords.items()
        if name in named
    }
    rest = {name: value for name, value in keywords.items() if name not in named}
    return dataclasses.replace(settings.replace(**checked).run_options(), **rest)


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
