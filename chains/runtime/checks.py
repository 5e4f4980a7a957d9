"""Declaration-time checks: a chain that names anything its steps do not have fails at
launch, naming the chain, the link and the bad name.

Without them a typo publishes messages no worker consumes (a step or queue that does
not exist: the job waits forever), or links a record list no step yields (the crawl
silently covers part of the site).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chains.runtime.model import Chain, Link
    from chains.runtime.step import SiteStep


class ChainError(ValueError):
    """The chain does not fit the steps it names."""


def check_chain(chain: Chain, steps: Mapping[str, SiteStep[Any, Any]],
                queues: set[str]) -> None:
    """Every step exists, every queue is one a worker consumes, and every link reads a
    record list its source yields and maps fields that exist on both ends."""
    for name, spec in chain.steps.items():
        if spec.task not in steps:
            raise ChainError(f"chain {chain.name!r}: step {name!r} names {spec.task!r}, "
                             f"which no site declares (steps: {', '.join(sorted(steps))})")
        if spec.queue is not None and spec.queue not in queues:
            raise ChainError(f"chain {chain.name!r}: step {name!r} sends to queue "
                             f"{spec.queue!r}, which no worker consumes (queues: "
                             f"{', '.join(sorted(queues))})")
    for link in chain.links:
        _check_link(chain, link, steps[chain.steps[link.src].task],
                    steps[chain.steps[link.dst].task])


def _check_link(chain: Chain, link: Link, src: SiteStep[Any, Any],
                dst: SiteStep[Any, Any]) -> None:
    where = f"chain {chain.name!r}: link {link.src} -> {link.dst}"
    yields = src.records()
    if link.records not in yields:
        raise ChainError(f"{where} reads records {link.records!r}, which {src.name} does not "
                         f"yield (it yields: {', '.join(sorted(yields)) or 'nothing'}; item "
                         "collections come from its -> Parsed[...] annotation, follow lists "
                         "from follows=)")
    inputs = dst.input.model_fields
    unknown = sorted(set(link.map) - set(inputs))
    if unknown:
        raise ChainError(f"{where} maps {', '.join(unknown)}, not fields of "
                         f"{dst.input.__name__} (fields: {', '.join(inputs)})")
    item = next((i for i in src.items if i.collection == link.records), None)
    if item is not None:
        missing = sorted(set(link.map.values()) - set(item.model_fields))
        if missing:
            raise ChainError(f"{where} maps from {', '.join(missing)}, not fields of "
                             f"{item.__name__} (fields: {', '.join(item.model_fields)})")
