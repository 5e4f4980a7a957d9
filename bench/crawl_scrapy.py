"""The Scrapy peer's side of ``bench/crawl.py``: its venv, one run, its figures.

Scrapy is not a dependency of crawlchain: it lives in its own venv
(``$CRAWLCHAIN_HOME/run/bench/scrapy-venv``, created from
``bench/scrapy_peer/requirements.txt`` when missing). The spider is tuned as the
issue asks: ``CONCURRENT_ITEMS=1`` (Scrapy >= 2.13 otherwise starts 100 asyncio
tasks per response, scrapy/scrapy#5182), ``CONCURRENT_REQUESTS`` and
``CONCURRENT_REQUESTS_PER_DOMAIN`` both at the crawl's concurrency (the per-domain
default of 8 would cap a one-host crawl), AutoThrottle off, items to a JSONL file.

CPU is the spider's own ``getrusage`` from its first start request to its close,
the same window as the project's (start-up and shutdown are in ``process_cpu_s``).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from bench.crawl_project import RunResult
from bench.proctree import machine_busy_s
from bench.properties import bench_dir

PEER = Path(__file__).resolve().parent / "scrapy_peer"
SPIDER = PEER / "properties_spider.py"


def venv_dir() -> Path:
    return bench_dir() / "scrapy-venv"


def scrapy_binary() -> Path | None:
    """The peer venv's ``scrapy``, or None when the venv is not there yet."""
    found = venv_dir() / "bin" / "scrapy"
    return found if found.exists() else None


def ensure_venv() -> Path:
    """The ``scrapy`` command of the peer's venv, created and filled first when missing."""
    found = scrapy_binary()
    if found is not None:
        return found
    venv = venv_dir()
    print(f"creating the Scrapy peer's venv in {venv}", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "-r",
                    str(PEER / "requirements.txt")], check=True, timeout=1200)
    return venv / "bin" / "scrapy"


def command(base_url: str, concurrency: int, out: Path, shards: int = 1,
            index_pages: int = 0) -> list[str]:
    """``scrapy runspider`` with the peer's settings; index mode when sharded."""
    settings = {"CONCURRENT_REQUESTS": concurrency, "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency,
                "CONCURRENT_ITEMS": 1, "AUTOTHROTTLE_ENABLED": False, "LOG_LEVEL": "INFO",
                "TELNETCONSOLE_ENABLED": False}
    cmd = [str(ensure_venv()), "runspider", str(SPIDER), "-a", f"base={base_url}",
           "-O", str(out)]
    if shards > 1 or index_pages:
        cmd += ["-a", "mode=index", "-a", f"shards={shards}", "-a", f"n_index={index_pages}"]
    for key, value in settings.items():
        cmd += ["-s", f"{key}={value}"]
    return cmd


def crawl(cmd: list[str], workdir: Path, timeout: float) -> RunResult:
    """Run the spider to its end (bounded by ``timeout``) and read its ``BENCH`` line."""
    log = workdir / "scrapy.log"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy, started = machine_busy_s(), time.monotonic()
    with log.open("wb") as out:
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout,
                              cwd=workdir, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, busy = time.monotonic() - started, machine_busy_s() - busy
    report = bench_line(log)
    if proc.returncode != 0 or report is None:
        raise RuntimeError(f"scrapy exited with {proc.returncode}; see {log}")
    process_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return RunResult(
        "scrapy", int(report["pages"]), int(report["items"]), float(report["crawl_s"]),
        float(report["cpu_end_s"]) - float(report["cpu_start_s"]), float(report["maxrss_mb"]),
        {"process_cpu_s": round(process_cpu, 3), "errors": report["errors"],
         "window_s": round(wall, 3), "window_busy_s": round(busy, 3),
         "window_own_cpu_s": round(process_cpu, 3)})


def bench_line(log: Path) -> dict[str, float] | None:
    """The spider's last ``BENCH {json}`` line."""
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.startswith("BENCH ")]
    return dict(json.loads(lines[-1][len("BENCH "):])) if lines else None
