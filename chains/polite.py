"""The polite shop's chain: the index, each category's pages in turn, every item."""

from chains.api import Chain, Link, Step
from sites.polite import index, item, listing

polite = Chain("polite", start=index,
               steps=[index, Step(listing, inline_next=10), Step(item, batch_size=10)],
               links=[Link(index, listing), Link(listing, item)])
