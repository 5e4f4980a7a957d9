"""The host file and the fan-out: what each host is told to run, in parallel, reported per
host. The remote shell here is a local ``sh -c``; ``tests/test_control_hosts.py`` runs the
real ``control.sh`` through it, and in network namespaces."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ops.hosts import (
    HostFileError,
    Plan,
    fan_out,
    host_commands,
    parse,
    parse_args,
    remote_script,
    result_table,
    run,
    ssh_argv,
)

HOSTS = """\
# two sites shared over three hosts
crawl-1  roles=worker,beat  queues=demo,crawlchain  concurrency=8
crawl-2  queues=demo  concurrency=4   # trailing comment
crawl-2  name=props  queues=properties  concurrency=2
ops      roles=flower,exporter
"""

LOCAL = {"CRAWLCHAIN_SSH": "env FAKE_HOST={host} sh -c", "CRAWLCHAIN_REMOTE_CONTROL": "echo",
         "CRAWLCHAIN_REMOTE_DIR": "/"}


def test_each_line_is_a_worker_group_with_its_queues_and_concurrency() -> None:
    groups = parse(HOSTS)
    assert [(g.host, g.name, g.queues, g.concurrency) for g in groups] == [
        ("crawl-1", "default", "demo,crawlchain", 8), ("crawl-2", "default", "demo", 4),
        ("crawl-2", "props", "properties", 2), ("ops", "default", None, None)]
    assert groups[0].roles == {"worker", "beat"} and groups[3].roles == {"flower", "exporter"}


@pytest.mark.parametrize(("text", "error"), [
    ("a roles=beat\nb roles=worker,beat\n", "beat is marked on lines 1, 2"),
    ("a queues=demo\na queues=properties\n", "hosts:2: a already has a worker group"),
    ("a concurrency=0\n", "hosts:1: concurrency must be a positive integer"),
    ("a roles=worker,sandbox\n", "roles must be among"),
    ("a speed=fast\n", "unknown key 'speed'"),
    ("-oProxyCommand=evil\n", "is not a host name"),
    ("a queues=demo;rm\n", "bad queues"),
    ("a dir=relative/path\n", "bad dir"),
    ("# only comments\n\n", "no hosts"),
])
def test_a_bad_host_file_is_refused_naming_the_line(text: str, error: str) -> None:
    with pytest.raises(HostFileError, match=error):
        parse(text)


def test_start_gives_every_line_its_own_roles_and_worker_options() -> None:
    groups = parse(HOSTS)
    crawl2 = [g for g in groups if g.host == "crawl-2"]
    assert host_commands(crawl2, Plan("start")) == [
        ["start", "worker", "--name", "default", "--queues", "demo", "--concurrency", "4"],
        ["start", "worker", "--name", "props", "--queues", "properties", "--concurrency", "2"]]
    assert host_commands(groups[:1], Plan("stop")) == [
        ["stop", "worker", "--name", "default"], ["stop", "beat"]]
    assert host_commands(groups[3:], Plan("start", "worker")) == []


def test_command_line_options_fill_in_what_a_line_leaves_out() -> None:
    [group] = parse("a\n")
    assert host_commands([group], Plan("restart", "worker", "demo", 3)) == [
        ["restart", "worker", "--name", "default", "--queues", "demo", "--concurrency", "3"]]


def test_the_remote_script_names_the_host_and_the_beat_host_and_keeps_going() -> None:
    [group] = parse("crawl-2 dir=/srv/crawl\n")
    script = remote_script(group, [["stop", "worker"], ["stop", "beat"]],
                           {"CRAWLCHAIN_ENV_FILE": "/etc/crawl chain.env"}, "crawl-1")
    assert script == (
        "cd /srv/crawl || exit 97; export CRAWLCHAIN_HOST=crawl-2 CRAWLCHAIN_BEAT_HOST=crawl-1"
        " CRAWLCHAIN_ENV_FILE='/etc/crawl chain.env'; rc=0; ./control.sh stop worker || rc=$?;"
        " ./control.sh stop beat || rc=$?; exit $rc")


def test_the_ssh_template_gets_the_host_appended_or_substituted() -> None:
    assert ssh_argv("ssh -o BatchMode=yes", "h1", "true") == [
        "ssh", "-o", "BatchMode=yes", "h1", "true"]
    assert ssh_argv("ip netns exec {host} sh -c", "h1", "true") == [
        "ip", "netns", "exec", "h1", "sh", "-c", "true"]


def test_hosts_run_in_parallel_and_each_reports_its_own_outcome() -> None:
    groups = parse("good-1\ngood-2\nbad\n")
    env = {**LOCAL, "CRAWLCHAIN_SSH": "env FAKE_HOST={host} sh -c 'sleep 1; "
           "[ $FAKE_HOST != bad ] || { echo down >&2; exit 255; }; eval \"$0\"'"}
    started = time.monotonic()
    results = fan_out(groups, Plan("start", "worker"), env)
    assert time.monotonic() - started < 2.5  # three hosts of 1 s each, at once
    assert [(r.host, r.returncode) for r in results] == [("good-1", 0), ("good-2", 0),
                                                         ("bad", 255)]
    assert results[0].output.strip() == "start worker --name default"
    table = result_table(results).splitlines()
    assert table[0].split() == ["HOST", "RESULT", "SECONDS", "DETAIL"]
    assert table[3].startswith("bad") and "FAILED (255)" in table[3] and "down" in table[3]


def test_remote_output_is_redacted_before_it_is_shown() -> None:
    groups = parse("h\n")
    env = {**LOCAL, "CRAWLCHAIN_REMOTE_CONTROL": "echo amqp://crawl:hunter2@rabbit// "}
    [result] = fan_out(groups, Plan("status"), env)
    assert "hunter2" not in result.output and "amqp://crawl:***@rabbit//" in result.output


def test_a_host_that_does_not_answer_is_cut_off_at_the_timeout() -> None:
    env = {**LOCAL, "CRAWLCHAIN_SSH": "sh -c 'sleep 30' {host}", "CRAWLCHAIN_SSH_TIMEOUT": "1"}
    started = time.monotonic()
    [result] = fan_out(parse("slow\n"), Plan("status"), env)
    assert time.monotonic() - started < 5
    assert result.returncode == 124 and "CRAWLCHAIN_SSH_TIMEOUT" in result.output


def test_status_counts_worker_processes_per_host_and_flags_a_stray_beat() -> None:
    lines = {"a": "worker-default   running  pid 10  procs 3\\nbeat  running  pid 11  procs 1",
             "b": "worker-default   running  pid 20  procs 5\\nbeat  running  pid 21  procs 1"}
    env = {**LOCAL, "CRAWLCHAIN_SSH": "env FAKE_HOST={host} sh -c",
           "CRAWLCHAIN_REMOTE_CONTROL":
           f"[ $FAKE_HOST = a ] && printf '{lines['a']}\\n' || printf '{lines['b']}\\n'; true"}
    said: list[str] = []
    code = run(parse("a roles=worker,beat\nb\n"), Plan("status"), env, said.append)
    table = said[0].splitlines()
    assert table[1].split() == ["a", "yes", "1", "3", "beat"]
    assert table[2].split() == ["b", "yes", "1", "5", "beat"]
    assert table[3] == "beat: running on b, not the beat host (a)" and code == 1


def test_start_beat_is_refused_when_no_line_marks_a_beat_host() -> None:
    said: list[str] = []
    assert run(parse("a\nb\n"), Plan("start", "beat"), LOCAL, said.append) == 1
    assert "no line of the host file has roles=...,beat" in said[0]


@pytest.mark.parametrize(("argv", "plan"), [
    (["h", "start"], Plan("start")),
    (["h", "start", "worker", "--concurrency", "4"], Plan("start", "worker", None, 4)),
    (["h", "restart", "--queues", "demo", "worker"], Plan("restart", "worker", "demo")),
])
def test_arguments_after_the_verb_in_any_order(argv: list[str], plan: Plan) -> None:
    assert parse_args(argv) == (Path("h"), plan)


@pytest.mark.parametrize("argv", [["h"], ["h", "launch"], ["h", "start", "redis"],
                                  ["h", "stop", "worker", "beat"],
                                  ["h", "start", "--concurrency", "many"]])
def test_bad_arguments_are_refused(argv: list[str]) -> None:
    with pytest.raises(HostFileError):
        parse_args(argv)
