"""The harness's import graph, read from its source with ``ast``: no cycles, and the report side
(the run record, the reports, the run history) never reaches the replay engine.

Every import counts: at module level, inside functions and under ``TYPE_CHECKING``. The implicit
import of a package's ``__init__`` by its submodules is not an edge.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "kafka_replay"
#: Where its source lives in the repository (the wheel installs it as ``kafka_replay``).
SOURCE = ROOT / "harness"
#: The report side, and what it must not import, directly or through anything it imports.
REPORT_SIDE = ("kafka_replay.report", "kafka_replay.history")
ENGINE = (
    "kafka_replay.replay",
    "kafka_replay.cli",
    "kafka_replay.cli_compare",
    "kafka_replay.pytest_plugin",
)

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
    assert "kafka_replay.report.outcome" in graph["kafka_replay.replay.runner"]  # at module level
    assert (
        "kafka_replay.report.html_report" in graph["kafka_replay.report.catalog"]
    )  # in a function
    assert (
        "kafka_replay.report.outcome" in graph["kafka_replay.pytest_plugin"]
    )  # under TYPE_CHECKING
    assert (
        "kafka_replay.history.derived" in graph["kafka_replay.history.recorded"]
    )  # from . import x
    assert (
        "kafka_replay.history.derived" in graph["kafka_replay.replay.symptoms"]
    )  # from pkg import x


def test_the_cycle_finder_finds_one() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_module_imports_itself_round_a_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


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
