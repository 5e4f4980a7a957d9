"""A discussion forum, the sandbox's second site, served under ``/forum`` by the same server.

    world.py        the forum's data, generated from a seed and a ``ForumShape``
    formats.py      how pages write times ("3 days ago") and scores ("1.2k")
    cursors.py      the opaque ``after`` / ``cursor`` tokens of paged lists
    pages.py        each page rendered from a world: HTML and JSON bytes
    site.py         routes: request in, answer out, with the world's ``Date``
    mutations.py    the next generation of a world, for recrawl tests
    expected.py     what a correct crawl stores (the crawler's contract), and diffs
    fast_server.py  an asyncio server of pre-rendered pages, for benchmarks
    __main__.py     ``python -m sandbox.forum --shape large``: a shape's crawl figures
"""
