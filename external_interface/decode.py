"""Bytes from the web into text and trees, without trusting what the page claims.

Charsets: a BOM wins; then a body that is strictly valid UTF-8 with non-ASCII
in it is UTF-8 whatever the header or ``<meta>`` says (legacy text is almost
never valid UTF-8 by chance, while "charset=iso-8859-1" on a UTF-8 page is
common); then the declared charset (header, else ``<meta>``/XML declaration,
with browser aliases: latin-1 is windows-1252, gb2312 is gb18030) if the body
decodes cleanly in it; then UTF-8 with the odd bad byte replaced when most of
the non-ASCII is valid UTF-8; else windows-1252. Every step but the last
decodes strictly, so ``Decoded.lossy`` says whether anything was replaced and
``strict=True`` turns that into a ``ParseError``.

HTML is parsed by lxml's recovering parser with ``huge_tree`` on: the input is
already capped by the fetch, HTML has no entity expansion, and libxml2's
default depth limit of 256 silently drops the rest of a page with a few hundred
unclosed tags. Past 2048 levels libxml2 stops reading altogether, so such a page
is read again flattened, as Chrome builds it: an element deeper than
``MAX_HTML_DEPTH`` (512, Chrome's own bound) becomes a sibling of the deepest
one instead of its child, so every element, text and link is kept
(``flatten_html``). A page is never refused for its depth alone; the fetch's
size cap bounds the work.

XML (sitemaps, feeds) is parsed with entity expansion, DTD loading and the
network off and ``huge_tree`` off: billion-laughs and external entities
(``file://``, ``http://``) come back unexpanded or as a ``ParseError``.
defusedxml is not needed: these lxml options are what it sets, and refusing
every DTD would refuse old RSS 0.91 feeds that merely reference one.
"""

from __future__ import annotations

import functools
import io
import re
import sys
import zlib
from array import array
from collections import Counter
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import TypeAlias

import lxml.html
from lxml import etree
from w3lib.encoding import html_body_declared_encoding, read_bom, resolve_encoding

from exceptions import ParseError, ResponseRejected
from utils.selectors import PageSelector

_CHARSET = re.compile(r"""charset\s*=\s*["']?([^"';,\s]+)""", re.IGNORECASE)
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
_FALLBACK = "cp1252"
HtmlElement: TypeAlias = lxml.html.HtmlElement  # lxml ships no stubs: Any to mypy
XmlElement: TypeAlias = etree._Element
_INVALID_BYTE = re.compile("[\udc80-\udcff]")
MAX_HTML_DEPTH = 512  # Chrome's bound on DOM depth; libxml2 stops reading at 2048
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                   "param", "source", "track", "wbr"})

_NON_ASCII = re.compile("[^\x00-\x7f]+")


@dataclass(frozen=True)
class Decoded:
    """Text and how it was obtained: ``source`` is bom, utf-8, declared, mostly-utf-8 or
    fallback; ``lossy`` is True when undecodable bytes were replaced by U+FFFD."""

    text: str
    encoding: str
    source: str
    lossy: bool = False


@functools.lru_cache(maxsize=256)
def header_charset(content_type: str | None) -> str | None:
    """The ``charset`` parameter of a Content-Type header, as written, or None (a site
    sends a few Content-Types over and over: cached)."""
    found = _CHARSET.search(content_type or "")
    return found.group(1) if found else None


def decode_body(body: bytes, content_type: str | None = None, *,
                declared: str | None = None, strict: bool = False) -> Decoded:
    """``body`` as text (see the module docstring for the order of evidence).

    ``declared`` overrides the header's charset (a caller that already knows).
    ``strict``: raise ``ParseError`` instead of returning lossy text.
    """
    decoded = _decode(body, declared or header_charset(content_type))
    if strict and decoded.lossy:
        raise ParseError(f"body is not valid text in {decoded.encoding} "
                         "or any charset it declares")
    return decoded


def _decode(body: bytes, declared: str | None) -> Decoded:
    bom, mark = read_bom(body)
    if bom:
        text = body[len(mark or b""):].decode(bom, errors="replace")
        return Decoded(text, bom, "bom", "\ufffd" in text)
    try:
        utf8: str | None = body.decode("utf-8")
    except UnicodeDecodeError:
        utf8 = None
    if utf8 is not None and not body.isascii():
        return Decoded(utf8, "utf-8", "utf-8")
    charset = _known(declared) or _known(_body_charset(body))
    if charset:
        try:
            return Decoded(body.decode(charset), charset, "declared")
        except UnicodeDecodeError:
            pass
    if utf8 is not None:  # pure ASCII and no declaration that reads it
        return Decoded(utf8, "utf-8", "utf-8")
    return _best_effort(body)


def _best_effort(body: bytes) -> Decoded:
    """Mostly valid UTF-8 keeps UTF-8 with the bad bytes replaced; else windows-1252."""
    raw = body.decode("utf-8", errors="surrogateescape")
    invalid = len(_INVALID_BYTE.findall(raw))
    valid = sum(map(len, _NON_ASCII.findall(raw))) - invalid
    if valid > invalid:
        return Decoded(body.decode("utf-8", errors="replace"), "utf-8", "mostly-utf-8", True)
    text = body.decode(_FALLBACK, errors="replace")
    return Decoded(text, _FALLBACK, "fallback", "\ufffd" in text)


def _body_charset(body: bytes) -> str | None:
    """``<meta>`` or XML-declaration charset; a UTF-16/32 one cannot be true if it was
    readable as ASCII, so it means UTF-8 (as browsers read it)."""
    found = html_body_declared_encoding(body)
    return "utf-8" if found and found.lower().startswith(("utf-16", "utf-32")) else found


def _known(charset: str | None) -> str | None:
    """A Python codec for a web charset label (browser aliases applied), or None."""
    return resolve_encoding(charset) if charset else None


# -- trees --------------------------------------------------------------------
def parse_html(markup: str | bytes, base_url: str | None = None) -> HtmlElement:
    """A recovered lxml tree of ``markup`` (text, or bytes that ``decode_body`` reads).

    A page nested past libxml2's limit is read again flattened (``flatten_html``),
    so its text and links after the deep part are not lost. ``ParseError`` for an
    empty document only.
    """
    text = markup if isinstance(markup, str) else decode_body(markup).text
    text = _XML_DECLARATION.sub("", text, count=1)
    root, truncated = _html_tree(text, base_url)
    if truncated:
        root, _ = _html_tree(flatten_html(text), base_url)
    return root


def html_selector(markup: str | bytes, base_url: str | None = None) -> PageSelector:
    """A parsel ``Selector`` over ``parse_html``'s tree (``PageSelector``: its queries
    compiled once). ``Selector(text=..., type="html")`` parses by itself and silently
    stops at libxml2's depth limit (2048 levels)."""
    return PageSelector(root=parse_html(markup, base_url), type="html", base_url=base_url)


def _html_tree(text: str, base_url: str | None) -> tuple[HtmlElement, bool]:
    """The recovered tree, and whether libxml2 stopped at a resource limit (depth)."""
    parser = lxml.html.HTMLParser(encoding="utf-8", huge_tree=True, no_network=True)
    data = text.encode("utf-8", errors="replace")
    try:
        root = lxml.html.document_fromstring(data, parser=parser, base_url=base_url)
    except etree.ParserError as exc:
        raise ParseError(f"HTML document is empty: {exc}", url=base_url) from None
    limited = any(e.type_name == "ERR_RESOURCE_LIMIT" for e in parser.error_log)
    return root, limited


def flatten_html(text: str, max_depth: int = MAX_HTML_DEPTH) -> str:
    """``text`` rewritten so no element is nested deeper than ``max_depth``, as Chrome
    builds such a page: an element that would go deeper becomes the next sibling of
    the deepest one (that one is closed early, and its own end tag dropped later).
    Every element, text, comment and reference is kept, in document order.
    """
    flattener = _Flattener(max_depth)
    flattener.feed(text)
    flattener.close()
    return flattener.text


class _Flattener(HTMLParser):
    """Copies markup token by token, closing the deepest element early at the bound.

    ``names``/``in_output`` are the source's stack of open elements and whether each
    is still open in the output, with a count per name, so an end tag is matched, or
    known to be stray, without a scan; ``live`` indexes those open in the output.
    The work is linear and the stacks compact (interned names, a flag byte, C longs).
    """

    def __init__(self, max_depth: int) -> None:
        super().__init__(convert_charrefs=False)
        self.max_depth = max_depth
        self.buffer = io.StringIO()
        self.names: list[str] = []
        self.in_output = bytearray()
        self.live = array("l")
        self.counts: Counter[str] = Counter()

    @property
    def text(self) -> str:
        return self.buffer.getvalue()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            self.buffer.write(self.get_starttag_text() or "")
            return
        if len(self.live) >= self.max_depth:  # close the deepest: the new one is its sibling
            deepest = self.live.pop()
            self.in_output[deepest] = 0
            self.buffer.write(f"</{self.names[deepest]}>")
        self.buffer.write(self.get_starttag_text() or "")
        self.live.append(len(self.names))
        self.names.append(sys.intern(tag))
        self.in_output.append(1)
        self.counts[tag] += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.buffer.write(self.get_starttag_text() or "")

    def handle_endtag(self, tag: str) -> None:
        if not self.counts[tag]:
            self.buffer.write(f"</{tag}>")  # stray: the tree builder ignores it as before
            return
        while True:  # the elements left open inside this one close with it
            name, in_output = self.names.pop(), self.in_output.pop()
            self.counts[name] -= 1
            if in_output:
                self.live.pop()
            if name == tag:
                break
        if in_output:
            self.buffer.write(f"</{tag}>")

    def handle_data(self, data: str) -> None:
        self.buffer.write(data)

    def handle_entityref(self, name: str) -> None:
        self.buffer.write(f"&{name};")

    def handle_charref(self, name: str) -> None:
        self.buffer.write(f"&#{name};")

    def handle_comment(self, data: str) -> None:
        self.buffer.write(f"<!--{data}-->")

    def handle_decl(self, decl: str) -> None:
        self.buffer.write(f"<!{decl}>")

    def handle_pi(self, data: str) -> None:
        self.buffer.write(f"<?{data}>")

    def unknown_decl(self, data: str) -> None:
        close = "]>" if data.lower().startswith(("if", "else", "endif")) else "]]>"
        self.buffer.write(f"<![{data}{close}")  # <![CDATA[x]]>, <![if !IE]>


def parse_xml(data: bytes | str, base_url: str | None = None, *,
              recover: bool = True) -> XmlElement:
    """An lxml tree of an XML document (sitemap, feed) with no entity expanded.

    ``recover`` (default) keeps what can be read from a sloppy feed; a document
    with nothing readable, or one that trips libxml2's amplification or depth
    limits without ``recover``, is a ``ParseError``.
    """
    if isinstance(data, str):  # the text is decoded already: its declaration would lie
        data = _XML_DECLARATION.sub("", data, count=1).encode("utf-8")
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                             huge_tree=False, recover=recover, remove_blank_text=False)
    try:
        root = etree.fromstring(data, parser=parser, base_url=base_url)
    except etree.XMLSyntaxError as exc:
        raise ParseError(f"XML not well-formed: {exc}", url=base_url) from None
    _refuse_truncated(parser, base_url)
    if root is None:
        raise ParseError("XML document has no root element", url=base_url)
    return root


def _refuse_truncated(parser: etree._FeedParser, url: str | None) -> None:
    """libxml2 stops at a resource limit (depth, entity amplification) and, recovering,
    returns what it had: a tree missing its rest, which is worse than an error."""
    for error in parser.error_log:
        if error.type_name == "ERR_RESOURCE_LIMIT":
            raise ParseError(f"document past the parser's limits: {error.message}", url=url)


def gunzip_capped(data: bytes, cap: int) -> bytes:
    """Gunzip a file that arrived as data (``sitemap.xml.gz``), refusing past ``cap`` bytes.

    The fetch's own decoded-size cap only covers ``Content-Encoding``; a ``.gz``
    body is opaque to it, so a bomb inside one is stopped here.
    """
    inflater = zlib.decompressobj(wbits=47)  # gzip or zlib header, detected
    try:
        out = inflater.decompress(data, cap + 1)
    except zlib.error as exc:
        raise ParseError(f"not a valid gzip/zlib stream: {exc}") from None
    if len(out) > cap:
        raise ResponseRejected(f"gzip data expands past the cap of {cap} bytes")
    if not inflater.eof:
        raise ParseError("gzip stream is truncated")
    return out
