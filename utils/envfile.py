"""The cluster's environment file: one file of settings every host shares.

Broker, state Redis, storage URLs and their passwords go in one dotenv file
(``KEY=value`` lines), by default ``crawlchain.env`` in the checkout
(gitignored), or wherever ``CRAWLCHAIN_ENV_FILE`` points; an empty
``CRAWLCHAIN_ENV_FILE=`` means "no file" (the tests run that way). ``config.py``
reads it (pydantic-settings ``env_file``) and ``control.sh`` exports it to every
process it starts, with the same precedence: a variable already set in the
environment wins over the file.

The file holds secrets, so a file other users may read or write is refused
before a single value is used, with the fix in the message. Values are never
printed; errors name the file, the line and the key only.

    eval "$(python -m ops.envfile export)"   # what control.sh does
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from collections.abc import Mapping
from pathlib import Path

from dotenv import dotenv_values

CHECKOUT = Path(__file__).resolve().parent.parent
DEFAULT_NAME = "crawlchain.env"
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PER_HOST = ("CRAWLCHAIN_HOME", "CRAWLCHAIN_ENV_FILE")  # where a host keeps its files


class EnvFileError(ValueError):
    """The environment file cannot be used; the message names the file and the fix."""


def locate(environ: Mapping[str, str] | None = None) -> Path | None:
    """The file to read: ``CRAWLCHAIN_ENV_FILE`` (must exist) or the checkout's default
    (only if present); None when ``CRAWLCHAIN_ENV_FILE`` is set empty or no file exists."""
    environ = os.environ if environ is None else environ
    given = environ.get("CRAWLCHAIN_ENV_FILE")
    if given is None:
        default = CHECKOUT / DEFAULT_NAME
        return default if default.exists() else None
    if not given:
        return None
    path = Path(given)
    if not path.is_file():
        raise EnvFileError(f"CRAWLCHAIN_ENV_FILE={given} does not exist (or is not a file): "
                           "create it (mode 600), or unset CRAWLCHAIN_ENV_FILE")
    return path


def check_mode(path: Path) -> None:
    """Refuse a file that group or others may read or write: it holds the cluster's
    passwords, and a shared login on one host would hand them to every user there."""
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise EnvFileError(
            f"{path} has mode {mode:04o}: group/other users can access the cluster's "
            f"secrets; run: chmod 600 {shlex.quote(str(path))}")


def read(path: Path) -> dict[str, str]:
    """The file's variables after the mode check; a key that is not a shell name, a key
    without a value, or a per-host path is refused by name (never echoing a value)."""
    check_mode(path)
    values = dotenv_values(path)
    for number, key in enumerate(values, start=1):
        if not _KEY.fullmatch(key):
            raise EnvFileError(f"{path}: entry {number}: {key!r} is not a variable name")
        if values[key] is None:
            raise EnvFileError(f"{path}: {key} has no value (write {key}=...)")
        if key in PER_HOST:
            raise EnvFileError(f"{path}: {key} belongs to each host's own environment, "
                               "not to the file the hosts share")
    return {key: value for key, value in values.items() if value is not None}


def shell_exports(values: Mapping[str, str], environ: Mapping[str, str]) -> str:
    """``export KEY='value'`` lines for the variables the environment does not set yet."""
    return "".join(f"export {key}={shlex.quote(value)}\n"
                   for key, value in values.items() if key not in environ)
