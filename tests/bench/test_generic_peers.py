"""The generic-crawl peers: their page sets are judged fairly, and on the small site each
fetches exactly the expected pages (slow; needs the peers' venvs, else skips)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import generic_peers
from bench.hostile import SCRAPY_SETTINGS
from sandbox.generic.expected import expected_records
from sandbox.generic.site import Shape, build

BASE = "http://127.0.0.1:5000"


def as_peer(record: Any, **changes: Any) -> dict[str, Any]:
    return {**record.as_dict(), **changes}


def test_a_peers_records_compare_by_url_without_fragment_on_200_pages_only() -> None:
    expected = expected_records(build(Shape.small(), BASE), 3)
    pages = [r for r in expected if r.status == 200]
    records = [as_peer(r) for r in pages]
    records[0]["url"] += "#entry-3"  # Crawlee keeps the fragment of the link it followed
    comparison = generic_peers.compare(records, expected)
    assert comparison.same and comparison.got == comparison.expected == len(pages)


def test_missing_extra_duplicate_and_wrong_pages_are_each_reported() -> None:
    expected = expected_records(build(Shape.small(), BASE), 3)
    pages = [r for r in expected if r.status == 200]
    records = [as_peer(r) for r in pages[1:]] + [as_peer(pages[1])]
    records.append({"url": BASE + "/private/1.html", "status": 200})
    records[2]["title"] = "Wrong"
    comparison = generic_peers.compare(records, expected)
    assert comparison.missing == [pages[0].url]
    assert comparison.extra == [BASE + "/private/1.html"]
    assert comparison.duplicates == 1
    assert comparison.field_mismatches == [
        f"{pages[3].url} title: 'Wrong' != {pages[3].title!r}"]
    assert not comparison.same


def test_each_peer_is_told_the_depth_the_start_and_robots() -> None:
    out = Path("/tmp/out.jsonl")
    scrapy = generic_peers.command("scrapy", BASE + "/", 3, out, Path("scrapy"))
    assert {"DEPTH_LIMIT=3", "ROBOTSTXT_OBEY=True", f"start={BASE}/"} <= set(scrapy)
    crawlee = generic_peers.command("crawlee", BASE + "/", 2, out, Path("python"))
    assert crawlee[crawlee.index("--depth") + 1] == "2"
    with pytest.raises(ValueError, match="unknown peer 'wget'"):
        generic_peers.command("wget", BASE, 3, out, Path("wget"))


def test_the_hostile_bench_gives_scrapy_a_30_s_download_timeout() -> None:
    scrapy = generic_peers.command("scrapy", BASE + "/", 1, Path("/tmp/out.jsonl"),
                                   Path("scrapy"), SCRAPY_SETTINGS)
    assert {"DEPTH_LIMIT=1", "DOWNLOAD_TIMEOUT=30"} <= set(scrapy)


@pytest.mark.slow
@pytest.mark.parametrize("peer", generic_peers.PEERS)
def test_on_the_small_site_each_peer_fetches_exactly_the_expected_pages(
        peer: str, capsys: pytest.CaptureFixture[str]) -> None:
    if not generic_peers.peer_ready(peer):
        pytest.skip(f"no {peer} peer venv (python -m bench.generic_peers check creates it)")
    assert generic_peers.main(["check", "--peers", peer, "--json"]) == 0
    result = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert result[peer]["pages"] == result["expected_pages"] == 38
    assert result[peer]["comparison"]["missing"] == []
