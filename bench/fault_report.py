"""What the fault harness reports: one row per scenario, every failing run replayable.

A row sums its runs; its ``failures`` name, for each failing run, the seed that replays
it (``--only S --replay SEED``), the moment of the fault, the items lost or doubled
(with the unit that owed them) and the problems the run found. The full report, every
run's details included, is also written as JSON under ``run/faults/``.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.fault_measure import RunResult

REPORTS = Path(__file__).resolve().parent.parent / "run" / "faults"
SHOWN = 20  # lost or doubled items named per failing run in a row (the file has them all)
COLUMNS = ("scenario", "runs", "lost", "duplicate_items", "duplicate_executions",
           "worst_drain_s", "outcome")


@dataclass
class Row:
    """One scenario's runs, summed."""

    scenario: str
    results: list[RunResult] = field(default_factory=list)
    skipped: str | None = None  # why the scenario could not run here

    def as_dict(self) -> dict[str, Any]:
        ok = all(r.ok for r in self.results)
        outcome = "skipped" if self.skipped else "ok" if ok and self.results else "FAIL"
        return {
            "scenario": self.scenario,
            "runs": len(self.results),
            "lost": sum(r.lost for r in self.results),
            "duplicate_items": sum(r.duplicate_items for r in self.results),
            "duplicate_executions": sum(r.duplicate_executions for r in self.results),
            "worst_drain_s": max((r.drain_s for r in self.results), default=0.0),
            "outcome": outcome,
            "skipped": self.skipped,
            "problems": sorted({p for r in self.results for p in r.problems}),
            "failures": [failure(r) for r in self.results if not r.ok],
        }


def failure(result: RunResult) -> dict[str, Any]:
    """What a failing run's row says: enough to recognise it, and the seed to replay it."""
    return {
        "seed": result.seed,
        "moment": result.moment,
        "lost": result.lost,
        "duplicate_items": result.duplicate_items,
        "lost_items": result.lost_items[:SHOWN],
        "doubled_items": result.doubled_items[:SHOWN],
        "problems": result.problems,
        "notes": result.notes,
    }


def write_report(seed: int, argv: list[str], rows: list[Row], wall_s: float,
                 directory: Path = REPORTS) -> Path:
    """Every run of every row, in one JSON file named by the time and the seed."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = directory / f"faults-{stamp}-{seed}.json"
    path.write_text(json.dumps({
        "seed": seed,
        "argv": argv,
        "wall_s": round(wall_s, 1),
        "rows": [r.as_dict() for r in rows],
        "runs": {r.scenario: [asdict(x) for x in r.results] for r in rows},
    }, indent=1))
    return path


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as aligned text columns, then each failing run: seed, moment, what and why."""
    cells = [list(COLUMNS)] + [[str(r[c]) for c in COLUMNS] for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip()
             for line in cells]
    for r in rows:
        if r["skipped"]:
            lines.append(f"{r['scenario']}: skipped: {r['skipped']}")
        for f in r["failures"]:
            lines.append(f"{r['scenario']} seed {f['seed']} ({f['moment']}): lost {f['lost']}, "
                         f"duplicate items {f['duplicate_items']}")
            lines += [f"    lost {x}" for x in f["lost_items"]]
            lines += [f"    doubled {x}" for x in f["doubled_items"]]
            lines += [f"    {p.splitlines()[0]}" for p in f["problems"]]
    return "\n".join(lines)
