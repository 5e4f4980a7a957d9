"""One step tried on one live page: request, fetch, parse, and the units it would spawn.

What ``crawlchain try`` shows (Scrapy's ``parse``): no ledger, no store, no broker. The
request is the one a worker sends: built from the site's settings, under its default
browser headers, through its resource providers (user agent, cookie, device, proxy,
captcha, signature: the cluster's pools when given, this process's otherwise), by the
site's or step's fetch client, then
judged by the site's ban rules and the status, as a worker judges it; the fetch keeps
every bound of a real one (timeouts, size caps, redirects, content types). Errors come
back in the result, named as a failed unit would record them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chains.runtime import registry
from chains.runtime.checks import resolve
from chains.runtime.extensions import UnitContext
from chains.runtime.message import resources_of
from chains.runtime.units import children, unit_id
from config import get_settings
from exceptions import CrawlError
from external_interface.clients.factory import build_client, guard_from_settings
from external_interface.providers.leases import NeedResource, apply_providers, check_response

if TYPE_CHECKING:
    from external_interface.http import Request
    from external_interface.providers.bundle import Providers


def try_step(name: str, params: dict[str, Any], settings: dict[str, Any] | None = None,
             providers: Providers | None = None) -> dict[str, Any]:
    """Run step ``name`` on ``params`` under the site's ``settings`` (overrides of its
    defaults and environment), its requests through ``providers`` (default: built in
    this process's memory); see the module docstring for what comes back."""
    spec = registry.step(name)
    site = registry.site(spec.site)
    config = get_settings()
    out: dict[str, Any] = {"step": name, "params": params, "request": None, "status": None,
                           "bytes": None, "elapsed_s": None, "items": {}, "next_page": None,
                           "spawns": {}, "error": None}
    resources = resources_of(site, name, config.resources.disabled_sites)
    try:
        model = spec.params(params)
        fixed = site.read_settings(config.env_file, **(settings or {}))
        key = unit_id(name, params)
        client = site.client_for(spec.client, fixed)
        request = site.with_default_headers(spec.request(model, fixed), config.headers, key,
                                            client)
        out["request"] = shown(request, client)
        if resources is not None:
            from external_interface.providers.bundle import Providers

            chosen = providers or Providers.from_settings(config, None)
            request = apply_providers(chosen, resources, request, key, []).request
            out["request"] = shown(request, client)
        fetcher = build_client(client, config.fetch, guard_from_settings(config.fetch))
        try:
            response = fetcher.fetch_raw(request)
        finally:
            fetcher.close()
        out.update(status=response.status, bytes=len(response.body),
                   elapsed_s=response.elapsed_s)
        if response.status not in request.accept_statuses:
            check_response(response, resources)
        parsed = spec.parse(model, response, unit=UnitContext(
            "try", name, name, key, model, 0, fixed))
    except NeedResource as exc:
        out["error"] = (f"NoResource: no {exc.kind} of {site.name} is ready for this step: a "
                        f"worker would wait for one; the site's refill chain fills the pool "
                        f"when the cluster runs")
        return out
    except CrawlError as exc:
        out["error"] = exc.reason
        return out
    for item in parsed.items:
        out["items"].setdefault(item.collection, []).append(item.model_dump(mode="json"))
    out["next_page"] = parsed.next_params()
    for declared in registry.chains().values():
        chain = resolve(declared, registry.steps())
        for step_name, step in chain.steps.items():
            if step.task == name:
                found = children(chain, step_name, parsed.records(), parsed.next_params())
                out["spawns"][f"{chain.name}.{step_name}"] = {
                    child: [u["params"] for u in units] for child, units in found.items()}
    return out


def shown(request: Request, client: str) -> dict[str, Any]:
    return {"method": request.method, "url": request.url, "client": client,
            "params": request.params, "headers": request.headers}
