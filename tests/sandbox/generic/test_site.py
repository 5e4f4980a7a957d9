"""The generic site's page graph is what its docstring promises, at both sizes."""

from __future__ import annotations

from collections import Counter

import pytest

from sandbox.generic.expected import (
    depths,
    expected_records,
    expected_urls,
    followed_paths,
    pages_by_depth,
    sitemap_paths,
)
from sandbox.generic.site import FORMS, GenericSite, Shape, Writer, build, resolve_links

BASE = "http://127.0.0.1:5000"


@pytest.fixture(scope="module")
def bench() -> GenericSite:
    return build(Shape(), BASE)


@pytest.fixture(scope="module")
def small() -> GenericSite:
    return build(Shape.small(), BASE)


def test_the_bench_size_has_over_500_pages_within_depth_3(bench: GenericSite) -> None:
    assert {d: len(paths) for d, paths in pages_by_depth(bench, 4).items()} == {
        0: 1, 1: 20, 2: 266, 3: 264, 4: 12}
    records = expected_records(bench, 3)
    assert len(records) == 561
    assert sum(r.status == 200 for r in expected_records(bench, 3, sitemap=False)) == 549


def test_the_small_size_matches_its_docstring(small: GenericSite) -> None:
    assert {d: len(paths) for d, paths in pages_by_depth(small, 4).items()} == {
        0: 1, 1: 9, 2: 14, 3: 12, 4: 3}
    assert (len(expected_records(small, 3, sitemap=False)), len(expected_records(small, 3))) \
        == (36, 39)


def test_each_kind_of_page_sits_at_its_documented_depth(bench: GenericSite) -> None:
    found: dict[str, set[int]] = {}
    for path, depth in depths(bench, 10).items():
        found.setdefault(bench.page(path).kind, set()).add(depth)
    assert found == {"home": {0}, "section": {1}, "about": {1}, "moved": {1}, "not-found": {1},
                     "index": {1, 2}, "doc": {2}, "notes": {3}, "deep": {4}}


def test_four_index_pages_carry_over_10000_links_each(bench: GenericSite) -> None:
    sizes = sorted(len(p.hrefs) for p in bench.pages.values() if p.kind == "index")
    assert len(sizes) == 4 and sizes[0] >= 10_000
    genindex = bench.pages["/reference/genindex.html"]
    resolved = resolve_links(bench.url(genindex.path), genindex.hrefs)
    assert len(resolved) < len(genindex.hrefs) / 10  # mostly duplicates of the same pages
    assert sum(".other.example" in h or "//other.example" in h for h in genindex.hrefs) > 100


def test_a_page_beyond_depth_1_is_linked_only_from_the_depth_above(bench: GenericSite) -> None:
    """What makes the page set the same whatever order a crawler fetches in."""
    depth = depths(bench, 10)
    for path, d in depth.items():
        final, _ = bench.resolve(path)
        for target in followed_paths(bench, bench.links(final)):
            assert target == path or depth[target] <= 1 or depth[target] == d + 1, (path, target)


def test_every_same_site_link_names_a_real_page(bench: GenericSite) -> None:
    broken = {f"/docs/missing-{k + 1}.html" for k in range(bench.shape.broken)}
    for page in bench.pages.values():
        for target in followed_paths(bench, bench.links(page.path)):
            assert target in bench.pages or target in broken, (page.path, target)


def test_links_come_in_every_form(small: GenericSite) -> None:
    writer, source = Writer(small), "/reference/genindex.html"
    target = "/docs/tutorial/config-02.html"
    hrefs = {form: writer.href(source, target, form) for form in FORMS}
    assert hrefs == {
        "absolute": f"{BASE}{target}", "root": target,
        "relative": "../docs/tutorial/config-02.html",
        "dotted": "../docs/tutorial/./config-02.html", "netpath": f"//127.0.0.1:5000{target}",
        "fragment": f"{target}#top", "absolute-fragment": f"{BASE}{target}#top"}
    assert set(resolve_links(BASE + source, tuple(hrefs.values()))) == {BASE + target}
    forms = Counter(h.split(":")[0] for h in small.pages["/"].hrefs if ":" in h)
    assert {"mailto", "javascript", "tel"} <= set(forms)


def test_orphans_are_reachable_only_through_the_sitemap(bench: GenericSite) -> None:
    orphans = set(sitemap_paths(bench)) - {"/"}
    assert len(orphans) == 10
    assert not orphans & set(depths(bench, 10))
    assert {BASE + p for p in orphans} <= set(expected_urls(bench, 3))


def test_private_pages_are_linked_but_never_expected(bench: GenericSite) -> None:
    home = bench.pages["/"]
    assert any("/private/" in h for h in home.hrefs)
    assert not [u for u in expected_urls(bench, 10) if "/private/" in u]


def test_a_redirect_is_recorded_under_the_linked_url_with_its_final_url(small: GenericSite) -> None:
    by_url = {r.url: r for r in expected_records(small, 1)}
    moved = by_url[f"{BASE}/moved/1.html"]
    assert (moved.final_url, moved.status, moved.title) == (
        f"{BASE}/docs/renamed/1.html", 200, "Renamed page 1")
    missing = by_url[f"{BASE}/docs/missing-1.html"]
    assert (missing.status, missing.title, missing.canonical) == (404, "Page not found", None)


def test_the_site_is_the_same_for_the_same_seed(small: GenericSite) -> None:
    again = build(Shape.small(), BASE)
    assert expected_records(again, 3) == expected_records(small, 3)
    other = build(Shape(**{**Shape.small().__dict__, "seed": 2}), BASE)
    assert expected_records(other, 3) != expected_records(small, 3)


def test_a_depth_below_zero_is_refused() -> None:
    with pytest.raises(ValueError, match="max_depth must be 0 or more"):
        depths(build(Shape.small(), BASE), -1)
