"""Links are joined as browsers join them: the WHATWG URL suite of web-platform-tests.

``urltestdata.json`` (vendored beside this file; where it came from and its BSD
licence: ``urltestdata.LICENSE``) gives, for an input and a base, the URL a browser
makes of them, or ``failure``. A crawler meets two kinds of its cases:

- an href on an http(s) page: every case whose base is http(s);
- an absolute http(s) URL with nothing to resolve against (a start URL, a
  sitemap entry, a param): the cases whose base is none (``about:blank`` in older
  revisions of the file) and whose input is an http(s) URL.

What ``fetch_url`` must give for a case: the browser's URL without its fragment
(never sent to a server); None where the browser fails, and where it makes a URL
of another scheme (a crawler fetches http(s) only); and None for the cases in
``REFUSED``, which a browser accepts and the crawler refuses on purpose.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from utils.fingerprint import canonical_url
from utils.urls import UnsupportedURL, fetch_url, normalize_url

CASES: list[dict[str, Any]] = [case for case in json.loads(
    (Path(__file__).parent / "urltestdata.json").read_text(encoding="utf-8"))
    if isinstance(case, dict)]  # the strings between them are comments
_EDGES = "".join(chr(c) for c in range(0x21))
_HTTP = re.compile(r"https?:", re.IGNORECASE)
_NOT_DNS = "no DNS name has an empty label or such characters: a lookup cannot succeed, so " \
    "the link is dropped at once instead of failing the fetch after its retries"

# Cases a browser accepts and the crawler refuses, on purpose (utils.urls, "a host
# must be a name DNS can hold"), with the reason. The same rule refuses an ``xn--`` label
# that is no valid punycode (``http://a.b.c.xn--pokxncvks``), which this revision of the
# suite expects refused too; ada 4 itself accepts such a host, so a later revision that
# expects it accepted adds those cases here, with the same reason.
REFUSED = {
    "http://./": _NOT_DNS,
    "http://../": _NOT_DNS,
    "http://!\"$&'()*+,-.;=_`{}~/": _NOT_DNS,
    "http://foo.09..": _NOT_DNS,
}


def _base(case: dict[str, Any]) -> str | None:
    return None if case.get("base") in (None, "about:blank") else case["base"]


def _is_http(url: str) -> bool:
    """What WHATWG reads as an http(s) URL: edges trimmed, tabs and newlines dropped."""
    return _HTTP.match(re.sub("[\t\n\r]", "", url).strip(_EDGES)) is not None


def expected(case: dict[str, Any]) -> str | None:
    """The URL a crawler fetches for the case, by the rule in the module docstring."""
    if case.get("failure") or case["input"] in REFUSED or not _is_http(case["href"]):
        return None
    href: str = case["href"]
    return href.partition("#")[0]


ON_PAGES = [c for c in CASES if (base := _base(c)) is not None and _is_http(base)]
ABSOLUTE = [c for c in CASES if _base(c) is None and _is_http(c["input"])]


def _id(case: dict[str, Any]) -> str:
    return ascii(case["input"])[1:-1][:60]


def test_the_suite_holds_the_cases_a_crawler_meets() -> None:
    assert len(ON_PAGES) >= 150 and len(ABSOLUTE) >= 256
    assert sum(expected(c) is None for c in ON_PAGES + ABSOLUTE) >= 100  # failures among them


@pytest.mark.parametrize("case", ON_PAGES, ids=_id)
def test_an_href_on_an_http_page_is_joined_as_a_browser_joins_it(case: dict[str, Any]) -> None:
    assert fetch_url(case["input"], case["base"]) == expected(case)


@pytest.mark.parametrize("case", ABSOLUTE, ids=_id)
def test_an_absolute_http_url_is_read_as_a_browser_reads_it(case: dict[str, Any]) -> None:
    assert fetch_url(case["input"]) == expected(case)


def test_each_refusal_is_of_a_case_a_browser_accepts() -> None:
    accepted = {c["input"] for c in ABSOLUTE + ON_PAGES if not c.get("failure")}
    assert set(REFUSED) <= accepted
    for href in REFUSED:
        with pytest.raises(UnsupportedURL, match="no DNS name"):
            normalize_url(href)


def test_a_page_has_one_key_whether_linked_as_written_or_as_a_browser_wrote_it() -> None:
    for case in ON_PAGES + ABSOLUTE:
        url = expected(case)
        if url is not None:
            key = canonical_url(url)
            assert canonical_url(case["href"]) == key == canonical_url(key), case["input"]
