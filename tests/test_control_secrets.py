"""Secrets never shown: a cluster whose every address carries one, searched afterwards.

``control.sh`` runs the sandbox and a worker at ``LOG_LEVEL=DEBUG`` (the most it ever
writes) with the items in PostgreSQL behind a password, the sandbox's exit proxies
behind a user and password, one more proxy that refuses every connection, and the
demo launched at a base URL with a user and password. A second job starts under a
path that does not exist, with an access token in its query: every unit of it ends
in a 404. Then every log file, the launches' output (``--json``: the job summary),
``monitor --once --json``, and the ledger's failure records are searched for each
secret, and for the session cookies and the Basic credentials the fetches sent.
"""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis

from external_interface import keys
from tests.external_interface.storage.postgres_support import DSN, postgres_unreachable

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # a demo run: ~1 min

ROOT = Path(__file__).resolve().parent.parent
TAG = uuid.uuid4().hex[:8]
PG_PASSWORD = f"pg-pw-{TAG}"
PROXY_PASSWORD = f"proxy-pw-{TAG}"
REFUSED_PASSWORD = f"refused-pw-{TAG}"
SITE_PASSWORD = f"site-pw-{TAG}"
SITE_TOKEN = f"site-token-{TAG}"
DEMO_ACCOUNT_PASSWORDS = ("pw-reader1-5a7c", "pw-reader2-93de", "pw-reader3-1f08")
SIGNING_KEY = "sandbox-h5-7c1e2a9d"  # sites/demo/signer.py: the h5 API's HMAC key
SESSION_COOKIE = re.compile(r"""sid["']?\s*[=:]\s*["']?[0-9a-f]{24}""")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def control(env: dict[str, str], *args: str,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROOT / "control.sh"), *args], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=timeout, check=False)


def with_password(url: str, user: str, password: str) -> str:
    parts = urlsplit(url)
    netloc = f"{user}:{password}@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def basic(user: str, password: str) -> str:
    """What a ``user:password@`` URL sends as Basic credentials."""
    return base64.b64encode(f"{user}:{password}".encode()).decode()


@dataclass
class Run:
    """Everything the run showed, by where it was shown, and the cookies it used."""

    shown: dict[str, str]
    cookies: list[str]
    summaries: list[dict[str, Any]]
    refused: str  # the refusing proxy's id in the pool: host:port


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    reason = postgres_unreachable()
    if reason:
        pytest.skip(reason)
    home = tmp_path_factory.mktemp("secrets")
    user = urlsplit(DSN).username or "postgres"
    storage = with_password(DSN, user, PG_PASSWORD)
    storage += f"{'&' if '?' in storage else '?'}schema=crawlchain_secrets_{TAG}"
    port = free_port()
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("CELERY_", "STATE_", "STORAGE_", "DEMO_", "LOG_", "PROXY_"))}
    env = {**clean, "CRAWLCHAIN_HOME": str(home), "DEMO_PORT": str(port),
           "LOG_LEVEL": "DEBUG", "STORAGE_URL": storage, "PROXY_FAIL_COOLDOWN_S": "2"}
    site = f"http://siteuser:{SITE_PASSWORD}@127.0.0.1:{port}"
    try:
        yield crawl(env, home, site)
    finally:
        control(env, "stop", "all")
        from external_interface.storage.postgres import PostgresStore

        store = PostgresStore.from_url(storage)
        store.drop_schema()
        store.close()


def crawl(env: dict[str, str], home: Path, site: str) -> Run:
    started = control(env, "start", "sandbox")
    assert started.returncode == 0, started.stderr
    proxies = [with_password(line, "exituser", PROXY_PASSWORD)
               for line in (home / "run" / "exits.txt").read_text().split()]
    refused = f"127.0.0.1:{free_port()}"  # nothing listens there
    proxies.append(f"http://exituser:{REFUSED_PASSWORD}@{refused}")
    (home / "proxies.txt").write_text("\n".join(proxies) + "\n")
    env["PROXY_FILE"] = str(home / "proxies.txt")
    started = control(env, "start", "worker")
    assert started.returncode == 0, started.stderr
    shown: dict[str, str] = {}
    summaries = []
    for name, base in (("launch demo", site),
                       ("launch 404s", f"{site}/gone?access_token={SITE_TOKEN}")):
        done = control(env, "launch", "demo", "--set", f"base_url={base}", "--json")
        shown[name] = done.stdout + done.stderr
        summaries.append(json.loads(done.stdout.strip().splitlines()[-1]))
    seen = control(env, "monitor", "--once", "--json")
    shown["monitor --once --json"] = seen.stdout + seen.stderr
    client = redis.Redis(unix_socket_path=str(home / "run" / "redis.sock"),
                         decode_responses=True)
    for job in map(str, client.zrange(keys.JOB_INDEX, 0, -1)):
        failed = client.hgetall(keys.job(job, "failed"))
        shown[f"ledger failures of {job}"] = "\n".join(map(str, failed.values()))
    cookies = [str(value) for raw in client.hvals(keys.pool("cookie", "demo", "values"))
               for value in json.loads(raw).values()]
    client.close()
    assert control(env, "stop", "all").returncode == 0
    time.sleep(0.5)  # the last lines reach the files
    for path in sorted((home / "logs").glob("*.log")):
        shown[f"logs/{path.name}"] = path.read_text()
    return Run(shown, cookies, summaries, refused)


def test_the_run_did_what_it_was_meant_to(run: Run) -> None:
    """The search below means something only if the secrets were used and failures met."""
    crawled, broken = run.summaries
    assert crawled["state"] == "finished" and crawled["totals"]["items"] > 0
    assert broken["state"] == "finished_with_failures" and broken["failures"]
    assert all("404" in f["reason"] for f in broken["failures"])
    assert run.cookies, "the demo logged in: its session cookies are in the pool"
    assert any(text for where, text in run.shown.items() if where.startswith("ledger failures"))
    worker = run.shown["logs/worker-default.log"]
    assert re.search(rf"fetch 0 .* proxy={run.refused} ", worker)  # the refusing proxy, tried
    assert "siteuser:***@127.0.0.1" in worker and "access_token=***" in worker


SECRETS = {
    "PostgreSQL password": PG_PASSWORD,
    "proxy password": PROXY_PASSWORD,
    "refused proxy's password": REFUSED_PASSWORD,
    "site password": SITE_PASSWORD,
    "site token": SITE_TOKEN,
    "proxy Basic credentials": basic("exituser", PROXY_PASSWORD),
    "site Basic credentials": basic("siteuser", SITE_PASSWORD),
    "demo signing key": SIGNING_KEY,
    **{f"demo account password {i}": pw for i, pw in enumerate(DEMO_ACCOUNT_PASSWORDS)},
}


@pytest.mark.parametrize("what", sorted(SECRETS))
def test_no_secret_is_shown_anywhere(run: Run, what: str) -> None:
    secret = SECRETS[what]
    found = {where: text.count(secret) for where, text in run.shown.items() if secret in text}
    assert found == {}, f"the {what} is shown in {found}"


def test_no_session_cookie_is_shown_anywhere(run: Run) -> None:
    found = {where: sum(text.count(c) for c in run.cookies) for where, text in run.shown.items()
             if any(c in text for c in run.cookies)}
    found |= {where: -1 for where, text in run.shown.items() if SESSION_COOKIE.search(text)}
    assert found == {}, f"a session cookie is shown in {found}"
