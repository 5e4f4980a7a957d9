"""A chain is plain data: steps named by their function, links that default to what both
ends share, checked and filled in against the declared steps at launch."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from chains.runtime.checks import ChainError, resolve
from chains.runtime.model import Chain, Link, Step
from chains.runtime.registry import steps
from chains.runtime.units import children
from sites.forum import board, boards, thread, user


def test_a_link_to_an_unknown_step_fails_at_declaration() -> None:
    with pytest.raises(ValidationError, match="unknown step 'detial'"):
        Chain(name="c", start="a", steps={"a": Step(task="s.p.a")},
              links=[Link(src="a", records="x", dst="detial", map={})])


def test_an_unknown_start_step_fails_at_declaration() -> None:
    with pytest.raises(ValidationError, match="start step"):
        Chain(name="c", start="b", steps={"a": Step(task="s.p.a")})


def test_a_chain_survives_a_json_round_trip_unchanged() -> None:
    chain = Chain(name="c", start="a",
                  steps={"a": Step(task="s.p.a", batch_size=7), "b": Step(task="s.p.b")},
                  links=[Link(src="a", records="rows", dst="b", map={"id": "row_id"})])
    assert Chain.model_validate_json(chain.model_dump_json()) == chain


def test_allowed_domains_admit_subdomains_and_refuse_the_rest() -> None:
    chain = Chain(name="c", start="a", steps={"a": Step(task="s.p.a")},
                  allowed_domains=["example.com"])
    assert chain.allows("https://example.com/x") and chain.allows("http://m.example.com/")
    assert not chain.allows("http://example.com.evil.net/")
    assert not chain.allows("http://badexample.com/")
    assert Chain(name="c", start="a", steps={"a": Step(task="s.p.a")}).allows("http://any/")


def test_steps_given_as_a_list_are_named_by_their_function() -> None:
    chain = Chain("forum", start=boards, steps=[boards, Step(board, inline_next=5)],
                  links=[Link(boards, board)])
    assert list(chain.steps) == ["boards", "board"] and chain.start == "boards"
    assert chain.steps["board"] == Step(task="forum.web.board", inline_next=5)
    assert (chain.links[0].src, chain.links[0].dst) == ("boards", "board")
    assert Chain("x", start="board", steps=[Step(task="forum.web.board")]).steps["board"]


def test_two_steps_of_one_name_in_a_list_are_refused() -> None:
    with pytest.raises(ValueError, match="two steps of the chain are named 'board'"):
        Chain("c", start=board, steps=[board, Step(task="other.web.board")])


def test_a_link_reads_the_sources_one_follow_list_and_maps_the_fields_both_share() -> None:
    chain = resolve(Chain("f", start=boards, steps=[boards, board, thread, user],
                          links=[Link(boards, board), Link(board, thread),
                                 Link(thread, user, records="posts")]), steps())
    board_link, thread_link, user_link = chain.links
    assert (board_link.records, board_link.map) == ("board_pages", {"url": "url"})
    assert (thread_link.records, thread_link.map) == ("threads", {"url": "url"})
    assert (user_link.records, user_link.map) == ("posts", {"author_id": "author_id"})


def test_a_link_whose_records_are_ambiguous_says_which_to_name() -> None:
    with pytest.raises(ChainError, match=r"link thread -> user: forum.web.thread yields posts, "
                       r"threads: name the one the link reads, Link\(\.\.\., records=NAME\)"):
        resolve(Chain("f", start=thread, steps=[thread, user], links=[Link(thread, user)]),
                steps())


def test_a_link_whose_ends_share_no_field_says_to_map_them() -> None:
    with pytest.raises(ChainError, match="the two ends share no field"):
        resolve(Chain("f", start=boards, steps=[boards, user],
                      links=[Link(boards, user, records="boards")]), steps())


def test_an_unresolved_chain_is_refused_where_children_are_made() -> None:
    chain = Chain("f", start=boards, steps=[boards, board], links=[Link(boards, board)])
    with pytest.raises(ValueError, match="not resolved"):
        children(chain, "boards", {"board_pages": [{"url": "http://a/"}]}, None)
