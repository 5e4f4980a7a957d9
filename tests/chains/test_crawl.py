"""How a generic crawl's options travel with its job (``chains.crawl.plan_crawl``)."""

from __future__ import annotations

import pytest

from chains.cluster import plan_crawl
from chains.runtime.preflight import LaunchRefused


def test_the_options_become_the_chain_the_roots_and_the_site_settings() -> None:
    planned = plan_crawl(["https://docs.example.org/a", "https://www.example.com/"],
                         max_depth=2, allow=[r"/docs/"], deny=[r"\?print"], max_pages=50,
                         sitemaps=["https://docs.example.org/sitemap.xml"], http_cache=True)
    chain = planned.chain
    assert chain.max_depth == 2 and chain.steps["page"].max_units == 50
    assert chain.allowed_domains == ["example.org", "example.com"]  # the starts' domains
    assert chain.steps["sitemap"].same_depth
    assert planned.start == {"url": "https://docs.example.org/a"}
    assert planned.roots == {"page": [{"url": "https://www.example.com/"}],
                             "sitemap": [{"url": "https://docs.example.org/sitemap.xml",
                                          "level": 0}]}
    assert planned.settings == {"allow_domains": ["example.org", "example.com"],
                                "allow": [r"/docs/"], "deny": [r"\?print"], "http_cache": True}


def test_a_start_without_a_registrable_domain_allows_its_host() -> None:
    planned = plan_crawl(["http://127.0.0.1:8000/"], allow_domains=[])
    assert planned.chain.allowed_domains == ["127.0.0.1"]
    assert plan_crawl(["http://www.example.org/"], ["example.org"]).chain.allowed_domains == [
        "example.org"]


def test_a_start_outside_the_allowed_domains_is_refused_naming_the_domain_to_allow() -> None:
    with pytest.raises(LaunchRefused, match=r"--start http://127.0.0.1:8000/ is outside "
                       r"--allow-domain example.org: .* add --allow-domain 127.0.0.1"):
        plan_crawl(["http://127.0.0.1:8000/"], ["example.org"])
