"""Benchmarks, run as modules: python -m bench.<name> --json."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def report(result: Mapping[str, Any], as_json: bool) -> None:
    """One JSON object on one line for scripts, else ``name: value`` lines for people."""
    if as_json:
        print(json.dumps(result))
    else:
        print("\n".join(f"{name}: {value}" for name, value in result.items()))
