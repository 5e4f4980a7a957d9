from __future__ import annotations

import pytest
from pydantic import ValidationError

from chains.runtime.model import Chain, Link, Step


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
