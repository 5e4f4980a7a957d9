"""The deep-chain benchmark's verdicts: a crawler that stored a different number of
records, or did not answer every request, fails the run; the ratios are against the
better of Scrapy and Crawlee where the issue says so."""

from __future__ import annotations

from typing import Any

from bench import chain
from sandbox.forum.expected import expected
from sandbox.forum.world import ForumWorld

TRUTH = expected(ForumWorld.build(seed=5))


def run(crawler: str, **changes: Any) -> dict[str, Any]:
    record = {"crawler": crawler, "stored": TRUTH.counts(), "problems": [], "complete": True,
              "pages": TRUTH.requests}
    return {**record, **changes}


def test_equal_counts_everywhere_pass() -> None:
    check = chain.items_check([run("project"), run("plain"), run("scrapy")], TRUTH)
    assert check["same_counts"] and check["problems"] == {}


def test_a_missing_record_or_a_missing_request_fails_and_says_which() -> None:
    short = {**TRUTH.counts(), "users": TRUTH.counts()["users"] - 1}
    check = chain.items_check([run("project"), run("plain", stored=short),
                               run("crawlee", complete=False, pages=TRUTH.requests - 3)],
                              TRUTH)
    assert not check["same_counts"]
    assert set(check["problems"]) == {"plain", "crawlee"}
    assert "users" in check["problems"]["plain"][0]
    assert f"{TRUTH.requests - 3} pages answered" in check["problems"]["crawlee"][0]


def test_a_crawler_whose_records_differ_field_by_field_fails_even_with_equal_counts() -> None:
    check = chain.items_check([run("project", problems=["posts: 3 missing or different"]),
                               run("plain")], TRUTH)
    assert not check["same_counts"] and check["problems"]["project"]


def test_ratios_are_against_each_peer_and_the_better_of_scrapy_and_crawlee() -> None:
    def figures(per_s: float | None, per_cpu_s: float | None) -> dict[str, Any]:
        return {"pages_per_s": per_s, "pages_per_cpu_s": per_cpu_s}
    out = {"project": figures(800.0, 600.0), "scrapy": figures(250.0, 250.0),
           "crawlee": figures(400.0, 300.0), "plain": figures(1600.0, 2000.0)}
    ratios = chain.ratios(out)
    assert ratios["pages_per_cpu_s_vs_scrapy"] == 2.4
    assert ratios["pages_per_cpu_s_vs_crawlee"] == 2.0
    assert ratios["pages_per_s_vs_crawlee"] == 2.0
    assert ratios["pages_per_cpu_s_vs_plain"] == 0.3
    assert ratios["pages_per_cpu_s_vs_best_peer"] == 2.0
    out["crawlee"] = figures(None, None)  # not run
    assert chain.ratios(out)["pages_per_cpu_s_vs_crawlee"] is None
    assert chain.ratios(out)["pages_per_s_vs_best_peer"] == 3.2


def test_the_targets_are_judged_only_when_their_crawlers_ran() -> None:
    ratios = {"pages_per_cpu_s_vs_best_peer": 2.1, "pages_per_s_vs_best_peer": 1.5,
              "pages_per_cpu_s_vs_plain": None}
    assert chain.targets(ratios, same_counts=True) == {
        "pages_per_cpu_s_2x_best_peer": True, "pages_per_s_2x_best_peer": False,
        "pages_per_cpu_s_half_plain": None, "same_counts": True}
