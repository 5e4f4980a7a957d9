"""Links for a generic crawl: a page's record fields in one pass (``links.extract``).

    page = extract_page(response)                 # title, description, canonical, links
    keep = AllowedDomains(["example.org"])        # utils.domains: registrable domains
    follow = [url for url in page.links if keep.allows_url(url)]

Index pages hold tens of thousands of links, so both are built for speed.
"""
