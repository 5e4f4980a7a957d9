"""Dependencies: every import declared, every declared version pinned, hosts get the runtime.

The lock (``requirements/constraints.txt``) is what every host installs from; these
tests fail when ``pyproject.toml`` moved on without it, when code imports a library
``pyproject.toml`` does not declare, or when a worker host would get the dev tools.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements" / "constraints.txt"
DEPTRY = Path(sys.executable).parent / "deptry"


def declared() -> list[Requirement]:
    """Every requirement of the project, its extras' included."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project.get("optional-dependencies", {}).values()
    return [Requirement(r) for r in [*project["dependencies"], *(r for e in extras for r in e)]]


def pinned() -> dict[str, str]:
    """The lock's ``name==version`` lines, by canonical name."""
    pins: dict[str, str] = {}
    for line in LOCK.read_text().splitlines():
        spec = line.split(";", 1)[0].strip()
        if spec and not spec.startswith("#"):
            name, _, version = spec.partition("==")
            assert version, f"{LOCK.name}: {line!r} is not pinned with =="
            pins[canonicalize_name(name.split("[")[0])] = version.strip()
    return pins


def test_the_lock_pins_every_declared_requirement_within_its_bounds() -> None:
    pins = pinned()
    for requirement in declared():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not in {LOCK.name}: run ./control.sh lock"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"{LOCK.name} pins {name}=={pins[name]}, outside {requirement}: run ./control.sh lock")


def test_libraries_whose_internals_the_code_overrides_have_upper_bounds() -> None:
    """kombu's Redis transport internals (the reviver), parsel's result fields (selectors);
    urllib3 left that list when the http client stopped leaning on its private parts."""
    bounded: dict[str, Requirement] = {canonicalize_name(r.name): r for r in declared()}
    for name in ("kombu", "parsel"):
        assert any(s.operator == "<" for s in bounded[name].specifier), name


def deptry(project: Path) -> subprocess.CompletedProcess[str]:
    if not DEPTRY.exists():
        pytest.skip("deptry is not installed here: ./control.sh test installs the dev tools")
    return subprocess.run([str(DEPTRY), "--no-ansi", "."], cwd=project, capture_output=True,
                          text=True, timeout=120, check=False)


def test_every_library_the_code_imports_is_declared() -> None:
    done = deptry(ROOT)
    assert done.returncode == 0, done.stderr


def test_an_import_of_an_undeclared_library_fails_the_check(tmp_path: Path) -> None:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "__init__.py").write_text("")
    (tmp_path / "utils" / "pretty.py").write_text("import pygments\nimport yaml_not_here\n")
    done = deptry(tmp_path)
    assert done.returncode != 0
    assert "pretty.py:1:8: DEP003 'pygments' imported but it is a transitive" in done.stderr
    assert "pretty.py:2:8: DEP001 'yaml_not_here' imported but missing" in done.stderr


@pytest.mark.slow
def test_setup_on_a_fresh_copy_installs_the_runtime_from_the_lock_and_no_dev_tool(
        tmp_path: Path) -> None:
    """``./control.sh setup`` on a copy of the tree, as on a new worker host."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    copy = tmp_path / "crawlchain"
    for name in files:
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    done = subprocess.run([str(copy / "control.sh"), "setup"], cwd=copy, capture_output=True,
                          text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "-c requirements/constraints.txt" in done.stderr
    listed = subprocess.run([str(copy / ".venv/bin/python"), "-m", "pip", "list",
                             "--format=freeze"], capture_output=True, text=True, check=True)
    installed = dict(line.split("==", 1) for line in listed.stdout.split() if "==" in line)
    names: dict[str, str] = {canonicalize_name(n): v for n, v in installed.items()}
    assert not {"pytest", "mypy", "ruff", "deptry"} & set(names)
    pins = pinned()
    for name in ("celery", "kombu", "redis", "urllib3"):
        assert names[name] == pins[name], name
