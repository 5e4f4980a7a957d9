"""Scaffold a site: its steps, its chain, and a parser test on saved pages.

    crawlchain new-site shop [--base-url https://shop.example]

Writes ``sites/shop/__init__.py`` (a listing step and an item step), ``chains/shop.py``
(listing -> items) and ``tests/sites/shop/`` (a parser test and the two saved pages it
reads). ``./control.sh test tests/sites/shop`` passes at once; then replace the
selectors and the saved pages with the site's own. Existing files are never overwritten.
"""

from __future__ import annotations

import argparse
import keyword
import re
from pathlib import Path
from string import Template

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = Path(__file__).resolve().parent / "templates"
NAME = re.compile(r"[a-z][a-z0-9_]*")


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="the site's name: lower case, a Python identifier")
    parser.add_argument("--base-url", default="https://example.com",
                        help="where the site lives (its default base_url)")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)


def files(name: str) -> dict[str, str]:
    """Target path (relative to the checkout) -> template."""
    return {f"sites/{name}/__init__.py": "site.py.tmpl",
            f"chains/{name}.py": "chain.py.tmpl",
            f"tests/sites/{name}/__init__.py": "",
            f"tests/sites/{name}/test_{name}.py": "test.py.tmpl",
            f"tests/sites/{name}/pages/listing.html": "listing.html.tmpl",
            f"tests/sites/{name}/pages/item.html": "item.html.tmpl"}


def refusal(name: str, root: Path) -> str | None:
    """Why ``name`` cannot be a new site here, or None."""
    if not NAME.fullmatch(name) or keyword.iskeyword(name):
        return f"{name!r} is not a site name: use lower case letters, digits and _"
    if (root / "sites" / name).exists() or (root / "chains" / f"{name}.py").exists():
        return f"site {name!r} exists already (sites/{name}/ or chains/{name}.py)"
    if name in ("api", "runtime", "broker", "commands"):
        return f"{name!r} is a name chains/ uses itself: pick another"
    return None


def run(args: argparse.Namespace) -> int:
    name, root = args.name, args.root
    problem = refusal(name, root)
    if problem:
        raise SystemExit(problem)
    values = {"name": name, "title": name.title().replace("_", ""),
              "base_url": args.base_url.rstrip("/")}
    for target, template in files(name).items():
        path = root / target
        path.parent.mkdir(parents=True, exist_ok=True)
        text = Template((TEMPLATES / template).read_text()).substitute(values) if template else ""
        path.write_text(text)
        print(f"wrote {target}")
    print(f"next: ./control.sh test tests/sites/{name}; then crawlchain shell "
          f"{values['base_url']}/ to find the site's selectors")
    return 0
