"""``crawlchain new-site`` in a copy of the checkout: what it writes passes the lint, the
types and its own tests at once, and fits the chain checks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def copy_of_checkout(target: Path) -> Path:
    """The committed files of this checkout, copied (what a fresh clone holds)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            (target / name).write_bytes(source.read_bytes())
    return target


def run(*cmd: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300,
                          check=False)


@pytest.mark.integration
def test_a_new_site_passes_lint_types_and_its_tests_at_once(tmp_path: Path) -> None:
    root = copy_of_checkout(tmp_path / "checkout")
    made = run(sys.executable, "-m", "cli", "new-site", "shop", "--root", str(root),
               cwd=ROOT)
    assert made.returncode == 0, made.stdout + made.stderr
    written = ["sites/shop/__init__.py", "chains/shop.py", "tests/sites/shop/test_shop.py"]
    assert all((root / name).is_file() for name in written)
    bin_dir = Path(sys.executable).parent
    lint = run(str(bin_dir / "ruff"), "check", *written, cwd=root)
    assert lint.returncode == 0, lint.stdout
    types = run(str(bin_dir / "mypy"), "--strict", *written, cwd=root)
    assert types.returncode == 0, types.stdout
    tests = run(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                "tests/sites/shop", "tests/chains/runtime/test_checks.py", cwd=root)
    assert tests.returncode == 0, tests.stdout[-3000:]
    assert "passed" in tests.stdout


def test_a_taken_or_bad_name_is_refused_naming_why(tmp_path: Path) -> None:
    taken = run(sys.executable, "-m", "cli", "new-site", "demo", cwd=ROOT)
    assert taken.returncode == 2 and "exists already" in taken.stderr
    bad = run(sys.executable, "-m", "cli", "new-site", "My-Shop", "--root", str(tmp_path),
              cwd=ROOT)
    assert bad.returncode == 2 and "not a site name" in bad.stderr
