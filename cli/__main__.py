"""``python -m cli ...``: the same as the ``crawlchain`` command."""

import sys

from cli import main

sys.exit(main(sys.argv[1:]))
