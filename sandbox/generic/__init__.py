"""The generic-crawl sandbox site: a documentation site to crawl "from / to depth N".

``site`` builds its pages (a function of a ``Shape`` and the base URL), ``render``
turns them into HTML, robots.txt and sitemaps, ``expected`` computes the records a
crawl to depth N must store, and ``python -m sandbox.generic`` serves it.
"""
