"""A crawl through a pool of two SOCKS5 proxies, one of them killed midway, stores exactly
what a crawl without proxies stores: the dead proxy is banned and the units it failed go
through the other."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from chains.demo import demo
from external_interface import keys
from external_interface.proxy import SCOPE, member_of
from sandbox.cluster import running_cluster
from sandbox.defences import Defences
from sandbox.tunnels import Socks5Proxy
from sandbox.world import World, expected_keys

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # a cluster: the slow suite

DYING, LIVING = "127.0.0.31", "127.0.0.32"  # each proxy's exit: the client the site sees


def test_a_proxy_dying_mid_crawl_is_banned_and_the_crawl_stays_exact(tmp_path: Path) -> None:
    world = World(seed=5)
    dying = Socks5Proxy("crawler", "pw", exit=DYING)
    living = Socks5Proxy("crawler", "pw", exit=LIVING)
    pool = [dying.url, living.url_for("socks5h")]  # resolved here, and by the proxy
    env = {"PROXY_URLS": json.dumps(pool), "PROXY_FILE": "", "PROXY_BAN_COOLDOWN_S": "600",
           "PROXY_FAIL_COOLDOWN_S": "1"}  # a ban rests it ten minutes, a failure a second
    try:
        # Defences() turns none on, but a defended cluster lets the demo lease its proxies
        with running_cluster(tmp_path, world, extra_env=env, defences=Defences()) as cluster:
            assert cluster.sandbox is not None
            job = cluster.launch(demo, page=1)
            cluster.wait_for(lambda: sum(h.client == DYING for h in cluster.sandbox.hits()) >= 20
                             if cluster.sandbox else False, 60, "20 requests through the proxy")
            dying.kill()
            killed_at = len(cluster.sandbox.hits())
            status = job.wait(timeout=180)
            stored = cluster.stored_keys()
            proxies = cluster.runtime.providers.proxies
            assert proxies is not None
            pool_after = proxies.stats()
            rests_until = cluster.runtime.redis.zscore(keys.pool("proxy", SCOPE, "ready"),
                                                       member_of(dying.url))
            after = cluster.sandbox.hits()[killed_at:]
    finally:
        dying.kill()
        living.kill()
    assert status["state"] == "finished" and status["failures"] == []
    for step, want in world.expected().items():
        got = status["steps"][step]
        assert (got["done"], got["items"]) == (want["units"], want["items"]), step
    for collection, wanted in expected_keys(world).items():
        assert sorted(stored[collection]) == sorted(wanted), collection
    assert status["totals"]["rotations"] >= 1  # units it failed went to the other proxy
    assert (pool_after.ready, pool_after.cooling + pool_after.retired) == (1, 1)
    assert rests_until is None or rests_until / 1e6 > time.time() + 300  # banned: retired,
    # or resting for the ban's ten minutes, not a failure's second
    assert after and {h.client for h in after} == {LIVING}
    assert dying.tunnels >= 1 and living.tunnels >= 1  # kept-alive tunnels carry many requests
