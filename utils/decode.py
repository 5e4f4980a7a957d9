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
unclosed tags. Past 2048 levels the rest would still be dropped, so that is a
``ParseError`` rather than a silently truncated tree.

XML (sitemaps, feeds) is parsed with entity expansion, DTD loading and the
network off and ``huge_tree`` off: billion-laughs and external entities
(``file://``, ``http://``) come back unexpanded or as a ``ParseError``.
defusedxml is not needed: these lxml options are what it sets, and refusing
every DTD would refuse old RSS 0.91 feeds that merely reference one.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from typing import TypeAlias

import lxml.html
from lxml import etree
from w3lib.encoding import html_body_declared_encoding, read_bom, resolve_encoding

from exceptions import ParseError, ResponseRejected

_CHARSET = re.compile(r"""charset\s*=\s*["']?([^"';,\s]+)""", re.IGNORECASE)
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
_FALLBACK = "cp1252"
HtmlElement: TypeAlias = lxml.html.HtmlElement  # lxml ships no stubs: Any to mypy
XmlElement: TypeAlias = etree._Element
_INVALID_BYTE = re.compile("[\udc80-\udcff]")
_NON_ASCII = re.compile("[^\x00-\x7f]+")


@dataclass(frozen=True)
class Decoded:
    """Text and how it was obtained: ``source`` is bom, utf-8, declared, mostly-utf-8 or
    fallback; ``lossy`` is True when undecodable bytes were replaced by U+FFFD."""

    text: str
    encoding: str
    source: str
    lossy: bool = False


def header_charset(content_type: str | None) -> str | None:
    """The ``charset`` parameter of a Content-Type header, as written, or None."""
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

    Raise ``ParseError`` for an empty document and for nesting past libxml2's
    hard limit, where the rest of the page would be lost without a word.
    """
    text = markup if isinstance(markup, str) else decode_body(markup).text
    parser = lxml.html.HTMLParser(encoding="utf-8", huge_tree=True, no_network=True)
    data = _XML_DECLARATION.sub("", text, count=1).encode("utf-8", errors="replace")
    try:
        root = lxml.html.document_fromstring(data, parser=parser, base_url=base_url)
    except etree.ParserError as exc:
        raise ParseError(f"HTML document is empty: {exc}", url=base_url) from None
    _refuse_truncated(parser, base_url)
    return root


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
