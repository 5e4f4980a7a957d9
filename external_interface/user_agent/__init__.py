"""User agents by platform family, from offline data: a request transformer's source.

    agents = user_agents_from_settings("bundled", client)
    agents.pick("mobile", key=unit_id)     # the same unit keeps its agent across retries

Two backends pass one contract (``tests/external_interface/user_agent``): the
bundled list (``user_agent.bundled``, in-process, the default) and Redis (one list
per family for the whole cluster, seeded from the bundled list on first use, so an
operator can replace it everywhere at once without a deploy).
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

from external_interface import keys
from external_interface.user_agent.bundled import AGENTS

if TYPE_CHECKING:
    import redis


@runtime_checkable
class UserAgents(Protocol):
    def pick(self, family: str, key: str) -> str:
        """An agent of ``family``, the same for the same ``key`` while the list is unchanged.
        Raises ``KeyError`` for a family the backend does not know."""
        ...

    def families(self) -> list[str]:
        """The families known, sorted."""
        ...

    def replace(self, family: str, agents: Sequence[str]) -> None:
        """Make ``agents`` the family's list (atomic for readers). Raises ``ValueError``
        on an empty list: a family without agents would send none."""
        ...


T = TypeVar("T")


def choose(agents: Sequence[T], key: str) -> T:
    """The agent (or header set) for ``key``: stable while the list is unchanged, spread
    over the list."""
    return agents[zlib.crc32(key.encode()) % len(agents)]


class BundledUserAgents:
    """The bundled list (plus ``extra`` families), in this process."""

    def __init__(self, extra: Mapping[str, Sequence[str]] | None = None) -> None:
        self._agents = {f: tuple(a) for f, a in {**AGENTS, **(extra or {})}.items()}

    def pick(self, family: str, key: str) -> str:
        return choose(self._agents[family], key)

    def families(self) -> list[str]:
        return sorted(self._agents)

    def replace(self, family: str, agents: Sequence[str]) -> None:
        if not agents:
            raise ValueError(f"user agent family {family!r} needs at least one agent")
        self._agents = {**self._agents, family: tuple(agents)}


_SEED = """
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('RPUSH', KEYS[1], unpack(ARGV)) end
return redis.call('LRANGE', KEYS[1], 0, -1)
"""


class RedisUserAgents:
    """One list per family in Redis, seeded from ``seed``; read at most every ``cache_s``
    per process, so picking costs no round trip per request."""

    def __init__(self, client: redis.Redis, seed: Mapping[str, Sequence[str]] | None = None,
                 cache_s: float = 60.0) -> None:
        self.client = client
        self.seed = {f: tuple(a) for f, a in (seed or AGENTS).items()}
        self.cache_s = cache_s
        self._seed_script = client.register_script(_SEED)
        self._cache: dict[str, tuple[float, tuple[str, ...]]] = {}
        self._lock = threading.Lock()

    def pick(self, family: str, key: str) -> str:
        return choose(self._read(family), key)

    def families(self) -> list[str]:
        found = self.client.scan_iter(match=keys.user_agents("*"), count=100)
        stored = {_text(k).rsplit(":", 1)[1] for k in found}
        return sorted(stored | set(self.seed))

    def replace(self, family: str, agents: Sequence[str]) -> None:
        if not agents:
            raise ValueError(f"user agent family {family!r} needs at least one agent")
        pipe = self.client.pipeline(transaction=True)
        pipe.delete(keys.user_agents(family))
        pipe.rpush(keys.user_agents(family), *agents)
        pipe.execute()
        with self._lock:
            self._cache.pop(family, None)

    def _read(self, family: str) -> tuple[str, ...]:
        with self._lock:
            cached = self._cache.get(family)
        if cached is not None and time.monotonic() - cached[0] < self.cache_s:
            return cached[1]
        stored = self.client.lrange(keys.user_agents(family), 0, -1)
        if not stored:
            if family not in self.seed:
                raise KeyError(family)
            stored = self._seed_script(keys=[keys.user_agents(family)], args=self.seed[family])
        agents = tuple(_text(a) for a in stored)
        with self._lock:
            self._cache[family] = (time.monotonic(), agents)
        return agents


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def user_agents_from_settings(backend: str, client: redis.Redis | None) -> UserAgents:
    """``bundled`` (default) or ``redis`` (needs the state client)."""
    if backend == "bundled":
        return BundledUserAgents()
    if backend == "redis" and client is not None:
        return RedisUserAgents(client)
    raise ValueError(f"UA_BACKEND: unknown or unusable backend {backend!r} (bundled, redis)")
