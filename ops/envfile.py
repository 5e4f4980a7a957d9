"""``python -m ops.envfile export|check``: the cluster's env file, for control.sh.

``export`` prints ``export KEY='value'`` lines for ``eval`` (a variable already set in the
environment wins over the file); ``check`` only validates. The file is read and checked
by ``utils.envfile``.
"""

from __future__ import annotations

import os
import sys

from utils.envfile import EnvFileError, locate, read, shell_exports


def main(argv: list[str]) -> int:
    """``export``: print the exports for ``eval``; ``check``: only validate. Errors go
    to stderr with exit code 2, so ``eval`` in a strict script stops there."""
    if argv not in (["export"], ["check"]):
        print("usage: python -m ops.envfile export|check", file=sys.stderr)
        return 2
    try:
        path = locate()
        values = read(path) if path else {}
    except EnvFileError as exc:
        print(f"control.sh: {exc}", file=sys.stderr)
        return 2
    if argv == ["export"]:
        sys.stdout.write(shell_exports(values, os.environ))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
