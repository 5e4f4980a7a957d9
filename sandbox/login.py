"""The sandbox's accounts, login (captcha first) and app device registration.

    GET  /h5/login/captcha        {"captcha_id", "image": "data:image/svg+xml;base64,..."}
    POST /h5/login                form: account, password; captcha_id and captcha_answer in
                                  the query or the form -> Set-Cookie: sid=...
    POST /app/device/register     -> {"device_id": "d..."}

A captcha is good for one try; a wrong answer or password is a 400 (the client's
fault, not a ban). Sessions and devices are counted here, and refused by the
defences (``sandbox.defences``) once spent.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass

from sandbox.calls import Answer, Call, json_answer
from sandbox.captcha import CaptchaDesk

# The accounts the site knows, with their passwords (the demo site's knobs hold copies).
ACCOUNTS = {"reader1": "pw-reader1-5a7c", "reader2": "pw-reader2-93de",
            "reader3": "pw-reader3-1f08"}


@dataclass
class Session:
    account: str
    created: float
    uses: int = 0


class LoginDesk:
    """Captchas, sessions and devices of one site; thread-safe."""

    def __init__(self) -> None:
        self.captchas = CaptchaDesk()
        self.sessions: dict[str, Session] = {}
        self.devices: dict[str, int] = {}  # device id -> requests served
        self.logins = 0
        self._lock = threading.Lock()

    def route(self, call: Call) -> Answer | None:
        if call.path == "/h5/login/captcha":
            challenge = self.captchas.issue()
            return json_answer(200, {"captcha_id": challenge.captcha_id,
                                     "image": challenge.data_url})
        if call.path == "/h5/login" and call.method == "POST":
            return self.login(call)
        if call.path == "/app/device/register" and call.method == "POST":
            return self.register_device()
        return None

    def login(self, call: Call) -> Answer:
        given = {**call.query, **call.form}
        if not self.captchas.check(given.get("captcha_id", ""), given.get("captcha_answer", "")):
            return json_answer(400, {"error": "wrong captcha"})
        account = given.get("account", "")
        if ACCOUNTS.get(account) != given.get("password") or not account:
            return json_answer(400, {"error": "wrong password"})
        sid = secrets.token_hex(12)
        with self._lock:
            self.sessions[sid] = Session(account, time.monotonic())
            self.logins += 1
        return json_answer(200, {"ok": True, "account": account},
                           (("Set-Cookie", f"sid={sid}; Path=/; HttpOnly"),))

    def register_device(self) -> Answer:
        device = "d" + secrets.token_hex(8)
        with self._lock:
            self.devices[device] = 0
        return json_answer(200, {"device_id": device})

    def use_session(self, sid: str, max_uses: int, ttl_s: float) -> str | None:
        """Count one use of a session; why it is refused, or None."""
        with self._lock:
            session = self.sessions.get(sid)
            if session is None:
                return "login required"
            if session.uses >= max_uses or time.monotonic() - session.created > ttl_s:
                del self.sessions[sid]
                return "session expired"
            session.uses += 1
        return None

    def use_device(self, device: str, budget: int) -> str | None:
        """Count one request of a device; why it is refused, or None."""
        with self._lock:
            served = self.devices.get(device)
            if served is None:
                return "unregistered device"
            if served >= budget:
                return "device quota exceeded"
            self.devices[device] = served + 1
        return None
