from __future__ import annotations

from sandbox.server import Faults, Site, decode_cursor, encode_cursor
from sandbox.world import Shape, World, expected_keys


def test_the_same_seed_builds_the_same_world() -> None:
    assert World(seed=5).articles == World(seed=5).articles
    assert World(seed=5).articles != World(seed=6).articles


def test_expected_graph_counts_every_page_including_empty_lists() -> None:
    world = World(seed=7, shape=Shape(users=3, articles=4, reposts=0, max_comments=0))
    expected = world.expected()
    authors = {a.author_id for a in world.articles.values()}
    assert expected["feed"] == {"units": 1, "items": 4}
    assert expected["comment"] == {"units": 4, "items": 0}  # one empty page per article
    assert expected["user_info"]["units"] == len(authors)
    assert expected_keys(world)["articles"] == set(world.articles)


def test_following_cursors_walks_every_comment_once() -> None:
    world = World(seed=7)
    site = Site(world)
    aid = max(world.articles, key=lambda a: world.articles[a].comments)
    seen, query = [], {"article_id": aid}
    while True:
        status, _, body = site.handle("/api/comments", query)
        assert status == 200
        import json

        page = json.loads(body)
        seen += [c["id"] for c in page["comments"]]
        if not page["next_cursor"]:
            break
        query = {"article_id": aid, "cursor": page["next_cursor"]}
    assert seen == [c["id"] for c in world.comments(aid)]
    assert decode_cursor(encode_cursor(30)) == 30


def test_flaky_urls_answer_503_the_configured_number_of_times() -> None:
    site = Site(World(seed=7), Faults(fail_first=2))
    statuses = [site.handle("/h5/feed", {"page": "1"})[0] for _ in range(3)]
    assert statuses == [503, 503, 200]


def test_unknown_pages_are_404() -> None:
    site = Site(World(seed=7))
    assert site.handle("/h5/feed", {"page": "999"})[0] == 404
    assert site.handle("/nowhere", {})[0] == 404
