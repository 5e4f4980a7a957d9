"""One step tried on one live page: request, fetch, parse, and the units it would spawn.

What ``crawlchain try`` shows (Scrapy's ``parse``): no ledger, no store, no broker; the
fetch keeps every bound of a real one (timeouts, size caps, redirects, content types).
Errors come back in the result, named as a failed unit would record them.
"""

from __future__ import annotations

from typing import Any

from chains.runtime import registry
from chains.runtime.model import all_chains
from chains.runtime.site import UnitContext
from chains.runtime.units import children, unit_id
from config import get_settings
from exceptions import CrawlError
from external_interface.fetch import Fetcher, raise_for_status
from external_interface.url_guard import UrlGuard


def try_step(name: str, params: dict[str, Any],
             settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run step ``name`` on ``params`` under the site's ``settings`` (overrides of its
    defaults and environment); see the module docstring for what comes back."""
    spec = registry.step(name)
    site = registry.site(spec.site)
    config = get_settings()
    out: dict[str, Any] = {"step": name, "params": params, "request": None, "status": None,
                           "bytes": None, "elapsed_s": None, "items": {}, "next_page": None,
                           "spawns": {}, "error": None}
    try:
        model = spec.params(params)
        fixed = site.read_settings(config.env_file, **(settings or {}))
        key = unit_id(name, params)
        request = site.dress(spec.request(model, fixed), config.headers, key)
        out["request"] = {"method": request.method, "url": request.url,
                          "params": request.params, "headers": request.headers}
        guard = UrlGuard(config.fetch.ssrf_allow) if config.fetch.ssrf_guard else None
        response = Fetcher(config.fetch, guard=guard).fetch_raw(request)
        out.update(status=response.status, bytes=len(response.body),
                   elapsed_s=response.elapsed_s)
        if response.status not in request.accept_statuses:
            raise_for_status(response)
        parsed = spec.parse(model, response, unit=UnitContext(
            "try", name, name, key, model, 0, fixed))
    except CrawlError as exc:
        out["error"] = exc.reason
        return out
    for item in parsed.items:
        out["items"].setdefault(item.collection, []).append(item.model_dump(mode="json"))
    out["next_page"] = parsed.next_params()
    for chain in all_chains().values():
        for step_name, step in chain.steps.items():
            if step.task == name:
                found = children(chain, step_name, parsed.records(), parsed.next_params())
                out["spawns"][f"{chain.name}.{step_name}"] = {
                    child: [u["params"] for u in units] for child, units in found.items()}
    return out
