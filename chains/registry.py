"""Find the chains that site files under ``chains/`` declare, by name."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import chains
from chains.model import Chain

_ENGINE_MODULES = frozenset({"checks", "engine", "job", "model", "registry", "schedule",
                             "tasks"})


def site_modules() -> list[ModuleType]:
    """The ``chains/<site>.py`` files, imported."""
    return [importlib.import_module(f"chains.{info.name}")
            for info in pkgutil.iter_modules(chains.__path__)
            if info.name not in _ENGINE_MODULES and not info.name.startswith("_")]


def all_chains() -> dict[str, Chain]:
    """Every ``Chain`` declared at the top level of a ``chains/<site>.py`` file."""
    found: dict[str, Chain] = {}
    for module in site_modules():
        for value in vars(module).values():
            if isinstance(value, Chain):
                if value.name in found and found[value.name] is not value:
                    raise ValueError(f"two chains are named {value.name!r}")
                found[value.name] = value
    return found


def get_chain(name: str) -> Chain:
    known = all_chains()
    if name not in known:
        raise KeyError(f"no chain named {name!r}; known: {', '.join(sorted(known)) or 'none'}")
    return known[name]
