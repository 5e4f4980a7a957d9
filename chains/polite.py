"""The polite shop's chain: the index, each category's pages in turn, every item."""

from chains.runtime.model import Chain, Link, Step

polite = Chain(
    name="polite", start="index",
    steps={"index": Step(task="polite.web.index"),
           "listing": Step(task="polite.web.listing", inline_next=10),
           "item": Step(task="polite.web.item", batch_size=10)},
    links=[Link(src="index", records="categories", dst="listing", map={"url": "url"}),
           Link(src="listing", records="items", dst="item", map={"url": "url"})])
