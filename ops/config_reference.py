"""The configuration reference, ``docs/configuration.md``, generated from ``config.py``.

    python -m ops.config_reference            write it (``./control.sh docs``)
    python -m ops.config_reference --check    exit 1, naming each stale variable, when
                                              the file is not what the models say

Every ``BaseSettings`` model that ``config`` defines is found by introspection, in the
order of the source, and each field becomes a row: its environment variable, type,
default and description. A new model or field is documented by its own description,
so the reference cannot drift from the code (``tests/ops/test_config_reference.py``
fails when the committed file is stale). Defaults are shown as a fresh checkout has
them, paths under ``$CRAWLCHAIN_HOME``; a secret's default is never shown, and URL
credentials in a default are masked.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, SecretBytes, SecretStr, TypeAdapter
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

import config
from utils.urls import redact_text

OUT = config.HOME / "docs" / "configuration.md"
FIX = "run ./control.sh docs"
HIDDEN = "(secret: not shown)"
SECRET_NAME = re.compile(r"password|passwd|secret|token|credential|api_?key", re.I)
SECRET_TEXT = re.compile(r"\b(passwords?|secrets?)\b", re.I)
BOUNDS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}  # Field(gt=0) and its kin

INTRO = """\
Every variable is read from the environment, then from the hosts' settings file
(`CRAWLCHAIN_ENV_FILE`, see [deploying](deploying.md#1-the-settings-file)); a variable
set in the environment wins. A value the model refuses stops the process at start,
naming the model and the variable. `config.Settings` reads every model below; a type
written "JSON ..." is given as JSON (`PROXY_URLS='["http://10.0.0.7:3128"]'`)."""

# Variables read outside the settings models (control.sh, logging, the host fan-out, the
# embedded Redis, sites): (name, default, meaning). A test checks the code reads each.
OTHER: tuple[tuple[str, str, str], ...] = (
    ("CRAWLCHAIN_HOME", "the checkout", "Where `run/`, `logs/` and `data/` live. Each host's "
     "own: never in the settings file."),
    ("CRAWLCHAIN_ENV_FILE", "`crawlchain.env` in the checkout", "The hosts' shared settings "
     "file (dotenv lines, mode 600: a file others may read is refused); empty: none."),
    ("LOG_LEVEL", "`INFO`", "`DEBUG` (one line per fetch), `INFO`, `WARNING`, `ERROR` or "
     "`CRITICAL`, for every process control.sh starts and the crawlchain command."),
    ("LOG_FORMAT", "`text`", "`text`, or `json`: every line of every process's log one JSON "
     "object."),
    ("STOP_MARGIN_S", "`30`", "A stopping worker's running units get `TASK_TIME_LIMIT_S` plus "
     "this before they are cut (and delivered again)."),
    ("PYTHON", "the newest `python3.13` ... `python3.11` on PATH", "The interpreter `setup` "
     "builds `.venv/` with (3.11 or later)."),
    ("CRAWLCHAIN_EXTRAS", "none", "Extras `setup` installs, comma-separated: `postgres`, "
     "`mongo`, `parquet`."),
    ("REDIS_SERVER", "`redis-server` on PATH", "The embedded Redis's server binary (7 or "
     "later; a `valkey-server` does too)."),
    ("DEMO_PORT", "`8765`", "Port of the sandbox control.sh starts for the demo "
     "(`DEMO_BASE_URL` is `http://127.0.0.1:DEMO_PORT`)."),
    ("EXPORTER_HOST", "`127.0.0.1`", "Where `./control.sh start exporter` serves Prometheus "
     "`/metrics`."),
    ("EXPORTER_PORT", "`9808`", "Its port."),
    ("FLOWER_PORT", "`5555`", "Where `./control.sh start flower` serves Flower (127.0.0.1 "
     "only)."),
    ("FLOWER_UNAUTHENTICATED_API", "`true`", "Flower 2 serves its `/api` without auth only "
     "when told to; control.sh binds it to loopback."),
    ("CHAIN_SCHEDULES", "the chain files' `SCHEDULES`", "Beat's schedules as JSON, replacing "
     "the declared ones: `[{\"chain\": \"demo\", \"every_s\": 3600, \"params\": "
     "{\"page\": 1}}]`."),
    ("CRAWLCHAIN_HOST", "the host's name", "Set on each host by `--hosts`; worker node names "
     "are `GROUP@HOST`."),
    ("CRAWLCHAIN_BEAT_HOST", "none", "The one host allowed to run beat; set by `--hosts`. "
     "`start beat` anywhere else is refused."),
    ("CRAWLCHAIN_SSH", "`ssh -o BatchMode=yes -o ConnectTimeout=10`", "How `--hosts` reaches "
     "a host: `{host}` in it is replaced, otherwise the host is appended."),
    ("CRAWLCHAIN_REMOTE_DIR", "this checkout's path", "Where `--hosts` runs on each host (a "
     "host line's `dir=` wins)."),
    ("CRAWLCHAIN_REMOTE_CONTROL", "`./control.sh`", "What `--hosts` runs there."),
    ("CRAWLCHAIN_SSH_TIMEOUT", "`300`", "Seconds each host gets for one `--hosts` verb."),
    ("<SITE>_<SETTING>", "the site's default", "A site's setting (`DEMO_BASE_URL`, "
     "`FORUM_BASE_URL`), read by the launcher and fixed for the job; `--set` and "
     "`launch(base_url=...)` win over it."),
    ("DEMO_ACCOUNTS", "the sandbox's three accounts", "The crawler's accounts on the demo "
     "site, as JSON (name -> password): a secret, read by each worker, never carried by a "
     "job."),
    ("RABBITMQ_PASSWORD", "(secret: not shown)", "Docker Compose's `--profile rabbitmq`: "
     "the RabbitMQ user's password (`RABBITMQ_USER`, default `crawl`)."),
    ("POSTGRES_DSN", "unset", "A PostgreSQL the storage tests and the fault bench's "
     "PostgreSQL rows run against; unset: they are skipped, saying why."),
)


def settings_models(module: types.ModuleType) -> list[type[BaseSettings]]:
    """The settings models ``module`` defines (not those it imports), in source order."""
    return [obj for obj in vars(module).values() if isinstance(obj, type)
            and issubclass(obj, BaseSettings) and obj.__module__ == module.__name__]


def prefix_of(model: type[BaseSettings]) -> str:
    return str(model.model_config.get("env_prefix", "")).upper()


def variable(model: type[BaseSettings], name: str, field: FieldInfo) -> str:
    """The environment variable a field is read from: its alias, or prefix + name."""
    alias = field.validation_alias or field.alias
    if alias is not None and not isinstance(alias, str):
        alias = next((c for c in getattr(alias, "choices", ()) if isinstance(c, str)), None)
    return (alias or prefix_of(model) + name).upper()


def is_secret(name: str, field: FieldInfo) -> bool:
    """A password, token or secret by its type, its name or its description."""
    kinds = {field.annotation, *nested_types(field.annotation)}
    return bool(kinds & {SecretStr, SecretBytes} or SECRET_NAME.search(name)
                or SECRET_TEXT.search(field.description or ""))


def nested_types(annotation: Any) -> Iterator[Any]:
    for arg in get_args(annotation):
        yield arg
        yield from nested_types(arg)


def shapes_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models a setting's value is made of (``dict[str, Politeness]``)."""
    return [t for t in (annotation, *nested_types(annotation))
            if isinstance(t, type) and issubclass(t, BaseModel)]


def type_name(annotation: Any) -> str:
    """A type as a reader of the environment sees it (``None`` left to ``type_of``)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return " or ".join(f"`{arg}`" for arg in args)
    if origin in (Union, types.UnionType):
        return " or ".join(type_name(arg) for arg in args if arg is not type(None))
    if origin is list:
        return f"JSON list of {type_name(args[0])}"
    if origin is dict:
        return f"JSON object of {type_name(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
    return str(getattr(annotation, "__name__", annotation))


def type_of(field: FieldInfo) -> str:
    """The type, its bounds (``float > 0``), and whether it may be left unset."""
    bounds = [f"{sign} {getattr(meta, attr)}" for meta in field.metadata
              for attr, sign in BOUNDS.items() if getattr(meta, attr, None) is not None]
    text = " ".join([type_name(field.annotation), *bounds])
    optional = type(None) in get_args(field.annotation)
    return f"{text}, or unset" if optional else text


def default_of(name: str, field: FieldInfo) -> str:
    """The default as a fresh checkout has it; a secret's never."""
    if is_secret(name, field):
        return HIDDEN
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True, validated_data={})
    if value is None:
        return "unset"
    if isinstance(value, bool):
        text = str(value).lower()
    elif isinstance(value, (list, dict, BaseModel)):
        text = json.dumps(TypeAdapter(Any).dump_python(value, mode="json"))
    else:
        text = str(value)
    return f"`{redact_text(text.replace(str(config._home()), '$CRAWLCHAIN_HOME'))}`"


def prose(text: str | None) -> str:
    """A docstring or description as Markdown: reST literals to Markdown's."""
    return inspect.cleandoc(text or "").replace("``", "`")


def cell(text: str) -> str:
    return " ".join(prose(text).split()).replace("|", "\\|")


def row(*cells: str) -> str:
    return "| " + " | ".join(cell(c) for c in cells) + " |"


def as_is(name: str, field: FieldInfo) -> str:
    return name


def fields_table(model: type[BaseModel], first: str,
                 name_of: Callable[[str, FieldInfo], str] = as_is) -> list[str]:
    """One row per field: the name ``name_of`` gives it, type, default, meaning."""
    lines = [f"| {first} | type | default | meaning |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        lines.append(row(f"`{name_of(name, field)}`", type_of(field), default_of(name, field),
                         field.description or "(no description)"))
    return lines


def model_section(model: type[BaseSettings]) -> list[str]:
    def name_of(name: str, field: FieldInfo) -> str:
        return variable(model, name, field)

    return [f"## {model.__name__}", "", f"`{prefix_of(model)}*`: {prose(model.__doc__)}", "",
            *fields_table(model, "variable", name_of), ""]


def shape_section(shape: type[BaseModel]) -> list[str]:
    return [f"### {shape.__name__}", "", prose(shape.__doc__), "",
            *fields_table(shape, "field"), ""]


def other_section() -> list[str]:
    return ["## Read outside the settings models", "",
            "Read by control.sh, the logging set-up, the host fan-out, the embedded Redis and "
            "the sites; a site's own settings are `<SITE>_<FIELD>`.", "",
            "| variable | default | meaning |", "|---|---|---|",
            *(row(f"`{name}`", default, meaning) for name, default, meaning in OTHER), ""]


def reference(module: types.ModuleType = config) -> str:
    """The whole of docs/configuration.md, from ``module``'s settings models."""
    models = settings_models(module)
    shapes = list(dict.fromkeys(shape for model in models
                                for field in model.model_fields.values()
                                for shape in shapes_in(field.annotation)))
    contents = " · ".join(f"[{m.__name__}](#{m.__name__.lower()})" for m in models)
    lines = ["# Configuration", "",
             "<!-- Generated by ./control.sh docs (python -m ops.config_reference) from the "
             "settings models in config.py: edit their field descriptions, not this file. -->",
             "", prose(module.__doc__), "", INTRO, "", contents, ""]
    check = getattr(getattr(module, "Settings", None), "check", None)
    if check is not None and check.__doc__:
        doc = prose(check.__doc__)
        lines += [f"**Checked at start** (`Settings.check`): {doc[0].lower()}{doc[1:]}", ""]
    for model in models:
        lines += model_section(model)
    if shapes:
        lines += ["## Shapes of JSON values", "",
                  "Settings above whose values are JSON objects of these models.", ""]
        for shape in shapes:
            lines += shape_section(shape)
    lines += other_section()
    return "\n".join(lines).rstrip("\n") + "\n"


def rows_by_variable(text: str) -> dict[str, str]:
    """Each table row of the reference by its variable (``TASK_MAX_RETRIES``), or by
    its model and field for the shapes of JSON values (``Politeness.burst``)."""
    rows, shape = {}, ""
    for line in text.splitlines():
        if line.startswith("#"):
            shape = line.removeprefix("### ") + "." if line.startswith("### ") else ""
        elif line.startswith("| `"):
            rows[shape + line.split("|")[1].strip(" `")] = line
    return rows


def stale(committed: str, generated: str) -> list[str]:
    """What differs, in a reader's words: each variable missing, changed or gone, or
    the first line that differs when no row does; empty when the two are the same."""
    if committed == generated:
        return []
    old, new = rows_by_variable(committed), rows_by_variable(generated)
    found = [f"{name} missing" for name in new if name not in old]
    found += [f"{name} changed" for name in new if name in old and old[name] != new[name]]
    found += [f"{name} no longer a setting" for name in old if name not in new]
    if found:
        return found
    pairs = zip(committed.splitlines(), generated.splitlines(), strict=False)
    line = next((n for n, (a, b) in enumerate(pairs, 1) if a != b),
                min(len(committed.splitlines()), len(generated.splitlines())) + 1)
    return [f"the text around the tables differs from line {line}"]


def shown(path: Path) -> str:
    """A path as the user types it: relative to the checkout when inside it."""
    resolved = path.resolve()
    return str(resolved.relative_to(config.HOME)) if resolved.is_relative_to(config.HOME) \
        else str(path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.config_reference",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when the file is stale, naming what differs")
    parser.add_argument("--out", type=Path, default=OUT, help="the reference's path")
    args = parser.parse_args(argv)
    generated = reference()
    if args.check:
        committed = args.out.read_text() if args.out.exists() else ""
        found = stale(committed, generated)
        if found:
            print(f"{shown(args.out)} is stale: {', '.join(found)}; {FIX}", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(generated)
    count = sum(len(model.model_fields) for model in settings_models(config))
    print(f"wrote {shown(args.out)}: {count} settings", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
