r"""A documentation site's pages as typed records, parsed by a rule of the generic crawl:
the crawl keeps a page record of every page, and each page whose URL matches the rule is
also parsed by ``doc_page`` into a ``DocPage``.

    crawlchain launch crawl --start https://docs.example.org/ \
        --rule '/docs/[^/]+/[^/]+\.html$=docs.web.doc_page'
"""

from chains.api import Item, Page, Parsed, Response, step


class DocPage(Item, collection="doc_pages", key="url"):
    url: str
    section: str
    title: str
    paragraphs: int


@step
def doc_page(page: Page, response: Response) -> Parsed[DocPage]:
    section = response.url.partition("/docs/")[2].partition("/")[0]
    return Parsed([DocPage(url=response.url, section=section,
                           title=response.css("h1::text").get("").strip(),
                           paragraphs=len(response.css("main p")))])
