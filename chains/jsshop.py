"""The JavaScript shop's chain: home, its three script-built lists, every product."""

from chains.api import Chain, Link, Step
from sites.jsshop import app_list, home, product, reveal_list, scroll_list

jsshop = Chain("jsshop", start=home,
               steps=[home, app_list, scroll_list, reveal_list, Step(product, batch_size=8)],
               links=[Link(home, app_list, records="app"),
                      Link(home, scroll_list, records="scroll"),
                      Link(home, reveal_list, records="reveal"), Link(app_list, product),
                      Link(scroll_list, product), Link(reveal_list, product)])
