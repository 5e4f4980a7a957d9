"""The job page's throughput chart: an SVG drawn on the server, no script library needed.

Only numbers and times go into it, so the template may insert it as it is (``|safe``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

WIDTH, HEIGHT, PAD = 640, 160, 32


def throughput_svg(points: Sequence[dict[str, Any]], bucket_s: int) -> str:
    """Units/s per bucket as a filled line, with the peak and the time span labelled."""
    if not points:
        return '<p class="muted">no units finished yet</p>'
    rates = [float(p["units_per_s"]) for p in points]
    peak = max(rates) or 1.0
    span = max(len(rates) - 1, 1)
    xy = [(PAD + i * (WIDTH - 2 * PAD) / span, HEIGHT - PAD - r / peak * (HEIGHT - 2 * PAD))
          for i, r in enumerate(rates)]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
    area = f"{PAD},{HEIGHT - PAD} {line} {xy[-1][0]:.1f},{HEIGHT - PAD}"
    first, last = (_clock(points[0]["t"]), _clock(points[-1]["t"] + bucket_s))
    label = f"units finished per second, {bucket_s} s buckets"
    return (
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{label}">'
        f'<line class="axis" x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" '
        f'y2="{HEIGHT - PAD}"/>'
        f'<polygon class="area" points="{area}"/><polyline class="line" points="{line}"/>'
        f'<text x="{PAD}" y="{PAD - 10}">peak {peak:.1f} units/s</text>'
        f'<text x="{PAD}" y="{HEIGHT - 8}">{first}</text>'
        f'<text x="{WIDTH - PAD}" y="{HEIGHT - 8}" text-anchor="end">{last}</text></svg>')


def _clock(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%H:%M:%S UTC")
