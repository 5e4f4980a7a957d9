"""The demo site's captcha solver: reads the sandbox's arithmetic SVG captcha.

The image draws "12 + 7 =" one glyph per ``<text>`` element, in shuffled document
order, among noise lines and invisible decoy glyphs. Reading it is what an OCR does
on a real one: keep the visible glyphs, order them by ``x``, answer the question.
A real deployment replaces this class (an OCR model, a paid solving service) in
``sites/demo/__init__.py``; the ``CaptchaSolver`` Protocol stays.
"""

from __future__ import annotations

import operator
import re

from lxml import etree

from chains.api import CaptchaUnsolved, Challenge

SVG_TEXT = "{http://www.w3.org/2000/svg}text"
QUESTION = re.compile(r"(\d+)([+\-x])(\d+)=?")
OPERATORS = {"+": operator.add, "-": operator.sub, "x": operator.mul}


class DemoCaptchaSolver:
    """``CaptchaSolver`` for the sandbox's SVG arithmetic captcha."""

    def solve(self, challenge: Challenge) -> str:
        if challenge.media_type != "image/svg+xml":
            raise CaptchaUnsolved(f"cannot read {challenge.media_type} captchas")
        question = read_glyphs(challenge.image)
        match = QUESTION.fullmatch(question)
        if match is None:
            raise CaptchaUnsolved(f"unreadable question {question!r}")
        a, op, b = match.groups()
        return str(OPERATORS[op](int(a), int(b)))


def read_glyphs(svg: bytes) -> str:
    """The visible glyphs, left to right."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    try:
        root = etree.fromstring(svg, parser)
    except etree.XMLSyntaxError as exc:
        raise CaptchaUnsolved(f"not an SVG: {exc}") from None
    glyphs = [(float(t.get("x", "0")), (t.text or "").strip()) for t in root.iter(SVG_TEXT)
              if t.get("fill-opacity") != "0"]
    return "".join(text for _, text in sorted(glyphs))
