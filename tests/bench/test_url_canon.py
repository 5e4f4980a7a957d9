"""The URL canon benchmark runs end to end on a small mix and measures every client."""

from __future__ import annotations

from bench.url_canon import hrefs, run
from utils.urls import fetch_url


def test_the_mix_holds_links_to_follow_and_links_to_drop() -> None:
    links = hrefs(500)
    kept = [url for href in links if (url := fetch_url(href, "https://www.shop-example.com/"))]
    assert 0 < len(kept) < len(links)
    assert any("%C3%B6" in url for url in kept)  # some needed percent-encoding


def test_a_small_run_reports_ours_and_every_peer() -> None:
    result = run(200, 1)
    assert set(result["peer"]) == {"urljoin", "scrapy_follow", "scrapy_and_key"}
    assert result["cpu_us_per_href"]["median"] > 0 and result["with_key"]["best"] > 0
