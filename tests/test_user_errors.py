"""Every mistake a user makes is named at once: one line on stderr that says which input
was wrong and how to fix it, no traceback, exit code 2 for a bad command line or
configuration (1 for a page that could not be fetched), an answer within 10 s.

The command line is ``cli.main`` as ``crawlchain`` runs it (argparse, the verbs, their
error handling), in this process; the mistakes that need a process of their own (a
typo in a site's module, the default 5 s wait for a Redis that is not there) run as
``python -m cli`` in a copy of the checkout. The Python API raises one exception with
the same message. No worker runs: the mistakes that need the cluster's state use the
session's redis-server and the workers' roster in it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from chains.broker import session
from chains.runtime.roster import Roster
from cli import main
from config import get_settings
from exceptions import UserError

ROOT = Path(__file__).resolve().parent.parent
ANSWER_S = 10  # every mistake is answered within this (pytest-timeout fails a test past it)


@dataclass(frozen=True)
class Said:
    code: int
    out: str
    err: str


def refused(said: Said, *names: str, code: int = 2) -> str:
    """The one line on stderr, after checking it names every one of ``names``."""
    assert said.code == code, said
    assert "Traceback" not in said.err + said.out, said.err
    lines = said.err.splitlines()
    assert len(lines) == 1 and lines[0].strip(), said.err
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


@pytest.fixture(autouse=True)
def fresh_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each mistake reads the environment it sets, in a process that has not built its
    runtime yet (as a new ``crawlchain`` process)."""
    monkeypatch.setenv("STATE_COMMAND_WAIT_S", "1")
    monkeypatch.setenv("STATE_REDIS_URL", "unix:///nonexistent/redis.sock")
    get_settings.cache_clear()
    session.reset()
    yield
    get_settings.cache_clear()
    session.reset()


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Said:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's own exit, as the process would take it
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return Said(code, captured.out, captured.err)


@pytest.fixture
def cluster_state(redis_socket: Path, redis_client: redis.Redis, tmp_path: Path,
                  monkeypatch: pytest.MonkeyPatch) -> redis.Redis:
    """A reachable state Redis and broker (this test's database of the session's server),
    items in SQLite; no worker consumes anything."""
    db = redis_client.connection_pool.connection_kwargs["db"]
    monkeypatch.setenv("STATE_REDIS_URL", f"unix://{redis_socket}?db={db}")
    monkeypatch.setenv("CELERY_BROKER_URL", f"redis+socket://{redis_socket}?virtual_host={db}")
    monkeypatch.setenv("STORAGE_URL", f"sqlite:///{tmp_path / 'items.db'}")
    return redis_client


# -- launch: names, params, settings, URLs ---------------------------------------------
LAUNCH_MISTAKES = [
    (["launch", "froum"], ["no chain named 'froum'", "did you mean 'forum'", "known:"]),
    (["launch", "demo", "pag=1"], ["'pag' is not a param of demo.h5.feed",
                                   "did you mean 'page'", "params: page"]),
    (["launch", "demo", "page=abc"], ["page: Input should be a valid integer",
                                      "got 'abc'", "page=VALUE"]),
    (["launch", "demo", "--set", "bse_url=http://127.0.0.1:1"],
     ["--set bse_url", "did you mean 'base_url'", "settings: base_url"]),
    (["launch", "demo", "--set", "http_cache=maybe"], ["setting http_cache='maybe'",
                                                       "valid boolean", "DEMO_HTTP_CACHE"]),
    (["launch", "demo", "page2"], ["bad param 'page2'", "expected key=value"]),
    (["launch", "demo", "tags=[a,b"], ["tags=[a,b: not valid JSON", "quote it whole"]),
    (["launch", "demo", "--timeout", "abc"], ["--timeout: invalid float value: 'abc'",
                                              "crawlchain launch --help"]),
    (["launch", "forum", "base_url=127.0.0.1:9/forum"],
     ["the boards step would fetch '127.0.0.1:9/forum/'", "absolute http(s) URL"]),
    (["launch", "demo", "--start", "http://x.test/"], ["--start: options of the generic crawl"]),
    (["launch", "crawl"], ["a crawl needs at least one --start URL"]),
    (["launch", "crawl", "page=1"], ["not key=value pairs"]),
    (["launch", "crawl", "--start", "example.com/docs"],
     ["--start 'example.com/docs'", "give an absolute http(s) URL"]),
    (["launch", "crawl", "--start", "http://docs.test/", "--allow-domain", "example.org"],
     ["--start http://docs.test/ is outside --allow-domain example.org",
      "--allow-domain docs.test"]),
    (["launch", "crawl", "--start", "http://docs.test/", "--deny", "("],
     ["--deny '(' is not a regular expression"]),
    (["launch", "crawl", "--start", "http://docs.test/", "--allow-domain", "co.uk"],
     ["'co.uk' is a public suffix", "the site's own domain"]),
    (["launch", "crawl", "--start", "http://docs.test/", "--rule", "/api/"],
     ["--rule '/api/'", "REGEX=site.platform.step"]),
    (["lanch", "demo"], ["invalid choice: 'lanch'"]),
]


@pytest.mark.timeout(ANSWER_S)
@pytest.mark.parametrize(("argv", "names"), LAUNCH_MISTAKES,
                         ids=[" ".join(argv) for argv, _ in LAUNCH_MISTAKES])
def test_a_launch_mistake_is_refused_before_anything_connects(
        argv: list[str], names: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """The state Redis here does not exist: each mistake is named before it is needed."""
    refused(cli(capsys, *argv), *names)


# -- launch: the cluster ------------------------------------------------------------------
@pytest.mark.timeout(ANSWER_S)
def test_a_launch_with_redis_not_running_says_so_within_its_wait(
        capsys: pytest.CaptureFixture[str]) -> None:
    line = refused(cli(capsys, "launch", "demo"), "the state Redis at unix:///nonexistent/",
                   "does not answer after 1 s", "./control.sh start", "STATE_REDIS_URL")
    assert line.startswith("crawlchain launch: ")


@pytest.mark.timeout(ANSWER_S)
def test_a_launch_no_live_worker_would_run_is_refused_with_the_command_that_starts_one(
        cluster_state: redis.Redis, capsys: pytest.CaptureFixture[str]) -> None:
    refused(cli(capsys, "launch", "demo"), "no live worker consumes queue 'demo'",
            "./control.sh start worker", "--detach")
    assert not cluster_state.keys("cc:job:*"), "nothing may be queued"


@pytest.mark.timeout(ANSWER_S)
def test_a_launch_whose_site_the_live_worker_does_not_know_says_restart_it(
        cluster_state: redis.Redis, capsys: pytest.CaptureFixture[str]) -> None:
    """A worker started before ``new-site`` consumes the other sites' queues only."""
    Roster(cluster_state).beat("w1@host", ["crawl", "crawlchain", "forum"], os.getpid())
    refused(cli(capsys, "launch", "demo"), "w1@host", "do not consume queue 'demo'",
            "./control.sh restart worker")


@pytest.mark.timeout(ANSWER_S)
def test_a_detached_launch_without_a_worker_goes_ahead_and_warns(
        cluster_state: redis.Redis, capsys: pytest.CaptureFixture[str]) -> None:
    said = cli(capsys, "launch", "demo", "--detach")
    assert said.code == 0 and "launched job" in said.out
    assert "no live worker consumes queue 'demo'" in said.err and "Traceback" not in said.err


@pytest.mark.timeout(ANSWER_S)
@pytest.mark.parametrize("verb", ["wait", "cancel", "pause", "resume", "retry"])
def test_a_verb_on_an_unknown_job_names_it_and_where_jobs_are_listed(
        verb: str, cluster_state: redis.Redis, capsys: pytest.CaptureFixture[str]) -> None:
    refused(cli(capsys, verb, "0f3c9a00deadbeef"), "job 0f3c9a00deadbeef is unknown",
            "crawlchain jobs")


# -- configuration ---------------------------------------------------------------------
@pytest.mark.timeout(ANSWER_S)
@pytest.mark.parametrize(("variable", "value", "names"), [
    ("TASK_MAX_RETRIES", "abc", ["TASK_MAX_RETRIES='abc'", "valid integer", "env file"]),
    ("LAUNCH_WORKERS", "always", ["LAUNCH_WORKERS='always'", "'require', 'warn' or 'off'"]),
    ("CRAWLCHAIN_ENV_FILE", "/nonexistent/crawlchain.env",
     ["CRAWLCHAIN_ENV_FILE=/nonexistent/crawlchain.env does not exist", "unset"]),
    ("LOG_LEVEL", "LOUD", ["LOG_LEVEL='LOUD'", "DEBUG, INFO"]),
])
def test_a_bad_setting_in_the_environment_names_the_variable(
        variable: str, value: str, names: list[str], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(variable, value)
    refused(cli(capsys, "launch", "demo"), *names)


@pytest.mark.timeout(ANSWER_S)
def test_an_env_file_others_can_read_is_refused_with_the_chmod_that_fixes_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    env = tmp_path / "crawlchain.env"
    env.write_text("STATE_REDIS_URL=unix:///nonexistent\n")
    env.chmod(0o644)
    monkeypatch.setenv("CRAWLCHAIN_ENV_FILE", str(env))
    refused(cli(capsys, "launch", "demo"), "mode 0644", f"chmod 600 {env}")


# -- try, shell, new-site, monitor -------------------------------------------------------
TOOL_MISTAKES = [
    (["try", "demo.h5.fed", "http://127.0.0.1:1/"],
     ["no step named 'demo.h5.fed'", "did you mean 'demo.h5.feed'"]),
    (["try", "demo.h5.feed", "--params", "{page: 2}"],
     ["--params '{page: 2}' is not JSON", """--params '{"page": 2}'"""]),
    (["try", "demo.h5.feed", "--params", "[2]"], ["expected a JSON object"]),
    (["try", "demo.h5.user_info", "--params", '{"user_id": 7}'],
     ["user_id: Input should be a valid string", "got 7"]),
    (["try", "demo.h5.feed", "--set", "bse_url=http://127.0.0.1:1"],
     ["no setting bse_url"]),
    (["shell", "example.com/page"], ["'example.com/page' is not a URL to fetch",
                                     "http://example.com/page"]),
    (["new-site", "My-Shop"], ["'My-Shop' is not a site name", "lower case"]),
    (["new-site", "demo"], ["site 'demo' exists already"]),
    (["monitor", "--interval", "soon"], ["--interval: invalid float value: 'soon'"]),
    (["jobs", "--limit", "ten"], ["--limit: invalid int value: 'ten'"]),
]


@pytest.mark.timeout(ANSWER_S)
@pytest.mark.parametrize(("argv", "names"), TOOL_MISTAKES,
                         ids=[" ".join(argv) for argv, _ in TOOL_MISTAKES])
def test_a_tool_mistake_is_one_line_naming_it(argv: list[str], names: list[str],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    refused(cli(capsys, *argv), *names)


@pytest.mark.timeout(ANSWER_S)
def test_a_shell_on_a_site_that_is_down_says_so_in_one_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    refused(cli(capsys, "shell", "http://127.0.0.1:1/"), "http://127.0.0.1:1/ could not be "
            "fetched", "Connection refused", code=1)


# -- export ------------------------------------------------------------------------------
@pytest.fixture
def stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store holding one feed entry."""
    from external_interface.storage.sqlite import SQLiteStore
    from sites.demo.h5 import FeedEntry

    store = SQLiteStore(tmp_path / "items.db")
    store.upsert("job-1", [FeedEntry(id="a1", title="t", author_id="u1", author_name="u")])
    store.close()
    monkeypatch.setenv("STORAGE_URL", f"sqlite:///{tmp_path / 'items.db'}")
    return tmp_path


@pytest.mark.timeout(ANSWER_S)
@pytest.mark.parametrize(("argv", "names"), [
    (["export", "feed_entrys"], ["'feed_entrys' is neither a collection",
                                 "did you mean 'feed_entries'", "crawlchain jobs"]),
    (["export", "feed_entries", "--format", "xml"], ["--format: invalid choice: 'xml'"]),
    (["export", "feed_entries", "--since", "last tuesday"],
     ["--since 'last tuesday'", "ISO 8601"]),
    (["export", "feed_entries", "--storage-url", "sqlit:///x.db"],
     ["STORAGE_URL='sqlit:///x.db' cannot be used", "did you mean 'sqlite'", "sqlite:///path"]),
    (["export", "feed_entries", "--format", "parquet"], ["--format parquet writes a file",
                                                         "--out FILE"]),
], ids=["unknown collection", "format", "since", "storage url", "parquet to stdout"])
def test_an_export_mistake_is_one_line_naming_it(argv: list[str], names: list[str],
                                                 stored: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    refused(cli(capsys, *argv), *names)


@pytest.mark.timeout(ANSWER_S)
def test_an_export_into_a_pipe_that_closes_stops_quietly(stored: Path) -> None:
    """``crawlchain export ... | head -c 1``: no BrokenPipeError, nothing on stderr."""
    from external_interface.storage.sqlite import SQLiteStore
    from sites.demo.h5 import FeedEntry

    store = SQLiteStore(stored / "items.db")
    store.upsert("job-2", [FeedEntry(id=f"b{n}", title="t" * 200, author_id="u", author_name="u")
                           for n in range(2000)])
    store.close()
    done = subprocess.run(
        ["bash", "-c", f"{sys.executable} -m cli export feed_entries | head -c 1"],
        cwd=ROOT, capture_output=True, text=True, timeout=ANSWER_S, check=False,
        env={**os.environ, "STORAGE_URL": f"sqlite:///{stored / 'items.db'}"})
    assert done.stdout == "{" and done.stderr == ""


# -- the Python API: one exception, the same message -------------------------------------
@pytest.mark.timeout(ANSWER_S)
def test_the_python_api_raises_the_command_lines_message(
        capsys: pytest.CaptureFixture[str]) -> None:
    from chains.cluster import launch
    from chains.demo import demo
    from chains.runtime.preflight import LaunchRefused

    with pytest.raises(LaunchRefused) as raised:
        launch(demo, pag=1)
    assert raised.value.field == "params.pag"
    line = refused(cli(capsys, "launch", "demo", "pag=1"))
    assert line.endswith(str(raised.value))


@pytest.mark.timeout(ANSWER_S)
@pytest.mark.parametrize("mistake", ["unknown keyword", "unknown settings site", "step typo",
                                     "crawl off its domains", "unknown chain"])
def test_a_python_api_mistake_is_one_user_error_naming_it(mistake: str) -> None:
    from chains.cluster import launch, launch_crawl
    from chains.demo import demo
    from chains.runtime.model import Chain, Step
    from chains.runtime.registry import chain

    calls: dict[str, tuple[Callable[[], object], str]] = {
        "unknown keyword": (lambda: launch(demo, paeg=2), "did you mean 'page'"),
        "unknown settings site": (lambda: launch(demo, settings={"dmeo": {}}),
                                  "did you mean 'demo'"),
        "step typo": (lambda: launch(Chain("c", start="feed", steps={
            "feed": Step(task="demo.h5.fede")})), "did you mean 'demo.h5.feed'"),
        "crawl off its domains": (lambda: launch_crawl(["http://a.test/"], ["b.test"]),
                                  "outside --allow-domain b.test"),
        "unknown chain": (lambda: chain("dmeo"), "did you mean 'demo'"),
    }
    call, says = calls[mistake]
    with pytest.raises(UserError, match=re.escape(says)):
        call()


@pytest.mark.timeout(ANSWER_S)
def test_a_python_launch_with_redis_not_running_raises_cluster_unreachable() -> None:
    from chains.cluster import launch
    from chains.demo import demo
    from exceptions import ClusterUnreachable

    with pytest.raises(ClusterUnreachable, match="does not answer after 1 s"):
        launch(demo)


# -- in a process of their own: the site's own files, the default wait -------------------
@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The committed files of this checkout, copied: a user's broken file goes there."""
    target = tmp_path_factory.mktemp("checkout")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file() and not name.startswith(("tests/", "bench/", "docs/")):
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            (target / name).write_bytes((ROOT / name).read_bytes())
    return target


def crawlchain(root: Path, *argv: str, **env: str) -> Said:
    """``python -m cli`` in ``root``: a process of its own, as a user runs it."""
    inherited = {k: v for k, v in os.environ.items() if k != "STATE_COMMAND_WAIT_S"}
    done = subprocess.run([sys.executable, "-m", "cli", *argv], cwd=root, capture_output=True,
                          text=True, timeout=ANSWER_S, check=False,
                          env={**inherited, "STATE_REDIS_URL": "unix:///nonexistent/r.sock",
                               **env})
    return Said(done.returncode, done.stdout, done.stderr)


SITE_HEAD = "from chains.api import Chain, Input, Item, Page, Parsed, Response, Site, step\n"
BROKEN_FILES = {
    "a typo in a site's module": ({"sites/typo/__init__.py": SITE_HEAD + (
        "SITE = Site('typo')\n\n\n"
        "@step\n"
        "def page(page: Page, response: Response) -> Parsed[Itme]:\n"
        "    return Parsed()\n")}, ["sites/typo/__init__.py:6", "NameError",
                                   "name 'Itme' is not defined", "fix that line"]),
    "a chain file linking a step of another site": ({
        "sites/mine/__init__.py": SITE_HEAD + "SITE = Site('mine')\n",
        "chains/mine.py": "from chains.api import Chain\nfrom sites.demo.h5 import feed\n\n"
                          "mine = Chain('mine', start=feed, steps=[feed])\n"},
        ["chains/mine.py: chain 'mine' runs demo.h5.feed, a step of another site",
         "import them from sites.mine"]),
    "a url template naming a field the input lacks": ({"sites/tpl/__init__.py": SITE_HEAD + (
        "class Ref(Input):\n    item_id: int\n\n\n"
        "@step(url='{base_url}/item/{itemid}')\n"
        "def item(ref: Ref, response: Response) -> Parsed[Item]:\n"
        "    return Parsed()\n")}, ["step 'tpl.web.item'", "names {itemid}",
                                   "did you mean 'item_id'", "fields: base_url"]),
}


@pytest.mark.timeout(ANSWER_S)
@pytest.mark.parametrize("mistake", list(BROKEN_FILES))
def test_a_broken_site_or_chain_file_is_named_by_file_and_line(checkout: Path,
                                                               mistake: str) -> None:
    files, names = BROKEN_FILES[mistake]
    for name, text in files.items():
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        (checkout / name).write_text(text)
    try:
        refused(crawlchain(checkout, "launch", "demo"), *names)
    finally:
        for name in files:
            (checkout / name).unlink()


@pytest.mark.slow  # it waits the 5 s it bounds
@pytest.mark.timeout(ANSWER_S)
def test_a_launch_without_redis_answers_within_the_default_5_s(checkout: Path) -> None:
    """No ``STATE_COMMAND_WAIT_S`` set: the command's default, not a worker's 2 minutes."""
    said = crawlchain(checkout, "launch", "demo")
    refused(said, "does not answer after 5 s", "./control.sh start")


@pytest.mark.timeout(2 * ANSWER_S)  # two commands, each bounded by ANSWER_S on its own
def test_a_bug_is_one_line_and_its_traceback_comes_with_debug(checkout: Path) -> None:
    """A step whose input model raises what no validator should (a bug in site code):
    one line that says it is a bug and how to see more; ``--debug`` shows the traceback."""
    (checkout / "sites/buggy").mkdir()
    (checkout / "sites/buggy/__init__.py").write_text(SITE_HEAD + (
        "from pydantic import field_validator\n\n\n"
        "class Odd(Page):\n"
        "    @field_validator('url')\n"
        "    @classmethod\n"
        "    def _check(cls, value: str) -> str:\n"
        "        raise TypeError('a bug in the validator')\n\n\n"
        "@step\n"
        "def page(page: Odd, response: Response) -> Parsed[Item]:\n"
        "    return Parsed()\n"))
    try:
        plain = crawlchain(checkout, "try", "buggy.web.page", "http://127.0.0.1:1/")
        refused(plain, "unexpected TypeError: a bug in the validator", "--debug", code=1)
        shown = crawlchain(checkout, "--debug", "try", "buggy.web.page", "http://127.0.0.1:1/")
        assert shown.code == 1 and "Traceback" in shown.err
    finally:
        (checkout / "sites/buggy/__init__.py").unlink()
