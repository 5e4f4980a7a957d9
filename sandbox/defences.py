"""How the sandbox defends itself, like a real site; each defence switchable.

    Defences()        nothing on: what the test harness (``sandbox.cluster.Cluster``) uses
                      unless a test asks for defences, so exact request counts hold
    Defences.on()     everything on: what ``python -m sandbox`` and the demo use

What each defence does (``Guard.screen`` runs them in this order):

* exits: above ``rate_per_exit`` requests in a second from one client address, 429
  with Retry-After; ``strikes_to_ban`` of those within ``ban_s`` ban the address for
  ``ban_s``. A banned address (and any in ``banned_exits``, and every address on
  ``blocked_paths``) gets 403 on JSON routes and, on HTML pages, a captcha
  interstitial with status 200: it looks like success and only its content tells.
* user agents: h5 wants a mobile browser, pc a desktop one, app the app's own
  (``DemoApp/``); the shared API any of them. Others get 400.
* signatures: the h5 API (feed, statuses) wants ``ts`` and ``sign`` =
  HMAC-SHA256(key, path?sorted params). A timestamp off by more than
  ``sign_max_skew_s`` or a wrong sign gets 400. The key is the server's secret; a
  crawler engineer recovers it from the app (``sites/demo/signer.py``).
* sessions: user pages want the ``sid`` cookie of a login; a session answers
  ``session_uses`` requests or lives ``session_ttl_s``, then 401.
* devices: the app API wants ``X-Device-Id`` from ``/app/device/register``; a device
  serves ``device_budget`` requests, then 403 "device quota exceeded".

Login (``/h5/login/captcha``, ``/h5/login``) and device registration are features
of the site, served whatever the defences (see ``sandbox.login``).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlencode

from sandbox.calls import HTML, Answer, Call, json_answer
from sandbox.login import LoginDesk

SERVER_KEY = b"sandbox-h5-7c1e2a9d"  # the site's signing secret (the app ships a copy)
SIGNED = re.compile(r"/h5/feed|/h5/user/u\d+/statuses")
SESSION_PAGES = re.compile(r"/h5/user/u\d+")
DEVICE_PAGES = re.compile(r"/app/article/a\d+")
HTML_PAGES = re.compile(r"/h5/user/u\d+|/app/article/a\d+")
INTERSTITIAL = (b'<html><head><title>Security check</title></head><body>'
                b'<form class="captcha-interstitial"><p>Verify you are human</p>'
                b'<img src="/h5/login/captcha"></form></body></html>')


@dataclass(frozen=True)
class Defences:
    """Which defences are on, and their knobs. All off by default; ``on()`` for the demo."""

    sign: bool = False
    sessions: bool = False
    devices: bool = False
    user_agents: bool = False
    rate_limit: bool = False
    sign_max_skew_s: float = 60.0
    session_uses: int = 6
    session_ttl_s: float = 600.0
    device_budget: int = 40
    rate_per_exit: int = 50  # requests per second from one client address
    strikes_to_ban: int = 10  # 429s within ``ban_s`` that get the address banned
    ban_s: float = 60.0
    retry_after_s: int = 1
    banned_exits: frozenset[str] = frozenset()  # burnt from the start (a bad proxy)
    blocked_paths: frozenset[str] = frozenset()  # banned for every address

    @classmethod
    def on(cls, **knobs: Any) -> Defences:
        """Every defence on; ``knobs`` override the defaults."""
        every = {"sign": True, "sessions": True, "devices": True, "user_agents": True,
                 "rate_limit": True}
        return replace(cls(), **{**every, **knobs})


def agent_family(path: str) -> str:
    """The user agent family a platform expects: ``mobile``, ``desktop``, ``app``, ``any``."""
    platform = path.strip("/").split("/", 1)[0]
    return {"h5": "mobile", "pc": "desktop", "app": "app"}.get(platform, "any")


def agent_matches(family: str, agent: str) -> bool:
    mobile = "Mobile" in agent and ("iPhone" in agent or "Android" in agent)
    desktop = "Mobile" not in agent and any(
        os_name in agent for os_name in ("Windows NT", "Macintosh", "X11"))
    app = agent.startswith("DemoApp/")
    return {"mobile": mobile, "desktop": desktop, "app": app}.get(
        family, mobile or desktop or app)


def signature(path: str, params: dict[str, str], key: bytes = SERVER_KEY) -> str:
    """HMAC-SHA256 over ``path?k1=v1&k2=v2`` with the params sorted (``sign`` left out)."""
    canonical = path + "?" + urlencode(sorted((k, v) for k, v in params.items() if k != "sign"))
    return hmac.new(key, canonical.encode(), hashlib.sha256).hexdigest()


def signature_problem(path: str, query: dict[str, str], now: float,
                      max_skew_s: float) -> str | None:
    """Why a signed request is refused, or None when its sign and timestamp are good."""
    sign, ts = query.get("sign"), query.get("ts")
    if not sign or not ts:
        return "missing sign"
    try:
        stamp = float(ts)
    except ValueError:
        return "bad timestamp"
    if abs(now - stamp) > max_skew_s:
        return "stale timestamp"
    if not hmac.compare_digest(sign, signature(path, query)):
        return "bad sign"
    return None


@dataclass
class ExitWatch:
    """Per client address: recent requests (for the rate), recent 429s, bans."""

    defences: Defences
    recent: dict[str, deque[float]] = field(default_factory=dict)
    strikes: dict[str, deque[float]] = field(default_factory=dict)
    banned_until: dict[str, float] = field(default_factory=dict)

    def banned(self, client: str, now: float) -> bool:
        return client in self.defences.banned_exits or self.banned_until.get(client, 0) > now

    def over_rate(self, client: str, now: float) -> bool:
        """Count the request; True (and a strike, maybe a ban) when it is over the rate."""
        window = self.recent.setdefault(client, deque())
        window.append(now)
        while window and window[0] <= now - 1.0:
            window.popleft()
        if len(window) <= self.defences.rate_per_exit:
            return False
        strikes = self.strikes.setdefault(client, deque())
        strikes.append(now)
        while strikes and strikes[0] <= now - self.defences.ban_s:
            strikes.popleft()
        if len(strikes) >= self.defences.strikes_to_ban:
            self.banned_until[client] = now + self.defences.ban_s
            strikes.clear()
        return True


class Guard:
    """The defences in front of every view, and the login and device desks behind them."""

    def __init__(self, defences: Defences | None = None) -> None:
        self.defences = defences or Defences()
        self.exits = ExitWatch(self.defences)
        self.desk = LoginDesk()
        self._lock = threading.Lock()

    def screen(self, call: Call) -> Answer | None:
        """The answer of the first defence that refuses the call, or None to serve it."""
        with self._lock:
            return (self._exit(call) or self._agent(call) or self._signature(call)
                    or self._session(call) or self._device(call))

    def route(self, call: Call) -> Answer | None:
        """Login and device registration, when the call is for them."""
        return self.desk.route(call)

    def _exit(self, call: Call) -> Answer | None:
        now, d = time.monotonic(), self.defences
        if call.path in d.blocked_paths or self.exits.banned(call.client, now):
            return banned_answer(call.path)
        if d.rate_limit and self.exits.over_rate(call.client, now):
            return json_answer(429, {"error": "slow down"},
                               (("Retry-After", str(d.retry_after_s)),))
        return None

    def _agent(self, call: Call) -> Answer | None:
        family = agent_family(call.path)
        if not self.defences.user_agents or agent_matches(family, call.header("user-agent")):
            return None
        return json_answer(400, {"error": f"unsupported client: this platform wants {family}"})

    def _signature(self, call: Call) -> Answer | None:
        if not (self.defences.sign and SIGNED.fullmatch(call.path)):
            return None
        problem = signature_problem(call.path, dict(call.query), time.time(),
                                    self.defences.sign_max_skew_s)
        return json_answer(400, {"error": problem}) if problem else None

    def _session(self, call: Call) -> Answer | None:
        if not (self.defences.sessions and SESSION_PAGES.fullmatch(call.path)):
            return None
        problem = self.desk.use_session(call.cookies.get("sid", ""), self.defences.session_uses,
                                        self.defences.session_ttl_s)
        return json_answer(401, {"error": problem}) if problem else None

    def _device(self, call: Call) -> Answer | None:
        if not (self.defences.devices and DEVICE_PAGES.fullmatch(call.path)):
            return None
        device = call.header("x-device-id")
        if not device:
            return json_answer(400, {"error": "device id required"})
        problem = self.desk.use_device(device, self.defences.device_budget)
        return json_answer(403, {"error": problem}) if problem else None


def banned_answer(path: str) -> Answer:
    """403 on the API; on HTML pages the interstitial, with status 200."""
    if HTML_PAGES.fullmatch(path):
        return Answer(200, HTML, INTERSTITIAL)
    return json_answer(403, {"error": "banned"})
