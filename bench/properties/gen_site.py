"""Generate the "properties" benchmark site: detail pages and index pages of 30 links.

    python -m bench.properties.gen_site [--n 50000] [--out DIR] [--index-only] [--seed 1]

``property_NNNNNN.html`` detail pages (title, price, description, address, image
url) and ``index_NNNNN.html`` pages of 30 detail links plus a ``next`` link; 50,000
details make 1,667 index pages (about 420 MB). The output is a function of
``(n, per_index, seed)`` only: the same site on every machine and every run, so
figures measured on different days compare. It goes under
``$CRAWLCHAIN_HOME/run/bench/site/`` (outside git); a marker file written last
makes a finished site reusable and a half-written one regenerated.
``--index-only`` writes only the index pages (the latency test follows nothing else).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bench.properties import bench_dir
from bench.properties.pages import (
    AREAS,
    Listing,
    detail_name,
    index_name,
    render_detail,
    render_index,
)

PER_INDEX = 30
MARKER = ".complete.json"

ADJECTIVES = (
    "Bright", "Spacious", "Cosy", "Modern", "Charming", "Stunning", "Quiet", "Renovated",
    "Elegant", "Sunny", "Large", "Compact", "Stylish", "Airy", "Lovely", "Luxury", "Traditional",
    "Refurbished", "Beautiful", "Contemporary",
)
KINDS = (
    "studio", "flat", "apartment", "maisonette", "loft", "house", "cottage", "penthouse",
    "townhouse", "bungalow", "duplex",
)
NEAR = (
    "near Hyde Park", "close to the tube", "with garden", "with balcony", "in quiet street",
    "by the river", "next to shops", "with parking", "in period building", "with roof terrace",
    "near the station", "overlooking the square",
)
STREETS = (
    "High Street", "Station Road", "Church Lane", "Victoria Road", "Green Lane", "Manor Road",
    "Park Avenue", "Queens Road", "Mill Lane", "King Street", "Albert Road", "Grove Road",
    "York Street", "Bridge Street", "Kings Road",
)
WORDS = (
    "the", "a", "of", "to", "and", "in", "is", "it", "for", "on", "with", "as", "at", "by", "from",
    "this", "that", "room", "kitchen", "bathroom", "bedroom", "living", "reception", "garden",
    "floor", "light", "space", "windows", "period", "features", "wooden", "floors", "fitted",
    "appliances", "storage", "transport", "links", "shops", "restaurants", "amenities", "local",
    "close", "walking", "distance", "station", "bus", "available", "immediately", "furnished",
    "unfurnished", "tenants", "landlord", "viewing", "recommended", "double", "single", "ensuite",
    "shower", "bath", "heating", "gas", "central", "secure", "entry", "phone", "lift", "communal",
    "area", "ideal", "professional", "couple", "sharers", "family", "quiet", "residential",
    "street", "newly", "decorated", "throughout", "high", "ceilings", "large", "open", "plan",
    "modern", "separate", "utility", "washing", "machine", "dishwasher", "fridge", "freezer",
    "oven", "hob", "microwave", "broadband", "included", "council", "tax", "bills", "excluded",
)


def listing(seed: int, pid: int) -> Listing:
    """Property ``pid``'s data, from its own random stream: any page can be rebuilt alone."""
    r = random.Random(seed * 1_000_003 + pid)
    title = f"{r.choice(ADJECTIVES)} {r.choice(KINDS)} {r.choice(NEAR)}"
    price = r.randrange(80, 2500)
    area = r.choice(AREAS)
    address = f"{r.randrange(1, 300)} {r.choice(STREETS)}, {area}, London"
    sentences = [" ".join(r.choice(WORDS) for _ in range(r.randrange(8, 18))).capitalize() + "."
                 for _ in range(r.randrange(10, 18))]
    image = f"/images/i{r.randrange(1, 20):02d}.jpg"
    return Listing(id=pid, title=title, price=price, address=address, area=area,
                   description=" ".join(sentences), image=image,
                   features=tuple(r.sample(WORDS, 8)), beds=r.randrange(0, 5),
                   baths=r.randrange(1, 3),
                   related=tuple(r.randrange(0, 10**6) for _ in range(6)))


def index_pages(n: int, per_index: int = PER_INDEX) -> int:
    """How many index pages list ``n`` details: 1,667 for 50,000."""
    return (n + per_index - 1) // per_index


def default_dir(n: int, index_only: bool = False) -> Path:
    """Where a site of ``n`` details lives: under ``$CRAWLCHAIN_HOME/run/bench/site/``."""
    return bench_dir() / "site" / (f"n{n}-index" if index_only else f"n{n}")


def write_site(out: Path, n: int, seed: int = 1, per_index: int = PER_INDEX,
               index_only: bool = False) -> dict[str, float]:
    """Write every page into ``out``; returns page counts and average sizes."""
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).unlink(missing_ok=True)
    pages = index_pages(n, per_index)
    detail_bytes = index_bytes = 0
    for page in range(pages):
        listings = [listing(seed, i) for i in range(page * per_index,
                                                   min((page + 1) * per_index, n))]
        html = render_index(page, listings, page + 1 if page < pages - 1 else None).encode()
        (out / index_name(page)).write_bytes(html)
        index_bytes += len(html)
        for it in [] if index_only else listings:
            body = render_detail(it, n).encode()
            (out / detail_name(it.id)).write_bytes(body)
            detail_bytes += len(body)
    return {"details": 0 if index_only else n, "index_pages": pages,
            "detail_kb": round(detail_bytes / max(1, n) / 1024, 1),
            "index_kb": round(index_bytes / pages / 1024, 1)}


def ensure_site(n: int, out: Path | None = None, seed: int = 1,
                index_only: bool = False) -> Path:
    """The site's directory, generated first unless a finished one with these params exists."""
    out = out or default_dir(n, index_only)
    wanted = {"n": n, "seed": seed, "per_index": PER_INDEX, "index_only": index_only}
    marker = out / MARKER
    if marker.exists() and json.loads(marker.read_text()).get("params") == wanted:
        return out
    stats = write_site(out, n, seed, PER_INDEX, index_only)
    marker.write_text(json.dumps({"params": wanted, "stats": stats}))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.properties.gen_site",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=50_000, help="detail pages (default 50000)")
    parser.add_argument("--out", type=Path, help="output directory (default under run/bench)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--index-only", action="store_true", help="write the index pages only")
    args = parser.parse_args(argv)
    started = time.monotonic()
    out = ensure_site(args.n, args.out, args.seed, args.index_only)
    stats = json.loads((out / MARKER).read_text())["stats"]
    print(f"{out}: {stats} ({time.monotonic() - started:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
