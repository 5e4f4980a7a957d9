"""Saved sandbox pages (``tests/sites/demo/pages/``) wrapped as fetch responses."""

from __future__ import annotations

from pathlib import Path

from external_interface.http import Response

PAGES = Path(__file__).resolve().parent / "pages"


def saved(name: str, url: str = "http://127.0.0.1:8765/saved") -> Response:
    return Response(url=url, status=200, headers={}, body=(PAGES / name).read_bytes(),
                    encoding="utf-8")


def broken(body: bytes = b"<html><body>maintenance</body></html>") -> Response:
    return Response(url="http://127.0.0.1:8765/broken", status=200, headers={}, body=body)
