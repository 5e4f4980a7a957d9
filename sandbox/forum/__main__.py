"""``python -m sandbox.forum [--shape small|large] [--seed S] [--json]``: a shape's figures.

Prints what a minimal crawl of that forum makes: requests, stored items per collection,
and the failures, from ``expected()`` alone (nothing is served).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

from sandbox.forum.expected import expected
from sandbox.forum.world import SHAPES, ForumWorld


def figures(shape: str, seed: int) -> dict[str, object]:
    truth = expected(ForumWorld.build(seed, SHAPES[shape]))
    return {"shape": shape, "seed": seed, "requests": truth.requests, "items": truth.items,
            "records": truth.counts(),
            "failures": dict(Counter(str(s) for s in truth.failures.values()))}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m sandbox.forum", description=__doc__)
    p.add_argument("--shape", choices=sorted(SHAPES), default="small")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--json", action="store_true", help="one line of JSON")
    args = p.parse_args(argv)
    out = figures(args.shape, args.seed)
    if args.json:
        print(json.dumps(out))
        return 0
    for key, value in out.items():
        print(f"{key:>9}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
