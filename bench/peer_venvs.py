"""The peers' own venvs under ``$CRAWLCHAIN_HOME/run/bench/``, made from their pinned requirements.

    SCRAPY.ensure()   -> the venv's ``scrapy``  (bench/scrapy_peer/requirements.txt)
    CRAWLEE.ensure()  -> the venv's ``python``  (bench/crawlee_peer/requirements.txt)

Neither peer is a dependency of crawlchain. A venv counts as ready when its entry
point exists and the requirements it was filled from (kept in ``.requirements``)
are today's, so a changed pin rebuilds it; a half-made venv never counts.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from bench.properties import bench_dir

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class PeerVenv:
    dirname: str  # under run/bench/
    requirements: Path
    entry: str  # what runs the peer, under bin/

    @property
    def path(self) -> Path:
        return bench_dir() / self.dirname

    @property
    def marker(self) -> Path:
        return self.path / ".requirements"

    def ready(self) -> Path | None:
        """The entry point when the venv is filled from today's requirements, else None."""
        entry = self.path / "bin" / self.entry
        current = self.requirements.read_text()
        made = self.marker.read_text() if self.marker.exists() else None
        return entry if entry.exists() and made == current else None

    def ensure(self) -> Path:
        """The entry point, the venv created or refilled first when not ready."""
        found = self.ready()
        if found is not None:
            return found
        print(f"making the peer venv {self.path} from {self.requirements}", file=sys.stderr)
        if not (self.path / "bin" / "pip").exists():
            subprocess.run([sys.executable, "-m", "venv", str(self.path)], check=True,
                           timeout=300)
        subprocess.run([str(self.path / "bin" / "pip"), "install", "--quiet", "-r",
                        str(self.requirements)], check=True, timeout=1200)
        self.marker.write_text(self.requirements.read_text())
        return self.path / "bin" / self.entry


SCRAPY = PeerVenv("scrapy-venv", HERE / "scrapy_peer" / "requirements.txt", "scrapy")
CRAWLEE = PeerVenv("crawlee-venv", HERE / "crawlee_peer" / "requirements.txt", "python")
