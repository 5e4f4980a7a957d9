"""``crawlchain``: the user's one command, also ``python -m cli`` and ``./control.sh``.

Each subcommand is a module here, found by its name (``new_site.py`` is ``new-site``,
``try_.py`` is ``try``): its docstring's first line is its help, ``arguments(parser)``
declares its options and ``run(args)`` returns the exit code; a module with
``PASSES_REST = True`` gets every argument after its name as it was given
(``args.rest``), for the tool it wraps to parse (its own ``--help`` included). Modules
keep heavy imports inside ``run``, so ``crawlchain --help`` is quick.

A mistake of the user's (a bad command line, a name that does not exist, a setting's
value, a cluster that does not answer) is one line on stderr naming the input and the
fix, and exit code 2 (``_errors``); a bug is one line too, exit 1, its traceback shown
with ``--debug``.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from types import ModuleType

from cli._errors import OneLineParser, closed_pipe, refused, unexpected, user_error
from utils.logs import configure


def commands() -> dict[str, ModuleType]:
    """Every subcommand module, by command name."""
    found = {}
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            name = info.name.rstrip("_").replace("_", "-")
            found[name] = importlib.import_module(f"{__name__}.{info.name}")
    return dict(sorted(found.items()))


def parser() -> OneLineParser:
    """The command line: ``crawlchain [--debug] COMMAND ...``."""
    top = OneLineParser(prog="crawlchain", description=__doc__.split("\n\n")[0],
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--debug", action="store_true",
                     help="show the traceback of an error (a bug's, or a refusal's cause)")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in commands().items():
        doc = (module.__doc__ or "").strip()
        command = sub.add_parser(name, help=doc.split("\n")[0], description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help=argparse.SUPPRESS)
        module.arguments(command)
        command.set_defaults(run=module.run, prog=command.prog)
    return top


def parse(top: OneLineParser, argv: list[str]) -> argparse.Namespace:
    """The arguments; those after a command that passes them on, as they were given
    (but ``--debug``, which is the command line's own)."""
    at = next((i for i, arg in enumerate(argv) if not arg.startswith("-")), len(argv))
    module = commands().get(argv[at]) if at < len(argv) else None
    if module is None or not getattr(module, "PASSES_REST", False):
        args = top.parse_args(argv)
        args.rest = []
        return args
    args = top.parse_args(argv[:at + 1])
    args.rest = [arg for arg in argv[at + 1:] if arg != "--debug"]
    args.debug = args.debug or "--debug" in argv[at + 1:]
    return args


def main(argv: list[str] | None = None) -> int:
    top = parser()
    args = parse(top, sys.argv[1:] if argv is None else argv)
    try:
        configure()  # LOG_LEVEL, LOG_FORMAT: "job ... started" at INFO, secrets masked
    except ValueError as exc:
        top.error(str(exc))
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `crawlchain export ... | head`: the reader has all it wants
        return closed_pipe()
    except SystemExit as exc:
        if isinstance(exc.code, str):  # a command's own one-line refusal
            return refused(args.prog, exc.code)
        raise
    except Exception as exc:
        if args.debug:
            raise
        if user_error(exc):
            return refused(args.prog, str(exc))
        return unexpected(args.prog, exc)
