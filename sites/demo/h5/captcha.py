"""demo.h5.captcha: GET /h5/login/captcha (JSON) -> a login challenge for one account.

First step of ``chains.demo.demo_login`` (captcha -> solve -> login -> cookie pool),
launched when the site's session pool runs low; ``turn`` picks the account.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from base_task import CrawlTask, Parsed
from chains.engine import Envelope, Unit
from exceptions import ParseError
from external_interface.fetch import Request, Response
from sites.demo import account_for, base_url
from worker import app


class CaptchaInput(BaseModel):
    turn: int = Field(0, ge=0, description="Which account logs in: the accounts take turns.")


def build_request(params: CaptchaInput) -> Request:
    return Request(f"{base_url()}/h5/login/captcha")


def parse(params: CaptchaInput, response: Response) -> Parsed:
    data = response.json()
    if not {"captcha_id", "image"} <= set(data):
        raise ParseError("captcha answer without captcha_id and image", url=response.url)
    challenge = {"account": account_for(params.turn), "captcha_id": data["captcha_id"],
                 "image": data["image"]}
    return Parsed(follow={"challenges": [challenge]})


@app.task(base=CrawlTask, bind=True, name="demo.h5.captcha", Input=CaptchaInput)
def captcha(self: CrawlTask, envelope: Envelope, units: list[Unit]) -> dict[str, int]:
    """A batch of login challenges."""
    return self.crawl(envelope, units, build_request, parse)
