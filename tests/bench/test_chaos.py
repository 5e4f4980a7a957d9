"""The chaos run: its nemesis plans the same faults for the same seed, often enough and of
every kind; a run under it loses and doubles nothing (the slow suite: ten minutes of
faults over a crawl of more than 50,000 units); an interrupted run leaves no namespace,
mount or process behind."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from itertools import pairwise
from pathlib import Path

import pytest

from bench.chaos_nemesis import GAP_S, KINDS, plan
from sandbox.cluster import ROOT
from sandbox.netns import unavailable


def test_the_same_seed_plans_the_same_faults_and_another_seed_others() -> None:
    first = [f.as_dict() for f in plan(7, minutes=30, workers=4)]
    assert first == [f.as_dict() for f in plan(7, minutes=30, workers=4)]
    assert first != [f.as_dict() for f in plan(8, minutes=30, workers=4)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_half_an_hour_plans_sixty_faults_or_more_of_every_kind_10_to_30_s_apart(
        seed: int) -> None:
    faults = plan(seed, minutes=30, workers=4)
    assert len(faults) >= 60 and {f.kind for f in faults} == set(KINDS)
    gaps = [b.at_s - a.at_s for a, b in pairwise(faults)]
    assert all(GAP_S[0] <= gap <= GAP_S[1] for gap in gaps)
    assert all(f.victim == 3 for f in faults if f.kind == "partition")  # the namespaced one


def leftovers(tag: str, workdir: str) -> list[str]:
    """Mounts, namespaces, links and processes a run (its namespace tag, its directory)
    made and left."""
    found = [line for line in Path("/proc/mounts").read_text().splitlines()
             if workdir in line]
    found += [line for cmd in (["ip", "netns", "list"], ["ip", "-o", "link"])
              for line in subprocess.run(cmd, capture_output=True, text=True,
                                         check=False).stdout.splitlines() if tag in line]
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and any(workdir.encode() in Path(f"/proc/{pid}/{part}").read_bytes()
                                     for part in ("cmdline", "environ")):
                found.append(f"process {pid}")
        except OSError:
            continue
    return found


def chaos(*args: str) -> tuple[subprocess.Popen[str], str, str]:
    """The run, its namespaces' tag and its directory (from its first line)."""
    proc = subprocess.Popen([sys.executable, "-m", "bench.chaos", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    first = proc.stderr.readline()
    found = re.search(r"namespaces (cc\w+)\*, (/tmp/chaos-\S+)$", first.strip())
    assert found, first
    return proc, found.group(1), found.group(2)


@pytest.fixture
def lab_allowed() -> None:
    why = unavailable()
    if why is not None:
        pytest.skip(f"the chaos run cannot run here: {why}")


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.timeout(300)
@pytest.mark.usefixtures("lab_allowed")
def test_an_interrupted_run_leaves_no_namespace_mount_or_process() -> None:
    proc, tag, workdir = chaos("--minutes", "5", "--seed", "3", "--units", "2000")
    assert proc.stderr is not None
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:  # interrupted while it crawls, faults under way
        line = proc.stderr.readline()
        if not line or ("faults so far" in line and not line.endswith(" 0 faults so far\n")):
            break
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert leftovers(tag, workdir) == []
    shutil.rmtree(workdir)  # its logs, kept for a user who interrupts a run


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.timeout(2400)
@pytest.mark.usefixtures("lab_allowed")
def test_ten_minutes_of_chaos_lose_double_and_leak_nothing() -> None:
    proc, tag, workdir = chaos("--minutes", "10", "--seed", "12", "--json")  # all 11 kinds
    out, err = proc.communicate(timeout=2300)
    summary = json.loads(out.splitlines()[-1])
    assert (summary["lost"], summary["duplicate_items"], summary["unaccounted"],
            summary["leaks"]) == (0, 0, 0, 0), out[-3000:]
    assert summary["units"] >= 50_000 and summary["faults"] >= 20 and summary["kinds"] >= 8
    assert proc.returncode == 0, out[-3000:] + err[-3000:]
    assert leftovers(tag, workdir) == []
