"""Pages that lie about their charset, HTML that is barely HTML, XML that attacks its parser."""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from lxml import etree

from exceptions import ParseError, ResponseRejected
from external_interface.decode import (
    MAX_HTML_DEPTH,
    HtmlElement,
    decode_body,
    flatten_html,
    gunzip_capped,
    header_charset,
    html_selector,
    parse_html,
    parse_xml,
)
from external_interface.http import Response

CAFE = "Caf\u00e9 cr\u00e8me \u2014 \u201cna\u00efve\u201d"


# -- charsets ----------------------------------------------------------------------
@pytest.mark.parametrize(("body", "content_type", "text", "source"), [
    (CAFE.encode("utf-8"), None, CAFE, "utf-8"),
    (CAFE.encode("utf-8"), "text/html", CAFE, "utf-8"),
    (CAFE.encode("utf-8"), "text/html; charset=iso-8859-1", CAFE, "utf-8"),
    (CAFE.encode("cp1252"), "text/html; charset=utf-8", CAFE, "fallback"),
    (CAFE.encode("cp1252"), "text/html; charset=windows-1252", CAFE, "declared"),
    (CAFE.encode("cp1252"), "text/html; charset=latin-1", CAFE, "declared"),
    (CAFE.encode("cp1252"), "text/html; charset=x-no-such-charset", CAFE, "fallback"),
    (CAFE.encode("cp1252"), None, CAFE, "fallback"),
    (b"plain ascii", "text/plain; charset=utf-16", "plain ascii", "utf-8"),
])
def test_text_comes_out_right_whatever_the_header_claims(
        body: bytes, content_type: str | None, text: str, source: str) -> None:
    decoded = decode_body(body, content_type)
    assert (decoded.text, decoded.source, decoded.lossy) == (text, source, False)


@pytest.mark.parametrize(("codec", "bom"), [
    ("utf-8", b"\xef\xbb\xbf"), ("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff"),
])
def test_a_bom_wins_over_the_header(codec: str, bom: bytes) -> None:
    decoded = decode_body(bom + CAFE.encode(codec), "text/html; charset=iso-8859-1")
    assert (decoded.text, decoded.source) == (CAFE, "bom")


@pytest.mark.parametrize(("markup", "codec"), [
    ('<meta charset="shift_jis"><p>\u65e5\u672c\u8a9e</p>', "shift_jis"),
    ('<meta http-equiv="Content-Type" content="text/html; charset=koi8-r"><p>\u041c\u0438\u0440',
     "koi8-r"),
    ('<?xml version="1.0" encoding="iso-8859-7"?><p>\u0391\u03b8\u03ae\u03bd\u03b1</p>',
     "iso-8859-7"),
    ('<meta charset="gb2312"><p>\u9555</p>', "gbk"),  # gb2312 label, gbk-only character
])
def test_a_meta_or_xml_declaration_is_used_when_the_header_says_nothing(
        markup: str, codec: str) -> None:
    decoded = decode_body(markup.encode(codec), "text/html")
    assert decoded.text == markup and decoded.source == "declared"


def test_mostly_utf8_with_a_stray_byte_keeps_utf8_and_says_it_was_lossy() -> None:
    body = CAFE.encode("utf-8") * 3 + b"\xff" + CAFE.encode("utf-8")
    decoded = decode_body(body, "text/html; charset=utf-8")
    assert decoded.source == "mostly-utf-8" and decoded.lossy
    assert decoded.text.count(CAFE) == 4 and decoded.text.count("\ufffd") == 1
    with pytest.raises(ParseError, match="not valid text"):
        decode_body(body, "text/html; charset=utf-8", strict=True)


def test_truncated_utf8_at_the_cap_loses_only_the_cut_character() -> None:
    body = CAFE.encode("utf-8")[:-1]  # "\u201d" is three bytes: two are left
    decoded = decode_body(body)
    assert decoded.text.startswith(CAFE[:-1]) and decoded.lossy


def test_header_charset_reads_quoted_and_odd_spellings() -> None:
    assert header_charset('text/html; charset="UTF-8"') == "UTF-8"
    assert header_charset("text/html;charset=Shift_JIS;foo=bar") == "Shift_JIS"
    assert header_charset("text/html") is None and header_charset(None) is None


def test_response_text_of_an_unlabelled_utf8_page_is_not_latin1_mojibake() -> None:
    response = Response("http://h/", 200, {"Content-Type": "text/html"}, CAFE.encode())
    assert response.text == CAFE and response.content_type == "text/html"


# -- HTML --------------------------------------------------------------------------
@pytest.mark.parametrize("markup", [
    "<html><body><p>unclosed <b>bold <i>both</p></div></span><p>after",
    "<<<>>><p>after</p>",
    "<table><tr><td>a<td>b</table><p>after</p>",
    "<p>a\x00b</p><p>after</p>",
    '<?xml version="1.0" encoding="iso-8859-1"?><html><p>after</p></html>',
    "<p>after</p>" + "</div>" * 10_000,
    "<p>after</p><!-- unterminated comment",
    "<script>while(1){}</script><p>after</p><svg><foreignObject><math><p>x",
])
def test_malformed_html_parses_without_crashing(markup: str) -> None:
    root = parse_html(markup)
    assert "after" in root.text_content()


def test_html_bytes_are_decoded_by_their_own_evidence() -> None:
    root = parse_html('<meta charset="koi8-r"><p>\u041c\u0438\u0440</p>'.encode("koi8-r"))
    assert root.xpath("string(//p)") == "\u041c\u0438\u0440"


def test_several_hundred_unclosed_tags_keep_the_rest_of_the_page() -> None:
    root = parse_html("<html><body>" + "<font><b>" * 400 + "<p id=end>tail</p>")
    assert root.xpath("//p/@id") == ["end"]


def _deep_page(depth: int) -> str:
    """A page with a link before, inside and after ``depth`` nested divs."""
    return ("<html><head><title>Deep page</title></head><body>"
            '<a href="/first">first</a>' + "<div>" * depth + '<a href="/deep">deep</a>'
            + "</div>" * depth + '<a href="/after">after</a><p id="end">tail</p></body></html>')


def test_a_page_nested_100000_deep_yields_its_title_and_every_link() -> None:
    root = parse_html(_deep_page(100_000), base_url="https://example.com/")
    assert root.findtext(".//title") == "Deep page"
    assert root.xpath("//a/@href") == ["/first", "/deep", "/after"]
    assert root.xpath("//p[@id='end']/text()") == ["tail"]
    assert _depth(root) <= MAX_HTML_DEPTH + 2  # html and body above the page's own


def _depth(root: HtmlElement) -> int:
    depth = deepest = 0
    for event, _ in etree.iterwalk(root, events=("start", "end")):
        depth += 1 if event == "start" else -1
        deepest = max(deepest, depth)
    return deepest


def test_the_parsel_selector_sees_the_same_deep_page() -> None:
    page = html_selector(_deep_page(100_000).encode(), base_url="https://example.com/")
    assert page.css("title::text").get() == "Deep page"
    assert page.css("a::attr(href)").getall() == ["/first", "/deep", "/after"]


def test_unclosed_tags_past_the_parser_limit_keep_the_rest_of_the_page() -> None:
    root = parse_html("<title>t</title>" + "<div>" * 200_000 + "<p id=end>tail</p>")
    assert root.xpath("//p/@id") == ["end"] and len(root.xpath("//div")) == 200_000


def test_a_page_within_the_bound_is_copied_as_written_by_the_flattener() -> None:
    page = ('<!DOCTYPE html><html><head><title>a &amp; b</title><meta charset=utf-8>'
            '<script>if (a < b && c > d) { s = "<a href=x>" }</script></head><body>'
            '<!-- note --><p class="x" data-v=\'1 > 0\'>caf&eacute; &#233; &#x41;<br/>'
            "<img src=i.png><a href='/n'>n</a></p></span><![CDATA[x]]></body></html>")
    assert flatten_html(page) == page


def test_flattening_closes_the_deepest_element_and_keeps_the_rest_in_order() -> None:
    assert flatten_html("<i><b><u>x</u>y</b>z</i>", max_depth=2) == "<i><b></b><u>x</u>yz</i>"
@pytest.mark.parametrize("markup", ["", "   ", b"", b"\n\n"])
def test_an_empty_document_is_a_parse_error(markup: str | bytes) -> None:
    with pytest.raises(ParseError, match="empty"):
        parse_html(markup)


# -- XML ---------------------------------------------------------------------------
LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE urlset [
 <!ENTITY a "lollollollollollollollollollol">
 <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
 <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
 <!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
 <!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;">
 <!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;">
 <!ENTITY g "&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;">
 <!ENTITY h "&g;&g;&g;&g;&g;&g;&g;&g;&g;&g;">
 <!ENTITY i "&h;&h;&h;&h;&h;&h;&h;&h;&h;&h;">
]>
<urlset><url><loc>&i;</loc></url>%s</urlset>"""


@pytest.mark.parametrize("tail", [b"", b'<url kind="&i;"/>'])
def test_billion_laughs_is_never_expanded(tail: bytes) -> None:
    started = time.monotonic()
    try:
        root = parse_xml(LAUGHS % tail)
    except ParseError:
        pass  # libxml2's amplification limit: refused outright
    else:
        assert len(" ".join(root.itertext())) < 1000
    assert time.monotonic() - started < 2


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret.txt"
    path.write_text("TOP-SECRET-CONTENT")
    (tmp_path / "evil.dtd").write_text('<!ENTITY leak "TOP-SECRET-CONTENT">')
    return path


def _leaks(document: bytes) -> bool:
    try:
        root = parse_xml(document)
    except ParseError:
        return False
    return "TOP-SECRET" in " ".join(root.itertext())


def test_external_file_entities_are_not_read(secret: Path) -> None:
    doc = (b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file://%s">]>'
           b"<urlset><url><loc>&x;</loc></url></urlset>" % str(secret).encode())
    assert not _leaks(doc)


def test_external_parameter_entities_and_dtds_are_not_loaded(secret: Path) -> None:
    dtd = str(secret.parent / "evil.dtd").encode()
    assert not _leaks(b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY %% p SYSTEM "file://%s"> %%p;]>'
                      b"<r>&leak;</r>" % dtd)
    assert not _leaks(b'<?xml version="1.0"?><!DOCTYPE r SYSTEM "file://%s"><r>&leak;</r>' % dtd)


class Counting(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.hits += 1  # type: ignore[attr-defined]
        body = b'<!ENTITY leak "TOP-SECRET-CONTENT">'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def dtd_server() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Counting)
    server.hits = 0  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_no_network_fetch_happens_for_external_entities(dtd_server: ThreadingHTTPServer) -> None:
    url = f"http://127.0.0.1:{dtd_server.server_address[1]}/evil.dtd".encode()
    for doc in (b'<?xml version="1.0"?><!DOCTYPE r SYSTEM "%s"><r>&leak;</r>' % url,
                b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY %% p SYSTEM "%s"> %%p;]><r/>' % url,
                b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "%s">]><r>&x;</r>' % url):
        assert not _leaks(doc)
    assert dtd_server.hits == 0  # type: ignore[attr-defined]


def test_a_sloppy_sitemap_is_recovered_and_a_hopeless_one_is_a_parse_error() -> None:
    root = parse_xml(b"<urlset><url><loc>http://h/?a=1&b=2</loc></url></urlset>")
    assert root.findtext("url/loc").startswith("http://h/?a=1")
    with pytest.raises(ParseError):
        parse_xml(b"not xml at all")
    with pytest.raises(ParseError):
        parse_xml(b"<a><b>", recover=False)


def test_a_decoded_xml_string_with_a_declaration_parses() -> None:
    root = parse_xml('<?xml version="1.0" encoding="iso-8859-1"?><r>caf\u00e9</r>')
    assert root.text == "caf\u00e9"


def test_deep_xml_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        parse_xml(b"<a>" * 100_000)


# -- gzip files --------------------------------------------------------------------
def test_a_gzipped_sitemap_is_unpacked() -> None:
    assert gunzip_capped(gzip.compress(b"<urlset/>"), 1024) == b"<urlset/>"


def test_a_gzip_bomb_file_stops_at_the_cap() -> None:
    zc = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = b"".join(zc.compress(bytes(1 << 20)) for _ in range(256)) + zc.flush()
    with pytest.raises(ResponseRejected, match="cap"):
        gunzip_capped(bomb, 1 << 20)


@pytest.mark.parametrize("data", [b"not gzip", gzip.compress(b"x" * 1000)[:20]])
def test_broken_gzip_is_a_parse_error(data: bytes) -> None:
    with pytest.raises(ParseError):
        gunzip_capped(data, 1 << 20)
