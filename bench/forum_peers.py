"""The three peers of the deep-chain benchmark (issue 17), each checked against the
forum's expected dataset.

    python -m bench.forum_peers [--peer plain|scrapy|crawlee ...] [--seed 7]
                                [--server sandbox|fast] [--shape small|large]

Each peer runs in its own venv under ``$CRAWLCHAIN_HOME/run/bench`` (``scrapy-venv``,
``crawlee-venv``, ``plain-venv``), created from its ``requirements.txt`` when missing
(the plain peer's venv is empty: standard library only). Each crawls the forum from
``/forum/`` and writes JSONL records ``{"type": collection, ...fields}``; this script
reads them back and checks, per collection, that the records are exactly those of
``sandbox.forum.expected`` (same keys, same fields, no record written twice). On the
sandbox server (the default, small shape) it also checks at the server that the peer
asked every expected URL exactly once and that the only failures are the listed
404/410 threads. ``--server fast`` runs the peers against ``sandbox.forum.fast_server``
(for the large shape), where only the records are checked.

Prints one line per peer and, last, a JSON line with each peer's ``BENCH`` figures and
problems; exits 1 when any peer is not exact.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from bench.proctree import Watch
from bench.properties import bench_dir
from sandbox.forum.expected import ForumExpected, expected
from sandbox.forum.site import ForumSite
from sandbox.forum.world import SHAPES, ForumWorld
from sandbox.server import SandboxServer, Site, url_key
from sandbox.world import World

BENCH = Path(__file__).resolve().parent
PEERS = ("plain", "scrapy", "crawlee")
KEYS = {"boards": "board_id", "threads": "thread_id", "posts": "post_id", "users": "user_id",
        "reactions": "reaction_id"}


def venv_dir(peer: str) -> Path:
    return bench_dir() / f"{peer}-venv"


def requirements(peer: str) -> Path | None:
    """The peer's pinned requirements; None for the plain peer (standard library)."""
    return None if peer == "plain" else BENCH / f"{peer}_peer" / "requirements.txt"


def ensure_venv(peer: str) -> Path:
    """The peer venv's ``python``, the venv created and filled first when missing."""
    venv = venv_dir(peer)
    python = venv / "bin" / "python"
    if python.exists():
        return python
    print(f"creating the {peer} peer's venv in {venv}", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    needs = requirements(peer)
    if needs is not None:
        subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "-r", str(needs)],
                       check=True, timeout=1200)
    return python


def command(peer: str, python: Path, base_url: str, out: Path) -> list[str]:
    """How to run one peer on ``base_url``, its records to ``out``."""
    if peer == "scrapy":
        return [str(python.parent / "scrapy"), "runspider",
                str(BENCH / "scrapy_peer" / "forum_spider.py"), "-a", f"base={base_url}",
                "-O", str(out)]
    return [str(python), str(BENCH / f"{peer}_peer" / "forum_crawler.py"), base_url, str(out)]


@dataclass
class Outcome:
    """One peer's run: its own figures and what does not match the expected dataset."""

    peer: str
    bench: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    peak_rss_mb: float = 0.0  # sampled from outside: see ``run_peer``


def run_peer(peer: str, base_url: str, workdir: Path, timeout: float) -> tuple[Path, Outcome]:
    """Run one peer to its end (bounded by ``timeout``); its output file and figures.

    Its peak RSS is sampled from outside (``proctree.Watch``, every 0.1 s), as the
    project's workers' is: the peer's own ``ru_maxrss`` also holds this process's peak,
    which Linux carries over into a child spawned with vfork when it execs."""
    out, log = workdir / f"{peer}.jsonl", workdir / f"{peer}.log"
    out.unlink(missing_ok=True)
    outcome = Outcome(peer)
    cmd = command(peer, ensure_venv(peer), base_url, out)
    with log.open("wb") as sink:
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT, cwd=workdir,
                                stdin=subprocess.DEVNULL)
        with Watch({peer: proc.pid}, interval=0.1) as watch:
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
                raise
        outcome.peak_rss_mb = watch.peak_rss_mb([peer])
    lines = [ln for ln in log.read_text(errors="replace").splitlines()
             if ln.startswith("BENCH ")]
    if lines:
        outcome.bench = json.loads(lines[-1][len("BENCH "):])
    if proc.returncode != 0 or not lines:
        outcome.problems.append(f"exited {proc.returncode}; see {log}")
    return out, outcome


def check_records(out: Path, truth: ForumExpected) -> list[str]:
    """What differs between the peer's records and the expected ones, per collection."""
    if not out.exists():
        return [f"no output at {out}"]
    got: dict[str, dict[Any, dict[str, Any]]] = {name: {} for name in KEYS}
    written: Counter[str] = Counter()
    for line in out.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        name = record.pop("type")
        written[name] += 1
        got[name][record[KEYS[name]]] = record
    problems = []
    for name, records in truth.records.items():
        if written[name] != len(records) or got[name] != records:
            wrong = sum(1 for k, v in records.items() if got[name].get(k) != v)
            problems.append(f"{name}: {written[name]} written, {len(got[name])} distinct, "
                            f"{len(records)} expected, {wrong} missing or different")
    return problems


def check_requests(server: SandboxServer, since: int, truth: ForumExpected) -> list[str]:
    """Every expected URL asked exactly once since hit ``since``, and nothing else."""
    hits = server.hits()[since:]
    asked = Counter(h.url for h in hits)
    wanted = {_key(u) for u in truth.urls}
    failed = {h.url: h.status for h in hits if h.status != 200}
    problems = []
    if twice := {u: n for u, n in asked.items() if n > 1}:
        problems.append(f"{len(twice)} URLs asked more than once, e.g. {sorted(twice)[:3]}")
    if missing := wanted - set(asked):
        problems.append(f"{len(missing)} expected URLs never asked, e.g. {sorted(missing)[:3]}")
    if extra := set(asked) - wanted:
        problems.append(f"{len(extra)} unexpected URLs asked, e.g. {sorted(extra)[:3]}")
    if failed != {_key(u): s for u, s in truth.failures.items()}:
        problems.append(f"failures {sorted(failed.items())[:6]} are not the listed dead threads")
    return problems


def _settle(server: SandboxServer, within_s: float = 10.0) -> None:
    """Wait until the server has logged every answer (a client may read its last reply
    a moment before the server logs it)."""
    deadline = time.monotonic() + within_s
    while server.in_flight() and time.monotonic() < deadline:
        time.sleep(0.01)


def _key(url: str) -> str:
    parts = urlsplit(url)
    return url_key(parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()})


@contextmanager
def sandbox(world: ForumWorld) -> Iterator[SandboxServer]:
    server = SandboxServer(Site(World(), forum=ForumSite(world)))
    server.start_in_thread()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@dataclass(frozen=True)
class FastServer:
    """The forum's fast server we started: its base URL and its process."""

    url: str
    proc: subprocess.Popen[str]

    @property
    def pid(self) -> int:
        return self.proc.pid


@contextmanager
def fast_server(shape: str, seed: int, lifetime: float) -> Iterator[FastServer]:
    """``sandbox.forum.fast_server`` on a free port, up once it prints its URL; it exits
    by itself after ``lifetime`` seconds if we do not stop it first."""
    proc = subprocess.Popen([sys.executable, "-m", "sandbox.forum.fast_server", "--port", "0",
                             "--shape", shape, "--seed", str(seed),
                             "--max-seconds", str(lifetime)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http://"):
            raise RuntimeError(f"the forum's fast server did not start (exit {proc.wait()})")
        yield FastServer(url, proc)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def check_peers(peers: list[str], shape: str, seed: int, server: str,
                timeout: float) -> list[Outcome]:
    world = ForumWorld.build(seed, SHAPES[shape])
    truth = expected(world)
    workdir = bench_dir() / "forum-peers"
    workdir.mkdir(parents=True, exist_ok=True)
    outcomes = []
    if server == "fast":
        with fast_server(shape, seed, timeout * len(peers) + 60) as served:
            for peer in peers:
                out, outcome = run_peer(peer, served.url, workdir, timeout)
                outcome.problems += check_records(out, truth)
                outcomes.append(outcome)
        return outcomes
    with sandbox(world) as running:
        for peer in peers:
            since = len(running.hits())
            out, outcome = run_peer(peer, running.base_url, workdir, timeout)
            _settle(running)
            outcome.problems += check_records(out, truth) + check_requests(running, since, truth)
            outcomes.append(outcome)
    return outcomes


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.forum_peers", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--peer", action="append", choices=PEERS, help="default: all three")
    p.add_argument("--shape", choices=sorted(SHAPES), default="small")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--server", choices=("sandbox", "fast"), default="sandbox")
    p.add_argument("--timeout", type=float, default=900, help="seconds per peer")
    args = p.parse_args(argv)
    outcomes = check_peers(args.peer or list(PEERS), args.shape, args.seed, args.server,
                           args.timeout)
    truth = expected(ForumWorld.build(args.seed, SHAPES[args.shape]))
    print(f"expected: {truth.requests} requests, {truth.items} items {truth.counts()}")
    for o in outcomes:
        verdict = "exact" if not o.problems else "NOT EXACT: " + "; ".join(o.problems)
        print(f"{o.peer:>8}: {verdict}  {o.bench}")
    print(json.dumps({o.peer: {"bench": o.bench, "problems": o.problems} for o in outcomes}))
    return 1 if any(o.problems for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
