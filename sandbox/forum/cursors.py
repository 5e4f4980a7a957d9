"""Opaque cursors: thread pages go on ``?after=`` the last post shown, reactions on
``?cursor=`` the last reaction shown.

Keyed on the last entry, not an offset, so a page's URL stays the same when entries are
added after it (a recrawl finds the old last page, now with a next link). The token is
base64url without padding, safe in a query string as it is.
"""

from __future__ import annotations

import base64
import binascii


def encode(kind: str, owner: int, last: int) -> str:
    """The token for "after entry ``last`` of ``owner``" (``kind`` "t" thread, "r" reactions)."""
    return base64.urlsafe_b64encode(f"{kind}{owner}:{last}".encode()).decode().rstrip("=")


def decode(kind: str, owner: int, token: str) -> int:
    """The entry id a token points after; ``ValueError`` if it is not one of ``owner``'s."""
    try:
        text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise ValueError(f"cursor {token!r} is not one this site wrote") from exc
    prefix, _, last = text.partition(":")
    if prefix != f"{kind}{owner}" or not last.isdigit():
        raise ValueError(f"cursor {token!r} is not one this site wrote for {kind}{owner}")
    return int(last)
