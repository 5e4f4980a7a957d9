"""Many hosts: ``control.sh``'s verbs on every host of a host file, over ssh, in parallel.

    ./control.sh --hosts hosts.txt start|stop|restart|status [worker|beat|flower|exporter]

The host file has one worker group a line; a host may have several lines (one per
group of queues: that is how a cluster's capacity is shared between sites):

    # HOST  [roles=worker,beat,flower,exporter] [queues=Q1,Q2] [concurrency=N]
    #       [name=GROUP] [dir=/checkout/on/that/host]
    crawl-1.lan   roles=worker,beat  queues=demo,crawlchain  concurrency=8
    crawl-2.lan   queues=demo        concurrency=8
    crawl-2.lan   name=props         queues=properties       concurrency=2
    ops.lan       roles=flower,exporter

``roles`` defaults to ``worker``; at most one line may have ``beat`` (two beats would
launch every schedule twice), and every host is told which host that is
(``CRAWLCHAIN_BEAT_HOST``), so ``control.sh start beat`` anywhere else is refused.
Omitted queues and concurrency fall back to the command line's ``--queues`` and
``--concurrency``, then to ``control.sh``'s defaults (every site's queue, 2).

Each host gets one remote shell command (``cd DIR; ./control.sh ...`` for each of its
lines) through ``CRAWLCHAIN_SSH`` (default ``ssh -o BatchMode=yes -o ConnectTimeout=10``;
the host is appended, or substituted for ``{host}`` when the template has it, e.g.
``ip netns exec {host} sh -c``). ``CRAWLCHAIN_REMOTE_DIR`` (default: this checkout's
path) and ``CRAWLCHAIN_REMOTE_CONTROL`` (default ``./control.sh``) say what runs there;
``CRAWLCHAIN_SSH_TIMEOUT`` (default 300 s) bounds each host. Secrets stay in each
host's env file: nothing but names crosses the command line, and every line of remote
output is redacted before it is shown.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from utils.urls import redact_text

CHECKOUT = Path(__file__).resolve().parent.parent
ROLES = ("worker", "beat", "flower", "exporter")
VERBS = ("start", "stop", "restart", "status")
DEFAULT_SSH = "ssh -o BatchMode=yes -o ConnectTimeout=10"
_NAME = re.compile(r"[A-Za-z0-9_-]+")
_QUEUES = re.compile(r"[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*")
_HOST = re.compile(r"[A-Za-z0-9_.@:%\[\]-]+")
_STATUS = re.compile(r"^(?P<name>\S+)\s+running\s+pid\s+\d+\s+procs\s+(?P<procs>\d+)", re.M)


class HostFileError(ValueError):
    """The host file cannot be used; the message names the file and line."""


@dataclass(frozen=True)
class Group:
    """One line of the host file: a worker group (and the other roles) on one host."""

    host: str
    line: int
    roles: frozenset[str] = frozenset({"worker"})
    name: str = "default"
    queues: str | None = None
    concurrency: int | None = None
    dir: str | None = None


@dataclass
class Result:
    """What one host answered."""

    host: str
    returncode: int
    output: str
    seconds: float
    running: dict[str, int] = field(default_factory=dict)  # component -> processes
    skipped: bool = False  # none of the host's lines has the component asked for

    @property
    def ok(self) -> bool:
        return self.returncode == 0


# -- the host file ------------------------------------------------------------------
def parse(text: str, source: str = "hosts") -> list[Group]:
    """Every line's group, checked: known keys, one beat, unique names per host."""
    groups = [parse_line(line, number, source) for number, line in enumerate(
        text.splitlines(), start=1) if line.split("#", 1)[0].strip()]
    check(groups, source)
    return groups


def parse_line(line: str, number: int, source: str) -> Group:
    """``HOST key=value ...`` -> a Group; errors name the file and the line."""
    host, *options = line.split("#", 1)[0].split()
    where = f"{source}:{number}"
    if host.startswith("-") or not _HOST.fullmatch(host):
        raise HostFileError(f"{where}: {host!r} is not a host name")
    fields: dict[str, Any] = {}
    for option in options:
        key, sep, value = option.partition("=")
        if not sep or not value:
            raise HostFileError(f"{where}: expected key=value, got {option!r}")
        fields[key] = parse_option(key, value, where)
    return Group(host=host, line=number, **fields)


def parse_option(key: str, value: str, where: str) -> Any:
    """One ``key=value`` of a line, validated."""
    if key == "roles":
        roles = frozenset(value.split(","))
        if not roles <= set(ROLES):
            raise HostFileError(f"{where}: roles must be among {', '.join(ROLES)}")
        return roles
    if key == "concurrency":
        if not value.isdigit() or int(value) < 1:
            raise HostFileError(f"{where}: concurrency must be a positive integer")
        return int(value)
    patterns = {"name": _NAME, "queues": _QUEUES}
    if key in patterns and patterns[key].fullmatch(value):
        return value
    if key == "dir" and value.startswith("/"):
        return value
    if key in ("name", "queues", "dir"):
        raise HostFileError(f"{where}: bad {key} {value!r}")
    raise HostFileError(f"{where}: unknown key {key!r} (roles, queues, concurrency, name, dir)")


def check(groups: list[Group], source: str) -> None:
    """Exactly one beat at most, and one line per (host, worker group)."""
    beats = [g for g in groups if "beat" in g.roles]
    if len(beats) > 1:
        lines = ", ".join(str(g.line) for g in beats)
        raise HostFileError(f"{source}: beat is marked on lines {lines}; a cluster runs "
                            "exactly one beat (two would launch every schedule twice)")
    seen: set[tuple[str, str]] = set()
    for group in groups:
        if "worker" in group.roles:
            if (group.host, group.name) in seen:
                raise HostFileError(f"{source}:{group.line}: {group.host} already has a "
                                    f"worker group named {group.name!r}; add name=...")
            seen.add((group.host, group.name))
    if not groups:
        raise HostFileError(f"{source}: no hosts")


def beat_host(groups: Iterable[Group]) -> str | None:
    return next((g.host for g in groups if "beat" in g.roles), None)


def by_host(groups: Iterable[Group]) -> dict[str, list[Group]]:
    """Groups per host, in file order: a host's lines run one after the other."""
    hosts: dict[str, list[Group]] = {}
    for group in groups:
        hosts.setdefault(group.host, []).append(group)
    return hosts


# -- what runs on a host ------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    """The verb, the component (None: every role of each line) and the command line's
    fallback worker options."""

    verb: str
    component: str | None = None
    queues: str | None = None
    concurrency: int | None = None


def host_commands(groups: list[Group], plan: Plan) -> list[list[str]]:
    """The ``control.sh`` argument lists for one host's lines, each component once."""
    if plan.verb == "status":
        return [["status"]]
    commands: list[list[str]] = []
    for group in groups:
        for role in ROLES:
            if role in group.roles and plan.component in (None, role):
                commands.append(role_command(group, role, plan))
    unique = {tuple(c): c for c in commands}  # two lines of a host may both say flower
    return list(unique.values())


def role_command(group: Group, role: str, plan: Plan) -> list[str]:
    """``start worker --name N --queues Q --concurrency C`` and the like."""
    if role != "worker":
        return [plan.verb, role]
    command = [plan.verb, "worker", "--name", group.name]
    if plan.verb == "stop":
        return command
    queues = group.queues or plan.queues
    concurrency = group.concurrency or plan.concurrency
    if queues:
        command += ["--queues", queues]
    if concurrency:
        command += ["--concurrency", str(concurrency)]
    return command


def remote_script(group: Group, commands: list[list[str]], env: Mapping[str, str],
                  beat: str | None) -> str:
    """A POSIX shell line that runs every command in the host's checkout (the ``dir`` of
    its first line) and exits with the last failure's code: all commands run, so one bad
    group does not hide the others."""
    directory = group.dir or env.get("CRAWLCHAIN_REMOTE_DIR") or str(CHECKOUT)
    control = env.get("CRAWLCHAIN_REMOTE_CONTROL") or "./control.sh"
    exports = {"CRAWLCHAIN_HOST": group.host, "CRAWLCHAIN_BEAT_HOST": beat or ""}
    if env.get("CRAWLCHAIN_ENV_FILE"):  # the same path on every host
        exports["CRAWLCHAIN_ENV_FILE"] = env["CRAWLCHAIN_ENV_FILE"]
    parts = [f"cd {shlex.quote(directory)} || exit 97",
             "export " + " ".join(f"{k}={shlex.quote(v)}" for k, v in exports.items()),
             "rc=0"]
    parts += [f"{control} {shlex.join(c)} || rc=$?" for c in commands]
    return "; ".join([*parts, "exit $rc"])


def ssh_argv(template: str, host: str, script: str) -> list[str]:
    """The local command that runs ``script`` on ``host``: ``{host}`` in the template is
    replaced, otherwise the host is appended (as ssh takes it)."""
    parts = shlex.split(template)
    if any("{host}" in p for p in parts):
        return [*(p.replace("{host}", host) for p in parts), script]
    return [*parts, host, script]


# -- fan-out --------------------------------------------------------------------------
def run_host(host: str, groups: list[Group], plan: Plan, env: Mapping[str, str],
             beat: str | None) -> Result:
    """Run one host's script, bounded by ``CRAWLCHAIN_SSH_TIMEOUT``; a host with nothing
    to do is not contacted."""
    commands = host_commands(groups, plan)
    if not commands:
        return Result(host, 0, f"no {plan.component} role here", 0.0, skipped=True)
    script = remote_script(groups[0], commands, env, beat)
    argv = ssh_argv(env.get("CRAWLCHAIN_SSH") or DEFAULT_SSH, host, script)
    timeout = float(env.get("CRAWLCHAIN_SSH_TIMEOUT") or 300)
    started = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False)
        code, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired:
        code, output = 124, f"no answer within {timeout:g} s (CRAWLCHAIN_SSH_TIMEOUT)"
    except OSError as exc:
        code, output = 127, f"cannot run {argv[0]!r}: {exc}"
    result = Result(host, code, redact_text(output), time.monotonic() - started)
    result.running = {m["name"]: int(m["procs"]) for m in _STATUS.finditer(result.output)}
    return result


def fan_out(groups: list[Group], plan: Plan, env: Mapping[str, str]) -> list[Result]:
    """Every host at once (bounded pool), results in host-file order."""
    hosts = by_host(groups)
    beat = beat_host(groups)
    with ThreadPoolExecutor(max_workers=min(32, len(hosts))) as pool:
        futures = [pool.submit(run_host, h, g, plan, env, beat) for h, g in hosts.items()]
        return [f.result() for f in futures]


# -- reports --------------------------------------------------------------------------
def result_table(results: list[Result]) -> str:
    """One row per host: ok or the exit code, seconds, and what the host said."""
    rows = [("HOST", "RESULT", "SECONDS", "DETAIL")]
    for r in results:
        detail = " | ".join(line.strip() for line in r.output.splitlines() if line.strip())
        outcome = "-" if r.skipped else "ok" if r.ok else f"FAILED ({r.returncode})"
        rows.append((r.host, outcome,
                     f"{r.seconds:.1f}", detail[:160]))
    return format_rows(rows)


def status_table(results: list[Result]) -> str:
    """Which hosts have live worker groups, their processes (main and pool children), and
    what else runs there."""
    rows = [("HOST", "REACHABLE", "WORKERS", "WORKER PROCESSES", "OTHER")]
    for r in results:
        workers = {n: p for n, p in r.running.items() if n.startswith("worker-")}
        others = sorted(n for n in r.running if not n.startswith("worker-"))
        rows.append((r.host, "yes" if r.ok else f"NO ({r.returncode})", str(len(workers)),
                     str(sum(workers.values())), ",".join(others) or "-"))
    return format_rows(rows)


def format_rows(rows: Sequence[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                     for row in rows)


def beat_report(results: list[Result], beat: str | None) -> tuple[bool, str]:
    """Whether beat runs where the file says and nowhere else, and a line saying so."""
    running = [r.host for r in results if "beat" in r.running]
    strays = [h for h in running if h != beat]
    if strays:
        return False, f"beat: running on {', '.join(strays)}, not the beat host ({beat})"
    return True, f"beat: {'running on ' + running[0] if running else 'not running'}"


# -- the command ----------------------------------------------------------------------
def run(groups: list[Group], plan: Plan, env: Mapping[str, str],
        say: Callable[[str], None]) -> int:
    """One verb across the cluster; exit code 1 when any host failed."""
    beat = beat_host(groups)
    if plan.component == "beat" and plan.verb in ("start", "restart"):
        refusal = refuse_beat(groups, beat, env)
        if refusal:
            say(refusal)
            return 1
    results = fan_out(groups, plan, env)
    if plan.verb == "status":
        healthy, line = beat_report(results, beat)
        say(status_table(results) + "\n" + line)
        return 0 if healthy and all(r.ok for r in results) else 1
    say(result_table(results))
    return 0 if all(r.ok for r in results) else 1


def refuse_beat(groups: list[Group], beat: str | None, env: Mapping[str, str]) -> str | None:
    """Why beat must not start: no beat host in the file, or a beat already running on
    another host (the file changed since it was started)."""
    if beat is None:
        return "start beat: refused: no line of the host file has roles=...,beat"
    healthy, line = beat_report(fan_out(groups, Plan("status"), env), beat)
    return None if healthy else f"start beat: refused: {line}; stop it there first"


USAGE = ("usage: ./control.sh --hosts FILE start|stop|restart|status "
         "[worker|beat|flower|exporter] [--queues Q] [--concurrency N]")


def parse_args(argv: list[str]) -> tuple[Path, Plan]:
    """``FILE VERB [COMPONENT] [--queues Q] [--concurrency N]``, options anywhere."""
    if len(argv) < 2 or argv[1] not in VERBS:
        raise HostFileError(USAGE)
    options: dict[str, str] = {}
    positional: list[str] = []
    rest = argv[2:]
    while rest:
        if rest[0] in ("--queues", "--concurrency") and len(rest) >= 2:
            options[rest[0]], rest = rest[1], rest[2:]
        else:
            positional.append(rest.pop(0))
    if len(positional) > 1 or positional[:1] not in ([], *([r] for r in ROLES)):
        raise HostFileError(f"--hosts: unexpected {' '.join(argv[2:])!r}; components are "
                            f"{', '.join(ROLES)} (redis and the sandbox are not per host)")
    concurrency = options.get("--concurrency", "")
    if concurrency and not concurrency.isdigit():
        raise HostFileError("--concurrency must be a positive integer")
    return Path(argv[0]), Plan(argv[1], positional[0] if positional else None,
                               options.get("--queues"), int(concurrency or 0) or None)


def main(argv: list[str]) -> int:
    def say(text: str) -> None:
        print(text, flush=True)

    try:
        path, plan = parse_args(argv)
        groups = parse(path.read_text(), str(path))
    except (HostFileError, OSError) as exc:
        print(f"control.sh: {exc}", file=sys.stderr)
        return 2
    return run(groups, plan, os.environ, say)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
