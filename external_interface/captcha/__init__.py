"""Captcha solving: one small Protocol; the site declares its solver.

A login step attaches the challenge to its request (``Request.meta``: the image as a
data URL under ``captcha_image``); the captcha transformer solves it and sets the
answer param before the request is signed and sent. The demo site's solver reads
the sandbox's SVG captcha (``sites/demo/captcha.py``); a real deployment plugs in an
OCR model or a paid solving service behind the same Protocol.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

IMAGE_META = "captcha_image"  # Request.meta key of the challenge, a data: URL


class CaptchaUnsolved(Exception):
    """The solver cannot read this challenge; the login fails and a refill tries again."""


@dataclass(frozen=True)
class Challenge:
    """The image to solve and its media type."""

    image: bytes
    media_type: str

    @classmethod
    def from_data_url(cls, url: str) -> Challenge:
        """``data:image/svg+xml;base64,...`` -> the bytes and ``image/svg+xml``."""
        head, sep, payload = url.partition(",")
        if not (sep and head.startswith("data:")):
            raise CaptchaUnsolved("the challenge is not a data: URL")
        media_type = head[5:].split(";", 1)[0] or "application/octet-stream"
        raw = base64.b64decode(payload) if head.endswith(";base64") else payload.encode()
        return cls(raw, media_type)


@runtime_checkable
class CaptchaSolver(Protocol):
    def solve(self, challenge: Challenge) -> str:
        """The answer to type. May block (a paid service takes seconds); raises
        ``CaptchaUnsolved`` when it cannot answer."""
        ...
