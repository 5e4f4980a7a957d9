"""Where the sites and their steps are found: by walking ``sites/``, with no list to keep.

A site is a package ``sites/<name>/``; its steps are the ``@step`` objects declared in
any of its modules, its ``SITE`` the one ``Site`` declared in any of them (else the
default ``Site(name)``). Declarations are checked as they are found: two steps of one
name, a step named for another site, or two ``SITE`` declarations fail here, in the
first test or at the worker's start, not at 3 a.m.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from chains.runtime.site import Site
from chains.runtime.step import SiteStep

T = TypeVar("T")
SITES = Path(__file__).resolve().parents[2] / "sites"


class DeclarationError(ValueError):
    """Two declarations clash, or a declaration names what does not exist."""


def site_names() -> list[str]:
    """Every package under ``sites/``: each is a site, with a queue of its name."""
    return sorted(p.name for p in SITES.iterdir()
                  if (p / "__init__.py").is_file() and p.name[0] not in "_.")


@lru_cache(maxsize=64)
def site_modules(site: str) -> tuple[ModuleType, ...]:
    """The site's package and every module under it, imported."""
    package = importlib.import_module(f"sites.{site}")
    found = [package]
    for info in pkgutil.walk_packages(package.__path__, f"sites.{site}."):
        found.append(importlib.import_module(info.name))
    return tuple(found)


def _declared(site: str, kind: type[T]) -> list[tuple[str, T]]:
    return [(f"{module.__name__}.{attr}", value) for module in site_modules(site)
            for attr, value in vars(module).items() if isinstance(value, kind)]


@lru_cache(maxsize=64)
def site(name: str) -> Site:
    """The site's ``SITE`` declaration, or ``Site(name)`` when it declares none."""
    if name not in site_names():
        raise DeclarationError(f"no site {name!r}: no package sites/{name}/ "
                               f"(sites: {', '.join(site_names()) or 'none'})")
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
            out[declared.name] = declared
    return out


def step(name: str) -> SiteStep[Any, Any]:
    """The step of that name; the error lists the site's steps."""
    found = steps().get(name)
    if found is None:
        known = sorted(s for s in steps() if s.split(".", 1)[0] == name.split(".", 1)[0])
        raise DeclarationError(f"no step named {name!r} is declared (is its module under "
                               f"sites/{name.split('.', 1)[0]}/?); "
                               f"known: {', '.join(known) or 'none of that site'}")
    return found
