"""Launch-time checks of what the user gave: every mistake that can be seen before a
message is queued is refused then, in one line that names the input and the fix.

    start params    each name a field of the start step's input (or a site's setting),
                    the nearest one suggested; each value of its field's type
    settings        each name a field of the settings of a site the chain crawls, each
                    value of its type
    start URLs      each root unit's request built as a worker would build it: an
                    absolute http(s) URL, on the chain's allowed domains
    workers         a live worker consumes every queue the chain uses (``roster``), or
                    the command that starts one is named (``LAUNCH_WORKERS``)

The chain's own shape (steps, links, queues) is ``checks.resolve``'s; the URL
templates of every step are the registry's (``registry.steps``); the storage URL and
the state Redis are checked when the runtime is built (``context.Runtime``). Each
refusal is a ``LaunchRefused``: a ``UserError`` whose ``field`` names the input
(``params.page``, ``settings.base_url``, ``start``), for the job API's answer.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from chains.runtime import registry
from chains.runtime.checks import ChainError
from chains.runtime.dispatch import queue_of
from chains.runtime.roster import Roster
from exceptions import CrawlError, InvalidParams
from utils.names import did_you_mean, listed
from utils.urls import UnsupportedURL, normalize_url, redact_url

if TYPE_CHECKING:
    import redis
    from pydantic import BaseModel

    from chains.runtime.model import Chain

log = logging.getLogger(__name__)

WorkerPolicy = Literal["require", "warn", "off"]
JOB_PARAMS = frozenset({"requested_by"})  # params of the job itself (a refill's requester)


class LaunchRefused(ChainError):
    """A launch refused before anything was queued: ``field`` names the input at fault."""


def split_params(chain: Chain, params: Mapping[str, Any]
                 ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Keyword arguments of a launch, as (start params, {site: settings overrides}).

    A keyword that names a field of a site's settings sets it; one that is neither a
    field of the start step's input nor a setting is refused, the nearest name
    suggested; a name that is both is refused as ambiguous.
    """
    start = registry.step(chain.steps[chain.start].task)
    fields = start.input.model_fields
    root: dict[str, Any] = {}
    overrides: dict[str, dict[str, Any]] = {site: {} for site in chain_sites(chain)}
    for key, value in params.items():
        owners = [s for s in overrides if key in registry.site(s).settings.model_fields]
        if owners and key in fields:
            raise LaunchRefused(f"chain {chain.name!r}: {key!r} is both a setting of "
                                f"{owners[0]} and a field of the start step's input; pass the "
                                f"setting as settings={{{owners[0]!r}: {{{key!r}: ...}}}}",
                                f"params.{key}")
        if owners:
            for site in owners:
                overrides[site][key] = value
        elif key in fields or key in JOB_PARAMS:
            root[key] = value
        else:
            known = [*fields, *setting_names(chain)]
            raise LaunchRefused(
                f"chain {chain.name!r}: {key!r} is not a param of {start.name}"
                f"{did_you_mean(key, known)} nor a setting of {', '.join(overrides)} "
                f"(params: {listed(fields)}; settings: {listed(setting_names(chain))})",
                f"params.{key}")
    return root, overrides


def check_settings(chain: Chain, settings: Mapping[str, Mapping[str, Any]]) -> None:
    """Every explicit setting names a declared site and, for a site the chain crawls, a
    field of its settings (settings of other sites are passed on unused: a caller may
    hold every site's, as a refill launch holds its requester's)."""
    sites = chain_sites(chain)
    for site, values in settings.items():
        if site not in registry.site_names():
            raise LaunchRefused(f"chain {chain.name!r}: settings name site {site!r}"
                                f"{did_you_mean(site, registry.site_names())}, which does not "
                                f"exist (the chain crawls {', '.join(sites)})",
                                f"settings.{site}")
        fields = registry.site(site).settings.model_fields if site in sites else {}
        for key in values if site in sites else ():
            if key not in fields:
                raise LaunchRefused(
                    f"chain {chain.name!r}: site {site!r} has no setting {key!r}"
                    f"{did_you_mean(key, fields)} (settings: {listed(fields)})",
                    f"settings.{key}")


def read_settings(site: str, values: Mapping[str, Any], env_file: Any) -> dict[str, Any]:
    """The site's settings for the job, a bad value refused naming its field."""
    try:
        read = registry.site(site).read_settings(env_file, **values)
    except ValidationError as exc:
        first = exc.errors()[0]
        name = ".".join(str(p) for p in first["loc"]) or "settings"
        env = f"{site.upper()}_{name.upper()}"
        raise LaunchRefused(f"setting {name}={first.get('input')!r} of site {site!r}: "
                            f"{first['msg']} (given with --set, settings=, or {env} in the "
                            "environment)", f"settings.{name}") from None
    return read.model_dump(mode="json")


def check_roots(chain: Chain, roots: Mapping[str, Sequence[Mapping[str, Any]]],
                settings: Mapping[str, Mapping[str, Any]]) -> None:
    """Each root unit's params against its step's input, and the request a worker would
    build from them: an absolute http(s) URL on the chain's allowed domains."""
    for step_key, units in roots.items():
        spec = registry.step(chain.steps[step_key].task)
        site = registry.site(spec.site).stored_settings(dict(settings.get(spec.site, {})))
        for params in units:
            model = _params(chain, step_key, spec.params, params)
            _check_url(chain, step_key, _request_url(chain, step_key, spec, model, site))


def _params(chain: Chain, step_key: str, validate: Any, params: Mapping[str, Any]) -> Any:
    try:
        return validate({k: v for k, v in params.items() if k not in JOB_PARAMS})
    except InvalidParams as exc:
        cause = exc.__cause__
        errors = cause.errors() if isinstance(cause, ValidationError) else []
        name = ".".join(str(p) for p in errors[0]["loc"]) if errors else ""
        how = f"{name}=VALUE" if name else "key=value"
        raise LaunchRefused(f"chain {chain.name!r}: {exc} (give {how} on the command "
                            f"line, or {name or 'it'}=... to launch())",
                            f"params.{name}" if name else "params") from None


def _request_url(chain: Chain, step_key: str, spec: Any, model: BaseModel,
                 settings: BaseModel) -> str:
    try:
        return str(spec.request(model, settings).url)
    except (CrawlError, KeyError, ValueError, AttributeError, IndexError) as exc:
        raise LaunchRefused(f"chain {chain.name!r}: the {step_key} step's request cannot "
                            f"be built from its params and settings: {exc}",
                            "params") from None


def _check_url(chain: Chain, step_key: str, url: str) -> None:
    """A start URL a worker can fetch, on the chain's allowed domains."""
    try:
        normalize_url(url)
    except UnsupportedURL as exc:
        hint = ("set the site's base_url (--set base_url=http://...)" if url.startswith("/")
                else "give an absolute http(s) URL (http://host/path)")
        raise LaunchRefused(f"chain {chain.name!r}: the {step_key} step would fetch "
                            f"{redact_url(url)!r}: {exc}; {hint}", "params.url") from None
    if not chain.allows(url):
        raise LaunchRefused(
            f"chain {chain.name!r}: start URL {redact_url(url)} is outside the allowed "
            f"domains ({', '.join(chain.allowed_domains)}): nothing would be crawled; allow "
            "its domain (--allow-domain) or start on an allowed one", "start")


def chain_sites(chain: Chain) -> list[str]:
    return sorted({spec.task.split(".", 1)[0] for spec in chain.steps.values()})


def setting_names(chain: Chain) -> list[str]:
    return sorted({n for s in chain_sites(chain) for n in registry.site(s).settings.model_fields})


# -- the cluster ------------------------------------------------------------------------
def chain_queues(chain: Chain) -> set[str]:
    """Every queue the chain's messages go to."""
    return {queue_of(spec) for spec in chain.steps.values()}


def check_workers(chain: Chain, client: redis.Redis, policy: WorkerPolicy) -> str | None:
    """Refuse (``require``) or say (``warn``: returned, and logged) when no live worker
    consumes a queue the chain uses; the message names the command that fixes it."""
    if policy == "off":
        return None
    consumers = Roster(client).consumers()
    missing = sorted(chain_queues(chain) - set(consumers))
    if not missing:
        return None
    live = sorted({w for names in consumers.values() for w in names})
    queues = ", ".join(repr(q) for q in missing)
    if live:
        problem = (f"the live workers ({listed(live, 3)}) do not consume queue {queues}; a "
                   "worker started before the site existed does not know it: run "
                   "./control.sh restart worker (or start one with --queues "
                   f"{','.join(missing)})")
    else:
        problem = (f"no live worker consumes queue {queues}: its units would wait for "
                   "ever; run ./control.sh start worker")
    message = f"chain {chain.name!r}: {problem}"
    if policy == "require":
        raise LaunchRefused(message + " (or launch with --detach to queue it anyway)",
                            "workers")
    log.warning("%s", message)
    return message
