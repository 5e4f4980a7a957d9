"""``crawlchain``: the user's one command, also ``python -m chains`` and ``./control.sh``.

Each subcommand is a module here, found by its name (``new_site.py`` is ``new-site``,
``try_.py`` is ``try``): its docstring's first line is its help, ``arguments(parser)``
declares its options and ``run(args)`` returns the exit code; a module with
``PASSES_REST = True`` hands its unparsed arguments (``args.rest``) to the tool it
wraps. Modules keep heavy imports inside ``run``, so ``crawlchain --help`` is quick.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from types import ModuleType

from utils.logs import configure


def commands() -> dict[str, ModuleType]:
    """Every subcommand module, by command name."""
    found = {}
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            name = info.name.rstrip("_").replace("_", "-")
            found[name] = importlib.import_module(f"{__name__}.{info.name}")
    return dict(sorted(found.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="crawlchain", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in commands().items():
        doc = (module.__doc__ or "").strip()
        command = sub.add_parser(name, help=doc.split("\n")[0], description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
        module.arguments(command)
        command.set_defaults(run=module.run, passes_rest=getattr(module, "PASSES_REST", False))
    args, rest = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    if rest and not args.passes_rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    args.rest = rest
    try:
        configure()  # LOG_LEVEL, LOG_FORMAT: "job ... started" at INFO, secrets masked
    except ValueError as exc:
        parser.error(str(exc))
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        return 130
