"""How the command says what went wrong: one line on stderr, never a traceback.

    crawlchain launch: no chain named 'froum' (did you mean 'forum'?); known: ...

Exit codes: 2 when nothing ran because of what was given or the state the cluster is
in (a bad command line, a name, a param, a setting, an env file, no Redis, no worker);
1 for a bug (the line says to run again with ``--debug`` for its traceback); 141, as a
process killed by SIGPIPE, when the reader of its output went away (``| head``).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import NoReturn

USAGE = 2  # nothing ran: the input or the cluster's state was refused
BUG = 1
CLOSED_PIPE = 141  # 128 + SIGPIPE, as coreutils under `| head`


class OneLineParser(argparse.ArgumentParser):
    """argparse that states a bad command line in one line, with where to read more,
    instead of the usage block and the error under it."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE, f"{self.prog}: {message} ({self.prog} --help says more)\n")


def user_error(exc: BaseException) -> bool:
    """Whether ``exc`` refuses what the user gave (its message names the input and fix)."""
    from config import SettingError
    from exceptions import InvalidParams, UserError
    from utils.envfile import EnvFileError

    return isinstance(exc, UserError | SettingError | EnvFileError | InvalidParams)


def refused(prog: str, message: str) -> int:
    """Say why nothing ran, in one line; the exit code of a refusal."""
    text = " ".join(message.split())
    print(text if text.startswith(prog.split()[0]) else f"{prog}: {text}", file=sys.stderr)
    return USAGE


def unexpected(prog: str, exc: BaseException) -> int:
    """A bug: one line, and how to see its traceback."""
    text = " ".join(str(exc).split())[:300]
    print(f"{prog}: unexpected {type(exc).__name__}: {text} (a bug: run it again with "
          "crawlchain --debug for the traceback, and report it)", file=sys.stderr)
    return BUG


def closed_pipe() -> int:
    """The reader closed our stdout: stop quietly. Python would report the failed flush
    at exit, so stdout is pointed at /dev/null first (the recipe of the ``signal`` docs)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return CLOSED_PIPE
