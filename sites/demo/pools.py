"""The steps that refill the demo's pools, launched when a pool runs low (``site.py``).

    demo.h5.captcha           GET /h5/login/captcha (JSON) -> a login challenge
    demo.h5.login             POST /h5/login (form; the provider solves the captcha)
                              -> a session, into the cookie pool
    demo.app.register_device  POST /app/device/register (JSON) -> a device id, into the pool
"""

from __future__ import annotations

from http.cookies import CookieError, SimpleCookie
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from pydantic import Field

from chains.api import (
    IMAGE_META,
    DeviceItem,
    Input,
    Item,
    Parsed,
    ParseError,
    Request,
    Response,
    SessionItem,
    step,
)
from sites.demo.accounts import account_for, accounts

if TYPE_CHECKING:
    from sites.demo.site import DemoSettings


class LoginTurn(Input):
    turn: int = Field(0, ge=0, description="Which account logs in: the accounts take turns.")


@step(platform="h5", url="{base_url}/h5/login/captcha", follows="challenges")
def captcha(params: LoginTurn, response: Response) -> Parsed[Item]:
    data = response.json()
    if not {"captcha_id", "image"} <= set(data):
        raise ParseError("captcha answer without captcha_id and image", url=response.url)
    return Parsed(follow={"challenges": [{"account": account_for(params.turn),
                                          "captcha_id": data["captcha_id"],
                                          "image": data["image"]}]})


class Challenge(Input):
    account: str
    captcha_id: str
    image: str = Field(description="The challenge as a data: URL, solved by the provider.")


def login_request(params: Challenge, settings: DemoSettings) -> Request:
    form = {"account": params.account, "password": accounts()[params.account]}
    return Request(f"{settings.base_url}/h5/login", method="POST",
                   params={"captcha_id": params.captcha_id}, data=urlencode(form).encode(),
                   headers={"Content-Type": "application/x-www-form-urlencoded"},
                   meta={IMAGE_META: params.image})


@step(platform="h5", request=login_request)
def login(params: Challenge, response: Response) -> Parsed[SessionItem]:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(response.headers.get("set-cookie") or "")
    except CookieError as exc:
        raise ParseError(f"unreadable Set-Cookie: {exc}", url=response.url) from None
    if "sid" not in jar:
        raise ParseError("login answered without a session cookie", url=response.url)
    return Parsed([SessionItem(account=params.account, cookies={"sid": jar["sid"].value})])


class RegisterTurn(Input):
    turn: int = Field(0, ge=0, description="Which refill this is (one device each).")


def register_request(params: RegisterTurn, settings: DemoSettings) -> Request:
    return Request(f"{settings.base_url}/app/device/register", method="POST",
                   data=b"model=demo")


@step(platform="app", request=register_request)
def register_device(params: RegisterTurn, response: Response) -> Parsed[DeviceItem]:
    device_id = response.json().get("device_id")
    if not isinstance(device_id, str) or not device_id:
        raise ParseError("registration answered without a device_id", url=response.url)
    return Parsed([DeviceItem(device_id=device_id)])
