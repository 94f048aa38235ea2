"""The harness's import graph, read from its source with ``ast``: no cycles; the report side
(the run record, the reports, the run history) never reaches the replay engine; the servers
room (``kafka_replay.servers``) stands on nothing else of the harness; and the rest of the
harness takes only Kafka from the cluster room (``kafka_replay.cluster``); each room imports only
the rooms :data:`ROOM_IMPORTS` places it over, the benchmarks held like a room.

Every import counts: at module level, inside functions and under ``TYPE_CHECKING``. The implicit
import of a package's ``__init__`` by its submodules is not an edge.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "kafka_replay"
#: Where its source lives in the repository (the wheel installs it as ``kafka_replay``).
SOURCE = ROOT / "harness"
#: The report side, and what it must not import, directly or through anything it imports.
REPORT_SIDE = ("kafka_replay.report", "kafka_replay.history")
ENGINE = (
    "kafka_replay.definitions",
    "kafka_replay.playing",
    "kafka_replay.judging",
    "kafka_replay.replay",
    "kafka_replay.cli",
    "kafka_replay.cli_compare",
    "kafka_replay.pytest_plugin",
)

#: The engine's rooms and the faces over them, each with the others of these it may import:
#: reading a definition stands on none of them (the rooms that play steps and measure symptoms
#: register them in its vocabulary), judging on reading, playing on both, and what the faces
#: share (settings, compare) on all three.
ENGINE_ROOMS: dict[str, frozenset[str]] = {
    "kafka_replay.definitions": frozenset(),
    "kafka_replay.judging": frozenset({"kafka_replay.definitions"}),
    "kafka_replay.playing": frozenset({"kafka_replay.definitions", "kafka_replay.judging"}),
    "kafka_replay.replay": frozenset(
        {"kafka_replay.definitions", "kafka_replay.judging", "kafka_replay.playing"}
    ),
}
FACES = ("kafka_replay.cli", "kafka_replay.cli_compare", "kafka_replay.cli_report",
         "kafka_replay.pytest_plugin")  # fmt: skip

#: What every local server stands on, and the only modules of the rest of the harness it may use.
SERVERS = "kafka_replay.servers"
SERVERS_MAY_USE = ("kafka_replay.file_lock", "kafka_replay.lazy", "kafka_replay.waiting")
#: The Kafka room: outside it, the harness imports from it only these Kafka-facing names (by the
#: module they are imported from). Processes, ports, leases, Maven, JVMs and Docker come from
#: ``kafka_replay.servers``, even where a cluster module happens to import or re-export them.
CLUSTER = "kafka_replay.cluster"
KAFKA_FACING: dict[str, frozenset[str]] = {
    CLUSTER: frozenset(
        {
            "BrokerDiedError",
            "BrokerNode",
            "BrokerStartError",
            "Cluster",
            "ClusterError",
            "ClusterFor",
            "ClusterNeeds",
            "DEFAULT_KAFKA_VERSION",
            "EmbeddedCluster",
            "ExternalCluster",
            "NodeCluster",
            "TESTED_KAFKA_VERSIONS",
            "backends",
            "choose_backend",
            "choose_version",
            "make_cluster",
            "register_backend",
        }
    ),
    f"{CLUSTER}.backends": frozenset(
        {
            "backend_argument",
            "backend_class",
            "backend_version",
            "backends_help",
            "choose_backend",
            "make_cluster",
            "register_backend",
        }
    ),
    f"{CLUSTER}.broker_config": frozenset({"validate_overrides"}),
    f"{CLUSTER}.capabilities": frozenset({"CAPABILITIES", "lacks_by_version"}),
    f"{CLUSTER}.errors": frozenset(
        {"BrokerDiedError", "BrokerStartError", "ClusterError", "NotApplicable"}
    ),
    f"{CLUSTER}.images": frozenset({"build_kafka_image"}),  # ``kafka-replay build-image``
    f"{CLUSTER}.nodes": frozenset({"NODE_REQUEST_TIMEOUT_S", "NodeCluster", "RESTART_GRACE_S"}),
    f"{CLUSTER}.pool": frozenset({"DEFAULT_MAX_LIVE", "ClusterPool", "ClusterSpec"}),
    f"{CLUSTER}.kafka_wire": frozenset({"api_keys"}),  # the protocol's APIs, by name
    # the protocol's errors, by name, and the APIs an error answer is built for
    f"{CLUSTER}.kafka_answers": frozenset({"ERROR_APIS", "AnswerError", "error_code"}),
    # a partition's log end on its leader (what kill_broker's unreplicated counts from)
    f"{CLUSTER}.log_end": frozenset({"LogEndError", "log_end_offsets"}),
    # the brokers' network faults, and faults aimed at requests
    f"{CLUSTER}.request_proxy": frozenset({"ACTIONS", "RequestFault", "RequestProxyError"}),
    f"{CLUSTER}.versions": frozenset(
        {"DEFAULT_KAFKA_VERSION", "TESTED_KAFKA_VERSIONS", "choose_version"}
    ),
}
#: The incident catalog's package, held to the cluster rule too.
INCIDENTS = ("kafka_replay_incidents", ROOT / "incidents")

Graph = dict[str, set[str]]


def module_files() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name)."""
    found = {}
    for path in sorted(SOURCE.rglob("*.py")):
        parts = [PACKAGE, *path.relative_to(SOURCE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _base(module: str, is_package: bool, level: int, name: str | None) -> str:
    """What ``from <level dots><name> import ...`` in ``module`` names, absolutely."""
    if not level:
        return name or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    parts = parts[: len(parts) - (level - 1)]
    return ".".join([*parts, name] if name else parts)


def _known(name: str, modules: Iterable[str]) -> str | None:
    """``name`` or its longest prefix that is one of ``modules`` (``a.b.c`` of module ``a.b``)."""
    known = set(modules)
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in known:
            return candidate
    return None


def imports_of(module: str, path: Path, modules: Iterable[str]) -> set[str]:
    """The package's modules ``module`` imports anywhere in its source."""
    modules = set(modules)
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, is_package, node.level, node.module)
            # ``from pkg import name``: the submodule pkg.name where there is one, else pkg
            names = [f"{base}.{alias.name}" for alias in node.names]
            names = [n if n in modules else base for n in names]
        else:
            continue
        found |= {hit for n in names if (hit := _known(n, modules)) and hit != module}
    return found


def import_graph() -> Graph:
    files = module_files()
    return {module: imports_of(module, path, files) for module, path in files.items()}


def find_cycle(graph: Graph) -> list[str] | None:
    """One cycle of ``graph`` as the path around it (first module repeated last), or None."""
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def path_to(graph: Graph, start: str, goal: tuple[str, ...]) -> list[str] | None:
    """A chain of imports from ``start`` to a module under one of ``goal``, or None."""
    came_from: dict[str, str | None] = {start: None}
    queue = [start]
    while queue:
        node = queue.pop(0)
        if _under(node, goal):
            chain = [node]
            while (previous := came_from[chain[-1]]) is not None:
                chain.append(previous)
            return chain[::-1]
        for target in sorted(graph.get(node, ())):
            if target not in came_from:
                came_from[target] = node
                queue.append(target)
    return None


def _under(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def test_the_graph_is_read_from_every_kind_of_import() -> None:
    graph = import_graph()
    assert "kafka_replay.report.outcome" in graph["kafka_replay.playing.runner"]  # at module level
    assert (
        "kafka_replay.report.html_report" in graph["kafka_replay.report.catalog_report"]
    )  # in a function
    assert (
        "kafka_replay.report.outcome" in graph["kafka_replay.pytest_plugin"]
    )  # under TYPE_CHECKING
    assert (
        "kafka_replay.history.derived" in graph["kafka_replay.history.recorded"]
    )  # from . import x
    assert (
        "kafka_replay.history.derived" in graph["kafka_replay.judging.evidence"]
    )  # from pkg import x


def test_the_cycle_finder_finds_one() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_module_imports_itself_round_a_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def rooms_of(graph: Graph) -> Graph:
    """The graph between the harness's rooms: its packages and top-level modules."""
    rooms: Graph = {}
    for module, targets in graph.items():
        room = ".".join(module.split(".")[:2])
        rooms.setdefault(room, set()).update(
            into for t in targets if (into := ".".join(t.split(".")[:2])) != room
        )
    return rooms


#: Every room of the harness (its packages and top-level modules, by the name after
#: ``kafka_replay.``), the benchmarks too, and the rooms each may import. A room that imports a
#: new one, or a new room, is placed here on purpose: the direction of the whole is kept.
ROOM_IMPORTS: dict[str, frozenset[str]] = {
    name: frozenset(rooms)
    for name, rooms in {
        # the small shared utilities
        "kafka_replay": set(),  # the package: its version
        "console": set(),
        "file_lock": set(),
        "interrupts": set(),
        "lazy": set(),
        "plugins": set(),
        "waiting": set(),
        "jvm_archive": {"file_lock"},
        # the lower rooms
        "servers": {"file_lock", "lazy", "waiting"},
        "history": {"waiting"},
        "report": {"history"},
        "sinks": {"servers"},
        "cluster": {"file_lock", "jvm_archive", "lazy", "plugins", "servers", "waiting"},
        "apps": {"file_lock", "history", "lazy", "servers", "sinks", "waiting"},
        "checker": {"apps", "history", "jvm_archive", "lazy", "servers", "waiting"},
        "workload": {"apps", "checker", "file_lock", "servers"},
        "faults": {"apps", "cluster", "history", "servers", "waiting", "workload"},
        # the engine: reading a definition, judging a run, playing it, and what faces share
        "definitions": {"apps", "checker", "cluster", "report", "workload"},
        "judging": {"apps", "checker", "cluster", "definitions", "faults", "history", "report",
                    "sinks"},
        "playing": {"apps", "checker", "cluster", "definitions", "faults", "history",
                    "interrupts", "judging", "report", "servers", "sinks", "waiting", "workload"},
        "replay": {"apps", "checker", "cluster", "definitions", "judging", "playing", "plugins",
                   "servers", "sinks"},
        # drawing, playing and shrinking schedules: over the engine
        "exploring": {"definitions", "history", "playing", "replay", "report", "servers"},
        # the faces
        "cli": {"apps", "checker", "cli_capture", "cli_compare", "cli_explore", "cli_report",
                "cluster", "console", "definitions", "history", "interrupts", "kafka_replay",
                "playing", "replay", "report", "servers", "sinks"},
        "cli_capture": {"console", "workload"},
        "cli_compare": {"checker", "console", "definitions", "history", "playing", "replay",
                        "report", "servers"},
        "cli_explore": {"console", "exploring", "interrupts", "replay"},
        "cli_report": {"console", "exploring", "playing", "replay", "report"},
        "pytest_plugin": {"checker", "cluster", "definitions", "playing", "replay", "report",
                          "servers"},
        # measured by a person, never by the suite
        "benchmarks": {"apps", "checker", "cluster", "definitions", "exploring", "history",
                       "playing", "servers", "sinks", "workload"},
    }.items()
}  # fmt: skip
#: The benchmarks that time the cluster room's own parts (a broker's start, the vendors'
#: matrix, the JVM producer): they import its internals on purpose; the others take only
#: what :data:`KAFKA_FACING` names, as the harness does.
BENCHMARKS_OF_THE_CLUSTER = frozenset(
    {"benchmarks.broker_start", "benchmarks.matrix", "benchmarks.producer_throughput"}
)


def benchmark_modules() -> dict[str, Path]:
    """The benchmarks' modules by dotted name (``benchmarks.lanes``)."""
    return {f"benchmarks.{p.stem}": p for p in sorted((ROOT / "benchmarks").glob("*.py"))}


def benchmark_rooms() -> Graph:
    """Which rooms of the harness the benchmarks import, as one room (``benchmarks``)."""
    modules = module_files()
    found: set[str] = set()
    for module, path in benchmark_modules().items():
        found |= imports_of(module, path, modules)
    return {"benchmarks": {".".join(target.split(".")[:2]) for target in found}}


def room_imports_not_placed(rooms: Graph) -> list[str]:
    """Each import between rooms that :data:`ROOM_IMPORTS` does not allow, and each room it
    does not know: ``room -> room``."""
    offending = []
    for room, targets in sorted(rooms.items()):
        name = room.removeprefix(f"{PACKAGE}.") if room != PACKAGE else PACKAGE
        if name not in ROOM_IMPORTS:
            offending.append(f"{name} (a room ROOM_IMPORTS does not place)")
            continue
        for target in sorted(targets):
            into = target.removeprefix(f"{PACKAGE}.") if target != PACKAGE else PACKAGE
            if into not in ROOM_IMPORTS[name]:
                offending.append(f"{name} -> {into}")
    return offending


def test_the_room_rule_names_the_import_and_the_room_unknown() -> None:
    rooms = {
        "kafka_replay.history": {"kafka_replay.checker"},
        "kafka_replay.attic": set(),
        "benchmarks": {"kafka_replay.report"},
    }
    assert room_imports_not_placed(rooms) == [
        "benchmarks -> report",
        "attic (a room ROOM_IMPORTS does not place)",
        "history -> checker",
    ]


def test_each_room_imports_only_the_rooms_it_may() -> None:
    """The benchmarks included: what they import is held like the harness's own rooms."""
    offending = room_imports_not_placed({**rooms_of(import_graph()), **benchmark_rooms()})
    assert not offending, "imports between rooms not in ROOM_IMPORTS:\n" + "\n".join(offending)


def test_no_room_imports_itself_round_a_cycle() -> None:
    """Rooms stand on one another in one direction: the apps on the database sinks, the sinks
    on the servers, the checker on the apps' correlation, never round again."""
    cycle = find_cycle(rooms_of(import_graph()))
    assert cycle is None, "rooms import one another round a cycle: " + " -> ".join(cycle or [])


def test_the_report_side_never_reaches_the_engine() -> None:
    graph = import_graph()
    reaching = [
        chain
        for module in sorted(graph)
        if _under(module, REPORT_SIDE)
        if (chain := path_to(graph, module, ENGINE))
    ]
    assert not reaching, "the report side imports the engine: " + "; ".join(
        " -> ".join(chain) for chain in reaching
    )


def _statements(module: str, path: Path) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement of ``module``, with the absolute name of what it imports from
    (``from X import ...``: X; ``import X``: each X in turn)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            yield node, _base(module, is_package, node.level, node.module)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name


def _where(path: Path, node: ast.stmt) -> str:
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return f"{shown}:{node.lineno}: {ast.unparse(node)}"


def _incident_modules() -> dict[str, Path]:
    package, source = INCIDENTS
    found = {}
    for path in sorted(source.rglob("*.py")):
        parts = [package, *path.relative_to(source).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def cluster_imports_outside_kafka(files: dict[str, Path]) -> list[str]:
    """The imports of the cluster room by the modules of ``files`` outside it that take
    anything but :data:`KAFKA_FACING`: each as ``file:line: import (not Kafka's: names)``."""
    offending = []
    for module, path in files.items():
        if _under(module, (CLUSTER,)):
            continue
        for node, base in _statements(module, path):
            if not _under(base, (CLUSTER,)):
                continue
            if isinstance(node, ast.Import):  # a whole module: never only Kafka-facing names
                taken = [(base, "*")]
            else:  # ``from kafka_replay.cluster import nodes`` takes a whole module too
                taken = [
                    (f"{base}.{alias.name}", "*")
                    if f"{base}.{alias.name}" in files
                    else (base, alias.name)
                    for alias in node.names
                ]
            wrong = [
                source if name == "*" else f"{source}.{name}"
                for source, name in taken
                if name not in KAFKA_FACING.get(source, frozenset())
            ]
            if wrong:
                offending.append(f"{_where(path, node)} (not Kafka's: {', '.join(wrong)})")
    return offending


def servers_imports_of_the_harness(files: dict[str, Path]) -> list[str]:
    """The imports by the servers room's modules of ``files`` of the harness's modules outside
    it but :data:`SERVERS_MAY_USE`: each as ``file:line: import (imports module)``."""
    offending = []
    for module, path in files.items():
        if not _under(module, (SERVERS,)):
            continue
        for node, base in _statements(module, path):
            names = [base]
            if isinstance(node, ast.ImportFrom):  # ``from pkg import sub``: the submodule
                names = [f"{base}.{alias.name}" for alias in node.names]
                names = [name if name in files else base for name in names]
            for target in sorted({hit for name in names if (hit := _known(name, files))}):
                if not _under(target, (SERVERS, *SERVERS_MAY_USE)):
                    offending.append(f"{_where(path, node)} (imports {target})")
    return offending


def test_the_cluster_rule_names_the_module_and_what_it_takes(tmp_path: Path) -> None:
    fake = tmp_path / "fake.py"
    fake.write_text(
        "from kafka_replay.cluster import Cluster, ArtifactResolutionError\n"
        "from ..cluster.images import build_kafka_image, docker_client\n"
        "from ..cluster import nodes\n"
        "import kafka_replay.cluster.embedded\n"
        "from kafka_replay.servers.reaper import Lease\n"
    )
    files = {**module_files(), "kafka_replay.sinks.fake": fake}
    found = [line for line in cluster_imports_outside_kafka(files) if str(fake) in line]
    assert found == [
        f"{fake}:1: from kafka_replay.cluster import Cluster, ArtifactResolutionError "
        "(not Kafka's: kafka_replay.cluster.ArtifactResolutionError)",
        f"{fake}:2: from ..cluster.images import build_kafka_image, docker_client "
        "(not Kafka's: kafka_replay.cluster.images.docker_client)",
        f"{fake}:3: from ..cluster import nodes (not Kafka's: kafka_replay.cluster.nodes)",
        f"{fake}:4: import kafka_replay.cluster.embedded "
        "(not Kafka's: kafka_replay.cluster.embedded)",
    ]


def test_the_servers_rule_names_the_module_and_what_it_imports(tmp_path: Path) -> None:
    fake = tmp_path / "fake.py"
    fake.write_text(
        "from kafka_replay.file_lock import file_lock\n"
        "from .reaper import Lease\n"
        "from ..cluster import Cluster\n"
        "from kafka_replay import jvm_archive\n"
    )
    files = {**module_files(), "kafka_replay.servers.fake": fake}
    found = [line for line in servers_imports_of_the_harness(files) if str(fake) in line]
    assert found == [
        f"{fake}:3: from ..cluster import Cluster (imports kafka_replay.cluster)",
        f"{fake}:4: from kafka_replay import jvm_archive (imports kafka_replay.jvm_archive)",
    ]


def test_outside_the_cluster_room_only_kafka_comes_from_it() -> None:
    """A module outside ``harness/cluster/`` (the incident catalog's and the benchmarks' too,
    save :data:`BENCHMARKS_OF_THE_CLUSTER`) imports from
    ``kafka_replay.cluster`` (absolutely or as ``..cluster``) only the Kafka-facing names of
    :data:`KAFKA_FACING`: clusters, backends, versions, capabilities, Kafka's errors, the pool,
    Kafka's image, the proxy's error. What every local server needs (processes, ports, leases,
    Maven, JVMs, Docker) comes from ``kafka_replay.servers``, even where a cluster module
    happens to import or re-export it."""
    benchmarks = {
        module: path
        for module, path in benchmark_modules().items()
        if module not in BENCHMARKS_OF_THE_CLUSTER
    }
    offending = cluster_imports_outside_kafka(
        {**module_files(), **_incident_modules(), **benchmarks}
    )
    assert not offending, (
        "imports of kafka_replay.cluster for something that is not Kafka (take it from "
        "kafka_replay.servers, or add a Kafka-facing name to KAFKA_FACING):\n"
        + "\n".join(offending)
    )


def test_the_kafka_facing_names_are_the_cluster_rooms_own() -> None:
    """Every allowed name exists, and none is a class or function of the servers room that a
    cluster module re-exports (``ArtifactResolutionError``, ``docker_client``...)."""
    borrowed = []
    for module, names in KAFKA_FACING.items():
        loaded = importlib.import_module(module)
        for name in sorted(names):
            value = getattr(loaded, name)  # AttributeError: the allow-list names a ghost
            defined_in = (
                value.__module__ if inspect.isclass(value) or inspect.isfunction(value) else None
            )
            if defined_in is not None and not _under(defined_in, (CLUSTER,)):
                borrowed.append(f"{module}.{name} (defined in {defined_in})")
    assert not borrowed, "KAFKA_FACING allows names that are not Kafka's: " + "; ".join(borrowed)


def test_the_servers_room_stands_on_nothing_else_of_the_harness() -> None:
    """``kafka_replay.servers`` (processes and their logs, ports, leases, Maven, JVMs, Docker)
    imports nothing of the harness outside itself but the small shared utilities of
    :data:`SERVERS_MAY_USE`: not the cluster room, nor replay, checker, sinks or the rest."""
    offending = servers_imports_of_the_harness(module_files())
    assert not offending, "the servers room imports the rest of the harness:\n" + "\n".join(
        offending
    )


def engine_room_imports(graph: Graph) -> list[str]:
    """Each import by a module of an engine room of another room or face it may not import
    (:data:`ENGINE_ROOMS`): ``module -> module``."""
    rooms = (*ENGINE_ROOMS, *FACES)
    offending = []
    for module in sorted(graph):
        room = next((r for r in ENGINE_ROOMS if _under(module, (r,))), None)
        if room is None:
            continue
        for target in sorted(graph[module]):
            into = next((r for r in rooms if _under(target, (r,))), None)
            if into is not None and into != room and into not in ENGINE_ROOMS[room]:
                offending.append(f"{module} -> {target}")
    return offending


def test_the_engine_rule_names_the_import_across_rooms() -> None:
    graph = {
        "kafka_replay.definitions.model": {"kafka_replay.playing.steps"},
        "kafka_replay.judging.judge": {"kafka_replay.definitions.model"},
        "kafka_replay.playing.runner": {"kafka_replay.cli"},
    }
    assert engine_room_imports(graph) == [
        "kafka_replay.definitions.model -> kafka_replay.playing.steps",
        "kafka_replay.playing.runner -> kafka_replay.cli",
    ]


def test_each_engine_room_imports_only_the_rooms_below_it() -> None:
    """Reading a definition, judging a run, playing it and the faces' shared parts, in that
    order: each imports only the rooms before it (:data:`ENGINE_ROOMS`), never a face."""
    offending = engine_room_imports(import_graph())
    assert not offending, "an engine room imports one it may not:\n" + "\n".join(offending)


#: The most modules of the harness the module that plays a run may import: it composes a run's
#: parts (start-up, the steps with the recorders on, settling, checking and judging), each of
#: which owns its resource or phase, rather than doing their work itself.
RUNNER_IMPORTS_AT_MOST = 12


def test_the_module_that_plays_a_run_only_composes_its_parts() -> None:
    imported = import_graph()["kafka_replay.playing.runner"]
    assert len(imported) <= RUNNER_IMPORTS_AT_MOST, sorted(imported)


def test_no_file_name_is_used_for_two_things() -> None:
    """A module's file name says what it holds, so one name never means two things in two
    rooms."""
    by_name: dict[str, list[str]] = {}
    for module, path in module_files().items():
        if path.name != "__init__.py":
            by_name.setdefault(path.name, []).append(module)
    repeated = {name: modules for name, modules in by_name.items() if len(modules) > 1}
    assert not repeated, repeated
