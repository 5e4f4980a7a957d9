"""``python -m api.token ensure``: the API's token, written into the cluster's env file once.

The token goes where the cluster's other secrets are: the env file (``crawlchain.env``
in the checkout, or ``CRAWLCHAIN_ENV_FILE``), created mode 600 when it does not exist
and refused when others may read it (``utils.envfile.check_mode``). A token already in
the file or the environment is kept. The token is never printed: read it from the file.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

from utils import envfile

NAME = "API_TOKEN"


def ensure(path: Path) -> bool:
    """Append a new random token to ``path`` unless it holds one; True if one was written."""
    if path.exists() and envfile.read(path).get(NAME):
        return False
    line = f"{NAME}={secrets.token_urlsafe(32)}\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as out:
        if path.stat().st_size and not path.read_bytes().endswith(b"\n"):
            out.write("\n")
        out.write(line)
    envfile.check_mode(path)
    return True


def target() -> Path:
    """The env file to write: ``CRAWLCHAIN_ENV_FILE``'s, else the checkout's default."""
    given = os.environ.get("CRAWLCHAIN_ENV_FILE")
    if given == "":
        raise envfile.EnvFileError(f"CRAWLCHAIN_ENV_FILE is set empty (no env file): set "
                                   f"{NAME} in the environment instead")
    return Path(given) if given else envfile.CHECKOUT / envfile.DEFAULT_NAME


def main(argv: list[str]) -> int:
    if argv != ["ensure"]:
        print("usage: python -m api.token ensure", file=sys.stderr)
        return 2
    if os.environ.get(NAME):
        return 0
    try:
        path = target()
        if ensure(path):
            print(f"api: wrote a new {NAME} into {path} (mode 600); scripts send it as "
                  f"'Authorization: Bearer ...', the console asks for it once", file=sys.stderr)
    except (OSError, envfile.EnvFileError) as exc:
        print(f"api: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
