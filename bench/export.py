"""Export at scale: time and peak memory of streaming a big collection to a file.

    python -m bench.export --json                 # 1,000,000 items
    python -m bench.export --items 20000

Writes ``--items`` items into a fresh SQLite store in a temporary directory (in
batches, never all in memory), then runs ``python -m external_interface.storage.export``
once per format (JSON lines, CSV, Parquet) as its own process, as ``./control.sh export``
does, and reports each run's wall time, peak RSS (the process's ``ru_maxrss``) and file
size. The Parquet file is read back with pyarrow, which must count as many rows. The
target: each export's peak RSS under ``--rss-limit-mb`` (200), whatever ``--items``.
The last line of ``--json`` output is::

    {"items": n, "write_s": s, "exports": {"jsonl": {"seconds": s, "peak_rss_mb": m,
     "mb": size}, "csv": {...}, "parquet": {...}}, "parquet_rows": n, "ok": true}
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import report
from bench.storage import BenchItem
from external_interface.storage.sqlite import SQLiteStore

ROOT = Path(__file__).resolve().parent.parent
FORMATS = ("jsonl", "csv", "parquet")
WRITE_BATCH = 10_000


def fill(path: Path, count: int) -> float:
    """``count`` items in batches; the seconds it took."""
    store = SQLiteStore(path)
    started = time.perf_counter()
    try:
        for first in range(0, count, WRITE_BATCH):
            store.upsert("bench-export", [
                BenchItem(item_id=n, url=f"http://127.0.0.1:8000/post/{n}",
                          title=f"post number {n}", body="lorem ipsum dolor sit amet " * 8,
                          likes=n % 997)
                for n in range(first, min(first + WRITE_BATCH, count))])
    finally:
        store.close()
    return time.perf_counter() - started


def export_once(url: str, fmt: str, out: Path) -> dict[str, float]:
    """One export as its own process: wall seconds, peak RSS (MB), file size (MB)."""
    command = [sys.executable, "-m", "external_interface.storage.export", "bench",
               "--format", fmt, "--storage-url", url, "--out", str(out)]
    started = time.perf_counter()
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.stderr is not None
    if proc.returncode != 0:
        raise RuntimeError(f"export --format {fmt} failed: {proc.stderr.read().decode()}")
    proc.stderr.close()
    return {"seconds": round(seconds, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "mb": round(out.stat().st_size / 1e6, 1)}


def parquet_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(path).metadata.num_rows)


def run(items: int, rss_limit_mb: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
        db = Path(tmp) / "items.db"
        write_s = fill(db, items)
        print(f"  wrote {items:,} items in {write_s:.1f} s", file=sys.stderr)
        exports = {}
        for fmt in FORMATS:
            exports[fmt] = export_once(f"sqlite:///{db}", fmt, Path(tmp) / f"bench.{fmt}")
            print(f"  {fmt}: {exports[fmt]}", file=sys.stderr)
        rows = parquet_rows(Path(tmp) / "bench.parquet")
    ok = rows == items and all(e["peak_rss_mb"] < rss_limit_mb for e in exports.values())
    return {"items": items, "write_s": round(write_s, 1), "exports": exports,
            "parquet_rows": rows, "rss_limit_mb": rss_limit_mb, "ok": ok}


def main(argv: list[str] | None = None, prog: str = "python -m bench.export",
         doc: str | None = __doc__,
         run_with: Callable[[int, float], dict[str, Any]] = run) -> int:
    """The command line of both export benches: item count, RSS limit, JSON."""
    parser = argparse.ArgumentParser(prog=prog, description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--rss-limit-mb", type=float, default=200.0)
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args(argv)
    result = run_with(args.items, args.rss_limit_mb)
    report(result, args.json)
    return 0 if result["ok"] else 1

if __name__ == "__main__":
    sys.exit(main())
