from __future__ import annotations

from typing import Any

import pytest

from chains.checks import ChainError, check_chain
from chains.demo import demo
from chains.model import Chain, Link, Step
from chains.registry import all_chains, get_chain
from worker import app


@pytest.fixture(scope="module")
def tasks() -> Any:
    app.loader.import_default_modules()
    return app.tasks


def test_every_declared_chain_fits_the_registered_tasks(tasks: Any) -> None:
    assert "demo" in all_chains()
    for chain in all_chains().values():
        check_chain(chain, tasks)


def test_a_chain_naming_a_missing_task_is_refused(tasks: Any) -> None:
    chain = Chain(name="typo", start="a", steps={"a": Step(task="demo.h5.fed")})
    with pytest.raises(ChainError, match=r"demo\.h5\.fed"):
        check_chain(chain, tasks)


def test_a_mapping_to_a_field_the_step_lacks_is_refused(tasks: Any) -> None:
    chain = demo.model_copy(update={"links": [
        Link(src="feed", records="feed_entries", dst="user_info", map={"uid": "author_id"}),
    ]})
    with pytest.raises(ChainError, match="uid"):
        check_chain(chain, tasks)


def test_unknown_chain_names_list_the_known_ones() -> None:
    with pytest.raises(KeyError, match="demo"):
        get_chain("nope")
