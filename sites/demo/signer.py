"""The demo app's request signer, as a crawler engineer recovered it.

The h5 API (feed, statuses) wants ``ts`` and ``sign`` = HMAC-SHA256 over the path
and the sorted query. The key below was found in the app's JavaScript bundle; the
sandbox keeps its own copy server-side, as a real site does. Applied last by the
providers, after every other header and param (``external_interface.sign``).
"""

from __future__ import annotations

from chains.api import HmacSigner

RECOVERED_KEY = b"sandbox-h5-7c1e2a9d"

SIGNER = HmacSigner(key=RECOVERED_KEY)
