"""Counts as pages abbreviate them: "1.2k", "3.4M", "1.2万", "1,234".

``short_number`` reads them back as integers; what it cannot read raises ``ValueError``
naming the text, so a parser fails loudly rather than storing 0.
"""

from __future__ import annotations

import re
from decimal import Decimal

SCALES = {"": 1, "k": 1_000, "m": 1_000_000, "b": 1_000_000_000, "w": 10_000, "万": 10_000,
          "亿": 100_000_000}
SHORT = re.compile(r"([-+]?[\d,]*\.?\d+)\s*([kmbw万亿]?)\+?")


def short_number(text: str) -> int:
    """``"1.2k"`` -> 1200, ``"-3"`` -> -3, ``"1,234"`` -> 1234, ``"1.2万"`` -> 12000."""
    found = SHORT.fullmatch(text.strip().lower())
    if found is None:
        raise ValueError(f"not a count: {text!r}")
    return int(Decimal(found[1].replace(",", "")) * SCALES[found[2]])
