"""The import graph of the whole project: no cycle (``if TYPE_CHECKING:`` imports
included), every module in a layer, user code on its one import.

``lint-imports`` (run by ``./control.sh test``) checks the packages against the
contracts in ``pyproject.toml``. grimp cannot take the two top-level modules
(``worker``, ``base_task``) as roots, so this test adds their imports to grimp's graph,
read the way grimp reads them, and checks them too.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
    "root_packages"]
TOP = ("worker", "base_task")
# Who may import each top-level module (by first name part, or a module's full name).
IMPORTERS = {
    "worker": {"bench", "sandbox", "monitor", "cli"},
    "base_task": {"worker"},
}

def imports_of(path: Path) -> set[str]:
    """Absolute module names a file imports, function-level and ``if TYPE_CHECKING:``
    imports included, as the contracts count them."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
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
                              exclude_type_checking_imports=False, cache_dir=None)
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
    """Type-checking imports count: a cycle there is a tie between modules all the same."""
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
    assert "sites.demo.h5" in loaded and len(loaded) <= 25, loaded
    assert not {"worker", "base_task", "chains.runtime.ledger", "chains.broker.app"} & set(
        loaded)


@pytest.mark.parametrize("module", ["chains.runtime.model", "chains.runtime.message",
                                    "chains.runtime.launch", "chains.api"])
def test_the_runtime_loads_no_celery(module: str) -> None:
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"],
                          capture_output=True, text=True, cwd=ROOT, check=True,
                          env={**os.environ, "CRAWLCHAIN_ENV_FILE": ""})
    loaded = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in done.stderr.splitlines()
              if line.startswith("import time:") and "|" in line}
    assert not {"celery", "kombu", "billiard", "worker", "base_task"} & loaded


def contract_layers() -> list[str]:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"]
    layers = next(c["layers"] for c in contracts if c["type"] == "layers")
    return [name.strip() for layer in layers for name in re.split(r"[|:]", layer)]


def chain_files() -> set[str]:
    return {f"chains.{p.stem}" for p in (ROOT / "chains").glob("*.py")
            if (ROOT / "sites" / p.stem / "__init__.py").is_file()}


def test_every_module_is_in_a_layer_of_the_contract(graph: grimp.ImportGraph) -> None:
    """But a site's chain file, which the user-code rule below covers (a new site's file
    is not in the contract until someone adds it)."""
    layers = contract_layers()
    outside = sorted(m for m in graph.modules if project(m) and m not in TOP
                     and m not in chain_files() and m != "chains"
                     and not any(m == layer or m.startswith(layer + ".") for layer in layers))
    assert outside == [], f"{outside}: add them to a layer in pyproject.toml"


def test_sites_and_chain_files_import_only_chains_api_and_their_own_site(
        graph: grimp.ImportGraph) -> None:
    wrong = []
    for module in sorted(m for m in graph.modules if project(m)):
        if module.startswith("sites.") or module in chain_files():
            own = "sites." + module.split(".")[1]
        else:
            continue
        for imported in graph.find_modules_directly_imported_by(module):
            if project(imported) and imported != "chains.api" and imported != own \
                    and not imported.startswith(own + ".") and imported != "sites":
                wrong.append(f"{module} -> {imported}")
    assert wrong == [], wrong
