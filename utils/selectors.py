"""parsel's ``Selector`` at a fraction of its cost per query, same answers.

A step's parse calls ``css()`` a few times per record (``post.css(".score::text")``),
so a page of posts runs dozens of queries, and parsel spends more on each than lxml
spends evaluating it: the namespaces filtered and sorted again to find the compiled
XPath, and every result wrapped by the full ``Selector.__init__`` (argument checks,
root type detection, a namespace dict built from scratch). ``PageSelector`` keeps
parsel's API and results and cuts that overhead:

- a CSS query's XPath translation and the compiled ``etree.XPath`` are looked up once
  per process per query (lxml's XPath objects lock themselves: safe across threads);
- a result is wrapped with the fields ``Selector.__init__`` would set for it, without
  running it (a result is always a root of a known type: nothing to detect).

Anything off the common path goes to parsel itself: XPath variables, namespaces given
or registered, EXSLT prefixes (``re:``, ``set:``), a JSON or text selector. The
results are parsel's own ``Selector`` objects' (``tests/utils/test_selectors.py``
compares the two on the same page).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Self, cast

from lxml import etree
from parsel import Selector, SelectorList
from parsel.csstranslator import GenericTranslator, HTMLTranslator

_DEFAULT_NAMESPACES: dict[str, str] = dict(Selector._default_namespaces)
_TRANSLATORS = {"html": HTMLTranslator(), "xml": GenericTranslator()}
_TREES = frozenset({"html", "xml"})


@lru_cache(maxsize=4096)
def css_xpath(kind: str, query: str) -> str:
    """The XPath of CSS ``query`` on an ``html`` or ``xml`` tree (cssselect, as parsel)."""
    return _TRANSLATORS[kind].css_to_xpath(query)


@lru_cache(maxsize=4096)
def compiled(query: str) -> etree.XPath | None:
    """``query`` compiled once per process (``XPathSyntaxError`` when it is not XPath);
    None when it names an EXSLT prefix (``re:``, ``set:``): parsel compiles those per
    call, since registering EXSLT leaves an entry in the evaluator's error log."""
    if any(f"{prefix}:" in query for prefix in _DEFAULT_NAMESPACES):
        return None
    return etree.XPath(query, smart_strings=False)


class PageSelector(Selector):
    """A parsel ``Selector`` whose ``css`` and ``xpath`` run compiled queries."""

    __slots__ = ()

    def xpath(self, query: str, namespaces: Mapping[str, str] | None = None,
              **kwargs: Any) -> SelectorList[Self]:
        root, kind = self.root, self.type
        if namespaces or kwargs or kind not in _TREES or not hasattr(root, "xpath") \
                or self.namespaces != _DEFAULT_NAMESPACES:
            return super().xpath(query, namespaces, **kwargs)
        try:
            evaluate = compiled(query)
            if evaluate is None:
                return super().xpath(query, namespaces, **kwargs)
            result = evaluate(root)
        except etree.XPathError as exc:
            raise ValueError(f"XPath error: {exc} in {query}") from None
        if not isinstance(result, list):
            result = [result]
        return cast("SelectorList[Self]",
                    self.selectorlist_cls([self._result(x, query) for x in result]))

    def css(self, query: str) -> SelectorList[Self]:
        if self.type not in _TREES:
            return super().css(query)
        return self.xpath(css_xpath(self.type, query))

    def get(self) -> Any:
        """A text or attribute result as it is (parsel gets there through an exception)."""
        return self.root if isinstance(self.root, str) else super().get()

    def _result(self, root: Any, query: str) -> Self:
        """What ``Selector(root=root, _expr=query, type=self.type)`` builds, built directly."""
        out = object.__new__(type(self))
        out.root = root
        out.type = self.type
        out.namespaces = dict(_DEFAULT_NAMESPACES)
        out._expr = query
        out._huge_tree = True  # parsel's default for a result, whatever its parent's
        out._text = None
        return out
