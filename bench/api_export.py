"""A job's items exported over the API: the server's peak memory while it streams them.

    python -m bench.api_export --json       # 1,000,000 items (./control.sh bench api_export)
    python -m bench.api_export --items 20000

Writes ``--items`` items of one job into a fresh SQLite store (as ``bench.export`` does),
records the job in a private redis-server's ledger, then per format (JSON lines, CSV)
starts ``python -m api`` as its own process on a free loopback port, reads
``GET /api/jobs/{id}/items?format=...`` to the end over HTTP (counting lines, keeping
nothing), stops the server and reads its peak RSS (``ru_maxrss``). The target: each
server's peak RSS under ``--rss-limit-mb`` (200), whatever ``--items``, with every item
received. The last line of ``--json`` output is::

    {"items": n, "write_s": s, "exports": {"jsonl": {"seconds": s, "peak_rss_mb": m,
     "mb": size, "lines": n}, "csv": {...}}, "rss_limit_mb": 200, "ok": true}
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import requests

from bench import export
from bench.export import fill
from chains.runtime.ledger import Ledger
from ops.embedded_redis import scratch_server

ROOT = Path(__file__).resolve().parent.parent
JOB = "bench-export"  # the job id bench.export's items are written under
FORMATS = ("jsonl", "csv")
SERVING = re.compile(r"serving on http://127\.0\.0\.1:(\d+)/api")
READY_S = 60.0


def serve(env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``python -m api`` on a free port, logging to ``log``; the process and its base URL,
    once its log says where it serves."""
    with log.open("ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "api", "--host", "127.0.0.1",
                                 "--port", "0"], cwd=ROOT, env=env, stdout=out, stderr=out)
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline and proc.poll() is None:
        if found := SERVING.search(log.read_text(errors="replace")):
            return proc, f"http://127.0.0.1:{found.group(1)}"
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"python -m api did not start (exit {proc.wait()}): see {log}")


def export_once(env: dict[str, str], fmt: str, log: Path) -> dict[str, float]:
    """One server, one export read to its end: seconds, the server's peak RSS, size, lines."""
    proc, url = serve(env, log)
    lines = size = 0
    started = time.perf_counter()
    try:
        with requests.get(f"{url}/api/jobs/{JOB}/items", params={"format": fmt}, stream=True,
                          headers={"Authorization": f"Bearer {env['API_TOKEN']}"},
                          timeout=60) as answer:
            answer.raise_for_status()
            for chunk in answer.iter_content(chunk_size=1 << 20):
                lines += chunk.count(b"\n")
                size += len(chunk)
        seconds = time.perf_counter() - started
    finally:
        proc.send_signal(signal.SIGTERM)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    return {"seconds": round(seconds, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "mb": round(size / 1e6, 1), "lines": lines}


def run(items: int, rss_limit_mb: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-api-export-") as tmp, \
            scratch_server(prefix="bench-api-export-") as socket:
        db = Path(tmp) / "items.db"
        write_s = fill(db, items)
        print(f"  wrote {items:,} items in {write_s:.1f} s", file=sys.stderr)
        import redis

        with redis.Redis(unix_socket_path=socket) as client:
            Ledger(client).create_job(JOB, {"name": "bench", "start": "x", "steps": {}}, {})
        env = {**os.environ, "CRAWLCHAIN_ENV_FILE": "", "CRAWLCHAIN_HOME": tmp,
               "STATE_REDIS_URL": f"unix://{socket}", "CELERY_BROKER_URL":
               f"redis+socket://{socket}", "STORAGE_URL": f"sqlite:///{db}",
               "API_TOKEN": secrets.token_urlsafe(32),
               "LOG_LEVEL": "INFO"}  # its "serving on" line says which port it took
        exports = {}
        for fmt in FORMATS:
            exports[fmt] = export_once(env, fmt, Path(tmp) / f"api-{fmt}.log")
            print(f"  {fmt}: {exports[fmt]}", file=sys.stderr)
    complete = (exports["jsonl"]["lines"] == items and exports["csv"]["lines"] == items + 1)
    ok = complete and all(e["peak_rss_mb"] < rss_limit_mb for e in exports.values())
    return {"items": items, "write_s": round(write_s, 1), "exports": exports,
            "rss_limit_mb": rss_limit_mb, "ok": ok}


def main(argv: list[str] | None = None) -> int:
    return export.main(argv, "python -m bench.api_export", __doc__, run)

if __name__ == "__main__":
    sys.exit(main())
