"""A chain that names what its steps lack fails at launch, naming chain, link and name."""

from __future__ import annotations

import pytest

from chains.demo import demo
from chains.runtime.checks import ChainError, resolve
from chains.runtime.launch import worker_queues
from chains.runtime.model import Chain, Link, Rule, Step
from chains.runtime.registry import chain as get_chain
from chains.runtime.registry import chains as all_chains
from chains.runtime.registry import steps

QUEUES = worker_queues()


def relinked(*links: Link) -> Chain:
    return demo.model_copy(update={"links": list(links)})


def test_every_declared_chain_fits_the_declared_steps() -> None:
    assert {"demo", "properties"} <= set(all_chains())
    for chain in all_chains().values():
        resolve(chain, steps(), QUEUES)


def test_a_chain_naming_a_missing_step_is_refused() -> None:
    chain = Chain(name="typo", start="a", steps={"a": Step(task="demo.h5.fed")})
    with pytest.raises(ChainError, match=r"chain 'typo': step 'a' names 'demo\.h5\.fed'"):
        resolve(chain, steps(), QUEUES)


def test_a_link_reading_records_its_source_does_not_yield_is_refused() -> None:
    chain = relinked(Link(src="feed", records="feed_entry", dst="user_info",
                          map={"user_id": "author_id"}))
    with pytest.raises(ChainError, match=r"link feed -> user_info reads records 'feed_entry'"
                       r".*yields: feed_entries"):
        resolve(chain, steps(), QUEUES)


def test_a_mapping_to_a_field_the_next_step_lacks_is_refused() -> None:
    chain = relinked(Link(src="feed", records="feed_entries", dst="user_info",
                          map={"uid": "author_id"}))
    with pytest.raises(ChainError, match=r"link feed -> user_info maps uid, not fields of "
                       "UserRef"):
        resolve(chain, steps(), QUEUES)


def test_a_mapping_from_a_field_the_record_lacks_is_refused() -> None:
    chain = relinked(Link(src="feed", records="feed_entries", dst="user_info",
                          map={"user_id": "writer_id"}))
    with pytest.raises(ChainError, match="maps from writer_id, not fields of FeedEntry"):
        resolve(chain, steps(), QUEUES)


def test_a_queue_no_worker_consumes_is_refused() -> None:
    chain = Chain(name="lost", start="a", steps={"a": Step(task="demo.h5.feed", queue="dmeo")})
    with pytest.raises(ChainError, match="step 'a' sends to queue 'dmeo'"):
        resolve(chain, steps(), QUEUES)


def test_unknown_chain_names_list_the_known_ones() -> None:
    with pytest.raises(ValueError, match="demo"):
        get_chain("nope")


def test_a_rule_naming_a_step_that_cannot_take_a_page_url_is_refused() -> None:
    page = Step(task="crawl.web.page", rules=[Rule("/u/", "demo.h5.user_info")])
    chain = Chain(name="r", start="page", steps={"page": page})
    with pytest.raises(ChainError, match=r"rule '/u/': demo.h5.user_info's input must be made "
                       "from the page's URL alone"):
        resolve(chain, steps(), QUEUES)
    typo = Chain(name="r", start="page", steps={"page": Step(
        task="crawl.web.page", rules=[Rule("/docs/", "docs.web.doc_pag")])})
    with pytest.raises(ChainError, match=r"names 'docs\.web\.doc_pag' \(did you mean "
                       r"'docs\.web\.doc_page'\?\), which no site declares"):
        resolve(typo, steps(), QUEUES)
