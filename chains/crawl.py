"""The generic crawl's chain: pages and the links between them, sitemaps beside them.

    crawlchain launch crawl --start URL [--start URL ...] [--allow-domain D ...]
        [--max-depth N] [--allow REGEX ...] [--deny REGEX ...] [--max-pages N]
        [--sitemap URL ...] [--no-sitemaps] [--http-cache] [--rule REGEX=STEP ...]

or ``launch_crawl(["https://docs.example.org/"], max_depth=2)`` from ``chains.cluster``
in a shell, which says how each option travels with the job.
"""

from chains.api import Chain, Link, Step
from sites.crawl import page, sitemap

DEFAULT_DEPTH = 3

crawl = Chain("crawl", start=page, max_depth=DEFAULT_DEPTH,
              steps=[Step(page, batch_size=8), Step(sitemap, same_depth=True, priority=7)],
              links=[Link(page, page), Link(sitemap, page, records="pages"),
                     Link(sitemap, sitemap, records="sitemaps")])
