"""Every user agent backend passes one contract: bundled (in-process) and Redis (cluster)."""

from __future__ import annotations

import pytest
import redis

from external_interface.user_agent import (
    BundledUserAgents,
    RedisUserAgents,
    UserAgents,
    user_agents_from_settings,
)
from external_interface.user_agent.bundled import AGENTS
from sandbox.defences import agent_matches


@pytest.fixture(params=["bundled", "redis"])
def agents(request: pytest.FixtureRequest) -> UserAgents:
    client = request.getfixturevalue("redis_client") if request.param == "redis" else None
    return user_agents_from_settings(request.param, client)


def test_the_backends_satisfy_the_protocol(agents: UserAgents) -> None:
    assert isinstance(agents, UserAgents)
    assert {"mobile", "desktop"} <= set(agents.families())


def test_a_key_keeps_its_agent_and_keys_spread_over_the_family(agents: UserAgents) -> None:
    picked = {agents.pick("mobile", f"unit-{i}") for i in range(200)}
    assert picked == set(AGENTS["mobile"])
    assert agents.pick("mobile", "unit-7") == agents.pick("mobile", "unit-7")


@pytest.mark.parametrize("family", ["mobile", "desktop"])
def test_every_bundled_agent_passes_the_sandboxs_check_of_its_family(
        agents: UserAgents, family: str) -> None:
    for i in range(50):
        assert agent_matches(family, agents.pick(family, str(i)))


def test_an_unknown_family_is_a_key_error(agents: UserAgents) -> None:
    with pytest.raises(KeyError):
        agents.pick("smart-fridge", "k")


def test_a_replaced_family_is_what_is_picked_and_an_empty_one_is_refused(
        agents: UserAgents) -> None:
    agents.replace("desktop", ["Mozilla/5.0 (X11; Linux x86_64) Firefox/126.0"])
    assert agents.pick("desktop", "any") == "Mozilla/5.0 (X11; Linux x86_64) Firefox/126.0"
    with pytest.raises(ValueError):
        agents.replace("desktop", [])


def test_a_redis_list_replaced_on_one_host_is_seen_by_another(redis_client: redis.Redis) -> None:
    here, there = RedisUserAgents(redis_client), RedisUserAgents(redis_client, cache_s=0)
    here.replace("mobile", ["Mozilla/5.0 (iPhone) Mobile/1"])
    assert there.pick("mobile", "k") == "Mozilla/5.0 (iPhone) Mobile/1"
    assert BundledUserAgents().pick("mobile", "k") in AGENTS["mobile"]
