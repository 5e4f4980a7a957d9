"""The nearest known name to a misspelt one, for messages that say what was meant.

    >>> did_you_mean("pag", ["page", "base_url"])
    " (did you mean 'page'?)"

``difflib``'s ratio, as Python's own "Did you mean" for a misspelt name: a typo of
one or two letters is found, an unrelated word suggests nothing.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.6  # difflib's default: "pag" -> "page", "bse_url" -> "base_url", "xyz" -> none


def nearest(name: str, known: Iterable[str]) -> str | None:
    """The known name closest to ``name``, or None when none is close."""
    found = difflib.get_close_matches(name, list(known), n=1, cutoff=CUTOFF)
    return found[0] if found else None


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'page'?)``, or "" when no known name is close."""
    found = nearest(name, known)
    return f" (did you mean {found!r}?)" if found else ""


def listed(known: Iterable[str], limit: int = 12) -> str:
    """``a, b, c`` sorted, the rest counted past ``limit``: a message stays one line."""
    names = sorted(known)
    if not names:
        return "none"
    more = len(names) - limit
    return ", ".join(names[:limit]) + (f" and {more} more" if more > 0 else "")
