"""demo.h5.login: POST /h5/login (form, captcha answer) -> a session for the cookie pool.

Second step of ``chains.demo.demo_login``. The captcha image rides in the request's
``meta``; the captcha provider solves it and adds ``captcha_answer`` before the
request is sent; the step's items go into the site's cookie pool (``feeds``).
"""

from __future__ import annotations

from http.cookies import CookieError, SimpleCookie
from urllib.parse import urlencode

from pydantic import BaseModel, Field

from base_task import CrawlTask, Parsed
from chains.engine import Envelope, Unit
from exceptions import ParseError
from external_interface.captcha import IMAGE_META
from external_interface.fetch import Request, Response
from external_interface.providers.refill import SessionItem
from sites.demo import accounts, base_url
from worker import app


class LoginInput(BaseModel):
    account: str
    captcha_id: str
    image: str = Field(description="The challenge as a data: URL, solved by the provider.")


class Session(SessionItem):
    collection = "sessions"
    key_fields = ("account",)


def build_request(params: LoginInput) -> Request:
    form = {"account": params.account, "password": accounts()[params.account]}
    return Request(f"{base_url()}/h5/login", method="POST", params={
        "captcha_id": params.captcha_id}, data=urlencode(form).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        meta={IMAGE_META: params.image})


def parse(params: LoginInput, response: Response) -> Parsed:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(response.header("set-cookie") or "")
    except CookieError as exc:
        raise ParseError(f"unreadable Set-Cookie: {exc}", url=response.url) from None
    if "sid" not in jar:
        raise ParseError("login answered without a session cookie", url=response.url)
    session = Session(account=params.account, cookies={"sid": jar["sid"].value})
    return Parsed(items=[session])


@app.task(base=CrawlTask, bind=True, name="demo.h5.login", Input=LoginInput)
def login(self: CrawlTask, envelope: Envelope, units: list[Unit]) -> dict[str, int]:
    """A batch of logins."""
    return self.crawl(envelope, units, build_request, parse)
