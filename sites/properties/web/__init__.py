"""The properties site's web pages: index pages and property detail pages."""
