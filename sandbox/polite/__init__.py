"""The defended "polite" site of ``./control.sh bench polite``: a shop behind ordinary defences.

A chain of index -> paged category listings -> item details (``catalogue``), rendered
once (``pages``), behind a per-client token bucket, reproducible 503s and a User-Agent
check (``defences``), served by the asyncio server (``site``; ``python -m sandbox.polite``).
"""
