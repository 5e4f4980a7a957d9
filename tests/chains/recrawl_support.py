"""Chain variants for recrawl tests."""

from __future__ import annotations

from chains.runtime.model import Chain
from external_interface.dedup import RecrawlPolicy


def without_recrawl(chain: Chain) -> Chain:
    """The same chain fetching every unit every time (tests that relaunch it)."""
    steps = {name: s.model_copy(update={"recrawl": None}) for name, s in chain.steps.items()}
    return chain.model_copy(update={"steps": steps})


def with_policy(chain: Chain, step: str, policy: RecrawlPolicy) -> Chain:
    steps = dict(chain.steps)
    steps[step] = steps[step].model_copy(update={"recrawl": policy})
    return chain.model_copy(update={"steps": steps})
