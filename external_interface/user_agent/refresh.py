"""Regenerate ``user_agent/browsers.py`` from browserforge's header model.

    .venv/bin/pip install browserforge     # a dev tool; its data ships in its wheels
    .venv/bin/python -m external_interface.user_agent.refresh
    git diff external_interface/user_agent/browsers.py

Run it when browsers move on (every few months): browserforge's Bayesian network
of real browser headers (``apify_fingerprint_datapoints``) is sampled offline,
and the most common agent per browser and platform is written out with the
``Accept`` it sends. Nothing is sampled at run time: a crawl must give a unit the
same identity on every worker and every retry, and browserforge draws from the
process-wide ``random`` module. Agents with a bot token (``compatible;``, ``bot``)
are dropped. ``Accept-Language`` is written as each browser formats it (the
model's ``en-US;q=1.0`` is not what browsers send), and ``Accept-Encoding`` is
not taken from the model: ``user_agent.headers`` sends what the fetch decodes.
"""

from __future__ import annotations

import random
import re
import sys
from collections import Counter
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

TARGET = Path(__file__).with_name("browsers.py")
SAMPLES = 300
COMBINATIONS = {  # family -> (browser, os) pairs a real user runs
    "desktop": [("chrome", "windows"), ("chrome", "macos"), ("chrome", "linux"),
                ("edge", "windows"), ("firefox", "windows"), ("firefox", "macos"),
                ("firefox", "linux"), ("safari", "macos")],
    "mobile": [("chrome", "android"), ("safari", "ios"), ("firefox", "android")],
}
LANGUAGE = {"firefox": "en-US,en;q=0.5"}  # the others send Chrome's form
DEFAULT_LANGUAGE = "en-US,en;q=0.9"
_BOT = re.compile(r"compatible;|bot|crawl|spider|headless|pageburst", re.IGNORECASE)


def sample(family: str, browser: str, os_name: str) -> tuple[str, str, str] | None:
    """The most common (agent, Accept, Accept-Language) of one browser on one platform."""
    from browserforge.headers import HeaderGenerator

    device = "mobile" if family == "mobile" else "desktop"
    try:
        generator = HeaderGenerator(browser=browser, os=os_name, device=device,
                                    locale=("en-US", "en"), http_version=1, strict=True)
        drawn: list[dict[str, Any]] = [dict(generator.generate()) for _ in range(SAMPLES)]
    except ValueError:  # the model has no such browser on that platform
        return None
    agents = Counter(h["User-Agent"] for h in drawn if not _BOT.search(h["User-Agent"]))
    if not agents:
        return None
    agent = agents.most_common(1)[0][0]
    accept = Counter(h.get("Accept", "") for h in drawn if h["User-Agent"] == agent)
    return agent, accept.most_common(1)[0][0], LANGUAGE.get(browser, DEFAULT_LANGUAGE)


def render(sets: dict[str, list[tuple[str, str, str]]], source: str) -> str:
    lines = [
        "# ruff: noqa: E501",
        '"""Browser header sets by family: GENERATED, do not edit by hand.',
        "",
        "Regenerate with ``python -m external_interface.user_agent.refresh`` (see there).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        f"SOURCE = {source!r}",
        "",
        "# family -> (User-Agent, Accept, Accept-Language), most common browsers first",
        "HEADER_SETS: dict[str, tuple[tuple[str, str, str], ...]] = {",
    ]
    for family, rows in sets.items():
        lines.append(f"    {family!r}: (")
        for agent, accept, language in rows:
            lines.append(f"        ({agent!r},")
            lines.append(f"         {accept!r},")
            lines.append(f"         {language!r}),")
        lines.append("    ),")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> int:
    random.seed(0)  # the same model gives the same file
    sets: dict[str, list[tuple[str, str, str]]] = {}
    for family, pairs in COMBINATIONS.items():
        found = [row for b, o in pairs if (row := sample(family, b, o)) is not None]
        if not found:
            print(f"refresh: browserforge gave no {family} headers; file left as it was",
                  file=sys.stderr)
            return 1
        sets[family] = list(dict.fromkeys(found))
    versions = ", ".join(f"{name} {metadata.version(name)}"
                         for name in ("browserforge", "apify_fingerprint_datapoints"))
    source = f"{versions}, {datetime.now(UTC):%Y-%m-%d}"
    TARGET.write_text(render(sets, source))
    print(f"refresh: wrote {sum(map(len, sets.values()))} header sets to {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
