# ruff: noqa: E501
"""Browser header sets by family: GENERATED, do not edit by hand.

Regenerate with ``python -m external_interface.user_agent.refresh`` (see there).
"""

from __future__ import annotations

SOURCE = 'browserforge 1.2.4, apify_fingerprint_datapoints 0.15.0, 2026-11-25'

# family -> (User-Agent, Accept, Accept-Language), most common browsers first
HEADER_SETS: dict[str, tuple[tuple[str, str, str], ...]] = {
    'desktop': (
        ('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/147.0.0.0 Safari/537.36',
         'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7',
         'en-US,en;q=0.9'),
        ('Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/147.0.0.0 Safari/537.36',
         'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7',
         'en-US,en;q=0.9'),
        ('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/147.0.0.0 Safari/537.36 Edg/147.0.0.0',
         'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7',
         'en-US,en;q=0.9'),
        ('Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:150.0) Gecko/20100101 Firefox/150.0',
         'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
         'en-US,en;q=0.5'),
        ('Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:150.0) Gecko/20100101 Firefox/150.0',
         'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
         'en-US,en;q=0.5'),
        ('Mozilla/5.0 (X11; Linux x86_64; rv:150.0) Gecko/20100101 Firefox/150.0',
         'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
         'en-US,en;q=0.5'),
        ('Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/26.4 Safari/605.1.15',
         'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
         'en-US,en;q=0.9'),
    ),
    'mobile': (
        ('Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/147.0.0.0 Mobile Safari/537.36',
         'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7',
         'en-US,en;q=0.9'),
        ('Mozilla/5.0 (iPhone; CPU iPhone OS 18_7 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/26.3 Mobile/15E148 Safari/604.1',
         'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
         'en-US,en;q=0.9'),
        ('Mozilla/5.0 (Android 16; Mobile; rv:150.0) Gecko/150.0 Firefox/150.0',
         'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
         'en-US,en;q=0.5'),
    ),
}
