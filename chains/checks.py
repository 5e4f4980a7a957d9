"""Declaration-time checks: a chain that names a missing task or field fails at launch.

Without them a typo publishes messages that no worker consumes, and the job waits
forever; with them it fails in the shell with the name that is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from chains.model import Chain


class ChainError(ValueError):
    """The chain does not fit the tasks it names."""


def input_model(tasks: Mapping[str, Any], name: str) -> type[BaseModel]:
    task = tasks.get(name)
    model = getattr(task, "Input", None)
    if task is None:
        raise ChainError(f"no task named {name!r} is registered (is its site module under "
                         f"sites/<site>/<platform>/?)")
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise ChainError(f"task {name!r} declares no pydantic Input model")
    return model


def check_chain(chain: Chain, tasks: Mapping[str, Any]) -> None:
    """Every step's task exists with an Input model; every mapped field exists on it."""
    models = {step: input_model(tasks, spec.task) for step, spec in chain.steps.items()}
    for link in chain.links:
        fields = models[link.dst].model_fields
        unknown = sorted(set(link.map) - set(fields))
        if unknown:
            raise ChainError(f"chain {chain.name!r}: link {link.src} -> {link.dst} maps "
                             f"{', '.join(unknown)}, not fields of {models[link.dst].__name__} "
                             f"(fields: {', '.join(fields)})")
