"""The sandbox's login captcha: an arithmetic question drawn as an SVG image.

Each glyph is its own ``<text>`` element, placed by its ``x`` attribute but written
in shuffled document order among noise lines and invisible decoy glyphs, so a
solver has to do what an OCR does on a real image: keep what is visible, read it
left to right, then answer the question ("12 + 7" -> "19").
"""

from __future__ import annotations

import base64
import html
import random
import secrets
import threading
import time
from dataclasses import dataclass

OPERATORS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "x": lambda a, b: a * b}
DATA_URL_PREFIX = "data:image/svg+xml;base64,"


@dataclass(frozen=True)
class Challenge:
    """One captcha: its id, the question as text, the expected answer and the image."""

    captcha_id: str
    question: str
    answer: str
    svg: bytes

    @property
    def data_url(self) -> str:
        return DATA_URL_PREFIX + base64.b64encode(self.svg).decode()


def draw(question: str, rnd: random.Random) -> bytes:
    """The question as SVG: visible glyphs by x, decoys with zero opacity, noise lines."""
    glyphs = [(12 + 18 * i, ch) for i, ch in enumerate(question) if ch != " "]
    decoys = [(rnd.randint(0, 220), rnd.choice("0123456789+-x")) for _ in range(4)]
    parts = [_glyph(x, ch, rnd, visible=True) for x, ch in glyphs]
    parts += [_glyph(x, ch, rnd, visible=False) for x, ch in decoys]
    parts += [f'<line x1="{rnd.randint(0, 240)}" y1="{rnd.randint(0, 50)}" '
              f'x2="{rnd.randint(0, 240)}" y2="{rnd.randint(0, 50)}" stroke="#999"/>'
              for _ in range(5)]
    rnd.shuffle(parts)
    body = "".join(parts)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="240" height="50">{body}</svg>'
            ).encode()


def _glyph(x: int, ch: str, rnd: random.Random, visible: bool) -> str:
    opacity = "" if visible else ' fill-opacity="0"'
    return (f'<text x="{x}" y="{30 + rnd.randint(-6, 6)}" '
            f'transform="rotate({rnd.randint(-15, 15)} {x} 30)"{opacity}>'
            f"{html.escape(ch)}</text>")


class CaptchaDesk:
    """Issues challenges and checks answers; each challenge is good for one try."""

    def __init__(self, ttl_s: float = 120.0, seed: int | None = None) -> None:
        self.ttl_s = ttl_s
        self._rnd = random.Random(seed)
        self._open: dict[str, tuple[str, float]] = {}  # id -> (answer, issued at)
        self._lock = threading.Lock()

    def issue(self) -> Challenge:
        with self._lock:
            a, b = self._rnd.randint(1, 20), self._rnd.randint(1, 20)
            op = self._rnd.choice(sorted(OPERATORS))
            question = f"{a} {op} {b} ="
            answer = str(OPERATORS[op](a, b))
            challenge = Challenge(secrets.token_hex(8), question, answer,
                                  draw(question, self._rnd))
            self._open[challenge.captcha_id] = (answer, time.monotonic())
            return challenge

    def check(self, captcha_id: str, answer: str) -> bool:
        """True once for the right answer within the TTL; the challenge is spent either way."""
        with self._lock:
            expected, issued = self._open.pop(captcha_id, ("", 0.0))
        fresh = time.monotonic() - issued <= self.ttl_s
        return bool(expected) and fresh and answer.strip() == expected
