"""The parse phase: each response through the site's parse function, as it arrives.

Per unit: the ``after_request`` hook, the step's parse (a pure function: response
in, items and next units out; a bug in it fails the unit for good, naming it), the
``before_save`` hook. Then, for a unit whose request went through providers, each
resource is reported: a ban burns the one it blames (the unit will avoid that exit),
a 429 rests the proxy, a network error marks it down a little. Parsing runs in the
message's own thread: the fetch threads only wait on sockets, so lxml's work is not
handed between threads.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from chains.runtime.pipeline.prepare import Batch, UnitRun, obey
from chains.runtime.units import rotated
from exceptions import CrawlError, RotateError
from external_interface.providers.outfit import settle


def parse(batch: Batch, runs: Iterable[UnitRun]) -> list[UnitRun]:
    """Every run, the fetched ones parsed; each settled with its providers."""
    return [_settle(batch, _parse_one(batch, r)) for r in runs]


def _parse_one(batch: Batch, r: UnitRun) -> UnitRun:
    if not r.live or r.response is None:
        return r
    ctx, response, hooks = r.ctx, r.response, batch.hooks
    assert ctx is not None
    try:
        fate = obey("after_request", hooks.after_request(ctx, response))
        if fate is not None:
            return r.ended(fate)
        started = time.monotonic()
        parsed = batch.step.parse(ctx.params, response, *batch.rt.interrupts, unit=ctx)
        r = r.but(parsed=parsed, parse_s=time.monotonic() - started, response=None)
        fate = obey("before_save", hooks.before_save(ctx, parsed.items))
    except CrawlError as exc:
        return r.failed(exc)
    return r.ended(fate) if fate is not None else r


def _settle(batch: Batch, r: UnitRun) -> UnitRun:
    """Report how the unit's resources did; a rotate error counts a rotation on the unit."""
    if batch.gear is None or r.outfit is None or r.fetch is None:
        return r
    avoid = settle(batch.rt.providers, batch.gear, r.outfit, r.error,
                   batch.rt.settings.politeness.max_penalty_s)
    if isinstance(r.error, RotateError):
        rotated(r.unit, avoid)
    return r
