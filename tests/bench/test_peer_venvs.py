"""A peer venv counts as ready only when it was filled from today's pinned requirements."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.peer_venvs import PeerVenv


def test_a_venv_is_ready_only_with_its_entry_and_todays_requirements(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRAWLCHAIN_HOME", str(tmp_path))
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("crawlee==1.11.0\n")
    venv = PeerVenv("peer-venv", requirements, "python")
    assert venv.ready() is None  # nothing there
    (venv.path / "bin").mkdir(parents=True)
    (venv.path / "bin" / "python").touch()
    assert venv.ready() is None  # half made: never filled
    venv.marker.write_text("crawlee==1.11.0\n")
    assert venv.ready() == venv.path / "bin" / "python"
    requirements.write_text("crawlee==1.12.0\n")
    assert venv.ready() is None  # a changed pin: to be refilled
