"""Saved properties pages (``tests/sites/properties/pages/``) wrapped as fetch responses.

Written by ``python -m bench.properties.gen_site --n 60``: ``index_00000.html`` and
``property_000007.html`` as generated, ``index_00001_last.html`` the site's last
index page (no next link).
"""

from __future__ import annotations

from pathlib import Path

from external_interface.http import Response

PAGES = Path(__file__).resolve().parent / "pages"
BASE = "http://127.0.0.1:28080/n60"


def saved(name: str, path: str | None = None) -> Response:
    """The page as nginx serves it: no charset in Content-Type, so no encoding known."""
    return Response(url=f"{BASE}/{path or name}", status=200,
                    headers={"Content-Type": "text/html"}, body=(PAGES / name).read_bytes())


def broken(body: bytes = b"<html><body>maintenance</body></html>") -> Response:
    return Response(url=f"{BASE}/broken", status=200, headers={}, body=body)
