"""The chaos run: a large crawl on a cluster of workers under a seeded nemesis.

    python -m bench.chaos --minutes 10 --seed 7 [--json] [--units 50000] [--workers 4]

The demo site (a world sized to about ``--units`` units) and the forum are crawled by
their chains on a ``ChaosLab`` (two redis-servers with AOF, the sandbox, workers, one
of them in a network namespace; the store on a tmpfs of its own). For ``--minutes``
the nemesis (``bench.chaos_nemesis``) injects a fault every 10-30 s, faults
overlapping; a first crawl that ends inside the window is followed by a recrawl of its
chain (fresh units skipped), again and again. Then every fault is healed, every job
must finish (within ``--drain`` seconds), and the checker (``bench.chaos_check``)
reads the ledger, the store and the server's log.

The report lists each fault with its planned time, its start and its heal; the same
seed plans the same faults (a fault whose target is still hurt starts when it is free).
It is written under ``run/chaos/``; the last stdout line is JSON: ``seed``, ``minutes``,
``units``, ``lost``, ``duplicate_items``, ``unaccounted``, ``leaks``, ``faults``,
``kinds``, ``max_heal_s`` (and ``report``). Exit 0 only when the first five figures
after ``units`` are all 0 and the nemesis had no trouble of its own. Needs root (a
network namespace, a tmpfs); everything it made is removed on any exit, SIGINT and
SIGTERM included.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import redis

from bench.chaos_check import Job, Verdict, check, finished
from bench.chaos_lab import ChaosLab
from bench.chaos_nemesis import Nemesis, plan
from chains.demo import demo
from chains.forum import forum, forum_recrawl
from chains.runtime.model import Chain
from sandbox.cluster import ROOT
from sandbox.forum.expected import expected
from sandbox.forum.site import ForumSite
from sandbox.forum.world import ForumShape, ForumWorld
from sandbox.netns import unavailable
from sandbox.world import Shape, World

UNITS_PER_ARTICLE = 2.7  # feed, detail, comment pages, profiles and statuses per article
RECRAWL_GAP_S = 20.0
KILLS = ("kill_worker", "kill_child")
PARAMS: dict[str, dict[str, Any]] = {"demo": {"page": 1}}  # a chain's launch params


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def worlds(units: int, seed: int) -> tuple[World, ForumWorld]:
    """A demo world of about ``units`` units, and a forum a few times the tests' size."""
    articles = max(80, int(units / UNITS_PER_ARTICLE))
    world = World(seed=seed, shape=Shape(users=max(25, articles // 10), articles=articles))
    boards = ForumShape().boards if units < 20_000 else (250, 155, 45)
    return world, ForumWorld.build(seed=seed, shape=ForumShape(boards=boards,
                                                                users=max(40, units // 500)))


class Crawls:
    """The jobs of the run: a first crawl of each chain, then recrawls while time lasts."""

    def __init__(self, lab: ChaosLab) -> None:
        self.lab = lab
        self.jobs: list[Job] = []
        self.last_recrawl = 0.0

    def launch(self, chain: Chain, first: bool) -> None:
        job = self.lab.cluster.launch(chain, **PARAMS.get(chain.name, {}))
        self.jobs.append(Job(job.job_id, chain.name, first))
        say(f"chaos: launched {chain.name} ({'first crawl' if first else 'recrawl'}) "
            f"{job.job_id}")

    def recrawl_if_idle(self) -> None:
        """Every job finished: crawl both sites again (fresh units are skipped)."""
        if time.monotonic() - self.last_recrawl < RECRAWL_GAP_S:
            return
        self.last_recrawl = time.monotonic()
        if not finished(self.lab.cluster.runtime, self.jobs):
            return
        for chain in (demo, forum_recrawl):
            try:
                self.launch(chain, first=False)
            except Exception as exc:  # the broker or the state plane is hurt right now:
                # a job whose first message was not sent is revived from its open unit
                say(f"chaos: launching {chain.name} failed ({type(exc).__name__}: {exc}); "
                    f"trying again later")

    def progress(self) -> str:
        try:
            rt = self.lab.cluster.runtime
            spawned = ended = 0
            for job in self.jobs:
                for s in rt.ledger.counts(job.job_id).values():
                    spawned += s["spawned"]
                    ended += s["done"] + s["skipped"] + s["gone"] + s["failed"]
        except redis.RedisError:
            return "state Redis away"
        return f"{ended}/{spawned} units ended in {len(self.jobs)} jobs"


def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    world, forum_world = worlds(args.units, args.seed)
    schedule = plan(args.seed, args.minutes, args.workers)
    lab = ChaosLab(workdir, world, ForumSite(forum_world), args.workers)
    say(f"chaos: seed {args.seed}, {args.minutes} min, {len(schedule)} faults planned, "
        f"demo world of {world.shape.articles} articles, namespaces {lab.net.tag}*, "
        f"{workdir}")
    with lab:
        lab.wait_ready()
        crawls = Crawls(lab)
        crawls.launch(demo, first=True)
        crawls.launch(forum, first=True)
        nemesis = Nemesis(lab, schedule)
        nemesis.start()
        window_end = time.monotonic() + args.minutes * 60
        shown = 0.0
        while time.monotonic() < window_end:
            crawls.recrawl_if_idle()
            if time.monotonic() - shown > 30:
                say(f"chaos: {nemesis.now():.0f}s: {crawls.progress()}, "
                    f"{sum(f.started_s is not None for f in schedule)} faults so far")
                shown = time.monotonic()
            time.sleep(1.0)
        say("chaos: the window is over; healing every fault")
        nemesis.stop_and_heal()
        healed = nemesis.now()
        drained = _drain(crawls, args.drain)
        say(f"chaos: {'every job finished' if drained else 'jobs still running'} "
            f"{nemesis.now() - healed:.0f}s after the last heal")
        assert lab.broker is not None and lab.cluster.sandbox is not None
        kills = sum(f.kind in KILLS and f.started_s is not None for f in schedule)
        with redis.Redis(unix_socket_path=str(lab.broker.socket)) as broker:
            verdict = check(lab.cluster.runtime, crawls.jobs, world, expected(forum_world),
                            lab.cluster.sandbox, kills, broker)
    return _summary(args, schedule, nemesis.problems, verdict, drained)


def _drain(crawls: Crawls, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    shown = time.monotonic()
    while time.monotonic() < deadline:
        if finished(crawls.lab.cluster.runtime, crawls.jobs):
            return True
        if time.monotonic() - shown > 30:
            say(f"chaos: draining: {crawls.progress()}")
            shown = time.monotonic()
        time.sleep(1.0)
    return False


def _summary(args: argparse.Namespace, schedule: list[Any], problems: list[str],
             verdict: Verdict, drained: bool) -> dict[str, Any]:
    ran = [f for f in schedule if f.started_s is not None]
    heals = [f.heal_s for f in ran if f.heal_s is not None]
    if not drained:
        problems = [*problems, f"the jobs did not finish within {args.drain:.0f}s of the heal"]
    return {
        "seed": args.seed, "minutes": args.minutes, "units": verdict.units,
        "lost": verdict.lost, "duplicate_items": verdict.duplicate_items,
        "unaccounted": verdict.unaccounted, "leaks": verdict.leaks,
        "faults": len(ran), "kinds": len({f.kind for f in ran}),
        "max_heal_s": max(heals, default=0.0),
        "executions": verdict.executions, "duplicate_executions": verdict.duplicate_executions,
        "problems": problems, "details": verdict.details,
        "schedule": [f.as_dict() for f in schedule],
    }


def report(summary: dict[str, Any]) -> Path:
    folder = Path(os.environ.get("CRAWLCHAIN_HOME", ROOT)) / "run" / "chaos"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"chaos-{summary['seed']}-{time.strftime('%Y%m%dT%H%M%S')}.json"
    path.write_text(json.dumps(summary, indent=1))
    return path


def text(summary: dict[str, Any]) -> str:
    lines = [f"{'planned':>8} {'started':>8} {'healed':>8} {'heal_s':>7}  kind (target) note"]
    for f in summary["schedule"]:
        started = "-" if f["started_s"] is None else f"{f['started_s']:.1f}"
        healed = "-" if f["healed_s"] is None else f"{f['healed_s']:.1f}"
        heal = "-" if f["heal_s"] is None else f"{f['heal_s']:.1f}"
        lines.append(f"{f['at_s']:>8.1f} {started:>8} {healed:>8} {heal:>7}  {f['kind']} "
                     f"({f['target']}, {f['lasts_s']:.1f}s) {f['note']}".rstrip())
    lines += [f"problem: {p}" for p in summary["problems"]]
    lines += [f"detail: {d}" for d in summary["details"]]
    lines.append(f"units {summary['units']}, lost {summary['lost']}, duplicate items "
                 f"{summary['duplicate_items']}, unaccounted {summary['unaccounted']}, leaks "
                 f"{summary['leaks']}, {summary['faults']} faults of {summary['kinds']} kinds, "
                 f"longest heal {summary['max_heal_s']}s; {summary['executions']} pages "
                 f"served, {summary['duplicate_executions']} of them again")
    return "\n".join(lines)


def ok(summary: dict[str, Any]) -> bool:
    return not summary["problems"] and all(
        summary[k] == 0 for k in ("lost", "duplicate_items", "unaccounted", "leaks"))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, required=True, help="how long the nemesis acts")
    p.add_argument("--seed", type=int, required=True, help="the schedule's dice")
    p.add_argument("--json", action="store_true", help="the last line is the summary's JSON")
    p.add_argument("--units", type=int, default=50_000,
                   help="about how many units the first crawls hold (default 50000)")
    p.add_argument("--workers", type=int, default=4,
                   help="workers, the last one in a network namespace (default 4)")
    p.add_argument("--drain", type=float, default=900.0,
                   help="seconds the jobs may take to finish after the last heal")
    p.add_argument("--keep", action="store_true", help="keep the run's directory (logs)")
    args = p.parse_args(argv)
    if args.minutes <= 0 or args.workers < 2 or args.units < 100:
        p.error("--minutes must be > 0, --workers >= 2 and --units >= 100")
    return args


def _interrupted(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    why = unavailable()
    if why is not None:
        say(f"chaos: cannot run here: {why}; run it as root on Linux")
        return 2
    signal.signal(signal.SIGTERM, _interrupted)
    workdir = Path(tempfile.mkdtemp(prefix="chaos-", dir="/tmp"))  # short: unix sockets
    try:
        summary = run(args, workdir)  # on an error the directory stays, with the logs
    except KeyboardInterrupt:
        say(f"chaos: interrupted; its processes, namespace and mount are gone, its logs "
            f"are in {workdir}")
        return 130
    if ok(summary) and not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        summary["details"].append(f"logs kept in {workdir}")
    path = report(summary)
    print(text(summary))
    say(f"report: {path}")
    if args.json:
        short = {k: summary[k] for k in ("seed", "minutes", "units", "lost", "duplicate_items",
                                         "unaccounted", "leaks", "faults", "kinds",
                                         "max_heal_s")}
        print(json.dumps({**short, "report": str(path)}))
    return 0 if ok(summary) else 1


if __name__ == "__main__":
    sys.exit(main())

