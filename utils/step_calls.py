"""Calling a step's own code: params checked by its Input, bugs in its functions classified.

A site's ``build_request`` and ``parse`` are pure functions; an exception they raise
that is not a ``CrawlError`` is a bug or a layout the parser does not know, and
retrying cannot help: it fails the unit for good, naming the function.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded
from pydantic import BaseModel, ValidationError

from exceptions import CrawlError, InvalidParams, ParseError


def validate_params(model: type[BaseModel], params: Mapping[str, Any]) -> BaseModel:
    """Params checked against the step's Input; the error names every bad field."""
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(params)'}: {err['msg']} "
            f"(got {err.get('input')!r})"
            for err in exc.errors()
        )
        raise InvalidParams(f"invalid params for {model.__name__}: {problems}") from exc


def site_code(fn: Callable[..., Any], *args: Any) -> Any:
    """Call a site's pure function; a bug in it fails the unit for good, with its name."""
    try:
        return fn(*args)
    except CrawlError:
        raise
    except (SoftTimeLimitExceeded, TimeLimitExceeded):
        raise
    except Exception as exc:
        raise ParseError(f"{fn.__name__} raised {type(exc).__name__}: {exc}") from exc
