"""Where the sites, their steps and their chains are found: by walking ``sites/`` and
``chains/``, with no list to keep.

A site is a package ``sites/<name>/``; its steps are the ``@step`` objects declared in
any of its modules, its ``SITE`` the one ``Site`` declared in any of them (else the
default ``Site(name)``); its chains every ``Chain`` at the top level of
``chains/<name>.py``. Declarations are checked as they are found: two steps of one
name, a step named for another site, two ``SITE`` declarations or two chains of one
name fail here, in the first test or at the worker's start, not at 3 a.m.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import traceback
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from pydantic import TypeAdapter

from chains.runtime.model import Chain
from chains.runtime.schedule import Schedule
from chains.runtime.site import Site
from chains.runtime.step import SiteStep, template_fields
from exceptions import UserError
from utils.names import did_you_mean, listed

T = TypeVar("T")
SITES = Path(__file__).resolve().parents[2] / "sites"
CHAINS = Path(__file__).resolve().parents[1]


class DeclarationError(UserError):
    """Two declarations clash, a declaration names what does not exist, or a site's or
    chain's module does not import (a typo in it)."""


def load(module: str) -> ModuleType:
    """Import a site's or chain's module; an error in it (a typo, a bad import) is a
    ``DeclarationError`` naming its file, line and error, the traceback kept as its cause
    (``--debug`` prints it)."""
    try:
        return importlib.import_module(module)
    except DeclarationError:
        raise
    except Exception as exc:
        raise DeclarationError(f"{_where(exc)}: {type(exc).__name__}: {exc}: fix that "
                               f"line of {module}") from exc


def _where(exc: Exception) -> str:
    """``sites/shop/__init__.py:12``: the deepest line of the user's code in the error."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{_relative(exc.filename)}:{exc.lineno}"
    ours = [f for f in traceback.extract_tb(exc.__traceback__) if _user_code(f.filename)]
    frame = ours[-1] if ours else None
    return f"{_relative(frame.filename)}:{frame.lineno}" if frame else "import"


def _user_code(filename: str) -> bool:
    """A site's module or a chain file: where the user's own lines are."""
    path = Path(filename).resolve()
    return path.is_relative_to(SITES) or (path.parent == CHAINS and path.name != "api.py")


def _relative(filename: str) -> str:
    path = Path(filename).resolve()
    return str(path.relative_to(SITES.parent)) if path.is_relative_to(SITES.parent) else filename


def site_names() -> list[str]:
    """Every package under ``sites/``: each is a site, with a queue of its name."""
    return sorted(p.name for p in SITES.iterdir()
                  if (p / "__init__.py").is_file() and p.name[0] not in "_.")


@lru_cache(maxsize=64)
def site_modules(site: str) -> tuple[ModuleType, ...]:
    """The site's package and every module under it, imported."""
    package = load(f"sites.{site}")
    found = [package]
    for info in pkgutil.walk_packages(package.__path__, f"sites.{site}."):
        found.append(load(info.name))
    return tuple(found)


def _declared(site: str, kind: type[T]) -> list[tuple[str, T]]:
    return [(f"{module.__name__}.{attr}", value) for module in site_modules(site)
            for attr, value in vars(module).items() if isinstance(value, kind)]


@lru_cache(maxsize=64)
def site(name: str) -> Site:
    """The site's ``SITE`` declaration, or ``Site(name)`` when it declares none."""
    if name not in site_names():
        raise DeclarationError(f"no site {name!r}{did_you_mean(name, site_names())}: no "
                               f"package sites/{name}/ (sites: {listed(site_names())})")
    found = {id(v): (where, v) for where, v in _declared(name, Site)}
    if len(found) > 1:
        raise DeclarationError(f"site {name!r} declares SITE twice: "
                               + ", ".join(where for where, _ in found.values()))
    if not found:
        return Site(name)
    where, declared = next(iter(found.values()))
    if declared.name != name:
        raise DeclarationError(f"{where} declares Site({declared.name!r}) in sites/{name}/")
    return declared


@lru_cache(maxsize=1)
def steps() -> dict[str, SiteStep[Any, Any]]:
    """Every step of every site, by name."""
    out: dict[str, SiteStep[Any, Any]] = {}
    for name in site_names():
        for where, declared in _declared(name, SiteStep):
            if declared.site != name:
                raise DeclarationError(f"{where} declares step {declared.name!r} in sites/"
                                       f"{name}/: a step's name starts with its site's")
            if out.get(declared.name, declared) is not declared:
                raise DeclarationError(f"two steps are named {declared.name!r} "
                                       f"(one is {where})")
            _check_template(where, declared)
            out[declared.name] = declared
    return out


def _check_template(where: str, declared: SiteStep[Any, Any]) -> None:
    """A URL template names only fields its input or its site's settings have: a typo
    there would fail every unit of the step, on the workers."""
    if declared.url is None:
        return
    known = {*declared.input.model_fields, *site(declared.site).settings.model_fields}
    for name in sorted(template_fields(declared.url)):
        root = name.split(".", 1)[0].split("[", 1)[0]
        if root not in known:
            raise DeclarationError(
                f"{where}: step {declared.name!r}'s url {declared.url!r} names {{{root}}}"
                f"{did_you_mean(root, known)}, a field neither its input "
                f"{declared.input.__name__} nor the site's settings have (fields: "
                f"{listed(known)})", "step")


def step(name: str) -> SiteStep[Any, Any]:
    """The step of that name; the error lists the site's steps."""
    found = steps().get(name)
    if found is None:
        site = name.split(".", 1)[0]
        known = sorted(s for s in steps() if s.split(".", 1)[0] == site)
        raise DeclarationError(
            f"no step named {name!r}{did_you_mean(name, steps())} is declared (is its "
            f"module under sites/{site}/?); steps of {site}: "
            f"{listed(known) if known else 'none'}", "step")
    return found


def chain_modules() -> list[ModuleType]:
    """The ``chains/<site>.py`` files, one per site that has one, imported."""
    return [load(f"chains.{name}") for name in site_names()
            if (CHAINS / f"{name}.py").is_file()]


def chains() -> dict[str, Chain]:
    """Every ``Chain`` declared at the top level of a ``chains/<site>.py`` file; a chain
    there runs its own site's steps (one site's chain file linking another site's step
    is a copy-paste slip: its units would go to that site's queue and settings)."""
    found: dict[str, Chain] = {}
    for module in chain_modules():
        site = module.__name__.rsplit(".", 1)[-1]
        for value in vars(module).values():
            if isinstance(value, Chain):
                if value.name in found and found[value.name] is not value:
                    raise DeclarationError(f"two chains are named {value.name!r}")
                foreign = sorted(s.task for s in value.steps.values()
                                 if s.task.split(".", 1)[0] != site)
                if foreign:
                    raise DeclarationError(
                        f"chains/{site}.py: chain {value.name!r} runs {', '.join(foreign)}, "
                        f"a step of another site: a chain file links its own site's steps "
                        f"(import them from sites.{site})", "chain")
                found[value.name] = value
    return found


def chain(name: str) -> Chain:
    """The declared chain of that name; the error lists the known ones."""
    known = chains()
    if name not in known:
        raise DeclarationError(f"no chain named {name!r}{did_you_mean(name, known)}; known: "
                               f"{listed(known)} (chains/<site>.py declares them)", "chain")
    return known[name]


def declared_schedules() -> list[Schedule]:
    """``CHAIN_SCHEDULES`` when set, else every ``SCHEDULES`` list under ``chains/``."""
    raw = os.environ.get("CHAIN_SCHEDULES")
    if raw:
        return TypeAdapter(list[Schedule]).validate_json(raw)
    return [s for module in chain_modules() for s in getattr(module, "SCHEDULES", [])]
