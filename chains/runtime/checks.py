"""Launch-time checks: a chain that names anything its steps do not have fails at launch,
naming the chain, the link and the bad name; what a link leaves to its defaults is
filled in from the declared steps.

Without them a typo publishes messages no worker consumes (a step or queue that does
not exist: the job waits forever), or links a record list no step yields (the crawl
silently covers part of the site).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from exceptions import UserError
from utils.names import did_you_mean, listed

if TYPE_CHECKING:
    from chains.runtime.model import Chain, Link
    from chains.runtime.step import SiteStep


class ChainError(UserError):
    """The chain does not fit the steps it names."""


def resolve(chain: Chain, steps: Mapping[str, SiteStep[Any, Any]],
            queues: set[str] | None = None) -> Chain:
    """The chain checked, its links' ``records`` and ``map`` filled in: every step exists,
    every queue is one a worker consumes (when ``queues`` are given), every link reads a
    record list its source yields and maps fields that exist on both ends."""
    for name, spec in chain.steps.items():
        if spec.task not in steps:
            raise ChainError(f"chain {chain.name!r}: step {name!r} names {spec.task!r}"
                             f"{did_you_mean(spec.task, steps)}, which no site declares "
                             f"(steps: {listed(steps)})", "chain")
        if queues is not None and spec.queue is not None and spec.queue not in queues:
            raise ChainError(f"chain {chain.name!r}: step {name!r} sends to queue "
                             f"{spec.queue!r}, which no worker consumes (queues: "
                             f"{', '.join(sorted(queues))})")
        for rule in spec.rules:
            _check_rule(f"chain {chain.name!r}: step {name!r}: rule {rule.pattern!r}",
                        rule.step, steps)
    links = [_resolve_link(chain, link, steps[chain.steps[link.src].task],
                           steps[chain.steps[link.dst].task]) for link in chain.links]
    return chain.model_copy(update={"links": links})


def _check_rule(where: str, task: str, steps: Mapping[str, SiteStep[Any, Any]]) -> None:
    """A rule names a declared step whose input is made from the page's URL alone."""
    if task not in steps:
        raise ChainError(f"{where} names {task!r}{did_you_mean(task, steps)}, which no site "
                         f"declares (steps: {listed(steps)})", "rule")
    fields = steps[task].input.model_fields
    if "url" not in fields or any(f.is_required() for n, f in fields.items() if n != "url"):
        raise ChainError(f"{where}: {task}'s input must be made from the page's URL "
                         "alone (chains.api.Page, or a model with a url field)")


def _resolve_link(chain: Chain, link: Link, src: SiteStep[Any, Any],
                  dst: SiteStep[Any, Any]) -> Link:
    where = f"chain {chain.name!r}: link {link.src} -> {link.dst}"
    records = link.records or _default_records(where, src)
    yields = src.records()
    if records not in yields:
        raise ChainError(f"{where} reads records {records!r}, which {src.name} does not "
                         f"yield (it yields: {', '.join(sorted(yields)) or 'nothing'}; item "
                         "collections come from its -> Parsed[...] annotation, follow lists "
                         "from follows=)")
    inputs = dst.input.model_fields
    item = next((i for i in src.items if i.collection == records), None)
    mapping = link.map if link.map is not None else _shared(where, inputs, item)
    unknown = sorted(set(mapping) - set(inputs))
    if unknown:
        raise ChainError(f"{where} maps {', '.join(unknown)}, not fields of "
                         f"{dst.input.__name__} (fields: {', '.join(inputs)})")
    if item is not None:
        missing = sorted(set(mapping.values()) - set(item.model_fields))
        if missing:
            raise ChainError(f"{where} maps from {', '.join(missing)}, not fields of "
                             f"{item.__name__} (fields: {', '.join(item.model_fields)})")
    return link.model_copy(update={"records": records, "map": mapping})


def _default_records(where: str, src: SiteStep[Any, Any]) -> str:
    """The source's one follow list, else its one item collection."""
    if len(src.follows) == 1:
        return src.follows[0]
    collections = sorted({item.collection for item in src.items})
    if not src.follows and len(collections) == 1:
        return collections[0]
    raise ChainError(f"{where}: {src.name} yields {', '.join(sorted(src.records()))}: "
                     "name the one the link reads, Link(..., records=NAME)")


def _shared(where: str, inputs: Mapping[str, Any], item: Any) -> dict[str, str]:
    """The fields both ends share: the item's and the input's; every input field for a
    follow list (its records are dicts, whose keys are known only when they come)."""
    names = [n for n in inputs if item is None or n in item.model_fields]
    if not names:
        raise ChainError(f"{where}: the two ends share no field: give Link(..., map="
                         "{input_field: record_field})")
    return {name: name for name in names}
