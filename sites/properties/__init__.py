"""The properties benchmark site (``bench/properties/``): static index and detail pages.

Served by nginx from a generated directory for the throughput benchmark, or by the
latency server for the latency-bound test; ``base_url`` (``PROPERTIES_BASE_URL``, or
``launch(base_url=...)``) says where. The fields and XPaths are the Scrapy peer's
(``bench/scrapy_peer/``), which are the book's (*Learning Scrapy* ch. 11).

    properties.web.index    /index_NNNNN.html -> 30 detail links and the next page
    properties.web.detail   /property_NNNNNN.html -> one Property
"""
