"""``python -m chains ...``: the same as the ``crawlchain`` command."""

import sys

from chains.commands import main

sys.exit(main(sys.argv[1:]))
