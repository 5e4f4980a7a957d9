"""A shop whose pages are built by JavaScript (``python -m sandbox.js``): what a crawler
needs a browser for, and detail pages that need none (``sites/jsshop``)."""
