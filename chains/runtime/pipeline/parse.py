"""The parse phase: each response through the site's parse function, as it arrives.

Per unit: the middlewares' ``process_response`` (the cluster's, then the site's), the
step's parse (a pure function: response in, items and next units out; a bug in it fails
the unit for good, naming it), and the parse of each of the chain step's ``rules`` whose
pattern the page's URL matches (their items join the step's). Then, for a unit whose
request went through providers, each resource is reported: a ban burns the one it blames
(the unit will avoid that exit), a 429 rests the proxy, a network error marks it down a
little. A ``render="auto"`` step's page that gave nothing over ``http`` is rendered in
the browser and parsed again, while its pattern is undecided (``chains.runtime.render``).
Parsing runs in the message's own thread: the fetch threads only wait on
sockets, so lxml's work is not handed between threads.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from chains.runtime import registry
from chains.runtime.extensions import UnitContext
from chains.runtime.model import Rule
from chains.runtime.pipeline.batch import Batch, UnitRun
from chains.runtime.pipeline.fetch import fetch_rendered
from chains.runtime.render import CHOICES, PLAIN, RENDER
from chains.runtime.step import Parsed, site_code
from chains.runtime.units import rotated
from exceptions import CrawlError, RotateError
from external_interface.http import Response
from external_interface.providers.leases import report_leases
from external_interface.storage import Item


def parse(batch: Batch, runs: Iterable[UnitRun]) -> list[UnitRun]:
    """Every run, the fetched ones parsed; each one's leases reported."""
    return [_report(batch, _parse_one(batch, r)) for r in runs]


def _parse_one(batch: Batch, r: UnitRun) -> UnitRun:
    parsed = _parsed(batch, r)
    if batch.step.render != "auto" or parsed.parsed is None or r.fetch is None \
            or r.fetch.rendered or r.request is None:
        return parsed
    url, step = r.request.full_url, batch.step.name
    if not empty(parsed.parsed) or CHOICES.get(step, url) is not None:
        CHOICES.decide(step, url, PLAIN)
        return parsed
    rendered = _parsed(batch, fetch_rendered(batch, r))  # nothing found: the browser's page?
    if rendered.parsed is not None:
        CHOICES.decide(step, url, PLAIN if empty(rendered.parsed) else RENDER)
    return rendered


def empty(parsed: Parsed[Any]) -> bool:
    """A parse that found nothing: no item, no record to follow, no next page."""
    return not parsed.items and not any(parsed.follow.values()) and parsed.next_page is None


def _parsed(batch: Batch, r: UnitRun) -> UnitRun:
    if not r.live or r.response is None:
        return r
    ctx, response, interrupts = r.ctx, r.response, batch.rt.interrupts
    assert ctx is not None
    try:
        for middleware in batch.middlewares:
            response = site_code(middleware.process_response, response, ctx,
                                 passing=interrupts)
        started = time.monotonic()
        parsed = batch.step.parse(ctx.params, response, *interrupts, unit=ctx)
        for rule in batch.chain.steps[ctx.step].rules:
            if rule_pattern(rule.pattern).search(response.url):
                parsed.items += by_rule(rule, response, ctx, interrupts)
    except CrawlError as exc:
        return r.failed(exc)
    return r.replace(parsed=parsed, parse_s=time.monotonic() - started, response=None)


def by_rule(rule: Rule, response: Response, ctx: UnitContext,
            interrupts: tuple[type[BaseException], ...]) -> list[Item]:
    """The items of a rule's step on the page: its input is the page's URL."""
    spec = registry.step(rule.step)
    return list(spec.parse(spec.params({"url": response.url}), response, *interrupts,
                           unit=ctx).items)


@lru_cache(maxsize=256)
def rule_pattern(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _report(batch: Batch, r: UnitRun) -> UnitRun:
    """Report how the unit's resources did; a rotate error counts a rotation on the unit."""
    if batch.resources is None or r.leases is None or r.fetch is None:
        return r
    avoid = report_leases(batch.rt.providers, batch.resources, r.leases, r.error,
                          batch.rt.settings.politeness.max_penalty_s)
    if isinstance(r.error, RotateError):
        rotated(r.unit, avoid)
    return r
