"""``control.sh --hosts``: the verbs on every host of a host file, through a configurable
remote shell. Here the "hosts" are directories on this machine (``sh -c``) or network
namespaces with their own addresses (``ip netns exec``), and a host cut off mid-job loses
nothing: its in-flight units are delivered again to the others."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from chains.demo import demo as declared_demo
from chains.runtime.context import Runtime
from chains.runtime.job import Job
from chains.runtime.launch import launch
from ops import embedded_redis
from sandbox.cluster import FAST_FAILURE_ENV, runtime_for
from sandbox.netns import Lab, leftovers, unavailable
from sandbox.server import Faults, SandboxServer, Site
from sandbox.world import Shape, World, expected_keys
from tests.chains.recrawl_support import without_recrawl

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
SECRET = "hunter2-cluster"
demo = without_recrawl(declared_demo)
# The harness's settings, and the demo site's providers off: the sandbox served here has
# no defences, as in sandbox.cluster.Cluster without ``defences``.
UNDEFENDED = {**FAST_FAILURE_ENV, "RESOURCES_DISABLED_SITES": '["demo"]'}


# -- helpers ----------------------------------------------------------------------------
def clean_env() -> dict[str, str]:
    """This process's environment without any crawlchain setting: each host's come from
    the env file only, as on a real host."""
    return {k: v for k, v in os.environ.items() if not k.startswith(
        ("CELERY_", "STATE_", "STORAGE_", "DEMO_", "TASK_", "POLITE_", "FETCH_", "CRAWLCHAIN_"))}


def write_env_file(path: Path, values: dict[str, str], mode: int = 0o600) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    path.chmod(mode)
    return path


def control(env: dict[str, str], *args: str,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROOT / "control.sh"), *args], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=timeout, check=False)


def status_rows(output: str) -> dict[str, list[str]]:
    """``status`` table rows by host: REACHABLE, WORKERS, WORKER PROCESSES, OTHER."""
    rows = [line.split() for line in output.splitlines()[1:] if not line.startswith("beat:")]
    return {row[0]: row[1:] for row in rows}


def processes_under(home: Path) -> list[psutil.Process]:
    """Live processes whose CRAWLCHAIN_HOME is inside ``home``."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("CRAWLCHAIN_HOME", "").startswith(str(home)):
                found.append(proc)
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return found


def free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


def serve(world: World, address: str, faults: Faults | None = None) -> SandboxServer:
    server = SandboxServer(Site(world, faults), host=address)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def assert_job_matches(status: dict[str, object], world: World) -> None:
    assert status["state"] == "finished", status
    steps = status["steps"]
    assert isinstance(steps, dict)
    for step, want in world.expected().items():
        got = steps[step]
        assert (got["done"], got["items"], got["failed"]) == (want["units"], want["items"],
                                                              0), (step, status["failures"])


# -- hosts that are directories, reached by sh -c ------------------------------------------
@pytest.fixture
def two_hosts(tmp_path: Path) -> Iterator[tuple[dict[str, str], Path, World]]:
    """A shared embedded Redis and sandbox, an env file naming them, a host file of two
    hosts (``alpha`` runs beat), and the remote shell ``sh -c`` with a home per host."""
    redis = embedded_redis.start(tmp_path / "redis", tmp_path / "redis.sock")
    world = World(seed=3)
    sandbox = serve(world, "127.0.0.1")
    env_file = write_env_file(tmp_path / "crawlchain.env", {
        "CELERY_BROKER_URL": f"redis+socket://{tmp_path / 'redis.sock'}",
        "STATE_REDIS_URL": f"unix://{tmp_path / 'redis.sock'}",
        "STORAGE_URL": f"sqlite:///{tmp_path / 'items.db'}",
        "DEMO_BASE_URL": sandbox.base_url, "CHAIN_SCHEDULES": "[]", **UNDEFENDED})
    (tmp_path / "hosts.txt").write_text(
        "alpha roles=worker,beat queues=demo,crawlchain concurrency=2\n"
        "bravo queues=demo concurrency=1\nbravo name=second queues=demo concurrency=1\n")
    env = {**clean_env(), "CRAWLCHAIN_ENV_FILE": str(env_file),
           "CRAWLCHAIN_SSH": f"env CRAWLCHAIN_HOME={tmp_path}/{{host}} sh -c"}
    try:
        yield env, tmp_path, world
    finally:
        control(env, "--hosts", str(tmp_path / "hosts.txt"), "stop")
        sandbox.shutdown()
        sandbox.server_close()
        redis.terminate()
        redis.wait(timeout=10)


def test_start_status_stop_across_hosts_runs_a_job_and_leaves_nothing_behind(
        two_hosts: tuple[dict[str, str], Path, World]) -> None:
    env, home, world = two_hosts
    hosts = str(home / "hosts.txt")
    started = control(env, "--hosts", hosts, "start")
    assert started.returncode == 0, started.stdout + started.stderr
    assert re.search(r"^alpha\s+ok .*worker-default: started.*beat: started", started.stdout,
                     re.M)
    assert re.search(r"^bravo\s+ok .*worker-default: started.*worker-second: started",
                     started.stdout, re.M)
    rows = wait_for_status(env, hosts, lambda r: int(r["alpha"][2]) >= 3
                           and int(r["bravo"][2]) >= 4)
    assert rows["alpha"][:2] == ["yes", "1"] and rows["alpha"][3] == "beat"
    assert rows["bravo"][:2] == ["yes", "2"] and rows["bravo"][3] == "-"
    resources = runtime_for(env)  # the launcher reads the same env file (config.py)
    try:
        job = launch(demo, {"page": 1}, runtime=resources)
        assert_job_matches(job.wait(timeout=120), world)
    finally:
        resources.store.close()
    stopped = control(env, "--hosts", hosts, "stop")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    after = control(env, "--hosts", hosts, "status")
    assert {h: r[:3] for h, r in status_rows(after.stdout).items()} == {
        "alpha": ["yes", "0", "0"], "bravo": ["yes", "0", "0"]}
    assert processes_under(home) == [] and not list(home.glob("*/run/*.pid"))


def wait_for_status(env: dict[str, str], hosts: str,
                    ready: Callable[[dict[str, list[str]]], bool],
                    timeout: float = 60) -> dict[str, list[str]]:
    """Poll ``status`` until ``ready(rows)`` (pool children fork after the main process)."""
    deadline = time.monotonic() + timeout
    while True:
        done = control(env, "--hosts", hosts, "status")
        rows = status_rows(done.stdout)
        if done.returncode == 0 and ready(rows):
            return rows
        if time.monotonic() > deadline:
            raise TimeoutError(f"status never got ready:\n{done.stdout}{done.stderr}")
        time.sleep(0.5)


def test_beat_elsewhere_than_the_beat_host_is_refused(
        two_hosts: tuple[dict[str, str], Path, World]) -> None:
    env, home, _ = two_hosts
    local = {**env, "CRAWLCHAIN_HOME": str(home / "bravo"), "CRAWLCHAIN_HOST": "bravo",
             "CRAWLCHAIN_BEAT_HOST": "alpha"}
    refused = control(local, "start", "beat")
    assert refused.returncode != 0
    assert "refused on 'bravo'" in refused.stderr and "runs on 'alpha'" in refused.stderr
    assert not (home / "bravo" / "run" / "beat.pid").exists()
    by_hand = {**env, "CRAWLCHAIN_HOME": str(home / "bravo")}  # no word of the beat host
    try:
        assert control(by_hand, "start", "beat").returncode == 0
        again = control(env, "--hosts", str(home / "hosts.txt"), "start", "beat")
        assert again.returncode == 1
        assert "refused: beat: running on bravo, not the beat host (alpha)" in again.stdout
        assert not (home / "alpha" / "run" / "beat.pid").exists()
    finally:
        control(by_hand, "stop", "beat")


def test_an_env_file_others_can_read_stops_control_sh_naming_the_fix(
        two_hosts: tuple[dict[str, str], Path, World]) -> None:
    env, home, _ = two_hosts
    loose = write_env_file(home / "loose.env", {"STATE_REDIS_URL": f"redis://:{SECRET}@h/0"},
                           0o644)
    for args in (["status"], ["--hosts", str(home / "hosts.txt"), "status"]):
        done = control({**env, "CRAWLCHAIN_ENV_FILE": str(loose)}, *args)
        assert done.returncode == 2, args
        assert f"{loose} has mode 0644" in done.stderr and f"chmod 600 {loose}" in done.stderr
        assert SECRET not in done.stdout + done.stderr


def test_a_host_that_cannot_be_reached_fails_its_row_and_the_command(tmp_path: Path) -> None:
    (tmp_path / "hosts.txt").write_text("here\nnowhere\n")
    env = {**clean_env(), "CRAWLCHAIN_ENV_FILE": "",
           "CRAWLCHAIN_SSH": f"env CRAWLCHAIN_HOME={tmp_path}/{{host}} "
           "sh -c '[ \"${CRAWLCHAIN_HOME##*/}\" = here ] || exit 255; eval \"$0\"'"}
    done = control(env, "--hosts", str(tmp_path / "hosts.txt"), "status")
    rows = status_rows(done.stdout)
    assert done.returncode == 1
    assert rows["here"][:3] == ["yes", "0", "0"] and rows["nowhere"][0] == "NO"


# -- hosts that are network namespaces -----------------------------------------------------
@pytest.fixture
def lab() -> Iterator[Lab]:
    """Three namespaces on a bridge, removed with everything in them afterwards."""
    reason = unavailable()
    if reason:
        pytest.skip(f"cannot build network namespaces here: {reason}")
    built = Lab()
    try:
        yield built.create(3)
    finally:
        built.destroy()
        assert leftovers(built.tag) == []


LOST_HOST_WORLD = World(seed=11, shape=Shape(users=40, articles=200, reposts=60))


@pytest.mark.slow
def test_a_host_cut_off_mid_job_loses_nothing_its_units_finish_on_the_others(
        lab: Lab, tmp_path: Path) -> None:
    world = LOST_HOST_WORLD
    port = free_port(lab.gateway)
    redis = embedded_redis.start(tmp_path / "redis", tmp_path / "redis.sock",
                                 tcp=(lab.gateway, port), password=SECRET)
    sandbox = serve(world, lab.gateway, Faults(latency_s=0.05))
    env_file = write_env_file(tmp_path / "crawlchain.env", {
        "CELERY_BROKER_URL": f"redis://:{SECRET}@{lab.gateway}:{port}/0",
        "STATE_REDIS_URL": f"redis://:{SECRET}@{lab.gateway}:{port}/0",
        "STORAGE_URL": f"sqlite:///{tmp_path / 'items.db'}",
        "DEMO_BASE_URL": sandbox.base_url, **UNDEFENDED,
        "FETCH_DEADLINE_S": "3", "POLITE_LEASE_TTL_S": "5"})  # a cut host's slots come back soon
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("".join(f"{h} queues=demo concurrency=2\n" for h in lab.hosts))
    env = {**clean_env(), "CRAWLCHAIN_ENV_FILE": str(env_file),
           "CRAWLCHAIN_SSH": f"ip netns exec {{host}} env CRAWLCHAIN_HOME={tmp_path}/{{host}}"
           " sh -c"}
    resources = runtime_for(env)
    try:
        run_and_cut(lab, env, str(hosts), resources, world, tmp_path)
    finally:
        try:  # the servers stop even when stopping the workers fails or times out
            resources.store.close()
            control(env, "--hosts", str(hosts), "stop", "worker", timeout=150)
        finally:
            sandbox.shutdown()
            sandbox.server_close()
            redis.terminate()
            redis.wait(timeout=10)


def run_and_cut(lab: Lab, env: dict[str, str], hosts: str, resources: Runtime,
                world: World, home: Path) -> None:
    """Start workers on every namespace, launch, cut the first host's link while it holds
    units, and check the job ends exactly, with those units done by the other hosts."""
    started = control(env, "--hosts", hosts, "start", "worker")
    assert started.returncode == 0, started.stdout + started.stderr
    rows = wait_for_status(env, hosts, lambda r: all(int(r[h][2]) >= 3 for h in lab.hosts))
    assert all(rows[h][:2] == ["yes", "1"] for h in lab.hosts)
    victim, survivors = lab.hosts[0], lab.hosts[1:]
    job = launch(demo, {"page": 1}, runtime=resources)
    in_flight = wait_until_holding(home / victim, job, timeout=60)
    lab.cut(victim)
    cut_at = time.monotonic()
    status = job.wait(timeout=120)
    assert_job_matches(status, world)
    stored = {c: sorted(r["key"] for r in resources.store.read(c)) for c in expected_keys(world)}
    assert stored == {c: sorted(keys) for c, keys in expected_keys(world).items()}
    finished_elsewhere = set().union(*(task_events(home / h)[1] for h in survivors))
    assert in_flight <= finished_elsewhere, in_flight - finished_elsewhere
    assert in_flight.isdisjoint(task_events(home / victim)[1])  # the victim never finished
    assert time.monotonic() - cut_at < 90
    after = status_rows(control(env, "--hosts", hosts, "status").stdout)
    assert after[victim][:2] == ["yes", "1"]  # cut off, not dead: its worker still runs
    lab.kill_all(victim)  # and now the host is gone for good


_EVENT = re.compile(r"Task \S+\[(?P<id>[0-9a-f-]{36})\] (?P<what>\w+)")


def task_events(home: Path) -> tuple[set[str], set[str]]:
    """Task ids a host's worker received, and those it finished (succeeded, retried,
    failed), from its log."""
    received: set[str] = set()
    finished: set[str] = set()
    log = home / "logs" / "worker-default.log"
    for match in _EVENT.finditer(log.read_text() if log.exists() else ""):
        (received if match["what"] == "received" else finished).add(match["id"])
    return received, finished


def wait_until_holding(home: Path, job: Job, timeout: float) -> set[str]:
    """Once a fifth of the job is done, the ids the host has received and not finished."""
    deadline = time.monotonic() + timeout
    total = sum(s["units"] for s in LOST_HOST_WORLD.expected().values())
    while time.monotonic() < deadline:
        received, finished = task_events(home)
        done = job.status()["totals"]["done"]
        if done >= total // 5 and received - finished:
            return received - finished
        time.sleep(0.05)
    raise TimeoutError(f"{home.name} never held a unit with a fifth of the job done")
