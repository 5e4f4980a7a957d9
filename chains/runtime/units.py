"""Units of work as messages carry them: ``{"id", "params", "page"}`` under an envelope.

A message is ``[envelope, units]``: the envelope says which job, which step of its
chain and how deep; ``units`` is a batch of that one step. Unit ids are
deterministic (step + params), so the same page reached twice in a job is one
unit, and a redelivered parent names children the ledger already knows.

A unit that was rotated onto a fresh resource or made to wait for a pool carries
that history in ``unit["rotation"]`` (rotations spent, waits, exits to avoid, and
the retries its earlier messages spent), so whichever worker takes it next knows
what it already burnt; the key is not part of its id.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

if TYPE_CHECKING:
    from chains.runtime.model import Chain


class Envelope(TypedDict):
    job: str
    step: str
    depth: int


class Unit(TypedDict):
    id: str
    params: dict[str, Any]
    page: int  # position in its list: 0 for a first page, +1 for each next page
    rotation: NotRequired[dict[str, Any]]  # resources this unit burnt, waits it made


# Built once: ``json.dumps`` with options builds an encoder per call, and every child of
# a crawl passes here twice (its id, its revival payload). Same bytes as ``json.dumps``.
_ID_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)
_PAYLOAD_JSON = json.JSONEncoder(separators=(",", ":"))


def unit_id(step: str, params: Mapping[str, Any]) -> str:
    """Same step and params, same id: in a job, a unit exists once."""
    raw = _ID_JSON.encode([step, params])
    return hashlib.blake2b(raw.encode(), digest_size=10).hexdigest()


def make_unit(step: str, params: Mapping[str, Any], page: int = 0) -> Unit:
    return {"id": unit_id(step, params), "params": dict(params), "page": page}


def children(chain: Chain, step: str, records: Mapping[str, list[dict[str, Any]]],
             next_page: Mapping[str, Any] | None, page: int = 0) -> dict[str, list[Unit]]:
    """The units a finished unit of ``step`` spawns, grouped by step, in order, deduplicated.
    A record without a field the link maps leaves that field to the input's default."""
    out: dict[str, dict[str, Unit]] = {}
    if any(link.records is None or link.map is None for link in chain.links):
        raise ValueError(f"chain {chain.name!r} is not resolved: its links' defaults are "
                         "filled in at launch (chains.runtime.checks.resolve)")
    if next_page is not None:
        unit = make_unit(step, next_page, page + 1)
        out.setdefault(step, {})[unit["id"]] = unit
    for link in chain.links_from(step):
        for record in records.get(link.records or "", []):
            child = {dst: record[src] for dst, src in (link.map or {}).items() if src in record}
            unit = make_unit(link.dst, child)
            out.setdefault(link.dst, {})[unit["id"]] = unit
    return {name: list(units.values()) for name, units in out.items()}


def by_depth(step: str, depth: int, spawned: Mapping[str, Iterable[Unit]],
             hop: int = 1) -> dict[int, dict[str, list[Unit]]]:
    """A next page stays at its list's depth; a linked child goes ``hop`` deeper (one,
    or none for a ``same_depth`` step's children).

    Depth orders the queue (deeper first) and bounds the job: counting next pages
    would starve parallel lists, and cut a long list at ``max_depth``.
    """
    out: dict[int, dict[str, list[Unit]]] = {}
    for child_step, units in spawned.items():
        for unit in units:
            same_list = child_step == step and unit.get("page", 0) > 0
            out.setdefault(depth + (0 if same_list else hop), {}).setdefault(
                child_step, []).append(unit)
    return out


def revival_payload(step: str, depth: int, unit: Unit) -> str:
    """What the ledger keeps of an open unit to publish it again: step, depth, unit."""
    return _PAYLOAD_JSON.encode([step, depth, unit])


def revived(payload: str) -> tuple[str, int, Unit]:
    """The inverse of ``revival_payload``."""
    step, depth, unit = json.loads(payload)
    return str(step), int(depth), unit


# -- a unit's rotation state ----------------------------------------------------
def rotation_state(unit: Unit) -> dict[str, Any]:
    return dict(unit.get("rotation") or {})


def rotations(unit: Unit) -> int:
    return int(rotation_state(unit).get("count", 0))


def avoided(unit: Unit) -> list[str]:
    """Proxies (``host:port``) that banned this unit."""
    return [str(p) for p in rotation_state(unit).get("avoid", [])]


def rotated(unit: Unit, avoid: str | None) -> int:
    """Count one rotation (and the proxy to avoid from now on); returns the count."""
    now = rotation_state(unit)
    now["count"] = int(now.get("count", 0)) + 1
    if avoid is not None and avoid not in now.setdefault("avoid", []):
        now["avoid"] = [*now["avoid"], avoid]
    unit["rotation"] = now
    return int(now["count"])


def waited(unit: Unit) -> int:
    """Count one wait for an empty pool; returns the count."""
    now = rotation_state(unit)
    now["waits"] = int(now.get("waits", 0)) + 1
    unit["rotation"] = now
    return int(now["waits"])


def retries_before(unit: Unit) -> int:
    """Retries the unit spent in messages before the one it is in now: a unit sent
    back to wait (for a slot, a pool, robots.txt) or to rotate travels in a new message,
    whose own count of retries starts again at 0."""
    return int(rotation_state(unit).get("retries", 0))


def carry_retries(unit: Unit, spent: int) -> None:
    """Add the retries the unit's current message spent, before it leaves that message."""
    if spent:
        now = rotation_state(unit)
        now["retries"] = int(now.get("retries", 0)) + spent
        unit["rotation"] = now
