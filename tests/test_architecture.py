"""The import graph of the whole project: no cycle, and every module in its layer.

``lint-imports`` (run by ``./control.sh test``) checks the packages against the
contracts in ``pyproject.toml``. grimp cannot take the four top-level modules
(``worker``, ``base_task``, ``config``, ``exceptions``) as roots, so this test adds
their imports to grimp's graph, read the way grimp reads them, and checks them too.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
    "root_packages"]
TOP = ("worker", "base_task", "config", "exceptions")
# Who may import each top-level module (by first name part, or a module's full name).
IMPORTERS = {
    "worker": {"bench", "sandbox", "monitor", "chains.__main__"},
    "base_task": {"worker"},
}
# config reads settings; exceptions mask secrets in their messages with utils.urls
FOUNDATIONS = {"config": {"utils", "exceptions"}, "exceptions": {"utils"}}


def imports_of(path: Path) -> set[str]:
    """Absolute module names a file imports, function-level imports included;
    ``if TYPE_CHECKING:`` blocks left out, as the contracts leave them out."""
    tree = ast.parse(path.read_text())
    skipped = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
               and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
               for n in ast.walk(node)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def project(name: str) -> bool:
    return name.split(".")[0] in (*PACKAGES, *TOP)


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    built = grimp.build_graph(*PACKAGES, include_external_packages=True,
                              exclude_type_checking_imports=True)
    for name in TOP:
        if name not in built.modules:
            built.add_module(name)
        for imported in imports_of(ROOT / f"{name}.py"):
            if project(imported) and imported in built.modules:
                built.add_import(importer=name, imported=imported)
    return built


def cycle_in(graph: grimp.ImportGraph) -> list[str] | None:
    """One import cycle among the project's modules, or None."""
    nodes = sorted(m for m in graph.modules if project(m))
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.find_modules_directly_imported_by(node)):
            if not project(nxt):
                continue
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in nodes:
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_graph_covers_the_whole_project(graph: grimp.ImportGraph) -> None:
    modules = {m for m in graph.modules if project(m)}
    assert {"worker", "base_task", "chains.runtime.pipeline.close", "sites.demo.h5",
            "bench.crawl", "sandbox.server", "monitor.exporter"} <= modules


def test_no_module_imports_itself_back_through_others(graph: grimp.ImportGraph) -> None:
    assert cycle_in(graph) is None, " -> ".join(cycle_in(graph) or [])


def test_a_cycle_would_be_found(graph: grimp.ImportGraph) -> None:
    graph.add_import(importer="external_interface.keys", imported="chains.runtime.ledger")
    try:
        assert cycle_in(graph) == ["chains.runtime.ledger", "external_interface.keys",
                                   "chains.runtime.ledger"]
    finally:
        graph.remove_import(importer="external_interface.keys",
                            imported="chains.runtime.ledger")


@pytest.mark.parametrize("top", sorted(IMPORTERS))
def test_only_entry_points_import_the_celery_app_and_task(graph: grimp.ImportGraph,
                                                          top: str) -> None:
    allowed = IMPORTERS[top]
    wrong = sorted(m for m in graph.find_modules_that_directly_import(top) if project(m)
                   and m.split(".")[0] not in allowed and m not in allowed)
    assert wrong == [], f"{top} imported by {wrong}: only {sorted(allowed)} may"


@pytest.mark.parametrize("foundation", sorted(FOUNDATIONS))
def test_foundations_import_only_foundations(graph: grimp.ImportGraph,
                                             foundation: str) -> None:
    allowed = FOUNDATIONS[foundation]
    wrong = sorted(m for m in graph.find_modules_directly_imported_by(foundation)
                   if project(m) and m.split(".")[0] not in allowed)
    assert wrong == [], f"{foundation} imports {wrong}"


def project_modules_loaded_by(module: str) -> list[str]:
    """The project's modules a fresh interpreter loads to import ``module``."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"],
                          capture_output=True, text=True, cwd=ROOT, check=True,
                          env={**os.environ, "CRAWLCHAIN_ENV_FILE": ""})
    names = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()
             if line.startswith("import time:") and "|" in line}
    return sorted(n for n in names if project(n))


def test_a_site_step_module_loads_few_project_modules() -> None:
    loaded = project_modules_loaded_by("sites.demo.h5")
    assert "sites.demo.h5" in loaded and len(loaded) <= 20, loaded
    assert not {"worker", "base_task", "chains.runtime.ledger", "chains.broker.app"} & set(
        loaded)
