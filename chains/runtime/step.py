"""A site step is one decorated parse function: ``@step(url=...)``.

    class ThreadPage(BaseModel):
        url: str

    @step(url="{url}", follows="authors")
    def thread(page: ThreadPage, response: Response) -> Parsed[Post]:
        return Parsed(items=[...], follow=[response.follow(href) for href in ...],
                      next_page=response.next_link())

The step's full name is ``site.platform.step``: the site is its package under
``sites/``, the platform the module below it (``sites/demo/h5.py``: ``h5``) or
``platform=`` (``web`` by default), the step its function's name; a step declared
elsewhere, or named apart from its function, passes the name (``@step("demo.h5.login",
...)``). The input model is the parse function's first parameter's annotation; the
request is a URL template filled from the site's settings and the input's fields
(``query`` names the input fields sent as the query string, left out when empty), or a
function ``(params, settings) -> Request`` when it needs more. ``follows`` names the
follow list its parse fills, once: the parse passes it as a plain list (a step with
several lists passes a dict by name). A parse function that needs the job's site
settings or the unit's depth (a generic crawl's link filters) takes the ``UnitContext``
as a third parameter. The worker registers one Celery task per step under its name;
the site writes no Celery code, and the step keeps every guarantee of the runtime:
typed input and output, retries by error class, the deadline, the site's middlewares
and pipelines.

Calling the step runs its parse function: a parser test is ``thread(page, response)``
(or ``page_step(page, response, unit)`` for one that takes the unit).
"""

from __future__ import annotations

import string
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import (
    Any,
    Generic,
    TypeVar,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
    overload,
)

from pydantic import BaseModel, ValidationError

from chains.runtime.extensions import UnitContext
from exceptions import CrawlError, InvalidParams, ParseError
from external_interface.clients import known_client
from external_interface.http import PAGE_TYPES, Browse, Request, Response
from external_interface.storage import Item

ItemT = TypeVar("ItemT", bound=Item)
In = TypeVar("In", bound=BaseModel)
ParseFn = Union[Callable[[In, Response], "Parsed[ItemT]"],  # noqa: UP007 - a generic alias
                Callable[[In, Response, UnitContext], "Parsed[ItemT]"]]



class Input(BaseModel):
    """A step's input: the params of its units (a pydantic model), validated before the
    fetch, its fields the URL template's. Subclass it: ``class UserRef(Input): user_id: int``."""


class Page(Input):
    """The input of a step that fetches the URL it is given (its default ``url="{url}"``):
    a record from ``response.follow(href)`` maps onto it."""

    url: str = ""


UNNAMED = ""  # the name of a plain follow list until its step names it (``SiteStep``)
Records = Sequence[dict[str, Any] | None]  # a follow list: ``response.follow`` records


@dataclass(init=False)
class Parsed(Generic[ItemT]):
    """What a parse returns: items to store, records to fan out from, the next page.

    ``follow`` holds records (``response.follow(href)`` makes one) that the chain's links
    turn into units of other steps: a plain list is the step's one follow list (its
    ``follows=``), a dict names the lists of a step that fills several. Items are fan-out
    sources too, by their collection. ``next_page`` is the next unit of this same step
    (its params).
    """

    items: list[ItemT] = field(default_factory=list)
    follow: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    next_page: BaseModel | Mapping[str, Any] | None = None

    def __init__(self, items: Iterable[ItemT] = (),
                 follow: Mapping[str, Records] | Records | None = None,
                 next_page: BaseModel | Mapping[str, Any] | None = None) -> None:
        self.items = list(items)
        named = follow if isinstance(follow, Mapping) else {} if follow is None else {
            UNNAMED: follow}
        self.follow = {name: [r for r in records if r is not None]  # an unfetchable link
                       for name, records in named.items()}
        self.next_page = next_page

    def records(self, wanted: set[str] | None = None) -> dict[str, list[dict[str, Any]]]:
        """Fan-out sources by name: item collections and follow lists; only the ``wanted``
        names when given (a leaf step's items are not dumped for nothing)."""
        out = {k: v for k, v in self.follow.items() if wanted is None or k in wanted}
        for item in self.items:
            if wanted is None or item.collection in wanted:
                out.setdefault(item.collection, []).append(item.model_dump(mode="json"))
        return out

    def next_params(self) -> dict[str, Any] | None:
        if isinstance(self.next_page, BaseModel):
            return self.next_page.model_dump(mode="json")
        return dict(self.next_page) if self.next_page is not None else None


@dataclass(frozen=True)
class SiteStep(Generic[In, ItemT]):
    """One step of a site, as the decorator declares it."""

    name: str
    input: type[In]
    parse_fn: ParseFn[In, ItemT]
    url: str | None = None
    query: tuple[str, ...] = ()
    request_fn: Callable[[In, Any], Request] | None = None
    accept: tuple[str, ...] = PAGE_TYPES
    queue: str | None = None
    items: tuple[type[Item], ...] = ()  # from the return annotation, ``Parsed[A | B]``
    follows: tuple[str, ...] = ()  # the follow lists its parse may fill
    statuses: tuple[int, ...] = ()  # statuses besides 2xx its parse reads as a page
    takes_unit: bool = False  # its parse function takes the UnitContext third
    client: str | None = None  # its fetch client (None: the job's, else the site's)
    browse: Browse | None = None  # what the browser does on its pages
    render: str | None = None  # "auto": http first, the browser where the page needs it

    def records(self) -> set[str]:
        """The names a chain's links may read from this step: collections, follow lists."""
        return {item.collection for item in self.items} | set(self.follows)

    def __call__(self, params: In, response: Response,
                 unit: UnitContext | None = None) -> Parsed[ItemT]:
        """The parse function itself, its plain follow list named: what a parser test
        calls."""
        return self.named(self.parse_fn(*self._args(params, response, unit)))

    def named(self, parsed: Parsed[ItemT]) -> Parsed[ItemT]:
        """``parsed`` with its plain follow list under the step's one ``follows`` name."""
        if isinstance(parsed, Parsed) and UNNAMED in parsed.follow:
            if len(self.follows) != 1:
                raise ParseError(f"{self.name}: parse passed a plain follow list, but the "
                                 f"step declares {len(self.follows)} (follows="
                                 f"{self.follows}): pass a dict by name")
            parsed.follow[self.follows[0]] = parsed.follow.pop(UNNAMED)
        return parsed

    def _args(self, params: In, response: Response, unit: UnitContext | None
              ) -> tuple[Any, ...]:
        if not self.takes_unit:
            return params, response
        if unit is None:
            raise TypeError(f"{self.name}: its parse function takes the unit's context: "
                            "pass a UnitContext")
        return params, response, unit

    @property
    def site(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def key(self) -> str:
        """The name a chain gives this step: its parse function's name."""
        return self.parse_fn.__name__

    def params(self, raw: Mapping[str, Any]) -> In:
        """Params checked against the step's Input; the error names every bad field."""
        return validate_params(self.input, raw)

    def request(self, params: In, settings: BaseModel) -> Request:
        """The request for ``params`` under the job's site ``settings``."""
        if self.request_fn is not None:
            built = site_code(self.request_fn, params, settings)
            if not isinstance(built, Request):
                raise ParseError(f"{self.name}: its request function returned "
                                 f"{type(built).__name__}, not a Request")
            if not built.accept_types:
                built = replace(built, accept_types=self.accept)
            if self.statuses and not built.accept_statuses:
                built = replace(built, accept_statuses=self.statuses)
            if self.browse is not None and built.browse is None:
                built = replace(built, browse=self.browse)
            return built
        values = {**settings.__dict__, **params.__dict__}  # the fields as set: no dump
        url = (self.url or "{url}").format_map(values)
        query = {name: str(values[name]) for name in self.query
                 if values.get(name) not in (None, "")}
        return Request(url, params=query, accept_types=self.accept,
                       accept_statuses=self.statuses, browse=self.browse)

    def parse(self, params: In, response: Response, *interrupts: type[BaseException],
              unit: UnitContext | None = None) -> Parsed[ItemT]:
        """Run the parse function; a bug in it fails the unit for good, naming it."""
        parsed = site_code(self.parse_fn, *self._args(params, response, unit),
                           passing=interrupts)
        if not isinstance(parsed, Parsed):
            raise ParseError(f"{self.name}: parse returned {type(parsed).__name__}, "
                             "not Parsed", url=response.url)
        self.named(parsed)
        unknown = sorted(set(parsed.follow) - set(self.follows))
        if unknown:
            raise ParseError(f"{self.name}: parse filled follow list {', '.join(unknown)}, "
                             f"which the step does not declare (follows={self.follows})",
                             url=response.url)
        return parsed


@overload
def step(name: ParseFn[In, ItemT], /) -> SiteStep[In, ItemT]: ...


@overload
def step(name: str | None = None, *, url: str | None = None,
         query: str | tuple[str, ...] = (), request: Callable[[Any, Any], Request] | None = None,
         follows: str | tuple[str, ...] = (), accept: tuple[str, ...] = PAGE_TYPES,
         queue: str | None = None, statuses: tuple[int, ...] = (), platform: str | None = None,
         client: str | None = None, browse: Browse | None = None, render: str | None = None,
         ) -> Callable[[ParseFn[In, ItemT]], SiteStep[In, ItemT]]: ...


def step(name: str | ParseFn[In, ItemT] | None = None, *, url: str | None = None,
         query: str | tuple[str, ...] = (), request: Callable[[Any, Any], Request] | None = None,
         follows: str | tuple[str, ...] = (), accept: tuple[str, ...] = PAGE_TYPES,
         queue: str | None = None, statuses: tuple[int, ...] = (), platform: str | None = None,
         client: str | None = None, browse: Browse | None = None, render: str | None = None,
         ) -> SiteStep[In, ItemT] | Callable[[ParseFn[In, ItemT]], SiteStep[In, ItemT]]:
    """Declare a step (``@step`` alone takes every default): ``name`` is
    ``site.platform.step`` (default: derived from where the function is, see the
    module docstring; ``platform`` sets its middle part); ``url`` a template over
    the site's settings and the input's fields, or ``request`` a function building
    the request; ``query`` the input fields sent as query parameters; ``follows``
    the follow lists its parse fills (chains link them to other steps); ``accept``
    the media types it parses (default: HTML and JSON); ``queue`` overrides the
    site's; ``statuses`` the 4xx/5xx statuses its parse reads as a page instead of
    failing the unit (a generic crawl's ``(404, 410)``); ``client`` the fetch client
    of its requests (``http``, ``impersonate``, ``browser``) over the site's; ``browse``
    what the browser does on the page (wait, click, scroll, screenshot: ``Browse``);
    ``render="auto"`` fetches over ``http`` and renders in the browser only the pages
    of a URL pattern where the plain page gives nothing and the rendered one does."""
    if callable(name):
        return step()(name)
    if name is not None and platform is not None:
        raise ValueError(f"step {name!r}: give the name or platform=, not both")
    if name is not None:
        check_name(name)
    if url is not None and request is not None:
        raise ValueError(f"step {name or ''!r}: give url= or request=, not both")
    if client is not None:
        known_client(client, f"step {name or ''!r}")
    if render not in (None, "auto"):
        raise ValueError(f"step {name or ''!r}: render={render!r}: use render='auto' (or "
                         "client='browser' to render every page)")
    odd = [s for s in statuses if not 400 <= s <= 599]
    if odd:
        raise ValueError(f"step {name or ''!r}: statuses= names {odd}: only 4xx and 5xx "
                         "statuses can be parsed as pages (2xx always are, 3xx are followed)")

    def declare(fn: ParseFn[In, ItemT]) -> SiteStep[In, ItemT]:
        full = name or derived_name(fn, platform)
        model = _input_model(full, fn)
        fields = set(model.model_fields)
        wanted = (query,) if isinstance(query, str) else tuple(query)
        missing = sorted(set(wanted) - fields)
        if missing:
            raise ValueError(f"step {full!r}: query names {', '.join(missing)}, not fields "
                             f"of {model.__name__} ({', '.join(sorted(fields))})")
        if url is None and request is None and "url" not in fields:
            raise ValueError(f"step {full!r}: give url= or request=, or an input with a "
                             f"'url' field ({model.__name__} has none)")
        return SiteStep(full, cast(type[In], model), fn, url, wanted, request, accept, queue,
                        _item_types(fn), (follows,) if isinstance(follows, str) else follows,
                        tuple(statuses), _takes_unit(full, fn), client, browse, render)

    return declare


def check_name(name: str) -> None:
    parts = name.split(".")
    if len(parts) != 3 or not all(p.isidentifier() for p in parts):
        raise ValueError(f"step name {name!r}: expected 'site.platform.step', three "
                         "dotted identifiers")


def derived_name(fn: Callable[..., Any], platform: str | None) -> str:
    """``site.platform.function`` for a function under ``sites/<site>/``: the platform is
    ``platform``, else the module below the site's package (``sites/demo/h5.py``), else
    ``web``."""
    parts = fn.__module__.split(".")
    if parts[0] != "sites" or len(parts) < 2:
        raise ValueError(f"step {fn.__name__!r} is declared in {fn.__module__}, not under "
                         "sites/<site>/: name it, @step('site.platform.step', ...)")
    full = f"{parts[1]}.{platform or (parts[2] if len(parts) > 2 else 'web')}.{fn.__name__}"
    check_name(full)
    return full


def validate_params(model: type[In], raw: Mapping[str, Any]) -> In:
    """``raw`` checked against ``model``; the error names every bad field and value."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(params)'}: {err['msg']} "
            f"(got {err.get('input')!r})" for err in exc.errors())
        raise InvalidParams(f"invalid params for {model.__name__}: {problems}") from exc


def template_fields(template: str) -> set[str]:
    """The names a URL template reads: ``"{base_url}/u/{user_id}"`` -> both."""
    return {f for _, f, _, _ in string.Formatter().parse(template) if f}


def site_code(fn: Callable[..., Any], *args: Any,
              passing: tuple[type[BaseException], ...] = ()) -> Any:
    """Call a site's own function (a parse, a pipeline, a middleware); a bug in it (an
    exception that is not a ``CrawlError``) fails the unit for good, with the function's
    name: retrying a layout the parser does not know cannot help. ``passing`` (the
    worker's interrupts, ``DropItem``) pass through as they are."""
    try:
        return fn(*args)
    except CrawlError:
        raise
    except passing:
        raise
    except Exception as exc:
        name = getattr(fn, "__qualname__", fn.__name__)
        raise ParseError(f"{name} raised {type(exc).__name__}: {exc}") from exc


def _input_model(name: str, fn: Callable[..., Any]) -> type[BaseModel]:
    hints = get_type_hints(fn)
    params = [p for p in fn.__code__.co_varnames[:fn.__code__.co_argcount]]
    model = hints.get(params[0]) if params else None
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise TypeError(f"step {name!r}: the first parameter of {fn.__name__} must be "
                        "annotated with its pydantic input model")
    return model


def _takes_unit(name: str, fn: Callable[..., Any]) -> bool:
    """Whether the parse function takes the ``UnitContext`` as its third parameter."""
    count = fn.__code__.co_argcount
    if count not in (2, 3):
        raise TypeError(f"step {name!r}: {fn.__name__} must take (input, response) or "
                        f"(input, response, unit), not {count} parameters")
    return count == 3


def _item_types(fn: Callable[..., Any]) -> tuple[type[Item], ...]:
    """The item classes of ``-> Parsed[A | B]``; none when the annotation names none."""
    returned = get_type_hints(fn).get("return")
    args = get_args(returned) if get_origin(returned) is Parsed else ()
    flat = [a for arg in args for a in (get_args(arg) if get_origin(arg) in (Union,
            types.UnionType) else (arg,))]
    return tuple(a for a in flat if isinstance(a, type) and issubclass(a, Item)
                 and hasattr(a, "collection"))

