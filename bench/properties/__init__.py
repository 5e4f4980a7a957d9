"""The "properties" benchmark site: generator, nginx and latency servers.

The site is static files on disk (served by nginx, or by the latency server for
the latency-bound test), so it lives with the benchmarks and not in ``sandbox/``:
the sandbox is the dynamic demo site with injected faults that the demo and the
spine tests crawl in-process.
"""

from __future__ import annotations

import os
from pathlib import Path

from config import HOME


def bench_dir() -> Path:
    """Runtime files of the benchmarks: ``$CRAWLCHAIN_HOME/run/bench`` (outside git)."""
    return Path(os.environ.get("CRAWLCHAIN_HOME", HOME)) / "run" / "bench"
