"""HTML of the properties site: detail pages and index pages, as in *Learning Scrapy* ch. 11.

Detail pages carry schema.org microdata (``itemprop`` name, price, description,
image; an ``itemtype=".../Place"`` address) the way the book's site does, so the
Scrapy peer keeps the book's XPaths. Both kinds are padded with ordinary site
chrome (head, CSS, nav, search form, related links, footer): detail pages weigh
about 6.7 KB and index pages about 15.5 KB, like real listing sites, so parsing
costs what it costs on the web and not what it costs on a toy page.
"""

from __future__ import annotations

from dataclasses import dataclass

AREAS = (
    "Camden", "Islington", "Hackney", "Brixton", "Clapham", "Chelsea", "Fulham", "Greenwich",
    "Hampstead", "Kensington", "Notting Hill", "Shoreditch", "Stratford", "Wimbledon", "Battersea",
    "Peckham", "Richmond", "Ealing", "Holborn", "Soho",
)


@dataclass(frozen=True)
class Listing:
    """One property's data; everything a detail page and its index entry show."""

    id: int
    title: str
    price: int
    address: str
    area: str
    description: str
    image: str
    features: tuple[str, ...]
    beds: int
    baths: int
    related: tuple[int, ...]


HEAD = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} | Properties Bench</title>
<meta name="description" content="{metadesc}">
<link rel="canonical" href="/{self}">
<link rel="stylesheet" href="/static/css/site.css">
<style type="text/css">
body {{font-family: Helvetica, Arial, sans-serif; margin: 0; color: #222;}}
a {{text-decoration: none; color: #0a58ca;}}
.header {{background: #123; color: #fff; padding: 8px 16px;}}
.header nav a {{color: #fff; margin-right: 12px;}}
.crumbs {{font-size: 12px; padding: 4px 16px; color: #666;}}
.content {{display: flex; padding: 16px;}}
.main {{flex: 3;}} .side {{flex: 1; font-size: 12px; padding-left: 16px;}}
.listing-maxi {{border-bottom: 1px solid #ddd; padding: 8px 0; list-style: none;}}
.listing-description {{font-size: 11px; display: block; color: #555;}}
.ad-price {{font-size: 22px; color: #080;}}
.footer {{background: #eee; font-size: 11px; padding: 16px; color: #555;}}
</style>
<script type="text/javascript">
window.dataLayer = window.dataLayer || [];
function gtag(){{dataLayer.push(arguments);}}
gtag('js', new Date()); gtag('config', 'UA-000000-0', {{'anonymize_ip': true}});
</script>
</head>
"""

HEADER = """<div class="header">
<a class="logo" href="/">Properties Bench</a>
<nav>
<a href="/static/about.html">About</a> <a href="/static/rent.html">To rent</a>
<a href="/static/buy.html">For sale</a> <a href="/static/new.html">New homes</a>
<a href="/static/commercial.html">Commercial</a> <a href="/static/agents.html">Find agents</a>
<a href="/static/prices.html">House prices</a> <a href="/static/blog.html">Blog</a>
<a href="/static/login.html">Sign in</a>
</nav>
<form class="search" action="/static/search.html" method="get">
<input type="text" name="q" placeholder="Area, station or postcode">
<select name="radius"><option value="0">This area only</option><option value="1">+1 mile</option>
<option value="3">+3 miles</option><option value="5">+5 miles</option></select>
<select name="min"><option value="">Min price</option><option value="100">&pound;100pw</option>
<option value="200">&pound;200pw</option><option value="300">&pound;300pw</option></select>
<select name="max"><option value="">Max price</option><option value="500">&pound;500pw</option>
<option value="1000">&pound;1,000pw</option><option value="2000">&pound;2,000pw</option></select>
<button type="submit">Search</button>
</form>
</div>
"""

FOOTER = """<div class="footer">
<ul class="footer-links">
<li><a href="/static/about.html">About us</a></li><li><a href="/static/careers.html">Careers</a></li>
<li><a href="/static/contact.html">Contact</a></li><li><a href="/static/help.html">Help</a></li>
<li><a href="/static/terms.html">Terms of use</a></li><li><a href="/static/privacy.html">Privacy notice</a></li>
<li><a href="/static/cookies.html">Cookie policy</a></li><li><a href="/static/sitemap.html">Sitemap</a></li>
</ul>
<p>Properties Bench is a synthetic site generated for crawler benchmarking. All listings,
prices and addresses are fictitious. Modelled on the example site of the book Learning Scrapy.
&copy; 2024 Properties Bench Ltd. Registered in England and Wales. All rights reserved.</p>
</div>
</body>
</html>
"""  # noqa: E501 - page chrome, kept byte-identical to the reference kit's

DETAIL_BODY = """<body itemscope itemtype="http://schema.org/Product">
{header}<div class="crumbs"><a href="/">Home</a> &gt; <a href="/static/rent.html">To rent</a> &gt;
<a href="/static/area-{areaslug}.html">{area}</a> &gt; Property {id}</div>
<div class="content">
<div class="main">
<h1 itemprop="name" class="space-mbs">{title}</h1>
<strong class="ad-price txt-xlarge txt-emphasis" itemprop="price">&pound;{price}pw</strong>
<span class="beds">{beds} bed</span> <span class="baths">{baths} bath</span>
<div class="gallery">
<img src="{image}" alt="image" itemprop="image" width="640" height="480" />
</div>
<h2>Property description</h2>
<p itemprop="description">{description}</p>
<h2>Key features</h2>
<ul class="features">
{features}
</ul>
<h2>Location</h2>
<p itemscope itemtype="http://schema.org/Place">{address}</p>
<div class="map" data-lat="51.5{lat:04d}" data-lng="-0.1{lng:04d}">Map loading...</div>
<h2>Contact the agent</h2>
<form class="contact" action="/static/contact.html" method="post">
<input type="hidden" name="property" value="{id}">
<p><input type="text" name="name" placeholder="Your name"></p>
<p><input type="email" name="email" placeholder="Email address"></p>
<p><input type="tel" name="phone" placeholder="Phone number"></p>
<p><textarea name="message" rows="4" cols="40">I am interested in property {id}. Please contact me.</textarea></p>
<p><button type="submit">Send enquiry</button></p>
</form>
</div>
<div class="side">
<h3>Similar properties</h3>
<ul>
{related}
</ul>
<h3>Mortgage calculator</h3>
<p>Monthly rent &pound;{monthly} based on {price} per week. Deposit typically five weeks rent.
Holding deposit one week rent. Ask the agent for full details of fees and charges.</p>
</div>
</div>
{footer}"""  # noqa: E501

INDEX_ENTRY = (
    '<li class="listing-maxi" itemscope itemtype="http://schema.org/Product">'
    '<a class="listing-link" itemprop="url" href="{href}">'
    '<img itemprop="image" src="{image}" alt="thumb"/>'
    '<span itemprop="name">{title}</span>, '
    '<span itemprop="price">&pound;{price}pw</span> '
    '<span itemscope itemtype="http://schema.org/Place">{address}</span></a></li>\n'
)


def detail_name(pid: int) -> str:
    return f"property_{pid:06d}.html"


def index_name(page: int) -> str:
    return f"index_{page:05d}.html"


def money(amount: int) -> str:
    return f"{amount:,}"


def slug(text: str) -> str:
    return text.lower().replace(" ", "-")


def render_detail(it: Listing, n: int) -> str:
    """A detail page; ``n`` (the site's size) keeps the related links inside the site."""
    related = "\n".join(
        f'<li class="related"><a href="{detail_name(j % n)}">Similar property #{j % n}</a></li>'
        for j in it.related)
    features = "\n".join(f"<li>{f.capitalize()}</li>" for f in it.features)
    head = HEAD.format(title=it.title, metadesc=it.description[:150], self=detail_name(it.id))
    return head + DETAIL_BODY.format(
        header=HEADER, footer=FOOTER, areaslug=slug(it.area), area=it.area, id=it.id,
        title=it.title, price=money(it.price), beds=it.beds, baths=it.baths, image=it.image,
        description=it.description, features=features, address=it.address,
        lat=it.id % 10000, lng=(it.id * 7) % 10000, related=related,
        monthly=money(it.price * 52 // 12))


def render_index(page: int, listings: list[Listing], next_page: int | None) -> str:
    """An index page: one entry per listing, then a ``<li class="next">`` link if any."""
    parts = [HEAD.format(title=f"Properties to rent - page {page}",
                         metadesc=f"Properties to rent, page {page}", self=index_name(page)),
             "<body>\n", HEADER,
             f'<div class="crumbs"><a href="/">Home</a> &gt; To rent &gt; Page {page}</div>\n'
             f'<div class="content"><div class="main">\n<h1>Page {page}</h1>\n<ul>\n']
    parts += [INDEX_ENTRY.format(href=detail_name(it.id), image=it.image, title=it.title,
                                 price=money(it.price), address=it.address) for it in listings]
    parts.append("</ul>\n")
    if next_page is not None:
        parts.append(f'<ul><li class="next"><a href="{index_name(next_page)}" rel="nofollow">'
                     "next</a></li></ul>\n")
    parts.append('</div>\n<div class="side"><h3>Refine search</h3><ul>\n')
    parts += [f'<li><a href="/static/area-{slug(a)}.html">{a}</a></li>\n' for a in AREAS[:4]]
    parts.append("</ul></div></div>\n")
    parts.append(FOOTER)
    return "".join(parts)
